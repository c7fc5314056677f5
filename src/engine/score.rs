//! Teacher-forced scoring: the model's own log-probabilities of given token sequences
//! after a given prefix, on an existing encoding. Continuations share the prefix's KV
//! cache ([`DecoderState::logits_after`]), so scoring several candidates for one span
//! costs one decoder run per candidate (its tokens checked together:
//! [`DecoderState::decode_ahead`]), not per token of the transcript.

use super::binding::DecoderState;
use super::logits;
use super::tokens::Vocabulary;
use crate::error::{Error, Result};

/// The log-probability of each token of `continuation` after `prefix` (raw model
/// scores: no suppression, no bias).
///
/// # Errors
/// [`Error::InvalidRequest`] for an empty continuation or a token outside the
/// vocabulary; [`Error::TranscriptionFailed`] when the decoder fails or the sequence is
/// longer than the decoder's context.
pub(crate) fn score(
    state: &mut DecoderState,
    vocabulary: &Vocabulary,
    prefix: &[i32],
    continuation: &[i32],
    threads: usize,
) -> Result<Vec<f32>> {
    if continuation.is_empty() || prefix.is_empty() {
        return Err(Error::invalid(
            "tokens",
            "nothing to score: empty token sequence",
        ));
    }
    let n_vocab = vocabulary.n_vocab();
    let out_of_vocabulary = |t: &i32| usize::try_from(*t).map_or(true, |t| t >= n_vocab);
    if let Some(bad) = prefix
        .iter()
        .chain(continuation)
        .find(|t| out_of_vocabulary(t))
    {
        return Err(Error::invalid(
            "tokens",
            format!("token {bad} is outside the model's vocabulary of {n_vocab}"),
        ));
    }
    let mut sequence = prefix.to_vec();
    let mut scores = Vec::with_capacity(continuation.len());
    // Every row wanted in one decoder run where whisper.cpp copies them all out: the
    // continuation is its own draft.
    state.decode_ahead(prefix, &continuation[..continuation.len() - 1], threads)?;
    for &token in continuation {
        let row = state.logits_after(&sequence, threads)?;
        let total = logits::log_sum_exp(row);
        let index = usize::try_from(token).unwrap_or(0);
        scores.push(row.get(index).map_or(f32::NEG_INFINITY, |l| l - total));
        sequence.push(token);
    }
    Ok(scores)
}
