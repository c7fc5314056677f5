//! Transcripts as they are decoded: the text of each window of speech as soon as it is
//! final, and cancellation of a transcription nobody waits for any more.
//!
//! [`ContextTranscriber::transcribe_request_streaming`] reports text per window (up to
//! 28 s of speech; see [`crate::engine::windows`]), after the context's corrections of
//! that window, so no later step takes a reported word back, except the optional LLM
//! review of the whole transcript (`CTXSCRIBE_LLM_URL`), which runs after the last window.
//!
//! Cancellation rides the engine's deadline checks (between decoding steps): a
//! [`CancelFlag`] set from another thread stops the transcription at its next check with
//! [`Error::TranscriptionFailed`]. The engine sees the flag through a scope of the calling
//! thread, carried onto the engine's own thread (`with_cancel`, `current_cancel`), so
//! the engine's request types do not change.

use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::{Error, Result};
use crate::request::TranscriptionRequest;
use crate::transcriber::ContextTranscriber;
use crate::transcript::Transcript;

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

/// Turns the windows' final texts into deltas whose concatenation is the engine's
/// transcript: the windows joined by a space, whitespace-normalised (as the engine joins
/// them).
#[derive(Debug, Default)]
struct Deltas {
    /// Every window's text so far, joined by spaces.
    joined: String,
    /// The normalised text reported so far.
    sent: String,
}

impl Deltas {
    /// The new text after `window`'s, if any.
    fn push(&mut self, window: &str) -> Option<String> {
        if window.is_empty() {
            return None;
        }
        if !self.joined.is_empty() {
            self.joined.push(' ');
        }
        self.joined.push_str(window);
        let normalised = self.joined.split_whitespace().collect::<Vec<_>>().join(" ");
        let delta = normalised.strip_prefix(self.sent.as_str())?.to_owned();
        self.sent = normalised;
        (!delta.is_empty()).then_some(delta)
    }
}

impl ContextTranscriber {
    /// Like [`ContextTranscriber::transcribe_request_blocking`], reporting the text as it
    /// is decoded: `on_delta` gets each window's new text (the first without, the next
    /// with a leading space) once that window is final, on the engine's thread; keep it
    /// quick. Joined, the deltas are the returned [`Transcript::text`], unless the LLM
    /// review changed the whole text at the end. `cancel` stops the transcription at the
    /// engine's next check.
    ///
    /// # Errors
    /// As [`ContextTranscriber::transcribe_request_blocking`];
    /// [`Error::TranscriptionFailed`] once `cancel` is set.
    pub fn transcribe_request_streaming(
        &self,
        request: TranscriptionRequest,
        cancel: &CancelFlag,
        on_delta: &mut (dyn FnMut(&str) + Send),
    ) -> Result<Transcript> {
        let mut deltas = Deltas::default();
        let mut on_window = |window: &str| {
            if let Some(delta) = deltas.push(window) {
                on_delta(&delta);
            }
        };
        with_cancel(Some(cancel.clone()), || {
            check_cancelled()?;
            self.transcribe_observed(request, &mut on_window)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_join_as_the_engine_joins_windows() {
        let mut deltas = Deltas::default();
        let windows = [
            " And so my fellow Americans, ",
            "",
            "  ask not  ",
            "what you can do.",
        ];
        let pieces: Vec<String> = windows.iter().filter_map(|w| deltas.push(w)).collect();
        assert_eq!(
            pieces,
            [
                "And so my fellow Americans,",
                " ask not",
                " what you can do."
            ]
        );
        let engine = windows
            .join(" ")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        assert_eq!(pieces.concat(), engine);
        assert_eq!(deltas.push("   "), None);
    }

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
