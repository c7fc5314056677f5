//! One error taxonomy for the whole library.
//!
//! [`Error::code`] is the only mapping from an error to the contract's codes: the HTTP
//! server (status + OpenAI-style body), the C ABI (status enum) and the Python package
//! (exception class) all derive their face from it.

use std::error::Error as StdError;

/// A boxed third-party error kept as the `source` of an [`Error`].
pub type BoxError = Box<dyn StdError + Send + Sync + 'static>;

/// Everything that can go wrong while transcribing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A request field (`messages`, `languages`, `dictionary`, ...) is malformed or over a
    /// documented limit. `param` names the field.
    #[error("invalid {param}: {message}")]
    InvalidRequest {
        /// The offending field.
        param: &'static str,
        /// What is wrong, for a human.
        message: String,
    },

    /// The bytes are not one of the supported containers (wav, webm, mp3, m4a, ogg).
    #[error("unsupported audio type: {detected}; supported types are wav, webm, mp3, m4a and ogg")]
    UnsupportedAudioType {
        /// What the bytes look like (e.g. "flac", "text", "unknown").
        detected: String,
    },

    /// The container is supported but its content could not be decoded
    /// (truncated, corrupt, no audio track, unsupported codec inside the container).
    #[error("audio could not be decoded: {message}")]
    AudioDecode {
        /// What failed.
        message: String,
        /// The decoder's own error, if any.
        #[source]
        source: Option<BoxError>,
    },

    /// The encoded upload is larger than the configured maximum.
    #[error("audio file is too large: {size} bytes, the limit is {limit} bytes")]
    FileTooLarge {
        /// Size of the upload in bytes.
        size: u64,
        /// Configured limit in bytes.
        limit: u64,
    },

    /// The decoded audio is longer than the configured maximum duration.
    #[error("audio is too long: more than {limit_secs} s of audio, the limit is {limit_secs} s")]
    AudioTooLong {
        /// Configured limit in seconds.
        limit_secs: f64,
    },

    /// The model could not be found or loaded (a configuration problem, not a request one).
    #[error("model unavailable: {message}")]
    ModelUnavailable {
        /// What is missing and how to fix it.
        message: String,
        /// The loader's own error, if any.
        #[source]
        source: Option<BoxError>,
    },

    /// The engine or a remote provider failed while transcribing valid audio.
    #[error("transcription failed: {message}")]
    TranscriptionFailed {
        /// What failed (never contains secrets).
        message: String,
        /// The engine's or provider's own error, if any.
        #[source]
        source: Option<BoxError>,
    },
}

/// `Result` with the library's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// The stable contract code of this error. Never changes for a given variant.
    ///
    /// | code | meaning | HTTP |
    /// |---|---|---|
    /// | `invalid_request` | malformed `messages`/`languages`/`dictionary`/options | 400 |
    /// | `unsupported_audio_type` | not wav/webm/mp3/m4a/ogg | 400 |
    /// | `audio_decode_failed` | supported type, undecodable content | 400 |
    /// | `file_too_large` | upload over the size limit | 413 |
    /// | `audio_too_long` | decoded audio over the duration limit | 400 |
    /// | `model_unavailable` | model file missing or unloadable | 500 |
    /// | `transcription_failed` | engine or provider failure | 502 |
    #[must_use]
    pub fn code(&self) -> &'static str {
        match self {
            Error::InvalidRequest { .. } => "invalid_request",
            Error::UnsupportedAudioType { .. } => "unsupported_audio_type",
            Error::AudioDecode { .. } => "audio_decode_failed",
            Error::FileTooLarge { .. } => "file_too_large",
            Error::AudioTooLong { .. } => "audio_too_long",
            Error::ModelUnavailable { .. } => "model_unavailable",
            Error::TranscriptionFailed { .. } => "transcription_failed",
        }
    }

    /// The request field this error is about, if any (OpenAI's `param`).
    #[must_use]
    pub fn param(&self) -> Option<&'static str> {
        match self {
            Error::InvalidRequest { param, .. } => Some(param),
            Error::UnsupportedAudioType { .. }
            | Error::AudioDecode { .. }
            | Error::FileTooLarge { .. }
            | Error::AudioTooLong { .. } => Some("file"),
            Error::ModelUnavailable { .. } | Error::TranscriptionFailed { .. } => None,
        }
    }

    /// Shorthand for an [`Error::InvalidRequest`].
    pub(crate) fn invalid(param: &'static str, message: impl Into<String>) -> Self {
        Error::InvalidRequest {
            param,
            message: message.into(),
        }
    }

    /// Shorthand for an [`Error::AudioDecode`] without a source.
    pub(crate) fn decode(message: impl Into<String>) -> Self {
        Error::AudioDecode {
            message: message.into(),
            source: None,
        }
    }
}
