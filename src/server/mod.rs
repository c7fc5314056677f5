//! The reference HTTP server: OpenAI's `POST /v1/audio/transcriptions`, plus context.
//!
//! ```sh
//! make serve                                   # 127.0.0.1:8080, the default model
//! cargo run --release --features server --example server -- --port 9000 --threads 4
//! CTXSCRIBE_API_KEYS=key1,key2 cargo run --release --features server --example server
//! ```
//!
//! # Endpoints
//!
//! * `POST /v1/audio/transcriptions`: `multipart/form-data` with a `file` part (wav, webm,
//!   mp3, m4a or ogg, recognised from the bytes; the part's file name and content type are
//!   ignored) and the optional text fields below, in any order. Answers `200`
//!   `{"text": "..."}`.
//!   With `stream=true` the answer is `text/event-stream`: OpenAI's
//!   `{"type": "transcript.text.delta", "delta": ...}` events, then one
//!   `{"type": "transcript.text.done", "text": ...}` whose `text` is exactly the
//!   non-streamed transcript (see `stream`). Without context (no `dictionary`, no
//!   `messages`/`prompt`, or none that gives a term) a delta is sent as soon as the
//!   window's first (greedy, temperature-0) decode closes a timed segment, while its text
//!   so far passes the temperature fallback's checks; a window decoded again after that
//!   (fallback, or the retry of a looping decode) sends only its final text's extension
//!   of what was sent, or nothing more when it does not extend it, as sent text cannot be
//!   taken back. With context a delta is sent as soon as a window of speech (up to 28 s)
//!   is final, its corrections included (they need the whole window). Joined, the deltas
//!   are the done event's text unless a window was decoded again that way or the
//!   optional LLM review rewrote the text at the end; the done event's text is always
//!   the authoritative one ([`crate::pipeline`] has the details). The answer
//!   starts with the first event: an error before it keeps its status code, an error
//!   after it is an `{"type": "error", "error": {...}}` event that ends the stream. A
//!   client that hangs up cancels its transcription at the engine's next step.
//! * `GET /v1/models`: OpenAI's list, `{"object": "list", "data": [{"id": <model>,
//!   "object": "model", "created": <load time>, "owned_by": "ctxscribe"}]}`; needs an API
//!   key like the transcriptions.
//! * `GET /metrics`: Prometheus metrics (OpenMetrics text; see `metrics`); needs an API
//!   key like the transcriptions unless the server runs with `--metrics-public`.
//! * `GET /`: a page to try the server in a browser (`page`): record from the microphone
//!   or pick a file, fill the context fields, and watch the transcript stream in. Its
//!   HTML, script and style (`/page/app.js`, `/page/app.css`) are compiled into the
//!   binary and load nothing from elsewhere. The page needs no API key; its requests do
//!   (the page has a field for the key). A query string over 2 KiB is `414 uri_too_long`.
//! * `GET /health`: `200 {"status": "ok", ...}` once the model is loaded (the server only
//!   listens after loading it), `503 {"status": "draining", ...}` while shutting down. It
//!   also reports the load (`in_flight`, `waiting`) and never needs an API key.
//!
//! Form fields:
//!
//! | field | meaning |
//! |---|---|
//! | `file` | the audio (required) |
//! | `messages` | context, a JSON array of `{"role": "system"\|"user", "content": ...}` |
//! | `languages` | `auto`, a code (`de`), a JSON string (`"de"`), a JSON array or comma list of codes |
//! | `dictionary` | terms, a JSON array or a comma-separated list |
//! | `sounds_like` | an extension of the contract: how dictionary terms are said, a JSON object of term -> array of spoken forms (`{"Nguyen": ["win"]}`) |
//! | `prompt` | OpenAI's field: extra context, used as the last (most recent) user message |
//! | `language` | OpenAI's field: a language constraint, read like `languages`; used only when `languages` is absent |
//! | `response_format` | only `json` (the default) is supported |
//! | `stream` | `true` for server-sent events, `false` (the default) for JSON |
//! | `model`, `temperature` | accepted for OpenAI compatibility and ignored: the server runs the model it was started with, greedy |
//!
//! A successful answer whose transcript carries warnings (`audio_truncated`: the file
//! ends inside its container, and the audio before the cut is transcribed) names their
//! codes in the `X-Ctxscribe-Warning` response header, streamed or not, and in the
//! request's log line (`warnings`); the body stays `{"text": ...}`.
//!
//! `messages`, `languages`, `dictionary` and `sounds_like` are validated by the library
//! (`crate::context::parse_*`): README "Input forms" and docs/architecture.md list their
//! rules. OpenAI's SDKs flatten `extra_body` lists into repeated bracketed fields; those
//! are accepted too: `dictionary[]` and `languages[]` (one item per field),
//! `sounds_like[TERM][]` (one spoken form of TERM per field) and
//! `messages[][role]` /
//! `messages[][content]` (the n-th `role` goes with the n-th `content`; content parts
//! need the JSON form). An empty field means "not given". Unknown fields are ignored;
//! a known field sent twice is an `invalid_request`.
//!
//! # Errors
//!
//! Every error is `{"error": {"message", "type", "param", "code"}}` with all four keys:
//! `code` is one of the codes below, `param` the offending field or `null`, `type` is
//! `invalid_request_error` for 4xx and `server_error` for 5xx (as OpenAI does). The
//! statuses come from the code, in one place (`ApiCode::status`).
//!
//! | code | HTTP | when |
//! |---|---|---|
//! | `invalid_request` | 400 | invalid `messages`/`languages`/`dictionary`/`sounds_like`/`prompt`/`language`/`stream`, a field twice, a text field not UTF-8 |
//! | `missing_file` | 400 | no `file` part |
//! | `unsupported_audio_type` | 400 | the bytes are not wav/webm/mp3/m4a/ogg |
//! | `audio_decode_failed` | 400 | a supported type whose content cannot be decoded |
//! | `audio_too_long` | 400 | decoded audio longer than `--max-audio-secs` |
//! | `unsupported_response_format` | 400 | `response_format` other than `json` |
//! | `invalid_multipart` | 400 | a `multipart/form-data` body without a boundary, or malformed |
//! | `invalid_api_key` | 401 | keys are configured and none was sent, or a wrong one |
//! | `not_found` | 404 | another path |
//! | `method_not_allowed` | 405 | another method (the `Allow` header names the right one) |
//! | `request_timeout` | 408 | the upload took longer than `--request-timeout` |
//! | `uri_too_long` | 414 | a page request whose query string is over 2 KiB |
//! | `file_too_large` | 413 | the `file` part is over `--max-file-bytes` |
//! | `request_too_large` | 413 | the body is over `--max-file-bytes` + 4 MiB (checked on `Content-Length` before reading, and while streaming), or a text field is over 2 MiB |
//! | `unsupported_media_type` | 415 | the body is not `multipart/form-data` |
//! | `model_unavailable` | 500 | the model cannot be used (a configuration problem) |
//! | `transcription_failed` | 502 | the engine or a remote provider (`CTXSCRIBE_ASR_URL`, `CTXSCRIBE_LLM_URL`) failed, or the transcription passed `--request-timeout` |
//! | `server_busy` | 503 | every engine slot and queue place is taken, or the queue wait passed the timeout; `Retry-After` says when to try again |
//!
//! Checks run in this order: path and method, API key, content type, `Content-Length`,
//! admission (`server_busy`), reading the form (`file_too_large`, `request_too_large`,
//! `invalid_multipart`, `request_timeout`), `missing_file`, `unsupported_audio_type` (from
//! the leading bytes), `unsupported_response_format`, `invalid_request`, the engine queue,
//! and the transcription itself (decode and engine errors).
//!
//! # Authentication
//!
//! API keys come from `CTXSCRIBE_API_KEYS` (comma-separated) and/or a key file
//! (`--api-key-file` / `CTXSCRIBE_API_KEY_FILE`: one key per line, blank lines and lines
//! starting with `#` ignored); never from the command line, where `ps` would show them.
//! A request sends one as `Authorization: Bearer <key>` or `X-Api-Key: <key>`. Only the
//! keys' SHA-256 digests are kept, and a presented key is hashed and compared with every
//! digest in constant time, so neither its content nor its length leaks through timing.
//! With no key configured there is no authentication (local development); the startup
//! log says so, loudly when the server listens beyond loopback.
//!
//! # Load
//!
//! * At most `--max-concurrent` transcriptions run at once (default: cores / threads, at
//!   least 1), on Tokio's blocking pool, never on the async threads. Up to `--max-queue`
//!   more requests (default: 4 per engine slot) may be uploading or waiting. A request
//!   takes its place *before* its body is read, so memory stays bounded: at most
//!   (max-concurrent + max-queue) bodies of at most `--max-file-bytes` + 4 MiB, plus the
//!   decoded audio of the running transcriptions (16 kHz f32, 230 MB per hour of audio,
//!   bounded by `--max-audio-secs`). When no place is free the answer is `503
//!   server_busy` at once, with `Retry-After` (the recent average transcription time).
//! * Waiting requests get an engine slot first come, first served.
//! * `--request-timeout` bounds each request, from its first byte to the answer: reading
//!   the upload (`408`), waiting for an engine slot (`503`) and the transcription
//!   (`502`). The engine also stops itself once it has run that long (the library's
//!   `with_timeout`), so a transcription nobody waits for any more frees its CPU. A client
//!   that hangs up cancels its transcription at the engine's next decoding step. Its
//!   engine slot stays taken until the engine has stopped, so no more than
//!   `--max-concurrent` transcriptions ever run.
//! * At most `--max-connections` connections are served; more wait in the kernel's
//!   backlog. Request headers must arrive within 30 s.
//! * SIGTERM or SIGINT: stop accepting, answer `/health` with 503, finish the requests in
//!   flight (for up to the request timeout plus 5 s), then exit 0. A second signal exits
//!   at once.
//!
//! # Logs
//!
//! One line per request on stderr (`--log-format text|json`): request id (the client's
//! `X-Request-Id` when it is a short token, else a generated one; echoed in the
//! response), method, path, status, error code, upload bytes, audio seconds and the time
//! of each stage (`read_ms` upload, `queue_ms`, `decode_ms`, `engine_ms`, `total_ms`).
//! Never audio, keys, field contents or error messages (which may quote fields). A
//! successful response also carries the stages in a `Server-Timing` header. A streamed
//! answer's line (and its metrics) is written when its first event is sent: its
//! `total_ms` is the time to that event, and the engine's stages are not in it.
//!
//! # Layout
//!
//! [`main`] parses the settings (`config`), loads the model and serves (`serve`); each
//! request goes through `handler` (routing, `auth`, `admission`, the multipart [`form`],
//! the transcription); every error answer is an [`api_error::ApiError`].

mod admission;
#[doc(hidden)]
pub mod api_error;
mod auth;
mod config;
#[doc(hidden)]
pub mod form;
mod handler;
mod metrics;
mod page;
mod record;
mod serve;
mod state;
mod stream;
mod work;

pub use serve::main;

/// Request headers for the tests.
#[cfg(test)]
pub(crate) fn test_headers(pairs: &[(&'static str, &str)]) -> hyper::header::HeaderMap {
    let mut map = hyper::header::HeaderMap::new();
    for (name, value) in pairs {
        map.append(
            *name,
            hyper::header::HeaderValue::from_str(value).expect("header value"),
        );
    }
    map
}
