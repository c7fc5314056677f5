//! The request, checked once: [`CheckedAudio`] (size and container type, or PCM rate and
//! length) and [`TranscriptionRequest`] (the audio with its validated context), which
//! [`ContextTranscriber::run`](crate::ContextTranscriber::run)
//! takes as it is.

use crate::audio::{AudioLimits, ProbedAudio};
use crate::context::{self, Dictionary, Languages, Message, Messages};
use crate::error::{Error, Result};

/// Lowest PCM sample rate accepted for [`Audio::Pcm`].
pub const MIN_PCM_SAMPLE_RATE: u32 = 1_000;
/// Highest PCM sample rate accepted for [`Audio::Pcm`].
pub const MAX_PCM_SAMPLE_RATE: u32 = 384_000;

/// The audio of one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Audio {
    /// An encoded file (wav, webm, mp3, m4a or ogg); the container is detected from the
    /// bytes, never from a file name.
    Encoded(Vec<u8>),
    /// Mono PCM samples in [-1, 1] at `sample_rate` Hz (resampled to 16 kHz if needed).
    Pcm {
        /// The samples.
        samples: Vec<f32>,
        /// Their rate in Hz.
        sample_rate: u32,
    },
}

impl From<Vec<u8>> for Audio {
    fn from(bytes: Vec<u8>) -> Self {
        Audio::Encoded(bytes)
    }
}

impl From<&[u8]> for Audio {
    fn from(bytes: &[u8]) -> Self {
        Audio::Encoded(bytes.to_vec())
    }
}

/// [`Audio`] whose cheap checks are done: an encoded file's size and container family
/// (probed once; decoding starts from that probe), or PCM's rate and length.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckedAudio(Checked);

#[derive(Debug, Clone, PartialEq)]
enum Checked {
    Encoded(ProbedAudio),
    Pcm { samples: Vec<f32>, sample_rate: u32 },
}

impl CheckedAudio {
    /// Checks `audio` against `limits` (use the transcriber's,
    /// [`ContextTranscriber::audio_limits`](crate::ContextTranscriber::audio_limits)).
    ///
    /// # Errors
    /// Encoded: [`Error::FileTooLarge`], then [`Error::UnsupportedAudioType`]. PCM: an
    /// `invalid_request` about `file` for a rate outside [`MIN_PCM_SAMPLE_RATE`] ..=
    /// [`MAX_PCM_SAMPLE_RATE`], then [`Error::AudioTooLong`].
    pub fn new(audio: Audio, limits: &AudioLimits) -> Result<Self> {
        match audio {
            Audio::Encoded(bytes) => Ok(CheckedAudio(Checked::Encoded(ProbedAudio::new(
                bytes, limits,
            )?))),
            Audio::Pcm {
                samples,
                sample_rate,
            } => {
                if !(MIN_PCM_SAMPLE_RATE..=MAX_PCM_SAMPLE_RATE).contains(&sample_rate) {
                    return Err(Error::invalid(
                        "file",
                        format!(
                            "PCM sample rate must be between {MIN_PCM_SAMPLE_RATE} and \
                             {MAX_PCM_SAMPLE_RATE} Hz, got {sample_rate}"
                        ),
                    ));
                }
                if samples.len() as f64 / f64::from(sample_rate) > limits.max_duration_secs {
                    return Err(Error::AudioTooLong {
                        limit_secs: limits.max_duration_secs,
                    });
                }
                Ok(CheckedAudio(Checked::Pcm {
                    samples,
                    sample_rate,
                }))
            }
        }
    }

    /// The encoded upload's size in bytes (`None` for PCM).
    #[must_use]
    pub fn encoded_len(&self) -> Option<usize> {
        match &self.0 {
            Checked::Encoded(probed) => Some(probed.bytes().len()),
            Checked::Pcm { .. } => None,
        }
    }

    /// What the transcript will warn about this audio: an encoded file cut short
    /// ([`crate::WarningCode::AudioTruncated`]).
    #[must_use]
    pub fn warnings(&self) -> Vec<crate::Warning> {
        match &self.0 {
            Checked::Encoded(probed) => probed
                .truncation()
                .map(|message| crate::Warning::new(crate::WarningCode::AudioTruncated, message))
                .into_iter()
                .collect(),
            Checked::Pcm { .. } => Vec::new(),
        }
    }

    /// 16 kHz mono samples in [-1, 1].
    pub(crate) fn decode(self, limits: &AudioLimits) -> Result<Vec<f32>> {
        match self.0 {
            Checked::Encoded(probed) => Ok(probed.decode(limits)?.samples),
            Checked::Pcm {
                samples,
                sample_rate,
            } => {
                let mut samples = if sample_rate == crate::audio::TARGET_SAMPLE_RATE {
                    samples
                } else {
                    crate::audio::resample_to_16k(&samples, sample_rate)?
                };
                for sample in &mut samples {
                    *sample = if sample.is_finite() {
                        sample.clamp(-1.0, 1.0)
                    } else {
                        0.0
                    };
                }
                Ok(samples)
            }
        }
    }
}

/// One transcription request with every field checked: what
/// [`ContextTranscriber::run`](crate::ContextTranscriber::run) and
/// [`ContextTranscriber::stream`](crate::ContextTranscriber::stream) take, without
/// checking anything again.
///
/// Fields arriving as text go through the library's parsers first
/// ([`context::parse_messages`], [`context::parse_languages`],
/// [`context::parse_dictionary`]) or the checks of typed values
/// ([`context::validate_messages`], ...); what they give ([`Messages`], [`Languages`],
/// [`Dictionary`]) is valid by construction and taken as is.
#[derive(Debug, Clone, PartialEq)]
pub struct TranscriptionRequest {
    pub(crate) audio: CheckedAudio,
    pub(crate) messages: Vec<Message>,
    pub(crate) languages: Languages,
    pub(crate) dictionary: Dictionary,
}

impl TranscriptionRequest {
    /// A request of audio already checked (e.g. first, as the server's contract orders)
    /// and its checked context: nothing is checked again.
    #[must_use]
    pub fn new(
        audio: CheckedAudio,
        messages: Messages,
        languages: Languages,
        dictionary: Dictionary,
    ) -> Self {
        TranscriptionRequest {
            audio,
            messages: messages.into_vec(),
            languages,
            dictionary,
        }
    }

    /// A request from unchecked values, in the library's order: the messages, then the
    /// audio ([`CheckedAudio::new`] with `limits`).
    ///
    /// # Errors
    /// An `invalid_request` about `messages` over the limits
    /// ([`context::validate_messages`]), then as for [`CheckedAudio::new`].
    pub fn check(
        audio: Audio,
        messages: Vec<Message>,
        languages: Languages,
        dictionary: Dictionary,
        limits: &AudioLimits,
    ) -> Result<Self> {
        let messages = context::validate_messages(messages)?.into_vec();
        Ok(TranscriptionRequest {
            audio: CheckedAudio::new(audio, limits)?,
            messages,
            languages,
            dictionary,
        })
    }

    /// The audio.
    #[must_use]
    pub fn audio(&self) -> &CheckedAudio {
        &self.audio
    }

    /// The context messages, oldest first.
    #[must_use]
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// The allowed languages.
    #[must_use]
    pub fn languages(&self) -> &Languages {
        &self.languages
    }

    /// The dictionary.
    #[must_use]
    pub fn dictionary(&self) -> &Dictionary {
        &self.dictionary
    }
}
