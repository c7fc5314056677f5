//! Reading CTranslate2's `model.bin` (binary version 6): variables, aliases and the
//! Whisper hyper-parameters.

use super::*;

/// Element type of a CTranslate2 variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ct2Dtype {
    F32,
    I8,
    I16,
    I32,
    F16,
    Bf16,
}

impl Ct2Dtype {
    pub(super) fn from_code(code: u8) -> Option<Self> {
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

    pub(super) fn size(self) -> usize {
        match self {
            Self::I8 => 1,
            Self::I16 | Self::F16 | Self::Bf16 => 2,
            Self::F32 | Self::I32 => 4,
        }
    }

    pub(super) fn name(self) -> &'static str {
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
pub(super) struct Ct2Variable<'a> {
    pub(super) dims: Vec<usize>,
    pub(super) dtype: Ct2Dtype,
    pub(super) data: &'a [u8],
}

impl Ct2Variable<'_> {
    /// The value of a rank-0 integer attribute (e.g. `num_heads`).
    pub(super) fn integer_attribute(&self) -> Option<i64> {
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
pub(super) struct Ct2Model<'a> {
    pub(super) variables: HashMap<String, Ct2Variable<'a>>,
    pub(super) aliases: HashMap<String, String>,
}

/// A bounds-checked little-endian reader over the bytes of `model.bin`.
pub(super) struct ByteReader<'a> {
    pub(super) bytes: &'a [u8],
    pub(super) position: usize,
}

impl<'a> ByteReader<'a> {
    pub(super) fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, position: 0 }
    }

    pub(super) fn malformed(&self, reason: impl Into<String>) -> ConvertError {
        ConvertError::Malformed {
            offset: self.position,
            reason: reason.into(),
        }
    }

    pub(super) fn remaining(&self) -> usize {
        self.bytes.len() - self.position
    }

    pub(super) fn take(&mut self, len: usize, what: &str) -> Result<&'a [u8], ConvertError> {
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

    pub(super) fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], ConvertError> {
        let mut array = [0; N];
        array.copy_from_slice(self.take(N, what)?);
        Ok(array)
    }

    pub(super) fn u8(&mut self, what: &str) -> Result<u8, ConvertError> {
        Ok(self.array::<1>(what)?[0])
    }

    pub(super) fn u16(&mut self, what: &str) -> Result<u16, ConvertError> {
        Ok(u16::from_le_bytes(self.array(what)?))
    }

    pub(super) fn u32(&mut self, what: &str) -> Result<u32, ConvertError> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    /// A `u16`-length string whose length counts a trailing NUL.
    pub(super) fn string(&mut self, what: &str) -> Result<String, ConvertError> {
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
    pub(super) fn parse(bytes: &'a [u8], path: &Path) -> Result<Self, ConvertError> {
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

    pub(super) fn parse_variable(
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
    pub(super) fn variable(&self, name: &str) -> Result<&Ct2Variable<'a>, ConvertError> {
        let target = self.aliases.get(name).map_or(name, String::as_str);
        self.variables
            .get(target)
            .ok_or_else(|| ConvertError::MissingVariable {
                name: name.to_owned(),
            })
    }

    pub(super) fn has_variable(&self, name: &str) -> bool {
        self.variables.contains_key(name) || self.aliases.contains_key(name)
    }

    /// Looks a variable up and checks its shape.
    pub(super) fn variable_with_shape(
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
    pub(super) fn layer_count(&self, stack: &str) -> usize {
        (0..)
            .take_while(|index| {
                self.has_variable(&format!(
                    "{stack}/layer_{index}/self_attention/linear_0/weight"
                ))
            })
            .count()
    }

    /// Attention heads of `stack` from its `num_heads` attribute, or width / 64.
    pub(super) fn head_count(&self, stack: &str, width: usize) -> Result<usize, ConvertError> {
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
    pub(super) fn whisper_hparams(&self) -> Result<WhisperHparams, ConvertError> {
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

pub(super) fn shape_error(name: &str, expected: &[usize], found: &[usize]) -> ConvertError {
    ConvertError::ShapeMismatch {
        name: name.to_owned(),
        expected: expected.to_vec(),
        found: found.to_vec(),
    }
}
