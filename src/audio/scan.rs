//! The duration of an upload from its packets, before anything is decoded.
//!
//! Demuxing costs a few microseconds per packet; decoding and resampling cost about a
//! millisecond per second of audio. A file of two hours of silence is 2 MB of small packets:
//! reading them all is cheap, decoding an hour of them before the running check of the
//! decoded duration trips is not. So [`scan`] reads every packet of the chosen track once,
//! without decoding, and refuses the upload as soon as the audio the packets describe passes
//! the limit.
//!
//! The duration of a packet is taken from its content where the codec allows it (an Opus
//! packet's TOC byte gives its exact sample count, whatever the container claims), else
//! from the container (Ogg derives Vorbis packet durations from the block sizes, Matroska
//! from BlockDuration/DefaultDuration, MP4 from its sample table, MP3 and WAV from the frame
//! sizes). The packet timestamps count too: a track whose timestamps span more than the
//! limit is refused (Matroska blocks without durations, e.g. Vorbis in WebM).
//!
//! Work is bounded by the input: more packets than bytes (an MP4 `trun` claiming 2^32
//! empty samples, Matroska lacing of empty frames) is a corrupt file.

use std::time::Instant;

use symphonia::core::errors::Error as SymphoniaError;
use symphonia::core::formats::{FormatReader, Track};
use symphonia::core::packet::Packet;

use crate::error::Error;

use super::AudioLimits;
use super::demux::{check_deadline, codec_is_opus, open_reader, select_track, symphonia_error};
use super::probe::Probed;

/// Opus timestamps and TOC durations count samples at 48 kHz.
pub(crate) const OPUS_CLOCK_RATE: u32 = 48_000;
/// Packets a file may hold beyond one per byte (headers of formats whose packets are
/// tiny). Past `bytes + PACKET_SLACK` packets, the container is describing data it does
/// not have.
pub(crate) const PACKET_SLACK: usize = 4096;

/// Largest number of packets `data` can honestly hold.
pub(crate) fn max_packets(data: &[u8]) -> usize {
    data.len().saturating_add(PACKET_SLACK)
}

/// Most seconds of audio `bytes` of input may describe or decode to
/// ([`AudioLimits::min_bytes_per_sec`]).
pub(crate) fn max_secs_for_bytes(bytes: usize, limits: &AudioLimits) -> f64 {
    if limits.min_bytes_per_sec > 0.0 {
        bytes as f64 / limits.min_bytes_per_sec
    } else {
        f64::INFINITY
    }
}

/// The error for an upload of `bytes` that describes or decodes to `secs` of audio, more
/// than [`max_secs_for_bytes`] allows.
pub(crate) fn too_sparse(bytes: usize, secs: f64, limits: &AudioLimits) -> Error {
    Error::decode(format!(
        "{secs:.1} s of audio in {bytes} bytes ({:.1} bytes per second, at least {} needed): \
         only packets that carry no audio are that small",
        bytes as f64 / secs.max(f64::MIN_POSITIVE),
        limits.min_bytes_per_sec
    ))
}

/// Samples (at 48 kHz) in one Opus packet, from its TOC byte and frame count (RFC 6716,
/// 3.1-3.2). 0 for a packet libopus would reject (empty, over 120 ms).
pub(crate) fn opus_packet_samples(packet: &[u8]) -> u64 {
    const SILK: [u64; 4] = [480, 960, 1920, 2880];
    const HYBRID: [u64; 2] = [480, 960];
    const CELT: [u64; 4] = [120, 240, 480, 960];
    let Some(&toc) = packet.first() else {
        return 0;
    };
    let config = usize::from(toc >> 3);
    let per_frame = match config {
        0..=11 => SILK[config & 3],
        12..=15 => HYBRID[config & 1],
        _ => CELT[config & 3],
    };
    let frames = match toc & 3 {
        0 => 1,
        1 | 2 => 2,
        _ => packet.get(1).map_or(0, |count| u64::from(count & 0x3F)),
    };
    let samples = per_frame * frames;
    if samples > 5760 { 0 } else { samples }
}

/// The clock of the chosen track of one link (a chained Ogg file has several). Counts in
/// integer ticks, converted once: a file of exactly the limit is not refused for a
/// rounding error.
struct Clock {
    track_id: u32,
    /// Opus: the packet durations come from the TOC bytes (48 kHz samples).
    opus: bool,
    /// The track's time base as (numerator, denominator), if any.
    time_base: Option<(u32, u32)>,
    /// Sum of the packet durations: 48 kHz samples for Opus, time-base ticks otherwise.
    content: u64,
    /// First timestamp and furthest end (timestamp + duration), in time-base ticks.
    span: Option<(i64, i64)>,
}

impl Clock {
    fn new(track: &Track) -> Self {
        Clock {
            track_id: track.id,
            opus: codec_is_opus(track),
            time_base: track.time_base.map(|tb| (tb.numer.get(), tb.denom.get())),
            content: 0,
            span: None,
        }
    }

    fn add(&mut self, packet: &Packet) {
        let content = if self.opus {
            opus_packet_samples(&packet.data)
        } else {
            packet.dur.get()
        };
        self.content = self.content.saturating_add(content);
        let start = packet.pts.get();
        let end = start.saturating_add(i64::try_from(packet.dur.get()).unwrap_or(i64::MAX));
        self.span = Some(match self.span {
            Some((first, last)) => (first.min(start), last.max(end)),
            None => (start, end),
        });
    }

    fn ticks_to_secs(&self, ticks: u64) -> f64 {
        self.time_base.map_or(0.0, |(numer, denom)| {
            ticks as f64 * f64::from(numer) / f64::from(denom)
        })
    }

    /// Seconds of audio this link describes: the packets' durations, or the span of their
    /// timestamps if longer.
    fn secs(&self) -> f64 {
        let content = if self.opus {
            self.content as f64 / f64::from(OPUS_CLOCK_RATE)
        } else {
            self.ticks_to_secs(self.content)
        };
        let span = self.span.map_or(0, |(first, last)| {
            u64::try_from(last.saturating_sub(first)).unwrap_or(0)
        });
        content.max(self.ticks_to_secs(span))
    }
}

/// Reads every packet of the chosen track (of every link) without decoding; returns the
/// seconds of audio they describe.
///
/// # Errors
///
/// * [`Error::AudioTooLong`] as soon as the packets read so far pass
///   `limits.max_duration_secs`.
/// * [`Error::AudioDecode`] for what the decoder would meet in the same place: a container
///   error other than the end of the stream, more packets than bytes, the deadline; and for
///   more audio than [`max_secs_for_bytes`] allows (after the whole file was read, so that
///   over-long files are `AudioTooLong` whatever their bytes).
pub(crate) fn scan(
    data: &[u8],
    probed: &Probed,
    limits: &AudioLimits,
    deadline: Option<Instant>,
) -> Result<f64, Error> {
    let mut reader = open_reader(probed.format, data)?;
    let mut clock = Clock::new(select_track(reader.as_ref(), probed)?.0);
    let mut finished_secs = 0.0;
    let max_packets = max_packets(data);
    let mut packets = 0usize;
    loop {
        check_deadline(deadline, limits)?;
        let packet = match reader.next_packet() {
            Ok(Some(packet)) => packet,
            Ok(None) => break,
            Err(SymphoniaError::IoError(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                break;
            }
            Err(SymphoniaError::ResetRequired) => {
                let Some(next) = next_link(reader.as_ref(), probed) else {
                    break;
                };
                finished_secs += clock.secs();
                clock = next;
                continue;
            }
            Err(e) => return Err(symphonia_error("the container is corrupt", e)),
        };
        packets += 1;
        if packets > max_packets {
            return Err(too_many_packets(data.len()));
        }
        if packet.track_id != clock.track_id {
            continue;
        }
        clock.add(&packet);
        if finished_secs + clock.secs() > limits.max_duration_secs {
            return Err(Error::AudioTooLong {
                limit_secs: limits.max_duration_secs,
            });
        }
    }
    let described = finished_secs + clock.secs();
    if described > max_secs_for_bytes(data.len(), limits) {
        return Err(too_sparse(data.len(), described, limits));
    }
    Ok(described)
}

fn next_link(reader: &dyn FormatReader, probed: &Probed) -> Option<Clock> {
    select_track(reader, probed)
        .ok()
        .map(|(track, _)| Clock::new(track))
}

/// The error for a container that describes more packets than it has bytes.
pub(crate) fn too_many_packets(bytes: usize) -> Error {
    Error::decode(format!(
        "the container describes more packets than a {bytes}-byte file can hold"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audio::decode::DECODED_PACKETS;
    use crate::audio::decode_to_16k_mono;

    fn crc32_ogg(data: &[u8]) -> u32 {
        let mut crc = 0u32;
        for &byte in data {
            crc ^= u32::from(byte) << 24;
            for _ in 0..8 {
                crc = if crc & 0x8000_0000 != 0 {
                    (crc << 1) ^ 0x04C1_1DB7
                } else {
                    crc << 1
                };
            }
        }
        crc
    }

    fn ogg_page(serial: u32, flags: u8, granule: u64, seq: u32, packets: &[&[u8]]) -> Vec<u8> {
        let mut lacing = Vec::new();
        for p in packets {
            lacing.extend(std::iter::repeat_n(255u8, p.len() / 255));
            lacing.push(u8::try_from(p.len() % 255).expect("< 255"));
        }
        let mut page = b"OggS\0".to_vec();
        page.push(flags);
        page.extend_from_slice(&granule.to_le_bytes());
        page.extend_from_slice(&serial.to_le_bytes());
        page.extend_from_slice(&seq.to_le_bytes());
        page.extend_from_slice(&[0; 4]);
        page.push(u8::try_from(lacing.len()).expect("<= 255 segments"));
        page.extend_from_slice(&lacing);
        for p in packets {
            page.extend_from_slice(p);
        }
        let crc = crc32_ogg(&page);
        page[22..26].copy_from_slice(&crc.to_le_bytes());
        page
    }

    /// An Ogg Opus stream of `packets` 2-byte packets of 120 ms each (six empty 20 ms CELT
    /// frames, which libopus conceals). `granule_per_packet` is what the pages claim each
    /// packet adds (5760 is the truth).
    fn ogg_opus(serial: u32, packets: usize, granule_per_packet: u64) -> Vec<u8> {
        ogg_opus_padded(serial, packets, granule_per_packet, 0)
    }

    /// [`ogg_opus`] with `padding` bytes of Opus padding in every packet.
    fn ogg_opus_padded(
        serial: u32,
        packets: usize,
        granule_per_packet: u64,
        padding: u8,
    ) -> Vec<u8> {
        let mut head = b"OpusHead\x01\x01".to_vec();
        head.extend_from_slice(&312u16.to_le_bytes());
        head.extend_from_slice(&48_000u32.to_le_bytes());
        head.extend_from_slice(&[0, 0, 0]);
        let tags = b"OpusTags\0\0\0\0\0\0\0\0";
        let mut out = ogg_page(serial, 2, 0, 0, &[&head]);
        out.extend(ogg_page(serial, 0, 0, 1, &[tags]));
        let mut packet = vec![(31 << 3) | 3, 6];
        if padding > 0 {
            packet[1] |= 0x40;
            packet.push(padding - 1);
            packet.resize(1 + usize::from(padding) + 1, 0);
        }
        let packet = packet.as_slice();
        let (mut left, mut granule, mut seq) = (packets, 312u64, 2u32);
        while left > 0 {
            let n = left.min(255);
            left -= n;
            granule += n as u64 * granule_per_packet;
            let flags = if left == 0 { 4 } else { 0 };
            out.extend(ogg_page(serial, flags, granule, seq, &vec![packet; n]));
            seq += 1;
        }
        out
    }

    /// Limits without the floor of bytes per second: the files of these tests are 2-byte
    /// concealment packets (26 B/s), which the floor refuses ([`sparse_uploads_are_refused_before_decoding`]).
    fn limits(secs: f64) -> AudioLimits {
        AudioLimits {
            max_duration_secs: secs,
            min_bytes_per_sec: 0.0,
            ..AudioLimits::default()
        }
    }

    /// Decodes `bytes`; returns the result and the packets handed to a decoder.
    fn decode_counting(bytes: &[u8], limits: &AudioLimits) -> (Result<f64, &'static str>, u64) {
        DECODED_PACKETS.with(|n| n.set(0));
        let result = decode_to_16k_mono(bytes, limits)
            .map(|pcm| pcm.duration_secs())
            .map_err(|e| e.code().as_str());
        (result, DECODED_PACKETS.with(std::cell::Cell::get))
    }

    #[test]
    fn concealed_opus_decodes_to_its_described_length() {
        // 100 packets: 12 s.
        let (result, decoded) = decode_counting(&ogg_opus(7, 100, 5760), &limits(60.0));
        let secs = result.expect("decodes");
        assert!((secs - 12.0).abs() < 0.1, "{secs}");
        assert_eq!(decoded, 100);
    }

    #[test]
    fn opus_packets_count_whatever_the_granules_say() {
        // Two hours of packets whose pages claim 1 sample each: the last granule position
        // declares 0.6 s, the TOC bytes say 2 h. Refused before any packet is decoded.
        let lying = ogg_opus(7, 60_000, 1);
        let (result, decoded) = decode_counting(&lying, &limits(3600.0));
        assert_eq!((result, decoded), (Err("audio_too_long"), 0));
        // The same, honest: refused from the declared duration.
        let (result, decoded) = decode_counting(&ogg_opus(7, 60_000, 5760), &limits(3600.0));
        assert_eq!((result, decoded), (Err("audio_too_long"), 0));
    }

    #[test]
    fn chained_links_add_up() {
        // Two links of 40 min each (each declares 40 min, under the limit): 80 min in all.
        let mut chained = ogg_opus(7, 20_000, 5760);
        chained.extend(ogg_opus(8, 20_000, 5760));
        let (result, decoded) = decode_counting(&chained, &limits(3600.0));
        assert_eq!((result, decoded), (Err("audio_too_long"), 0));
        // Under the limit, both links are decoded.
        let mut short = ogg_opus(7, 50, 5760);
        short.extend(ogg_opus(8, 50, 5760));
        let (result, decoded) = decode_counting(&short, &limits(60.0));
        let secs = result.expect("decodes");
        assert!((secs - 12.0).abs() < 0.1, "{secs}");
        assert_eq!(decoded, 100);
    }

    #[test]
    fn sparse_uploads_are_refused_before_decoding() {
        // 1000 concealment packets: 120 s in about 3 kB (26 B/s), under the 48 B/s floor.
        let sparse = ogg_opus(7, 1000, 5760);
        let (result, decoded) = decode_counting(&sparse, &AudioLimits::default());
        assert_eq!((result, decoded), (Err("audio_decode_failed"), 0));
        let err = decode_to_16k_mono(&sparse, &AudioLimits::default()).expect_err("sparse");
        assert!(err.to_string().contains("120.0 s of audio in"), "{err}");
        // The same packets with 5 bytes of padding each (8 bytes per 120 ms with the lacing,
        // 67 B/s): decoded whole.
        let padded = ogg_opus_padded(7, 1000, 5760, 5);
        assert!(padded.len() as f64 / 120.0 > 60.0);
        let (result, decoded) = decode_counting(&padded, &AudioLimits::default());
        let secs = result.expect("decodes");
        assert!((secs - 120.0).abs() < 0.1, "{secs}");
        assert_eq!(decoded, 1000);
        // Over-long and sparse: too long, whatever the bytes.
        let (result, _) = decode_counting(&ogg_opus(7, 40_000, 5760), &AudioLimits::default());
        assert_eq!(result, Err("audio_too_long"));
    }

    #[test]
    fn opus_toc_gives_the_sample_count() {
        // SILK 20 ms (config 1), one frame.
        assert_eq!(opus_packet_samples(&[1 << 3]), 960);
        // SILK 60 ms (config 3), two frames (code 1): 120 ms.
        assert_eq!(opus_packet_samples(&[(3 << 3) | 1, 0, 0]), 5760);
        // Hybrid 10 ms (config 12), code 2.
        assert_eq!(opus_packet_samples(&[(12 << 3) | 2, 1, 0]), 960);
        // CELT 2.5 ms (config 16), code 3 with 48 frames: 120 ms.
        assert_eq!(opus_packet_samples(&[(16 << 3) | 3, 48]), 5760);
        // CELT 20 ms (config 31), code 3 with 6 frames: 120 ms.
        assert_eq!(opus_packet_samples(&[(31 << 3) | 3, 0x80 | 6]), 5760);
    }

    #[test]
    fn invalid_opus_packets_count_nothing() {
        assert_eq!(opus_packet_samples(&[]), 0);
        // Code 3 without its frame count byte.
        assert_eq!(opus_packet_samples(&[(31 << 3) | 3]), 0);
        // 7 frames of 20 ms: 140 ms, over the 120 ms a packet may hold.
        assert_eq!(opus_packet_samples(&[(31 << 3) | 3, 7]), 0);
        // 0 frames.
        assert_eq!(opus_packet_samples(&[(31 << 3) | 3, 0]), 0);
    }

    #[test]
    fn packets_are_bounded_by_bytes() {
        assert_eq!(max_packets(&[0; 10]), 10 + PACKET_SLACK);
        assert!(too_many_packets(10).to_string().contains("10-byte"));
        assert_eq!(too_many_packets(10).code(), "audio_decode_failed");
    }
}
