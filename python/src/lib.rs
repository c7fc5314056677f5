//! Python bindings for ctxscribe: the extension module `ctxscribe._native`.
//!
//! The Python package `ctxscribe` (python/ctxscribe/) re-exports everything defined here;
//! `_native.pyi` is its type stub, checked against this module by `mypy.stubtest`.
//!
//! - [`transcriber`][]: `ContextTranscriber` (the model, loaded once, shared across
//!   threads); [`transcript`][]: its result `Transcript`. Inputs are copied into owned Rust values, then the GIL
//!   is released for the file read, the decode and the engine.
//! - [`stream`][]: `CancelToken`, and `TranscriptStream`, the iterator of a run's
//!   `Event`s (the run on a thread of its own, the GIL released while waiting).
//! - [`array`][]: numpy arrays of PCM samples (float32, float64, int16; mono or
//!   `(frames, channels)`) -> mono samples.
//! - [`inputs`][]: Python arguments -> the core library's typed, validated request values.
//! - [`errors`][]: `TranscriptionError` and one subclass per contract code.
//! - `_cli_main`: the `ctxscribe` console script (`ctxscribe/_cli.py`), the core
//!   library's command line ([`ctxscribe::cli`]).

mod array;
mod errors;
mod inputs;
mod stream;
mod transcriber;
mod transcript;

use pyo3::prelude::*;

/// Context-aware speech-to-text on an embedded Whisper engine (native part).
#[pymodule]
mod _native {
    use pyo3::prelude::*;

    #[pymodule_export]
    use super::transcriber::PyContextTranscriber;

    #[pymodule_export]
    use super::transcript::{PySegment, PyTranscript, PyWarning};

    #[pymodule_export]
    use super::stream::{PyCancelToken, PyEvent, PyTranscriptStream};

    /// Runs the ``ctxscribe`` command line (``argv[0]`` is the program name) with
    /// ``python`` running pip, detached from the interpreter; returns the exit status.
    #[pyfunction]
    fn _cli_main(py: Python<'_>, argv: Vec<std::ffi::OsString>, python: String) -> i32 {
        py.detach(move || ctxscribe::cli::main_with_python(argv, &python))
    }

    #[pymodule_init]
    fn init(module: &Bound<'_, PyModule>) -> PyResult<()> {
        module.add("__version__", env!("CARGO_PKG_VERSION"))?;
        super::errors::add_to_module(module)
    }
}
