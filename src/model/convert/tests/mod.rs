//! The converter on a synthetic model in CTranslate2 format, malformed inputs, and the
//! real models (ignored by default).

use super::*;

mod units;

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

    check_tensor_types_and_dims(&file);
    check_fused_weights_keep_their_rows(&file);
    check_tensors_copied_value_for_value(&file);
}

/// Types and reversed dims as convert-pt-to-ggml.py writes them.
fn check_tensor_types_and_dims(file: &GgmlFile) {
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
}

/// Fused weights hold their row index: each projection gets its own rows.
fn check_fused_weights_keep_their_rows(file: &GgmlFile) {
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
}

/// Whole tensors are copied value for value (f16 -> f32 for vectors).
fn check_tensors_copied_value_for_value(file: &GgmlFile) {
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

fn convert_modified(label: &str, modify: impl FnOnce(&mut Vec<FixtureVariable>)) -> ConvertError {
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
// The real models (run with `cargo test --release -- --ignored`)
// -----------------------------------------------------------------------------------

/// Converts the real model `name` (in `models/ct2`) to `weight_type` in a scratch
/// directory; the report of it.
fn convert_real_model(name: &str, weight_type: WeightType) -> ConversionReport {
    let dir = ScratchDir::new("real");
    let ct2_dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("models/ct2")
        .join(name);
    convert_ct2_to_ggml(&ct2_dir, &dir.0.join("ggml-model.bin"), weight_type)
        .expect("conversion succeeds")
}

#[test]
#[ignore = "needs models/ct2/base (scripts fetch it)"]
fn real_base_model_converts_to_the_official_size() {
    let report = convert_real_model("base", WeightType::F16);
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
    let report = convert_real_model("tiny.en", WeightType::Q8_0);
    assert_eq!(report.vocab_tokens_written, 50_256);
    assert!(!report.hparams.is_multilingual());
    assert_eq!(
        (report.hparams.n_audio_state, report.hparams.n_text_head),
        (384, 6)
    );
}
