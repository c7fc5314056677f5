//! What both HTTP providers share: the process-wide runtime, the client, retries with
//! backoff, and error messages without secrets.

use std::future::Future;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use reqwest::{Client, RequestBuilder, StatusCode};

use super::{EndpointConfig, redact_url};
use crate::engine::Stop;
use crate::error::{Error, Result};

/// First backoff delay; doubled after each retry.
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
/// Longest wait between two attempts, `Retry-After` included.
const MAX_BACKOFF: Duration = Duration::from_secs(10);
/// Most bytes of a provider's body read (a larger answer is malformed).
pub(crate) const MAX_BODY_BYTES: usize = 8 << 20;
/// Most characters of an error body quoted in a message.
const MAX_QUOTED_CHARS: usize = 200;

fn runtime() -> Result<&'static tokio::runtime::Runtime> {
    static RUNTIME: OnceLock<std::result::Result<tokio::runtime::Runtime, String>> =
        OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("ctxscribe-providers")
                .enable_all()
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| Error::TranscriptionFailed {
            message: format!("could not start the providers' runtime: {e}"),
            source: None,
        })
}

/// Runs `future` on the process-wide providers' runtime and waits for it. Safe to call
/// from any thread, including Tokio's blocking pool (it never nests `block_on`).
fn block_on<F>(future: F) -> Result<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let (sender, receiver) = std::sync::mpsc::sync_channel(1);
    runtime()?.spawn(async move {
        let _ = sender.send(future.await);
    });
    receiver.recv().map_err(|_| Error::TranscriptionFailed {
        message: "the provider task stopped unexpectedly".into(),
        source: None,
    })
}

/// A client with connection pooling (one per provider, reused by every call).
fn client(config: &EndpointConfig) -> Result<Client> {
    Client::builder()
        .connect_timeout(config.timeout.min(Duration::from_secs(10)))
        .pool_idle_timeout(Duration::from_secs(90))
        .user_agent(concat!("ctxscribe/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| Error::ModelUnavailable {
            message: format!("could not create the HTTP client: {}", e.without_url()),
            source: None,
        })
}

/// One endpoint of a provider: its configuration, the URL of its path and a client with
/// connection pooling (cloned, it shares the pool).
#[derive(Debug, Clone)]
pub(crate) struct Endpoint {
    pub(crate) config: EndpointConfig,
    url: String,
    client: Client,
    /// Who is failing, for messages ("speech provider").
    what: &'static str,
}

impl Endpoint {
    /// The endpoint at `path` (`"chat/completions"`) of `config`, called `what` in error
    /// messages (no request is made yet).
    ///
    /// # Errors
    /// [`Error::ModelUnavailable`] when the HTTP client cannot be created.
    pub(crate) fn new(config: EndpointConfig, path: &str, what: &'static str) -> Result<Self> {
        let client = client(&config)?;
        let url = config.url(path);
        Ok(Endpoint {
            config,
            url,
            client,
            what,
        })
    }

    /// POSTs the request that `with_body` makes of a bare POST to the endpoint (retried as
    /// [`send`] does) and returns the body of the answer; blocks until then.
    pub(crate) fn post(
        &self,
        stop: &Stop,
        with_body: impl Fn(RequestBuilder) -> RequestBuilder + Send + Sync + 'static,
    ) -> Result<Vec<u8>> {
        let (this, stop) = (self.clone(), stop.clone());
        block_on(async move {
            let build = || with_body(this.client.post(&this.url));
            send(build, &this.config, &stop, &this.failure()).await
        })?
    }

    /// The error for an answer that is no use, with `cause` and without the key.
    pub(crate) fn error(&self, cause: impl AsRef<str>) -> Error {
        self.failure().error(cause)
    }

    fn failure(&self) -> Failure<'_> {
        Failure {
            what: self.what,
            url: &self.url,
            key: self.config.api_key.as_deref(),
        }
    }
}

/// Who is failing, for messages: "speech provider at http://host/v1/...".
struct Failure<'a> {
    pub what: &'static str,
    pub url: &'a str,
    pub key: Option<&'a str>,
}

impl Failure<'_> {
    pub(crate) fn error(&self, cause: impl AsRef<str>) -> Error {
        let mut message = format!(
            "{} at {}: {}",
            self.what,
            redact_url(self.url),
            cause.as_ref()
        );
        if let Some(key) = self.key.filter(|k| !k.is_empty()) {
            message = message.replace(key, "<redacted>");
        }
        Error::TranscriptionFailed {
            message,
            source: None,
        }
    }
}

/// Sends the request `build` makes until it succeeds, fails for good, or retries and
/// time run out; returns the body of a 2xx answer.
async fn send(
    build: impl Fn() -> RequestBuilder,
    config: &EndpointConfig,
    stop: &Stop,
    failure: &Failure<'_>,
) -> Result<Vec<u8>> {
    let deadline = stop.deadline;
    let mut backoff = FIRST_BACKOFF;
    let mut attempt = 0u32;
    loop {
        stop.check()?;
        let timeout = match deadline {
            Some(deadline) => config
                .timeout
                .min(deadline.saturating_duration_since(Instant::now())),
            None => config.timeout,
        };
        let mut request = build().timeout(timeout);
        if let Some(key) = &config.api_key {
            request = request.bearer_auth(key);
        }
        let answered = async {
            let response = request.send().await?;
            let status = response.status();
            let retry_after = retry_after(&response);
            Ok::<_, reqwest::Error>((status, retry_after, read_body(response).await))
        };
        let answered = tokio::select! {
            answered = answered => answered,
            stopped = until_stopped(stop) => return Err(stopped),
        };
        let (cause, retry_after) = match answered {
            Ok((status, retry_after, body)) => match body {
                Ok(body) if status.is_success() => return Ok(body),
                Ok(body) => {
                    let cause = format!("answered HTTP {status}: {}", quote(&body));
                    if !retryable(status) {
                        return Err(failure.error(cause));
                    }
                    (cause, retry_after)
                }
                Err(e) if status.is_success() => {
                    return Err(failure.error(format!("the body could not be read: {e}")));
                }
                Err(_) if !retryable(status) => {
                    return Err(failure.error(format!("answered HTTP {status}")));
                }
                Err(_) => (format!("answered HTTP {status}"), retry_after),
            },
            Err(e) if e.is_timeout() => (format!("no answer within {} s", secs(timeout)), None),
            Err(e) if e.is_connect() => (format!("connection failed: {}", chain(&e)), None),
            Err(e) => return Err(failure.error(format!("request failed: {}", chain(&e)))),
        };
        if attempt >= config.max_retries {
            let tries = if attempt == 0 {
                String::new()
            } else {
                format!(" (after {} attempts)", attempt + 1)
            };
            return Err(failure.error(format!("{cause}{tries}")));
        }
        let wait = retry_after.unwrap_or(backoff).min(MAX_BACKOFF);
        if deadline.is_some_and(|d| Instant::now() + wait >= d) {
            return Err(failure.error(format!("{cause} (no time left to retry)")));
        }
        tokio::time::sleep(wait).await;
        backoff = backoff.saturating_mul(2);
        attempt += 1;
    }
}

/// The error of `stop` once it is due (polled every [`STOP_POLL`]): a cancelled or
/// expired run does not wait for the endpoint's answer.
async fn until_stopped(stop: &Stop) -> Error {
    loop {
        if let Err(stopped) = stop.check() {
            return stopped;
        }
        tokio::time::sleep(STOP_POLL).await;
    }
}

/// How often a request in flight checks its run's [`Stop`].
const STOP_POLL: Duration = Duration::from_millis(50);

fn retryable(status: StatusCode) -> bool {
    status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error()
}

/// `Retry-After` in seconds (the HTTP-date form is ignored: backoff applies).
fn retry_after(response: &reqwest::Response) -> Option<Duration> {
    response
        .headers()
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(Duration::from_secs_f64)
}

async fn read_body(mut response: reqwest::Response) -> std::result::Result<Vec<u8>, String> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| chain(&e))? {
        if body.len() + chunk.len() > MAX_BODY_BYTES {
            return Err(format!("the body is over {MAX_BODY_BYTES} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The start of a body, on one line, for an error message.
pub(crate) fn quote(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.is_empty() {
        return "(empty body)".into();
    }
    let mut quoted: String = text.chars().take(MAX_QUOTED_CHARS).collect();
    if quoted.len() < text.len() {
        quoted.push('…');
    }
    quoted
}

/// A reqwest error and its causes, without the URL (the caller names it, redacted).
fn chain(error: &reqwest::Error) -> String {
    let mut parts = Vec::new();
    let mut source = std::error::Error::source(error);
    while let Some(e) = source {
        parts.push(e.to_string());
        source = e.source();
    }
    parts.dedup();
    if parts.is_empty() {
        let mut bare = String::new();
        let display = error.to_string();
        // "error sending request for url (...)": keep the kind, drop the URL.
        bare.push_str(display.split(" for url").next().unwrap_or("request error"));
        return bare;
    }
    parts.join(": ")
}

fn secs(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64())
}
