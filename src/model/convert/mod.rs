//! Conversion of CTranslate2 ("faster-whisper") Whisper models to whisper.cpp's ggml format.
//!
//! The only Whisper weights reachable offline are CTranslate2 packages (`model.bin`,
//! `vocabulary.txt`); whisper.cpp reads its own single-file ggml format. This module turns
//! the first into the second in pure Rust, producing what whisper.cpp's
//! `models/convert-pt-to-ggml.py` writes from OpenAI's checkpoint (for [`WeightType::F16`])
//! and what its `quantize` tool then makes of that file (for the quantized types).
//!
//! # Input: CTranslate2 `model.bin`, binary version 6
//! Little-endian, no padding; a string is a `u16` length (counting a trailing NUL) and bytes.
//! ```text
//! u32 binary_version; string spec_name; u32 spec_revision
//! u32 num_variables; per variable: string name; u8 rank; u32 dims[rank]; u8 dtype;
//!                                  u32 num_bytes; data
//! u32 num_aliases;   per alias:    string alias; string target
//! ```
//! Whisper's attention projections are fused (`q|k|v` for self attention, `k|v` for cross
//! attention); they are split back into OpenAI's separate tensors here.
//!
//! # Output: whisper.cpp ggml
//! ```text
//! u32 magic 0x67676d6c; i32 hparams[11]
//! i32 n_mel; i32 n_fft; f32 mel_filters[n_mel * n_fft]
//! i32 n_tokens; per token: i32 len; bytes          (ids below <|endoftext|>)
//! per tensor: i32 n_dims; i32 name_len; i32 ggml_type; i32 dims[n_dims] (reversed); name; data
//! ```
//! The file is written to a temporary file beside the destination and renamed into place,
//! so a reader never sees a half-written model.

use std::collections::HashMap;
use std::fmt;
use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};

/// The only CTranslate2 binary format version this converter understands.
const CT2_BINARY_VERSION: u32 = 6;
/// The CTranslate2 model spec of Whisper models.
const CT2_WHISPER_SPEC: &str = "WhisperSpec";
/// Name of the weights file inside a CTranslate2 model directory.
const CT2_MODEL_FILE: &str = "model.bin";
/// Name of the vocabulary file inside a CTranslate2 model directory.
const CT2_VOCABULARY_FILE: &str = "vocabulary.txt";
/// Upper bound on a tensor's rank; CTranslate2 itself never goes beyond 4.
const CT2_MAX_RANK: usize = 8;

/// ggml's file magic ("ggml" in hex).
const GGML_FILE_MAGIC: u32 = 0x6767_6d6c;
/// ggml's quantization format version, multiplied into the `ftype` of quantized files.
const GGML_QNT_VERSION: i32 = 2;
/// The factor `GGML_QNT_VERSION` is multiplied by before being added to `ftype`.
const GGML_QNT_VERSION_FACTOR: i32 = 1000;
/// Elements per block of ggml's `q8_0` and `q5_1` quantizations.
const QUANT_BLOCK_LEN: usize = 32;
/// Bytes per `q8_0` block: f16 scale + 32 signed bytes.
const Q8_0_BLOCK_BYTES: usize = 2 + QUANT_BLOCK_LEN;
/// Bytes per `q5_1` block: f16 scale, f16 minimum, 32 high bits, 32 low nibbles.
const Q5_1_BLOCK_BYTES: usize = 2 + 2 + 4 + QUANT_BLOCK_LEN / 2;

/// The special token that ends the plain-text part of Whisper's vocabulary.
const END_OF_TEXT_TOKEN: &str = "<|endoftext|>";
/// Whisper's sample rate in Hz.
const WHISPER_SAMPLE_RATE: f64 = 16_000.0;
/// Whisper's STFT window length in samples.
const WHISPER_N_FFT: usize = 400;
/// Width of one Whisper attention head; used when a model does not store `num_heads`.
const WHISPER_HEAD_DIM: usize = 64;
/// Elements converted per chunk while streaming a tensor (a multiple of the quant block).
const CHUNK_ELEMENTS: usize = 64 * 1024;

/// How the large weight matrices are stored in the ggml file.
///
/// Whatever the choice, 1-D tensors, conv biases and positional embeddings are `f32` and
/// the conv kernels `f16`, exactly as whisper.cpp's converter and quantizer leave them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WeightType {
    /// IEEE half precision (the official `ggml-*.bin` files).
    F16,
    /// ggml `q8_0`: blocks of 32 signed bytes with one f16 scale (about 8.5 bits a weight).
    Q8_0,
    /// ggml `q5_1`: blocks of 32 five-bit values with an f16 scale and minimum (6 bits a weight).
    Q5_1,
}

impl WeightType {
    /// Every supported type, in the order the CLI lists them.
    pub const ALL: [Self; 3] = [Self::F16, Self::Q8_0, Self::Q5_1];

    /// The lower-case name used by whisper.cpp and the CLI (`f16`, `q8_0`, `q5_1`).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::F16 => "f16",
            Self::Q8_0 => "q8_0",
            Self::Q5_1 => "q5_1",
        }
    }

    /// The `ftype` hyper-parameter whisper.cpp expects in the file header: ggml's
    /// `GGML_FTYPE_*` value, plus `GGML_QNT_VERSION * 1000` for quantized files (what
    /// whisper.cpp's `quantize` tool writes).
    #[must_use]
    pub fn ggml_ftype(self) -> i32 {
        match self {
            Self::F16 => 1,
            Self::Q8_0 => GGML_QNT_VERSION * GGML_QNT_VERSION_FACTOR + 7,
            Self::Q5_1 => GGML_QNT_VERSION * GGML_QNT_VERSION_FACTOR + 9,
        }
    }

    /// The ggml tensor type of the large 2-D weight matrices.
    fn matrix_type(self) -> GgmlType {
        match self {
            Self::F16 => GgmlType::F16,
            Self::Q8_0 => GgmlType::Q8_0,
            Self::Q5_1 => GgmlType::Q5_1,
        }
    }
}

impl fmt::Display for WeightType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A weight type name that is not one of `f16`, `q8_0`, `q5_1`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown weight type {0:?}: expected one of f16, q8_0, q5_1")]
pub struct UnknownWeightType(pub String);

impl FromStr for WeightType {
    type Err = UnknownWeightType;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|weight_type| weight_type.name().eq_ignore_ascii_case(text))
            .ok_or_else(|| UnknownWeightType(text.to_owned()))
    }
}

/// Whisper's hyper-parameters, as written in the ggml header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WhisperHparams {
    /// Vocabulary size (rows of the token embedding).
    pub n_vocab: usize,
    /// Encoder positions (1500 for 30 s of audio).
    pub n_audio_ctx: usize,
    /// Encoder width.
    pub n_audio_state: usize,
    /// Encoder attention heads.
    pub n_audio_head: usize,
    /// Encoder blocks.
    pub n_audio_layer: usize,
    /// Decoder positions (448).
    pub n_text_ctx: usize,
    /// Decoder width (equal to the encoder width).
    pub n_text_state: usize,
    /// Decoder attention heads.
    pub n_text_head: usize,
    /// Decoder blocks.
    pub n_text_layer: usize,
    /// Mel bands of the input features (80, or 128 for large-v3).
    pub n_mels: usize,
}

impl WhisperHparams {
    /// Whether the model is multilingual; whisper.cpp decides it the same way.
    #[must_use]
    pub fn is_multilingual(&self) -> bool {
        self.n_vocab >= 51_865
    }
}

/// What [`convert_ct2_to_ggml`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConversionReport {
    /// The ggml file that now exists.
    pub output: PathBuf,
    /// Its size in bytes.
    pub bytes_written: u64,
    /// How the weight matrices are stored.
    pub weight_type: WeightType,
    /// The model's hyper-parameters.
    pub hparams: WhisperHparams,
    /// Number of tensors written.
    pub tensors_written: usize,
    /// Number of vocabulary entries written (the id of `<|endoftext|>`).
    pub vocab_tokens_written: usize,
}

/// Why a conversion failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConvertError {
    /// An input file could not be read.
    #[error("cannot read {path}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },

    /// The output file could not be written.
    #[error("cannot write {path}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },

    /// `model.bin` is not a CTranslate2 binary of the supported version.
    #[error(
        "{path} is not a supported CTranslate2 model: binary version {found}, expected {CT2_BINARY_VERSION}"
    )]
    UnsupportedVersion {
        /// The model file.
        path: PathBuf,
        /// The version found in the header.
        found: u32,
    },

    /// `model.bin` holds some other kind of model.
    #[error("model spec is {found:?}, expected {CT2_WHISPER_SPEC:?}")]
    UnsupportedSpec {
        /// The spec name found in the header.
        found: String,
    },

    /// `model.bin` is truncated or structurally invalid.
    #[error("model.bin is malformed at byte {offset}: {reason}")]
    Malformed {
        /// Offset of the offending field.
        offset: usize,
        /// What is wrong.
        reason: String,
    },

    /// A variable the converter needs is absent.
    #[error("variable {name:?} is missing from model.bin")]
    MissingVariable {
        /// The CTranslate2 variable name.
        name: String,
    },

    /// A variable does not have the shape the model's dimensions imply.
    #[error("variable {name:?} has shape {found:?}, expected {expected:?}")]
    ShapeMismatch {
        /// The CTranslate2 variable name.
        name: String,
        /// The shape the other dimensions imply.
        expected: Vec<usize>,
        /// The shape stored in the file.
        found: Vec<usize>,
    },

    /// A variable has a data type the converter cannot turn into weights.
    #[error(
        "variable {name:?} is stored as {dtype}; only float32, float16 and bfloat16 weights can be converted (re-export the model without int8 quantization)"
    )]
    UnsupportedDtype {
        /// The CTranslate2 variable name.
        name: String,
        /// The stored data type.
        dtype: &'static str,
    },

    /// `vocabulary.txt` is unusable or does not fit the model.
    #[error("vocabulary {path}: {reason}")]
    Vocabulary {
        /// The vocabulary file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },

    /// The model is a valid Whisper spec but cannot be represented in whisper.cpp's format.
    #[error("unsupported model: {reason}")]
    UnsupportedModel {
        /// What whisper.cpp cannot represent.
        reason: String,
    },
}

/// Converts the CTranslate2 Whisper model in `ct2_dir` (`model.bin` + `vocabulary.txt`)
/// into a whisper.cpp ggml file at `out`, storing weight matrices as `weight_type`.
///
/// The file is written to a temporary file in `out`'s directory and renamed over `out`
/// only once complete; on failure nothing is left behind. The whole `model.bin` is read
/// into memory (about 145 MB for `base`).
///
/// # Errors
/// [`ConvertError`] if an input is missing, unreadable, truncated, of another format or
/// inconsistent, or if the output cannot be written.
pub fn convert_ct2_to_ggml(
    ct2_dir: &Path,
    out: &Path,
    weight_type: WeightType,
) -> Result<ConversionReport, ConvertError> {
    let model_path = ct2_dir.join(CT2_MODEL_FILE);
    let model_bytes = fs::read(&model_path).map_err(|source| ConvertError::Read {
        path: model_path.clone(),
        source,
    })?;
    let model = Ct2Model::parse(&model_bytes, &model_path)?;
    let hparams = model.whisper_hparams()?;

    let vocabulary_path = ct2_dir.join(CT2_VOCABULARY_FILE);
    let vocabulary_text = fs::read(&vocabulary_path).map_err(|source| ConvertError::Read {
        path: vocabulary_path.clone(),
        source,
    })?;
    let vocabulary =
        text_vocabulary(&vocabulary_text, &hparams).map_err(|reason| ConvertError::Vocabulary {
            path: vocabulary_path,
            reason,
        })?;

    let plan = tensor_plan(&hparams);
    // Resolve and validate every source before creating any file.
    let sources = plan
        .iter()
        .map(|tensor| tensor.resolve(&model))
        .collect::<Result<Vec<_>, _>>()?;
    check_key_biases_are_zero(&model, &hparams)?;
    if weight_type != WeightType::F16 {
        check_quantizable(&plan)?;
    }

    let mut output = AtomicOutput::create(out)?;
    output
        .writer()
        .and_then(|writer| write_ggml(writer, &hparams, &vocabulary, &plan, &sources, weight_type))
        .map_err(|source| ConvertError::Write {
            path: out.to_path_buf(),
            source,
        })?;
    let bytes_written = output.commit()?;

    Ok(ConversionReport {
        output: out.to_path_buf(),
        bytes_written,
        weight_type,
        hparams,
        tensors_written: plan.len(),
        vocab_tokens_written: vocabulary.len(),
    })
}

mod plan;
mod quant;
mod reader;
mod retype;
mod vocab;
mod writer;

use plan::*;
use quant::*;
use reader::*;
pub(crate) use retype::{
    decoder_matrices_to_q8_0, f16_matrices_to_bf16, f32_model_to_f16, is_all_f32_model,
    is_f16_model,
};
use vocab::*;
use writer::*;

#[cfg(test)]
mod tests;
