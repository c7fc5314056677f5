//! The tensor plan: CTranslate2 names and shapes -> OpenAI's (whisper.cpp's) tensors,
//! the fused attention projections split back.

use super::*;

/// How a tensor is stored, following whisper.cpp's converter and quantizer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TensorRole {
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
pub(super) struct PlannedTensor {
    /// OpenAI / whisper.cpp name.
    pub(super) name: String,
    /// Shape in PyTorch order (written reversed).
    pub(super) shape: Vec<usize>,
    pub(super) role: TensorRole,
    /// CTranslate2 variable holding the data.
    pub(super) source: String,
    /// Expected shape of that variable.
    pub(super) source_shape: Vec<usize>,
    /// The rows of the source taken (a part of a fused projection), or all of it.
    pub(super) source_rows: Option<Range<usize>>,
}

impl PlannedTensor {
    pub(super) fn ggml_type(&self, weight_type: WeightType) -> GgmlType {
        match self.role {
            TensorRole::Matrix => weight_type.matrix_type(),
            TensorRole::ConvKernel => GgmlType::F16,
            TensorRole::Vector | TensorRole::ConvBias | TensorRole::Positional => GgmlType::F32,
        }
    }

    /// Finds and validates the source variable; returns it with the element range taken.
    pub(super) fn resolve<'m, 'a>(
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
pub(super) fn tensor_plan(hparams: &WhisperHparams) -> Vec<PlannedTensor> {
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
pub(super) struct PlanBuilder {
    pub(super) tensors: Vec<PlannedTensor>,
    pub(super) width: usize,
}

impl PlanBuilder {
    pub(super) fn push(&mut self, tensor: PlannedTensor) {
        self.tensors.push(tensor);
    }

    /// A tensor copied whole, with the same shape on both sides.
    pub(super) fn whole(&mut self, ours: &str, role: TensorRole, theirs: &str, shape: &[usize]) {
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
    pub(super) fn linear(&mut self, ours: &str, theirs: &str, outputs: usize, inputs: usize) {
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
    pub(super) fn layer_norm(&mut self, ours: &str, theirs: &str) {
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
    pub(super) fn fused_projections(&mut self, ours: &str, theirs: &str, projections: &[&str]) {
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
    pub(super) fn residual_block(&mut self, stack: &str, layer: usize, cross_attention: bool) {
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
pub(super) fn check_key_biases_are_zero(
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
pub(super) fn check_quantizable(plan: &[PlannedTensor]) -> Result<(), ConvertError> {
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
