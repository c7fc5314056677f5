//! A whole ggml whisper file's matrices given another type, in memory, before
//! whisper.cpp loads it (the engine decides when: `engine/binding.rs`):
//!
//! - **f16 -> bf16** ([`f16_matrices_to_bf16`]), for CPUs whose ggml multiplies bf16
//!   natively. Every matrix whisper.cpp creates in the file's weight type (attention,
//!   MLP, token embedding) becomes bf16, rounded to nearest with ties to even (at most
//!   2^-9 relative error, within the f16 weights' own rounding of their f32 originals).
//!   The convolution kernels stay f16 (whisper.cpp creates them f16 whatever the file's
//!   type unless it is all f32), and the f32 tensors (biases, norms, positional
//!   embeddings) stay as they are: the same split as [`WeightType`] makes when converting.
//! - **the decoder's matrices f16 -> q8_0** ([`decoder_matrices_to_q8_0`]): a decoder step
//!   reads every decoder matrix to write one token and is bound by those bytes; q8_0 (a
//!   32-value block of 8-bit integers and one f16 scale) moves 1.06 bytes a weight
//!   against f16's 2. The encoder's matrices stay as they are. whisper.cpp creates every
//!   matrix in the file's one type unless built with ctxscribe's decoder-type switch
//!   (`src/engine/whisper-additions.cmake`), which the engine sets while it loads such a
//!   file.
//! - **f32 -> f16** ([`f32_model_to_f16`]): an all-f32 file makes whisper.cpp create its
//!   convolution kernels in f32, which ggml's CPU convolution does not take (it aborts
//!   the process at the first encoding). Its matrices and convolution kernels become f16,
//!   the layout of the official files; biases, norms and positional embeddings stay f32.
//!
//! Each header's `ftype` says what its matrices became.

use super::*;

/// ggml's `GGML_FTYPE_ALL_F32`.
const GGML_FTYPE_F32: i32 = 0;
/// ggml's `GGML_FTYPE_MOSTLY_BF16`.
const GGML_FTYPE_BF16: i32 = 24;
/// ggml's `GGML_TYPE_BF16` (no conversion writes it, so [`GgmlType`] has no variant).
const GGML_TYPE_BF16: i32 = 30;
/// Offset of `ftype`, the last of the header's eleven hyperparameters.
const FTYPE_OFFSET: usize = 4 + 10 * 4;
/// Tensors whisper.cpp creates as f16 whatever the file's type (the conv kernels), unless
/// the file is all f32.
const CONV_PREFIX: &[u8] = b"encoder.conv";
/// The decoder's tensors (token embedding, self- and cross-attention, MLP, norms).
const DECODER_PREFIX: &[u8] = b"decoder.";

/// Whether `header` (a file's first 48 bytes are enough) starts a ggml whisper file
/// whose `ftype` is all f32: one [`f32_model_to_f16`] makes loadable.
#[must_use]
pub(crate) fn is_all_f32_model(header: &[u8]) -> bool {
    header_ftype(header) == Some(GGML_FTYPE_F32)
}

/// Whether `header` (a file's first 48 bytes are enough) starts a ggml whisper file
/// whose `ftype` is f16: one the other conversions here take.
#[must_use]
pub(crate) fn is_f16_model(header: &[u8]) -> bool {
    header_ftype(header) == Some(WeightType::F16.ggml_ftype())
}

/// The `ftype` of a ggml whisper file's header.
fn header_ftype(header: &[u8]) -> Option<i32> {
    let field = |at: usize| -> Option<[u8; 4]> { header.get(at..at + 4)?.try_into().ok() };
    (field(0).map(u32::from_le_bytes) == Some(GGML_FILE_MAGIC))
        .then(|| field(FTYPE_OFFSET).map(i32::from_le_bytes))
        .flatten()
}

/// Rewrites the ggml whisper model in `bytes` (an f16 file, as [`convert_ct2_to_ggml`]
/// writes it) to bf16 matrices in place, and returns how many tensors it converted.
/// `None`, with `bytes` untouched, for anything else: another type (f32, quantized), a
/// gguf file, or bytes that do not parse as a whole model; those load as they are.
#[must_use]
pub(crate) fn f16_matrices_to_bf16(bytes: &mut [u8]) -> Option<usize> {
    let plan: Vec<(usize, Range<usize>)> = stored_tensors(bytes, WeightType::F16.ggml_ftype())?
        .into_iter()
        .filter(|tensor| tensor.stored == GgmlType::F16 && !tensor.name.starts_with(CONV_PREFIX))
        .map(|tensor| (tensor.type_at, tensor.data))
        .collect();
    if plan.is_empty() {
        return None;
    }
    bytes
        .get_mut(FTYPE_OFFSET..FTYPE_OFFSET + 4)?
        .copy_from_slice(&GGML_FTYPE_BF16.to_le_bytes());
    // Every f16 converted once: a table lookup per weight (the base model has 72 M).
    let table: Vec<u16> = (0..=u16::MAX).map(f16_to_bf16).collect();
    for (type_at, data) in &plan {
        bytes
            .get_mut(*type_at..type_at + 4)?
            .copy_from_slice(&GGML_TYPE_BF16.to_le_bytes());
        for pair in bytes.get_mut(data.clone())?.chunks_exact_mut(2) {
            let bf16 = table[usize::from(u16::from_le_bytes([pair[0], pair[1]]))];
            pair.copy_from_slice(&bf16.to_le_bytes());
        }
    }
    Some(plan.len())
}

/// The f16 ggml whisper model in `bytes` with every f16 matrix of its decoder as q8_0
/// (ggml's reference quantization, as its `quantize` tool writes it), and how many
/// matrices that is; everything else, the header's `ftype` included, as stored. `None`
/// for anything that does not parse as a whole f16 model, has no f16 decoder matrix, or
/// has one whose rows are not whole q8_0 blocks (32 values).
#[must_use]
pub(crate) fn decoder_matrices_to_q8_0(bytes: &[u8]) -> Option<(Vec<u8>, usize)> {
    let tensors = stored_tensors(bytes, WeightType::F16.ggml_ftype())?;
    let is_decoder_matrix = |tensor: &StoredTensor<'_>| {
        tensor.stored == GgmlType::F16
            && tensor.n_dims == 2
            && tensor.name.starts_with(DECODER_PREFIX)
    };
    let matrices: Vec<&StoredTensor<'_>> =
        tensors.iter().filter(|t| is_decoder_matrix(t)).collect();
    if matrices.is_empty()
        || matrices
            .iter()
            .any(|matrix| matrix.row_len % QUANT_BLOCK_LEN != 0)
    {
        return None;
    }
    // Every f16 widened through a table (the base model's decoder has 48 M weights), the
    // matrices shared out among the cores.
    let widen: Vec<f32> = (0..=u16::MAX).map(f16_bits_to_f32).collect();
    let data: Vec<&[u8]> = matrices
        .iter()
        .map(|matrix| bytes.get(matrix.data.clone()))
        .collect::<Option<_>>()?;
    let mut quantized = in_parallel(&data, |data| f16_to_q8_0(data, &widen))?.into_iter();
    let first = tensors.first()?.header.start;
    let mut out = Vec::with_capacity(bytes.len());
    out.extend_from_slice(bytes.get(..first)?);
    for tensor in &tensors {
        let header = bytes.get(tensor.header.clone())?;
        if !is_decoder_matrix(tensor) {
            out.extend_from_slice(header);
            out.extend_from_slice(bytes.get(tensor.data.clone())?);
            continue;
        }
        tensor.push_header_as(GgmlType::Q8_0, header, &mut out);
        out.extend_from_slice(&quantized.next()?);
    }
    Some((out, matrices.len()))
}

/// f16 values (whole q8_0 blocks of them) as q8_0 blocks, widened through `widen`.
fn f16_to_q8_0(data: &[u8], widen: &[f32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() / (2 * QUANT_BLOCK_LEN) * Q8_0_BLOCK_BYTES);
    let mut block = [0f32; QUANT_BLOCK_LEN];
    for values in data.chunks_exact(2 * QUANT_BLOCK_LEN) {
        for (value, pair) in block.iter_mut().zip(values.chunks_exact(2)) {
            *value = widen[usize::from(u16::from_le_bytes([pair[0], pair[1]]))];
        }
        quantize_block_q8_0(&block, &mut out);
    }
    out
}

/// `work` of each item, in order, the items shared out among up to four threads; `None`
/// if a thread panicked (its items' results would be missing from the order).
fn in_parallel<I: Sync, T: Send>(items: &[I], work: impl Fn(&I) -> T + Sync) -> Option<Vec<T>> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
    let mut done: Vec<(usize, T)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|first| {
                let work = &work;
                scope.spawn(move || {
                    (first..items.len())
                        .step_by(threads)
                        .map(|index| (index, work(&items[index])))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let mut done = Vec::with_capacity(items.len());
        for worker in workers {
            done.extend(worker.join().ok()?);
        }
        Some(done)
    })?;
    done.sort_unstable_by_key(|&(index, _)| index);
    Some(done.into_iter().map(|(_, result)| result).collect())
}

/// The all-f32 ggml whisper model in `bytes` with its matrices and convolution kernels
/// (every tensor of two or more dimensions named `*.weight`) as f16, rounded to nearest
/// even, and the header's `ftype` f16; the rest as stored. `None` for anything that does
/// not parse as a whole all-f32 model.
#[must_use]
pub(crate) fn f32_model_to_f16(bytes: &[u8]) -> Option<Vec<u8>> {
    let tensors = stored_tensors(bytes, GGML_FTYPE_F32)?;
    let first = tensors.first()?.header.start;
    let mut out = Vec::with_capacity(bytes.len() / 2 + first);
    out.extend_from_slice(bytes.get(..first)?);
    out.get_mut(FTYPE_OFFSET..FTYPE_OFFSET + 4)?
        .copy_from_slice(&WeightType::F16.ggml_ftype().to_le_bytes());
    for tensor in &tensors {
        let header = bytes.get(tensor.header.clone())?;
        let data = bytes.get(tensor.data.clone())?;
        let matrix = tensor.stored == GgmlType::F32
            && tensor.n_dims >= 2
            && tensor.name.ends_with(b".weight");
        if !matrix {
            out.extend_from_slice(header);
            out.extend_from_slice(data);
            continue;
        }
        tensor.push_header_as(GgmlType::F16, header, &mut out);
        for value in data.chunks_exact(4) {
            let value = f32::from_le_bytes([value[0], value[1], value[2], value[3]]);
            out.extend_from_slice(&f32_to_f16_bits(value).to_le_bytes());
        }
    }
    Some(out)
}

/// One tensor of a whole ggml whisper file: where its header (from its dimension count to
/// its name's end), type field and data are.
struct StoredTensor<'a> {
    name: &'a [u8],
    n_dims: usize,
    /// Values in a row (ggml's `ne[0]`, the first dimension stored).
    row_len: usize,
    stored: GgmlType,
    header: Range<usize>,
    type_at: usize,
    data: Range<usize>,
}

impl StoredTensor<'_> {
    /// Appends this tensor's `header` (the file's bytes at [`Self::header`]) to `out`
    /// with its type field saying `stored`.
    fn push_header_as(&self, stored: GgmlType, header: &[u8], out: &mut Vec<u8>) {
        let type_in_header = self.type_at - self.header.start;
        out.extend_from_slice(&header[..type_in_header]);
        out.extend_from_slice(&(stored as i32).to_le_bytes());
        out.extend_from_slice(&header[type_in_header + 4..]);
    }
}

/// The tensors of `bytes`, after checking that the whole file parses as a model of
/// `ftype` whose tensors are f32, f16 or q8_0 (the decoder's, converted here): header, mel filters, vocabulary, then tensors up
/// to its last byte (the layout in this module's parent's docs).
fn stored_tensors(bytes: &[u8], ftype: i32) -> Option<Vec<StoredTensor<'_>>> {
    let mut reader = ByteReader::new(bytes);
    if reader.u32("magic").ok()? != GGML_FILE_MAGIC {
        return None;
    }
    reader.take(FTYPE_OFFSET - 4, "hparams").ok()?;
    if i32_at(&mut reader)? != ftype {
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
    let mut tensors = Vec::new();
    while reader.remaining() > 0 {
        let header_start = reader.position;
        let (n_dims, name_length) = (count(&mut reader)?, count(&mut reader)?);
        let type_at = reader.position;
        let tensor_type = i32_at(&mut reader)?;
        if !(1..=4).contains(&n_dims) {
            return None;
        }
        let mut elements = 1usize;
        let mut row_len = 0;
        for dim in 0..n_dims {
            let length = count(&mut reader)?;
            if dim == 0 {
                row_len = length;
            }
            elements = elements.checked_mul(length)?;
        }
        let name = reader.take(name_length, "tensor name").ok()?;
        let stored = [GgmlType::F32, GgmlType::F16, GgmlType::Q8_0]
            .into_iter()
            .find(|&known| known as i32 == tensor_type)?;
        if stored == GgmlType::Q8_0 && !row_len.is_multiple_of(QUANT_BLOCK_LEN) {
            return None;
        }
        let start = reader.position;
        let size = match stored {
            GgmlType::Q8_0 => (elements / QUANT_BLOCK_LEN).checked_mul(Q8_0_BLOCK_BYTES)?,
            _ => elements.checked_mul(stored.data_size(1))?,
        };
        reader.take(size, "tensor data").ok()?;
        tensors.push(StoredTensor {
            name,
            n_dims,
            row_len,
            stored,
            header: header_start..start,
            type_at,
            data: start..reader.position,
        });
    }
    Some(tensors)
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

    /// A tiny whisper file: header, mel filters, vocabulary, then the given 1-D tensors.
    fn model_file(ftype: i32, tensors: &[(&str, i32, &[u8])]) -> Vec<u8> {
        let lengths: Vec<[i32; 1]> = tensors
            .iter()
            .map(|&(_, tensor_type, data)| {
                let width = if tensor_type == F32 { 4 } else { 2 };
                [i32::try_from(data.len() / width).unwrap_or(0)]
            })
            .collect();
        let shaped: Vec<(&str, i32, &[i32], &[u8])> = tensors
            .iter()
            .zip(&lengths)
            .map(|(&(name, tensor_type, data), length)| (name, tensor_type, &length[..], data))
            .collect();
        shaped_model_file(ftype, &shaped)
    }

    /// A tiny whisper file with tensors of any shape (ggml order).
    fn shaped_model_file(ftype: i32, tensors: &[(&str, i32, &[i32], &[u8])]) -> Vec<u8> {
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
        for &(name, tensor_type, shape, data) in tensors {
            let n_dims = i32::try_from(shape.len()).unwrap_or(0);
            let name_length = i32::try_from(name.len()).unwrap_or(0);
            for field in [n_dims, name_length, tensor_type].iter().chain(shape) {
                file.extend_from_slice(&field.to_le_bytes());
            }
            file.extend_from_slice(name.as_bytes());
            file.extend_from_slice(data);
        }
        file
    }

    #[test]
    fn an_f32_model_gets_f16_matrices_and_conv_kernels_and_keeps_the_rest() {
        let f32s =
            |values: &[f32]| -> Vec<u8> { values.iter().flat_map(|v| v.to_le_bytes()).collect() };
        let (one_two, three) = (f32s(&[1.0, 2.0]), f32s(&[3.0]));
        let f16_one_two = [0x00, 0x3c, 0x00, 0x40];
        let stored: [(&str, i32, &[i32], &[u8]); 5] = [
            ("encoder.conv1.weight", F32, &[1, 1, 2], &one_two),
            ("encoder.conv1.bias", F32, &[1, 1], &three),
            ("encoder.positional_embedding", F32, &[1, 2], &one_two),
            ("decoder.blocks.0.mlp.0.weight", F32, &[2, 1], &one_two),
            ("decoder.blocks.0.mlp_ln.weight", F32, &[1], &three),
        ];
        let mut expected = stored;
        for matrix in [0, 3] {
            expected[matrix].1 = F16;
            expected[matrix].3 = &f16_one_two;
        }
        let original = shaped_model_file(GGML_FTYPE_F32, &stored);
        assert!(is_all_f32_model(&original[..48]));
        let converted = f32_model_to_f16(&original).expect("a whole f32 model");
        let f16_file = shaped_model_file(WeightType::F16.ggml_ftype(), &expected);
        assert_eq!(converted, f16_file);
        assert!(!is_all_f32_model(&converted));
        assert!(is_f16_model(&converted) && !is_f16_model(&original));
        // Not an all-f32 model, or not whole: nothing.
        let f16_header = shaped_model_file(WeightType::F16.ggml_ftype(), &stored);
        assert_eq!(f32_model_to_f16(&f16_header), None);
        assert_eq!(f32_model_to_f16(&original[..original.len() - 1]), None);
        assert!(!is_all_f32_model(
            b"GGUF and more, long enough to hold a header....."
        ));
        assert!(!is_all_f32_model(&original[..47]));
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
    fn decoder_matrices_become_q8_0_and_the_rest_stays_as_stored() {
        // A 32-value row: 0, 1/16, ..., 31/16 (exact in f16).
        let values: Vec<f32> = (0..32u8).map(|i| f32::from(i) / 16.0).collect();
        let row: Vec<u8> = values
            .iter()
            .flat_map(|&v| f32_to_f16_bits(v).to_le_bytes())
            .collect();
        let bias = 1.0f32.to_le_bytes();
        let stored: [(&str, i32, &[i32], &[u8]); 4] = [
            ("encoder.blocks.0.mlp.0.weight", F16, &[32, 1], &row),
            ("decoder.token_embedding.weight", F16, &[32, 1], &row),
            (
                "decoder.blocks.0.cross_attn.key.weight",
                F16,
                &[32, 1],
                &row,
            ),
            ("decoder.blocks.0.mlp.0.bias", F32, &[1], &bias),
        ];
        let original = shaped_model_file(WeightType::F16.ggml_ftype(), &stored);
        let (converted, matrices) = decoder_matrices_to_q8_0(&original).expect("an f16 model");
        assert_eq!(matrices, 2);
        let mut block = Vec::new();
        quantize_block_q8_0(&values, &mut block);
        // ggml's reference: scale max/127 as f16, then each value / scale rounded.
        assert_eq!(block.len(), Q8_0_BLOCK_BYTES);
        assert_eq!(block[2..5], [0, 4, 8]);
        assert_eq!(block[33], 127);
        let q8_0 = GgmlType::Q8_0 as i32;
        let mut expected = stored;
        expected[1].1 = q8_0;
        expected[1].3 = &block;
        expected[2].1 = q8_0;
        expected[2].3 = &block;
        assert_eq!(
            converted,
            shaped_model_file(WeightType::F16.ggml_ftype(), &expected)
        );
        // The bf16 conversion after it takes the encoder's matrices only.
        let mut both = converted;
        assert_eq!(f16_matrices_to_bf16(&mut both), Some(1));
        // Rows that are not whole blocks, no decoder matrix, or not an f16 model: nothing.
        let short_row = &row[..2 * 16];
        let odd: [(&str, i32, &[i32], &[u8]); 1] =
            [("decoder.blocks.0.mlp.0.weight", F16, &[16, 1], short_row)];
        assert_eq!(
            decoder_matrices_to_q8_0(&shaped_model_file(WeightType::F16.ggml_ftype(), &odd)),
            None
        );
        let encoder_only = shaped_model_file(WeightType::F16.ggml_ftype(), &stored[..1]);
        assert_eq!(decoder_matrices_to_q8_0(&encoder_only), None);
        assert_eq!(
            decoder_matrices_to_q8_0(&shaped_model_file(7, &stored)),
            None
        );
        assert_eq!(
            decoder_matrices_to_q8_0(&original[..original.len() - 1]),
            None
        );
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
