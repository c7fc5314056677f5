//! MP4 (ISO base media) checks and repairs made on the bytes before symphonia reads them.
//!
//! symphonia's MP4 reader trusts the file's tables: a `trun` box's sample count is counted
//! through, and a sample's position (a `co64` chunk offset, a `tfhd` base data offset plus a
//! `trun` data offset) is sought to, whatever it says. A seek of 2^63 bytes or more trips an
//! `assert!` inside symphonia (`MediaSourceStream::seek_buffered`, fuzz crash 8ff9824f), and
//! a negative data offset wraps to such a position. So before the reader is opened:
//!
//! * every chunk offset (`stco`, `co64`) and every fragment's data position (`tfhd` base,
//!   `trun` data offset) must lie within the file as its top-level boxes declare it
//!   ([`declared_len`]: the file itself, or the `mdat` it was cut from);
//! * the `trun` boxes together may not claim more samples than the file has bytes.
//!
//! symphonia also reads two bits of a `trun`'s first-sample flags (0x4 and 0x200, inside
//! the sample's degradation priority) as "the first sample's duration / size is recorded"
//! and then indexes an empty table (fuzz crash b75345f2): [`prepare`] clears those two bits
//! where the run records no per-sample durations or sizes. A degradation priority does not
//! change how audio decodes.
//!
//! With positions below 2^48 and at most one sample per byte (of at most 2^32 bytes each),
//! every position symphonia computes stays far below 2^63.
//!
//! [`repair_truncated_mdat`] lets a "fast start" file cut inside its `mdat` be read up to
//! the cut.

use std::borrow::Cow;

use crate::error::Error;

use super::scan::{max_packets, too_many_packets};

/// The longest file an MP4's boxes may declare, for the offset checks: 256 TiB, beyond any
/// file a filesystem holds (ext4: 16 TiB) and far below the 2^63 where symphonia's seek
/// asserts. A cut file's `mdat` declaring more is taken to end here.
const MAX_DECLARED_LEN: u64 = 1 << 48;

/// One box of an MP4 file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Mp4Box {
    kind: [u8; 4],
    /// Where the box header starts.
    start: usize,
    /// Where the payload starts (after the 8- or 16-byte header).
    payload: usize,
    /// Where the box ends, within the parent (a box cut short ends at the parent's end).
    end: usize,
}

/// The boxes of `data[start..end]`; stops at the first box whose header does not fit or is
/// invalid. Each box is at least 8 bytes, so the walk is bounded by the bytes.
fn mp4_boxes(data: &[u8], start: usize, end: usize) -> Vec<Mp4Box> {
    let mut boxes = Vec::new();
    let mut pos = start;
    while let Some(header) = data.get(pos..pos + 8).filter(|_| pos + 8 <= end) {
        let size32 = u32::from_be_bytes([header[0], header[1], header[2], header[3]]);
        let kind = [header[4], header[5], header[6], header[7]];
        let (size, header_len) = match size32 {
            0 => (end - pos, 8),
            1 => match data.get(pos + 8..pos + 16) {
                Some(large) => (usize::try_from(be_u64(large)).unwrap_or(usize::MAX), 16),
                None => break,
            },
            n => (usize::try_from(n).unwrap_or(usize::MAX), 8),
        };
        if size < header_len {
            break;
        }
        let box_end = pos.saturating_add(size).min(end);
        boxes.push(Mp4Box {
            kind,
            start: pos,
            payload: pos + header_len,
            end: box_end,
        });
        pos = box_end;
    }
    boxes
}

/// The children of `parent` whose type is `kind`.
fn children(data: &[u8], parent: &Mp4Box, kind: &[u8; 4]) -> Vec<Mp4Box> {
    let mut found = mp4_boxes(data, parent.payload, parent.end);
    found.retain(|b| &b.kind == kind);
    found
}

fn be_u32(raw: &[u8]) -> u32 {
    raw.iter()
        .take(4)
        .fold(0, |acc, &b| (acc << 8) | u32::from(b))
}

fn be_u64(raw: &[u8]) -> u64 {
    raw.iter()
        .take(8)
        .fold(0, |acc, &b| (acc << 8) | u64::from(b))
}

/// How the top-level boxes of a file end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TopLevelEnd {
    /// The last box ends with the file, extends to its end (size 0), or the walk met
    /// bytes that are not a box: nothing says more follows.
    Whole,
    /// The file ends inside a box header.
    CutHeader,
    /// The file ends inside the box of type `kind` that starts at `start` and declares
    /// `size` bytes.
    Cut {
        kind: [u8; 4],
        start: u64,
        size: u64,
    },
}

/// Walks the top-level boxes of `data` to the first one that does not end inside it.
pub(super) fn top_level_end(data: &[u8]) -> TopLevelEnd {
    let len = u64::try_from(data.len()).unwrap_or(u64::MAX);
    let at = |pos: u64, n: usize| {
        usize::try_from(pos)
            .ok()
            .and_then(|at| data.get(at..at.checked_add(n)?))
    };
    let mut pos = 0u64;
    while pos < len {
        let Some(header) = at(pos, 8) else {
            return TopLevelEnd::CutHeader;
        };
        let (size, header_len) = match be_u32(header) {
            0 => return TopLevelEnd::Whole,
            1 => match at(pos + 8, 8) {
                Some(large) => (be_u64(large), 16),
                None => return TopLevelEnd::CutHeader,
            },
            n => (u64::from(n), 8),
        };
        if size < header_len {
            return TopLevelEnd::Whole;
        }
        let end = pos.saturating_add(size);
        if end > len {
            let kind = [header[4], header[5], header[6], header[7]];
            return TopLevelEnd::Cut {
                kind,
                start: pos,
                size,
            };
        }
        pos = end;
    }
    TopLevelEnd::Whole
}

/// The length of the file as its top-level boxes declare it: the end of the first box that
/// extends past the end of `data` (a file cut inside its `mdat`), at most
/// [`MAX_DECLARED_LEN`]; else the length of `data`.
fn declared_len(data: &[u8]) -> u64 {
    let len = u64::try_from(data.len()).unwrap_or(u64::MAX);
    match top_level_end(data) {
        TopLevelEnd::Cut { start, size, .. } => {
            start.saturating_add(size).min(MAX_DECLARED_LEN).max(len)
        }
        TopLevelEnd::Whole | TopLevelEnd::CutHeader => len,
    }
}

/// The error for sample data placed outside the file.
fn offset_past_end(offset: impl std::fmt::Display, limit: u64) -> Error {
    Error::decode(format!(
        "the MP4 file places sample data at byte {offset}, outside the {limit} bytes it declares"
    ))
}

/// Every chunk offset of every track (`moov/trak/mdia/minf/stbl/stco|co64`) must lie
/// within `limit`. Only the entries present in the box are read.
fn check_chunk_offsets(data: &[u8], limit: u64) -> Result<(), Error> {
    for moov in mp4_boxes(data, 0, data.len())
        .iter()
        .filter(|b| &b.kind == b"moov")
    {
        let tables = children(data, moov, b"trak")
            .into_iter()
            .flat_map(|trak| children(data, &trak, b"mdia"))
            .flat_map(|mdia| children(data, &mdia, b"minf"))
            .flat_map(|minf| children(data, &minf, b"stbl"))
            .flat_map(|stbl| mp4_boxes(data, stbl.payload, stbl.end));
        for table in tables {
            let width = match &table.kind {
                b"stco" => 4,
                b"co64" => 8,
                _ => continue,
            };
            // Version and flags, entry count, then the entries.
            let entries = data.get(table.payload + 8..table.end).unwrap_or_default();
            for entry in entries.chunks_exact(width) {
                let offset = be_u64(entry);
                if offset > limit {
                    return Err(offset_past_end(offset, limit));
                }
            }
        }
    }
    Ok(())
}

/// `trun` flags: a data offset, the first sample's flags, per-sample durations, per-sample
/// sizes.
const TRUN_DATA_OFFSET: u32 = 0x1;
const TRUN_FIRST_SAMPLE_FLAGS: u32 = 0x4;
const TRUN_DURATIONS: u32 = 0x100;
const TRUN_SIZES: u32 = 0x200;

/// Every fragment's data position (`tfhd` base data offset, else the `moof` start, plus
/// each `trun` data offset) must lie within `limit`, and the `trun` boxes of the whole file
/// may claim at most one sample per byte (with no per-sample fields, symphonia's reader
/// loops over the count: 2^32 - 1 samples is seconds of CPU for 4 bytes).
///
/// Returns where the first-sample flags symphonia would misread are (see the module
/// documentation), with the bits to clear.
fn check_fragments(data: &[u8], limit: u64) -> Result<Vec<(usize, u32)>, Error> {
    let mut misread = Vec::new();
    let mut samples = 0u64;
    let max_samples = u64::try_from(max_packets(data)).unwrap_or(u64::MAX);
    for moof in mp4_boxes(data, 0, data.len())
        .iter()
        .filter(|b| &b.kind == b"moof")
    {
        for traf in children(data, moof, b"traf") {
            let mut base = u64::try_from(moof.start).unwrap_or(u64::MAX);
            for child in mp4_boxes(data, traf.payload, traf.end) {
                // Version and flags (24 bits), then the fields the flags announce.
                let Some(head) = data.get(child.payload..child.end) else {
                    continue;
                };
                let flags = be_u32(head) & 0x00FF_FFFF;
                match &child.kind {
                    b"tfhd" if flags & 0x1 != 0 => {
                        // Track ID, then the base data offset.
                        let Some(raw) = head.get(8..16) else { continue };
                        base = be_u64(raw);
                        if base > limit {
                            return Err(offset_past_end(base, limit));
                        }
                    }
                    b"trun" => {
                        let count = head.get(4..8).map_or(0, be_u32);
                        samples = samples.saturating_add(u64::from(count));
                        if samples > max_samples {
                            return Err(too_many_packets(data.len()));
                        }
                        let offset = head.get(8..12).filter(|_| flags & TRUN_DATA_OFFSET != 0);
                        if let Some(raw) = offset {
                            let delta = i64::from(be_u32(raw).cast_signed());
                            let at = i128::from(base) + i128::from(delta);
                            if at < 0 || at > i128::from(limit) {
                                return Err(offset_past_end(at, limit));
                            }
                        }
                        misread.extend(misread_first_sample_flags(head, flags, child.payload));
                    }
                    _ => {}
                }
            }
        }
    }
    Ok(misread)
}

/// Where a `trun` box's first-sample flags start (`head` is its payload, which starts at
/// byte `at` of the file) and the bits of them symphonia would read as "the first sample's
/// duration / size is recorded" although the run records none, if any are set.
fn misread_first_sample_flags(head: &[u8], flags: u32, at: usize) -> Option<(usize, u32)> {
    if flags & TRUN_FIRST_SAMPLE_FLAGS == 0 {
        return None;
    }
    // Version and flags, the sample count, then the data offset if present.
    let field = if flags & TRUN_DATA_OFFSET != 0 { 12 } else { 8 };
    let first = be_u32(head.get(field..field + 4)?);
    let mut bits = 0;
    if flags & TRUN_DURATIONS == 0 {
        bits |= first & TRUN_FIRST_SAMPLE_FLAGS;
    }
    if flags & TRUN_SIZES == 0 {
        bits |= first & TRUN_SIZES;
    }
    (bits != 0).then_some((at + field, bits))
}

/// Checks an MP4 file's sample positions and counts (see the module documentation),
/// repairs a cut `mdat` and clears the first-sample flag bits symphonia misreads; returns
/// the bytes to hand to symphonia.
///
/// # Errors
///
/// [`Error::AudioDecode`] for sample data placed outside the file, or more `trun` samples
/// than bytes.
pub(crate) fn prepare(data: &[u8]) -> Result<Cow<'_, [u8]>, Error> {
    let limit = declared_len(data);
    check_chunk_offsets(data, limit)?;
    let misread = check_fragments(data, limit)?;
    let mut bytes = repair_truncated_mdat(data).map_or(Cow::Borrowed(data), Cow::Owned);
    if !misread.is_empty() {
        let owned = bytes.to_mut();
        for (at, bits) in misread {
            // The repair only rewrites an `mdat` header, never a `moof`: `at` is in bounds.
            if let Some(field) = owned.get_mut(at..at + 4) {
                let cleared = be_u32(field) & !bits;
                field.copy_from_slice(&cleared.to_be_bytes());
            }
        }
    }
    Ok(bytes)
}

/// A copy of an MP4 file cut inside its final `mdat` box, with the box size shortened to
/// what is left, or `None` if the file is not cut there. symphonia refuses to read samples
/// from an `mdat` that claims to extend past the end of the file, although the `moov` box
/// (at the front of a "fast start" file) still describes every sample before the cut.
fn repair_truncated_mdat(data: &[u8]) -> Option<Vec<u8>> {
    let mut pos = 0usize;
    // Top-level boxes are few; bound the walk anyway.
    for _ in 0..1024 {
        let header = data.get(pos..pos + 8)?;
        let (size, header_len) = match be_u32(header) {
            // Extends to the end of the file: nothing is cut.
            0 => return None,
            1 => (be_u64(data.get(pos + 8..pos + 16)?), 16),
            n => (u64::from(n), 8),
        };
        if size < header_len {
            return None;
        }
        let end = u64::try_from(pos).ok()?.checked_add(size)?;
        let len = u64::try_from(data.len()).ok()?;
        if end > len {
            if &header[4..8] != b"mdat" {
                return None;
            }
            let remaining = len - u64::try_from(pos).ok()?;
            let mut copy = data.to_vec();
            if header_len == 16 {
                copy[pos + 8..pos + 16].copy_from_slice(&remaining.to_be_bytes());
            } else {
                let remaining = u32::try_from(remaining).ok()?;
                copy[pos..pos + 4].copy_from_slice(&remaining.to_be_bytes());
            }
            return Some(copy);
        }
        pos = usize::try_from(end).ok()?;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A box of `kind` around `payload`.
    fn mp4_box(kind: &[u8; 4], payload: &[u8]) -> Vec<u8> {
        let size = u32::try_from(8 + payload.len()).expect("small");
        let mut out = size.to_be_bytes().to_vec();
        out.extend_from_slice(kind);
        out.extend_from_slice(payload);
        out
    }

    /// A full box (version 0): flags, then `fields`.
    fn full_box(kind: &[u8; 4], flags: u32, fields: &[u8]) -> Vec<u8> {
        let mut payload = flags.to_be_bytes().to_vec();
        payload.extend_from_slice(fields);
        mp4_box(kind, &payload)
    }

    /// ftyp, a moov with one track whose chunk-offset table is `table`, then an mdat of
    /// `mdat_len` bytes.
    fn with_chunk_table(table: &[u8], mdat_len: usize) -> Vec<u8> {
        let stbl = mp4_box(b"stbl", table);
        let minf = mp4_box(b"minf", &stbl);
        let mdia = mp4_box(b"mdia", &minf);
        let trak = mp4_box(b"trak", &mdia);
        let mut file = mp4_box(b"ftyp", b"M4A \0\0\0\0");
        file.extend(mp4_box(b"moov", &trak));
        file.extend(mp4_box(b"mdat", &vec![0; mdat_len]));
        file
    }

    fn stco(offsets: &[u32]) -> Vec<u8> {
        let mut fields = u32::try_from(offsets.len())
            .expect("few")
            .to_be_bytes()
            .to_vec();
        offsets
            .iter()
            .for_each(|o| fields.extend_from_slice(&o.to_be_bytes()));
        full_box(b"stco", 0, &fields)
    }

    fn co64(offsets: &[u64]) -> Vec<u8> {
        let mut fields = u32::try_from(offsets.len())
            .expect("few")
            .to_be_bytes()
            .to_vec();
        offsets
            .iter()
            .for_each(|o| fields.extend_from_slice(&o.to_be_bytes()));
        full_box(b"co64", 0, &fields)
    }

    /// ftyp, then a moof with one traf of `tfhd` and `truns`, then an mdat of 100 bytes.
    fn fragment(tfhd_base: Option<u64>, truns: &[(u32, Option<i32>)]) -> Vec<u8> {
        let mut traf = match tfhd_base {
            Some(base) => {
                let mut fields = 1u32.to_be_bytes().to_vec();
                fields.extend_from_slice(&base.to_be_bytes());
                full_box(b"tfhd", 0x1, &fields)
            }
            None => full_box(b"tfhd", 0x02_0000, &1u32.to_be_bytes()),
        };
        for &(count, offset) in truns {
            let mut fields = count.to_be_bytes().to_vec();
            if let Some(offset) = offset {
                fields.extend_from_slice(&offset.to_be_bytes());
            }
            traf.extend(full_box(b"trun", u32::from(offset.is_some()), &fields));
        }
        let mut file = mp4_box(b"ftyp", b"iso5\0\0\0\0");
        file.extend(mp4_box(b"moof", &mp4_box(b"traf", &traf)));
        file.extend(mp4_box(b"mdat", &[0; 100]));
        file
    }

    fn refused(data: &[u8]) -> String {
        match prepare(data) {
            Err(e) => {
                assert_eq!(e.code(), "audio_decode_failed");
                e.to_string()
            }
            Ok(_) => panic!("expected a refusal"),
        }
    }

    #[test]
    fn declared_length_is_the_file_or_the_mdat_it_was_cut_from() {
        let file = with_chunk_table(&stco(&[]), 100);
        let len = file.len() as u64;
        assert_eq!(declared_len(&file), len);
        // Cut inside the mdat: the mdat still declares the whole.
        assert_eq!(declared_len(&file[..file.len() - 40]), len);
        // An mdat that declares 2^56 bytes counts as 2^48.
        let mut huge = file[..file.len() - 108].to_vec();
        huge.extend_from_slice(b"\0\0\0\x01mdat");
        huge.extend_from_slice(&(1u64 << 56).to_be_bytes());
        assert_eq!(declared_len(&huge), MAX_DECLARED_LEN);
        // A last box extending to the end (size 0), and garbage after the boxes.
        let mut open = file[..file.len() - 108].to_vec();
        open.extend_from_slice(b"\0\0\0\0mdat");
        assert_eq!(declared_len(&open), open.len() as u64);
        assert_eq!(declared_len(b"\0\0\0\x04ftyp"), 8);
    }

    #[test]
    fn chunk_offsets_must_lie_within_the_file() {
        let file = with_chunk_table(&stco(&[40, 90]), 100);
        let len = u32::try_from(file.len()).expect("small");
        assert!(prepare(&file).is_ok());
        assert!(prepare(&with_chunk_table(&stco(&[40, len]), 100)).is_ok());
        let past = with_chunk_table(&stco(&[40, len + 1]), 100);
        assert!(refused(&past).contains("outside"));
        // 64-bit offsets, up to the one that made symphonia's seek assert.
        let file = with_chunk_table(&co64(&[40, 90]), 100);
        assert!(prepare(&file).is_ok());
        let len = u64::try_from(file.len()).expect("small");
        assert!(prepare(&with_chunk_table(&co64(&[40, len]), 100)).is_ok());
        for offset in [len + 1, 1 << 40, 1 << 63, u64::MAX] {
            let far = with_chunk_table(&co64(&[40, offset]), 100);
            assert!(refused(&far).contains(&offset.to_string()), "{offset}");
        }
    }

    #[test]
    fn a_cut_file_may_point_into_the_missing_part_of_its_mdat() {
        let file = with_chunk_table(&stco(&[40, 150]), 100);
        let cut = &file[..file.len() - 60];
        assert!(u64::try_from(cut.len()).expect("small") < 150);
        assert!(matches!(prepare(cut), Ok(Cow::Owned(_))));
        // But not past what the mdat declared.
        let beyond = with_chunk_table(&stco(&[40, 400]), 100);
        assert!(refused(&beyond[..beyond.len() - 60]).contains("400"));
    }

    #[test]
    fn fragment_positions_must_lie_within_the_file() {
        assert!(prepare(&fragment(None, &[(2, Some(60)), (2, None)])).is_ok());
        assert!(prepare(&fragment(Some(70), &[(2, Some(10))])).is_ok());
        // A negative data offset from the moof start: before the file.
        let before = fragment(None, &[(2, Some(-0x7FFF_FFFF))]);
        assert!(refused(&before).contains("-2147"));
        // Base data offsets past the end, directly or with the run's offset.
        assert!(refused(&fragment(Some(1 << 63), &[(2, None)])).contains("outside"));
        assert!(refused(&fragment(Some(70), &[(2, Some(1000))])).contains("outside"));
        // A negative offset back from a base inside the file is fine; a base outside the
        // file is refused whatever the runs' offsets.
        assert!(prepare(&fragment(Some(170), &[(2, Some(-100))])).is_ok());
        assert!(refused(&fragment(Some(1070), &[(2, Some(-1000))])).contains("1070"));
    }

    #[test]
    fn trun_samples_are_bounded_by_the_bytes_of_the_whole_file() {
        let file = fragment(None, &[(1, None)]);
        let max = u32::try_from(max_packets(&file)).expect("small");
        assert!(prepare(&fragment(None, &[(max / 2, None), (max / 2, None)])).is_ok());
        // Each run within the bound, the two together over it.
        let twice = fragment(None, &[(max - 10, None), (max - 10, None)]);
        assert!(refused(&twice).contains("more packets"));
        assert!(refused(&fragment(None, &[(u32::MAX, None)])).contains("more packets"));
    }

    /// A fragment whose one run (`flags` plus first-sample flags, data offset 60) records
    /// `per_sample` bytes for each of its 2 samples; where its first-sample flags start.
    fn run_with_first_sample_flags(flags: u32, first: u32, per_sample: usize) -> (Vec<u8>, usize) {
        let mut fields = 2u32.to_be_bytes().to_vec();
        fields.extend_from_slice(&60u32.to_be_bytes());
        fields.extend_from_slice(&first.to_be_bytes());
        fields.extend(std::iter::repeat_n(1, 2 * per_sample));
        let mut traf = full_box(b"tfhd", 0x02_0000, &1u32.to_be_bytes());
        let trun_at = traf.len();
        traf.extend(full_box(b"trun", 0x5 | flags, &fields));
        let mut file = mp4_box(b"ftyp", b"iso5\0\0\0\0");
        // moof and traf headers, then the trun's header, flags, count and offset.
        let at = file.len() + 16 + trun_at + 20;
        file.extend(mp4_box(b"moof", &mp4_box(b"traf", &traf)));
        file.extend(mp4_box(b"mdat", &[0; 100]));
        (file, at)
    }

    #[test]
    fn first_sample_flag_bits_symphonia_misreads_are_cleared() {
        let first_flags = |bytes: &[u8], at: usize| be_u32(&bytes[at..at + 4]);
        // No per-sample durations or sizes: both misread bits go, the others stay.
        let (file, at) = run_with_first_sample_flags(0, 0x0200_0204, 0);
        let Ok(Cow::Owned(fixed)) = prepare(&file) else {
            panic!("expected a repaired copy");
        };
        assert_eq!(first_flags(&fixed, at), 0x0200_0000);
        assert_eq!(fixed.len(), file.len());
        // Per-sample durations: only the size bit is misread.
        let (file, at) = run_with_first_sample_flags(TRUN_DURATIONS, 0x204, 4);
        let fixed = prepare(&file).expect("accepted");
        assert_eq!(first_flags(&fixed, at), 0x4);
        // Durations and sizes recorded, or neither bit set: left alone.
        let (file, _) = run_with_first_sample_flags(TRUN_DURATIONS | TRUN_SIZES, 0x204, 8);
        assert!(matches!(prepare(&file), Ok(Cow::Borrowed(_))));
        let (file, _) = run_with_first_sample_flags(0, 0x0201_0000, 0);
        assert!(matches!(prepare(&file), Ok(Cow::Borrowed(_))));
    }

    #[test]
    fn a_cut_mdat_is_shortened_to_what_is_left() {
        let mut mp4 = b"\0\0\0\x10ftypM4A \0\0\0\0".to_vec();
        mp4.extend_from_slice(b"\0\0\0\x10moov\0\0\0\0\0\0\0\0");
        let mdat_at = mp4.len();
        mp4.extend_from_slice(b"\0\0\x10\0mdat");
        mp4.extend_from_slice(&[7; 100]);
        let fixed = repair_truncated_mdat(&mp4).expect("repaired");
        assert_eq!(fixed[mdat_at..mdat_at + 4], 108u32.to_be_bytes());
        assert_eq!(fixed[mdat_at + 4..], mp4[mdat_at + 4..]);
        // 64-bit size.
        let mut large = mp4[..mdat_at].to_vec();
        large.extend_from_slice(b"\0\0\0\x01mdat");
        large.extend_from_slice(&(1u64 << 40).to_be_bytes());
        large.extend_from_slice(&[7; 100]);
        let fixed = repair_truncated_mdat(&large).expect("repaired");
        assert_eq!(fixed[mdat_at + 8..mdat_at + 16], 116u64.to_be_bytes());
        // Complete files, and files cut in another box, are left alone.
        assert!(repair_truncated_mdat(&fixed).is_none());
        assert!(repair_truncated_mdat(&mp4[..mdat_at - 4]).is_none());
    }
}
