//! Configuration defaults and environment variables.
//!
//! | variable | meaning | default |
//! |---|---|---|
//! | `CTXSCRIBE_MODEL` | path of a whisper.cpp ggml/gguf model file | the converted multilingual base, see [`default_model_path`] |
//! | `CTXSCRIBE_MODEL_DIR` | directory searched first for the default model files | unset |
//! | `CTXSCRIBE_VAD_MODEL` | path of a whisper.cpp Silero VAD model (ggml) | `silero-v6.2.0-ggml.bin` next to the model |
//! | `CTXSCRIBE_THREADS` | engine threads per transcription | all available cores |

use std::path::{Path, PathBuf};

/// File name of the default model (multilingual base, f16) written by `make setup`.
pub const DEFAULT_MODEL_FILE: &str = "ggml-base.bin";
/// File name of the Silero VAD model copied by `make setup`.
pub const DEFAULT_VAD_FILE: &str = "silero-v6.2.0-ggml.bin";
/// The command that installs the default model.
pub const SETUP_COMMAND: &str = "make setup";

/// Environment variable naming the model file.
pub const ENV_MODEL: &str = "CTXSCRIBE_MODEL";
/// Environment variable naming a directory that holds the default model files.
pub const ENV_MODEL_DIR: &str = "CTXSCRIBE_MODEL_DIR";
/// Environment variable naming the VAD model file.
pub const ENV_VAD_MODEL: &str = "CTXSCRIBE_VAD_MODEL";
/// Environment variable giving the number of engine threads.
pub const ENV_THREADS: &str = "CTXSCRIBE_THREADS";

/// Directories searched, in order, for the default model files:
/// `$CTXSCRIBE_MODEL_DIR`, `./models`, the `models/` directory of the source checkout this
/// library was built from (where `make setup` puts them), and
/// `$XDG_DATA_HOME/ctxscribe/models` (or `~/.local/share/ctxscribe/models`).
#[must_use]
pub fn model_search_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(dir) = non_empty_env(ENV_MODEL_DIR) {
        dirs.push(PathBuf::from(dir));
    }
    dirs.push(PathBuf::from("models"));
    dirs.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("models"));
    if let Some(data) = non_empty_env("XDG_DATA_HOME") {
        dirs.push(Path::new(&data).join("ctxscribe/models"));
    } else if let Some(home) = non_empty_env("HOME") {
        dirs.push(Path::new(&home).join(".local/share/ctxscribe/models"));
    }
    dirs
}

/// The model file used when none is configured: `$CTXSCRIBE_MODEL`, else the first
/// `ggml-base.bin` found in [`model_search_dirs`]. `None` when nothing is installed.
#[must_use]
pub fn default_model_path() -> Option<PathBuf> {
    if let Some(path) = non_empty_env(ENV_MODEL) {
        return Some(PathBuf::from(path));
    }
    find_in_search_dirs(DEFAULT_MODEL_FILE)
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

/// Engine threads when none are configured: `$CTXSCRIBE_THREADS`, else all available cores.
#[must_use]
pub fn default_threads() -> usize {
    non_empty_env(ENV_THREADS)
        .and_then(|value| value.trim().parse::<usize>().ok())
        .filter(|&threads| threads > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from))
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
