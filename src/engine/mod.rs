//! The embedded engine: whisper.cpp through whisper-rs.
//!
//! One [`WhisperEngine`] holds the model (loaded once, shared by every call and thread)
//! and a pool of per-call decoder states. A call runs: speech detection (Silero VAD, or
//! a digital-silence check when no VAD model is installed) -> windows along speech
//! boundaries ([`windows`]) -> language detection, sharing the first window's encoder
//! pass when the language can be guessed (`language_guess.rs`) -> decoding of each window
//! with the context prompt (never the previous window's text).

pub mod biasing;
pub mod bpe;
mod language_guess;
mod pool;
mod whisper;
pub mod windows;

use std::path::PathBuf;
use std::time::Instant;

pub use biasing::{BiasPhrase, BiasStrength, TermBias};
pub use whisper::WhisperEngine;

use crate::context::Languages;

/// How the decoder searches for the transcript.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
#[non_exhaustive]
pub enum Decoding {
    /// Pick the most probable token at each step (fastest).
    #[default]
    Greedy,
    /// Beam search with `beam_size` beams.
    BeamSearch {
        /// Number of beams (whisper.cpp default: 5).
        beam_size: u8,
    },
}

/// Settings of the embedded engine.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// The whisper.cpp ggml/gguf model file.
    pub model_path: PathBuf,
    /// The Silero VAD model (ggml); `None` disables VAD (only digital silence is skipped).
    pub vad_model_path: Option<PathBuf>,
    /// Threads per transcription.
    pub threads: usize,
    /// Decoder search.
    pub decoding: Decoding,
}

/// What the engine is asked to do with one signal.
#[derive(Debug, Clone, Copy)]
pub struct EngineRequest<'a> {
    /// 16 kHz mono samples in [-1, 1].
    pub samples: &'a [f32],
    /// Which languages the audio may be in.
    pub languages: &'a Languages,
    /// Text that conditions the decoder (Whisper's prompt), already rendered.
    pub prompt: &'a str,
    /// Give up (with [`crate::Error::TranscriptionFailed`]) once this instant has passed.
    pub deadline: Option<Instant>,
    /// Decode-time biasing towards the context terms' tokens, if any.
    pub bias: Option<&'a TermBias>,
    /// Let the engine encode a short unprompted window over its own length instead of
    /// Whisper's 30 s (several times faster on dictation-length clips, same WER on the
    /// real clips). The transcriber trims every unprompted pass; a prompted window is
    /// never trimmed (it looped and translated).
    pub trim_encoder: bool,
}

/// What the engine produced.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineOutput {
    /// The transcript, whitespace-normalised; empty when no speech was found.
    pub text: String,
    /// The language decoded in (`None` when there was no speech to decode).
    pub language: Option<crate::context::Language>,
    /// Seconds of audio that were decoded (speech windows only).
    pub decoded_secs: f64,
}
