//! `ctxscribe.Transcript`, its `Segment`s and its `TranscriptWarning`s.

use pyo3::prelude::*;

/// The result of one transcription.
///
/// ``str(transcript)`` is its text.
#[pyclass(frozen, module = "ctxscribe", name = "Transcript")]
#[derive(Debug)]
pub(crate) struct PyTranscript {
    /// The transcript; empty when the audio holds no speech.
    #[pyo3(get)]
    text: String,
    /// The language code it was transcribed in (``"en"``), ``None`` when there was no
    /// speech.
    #[pyo3(get)]
    language: Option<String>,
    /// Duration of the input audio in seconds.
    #[pyo3(get)]
    audio_secs: f64,
    /// Seconds spent reading and decoding the audio.
    #[pyo3(get)]
    decode_secs: f64,
    /// Seconds spent in the engine (speech and language detection, decoding).
    #[pyo3(get)]
    engine_secs: f64,
    /// Seconds the whole call took.
    #[pyo3(get)]
    total_secs: f64,
    segments: Vec<ctxscribe::Segment>,
    warnings: Vec<ctxscribe::Warning>,
}

/// Something a successful transcription tells its caller, e.g. that the file was cut
/// short and only the audio before the cut is transcribed.
#[pyclass(frozen, module = "ctxscribe", name = "TranscriptWarning")]
#[derive(Debug)]
pub(crate) struct PyWarning {
    /// The stable code (``"audio_truncated"``).
    #[pyo3(get)]
    code: &'static str,
    /// A sentence saying where and how much.
    #[pyo3(get)]
    message: String,
}

#[pymethods]
impl PyWarning {
    fn __str__(&self) -> String {
        format!("{}: {}", self.code, self.message)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "TranscriptWarning(code={}, message={})",
            self.code.into_pyobject(py)?.repr()?,
            self.message.as_str().into_pyobject(py)?.repr()?
        ))
    }
}

/// One timed piece of a transcript.
#[pyclass(frozen, module = "ctxscribe", name = "Segment")]
#[derive(Debug)]
pub(crate) struct PySegment {
    /// Where the piece starts, in seconds from the start of the audio.
    #[pyo3(get)]
    start: f64,
    /// Where the piece ends, in seconds from the start of the audio (never before
    /// ``start``).
    #[pyo3(get)]
    end: f64,
    /// The piece's text, without leading or trailing whitespace.
    #[pyo3(get)]
    text: String,
}

#[pymethods]
impl PySegment {
    fn __str__(&self) -> &str {
        &self.text
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "Segment(start={:.2}, end={:.2}, text={})",
            self.start,
            self.end,
            self.text.as_str().into_pyobject(py)?.repr()?
        ))
    }
}

impl From<&ctxscribe::Segment> for PySegment {
    fn from(segment: &ctxscribe::Segment) -> Self {
        PySegment {
            start: segment.start,
            end: segment.end,
            text: segment.text.clone(),
        }
    }
}

impl From<ctxscribe::Transcript> for PyTranscript {
    fn from(transcript: ctxscribe::Transcript) -> Self {
        PyTranscript {
            text: transcript.text,
            language: transcript
                .language
                .map(|language| language.code().to_owned()),
            audio_secs: transcript.audio_secs,
            decode_secs: transcript.timings.decode.as_secs_f64(),
            engine_secs: transcript.timings.engine.as_secs_f64(),
            total_secs: transcript.timings.total.as_secs_f64(),
            segments: transcript.segments,
            warnings: transcript.warnings,
        }
    }
}

#[pymethods]
impl PyTranscript {
    /// The text in timed pieces, in order (times never go back); their texts joined by
    /// spaces are ``text``. Empty when ``text`` is.
    #[getter]
    fn segments(&self) -> Vec<PySegment> {
        self.segments.iter().map(PySegment::from).collect()
    }

    /// What the caller should know although the call succeeded (``audio_truncated``: the
    /// file was cut short, the audio before the cut is transcribed). Empty for most calls.
    #[getter]
    fn warnings(&self) -> Vec<PyWarning> {
        self.warnings
            .iter()
            .map(|warning| PyWarning {
                code: warning.code.as_str(),
                message: warning.message.clone(),
            })
            .collect()
    }

    fn __str__(&self) -> &str {
        &self.text
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "Transcript(text={}, language={}, audio_secs={:.2})",
            self.text.as_str().into_pyobject(py)?.repr()?,
            self.language.as_deref().into_pyobject(py)?.repr()?,
            self.audio_secs
        ))
    }
}
