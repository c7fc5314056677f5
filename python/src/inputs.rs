//! Python arguments -> owned Rust request values, validated by the core library.
//!
//! Everything here runs with the GIL held and copies what it needs, so the transcription
//! itself can run detached from the interpreter. Validation is the library's own
//! ([`ctxscribe::context`]); this module only maps Python shapes onto it:
//!
//! | argument | Python | library |
//! |---|---|---|
//! | `messages` | `None` | no messages |
//! | | `str` (JSON text) | [`parse_messages`] |
//! | | list of dicts | `json.dumps`, then [`parse_messages`] (whose text limit leaves room for it) |
//! | `languages` | `None` | [`Languages::Auto`] |
//! | | `str` (`"auto"`, `"de"`, `"de,en"`, JSON) | [`parse_languages`] |
//! | | iterable of `str` | [`Languages::from_codes`] |
//! | `dictionary` | `None` | empty |
//! | | `str` (comma list or JSON array) | [`parse_dictionary`] |
//! | | iterable of `str` | [`Dictionary::from_terms`] |
//! | `sounds_like` | `None` | no spoken forms |
//! | | `str` (JSON object) | [`parse_sounds_like`] |
//! | | mapping of `str` -> iterable of `str` | [`SoundsLike::from_pairs`] |
//! | | | both attached with [`Dictionary::with_sounds_like`] |
//!
//! Wrong Python types in these fields and in `audio` are `invalid_request` errors (an
//! `InvalidRequestError`, which is also a `ValueError`), like any other malformed field.

use std::path::PathBuf;

use ctxscribe::context::{
    Messages, SoundsLike, parse_dictionary, parse_languages, parse_messages, parse_sounds_like,
};
use ctxscribe::{Dictionary, Languages};
use pyo3::exceptions::{PyRecursionError, PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyMemoryView, PyString};

use crate::errors::{invalid, to_pyerr};

/// The audio argument, copied out of Python.
#[derive(Debug)]
pub(crate) enum AudioInput {
    /// Encoded bytes (from `bytes`, `bytearray`, `memoryview` or a file object's `read()`).
    Bytes(Vec<u8>),
    /// A file to read, detached from the interpreter. `display` is the path as given
    /// (after `os.fspath`), for `OSError.filename`.
    Path { path: PathBuf, display: Py<PyAny> },
}

/// `audio`: bytes-like, a path (`str` or `os.PathLike`) or a binary file object.
pub(crate) fn audio(audio: &Bound<'_, PyAny>) -> PyResult<AudioInput> {
    let py = audio.py();
    if let Ok(bytes) = audio.cast::<PyBytes>() {
        return Ok(AudioInput::Bytes(bytes.as_bytes().to_vec()));
    }
    if let Ok(bytes) = audio.cast::<PyByteArray>() {
        return Ok(AudioInput::Bytes(bytes.to_vec()));
    }
    if audio.cast::<PyMemoryView>().is_ok() {
        let bytes = audio.call_method0(intern!(py, "tobytes"))?;
        return Ok(AudioInput::Bytes(
            bytes.cast::<PyBytes>()?.as_bytes().to_vec(),
        ));
    }
    if audio.cast::<PyString>().is_ok() || audio.hasattr(intern!(py, "__fspath__"))? {
        let fspath = py
            .import(intern!(py, "os"))?
            .call_method1(intern!(py, "fspath"), (audio,))?;
        if fspath.cast::<PyString>().is_err() {
            return Err(invalid(
                py,
                "file",
                "audio paths must be str or os.PathLike[str]; pass audio content as bytes",
            ));
        }
        // Encoded like `open()` does (file system encoding, surrogateescape).
        let path: PathBuf = fspath.extract()?;
        return Ok(AudioInput::Path {
            path,
            display: fspath.unbind(),
        });
    }
    if audio.hasattr(intern!(py, "read"))? {
        let content = audio.call_method0(intern!(py, "read"))?;
        if let Ok(bytes) = content.cast::<PyBytes>() {
            return Ok(AudioInput::Bytes(bytes.as_bytes().to_vec()));
        }
        if let Ok(bytes) = content.cast::<PyByteArray>() {
            return Ok(AudioInput::Bytes(bytes.to_vec()));
        }
        return Err(invalid(
            py,
            "file",
            format!(
                "the audio file object's read() returned {}, not bytes; open the file in \
                 binary mode (\"rb\")",
                type_name(&content)
            ),
        ));
    }
    Err(invalid(
        py,
        "file",
        format!(
            "audio must be bytes, a path (str or os.PathLike) or a binary file object, got {}",
            type_name(audio)
        ),
    ))
}

/// `messages`: `None`, a JSON string, or a list of `{"role": ..., "content": ...}` dicts.
pub(crate) fn messages(messages: Option<&Bound<'_, PyAny>>) -> PyResult<Messages> {
    let Some(messages) = messages.filter(|value| !value.is_none()) else {
        return Ok(Messages::default());
    };
    let py = messages.py();
    let text = if let Ok(text) = messages.cast::<PyString>() {
        text.clone()
    } else {
        // The wire form, so the library's one parser validates the shapes (roles, content
        // strings or text parts, extra keys) and words every error the same way as the
        // server's. `json.dumps`'s default ASCII escaping is within its text limit.
        let dumped = py
            .import(intern!(py, "json"))?
            .call_method1(intern!(py, "dumps"), (messages,));
        match dumped {
            Ok(text) => text.cast_into::<PyString>()?,
            Err(error)
                if error.is_instance_of::<PyTypeError>(py)
                    || error.is_instance_of::<PyValueError>(py)
                    || error.is_instance_of::<PyRecursionError>(py) =>
            {
                return Err(invalid(
                    py,
                    "messages",
                    format!(
                        "messages must be a list of {{\"role\": \"system\" | \"user\", \
                         \"content\": str}} dicts: {error}"
                    ),
                ));
            }
            Err(error) => return Err(error),
        }
    };
    let text = str_or_invalid(&text, "messages", "messages")?;
    parse_messages(&text).map_err(|error| to_pyerr(py, &error))
}

/// `languages`: `None`, a string (`"auto"`, a code, a comma list, JSON) or an iterable of
/// codes.
pub(crate) fn languages(languages: Option<&Bound<'_, PyAny>>) -> PyResult<Languages> {
    let Some(languages) = languages.filter(|value| !value.is_none()) else {
        return Ok(Languages::Auto);
    };
    let py = languages.py();
    let result = match languages.cast::<PyString>() {
        Ok(text) => parse_languages(&str_or_invalid(text, "languages", "languages")?),
        Err(_) => Languages::from_codes(strings(languages, "languages", "language codes")?),
    };
    result.map_err(|error| to_pyerr(py, &error))
}

/// `dictionary`: `None`, a string (comma list or JSON array) or an iterable of terms.
pub(crate) fn dictionary(dictionary: Option<&Bound<'_, PyAny>>) -> PyResult<Dictionary> {
    let Some(dictionary) = dictionary.filter(|value| !value.is_none()) else {
        return Ok(Dictionary::default());
    };
    let py = dictionary.py();
    let result = match dictionary.cast::<PyString>() {
        Ok(text) => parse_dictionary(&str_or_invalid(text, "dictionary", "dictionary")?),
        Err(_) => Dictionary::from_terms(strings(dictionary, "dictionary", "terms")?),
    };
    result.map_err(|error| to_pyerr(py, &error))
}

/// `dictionary` with the spoken forms of `sounds_like`: `None`, a JSON object as a string,
/// or a mapping of each term to an iterable of forms (a `str` value is not a list).
pub(crate) fn with_sounds_like(
    dictionary: Dictionary,
    sounds_like: Option<&Bound<'_, PyAny>>,
) -> PyResult<Dictionary> {
    let Some(sounds_like) = sounds_like.filter(|value| !value.is_none()) else {
        return Ok(dictionary);
    };
    let py = sounds_like.py();
    let parsed = if let Ok(text) = sounds_like.cast::<PyString>() {
        parse_sounds_like(&str_or_invalid(text, "sounds_like", "sounds_like")?)
    } else {
        SoundsLike::from_pairs(sound_pairs(sounds_like)?)
    };
    parsed
        .and_then(|forms| dictionary.with_sounds_like(forms))
        .map_err(|error| to_pyerr(py, &error))
}

/// The `(term, forms)` pairs of a `sounds_like` mapping.
fn sound_pairs(mapping: &Bound<'_, PyAny>) -> PyResult<Vec<(String, Vec<String>)>> {
    let py = mapping.py();
    let items = mapping
        .getattr(intern!(py, "items"))
        .and_then(|items| items.call0())
        .map_err(|_| {
            invalid(
                py,
                "sounds_like",
                format!(
                    "sounds_like must be a mapping of dictionary terms to lists of spoken \
                     forms, or its JSON text, got {}",
                    type_name(mapping)
                ),
            )
        })?;
    let mut pairs = Vec::new();
    for item in items.try_iter()? {
        let (term, forms): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item?.extract()?;
        let Ok(term) = term.cast::<PyString>() else {
            return Err(invalid(
                py,
                "sounds_like",
                format!(
                    "sounds_like keys must be str terms, got {}",
                    type_name(&term)
                ),
            ));
        };
        let term = str_or_invalid(term, "sounds_like", "a sounds_like key")?;
        let at = format!("sounds_like[{term:?}]");
        if forms.cast::<PyString>().is_ok() {
            return Err(invalid(
                py,
                "sounds_like",
                format!("{at} must be a list of str spoken forms, got a str"),
            ));
        }
        pairs.push((
            term,
            strings_at(&forms, "sounds_like", &at, "spoken forms")?,
        ));
    }
    Ok(pairs)
}

/// The items of a non-string iterable, each of which must be a `str`.
fn strings(value: &Bound<'_, PyAny>, param: &'static str, what: &str) -> PyResult<Vec<String>> {
    strings_at(value, param, param, what)
}

/// [`strings`] of the value at `at` (`sounds_like["Nguyen"]`) in the field `param`.
fn strings_at(
    value: &Bound<'_, PyAny>,
    param: &'static str,
    at: &str,
    what: &str,
) -> PyResult<Vec<String>> {
    let py = value.py();
    if value.cast::<PyBytes>().is_ok() || value.cast::<PyByteArray>().is_ok() {
        return Err(invalid(
            py,
            param,
            format!("{at} must be a str or a list of str {what}, got bytes"),
        ));
    }
    let items = value.try_iter().map_err(|_| {
        invalid(
            py,
            param,
            format!(
                "{at} must be a str or a list of str {what}, got {}",
                type_name(value)
            ),
        )
    })?;
    let mut strings = Vec::new();
    for (index, item) in items.enumerate() {
        let item = item?;
        let Ok(text) = item.cast::<PyString>() else {
            return Err(invalid(
                py,
                param,
                format!("{at}[{index}] must be a str, got {}", type_name(&item)),
            ));
        };
        strings.push(str_or_invalid(text, param, &format!("{at}[{index}]"))?);
    }
    Ok(strings)
}

/// The UTF-8 text of a Python `str`; a lone surrogate is an invalid request.
fn str_or_invalid(text: &Bound<'_, PyString>, param: &'static str, at: &str) -> PyResult<String> {
    text.to_cow().map(Into::into).map_err(|_| {
        invalid(
            text.py(),
            param,
            format!("{at} is not valid Unicode (it contains a lone surrogate)"),
        )
    })
}

/// The Python type name of a value, for error messages (`int`, `dict`, ...).
fn type_name(value: &Bound<'_, PyAny>) -> String {
    value
        .get_type()
        .name()
        .map_or_else(|_| "an unknown type".to_owned(), |name| name.to_string())
}
