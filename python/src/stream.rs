//! `ctxscribe.CancelToken`, `ctxscribe.TranscriptStream` and its `ctxscribe.Event`s.

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use ctxscribe::pipeline::Next;
use ctxscribe::{CancelToken, Event, TranscriptStream};
use pyo3::exceptions::PyStopIteration;
use pyo3::prelude::*;

use crate::errors::to_pyerr;
use crate::transcript::{PySegment, PyTranscript};

/// How long a stream waits for its next event before it looks at Python's signals
/// (Ctrl-C) again.
const SIGNAL_CHECK: Duration = Duration::from_millis(100);

/// Stops a running transcription from any thread: ``token.cancel()``, and the call (or
/// stream) that holds it raises :class:`CancelledError` within a decoding step.
/// Cancelling twice, before the call starts or after it ended is harmless.
#[pyclass(frozen, module = "ctxscribe", name = "CancelToken")]
#[derive(Debug, Default)]
pub(crate) struct PyCancelToken {
    pub(crate) inner: CancelToken,
}

#[pymethods]
impl PyCancelToken {
    #[new]
    fn new() -> Self {
        Self::default()
    }

    /// Cancels every call and stream holding this token.
    fn cancel(&self) {
        self.inner.cancel();
    }

    /// Whether :meth:`cancel` was called.
    #[getter]
    fn cancelled(&self) -> bool {
        self.inner.is_cancelled()
    }

    fn __repr__(&self) -> String {
        let cancelled = if self.inner.is_cancelled() {
            "True"
        } else {
            "False"
        };
        format!("CancelToken(cancelled={cancelled})")
    }
}

/// One event of a :class:`TranscriptStream`.
///
/// ``type`` is ``"delta"`` (``text``: new text; joined, the deltas are the transcript's
/// text unless a window was decoded again differently or the LLM review changed it),
/// ``"segment"`` (``segment``: a timed piece of a finished window), ``"progress"``
/// (``done_secs`` of ``total_secs`` of audio transcribed) or ``"done"`` (``transcript``:
/// the final :class:`Transcript`, the last event).
#[pyclass(frozen, module = "ctxscribe", name = "Event")]
#[derive(Debug)]
pub(crate) struct PyEvent {
    #[pyo3(get, name = "type")]
    kind: &'static str,
    /// The delta's text, or the segment's; ``None`` for the other types.
    #[pyo3(get)]
    text: Option<String>,
    /// The segment of a ``"segment"`` event.
    #[pyo3(get)]
    segment: Option<Py<PySegment>>,
    /// Seconds of audio transcribed so far (``"progress"``).
    #[pyo3(get)]
    done_secs: Option<f64>,
    /// The audio's length in seconds (``"progress"``).
    #[pyo3(get)]
    total_secs: Option<f64>,
    /// The final transcript (``"done"``).
    #[pyo3(get)]
    transcript: Option<Py<PyTranscript>>,
}

#[pymethods]
impl PyEvent {
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let detail = match (&self.text, self.done_secs, self.total_secs) {
            (Some(text), _, _) => format!(", text={}", text.as_str().into_pyobject(py)?.repr()?),
            (None, Some(done), Some(total)) => {
                format!(", done_secs={done:.2}, total_secs={total:.2}")
            }
            _ => String::new(),
        };
        Ok(format!("Event(type={:?}{detail})", self.kind))
    }
}

impl PyEvent {
    fn new(py: Python<'_>, event: Event) -> PyResult<Self> {
        let mut out = PyEvent {
            kind: event.kind(),
            text: None,
            segment: None,
            done_secs: None,
            total_secs: None,
            transcript: None,
        };
        match event {
            Event::Delta(text) => out.text = Some(text),
            Event::Segment(segment) => {
                out.text = Some(segment.text.clone());
                out.segment = Some(Py::new(py, PySegment::from(&segment))?);
            }
            Event::Progress {
                done_secs,
                total_secs,
            } => {
                out.done_secs = Some(done_secs);
                out.total_secs = Some(total_secs);
            }
            Event::Done(transcript) => {
                out.transcript = Some(Py::new(py, PyTranscript::from(*transcript))?);
            }
            _ => {}
        }
        Ok(out)
    }
}

/// The events of one transcription, as it runs on a thread of its own: iterate it
/// (``for event in stream``); the GIL is released while it waits. The last event is
/// ``"done"``; a failure is raised by the iteration instead. :meth:`close` (or leaving a
/// ``with`` block, or dropping the stream) stops the run; Ctrl-C while waiting stops it
/// too and raises ``KeyboardInterrupt``.
#[pyclass(frozen, module = "ctxscribe", name = "TranscriptStream")]
#[derive(Debug)]
pub(crate) struct PyTranscriptStream {
    /// `None` once the stream ended or was closed.
    inner: Mutex<Option<TranscriptStream>>,
}

impl PyTranscriptStream {
    pub(crate) fn new(inner: TranscriptStream) -> Self {
        PyTranscriptStream {
            inner: Mutex::new(Some(inner)),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Option<TranscriptStream>> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[pymethods]
impl PyTranscriptStream {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<PyEvent> {
        loop {
            // Waits detached from the interpreter, the stream locked: another thread
            // iterating the same stream waits its turn.
            let next = py.detach(|| {
                let mut stream = self.lock();
                stream
                    .as_mut()
                    .map_or(Next::End, |stream| stream.next_within(SIGNAL_CHECK))
            });
            match next {
                Next::Item(Ok(event)) => return PyEvent::new(py, event),
                Next::Item(Err(error)) => {
                    *self.lock() = None;
                    return Err(to_pyerr(py, &error));
                }
                Next::Pending => {
                    if let Err(interrupted) = py.check_signals() {
                        self.close();
                        return Err(interrupted);
                    }
                }
                Next::End => {
                    *self.lock() = None;
                    return Err(PyStopIteration::new_err(()));
                }
            }
        }
    }

    /// Stops the run if it still runs; the iteration then ends. Idempotent.
    fn close(&self) {
        if let Some(stream) = self.lock().take() {
            stream.cancel();
        }
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __exit__(
        &self,
        _kind: Option<&Bound<'_, PyAny>>,
        _value: Option<&Bound<'_, PyAny>>,
        _traceback: Option<&Bound<'_, PyAny>>,
    ) -> bool {
        self.close();
        false
    }
}
