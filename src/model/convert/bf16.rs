//! An f16 ggml file's matrices rewritten as bfloat16 (bf16), in place, for CPUs whose
//! ggml multiplies bf16 natively (the engine decides when: `engine/weights.rs`).
//!
//! Every matrix whisper.cpp creates in the file's weight type (attention, MLP, token
//! embedding) becomes bf16, rounded to nearest with ties to even (at most 2^-9 relative
//! error, within the f16 weights' own rounding of their f32 originals), and the header's
//! `ftype` says so. The convolution kernels stay f16 (whisper.cpp creates them f16
//! whatever the file's type), and the f32 tensors (biases, norms, positional embeddings)
//! stay as they are: the same split as [`WeightType`] makes when converting.

use super::*;

/// ggml's `GGML_FTYPE_MOSTLY_BF16`.
const GGML_FTYPE_BF16: i32 = 24;
/// ggml's `GGML_TYPE_BF16` (no conversion writes it, so [`GgmlType`] has no variant).
const GGML_TYPE_BF16: i32 = 30;
/// Offset of `ftype`, the last of the header's eleven hyperparameters.
const FTYPE_OFFSET: usize = 4 + 10 * 4;
/// Tensors whisper.cpp creates as f16 whatever the file's type (the conv kernels).
const CONV_PREFIX: &[u8] = b"encoder.conv";

/// Rewrites the ggml whisper model in `bytes` (an f16 file, as [`convert_ct2_to_ggml`]
/// writes it) to bf16 matrices in place, and returns how many tensors it converted.
/// `None`, with `bytes` untouched, for anything else: another type (f32, quantized), a
/// gguf file, or bytes that do not parse as a whole model; those load as they are.
#[must_use]
pub(crate) fn f16_matrices_to_bf16(bytes: &mut [u8]) -> Option<usize> {
    let plan = conversion_plan(bytes)?;
    bytes
        .get_mut(FTYPE_OFFSET..FTYPE_OFFSET + 4)?
        .copy_from_slice(&GGML_FTYPE_BF16.to_le_bytes());
    // Every f16 converted once: a table lookup per weight (the base model has 72 M).
    let table: Vec<u16> = (0..=u16::MAX).map(f16_to_bf16).collect();
    for tensor in &plan {
        bytes
            .get_mut(tensor.type_at..tensor.type_at + 4)?
            .copy_from_slice(&GGML_TYPE_BF16.to_le_bytes());
        for pair in bytes.get_mut(tensor.data.clone())?.chunks_exact_mut(2) {
            let bf16 = table[usize::from(u16::from_le_bytes([pair[0], pair[1]]))];
            pair.copy_from_slice(&bf16.to_le_bytes());
        }
    }
    Some(plan.len())
}

/// One tensor to convert: where its type field and its data are.
struct Conversion {
    type_at: usize,
    data: Range<usize>,
}

/// The tensors to convert, after checking that the whole file parses as an f16 model:
/// header, mel filters, vocabulary, then tensors up to its last byte (the layout in
/// this module's parent's docs).
fn conversion_plan(bytes: &[u8]) -> Option<Vec<Conversion>> {
    let mut reader = ByteReader::new(bytes);
    if reader.u32("magic").ok()? != GGML_FILE_MAGIC {
        return None;
    }
    reader.take(FTYPE_OFFSET - 4, "hparams").ok()?;
    if i32_at(&mut reader)? != WeightType::F16.ggml_ftype() {
        return None;
    }
    let (n_mel, n_fft) = (count(&mut reader)?, count(&mut reader)?);
    reader
        .take(n_mel.checked_mul(n_fft)?.checked_mul(4)?, "mel filters")
        .ok()?;
    for _ in 0..count(&mut reader)? {
        let length = count(&mut reader)?;
        reader.take(length, "token").ok()?;
    }
    let mut plan = Vec::new();
    while reader.remaining() > 0 {
        let (n_dims, name_length) = (count(&mut reader)?, count(&mut reader)?);
        let type_at = reader.position;
        let tensor_type = i32_at(&mut reader)?;
        if !(1..=4).contains(&n_dims) {
            return None;
        }
        let mut elements = 1usize;
        for _ in 0..n_dims {
            elements = elements.checked_mul(count(&mut reader)?)?;
        }
        let name = reader.take(name_length, "tensor name").ok()?;
        let stored = [GgmlType::F32, GgmlType::F16]
            .into_iter()
            .find(|&known| known as i32 == tensor_type)?;
        let start = reader.position;
        let size = elements.checked_mul(stored.data_size(1))?;
        reader.take(size, "tensor data").ok()?;
        if stored == GgmlType::F16 && !name.starts_with(CONV_PREFIX) {
            plan.push(Conversion {
                type_at,
                data: start..reader.position,
            });
        }
    }
    (!plan.is_empty()).then_some(plan)
}

fn i32_at(reader: &mut ByteReader<'_>) -> Option<i32> {
    reader.array("i32").ok().map(i32::from_le_bytes)
}

/// A non-negative 32-bit count or length.
fn count(reader: &mut ByteReader<'_>) -> Option<usize> {
    usize::try_from(i32_at(reader)?).ok()
}

/// The bf16 nearest to the f16 `half` (ties to even); NaN stays NaN, infinities and zeros
/// keep their sign.
fn f16_to_bf16(half: u16) -> u16 {
    let bits = f16_bits_to_f32(half).to_bits();
    if f32::from_bits(bits).is_nan() {
        // A quiet NaN of the same sign (rounding could carry a NaN into infinity).
        return ((bits >> 16) as u16) | 0x0040;
    }
    let rounding = 0x7fff + ((bits >> 16) & 1);
    (bits.wrapping_add(rounding) >> 16) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    const F32: i32 = GgmlType::F32 as i32;
    const F16: i32 = GgmlType::F16 as i32;

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
            let value = f16_bits_to_f32(half);
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
        let mut file = GGML_FILE_MAGIC.to_le_bytes().to_vec();
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
            let width = if *tensor_type == F32 { 4 } else { 2 };
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
            ("encoder.conv1.weight", F16, &one_two),
            ("decoder.blocks.0.mlp.0.weight", F16, &one_two),
            ("decoder.blocks.0.mlp.0.bias", F32, &1.0f32.to_le_bytes()),
        ];
        let original = model_file(WeightType::F16.ggml_ftype(), &tensors);
        let mut bytes = original.clone();
        assert_eq!(f16_matrices_to_bf16(&mut bytes), Some(1));
        let expected = model_file(
            GGML_FTYPE_BF16,
            &[
                tensors[0],
                (
                    "decoder.blocks.0.mlp.0.weight",
                    GGML_TYPE_BF16,
                    &[0x80, 0x3f, 0x00, 0x40],
                ),
                tensors[2],
            ],
        );
        assert_eq!(bytes, expected);
    }

    #[test]
    fn files_that_are_not_whole_f16_models_are_left_alone() {
        let matrix: [(&str, i32, &[u8]); 1] = [("decoder.token_embedding.weight", F16, &[0, 0x3c])];
        let whole = model_file(WeightType::F16.ggml_ftype(), &matrix);
        let mut cases = vec![
            model_file(WeightType::F16.ggml_ftype(), &[]),
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
