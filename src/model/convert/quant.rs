//! Numeric conversions (f16, bf16) and ggml's block quantization (q8_0, q5_1).

use super::*;

/// IEEE half -> single precision (exact).
pub(super) fn f16_bits_to_f32(bits: u16) -> f32 {
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
pub(super) fn f32_to_f16_bits(value: f32) -> u16 {
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
pub(super) fn round_to_f16(value: f32) -> f32 {
    f16_bits_to_f32(f32_to_f16_bits(value))
}

pub(super) fn decode_f32(data: &[u8], elements: Range<usize>) -> impl Iterator<Item = f32> + '_ {
    data[elements.start * 4..elements.end * 4]
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

pub(super) fn decode_f16(data: &[u8], elements: Range<usize>) -> impl Iterator<Item = f32> + '_ {
    data[elements.start * 2..elements.end * 2]
        .chunks_exact(2)
        .map(|b| f16_bits_to_f32(u16::from_le_bytes([b[0], b[1]])))
}

pub(super) fn decode_bf16(data: &[u8], elements: Range<usize>) -> impl Iterator<Item = f32> + '_ {
    data[elements.start * 2..elements.end * 2]
        .chunks_exact(2)
        .map(|b| f32::from_bits(u32::from(u16::from_le_bytes([b[0], b[1]])) << 16))
}

/// Decodes `elements` of a float variable into `values` (cleared first).
pub(super) fn decode_into(
    variable: &Ct2Variable<'_>,
    elements: Range<usize>,
    values: &mut Vec<f32>,
) {
    values.clear();
    match variable.dtype {
        Ct2Dtype::F16 => values.extend(decode_f16(variable.data, elements)),
        Ct2Dtype::Bf16 => values.extend(decode_bf16(variable.data, elements)),
        // Validated in `PlannedTensor::resolve`; integer types never get here.
        _ => values.extend(decode_f32(variable.data, elements)),
    }
}

/// ggml's `quantize_row_q8_0_ref` for one block of 32 values.
pub(super) fn quantize_block_q8_0(block: &[f32], out: &mut Vec<u8>) {
    let abs_max = block
        .iter()
        .fold(0.0_f32, |max, value| max.max(value.abs()));
    let scale = abs_max / 127.0;
    let inverse_scale = if scale != 0.0 { 1.0 / scale } else { 0.0 };
    let mut quantized = [0u8; QUANT_BLOCK_LEN];
    for (byte, value) in quantized.iter_mut().zip(block) {
        // `as i8` saturates, like the C conversion of an in-range float.
        *byte = round_half_away(value * inverse_scale) as i8 as u8;
    }
    out.extend_from_slice(&f32_to_f16_bits(scale).to_le_bytes());
    out.extend_from_slice(&quantized[..block.len().min(QUANT_BLOCK_LEN)]);
}

/// `value.round()` (C's `roundf`: halves away from zero) without the library call,
/// which the compiler cannot vectorize: the whole part, plus one step away from zero
/// where the fraction (exact, being `value` minus its whole part) is at least a half.
fn round_half_away(value: f32) -> f32 {
    let whole = value.trunc();
    let fraction = value - whole;
    if fraction.abs() >= 0.5 {
        whole + 1f32.copysign(value)
    } else {
        whole
    }
}

/// ggml's `quantize_row_q5_1_ref` for one block of 32 values.
pub(super) fn quantize_block_q5_1(block: &[f32], out: &mut Vec<u8>) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halves_round_away_from_zero_like_roundf() {
        let below_half = f32::from_bits(0.5f32.to_bits() - 1);
        for value in [
            0.0,
            -0.0,
            0.5,
            -0.5,
            1.5,
            -1.5,
            2.5,
            126.5,
            -127.49,
            below_half,
            -below_half,
            0.999_999_94,
            126.999_99,
            f32::NAN,
            8_388_609.0,
        ] {
            let (ours, roundf) = (round_half_away(value), value.round());
            assert!(
                ours.to_bits() == roundf.to_bits() || (ours.is_nan() && roundf.is_nan()),
                "{value}: {ours} vs {roundf}"
            );
        }
        for step in -3000..=3000 {
            let value = step as f32 * 0.043;
            assert_eq!(round_half_away(value), value.round(), "{value}");
        }
    }
}
