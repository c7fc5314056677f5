//! Truncated uploads: a file whose container says more audio follows than the file holds.
//!
//! The decoders keep what was decoded before an unexpected end of file, so a recording
//! cut short (an interrupted upload, a recorder that died) still transcribes. What it
//! lost is not silent: [`find`] walks the container's structure, without decoding, and
//! says where the file ends inside it. The transcript then carries an `audio_truncated`
//! warning ([`crate::Warning`]).
//!
//! | family | truncated when |
//! |---|---|
//! | wav | the `data` chunk declares more bytes than follow it (0 and 0xFFFFFFFF, written by streaming recorders that never come back to fill the size in, declare nothing) |
//! | mp3 | the last frame is cut, or the Xing/Info header counts more bytes of frames than the file holds |
//! | ogg | a page is cut, or a logical stream has no end-of-stream page |
//! | webm | a Cluster or one of its blocks is cut, or the Segment's size says more follows a complete Cluster |
//! | m4a | a top-level box (`mdat`, `moof`, ...) is cut |
//!
//! A cut that lands exactly between two frames of a stream that declares no length (an
//! MP3 without an Info header, a live-recorded WebM of unknown size) cannot be seen.
//! The walk reads each header once: its work is bounded by the number of bytes.

use super::AudioFormat;
use super::mp4::{TopLevelEnd, top_level_end};
use super::probe::{Probed, ebml_vint, mpeg_frame_header};

/// Where `bytes` (probed as `probed`) end inside their container, as a sentence; `None`
/// for a file that is whole, or whose structure says nothing about its length.
pub(crate) fn find(bytes: &[u8], probed: &Probed) -> Option<String> {
    match probed.format {
        AudioFormat::Wav => wav(bytes),
        AudioFormat::Mp3 => mp3(bytes, probed.data_start),
        AudioFormat::Ogg => ogg(bytes),
        AudioFormat::Webm => webm(bytes),
        AudioFormat::M4a => mp4(bytes),
    }
}

fn le32(bytes: &[u8], pos: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        bytes.get(pos..pos + 4)?.try_into().ok()?,
    ))
}

fn be32(bytes: &[u8], pos: usize) -> Option<u32> {
    Some(u32::from_be_bytes(
        bytes.get(pos..pos + 4)?.try_into().ok()?,
    ))
}

fn wav(bytes: &[u8]) -> Option<String> {
    let mut pos = 12;
    while pos + 8 <= bytes.len() {
        let id = &bytes[pos..pos + 4];
        let size = le32(bytes, pos + 4)?;
        let body = pos + 8;
        let end = body.saturating_add(size as usize);
        if id == b"data" {
            if size == 0 || size == u32::MAX || end <= bytes.len() {
                return None;
            }
            return Some(format!(
                "the file ends inside its WAV data chunk: {} of the {size} bytes it declares",
                bytes.len() - body
            ));
        }
        pos = end.saturating_add((size & 1) as usize);
    }
    None
}

/// Side information between an MPEG audio frame's header and a Xing/Info tag.
fn xing_offset(version: u8, mono: bool) -> usize {
    match (version, mono) {
        (1, false) => 32,
        (1, true) | (_, false) => 17,
        (_, true) => 9,
    }
}

/// The byte count of the Xing/Info tag in the frame at `pos`, if it has one.
fn xing_bytes(bytes: &[u8], pos: usize, version: u8) -> Option<u64> {
    let mono = bytes.get(pos + 3)? >> 6 == 3;
    let tag = pos + 4 + xing_offset(version, mono);
    let id = bytes.get(tag..tag + 4)?;
    if id != b"Xing" && id != b"Info" {
        return None;
    }
    let flags = be32(bytes, tag + 4)?;
    if flags & 2 == 0 {
        return None;
    }
    let at = tag + 8 + if flags & 1 != 0 { 4 } else { 0 };
    be32(bytes, at).map(u64::from)
}

fn mp3(bytes: &[u8], start: usize) -> Option<String> {
    let first = mpeg_frame_header(bytes.get(start..start + 4)?)?;
    if let Some(declared) = xing_bytes(bytes, start, first.version) {
        let held = (bytes.len() - start) as u64;
        if declared > held {
            return Some(format!(
                "the file ends {} bytes before its MP3 Info header says its frames do \
                 ({held} of {declared} bytes)",
                declared - held
            ));
        }
    }
    let mut pos = start;
    while let Some(frame) = bytes.get(pos..pos + 4).and_then(mpeg_frame_header) {
        if frame.len == 0 {
            return None;
        }
        let end = pos + frame.len;
        if end > bytes.len() {
            return Some(format!(
                "the file ends inside an MP3 frame: {} of its {} bytes",
                bytes.len() - pos,
                frame.len
            ));
        }
        pos = end;
    }
    None
}

fn ogg(bytes: &[u8]) -> Option<String> {
    let cut = |what: &str| Some(format!("the file ends inside an Ogg page {what}"));
    let mut open: Vec<u32> = Vec::new();
    let mut pos = 0;
    while pos < bytes.len() {
        let rest = &bytes[pos..];
        if rest.len() < 27 {
            return b"OggS".starts_with(&rest[..rest.len().min(4)]).then(|| {
                format!(
                    "the file ends inside an Ogg page header ({} bytes)",
                    rest.len()
                )
            });
        }
        if !rest.starts_with(b"OggS") {
            return None;
        }
        let flags = rest[5];
        let serial = le32(rest, 14)?;
        let segments = usize::from(rest[26]);
        let Some(table) = rest.get(27..27 + segments) else {
            return cut("header");
        };
        let body: usize = table.iter().map(|&b| usize::from(b)).sum();
        let end = 27 + segments + body;
        if end > rest.len() {
            return cut(&format!("({} of its {end} bytes)", rest.len()));
        }
        if flags & 0x02 != 0 && !open.contains(&serial) {
            open.push(serial);
        }
        if flags & 0x04 != 0 {
            open.retain(|&s| s != serial);
        }
        pos += end;
    }
    (!open.is_empty()).then(|| {
        "the Ogg stream ends without its end-of-stream page: the file was cut between pages"
            .to_owned()
    })
}

const EBML_HEADER: u64 = 0x1A45_DFA3;
const SEGMENT: u64 = 0x1853_8067;
const CLUSTER: u64 = 0x1F43_B675;
/// Level-1 elements of a Segment: one of them ends a Cluster of unknown size.
const TOP_LEVEL: [u64; 8] = [
    CLUSTER,
    0x1C53_BB6B, // Cues
    0x1254_C367, // Tags
    0x114D_9B74, // SeekHead
    0x1549_A966, // Info
    0x1654_AE6B, // Tracks
    0x1043_A770, // Chapters
    0x1941_A469, // Attachments
];

/// An EBML element's header at `pos`: (id, size, where its body starts); a size of
/// `None` is "unknown" (all value bits set).
fn ebml_element(bytes: &[u8], pos: usize) -> Option<(u64, Option<u64>, usize)> {
    let (id, id_len) = ebml_vint(bytes, pos, true)?;
    let (size, size_len) = ebml_vint(bytes, pos + id_len, false)?;
    let unknown = size == (1u64 << (7 * size_len)) - 1;
    Some((id, (!unknown).then_some(size), pos + id_len + size_len))
}

fn webm(bytes: &[u8]) -> Option<String> {
    let (id, size, body) = ebml_element(bytes, 0)?;
    if id != EBML_HEADER {
        return None;
    }
    let pos = body.checked_add(usize::try_from(size?).ok()?)?;
    let (id, segment_size, body) = ebml_element(bytes, pos)?;
    if id != SEGMENT {
        return None;
    }
    let segment_end = segment_size
        .and_then(|s| usize::try_from(s).ok())
        .and_then(|s| body.checked_add(s));
    let cut_in = |what: &str| Some(format!("the file ends inside a WebM {what}"));
    let mut pos = body;
    let mut last_was_cluster = false;
    while pos < bytes.len() && segment_end.is_none_or(|end| pos < end) {
        let Some((id, size, body)) = ebml_element(bytes, pos) else {
            return cut_in("element header");
        };
        last_was_cluster = id == CLUSTER;
        match size.and_then(|s| usize::try_from(s).ok()) {
            Some(size) => {
                let end = body.saturating_add(size);
                if end > bytes.len() {
                    return if id == CLUSTER {
                        cut_in(&format!(
                            "cluster ({} of its {size} bytes)",
                            bytes.len() - body
                        ))
                    } else {
                        None
                    };
                }
                pos = end;
            }
            None if id == CLUSTER => match cluster_children(bytes, body) {
                Ok(next) => pos = next,
                Err(message) => return Some(message),
            },
            None => return None,
        }
    }
    match segment_end {
        Some(end) if end > bytes.len() && last_was_cluster => Some(format!(
            "the file ends {} bytes before its WebM segment does",
            end - bytes.len()
        )),
        _ => None,
    }
}

/// Walks the children of a Cluster of unknown size from `pos`: where the next level-1
/// element (or the end of the file) is, or the message for a child that is cut.
fn cluster_children(bytes: &[u8], mut pos: usize) -> Result<usize, String> {
    while pos < bytes.len() {
        let Some((id, size, body)) = ebml_element(bytes, pos) else {
            return Err("the file ends inside a WebM block header".to_owned());
        };
        if TOP_LEVEL.contains(&id) {
            return Ok(pos);
        }
        let Some(size) = size.and_then(|s| usize::try_from(s).ok()) else {
            return Ok(bytes.len());
        };
        let end = body.saturating_add(size);
        if end > bytes.len() {
            return Err(format!(
                "the file ends inside a WebM block ({} of its {size} bytes)",
                bytes.len() - body
            ));
        }
        pos = end;
    }
    Ok(pos)
}

fn mp4(bytes: &[u8]) -> Option<String> {
    match top_level_end(bytes) {
        TopLevelEnd::Whole => None,
        TopLevelEnd::CutHeader => Some("the file ends inside an MP4 box header".to_owned()),
        TopLevelEnd::Cut { kind, start, size } => Some(format!(
            "the file ends inside its MP4 '{}' box: {} of its {size} bytes",
            String::from_utf8_lossy(&kind),
            bytes.len() as u64 - start
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audio::probe::probe;

    fn wav_file(data_len: usize, declared: u32) -> Vec<u8> {
        let mut out = b"RIFF\0\0\0\0WAVEfmt ".to_vec();
        out.extend_from_slice(&16u32.to_le_bytes());
        out.extend_from_slice(&[1, 0, 1, 0]);
        out.extend_from_slice(&16_000u32.to_le_bytes());
        out.extend_from_slice(&32_000u32.to_le_bytes());
        out.extend_from_slice(&[2, 0, 16, 0]);
        out.extend_from_slice(b"data");
        out.extend_from_slice(&declared.to_le_bytes());
        out.resize(out.len() + data_len, 0);
        out
    }

    fn found(bytes: &[u8]) -> Option<String> {
        find(bytes, &probe(bytes).expect("a supported family"))
    }

    #[test]
    fn wav_data_shorter_than_declared_is_truncated_unless_the_size_is_a_placeholder() {
        assert_eq!(found(&wav_file(3200, 3200)), None);
        let message = found(&wav_file(1600, 3200)).expect("truncated");
        assert!(message.contains("1600 of the 3200 bytes"), "{message}");
        assert_eq!(found(&wav_file(1600, 0)), None);
        assert_eq!(found(&wav_file(1600, u32::MAX)), None);
    }

    fn ogg_page(serial: u32, flags: u8, body: &[u8]) -> Vec<u8> {
        let mut out = b"OggS\0".to_vec();
        out.push(flags);
        out.extend_from_slice(&[0; 8]);
        out.extend_from_slice(&serial.to_le_bytes());
        out.extend_from_slice(&[0; 8]);
        out.push(1);
        out.push(u8::try_from(body.len()).expect("one segment"));
        out.extend_from_slice(body);
        out
    }

    #[test]
    fn ogg_cut_inside_a_page_or_without_its_last_page_is_truncated() {
        let mut whole = ogg_page(7, 0x02, b"OpusHead\x01\x01\0\0\x80\x3e\0\0\0\0\0");
        whole.extend(ogg_page(7, 0, &[1; 40]));
        let before_last = whole.len();
        whole.extend(ogg_page(7, 0x04, &[1; 40]));
        assert_eq!(ogg(&whole), None);
        assert!(ogg(&whole[..whole.len() - 10]).is_some_and(|m| m.contains("inside an Ogg page")));
        assert!(ogg(&whole[..before_last]).is_some_and(|m| m.contains("end-of-stream")));
        assert!(ogg(&whole[..before_last + 5]).is_some_and(|m| m.contains("header")));
    }

    #[test]
    fn mp4_cut_inside_a_top_level_box_is_truncated() {
        let mut file = Vec::new();
        for (kind, len) in [(b"ftyp", 16u32), (b"moov", 24), (b"mdat", 64)] {
            file.extend_from_slice(&len.to_be_bytes());
            file.extend_from_slice(kind);
            file.resize(file.len() + len as usize - 8, 0);
        }
        assert_eq!(mp4(&file), None);
        let message = mp4(&file[..file.len() - 20]).expect("truncated");
        assert!(
            message.contains("'mdat'") && message.contains("44 of its 64"),
            "{message}"
        );
        assert!(mp4(&file[..42]).is_some_and(|m| m.contains("box header")));
    }

    fn ebml(id: &[u8], size: Option<usize>, body: &[u8]) -> Vec<u8> {
        let mut out = id.to_vec();
        match size {
            Some(n) => out.extend_from_slice(
                &(0x1000_0000u32 | u32::try_from(n).expect("small")).to_be_bytes(),
            ),
            None => out.push(0xFF),
        }
        out.extend_from_slice(body);
        out
    }

    fn webm_file(segment_known: bool, cluster_known: bool) -> Vec<u8> {
        let block = ebml(&[0xA3], Some(30), &[0x81; 30]);
        let mut clusters = Vec::new();
        for _ in 0..2 {
            let mut body = ebml(&[0xE7], Some(1), &[0]);
            body.extend_from_slice(&block);
            body.extend_from_slice(&block);
            let size = cluster_known.then_some(body.len());
            clusters.extend(ebml(&[0x1F, 0x43, 0xB6, 0x75], size, &body));
        }
        let mut file = ebml(
            &[0x1A, 0x45, 0xDF, 0xA3],
            Some(4),
            &[0x42, 0x82, 0x81, 0x77],
        );
        let size = segment_known.then_some(clusters.len());
        file.extend(ebml(&[0x18, 0x53, 0x80, 0x67], size, &clusters));
        file
    }

    #[test]
    fn webm_cut_inside_a_cluster_or_block_is_truncated() {
        for (segment_known, cluster_known) in
            [(true, true), (false, true), (false, false), (true, false)]
        {
            let file = webm_file(segment_known, cluster_known);
            assert_eq!(webm(&file), None, "{segment_known} {cluster_known}");
            let cut = webm(&file[..file.len() - 12]);
            assert!(
                cut.is_some_and(|m| m.contains("WebM")),
                "{segment_known} {cluster_known}"
            );
        }
        // Cut between the two clusters: seen only when the segment's size says more follows.
        let file = webm_file(true, true);
        let half = file.len() - (file.len() - 20) / 2;
        let between = (20..file.len())
            .find(|&n| n >= half && webm(&file[..n]).is_some_and(|m| m.contains("segment")));
        assert!(between.is_some());
        let live = webm_file(false, true);
        let mut ends = (0..live.len()).filter(|&n| n > 40 && webm(&live[..n]).is_none());
        assert!(
            ends.next().is_some(),
            "a live recording cut between clusters is whole as far as anyone can tell"
        );
    }

    #[test]
    fn arbitrary_prefixes_never_panic() {
        let mut file = webm_file(true, false);
        file.extend(ogg_page(1, 2, &[0; 9]));
        file.extend(wav_file(10, 20));
        for start in 0..file.len() {
            for format in [
                AudioFormat::Wav,
                AudioFormat::Mp3,
                AudioFormat::Ogg,
                AudioFormat::Webm,
                AudioFormat::M4a,
            ] {
                let probed = Probed {
                    format,
                    data_start: 0,
                    matroska: false,
                };
                let _ = find(&file[start..], &probed);
            }
        }
    }
}
