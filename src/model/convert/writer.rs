//! Writing the ggml file: header, mel filters, vocabulary, tensors; atomically.

use super::*;

/// ggml tensor types used in whisper.cpp files (`enum ggml_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum GgmlType {
    F32 = 0,
    F16 = 1,
    Q5_1 = 7,
    Q8_0 = 8,
}

impl GgmlType {
    /// Bytes taken by `elements` values of this type (a multiple of 32 when quantized).
    pub(super) fn data_size(self, elements: usize) -> usize {
        match self {
            Self::F32 => elements * 4,
            Self::F16 => elements * 2,
            Self::Q5_1 => elements / QUANT_BLOCK_LEN * Q5_1_BLOCK_BYTES,
            Self::Q8_0 => elements / QUANT_BLOCK_LEN * Q8_0_BLOCK_BYTES,
        }
    }
}

pub(super) fn write_i32(writer: &mut impl Write, value: i32) -> io::Result<()> {
    writer.write_all(&value.to_le_bytes())
}

/// Writes a size as the `i32` ggml uses; sizes were checked to fit when parsed.
pub(super) fn write_size(writer: &mut impl Write, value: usize) -> io::Result<()> {
    let value = i32::try_from(value)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, format!("{value} exceeds i32")))?;
    write_i32(writer, value)
}

pub(super) fn write_header(
    writer: &mut impl Write,
    hparams: &WhisperHparams,
    weight_type: WeightType,
) -> io::Result<()> {
    writer.write_all(&GGML_FILE_MAGIC.to_le_bytes())?;
    for value in [
        hparams.n_vocab,
        hparams.n_audio_ctx,
        hparams.n_audio_state,
        hparams.n_audio_head,
        hparams.n_audio_layer,
        hparams.n_text_ctx,
        hparams.n_text_state,
        hparams.n_text_head,
        hparams.n_text_layer,
        hparams.n_mels,
    ] {
        write_size(writer, value)?;
    }
    write_i32(writer, weight_type.ggml_ftype())
}

pub(super) fn write_mel_filters(
    writer: &mut impl Write,
    hparams: &WhisperHparams,
) -> io::Result<()> {
    let filters = slaney_mel_filters(WHISPER_SAMPLE_RATE, WHISPER_N_FFT, hparams.n_mels);
    write_size(writer, hparams.n_mels)?;
    write_size(writer, WHISPER_N_FFT / 2 + 1)?;
    for value in filters {
        writer.write_all(&value.to_le_bytes())?;
    }
    Ok(())
}

pub(super) fn write_vocabulary(writer: &mut impl Write, tokens: &[Vec<u8>]) -> io::Result<()> {
    write_size(writer, tokens.len())?;
    for token in tokens {
        write_size(writer, token.len())?;
        writer.write_all(token)?;
    }
    Ok(())
}

/// Writes the whole ggml file: header, mel filters, vocabulary, tensors.
pub(super) fn write_ggml(
    writer: &mut impl Write,
    hparams: &WhisperHparams,
    vocabulary: &[Vec<u8>],
    plan: &[PlannedTensor],
    sources: &[(&Ct2Variable<'_>, Range<usize>)],
    weight_type: WeightType,
) -> io::Result<()> {
    write_header(writer, hparams, weight_type)?;
    write_mel_filters(writer, hparams)?;
    write_vocabulary(writer, vocabulary)?;
    for (tensor, source) in plan.iter().zip(sources) {
        write_tensor(writer, tensor, source, weight_type)?;
    }
    Ok(())
}

pub(super) fn write_tensor(
    writer: &mut impl Write,
    tensor: &PlannedTensor,
    (variable, elements): &(&Ct2Variable<'_>, Range<usize>),
    weight_type: WeightType,
) -> io::Result<()> {
    let ggml_type = tensor.ggml_type(weight_type);
    write_size(writer, tensor.shape.len())?;
    write_size(writer, tensor.name.len())?;
    write_i32(writer, ggml_type as i32)?;
    for &dim in tensor.shape.iter().rev() {
        write_size(writer, dim)?;
    }
    writer.write_all(tensor.name.as_bytes())?;

    if ggml_type == GgmlType::F16 && variable.dtype == Ct2Dtype::F16 {
        // Same representation: copy the bytes.
        return writer.write_all(&variable.data[elements.start * 2..elements.end * 2]);
    }

    let mut values = Vec::with_capacity(CHUNK_ELEMENTS);
    let mut encoded = Vec::with_capacity(GgmlType::F32.data_size(CHUNK_ELEMENTS));
    let mut start = elements.start;
    while start < elements.end {
        let end = (start + CHUNK_ELEMENTS).min(elements.end);
        decode_into(variable, start..end, &mut values);
        encoded.clear();
        match ggml_type {
            GgmlType::F32 => encoded.extend(values.iter().flat_map(|value| value.to_le_bytes())),
            GgmlType::F16 => encoded.extend(
                values
                    .iter()
                    .flat_map(|&value| f32_to_f16_bits(value).to_le_bytes()),
            ),
            GgmlType::Q8_0 | GgmlType::Q5_1 => {
                if variable.dtype != Ct2Dtype::F16 {
                    // whisper.cpp quantizes from its f16 file.
                    values
                        .iter_mut()
                        .for_each(|value| *value = round_to_f16(*value));
                }
                // Chunks are multiples of 32 and rows were checked to be too, so blocks
                // never straddle rows.
                for block in values.chunks_exact(QUANT_BLOCK_LEN) {
                    if ggml_type == GgmlType::Q8_0 {
                        quantize_block_q8_0(block, &mut encoded);
                    } else {
                        quantize_block_q5_1(block, &mut encoded);
                    }
                }
            }
        }
        debug_assert_eq!(encoded.len(), ggml_type.data_size(end - start));
        writer.write_all(&encoded)?;
        start = end;
    }
    Ok(())
}

/// A file written under a temporary name and renamed into place on [`commit`]; dropped
/// uncommitted, it removes the temporary file.
///
/// [`commit`]: AtomicOutput::commit
pub(super) struct AtomicOutput {
    pub(super) destination: PathBuf,
    pub(super) temporary: PathBuf,
    pub(super) writer: Option<BufWriter<File>>,
}

impl AtomicOutput {
    pub(super) fn create(destination: &Path) -> Result<Self, ConvertError> {
        let file_name = destination.file_name().ok_or_else(|| ConvertError::Write {
            path: destination.to_path_buf(),
            source: io::Error::new(io::ErrorKind::InvalidInput, "output path has no file name"),
        })?;
        let mut temporary_name = std::ffi::OsString::from(".");
        temporary_name.push(file_name);
        // Unique per process and per conversion, so concurrent conversions never collide.
        static CONVERSIONS: AtomicU64 = AtomicU64::new(0);
        let conversion = CONVERSIONS.fetch_add(1, Ordering::Relaxed);
        temporary_name.push(format!(".{}-{conversion}.tmp", std::process::id()));
        let temporary = destination.with_file_name(temporary_name);
        let file = File::create(&temporary).map_err(|source| ConvertError::Write {
            path: temporary.clone(),
            source,
        })?;
        Ok(Self {
            destination: destination.to_path_buf(),
            temporary,
            writer: Some(BufWriter::with_capacity(1 << 20, file)),
        })
    }

    pub(super) fn writer(&mut self) -> io::Result<&mut BufWriter<File>> {
        self.writer
            .as_mut()
            .ok_or_else(|| io::Error::other("output already committed"))
    }

    /// Flushes, syncs and renames the file into place; returns its size.
    pub(super) fn commit(mut self) -> Result<u64, ConvertError> {
        let write_error = |source| ConvertError::Write {
            path: self.destination.clone(),
            source,
        };
        let Some(writer) = self.writer.take() else {
            return Err(write_error(io::Error::other("output already committed")));
        };
        let file = writer
            .into_inner()
            .map_err(|error| write_error(error.into_error()))?;
        file.sync_all().map_err(write_error)?;
        let size = file.metadata().map_err(write_error)?.len();
        drop(file);
        fs::rename(&self.temporary, &self.destination).map_err(write_error)?;
        self.temporary = PathBuf::new();
        Ok(size)
    }
}

impl Drop for AtomicOutput {
    fn drop(&mut self) {
        if !self.temporary.as_os_str().is_empty() {
            self.writer = None;
            let _ = fs::remove_file(&self.temporary);
        }
    }
}
