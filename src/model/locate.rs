//! Where models are: the directories searched, the default model and VAD files, and
//! the one message that says what to run when a model is missing. The configuration
//! ([`crate::config`], which re-exports this) and the engine both use it; it uses
//! neither.

use std::path::{Path, PathBuf};

use super::fetch::pinned_model;
pub use super::fetch::{DEFAULT_MODEL_FILE, SETUP_COMMAND};
use crate::error::{Error, Result};

/// File name of the Silero VAD model (`make setup` copies it beside the models).
pub const DEFAULT_VAD_FILE: &str = "silero-v6.2.0-ggml.bin";
/// The command that installs the default model in a source checkout.
pub const CHECKOUT_SETUP_COMMAND: &str = "make setup";

/// Environment variable naming the model file.
pub const ENV_MODEL: &str = "CTXSCRIBE_MODEL";
/// Environment variable naming a directory that holds the default model files.
pub const ENV_MODEL_DIR: &str = "CTXSCRIBE_MODEL_DIR";
/// Environment variable naming the VAD model file.
pub const ENV_VAD_MODEL: &str = "CTXSCRIBE_VAD_MODEL";

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

fn find_in_search_dirs(file_name: &str) -> Option<PathBuf> {
    model_search_dirs()
        .into_iter()
        .map(|dir| dir.join(file_name))
        .find(|path| path.is_file())
}

/// The variable `name`, unless it is unset or empty (an empty variable means unset).
pub(crate) fn non_empty_env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|value| !value.is_empty())
}
