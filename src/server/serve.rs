//! Start-up and the accept loop: load the model, bind, serve until a signal, drain.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tracing::{error, info, warn};

use crate::{AudioLimits, ContextTranscriber};

use super::admission::Admission;
use super::auth::ApiKeys;
use super::config::{Config, init_logging};
use super::handler::handle;
use super::metrics::Metrics;
use super::record::ms;
use super::state::{AppState, RequestIds};

/// How long a client may take to send its request headers.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// Extra time given to in-flight requests on shutdown, on top of the request timeout.
const SHUTDOWN_EXTRA: Duration = Duration::from_secs(5);

/// The server's command-line entry point (`cargo run --features server --example server`).
pub fn main() -> std::process::ExitCode {
    crate::config::exec_with_engine_environment();
    // Help goes to stdout (exit 0), a bad flag or variable to stderr (exit 2).
    let config = Config::from_args(std::env::args(), |name| std::env::var(name).ok())
        .unwrap_or_else(|error| error.exit());
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
    let outcome = runtime.block_on(run(config));
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
pub(crate) async fn run(config: Config) -> Result<(), String> {
    let keys = ApiKeys::load(
        std::env::var("CTXSCRIBE_API_KEYS").ok().as_deref(),
        config.api_key_file.as_deref(),
    )?;
    let (transcriber, model_name) = load_transcriber(&config).await?;
    let addr = format!("{}:{}", config.host, config.port);
    let listener = TcpListener::bind(&addr)
        .await
        .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    let local = listener
        .local_addr()
        .map_err(|e| format!("cannot read the bound address: {e}"))?;
    log_authentication(&keys, local);
    let loaded_at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let state = Arc::new(AppState {
        metrics: Metrics::new(&model_name, transcriber.is_multilingual()),
        metrics_public: config.metrics_public,
        loaded_at,
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

/// Builds the transcriber `config` asks for (off the async threads) and logs
/// "model loaded"; gives it with the model's name for `/v1/models` and the metrics.
async fn load_transcriber(config: &Config) -> Result<(ContextTranscriber, String), String> {
    // Remote providers come from the environment through the builder's defaults
    // (`CTXSCRIBE_ASR_URL`, `CTXSCRIBE_LLM_URL`, ...; see `crate::config`). With a
    // remote speech endpoint no model is loaded here.
    let remote_speech = crate::config::remote_speech_from_env();
    let model_path = match (&config.model, &remote_speech) {
        (Some(path), _) => Some(path.clone()),
        (None, Some(_)) => None,
        (None, None) => Some(crate::config::resolve_model_path(None).map_err(|e| e.to_string())?),
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
        cpu_kernels = crate::engine::cpu_kernels_loaded().map_or_else(String::new, ToString::to_string),
        backend = transcriber.backend().map_or_else(String::new, |backend| backend.to_string()),
        threads = config.threads,
        load_ms = ms(loading.elapsed()),
        "model loaded"
    );
    if let Some(reason) = transcriber.backend().and_then(|backend| backend.fallback) {
        warn!(%reason, "the engine runs on the CPU");
    }
    Ok((transcriber, model_name))
}

/// Says whether requests need an API key, and warns when they do not.
fn log_authentication(keys: &ApiKeys, local: SocketAddr) {
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
}

/// Accepts connections until SIGTERM/SIGINT, then lets the in-flight requests finish.
pub(crate) async fn serve(listener: TcpListener, state: Arc<AppState>, config: &Config) {
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
pub(crate) async fn shutdown_signal() {
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
