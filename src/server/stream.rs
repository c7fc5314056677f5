//! `stream=true`: OpenAI's server-sent events, sent as the transcript is decoded.
//!
//! The transcription runs on the blocking pool with
//! [`ContextTranscriber::transcribe_request_streaming`](crate::ContextTranscriber): its
//! deltas (each timed segment as it is decoded without context, each corrected window
//! with context; see `crate::streaming`) become `transcript.text.delta` events, and the
//! end one `transcript.text.done` event whose `text` is the non-streamed transcript. The
//! answer starts with the first event: an error before it keeps its status code, an
//! error after it is an `error` event that ends the stream. A client that goes away drops
//! the body, which cancels the transcription at the engine's next step, so its engine slot
//! is free at once.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
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

use crate::{CancelFlag, ErrorCode, Transcript, TranscriptionRequest};

use super::api_error::ApiError;
use super::handler::AppState;

/// Every answer's body: a whole one, or server-sent events.
pub(crate) type AnswerBody = Either<Full<Bytes>, EventBody>;

/// A whole answer as an [`AnswerBody`].
pub(crate) fn full(response: Response<Full<Bytes>>) -> Response<AnswerBody> {
    response.map(Either::Left)
}

/// Cancels a transcription when dropped (its answer is no longer wanted).
#[derive(Debug)]
pub(crate) struct CancelOnDrop(pub(crate) CancelFlag);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

/// What the transcription sends the answer: event bytes, or an error before any event.
type Item = Result<Bytes, ApiError>;

/// The events of a streamed answer. Dropping it cancels the transcription.
#[derive(Debug)]
pub(crate) struct EventBody {
    first: Option<Bytes>,
    events: mpsc::UnboundedReceiver<Item>,
    _cancel: CancelOnDrop,
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
        self.events.poll_recv(cx).map(|item| {
            item.map(|item| {
                Ok(Frame::data(
                    item.unwrap_or_else(|error| error_event(&error)),
                ))
            })
        })
    }
}

/// Logs a transcription stopped by its [`CancelFlag`]: the client went away (or its
/// time was up).
pub(crate) fn cancelled(running: Instant) {
    tracing::info!(
        ran_ms = super::handler::ms(running.elapsed()),
        "transcription cancelled: nobody waits for it any more"
    );
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
fn finish(result: crate::Result<Transcript>, streamed: &str) -> Item {
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
    let cancel = CancelOnDrop(CancelFlag::new());
    let flag = cancel.0.clone();
    let worker = Arc::clone(state);
    // The permits travel with the work, as in `run_engine`.
    tokio::task::spawn_blocking(move || {
        let _permits = permits;
        let running = Instant::now();
        let mut streamed = String::new();
        let result =
            worker
                .transcriber
                .transcribe_request_streaming(request, &flag, &mut |delta| {
                    streamed.push_str(delta);
                    let _ = sender.send(Ok(delta_event(delta)));
                });
        if let Ok(transcript) = &result {
            worker.admission.record(running.elapsed());
            worker.metrics.observe_transcript(
                transcript.timings.decode,
                transcript.timings.engine,
                transcript.audio_secs,
            );
        } else if flag.is_cancelled() {
            cancelled(running);
        }
        let _ = sender.send(finish(result, &streamed));
    });
    let first = match tokio::time::timeout_at(deadline.into(), events.recv()).await {
        Ok(Some(first)) => first?,
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
    let mut response = Response::new(Either::Right(EventBody {
        first: Some(first),
        events,
        _cancel: cancel,
    }));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    Ok(response)
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
