//! The record of one request: what its access log line and metrics are written from.

use std::time::Duration;

use crate::Transcript;

/// What the access log says about one request.
#[derive(Debug, Default)]
pub(crate) struct RequestRecord {
    pub(crate) code: Option<&'static str>,
    pub(crate) file_bytes: Option<u64>,
    pub(crate) audio_secs: Option<f64>,
    pub(crate) read: Option<Duration>,
    pub(crate) queue: Option<Duration>,
    pub(crate) decode: Option<Duration>,
    pub(crate) engine: Option<Duration>,
    /// The transcript's warning codes, comma-separated (`audio_truncated`).
    pub(crate) warnings: Option<String>,
}

impl RequestRecord {
    /// Records a finished run's figures.
    pub(crate) fn figures(&mut self, figures: RunFigures) {
        self.audio_secs = Some((figures.audio_secs * 1000.0).round() / 1000.0);
        self.decode = Some(figures.decode);
        self.engine = Some(figures.engine);
    }
}

pub(crate) fn ms(duration: Duration) -> f64 {
    (duration.as_secs_f64() * 1e6).round() / 1e3
}

/// A finished run's figures, for the request's log line and metrics.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct RunFigures {
    pub(crate) decode: Duration,
    pub(crate) engine: Duration,
    pub(crate) audio_secs: f64,
}

impl RunFigures {
    pub(crate) fn of(transcript: &Transcript) -> Self {
        RunFigures {
            decode: transcript.timings.decode,
            engine: transcript.timings.engine,
            audio_secs: transcript.audio_secs,
        }
    }
}
