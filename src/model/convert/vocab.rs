//! The vocabulary (GPT-2 byte-level tokens back to bytes) and the mel filter bank.

use super::*;

/// GPT-2's byte-level alphabet, inverted: maps each of the 256 printable stand-in
/// characters back to the byte it represents (`None` for other characters).
///
/// Printable Latin-1 bytes (`!`..=`~`, `¡`..=`¬`, `®`..=`ÿ`) stand for themselves; the other
/// 68 bytes are assigned U+0100, U+0101, ... in increasing byte order.
pub(super) fn byte_level_decoder() -> Vec<Option<u8>> {
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
pub(super) fn text_vocabulary(
    text: &[u8],
    hparams: &WhisperHparams,
) -> Result<Vec<Vec<u8>>, String> {
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

/// Width of one mel in the linear region of the Slaney scale (Hz).
const HZ_PER_MEL: f64 = 200.0 / 3.0;
/// Where the Slaney scale turns logarithmic (Hz).
const LOG_REGION_HZ: f64 = 1000.0;

/// Slaney-style Hz -> mel (librosa's `hz_to_mel(htk=False)`): linear below 1 kHz,
/// logarithmic above.
pub(super) fn hz_to_slaney_mel(hz: f64) -> f64 {
    let log_region_mel = LOG_REGION_HZ / HZ_PER_MEL;
    let log_step = 6.4_f64.ln() / 27.0;
    if hz >= LOG_REGION_HZ {
        log_region_mel + (hz / LOG_REGION_HZ).ln() / log_step
    } else {
        hz / HZ_PER_MEL
    }
}

/// Slaney-style mel -> Hz (librosa's `mel_to_hz(htk=False)`).
pub(super) fn slaney_mel_to_hz(mel: f64) -> f64 {
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
pub(super) fn slaney_mel_filters(sample_rate: f64, n_fft: usize, n_mels: usize) -> Vec<f32> {
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
