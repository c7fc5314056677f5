//! `ctxscribe_config`: the settings a transcriber is created from.

use std::ffi::{CStr, c_char};
use std::path::PathBuf;
use std::time::Duration;

use ctxscribe::{AudioLimits, ContextTranscriberBuilder, Decoding};

use crate::error::{Failure, ctxscribe_error, ctxscribe_status, guard_mut};
use crate::ptr;

/// The most beams whisper.cpp decodes with (`WHISPER_MAX_DECODERS`).
pub const CTXSCRIBE_MAX_BEAM_SIZE: u32 = 8;

/// The most engine threads per transcription (ggml's `GGML_MAX_N_THREADS`).
pub const CTXSCRIBE_MAX_THREADS: u32 = 512;

// The limits live in the library (`ctxscribe::config`); the header needs literals, so
// these are copies that must not drift.
const _: () = assert!(CTXSCRIBE_MAX_BEAM_SIZE == ctxscribe::config::MAX_BEAM_SIZE as u32);
const _: () = assert!(CTXSCRIBE_MAX_THREADS as usize == ctxscribe::config::MAX_THREADS);

/// Settings for `ctxscribe_transcriber_new()`; every setting has a default.
///
/// Created by `ctxscribe_config_new()`, freed by `ctxscribe_config_free()`. A config may
/// be reused for several transcribers. Not synchronised: do not change it while another
/// thread uses it.
#[derive(Debug, Clone, Default)]
pub struct ctxscribe_config {
    model_path: Option<PathBuf>,
    vad: Vad,
    threads: Option<usize>,
    decoding: Decoding,
    limits: AudioLimits,
    timeout: Option<Duration>,
}

#[derive(Debug, Clone, Default)]
enum Vad {
    #[default]
    Default,
    Path(PathBuf),
    Off,
}

impl ctxscribe_config {
    /// The library builder with these settings.
    pub(crate) fn builder(&self) -> ContextTranscriberBuilder {
        let mut builder = ContextTranscriberBuilder::default()
            .with_decoding(self.decoding)
            .with_audio_limits(self.limits.clone());
        if let Some(path) = &self.model_path {
            builder = builder.with_model_path(path);
        }
        builder = match &self.vad {
            Vad::Default => builder,
            Vad::Path(path) => builder.with_vad_model_path(path),
            Vad::Off => builder.without_vad(),
        };
        if let Some(threads) = self.threads {
            builder = builder.with_threads(threads);
        }
        if let Some(timeout) = self.timeout {
            builder = builder.with_timeout(timeout);
        }
        builder
    }
}

/// A file path from a C string: the bytes as they are on Unix, UTF-8 elsewhere.
fn path_from_c(path: &CStr, param: &'static str) -> Result<PathBuf, Failure> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let _ = param;
        Ok(PathBuf::from(std::ffi::OsStr::from_bytes(path.to_bytes())))
    }
    #[cfg(not(unix))]
    {
        path.to_str()
            .map(PathBuf::from)
            .map_err(|_| Failure::invalid(param, format!("{param} is not valid UTF-8")))
    }
}

/// [`guard_mut`] on `config` for a call with the optional path argument `path`, about
/// the setting `param`: `body` gets `None` for NULL.
///
/// # Safety
///
/// `config` is NULL or a live config nobody else uses during the call; `path` is NULL or
/// a NUL-terminated string; `err_out` is NULL or valid for writing one pointer.
unsafe fn with_path(
    err_out: *mut *mut ctxscribe_error,
    config: *mut ctxscribe_config,
    path: *const c_char,
    param: &'static str,
    body: impl FnOnce(&mut ctxscribe_config, Option<PathBuf>),
) -> ctxscribe_status {
    let body = |config: &mut ctxscribe_config| {
        // SAFETY: NULL or a NUL-terminated string, by this function's contract.
        let path = unsafe { ptr::opt_c_str(path) };
        body(
            config,
            path.map(|path| path_from_c(path, param)).transpose()?,
        );
        Ok(())
    };
    // SAFETY: `config` and `err_out` as this function's contract says.
    unsafe { guard_mut(err_out, config, "config", body) }
}

/// A time limit in milliseconds from C: 0 means none.
pub(crate) fn timeout_from_ms(timeout_ms: u64) -> Option<Duration> {
    (timeout_ms > 0).then(|| Duration::from_millis(timeout_ms))
}

/// Creates a config with every default: the installed multilingual base model (or
/// `$CTXSCRIBE_MODEL`), the Silero VAD model next to it, all cores (or
/// `$CTXSCRIBE_THREADS`), greedy decoding, a 25 MiB upload limit, one hour of audio,
/// no timeout.
///
/// Ownership: the caller owns the result and frees it with `ctxscribe_config_free()`.
/// Returns NULL only if the library failed internally (a caught panic).
/// Thread safety: any thread. Does not block.
#[unsafe(no_mangle)]
pub extern "C" fn ctxscribe_config_new() -> *mut ctxscribe_config {
    ptr::new_handle(ctxscribe_config::default)
}

/// Frees a config. Transcribers created from it are not affected.
///
/// NULL rules: `ctxscribe_config_free(NULL)` does nothing.
/// Thread safety: once no other thread uses `config`. Does not block.
///
/// # Safety
///
/// `config` is NULL or a config from `ctxscribe_config_new()` not freed yet; it must not
/// be used afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ctxscribe_config_free(config: *mut ctxscribe_config) {
    // SAFETY: NULL or owned by the caller and never used again.
    unsafe { ptr::free(config) }
}

/// Sets the whisper.cpp ggml/gguf model file (e.g. `models/ggml-tiny.en.bin`, or an
/// official `ggml-large-v3-turbo.bin`). The path is checked when the transcriber is
/// created (`CTXSCRIBE_STATUS_MODEL_UNAVAILABLE` then).
///
/// NULL rules: `config` must not be NULL (`CTXSCRIBE_STATUS_NULL_ARGUMENT`); `path` may
/// be NULL to go back to the default model. `err_out` may be NULL; otherwise, on
/// failure only, `*err_out` receives an error object the caller frees with
/// `ctxscribe_error_free()`.
/// Ownership: `path` is copied; the caller keeps it.
/// Thread safety: not while another thread uses `config`. Does not block.
///
/// # Safety
///
/// `config` is NULL or a live config; `path` is NULL or a NUL-terminated string;
/// `err_out` is NULL or valid for writing one pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ctxscribe_config_set_model_path(
    config: *mut ctxscribe_config,
    path: *const c_char,
    err_out: *mut *mut ctxscribe_error,
) -> ctxscribe_status {
    // SAFETY: `config` is NULL or a live config nobody else uses, `path` NULL or a
    // NUL-terminated string, `err_out` NULL or valid for writing one pointer (contract).
    unsafe {
        with_path(err_out, config, path, "model_path", |config, path| {
            config.model_path = path
        })
    }
}

/// Sets the Silero VAD model file (whisper.cpp ggml format) used to skip silence and
/// noise. The default is `$CTXSCRIBE_VAD_MODEL`, else `silero-v6.2.0-ggml.bin` next to
/// the model; without a VAD model the whole signal is decoded.
///
/// NULL rules: `config` must not be NULL; `path` may be NULL to go back to the default
/// (this also undoes `ctxscribe_config_disable_vad()`). `err_out` may be NULL;
/// otherwise, on failure only, `*err_out` receives an error object to free with
/// `ctxscribe_error_free()`.
/// Ownership: `path` is copied; the caller keeps it.
/// Thread safety: not while another thread uses `config`. Does not block.
///
/// # Safety
///
/// `config` is NULL or a live config; `path` is NULL or a NUL-terminated string;
/// `err_out` is NULL or valid for writing one pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ctxscribe_config_set_vad_model_path(
    config: *mut ctxscribe_config,
    path: *const c_char,
    err_out: *mut *mut ctxscribe_error,
) -> ctxscribe_status {
    // SAFETY: `config` is NULL or a live config nobody else uses, `path` NULL or a
    // NUL-terminated string, `err_out` NULL or valid for writing one pointer (contract).
    unsafe {
        with_path(err_out, config, path, "vad_model_path", |config, path| {
            config.vad = path.map_or(Vad::Default, Vad::Path);
        })
    }
}

/// Turns voice activity detection off: the whole signal is decoded, only digital
/// silence is skipped.
///
/// NULL rules: `config` must not be NULL. `err_out` may be NULL; otherwise, on failure
/// only, `*err_out` receives an error object to free with `ctxscribe_error_free()`.
/// Thread safety: not while another thread uses `config`. Does not block.
///
/// # Safety
///
/// `config` is NULL or a live config; `err_out` is NULL or valid for writing one
/// pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ctxscribe_config_disable_vad(
    config: *mut ctxscribe_config,
    err_out: *mut *mut ctxscribe_error,
) -> ctxscribe_status {
    // SAFETY: `config` is NULL or a live config nobody else uses; `err_out` is NULL or
    // valid for writing one pointer (this function's contract).
    unsafe {
        guard_mut(err_out, config, "config", |config| {
            config.vad = Vad::Off;
            Ok(())
        })
    }
}

/// Sets the number of engine threads each transcription uses; 0 means the default
/// (`$CTXSCRIBE_THREADS`, else all cores). Several concurrent transcriptions each use
/// this many threads.
///
/// Errors: `CTXSCRIBE_STATUS_INVALID_REQUEST` (param `"threads"`) above
/// `CTXSCRIBE_MAX_THREADS` (512).
/// NULL rules: `config` must not be NULL. `err_out` may be NULL; otherwise, on failure
/// only, `*err_out` receives an error object to free with `ctxscribe_error_free()`.
/// Thread safety: not while another thread uses `config`. Does not block.
///
/// # Safety
///
/// `config` is NULL or a live config; `err_out` is NULL or valid for writing one
/// pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ctxscribe_config_set_threads(
    config: *mut ctxscribe_config,
    threads: u32,
    err_out: *mut *mut ctxscribe_error,
) -> ctxscribe_status {
    // SAFETY: `config` is NULL or a live config nobody else uses; `err_out` is NULL or
    // valid for writing one pointer (this function's contract).
    unsafe {
        guard_mut(err_out, config, "config", |config| {
            config.threads = match threads {
                0 => None,
                n => Some(ctxscribe::config::check_threads(n.into())?),
            };
            Ok(())
        })
    }
}

/// Chooses the decoder search: 0 for greedy decoding (the default, fastest), 1 to
/// `CTXSCRIBE_MAX_BEAM_SIZE` (8) for beam search with that many beams.
///
/// Errors: `CTXSCRIBE_STATUS_INVALID_REQUEST` (param `"beam_size"`) above 8.
/// NULL rules: `config` must not be NULL. `err_out` may be NULL; otherwise, on failure
/// only, `*err_out` receives an error object to free with `ctxscribe_error_free()`.
/// Thread safety: not while another thread uses `config`. Does not block.
///
/// # Safety
///
/// `config` is NULL or a live config; `err_out` is NULL or valid for writing one
/// pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ctxscribe_config_set_beam_size(
    config: *mut ctxscribe_config,
    beam_size: u32,
    err_out: *mut *mut ctxscribe_error,
) -> ctxscribe_status {
    // SAFETY: `config` is NULL or a live config nobody else uses; `err_out` is NULL or
    // valid for writing one pointer (this function's contract).
    unsafe {
        guard_mut(err_out, config, "config", |config| {
            config.decoding = match beam_size {
                0 => Decoding::Greedy,
                n => ctxscribe::config::check_beam_size(n.into())?,
            };
            Ok(())
        })
    }
}

/// Sets the largest accepted encoded audio, in bytes; 0 means the default (25 MiB).
/// Larger inputs fail with `CTXSCRIBE_STATUS_FILE_TOO_LARGE` before being copied.
///
/// NULL rules: `config` must not be NULL. `err_out` may be NULL; otherwise, on failure
/// only, `*err_out` receives an error object to free with `ctxscribe_error_free()`.
/// Thread safety: not while another thread uses `config`. Does not block.
///
/// # Safety
///
/// `config` is NULL or a live config; `err_out` is NULL or valid for writing one
/// pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ctxscribe_config_set_max_file_bytes(
    config: *mut ctxscribe_config,
    max_bytes: u64,
    err_out: *mut *mut ctxscribe_error,
) -> ctxscribe_status {
    // SAFETY: `config` is NULL or a live config nobody else uses; `err_out` is NULL or
    // valid for writing one pointer (this function's contract).
    unsafe {
        guard_mut(err_out, config, "config", |config| {
            config.limits.max_file_bytes = match max_bytes {
                0 => AudioLimits::default().max_file_bytes,
                n => n,
            };
            Ok(())
        })
    }
}

/// Sets the longest accepted audio, in seconds; 0 means the default (3600 s). Longer
/// audio fails with `CTXSCRIBE_STATUS_AUDIO_TOO_LONG`.
///
/// Errors: `CTXSCRIBE_STATUS_INVALID_REQUEST` (param `"max_duration_secs"`) for a
/// negative, infinite or NaN value.
/// NULL rules: `config` must not be NULL. `err_out` may be NULL; otherwise, on failure
/// only, `*err_out` receives an error object to free with `ctxscribe_error_free()`.
/// Thread safety: not while another thread uses `config`. Does not block.
///
/// # Safety
///
/// `config` is NULL or a live config; `err_out` is NULL or valid for writing one
/// pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ctxscribe_config_set_max_duration_secs(
    config: *mut ctxscribe_config,
    max_secs: f64,
    err_out: *mut *mut ctxscribe_error,
) -> ctxscribe_status {
    // SAFETY: `config` is NULL or a live config nobody else uses; `err_out` is NULL or
    // valid for writing one pointer (this function's contract).
    unsafe {
        guard_mut(err_out, config, "config", |config| {
            if !(max_secs.is_finite() && max_secs >= 0.0) {
                return Err(Failure::invalid(
                    "max_duration_secs",
                    format!("max_duration_secs must be a finite number >= 0, got {max_secs}"),
                ));
            }
            config.limits.max_duration_secs = if max_secs == 0.0 {
                AudioLimits::default().max_duration_secs
            } else {
                max_secs
            };
            Ok(())
        })
    }
}

/// Gives up on a transcription after this many milliseconds, failing with
/// `CTXSCRIBE_STATUS_DEADLINE_EXCEEDED`; 0 means no timeout (the default).
///
/// NULL rules: `config` must not be NULL. `err_out` may be NULL; otherwise, on failure
/// only, `*err_out` receives an error object to free with `ctxscribe_error_free()`.
/// Thread safety: not while another thread uses `config`. Does not block.
///
/// # Safety
///
/// `config` is NULL or a live config; `err_out` is NULL or valid for writing one
/// pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ctxscribe_config_set_timeout_ms(
    config: *mut ctxscribe_config,
    timeout_ms: u64,
    err_out: *mut *mut ctxscribe_error,
) -> ctxscribe_status {
    // SAFETY: `config` is NULL or a live config nobody else uses; `err_out` is NULL or
    // valid for writing one pointer (this function's contract).
    unsafe {
        guard_mut(err_out, config, "config", |config| {
            config.timeout = timeout_from_ms(timeout_ms);
            Ok(())
        })
    }
}
