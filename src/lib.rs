//! ctxscribe: context-aware speech-to-text on an embedded Whisper engine.
//!
//! The modules mirror the pipeline: [`audio`] (probe, decode, downmix, resample to
//! 16 kHz mono f32) -> [`context`] (validated request fields, term mining, prompt) ->
//! [`engine`] (whisper.cpp) -> [`correction`] -> [`transcript`].

pub mod audio;
pub mod context;
pub mod error;
pub mod model;

pub use error::{Error, Result};
