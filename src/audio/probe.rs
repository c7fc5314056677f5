//! Container family from the leading bytes (magic numbers), never from a file name or a
//! Content-Type.
//!
//! symphonia's own probe scans up to 1 MB for any marker it knows, so junk in front of
//! valid data is accepted and an MP3 whose ID3v2 tag is larger than the probe depth is
//! rejected (AUDIO.md, pitfall 1). This module decides the family from the first bytes,
//! and [`super::decode`] then opens the matching symphonia reader directly, so symphonia's
//! probe is never used.
//!
//! | leading bytes | family | notes |
//! |---|---|---|
//! | `RIFF....WAVE` | wav | `RF64`, `BW64`, `RIFX` and other RIFF forms are rejected |
//! | `1A45DFA3` EBML, DocType `webm` | webm | |
//! | EBML, DocType `matroska` | webm | the codec is checked when decoding: Opus, Vorbis or PCM only |
//! | `OggS`, a BOS page with `OpusHead` or `\x01vorbis` | ogg | FLAC, Speex, Theora-only, ... rejected |
//! | `....ftyp` | m4a | any ISO-BMFF brand except HEIF/AVIF images |
//! | `ID3` tag(s), then MPEG audio | mp3 | the tag is skipped here, whatever its size |
//! | MPEG-1/2/2.5 Layer III frame sync | mp3 | three consecutive valid frames (or all that fit) |

use crate::error::Error;

use super::AudioFormat;

/// What the leading bytes say about an upload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Probed {
    /// The supported family.
    pub format: AudioFormat,
    /// Where the container starts: after any ID3v2 tags for MP3, 0 otherwise.
    pub data_start: usize,
    /// An EBML file whose DocType is `matroska` (not `webm`): only WebM codecs are accepted.
    pub matroska: bool,
}

impl Probed {
    fn new(format: AudioFormat) -> Self {
        Probed {
            format,
            data_start: 0,
            matroska: false,
        }
    }
}

/// How far past the ID3v2 tags we look for the first MPEG frame (zero padding, junk).
const MAX_MP3_SYNC_SEARCH: usize = 64 * 1024;
/// Consecutive valid MPEG frames required before bytes are taken for MP3.
const MPEG_FRAMES_REQUIRED: usize = 3;
/// Bytes looked at when deciding whether an upload is text.
const TEXT_SNIFF_LEN: usize = 512;

fn unsupported(detected: impl Into<String>) -> Error {
    Error::UnsupportedAudioType {
        detected: detected.into(),
    }
}

/// Decides the container family of `bytes`. See the module documentation for the rules.
///
/// An empty input is `UnsupportedAudioType { detected: "empty" }`: there is no container
/// at all, so the upload is not of any supported type.
pub(crate) fn probe(bytes: &[u8]) -> Result<Probed, Error> {
    if bytes.is_empty() {
        return Err(unsupported("empty"));
    }

    // RIFF family.
    match bytes.get(..4) {
        Some(b"RIFF") => {
            return match bytes.get(8..12) {
                Some(b"WAVE") => Ok(Probed::new(AudioFormat::Wav)),
                // Cut inside the RIFF header: a (truncated) wav for all we know.
                None => Ok(Probed::new(AudioFormat::Wav)),
                Some(b"AVI ") => Err(unsupported("avi")),
                Some(b"WEBP") => Err(unsupported("image")),
                Some(_) => Err(unsupported("riff")),
            };
        }
        Some(b"RF64") | Some(b"BW64") => return Err(unsupported("rf64 (64-bit wav)")),
        Some(b"RIFX") => return Err(unsupported("rifx (big-endian wav)")),
        _ => {}
    }

    if bytes.starts_with(&[0x1A, 0x45, 0xDF, 0xA3]) {
        return probe_ebml(bytes);
    }
    if bytes.starts_with(b"OggS") {
        return probe_ogg(bytes);
    }
    if bytes.get(4..8) == Some(b"ftyp") {
        return probe_isobmff(bytes);
    }
    if let Some(tag_end) = id3v2_tags_end(bytes) {
        return probe_after_id3(bytes, tag_end);
    }
    if let Some(run) = mpeg_run(bytes, 0) {
        return match run.layer {
            3 => Ok(Probed::new(AudioFormat::Mp3)),
            2 => Err(unsupported("mp2")),
            _ => Err(unsupported("mp1")),
        };
    }
    Err(unsupported(other_kind(bytes)))
}

/// EBML: read the header's DocType.
fn probe_ebml(bytes: &[u8]) -> Result<Probed, Error> {
    let doc_type = match ebml_doc_type(bytes) {
        // Cut inside the EBML header: a (truncated) webm for all we know.
        EbmlDocType::Truncated => return Ok(Probed::new(AudioFormat::Webm)),
        EbmlDocType::Invalid => return Err(unsupported("ebml")),
        EbmlDocType::Found(doc_type) => doc_type,
    };
    match doc_type.as_str() {
        "webm" => Ok(Probed::new(AudioFormat::Webm)),
        "matroska" => Ok(Probed {
            matroska: true,
            ..Probed::new(AudioFormat::Webm)
        }),
        other => Err(unsupported(format!("ebml ({})", printable(other)))),
    }
}

enum EbmlDocType {
    Found(String),
    Truncated,
    Invalid,
}

/// Reads an EBML variable-length integer at `pos`: `(value, length)`. For element IDs the
/// marker bit is kept (`keep_marker`), for sizes it is removed. `None` if cut or invalid.
pub(super) fn ebml_vint(bytes: &[u8], pos: usize, keep_marker: bool) -> Option<(u64, usize)> {
    let first = *bytes.get(pos)?;
    if first == 0 {
        return None;
    }
    let len = first.leading_zeros() as usize + 1;
    let tail = bytes.get(pos + 1..pos + len)?;
    let mut value = if keep_marker {
        u64::from(first)
    } else {
        u64::from(first) & (0xFF >> len)
    };
    for &b in tail {
        value = (value << 8) | u64::from(b);
    }
    Some((value, len))
}

fn ebml_doc_type(bytes: &[u8]) -> EbmlDocType {
    const DOC_TYPE_ID: u64 = 0x4282;
    // The EBML header element: ID (4 bytes, already matched), then its size.
    let Some((size, size_len)) = ebml_vint(bytes, 4, false) else {
        return if bytes.len() < 12 {
            EbmlDocType::Truncated
        } else {
            EbmlDocType::Invalid
        };
    };
    let body_start = 4 + size_len;
    let unknown_size = size == (1u64 << (7 * size_len)) - 1;
    let body_end = if unknown_size {
        bytes.len()
    } else {
        usize::try_from(size)
            .ok()
            .and_then(|s| body_start.checked_add(s))
            .unwrap_or(usize::MAX)
    };
    let mut pos = body_start;
    // The header holds a handful of small children; bound the walk anyway.
    for _ in 0..64 {
        if pos >= body_end {
            // Header fully read without a DocType: the specification's default.
            return EbmlDocType::Found("matroska".to_owned());
        }
        let Some((id, id_len)) = ebml_vint(bytes, pos, true) else {
            return cut_or_invalid(bytes, pos);
        };
        let Some((len, len_len)) = ebml_vint(bytes, pos + id_len, false) else {
            return cut_or_invalid(bytes, pos + id_len);
        };
        let data = pos + id_len + len_len;
        let Some(end) = usize::try_from(len).ok().and_then(|l| data.checked_add(l)) else {
            return EbmlDocType::Invalid;
        };
        if id == DOC_TYPE_ID {
            return match bytes.get(data..end) {
                Some(raw) => {
                    let text = String::from_utf8_lossy(raw);
                    EbmlDocType::Found(text.trim_end_matches('\0').to_owned())
                }
                None => EbmlDocType::Truncated,
            };
        }
        pos = end;
    }
    EbmlDocType::Invalid
}

fn cut_or_invalid(bytes: &[u8], pos: usize) -> EbmlDocType {
    if pos + 8 > bytes.len() {
        EbmlDocType::Truncated
    } else {
        EbmlDocType::Invalid
    }
}

/// Ogg: look at the first packet of every beginning-of-stream page (they all come first).
fn probe_ogg(bytes: &[u8]) -> Result<Probed, Error> {
    const HEADER_LEN: usize = 27;
    const BOS: u8 = 0x02;
    let mut pos = 0;
    let mut others = Vec::new();
    loop {
        let Some(header) = bytes.get(pos..pos + HEADER_LEN) else {
            // Cut before the codec could be seen: a (truncated) ogg for all we know.
            return ogg_verdict(&others, true);
        };
        if &header[..4] != b"OggS" || header[5] & BOS == 0 {
            return ogg_verdict(&others, false);
        }
        let n_segments = usize::from(header[26]);
        let Some(lacing) = bytes.get(pos + HEADER_LEN..pos + HEADER_LEN + n_segments) else {
            return ogg_verdict(&others, true);
        };
        let data = pos + HEADER_LEN + n_segments;
        let first_packet_len: usize = lacing
            .iter()
            .position(|&l| l < 255)
            .map_or(lacing.len() * 255, |i| i * 255 + usize::from(lacing[i]));
        let page_len: usize = lacing.iter().map(|&l| usize::from(l)).sum();
        let packet = &bytes[data.min(bytes.len())..(data + first_packet_len).min(bytes.len())];
        match ogg_codec(packet) {
            OggCodec::Supported => return Ok(Probed::new(AudioFormat::Ogg)),
            OggCodec::Skeleton => {}
            OggCodec::Other(name) => others.push(name),
            OggCodec::Cut => return ogg_verdict(&others, true),
        }
        pos = data + page_len;
        if others.len() > 16 {
            return ogg_verdict(&others, false);
        }
    }
}

fn ogg_verdict(others: &[&'static str], cut: bool) -> Result<Probed, Error> {
    match others.first() {
        Some(name) => Err(unsupported(format!("ogg ({name})"))),
        None if cut => Ok(Probed::new(AudioFormat::Ogg)),
        None => Err(unsupported("ogg (no audio stream)")),
    }
}

enum OggCodec {
    Supported,
    Skeleton,
    Other(&'static str),
    Cut,
}

fn ogg_codec(packet: &[u8]) -> OggCodec {
    const KNOWN: &[(&[u8], &str)] = &[
        (b"\x7fFLAC", "flac"),
        (b"fLaC", "flac"),
        (b"Speex   ", "speex"),
        (b"\x80theora", "theora"),
        (b"\x80kate", "kate"),
        (b"PCM     ", "pcm"),
        (b"CELT    ", "celt"),
        (b"\x4fVP80", "vp8"),
        (b"BBCD", "dirac"),
    ];
    if packet.starts_with(b"OpusHead") || packet.starts_with(b"\x01vorbis") {
        return OggCodec::Supported;
    }
    if packet.starts_with(b"fishead\0") || packet.starts_with(b"fisbone\0") {
        return OggCodec::Skeleton;
    }
    if packet.len() < 8 {
        return OggCodec::Cut;
    }
    KNOWN
        .iter()
        .find(|(magic, _)| packet.starts_with(magic))
        .map_or(OggCodec::Other("unknown codec"), |(_, name)| {
            OggCodec::Other(name)
        })
}

/// ISO base media (`ftyp` box): m4a/mp4/3gp/mov, except still-image brands.
fn probe_isobmff(bytes: &[u8]) -> Result<Probed, Error> {
    const IMAGE_BRANDS: &[&[u8; 4]] = &[
        b"heic", b"heix", b"heim", b"heis", b"hevc", b"hevx", b"mif1", b"msf1", b"avif", b"avis",
        b"avci", b"jpgs", b"crx ",
    ];
    match bytes.get(8..12) {
        Some(brand) if IMAGE_BRANDS.iter().any(|b| b.as_slice() == brand) => {
            Err(unsupported("image (heif/avif)"))
        }
        _ => Ok(Probed::new(AudioFormat::M4a)),
    }
}

/// End of the ID3v2 tag(s) at the start of `bytes`, if it starts with a valid one.
fn id3v2_tags_end(bytes: &[u8]) -> Option<usize> {
    let mut pos = 0;
    // Some encoders write several tags back to back.
    for _ in 0..8 {
        let Some(end) = id3v2_tag_at(bytes, pos) else {
            break;
        };
        pos = end;
    }
    (pos > 0).then_some(pos)
}

fn id3v2_tag_at(bytes: &[u8], pos: usize) -> Option<usize> {
    let h = bytes.get(pos..pos + 10)?;
    let valid = &h[..3] == b"ID3"
        && (2..=4).contains(&h[3])
        && h[4] != 0xFF
        && h[6..10].iter().all(|&b| b < 0x80);
    if !valid {
        return None;
    }
    let size = (usize::from(h[6]) << 21)
        | (usize::from(h[7]) << 14)
        | (usize::from(h[8]) << 7)
        | usize::from(h[9]);
    let footer = if h[3] == 4 && h[5] & 0x10 != 0 { 10 } else { 0 };
    Some(pos + 10 + size + footer)
}

fn probe_after_id3(bytes: &[u8], tag_end: usize) -> Result<Probed, Error> {
    let mp3 = |data_start| {
        Ok(Probed {
            data_start,
            ..Probed::new(AudioFormat::Mp3)
        })
    };
    // Skip the zero padding some taggers put after the tag.
    let start = bytes
        .get(tag_end..)
        .and_then(|rest| rest.iter().position(|&b| b != 0))
        .map_or(bytes.len(), |p| tag_end + p);
    let rest = bytes.get(start..).unwrap_or(&[]);
    if rest.starts_with(b"fLaC") {
        return Err(unsupported("flac"));
    }
    if is_adts(rest) {
        return Err(unsupported("aac (adts)"));
    }
    let search_end = bytes.len().min(start.saturating_add(MAX_MP3_SYNC_SEARCH));
    for pos in start..search_end {
        if bytes[pos] != 0xFF {
            continue;
        }
        if let Some(run) = mpeg_run(bytes, pos) {
            return match run.layer {
                3 => mp3(pos),
                2 => Err(unsupported("mp2")),
                _ => Err(unsupported("mp1")),
            };
        }
    }
    // An ID3 tag and no recognisable audio after it (cut, or corrupt): the decoder will say.
    mp3(start.min(bytes.len()))
}

/// A run of consecutive, consistent MPEG audio frames starting at `pos`.
#[derive(Debug, PartialEq, Eq)]
struct MpegRun {
    layer: u8,
}

fn mpeg_run(bytes: &[u8], pos: usize) -> Option<MpegRun> {
    let first = mpeg_frame_header(bytes.get(pos..pos + 4)?)?;
    let mut frames = 1;
    let mut next = pos + first.len;
    while frames < MPEG_FRAMES_REQUIRED {
        let Some(h) = bytes.get(next..next + 4) else {
            // The data ends before the next header: all frames that fit were valid.
            return Some(MpegRun { layer: first.layer });
        };
        let frame = mpeg_frame_header(h)?;
        if frame.layer != first.layer
            || frame.version != first.version
            || frame.sample_rate != first.sample_rate
        {
            return None;
        }
        frames += 1;
        next += frame.len;
    }
    Some(MpegRun { layer: first.layer })
}

#[derive(Debug, Clone, Copy)]
pub(super) struct MpegFrame {
    /// 1, 2 or 3.
    layer: u8,
    /// 1 (MPEG-1), 2 (MPEG-2) or 25 (MPEG-2.5).
    pub(super) version: u8,
    sample_rate: u32,
    /// Whole frame length in bytes, header included.
    pub(super) len: usize,
}

/// Parses and validates a 4-byte MPEG audio frame header (free-format streams are refused).
pub(super) fn mpeg_frame_header(h: &[u8]) -> Option<MpegFrame> {
    const BITRATES_V1: [[u32; 14]; 3] = [
        [
            32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448,
        ],
        [
            32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384,
        ],
        [
            32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320,
        ],
    ];
    const BITRATES_V2: [[u32; 14]; 3] = [
        [
            32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256,
        ],
        [8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],
        [8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],
    ];
    let &[b0, b1, b2, b3] = h else { return None };
    if b0 != 0xFF || b1 & 0xE0 != 0xE0 {
        return None;
    }
    let version = match (b1 >> 3) & 0b11 {
        0 => 25,
        2 => 2,
        3 => 1,
        _ => return None,
    };
    let layer = match (b1 >> 1) & 0b11 {
        1 => 3,
        2 => 2,
        3 => 1,
        _ => return None,
    };
    let bitrate_index = usize::from(b2 >> 4);
    if bitrate_index == 0 || bitrate_index == 15 {
        return None;
    }
    let rate_index = usize::from((b2 >> 2) & 0b11);
    if rate_index == 3 || b3 & 0b11 == 0b10 {
        return None;
    }
    let padding = u32::from((b2 >> 1) & 1);
    let layer_row = usize::from(layer - 1);
    let kbps = if version == 1 {
        BITRATES_V1[layer_row][bitrate_index - 1]
    } else {
        BITRATES_V2[layer_row][bitrate_index - 1]
    };
    let sample_rate = [44_100, 48_000, 32_000][rate_index]
        / match version {
            1 => 1,
            2 => 2,
            _ => 4,
        };
    let bps = kbps * 1000;
    let len = match layer {
        1 => (12 * bps / sample_rate + padding) * 4,
        2 => 144 * bps / sample_rate + padding,
        _ if version == 1 => 144 * bps / sample_rate + padding,
        _ => 72 * bps / sample_rate + padding,
    };
    Some(MpegFrame {
        layer,
        version,
        sample_rate,
        len: len as usize,
    })
}

fn is_adts(bytes: &[u8]) -> bool {
    // 12-bit sync, layer 00 (what tells ADTS from MPEG audio), valid sampling index.
    matches!(bytes, [0xFF, b1, b2, ..] if b1 & 0xF6 == 0xF0 && (b2 >> 2) & 0x0F < 13)
}

/// A name for what the bytes are when they are not a supported family.
fn other_kind(bytes: &[u8]) -> String {
    const MAGIC: &[(usize, &[u8], &str)] = &[
        (0, b"fLaC", "flac"),
        (0, b"#!AMR", "amr"),
        (0, b"caff", "caf"),
        (0, b".snd", "au"),
        (0, b"MThd", "midi"),
        (0, b"wvpk", "wavpack"),
        (0, b"MAC ", "ape"),
        (0, b"MPCK", "musepack"),
        (0, b"TTA1", "tta"),
        (0, b"\x30\x26\xB2\x75\x8E\x66\xCF\x11", "asf (wma)"),
        (0, b"%PDF", "pdf"),
        (0, b"\x89PNG", "image"),
        (0, b"\xFF\xD8\xFF", "image"),
        (0, b"GIF8", "image"),
        (0, b"PK\x03\x04", "zip"),
        (0, b"\x1F\x8B", "gzip"),
        (0, b"\x7FELF", "executable"),
    ];
    if bytes.starts_with(b"FORM") && matches!(bytes.get(8..12), Some(b"AIFF") | Some(b"AIFC")) {
        return "aiff".to_owned();
    }
    if let Some((_, _, name)) = MAGIC
        .iter()
        .find(|(at, magic, _)| bytes.get(*at..).is_some_and(|b| b.starts_with(magic)))
    {
        return (*name).to_owned();
    }
    if is_adts(bytes) {
        return "aac (adts)".to_owned();
    }
    if is_text(bytes) {
        return "text".to_owned();
    }
    "unknown".to_owned()
}

/// UTF-8 (a character cut at the sniff boundary is fine) without control characters other
/// than whitespace.
fn is_text(bytes: &[u8]) -> bool {
    let head = &bytes[..bytes.len().min(TEXT_SNIFF_LEN)];
    let head = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    let text = match std::str::from_utf8(head) {
        Ok(text) => text,
        // Only a multi-byte character cut by the sniff window is acceptable.
        Err(e) if e.error_len().is_none() && head.len() < bytes.len() => {
            match std::str::from_utf8(&head[..e.valid_up_to()]) {
                Ok(text) => text,
                Err(_) => return false,
            }
        }
        Err(_) => return false,
    };
    !text.is_empty()
        && text
            .chars()
            .all(|c| !c.is_control() || matches!(c, '\t' | '\n' | '\r' | '\x0C'))
}

/// Keeps a container-declared name short and printable for an error message.
fn printable(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_ascii_graphic() || *c == ' ')
        .take(32)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn detected(bytes: &[u8]) -> String {
        match probe(bytes) {
            Err(Error::UnsupportedAudioType { detected }) => detected,
            other => panic!("expected UnsupportedAudioType, got {other:?}"),
        }
    }

    fn format(bytes: &[u8]) -> AudioFormat {
        match probe(bytes) {
            Ok(p) => p.format,
            Err(e) => panic!("expected a supported format, got {e:?}"),
        }
    }

    /// A valid MPEG-1 Layer III header: 128 kbps, 44.1 kHz, no padding (417-byte frames).
    const MP3_HEADER: [u8; 4] = [0xFF, 0xFB, 0x90, 0x64];

    fn mp3_frames(n: usize) -> Vec<u8> {
        let mut out = Vec::new();
        for _ in 0..n {
            out.extend_from_slice(&MP3_HEADER);
            out.resize(out.len() + 413, 0x55);
        }
        out
    }

    fn ogg_bos_page(first_packet: &[u8]) -> Vec<u8> {
        let mut page = b"OggS\0\x02".to_vec();
        page.resize(26, 0);
        page.push(1);
        page.push(u8::try_from(first_packet.len()).expect("short packet"));
        page.extend_from_slice(first_packet);
        page
    }

    fn ebml_header(doc_type: &str) -> Vec<u8> {
        let mut body = vec![0x42, 0x86, 0x81, 0x01]; // EBMLVersion 1
        body.extend_from_slice(&[
            0x42,
            0x82,
            0x80 | u8::try_from(doc_type.len()).expect("len"),
        ]);
        body.extend_from_slice(doc_type.as_bytes());
        let mut out = vec![
            0x1A,
            0x45,
            0xDF,
            0xA3,
            0x80 | u8::try_from(body.len()).expect("len"),
        ];
        out.extend_from_slice(&body);
        out.extend_from_slice(&[0x18, 0x53, 0x80, 0x67]); // Segment
        out
    }

    #[test]
    fn empty_is_unsupported_empty() {
        assert_eq!(detected(b""), "empty");
    }

    #[test]
    fn wav_and_its_relatives() {
        assert_eq!(format(b"RIFF\x24\0\0\0WAVEfmt "), AudioFormat::Wav);
        // Cut inside the RIFF header: still the wav family, the decoder reports the damage.
        assert_eq!(format(b"RIFF\x24\0"), AudioFormat::Wav);
        assert_eq!(
            detected(b"RF64\xff\xff\xff\xffWAVEds64"),
            "rf64 (64-bit wav)"
        );
        assert_eq!(
            detected(b"BW64\xff\xff\xff\xffWAVEds64"),
            "rf64 (64-bit wav)"
        );
        assert_eq!(detected(b"RIFX\0\0\0\x24WAVEfmt "), "rifx (big-endian wav)");
        assert_eq!(detected(b"RIFF\x24\0\0\0AVI LIST"), "avi");
        assert_eq!(detected(b"RIFF\x24\0\0\0WEBPVP8 "), "image");
    }

    #[test]
    fn ebml_doc_types() {
        assert_eq!(
            probe(&ebml_header("webm")).ok(),
            Some(Probed::new(AudioFormat::Webm))
        );
        let mkv = probe(&ebml_header("matroska")).expect("matroska");
        assert_eq!(mkv.format, AudioFormat::Webm);
        assert!(mkv.matroska);
        assert_eq!(detected(&ebml_header("foo")), "ebml (foo)");
        // Cut inside the header.
        assert_eq!(format(&ebml_header("webm")[..9]), AudioFormat::Webm);
    }

    #[test]
    fn ogg_codecs() {
        assert_eq!(
            format(&ogg_bos_page(b"OpusHead\x01\x01\x38\x01\x80\xbb\0\0\0\0\0")),
            AudioFormat::Ogg
        );
        assert_eq!(
            format(&ogg_bos_page(b"\x01vorbis\0\0\0\0\x02\x44\xac\0\0")),
            AudioFormat::Ogg
        );
        assert_eq!(
            detected(&ogg_bos_page(b"\x7fFLAC\x01\x00\x00\x01fLaC")),
            "ogg (flac)"
        );
        assert_eq!(
            detected(&ogg_bos_page(b"Speex   1.2rc1\0\0\0\0")),
            "ogg (speex)"
        );
        assert_eq!(
            detected(&ogg_bos_page(b"\x80theora\x03\x02\x01\0")),
            "ogg (theora)"
        );
        assert_eq!(
            detected(&ogg_bos_page(b"whatever-codec-header")),
            "ogg (unknown codec)"
        );
        // Theora video with a Vorbis soundtrack: the audio stream is what counts.
        let mut both = ogg_bos_page(b"\x80theora\x03\x02\x01\0");
        both.extend(ogg_bos_page(b"\x01vorbis\0\0\0\0\x02\x44\xac\0\0"));
        assert_eq!(format(&both), AudioFormat::Ogg);
        // Cut before the codec header.
        assert_eq!(format(b"OggS\0\x02\0\0"), AudioFormat::Ogg);
    }

    #[test]
    fn isobmff_brands() {
        assert_eq!(
            format(b"\0\0\0\x20ftypM4A \0\0\0\0M4A mp42isom"),
            AudioFormat::M4a
        );
        assert_eq!(
            format(b"\0\0\0\x18ftypmp42\0\0\0\0mp42isom"),
            AudioFormat::M4a
        );
        assert_eq!(
            format(b"\0\0\0\x18ftypisom\0\0\0\0isomiso2"),
            AudioFormat::M4a
        );
        assert_eq!(
            format(b"\0\0\0\x18ftyp3gp4\0\0\0\0isom3gp4"),
            AudioFormat::M4a
        );
        assert_eq!(
            detected(b"\0\0\0\x18ftypheic\0\0\0\0mif1heic"),
            "image (heif/avif)"
        );
    }

    #[test]
    fn mp3_needs_consecutive_valid_frames() {
        assert_eq!(format(&mp3_frames(3)), AudioFormat::Mp3);
        // A single valid header followed by junk where the next header should be.
        let mut one = mp3_frames(1);
        one.extend_from_slice(&[0x12; 1000]);
        assert_eq!(detected(&one), "unknown");
        // Data that ends inside the first frame: all that fits is valid.
        assert_eq!(format(&mp3_frames(1)[..100]), AudioFormat::Mp3);
        // Free-format and reserved values are refused.
        assert_eq!(detected(&[0xFF, 0xFB, 0x00, 0x64, 1, 2, 3, 4]), "unknown");
        assert_eq!(detected(&[0xFF, 0xFB, 0xF0, 0x64, 1, 2, 3, 4]), "unknown");
        assert_eq!(detected(&[0xFF, 0xFB, 0x9C, 0x64, 1, 2, 3, 4]), "unknown");
    }

    #[test]
    fn id3_is_skipped_whatever_its_size() {
        // A 3 MB tag (larger than symphonia's 1 MB probe depth), zero padding, then frames.
        let size: usize = 3 << 20;
        let mut bytes = b"ID3\x03\x00\x00".to_vec();
        bytes.extend_from_slice(&[
            ((size >> 21) & 0x7F) as u8,
            ((size >> 14) & 0x7F) as u8,
            ((size >> 7) & 0x7F) as u8,
            (size & 0x7F) as u8,
        ]);
        bytes.resize(10 + size, 0x41);
        bytes.extend_from_slice(&[0; 100]);
        let audio_at = bytes.len();
        bytes.extend(mp3_frames(4));
        let probed = probe(&bytes).expect("mp3");
        assert_eq!(probed.format, AudioFormat::Mp3);
        assert_eq!(probed.data_start, audio_at);
        // An ID3 tag followed by FLAC is FLAC.
        let mut flac = bytes[..10 + size].to_vec();
        flac.extend_from_slice(b"fLaC\0\0\0\x22");
        assert_eq!(detected(&flac), "flac");
        // A tag with nothing after it is a (cut) mp3: the decoder reports it.
        assert_eq!(format(&bytes[..10 + size]), AudioFormat::Mp3);
    }

    #[test]
    fn mpeg_layers_one_and_two_and_adts_are_rejected() {
        // MPEG-1 Layer II, 128 kbps, 44.1 kHz: 417-byte frames.
        let mut mp2 = Vec::new();
        for _ in 0..3 {
            mp2.extend_from_slice(&[0xFF, 0xFD, 0x80, 0x04]);
            mp2.resize(mp2.len() + 413, 0);
        }
        assert_eq!(detected(&mp2), "mp2");
        assert_eq!(
            detected(&[0xFF, 0xF1, 0x50, 0x80, 0x2E, 0x7F, 0xFC]),
            "aac (adts)"
        );
    }

    #[test]
    fn other_kinds_are_named() {
        assert_eq!(detected(b"fLaC\0\0\0\x22\x12\0"), "flac");
        assert_eq!(detected(b"FORM\0\0\0\x10AIFFCOMM"), "aiff");
        assert_eq!(detected(b"FORM\0\0\0\x10AIFCFVER"), "aiff");
        assert_eq!(detected(b"#!AMR\n"), "amr");
        assert_eq!(detected(b"caff\0\x01\0\0desc"), "caf");
        assert_eq!(detected(b"\x89PNG\r\n\x1a\n"), "image");
        assert_eq!(detected("Hello, wörld!\n".as_bytes()), "text");
        assert_eq!(detected(b"{\"a\": 1}"), "text");
        assert_eq!(detected(&[0x00, 0x01, 0x02, 0x03]), "unknown");
        assert_eq!(detected(&[0x80, 0x81, 0xFE, 0xFF]), "unknown");
    }

    #[test]
    fn arbitrary_prefixes_never_panic() {
        let seeds: &[&[u8]] = &[
            b"RIFF\xff\xff\xff\xffWAVE",
            b"\x1a\x45\xdf\xa3\xff\x42\x82\xff",
            b"\x1a\x45\xdf\xa3\x01\xff\xff\xff\xff\xff\xff\xff",
            b"OggS\0\x02\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\xff",
            b"ID3\x04\x00\x10\x7f\x7f\x7f\x7f",
            b"\xff\xfb\x90\x64",
            b"\0\0\0\0ftyp",
        ];
        for seed in seeds {
            for len in 0..=seed.len() {
                let _ = probe(&seed[..len]);
            }
        }
    }
}
