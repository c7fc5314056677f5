//! Audio ingestion: probe the container from the bytes, decode, downmix, resample to 16 kHz mono f32.
//!
//! ```text
//! bytes ──probe (magic bytes)──> family ──symphonia reader + decoder──> packets of PCM
//!       ──downmix (channel average, NaN/Inf -> 0, clamp ±1)──> mono
//!       ──rubato FFT resampler, streamed──> 16 kHz mono f32 in [-1, 1]
//! ```
//!
//! * The family is decided from the leading bytes only ([`detect_format`]); a file name or a
//!   Content-Type is never consulted. Supported: wav, webm (and Matroska holding a WebM
//!   codec), mp3, m4a and ogg (Opus or Vorbis).
//! * Opus is decoded by libopus (statically linked through `symphonia-adapter-libopus`),
//!   always at 16 kHz whatever rate the container declares: libopus band-limits in the
//!   MDCT domain, no resampler runs, and SILK is not upsampled to 48 kHz first.
//! * Bounds: the upload size is checked first ([`Error::FileTooLarge`]), then the duration
//!   the container declares, then the duration its packets describe, read in a pass that
//!   does not decode (Opus packet TOCs, Ogg granules and Vorbis block sizes, Matroska block
//!   timestamps and durations, MP4 sample tables, MP3 frames, WAV data), then the decoded
//!   duration as it grows ([`Error::AudioTooLong`]). So an upload is refused for its length
//!   at the cost of demuxing it, never of decoding an hour of it. A wall-clock deadline, a
//!   cap of one packet per input byte, a floor of input bytes per second of audio and a
//!   cap on consecutive undecodable packets stop hostile files ([`Error::AudioDecode`]). Decoding runs under `catch_unwind`: a panic in
//!   a decoder becomes [`Error::AudioDecode`].
//!
//! Error mapping, by input:
//!
//! | input | result |
//! |---|---|
//! | larger than [`AudioLimits::max_file_bytes`] | `file_too_large` (checked first) |
//! | empty | `unsupported_audio_type` (`detected: "empty"`) |
//! | flac, aiff, RF64/BW64, RIFX, mp1/mp2, ADTS AAC, caf, Ogg FLAC/Speex/Theora, Matroska with a non-WebM codec, images, text, unknown bytes | `unsupported_audio_type` (`detected` names it) |
//! | a supported family cut inside its headers, an MP4 cut before its `moov`, no audio track, a codec we cannot decode (FLAC in MP4, > 2 Opus channels, ...), nothing decodable | `audio_decode_failed` |
//! | a supported family cut after some audio (including a "fast start" MP4) | `Ok` with the audio before the cut; [`ProbedAudio::truncation`] says where the file ends (the transcript's `audio_truncated` warning) |
//! | damage in the middle that the codec or container skips (PCM noise, MP3 resync, Ogg pages failing their CRC, a few bad AAC/Opus packets) | `Ok` (possibly shorter) |
//! | damage that breaks the container structure, or more than 100 bad packets in a row | `audio_decode_failed` |
//! | declared (not for WAV), described by the packets, or decoded duration over [`AudioLimits::max_duration_secs`] | `audio_too_long` (before decoding, except for the decoded duration) |
//! | more packets than input bytes (MP4 `trun` boxes claiming 2^32 empty samples, ...) | `audio_decode_failed` |
//! | fewer than [`AudioLimits::min_bytes_per_sec`] bytes per second of audio described or decoded (an hour of 2-byte Opus concealment packets in 92 kB) | `audio_decode_failed` (before decoding, for the described duration) |
//! | MP4 sample data placed outside the file (a `stco`/`co64` chunk offset, a `tfhd` base or `trun` data offset past the end, or before the start) | `audio_decode_failed` (before symphonia reads the tables) |
//! | decoding longer than [`AudioLimits::decode_timeout`] | `audio_decode_failed` ("decoding took too long") |
//! | a Vorbis setup header with codewords over 32 bits (symphonia's decoder would index past its table) | `audio_decode_failed` (before the decoder is opened) |
//! | a panic inside a decoder | `audio_decode_failed` |
//!
//! Known limits: the AAC encoder delay of MP4 files (1024 samples, 23 ms at 44.1 kHz) is
//! not trimmed (symphonia ignores the edit list), and a WebM/Matroska reader meeting
//! damage may stop there without an error (the audio before the damage is returned).

mod decode;
mod demux;
mod mp4;
mod probe;
mod resample;
mod scan;
mod sink;
mod truncation;
mod vorbis;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Duration;

use crate::error::Error;

/// The sample rate of everything this module returns, and of what Whisper expects.
pub const TARGET_SAMPLE_RATE: u32 = 16_000;

/// A supported container family, as recognised from the leading bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AudioFormat {
    /// RIFF WAVE: PCM (8/16/24/32-bit, float), A-law/mu-law, IMA/MS ADPCM.
    Wav,
    /// WebM (Opus, Vorbis, or PCM as Chrome's MediaRecorder writes it); also Matroska
    /// files (DocType `matroska`) whose audio track uses one of those codecs.
    Webm,
    /// MPEG-1/2/2.5 Layer III, with or without ID3 tags.
    Mp3,
    /// ISO base media (m4a, mp4, 3gp, mov), usually AAC-LC.
    M4a,
    /// Ogg with an Opus or Vorbis stream (chained streams included).
    Ogg,
}

impl AudioFormat {
    /// The lower-case short name (`"wav"`, `"webm"`, `"mp3"`, `"m4a"`, `"ogg"`).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            AudioFormat::Wav => "wav",
            AudioFormat::Webm => "webm",
            AudioFormat::Mp3 => "mp3",
            AudioFormat::M4a => "m4a",
            AudioFormat::Ogg => "ogg",
        }
    }
}

impl std::fmt::Display for AudioFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Bounds applied by [`decode_to_16k_mono`].
#[derive(Debug, Clone)]
pub struct AudioLimits {
    /// Largest accepted upload, in bytes. Default: 25 MiB (OpenAI's limit).
    pub max_file_bytes: u64,
    /// Longest accepted audio, in seconds. Default: 3600 s (one hour), i.e. at most
    /// 57.6 M samples (230 MB of f32) at 16 kHz.
    pub max_duration_secs: f64,
    /// Wall-clock deadline for the whole decode, checked between packets. Default: 60 s,
    /// about 100 times what an hour of compressed audio needs on one core.
    pub decode_timeout: Duration,
    /// Fewest input bytes per second of audio: an upload whose packets describe, or that
    /// decodes to, more than `bytes / min_bytes_per_sec` seconds is refused
    /// ([`Error::AudioDecode`]); 0 disables the check. Default: 48 (384 bit/s).
    ///
    /// Why 48: the lowest bitrate of any codec decoded here is Opus's 6 kbit/s (750 B/s,
    /// 16 times more); the sparsest file an encoder wrote in our tests, an hour of digital
    /// silence in 8 kbit/s AAC, has 63 B/s; Opus silence has 150-380. Only packets that carry
    /// no audio go lower (Opus concealment or DTX frames: 2 bytes per 120 ms, 26 B/s in
    /// Ogg). Writing an hour of 16 kHz samples costs ~0.2 s of CPU whatever the input, so
    /// without this bound a 92 kB file costs 2.2 s/MiB; at 48 B/s it is at most ~1.2.
    pub min_bytes_per_sec: f64,
}

impl Default for AudioLimits {
    fn default() -> Self {
        AudioLimits {
            max_file_bytes: 25 * 1024 * 1024,
            max_duration_secs: 3600.0,
            decode_timeout: Duration::from_secs(60),
            min_bytes_per_sec: 48.0,
        }
    }
}

/// Decoded audio: 16 kHz, mono, f32 samples in [-1, 1].
#[derive(Debug, Clone)]
pub struct Pcm16k {
    /// The samples at [`TARGET_SAMPLE_RATE`].
    pub samples: Vec<f32>,
    /// The container family the audio came from.
    pub source_format: AudioFormat,
    /// Sample rate of the decoded stream before resampling (16 000 for Opus, which is
    /// always decoded at 16 kHz). For chained Ogg files, the rate of the first link.
    pub source_sample_rate: u32,
    /// Channel count of the decoded stream before downmixing (of the first link for chained
    /// Ogg files).
    pub source_channels: u16,
}

impl Pcm16k {
    /// Duration in seconds.
    #[must_use]
    pub fn duration_secs(&self) -> f64 {
        self.samples.len() as f64 / f64::from(TARGET_SAMPLE_RATE)
    }
}

/// Recognises the container family of an upload from its leading bytes.
///
/// # Errors
///
/// [`Error::UnsupportedAudioType`] when the bytes are not one of the supported families;
/// `detected` names what they look like: `"empty"` (zero bytes), `"flac"`, `"aiff"`,
/// `"rf64 (64-bit wav)"`, `"rifx (big-endian wav)"`, `"mp2"`, `"aac (adts)"`, `"caf"`,
/// `"ogg (flac)"`, `"ogg (speex)"`, `"ebml (...)"`, `"image"`, `"text"`, `"unknown"`, ...
/// An empty upload is reported as unsupported (not as a decode failure) because there is
/// no container at all to decode.
///
/// A Matroska file (DocType `matroska`) is reported as [`AudioFormat::Webm`];
/// [`decode_to_16k_mono`] then accepts it only if its audio codec is a WebM one.
pub fn detect_format(bytes: &[u8]) -> Result<AudioFormat, Error> {
    probe::probe(bytes).map(|p| p.format)
}

/// Decodes an upload to 16 kHz mono f32.
///
/// Steps: size check, family from the leading bytes, demux and decode with symphonia (Opus
/// with libopus at 16 kHz), downmix by averaging the channels, replace NaN/Inf by 0 and
/// clamp to [-1, 1], resample to 16 kHz with rubato's FFT resampler (skipped at 16 kHz).
///
/// * A stream cut short (`UnexpectedEof` from the demuxer) keeps what was decoded before
///   the cut; if nothing was, the result is [`Error::AudioDecode`].
/// * Chained Ogg streams are decoded link after link (each link may change the rate or
///   the channel count).
/// * A few undecodable packets are skipped; more than 100 in a row, or nothing decodable at
///   all, is [`Error::AudioDecode`].
///
/// # Errors
///
/// * [`Error::FileTooLarge`] if `bytes` is longer than `limits.max_file_bytes` (checked
///   before anything else).
/// * [`Error::UnsupportedAudioType`] as for [`detect_format`], and for a Matroska file whose
///   audio codec is not Opus, Vorbis or PCM.
/// * [`Error::AudioTooLong`] if the duration the container declares, the duration its
///   packets describe (both checked before decoding), or the audio decoded so far, exceeds
///   `limits.max_duration_secs` (decoding stops there: memory stays bounded).
/// * [`Error::AudioDecode`] for everything else: truncated in the header, corrupt, no audio
///   track, an unsupported codec inside a supported container (e.g. FLAC in MP4), HE-AAC
///   with explicit signalling, a deadline overrun ("decoding took too long"), or a panic
///   inside a decoder.
pub fn decode_to_16k_mono(bytes: &[u8], limits: &AudioLimits) -> Result<Pcm16k, Error> {
    check_file_size(bytes, limits)?;
    guard_panics(|| {
        let probed = probe::probe(bytes)?;
        decode::decode(bytes, &probed, limits)
    })
}

/// An upload whose size and container family are checked: [`ProbedAudio::decode`] decodes
/// it from that probe, without reading its leading bytes again.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbedAudio {
    bytes: Vec<u8>,
    probed: probe::Probed,
    truncation: Option<String>,
}

impl ProbedAudio {
    /// Checks `bytes` against `limits.max_file_bytes`, then recognises the container
    /// family (as [`detect_format`] does).
    ///
    /// # Errors
    ///
    /// [`Error::FileTooLarge`], then [`Error::UnsupportedAudioType`], as for
    /// [`decode_to_16k_mono`].
    pub fn new(bytes: Vec<u8>, limits: &AudioLimits) -> Result<Self, Error> {
        check_file_size(&bytes, limits)?;
        let probed = guard_panics(|| probe::probe(&bytes))?;
        let truncation = guard_panics(|| Ok(truncation::find(&bytes, &probed))).unwrap_or(None);
        Ok(ProbedAudio {
            bytes,
            probed,
            truncation,
        })
    }

    /// Where the file ends inside its container when it is cut short (a sentence for
    /// the `audio_truncated` warning): decoding keeps the audio before the cut. `None`
    /// for a whole file, or one whose container declares no length.
    #[must_use]
    pub fn truncation(&self) -> Option<&str> {
        self.truncation.as_deref()
    }

    /// The container family.
    #[must_use]
    pub fn format(&self) -> AudioFormat {
        self.probed.format
    }

    /// The encoded bytes.
    #[must_use]
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Decodes to 16 kHz mono f32 as [`decode_to_16k_mono`] does, from the probe already
    /// made.
    ///
    /// # Errors
    ///
    /// As for [`decode_to_16k_mono`], but for the size and type checks already made.
    pub fn decode(&self, limits: &AudioLimits) -> Result<Pcm16k, Error> {
        guard_panics(|| decode::decode(&self.bytes, &self.probed, limits))
    }
}

/// [`Error::FileTooLarge`] when `bytes` is over `limits.max_file_bytes`.
fn check_file_size(bytes: &[u8], limits: &AudioLimits) -> Result<(), Error> {
    let size = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
    if size > limits.max_file_bytes {
        return Err(Error::FileTooLarge {
            size,
            limit: limits.max_file_bytes,
        });
    }
    Ok(())
}

/// Resamples mono PCM at `rate` Hz to 16 kHz (a copy when `rate` is already 16 kHz), with
/// the same FFT resampler and the same sanitising (NaN/Inf -> 0, clamp to [-1, 1]) as
/// [`decode_to_16k_mono`]. The output has `round(len * 16000 / rate)` samples and no
/// added delay.
///
/// # Errors
///
/// [`Error::AudioDecode`] if `rate` is outside 1 kHz ..= 768 kHz.
pub fn resample_to_16k(samples: &[f32], rate: u32) -> Result<Vec<f32>, Error> {
    guard_panics(|| {
        let mut resampler = resample::StreamResampler::new(rate)?;
        let mut out = Vec::with_capacity(resample::output_len(samples.len(), rate));
        let sanitized: Vec<f32> = samples.iter().copied().map(resample::sanitize).collect();
        resampler.push(&sanitized, &mut out)?;
        resampler.finish(&mut out)?;
        Ok(out)
    })
}

/// Runs `f`, turning a panic into [`Error::AudioDecode`].
fn guard_panics<T>(f: impl FnOnce() -> Result<T, Error>) -> Result<T, Error> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|payload| {
        let what = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".to_owned());
        Err(Error::decode(format!("the decoder panicked: {what}")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_names() {
        let all = [
            AudioFormat::Wav,
            AudioFormat::Webm,
            AudioFormat::Mp3,
            AudioFormat::M4a,
            AudioFormat::Ogg,
        ];
        let names: Vec<_> = all.iter().map(|f| f.name()).collect();
        assert_eq!(names, ["wav", "webm", "mp3", "m4a", "ogg"]);
        assert_eq!(AudioFormat::M4a.to_string(), "m4a");
    }

    #[test]
    fn size_is_checked_before_anything_else() {
        let limits = AudioLimits {
            max_file_bytes: 4,
            ..AudioLimits::default()
        };
        let err = decode_to_16k_mono(b"definitely not audio", &limits).expect_err("too large");
        assert_eq!(err.code(), "file_too_large");
        assert!(matches!(err, Error::FileTooLarge { size: 20, limit: 4 }));
    }

    #[test]
    fn empty_and_text_are_unsupported() {
        let limits = AudioLimits::default();
        for (bytes, detected) in [(&b""[..], "empty"), (b"hello world\n", "text")] {
            match decode_to_16k_mono(bytes, &limits) {
                Err(Error::UnsupportedAudioType { detected: d }) => assert_eq!(d, detected),
                other => panic!("expected unsupported_audio_type, got {other:?}"),
            }
        }
    }

    #[test]
    fn panics_become_audio_decode() {
        let err = guard_panics::<()>(|| panic!("boom")).expect_err("panic");
        assert_eq!(err.code(), "audio_decode_failed");
        assert!(err.to_string().contains("boom"), "{err}");
    }

    #[test]
    fn resample_to_16k_rejects_silly_rates_and_sanitises() {
        assert_eq!(
            resample_to_16k(&[0.0; 10], 0).map_err(|e| e.code().as_str()),
            Err("audio_decode_failed")
        );
        assert_eq!(
            resample_to_16k(&[0.0; 10], 5_000_000).map_err(|e| e.code().as_str()),
            Err("audio_decode_failed")
        );
        let out = resample_to_16k(&[f32::NAN, f32::INFINITY, 2.0, -3.0, 0.5], 16_000).expect("ok");
        assert_eq!(out, [0.0, 0.0, 1.0, -1.0, 0.5]);
    }
}
