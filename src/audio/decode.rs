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
use std::time::Instant;

use symphonia::core::codecs::audio::well_known::{CODEC_ID_OPUS, CODEC_ID_VORBIS};
use symphonia::core::codecs::audio::{AudioDecoder, AudioDecoderOptions};
use symphonia::core::errors::Error as SymphoniaError;
use symphonia::core::formats::{FormatReader, Track};
use symphonia::core::packet::Packet;
use symphonia::core::units::Duration as SymDuration;

use crate::error::Error;

use super::demux::{
    CODECS, audio_params, check_deadline, codec_name, open_reader, select_track, symphonia_error,
};
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

/// The selected audio track and its decoder.
struct OpenTrack {
    track: Track,
    decoder: Box<dyn AudioDecoder>,
    /// Opus: the packets' trims are in 48 kHz samples, the decoder runs at 16 kHz.
    opus: bool,
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
}
