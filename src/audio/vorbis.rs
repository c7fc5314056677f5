//! A check of a Vorbis setup header's codebooks, made before symphonia's Vorbis decoder
//! reads them.
//!
//! symphonia-codec-vorbis 0.6.1 builds each codebook's Huffman tree from its codeword
//! lengths in a table of 33 entries, without checking that the lengths are at most 32 (a
//! `debug_assert!` only). A length-ordered codebook can describe longer codewords (its
//! length counter grows by one per step, whatever the count), and the decoder then indexes
//! past the table and panics (fuzz crash 14bd1fbf: a WebM Vorbis file's CodecPrivate). The
//! Vorbis I specification limits codewords to 32 bits, so such a setup header is refused
//! here, as [`Error::AudioDecode`]; so is a lookup table whose value count would trip the
//! decoder's `assert!` in `lookup1_values`.
//!
//! After the codebooks come the time-domain placeholders and the floors. A floor of type 1
//! lists the X positions of its line segments; the specification forbids two equal values,
//! and symphonia's renderer divides by the distance between neighbours (a division by
//! zero: a panic, found by fuzzing a WebM Vorbis file). A setup header that repeats an X
//! value, or lists more than 65, is refused here.
//!
//! The walk mirrors symphonia's reader field by field, so that it looks where the decoder
//! will look. Anything it does not understand (a short header, a bad sync word, limits the
//! decoder refuses anyway) ends the check without a verdict: the decoder reports it.

use crate::error::Error;

/// Longest codeword the Vorbis I specification allows, in bits.
const MAX_CODEWORD_BITS: u32 = 32;
/// Limits symphonia's codebook reader applies (it refuses larger codebooks itself).
const MAX_DIMENSIONS: u32 = 32;
const MAX_ENTRIES: u32 = 128 * 1024;
/// A codebook's sync word ("BCV", read least significant bit first).
const CODEBOOK_SYNC: u32 = 0x56_4342;
/// Most X values one floor 1 may list (Vorbis I, 7.2.2), the two implied ones included.
const MAX_FLOOR1_VALUES: usize = 65;
/// Length of the identification header that precedes the setup header in extra data that
/// is not Xiph-laced.
const IDENT_HEADER_LEN: usize = 30;

/// Vorbis bit packing: least significant bit of each byte first.
struct Bits<'a> {
    data: &'a [u8],
    /// Position in bits.
    pos: u64,
}

impl Bits<'_> {
    fn len(&self) -> u64 {
        u64::try_from(self.data.len())
            .unwrap_or(u64::MAX)
            .saturating_mul(8)
    }

    /// The next `n` (at most 32) bits as an integer, or `None` past the end.
    fn read(&mut self, n: u32) -> Option<u32> {
        let end = self.pos.checked_add(u64::from(n))?;
        if n > 32 || end > self.len() {
            return None;
        }
        let mut value = 0u32;
        for i in 0..n {
            let at = self.pos + u64::from(i);
            let byte = *self.data.get(usize::try_from(at / 8).ok()?)?;
            value |= u32::from((byte >> (at % 8)) & 1) << i;
        }
        self.pos = end;
        Some(value)
    }

    fn skip(&mut self, n: u64) -> Option<()> {
        let end = self.pos.checked_add(n)?;
        (end <= self.len()).then(|| self.pos = end)
    }
}

/// `ilog` of the Vorbis I specification: the position of the highest set bit.
fn ilog(x: u32) -> u32 {
    32 - x.leading_zeros()
}

/// The setup header in a Vorbis track's extra data: Xiph-laced (WebM/Matroska:
/// identification, comment and setup headers), or the identification header followed by
/// the setup header.
fn setup_packet(extra_data: &[u8]) -> Option<&[u8]> {
    if extra_data.first() != Some(&2) {
        return extra_data.get(IDENT_HEADER_LEN..);
    }
    let mut pos = 1usize;
    let mut lengths = [0usize; 2];
    for length in &mut lengths {
        loop {
            let byte = *extra_data.get(pos)?;
            pos += 1;
            *length = length.checked_add(usize::from(byte))?;
            if byte < 255 {
                break;
            }
        }
    }
    extra_data.get(pos.checked_add(lengths[0].checked_add(lengths[1])?)?..)
}

fn invalid(what: &str) -> Error {
    Error::decode(format!("the Vorbis setup header is invalid: {what}"))
}

/// Checks the codebooks of the Vorbis setup header in `extra_data` (see the module
/// documentation).
///
/// # Errors
///
/// [`Error::AudioDecode`] for a codeword longer than 32 bits, a lookup table the decoder
/// cannot size, or a floor 1 whose X list repeats a value or is too long.
pub(crate) fn check_setup(extra_data: &[u8]) -> Result<(), Error> {
    let Some(body) = setup_packet(extra_data).and_then(|s| s.strip_prefix(b"\x05vorbis")) else {
        return Ok(());
    };
    let mut bits = Bits { data: body, pos: 0 };
    let Some(count) = bits.read(8) else {
        return Ok(());
    };
    for _ in 0..=count {
        if check_codebook(&mut bits)?.is_none() {
            return Ok(());
        }
    }
    // Time-domain transforms: placeholders of 16 zero bits each.
    let Some(times) = bits.read(6) else {
        return Ok(());
    };
    if bits.skip(16 * (u64::from(times) + 1)).is_none() {
        return Ok(());
    }
    let Some(floors) = bits.read(6) else {
        return Ok(());
    };
    for _ in 0..=floors {
        let walked = match bits.read(16) {
            Some(0) => skip_floor0(&mut bits),
            Some(1) => check_floor1(&mut bits)?,
            _ => None,
        };
        if walked.is_none() {
            break;
        }
    }
    Ok(())
}

/// Skips a floor of type 0: order, rate, Bark map size, amplitude bits and offset, books.
fn skip_floor0(bits: &mut Bits<'_>) -> Option<()> {
    bits.skip(8 + 16 + 16 + 6 + 8)?;
    let books = bits.read(4)? + 1;
    bits.skip(8 * u64::from(books))
}

/// Reads a floor of type 1 (Vorbis I, 7.2.2) and refuses an X list with a repeated value
/// or more than [`MAX_FLOOR1_VALUES`] values; `Ok(None)` when the walk cannot go on.
fn check_floor1(bits: &mut Bits<'_>) -> Result<Option<()>, Error> {
    let Some(partitions) = bits.read(5) else {
        return Ok(None);
    };
    let mut classes = Vec::with_capacity(partitions as usize);
    for _ in 0..partitions {
        let Some(class) = bits.read(4) else {
            return Ok(None);
        };
        classes.push(class as usize);
    }
    let class_count = classes.iter().max().map_or(0, |max| max + 1);
    let mut dimensions = vec![0u32; class_count];
    for dimension in &mut dimensions {
        let (Some(d), Some(subclasses)) = (bits.read(3), bits.read(2)) else {
            return Ok(None);
        };
        *dimension = d + 1;
        let master = if subclasses == 0 { 0 } else { 8 };
        if bits.skip(master + 8 * (1u64 << subclasses)).is_none() {
            return Ok(None);
        }
    }
    let (Some(_multiplier), Some(range_bits)) = (bits.read(2), bits.read(4)) else {
        return Ok(None);
    };
    let mut xs = vec![0u32, 1 << range_bits];
    for class in classes {
        for _ in 0..dimensions[class] {
            let Some(x) = bits.read(range_bits) else {
                return Ok(None);
            };
            if xs.contains(&x) {
                return Err(invalid(&format!("floor 1 lists the X value {x} twice")));
            }
            xs.push(x);
            if xs.len() > MAX_FLOOR1_VALUES {
                return Err(invalid(&format!(
                    "floor 1 lists more than {MAX_FLOOR1_VALUES} X values"
                )));
            }
        }
    }
    Ok(Some(()))
}

/// Reads one codebook; `Ok(None)` when the walk cannot go on.
fn check_codebook(bits: &mut Bits<'_>) -> Result<Option<()>, Error> {
    let (Some(sync), Some(dimensions), Some(entries)) =
        (bits.read(24), bits.read(16), bits.read(24))
    else {
        return Ok(None);
    };
    if sync != CODEBOOK_SYNC || dimensions == 0 || dimensions > MAX_DIMENSIONS {
        return Ok(None);
    }
    if entries > MAX_ENTRIES {
        return Ok(None);
    }
    let lengths = match bits.read(1) {
        Some(1) => check_ordered_lengths(bits, entries)?,
        Some(_) => skip_unordered_lengths(bits, entries),
        None => None,
    };
    if lengths.is_none() {
        return Ok(None);
    }
    let Some(lookup_type) = bits.read(4) else {
        return Ok(None);
    };
    let values = match lookup_type {
        0 => return Ok(Some(())),
        1 => {
            // As symphonia computes it (f32), and its assert on the result.
            let value = (entries as f32).powf(1.0 / dimensions as f32).floor() as u32;
            match value.checked_pow(dimensions) {
                Some(power) if power <= entries => u64::from(value),
                _ => return Err(invalid("a lookup table of uncountable size")),
            }
        }
        2 => u64::from(entries) * u64::from(dimensions),
        _ => return Ok(None),
    };
    // Minimum and delta (32 bits each), then the value width and the sequence flag.
    if bits.skip(64).is_none() {
        return Ok(None);
    }
    let (Some(width), Some(_)) = (bits.read(4), bits.read(1)) else {
        return Ok(None);
    };
    Ok(bits.skip(values * u64::from(width + 1)))
}

/// The codeword lengths of a length-ordered codebook: runs of entries of one length, the
/// length growing by one per run (empty runs included). A run of entries longer than 32
/// bits is refused.
fn check_ordered_lengths(bits: &mut Bits<'_>, entries: u32) -> Result<Option<()>, Error> {
    let Some(first) = bits.read(5) else {
        return Ok(None);
    };
    let mut length = first + 1;
    let mut entry = 0u32;
    // Each run reads at least one bit while entries are left, so the data bounds the loop.
    while entry < entries {
        let Some(run) = bits.read(ilog(entries - entry)) else {
            return Ok(None);
        };
        if run > 0 && length > MAX_CODEWORD_BITS {
            return Err(invalid(&format!(
                "{run} codewords of {length} bits (at most {MAX_CODEWORD_BITS})"
            )));
        }
        entry = entry.saturating_add(run);
        length += 1;
    }
    Ok((entry == entries).then_some(()))
}

/// Skips the codeword lengths of a codebook that is not length-ordered (5 bits each, so at
/// most 32: nothing to check).
fn skip_unordered_lengths(bits: &mut Bits<'_>, entries: u32) -> Option<()> {
    if bits.read(1)? == 0 {
        return bits.skip(5 * u64::from(entries));
    }
    for _ in 0..entries {
        if bits.read(1)? == 1 {
            bits.skip(5)?;
        }
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Packs `(value, bits)` fields least significant bit first.
    fn pack(fields: &[(u32, u32)]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut pos = 0usize;
        for &(value, n) in fields {
            for i in 0..n {
                if pos / 8 == out.len() {
                    out.push(0);
                }
                out[pos / 8] |= u8::try_from((value >> i) & 1).expect("a bit") << (pos % 8);
                pos += 1;
            }
        }
        out
    }

    /// Xiph-laced extra data around a setup header whose codebooks are `codebooks` (bit
    /// fields after the count).
    fn extra_data(codebooks: &[&[(u32, u32)]]) -> Vec<u8> {
        let mut fields = vec![(u32::try_from(codebooks.len() - 1).expect("few"), 8)];
        for codebook in codebooks {
            fields.extend_from_slice(codebook);
        }
        let ident = [1u8; 30];
        let comment = b"\x03vorbis";
        let mut out = vec![2, 30, 7];
        out.extend_from_slice(&ident);
        out.extend_from_slice(comment);
        out.extend_from_slice(b"\x05vorbis");
        out.extend(pack(&fields));
        out
    }

    /// A codebook header: sync, dimensions, entries.
    fn header(dimensions: u32, entries: u32) -> Vec<(u32, u32)> {
        vec![(CODEBOOK_SYNC, 24), (dimensions, 16), (entries, 24)]
    }

    /// A small valid codebook (four entries, length-ordered, no lookup table).
    fn small_codebook() -> Vec<(u32, u32)> {
        let mut book = header(1, 4);
        book.extend([(1, 1), (1, 5), (2, 3), (2, 2), (0, 4)]);
        book
    }

    /// One time placeholder, then the floors given as bit fields (each with its type).
    fn with_floors(floors: &[Vec<(u32, u32)>]) -> Vec<u8> {
        let mut tail = small_codebook();
        tail.extend([(0, 6), (0, 16)]);
        tail.push((u32::try_from(floors.len() - 1).expect("few"), 6));
        for floor in floors {
            tail.extend_from_slice(floor);
        }
        extra_data(&[&tail])
    }

    /// A floor 1 with one partition of class 0 (dimensions 2, no subclasses, book 0),
    /// range bits 7 and the two X values `x`.
    fn floor1(x: [u32; 2]) -> Vec<(u32, u32)> {
        vec![
            (1, 16),
            (1, 5),
            (0, 4),
            (1, 3),
            (0, 2),
            (1, 8),
            (1, 2),
            (7, 4),
            (x[0], 7),
            (x[1], 7),
        ]
    }

    #[test]
    fn a_floor1_that_repeats_an_x_value_is_refused() {
        assert!(check_setup(&with_floors(&[floor1([10, 40])])).is_ok());
        // 0 and 128 (1 << 7) are implied: neither may be listed again, nor one value twice.
        for x in [[10, 10], [0, 40], [10, 128]] {
            let err = check_setup(&with_floors(&[floor1(x)])).expect_err("repeated X");
            assert_eq!(err.code(), "audio_decode_failed");
            assert!(err.to_string().contains("twice"), "{err}");
        }
        // A floor 0 before it is skipped field by field.
        let floor0 = vec![
            (0, 16),
            (8, 8),
            (0, 16),
            (0, 16),
            (0, 6),
            (0, 8),
            (1, 4),
            (0, 8),
            (0, 8),
        ];
        assert!(check_setup(&with_floors(&[floor0.clone(), floor1([10, 40])])).is_ok());
        assert!(check_setup(&with_floors(&[floor0, floor1([3, 3])])).is_err());
    }

    #[test]
    fn bits_are_read_least_significant_first() {
        let mut bits = Bits {
            data: &[0b1010_0110, 0xFF],
            pos: 0,
        };
        assert_eq!(bits.read(3), Some(0b110));
        assert_eq!(bits.read(5), Some(0b10100));
        assert_eq!(bits.read(4), Some(0xF));
        assert_eq!(bits.read(5), None);
        assert_eq!(pack(&[(0b110, 3), (0b10100, 5)]), [0b1010_0110]);
    }

    #[test]
    fn ordered_codeword_lengths_over_32_bits_are_refused() {
        // Four entries: one run of 2 at length 2, then 2 at length 2 + 1.
        let mut good = header(1, 4);
        good.extend([(1, 1), (1, 5), (2, 3), (2, 2), (0, 4)]);
        assert!(check_setup(&extra_data(&[&good])).is_ok());
        // Length 32, an empty run (the length grows to 33), then all four entries.
        let mut bad = header(1, 4);
        bad.extend([(1, 1), (31, 5), (0, 3), (4, 3), (0, 4)]);
        let err = check_setup(&extra_data(&[&good, &bad])).expect_err("33 bits");
        assert_eq!(err.code(), "audio_decode_failed");
        assert!(err.to_string().contains("4 codewords of 33 bits"), "{err}");
        // All four at 32 bits, the longest allowed: fine.
        let mut longest = header(1, 4);
        longest.extend([(1, 1), (31, 5), (4, 3), (0, 4)]);
        assert!(check_setup(&extra_data(&[&longest])).is_ok());
    }

    #[test]
    fn the_walk_skips_lookup_tables_and_unordered_lengths() {
        // Dense lengths (5 bits each) and a type-2 lookup table of 2 x 3 values of 3 bits.
        let mut dense = header(2, 3);
        dense.extend([(0, 1), (0, 1), (1, 5), (2, 5), (2, 5), (2, 4)]);
        dense.extend([(0, 32), (0, 32), (2, 4), (0, 1), (0, 18)]);
        // Sparse lengths: entry 0 unused, entries 1 and 2 used; a type-1 table: 3 entries
        // in 1 dimension hold 3 values.
        let mut sparse = header(1, 3);
        sparse.extend([
            (0, 1),
            (1, 1),
            (0, 1),
            (1, 1),
            (0, 5),
            (1, 1),
            (0, 5),
            (1, 4),
        ]);
        sparse.extend([(0, 32), (0, 32), (0, 4), (0, 1), (0, 3)]);
        let mut bad = header(1, 4);
        bad.extend([(1, 1), (31, 5), (0, 3), (4, 3), (0, 4)]);
        // The bad codebook is found behind the two others, so they were walked correctly.
        let err = check_setup(&extra_data(&[&dense, &sparse, &bad])).expect_err("found");
        assert!(err.to_string().contains("33 bits"), "{err}");
        assert!(check_setup(&extra_data(&[&dense, &sparse])).is_ok());
    }

    #[test]
    fn what_the_decoder_refuses_anyway_is_left_to_it() {
        let mut bad = header(1, 4);
        bad.extend([(1, 1), (31, 5), (0, 3), (4, 3), (0, 4)]);
        let mut extra = extra_data(&[&bad]);
        // A wrong sync word, a cut header, an unknown layout: no verdict.
        let sync_at = extra.len() - pack(&bad).len();
        extra[sync_at] ^= 0xFF;
        assert!(check_setup(&extra).is_ok());
        assert!(check_setup(&extra_data(&[&bad])[..40]).is_ok());
        assert!(check_setup(b"").is_ok());
        assert!(check_setup(&[2, 255, 255]).is_ok());
    }

    #[test]
    fn unlaced_extra_data_starts_with_the_identification_header() {
        let mut bad = vec![(0, 8)];
        bad.extend(header(1, 4));
        bad.extend([(1, 1), (31, 5), (0, 3), (4, 3), (0, 4)]);
        let mut extra = vec![1u8; IDENT_HEADER_LEN];
        extra.extend_from_slice(b"\x05vorbis");
        extra.extend(pack(&bad));
        assert!(check_setup(&extra).is_err());
    }
}
