//! Demux and decode with symphonia 0.6 (Opus through libopus via
//! `symphonia-adapter-libopus`), downmix, and stream the mono samples into the 16 kHz
//! resampler.
//!
//! The family is already known from [`super::probe`], so the matching symphonia reader is
//! opened directly instead of going through symphonia's probe (AUDIO.md, pitfall 1).
//! Each pitfall of AUDIO.md has its counterpart here:
//!
//! 1. probe depth / junk: readers are opened directly; MP3 starts after the ID3 tags.
//! 2. Opus declared at another rate: Opus is always decoded by libopus at 16 kHz, the rate
//!    we return (libopus band-limits in the MDCT domain; no resampler runs), whatever rate
//!    the container declares.
//! 3. chained Ogg: `ResetRequired` from the reader starts the next link (new track, new
//!    decoder, new resampler if the rate changes).
//! 4. truncated seekable WebM: if the reader cannot open the file seekably (it follows
//!    SeekHead/Cues pointers past the end), it is reopened as a forward-only stream.
//!    Likewise a "fast start" MP4 cut inside its `mdat` gets the box size repaired
//!    ([`super::mp4`]).
//! 5. RF64 is rejected by the probe; HE-AAC with explicit signalling fails in the decoder
//!    and is reported as `AudioDecode`.
//! 6. runaway containers: declared duration checked before decoding, then the duration
//!    the packets describe ([`super::scan`], a pass that does not decode), decoded
//!    duration checked after every packet, no more packets than bytes, a wall-clock
//!    deadline checked before every packet; MP4 sample positions and `trun` counts checked
//!    against the file before symphonia reads them ([`super::mp4`]).
//! 7. `UnexpectedEof` from the reader is the end of the stream.
//! 8. NaN/Inf samples become 0, everything is clamped to [-1, 1].

use std::borrow::Cow;
use std::io::Cursor;
use std::sync::LazyLock;
use std::time::Instant;

use symphonia::core::codecs::CodecParameters;
use symphonia::core::codecs::audio::well_known::{
    CODEC_ID_AAC, CODEC_ID_AC3, CODEC_ID_ALAC, CODEC_ID_EAC3, CODEC_ID_FLAC, CODEC_ID_MP1,
    CODEC_ID_MP2, CODEC_ID_MP3, CODEC_ID_OPUS, CODEC_ID_PCM_F32LE, CODEC_ID_PCM_F64LE,
    CODEC_ID_PCM_S16BE, CODEC_ID_PCM_S16LE, CODEC_ID_PCM_S24BE, CODEC_ID_PCM_S24LE,
    CODEC_ID_PCM_S32BE, CODEC_ID_PCM_S32LE, CODEC_ID_SPEEX, CODEC_ID_VORBIS, CODEC_ID_WMA,
};
use symphonia::core::codecs::audio::{
    AudioCodecId, AudioCodecParameters, AudioDecoder, AudioDecoderOptions,
};
use symphonia::core::codecs::registry::CodecRegistry;
use symphonia::core::errors::Error as SymphoniaError;
use symphonia::core::formats::{FormatOptions, FormatReader, Track};
use symphonia::core::io::{MediaSourceStream, MediaSourceStreamOptions, ReadOnlySource};
use symphonia::core::packet::Packet;
use symphonia::core::units::Duration as SymDuration;
use symphonia::default::formats::{IsoMp4Reader, MkvReader, MpaReader, OggReader, WavReader};
use symphonia_adapter_libopus::OpusDecoder;

use crate::error::Error;

use super::mp4;
use super::probe::Probed;
use super::scan::{OPUS_CLOCK_RATE, PACKET_SLACK, max_packets, scan, too_many_packets};
use super::sink::Sink;
use super::vorbis;
use super::{AudioFormat, AudioLimits, Pcm16k, TARGET_SAMPLE_RATE};

/// More undecodable packets in a row than this fails the decode (about 2 s of AAC or
/// Opus): a few bad packets are skipped, a file that is mostly garbage is not transcribed.
const MAX_CONSECUTIVE_DECODE_ERRORS: u32 = 100;
/// Opus is always decoded at this rate (AUDIO.md, pitfall 2): the rate we return, so no
/// resampler runs, and libopus does less work than at 48 kHz (SILK is not upsampled).
const OPUS_DECODE_RATE: u32 = TARGET_SAMPLE_RATE;

/// symphonia's enabled codecs plus libopus.
static CODECS: LazyLock<CodecRegistry> = LazyLock::new(|| {
    let mut registry = CodecRegistry::new();
    symphonia::default::register_enabled_codecs(&mut registry);
    registry.register_audio_decoder::<OpusDecoder>();
    registry
});

pub(crate) fn symphonia_error(context: impl std::fmt::Display, e: SymphoniaError) -> Error {
    Error::AudioDecode {
        message: format!("{context}: {e}"),
        source: Some(Box::new(e)),
    }
}

/// Decodes `bytes` (already probed) to 16 kHz mono.
pub(crate) fn decode(bytes: &[u8], probed: &Probed, limits: &AudioLimits) -> Result<Pcm16k, Error> {
    let deadline = Instant::now().checked_add(limits.decode_timeout);
    let data = bytes.get(probed.data_start..).unwrap_or_default();
    // MP4 sample tables are checked against the file before symphonia trusts them, and a
    // cut `mdat` is repaired (pitfalls 4 and 6).
    let data = match probed.format {
        AudioFormat::M4a => mp4::prepare(data)?,
        _ => Cow::Borrowed(data),
    };
    let data: &[u8] = &data;
    let mut reader = open_reader(probed.format, data)?;
    let current = open_track(reader.as_ref(), probed)?;

    // WAV headers written by streaming recorders often declare 0xFFFFFFFF bytes of data; the
    // packet scan below counts what is really there instead.
    let declared = declared_secs(&current.track);
    if probed.format != AudioFormat::Wav
        && declared.is_some_and(|secs| secs > limits.max_duration_secs)
    {
        return Err(Error::AudioTooLong {
            limit_secs: limits.max_duration_secs,
        });
    }
    // What the packets describe, read without decoding: an upload of hours of silence is
    // refused here, at the cost of demuxing it.
    let described = scan(data, probed, limits, deadline)?;

    let run = DecodeRun {
        probed,
        limits,
        deadline,
        max_packets: max_packets(data),
    };
    run.decode_packets(
        reader.as_mut(),
        current,
        Sink::new(limits, data.len(), described),
    )
}

/// Fails once `deadline` has passed.
pub(crate) fn check_deadline(deadline: Option<Instant>, limits: &AudioLimits) -> Result<(), Error> {
    if deadline.is_some_and(|d| Instant::now() > d) {
        return Err(Error::decode(format!(
            "decoding took too long (limit {:.1} s)",
            limits.decode_timeout.as_secs_f64()
        )));
    }
    Ok(())
}

/// The bounds of one decode.
struct DecodeRun<'a> {
    probed: &'a Probed,
    limits: &'a AudioLimits,
    deadline: Option<Instant>,
    max_packets: usize,
}

/// Consecutive undecodable packets, and the last error among them.
#[derive(Default)]
struct ErrorRun {
    consecutive: u32,
    last: Option<SymphoniaError>,
}

impl ErrorRun {
    /// An error built from `message` and the last decoder error, if any.
    fn error(self, message: String) -> Error {
        match self.last {
            Some(e) => symphonia_error(message, e),
            None => Error::decode(message),
        }
    }
}

impl DecodeRun<'_> {
    fn decode_packets(
        &self,
        reader: &mut dyn FormatReader,
        mut current: OpenTrack,
        mut sink: Sink,
    ) -> Result<Pcm16k, Error> {
        let mut errors = ErrorRun::default();
        let mut packets = 0usize;
        loop {
            check_deadline(self.deadline, self.limits)?;
            let mut packet = match reader.next_packet() {
                Ok(Some(packet)) => packet,
                Ok(None) => break,
                // A stream cut short ends here (pitfall 7); what was decoded is kept.
                Err(SymphoniaError::IoError(e))
                    if e.kind() == std::io::ErrorKind::UnexpectedEof =>
                {
                    break;
                }
                // The next link of a chained Ogg stream (pitfall 3).
                Err(SymphoniaError::ResetRequired) => {
                    match open_track(reader, self.probed) {
                        Ok(next) => current = next,
                        Err(_) if sink.frames() > 0 => break,
                        Err(e) => return Err(e),
                    }
                    continue;
                }
                Err(e) => return Err(symphonia_error("the container is corrupt", e)),
            };
            packets += 1;
            if packets > self.max_packets {
                return Err(too_many_packets(self.max_packets - PACKET_SLACK));
            }
            if packet.track_id != current.track.id {
                continue;
            }
            if current.opus {
                // Trims count 48 kHz samples; the decoder's buffers are at 16 kHz.
                let scale = u64::from(OPUS_CLOCK_RATE / OPUS_DECODE_RATE);
                packet.trim_start = SymDuration::new(packet.trim_start.get() / scale);
                packet.trim_end = SymDuration::new(packet.trim_end.get() / scale);
            }
            decode_one(&mut current, &packet, &mut sink, &mut errors)?;
            if errors.consecutive > MAX_CONSECUTIVE_DECODE_ERRORS {
                return Err(errors.error(format!(
                    "more than {MAX_CONSECUTIVE_DECODE_ERRORS} consecutive packets could not be decoded"
                )));
            }
        }
        if sink.frames() == 0 {
            let message = format!(
                "no audio could be decoded from the {} file",
                self.probed.format
            );
            return Err(errors.error(message));
        }
        sink.finish(self.probed.format)
    }
}

#[cfg(test)]
thread_local! {
    /// Packets handed to a decoder on this thread: tests check that a refusal came before.
    pub(crate) static DECODED_PACKETS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Decodes one packet into `sink`; undecodable packets are counted in `errors`.
fn decode_one(
    current: &mut OpenTrack,
    packet: &Packet,
    sink: &mut Sink,
    errors: &mut ErrorRun,
) -> Result<(), Error> {
    #[cfg(test)]
    DECODED_PACKETS.with(|n| n.set(n.get() + 1));
    match current.decoder.decode(packet) {
        Ok(buffer) => {
            errors.consecutive = 0;
            sink.push(&buffer)
        }
        // symphonia's AAC decoder reports damaged data as `Unsupported` too: skip such
        // packets like the others; a stream that is really unsupported fails on the cap.
        Err(
            e @ (SymphoniaError::DecodeError(_)
            | SymphoniaError::IoError(_)
            | SymphoniaError::Unsupported(_)),
        ) => {
            errors.consecutive += 1;
            errors.last = Some(e);
            Ok(())
        }
        Err(SymphoniaError::ResetRequired) => {
            errors.consecutive += 1;
            current.decoder.reset();
            Ok(())
        }
        Err(e) => Err(symphonia_error("the audio stream is unusable", e)),
    }
}

/// Opens the symphonia reader of `format` on `data`.
pub(crate) fn open_reader<'a>(
    format: AudioFormat,
    data: &'a [u8],
) -> Result<Box<dyn FormatReader + 'a>, Error> {
    fn boxed<'a, R: FormatReader + 'a>(r: R) -> Box<dyn FormatReader + 'a> {
        Box::new(r)
    }
    let seekable = || MediaSourceStream::new(Box::new(Cursor::new(data)), Default::default());
    let opts = FormatOptions::default();
    let opened = match format {
        AudioFormat::Wav => WavReader::try_new(seekable(), opts).map(boxed),
        AudioFormat::Mp3 => MpaReader::try_new(seekable(), opts).map(boxed),
        AudioFormat::M4a => IsoMp4Reader::try_new(seekable(), opts).map(boxed),
        AudioFormat::Ogg => OggReader::try_new(seekable(), opts).map(boxed),
        AudioFormat::Webm => match MkvReader::try_new(seekable(), opts.clone()) {
            Ok(reader) => Ok(boxed(reader)),
            // A truncated seekable WebM points (SeekHead, Cues) past its end; read forward
            // only, as a live stream is read (pitfall 4).
            Err(first) => {
                let forward = MediaSourceStream::new(
                    Box::new(ReadOnlySource::new(Cursor::new(data))),
                    MediaSourceStreamOptions::default(),
                );
                MkvReader::try_new(forward, opts)
                    .map(boxed)
                    .map_err(|_| first)
            }
        },
    };
    opened.map_err(|e| {
        let context = match &e {
            SymphoniaError::IoError(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => {
                format!("the {format} file is truncated before any audio")
            }
            _ => format!("not a readable {format} file"),
        };
        symphonia_error(context, e)
    })
}

/// The selected audio track and its decoder.
struct OpenTrack {
    track: Track,
    decoder: Box<dyn AudioDecoder>,
    /// Opus: the packets' trims are in 48 kHz samples, the decoder runs at 16 kHz.
    opus: bool,
}

/// Whether `track` carries Opus.
pub(crate) fn codec_is_opus(track: &Track) -> bool {
    audio_params(track).is_some_and(|p| p.codec == CODEC_ID_OPUS)
}

fn audio_params(track: &Track) -> Option<&AudioCodecParameters> {
    match &track.codec_params {
        Some(CodecParameters::Audio(params)) => Some(params),
        _ => None,
    }
}

/// Codecs a Matroska (not WebM) file may carry to be accepted as the webm family: the WebM
/// codecs, and PCM as Chrome's MediaRecorder writes it.
fn is_webm_codec(codec: AudioCodecId) -> bool {
    [
        CODEC_ID_OPUS,
        CODEC_ID_VORBIS,
        CODEC_ID_PCM_F32LE,
        CODEC_ID_PCM_F64LE,
        CODEC_ID_PCM_S16LE,
        CODEC_ID_PCM_S24LE,
        CODEC_ID_PCM_S32LE,
        CODEC_ID_PCM_S16BE,
        CODEC_ID_PCM_S24BE,
        CODEC_ID_PCM_S32BE,
    ]
    .contains(&codec)
}

fn codec_name(codec: AudioCodecId) -> String {
    const NAMES: &[(AudioCodecId, &str)] = &[
        (CODEC_ID_AAC, "aac"),
        (CODEC_ID_AC3, "ac3"),
        (CODEC_ID_EAC3, "eac3"),
        (CODEC_ID_ALAC, "alac"),
        (CODEC_ID_FLAC, "flac"),
        (CODEC_ID_MP1, "mp1"),
        (CODEC_ID_MP2, "mp2"),
        (CODEC_ID_MP3, "mp3"),
        (CODEC_ID_OPUS, "opus"),
        (CODEC_ID_SPEEX, "speex"),
        (CODEC_ID_VORBIS, "vorbis"),
        (CODEC_ID_WMA, "wma"),
    ];
    NAMES
        .iter()
        .find(|(id, _)| *id == codec)
        .map(|(_, name)| (*name).to_owned())
        .or_else(|| {
            CODECS
                .get_audio_decoder(codec)
                .map(|d| d.codec.info.short_name.to_owned())
        })
        .unwrap_or_else(|| format!("codec {codec}"))
}

/// The first audio track we can decode, and its codec parameters.
pub(crate) fn select_track<'r>(
    reader: &'r dyn FormatReader,
    probed: &Probed,
) -> Result<(&'r Track, &'r AudioCodecParameters), Error> {
    let audio: Vec<(&Track, &AudioCodecParameters)> = reader
        .tracks()
        .iter()
        .filter_map(|t| audio_params(t).map(|p| (t, p)))
        .collect();
    let Some(&(_, first_params)) = audio.first() else {
        return Err(Error::decode(format!(
            "the {} file has no audio track",
            probed.format
        )));
    };
    let allowed = |codec| !probed.matroska || is_webm_codec(codec);
    let chosen = audio
        .iter()
        .find(|(_, p)| allowed(p.codec) && CODECS.get_audio_decoder(p.codec).is_some());
    let Some(&chosen) = chosen else {
        let name = codec_name(first_params.codec);
        return Err(if probed.matroska && !is_webm_codec(first_params.codec) {
            Error::UnsupportedAudioType {
                detected: format!("matroska ({name})"),
            }
        } else {
            Error::decode(format!(
                "the {} file's audio codec ({name}) is not supported",
                probed.format
            ))
        });
    };
    Ok(chosen)
}

/// Picks the first audio track we can decode and opens its decoder.
fn open_track(reader: &dyn FormatReader, probed: &Probed) -> Result<OpenTrack, Error> {
    let (track, params) = select_track(reader, probed)?;
    let mut params = params.clone();
    if params.codec == CODEC_ID_VORBIS
        && let Some(extra_data) = &params.extra_data
    {
        // symphonia's Vorbis decoder panics on codewords over 32 bits.
        vorbis::check_setup(extra_data)?;
    }
    let opus = params.codec == CODEC_ID_OPUS;
    if opus {
        // Whatever the container declares (pitfall 2).
        params.sample_rate = Some(OPUS_DECODE_RATE);
    }
    let decoder = CODECS
        .make_audio_decoder(&params, &AudioDecoderOptions::default())
        .map_err(|e| {
            symphonia_error(
                format!(
                    "the {} decoder could not be opened",
                    codec_name(params.codec)
                ),
                e,
            )
        })?;
    Ok(OpenTrack {
        track: track.clone(),
        decoder,
        opus,
    })
}

/// The duration the container declares for `track`, if any.
fn declared_secs(track: &Track) -> Option<f64> {
    if let (Some(time_base), Some(duration)) = (track.time_base, track.duration) {
        // Too long to be represented: longer than any limit.
        return Some(
            time_base
                .calc_duration(duration)
                .map_or(f64::INFINITY, |t| t.as_secs_f64()),
        );
    }
    let frames = track.num_frames?;
    let params = audio_params(track)?;
    let rate = if params.codec == CODEC_ID_OPUS {
        OPUS_CLOCK_RATE
    } else {
        params.sample_rate.filter(|&r| r > 0)?
    };
    Some(frames as f64 / f64::from(rate))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A canonical 44-byte-header float WAV.
    fn float_wav(rate: u32, channels: u16, samples: &[f32]) -> Vec<u8> {
        let data_len = u32::try_from(samples.len() * 4).expect("small");
        let mut w = Vec::new();
        w.extend_from_slice(b"RIFF");
        w.extend_from_slice(&(36 + data_len).to_le_bytes());
        w.extend_from_slice(b"WAVEfmt ");
        w.extend_from_slice(&16u32.to_le_bytes());
        w.extend_from_slice(&3u16.to_le_bytes()); // IEEE float
        w.extend_from_slice(&channels.to_le_bytes());
        w.extend_from_slice(&rate.to_le_bytes());
        w.extend_from_slice(&(rate * 4 * u32::from(channels)).to_le_bytes());
        w.extend_from_slice(&(4 * channels).to_le_bytes());
        w.extend_from_slice(&32u16.to_le_bytes());
        w.extend_from_slice(b"data");
        w.extend_from_slice(&data_len.to_le_bytes());
        for s in samples {
            w.extend_from_slice(&s.to_le_bytes());
        }
        w
    }

    fn decode_bytes(bytes: &[u8], limits: &AudioLimits) -> Result<Pcm16k, Error> {
        let probed = super::super::probe::probe(bytes)?;
        decode(bytes, &probed, limits)
    }

    #[test]
    fn stereo_is_averaged_to_mono() {
        // Left 0.5, right -0.1 (constant): mono is 0.2.
        let frames: Vec<f32> = (0..1600).flat_map(|_| [0.5f32, -0.1]).collect();
        let pcm =
            decode_bytes(&float_wav(16_000, 2, &frames), &AudioLimits::default()).expect("decodes");
        assert_eq!(pcm.source_channels, 2);
        assert_eq!(pcm.source_sample_rate, 16_000);
        assert_eq!(pcm.samples.len(), 1600);
        assert!(pcm.samples.iter().all(|&s| (s - 0.2).abs() < 1e-6));
        // Opposite channels cancel.
        let frames: Vec<f32> = (0..1600).flat_map(|_| [0.3f32, -0.3]).collect();
        let pcm =
            decode_bytes(&float_wav(16_000, 2, &frames), &AudioLimits::default()).expect("decodes");
        assert!(pcm.samples.iter().all(|&s| s.abs() < 1e-6));
    }

    #[test]
    fn nan_inf_and_overs_are_sanitised() {
        let samples = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 3.0, -2.0, 0.25];
        let long: Vec<f32> = samples.iter().copied().cycle().take(4800).collect();
        for rate in [16_000, 48_000] {
            let pcm =
                decode_bytes(&float_wav(rate, 1, &long), &AudioLimits::default()).expect("decodes");
            assert!(
                pcm.samples
                    .iter()
                    .all(|s| s.is_finite() && (-1.0..=1.0).contains(s)),
                "rate {rate}"
            );
        }
        let pcm = decode_bytes(&float_wav(16_000, 1, &samples), &AudioLimits::default())
            .expect("decodes");
        assert_eq!(pcm.samples, [0.0, 0.0, 0.0, 1.0, -1.0, 0.25]);
    }

    #[test]
    fn decoded_duration_is_capped() {
        let wav = float_wav(16_000, 1, &vec![0.1; 16_000 * 3]);
        let limits = AudioLimits {
            max_duration_secs: 2.0,
            ..AudioLimits::default()
        };
        let err = decode_bytes(&wav, &limits).expect_err("too long");
        assert_eq!(err.code(), "audio_too_long");
        let limits = AudioLimits {
            max_duration_secs: 3.0,
            ..AudioLimits::default()
        };
        assert!(decode_bytes(&wav, &limits).is_ok());
    }

    #[test]
    fn wav_over_the_limit_is_refused_before_decoding() {
        // A WAV header may declare anything (0xFFFFFFFF when streamed); the packet scan
        // counts the data that is there.
        let wav = float_wav(16_000, 1, &vec![0.1; 16_000 * 3]);
        let limits = |secs| AudioLimits {
            max_duration_secs: secs,
            ..AudioLimits::default()
        };
        DECODED_PACKETS.with(|n| n.set(0));
        let err = decode_bytes(&wav, &limits(2.0)).expect_err("too long");
        assert_eq!(err.code(), "audio_too_long");
        assert_eq!(DECODED_PACKETS.with(std::cell::Cell::get), 0);
        // Exactly at the limit: accepted, every packet decoded.
        let pcm = decode_bytes(&wav, &limits(3.0)).expect("at the limit");
        assert_eq!(pcm.samples.len(), 48_000);
        assert!(DECODED_PACKETS.with(std::cell::Cell::get) > 0);
    }

    #[test]
    fn deadline_is_enforced() {
        let wav = float_wav(16_000, 1, &vec![0.1; 16_000]);
        let limits = AudioLimits {
            decode_timeout: std::time::Duration::ZERO,
            ..AudioLimits::default()
        };
        let err = decode_bytes(&wav, &limits).expect_err("deadline");
        assert_eq!(err.code(), "audio_decode_failed");
        assert!(err.to_string().contains("took too long"), "{err}");
    }

    #[test]
    fn header_only_wav_is_a_decode_error() {
        let wav = float_wav(16_000, 1, &[]);
        let err = decode_bytes(&wav, &AudioLimits::default()).expect_err("nothing to decode");
        assert_eq!(err.code(), "audio_decode_failed");
        let err = decode_bytes(&wav[..20], &AudioLimits::default()).expect_err("cut header");
        assert_eq!(err.code(), "audio_decode_failed");
    }

    #[test]
    fn absurd_sample_rates_are_decode_errors() {
        for rate in [1, 900, 1_000_000] {
            let err = decode_bytes(&float_wav(rate, 1, &[0.1; 64]), &AudioLimits::default())
                .expect_err("absurd rate");
            assert_eq!(err.code(), "audio_decode_failed", "rate {rate}");
        }
    }

    #[test]
    fn registry_has_opus_and_the_symphonia_codecs() {
        for codec in [
            CODEC_ID_OPUS,
            CODEC_ID_VORBIS,
            CODEC_ID_AAC,
            CODEC_ID_MP3,
            CODEC_ID_PCM_S16LE,
        ] {
            assert!(
                CODECS.get_audio_decoder(codec).is_some(),
                "{}",
                codec_name(codec)
            );
        }
        assert!(CODECS.get_audio_decoder(CODEC_ID_FLAC).is_none());
    }
}
