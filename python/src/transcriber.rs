//! `ctxscribe.ContextTranscriber` and `ctxscribe.Transcript`.

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::time::Duration;

use ctxscribe::{
    Audio, AudioLimits, CheckedAudio, ContextTranscriber, RunOptions, TranscriptionRequest, config,
};
use pyo3::exceptions::PyOSError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::array;
use crate::errors::{invalid, to_pyerr};
use crate::inputs::{self, AudioInput};
use crate::stream::{PyCancelToken, PyTranscriptStream};
use crate::transcript::PyTranscript;

/// `vad=`: `True` (the VAD model next to the Whisper model), `False` (off) or a path.
#[derive(Debug, FromPyObject)]
pub(crate) enum VadArg {
    #[pyo3(annotation = "bool")]
    Enabled(bool),
    #[pyo3(annotation = "str | os.PathLike[str]")]
    Model(PathBuf),
}

/// Transcribes audio files with an embedded Whisper model, helped by context.
///
/// Load it once and share it: the model is loaded by the constructor, and one instance
/// may be used from many threads at once (every call has its own decoder state). The GIL
/// is released while the model loads and while a transcription runs.
#[pyclass(frozen, module = "ctxscribe", name = "ContextTranscriber")]
#[derive(Debug)]
pub(crate) struct PyContextTranscriber {
    inner: ContextTranscriber,
}

#[pymethods]
impl PyContextTranscriber {
    #[new]
    #[pyo3(
        signature = (
            model=None,
            *,
            threads=None,
            vad=VadArg::Enabled(true),
            beam_size=None,
            timeout=None,
            max_file_bytes=None,
            max_duration_secs=None,
        ),
        text_signature = "(model=None, *, threads=None, vad=True, beam_size=None, \
                          timeout=None, max_file_bytes=None, max_duration_secs=None)"
    )]
    #[allow(clippy::too_many_arguments)] // Python keyword arguments, one per option.
    fn new(
        py: Python<'_>,
        model: Option<PathBuf>,
        threads: Option<i64>,
        vad: VadArg,
        beam_size: Option<i64>,
        timeout: Option<f64>,
        max_file_bytes: Option<i64>,
        max_duration_secs: Option<f64>,
    ) -> PyResult<Self> {
        let mut builder = ContextTranscriber::builder();
        if let Some(model) = model {
            builder = builder.with_model_path(model);
        }
        builder = match vad {
            VadArg::Enabled(true) => builder,
            VadArg::Enabled(false) => builder.without_vad(),
            VadArg::Model(path) => builder.with_vad_model_path(path),
        };
        let library_error = |error: ctxscribe::Error| to_pyerr(py, &error);
        if let Some(threads) = threads {
            builder = builder.with_threads(config::check_threads(threads).map_err(library_error)?);
        }
        if let Some(beam_size) = beam_size {
            builder =
                builder.with_decoding(config::check_beam_size(beam_size).map_err(library_error)?);
        }
        if let Some(timeout) = timeout {
            builder = builder.with_timeout(positive_secs(py, "timeout", timeout)?);
        }
        let mut limits = AudioLimits::default();
        if let Some(max_file_bytes) = max_file_bytes {
            limits.max_file_bytes =
                positive_int(py, "max_file_bytes", max_file_bytes, i64::MAX as usize)? as u64;
        }
        if let Some(max_duration_secs) = max_duration_secs {
            limits.max_duration_secs =
                positive_secs(py, "max_duration_secs", max_duration_secs)?.as_secs_f64();
        }
        builder = builder.with_audio_limits(limits);
        let inner = py
            .detach(move || builder.build())
            .map_err(|error| to_pyerr(py, &error))?;
        Ok(PyContextTranscriber { inner })
    }

    /// Transcribes one audio file.
    ///
    /// ``audio`` is the encoded file (wav, webm, mp3, m4a or ogg) as bytes, a path or a
    /// binary file object. ``messages`` are chat-style context
    /// (``[{"role": "system" | "user", "content": str}]``), ``languages`` the allowed
    /// languages (``"auto"``, ``"de"``, ``"de,en"`` or ``["de", "en"]``) and
    /// ``dictionary`` terms to spell exactly (``["kubectl"]`` or ``"kubectl, Ramipril"``);
    /// ``sounds_like`` says how dictionary terms are said when not as spelled
    /// (``{"Nguyen": ["win"]}``).
    /// ``cancel`` (a :class:`CancelToken`) stops the call from another thread with
    /// :class:`CancelledError`. The GIL is released while the file is read and
    /// transcribed.
    #[pyo3(signature = (
        audio, *, sample_rate=None, messages=None, languages=None, dictionary=None,
        sounds_like=None, cancel=None
    ))]
    #[allow(clippy::too_many_arguments)] // Python keyword arguments, one per option.
    fn transcribe(
        &self,
        py: Python<'_>,
        audio: &Bound<'_, PyAny>,
        sample_rate: Option<&Bound<'_, PyAny>>,
        messages: Option<&Bound<'_, PyAny>>,
        languages: Option<&Bound<'_, PyAny>>,
        dictionary: Option<&Bound<'_, PyAny>>,
        sounds_like: Option<&Bound<'_, PyAny>>,
        cancel: Option<PyRef<'_, PyCancelToken>>,
    ) -> PyResult<PyTranscript> {
        let context = [messages, languages, dictionary, sounds_like];
        let inputs = Inputs::copy(audio, sample_rate, context)?;
        let cancel = cancel.map(|token| token.inner.clone());
        let transcriber = &self.inner;
        // Read, decode and transcribe detached from the interpreter: other Python threads
        // run, and other calls on this same transcriber proceed in parallel.
        let outcome = py.detach(move || -> Result<_, Failure> {
            let request = inputs.request(transcriber)?;
            let mut options = RunOptions::new();
            if let Some(cancel) = cancel {
                options = options.with_cancel(cancel);
            }
            transcriber.run(request, options).map_err(Failure::Library)
        });
        outcome
            .map(PyTranscript::from)
            .map_err(|failure| failure.into_pyerr(py))
    }

    /// The events of one transcription as it runs: a :class:`TranscriptStream` to
    /// iterate, ending with a ``"done"`` event that carries the :class:`Transcript`.
    /// The arguments are :meth:`transcribe`'s; invalid ones raise here, the file is read
    /// here too, and the transcription's own failures are raised by the iteration.
    #[pyo3(signature = (
        audio, *, messages=None, languages=None, dictionary=None, sounds_like=None,
        sample_rate=None, cancel=None
    ))]
    #[allow(clippy::too_many_arguments)] // Python keyword arguments, one per option.
    fn stream(
        &self,
        py: Python<'_>,
        audio: &Bound<'_, PyAny>,
        messages: Option<&Bound<'_, PyAny>>,
        languages: Option<&Bound<'_, PyAny>>,
        dictionary: Option<&Bound<'_, PyAny>>,
        sounds_like: Option<&Bound<'_, PyAny>>,
        sample_rate: Option<&Bound<'_, PyAny>>,
        cancel: Option<PyRef<'_, PyCancelToken>>,
    ) -> PyResult<PyTranscriptStream> {
        let context = [messages, languages, dictionary, sounds_like];
        let inputs = Inputs::copy(audio, sample_rate, context)?;
        let transcriber = &self.inner;
        let request = py
            .detach(move || inputs.request(transcriber))
            .map_err(|failure| failure.into_pyerr(py))?;
        let mut options = RunOptions::new();
        if let Some(cancel) = cancel {
            options = options.with_cancel(cancel.inner.clone());
        }
        Ok(PyTranscriptStream::new(self.inner.stream(request, options)))
    }

    /// ``await transcriber.transcribe_async(...)``: :meth:`transcribe` on a thread of the
    /// running event loop's default executor, so the loop goes on while it runs (the GIL
    /// is released during the transcription). Returns an ``asyncio.Future``; errors are
    /// raised when it is awaited.
    #[pyo3(signature = (
        audio, *, sample_rate=None, messages=None, languages=None, dictionary=None,
        sounds_like=None, cancel=None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn transcribe_async<'py>(
        slf: &Bound<'py, Self>,
        audio: &Bound<'py, PyAny>,
        sample_rate: Option<&Bound<'py, PyAny>>,
        messages: Option<&Bound<'py, PyAny>>,
        languages: Option<&Bound<'py, PyAny>>,
        dictionary: Option<&Bound<'py, PyAny>>,
        sounds_like: Option<&Bound<'py, PyAny>>,
        cancel: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let event_loop = py
            .import(intern!(py, "asyncio"))?
            .call_method0(intern!(py, "get_running_loop"))?;
        let kwargs = PyDict::new(py);
        kwargs.set_item("sample_rate", sample_rate)?;
        kwargs.set_item("messages", messages)?;
        kwargs.set_item("languages", languages)?;
        kwargs.set_item("dictionary", dictionary)?;
        kwargs.set_item("sounds_like", sounds_like)?;
        kwargs.set_item("cancel", cancel)?;
        let call = py.import(intern!(py, "functools"))?.call_method(
            intern!(py, "partial"),
            (slf.getattr(intern!(py, "transcribe"))?, audio),
            Some(&kwargs),
        )?;
        event_loop.call_method1(intern!(py, "run_in_executor"), (py.None(), call))
    }

    /// Whether the loaded model knows more languages than English.
    #[getter]
    fn is_multilingual(&self) -> bool {
        self.inner.is_multilingual()
    }

    /// The device the engine runs on: ``{"name": "CPU" or the GPU's ggml name
    /// (``"Vulkan0"``), "description": ..., "fallback": why no GPU was used, or None}``;
    /// None with a remote speech provider.
    #[getter]
    fn backend(&self) -> Option<std::collections::HashMap<&'static str, Option<String>>> {
        self.inner.backend().map(|backend| {
            std::collections::HashMap::from([
                ("name", Some(backend.name)),
                ("description", Some(backend.description)),
                ("fallback", backend.fallback),
            ])
        })
    }

    fn __repr__(&self) -> String {
        let limits = self.inner.audio_limits();
        format!(
            "ContextTranscriber(multilingual={}, max_file_bytes={}, max_duration_secs={})",
            if self.inner.is_multilingual() {
                "True"
            } else {
                "False"
            },
            limits.max_file_bytes,
            limits.max_duration_secs
        )
    }
}

/// A call's arguments, copied into owned Rust values while attached to the interpreter.
struct Inputs {
    source: Source,
    /// The path as given, for `OSError.filename`.
    filename: Option<Py<PyAny>>,
    messages: ctxscribe::context::Messages,
    languages: ctxscribe::Languages,
    dictionary: ctxscribe::Dictionary,
}

impl Inputs {
    fn copy(
        audio: &Bound<'_, PyAny>,
        sample_rate: Option<&Bound<'_, PyAny>>,
        context: [Option<&Bound<'_, PyAny>>; 4],
    ) -> PyResult<Self> {
        let [messages, languages, dictionary, sounds_like] = context;
        let (source, filename) = source(audio, sample_rate)?;
        Ok(Inputs {
            source,
            filename,
            messages: inputs::messages(messages)?,
            languages: inputs::languages(languages)?,
            dictionary: inputs::with_sounds_like(inputs::dictionary(dictionary)?, sounds_like)?,
        })
    }

    /// The checked request (the file read, if a path), detached from the interpreter.
    fn request(self, transcriber: &ContextTranscriber) -> Result<TranscriptionRequest, Failure> {
        let Inputs {
            source,
            filename,
            messages,
            languages,
            dictionary,
        } = self;
        let audio = match source {
            Source::Bytes(bytes) => Audio::Encoded(bytes),
            Source::Path(path) => Audio::Encoded(
                read_audio_file(&path, transcriber.audio_limits().max_file_bytes)
                    .map_err(|failure| failure.named(filename))?,
            ),
            Source::Pcm {
                samples,
                sample_rate,
            } => Audio::Pcm {
                samples,
                sample_rate,
            },
        };
        // The context is checked already: the request takes it as is.
        let audio = CheckedAudio::new(audio, transcriber.audio_limits())?;
        Ok(TranscriptionRequest::new(
            audio, messages, languages, dictionary,
        ))
    }
}

/// The audio as it crosses into the detached section.
enum Source {
    Bytes(Vec<u8>),
    Path(PathBuf),
    Pcm { samples: Vec<f32>, sample_rate: u32 },
}

/// `audio` (and `sample_rate`, for numpy arrays only) copied out of Python, and the
/// path as given for `OSError.filename`.
fn source(
    audio: &Bound<'_, PyAny>,
    sample_rate: Option<&Bound<'_, PyAny>>,
) -> PyResult<(Source, Option<Py<PyAny>>)> {
    let py = audio.py();
    let sample_rate = sample_rate.filter(|rate| !rate.is_none());
    if array::is_array(audio)? {
        let Some(rate) = sample_rate else {
            return Err(invalid(
                py,
                "sample_rate",
                "a numpy array needs its sample_rate (e.g. sample_rate=16000)",
            ));
        };
        let rate = rate
            .extract::<i64>()
            .ok()
            .filter(|_| !rate_is_bool(sample_rate))
            .and_then(|rate| u32::try_from(rate).ok())
            .ok_or_else(|| {
                invalid(
                    py,
                    "sample_rate",
                    format!("sample_rate must be a positive int of Hz, got {rate}"),
                )
            })?;
        let samples = array::mono_samples(audio)?;
        return Ok((
            Source::Pcm {
                samples,
                sample_rate: rate,
            },
            None,
        ));
    }
    if sample_rate.is_some() {
        return Err(invalid(
            py,
            "sample_rate",
            "sample_rate is for numpy arrays; encoded audio carries its own",
        ));
    }
    Ok(match inputs::audio(audio)? {
        AudioInput::Bytes(bytes) => (Source::Bytes(bytes), None),
        AudioInput::Path { path, display } => (Source::Path(path), Some(display)),
    })
}

fn rate_is_bool(rate: Option<&Bound<'_, PyAny>>) -> bool {
    rate.is_some_and(|rate| rate.is_instance_of::<pyo3::types::PyBool>())
}

/// What can go wrong detached from the interpreter; raised once attached again.
enum Failure {
    Library(ctxscribe::Error),
    /// Reading the audio file, with the path as given.
    Io(io::Error, Option<Py<PyAny>>),
}

impl Failure {
    /// This failure about the file named `filename`.
    fn named(self, filename: Option<Py<PyAny>>) -> Self {
        match self {
            Failure::Io(error, _) => Failure::Io(error, filename),
            library @ Failure::Library(_) => library,
        }
    }

    fn into_pyerr(self, py: Python<'_>) -> PyErr {
        match self {
            Failure::Library(error) => to_pyerr(py, &error),
            Failure::Io(error, filename) => os_error(py, &error, filename),
        }
    }
}

impl From<io::Error> for Failure {
    fn from(error: io::Error) -> Self {
        Failure::Io(error, None)
    }
}

impl From<ctxscribe::Error> for Failure {
    fn from(error: ctxscribe::Error) -> Self {
        Failure::Library(error)
    }
}

/// Reads an audio file, refusing one over `limit` bytes before reading it.
fn read_audio_file(path: &Path, limit: u64) -> Result<Vec<u8>, Failure> {
    let file = File::open(path)?;
    let too_large = |size: u64| Failure::Library(ctxscribe::Error::FileTooLarge { size, limit });
    let size = file.metadata()?.len();
    if size > limit {
        return Err(too_large(size));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(too_large(bytes.len() as u64));
    }
    Ok(bytes)
}

/// `OSError(errno, strerror, filename)`; Python picks the subclass from the errno
/// (`FileNotFoundError`, `PermissionError`, `IsADirectoryError`, ...).
fn os_error(py: Python<'_>, error: &io::Error, filename: Option<Py<PyAny>>) -> PyErr {
    let filename = filename.unwrap_or_else(|| py.None());
    match error.raw_os_error() {
        Some(errno) => {
            let text = error.to_string();
            let suffix = format!(" (os error {errno})");
            let strerror = text.strip_suffix(&suffix).unwrap_or(&text).to_owned();
            PyOSError::new_err((errno, strerror, filename))
        }
        None => PyOSError::new_err(error.to_string()),
    }
}

/// `value` as a count in `1..=max`, else an `InvalidRequestError` about `param`.
fn positive_int(py: Python<'_>, param: &'static str, value: i64, max: usize) -> PyResult<usize> {
    usize::try_from(value)
        .ok()
        .filter(|value| (1..=max).contains(value))
        .ok_or_else(|| {
            invalid(
                py,
                param,
                format!("{param} must be an integer between 1 and {max}, got {value}"),
            )
        })
}

/// `value` seconds as a positive, finite duration, else an `InvalidRequestError`.
fn positive_secs(py: Python<'_>, param: &'static str, value: f64) -> PyResult<Duration> {
    Duration::try_from_secs_f64(value)
        .ok()
        .filter(|duration| !duration.is_zero())
        .ok_or_else(|| {
            invalid(
                py,
                param,
                format!("{param} must be a positive number of seconds, got {value}"),
            )
        })
}
