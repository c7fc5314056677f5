//! Configuration defaults and environment variables.
//!
//! | variable | meaning | default |
//! |---|---|---|
//! | `CTXSCRIBE_MODEL` | path of a whisper.cpp ggml/gguf model file, or a model name (`tiny.en`) | the converted multilingual base, see [`default_model_path`] |
//! | `CTXSCRIBE_MODEL_DIR` | directory searched first for models (then `~/.local/share/ctxscribe/models`), where `ctxscribe models fetch` installs them | unset |
//! | `CTXSCRIBE_VAD_MODEL` | path of a whisper.cpp Silero VAD model (ggml) | `silero-v6.2.0-ggml.bin` next to the model |
//! | `CTXSCRIBE_THREADS` | engine threads per transcription | all available cores |
//! | `CTXSCRIBE_WEIGHTS` | `as-stored` keeps the model's matrices as its file stores them (see [`Weights`]) | `fastest` (bf16 where the CPU multiplies it natively) |
//! | `CTXSCRIBE_ASR_URL` | base URL of an OpenAI-compatible speech endpoint; when set, it transcribes instead of the embedded engine | unset (embedded engine) |
//! | `CTXSCRIBE_ASR_KEY` | its API key (Bearer) | none |
//! | `CTXSCRIBE_ASR_MODEL` | its `model` field | `whisper-1` |
//! | `CTXSCRIBE_LLM_URL` | base URL of an OpenAI-compatible chat endpoint for LLM correction | unset (no LLM step) |
//! | `CTXSCRIBE_LLM_KEY` | its API key (Bearer) | none |
//! | `CTXSCRIBE_LLM_MODEL` | its `model` field | `gpt-4o-mini` |
//! | `CTXSCRIBE_PROVIDER_TIMEOUT_SECS` | time allowed for one request to either endpoint | 60 |
//! | `CTXSCRIBE_PROVIDER_RETRIES` | retries after a 429, a 5xx or a failed connection | 2 |
//! | `GOMP_SPINCOUNT` | how long an engine thread spins at a barrier before it sleeps (libgomp's, read when it loads; see [`exec_with_engine_environment`]) | 1000 in the CLI, the server and the Python package |

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::engine::{Decoding, Weights};
use crate::error::{Error, Result};
use crate::model::fetch::pinned_model;
use crate::providers::EndpointConfig;

/// The most engine threads per transcription (ggml's `GGML_MAX_N_THREADS`). The builder,
/// the server, C and Python all check [`check_threads`] against it.
pub const MAX_THREADS: usize = 512;
/// The most beams whisper.cpp decodes with (`WHISPER_MAX_DECODERS`); see
/// [`check_beam_size`].
pub const MAX_BEAM_SIZE: u8 = 8;

/// File name of the default model (multilingual base, f16), installed by
/// `ctxscribe models fetch`.
pub const DEFAULT_MODEL_FILE: &str = "ggml-base.bin";
/// File name of the Silero VAD model (`make setup` copies it beside the models).
pub const DEFAULT_VAD_FILE: &str = "silero-v6.2.0-ggml.bin";
/// The command that installs the default model.
pub const SETUP_COMMAND: &str = "ctxscribe models fetch";
/// The command that installs the default model in a source checkout.
pub const CHECKOUT_SETUP_COMMAND: &str = "make setup";

/// Environment variable naming the model file.
pub const ENV_MODEL: &str = "CTXSCRIBE_MODEL";
/// Environment variable naming a directory that holds the default model files.
pub const ENV_MODEL_DIR: &str = "CTXSCRIBE_MODEL_DIR";
/// Environment variable naming the VAD model file.
pub const ENV_VAD_MODEL: &str = "CTXSCRIBE_VAD_MODEL";
/// Environment variable giving the number of engine threads.
pub const ENV_THREADS: &str = "CTXSCRIBE_THREADS";
/// Environment variable choosing the weights' format in memory.
pub const ENV_WEIGHTS: &str = "CTXSCRIBE_WEIGHTS";

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
/// starting again. The `ctxscribe` and `ctxscribe-server` binaries call it first; the
/// Python package sets the variable before it loads the engine; a C host sets it in its
/// environment.
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

/// Directories searched, in order, for the default model files and for models given by
/// name: `$CTXSCRIBE_MODEL_DIR`, then the user's model directory ([`user_model_dir`]).
/// Nothing else: not the working directory, and never the source checkout the library
/// was built from (a wheel or binary installed elsewhere must not depend on it; the
/// repository's own tools set `$CTXSCRIBE_MODEL_DIR` to its `models/`).
#[must_use]
pub fn model_search_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(dir) = non_empty_env(ENV_MODEL_DIR) {
        dirs.push(PathBuf::from(dir));
    }
    dirs.extend(user_model_dir());
    dirs
}

/// The user's model directory, where `ctxscribe models fetch` installs models by default
/// (without `$CTXSCRIBE_MODEL_DIR`): `$XDG_DATA_HOME/ctxscribe/models`, else
/// `~/.local/share/ctxscribe/models`; `None` without either variable.
#[must_use]
pub fn user_model_dir() -> Option<PathBuf> {
    if let Some(data) = non_empty_env("XDG_DATA_HOME") {
        Some(Path::new(&data).join("ctxscribe/models"))
    } else {
        non_empty_env("HOME").map(|home| Path::new(&home).join(".local/share/ctxscribe/models"))
    }
}

/// Where `ctxscribe models fetch` installs models: `$CTXSCRIBE_MODEL_DIR`, else
/// [`user_model_dir`].
#[must_use]
pub fn fetch_model_dir() -> Option<PathBuf> {
    non_empty_env(ENV_MODEL_DIR)
        .map(PathBuf::from)
        .or_else(user_model_dir)
}

/// The first file called `file_name` in [`model_search_dirs`], if any.
#[must_use]
pub fn find_installed_model(file_name: &str) -> Option<PathBuf> {
    find_in_search_dirs(file_name)
}

/// The model file used when none is configured: `$CTXSCRIBE_MODEL` (a path, or the name
/// of a model `ctxscribe models fetch` installs), else the first `ggml-base.bin` found in
/// [`model_search_dirs`]. `None` when nothing is installed.
#[must_use]
pub fn default_model_path() -> Option<PathBuf> {
    if let Some(path) = non_empty_env(ENV_MODEL) {
        return Some(installed_by_name(Path::new(&path)).unwrap_or_else(|| PathBuf::from(path)));
    }
    find_in_search_dirs(DEFAULT_MODEL_FILE)
}

/// The model file to load: `explicit` if given, else [`default_model_path`]. An
/// explicit path that is not a file but the name of a model `ctxscribe models fetch`
/// installs (`base`, `tiny.en`, ...) is that model's file in [`model_search_dirs`].
///
/// # Errors
/// [`Error::ModelUnavailable`] when nothing is installed, or a model given by name is
/// not; the message names the fetch command, the variable and the directories searched.
/// The one place this is said.
pub fn resolve_model_path(explicit: Option<PathBuf>) -> Result<PathBuf> {
    if let Some(path) = explicit {
        if path.exists() {
            return Ok(path);
        }
        let Some(pinned) = path.to_str().and_then(|name| pinned_model(name).ok()) else {
            return Ok(path);
        };
        return find_in_search_dirs(pinned.file).ok_or_else(|| Error::ModelUnavailable {
            message: format!(
                "model {} is not installed: run `{SETUP_COMMAND} --model {}` (searched: {})",
                pinned.name,
                pinned.name,
                searched()
            ),
            source: None,
        });
    }
    default_model_path().ok_or_else(|| Error::ModelUnavailable {
        message: format!(
            "no model installed: {}, or set {ENV_MODEL} to a whisper.cpp ggml/gguf file \
             (searched: {})",
            install_hint(),
            searched()
        ),
        source: None,
    })
}

/// What to run to install the default model, naming where it goes: the same words in
/// every "model missing" message.
#[must_use]
pub fn install_hint() -> String {
    match fetch_model_dir() {
        Some(dir) => format!(
            "run `{SETUP_COMMAND}` to install the default model into {} (the Python package \
             and `cargo install` both install the `ctxscribe` command; in a source checkout \
             `{CHECKOUT_SETUP_COMMAND}` runs it)",
            dir.display()
        ),
        None => format!(
            "set HOME (or {ENV_MODEL_DIR}) and run `{SETUP_COMMAND}` to install the default \
             model"
        ),
    }
}

/// The file of the pinned model called `name` (see [`crate::model::fetch`]) when `name`
/// is not a file itself and that model is installed.
fn installed_by_name(name: &Path) -> Option<PathBuf> {
    if name.exists() {
        return None;
    }
    let pinned = pinned_model(name.to_str()?).ok()?;
    find_in_search_dirs(pinned.file)
}

/// The searched directories, each with what was found there ("does not exist",
/// "empty", "cannot be read: ...", or the files it holds).
fn searched() -> String {
    let dirs: Vec<String> = model_search_dirs()
        .iter()
        .map(|dir| format!("{} ({})", dir.display(), dir_state(dir)))
        .collect();
    if dirs.is_empty() {
        format!("nothing: set {ENV_MODEL_DIR} or HOME")
    } else {
        dirs.join(", ")
    }
}

fn dir_state(dir: &Path) -> String {
    match std::fs::read_dir(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => "does not exist".to_owned(),
        Err(e) => format!("cannot be read: {e}"),
        Ok(entries) => {
            let mut names: Vec<String> = entries
                .filter_map(|entry| entry.ok())
                .map(|entry| entry.file_name().to_string_lossy().into_owned())
                .filter(|name| !name.starts_with('.'))
                .collect();
            names.sort();
            match names.len() {
                0 => "empty".to_owned(),
                1..=6 => format!("holds {}", names.join(", ")),
                n => format!("holds {n} files"),
            }
        }
    }
}

/// The VAD model used when none is configured: `$CTXSCRIBE_VAD_MODEL`, else
/// `silero-v6.2.0-ggml.bin` next to `model_path`, else in [`model_search_dirs`].
#[must_use]
pub fn default_vad_model_path(model_path: &Path) -> Option<PathBuf> {
    if let Some(path) = non_empty_env(ENV_VAD_MODEL) {
        return Some(PathBuf::from(path));
    }
    if let Some(beside) = model_path.parent().map(|dir| dir.join(DEFAULT_VAD_FILE))
        && beside.is_file()
    {
        return Some(beside);
    }
    find_in_search_dirs(DEFAULT_VAD_FILE)
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

/// The weights' format in memory: [`Weights::AsStored`] when `$CTXSCRIBE_WEIGHTS` is
/// `as-stored`, else [`Weights::Fastest`].
#[must_use]
pub fn default_weights() -> Weights {
    match non_empty_env(ENV_WEIGHTS).as_deref().map(str::trim) {
        Some("as-stored") => Weights::AsStored,
        _ => Weights::Fastest,
    }
}

/// The cores this process may use (at least one).
#[must_use]
pub fn available_cores() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// How many calls of `threads_per_call` threads the cores hold at once (at least one):
/// the engine's own threads, and the server's default `--max-concurrent`.
#[must_use]
pub fn concurrent_calls(threads_per_call: usize) -> usize {
    (available_cores() / threads_per_call.max(1)).max(1)
}

fn find_in_search_dirs(file_name: &str) -> Option<PathBuf> {
    model_search_dirs()
        .into_iter()
        .map(|dir| dir.join(file_name))
        .find(|path| path.is_file())
}

fn non_empty_env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|value| !value.is_empty())
}
