//! [`TranscriptStream`]: a run's events as an iterator, the run on a thread of its own.

use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::Duration;

use super::Pipeline;
use super::options::{Event, RunOptions};
use crate::engine::CancelToken;
use crate::error::{Error, Result};
use crate::request::TranscriptionRequest;

/// The events of one run, in order, ending with [`Event::Done`] (or one error). The run
/// works on a thread of its own while the caller iterates; dropping the stream (or
/// [`TranscriptStream::cancel`]) cancels it, not the caller's token. From
/// [`ContextTranscriber::stream`](crate::ContextTranscriber::stream).
#[derive(Debug)]
pub struct TranscriptStream {
    events: Receiver<Result<Event>>,
    cancel: CancelToken,
    ended: bool,
}

/// What [`TranscriptStream::next_within`] found.
#[derive(Debug)]
pub enum Next {
    /// The next event, or the run's error.
    Item(Result<Event>),
    /// Nothing came within the wait; the run goes on.
    Pending,
    /// The run ended and every event was taken.
    End,
}

impl TranscriptStream {
    pub(crate) fn start(
        pipeline: Arc<Pipeline>,
        request: TranscriptionRequest,
        options: RunOptions<'static>,
    ) -> Self {
        let (sender, events) = channel();
        let cancel = options
            .cancel
            .as_ref()
            .map_or_else(CancelToken::new, CancelToken::child);
        let token = cancel.clone();
        let RunOptions { timeout, sink, .. } = options;
        let work = move || {
            let mut sink = sink;
            let events = sender.clone();
            let mut forward = |event: &Event| {
                if let Some(sink) = sink.as_mut() {
                    sink(event);
                }
                // Done is sent below, with the result, so that it is always the last.
                if !matches!(event, Event::Done(_)) {
                    let _ = events.send(Ok(event.clone()));
                }
            };
            let mut options = RunOptions::new().with_cancel(token).on_event(&mut forward);
            options.timeout = timeout;
            let result = pipeline.run(request, options);
            let _ = sender.send(result.map(|transcript| Event::Done(Box::new(transcript))));
        };
        let spawned = std::thread::Builder::new()
            .name("ctxscribe-stream".into())
            .spawn(work);
        let events = match spawned {
            Ok(_) => events,
            Err(e) => {
                // The closure (and its sender) is gone: say why instead of ending silently.
                let (sender, events) = channel();
                let _ = sender.send(Err(Error::TranscriptionFailed {
                    message: format!("cannot start the transcription thread: {e}"),
                    source: Some(Box::new(e)),
                }));
                events
            }
        };
        TranscriptStream {
            events,
            cancel,
            ended: false,
        }
    }

    /// Stops the run (the caller's token, if any, stays as it is); the stream then ends
    /// with [`Error::Cancelled`] unless the run ended first. Idempotent.
    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    /// The next event, waiting at most `wait` (for callers that must also look at
    /// something else, e.g. Python's signals).
    pub fn next_within(&mut self, wait: Duration) -> Next {
        if self.ended {
            return Next::End;
        }
        match self.events.recv_timeout(wait) {
            Ok(item) => {
                self.ended = is_last(&item);
                Next::Item(item)
            }
            Err(RecvTimeoutError::Timeout) => Next::Pending,
            Err(RecvTimeoutError::Disconnected) => {
                self.ended = true;
                Next::End
            }
        }
    }
}

impl Iterator for TranscriptStream {
    type Item = Result<Event>;

    fn next(&mut self) -> Option<Result<Event>> {
        if self.ended {
            return None;
        }
        let Ok(item) = self.events.recv() else {
            self.ended = true;
            return None;
        };
        self.ended = is_last(&item);
        Some(item)
    }
}

/// True for the last item of a run: its transcript or its error.
fn is_last(item: &Result<Event>) -> bool {
    matches!(item, Ok(Event::Done(_)) | Err(_))
}

impl Drop for TranscriptStream {
    /// Nobody reads the events any more: the run stops at its next check.
    fn drop(&mut self) {
        if !self.ended {
            self.cancel.cancel();
        }
    }
}
