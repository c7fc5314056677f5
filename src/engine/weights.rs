//! The model's matrices in the 16-bit format the CPU multiplies fastest.
//!
//! The converted models (`ctxscribe models fetch`) store their weight matrices as IEEE
//! half floats (f16), Whisper's own training precision. ggml multiplies f16 matrices by
//! converting them to f32 as it goes; on a CPU with AVX-512 BF16 instructions it
//! multiplies bfloat16 (bf16) matrices natively (`vdpbf16ps`). Measured on this project's
//! machine (AMD EPYC, 2 threads, base model, the speed bench's 5 min file): encoder
//! 10.7 s -> 7.8 s, decoder 5.8 -> 5.5 ms a token, the same WER on the 62 real clips, the
//! 5 s, 60 s and 5 min sets.
//!
//! [`f16_matrices_to_bf16`] rewrites a whisper.cpp ggml file in memory before it is
//! loaded: every matrix whisper.cpp creates in the file's weight type (attention, MLP,
//! token embedding) becomes bf16 (rounded to nearest, ties to even: at most 2^-9 relative
//! error, within the f16 weights' own rounding of their f32 originals) and the file's
//! type says so. The convolution kernels stay f16 (whisper.cpp creates them f16 whatever
//! the file's type), as do biases, norms and positional embeddings (f32).

use std::ops::Range;

/// `ggml` in the file's first four bytes (little-endian).
const GGML_MAGIC: u32 = 0x6767_6d6c;
/// Offset of the model type (`ftype`) among the header's eleven hyperparameters.
const FTYPE_OFFSET: usize = 4 + 10 * 4;
/// ggml's `GGML_FTYPE_MOSTLY_F16`: matrices f16, vectors f32.
const FTYPE_F16: i32 = 1;
/// ggml's `GGML_FTYPE_MOSTLY_BF16`.
const FTYPE_BF16: i32 = 24;
/// ggml's tensor types used by an f16 whisper file.
const TYPE_F32: i32 = 0;
const TYPE_F16: i32 = 1;
/// ggml's `GGML_TYPE_BF16`.
const TYPE_BF16: i32 = 30;
/// Tensors whisper.cpp creates as f16 whatever the file's type (`vtype`).
const CONV_PREFIX: &[u8] = b"encoder.conv";

/// Rewrites the ggml whisper model in `bytes` (an f16 file, as `ctxscribe models fetch`
/// writes it) to bf16 matrices in place, and returns how many tensors it converted.
/// `None`, with `bytes` untouched, for anything else: another type (f32, quantized), a
/// gguf file, or bytes that do not parse as a whole model; those load as they are.
#[must_use]
pub(crate) fn f16_matrices_to_bf16(bytes: &mut [u8]) -> Option<usize> {
    let plan = conversion_plan(bytes)?;
    bytes
        .get_mut(FTYPE_OFFSET..FTYPE_OFFSET + 4)?
        .copy_from_slice(&FTYPE_BF16.to_le_bytes());
    // Every f16 converted once: a table lookup per weight (the base model has 72 M).
    let table: Vec<u16> = (0..=u16::MAX).map(f16_to_bf16).collect();
    for tensor in &plan {
        bytes
            .get_mut(tensor.type_at..tensor.type_at + 4)?
            .copy_from_slice(&TYPE_BF16.to_le_bytes());
        for pair in bytes.get_mut(tensor.data.clone())?.chunks_exact_mut(2) {
            let bf16 = table[usize::from(u16::from_le_bytes([pair[0], pair[1]]))];
            pair.copy_from_slice(&bf16.to_le_bytes());
        }
    }
    Some(plan.len())
}

/// Whether a model file of `file_len` bytes can be converted in memory: read whole, it
/// lives beside whisper.cpp's own copy until the load ends, so the system must report
/// three times its size available (Linux's `MemAvailable`; a system that reports
/// nothing is assumed to have room). A large model on a small machine loads as stored.
#[must_use]
pub(crate) fn room_to_convert(file_len: u64) -> bool {
    available_memory().is_none_or(|available| available >= file_len.saturating_mul(3))
}

/// Bytes of memory available to new allocations, as `/proc/meminfo` reports them.
fn available_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info
        .lines()
        .find(|line| line.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// One tensor to convert: where its type field and its data are.
struct Conversion {
    type_at: usize,
    data: Range<usize>,
}

/// The tensors to convert, after checking that the whole file parses as an f16 model:
/// header, mel filters, vocabulary, then tensors up to its last byte.
fn conversion_plan(bytes: &[u8]) -> Option<Vec<Conversion>> {
    let mut reader = Reader { bytes, at: 0 };
    if reader.u32()? != GGML_MAGIC {
        return None;
    }
    let hparams: Vec<i32> = (0..11).map(|_| reader.i32()).collect::<Option<_>>()?;
    if hparams.get(10).copied()? != FTYPE_F16 {
        return None;
    }
    let (n_mel, n_fft) = (reader.count()?, reader.count()?);
    reader.skip(n_mel.checked_mul(n_fft)?.checked_mul(4)?)?;
    for _ in 0..reader.count()? {
        let length = reader.count()?;
        reader.skip(length)?;
    }
    let mut plan = Vec::new();
    while reader.at < bytes.len() {
        let (n_dims, name_length) = (reader.count()?, reader.count()?);
        let type_at = reader.at;
        let tensor_type = reader.i32()?;
        if !(1..=4).contains(&n_dims) {
            return None;
        }
        let mut elements = 1usize;
        for _ in 0..n_dims {
            elements = elements.checked_mul(reader.count()?)?;
        }
        let name = reader.take(name_length)?;
        let width = match tensor_type {
            TYPE_F32 => 4,
            TYPE_F16 => 2,
            _ => return None,
        };
        let start = reader.at;
        reader.skip(elements.checked_mul(width)?)?;
        if tensor_type == TYPE_F16 && !name.starts_with(CONV_PREFIX) {
            plan.push(Conversion {
                type_at,
                data: start..reader.at,
            });
        }
    }
    (!plan.is_empty()).then_some(plan)
}

/// Little-endian fields read off a byte slice, every read bounds-checked.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, length: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(length)?;
        let taken = self.bytes.get(self.at..end)?;
        self.at = end;
        Some(taken)
    }

    fn skip(&mut self, length: usize) -> Option<()> {
        self.take(length).map(|_| ())
    }

    fn u32(&mut self) -> Option<u32> {
        let field: [u8; 4] = self.take(4)?.try_into().ok()?;
        Some(u32::from_le_bytes(field))
    }

    fn i32(&mut self) -> Option<i32> {
        let field: [u8; 4] = self.take(4)?.try_into().ok()?;
        Some(i32::from_le_bytes(field))
    }

    /// A non-negative 32-bit count or length.
    fn count(&mut self) -> Option<usize> {
        usize::try_from(self.i32()?).ok()
    }
}

/// The bf16 nearest to the f16 `half` (ties to even); NaN stays NaN, infinities and zeros
/// keep their sign.
fn f16_to_bf16(half: u16) -> u16 {
    let bits = f16_to_f32(half).to_bits();
    if f32::from_bits(bits).is_nan() {
        // A quiet NaN of the same sign (rounding could carry a NaN into infinity).
        return ((bits >> 16) as u16) | 0x0040;
    }
    let rounding = 0x7fff + ((bits >> 16) & 1);
    (bits.wrapping_add(rounding) >> 16) as u16
}

/// The f32 equal to the f16 `half` (every f16 is exact in f32).
fn f16_to_f32(half: u16) -> f32 {
    let sign = if half & 0x8000 == 0 { 1.0 } else { -1.0 };
    let exponent = i32::from((half >> 10) & 0x1f);
    let mantissa = f32::from(half & 0x3ff);
    sign * match exponent {
        0 => mantissa * 2f32.powi(-24),
        0x1f if mantissa == 0.0 => f32::INFINITY,
        0x1f => f32::NAN,
        _ => (1.0 + mantissa / 1024.0) * 2f32.powi(exponent - 15),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_model_that_fits_three_times_in_memory_is_converted() {
        assert!(room_to_convert(148 << 20), "the base model on this machine");
        assert!(!room_to_convert(u64::MAX / 2));
    }

    #[test]
    fn f16_values_round_to_the_nearest_bf16_ties_to_even() {
        assert_eq!(f16_to_bf16(0x3c00), 0x3f80); // 1.0
        assert_eq!(f16_to_bf16(0xc000), 0xc000); // -2.0
        assert_eq!(f16_to_bf16(0x0000), 0x0000);
        assert_eq!(f16_to_bf16(0x8000), 0x8000); // -0.0
        assert_eq!(f16_to_bf16(0x0001), 0x3380); // smallest subnormal, 2^-24
        assert_eq!(f16_to_bf16(0x7bff), 0x4780); // 65504 rounds up to 65536
        assert_eq!(f16_to_bf16(0x7c00), 0x7f80); // +inf
        assert_eq!(f16_to_bf16(0xfc00), 0xff80); // -inf
        assert!(f32::from_bits(u32::from(f16_to_bf16(0x7e00)) << 16).is_nan());
        // 1 + 4/1024 is halfway between two bf16s: the even one (1.0) wins;
        // 1 + 12/1024 is halfway too: the even one above it.
        assert_eq!(f16_to_bf16(0x3c04), 0x3f80);
        assert_eq!(f16_to_bf16(0x3c0c), 0x3f82);
        assert_eq!(f16_to_bf16(0x3c05), 0x3f81);
    }

    #[test]
    fn every_finite_f16_stays_within_bf16_rounding() {
        for half in 0..=u16::MAX {
            let value = f16_to_f32(half);
            if !value.is_finite() {
                continue;
            }
            let rounded = f32::from_bits(u32::from(f16_to_bf16(half)) << 16);
            assert!(
                (rounded - value).abs() <= value.abs() * 2f32.powi(-8),
                "{half:#06x}: {value} -> {rounded}"
            );
        }
    }

    /// A tiny f16 whisper file: header, mel filters, vocabulary, then the given tensors.
    fn model_file(ftype: i32, tensors: &[(&str, i32, &[u8])]) -> Vec<u8> {
        let mut file = GGML_MAGIC.to_le_bytes().to_vec();
        for value in [51865, 1500, 512, 8, 6, 448, 512, 8, 6, 80, ftype] {
            file.extend_from_slice(&i32::to_le_bytes(value));
        }
        file.extend_from_slice(&1i32.to_le_bytes());
        file.extend_from_slice(&1i32.to_le_bytes());
        file.extend_from_slice(&0.5f32.to_le_bytes());
        file.extend_from_slice(&1i32.to_le_bytes());
        file.extend_from_slice(&2i32.to_le_bytes());
        file.extend_from_slice(b"hi");
        for (name, tensor_type, data) in tensors {
            let width = if *tensor_type == TYPE_F32 { 4 } else { 2 };
            let elements = i32::try_from(data.len() / width).unwrap_or(0);
            for field in [
                1,
                i32::try_from(name.len()).unwrap_or(0),
                *tensor_type,
                elements,
            ] {
                file.extend_from_slice(&field.to_le_bytes());
            }
            file.extend_from_slice(name.as_bytes());
            file.extend_from_slice(data);
        }
        file
    }

    #[test]
    fn matrices_become_bf16_and_the_rest_stays_as_stored() {
        let one_two = [0x00, 0x3c, 0x00, 0x40]; // f16 1.0, 2.0
        let tensors: [(&str, i32, &[u8]); 3] = [
            ("encoder.conv1.weight", TYPE_F16, &one_two),
            ("decoder.blocks.0.mlp.0.weight", TYPE_F16, &one_two),
            (
                "decoder.blocks.0.mlp.0.bias",
                TYPE_F32,
                &1.0f32.to_le_bytes(),
            ),
        ];
        let original = model_file(FTYPE_F16, &tensors);
        let mut bytes = original.clone();
        assert_eq!(f16_matrices_to_bf16(&mut bytes), Some(1));
        let expected = model_file(
            FTYPE_BF16,
            &[
                tensors[0],
                (
                    "decoder.blocks.0.mlp.0.weight",
                    TYPE_BF16,
                    &[0x80, 0x3f, 0x00, 0x40],
                ),
                tensors[2],
            ],
        );
        assert_eq!(bytes, expected);
    }

    #[test]
    fn files_that_are_not_whole_f16_models_are_left_alone() {
        let matrix: [(&str, i32, &[u8]); 1] =
            [("decoder.token_embedding.weight", TYPE_F16, &[0, 0x3c])];
        let whole = model_file(FTYPE_F16, &matrix);
        let mut cases = vec![
            model_file(FTYPE_F16, &[]),
            model_file(7, &matrix),
            b"GGUF and more".to_vec(),
            Vec::new(),
        ];
        // Cut anywhere inside the tensor (its header or its data): not a whole model.
        for cut in whole.len() - 10..whole.len() {
            cases.push(whole[..cut].to_vec());
        }
        for case in cases {
            let mut bytes = case.clone();
            assert_eq!(f16_matrices_to_bf16(&mut bytes), None);
            assert_eq!(bytes, case);
        }
    }
}
