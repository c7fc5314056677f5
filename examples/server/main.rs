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
//! | `prompt` | OpenAI's field: extra context, used as the last (most recent) user message |
//! | `language` | OpenAI's field: a language constraint, read like `languages`; used only when `languages` is absent |
//! | `response_format` | only `json` (the default) is supported |
//! | `model`, `temperature` | accepted for OpenAI compatibility and ignored: the server runs the model it was started with, greedy |
//!
//! `messages`, `languages` and `dictionary` are validated by the library
//! (`ctxscribe::context::parse_*`): the README lists their rules. OpenAI's SDKs flatten
//! `extra_body` lists into repeated bracketed fields; those are accepted too:
//! `dictionary[]` and `languages[]` (one item per field) and `messages[][role]` /
//! `messages[][content]` (the n-th `role` goes with the n-th `content`; content parts
//! need the JSON form). An empty field means "not given". Unknown fields are ignored;
//! a known field sent twice is an `invalid_request`.
//!
//! # Errors
//!
//! Every error is `{"error": {"message", "type", "param", "code"}}` with all four keys:
//! `code` is one of the codes below, `param` the offending field or `null`, `type` is
//! `invalid_request_error` for 4xx and `server_error` for 5xx (as OpenAI does). The
//! statuses come from the code, in one place ([`api_error::ApiCode::status`]).
//!
//! | code | HTTP | when |
//! |---|---|---|
//! | `invalid_request` | 400 | invalid `messages`/`languages`/`dictionary`/`prompt`/`language`, a field twice, a text field not UTF-8 |
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
//!   `with_timeout`), so a transcription nobody waits for any more frees its CPU. Its
//!   engine slot stays taken until then, also when the client hangs up, so no more than
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
//! successful response also carries the stages in a `Server-Timing` header.

mod api_error;
mod form;

use std::collections::BTreeMap;
use std::collections::hash_map::RandomState;
use std::convert::Infallible;
use std::hash::BuildHasher;
use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use ctxscribe::{AudioLimits, ContextTranscriber};
use http_body_util::{BodyExt, Full};
use hyper::body::{Body, Incoming};
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use serde_json::json;
use sha2::{Digest, Sha256};
use subtle::{Choice, ConstantTimeEq};
use tokio::net::TcpListener;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tracing::{error, info, warn};

use crate::api_error::{ApiError, ServerCode, json_response};
use crate::form::read_form;
use ctxscribe::ErrorCode;

/// The transcription endpoint (OpenAI's path).
const TRANSCRIPTIONS_PATH: &str = "/v1/audio/transcriptions";
/// The liveness/readiness endpoint.
const HEALTH_PATH: &str = "/health";
/// Room for the text fields and the multipart framing on top of the file limit.
const FORM_OVERHEAD_BYTES: u64 = 4 * 1024 * 1024;
/// How long a client may take to send its request headers.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// How long an unread request body is drained after an early error response, so the
/// client reads the answer instead of a connection reset.
const LINGER_TIME: Duration = Duration::from_secs(5);
/// Extra time given to in-flight requests on shutdown, on top of the request timeout.
const SHUTDOWN_EXTRA: Duration = Duration::from_secs(5);

fn main() -> std::process::ExitCode {
    let config = match Config::from_args(std::env::args().skip(1), |name| std::env::var(name).ok())
    {
        Ok(Parsed::Run(config)) => config,
        Ok(Parsed::Help) => {
            print!("{}", usage());
            return std::process::ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("server: {message} (see --help)");
            return std::process::ExitCode::from(2);
        }
    };
    init_logging(config.log_format, config.log_level);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            error!(error = %e, "cannot start the async runtime");
            return std::process::ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(run(*config));
    // Transcriptions still running after the grace period are abandoned here.
    runtime.shutdown_timeout(Duration::from_secs(1));
    match outcome {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(message) => {
            error!("{message}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Loads the model, binds, serves until a shutdown signal, then drains.
async fn run(config: Config) -> Result<(), String> {
    let keys = ApiKeys::load(
        std::env::var("CTXSCRIBE_API_KEYS").ok().as_deref(),
        config.api_key_file.as_deref(),
    )?;
    // Remote providers come from the environment through the builder's defaults
    // (`CTXSCRIBE_ASR_URL`, `CTXSCRIBE_LLM_URL`, ...; see `ctxscribe::config`). With a
    // remote speech endpoint no model is loaded here.
    let remote_speech = ctxscribe::config::remote_speech_from_env();
    let model_path = match (&config.model, &remote_speech) {
        (Some(path), _) => Some(path.clone()),
        (None, Some(_)) => None,
        (None, None) => {
            Some(ctxscribe::config::resolve_model_path(None).map_err(|e| e.to_string())?)
        }
    };
    let mut builder = ContextTranscriber::builder();
    if let Some(path) = &model_path {
        builder = builder.with_model_path(path);
    }
    let mut builder = builder
        .with_threads(config.threads)
        .with_timeout(config.request_timeout)
        .with_audio_limits(AudioLimits {
            max_file_bytes: config.max_file_bytes,
            max_duration_secs: config.max_audio_secs,
            ..AudioLimits::default()
        });
    if config.no_vad {
        builder = builder.without_vad();
    } else if let Some(vad) = &config.vad_model {
        builder = builder.with_vad_model_path(vad);
    }
    let loading = Instant::now();
    let transcriber = tokio::task::spawn_blocking(move || builder.build())
        .await
        .map_err(|e| format!("loading the model failed: {e}"))?
        .map_err(|e| e.to_string())?;
    let model_name = match (&remote_speech, &model_path) {
        (Some(endpoint), _) => format!("remote:{}", endpoint.model),
        (None, Some(path)) => path
            .file_name()
            .map_or_else(|| "model".to_owned(), |n| n.to_string_lossy().into_owned()),
        (None, None) => "model".to_owned(),
    };
    info!(
        model = %model_name,
        multilingual = transcriber.is_multilingual(),
        threads = config.threads,
        load_ms = ms(loading.elapsed()),
        "model loaded"
    );

    let addr = format!("{}:{}", config.host, config.port);
    let listener = TcpListener::bind(&addr)
        .await
        .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    let local = listener
        .local_addr()
        .map_err(|e| format!("cannot read the bound address: {e}"))?;
    if keys.is_enabled() {
        info!(keys = keys.len(), "authentication enabled");
    } else if local.ip().is_loopback() {
        warn!(
            "authentication disabled: no API keys configured (CTXSCRIBE_API_KEYS or \
             --api-key-file); every request is accepted (local development)"
        );
    } else {
        warn!(
            "authentication disabled on a non-loopback address: anyone who can reach {local} \
             can use the server; set CTXSCRIBE_API_KEYS or --api-key-file"
        );
    }
    let state = Arc::new(AppState {
        transcriber,
        keys,
        admission: Admission::new(config.max_concurrent, config.max_queue),
        max_file_bytes: config.max_file_bytes,
        request_timeout: config.request_timeout,
        draining: AtomicBool::new(false),
        model_name,
        request_ids: RequestIds::default(),
    });
    info!(
        addr = %local,
        max_concurrent = config.max_concurrent,
        max_queue = config.max_queue,
        max_file_bytes = config.max_file_bytes,
        request_timeout_secs = config.request_timeout.as_secs_f64(),
        "listening on http://{local}"
    );
    serve(listener, state, &config).await;
    Ok(())
}

/// Accepts connections until SIGTERM/SIGINT, then lets the in-flight requests finish.
async fn serve(listener: TcpListener, state: Arc<AppState>, config: &Config) {
    let graceful = GracefulShutdown::new();
    let connections = Arc::new(Semaphore::new(config.max_connections));
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT);
    let mut signal = std::pin::pin!(shutdown_signal());
    loop {
        let permit = tokio::select! {
            () = &mut signal => break,
            permit = Arc::clone(&connections).acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
        };
        let (stream, remote) = tokio::select! {
            () = &mut signal => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors and the like: back off instead of spinning.
                    warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let state = Arc::clone(&state);
        let service = hyper::service::service_fn(move |request| {
            let state = Arc::clone(&state);
            async move { Ok::<_, Infallible>(handle(&state, request, remote).await) }
        });
        let connection = graceful.watch(http.serve_connection(TokioIo::new(stream), service));
        tokio::spawn(async move {
            // Errors here are the client's doing (reset, bad framing, header timeout).
            let _ = connection.await;
            drop(permit);
        });
    }
    drop(listener);
    state.draining.store(true, Ordering::SeqCst);
    let grace = config.request_timeout + SHUTDOWN_EXTRA;
    info!(
        in_flight = state.admission.in_flight(),
        waiting = state.admission.waiting(),
        grace_secs = grace.as_secs_f64(),
        "shutting down: finishing the requests in flight"
    );
    tokio::select! {
        () = graceful.shutdown() => info!("all requests finished; bye"),
        () = tokio::time::sleep(grace) => warn!("grace period over; exiting with requests in flight"),
        () = shutdown_signal() => warn!("second signal; exiting with requests in flight"),
    }
}

/// Resolves on SIGTERM or SIGINT (Ctrl-C).
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) {
            (Ok(mut term), Ok(mut int)) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = int.recv() => {}
                }
            }
            _ => {
                warn!("cannot install signal handlers; stop the server with SIGKILL");
                std::future::pending::<()>().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

// ---------------------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------------------

/// One command-line option and its environment variable.
struct OptionSpec {
    flag: &'static str,
    env: &'static str,
    /// `None` for a switch (`--no-vad`), else the value's name in the usage text.
    value: Option<&'static str>,
    help: &'static str,
}

const OPTIONS: &[OptionSpec] = &[
    OptionSpec {
        flag: "--host",
        env: "CTXSCRIBE_HOST",
        value: Some("ADDR"),
        help: "address to listen on [default: 127.0.0.1]",
    },
    OptionSpec {
        flag: "--port",
        env: "CTXSCRIBE_PORT",
        value: Some("PORT"),
        help: "port to listen on; 0 picks a free one (logged) [default: 8080]",
    },
    OptionSpec {
        flag: "--model",
        env: "CTXSCRIBE_MODEL",
        value: Some("PATH"),
        help: "whisper.cpp ggml/gguf model [default: models/ggml-base.bin from `make setup`]",
    },
    OptionSpec {
        flag: "--vad-model",
        env: "CTXSCRIBE_VAD_MODEL",
        value: Some("PATH"),
        help: "Silero VAD model [default: silero-v6.2.0-ggml.bin next to the model]",
    },
    OptionSpec {
        flag: "--no-vad",
        env: "CTXSCRIBE_NO_VAD",
        value: None,
        help: "decode the whole signal, skipping only digital silence",
    },
    OptionSpec {
        flag: "--threads",
        env: "CTXSCRIBE_THREADS",
        value: Some("N"),
        help: "engine threads per transcription [default: all cores]",
    },
    OptionSpec {
        flag: "--api-key-file",
        env: "CTXSCRIBE_API_KEY_FILE",
        value: Some("PATH"),
        help: "file of API keys, one per line (keys may also come from CTXSCRIBE_API_KEYS, \
               comma-separated); no keys = no authentication",
    },
    OptionSpec {
        flag: "--max-file-bytes",
        env: "CTXSCRIBE_MAX_FILE_BYTES",
        value: Some("BYTES"),
        help: "largest audio upload [default: 26214400, 25 MiB as OpenAI]",
    },
    OptionSpec {
        flag: "--max-audio-secs",
        env: "CTXSCRIBE_MAX_AUDIO_SECS",
        value: Some("SECS"),
        help: "longest decoded audio [default: 3600]",
    },
    OptionSpec {
        flag: "--max-concurrent",
        env: "CTXSCRIBE_MAX_CONCURRENT",
        value: Some("N"),
        help: "transcriptions running at once [default: cores / threads, at least 1]",
    },
    OptionSpec {
        flag: "--max-queue",
        env: "CTXSCRIBE_MAX_QUEUE",
        value: Some("N"),
        help: "requests uploading or waiting beyond those [default: 4 x max-concurrent]",
    },
    OptionSpec {
        flag: "--request-timeout",
        env: "CTXSCRIBE_REQUEST_TIMEOUT",
        value: Some("SECS"),
        help: "limit per request: upload, queue and transcription [default: 600]",
    },
    OptionSpec {
        flag: "--max-connections",
        env: "CTXSCRIBE_MAX_CONNECTIONS",
        value: Some("N"),
        help: "open connections served at once [default: 1024]",
    },
    OptionSpec {
        flag: "--log-format",
        env: "CTXSCRIBE_LOG_FORMAT",
        value: Some("text|json"),
        help: "log line format on stderr [default: text]",
    },
    OptionSpec {
        flag: "--log-level",
        env: "CTXSCRIBE_LOG_LEVEL",
        value: Some("LEVEL"),
        help: "error, warn, info, debug or trace [default: info]",
    },
];

fn usage() -> String {
    let mut text = String::from(
        "ctxscribe reference server: POST /v1/audio/transcriptions, GET /health\n\n\
         usage: server [OPTIONS]   (cargo run --release --features server --example server -- ...)\n\n\
         Every option can also be set by its environment variable; the flag wins.\n\n",
    );
    for option in OPTIONS {
        let flag = match option.value {
            Some(value) => format!("{} {value}", option.flag),
            None => option.flag.to_owned(),
        };
        text.push_str(&format!(
            "  {flag:<28} {}\n  {:<28} env: {}\n",
            option.help, "", option.env
        ));
    }
    text.push_str("  -h, --help                   this text\n");
    text
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LogFormat {
    Text,
    Json,
}

/// The server's settings, from flags, then environment variables, then defaults.
#[derive(Debug, Clone)]
struct Config {
    host: String,
    port: u16,
    model: Option<PathBuf>,
    vad_model: Option<PathBuf>,
    no_vad: bool,
    threads: usize,
    api_key_file: Option<PathBuf>,
    max_file_bytes: u64,
    max_audio_secs: f64,
    max_concurrent: usize,
    max_queue: usize,
    request_timeout: Duration,
    max_connections: usize,
    log_format: LogFormat,
    log_level: tracing::Level,
}

/// What the command line asks for.
#[derive(Debug)]
enum Parsed {
    Run(Box<Config>),
    Help,
}

impl Config {
    /// Parses `--flag value` / `--flag=value` arguments; `env` reads a variable (an empty
    /// value counts as unset).
    fn from_args(
        args: impl IntoIterator<Item = String>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Parsed, String> {
        let mut given: BTreeMap<&'static str, String> = BTreeMap::new();
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            if arg == "-h" || arg == "--help" {
                return Ok(Parsed::Help);
            }
            let (name, inline) = match arg.split_once('=') {
                Some((name, value)) => (name.to_owned(), Some(value.to_owned())),
                None => (arg.clone(), None),
            };
            let spec = OPTIONS
                .iter()
                .find(|o| o.flag == name)
                .ok_or_else(|| format!("unknown argument {arg:?}"))?;
            let value = match (spec.value, inline) {
                (None, None) => "true".to_owned(),
                (None, Some(_)) => return Err(format!("{} takes no value", spec.flag)),
                (Some(_), Some(value)) => value,
                (Some(_), None) => args
                    .next()
                    .ok_or_else(|| format!("{} needs a value", spec.flag))?,
            };
            given.insert(spec.flag, value);
        }
        let get = |flag: &str| -> Option<(String, String)> {
            let spec = OPTIONS.iter().find(|o| o.flag == flag)?;
            if let Some(value) = given.get(spec.flag) {
                return Some((spec.flag.to_owned(), value.clone()));
            }
            env(spec.env)
                .filter(|v| !v.trim().is_empty())
                .map(|v| (spec.env.to_owned(), v))
        };
        let number = |flag: &str, min: f64| -> Result<Option<f64>, String> {
            get(flag)
                .map(|(from, text)| match text.trim().parse::<f64>() {
                    Ok(n) if n.is_finite() && n >= min => Ok(n),
                    _ => Err(format!("{from}: expected a number >= {min}, got {text:?}")),
                })
                .transpose()
        };
        let integer = |flag: &str, min: u64| -> Result<Option<u64>, String> {
            get(flag)
                .map(|(from, text)| match text.trim().parse::<u64>() {
                    Ok(n) if n >= min => Ok(n),
                    _ => Err(format!(
                        "{from}: expected a whole number >= {min}, got {text:?}"
                    )),
                })
                .transpose()
        };
        let count = |flag: &str| -> Result<Option<usize>, String> {
            integer(flag, 1)?
                .map(|n| usize::try_from(n).map_err(|_| format!("{flag}: {n} is too large")))
                .transpose()
        };
        let switch = |flag: &str| -> Result<bool, String> {
            match get(flag) {
                None => Ok(false),
                Some((from, text)) => match text.trim().to_ascii_lowercase().as_str() {
                    "1" | "true" | "yes" | "on" => Ok(true),
                    "0" | "false" | "no" | "off" => Ok(false),
                    _ => Err(format!("{from}: expected true or false, got {text:?}")),
                },
            }
        };

        let threads = match count("--threads")? {
            Some(threads) => {
                ctxscribe::config::check_threads(i64::try_from(threads).unwrap_or(i64::MAX))
                    .map_err(|e| format!("--threads: {e}"))?
            }
            None => ctxscribe::config::default_threads(),
        };
        let max_concurrent = count("--max-concurrent")?
            .unwrap_or_else(|| ctxscribe::config::concurrent_calls(threads));
        let max_queue = match integer("--max-queue", 0)? {
            Some(n) => usize::try_from(n).map_err(|_| format!("--max-queue: {n} is too large"))?,
            None => 4 * max_concurrent,
        };
        let port = match integer("--port", 0)? {
            Some(port) => {
                u16::try_from(port).map_err(|_| format!("--port: {port} is not a port"))?
            }
            None => 8080,
        };
        let log_format = match get("--log-format") {
            None => LogFormat::Text,
            Some((from, text)) => match text.trim() {
                "text" => LogFormat::Text,
                "json" => LogFormat::Json,
                _ => return Err(format!("{from}: expected text or json, got {text:?}")),
            },
        };
        let log_level = match get("--log-level") {
            None => tracing::Level::INFO,
            Some((from, text)) => text.trim().parse::<tracing::Level>().map_err(|_| {
                format!("{from}: expected error, warn, info, debug or trace, got {text:?}")
            })?,
        };
        let request_timeout = number("--request-timeout", 0.001)?.unwrap_or(600.0);
        let request_timeout = Duration::try_from_secs_f64(request_timeout)
            .map_err(|_| format!("--request-timeout: {request_timeout} is out of range"))?;
        Ok(Parsed::Run(Box::new(Config {
            host: get("--host")
                .map_or_else(|| "127.0.0.1".to_owned(), |(_, v)| v.trim().to_owned()),
            port,
            model: get("--model").map(|(_, v)| PathBuf::from(v)),
            vad_model: get("--vad-model").map(|(_, v)| PathBuf::from(v)),
            no_vad: switch("--no-vad")?,
            threads,
            api_key_file: get("--api-key-file").map(|(_, v)| PathBuf::from(v)),
            max_file_bytes: integer("--max-file-bytes", 1)?
                .unwrap_or(AudioLimits::default().max_file_bytes),
            max_audio_secs: number("--max-audio-secs", 0.001)?
                .unwrap_or(AudioLimits::default().max_duration_secs),
            max_concurrent,
            max_queue,
            request_timeout,
            max_connections: count("--max-connections")?.unwrap_or(1024),
            log_format,
            log_level,
        })))
    }
}

fn init_logging(format: LogFormat, level: tracing::Level) {
    let builder = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(level)
        .with_target(false);
    match format {
        LogFormat::Text => builder.with_ansi(std::io::stderr().is_terminal()).init(),
        LogFormat::Json => builder
            .with_ansi(false)
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_span_list(false)
            .init(),
    }
}

// ---------------------------------------------------------------------------------------
// Authentication
// ---------------------------------------------------------------------------------------

/// The configured API keys, kept only as SHA-256 digests.
#[derive(Debug, Default)]
struct ApiKeys {
    digests: Vec<[u8; 32]>,
}

impl ApiKeys {
    /// Keys from `CTXSCRIBE_API_KEYS` (comma-separated) and from `file` (one per line,
    /// `#` comments). A key file that cannot be read, or holds no key, is an error: it
    /// means the operator wanted authentication.
    fn load(env_keys: Option<&str>, file: Option<&Path>) -> Result<Self, String> {
        let mut keys: Vec<String> = env_keys
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|k| !k.is_empty())
            .map(str::to_owned)
            .collect();
        if let Some(file) = file {
            let text = std::fs::read_to_string(file)
                .map_err(|e| format!("cannot read the API key file {}: {e}", file.display()))?;
            let before = keys.len();
            keys.extend(
                text.lines()
                    .map(str::trim)
                    .filter(|line| !line.is_empty() && !line.starts_with('#'))
                    .map(str::to_owned),
            );
            if keys.len() == before {
                return Err(format!("the API key file {} holds no key", file.display()));
            }
        }
        Ok(ApiKeys {
            digests: keys.iter().map(|k| digest(k.as_bytes())).collect(),
        })
    }

    fn is_enabled(&self) -> bool {
        !self.digests.is_empty()
    }

    fn len(&self) -> usize {
        self.digests.len()
    }

    /// Whether `key` is one of the keys: compared with every digest, in constant time.
    fn accepts(&self, key: &[u8]) -> bool {
        let presented = digest(key);
        let mut found = Choice::from(0);
        for known in &self.digests {
            found |= known.as_slice().ct_eq(presented.as_slice());
        }
        found.into()
    }

    /// Checks the request's `Authorization: Bearer` or `X-Api-Key` header.
    fn check(&self, headers: &HeaderMap) -> Result<(), ApiError> {
        if !self.is_enabled() {
            return Ok(());
        }
        let presented = presented_keys(headers);
        let unauthorized = |message: &str| {
            ApiError::new(ServerCode::InvalidApiKey, message)
                .header(header::WWW_AUTHENTICATE, "Bearer")
        };
        // One guess per header and request: repeating a header (hyper accepts up to 100)
        // would otherwise test that many keys per request.
        if headers.get_all(header::AUTHORIZATION).iter().count() > 1
            || headers.get_all("x-api-key").iter().count() > 1
        {
            return Err(unauthorized(
                "Send one API key: the Authorization or X-Api-Key header was repeated.",
            ));
        }
        if presented.is_empty() {
            return Err(unauthorized(
                "Missing API key: send it as `Authorization: Bearer <key>` or `X-Api-Key: <key>`.",
            ));
        }
        // Check every presented key, so timing does not say which header was right.
        let mut accepted = false;
        for key in presented {
            accepted |= self.accepts(key);
        }
        if accepted {
            Ok(())
        } else {
            Err(unauthorized("Incorrect API key provided."))
        }
    }
}

fn digest(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// The keys a request presents: a Bearer token and/or an `X-Api-Key` value.
fn presented_keys(headers: &HeaderMap) -> Vec<&[u8]> {
    let mut keys = Vec::new();
    for value in headers.get_all(header::AUTHORIZATION) {
        let value = value.as_bytes();
        if value.len() > 7 && value[..7].eq_ignore_ascii_case(b"bearer ") {
            let token = value[7..].trim_ascii();
            if !token.is_empty() {
                keys.push(token);
            }
        }
    }
    for value in headers.get_all("x-api-key") {
        let token = value.as_bytes().trim_ascii();
        if !token.is_empty() {
            keys.push(token);
        }
    }
    keys
}

// ---------------------------------------------------------------------------------------
// Admission: engine slots and the bounded queue
// ---------------------------------------------------------------------------------------

/// Bounds the work in the server: `slots` counts every admitted request (uploading,
/// waiting or running), `engine` the running transcriptions.
#[derive(Debug)]
struct Admission {
    slots: Arc<Semaphore>,
    engine: Arc<Semaphore>,
    max_concurrent: usize,
    max_queue: usize,
    /// Exponential moving average of the transcription time, in milliseconds.
    average_ms: AtomicU64,
}

impl Admission {
    fn new(max_concurrent: usize, max_queue: usize) -> Self {
        Admission {
            slots: Arc::new(Semaphore::new(max_concurrent + max_queue)),
            engine: Arc::new(Semaphore::new(max_concurrent)),
            max_concurrent,
            max_queue,
            average_ms: AtomicU64::new(1000),
        }
    }

    /// A place for one more request, or `server_busy` at once.
    fn admit(&self) -> Result<OwnedSemaphorePermit, ApiError> {
        Arc::clone(&self.slots).try_acquire_owned().map_err(|_| {
            self.busy(format!(
                "The server is busy: {} transcriptions running and {} requests waiting. \
                 Retry later.",
                self.max_concurrent, self.max_queue
            ))
        })
    }

    /// Waits for an engine slot until `deadline`.
    async fn engine_slot(&self, deadline: Instant) -> Result<OwnedSemaphorePermit, ApiError> {
        let waiting = Arc::clone(&self.engine).acquire_owned();
        match tokio::time::timeout_at(deadline.into(), waiting).await {
            Ok(Ok(permit)) => Ok(permit),
            Ok(Err(_)) => Err(self.busy("The server is shutting down.".to_owned())),
            Err(_) => Err(self.busy(
                "The server is busy: no transcription slot became free before the request \
                 timeout. Retry later."
                    .to_owned(),
            )),
        }
    }

    fn busy(&self, message: String) -> ApiError {
        ApiError::new(ServerCode::ServerBusy, message)
            .header(header::RETRY_AFTER, self.retry_after_secs().to_string())
    }

    /// Seconds a client should wait: the recent average transcription time, 1 to 60.
    fn retry_after_secs(&self) -> u64 {
        self.average_ms
            .load(Ordering::Relaxed)
            .div_ceil(1000)
            .clamp(1, 60)
    }

    fn record(&self, took: Duration) {
        let sample = u64::try_from(took.as_millis()).unwrap_or(u64::MAX);
        // A lost update under contention only makes the estimate a little staler.
        let old = self.average_ms.load(Ordering::Relaxed);
        self.average_ms
            .store(old - old / 4 + sample / 4, Ordering::Relaxed);
    }

    fn in_flight(&self) -> usize {
        self.max_concurrent - self.engine.available_permits()
    }

    fn waiting(&self) -> usize {
        let admitted = self.max_concurrent + self.max_queue - self.slots.available_permits();
        admitted.saturating_sub(self.in_flight())
    }
}

// ---------------------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------------------

#[derive(Debug)]
struct AppState {
    transcriber: ContextTranscriber,
    keys: ApiKeys,
    admission: Admission,
    max_file_bytes: u64,
    request_timeout: Duration,
    draining: AtomicBool,
    model_name: String,
    request_ids: RequestIds,
}

/// Generated request ids: a keyed hash of a counter (unique, not guessable in order).
#[derive(Debug, Default)]
struct RequestIds {
    counter: AtomicU64,
    keys: RandomState,
}

impl RequestIds {
    /// The client's `X-Request-Id` if it is a short token, else a new id.
    fn for_request(&self, headers: &HeaderMap) -> String {
        if let Some(id) = headers.get("x-request-id").and_then(|v| v.to_str().ok())
            && (1..=128).contains(&id.len())
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b))
        {
            return id.to_owned();
        }
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        format!("req_{:016x}", self.keys.hash_one(n))
    }
}

/// What the access log says about one request.
#[derive(Debug, Default)]
struct RequestRecord {
    code: Option<&'static str>,
    file_bytes: Option<u64>,
    audio_secs: Option<f64>,
    read: Option<Duration>,
    queue: Option<Duration>,
    decode: Option<Duration>,
    engine: Option<Duration>,
}

fn ms(duration: Duration) -> f64 {
    (duration.as_secs_f64() * 1e6).round() / 1e3
}

async fn handle(
    state: &AppState,
    request: Request<Incoming>,
    remote: SocketAddr,
) -> Response<Full<Bytes>> {
    let started = Instant::now();
    let id = state.request_ids.for_request(request.headers());
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let mut record = RequestRecord::default();
    let outcome = match (path.as_str(), &method) {
        (TRANSCRIPTIONS_PATH, &Method::POST) => {
            transcriptions(state, request, started, &mut record).await
        }
        (HEALTH_PATH, &Method::GET) => Ok(health(state)),
        (TRANSCRIPTIONS_PATH, _) => Err(not_allowed("POST")),
        (HEALTH_PATH, _) => Err(not_allowed("GET")),
        _ => Err(ApiError::new(
            ServerCode::NotFound,
            format!("No route {path}: use POST {TRANSCRIPTIONS_PATH} or GET {HEALTH_PATH}."),
        )),
    };
    let mut response = outcome.unwrap_or_else(|error| {
        record.code = Some(error.code.as_str());
        error.into_response()
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
    let status = response.status().as_u16();
    // Health probes are frequent and uninteresting when all is well.
    if path == HEALTH_PATH && status == 200 {
        tracing::debug!(request_id = %id, status, "health");
    } else {
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
            total_ms = ms(total),
            "request"
        );
    }
    response
}

fn not_allowed(allow: &'static str) -> ApiError {
    ApiError::new(
        ServerCode::MethodNotAllowed,
        format!("Method not allowed here; use {allow}."),
    )
    .header(header::ALLOW, allow)
}

fn health(state: &AppState) -> Response<Full<Bytes>> {
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

/// `POST /v1/audio/transcriptions`.
async fn transcriptions(
    state: &AppState,
    request: Request<Incoming>,
    started: Instant,
    record: &mut RequestRecord,
) -> Result<Response<Full<Bytes>>, ApiError> {
    let deadline = started + state.request_timeout;
    let (parts, mut body) = request.into_parts();
    let max_body = state.max_file_bytes + FORM_OVERHEAD_BYTES;
    let expects_continue = parts
        .headers
        .get(header::EXPECT)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));

    // Checks that need no body; on failure the unread body is drained, not read.
    let admitted = state
        .keys
        .check(&parts.headers)
        .and_then(|()| multipart_boundary(&parts.headers))
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
        });
    let (boundary, slot) = match admitted {
        Ok(admitted) => admitted,
        Err(error) => {
            linger(body, expects_continue, max_body);
            return Err(error);
        }
    };

    let reading = Instant::now();
    let read = tokio::time::timeout_at(
        deadline.into(),
        read_form(&mut body, boundary, state.max_file_bytes, max_body),
    )
    .await
    .unwrap_or_else(|_| {
        Err(ApiError::new(
            ServerCode::RequestTimeout,
            "The upload did not finish within the request timeout.",
        ))
    });
    record.read = Some(reading.elapsed());
    let form = match read {
        Ok(form) => form,
        Err(error) => {
            linger(body, false, max_body);
            return Err(error);
        }
    };
    record.file_bytes = form.file.as_ref().map(|f| f.len() as u64);
    let request = form.into_request(state.transcriber.audio_limits())?;

    let queued = Instant::now();
    let engine = state.admission.engine_slot(deadline).await;
    record.queue = Some(queued.elapsed());
    let engine = engine?;

    let transcriber = state.transcriber.clone();
    let running = Instant::now();
    // The permits travel with the work: a client that hangs up does not free its slot
    // before the engine is done, so at most `max_concurrent` transcriptions ever run.
    let work = tokio::task::spawn_blocking(move || {
        let _permits = (slot, engine);
        transcriber.transcribe_request_blocking(request)
    });
    let transcript = match tokio::time::timeout_at(deadline.into(), work).await {
        Ok(Ok(result)) => result?,
        Ok(Err(_)) => {
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
    state.admission.record(running.elapsed());
    record.audio_secs = Some((transcript.audio_secs * 1000.0).round() / 1000.0);
    record.decode = Some(transcript.timings.decode);
    record.engine = Some(transcript.timings.engine);
    Ok(json_response(
        StatusCode::OK,
        &json!({ "text": transcript.text }),
    ))
}

/// The multipart boundary, or 415 when the body is not `multipart/form-data`.
fn multipart_boundary(headers: &HeaderMap) -> Result<String, ApiError> {
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
fn linger(mut body: Incoming, expects_continue: bool, cap: u64) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api_error::ApiCode;
    use crate::form::{FieldName, Form, classify};
    use ctxscribe::TranscriptionRequest;
    use ctxscribe::context::{Languages, Message, parse_dictionary, parse_languages};
    use serde_json::Value;

    fn config(args: &[&str], env: &[(&str, &str)]) -> Result<Config, String> {
        let env: BTreeMap<String, String> = env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        match Config::from_args(args.iter().map(|a| (*a).to_owned()), |name| {
            env.get(name).cloned()
        })? {
            Parsed::Run(config) => Ok(*config),
            Parsed::Help => Err("help".to_owned()),
        }
    }

    #[test]
    fn config_defaults() {
        let config = config(&["--threads", "2"], &[]).expect("valid");
        assert_eq!(config.host, "127.0.0.1");
        assert_eq!(config.port, 8080);
        assert_eq!(config.threads, 2);
        assert_eq!(config.max_file_bytes, 25 * 1024 * 1024);
        assert_eq!(config.max_queue, 4 * config.max_concurrent);
        assert!(config.max_concurrent >= 1);
        assert_eq!(config.request_timeout, Duration::from_secs(600));
        assert_eq!(config.log_format, LogFormat::Text);
        assert!(!config.no_vad);
        assert!(config.model.is_none());
    }

    #[test]
    fn flags_win_over_environment() {
        let env = [
            ("CTXSCRIBE_PORT", "9000"),
            ("CTXSCRIBE_HOST", "0.0.0.0"),
            ("CTXSCRIBE_MAX_QUEUE", "0"),
            ("CTXSCRIBE_NO_VAD", "yes"),
            ("CTXSCRIBE_MODEL", ""),
        ];
        let config = config(
            &[
                "--port=9100",
                "--model",
                "m.bin",
                "--request-timeout",
                "2.5",
            ],
            &env,
        )
        .expect("valid");
        assert_eq!(config.port, 9100);
        assert_eq!(config.host, "0.0.0.0");
        assert_eq!(config.max_queue, 0);
        assert!(config.no_vad);
        assert_eq!(config.model, Some(PathBuf::from("m.bin")));
        assert_eq!(config.request_timeout, Duration::from_millis(2500));
    }

    #[test]
    fn bad_arguments_are_explained() {
        for (args, expected) in [
            (&["--port", "70000"][..], "--port"),
            (&["--port"][..], "needs a value"),
            (&["--bogus"][..], "unknown argument"),
            (&["--max-concurrent", "0"][..], "--max-concurrent"),
            (&["--log-format", "xml"][..], "text or json"),
            (&["--no-vad=1"][..], "takes no value"),
            (&["--request-timeout", "-1"][..], "--request-timeout"),
        ] {
            let error = config(args, &[]).expect_err("invalid");
            assert!(error.contains(expected), "{args:?}: {error}");
        }
        let error = config(&[], &[("CTXSCRIBE_THREADS", "many")]).expect_err("invalid");
        assert!(error.contains("CTXSCRIBE_THREADS"), "{error}");
        assert_eq!(config(&["--help"], &[]).expect_err("help"), "help");
        assert!(usage().contains("--max-queue N"));
    }

    #[test]
    fn every_code_has_its_status() {
        for (code, status) in [
            ("invalid_request", 400),
            ("unsupported_audio_type", 400),
            ("audio_decode_failed", 400),
            ("audio_too_long", 400),
            ("missing_file", 400),
            ("unsupported_response_format", 400),
            ("invalid_multipart", 400),
            ("invalid_api_key", 401),
            ("not_found", 404),
            ("method_not_allowed", 405),
            ("request_timeout", 408),
            ("file_too_large", 413),
            ("request_too_large", 413),
            ("unsupported_media_type", 415),
            ("model_unavailable", 500),
            ("transcription_failed", 502),
            ("server_busy", 503),
        ] {
            let known = ApiCode::from_name(code).expect("a known code");
            assert_eq!(known.status().as_u16(), status, "{code}");
        }
    }

    #[test]
    fn library_errors_keep_code_and_param() {
        let error = ApiError::from(parse_dictionary("[1]").expect_err("a number is not a term"));
        assert_eq!(error.code, "invalid_request");
        assert_eq!(error.param.as_deref(), Some("dictionary"));
        assert_eq!(error.status(), StatusCode::BAD_REQUEST);
    }

    #[tokio::test]
    async fn error_bodies_have_all_four_keys() {
        let response = ApiError::new(ServerCode::ServerBusy, "busy").into_response();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        let body = response
            .into_body()
            .collect()
            .await
            .expect("body")
            .to_bytes();
        let body: Value = serde_json::from_slice(&body).expect("json");
        assert_eq!(
            body,
            json!({"error": {"message": "busy", "type": "server_error", "param": null,
                             "code": "server_busy"}})
        );
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_str(value).expect("header value"));
        }
        map
    }

    #[test]
    fn api_keys_from_env_and_file() {
        let dir = std::env::temp_dir().join(format!("ctxscribe-keys-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let file = dir.join("keys");
        std::fs::write(&file, "# team keys\n\n  file-key  \n").expect("write keys");
        let keys = ApiKeys::load(Some(" env-a, ,env-b "), Some(&file)).expect("keys");
        assert_eq!(keys.len(), 3);
        assert!(keys.accepts(b"env-a") && keys.accepts(b"env-b") && keys.accepts(b"file-key"));
        assert!(!keys.accepts(b"env-") && !keys.accepts(b"") && !keys.accepts(b"env-ab"));

        std::fs::write(&file, "# nothing\n").expect("write keys");
        let error = ApiKeys::load(None, Some(&file)).expect_err("empty key file");
        assert!(error.contains("holds no key"), "{error}");
        let error = ApiKeys::load(None, Some(&dir.join("missing"))).expect_err("no file");
        assert!(error.contains("cannot read"), "{error}");
        std::fs::remove_dir_all(&dir).expect("clean up");

        assert!(
            !ApiKeys::load(Some(" , "), None)
                .expect("no keys")
                .is_enabled()
        );
    }

    #[test]
    fn api_key_headers() {
        let keys = ApiKeys::load(Some("secret"), None).expect("keys");
        assert!(
            keys.check(&headers(&[("authorization", "Bearer secret")]))
                .is_ok()
        );
        assert!(
            keys.check(&headers(&[("authorization", "bearer  secret ")]))
                .is_ok()
        );
        assert!(keys.check(&headers(&[("x-api-key", "secret")])).is_ok());
        assert!(
            keys.check(&headers(&[
                ("authorization", "Bearer wrong"),
                ("x-api-key", "secret")
            ]))
            .is_ok()
        );
        for bad in [
            headers(&[]),
            headers(&[("authorization", "Basic c2VjcmV0")]),
            headers(&[("authorization", "Bearer ")]),
        ] {
            let error = keys.check(&bad).expect_err("no key");
            assert_eq!(error.code, "invalid_api_key");
            assert!(
                error.message.contains("Missing API key"),
                "{}",
                error.message
            );
        }
        // A repeated header is refused, even when one of its values is right.
        for repeated in [
            headers(&[
                ("authorization", "Bearer guess-1"),
                ("authorization", "Bearer secret"),
            ]),
            headers(&[("x-api-key", "secret"), ("x-api-key", "guess-2")]),
        ] {
            let error = keys.check(&repeated).expect_err("repeated header");
            assert_eq!(error.code, "invalid_api_key");
            assert!(error.message.contains("repeated"), "{}", error.message);
        }
        let error = keys
            .check(&headers(&[("authorization", "Bearer secreT")]))
            .expect_err("wrong key");
        assert_eq!(error.code, "invalid_api_key");
        assert_eq!(error.status(), StatusCode::UNAUTHORIZED);
        assert!(!error.message.contains("secreT"));
        assert!(ApiKeys::default().check(&headers(&[])).is_ok());
    }

    #[test]
    fn request_ids() {
        let ids = RequestIds::default();
        let a = ids.for_request(&headers(&[]));
        let b = ids.for_request(&headers(&[]));
        assert!(a.starts_with("req_") && a.len() == 20 && a != b, "{a} {b}");
        assert_eq!(
            ids.for_request(&headers(&[("x-request-id", "abc-123")])),
            "abc-123"
        );
        let odd = ids.for_request(&headers(&[("x-request-id", "a b")]));
        assert!(odd.starts_with("req_"), "{odd}");
    }

    #[test]
    fn field_names() {
        assert_eq!(classify("file"), FieldName::File);
        assert_eq!(classify("prompt"), FieldName::Text("prompt"));
        assert_eq!(classify("dictionary[]"), FieldName::ListItem("dictionary"));
        assert_eq!(classify("languages[]"), FieldName::ListItem("languages"));
        assert_eq!(
            classify("messages[][role]"),
            FieldName::MessageItem("role".to_owned())
        );
        assert_eq!(classify("timestamp_granularities[]"), FieldName::Unknown);
        assert_eq!(classify("File"), FieldName::Unknown);
    }

    /// A 0.1 s silent 16 kHz mono wav.
    fn wav() -> Vec<u8> {
        let data = vec![0u8; 3200];
        let mut bytes = Vec::new();
        bytes.extend_from_slice(b"RIFF");
        bytes.extend_from_slice(&(36 + data.len() as u32).to_le_bytes());
        bytes.extend_from_slice(b"WAVEfmt ");
        bytes.extend_from_slice(&16u32.to_le_bytes());
        bytes.extend_from_slice(&1u16.to_le_bytes());
        bytes.extend_from_slice(&1u16.to_le_bytes());
        bytes.extend_from_slice(&16_000u32.to_le_bytes());
        bytes.extend_from_slice(&32_000u32.to_le_bytes());
        bytes.extend_from_slice(&2u16.to_le_bytes());
        bytes.extend_from_slice(&16u16.to_le_bytes());
        bytes.extend_from_slice(b"data");
        bytes.extend_from_slice(&(data.len() as u32).to_le_bytes());
        bytes.extend_from_slice(&data);
        bytes
    }

    fn form(fields: &[(&str, &str)]) -> Result<Form, ApiError> {
        let mut form = Form {
            file: Some(wav()),
            ..Form::default()
        };
        for (name, value) in fields {
            form.add(classify(name), (*value).to_owned())?;
        }
        Ok(form)
    }

    fn job(fields: &[(&str, &str)]) -> Result<TranscriptionRequest, ApiError> {
        form(fields)?.into_request(&AudioLimits::default())
    }

    #[test]
    fn bracketed_messages_pair_the_nth_role_with_the_nth_content() {
        // httpx groups repeated keys: every role first, then every content.
        let grouped = job(&[
            ("messages[][role]", "system"),
            ("messages[][role]", "user"),
            ("messages[][content]", "Kubernetes notes."),
            ("messages[][content]", "kubectl apply"),
        ])
        .expect("valid");
        assert_eq!(
            grouped.messages(),
            [
                Message::system("Kubernetes notes."),
                Message::user("kubectl apply")
            ]
        );
        let interleaved = job(&[
            ("messages[][role]", "system"),
            ("messages[][content]", "Kubernetes notes."),
            ("messages[][role]", "user"),
            ("messages[][content]", "kubectl apply"),
        ])
        .expect("valid");
        assert_eq!(interleaved.messages(), grouped.messages());

        let error = job(&[
            ("messages[][role]", "assistant"),
            ("messages[][content]", "x"),
        ])
        .expect_err("assistant");
        assert_eq!(
            (error.code.as_str(), error.param.as_deref()),
            ("invalid_request", Some("messages"))
        );
        let error = form(&[("messages[][content][][type]", "text")]).expect_err("nested");
        assert_eq!(error.param.as_deref(), Some("messages"));
    }

    #[test]
    fn list_items_and_openai_fields() {
        let job = job(&[
            ("dictionary[]", "kubectl"),
            ("dictionary[]", "Grafana"),
            ("languages[]", "de"),
            ("languages[]", "en"),
            ("prompt", "Previously: the cluster."),
            ("model", "whisper-1"),
            ("temperature", "0.2"),
            ("response_format", "json"),
        ])
        .expect("valid");
        assert_eq!(job.dictionary().terms(), ["kubectl", "Grafana"]);
        assert_eq!(*job.languages(), parse_languages("de,en").expect("valid"));
        assert_eq!(job.messages(), [Message::user("Previously: the cluster.")]);
    }

    #[test]
    fn language_is_used_only_without_languages() {
        let only = job(&[("language", "de")]).expect("valid");
        assert_eq!(*only.languages(), parse_languages("de").expect("valid"));
        let both = job(&[("language", "de"), ("languages", "[\"fr\",\"it\"]")]).expect("valid");
        assert_eq!(*both.languages(), parse_languages("fr,it").expect("valid"));
        let empty = job(&[("languages", " "), ("language", "de")]).expect("valid");
        assert_eq!(*empty.languages(), parse_languages("de").expect("valid"));
        let error = job(&[("language", "klingon")]).expect_err("unknown");
        assert_eq!(
            (error.code.as_str(), error.param.as_deref()),
            ("invalid_request", Some("language"))
        );
        assert_eq!(
            job(&[("language", ""), ("response_format", " ")])
                .expect("empty = absent")
                .languages(),
            &Languages::Auto
        );
    }

    #[test]
    fn prompt_errors_name_the_prompt() {
        let long = "a".repeat(ctxscribe::context::MAX_MESSAGE_BYTES + 1);
        let error = job(&[("prompt", &long)]).expect_err("too long");
        assert_eq!(error.param.as_deref(), Some("prompt"));
        assert!(error.message.starts_with("prompt is"), "{}", error.message);
    }

    #[test]
    fn fields_given_twice_are_invalid() {
        for fields in [
            &[("dictionary", "a"), ("dictionary", "b")][..],
            &[("dictionary", "a"), ("dictionary[]", "b")][..],
            &[("dictionary[]", "a"), ("dictionary", "b")][..],
            &[("messages", "[]"), ("messages[][role]", "user")][..],
            &[("messages[][role]", "user"), ("messages", "[]")][..],
        ] {
            let error = form(fields).expect_err("twice");
            assert_eq!(error.code, "invalid_request", "{fields:?}");
            assert!(
                error.message.contains("more than once"),
                "{}",
                error.message
            );
        }
    }

    #[test]
    fn checks_run_in_the_contract_order() {
        let error = Form::default()
            .into_request(&AudioLimits::default())
            .expect_err("no file");
        assert_eq!(
            (error.code.as_str(), error.param.as_deref()),
            ("missing_file", Some("file"))
        );

        let mut text_file = form(&[("response_format", "srt"), ("languages", "xx")]).expect("form");
        text_file.file = Some(b"hello".to_vec());
        let error = text_file
            .into_request(&AudioLimits::default())
            .expect_err("not audio");
        assert_eq!(error.code, "unsupported_audio_type");

        let error = job(&[("response_format", "srt"), ("languages", "xx")]).expect_err("format");
        assert_eq!(
            (error.code.as_str(), error.param.as_deref()),
            ("unsupported_response_format", Some("response_format"))
        );
        let error = job(&[("languages", "xx"), ("dictionary", "[1]")]).expect_err("languages");
        assert_eq!(error.param.as_deref(), Some("languages"));
    }

    #[test]
    fn admission_is_bounded() {
        let admission = Admission::new(1, 1);
        let first = admission.admit().expect("first");
        let second = admission.admit().expect("second");
        let error = admission.admit().expect_err("full");
        assert_eq!(error.code, "server_busy");
        assert!(
            error
                .headers
                .iter()
                .any(|(name, _)| name == header::RETRY_AFTER)
        );
        assert_eq!(admission.waiting(), 2);
        drop((first, second));
        assert!(admission.admit().is_ok());
        admission.record(Duration::from_secs(30));
        assert!(admission.retry_after_secs() > 1);
    }
}
