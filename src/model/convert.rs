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

// ---------------------------------------------------------------------------------------
// CTranslate2 model.bin parsing
// ---------------------------------------------------------------------------------------

/// Element type of a CTranslate2 variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ct2Dtype {
    F32,
    I8,
    I16,
    I32,
    F16,
    Bf16,
}

impl Ct2Dtype {
    fn from_code(code: u8) -> Option<Self> {
        Some(match code {
            0 => Self::F32,
            1 => Self::I8,
            2 => Self::I16,
            3 => Self::I32,
            4 => Self::F16,
            5 => Self::Bf16,
            _ => return None,
        })
    }

    fn size(self) -> usize {
        match self {
            Self::I8 => 1,
            Self::I16 | Self::F16 | Self::Bf16 => 2,
            Self::F32 | Self::I32 => 4,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::F32 => "float32",
            Self::I8 => "int8",
            Self::I16 => "int16",
            Self::I32 => "int32",
            Self::F16 => "float16",
            Self::Bf16 => "bfloat16",
        }
    }
}

/// One variable of `model.bin`, borrowing its data from the file bytes.
#[derive(Debug)]
struct Ct2Variable<'a> {
    dims: Vec<usize>,
    dtype: Ct2Dtype,
    data: &'a [u8],
}

impl Ct2Variable<'_> {
    /// The value of a rank-0 integer attribute (e.g. `num_heads`).
    fn integer_attribute(&self) -> Option<i64> {
        if !self.dims.is_empty() {
            return None;
        }
        match (self.dtype, self.data) {
            (Ct2Dtype::I8, &[byte]) => Some(i64::from(i8::from_le_bytes([byte]))),
            (Ct2Dtype::I16, &[a, b]) => Some(i64::from(i16::from_le_bytes([a, b]))),
            (Ct2Dtype::I32, &[a, b, c, d]) => Some(i64::from(i32::from_le_bytes([a, b, c, d]))),
            _ => None,
        }
    }
}

/// A parsed `model.bin`: variables by name, plus aliases.
#[derive(Debug)]
struct Ct2Model<'a> {
    variables: HashMap<String, Ct2Variable<'a>>,
    aliases: HashMap<String, String>,
}

/// A bounds-checked little-endian reader over the bytes of `model.bin`.
struct ByteReader<'a> {
    bytes: &'a [u8],
    position: usize,
}

impl<'a> ByteReader<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, position: 0 }
    }

    fn malformed(&self, reason: impl Into<String>) -> ConvertError {
        ConvertError::Malformed {
            offset: self.position,
            reason: reason.into(),
        }
    }

    fn remaining(&self) -> usize {
        self.bytes.len() - self.position
    }

    fn take(&mut self, len: usize, what: &str) -> Result<&'a [u8], ConvertError> {
        if len > self.remaining() {
            return Err(self.malformed(format!(
                "{what} needs {len} bytes but only {} remain (truncated file?)",
                self.remaining()
            )));
        }
        let taken = &self.bytes[self.position..self.position + len];
        self.position += len;
        Ok(taken)
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], ConvertError> {
        let mut array = [0; N];
        array.copy_from_slice(self.take(N, what)?);
        Ok(array)
    }

    fn u8(&mut self, what: &str) -> Result<u8, ConvertError> {
        Ok(self.array::<1>(what)?[0])
    }

    fn u16(&mut self, what: &str) -> Result<u16, ConvertError> {
        Ok(u16::from_le_bytes(self.array(what)?))
    }

    fn u32(&mut self, what: &str) -> Result<u32, ConvertError> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    /// A `u16`-length string whose length counts a trailing NUL.
    fn string(&mut self, what: &str) -> Result<String, ConvertError> {
        let start = self.position;
        let len = usize::from(self.u16(what)?);
        let raw = self.take(len, what)?;
        let text = raw.strip_suffix(&[0]).unwrap_or(raw);
        String::from_utf8(text.to_vec()).map_err(|_| ConvertError::Malformed {
            offset: start,
            reason: format!("{what} is not valid UTF-8"),
        })
    }
}

impl<'a> Ct2Model<'a> {
    fn parse(bytes: &'a [u8], path: &Path) -> Result<Self, ConvertError> {
        let mut reader = ByteReader::new(bytes);
        let version = reader.u32("binary version")?;
        if version != CT2_BINARY_VERSION {
            return Err(ConvertError::UnsupportedVersion {
                path: path.to_path_buf(),
                found: version,
            });
        }
        let spec = reader.string("spec name")?;
        if spec != CT2_WHISPER_SPEC {
            return Err(ConvertError::UnsupportedSpec { found: spec });
        }
        let _spec_revision = reader.u32("spec revision")?;

        let variable_count = reader.u32("variable count")?;
        let mut variables = HashMap::new();
        for _ in 0..variable_count {
            let name = reader.string("variable name")?;
            let variable = Self::parse_variable(&mut reader, &name)?;
            if variables.insert(name.clone(), variable).is_some() {
                return Err(reader.malformed(format!("variable {name:?} appears twice")));
            }
        }

        let alias_count = reader.u32("alias count")?;
        let mut aliases = HashMap::new();
        for _ in 0..alias_count {
            let alias = reader.string("alias name")?;
            let target = reader.string("alias target")?;
            aliases.insert(alias, target);
        }
        Ok(Self { variables, aliases })
    }

    fn parse_variable(
        reader: &mut ByteReader<'a>,
        name: &str,
    ) -> Result<Ct2Variable<'a>, ConvertError> {
        let rank = usize::from(reader.u8("variable rank")?);
        if rank > CT2_MAX_RANK {
            return Err(reader.malformed(format!("variable {name:?} has rank {rank}")));
        }
        let mut dims = Vec::with_capacity(rank);
        for _ in 0..rank {
            let dim = reader.u32("variable dimension")?;
            dims.push(usize::try_from(dim).map_err(|_| reader.malformed("dimension too large"))?);
        }
        let dtype_code = reader.u8("variable dtype")?;
        let dtype = Ct2Dtype::from_code(dtype_code).ok_or_else(|| {
            reader.malformed(format!("variable {name:?} has unknown dtype {dtype_code}"))
        })?;
        let byte_count = usize::try_from(reader.u32("variable byte count")?)
            .map_err(|_| reader.malformed("byte count too large"))?;
        let expected_bytes = dims
            .iter()
            .try_fold(dtype.size(), |acc, &dim| acc.checked_mul(dim))
            .ok_or_else(|| reader.malformed(format!("variable {name:?} is impossibly large")))?;
        if byte_count != expected_bytes {
            return Err(reader.malformed(format!(
                "variable {name:?} of shape {dims:?} and dtype {} declares {byte_count} bytes, \
                 expected {expected_bytes}",
                dtype.name()
            )));
        }
        let data = reader.take(byte_count, "variable data")?;
        Ok(Ct2Variable { dims, dtype, data })
    }

    /// Looks a variable up by name, following aliases.
    fn variable(&self, name: &str) -> Result<&Ct2Variable<'a>, ConvertError> {
        let target = self.aliases.get(name).map_or(name, String::as_str);
        self.variables
            .get(target)
            .ok_or_else(|| ConvertError::MissingVariable {
                name: name.to_owned(),
            })
    }

    fn has_variable(&self, name: &str) -> bool {
        self.variables.contains_key(name) || self.aliases.contains_key(name)
    }

    /// Looks a variable up and checks its shape.
    fn variable_with_shape(
        &self,
        name: &str,
        expected: &[usize],
    ) -> Result<&Ct2Variable<'a>, ConvertError> {
        let variable = self.variable(name)?;
        if variable.dims != expected {
            return Err(ConvertError::ShapeMismatch {
                name: name.to_owned(),
                expected: expected.to_vec(),
                found: variable.dims.clone(),
            });
        }
        Ok(variable)
    }

    /// Counts `{stack}/layer_0`, `{stack}/layer_1`, ... up to the first missing one.
    fn layer_count(&self, stack: &str) -> usize {
        (0..)
            .take_while(|index| {
                self.has_variable(&format!(
                    "{stack}/layer_{index}/self_attention/linear_0/weight"
                ))
            })
            .count()
    }

    /// Attention heads of `stack` from its `num_heads` attribute, or width / 64.
    fn head_count(&self, stack: &str, width: usize) -> Result<usize, ConvertError> {
        let name = format!("{stack}/num_heads");
        let heads = match self.variables.get(&name) {
            Some(attribute) => attribute
                .integer_attribute()
                .and_then(|heads| usize::try_from(heads).ok())
                .ok_or_else(|| ConvertError::UnsupportedModel {
                    reason: format!("{name} is not a positive integer attribute"),
                })?,
            None => width / WHISPER_HEAD_DIM,
        };
        if heads == 0 || !width.is_multiple_of(heads) {
            return Err(ConvertError::UnsupportedModel {
                reason: format!("{heads} attention heads do not divide the width {width}"),
            });
        }
        Ok(heads)
    }

    /// Derives Whisper's hyper-parameters from the variables' shapes and attributes.
    fn whisper_hparams(&self) -> Result<WhisperHparams, ConvertError> {
        let conv1 = self.variable("encoder/conv1/weight")?;
        let &[n_audio_state, n_mels, kernel] = conv1.dims.as_slice() else {
            return Err(shape_error("encoder/conv1/weight", &[0, 0, 3], &conv1.dims));
        };
        if kernel != 3 {
            return Err(shape_error(
                "encoder/conv1/weight",
                &[n_audio_state, n_mels, 3],
                &conv1.dims,
            ));
        }
        let embeddings = self.variable("decoder/embeddings/weight")?;
        let &[n_vocab, n_text_state] = embeddings.dims.as_slice() else {
            return Err(shape_error(
                "decoder/embeddings/weight",
                &[0, n_audio_state],
                &embeddings.dims,
            ));
        };
        if n_text_state != n_audio_state {
            return Err(ConvertError::UnsupportedModel {
                reason: format!(
                    "decoder width {n_text_state} differs from encoder width {n_audio_state}; \
                     whisper.cpp requires them equal"
                ),
            });
        }
        let positions = |name: &str, width: usize| -> Result<usize, ConvertError> {
            let variable = self.variable(name)?;
            match variable.dims.as_slice() {
                &[count, found_width] if found_width == width && count > 0 => Ok(count),
                found => Err(shape_error(name, &[0, width], found)),
            }
        };
        let n_audio_ctx = positions("encoder/position_encodings/encodings", n_audio_state)?;
        let n_text_ctx = positions("decoder/position_encodings/encodings", n_text_state)?;

        let hparams = WhisperHparams {
            n_vocab,
            n_audio_ctx,
            n_audio_state,
            n_audio_head: self.head_count("encoder", n_audio_state)?,
            n_audio_layer: self.layer_count("encoder"),
            n_text_ctx,
            n_text_state,
            n_text_head: self.head_count("decoder", n_text_state)?,
            n_text_layer: self.layer_count("decoder"),
            n_mels,
        };
        for (name, value) in [
            ("vocabulary", hparams.n_vocab),
            ("width", hparams.n_audio_state),
            ("mel bands", hparams.n_mels),
            ("encoder layers", hparams.n_audio_layer),
            ("decoder layers", hparams.n_text_layer),
        ] {
            if value == 0 || i32::try_from(value).is_err() {
                return Err(ConvertError::UnsupportedModel {
                    reason: format!("model has {value} {name}"),
                });
            }
        }
        Ok(hparams)
    }
}

fn shape_error(name: &str, expected: &[usize], found: &[usize]) -> ConvertError {
    ConvertError::ShapeMismatch {
        name: name.to_owned(),
        expected: expected.to_vec(),
        found: found.to_vec(),
    }
}

// ---------------------------------------------------------------------------------------
// Tensor mapping: CTranslate2 names -> OpenAI names
// ---------------------------------------------------------------------------------------

/// How a tensor is stored, following whisper.cpp's converter and quantizer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TensorRole {
    /// A 2-D weight matrix (projections, MLP, token embedding): f16 or quantized.
    Matrix,
    /// A 1-D bias or layer-norm parameter: f32.
    Vector,
    /// A 3-D convolution kernel: f16 (never quantized).
    ConvKernel,
    /// A convolution bias, reshaped to `[d, 1]`: f32.
    ConvBias,
    /// A positional embedding table: f32.
    Positional,
}

/// One output tensor and where its data comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
struct PlannedTensor {
    /// OpenAI / whisper.cpp name.
    name: String,
    /// Shape in PyTorch order (written reversed).
    shape: Vec<usize>,
    role: TensorRole,
    /// CTranslate2 variable holding the data.
    source: String,
    /// Expected shape of that variable.
    source_shape: Vec<usize>,
    /// The rows of the source taken (a part of a fused projection), or all of it.
    source_rows: Option<Range<usize>>,
}

impl PlannedTensor {
    fn ggml_type(&self, weight_type: WeightType) -> GgmlType {
        match self.role {
            TensorRole::Matrix => weight_type.matrix_type(),
            TensorRole::ConvKernel => GgmlType::F16,
            TensorRole::Vector | TensorRole::ConvBias | TensorRole::Positional => GgmlType::F32,
        }
    }

    /// Finds and validates the source variable; returns it with the element range taken.
    fn resolve<'m, 'a>(
        &self,
        model: &'m Ct2Model<'a>,
    ) -> Result<(&'m Ct2Variable<'a>, Range<usize>), ConvertError> {
        let variable = model.variable_with_shape(&self.source, &self.source_shape)?;
        match variable.dtype {
            Ct2Dtype::F32 | Ct2Dtype::F16 | Ct2Dtype::Bf16 => {}
            other => {
                return Err(ConvertError::UnsupportedDtype {
                    name: self.source.clone(),
                    dtype: other.name(),
                });
            }
        }
        let row_len: usize = self.source_shape.iter().skip(1).product();
        let rows = self
            .source_rows
            .clone()
            .unwrap_or(0..self.source_shape.first().copied().unwrap_or(1));
        Ok((variable, rows.start * row_len..rows.end * row_len))
    }
}

/// Every tensor whisper.cpp loads, in the order OpenAI's state dict lists them.
fn tensor_plan(hparams: &WhisperHparams) -> Vec<PlannedTensor> {
    let d = hparams.n_audio_state;
    let mut plan = PlanBuilder {
        tensors: Vec::new(),
        width: d,
    };

    plan.whole(
        "encoder.positional_embedding",
        TensorRole::Positional,
        "encoder/position_encodings/encodings",
        &[hparams.n_audio_ctx, d],
    );
    for (conv, input_channels) in [("conv1", hparams.n_mels), ("conv2", d)] {
        plan.whole(
            &format!("encoder.{conv}.weight"),
            TensorRole::ConvKernel,
            &format!("encoder/{conv}/weight"),
            &[d, input_channels, 3],
        );
        // whisper.cpp wants the conv bias as a [d, 1] column.
        plan.push(PlannedTensor {
            name: format!("encoder.{conv}.bias"),
            shape: vec![d, 1],
            role: TensorRole::ConvBias,
            source: format!("encoder/{conv}/bias"),
            source_shape: vec![d],
            source_rows: None,
        });
    }
    for layer in 0..hparams.n_audio_layer {
        plan.residual_block("encoder", layer, false);
    }
    plan.layer_norm("encoder.ln_post", "encoder/layer_norm");

    plan.whole(
        "decoder.positional_embedding",
        TensorRole::Positional,
        "decoder/position_encodings/encodings",
        &[hparams.n_text_ctx, d],
    );
    plan.whole(
        "decoder.token_embedding.weight",
        TensorRole::Matrix,
        "decoder/embeddings/weight",
        &[hparams.n_vocab, d],
    );
    for layer in 0..hparams.n_text_layer {
        plan.residual_block("decoder", layer, true);
    }
    plan.layer_norm("decoder.ln", "decoder/layer_norm");
    plan.tensors
}

/// Accumulates [`PlannedTensor`]s for a model of width `width`.
struct PlanBuilder {
    tensors: Vec<PlannedTensor>,
    width: usize,
}

impl PlanBuilder {
    fn push(&mut self, tensor: PlannedTensor) {
        self.tensors.push(tensor);
    }

    /// A tensor copied whole, with the same shape on both sides.
    fn whole(&mut self, ours: &str, role: TensorRole, theirs: &str, shape: &[usize]) {
        self.push(PlannedTensor {
            name: ours.to_owned(),
            shape: shape.to_vec(),
            role,
            source: theirs.to_owned(),
            source_shape: shape.to_vec(),
            source_rows: None,
        });
    }

    /// `{ours}.weight` `[outputs, inputs]` and `{ours}.bias` from a CTranslate2 linear.
    fn linear(&mut self, ours: &str, theirs: &str, outputs: usize, inputs: usize) {
        let (weight, bias) = (format!("{ours}.weight"), format!("{ours}.bias"));
        let (source_weight, source_bias) = (format!("{theirs}/weight"), format!("{theirs}/bias"));
        self.whole(
            &weight,
            TensorRole::Matrix,
            &source_weight,
            &[outputs, inputs],
        );
        self.whole(&bias, TensorRole::Vector, &source_bias, &[outputs]);
    }

    /// A layer norm: CTranslate2's `gamma`/`beta` are OpenAI's `weight`/`bias`.
    fn layer_norm(&mut self, ours: &str, theirs: &str) {
        let width = self.width;
        for (our_suffix, their_suffix) in [("weight", "gamma"), ("bias", "beta")] {
            self.whole(
                &format!("{ours}.{our_suffix}"),
                TensorRole::Vector,
                &format!("{theirs}/{their_suffix}"),
                &[width],
            );
        }
    }

    /// Splits a fused CTranslate2 linear (`[parts * d, d]` weight, `[parts * d]` bias) into
    /// `{ours}.{projection}.weight/bias`, one `projection` per part. The key projection has
    /// no bias in Whisper (CTranslate2 stores zeros, checked by [`check_key_biases_are_zero`]).
    fn fused_projections(&mut self, ours: &str, theirs: &str, projections: &[&str]) {
        let (d, parts) = (self.width, projections.len());
        for (part, projection) in projections.iter().enumerate() {
            let rows = part * d..(part + 1) * d;
            self.push(PlannedTensor {
                name: format!("{ours}.{projection}.weight"),
                shape: vec![d, d],
                role: TensorRole::Matrix,
                source: format!("{theirs}/weight"),
                source_shape: vec![parts * d, d],
                source_rows: Some(rows.clone()),
            });
            if *projection != "key" {
                self.push(PlannedTensor {
                    name: format!("{ours}.{projection}.bias"),
                    shape: vec![d],
                    role: TensorRole::Vector,
                    source: format!("{theirs}/bias"),
                    source_shape: vec![parts * d],
                    source_rows: Some(rows),
                });
            }
        }
    }

    /// One residual attention block: self attention, cross attention (decoder), MLP.
    fn residual_block(&mut self, stack: &str, layer: usize, cross_attention: bool) {
        let d = self.width;
        let ours = format!("{stack}.blocks.{layer}");
        let theirs = format!("{stack}/layer_{layer}");

        // Self attention: fused q|k|v in linear_0, output projection in linear_1.
        let self_attention = format!("{theirs}/self_attention");
        self.fused_projections(
            &format!("{ours}.attn"),
            &format!("{self_attention}/linear_0"),
            &["query", "key", "value"],
        );
        self.linear(
            &format!("{ours}.attn.out"),
            &format!("{self_attention}/linear_1"),
            d,
            d,
        );
        self.layer_norm(
            &format!("{ours}.attn_ln"),
            &format!("{self_attention}/layer_norm"),
        );

        if cross_attention {
            // Cross attention: query in linear_0, fused k|v in linear_1, output in linear_2.
            let cross = format!("{theirs}/attention");
            self.linear(
                &format!("{ours}.cross_attn.query"),
                &format!("{cross}/linear_0"),
                d,
                d,
            );
            self.fused_projections(
                &format!("{ours}.cross_attn"),
                &format!("{cross}/linear_1"),
                &["key", "value"],
            );
            self.linear(
                &format!("{ours}.cross_attn.out"),
                &format!("{cross}/linear_2"),
                d,
                d,
            );
            self.layer_norm(
                &format!("{ours}.cross_attn_ln"),
                &format!("{cross}/layer_norm"),
            );
        }

        let ffn = format!("{theirs}/ffn");
        self.linear(
            &format!("{ours}.mlp.0"),
            &format!("{ffn}/linear_0"),
            4 * d,
            d,
        );
        self.linear(
            &format!("{ours}.mlp.2"),
            &format!("{ffn}/linear_1"),
            d,
            4 * d,
        );
        self.layer_norm(&format!("{ours}.mlp_ln"), &format!("{ffn}/layer_norm"));
    }
}

/// whisper.cpp has no key bias; refuse to silently drop a non-zero one.
fn check_key_biases_are_zero(
    model: &Ct2Model<'_>,
    hparams: &WhisperHparams,
) -> Result<(), ConvertError> {
    let d = hparams.n_audio_state;
    // Fused biases as (name, parts fused, index of the key part): q|k|v and k|v.
    let self_attention = |stack: &str, layer: usize| {
        (
            format!("{stack}/layer_{layer}/self_attention/linear_0/bias"),
            3,
            1,
        )
    };
    let cross_attention = |layer: usize| {
        (
            format!("decoder/layer_{layer}/attention/linear_1/bias"),
            2,
            0,
        )
    };
    let encoder = (0..hparams.n_audio_layer).map(|layer| self_attention("encoder", layer));
    let decoder = (0..hparams.n_text_layer)
        .flat_map(|layer| [self_attention("decoder", layer), cross_attention(layer)]);
    for (name, parts, key_index) in encoder.chain(decoder) {
        let bias = model.variable_with_shape(&name, &[parts * d])?;
        let key_part = key_index * d..(key_index + 1) * d;
        let nonzero = match bias.dtype {
            Ct2Dtype::F32 => decode_f32(bias.data, key_part.clone()).any(|v| v != 0.0),
            Ct2Dtype::F16 => decode_f16(bias.data, key_part.clone()).any(|v| v != 0.0),
            Ct2Dtype::Bf16 => decode_bf16(bias.data, key_part.clone()).any(|v| v != 0.0),
            other => {
                return Err(ConvertError::UnsupportedDtype {
                    name,
                    dtype: other.name(),
                });
            }
        };
        if nonzero {
            return Err(ConvertError::UnsupportedModel {
                reason: format!(
                    "{name} has a non-zero key bias, which whisper.cpp cannot represent"
                ),
            });
        }
    }
    Ok(())
}

/// ggml quantizes rows in blocks of 32; every quantized matrix row must be a multiple.
fn check_quantizable(plan: &[PlannedTensor]) -> Result<(), ConvertError> {
    for tensor in plan
        .iter()
        .filter(|tensor| tensor.role == TensorRole::Matrix)
    {
        let row_len = tensor.shape.last().copied().unwrap_or(0);
        if !row_len.is_multiple_of(QUANT_BLOCK_LEN) {
            return Err(ConvertError::UnsupportedModel {
                reason: format!(
                    "{} has rows of {row_len} values, not a multiple of {QUANT_BLOCK_LEN}; \
                     it cannot be quantized",
                    tensor.name
                ),
            });
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Vocabulary
// ---------------------------------------------------------------------------------------

/// GPT-2's byte-level alphabet, inverted: maps each of the 256 printable stand-in
/// characters back to the byte it represents (`None` for other characters).
///
/// Printable Latin-1 bytes (`!`..=`~`, `¡`..=`¬`, `®`..=`ÿ`) stand for themselves; the other
/// 68 bytes are assigned U+0100, U+0101, ... in increasing byte order.
fn byte_level_decoder() -> Vec<Option<u8>> {
    let stands_for_itself = |byte: u8| matches!(byte, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
    let mut decoder = vec![None; 256 + 68];
    let mut next_stand_in = 256;
    for byte in 0..=u8::MAX {
        if stands_for_itself(byte) {
            decoder[usize::from(byte)] = Some(byte);
        } else {
            decoder[next_stand_in] = Some(byte);
            next_stand_in += 1;
        }
    }
    decoder
}

/// Reads `vocabulary.txt` (one byte-level token per line) and returns the raw bytes of the
/// tokens before `<|endoftext|>`, which is what whisper.cpp's files hold.
fn text_vocabulary(text: &[u8], hparams: &WhisperHparams) -> Result<Vec<Vec<u8>>, String> {
    let text = std::str::from_utf8(text).map_err(|error| format!("not UTF-8: {error}"))?;
    let text = text.strip_suffix('\n').unwrap_or(text);
    let lines: Vec<&str> = text.split('\n').collect();
    if lines.len() != hparams.n_vocab {
        return Err(format!(
            "{} tokens, but the model's embedding has {} rows",
            lines.len(),
            hparams.n_vocab
        ));
    }
    let end_of_text = lines
        .iter()
        .position(|line| *line == END_OF_TEXT_TOKEN)
        .ok_or_else(|| format!("no {END_OF_TEXT_TOKEN} token"))?;
    // whisper.cpp hard-codes the special token ids from this.
    let expected_end_of_text = if hparams.is_multilingual() {
        50_257
    } else {
        50_256
    };
    if end_of_text != expected_end_of_text {
        return Err(format!(
            "{END_OF_TEXT_TOKEN} has id {end_of_text}, but whisper.cpp expects {expected_end_of_text} \
             for a {} model",
            if hparams.is_multilingual() {
                "multilingual"
            } else {
                "English-only"
            }
        ));
    }

    let decoder = byte_level_decoder();
    lines[..end_of_text]
        .iter()
        .enumerate()
        .map(|(id, token)| {
            token
                .chars()
                .map(|stand_in| {
                    decoder
                        .get(stand_in as usize)
                        .copied()
                        .flatten()
                        .ok_or_else(|| {
                            format!(
                                "token {id} {token:?} has {stand_in:?}, not a byte-level character"
                            )
                        })
                })
                .collect()
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// Mel filters
// ---------------------------------------------------------------------------------------

/// Slaney-style Hz -> mel (librosa's `hz_to_mel(htk=False)`): linear below 1 kHz,
/// logarithmic above.
fn hz_to_slaney_mel(hz: f64) -> f64 {
    const HZ_PER_MEL: f64 = 200.0 / 3.0;
    const LOG_REGION_HZ: f64 = 1000.0;
    let log_region_mel = LOG_REGION_HZ / HZ_PER_MEL;
    let log_step = 6.4_f64.ln() / 27.0;
    if hz >= LOG_REGION_HZ {
        log_region_mel + (hz / LOG_REGION_HZ).ln() / log_step
    } else {
        hz / HZ_PER_MEL
    }
}

/// Slaney-style mel -> Hz (librosa's `mel_to_hz(htk=False)`).
fn slaney_mel_to_hz(mel: f64) -> f64 {
    const HZ_PER_MEL: f64 = 200.0 / 3.0;
    const LOG_REGION_HZ: f64 = 1000.0;
    let log_region_mel = LOG_REGION_HZ / HZ_PER_MEL;
    let log_step = 6.4_f64.ln() / 27.0;
    if mel >= log_region_mel {
        LOG_REGION_HZ * (log_step * (mel - log_region_mel)).exp()
    } else {
        HZ_PER_MEL * mel
    }
}

/// librosa's `filters.mel(sr, n_fft, n_mels, htk=False, norm="slaney")` as float32,
/// row-major `[n_mels, n_fft / 2 + 1]`, which is what OpenAI ships as `mel_filters.npz`.
///
/// The arithmetic follows librosa step by step (float64, triangle weights rounded to
/// float32, then scaled by the float64 Slaney norm and rounded again) so the values are
/// bit-identical to it.
fn slaney_mel_filters(sample_rate: f64, n_fft: usize, n_mels: usize) -> Vec<f32> {
    let n_bins = n_fft / 2 + 1;
    // numpy.fft.rfftfreq(n_fft, 1 / sample_rate)
    let bin_spacing = 1.0 / (n_fft as f64 * (1.0 / sample_rate));
    let bin_hz: Vec<f64> = (0..n_bins).map(|bin| bin as f64 * bin_spacing).collect();
    // numpy.linspace(mel(0), mel(sample_rate / 2), n_mels + 2), then back to Hz.
    let mel_low = hz_to_slaney_mel(0.0);
    let mel_high = hz_to_slaney_mel(sample_rate / 2.0);
    let point_count = n_mels + 2;
    let mel_step = (mel_high - mel_low) / (point_count - 1) as f64;
    let edge_hz: Vec<f64> = (0..point_count)
        .map(|index| {
            let mel = if index == point_count - 1 {
                mel_high
            } else {
                index as f64 * mel_step + mel_low
            };
            slaney_mel_to_hz(mel)
        })
        .collect();

    let mut filters = Vec::with_capacity(n_mels * n_bins);
    for band in 0..n_mels {
        let rise_width = edge_hz[band + 1] - edge_hz[band];
        let fall_width = edge_hz[band + 2] - edge_hz[band + 1];
        let slaney_norm = 2.0 / (edge_hz[band + 2] - edge_hz[band]);
        for &hz in &bin_hz {
            let rising = -(edge_hz[band] - hz) / rise_width;
            let falling = (edge_hz[band + 2] - hz) / fall_width;
            // Non-positive weights are +0.0, as in OpenAI's `mel_filters.npz` (librosa
            // itself leaves a -0.0 at [0][0]).
            let peak = rising.min(falling);
            let triangle = if peak > 0.0 { peak as f32 } else { 0.0 };
            filters.push((f64::from(triangle) * slaney_norm) as f32);
        }
    }
    filters
}

// ---------------------------------------------------------------------------------------
// Numeric conversions
// ---------------------------------------------------------------------------------------

/// IEEE half -> single precision (exact).
fn f16_bits_to_f32(bits: u16) -> f32 {
    let sign = u32::from(bits & 0x8000) << 16;
    let exponent = u32::from((bits >> 10) & 0x1F);
    let mantissa = u32::from(bits & 0x03FF);
    let magnitude = match (exponent, mantissa) {
        (0, 0) => 0,
        (0, _) => {
            // Subnormal: mantissa * 2^-24, exactly representable in f32.
            let magnitude = mantissa as f32 * f32::from_bits(0x3380_0000);
            return if sign == 0 { magnitude } else { -magnitude };
        }
        (0x1F, 0) => 0x7F80_0000,
        (0x1F, _) => 0x7FC0_0000 | (mantissa << 13),
        _ => ((exponent + 127 - 15) << 23) | (mantissa << 13),
    };
    f32::from_bits(sign | magnitude)
}

/// IEEE single -> half precision, rounding to nearest even (what ggml does); NaN becomes
/// the quiet NaN 0x7E00 with its sign, like ggml.
fn f32_to_f16_bits(value: f32) -> u16 {
    let bits = value.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let exponent = ((bits >> 23) & 0xFF) as i32;
    let mantissa = bits & 0x007F_FFFF;

    if exponent == 0xFF {
        return sign | if mantissa == 0 { 0x7C00 } else { 0x7E00 };
    }
    let half_exponent = exponent - 127 + 15;
    if half_exponent >= 0x1F {
        return sign | 0x7C00;
    }
    if half_exponent <= 0 {
        // Subnormal half (or zero): shift the full significand into place, rounding.
        if half_exponent < -10 {
            return sign;
        }
        let significand = mantissa | 0x0080_0000;
        let shift = (14 - half_exponent) as u32;
        let truncated = significand >> shift;
        let remainder = significand & ((1 << shift) - 1);
        let halfway = 1 << (shift - 1);
        let round_up = remainder > halfway || (remainder == halfway && truncated & 1 == 1);
        return sign | (truncated + u32::from(round_up)) as u16;
    }
    let truncated = ((half_exponent as u32) << 10) | (mantissa >> 13);
    let remainder = mantissa & 0x1FFF;
    let round_up = remainder > 0x1000 || (remainder == 0x1000 && truncated & 1 == 1);
    // A carry out of the mantissa correctly bumps the exponent (up to infinity).
    sign | (truncated + u32::from(round_up)) as u16
}

/// Rounds through half precision, as whisper.cpp's quantizer sees f16 weights.
fn round_to_f16(value: f32) -> f32 {
    f16_bits_to_f32(f32_to_f16_bits(value))
}

fn decode_f32(data: &[u8], elements: Range<usize>) -> impl Iterator<Item = f32> + '_ {
    data[elements.start * 4..elements.end * 4]
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

fn decode_f16(data: &[u8], elements: Range<usize>) -> impl Iterator<Item = f32> + '_ {
    data[elements.start * 2..elements.end * 2]
        .chunks_exact(2)
        .map(|b| f16_bits_to_f32(u16::from_le_bytes([b[0], b[1]])))
}

fn decode_bf16(data: &[u8], elements: Range<usize>) -> impl Iterator<Item = f32> + '_ {
    data[elements.start * 2..elements.end * 2]
        .chunks_exact(2)
        .map(|b| f32::from_bits(u32::from(u16::from_le_bytes([b[0], b[1]])) << 16))
}

/// Decodes `elements` of a float variable into `values` (cleared first).
fn decode_into(variable: &Ct2Variable<'_>, elements: Range<usize>, values: &mut Vec<f32>) {
    values.clear();
    match variable.dtype {
        Ct2Dtype::F16 => values.extend(decode_f16(variable.data, elements)),
        Ct2Dtype::Bf16 => values.extend(decode_bf16(variable.data, elements)),
        // Validated in `PlannedTensor::resolve`; integer types never get here.
        _ => values.extend(decode_f32(variable.data, elements)),
    }
}

/// ggml's `quantize_row_q8_0_ref` for one block of 32 values.
fn quantize_block_q8_0(block: &[f32], out: &mut Vec<u8>) {
    let abs_max = block
        .iter()
        .fold(0.0_f32, |max, value| max.max(value.abs()));
    let scale = abs_max / 127.0;
    let inverse_scale = if scale != 0.0 { 1.0 / scale } else { 0.0 };
    out.extend_from_slice(&f32_to_f16_bits(scale).to_le_bytes());
    // `as i8` saturates, like the C conversion of an in-range float.
    out.extend(
        block
            .iter()
            .map(|value| (value * inverse_scale).round() as i8 as u8),
    );
}

/// ggml's `quantize_row_q5_1_ref` for one block of 32 values.
fn quantize_block_q5_1(block: &[f32], out: &mut Vec<u8>) {
    let (min, max) = block
        .iter()
        .fold((f32::MAX, -f32::MAX), |(min, max), &value| {
            (
                if value < min { value } else { min },
                if value > max { value } else { max },
            )
        });
    let scale = (max - min) / 31.0;
    let inverse_scale = if scale != 0.0 { 1.0 / scale } else { 0.0 };
    out.extend_from_slice(&f32_to_f16_bits(scale).to_le_bytes());
    out.extend_from_slice(&f32_to_f16_bits(min).to_le_bytes());

    let half = QUANT_BLOCK_LEN / 2;
    let mut high_bits: u32 = 0;
    let mut nibbles = [0_u8; QUANT_BLOCK_LEN / 2];
    for (index, nibble) in nibbles.iter_mut().enumerate() {
        let low = ((block[index] - min) * inverse_scale + 0.5) as u8;
        let high = ((block[half + index] - min) * inverse_scale + 0.5) as u8;
        *nibble = (low & 0x0F) | ((high & 0x0F) << 4);
        high_bits |= u32::from((low & 0x10) >> 4) << index;
        high_bits |= u32::from((high & 0x10) >> 4) << (index + half);
    }
    out.extend_from_slice(&high_bits.to_le_bytes());
    out.extend_from_slice(&nibbles);
}

// ---------------------------------------------------------------------------------------
// ggml writing
// ---------------------------------------------------------------------------------------

/// ggml tensor types used in whisper.cpp files (`enum ggml_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GgmlType {
    F32 = 0,
    F16 = 1,
    Q5_1 = 7,
    Q8_0 = 8,
}

impl GgmlType {
    /// Bytes taken by `elements` values of this type (a multiple of 32 when quantized).
    fn data_size(self, elements: usize) -> usize {
        match self {
            Self::F32 => elements * 4,
            Self::F16 => elements * 2,
            Self::Q5_1 => elements / QUANT_BLOCK_LEN * Q5_1_BLOCK_BYTES,
            Self::Q8_0 => elements / QUANT_BLOCK_LEN * Q8_0_BLOCK_BYTES,
        }
    }
}

fn write_i32(writer: &mut impl Write, value: i32) -> io::Result<()> {
    writer.write_all(&value.to_le_bytes())
}

/// Writes a size as the `i32` ggml uses; sizes were checked to fit when parsed.
fn write_size(writer: &mut impl Write, value: usize) -> io::Result<()> {
    let value = i32::try_from(value)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, format!("{value} exceeds i32")))?;
    write_i32(writer, value)
}

fn write_header(
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

fn write_mel_filters(writer: &mut impl Write, hparams: &WhisperHparams) -> io::Result<()> {
    let filters = slaney_mel_filters(WHISPER_SAMPLE_RATE, WHISPER_N_FFT, hparams.n_mels);
    write_size(writer, hparams.n_mels)?;
    write_size(writer, WHISPER_N_FFT / 2 + 1)?;
    for value in filters {
        writer.write_all(&value.to_le_bytes())?;
    }
    Ok(())
}

fn write_vocabulary(writer: &mut impl Write, tokens: &[Vec<u8>]) -> io::Result<()> {
    write_size(writer, tokens.len())?;
    for token in tokens {
        write_size(writer, token.len())?;
        writer.write_all(token)?;
    }
    Ok(())
}

/// Writes the whole ggml file: header, mel filters, vocabulary, tensors.
fn write_ggml(
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

fn write_tensor(
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
struct AtomicOutput {
    destination: PathBuf,
    temporary: PathBuf,
    writer: Option<BufWriter<File>>,
}

impl AtomicOutput {
    fn create(destination: &Path) -> Result<Self, ConvertError> {
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

    fn writer(&mut self) -> io::Result<&mut BufWriter<File>> {
        self.writer
            .as_mut()
            .ok_or_else(|| io::Error::other("output already committed"))
    }

    /// Flushes, syncs and renames the file into place; returns its size.
    fn commit(mut self) -> Result<u64, ConvertError> {
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

#[cfg(test)]
mod tests {
    use super::*;

    // -----------------------------------------------------------------------------------
    // Fixtures: a tiny but complete Whisper model in CTranslate2 format
    // -----------------------------------------------------------------------------------

    /// Width of the synthetic model (one quantization block).
    const D: usize = 32;
    /// English-only vocabulary size, so `<|endoftext|>` sits at 50256.
    const VOCAB: usize = 51_864;
    const AUDIO_CTX: usize = 4;
    const TEXT_CTX: usize = 3;

    /// One CTranslate2 variable to serialize.
    #[derive(Debug, Clone)]
    struct FixtureVariable {
        name: String,
        dims: Vec<u32>,
        dtype: u8,
        data: Vec<u8>,
    }

    fn f16_bytes(values: impl IntoIterator<Item = f32>) -> Vec<u8> {
        values
            .into_iter()
            .flat_map(|value| f32_to_f16_bits(value).to_le_bytes())
            .collect()
    }

    /// Deterministic values, all exact in f16.
    fn pattern(len: usize, seed: usize) -> Vec<f32> {
        (0..len)
            .map(|index| ((index * 31 + seed * 17) % 61) as f32 / 16.0 - 1.875)
            .collect()
    }

    /// The variables of a 1-encoder-layer, 1-decoder-layer Whisper of width 32, as
    /// CTranslate2 writes them. Fused attention weights hold their row index, so the
    /// split can be checked; fused key biases are zero.
    fn whisper_fixture() -> Vec<FixtureVariable> {
        let mut variables = Vec::new();
        let mut float = |name: &str, dims: &[usize]| {
            let len = dims.iter().product();
            let seed = variables.len();
            variables.push(FixtureVariable {
                name: name.to_owned(),
                dims: dims.iter().map(|&dim| dim as u32).collect(),
                dtype: 4,
                data: f16_bytes(pattern(len, seed)),
            });
        };
        float("encoder/conv1/weight", &[D, 80, 3]);
        float("encoder/conv1/bias", &[D]);
        float("encoder/conv2/weight", &[D, D, 3]);
        float("encoder/conv2/bias", &[D]);
        float("encoder/position_encodings/encodings", &[AUDIO_CTX, D]);
        float("decoder/embeddings/weight", &[VOCAB, D]);
        float("decoder/position_encodings/encodings", &[TEXT_CTX, D]);
        for stack in ["encoder", "decoder"] {
            float(&format!("{stack}/layer_norm/gamma"), &[D]);
            float(&format!("{stack}/layer_norm/beta"), &[D]);
            let layer = format!("{stack}/layer_0");
            let mut linears = vec![
                ("self_attention/linear_1", D, D),
                ("ffn/linear_0", 4 * D, D),
                ("ffn/linear_1", D, 4 * D),
            ];
            let mut norms = vec!["self_attention", "ffn"];
            if stack == "decoder" {
                linears.extend([("attention/linear_0", D, D), ("attention/linear_2", D, D)]);
                norms.push("attention");
            }
            for (linear, outputs, inputs) in linears {
                float(&format!("{layer}/{linear}/weight"), &[outputs, inputs]);
                float(&format!("{layer}/{linear}/bias"), &[outputs]);
            }
            for norm in norms {
                float(&format!("{layer}/{norm}/layer_norm/gamma"), &[D]);
                float(&format!("{layer}/{norm}/layer_norm/beta"), &[D]);
            }
        }
        let fused = [
            ("encoder/layer_0/self_attention/linear_0", 3, 1),
            ("decoder/layer_0/self_attention/linear_0", 3, 1),
            ("decoder/layer_0/attention/linear_1", 2, 0),
        ];
        for (name, parts, key_index) in fused {
            let rows = parts * D;
            variables.push(FixtureVariable {
                name: format!("{name}/weight"),
                dims: vec![rows as u32, D as u32],
                dtype: 4,
                data: f16_bytes((0..rows * D).map(|index| (index / D) as f32)),
            });
            let bias = (0..rows).map(|row| {
                if row / D == key_index {
                    0.0
                } else {
                    row as f32 + 0.5
                }
            });
            variables.push(FixtureVariable {
                name: format!("{name}/bias"),
                dims: vec![rows as u32],
                dtype: 4,
                data: f16_bytes(bias),
            });
        }
        for stack in ["encoder", "decoder"] {
            variables.push(FixtureVariable {
                name: format!("{stack}/num_heads"),
                dims: Vec::new(),
                dtype: 2,
                data: 2_i16.to_le_bytes().to_vec(),
            });
        }
        variables
    }

    fn push_string(bytes: &mut Vec<u8>, text: &str) {
        bytes.extend_from_slice(&(text.len() as u16 + 1).to_le_bytes());
        bytes.extend_from_slice(text.as_bytes());
        bytes.push(0);
    }

    /// Serializes variables (and the tied projection alias) as a version-6 `model.bin`.
    fn ct2_bytes(variables: &[FixtureVariable]) -> Vec<u8> {
        let mut bytes = CT2_BINARY_VERSION.to_le_bytes().to_vec();
        push_string(&mut bytes, CT2_WHISPER_SPEC);
        bytes.extend_from_slice(&3_u32.to_le_bytes());
        bytes.extend_from_slice(&(variables.len() as u32).to_le_bytes());
        for variable in variables {
            push_string(&mut bytes, &variable.name);
            bytes.push(variable.dims.len() as u8);
            for dim in &variable.dims {
                bytes.extend_from_slice(&dim.to_le_bytes());
            }
            bytes.push(variable.dtype);
            bytes.extend_from_slice(&(variable.data.len() as u32).to_le_bytes());
            bytes.extend_from_slice(&variable.data);
        }
        bytes.extend_from_slice(&1_u32.to_le_bytes());
        push_string(&mut bytes, "decoder/projection/weight");
        push_string(&mut bytes, "decoder/embeddings/weight");
        bytes
    }

    /// An English-only vocabulary: a few tricky tokens, filler, then special tokens.
    fn vocabulary_fixture() -> String {
        let mut lines: Vec<String> = vec!["Ġhello".into(), String::new(), "âĢ".into()];
        lines.extend((lines.len()..50_256).map(|id| format!("t{id}")));
        lines.push(END_OF_TEXT_TOKEN.into());
        lines.extend((lines.len()..VOCAB).map(|id| format!("<|special{id}|>")));
        let mut text = lines.join("\n");
        text.push('\n');
        text
    }

    /// A directory under the system temp dir, removed when dropped.
    struct ScratchDir(PathBuf);

    impl ScratchDir {
        fn new(label: &str) -> Self {
            static NEXT: AtomicU64 = AtomicU64::new(0);
            let unique = NEXT.fetch_add(1, Ordering::Relaxed);
            let path = std::env::temp_dir().join(format!(
                "ctxscribe-convert-{label}-{}-{unique}",
                std::process::id()
            ));
            fs::create_dir_all(&path).expect("create scratch dir");
            Self(path)
        }

        /// Writes a CTranslate2 model directory from variables and a vocabulary.
        fn with_model(label: &str, model_bin: &[u8], vocabulary: &str) -> Self {
            let dir = Self::new(label);
            fs::write(dir.0.join(CT2_MODEL_FILE), model_bin).expect("write model.bin");
            fs::write(dir.0.join(CT2_VOCABULARY_FILE), vocabulary).expect("write vocabulary");
            dir
        }

        fn entries(&self) -> Vec<String> {
            let mut names: Vec<String> = fs::read_dir(&self.0)
                .expect("list scratch dir")
                .map(|entry| {
                    entry
                        .expect("dir entry")
                        .file_name()
                        .to_string_lossy()
                        .into_owned()
                })
                .collect();
            names.sort();
            names
        }
    }

    impl Drop for ScratchDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn convert_fixture(
        label: &str,
        model_bin: &[u8],
        weight_type: WeightType,
    ) -> (ScratchDir, Result<ConversionReport, ConvertError>) {
        let dir = ScratchDir::with_model(label, model_bin, &vocabulary_fixture());
        let result = convert_ct2_to_ggml(&dir.0, &dir.0.join("out.bin"), weight_type);
        (dir, result)
    }

    // -----------------------------------------------------------------------------------
    // A reader for the produced ggml files
    // -----------------------------------------------------------------------------------

    #[derive(Debug)]
    struct GgmlTensor {
        name: String,
        ggml_type: i32,
        /// ggml order (reversed from PyTorch).
        dims: Vec<usize>,
        data: Vec<u8>,
    }

    #[derive(Debug)]
    struct GgmlFile {
        magic: u32,
        hparams: [i32; 11],
        mel_shape: (i32, i32),
        mel_filters: Vec<f32>,
        tokens: Vec<Vec<u8>>,
        tensors: Vec<GgmlTensor>,
    }

    impl GgmlFile {
        fn tensor(&self, name: &str) -> &GgmlTensor {
            self.tensors
                .iter()
                .find(|tensor| tensor.name == name)
                .unwrap_or_else(|| panic!("no tensor {name}"))
        }
    }

    /// A panicking cursor over a ggml file (test code: the file is ours).
    struct Cursor<'b> {
        bytes: &'b [u8],
        position: usize,
    }

    impl<'b> Cursor<'b> {
        fn take(&mut self, len: usize) -> &'b [u8] {
            let taken = &self.bytes[self.position..self.position + len];
            self.position += len;
            taken
        }

        fn i32(&mut self) -> i32 {
            i32::from_le_bytes(self.take(4).try_into().expect("4 bytes"))
        }

        fn size(&mut self) -> usize {
            usize::try_from(self.i32()).expect("non-negative size")
        }
    }

    fn parse_ggml(bytes: &[u8]) -> GgmlFile {
        let mut cursor = Cursor { bytes, position: 0 };
        let magic = cursor.i32() as u32;
        let mut hparams = [0; 11];
        for value in &mut hparams {
            *value = cursor.i32();
        }
        let mel_shape = (cursor.i32(), cursor.i32());
        let mel_filters = cursor
            .take((mel_shape.0 * mel_shape.1) as usize * 4)
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes")))
            .collect();
        let token_count = cursor.size();
        let tokens = (0..token_count)
            .map(|_| {
                let len = cursor.size();
                cursor.take(len).to_vec()
            })
            .collect();
        let mut tensors = Vec::new();
        while cursor.position < bytes.len() {
            let n_dims = cursor.size();
            let name_len = cursor.size();
            let ggml_type = cursor.i32();
            let dims: Vec<usize> = (0..n_dims).map(|_| cursor.size()).collect();
            let name = String::from_utf8(cursor.take(name_len).to_vec()).expect("UTF-8 name");
            let elements: usize = dims.iter().product();
            let size = match ggml_type {
                0 => GgmlType::F32.data_size(elements),
                1 => GgmlType::F16.data_size(elements),
                7 => GgmlType::Q5_1.data_size(elements),
                8 => GgmlType::Q8_0.data_size(elements),
                other => panic!("unexpected ggml type {other}"),
            };
            let data = cursor.take(size).to_vec();
            tensors.push(GgmlTensor {
                name,
                ggml_type,
                dims,
                data,
            });
        }
        GgmlFile {
            magic,
            hparams,
            mel_shape,
            mel_filters,
            tokens,
            tensors,
        }
    }

    /// The tensor names whisper.cpp's loader requires (its `ASR_TENSOR_NAMES` table).
    fn whisper_cpp_tensor_names(encoder_layers: usize, decoder_layers: usize) -> Vec<String> {
        let mut names: Vec<String> = [
            "encoder.positional_embedding",
            "encoder.conv1.weight",
            "encoder.conv1.bias",
            "encoder.conv2.weight",
            "encoder.conv2.bias",
            "encoder.ln_post.weight",
            "encoder.ln_post.bias",
            "decoder.positional_embedding",
            "decoder.token_embedding.weight",
            "decoder.ln.weight",
            "decoder.ln.bias",
        ]
        .map(String::from)
        .to_vec();
        let block = [
            "mlp_ln.weight",
            "mlp_ln.bias",
            "mlp.0.weight",
            "mlp.0.bias",
            "mlp.2.weight",
            "mlp.2.bias",
            "attn_ln.weight",
            "attn_ln.bias",
            "attn.query.weight",
            "attn.query.bias",
            "attn.key.weight",
            "attn.value.weight",
            "attn.value.bias",
            "attn.out.weight",
            "attn.out.bias",
        ];
        let cross = block
            .iter()
            .filter_map(|suffix| suffix.strip_prefix("attn"))
            .map(|rest| format!("cross_attn{rest}"));
        let cross: Vec<String> = cross.collect();
        for layer in 0..encoder_layers {
            names.extend(block.iter().map(|s| format!("encoder.blocks.{layer}.{s}")));
        }
        for layer in 0..decoder_layers {
            names.extend(block.iter().map(|s| format!("decoder.blocks.{layer}.{s}")));
            names.extend(cross.iter().map(|s| format!("decoder.blocks.{layer}.{s}")));
        }
        names.sort();
        names
    }

    // -----------------------------------------------------------------------------------
    // Conversion of the synthetic model
    // -----------------------------------------------------------------------------------

    #[test]
    fn converts_a_complete_model_to_f16() {
        let (dir, result) = convert_fixture("f16", &ct2_bytes(&whisper_fixture()), WeightType::F16);
        let report = result.expect("conversion succeeds");
        assert_eq!(dir.entries(), ["model.bin", "out.bin", "vocabulary.txt"]);
        let bytes = fs::read(&report.output).expect("read output");
        assert_eq!(report.bytes_written, bytes.len() as u64);
        let file = parse_ggml(&bytes);

        assert_eq!(file.magic, GGML_FILE_MAGIC);
        assert_eq!(
            file.hparams,
            [
                VOCAB as i32,
                AUDIO_CTX as i32,
                32,
                2,
                1,
                TEXT_CTX as i32,
                32,
                2,
                1,
                80,
                1
            ]
        );
        assert_eq!(file.mel_shape, (80, 201));
        assert_eq!(file.mel_filters, slaney_mel_filters(16_000.0, 400, 80));

        assert_eq!(file.tokens.len(), 50_256);
        assert_eq!(report.vocab_tokens_written, 50_256);
        assert_eq!(file.tokens[0], b" hello");
        assert_eq!(file.tokens[1], b"");
        assert_eq!(
            file.tokens[2],
            [0xE2, 0x80],
            "partial UTF-8 is kept as raw bytes"
        );
        assert_eq!(file.tokens[50_255], b"t50255");

        let mut names: Vec<String> = file.tensors.iter().map(|t| t.name.clone()).collect();
        names.sort();
        assert_eq!(names, whisper_cpp_tensor_names(1, 1));
        assert_eq!(report.tensors_written, names.len());

        // Types and reversed dims as convert-pt-to-ggml.py writes them.
        let expect = |name: &str, ggml_type: i32, dims: &[usize]| {
            let tensor = file.tensor(name);
            assert_eq!(
                (tensor.ggml_type, tensor.dims.as_slice()),
                (ggml_type, dims),
                "{name}"
            );
        };
        expect("encoder.positional_embedding", 0, &[D, AUDIO_CTX]);
        expect("decoder.positional_embedding", 0, &[D, TEXT_CTX]);
        expect("encoder.conv1.weight", 1, &[3, 80, D]);
        expect("encoder.conv1.bias", 0, &[1, D]);
        expect("encoder.conv2.weight", 1, &[3, D, D]);
        expect("encoder.conv2.bias", 0, &[1, D]);
        expect("decoder.token_embedding.weight", 1, &[D, VOCAB]);
        expect("encoder.blocks.0.mlp.0.weight", 1, &[D, 4 * D]);
        expect("encoder.blocks.0.mlp.2.weight", 1, &[4 * D, D]);
        expect("encoder.blocks.0.mlp.0.bias", 0, &[4 * D]);
        expect("decoder.blocks.0.cross_attn_ln.weight", 0, &[D]);

        // Fused weights hold their row index: each projection gets its own rows.
        let first_f16 = |name: &str| {
            let data = &file.tensor(name).data;
            f16_bits_to_f32(u16::from_le_bytes([data[0], data[1]]))
        };
        let first_f32 = |name: &str| {
            let data = &file.tensor(name).data;
            f32::from_le_bytes([data[0], data[1], data[2], data[3]])
        };
        for stack in ["encoder", "decoder"] {
            let block = format!("{stack}.blocks.0.attn");
            assert_eq!(first_f16(&format!("{block}.query.weight")), 0.0);
            assert_eq!(first_f16(&format!("{block}.key.weight")), D as f32);
            assert_eq!(first_f16(&format!("{block}.value.weight")), 2.0 * D as f32);
            assert_eq!(first_f32(&format!("{block}.query.bias")), 0.5);
            assert_eq!(
                first_f32(&format!("{block}.value.bias")),
                2.0 * D as f32 + 0.5
            );
        }
        assert_eq!(first_f16("decoder.blocks.0.cross_attn.key.weight"), 0.0);
        assert_eq!(
            first_f16("decoder.blocks.0.cross_attn.value.weight"),
            D as f32
        );
        assert_eq!(
            first_f32("decoder.blocks.0.cross_attn.value.bias"),
            D as f32 + 0.5
        );

        // Whole tensors are copied value for value (f16 -> f32 for vectors).
        let fixture = whisper_fixture();
        let source = |name: &str| {
            let variable = fixture
                .iter()
                .find(|v| v.name == name)
                .expect("fixture variable");
            variable.data.clone()
        };
        assert_eq!(
            file.tensor("decoder.token_embedding.weight").data,
            source("decoder/embeddings/weight")
        );
        let ln_gamma: Vec<u8> = source("decoder/layer_0/attention/layer_norm/gamma")
            .chunks_exact(2)
            .flat_map(|b| f16_bits_to_f32(u16::from_le_bytes([b[0], b[1]])).to_le_bytes())
            .collect();
        assert_eq!(
            file.tensor("decoder.blocks.0.cross_attn_ln.weight").data,
            ln_gamma
        );
    }

    #[test]
    fn quantized_files_quantize_exactly_the_2d_matrices() {
        for weight_type in [WeightType::Q8_0, WeightType::Q5_1] {
            let (_dir, result) = convert_fixture(
                weight_type.name(),
                &ct2_bytes(&whisper_fixture()),
                weight_type,
            );
            let report = result.expect("conversion succeeds");
            let file = parse_ggml(&fs::read(&report.output).expect("read output"));
            assert_eq!(file.hparams[10], weight_type.ggml_ftype());
            let quant_type = weight_type.matrix_type() as i32;
            for tensor in &file.tensors {
                let stays_float = tensor.dims.len() != 2
                    || tensor.name.ends_with("positional_embedding")
                    || tensor.name.starts_with("encoder.conv");
                let expected = match (stays_float, tensor.dims.len()) {
                    (false, _) => quant_type,
                    (true, 3) => 1,
                    (true, _) => 0,
                };
                assert_eq!(tensor.ggml_type, expected, "{} {weight_type}", tensor.name);
            }
            // The f16 values the fused weights hold are exactly representable: a q8_0 key
            // block of constant 32.0 has scale 32/127 and all quants 127.
            if weight_type == WeightType::Q8_0 {
                let key = &file.tensor("encoder.blocks.0.attn.key.weight").data;
                assert_eq!(key[..2], f32_to_f16_bits(32.0 / 127.0).to_le_bytes());
                assert!(key[2..34].iter().all(|&q| q == 127));
            }
        }
    }

    #[test]
    fn failed_conversion_leaves_no_files() {
        let dir = ScratchDir::with_model("nofiles", &ct2_bytes(&whisper_fixture()), "x\n");
        let out = dir.0.join("out.bin");
        let error = convert_ct2_to_ggml(&dir.0, &out, WeightType::F16).expect_err("bad vocab");
        assert!(matches!(error, ConvertError::Vocabulary { .. }), "{error}");
        assert_eq!(dir.entries(), ["model.bin", "vocabulary.txt"]);

        let missing = ScratchDir::new("missing");
        let error = convert_ct2_to_ggml(&missing.0, &out, WeightType::F16).expect_err("no model");
        assert!(matches!(error, ConvertError::Read { .. }), "{error}");
    }

    #[test]
    fn existing_output_is_replaced_only_on_success() {
        let dir = ScratchDir::with_model("replace", &ct2_bytes(&whisper_fixture()), "x\n");
        let out = dir.0.join("out.bin");
        fs::write(&out, b"previous").expect("write previous");
        convert_ct2_to_ggml(&dir.0, &out, WeightType::F16).expect_err("bad vocab");
        assert_eq!(fs::read(&out).expect("read"), b"previous");

        fs::write(dir.0.join(CT2_VOCABULARY_FILE), vocabulary_fixture()).expect("vocab");
        convert_ct2_to_ggml(&dir.0, &out, WeightType::F16).expect("conversion succeeds");
        assert_eq!(
            fs::read(&out).expect("read")[..4],
            GGML_FILE_MAGIC.to_le_bytes()
        );
        assert_eq!(dir.entries(), ["model.bin", "out.bin", "vocabulary.txt"]);
    }

    // -----------------------------------------------------------------------------------
    // Malformed and unsupported inputs
    // -----------------------------------------------------------------------------------

    fn parse_error(bytes: &[u8]) -> ConvertError {
        Ct2Model::parse(bytes, Path::new("model.bin")).expect_err("parse fails")
    }

    #[test]
    fn every_truncation_of_a_small_model_is_an_error() {
        let variables = vec![
            FixtureVariable {
                name: "encoder/num_heads".into(),
                dims: Vec::new(),
                dtype: 2,
                data: vec![2, 0],
            },
            FixtureVariable {
                name: "encoder/conv1/bias".into(),
                dims: vec![3],
                dtype: 4,
                data: f16_bytes([1.0, 2.0, 3.0]),
            },
        ];
        let bytes = ct2_bytes(&variables);
        assert!(Ct2Model::parse(&bytes, Path::new("model.bin")).is_ok());
        for len in 0..bytes.len() {
            let error = parse_error(&bytes[..len]);
            assert!(
                matches!(error, ConvertError::Malformed { .. }),
                "{len}: {error}"
            );
        }
    }

    #[test]
    fn truncated_real_sized_model_is_rejected_before_writing() {
        let bytes = ct2_bytes(&whisper_fixture());
        for len in [bytes.len() / 3, bytes.len() - 1] {
            let (dir, result) = convert_fixture("truncated", &bytes[..len], WeightType::F16);
            let error = result.expect_err("truncated model");
            assert!(error.to_string().contains("truncated"), "{error}");
            assert_eq!(dir.entries(), ["model.bin", "vocabulary.txt"]);
        }
    }

    /// A one-variable model whose header fields can be corrupted.
    fn one_variable(dims: &[u32], dtype: u8, declared_bytes: u32, data: &[u8]) -> Vec<u8> {
        let mut bytes = CT2_BINARY_VERSION.to_le_bytes().to_vec();
        push_string(&mut bytes, CT2_WHISPER_SPEC);
        bytes.extend_from_slice(&3_u32.to_le_bytes());
        bytes.extend_from_slice(&1_u32.to_le_bytes());
        push_string(&mut bytes, "v");
        bytes.push(dims.len() as u8);
        for dim in dims {
            bytes.extend_from_slice(&dim.to_le_bytes());
        }
        bytes.push(dtype);
        bytes.extend_from_slice(&declared_bytes.to_le_bytes());
        bytes.extend_from_slice(data);
        bytes.extend_from_slice(&0_u32.to_le_bytes());
        bytes
    }

    #[test]
    fn inconsistent_headers_are_rejected_without_allocating() {
        assert!(Ct2Model::parse(&one_variable(&[2], 4, 4, &[0; 4]), Path::new("m")).is_ok());
        let cases: [(&str, Vec<u8>); 6] = [
            ("byte count", one_variable(&[2], 4, 6, &[0; 6])),
            (
                "huge dims",
                one_variable(&[u32::MAX, u32::MAX, u32::MAX], 0, 0, &[]),
            ),
            ("huge data", one_variable(&[1 << 30], 0, 1 << 31, &[0; 8])),
            ("dtype", one_variable(&[2], 9, 4, &[0; 4])),
            ("rank", one_variable(&[1; 200], 1, 1, &[0])),
            ("variable count", {
                let mut bytes = one_variable(&[2], 4, 4, &[0; 4]);
                let count_offset = 4 + 2 + CT2_WHISPER_SPEC.len() + 1 + 4;
                bytes[count_offset..count_offset + 4].copy_from_slice(&u32::MAX.to_le_bytes());
                bytes
            }),
        ];
        for (label, bytes) in cases {
            let error = parse_error(&bytes);
            assert!(
                matches!(error, ConvertError::Malformed { .. }),
                "{label}: {error}"
            );
        }
    }

    #[test]
    fn other_formats_are_named_in_the_error() {
        let mut bytes = ct2_bytes(&[]);
        bytes[..4].copy_from_slice(&5_u32.to_le_bytes());
        assert!(matches!(
            parse_error(&bytes),
            ConvertError::UnsupportedVersion { found: 5, .. }
        ));
        assert!(matches!(
            parse_error(&GGML_FILE_MAGIC.to_le_bytes()),
            ConvertError::UnsupportedVersion { .. }
        ));

        let mut bytes = CT2_BINARY_VERSION.to_le_bytes().to_vec();
        push_string(&mut bytes, "TransformerSpec");
        let error = parse_error(&bytes);
        assert!(
            matches!(&error, ConvertError::UnsupportedSpec { found } if found == "TransformerSpec"),
            "{error}"
        );
    }

    fn convert_modified(
        label: &str,
        modify: impl FnOnce(&mut Vec<FixtureVariable>),
    ) -> ConvertError {
        let mut variables = whisper_fixture();
        modify(&mut variables);
        let (dir, result) = convert_fixture(label, &ct2_bytes(&variables), WeightType::Q8_0);
        assert_eq!(dir.entries(), ["model.bin", "vocabulary.txt"], "{label}");
        result.expect_err("conversion fails")
    }

    fn variable<'v>(variables: &'v mut [FixtureVariable], name: &str) -> &'v mut FixtureVariable {
        variables
            .iter_mut()
            .find(|variable| variable.name == name)
            .expect("fixture variable")
    }

    #[test]
    fn missing_or_misshapen_variables_are_reported_by_name() {
        let error = convert_modified("missing", |variables| {
            variables.retain(|v| v.name != "decoder/layer_0/attention/linear_2/bias");
        });
        assert!(
            matches!(&error, ConvertError::MissingVariable { name }
                if name == "decoder/layer_0/attention/linear_2/bias"),
            "{error}"
        );

        let error = convert_modified("shape", |variables| {
            let ffn = variable(variables, "encoder/layer_0/ffn/linear_0/weight");
            ffn.dims = vec![2 * D as u32, 2 * D as u32];
        });
        assert!(
            matches!(&error, ConvertError::ShapeMismatch { name, expected, found }
                if name == "encoder/layer_0/ffn/linear_0/weight"
                    && *expected == [4 * D, D] && *found == [2 * D, 2 * D]),
            "{error}"
        );

        let error = convert_modified("int8", |variables| {
            let weight = variable(variables, "encoder/layer_0/ffn/linear_1/weight");
            weight.dtype = 1;
            weight.data.truncate(weight.data.len() / 2);
        });
        assert!(
            matches!(error, ConvertError::UnsupportedDtype { dtype: "int8", .. }),
            "{error}"
        );

        let error = convert_modified("keybias", |variables| {
            let bias = variable(variables, "decoder/layer_0/attention/linear_1/bias");
            bias.data[..2].copy_from_slice(&f32_to_f16_bits(0.25).to_le_bytes());
        });
        assert!(
            matches!(error, ConvertError::UnsupportedModel { .. }),
            "{error}"
        );
    }

    // -----------------------------------------------------------------------------------
    // Vocabulary
    // -----------------------------------------------------------------------------------

    #[test]
    fn byte_level_alphabet_round_trips_all_bytes() {
        let decoder = byte_level_decoder();
        let mut seen: Vec<u8> = decoder.iter().flatten().copied().collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..=u8::MAX).collect::<Vec<_>>());
        let byte = |c: char| decoder[c as usize];
        assert_eq!(byte('Ġ'), Some(b' '));
        assert_eq!(byte('Ċ'), Some(b'\n'));
        assert_eq!(byte('Ā'), Some(0x00));
        assert_eq!(byte('ł'), Some(0xA0));
        assert_eq!(byte('Ń'), Some(0xAD));
        assert_eq!(byte('A'), Some(b'A'));
        assert_eq!(byte('é'), Some(0xE9));
        assert_eq!(byte(' '), None);
    }

    fn english_hparams(n_vocab: usize) -> WhisperHparams {
        WhisperHparams {
            n_vocab,
            n_audio_ctx: 1500,
            n_audio_state: 384,
            n_audio_head: 6,
            n_audio_layer: 4,
            n_text_ctx: 448,
            n_text_state: 384,
            n_text_head: 6,
            n_text_layer: 4,
            n_mels: 80,
        }
    }

    #[test]
    fn vocabulary_must_match_the_model() {
        let text = vocabulary_fixture();
        let tokens = text_vocabulary(text.as_bytes(), &english_hparams(VOCAB)).expect("valid");
        assert_eq!(tokens.len(), 50_256);
        // Without the trailing newline too.
        let trimmed = text.trim_end_matches('\n');
        assert_eq!(
            text_vocabulary(trimmed.as_bytes(), &english_hparams(VOCAB)).expect("valid"),
            tokens
        );

        let vocabulary_error = |text: &str, n_vocab: usize| match text_vocabulary(
            text.as_bytes(),
            &english_hparams(n_vocab),
        ) {
            Ok(_) => panic!("vocabulary accepted"),
            Err(error) => error,
        };
        let error = vocabulary_error(&text, VOCAB + 1);
        assert!(error.contains("51864 tokens"), "{error}");
        // A multilingual vocabulary size needs <|endoftext|> at 50257.
        let error = vocabulary_error(&format!("{text}<|extra|>\n"), VOCAB + 1);
        assert!(error.contains("whisper.cpp expects 50257"), "{error}");
        let error = vocabulary_error(&text.replacen("Ġhello", "a b", 1), VOCAB);
        assert!(error.contains("token 0"), "{error}");
        let no_end = text.replacen(END_OF_TEXT_TOKEN, "x", 1);
        assert!(text_vocabulary(no_end.as_bytes(), &english_hparams(VOCAB)).is_err());
    }

    // -----------------------------------------------------------------------------------
    // Mel filters
    // -----------------------------------------------------------------------------------

    #[test]
    fn mel_filters_match_librosa_bit_for_bit() {
        let filters = slaney_mel_filters(16_000.0, 400, 80);
        assert_eq!(filters.len(), 80 * 201);
        let at = |band: usize, bin: usize| filters[band * 201 + bin].to_bits();
        // librosa.filters.mel(sr=16000, n_fft=400, n_mels=80) (librosa 0.11, numpy 2.4).
        let expected = [
            (0, 1, 0x3ccb_aca4),
            (1, 1, 0x3b02_7873),
            (1, 2, 0x3cbb_5d95),
            (10, 11, 0x3ba2_584f),
            (39, 41, 0x3c3c_33a5),
            (60, 100, 0x0000_0000),
            (79, 186, 0x39c0_473c),
            (79, 199, 0x39eb_476a),
            (79, 200, 0x0000_0000),
            // librosa has -0.0 here; OpenAI's mel_filters.npz and ggml files have +0.0.
            (0, 0, 0x0000_0000),
        ];
        for (band, bin, bits) in expected {
            assert_eq!(at(band, bin), bits, "filter [{band}][{bin}]");
        }
        let nonzero_per_band: Vec<usize> = filters
            .chunks(201)
            .map(|band| band.iter().filter(|&&w| w != 0.0).count())
            .collect();
        let expected_nonzero = [
            1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
            2, 2, 2, 2, 3, 3, 2, 3, 3, 3, 4, 3, 3, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 6, 6, 6, 6,
            7, 7, 7, 8, 8, 8, 8, 8, 9, 10, 10, 10, 10, 11, 11, 11, 13, 13, 13, 14, 14, 14,
        ];
        assert_eq!(nonzero_per_band, expected_nonzero);
        let sum: f64 = filters.iter().map(|&w| f64::from(w)).sum();
        assert!((sum - 1.999_024_092_387_117).abs() < 1e-12, "{sum}");
    }

    #[test]
    fn mel_scale_is_linear_below_1khz_and_logarithmic_above() {
        assert_eq!(hz_to_slaney_mel(0.0), 0.0);
        assert!((hz_to_slaney_mel(1000.0) - 15.0).abs() < 1e-12);
        assert!((hz_to_slaney_mel(6400.0) - 42.0).abs() < 1e-12);
        for hz in [0.0, 123.0, 999.0, 1000.0, 4321.0, 8000.0] {
            assert!((slaney_mel_to_hz(hz_to_slaney_mel(hz)) - hz).abs() < 1e-9);
        }
    }

    // -----------------------------------------------------------------------------------
    // Numeric conversions and quantization
    // -----------------------------------------------------------------------------------

    #[test]
    fn every_half_float_round_trips() {
        for bits in 0..=u16::MAX {
            let value = f16_bits_to_f32(bits);
            if value.is_nan() {
                assert_eq!(f32_to_f16_bits(value) & 0x7E00, 0x7E00, "{bits:#06x}");
            } else {
                assert_eq!(f32_to_f16_bits(value), bits, "{bits:#06x}");
            }
        }
        assert_eq!(f16_bits_to_f32(0x3C00), 1.0);
        assert_eq!(f16_bits_to_f32(0xC000), -2.0);
        assert_eq!(f16_bits_to_f32(0x0001), 2.0_f32.powi(-24));
        assert_eq!(f16_bits_to_f32(0x7BFF), 65_504.0);
        assert_eq!(f16_bits_to_f32(0xFC00), f32::NEG_INFINITY);
    }

    #[test]
    fn single_to_half_rounds_to_nearest_even() {
        let ulp = 2.0_f32.powi(-10);
        assert_eq!(
            f32_to_f16_bits(1.0 + ulp / 2.0),
            0x3C00,
            "tie to even (down)"
        );
        assert_eq!(f32_to_f16_bits(1.0 + 1.5 * ulp), 0x3C02, "tie to even (up)");
        assert_eq!(f32_to_f16_bits(1.0 + 0.5001 * ulp), 0x3C01);
        assert_eq!(f32_to_f16_bits(65_519.0), 0x7BFF);
        assert_eq!(f32_to_f16_bits(65_520.0), 0x7C00, "rounds up to infinity");
        assert_eq!(f32_to_f16_bits(1e9), 0x7C00);
        assert_eq!(f32_to_f16_bits(-1e9), 0xFC00);
        let tiny = 2.0_f32.powi(-24);
        assert_eq!(f32_to_f16_bits(tiny), 0x0001);
        assert_eq!(f32_to_f16_bits(tiny / 2.0), 0x0000, "tie to even zero");
        assert_eq!(f32_to_f16_bits(tiny * 1.5), 0x0002, "tie to even two");
        assert_eq!(f32_to_f16_bits(tiny * 0.75), 0x0001);
        assert_eq!(f32_to_f16_bits(-tiny * 0.25), 0x8000);
        assert_eq!(
            f32_to_f16_bits(2.0_f32.powi(-14) * 0.9999),
            0x0400,
            "carry into normal"
        );
        assert_eq!(f32_to_f16_bits(f32::NAN), 0x7E00);
        assert_eq!(f32_to_f16_bits(f32::INFINITY), 0x7C00);
    }

    /// The block used for the reference bytes below.
    fn ramp_block() -> Vec<f32> {
        (0..32)
            .map(|i| ((i * 7) % 32) as f32 * 0.173 - 2.1)
            .collect()
    }

    #[test]
    fn q8_0_blocks_match_ggml() {
        // ggml_quantize_chunk(GGML_TYPE_Q8_0, ramp_block(), ...) from whisper.cpp 1.8.3.
        let expected = [
            0x94, 0x26, 0xae, 0xdd, 0x0d, 0x3c, 0x6b, 0xc2, 0xf2, 0x21, 0x50, 0x7f, 0xd7, 0x06,
            0x35, 0x64, 0xbc, 0xeb, 0x1a, 0x49, 0x78, 0xd0, 0xff, 0x2e, 0x5d, 0xb5, 0xe4, 0x13,
            0x42, 0x72, 0xc9, 0xf8, 0x27, 0x57,
        ];
        let mut out = Vec::new();
        quantize_block_q8_0(&ramp_block(), &mut out);
        assert_eq!(out, expected);
        assert_eq!(out.len(), Q8_0_BLOCK_BYTES);

        out.clear();
        quantize_block_q8_0(&[0.0; 32], &mut out);
        assert_eq!(out, [0; Q8_0_BLOCK_BYTES]);
    }

    #[test]
    fn q5_1_blocks_match_ggml() {
        // ggml_quantize_chunk(GGML_TYPE_Q5_1, ramp_block(), ...) from whisper.cpp 1.8.3.
        let expected = [
            0x89, 0x31, 0x33, 0xc0, 0x98, 0x33, 0x67, 0xcc, 0x00, 0x77, 0xee, 0x55, 0xcc, 0x33,
            0xaa, 0x11, 0x88, 0xff, 0x66, 0xdd, 0x44, 0xbb, 0x22, 0x99,
        ];
        let mut out = Vec::new();
        quantize_block_q5_1(&ramp_block(), &mut out);
        assert_eq!(out, expected);
        assert_eq!(out.len(), Q5_1_BLOCK_BYTES);

        out.clear();
        quantize_block_q5_1(&[0.0; 32], &mut out);
        assert_eq!(out, [0; Q5_1_BLOCK_BYTES]);
    }

    #[test]
    fn weight_types_parse_and_map_to_whisper_cpp_ftypes() {
        for weight_type in WeightType::ALL {
            assert_eq!(weight_type.name().parse(), Ok(weight_type));
            assert_eq!(weight_type.to_string(), weight_type.name());
        }
        assert_eq!("Q8_0".parse(), Ok(WeightType::Q8_0));
        assert!("q4_0".parse::<WeightType>().is_err());
        assert_eq!(WeightType::F16.ggml_ftype(), 1);
        assert_eq!(WeightType::Q8_0.ggml_ftype(), 2007);
        assert_eq!(WeightType::Q5_1.ggml_ftype(), 2009);
    }

    // -----------------------------------------------------------------------------------
    // The real models (run with `cargo test --release -- --ignored`)
    // -----------------------------------------------------------------------------------

    fn real_model_dir(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("models/ct2")
            .join(name)
    }

    #[test]
    #[ignore = "needs models/ct2/base (scripts fetch it)"]
    fn real_base_model_converts_to_the_official_size() {
        let dir = ScratchDir::new("real-base");
        let out = dir.0.join("ggml-base.bin");
        let report = convert_ct2_to_ggml(&real_model_dir("base"), &out, WeightType::F16)
            .expect("conversion succeeds");
        // The size of whisper.cpp's official ggml-base.bin.
        assert_eq!(report.bytes_written, 147_951_465);
        assert_eq!(report.vocab_tokens_written, 50_257);
        assert_eq!(report.tensors_written, 245);
        let hparams = report.hparams;
        assert_eq!(
            (
                hparams.n_vocab,
                hparams.n_audio_state,
                hparams.n_audio_head,
                hparams.n_audio_layer
            ),
            (51_865, 512, 8, 6)
        );
    }

    #[test]
    #[ignore = "needs models/ct2/tiny.en (scripts fetch it)"]
    fn real_tiny_en_model_converts() {
        let dir = ScratchDir::new("real-tiny");
        let out = dir.0.join("ggml-tiny.en.bin");
        let report = convert_ct2_to_ggml(&real_model_dir("tiny.en"), &out, WeightType::Q8_0)
            .expect("conversion succeeds");
        assert_eq!(report.vocab_tokens_written, 50_256);
        assert!(!report.hparams.is_multilingual());
        assert_eq!(
            (report.hparams.n_audio_state, report.hparams.n_text_head),
            (384, 6)
        );
    }
}
