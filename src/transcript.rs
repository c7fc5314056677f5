//! The result of one transcription.

use std::time::Duration;

use crate::context::Language;

/// The final transcript of one audio file.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Transcript {
    /// The transcript text; empty when the audio holds no speech.
    pub text: String,
    /// The language the audio was transcribed in; `None` when there was no speech.
    pub language: Option<Language>,
    /// Duration of the input audio in seconds.
    pub audio_secs: f64,
    /// Time spent per pipeline stage.
    pub timings: StageTimings,
    /// Every candidate edit the context judge weighed, with its scores and whether it is
    /// in the text (empty without context).
    pub edits: Vec<crate::correction::judge::Verdict>,
}

/// Wall-clock time per pipeline stage of one transcription.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct StageTimings {
    /// Probing, decoding and resampling the audio.
    pub decode: Duration,
    /// Speech detection, language detection and Whisper decoding.
    pub engine: Duration,
    /// The whole call.
    pub total: Duration,
}
