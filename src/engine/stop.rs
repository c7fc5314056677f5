//! When a run must stop: its deadline, or its caller's [`CancelToken`].
//!
//! A [`Stop`] travels with the run, explicitly: in the engine's request, every decode's
//! request and whisper.cpp's abort callback. The engine checks it between decoding
//! steps and during every encoder pass, so a run stops within a step (milliseconds) of
//! its deadline or its cancellation.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use crate::error::{Error, Result};

/// Asks a running transcription to stop: [`CancelToken::cancel`] from any thread, and the
/// run ends with [`Error::Cancelled`] at its next check. Cheap to clone; every clone is
/// the same token. Cancelling twice, before the run starts or after it ends is harmless.
#[derive(Debug, Clone, Default)]
pub struct CancelToken(Arc<Flag>);

#[derive(Debug, Default)]
struct Flag {
    cancelled: AtomicBool,
    /// A child token is cancelled with its parent too.
    parent: Option<CancelToken>,
}

impl CancelToken {
    /// A token that is not cancelled.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// A new token that is cancelled when this one is, and can also be cancelled on its
    /// own without cancelling this one (a run that stops for a reason of its own while
    /// the caller's token stays usable).
    #[must_use]
    pub fn child(&self) -> Self {
        CancelToken(Arc::new(Flag {
            cancelled: AtomicBool::new(false),
            parent: Some(self.clone()),
        }))
    }

    /// Cancels every run that holds this token (or a clone, or a child). Idempotent.
    pub fn cancel(&self) {
        self.0.cancelled.store(true, Ordering::SeqCst);
    }

    /// Whether [`CancelToken::cancel`] was called on this token or on a parent.
    #[must_use]
    pub fn is_cancelled(&self) -> bool {
        self.0.cancelled.load(Ordering::SeqCst)
            || self
                .0
                .parent
                .as_ref()
                .is_some_and(CancelToken::is_cancelled)
    }
}

/// When a run must stop: past `deadline`, or once `cancel` is cancelled.
#[derive(Debug, Clone, Default)]
pub struct Stop {
    /// Give up with [`Error::DeadlineExceeded`] once this instant has passed.
    pub deadline: Option<Instant>,
    /// Give up with [`Error::Cancelled`] once this token is cancelled.
    pub cancel: Option<CancelToken>,
}

impl Stop {
    /// Never stops.
    pub const NEVER: Stop = Stop {
        deadline: None,
        cancel: None,
    };

    /// True once the run must stop.
    #[must_use]
    pub fn is_due(&self) -> bool {
        self.check().is_err()
    }

    /// [`Error::Cancelled`] once cancelled, [`Error::DeadlineExceeded`] once past the
    /// deadline (cancellation first: the caller asked).
    ///
    /// # Errors
    /// As above.
    pub fn check(&self) -> Result<()> {
        if self.cancel.as_ref().is_some_and(CancelToken::is_cancelled) {
            return Err(Error::Cancelled);
        }
        if self
            .deadline
            .is_some_and(|deadline| Instant::now() >= deadline)
        {
            return Err(Error::DeadlineExceeded);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn cancellation_wins_over_the_deadline_and_is_seen_from_other_threads() {
        let token = CancelToken::new();
        let stop = Stop {
            deadline: Some(Instant::now() + Duration::from_secs(3600)),
            cancel: Some(token.clone()),
        };
        assert!(stop.check().is_ok());
        std::thread::spawn(move || token.cancel())
            .join()
            .expect("thread");
        assert!(matches!(stop.check(), Err(Error::Cancelled)));
        let late = Stop {
            deadline: Some(Instant::now()),
            cancel: None,
        };
        assert!(matches!(late.check(), Err(Error::DeadlineExceeded)));
        assert!(Stop::NEVER.check().is_ok());
    }

    #[test]
    fn a_child_is_cancelled_with_its_parent_but_not_the_other_way_round() {
        let parent = CancelToken::new();
        let child = parent.child();
        child.cancel();
        assert!(child.is_cancelled() && !parent.is_cancelled());
        let other = parent.child();
        parent.cancel();
        parent.cancel();
        assert!(other.is_cancelled());
    }
}
