//! One error taxonomy for the whole library.
//!
//! [`Error::code`] is the only mapping from an error to the contract's codes
//! ([`ErrorCode`]: string, HTTP status, class): the HTTP server (status + OpenAI-style
//! body), the C ABI (status enum) and the Python package (exception class) all derive
//! their face from it, each with an exhaustive `match`.

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

    /// The caller cancelled the transcription (a [`crate::CancelToken`]).
    #[error("transcription cancelled")]
    Cancelled,

    /// The transcription did not finish before its deadline (the run's timeout or the
    /// transcriber's).
    #[error("transcription failed: it did not finish within its time limit")]
    DeadlineExceeded,
}

/// `Result` with the library's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Whether an error is the caller's doing (HTTP 4xx) or the service's (HTTP 5xx).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorClass {
    /// The request is wrong: fix it before trying again.
    Client,
    /// The service could not do its part: the same request may work later.
    Server,
}

/// The stable contract code of an [`Error`]: its string, HTTP status and class.
///
/// Deliberately not `#[non_exhaustive]`: every face (the HTTP server, the C ABI, the
/// Python package) maps it with an exhaustive `match`, so a new code does not compile
/// until each of them handles it.
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
/// | `cancelled` | the caller cancelled | 502 as `transcription_failed` |
/// | `deadline_exceeded` | the time limit passed | 502 as `transcription_failed` |
///
/// The last two tell a library caller (Rust, C, Python) why a run stopped; the HTTP
/// contract has no codes for them and answers [`ErrorCode::http_code`]
/// (`transcription_failed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// `invalid_request`: a request field or option is malformed or over a limit.
    InvalidRequest,
    /// `unsupported_audio_type`: the bytes are not wav, webm, mp3, m4a or ogg.
    UnsupportedAudioType,
    /// `audio_decode_failed`: a supported container whose content cannot be decoded.
    AudioDecodeFailed,
    /// `file_too_large`: the upload is over the size limit.
    FileTooLarge,
    /// `audio_too_long`: the audio is over the duration limit.
    AudioTooLong,
    /// `model_unavailable`: the model is missing or cannot be loaded.
    ModelUnavailable,
    /// `transcription_failed`: the engine or a provider failed.
    TranscriptionFailed,
    /// `cancelled`: the caller cancelled the run.
    Cancelled,
    /// `deadline_exceeded`: the run's time limit passed.
    DeadlineExceeded,
}

impl ErrorCode {
    /// Every code, in the contract's order (the C status values follow it).
    pub const ALL: [ErrorCode; 9] = [
        ErrorCode::InvalidRequest,
        ErrorCode::UnsupportedAudioType,
        ErrorCode::AudioDecodeFailed,
        ErrorCode::FileTooLarge,
        ErrorCode::AudioTooLong,
        ErrorCode::ModelUnavailable,
        ErrorCode::TranscriptionFailed,
        ErrorCode::Cancelled,
        ErrorCode::DeadlineExceeded,
    ];

    /// The stable string (`"invalid_request"`, ...). Never changes for a given code.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidRequest => "invalid_request",
            ErrorCode::UnsupportedAudioType => "unsupported_audio_type",
            ErrorCode::AudioDecodeFailed => "audio_decode_failed",
            ErrorCode::FileTooLarge => "file_too_large",
            ErrorCode::AudioTooLong => "audio_too_long",
            ErrorCode::ModelUnavailable => "model_unavailable",
            ErrorCode::TranscriptionFailed => "transcription_failed",
            ErrorCode::Cancelled => "cancelled",
            ErrorCode::DeadlineExceeded => "deadline_exceeded",
        }
    }

    /// The code the HTTP contract answers with: itself, except that a cancelled run and
    /// one past its deadline are `transcription_failed` there.
    #[must_use]
    pub const fn http_code(self) -> ErrorCode {
        match self {
            ErrorCode::Cancelled | ErrorCode::DeadlineExceeded => ErrorCode::TranscriptionFailed,
            code => code,
        }
    }

    /// The HTTP status the server answers with.
    #[must_use]
    pub const fn http_status(self) -> u16 {
        match self {
            ErrorCode::InvalidRequest
            | ErrorCode::UnsupportedAudioType
            | ErrorCode::AudioDecodeFailed
            | ErrorCode::AudioTooLong => 400,
            ErrorCode::FileTooLarge => 413,
            ErrorCode::ModelUnavailable => 500,
            ErrorCode::TranscriptionFailed | ErrorCode::Cancelled | ErrorCode::DeadlineExceeded => {
                502
            }
        }
    }

    /// Whose doing the error is: [`ErrorClass::Client`] for every 4xx code.
    #[must_use]
    pub const fn class(self) -> ErrorClass {
        if self.http_status() < 500 {
            ErrorClass::Client
        } else {
            ErrorClass::Server
        }
    }

    /// The code of a stable string, `None` for a string that is no code.
    #[must_use]
    pub fn from_name(code: &str) -> Option<Self> {
        ErrorCode::ALL
            .into_iter()
            .find(|known| known.as_str() == code)
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<str> for ErrorCode {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for ErrorCode {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<ErrorCode> for &str {
    fn eq(&self, other: &ErrorCode) -> bool {
        *self == other.as_str()
    }
}

impl Error {
    /// The stable contract code of this error (see [`ErrorCode`]). Never changes for a
    /// given variant.
    #[must_use]
    pub fn code(&self) -> ErrorCode {
        match self {
            Error::InvalidRequest { .. } => ErrorCode::InvalidRequest,
            Error::UnsupportedAudioType { .. } => ErrorCode::UnsupportedAudioType,
            Error::AudioDecode { .. } => ErrorCode::AudioDecodeFailed,
            Error::FileTooLarge { .. } => ErrorCode::FileTooLarge,
            Error::AudioTooLong { .. } => ErrorCode::AudioTooLong,
            Error::ModelUnavailable { .. } => ErrorCode::ModelUnavailable,
            Error::TranscriptionFailed { .. } => ErrorCode::TranscriptionFailed,
            Error::Cancelled => ErrorCode::Cancelled,
            Error::DeadlineExceeded => ErrorCode::DeadlineExceeded,
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
            Error::ModelUnavailable { .. }
            | Error::TranscriptionFailed { .. }
            | Error::Cancelled
            | Error::DeadlineExceeded => None,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_keep_their_statuses() {
        let statuses: Vec<(&str, u16)> = ErrorCode::ALL
            .iter()
            .map(|code| (code.as_str(), code.http_status()))
            .collect();
        assert_eq!(
            statuses,
            [
                ("invalid_request", 400),
                ("unsupported_audio_type", 400),
                ("audio_decode_failed", 400),
                ("file_too_large", 413),
                ("audio_too_long", 400),
                ("model_unavailable", 500),
                ("transcription_failed", 502),
                ("cancelled", 502),
                ("deadline_exceeded", 502),
            ]
        );
        for code in ErrorCode::ALL {
            assert_eq!(ErrorCode::from_name(code.as_str()), Some(code));
            assert_eq!(code.to_string(), code.as_str());
            let client = code.class() == ErrorClass::Client;
            assert_eq!(client, code.http_status() < 500, "{code}");
        }
        assert_eq!(ErrorCode::from_name("panic"), None);
    }
}
