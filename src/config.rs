//! Configuration defaults and environment variables. Where models are looked for lives
//! in [`crate::model::locate`] (re-exported here), the engine's thread arithmetic in the
//! engine ([`available_cores`], [`concurrent_calls`]): config uses both, neither uses
//! config.
//!
//! | variable | meaning | default |
//! |---|---|---|
//! | `CTXSCRIBE_MODEL` | path of a whisper.cpp ggml/gguf model file, or a model name (`tiny.en`) | the converted multilingual base, see [`default_model_path`] |
//! | `CTXSCRIBE_MODEL_DIR` | directory searched first for models (then `~/.local/share/ctxscribe/models`), where `ctxscribe models fetch` installs them | unset |
//! | `CTXSCRIBE_VAD_MODEL` | path of a whisper.cpp Silero VAD model (ggml) | `silero-v6.2.0-ggml.bin` next to the model |
//! | `CTXSCRIBE_THREADS` | engine threads per transcription | all available cores |
//! | `CTXSCRIBE_DEVICE` | `auto` (the first GPU of a backend the build includes, else the CPU), `cpu` or `gpu` (an error without one); see [`Device`] | `auto` |
//! | `CTXSCRIBE_WEIGHTS` | `fastest` makes the decoder's matrices 8-bit, `as-stored` keeps the model's matrices as its file stores them (see [`Weights`]) | `unquantized` (bf16 where the CPU multiplies it natively) |
//! | `CTXSCRIBE_CACHE_DIR` | directory of models converted as they loaded (see [`crate::model::cache`]), or `off` | `~/.cache/ctxscribe` (or `$XDG_CACHE_HOME/ctxscribe`) |
//! | `CTXSCRIBE_ASR_URL` | base URL of an OpenAI-compatible speech endpoint; when set, it transcribes instead of the embedded engine | unset (embedded engine) |
//! | `CTXSCRIBE_ASR_KEY` | its API key (Bearer) | none |
//! | `CTXSCRIBE_ASR_MODEL` | its `model` field | `whisper-1` |
//! | `CTXSCRIBE_LLM_URL` | base URL of an OpenAI-compatible chat endpoint for LLM correction | unset (no LLM step) |
//! | `CTXSCRIBE_LLM_KEY` | its API key (Bearer) | none |
//! | `CTXSCRIBE_LLM_MODEL` | its `model` field | `gpt-4o-mini` |
//! | `CTXSCRIBE_PROVIDER_TIMEOUT_SECS` | time allowed for one request to either endpoint | 60 |
//! | `CTXSCRIBE_PROVIDER_RETRIES` | retries after a 429, a 5xx or a failed connection | 2 |
//! | `GOMP_SPINCOUNT` | how long an engine thread spins at a barrier before it sleeps (libgomp's, read when it loads; see [`exec_with_engine_environment`]) | 1000 in the CLI, the server and the Python package |

use std::time::Duration;

use crate::engine::{Decoding, Device, Weights};
pub use crate::engine::{available_cores, concurrent_calls};
use crate::error::{Error, Result};
pub use crate::model::cache::{ENV_CACHE_DIR, cache_dir};
use crate::model::locate::non_empty_env;
pub use crate::model::locate::{
    CHECKOUT_SETUP_COMMAND, DEFAULT_MODEL_FILE, DEFAULT_VAD_FILE, ENV_MODEL, ENV_MODEL_DIR,
    ENV_VAD_MODEL, SETUP_COMMAND, default_model_path, default_vad_model_path, fetch_model_dir,
    find_installed_model, install_hint, model_search_dirs, resolve_model_path, user_model_dir,
};
use crate::providers::EndpointConfig;

/// The most engine threads per transcription (ggml's `GGML_MAX_N_THREADS`). The builder,
/// the server, C and Python all check [`check_threads`] against it.
pub const MAX_THREADS: usize = 512;
/// The most beams whisper.cpp decodes with (`WHISPER_MAX_DECODERS`); see
/// [`check_beam_size`].
pub const MAX_BEAM_SIZE: u8 = 8;

/// Environment variable giving the number of engine threads.
pub const ENV_THREADS: &str = "CTXSCRIBE_THREADS";
/// Environment variable choosing the weights' format in memory.
pub const ENV_WEIGHTS: &str = "CTXSCRIBE_WEIGHTS";
/// Environment variable choosing where the engine runs ([`Device`]).
pub const ENV_DEVICE: &str = "CTXSCRIBE_DEVICE";

/// Environment variable: base URL of a remote speech endpoint.
pub const ENV_ASR_URL: &str = "CTXSCRIBE_ASR_URL";
/// Environment variable: API key of the remote speech endpoint.
pub const ENV_ASR_KEY: &str = "CTXSCRIBE_ASR_KEY";
/// Environment variable: model name sent to the remote speech endpoint.
pub const ENV_ASR_MODEL: &str = "CTXSCRIBE_ASR_MODEL";
/// Environment variable: base URL of a chat endpoint for LLM correction.
pub const ENV_LLM_URL: &str = "CTXSCRIBE_LLM_URL";
/// Environment variable: API key of the chat endpoint.
pub const ENV_LLM_KEY: &str = "CTXSCRIBE_LLM_KEY";
/// Environment variable: model name sent to the chat endpoint.
pub const ENV_LLM_MODEL: &str = "CTXSCRIBE_LLM_MODEL";
/// Environment variable: seconds allowed for one provider request.
pub const ENV_PROVIDER_TIMEOUT_SECS: &str = "CTXSCRIBE_PROVIDER_TIMEOUT_SECS";
/// Environment variable: retries of a provider request.
pub const ENV_PROVIDER_RETRIES: &str = "CTXSCRIBE_PROVIDER_RETRIES";
/// libgomp's variable: how many times a waiting engine thread polls before it sleeps.
pub const ENV_GOMP_SPINCOUNT: &str = "GOMP_SPINCOUNT";
/// The engine's default for [`ENV_GOMP_SPINCOUNT`]: a few tens of microseconds of
/// polling. ggml's OpenMP threads meet at a barrier after every graph node; libgomp's own
/// default polls 300,000 times (milliseconds) first, and when another process holds the
/// core the awaited thread needs, the poller keeps it from running: two processes
/// transcribing at once on 2 cores took 39x their quiet median (235x at worst) with the
/// default, 2.6x (4.7x) with 1000, and alone no slower (docs/engine.md).
pub const ENGINE_GOMP_SPINCOUNT: &str = "1000";

/// Model sent to a remote speech endpoint when none is configured.
pub const DEFAULT_ASR_MODEL: &str = "whisper-1";
/// Model sent to a chat endpoint when none is configured.
pub const DEFAULT_LLM_MODEL: &str = "gpt-4o-mini";

/// Runs this program again with [`ENV_GOMP_SPINCOUNT`] set to [`ENGINE_GOMP_SPINCOUNT`]
/// when neither it nor `OMP_WAIT_POLICY` is set; returns (going on as is) when they are,
/// or when the program cannot be executed again. libgomp reads its variables once, when
/// it is loaded, before `main`: a program's own executable can only set them by
/// starting again. The `ctxscribe` and `ctxscribe-server` binaries call it first, and so
/// should a Rust program that embeds the library (README's quickstart does: without it,
/// the speed bench's 5 s clips took 3.4x their quiet median beside one CPU-bound process,
/// with it 1.7x); the Python package sets the variable before it loads the engine; a C
/// host sets it in its environment.
pub fn exec_with_engine_environment() {
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        if std::env::var_os(ENV_GOMP_SPINCOUNT).is_some()
            || std::env::var_os("OMP_WAIT_POLICY").is_some()
        {
            return;
        }
        let Ok(program) = std::env::current_exe() else {
            return;
        };
        let mut args = std::env::args_os();
        let mut command = std::process::Command::new(program);
        if let Some(name) = args.next() {
            command.arg0(name);
        }
        // Only returns when the program could not be executed: go on without it.
        let _ = command
            .args(args)
            .env(ENV_GOMP_SPINCOUNT, ENGINE_GOMP_SPINCOUNT)
            .exec();
    }
}

/// The remote speech endpoint configured by `$CTXSCRIBE_ASR_URL` (and its key, model,
/// timeout and retries), if any.
#[must_use]
pub fn remote_speech_from_env() -> Option<EndpointConfig> {
    endpoint_from_env(ENV_ASR_URL, ENV_ASR_KEY, ENV_ASR_MODEL, DEFAULT_ASR_MODEL)
}

/// The chat endpoint for LLM correction configured by `$CTXSCRIBE_LLM_URL`, if any.
#[must_use]
pub fn llm_correction_from_env() -> Option<EndpointConfig> {
    endpoint_from_env(ENV_LLM_URL, ENV_LLM_KEY, ENV_LLM_MODEL, DEFAULT_LLM_MODEL)
}

fn endpoint_from_env(
    url: &str,
    key: &str,
    model: &str,
    default_model: &str,
) -> Option<EndpointConfig> {
    let url = non_empty_env(url)?;
    let model = non_empty_env(model).unwrap_or_else(|| default_model.to_owned());
    let mut config = EndpointConfig::new(url.trim(), model.trim());
    if let Some(key) = non_empty_env(key) {
        config = config.with_api_key(key.trim());
    }
    if let Some(secs) = non_empty_env(ENV_PROVIDER_TIMEOUT_SECS)
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0 && *s < 86_400.0)
    {
        config = config.with_timeout(Duration::from_secs_f64(secs));
    }
    if let Some(retries) = non_empty_env(ENV_PROVIDER_RETRIES)
        .and_then(|v| v.trim().parse::<u32>().ok())
        .filter(|r| *r <= 10)
    {
        config = config.with_max_retries(retries);
    }
    Some(config)
}

/// `threads` as a count of engine threads, 1 to [`MAX_THREADS`].
///
/// # Errors
/// An `invalid_request` about `threads` outside that range.
pub fn check_threads(threads: i64) -> Result<usize> {
    usize::try_from(threads)
        .ok()
        .filter(|n| (1..=MAX_THREADS).contains(n))
        .ok_or_else(|| {
            Error::invalid(
                "threads",
                format!("threads must be an integer between 1 and {MAX_THREADS}, got {threads}"),
            )
        })
}

/// Beam search with `beam_size` beams, 1 to [`MAX_BEAM_SIZE`].
///
/// # Errors
/// An `invalid_request` about `beam_size` outside that range.
pub fn check_beam_size(beam_size: i64) -> Result<Decoding> {
    u8::try_from(beam_size)
        .ok()
        .filter(|n| (1..=MAX_BEAM_SIZE).contains(n))
        .map(|beam_size| Decoding::BeamSearch { beam_size })
        .ok_or_else(|| {
            Error::invalid(
                "beam_size",
                format!(
                    "beam_size must be an integer between 1 and {MAX_BEAM_SIZE}, got {beam_size}"
                ),
            )
        })
}

/// Engine threads when none are configured: `$CTXSCRIBE_THREADS`, else all available cores.
#[must_use]
pub fn default_threads() -> usize {
    non_empty_env(ENV_THREADS)
        .and_then(|value| value.trim().parse::<usize>().ok())
        .filter(|&threads| threads > 0)
        .unwrap_or_else(available_cores)
        .min(MAX_THREADS)
}

/// Where the engine runs: `$CTXSCRIBE_DEVICE` (`auto`, `cpu`, `gpu`), else
/// [`Device::Auto`].
///
/// # Errors
/// [`Error::InvalidRequest`] naming the variable when it holds another value.
pub fn default_device() -> Result<Device> {
    non_empty_env(ENV_DEVICE).map_or(Ok(Device::Auto), |value| Device::parse(&value, ENV_DEVICE))
}

/// The weights' format in memory: [`Weights::AsStored`] when `$CTXSCRIBE_WEIGHTS` is
/// `as-stored`, [`Weights::Fastest`] when it is `fastest`, else
/// [`Weights::Unquantized`].
#[must_use]
pub fn default_weights() -> Weights {
    match non_empty_env(ENV_WEIGHTS).as_deref().map(str::trim) {
        Some("as-stored") => Weights::AsStored,
        Some("fastest") => Weights::Fastest,
        _ => Weights::Unquantized,
    }
}
