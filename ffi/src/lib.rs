//! C ABI for ctxscribe: context-aware speech-to-text on an embedded Whisper engine.
//!
//! The header `include/ctxscribe.h` is generated from this crate by a pinned cbindgen
//! (`ffi/scripts/gen-header.sh`); `make test` fails when it is out of date.
//!
//! Conventions (rustls-ffi style):
//! - Opaque handles with `_new`/`_free` pairs; every `_free(NULL)` is a no-op.
//! - Fallible calls return a [`ctxscribe_status`] with explicit, never reused values,
//!   write their outputs only on success, and, when the caller passes a non-NULL
//!   `err_out`, give a [`ctxscribe_error`] with a message on failure. There is no
//!   thread-local "last error".
//! - Every body runs inside `catch_unwind`: a panic never crosses the boundary, it
//!   becomes `CTXSCRIBE_STATUS_PANIC` (or a NULL / zero result for infallible calls).
//! - Validation is the library's (`ctxscribe::context`), so C callers get exactly the
//!   errors the HTTP server and the Python package give.
//!
//! Every exported function is `unsafe extern "C"`: its `# Safety` section is the pointer
//! contract a C caller must keep; the NULL checks are done here.
#![allow(non_camel_case_types)]
#![deny(missing_docs)]

use std::ffi::c_char;

pub mod config;
pub mod error;
mod ptr;
pub mod request;
pub mod run;
pub mod transcriber;
pub mod transcript;

pub use config::{CTXSCRIBE_MAX_BEAM_SIZE, CTXSCRIBE_MAX_THREADS, ctxscribe_config};
pub use error::{ctxscribe_error, ctxscribe_status};
pub use request::{ctxscribe_request, ctxscribe_role};
pub use run::{ctxscribe_cancel_token, ctxscribe_run_options, ctxscribe_segment_callback};
pub use transcriber::ctxscribe_transcriber;
pub use transcript::ctxscribe_transcript;

/// Returns the version of the ctxscribe library, e.g. `"0.1.0"`; never NULL.
///
/// Ownership: the string is static; never free it. Thread safety: any thread.
/// Does not block.
#[unsafe(no_mangle)]
pub extern "C" fn ctxscribe_version() -> *const c_char {
    const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "\0");
    VERSION.as_ptr().cast()
}

#[cfg(test)]
mod tests;
