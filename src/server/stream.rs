//! `stream=true`: OpenAI's server-sent events, sent as the transcript is decoded.
//!
//! The run's [`Event::Delta`]s (each timed segment as it is decoded without context,
//! each corrected window with context; see [`crate::pipeline`]) become
//! `transcript.text.delta` events, and its end one `transcript.text.done` event whose
//! `text` is the non-streamed transcript. The answer starts with the first event: an
//! error before it keeps its status code, an error after it is an `error` event that ends
//! the stream. A client that goes away drops the body, which cancels the transcription
//! at the engine's next step, so its engine slot is free at once. The request's log line
//! and metrics are written when the stream ends ([`EventBody::on_end`]), with the run's
//! real figures.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use http_body_util::{Either, Full};
use hyper::Response;
use hyper::body::Frame;
use hyper::header::{self, HeaderValue};
use serde_json::{Value, json};
use tokio::sync::OwnedSemaphorePermit;
use tokio::sync::mpsc;

use crate::{ErrorCode, Event, Transcript, TranscriptionRequest};

use super::api_error::ApiError;
use super::record::RunFigures;
use super::state::AppState;
use super::work::{CancelOnDrop, spawn_run};

/// Every answer's body: a whole one, or server-sent events.
pub(crate) type AnswerBody = Either<Full<Bytes>, EventBody>;

/// A whole answer as an [`AnswerBody`].
pub(crate) fn full(response: Response<Full<Bytes>>) -> Response<AnswerBody> {
    response.map(Either::Left)
}

/// What the transcription sends the answer.
#[derive(Debug)]
enum Item {
    /// Event bytes.
    Event(Bytes),
    /// The last events (or the error before any), and the run's figures when it
    /// succeeded.
    Last(Result<Bytes, ApiError>, Option<RunFigures>),
}

/// How a streamed answer ended.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct StreamEnd {
    /// The run's figures, when it succeeded.
    pub(crate) figures: Option<RunFigures>,
    /// The error code of an `error` event, or `cancelled` when the client went away
    /// before the end.
    pub(crate) code: Option<&'static str>,
}

/// Called once when a streamed answer ends (its last event sent, or the client gone).
pub(crate) type OnEnd = Box<dyn FnOnce(StreamEnd) + Send>;

/// The events of a streamed answer. Dropping it cancels the transcription.
pub(crate) struct EventBody {
    first: Option<Bytes>,
    events: mpsc::UnboundedReceiver<Item>,
    end: StreamEnd,
    on_end: Option<OnEnd>,
    _cancel: CancelOnDrop,
}

impl std::fmt::Debug for EventBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventBody")
            .field("end", &self.end)
            .finish_non_exhaustive()
    }
}

impl EventBody {
    /// Calls `on_end` once the stream ends, with how it ended.
    pub(crate) fn on_end(&mut self, on_end: OnEnd) {
        self.on_end = Some(on_end);
    }

    fn ended(&mut self) {
        if let Some(on_end) = self.on_end.take() {
            on_end(self.end);
        }
    }
}

impl hyper::body::Body for EventBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if let Some(first) = self.first.take() {
            return Poll::Ready(Some(Ok(Frame::data(first))));
        }
        let item = std::task::ready!(self.events.poll_recv(cx));
        let bytes = match item {
            Some(Item::Event(bytes)) => bytes,
            Some(Item::Last(last, figures)) => {
                self.end.figures = figures;
                last.unwrap_or_else(|error| {
                    self.end.code = Some(error.code.as_str());
                    error_event(&error)
                })
            }
            None => {
                self.ended();
                return Poll::Ready(None);
            }
        };
        Poll::Ready(Some(Ok(Frame::data(bytes))))
    }
}

impl Drop for EventBody {
    /// A stream dropped before its end: the client went away.
    fn drop(&mut self) {
        if self.on_end.is_some() {
            if self.end.figures.is_none() && self.end.code.is_none() {
                self.end.code = Some("cancelled");
            }
            self.ended();
        }
    }
}

fn event(payload: &Value) -> Bytes {
    Bytes::from(format!("data: {payload}\n\n"))
}

fn delta_event(delta: &str) -> Bytes {
    event(&json!({ "type": "transcript.text.delta", "delta": delta }))
}

/// An error after the first event: `{"type": "error", "error": {...}}` (the body of the
/// same error as a status answer).
fn error_event(error: &ApiError) -> Bytes {
    let mut payload = error.body();
    payload["type"] = json!("error");
    event(&payload)
}

/// The last events of a transcription that sent `streamed` so far: the rest of the text
/// as a delta (when the text still starts with what was sent) and the done event; or the
/// error, as an event when something was sent already.
fn finish(result: crate::Result<Transcript>, streamed: &str) -> Result<Bytes, ApiError> {
    match result {
        Ok(transcript) => {
            let text = transcript.text;
            let mut bytes = Vec::new();
            if let Some(rest) = text.strip_prefix(streamed)
                && !rest.is_empty()
            {
                bytes.extend_from_slice(&delta_event(rest));
            }
            bytes.extend_from_slice(&event(
                &json!({ "type": "transcript.text.done", "text": text }),
            ));
            Ok(Bytes::from(bytes))
        }
        Err(error) if streamed.is_empty() => Err(error.into()),
        Err(error) => Ok(error_event(&error.into())),
    }
}

/// Runs the transcription and answers with its events once the first is known (see the
/// module's doc); until `deadline` for that first event.
pub(crate) async fn respond(
    state: &Arc<AppState>,
    permits: (OwnedSemaphorePermit, OwnedSemaphorePermit),
    request: TranscriptionRequest,
    deadline: Instant,
) -> Result<Response<AnswerBody>, ApiError> {
    let (sender, mut events) = mpsc::unbounded_channel::<Item>();
    let streamed = Arc::new(Mutex::new(String::new()));
    let sink = {
        let (sender, streamed) = (sender.clone(), Arc::clone(&streamed));
        move |event: &Event| {
            if let Event::Delta(delta) = event {
                lock(&streamed).push_str(delta);
                let _ = sender.send(Item::Event(delta_event(delta)));
            }
        }
    };
    let then = move |result: crate::Result<Transcript>| {
        let figures = result.as_ref().ok().map(RunFigures::of);
        let last = finish(result, &lock(&streamed));
        let _ = sender.send(Item::Last(last, figures));
    };
    let (_work, cancel) = spawn_run(state, permits, request, deadline, sink, then);
    let first = match tokio::time::timeout_at(deadline.into(), events.recv()).await {
        Ok(Some(Item::Event(first))) => first,
        Ok(Some(Item::Last(last, figures))) => {
            // The whole answer at once (no delta came before the end).
            let first = last?;
            let mut response = event_response(first, events, cancel);
            if let Either::Right(body) = response.body_mut() {
                body.end.figures = figures;
            }
            return Ok(response);
        }
        Ok(None) => {
            return Err(ApiError::new(
                ErrorCode::TranscriptionFailed,
                "The transcription worker stopped unexpectedly.",
            ));
        }
        Err(_) => {
            return Err(ApiError::new(
                ErrorCode::TranscriptionFailed,
                format!(
                    "The transcription did not finish within the request timeout ({} s).",
                    state.request_timeout.as_secs_f64()
                ),
            ));
        }
    };
    Ok(event_response(first, events, cancel))
}

/// A `text/event-stream` answer starting with `first`.
fn event_response(
    first: Bytes,
    events: mpsc::UnboundedReceiver<Item>,
    cancel: CancelOnDrop,
) -> Response<AnswerBody> {
    let mut response = Response::new(Either::Right(EventBody {
        first: Some(first),
        events,
        end: StreamEnd::default(),
        on_end: None,
        _cancel: cancel,
    }));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

fn lock(streamed: &Mutex<String>) -> std::sync::MutexGuard<'_, String> {
    streamed.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Error, StageTimings};

    fn transcript(text: &str) -> Transcript {
        Transcript {
            text: text.to_owned(),
            segments: Vec::new(),
            language: None,
            audio_secs: 1.0,
            timings: StageTimings::default(),
            edits: Vec::new(),
            warnings: Vec::new(),
        }
    }

    fn failed() -> Error {
        Error::TranscriptionFailed {
            message: "engine".into(),
            source: None,
        }
    }

    #[test]
    fn the_end_completes_the_deltas_and_errors_keep_their_status_before_any() {
        let rest = finish(Ok(transcript("ask not what")), "ask not").expect("events");
        assert_eq!(
            String::from_utf8_lossy(&rest),
            "data: {\"delta\":\" what\",\"type\":\"transcript.text.delta\"}\n\n\
             data: {\"text\":\"ask not what\",\"type\":\"transcript.text.done\"}\n\n"
        );
        let rewritten = finish(Ok(transcript("Ask knot")), "ask not").expect("events");
        assert!(String::from_utf8_lossy(&rewritten).starts_with("data: {\"text\""));
        let before = finish(Err(failed()), "").expect_err("a status answer");
        assert_eq!(before.status().as_u16(), 502);
        let after = finish(Err(failed()), "ask").expect("an event");
        let after = String::from_utf8_lossy(&after);
        assert!(
            after.contains("\"type\":\"error\"") && after.contains("transcription_failed"),
            "{after}"
        );
    }
}
