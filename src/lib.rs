//! ctxscribe: context-aware speech-to-text on an embedded Whisper engine.
//!
//! One operation: [`ContextTranscriber::transcribe`] turns an audio file (wav, webm, mp3,
//! m4a, ogg) into one transcript, optionally helped by chat-style context `messages` and a
//! `dictionary` of terms, in one of the allowed `languages`.
//!
//! [`pipeline`] runs the stages in order; the modules mirror them: [`audio`] (probe, decode, downmix, resample to
//! 16 kHz mono f32) -> [`context`] (validated request fields, prompt) -> `engine`
//! (whisper.cpp, or a remote endpoint through [`providers`]) -> `correction` (spoken
//! forms; optionally an LLM whose edits are checked) -> [`transcript`]. [`model`]
//! converts and locates the weights,
//! [`config`] holds defaults and environment variables, [`error`] the one error taxonomy.

#![deny(missing_docs)]

pub mod audio;
#[cfg(feature = "cli")]
pub mod cli;
pub mod config;
pub mod context;
// Spoken-to-written correction and its judge. Public for the benches and integration
// tests, which drive it directly; not part of the API.
#[doc(hidden)]
pub mod correction;
// The whisper.cpp engine. Public for the benches and integration tests, which drive it
// directly; not part of the API (`Decoding`, `Weights`, `Device`, `Backend` and `CancelToken` are re-exported).
#[doc(hidden)]
pub mod engine;
pub mod error;
pub mod model;
pub mod pipeline;
pub mod providers;
mod request;
#[cfg(feature = "server")]
pub mod server;
mod transcriber;
pub mod transcript;

pub use audio::AudioLimits;
pub use context::{Dictionary, Language, Languages, Message, Role};
pub use engine::{Backend, CancelToken, Decoding, Device, Weights};
pub use error::{Error, ErrorClass, ErrorCode, Result};
pub use pipeline::{Event, RunOptions, TranscriptStream};
pub use providers::{EndpointConfig, SpeechProvider};
pub use request::{
    Audio, CheckedAudio, MAX_PCM_SAMPLE_RATE, MIN_PCM_SAMPLE_RATE, TranscriptionRequest,
};
pub use transcriber::{ContextTranscriber, ContextTranscriberBuilder};
pub use transcript::{
    EditSource, Segment, StageTimings, Transcript, Verdict, Warning, WarningCode,
};
