//! `ctxscribe_cancel_token` and `ctxscribe_run_options`: how one call runs (a cancel
//! token, a time limit, a callback for each finished segment).

use std::ffi::{c_char, c_void};
use std::time::Duration;

use ctxscribe::{
    CancelToken, ContextTranscriber, Event, RunOptions, Transcript, TranscriptionRequest,
};

use crate::config::timeout_from_ms;
use crate::error::{Failure, c_string, ctxscribe_error, ctxscribe_status, guard_mut, read_or};
use crate::ptr;

/// A cancel token: `ctxscribe_cancel_token_cancel()` from any thread stops every call
/// that holds it with `CTXSCRIBE_STATUS_CANCELLED`, within a decoding step (milliseconds).
///
/// Created by `ctxscribe_cancel_token_new()`, freed by `ctxscribe_cancel_token_free()`.
/// Run options keep their own reference: the token may be freed while a call that holds
/// it runs.
pub struct ctxscribe_cancel_token {
    inner: CancelToken,
}

/// Called on the calling thread for each timed segment of a finished window: `start` and
/// `end` in seconds of the input, `text` its UTF-8 text (valid only during the call),
/// and the `user_data` given with it. Return 0 to go on; any other value stops the run,
/// which then fails with `CTXSCRIBE_STATUS_CANCELLED`.
pub type ctxscribe_segment_callback = Option<
    unsafe extern "C" fn(start: f64, end: f64, text: *const c_char, user_data: *mut c_void) -> i32,
>;

/// How one call runs: a cancel token, a time limit and a segment callback, each
/// optional. Created by `ctxscribe_run_options_new()`, freed by
/// `ctxscribe_run_options_free()`; pass it to `ctxscribe_transcriber_transcribe_with()`
/// or `ctxscribe_transcriber_transcribe_pcm_with()`.
pub struct ctxscribe_run_options {
    cancel: Option<CancelToken>,
    timeout: Option<Duration>,
    on_segment: ctxscribe_segment_callback,
    user_data: *mut c_void,
}

impl std::fmt::Debug for ctxscribe_cancel_token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ctxscribe_cancel_token")
            .field("cancelled", &self.inner.is_cancelled())
            .finish()
    }
}

impl std::fmt::Debug for ctxscribe_run_options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ctxscribe_run_options")
            .field("cancel", &self.cancel)
            .field("timeout", &self.timeout)
            .field("on_segment", &self.on_segment.is_some())
            .finish_non_exhaustive()
    }
}

impl Default for ctxscribe_run_options {
    fn default() -> Self {
        ctxscribe_run_options {
            cancel: None,
            timeout: None,
            on_segment: None,
            user_data: std::ptr::null_mut(),
        }
    }
}

/// Creates a cancel token that is not cancelled.
///
/// Ownership: the caller frees it with `ctxscribe_cancel_token_free()`. Returns NULL only
/// if the library failed internally (a caught panic).
/// Thread safety: any thread. Does not block.
#[unsafe(no_mangle)]
pub extern "C" fn ctxscribe_cancel_token_new() -> *mut ctxscribe_cancel_token {
    ptr::new_handle(|| ctxscribe_cancel_token {
        inner: CancelToken::new(),
    })
}

/// Cancels every call holding `token` (through run options). Cancelling twice, before a
/// call starts or after it ended is harmless.
///
/// NULL rules: `ctxscribe_cancel_token_cancel(NULL)` does nothing.
/// Thread safety: any thread, also while calls holding the token run. Does not block.
///
/// # Safety
///
/// `token` is NULL or a live token.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ctxscribe_cancel_token_cancel(token: *const ctxscribe_cancel_token) {
    // SAFETY: `token` is NULL or live (contract); cancelling only touches an atomic flag.
    unsafe { read_or(token, (), |token| token.inner.cancel()) }
}

/// Whether `ctxscribe_cancel_token_cancel()` was called on `token`; false for NULL.
///
/// Thread safety: any thread. Does not block.
///
/// # Safety
///
/// `token` is NULL or a live token.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ctxscribe_cancel_token_is_cancelled(
    token: *const ctxscribe_cancel_token,
) -> bool {
    // SAFETY: `token` is NULL or live (contract).
    unsafe { read_or(token, false, |token| token.inner.is_cancelled()) }
}

/// Frees a cancel token. Run options and calls that hold it keep working with it.
///
/// NULL rules: `ctxscribe_cancel_token_free(NULL)` does nothing.
/// Thread safety: once no other thread uses `token` itself. Does not block.
///
/// # Safety
///
/// `token` is NULL or a token from `ctxscribe_cancel_token_new()` not freed yet; it must
/// not be used afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ctxscribe_cancel_token_free(token: *mut ctxscribe_cancel_token) {
    // SAFETY: NULL or owned by the caller and never used again (contract).
    unsafe { ptr::free(token) }
}

/// Creates run options with no cancel token, no time limit (the configuration's
/// `timeout_ms` still applies) and no callback.
///
/// Ownership: the caller frees them with `ctxscribe_run_options_free()`. Returns NULL
/// only if the library failed internally (a caught panic).
/// Thread safety: any thread. Does not block.
#[unsafe(no_mangle)]
pub extern "C" fn ctxscribe_run_options_new() -> *mut ctxscribe_run_options {
    ptr::new_handle(ctxscribe_run_options::default)
}

/// Frees run options.
///
/// NULL rules: `ctxscribe_run_options_free(NULL)` does nothing.
/// Thread safety: once no call uses `options`. Does not block.
///
/// # Safety
///
/// `options` is NULL or options from `ctxscribe_run_options_new()` not freed yet; they
/// must not be used afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ctxscribe_run_options_free(options: *mut ctxscribe_run_options) {
    // SAFETY: NULL or owned by the caller and never used again (contract).
    unsafe { ptr::free(options) }
}

/// Makes calls with `options` stop when `token` is cancelled; NULL `token` removes it.
/// The options keep their own reference: `token` may be freed afterwards.
///
/// NULL rules: `options` must not be NULL (`CTXSCRIBE_STATUS_NULL_ARGUMENT`). `err_out`
/// may be NULL; otherwise, on failure only, `*err_out` receives an error object to free
/// with `ctxscribe_error_free()`.
/// Thread safety: not while another thread uses `options`. Does not block.
///
/// # Safety
///
/// `options` is NULL or live options nobody else uses; `token` is NULL or a live token;
/// `err_out` is NULL or valid for writing one pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ctxscribe_run_options_set_cancel_token(
    options: *mut ctxscribe_run_options,
    token: *const ctxscribe_cancel_token,
    err_out: *mut *mut ctxscribe_error,
) -> ctxscribe_status {
    // SAFETY: `token` is NULL or live (contract).
    let token = unsafe { token.as_ref() };
    // SAFETY: `options` is NULL or live and ours during the call; `err_out` is NULL or
    // valid for writing one pointer (this function's contract).
    unsafe {
        guard_mut(err_out, options, "options", |options| {
            options.cancel = token.map(|token| token.inner.clone());
            Ok(())
        })
    }
}

/// Gives up on calls with `options` after this many milliseconds, failing with
/// `CTXSCRIBE_STATUS_DEADLINE_EXCEEDED`; 0 means no limit beyond the configuration's.
///
/// NULL rules, thread safety: as `ctxscribe_run_options_set_cancel_token()`.
///
/// # Safety
///
/// `options` is NULL or live options nobody else uses; `err_out` is NULL or valid for
/// writing one pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ctxscribe_run_options_set_timeout_ms(
    options: *mut ctxscribe_run_options,
    timeout_ms: u64,
    err_out: *mut *mut ctxscribe_error,
) -> ctxscribe_status {
    // SAFETY: `options` is NULL or live and ours during the call; `err_out` is NULL or
    // valid for writing one pointer (this function's contract).
    unsafe {
        guard_mut(err_out, options, "options", |options| {
            options.timeout = timeout_from_ms(timeout_ms);
            Ok(())
        })
    }
}

/// Calls `callback` with `user_data` for each timed segment of each window as soon as the
/// window is final, on the thread that called `ctxscribe_transcriber_transcribe_with()`
/// (the run itself works on the library's threads meanwhile); a non-zero return stops
/// the run. NULL `callback` removes it. The segments of the final transcript are
/// authoritative.
///
/// NULL rules, thread safety: as `ctxscribe_run_options_set_cancel_token()`.
///
/// # Safety
///
/// `options` is NULL or live options nobody else uses; `callback`, if not NULL, is safe
/// to call with `user_data` from the thread that runs a call with these options, for as
/// long as the options are used; `err_out` is NULL or valid for writing one pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ctxscribe_run_options_set_on_segment(
    options: *mut ctxscribe_run_options,
    callback: ctxscribe_segment_callback,
    user_data: *mut c_void,
    err_out: *mut *mut ctxscribe_error,
) -> ctxscribe_status {
    // SAFETY: `options` is NULL or live and ours during the call; `err_out` is NULL or
    // valid for writing one pointer (this function's contract).
    unsafe {
        guard_mut(err_out, options, "options", |options| {
            options.on_segment = callback;
            options.user_data = user_data;
            Ok(())
        })
    }
}

/// Runs `request` as `options` say: directly without a callback, else as a stream whose
/// segments go to the callback on this (the calling) thread.
///
/// # Safety
///
/// `options`' callback, if any, is safe to call with its `user_data` on this thread.
pub(crate) unsafe fn run(
    transcriber: &ContextTranscriber,
    request: TranscriptionRequest,
    options: Option<&ctxscribe_run_options>,
) -> Result<Transcript, Failure> {
    let Some(options) = options else {
        return Ok(transcriber.run(request, RunOptions::new())?);
    };
    let mut run_options = RunOptions::new();
    if let Some(cancel) = &options.cancel {
        run_options = run_options.with_cancel(cancel.clone());
    }
    if let Some(timeout) = options.timeout {
        run_options = run_options.with_timeout(timeout);
    }
    let Some(callback) = options.on_segment else {
        return Ok(transcriber.run(request, run_options)?);
    };
    let mut stream = transcriber.stream(request, run_options);
    let mut stopped = false;
    // Drained to its end even after a stop, so that the run is over when the call returns.
    while let Some(event) = stream.next() {
        match event {
            Ok(Event::Segment(segment)) if !stopped => {
                let text = c_string(&segment.text);
                // SAFETY: the callback is safe to call with its user data on this thread
                // (this function's contract); `text` outlives the call.
                let answer = unsafe {
                    callback(segment.start, segment.end, text.as_ptr(), options.user_data)
                };
                if answer != 0 {
                    stopped = true;
                    stream.cancel();
                }
            }
            Ok(Event::Done(transcript)) if !stopped => return Ok(*transcript),
            Ok(_) => {}
            Err(error) => return Err(error.into()),
        }
    }
    Err(ctxscribe::Error::Cancelled.into())
}
