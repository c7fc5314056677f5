//! Whisper models: locating them and converting CTranslate2 weights to whisper.cpp ggml.

pub mod cache;
pub mod convert;
pub mod fetch;
pub mod locate;

pub use convert::{
    ConversionReport, ConvertError, UnknownWeightType, WeightType, WhisperHparams,
    convert_ct2_to_ggml,
};
