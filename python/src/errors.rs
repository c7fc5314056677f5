//! The exception hierarchy: one class per contract code of [`ctxscribe::Error::code`].
//!
//! ```text
//! Exception
//! └── TranscriptionError                      .code, .param
//!     ├── InvalidRequestError         (+ ValueError)  invalid_request
//!     ├── UnsupportedAudioTypeError   (+ ValueError)  unsupported_audio_type
//!     ├── AudioDecodeError            (+ ValueError)  audio_decode_failed
//!     ├── FileTooLargeError           (+ ValueError)  file_too_large
//!     ├── AudioTooLongError           (+ ValueError)  audio_too_long
//!     ├── ModelUnavailableError                       model_unavailable
//!     └── TranscriptionFailedError                    transcription_failed
//!         ├── CancelledError                          cancelled
//!         └── DeadlineExceededError                   deadline_exceeded
//! ```
//!
//! The five codes that mean "the caller's input is wrong" (HTTP 4xx) are also
//! `ValueError`s, like `json.JSONDecodeError`, so generic `except ValueError` code keeps
//! working. A cancelled run and one past its time limit are `TranscriptionFailedError`s
//! too (what the HTTP server answers for them), so code written before they had classes
//! of their own keeps catching them. The classes are created with Python's `type()` at import time (PyO3's
//! `create_exception!` takes one base only, and `#[pyclass(extends = PyException)]` needs
//! Python >= 3.12 under abi3).

use ctxscribe::{ErrorClass, ErrorCode};
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyModule, PyTuple, PyType};

/// Name, docstring and default `code` of the base class.
const BASE: (&str, &str) = (
    "TranscriptionError",
    "Base class of every error ctxscribe raises.\n\n\
     ``code`` is the stable contract code (``\"invalid_request\"``, ``\"audio_decode_failed\"``, \
     ...), the same string the HTTP server and the C ABI report; ``param`` names the request \
     field the error is about (``\"messages\"``, ``\"languages\"``, ``\"dictionary\"``, \
     ``\"file\"``, a constructor argument) or is ``None``.",
);

/// The name of the subclass of every code: one exhaustive `match`, so a code added to
/// the library does not compile until it has a class here. Client-class codes (HTTP 4xx)
/// are also `ValueError`s ([`ErrorCode::class`]).
const fn class_name(code: ErrorCode) -> &'static str {
    match code {
        ErrorCode::InvalidRequest => "InvalidRequestError",
        ErrorCode::UnsupportedAudioType => "UnsupportedAudioTypeError",
        ErrorCode::AudioDecodeFailed => "AudioDecodeError",
        ErrorCode::FileTooLarge => "FileTooLargeError",
        ErrorCode::AudioTooLong => "AudioTooLongError",
        ErrorCode::ModelUnavailable => "ModelUnavailableError",
        ErrorCode::TranscriptionFailed => "TranscriptionFailedError",
        ErrorCode::Cancelled => "CancelledError",
        ErrorCode::DeadlineExceeded => "DeadlineExceededError",
    }
}

/// The docstring of the subclass of every code.
const fn class_doc(code: ErrorCode) -> &'static str {
    match code {
        ErrorCode::InvalidRequest => {
            "A request field (``messages``, ``languages``, ``dictionary``), the audio \
             argument or a constructor option is malformed, of the wrong type or over a \
             limit."
        }
        ErrorCode::UnsupportedAudioType => {
            "The audio is not wav, webm, mp3, m4a or ogg (flac, aiff, text, ...); the \
             container is detected from the bytes, never from a file name."
        }
        ErrorCode::AudioDecodeFailed => {
            "The audio is of a supported type but cannot be decoded (truncated, corrupt, \
             empty)."
        }
        ErrorCode::FileTooLarge => "The encoded audio is larger than ``max_file_bytes``.",
        ErrorCode::AudioTooLong => "The decoded audio is longer than ``max_duration_secs``.",
        ErrorCode::ModelUnavailable => {
            "The Whisper model (or the VAD model) is missing or cannot be loaded."
        }
        ErrorCode::TranscriptionFailed => "The engine or a remote provider failed on valid audio.",
        ErrorCode::Cancelled => {
            "The run was cancelled through its ``CancelToken`` (or its stream was closed)."
        }
        ErrorCode::DeadlineExceeded => "The run did not finish within its ``timeout``.",
    }
}

/// The code a `TranscriptionError` constructed by hand reports.
const BASE_DEFAULT_CODE: ErrorCode = ErrorCode::TranscriptionFailed;

#[derive(Debug)]
struct Classes {
    base: Py<PyType>,
    /// One class per code, in the order of [`ErrorCode::ALL`].
    by_code: Vec<(ErrorCode, Py<PyType>)>,
}

static CLASSES: PyOnceLock<Classes> = PyOnceLock::new();

fn classes(py: Python<'_>) -> PyResult<&Classes> {
    CLASSES.get_or_try_init(py, || create_classes(py))
}

fn create_classes(py: Python<'_>) -> PyResult<Classes> {
    let type_ = py.get_type::<PyType>();
    let new_class =
        |name: &str, doc: &str, code: &str, bases: Bound<'_, PyTuple>| -> PyResult<Py<PyType>> {
            let namespace = PyDict::new(py);
            namespace.set_item(intern!(py, "__module__"), "ctxscribe")?;
            namespace.set_item(intern!(py, "__doc__"), doc)?;
            namespace.set_item(intern!(py, "code"), code)?;
            namespace.set_item(intern!(py, "param"), py.None())?;
            Ok(type_
                .call1((name, bases, namespace))?
                .cast_into::<PyType>()?
                .unbind())
        };
    let base = new_class(
        BASE.0,
        BASE.1,
        BASE_DEFAULT_CODE.as_str(),
        PyTuple::new(py, [py.get_type::<PyException>()])?,
    )?;
    let mut by_code = Vec::with_capacity(ErrorCode::ALL.len());
    for code in ErrorCode::ALL {
        let parent = by_code
            .iter()
            .find(|(known, _)| *known == code.http_code() && *known != code)
            .map(|(_, class): &(ErrorCode, Py<PyType>)| class.bind(py).clone());
        let bases = match (parent, code.class()) {
            (Some(parent), _) => PyTuple::new(py, [parent])?,
            (None, ErrorClass::Client) => {
                PyTuple::new(py, [base.bind(py).clone(), py.get_type::<PyValueError>()])?
            }
            (None, ErrorClass::Server) => PyTuple::new(py, [base.bind(py).clone()])?,
        };
        let class = new_class(class_name(code), class_doc(code), code.as_str(), bases)?;
        by_code.push((code, class));
    }
    Ok(Classes { base, by_code })
}

/// Adds the base class and every subclass to the module.
pub(crate) fn add_to_module(module: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = module.py();
    let classes = classes(py)?;
    module.add(BASE.0, classes.base.bind(py))?;
    for (code, class) in &classes.by_code {
        module.add(class_name(*code), class.bind(py))?;
    }
    Ok(())
}

/// The Python exception for a library error: the subclass of its code, with `.code` and
/// `.param` set.
pub(crate) fn to_pyerr(py: Python<'_>, error: &ctxscribe::Error) -> PyErr {
    new_error(py, error.code(), error.param(), &error.to_string())
}

/// An `InvalidRequestError` about `param`.
pub(crate) fn invalid(py: Python<'_>, param: &'static str, message: impl Into<String>) -> PyErr {
    to_pyerr(
        py,
        &ctxscribe::Error::InvalidRequest {
            param,
            message: message.into(),
        },
    )
}

fn new_error(py: Python<'_>, code: ErrorCode, param: Option<&str>, message: &str) -> PyErr {
    let build = || -> PyResult<PyErr> {
        let classes = classes(py)?;
        let class = classes
            .by_code
            .iter()
            .find(|(known, _)| *known == code)
            .map_or(&classes.base, |(_, class)| class);
        let instance = class.bind(py).call1((message,))?;
        instance.setattr(intern!(py, "code"), code.as_str())?;
        instance.setattr(intern!(py, "param"), param)?;
        Ok(PyErr::from_value(instance))
    };
    build().unwrap_or_else(|failure| failure)
}

#[cfg(test)]
mod tests {
    //! The Python-side lists of exception names (the literal `__all__`s that mypy and
    //! stubtest need, and the stub's classes) against [`class_name`], the one list.

    use std::collections::BTreeSet;

    use super::*;

    const STUB: &str = include_str!("../ctxscribe/_native.pyi");
    const INIT: &str = include_str!("../ctxscribe/__init__.py");

    /// The quoted names of the literal `__all__ = [...]` in `source`.
    fn literal_all(source: &str) -> Vec<&str> {
        let start = source.find("__all__ = [").expect("a literal __all__") + "__all__ = [".len();
        let end = start + source[start..].find(']').expect("the end of __all__");
        source[start..end]
            .split(',')
            .map(|item| item.trim().trim_matches('"'))
            .filter(|name| !name.is_empty())
            .collect()
    }

    /// The exception names of `names`: the ones ending in `Error`.
    fn errors<'a>(names: impl IntoIterator<Item = &'a str>) -> BTreeSet<&'a str> {
        names.into_iter().filter(|n| n.ends_with("Error")).collect()
    }

    /// The base class and one subclass per code, from [`class_name`].
    fn expected() -> BTreeSet<&'static str> {
        let mut names: BTreeSet<&str> = ErrorCode::ALL.iter().map(|c| class_name(*c)).collect();
        assert_eq!(
            names.len(),
            ErrorCode::ALL.len(),
            "one distinct class per code"
        );
        names.insert(BASE.0);
        names
    }

    #[test]
    fn every_exception_list_is_the_code_list() {
        assert_eq!(errors(literal_all(STUB)), expected(), "_native.pyi __all__");
        assert_eq!(errors(literal_all(INIT)), expected(), "__init__.py __all__");
        // __init__.py re-exports the native module's public names, no more, no fewer.
        let stub_public: BTreeSet<&str> = literal_all(STUB)
            .into_iter()
            .filter(|n| *n == "__version__" || !n.starts_with('_'))
            .collect();
        let init: BTreeSet<&str> = literal_all(INIT).into_iter().collect();
        assert_eq!(init, stub_public);
    }

    #[test]
    fn the_stub_declares_each_class_with_its_bases() {
        for code in ErrorCode::ALL {
            let name = class_name(code);
            let parent = code.http_code();
            let bases = match code.class() {
                _ if parent != code => class_name(parent),
                ErrorClass::Client => "TranscriptionError, ValueError",
                ErrorClass::Server => "TranscriptionError",
            };
            let declaration = format!("\nclass {name}({bases}):");
            assert!(
                STUB.contains(&declaration),
                "_native.pyi lacks {declaration:?}"
            );
            assert!(!class_doc(code).is_empty(), "{name} has a docstring");
        }
        assert!(STUB.contains(&format!("\nclass {}(Exception):", BASE.0)));
        let with_a_parent = ErrorCode::ALL
            .iter()
            .filter(|code| code.http_code() != **code)
            .count();
        assert_eq!(
            STUB.matches("(TranscriptionError").count() + with_a_parent,
            ErrorCode::ALL.len(),
            "no stub class without a code"
        );
    }
}
