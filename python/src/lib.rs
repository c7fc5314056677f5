//! Python bindings for ctxscribe: the extension module `ctxscribe._native`.
//!
//! The Python package `ctxscribe` (python/ctxscribe/) re-exports everything defined here;
//! `_native.pyi` is its type stub, checked against this module by `mypy.stubtest`.
//!
//! - [`transcriber`][]: `ContextTranscriber` (the model, loaded once, shared across threads)
//!   and its result `Transcript`. Inputs are copied into owned Rust values, then the GIL
//!   is released for the file read, the decode and the engine.
//! - [`inputs`][]: Python arguments -> the core library's typed, validated request values.
//! - [`errors`][]: `TranscriptionError` and one subclass per contract code.

mod errors;
mod inputs;
mod transcriber;

use pyo3::prelude::*;

/// Context-aware speech-to-text on an embedded Whisper engine (native part).
#[pymodule]
mod _native {
    use pyo3::prelude::*;

    #[pymodule_export]
    use super::transcriber::{PyContextTranscriber, PySegment, PyTranscript};

    #[pymodule_init]
    fn init(module: &Bound<'_, PyModule>) -> PyResult<()> {
        module.add("__version__", env!("CARGO_PKG_VERSION"))?;
        super::errors::add_to_module(module)
    }
}
