//! Status codes, error objects and the panic guard every exported function runs in.

use std::any::Any;
use std::ffi::{CStr, CString, c_char};
use std::panic::{AssertUnwindSafe, catch_unwind};

use ctxscribe::ErrorCode;

use crate::ptr::guard_or;

/// The outcome of a fallible call.
///
/// Values are explicit and stable: a value is never reused for another meaning. Values
/// 1 to 99 are the library's contract codes (the same codes the HTTP server and the
/// Python package report, see `ctxscribe_status_code()`); values from 100 on are about
/// the C call itself.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ctxscribe_status {
    /// Success: the outputs were written.
    Ok = 0,
    /// `invalid_request`: a message, language, dictionary term or option is malformed or
    /// over a documented limit (also: a string argument that is not valid UTF-8).
    InvalidRequest = 1,
    /// `unsupported_audio_type`: the bytes are not wav, webm, mp3, m4a or ogg (flac,
    /// aiff, text, empty input, ...).
    UnsupportedAudioType = 2,
    /// `audio_decode_failed`: a supported container whose content cannot be decoded
    /// (truncated, corrupt).
    AudioDecodeFailed = 3,
    /// `file_too_large`: the encoded audio is over the configured size limit.
    FileTooLarge = 4,
    /// `audio_too_long`: the audio is over the configured duration limit.
    AudioTooLong = 5,
    /// `model_unavailable`: the model (or VAD model) is missing or cannot be loaded.
    ModelUnavailable = 6,
    /// `transcription_failed`: the engine or a remote provider failed on valid audio.
    TranscriptionFailed = 7,
    /// `cancelled`: the run was cancelled through its `ctxscribe_cancel_token`, or its
    /// segment callback asked it to stop.
    Cancelled = 8,
    /// `deadline_exceeded`: the run did not finish within its time limit (the
    /// configuration's `timeout_secs`, or the run options').
    DeadlineExceeded = 9,
    /// `null_argument`: a pointer argument that must not be NULL was NULL.
    NullArgument = 100,
    /// `panic`: a bug in ctxscribe was caught at the boundary; the call failed.
    Panic = 101,
    /// `unknown_error`: a library error this version of the C ABI has no status for;
    /// `ctxscribe_error_code()` names it.
    UnknownError = 102,
}

/// Every status, in value order. (A function rather than a `const` item so that cbindgen
/// does not see it.)
fn all_statuses() -> &'static [ctxscribe_status] {
    const ALL: [ctxscribe_status; 13] = [
        ctxscribe_status::Ok,
        ctxscribe_status::InvalidRequest,
        ctxscribe_status::UnsupportedAudioType,
        ctxscribe_status::AudioDecodeFailed,
        ctxscribe_status::FileTooLarge,
        ctxscribe_status::AudioTooLong,
        ctxscribe_status::ModelUnavailable,
        ctxscribe_status::TranscriptionFailed,
        ctxscribe_status::Cancelled,
        ctxscribe_status::DeadlineExceeded,
        ctxscribe_status::NullArgument,
        ctxscribe_status::Panic,
        ctxscribe_status::UnknownError,
    ];
    &ALL
}

impl From<ErrorCode> for ctxscribe_status {
    /// The status of a library code: one exhaustive `match`, so a code added to the
    /// library does not compile until it has a status here.
    fn from(code: ErrorCode) -> Self {
        match code {
            ErrorCode::InvalidRequest => ctxscribe_status::InvalidRequest,
            ErrorCode::UnsupportedAudioType => ctxscribe_status::UnsupportedAudioType,
            ErrorCode::AudioDecodeFailed => ctxscribe_status::AudioDecodeFailed,
            ErrorCode::FileTooLarge => ctxscribe_status::FileTooLarge,
            ErrorCode::AudioTooLong => ctxscribe_status::AudioTooLong,
            ErrorCode::ModelUnavailable => ctxscribe_status::ModelUnavailable,
            ErrorCode::TranscriptionFailed => ctxscribe_status::TranscriptionFailed,
            ErrorCode::Cancelled => ctxscribe_status::Cancelled,
            ErrorCode::DeadlineExceeded => ctxscribe_status::DeadlineExceeded,
        }
    }
}

impl ctxscribe_status {
    /// The status for a library code string (`ctxscribe::ErrorCode::as_str`); a string
    /// that is no library code maps to [`ctxscribe_status::UnknownError`].
    #[must_use]
    pub fn from_code(code: &str) -> Self {
        ErrorCode::from_name(code).map_or(ctxscribe_status::UnknownError, Self::from)
    }

    /// The code string of this status (`"invalid_request"`, `"null_argument"`, ...): one
    /// exhaustive `match`, so a status added here does not compile until it has a code.
    #[must_use]
    pub fn code(self) -> &'static CStr {
        match self {
            ctxscribe_status::Ok => c"ok",
            ctxscribe_status::InvalidRequest => c"invalid_request",
            ctxscribe_status::UnsupportedAudioType => c"unsupported_audio_type",
            ctxscribe_status::AudioDecodeFailed => c"audio_decode_failed",
            ctxscribe_status::FileTooLarge => c"file_too_large",
            ctxscribe_status::AudioTooLong => c"audio_too_long",
            ctxscribe_status::ModelUnavailable => c"model_unavailable",
            ctxscribe_status::TranscriptionFailed => c"transcription_failed",
            ctxscribe_status::Cancelled => c"cancelled",
            ctxscribe_status::DeadlineExceeded => c"deadline_exceeded",
            ctxscribe_status::NullArgument => c"null_argument",
            ctxscribe_status::Panic => c"panic",
            ctxscribe_status::UnknownError => c"unknown_error",
        }
    }
}

/// Returns the code string of a status value: `"ok"`, one of the library's contract
/// codes (`"invalid_request"`, `"unsupported_audio_type"`, `"audio_decode_failed"`,
/// `"file_too_large"`, `"audio_too_long"`, `"model_unavailable"`,
/// `"transcription_failed"`), or `"null_argument"`, `"panic"`, `"unknown_error"`.
///
/// Returns NULL if `status` is not a `ctxscribe_status` value.
///
/// Ownership: the string is static; never free it. Thread safety: any thread.
/// Does not block.
#[unsafe(no_mangle)]
pub extern "C" fn ctxscribe_status_code(status: u32) -> *const c_char {
    guard_or(std::ptr::null(), || {
        all_statuses()
            .iter()
            .find(|known| **known as u32 == status)
            .map_or(std::ptr::null(), |known| known.code().as_ptr())
    })
}

/// Why a call failed: a status, a code string, the request field concerned and a
/// message for humans.
///
/// Created by a failing call when the caller passed a non-NULL `err_out`; owned by the
/// caller, who frees it with `ctxscribe_error_free()`. Immutable: it may be read from
/// any thread.
#[derive(Debug)]
pub struct ctxscribe_error {
    status: ctxscribe_status,
    code: CString,
    param: Option<CString>,
    message: CString,
}

/// A failed call, before it becomes a [`ctxscribe_error`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure {
    pub(crate) status: ctxscribe_status,
    pub(crate) code: &'static str,
    pub(crate) param: Option<&'static str>,
    pub(crate) message: String,
}

impl Failure {
    /// A NULL pointer argument named `argument`.
    pub(crate) fn null(argument: &'static str) -> Self {
        Failure {
            status: ctxscribe_status::NullArgument,
            code: "null_argument",
            param: Some(argument),
            message: format!("argument `{argument}` is NULL"),
        }
    }

    /// An `invalid_request` about `param`, worded like the library's own.
    pub(crate) fn invalid(param: &'static str, message: impl Into<String>) -> Self {
        ctxscribe::Error::InvalidRequest {
            param,
            message: message.into(),
        }
        .into()
    }

    /// A panic caught at the boundary.
    fn panic(payload: &(dyn Any + Send)) -> Self {
        let what = payload
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
            .unwrap_or("a non-string panic payload");
        Failure {
            status: ctxscribe_status::Panic,
            code: "panic",
            param: None,
            message: format!("internal error (a bug in ctxscribe, please report it): {what}"),
        }
    }
}

impl From<crate::ptr::NullArgument> for Failure {
    fn from(null: crate::ptr::NullArgument) -> Self {
        Failure::null(null.0)
    }
}

impl From<ctxscribe::Error> for Failure {
    fn from(error: ctxscribe::Error) -> Self {
        Failure {
            status: error.code().into(),
            code: error.code().as_str(),
            param: error.param(),
            message: error.to_string(),
        }
    }
}

/// A C string of `text`, dropping NUL characters (which C strings cannot hold).
pub(crate) fn c_string(text: &str) -> CString {
    CString::new(text.replace('\0', "")).unwrap_or_default()
}

impl From<Failure> for ctxscribe_error {
    fn from(failure: Failure) -> Self {
        ctxscribe_error {
            status: failure.status,
            code: c_string(failure.code),
            param: failure.param.map(c_string),
            message: c_string(&failure.message),
        }
    }
}

/// Runs the body of a fallible exported function: catches any panic, returns the status,
/// and on failure stores a new [`ctxscribe_error`] in `*err_out` when `err_out` is not
/// NULL. Outputs are written by `body` itself, only once nothing can fail any more.
///
/// # Safety
///
/// `err_out` is NULL or valid for writing one pointer.
pub(crate) unsafe fn guard(
    err_out: *mut *mut ctxscribe_error,
    body: impl FnOnce() -> Result<(), Failure>,
) -> ctxscribe_status {
    let failure = match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => return ctxscribe_status::Ok,
        Ok(Err(failure)) => failure,
        Err(payload) => Failure::panic(payload.as_ref()),
    };
    let status = failure.status;
    if !err_out.is_null() {
        // Building the error object allocates; a panic there must not escape either.
        if let Ok(error) =
            catch_unwind(move || Box::into_raw(Box::new(ctxscribe_error::from(failure))))
        {
            // SAFETY: `err_out` is not NULL and, by this function's contract, valid for
            // writing one pointer.
            unsafe { err_out.write(error) };
        }
    }
    status
}

/// [`guard`] for a call that changes the object behind `target`, the argument the caller
/// passed as `argument`: a NULL `target` fails with `CTXSCRIBE_STATUS_NULL_ARGUMENT`,
/// otherwise `body` gets the object.
///
/// # Safety
///
/// `target` is NULL or points to a live `T` that nothing else accesses during the call;
/// `err_out` is NULL or valid for writing one pointer.
pub(crate) unsafe fn guard_mut<T>(
    err_out: *mut *mut ctxscribe_error,
    target: *mut T,
    argument: &'static str,
    body: impl FnOnce(&mut T) -> Result<(), Failure>,
) -> ctxscribe_status {
    let body = || {
        // SAFETY: NULL or live and ours during the call, by this function's contract.
        body(unsafe { crate::ptr::try_mut(target, argument) }?)
    };
    // SAFETY: `err_out` is NULL or valid for writing one pointer (this function's contract).
    unsafe { guard(err_out, body) }
}

/// [`guard_or`] for an accessor of the object behind `source`: what `read` gives for it,
/// or `fallback` when `source` is NULL or `read` panics.
///
/// # Safety
///
/// `source` is NULL or points to a live `T` that nothing changes during the call.
pub(crate) unsafe fn read_or<T, R: Copy>(
    source: *const T,
    fallback: R,
    read: impl FnOnce(&T) -> R,
) -> R {
    // SAFETY: NULL or live and unchanged during the call, by this function's contract.
    let source = unsafe { source.as_ref() };
    guard_or(fallback, || source.map_or(fallback, read))
}

/// The pointer to a borrowed C string, NULL for none.
pub(crate) fn c_ptr(text: Option<&CString>) -> *const c_char {
    text.map_or(std::ptr::null(), |text| text.as_ptr())
}

/// Returns the status of an error object: never `CTXSCRIBE_STATUS_OK` for a real error.
///
/// NULL rules: `error` may be NULL (no error), which gives `CTXSCRIBE_STATUS_OK`.
/// Thread safety: any thread. Does not block.
///
/// # Safety
///
/// `error` is NULL or a live error object from this library.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ctxscribe_error_status(error: *const ctxscribe_error) -> ctxscribe_status {
    // SAFETY: `error` is NULL or live, by this function's contract.
    let error = unsafe { error.as_ref() };
    guard_or(ctxscribe_status::Panic, || {
        error.map_or(ctxscribe_status::Ok, |error| error.status)
    })
}

/// Returns the code of an error object: one of the strings of `ctxscribe_status_code()`,
/// or, with `CTXSCRIBE_STATUS_UNKNOWN_ERROR`, the library's newer code.
///
/// NULL rules: returns NULL if `error` is NULL.
/// Ownership: borrowed from `error`, valid until `ctxscribe_error_free(error)`.
/// Thread safety: any thread. Does not block.
///
/// # Safety
///
/// `error` is NULL or a live error object from this library.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ctxscribe_error_code(error: *const ctxscribe_error) -> *const c_char {
    // SAFETY: `error` is NULL or live, by this function's contract.
    unsafe { read_or(error, std::ptr::null(), |error| error.code.as_ptr()) }
}

/// Returns the message of an error object: UTF-8 for humans, saying what is wrong and
/// where (`invalid languages: languages[1]: unknown language "xx" ...`). Its wording may
/// change between versions; branch on the status, not on the message.
///
/// NULL rules: returns NULL if `error` is NULL.
/// Ownership: borrowed from `error`, valid until `ctxscribe_error_free(error)`.
/// Thread safety: any thread. Does not block.
///
/// # Safety
///
/// `error` is NULL or a live error object from this library.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ctxscribe_error_message(error: *const ctxscribe_error) -> *const c_char {
    // SAFETY: `error` is NULL or live, by this function's contract.
    unsafe { read_or(error, std::ptr::null(), |error| error.message.as_ptr()) }
}

/// Returns what the error is about: the request field (`"messages"`, `"languages"`,
/// `"dictionary"`, `"file"`, or an option name such as `"beam_size"`), or, with
/// `CTXSCRIBE_STATUS_NULL_ARGUMENT`, the name of the NULL argument.
///
/// NULL rules: returns NULL if `error` is NULL or the error concerns no field (e.g.
/// `CTXSCRIBE_STATUS_MODEL_UNAVAILABLE`).
/// Ownership: borrowed from `error`, valid until `ctxscribe_error_free(error)`.
/// Thread safety: any thread. Does not block.
///
/// # Safety
///
/// `error` is NULL or a live error object from this library.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ctxscribe_error_param(error: *const ctxscribe_error) -> *const c_char {
    // SAFETY: `error` is NULL or live, by this function's contract.
    unsafe { read_or(error, std::ptr::null(), |error| c_ptr(error.param.as_ref())) }
}

/// Frees an error object and the strings borrowed from it.
///
/// NULL rules: `ctxscribe_error_free(NULL)` does nothing.
/// Thread safety: any thread, once no other thread uses `error`. Does not block.
///
/// # Safety
///
/// `error` is NULL or an error object from this library not freed yet; it must not be
/// used afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ctxscribe_error_free(error: *mut ctxscribe_error) {
    // SAFETY: `error` is NULL or owned by the caller and never used again.
    unsafe { crate::ptr::free(error) }
}
