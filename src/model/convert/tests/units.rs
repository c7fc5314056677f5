//! The vocabulary, the mel filters, the numeric conversions and quantization.

use super::*;

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
        1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
        2, 2, 2, 3, 3, 2, 3, 3, 3, 4, 3, 3, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7,
        7, 8, 8, 8, 8, 8, 9, 10, 10, 10, 10, 11, 11, 11, 13, 13, 13, 14, 14, 14,
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
        0x94, 0x26, 0xae, 0xdd, 0x0d, 0x3c, 0x6b, 0xc2, 0xf2, 0x21, 0x50, 0x7f, 0xd7, 0x06, 0x35,
        0x64, 0xbc, 0xeb, 0x1a, 0x49, 0x78, 0xd0, 0xff, 0x2e, 0x5d, 0xb5, 0xe4, 0x13, 0x42, 0x72,
        0xc9, 0xf8, 0x27, 0x57,
    ];
    assert_eq!(expected.len(), Q8_0_BLOCK_BYTES);
    assert_quantizes_like_ggml(quantize_block_q8_0, &expected);
}

#[test]
fn q5_1_blocks_match_ggml() {
    // ggml_quantize_chunk(GGML_TYPE_Q5_1, ramp_block(), ...) from whisper.cpp 1.8.3.
    let expected = [
        0x89, 0x31, 0x33, 0xc0, 0x98, 0x33, 0x67, 0xcc, 0x00, 0x77, 0xee, 0x55, 0xcc, 0x33, 0xaa,
        0x11, 0x88, 0xff, 0x66, 0xdd, 0x44, 0xbb, 0x22, 0x99,
    ];
    assert_eq!(expected.len(), Q5_1_BLOCK_BYTES);
    assert_quantizes_like_ggml(quantize_block_q5_1, &expected);
}

/// `quantize` makes ggml's `expected` bytes of [`ramp_block`], and zeros of a block of
/// zeros.
fn assert_quantizes_like_ggml(quantize: fn(&[f32], &mut Vec<u8>), expected: &[u8]) {
    let mut out = Vec::new();
    quantize(&ramp_block(), &mut out);
    assert_eq!(out, expected);
    out.clear();
    quantize(&[0.0; 32], &mut out);
    assert_eq!(out, vec![0; expected.len()]);
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
