//! What a caller says about one run: when to stop, and where its events go.

use std::fmt;
use std::time::{Duration, Instant};

use crate::engine::{CancelToken, Stop};
use crate::transcript::{Segment, Transcript};

/// Something a run reports while it works, in order: deltas, segments and progress as
/// windows finish, then [`Event::Done`] once the transcript is final.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Event {
    /// New text. Joined, the deltas are the transcript's text unless a window decoded
    /// again did not extend the text already reported of it, or the LLM review changed
    /// the text at the end (see [`crate::pipeline`] for the grain). A delta that starts
    /// a window after another one starts with a space.
    Delta(String),
    /// A timed piece of a finished window: its times in seconds of the input, the
    /// window's final text placed in it. The [`Event::Done`] transcript's segments are
    /// authoritative (the LLM review may still change the text).
    Segment(Segment),
    /// Seconds of the input transcribed so far, out of its whole length.
    Progress {
        /// Seconds of the input transcribed so far.
        done_secs: f64,
        /// The input's length in seconds.
        total_secs: f64,
    },
    /// The final transcript, the same as the run returns; the last event.
    Done(Box<Transcript>),
}

impl Event {
    /// `"delta"`, `"segment"`, `"progress"` or `"done"`.
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            Event::Delta(_) => "delta",
            Event::Segment(_) => "segment",
            Event::Progress { .. } => "progress",
            Event::Done(_) => "done",
        }
    }
}

/// The receiver of a run's events, called on the thread that runs the engine; keep it
/// quick. A panic in it fails the run with [`crate::Error::TranscriptionFailed`].
pub type EventSink<'a> = dyn FnMut(&Event) + Send + 'a;

/// How one run goes: a cancel token, a time limit and an event sink, all optional.
///
/// ```
/// use ctxscribe::{CancelToken, Event, RunOptions};
/// use std::time::Duration;
///
/// let token = CancelToken::new();
/// let mut printed = |event: &Event| {
///     if let Event::Delta(text) = event {
///         print!("{text}");
///     }
/// };
/// let options = RunOptions::new()
///     .with_cancel(token.clone())
///     .with_timeout(Duration::from_secs(60))
///     .on_event(&mut printed);
/// # drop(options);
/// ```
#[derive(Default)]
#[must_use]
pub struct RunOptions<'a> {
    pub(crate) cancel: Option<CancelToken>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) sink: Option<&'a mut EventSink<'a>>,
}

impl fmt::Debug for RunOptions<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunOptions")
            .field("cancel", &self.cancel)
            .field("timeout", &self.timeout)
            .field("sink", &self.sink.is_some())
            .finish()
    }
}

impl<'a> RunOptions<'a> {
    /// No cancel token, no time limit beyond the transcriber's, no events.
    pub fn new() -> Self {
        Self::default()
    }

    /// Stops the run with [`crate::Error::Cancelled`] once `token` is cancelled: within a
    /// decoding step once it runs; a run still waiting for an engine thread (every one
    /// busy with other calls) stops as soon as it gets one.
    pub fn with_cancel(mut self, token: CancelToken) -> Self {
        self.cancel = Some(token);
        self
    }

    /// Stops the run with [`crate::Error::DeadlineExceeded`] once it has taken this
    /// long (the transcriber's own timeout, if shorter, still applies).
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Hands every [`Event`] of the run to `sink`.
    pub fn on_event(mut self, sink: &'a mut EventSink<'a>) -> Self {
        self.sink = Some(sink);
        self
    }

    /// The run's [`Stop`]: the sooner of this run's and the transcriber's (`default`)
    /// time limits from `started`, and the cancel token.
    pub(crate) fn stop(&self, default: Option<Duration>, started: Instant) -> Stop {
        let limit = match (self.timeout, default) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Stop {
            deadline: limit.and_then(|limit| started.checked_add(limit)),
            cancel: self.cancel.clone(),
        }
    }
}
