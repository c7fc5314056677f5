//! One request: routing, authentication, the form, the engine slot, the transcript, and
//! its log line.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::{Body, Incoming};
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::json;
use tracing::info;

use tokio::sync::OwnedSemaphorePermit;

use crate::{ErrorCode, Transcript, TranscriptionRequest};

use super::api_error::{ApiError, ServerCode, json_response};
use super::form::{Form, read_form};
use super::metrics;
use super::page;
use super::record::{RequestRecord, RunFigures, ms};
use super::state::AppState;
use super::stream::{self, AnswerBody, StreamEnd, full};
use super::work::spawn_run;

/// The transcription endpoint (OpenAI's path).
const TRANSCRIPTIONS_PATH: &str = "/v1/audio/transcriptions";
/// The liveness/readiness endpoint.
const HEALTH_PATH: &str = "/health";
/// OpenAI's model list.
const MODELS_PATH: &str = "/v1/models";
/// Prometheus metrics.
const METRICS_PATH: &str = "/metrics";
/// Room for the text fields and the multipart framing on top of the file limit.
const FORM_OVERHEAD_BYTES: u64 = 4 * 1024 * 1024;
/// How long an unread request body is drained after an early error response, so the
/// client reads the answer instead of a connection reset.
const LINGER_TIME: Duration = Duration::from_secs(5);

pub(crate) async fn handle(
    state: &Arc<AppState>,
    request: Request<Incoming>,
    remote: SocketAddr,
) -> Response<AnswerBody> {
    let started = Instant::now();
    let id = state.request_ids.for_request(request.headers());
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let mut record = RequestRecord::default();
    let outcome = match (path.as_str(), &method) {
        (TRANSCRIPTIONS_PATH, &Method::POST) => {
            transcriptions(state, request, started, &mut record).await
        }
        (HEALTH_PATH, &Method::GET) => Ok(full(health(state))),
        (MODELS_PATH, &Method::GET) => state
            .keys
            .check(request.headers())
            .map(|()| full(models(state))),
        (METRICS_PATH, &Method::GET) => metrics_answer(state, request.headers()).map(full),
        (page_path, &Method::GET) if page::is_page(page_path) => {
            page::asset(request.uri()).map(full)
        }
        (TRANSCRIPTIONS_PATH, _) => Err(not_allowed("POST")),
        (HEALTH_PATH | MODELS_PATH | METRICS_PATH, _) => Err(not_allowed("GET")),
        (page_path, _) if page::is_page(page_path) => Err(not_allowed("GET")),
        _ => Err(ApiError::new(
            ServerCode::NotFound,
            format!("No route {path}: use POST {TRANSCRIPTIONS_PATH} or GET {HEALTH_PATH}."),
        )),
    };
    let mut response = outcome.unwrap_or_else(|error| {
        record.code = Some(error.code.as_str());
        full(error.into_response())
    });
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert("x-request-id", value);
    }
    let total = started.elapsed();
    if let (Some(decode), Some(engine)) = (record.decode, record.engine)
        && let Ok(value) = HeaderValue::from_str(&format!(
            "decode;dur={}, engine;dur={}, total;dur={}",
            ms(decode),
            ms(engine),
            ms(total)
        ))
    {
        response.headers_mut().insert("server-timing", value);
    }
    let log = RequestLog {
        id,
        remote,
        method,
        path,
        status: response.status().as_u16(),
        record,
        started,
    };
    match response.body_mut() {
        // A streamed answer is logged and counted when its last event is sent.
        http_body_util::Either::Right(events) => {
            let state = Arc::clone(state);
            events.on_end(Box::new(move |end| log.ended(end).write(&state)));
        }
        http_body_util::Either::Left(_) => log.write(state),
    }
    response
}

/// One request's access log line and metrics, written once its answer is complete.
struct RequestLog {
    id: String,
    remote: SocketAddr,
    method: Method,
    path: String,
    status: u16,
    record: RequestRecord,
    started: Instant,
}

impl RequestLog {
    /// The log of a streamed answer that ended as `end` says.
    fn ended(mut self, end: StreamEnd) -> Self {
        if let Some(figures) = end.figures {
            self.record.figures(figures);
        }
        self.record.code = self.record.code.or(end.code);
        self
    }

    fn write(self, state: &AppState) {
        let RequestLog {
            id,
            remote,
            method,
            path,
            status,
            record,
            started,
        } = self;
        let total = started.elapsed();
        let route = route_label(&path);
        state.metrics.observe(
            route,
            status,
            &record,
            total,
            route == TRANSCRIPTIONS_PATH && method == Method::POST,
        );
        // Health probes are frequent and uninteresting when all is well.
        if path == HEALTH_PATH && status == 200 {
            tracing::debug!(request_id = %id, status, "health");
            return;
        }
        info!(
            request_id = %id,
            remote = %remote.ip(),
            method = %method,
            path = %path,
            status,
            code = record.code,
            file_bytes = record.file_bytes,
            audio_secs = record.audio_secs,
            read_ms = record.read.map(ms),
            queue_ms = record.queue.map(ms),
            decode_ms = record.decode.map(ms),
            engine_ms = record.engine.map(ms),
            warnings = record.warnings,
            total_ms = ms(total),
            "request"
        );
    }
}

/// The path as a metrics label: a route of the server, or `other` (bounded cardinality).
fn route_label(path: &str) -> &'static str {
    if page::is_page(path) {
        return "page";
    }
    [TRANSCRIPTIONS_PATH, HEALTH_PATH, MODELS_PATH, METRICS_PATH]
        .into_iter()
        .find(|route| *route == path)
        .unwrap_or("other")
}

pub(crate) fn not_allowed(allow: &'static str) -> ApiError {
    ApiError::new(
        ServerCode::MethodNotAllowed,
        format!("Method not allowed here; use {allow}."),
    )
    .header(header::ALLOW, allow)
}

pub(crate) fn health(state: &AppState) -> Response<Full<Bytes>> {
    let draining = state.draining.load(Ordering::SeqCst);
    let admission = &state.admission;
    json_response(
        if draining {
            StatusCode::SERVICE_UNAVAILABLE
        } else {
            StatusCode::OK
        },
        &json!({
            "status": if draining { "draining" } else { "ok" },
            "model": state.model_name,
            "multilingual": state.transcriber.is_multilingual(),
            "auth": state.keys.is_enabled(),
            "in_flight": admission.in_flight(),
            "waiting": admission.waiting(),
            "max_concurrent": admission.max_concurrent,
            "max_queue": admission.max_queue,
        }),
    )
}

/// `GET /v1/models`: OpenAI's list shape, with the one model the server runs.
pub(crate) fn models(state: &AppState) -> Response<Full<Bytes>> {
    json_response(
        StatusCode::OK,
        &json!({
            "object": "list",
            "data": [{
                "id": state.model_name,
                "object": "model",
                "created": state.loaded_at,
                "owned_by": "ctxscribe",
                "cpu_kernels": crate::engine::cpu_kernels_json(),
                "backend": state.transcriber.backend().map(|backend| backend.to_json()),
            }],
        }),
    )
}

/// `GET /metrics`: behind the API keys unless `--metrics-public`.
pub(crate) fn metrics_answer(
    state: &AppState,
    headers: &HeaderMap,
) -> Result<Response<Full<Bytes>>, ApiError> {
    if !state.metrics_public {
        state.keys.check(headers)?;
    }
    let mut response = Response::new(Full::new(Bytes::from(
        state.metrics.render(&state.admission),
    )));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(metrics::CONTENT_TYPE),
    );
    Ok(response)
}

/// `POST /v1/audio/transcriptions`.
pub(crate) async fn transcriptions(
    state: &Arc<AppState>,
    request: Request<Incoming>,
    started: Instant,
    record: &mut RequestRecord,
) -> Result<Response<AnswerBody>, ApiError> {
    let deadline = started + state.request_timeout;
    let (parts, mut body) = request.into_parts();
    let max_body = state.max_file_bytes + FORM_OVERHEAD_BYTES;
    let expects_continue = parts
        .headers
        .get(header::EXPECT)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));

    // Checks that need no body; on failure the unread body is drained, not read.
    let (boundary, slot) = match admit(state, &parts.headers, &body, max_body) {
        Ok(admitted) => admitted,
        Err(error) => {
            linger(body, expects_continue, max_body);
            return Err(error);
        }
    };
    let form = read_upload(state, &mut body, boundary, max_body, deadline, record).await;
    let form = match form {
        Ok(form) => form,
        Err(error) => {
            linger(body, false, max_body);
            return Err(error);
        }
    };
    record.file_bytes = form.file.as_ref().map(|f| f.len() as u64);
    // `stream` is checked with the other invalid_request fields, after the audio's.
    let stream = form.stream();
    let request = form.into_request(state.transcriber.audio_limits())?;
    let stream = stream?;
    // Known from the container before decoding, so a streamed answer's headers carry it too.
    let warnings = warning_codes(&request.audio.warnings());
    record.warnings.clone_from(&warnings);

    let queued = Instant::now();
    let engine = state.admission.engine_slot(deadline).await;
    record.queue = Some(queued.elapsed());
    let engine = engine?;
    if stream {
        let mut response = stream::respond(state, (slot, engine), request, deadline).await?;
        add_warning_header(&mut response, warnings.as_deref());
        return Ok(response);
    }

    let transcript = run_engine(state, (slot, engine), request, deadline).await?;
    record.figures(RunFigures::of(&transcript));
    let mut response = full(json_response(
        StatusCode::OK,
        &json!({ "text": transcript.text }),
    ));
    add_warning_header(&mut response, warnings.as_deref());
    Ok(response)
}

/// The header that carries a successful answer's warning codes; the body stays the
/// contract's `{"text": ...}`.
const WARNING_HEADER: &str = "x-ctxscribe-warning";

fn warning_codes(warnings: &[crate::Warning]) -> Option<String> {
    (!warnings.is_empty()).then(|| {
        warnings
            .iter()
            .map(|w| w.code.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    })
}

fn add_warning_header<B>(response: &mut Response<B>, codes: Option<&str>) {
    if let Some(value) = codes.and_then(|c| HeaderValue::from_str(c).ok()) {
        response.headers_mut().insert(WARNING_HEADER, value);
    }
}

/// The checks that need no body: the API key, the multipart boundary, a declared length
/// within `max_body`, and a place in the admission queue.
fn admit(
    state: &AppState,
    headers: &HeaderMap,
    body: &Incoming,
    max_body: u64,
) -> Result<(String, OwnedSemaphorePermit), ApiError> {
    state
        .keys
        .check(headers)
        .and_then(|()| multipart_boundary(headers))
        .and_then(|boundary| {
            if let Some(length) = body.size_hint().exact()
                && length > max_body
            {
                return Err(ApiError::new(
                    ServerCode::RequestTooLarge,
                    format!(
                        "The request body is {length} bytes; the limit is {max_body} bytes \
                         (a {} byte file plus the other fields).",
                        state.max_file_bytes
                    ),
                ));
            }
            Ok((boundary, state.admission.admit()?))
        })
}

/// Reads the multipart form of at most `max_body` bytes before `deadline`; records how
/// long that took.
async fn read_upload(
    state: &AppState,
    body: &mut Incoming,
    boundary: String,
    max_body: u64,
    deadline: Instant,
    record: &mut RequestRecord,
) -> Result<Form, ApiError> {
    let reading = Instant::now();
    let read = tokio::time::timeout_at(
        deadline.into(),
        read_form(body, boundary, state.max_file_bytes, max_body),
    )
    .await
    .unwrap_or_else(|_| {
        Err(ApiError::new(
            ServerCode::RequestTimeout,
            "The upload did not finish within the request timeout.",
        ))
    });
    record.read = Some(reading.elapsed());
    read
}

/// Runs the transcription on the blocking pool, until `deadline`.
async fn run_engine(
    state: &Arc<AppState>,
    permits: (OwnedSemaphorePermit, OwnedSemaphorePermit),
    request: TranscriptionRequest,
    deadline: Instant,
) -> Result<Transcript, ApiError> {
    let (work, _cancel) = spawn_run(state, permits, request, deadline, |_: &_| {}, |r| r);
    match tokio::time::timeout_at(deadline.into(), work).await {
        Ok(Ok(result)) => Ok(result?),
        Ok(Err(_)) => Err(ApiError::new(
            ErrorCode::TranscriptionFailed,
            "The transcription worker stopped unexpectedly.",
        )),
        Err(_) => Err(ApiError::new(
            ErrorCode::TranscriptionFailed,
            format!(
                "The transcription did not finish within the request timeout ({} s).",
                state.request_timeout.as_secs_f64()
            ),
        )),
    }
}

/// The multipart boundary, or 415 when the body is not `multipart/form-data`.
pub(crate) fn multipart_boundary(headers: &HeaderMap) -> Result<String, ApiError> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    match multer::parse_boundary(content_type) {
        Ok(boundary) => Ok(boundary),
        Err(multer::Error::NoBoundary) => Err(ApiError::new(
            ServerCode::InvalidMultipart,
            "The multipart/form-data Content-Type has no boundary parameter.",
        )),
        Err(_) => Err(ApiError::new(
            ServerCode::UnsupportedMediaType,
            format!(
                "Expected a multipart/form-data body, got Content-Type {:?}.",
                content_type.chars().take(100).collect::<String>()
            ),
        )),
    }
}

/// Drains an unread request body in the background (for at most [`LINGER_TIME`] and
/// `cap` bytes), so that a client still uploading reads the error answer instead of a
/// connection reset. A client waiting for `100 Continue` is not asked to send it.
pub(crate) fn linger(mut body: Incoming, expects_continue: bool, cap: u64) {
    if expects_continue || body.is_end_stream() {
        return;
    }
    tokio::spawn(tokio::time::timeout(LINGER_TIME, async move {
        let mut seen = 0u64;
        while let Some(Ok(frame)) = body.frame().await {
            seen += frame.data_ref().map_or(0, |d| d.len() as u64);
            if seen > cap.saturating_mul(2) {
                break;
            }
        }
    }));
}
