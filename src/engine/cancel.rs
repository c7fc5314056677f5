//! Cancelling a transcription nobody waits for any more.
//!
//! A [`CancelFlag`] set from another thread stops a transcription at the engine's next
//! deadline check (between decoding steps) with [`Error::TranscriptionFailed`]. The
//! engine sees the flag through a scope of the calling thread, carried onto the engine's
//! own thread (`with_cancel`, `current_cancel`), so the engine's request types do not
//! change. Lives in the engine (which checks it) so that the streaming API above the
//! transcriber and the engine below it share it without a module cycle.

use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::{Error, Result};

/// Asks a running transcription to stop. Cheap to clone; every clone is the same flag.
#[derive(Debug, Clone, Default)]
pub struct CancelFlag(Arc<AtomicBool>);

impl CancelFlag {
    /// A flag that is not set.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the flag: the transcription stops at its next check. Idempotent.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether [`CancelFlag::cancel`] was called.
    #[must_use]
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

thread_local! {
    /// The flag of the transcription running on this thread, if it has one.
    static CURRENT: RefCell<Option<CancelFlag>> = const { RefCell::new(None) };
}

/// Runs `work` with `flag` as this thread's cancellation flag, then restores the previous
/// one (also when `work` panics).
pub(crate) fn with_cancel<R>(flag: Option<CancelFlag>, work: impl FnOnce() -> R) -> R {
    struct Restore(Option<CancelFlag>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            CURRENT.with(|current| *current.borrow_mut() = previous);
        }
    }
    let previous = CURRENT.with(|current| current.replace(flag));
    let _restore = Restore(previous);
    work()
}

/// This thread's cancellation flag (to carry it onto another thread).
pub(crate) fn current_cancel() -> Option<CancelFlag> {
    CURRENT.with(|current| current.borrow().clone())
}

/// [`Error::TranscriptionFailed`] once this thread's flag is set.
pub(crate) fn check_cancelled() -> Result<()> {
    if CURRENT.with(|current| {
        current
            .borrow()
            .as_ref()
            .is_some_and(CancelFlag::is_cancelled)
    }) {
        return Err(Error::TranscriptionFailed {
            message: "the transcription was cancelled".into(),
            source: None,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cancellation_is_seen_in_its_scope_only() {
        let flag = CancelFlag::new();
        assert!(check_cancelled().is_ok());
        with_cancel(Some(flag.clone()), || {
            assert!(check_cancelled().is_ok());
            flag.cancel();
            let carried = current_cancel();
            let seen = std::thread::spawn(move || with_cancel(carried, check_cancelled))
                .join()
                .expect("thread");
            assert!(matches!(seen, Err(Error::TranscriptionFailed { .. })));
        });
        assert!(check_cancelled().is_ok(), "the scope restored no flag");
    }
}
