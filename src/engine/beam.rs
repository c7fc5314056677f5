//! Beam search for the temperature-0 attempt ([`crate::Decoding::BeamSearch`]).
//!
//! whisper.cpp's public decoder keeps one token sequence per state, so the beams take
//! turns on it: each beam's step decodes only the tokens after the prefix it shares with
//! the sequence the KV cache holds (usually a few), in one decoder run. A step of `B`
//! beams therefore costs `B` decoder runs, where whisper.cpp's own batched beams cost
//! one; beam search is slower here than greedy by about the number of beams (measure
//! with `cargo bench --bench speed -- --beam N`). Scores are sums of log-probabilities,
//! finished beams ranked by their average (OpenAI's default length normalisation), and
//! the search stops once `B` beams have finished. Biasing adds its bonuses to every
//! beam's logits (no withdrawal: the bonus stays in the beam's score, like the bias of
//! whisper.cpp's beams).

use super::attempt::{AttemptSetup, DecodeRequest, Searched, ends_the_audio};
use super::binding::DecoderState;
use super::logits;
use super::repeats::repeat_start;
use super::tokens::Vocabulary;
use crate::error::Result;

/// One hypothesis: its transcript tokens and their log-probabilities.
#[derive(Debug, Clone)]
struct Beam {
    tokens: Vec<i32>,
    logprobs: Vec<f32>,
    sum: f32,
}

/// A finished hypothesis and how it ended.
#[derive(Debug)]
struct Finished {
    beam: Beam,
    end_logprob: f32,
    over_budget: bool,
}

impl Finished {
    fn average(&self) -> f32 {
        #[allow(clippy::cast_precision_loss)]
        let length = (self.beam.tokens.len() + 1) as f32;
        (self.beam.sum + self.end_logprob) / length
    }
}

/// The best of `request.beam_size` beams (see the module documentation).
pub(super) fn search(
    state: &mut DecoderState,
    vocabulary: &Vocabulary,
    request: &DecodeRequest<'_>,
    setup: &AttemptSetup,
) -> Result<Searched> {
    let width = request.beam_size.max(1);
    let mut live = vec![Beam {
        tokens: Vec::new(),
        logprobs: Vec::new(),
        sum: 0.0,
    }];
    let mut finished: Vec<Finished> = Vec::new();
    while !live.is_empty() && finished.len() < width {
        request.stop.check()?;
        let mut candidates = expand(state, vocabulary, request, setup, &live, width)?;
        candidates.sort_by(|a, b| (live[b.0].sum + b.2).total_cmp(&(live[a.0].sum + a.2)));
        let mut next: Vec<Beam> = Vec::with_capacity(width);
        for (index, token, logprob) in candidates {
            if next.len() >= width {
                break;
            }
            match extend(vocabulary, request, setup, &live[index], token, logprob) {
                Step::Live(beam) => next.push(beam),
                Step::Finished(done) => finished.push(done),
            }
        }
        live = next;
    }
    Ok(best_of(finished))
}

/// `(beam, token, log-probability)`: the `width + 1` best next tokens of each live beam.
fn expand(
    state: &mut DecoderState,
    vocabulary: &Vocabulary,
    request: &DecodeRequest<'_>,
    setup: &AttemptSetup,
    live: &[Beam],
    width: usize,
) -> Result<Vec<(usize, i32, f32)>> {
    let mut candidates = Vec::new();
    let mut scratch = Vec::new();
    for (index, beam) in live.iter().enumerate() {
        let mut sequence = setup.prefix.clone();
        sequence.extend_from_slice(&beam.tokens);
        let mut row = state.logits_after(&sequence, request.threads)?.to_vec();
        logits::apply_rules(&mut row, &beam.tokens, vocabulary, setup.rules);
        if let Some(bias) = request.bias {
            bias.apply(&beam.tokens, vocabulary.bpe(), &mut row, &mut scratch);
        }
        let total = logits::log_sum_exp(&row);
        for token in top_tokens(&row, width + 1) {
            let logit = row.get(token).copied().unwrap_or(f32::NEG_INFINITY);
            if let Ok(token) = i32::try_from(token) {
                candidates.push((index, token, logit - total));
            }
        }
    }
    Ok(candidates)
}

/// What one more token makes of a beam.
enum Step {
    Live(Beam),
    Finished(Finished),
}

/// `parent` followed by `token`: finished at the end of text, at a repeat (cut where it
/// starts), at the end of the audio or over the token budget; live otherwise.
fn extend(
    vocabulary: &Vocabulary,
    request: &DecodeRequest<'_>,
    setup: &AttemptSetup,
    parent: &Beam,
    token: i32,
    logprob: f32,
) -> Step {
    let ended = |beam: Beam, over_budget: bool| {
        Step::Finished(Finished {
            beam,
            end_logprob: 0.0,
            over_budget,
        })
    };
    if token == vocabulary.special.eot {
        return Step::Finished(Finished {
            beam: parent.clone(),
            end_logprob: logprob,
            over_budget: false,
        });
    }
    let mut beam = parent.clone();
    beam.tokens.push(token);
    beam.logprobs.push(logprob);
    beam.sum += logprob;
    let repeat = request
        .stop_at_repeat
        .then(|| repeat_start(vocabulary, &beam.tokens))
        .flatten();
    if let Some(cut) = repeat {
        beam.tokens.truncate(cut);
        beam.logprobs.truncate(cut);
        beam.sum = beam.logprobs.iter().sum();
        ended(beam, false)
    } else if ends_the_audio(vocabulary, request, token) {
        ended(beam, false)
    } else if beam.tokens.len() >= setup.budget {
        ended(beam, true)
    } else {
        Step::Live(beam)
    }
}

/// The finished beam with the best average log-probability, one within the token budget
/// before any over it; an empty result when none finished.
fn best_of(finished: Vec<Finished>) -> Searched {
    let best = finished
        .into_iter()
        .filter(|f| f.average().is_finite())
        .max_by(|a, b| {
            (!a.over_budget)
                .cmp(&!b.over_budget)
                .then(a.average().total_cmp(&b.average()))
        });
    match best {
        Some(best) => Searched {
            tokens: best.beam.tokens,
            logprobs: best.beam.logprobs,
            end_logprob: best.end_logprob,
            over_budget: best.over_budget,
        },
        None => Searched {
            tokens: Vec::new(),
            logprobs: Vec::new(),
            end_logprob: 0.0,
            over_budget: false,
        },
    }
}

/// The indices of the `count` largest finite values of `row`, largest first.
fn top_tokens(row: &[f32], count: usize) -> Vec<usize> {
    let mut top: Vec<(usize, f32)> = Vec::with_capacity(count + 1);
    for (index, &value) in row.iter().enumerate() {
        if !value.is_finite() {
            continue;
        }
        if top.len() < count || top.last().is_some_and(|&(_, last)| value > last) {
            let at = top.partition_point(|&(_, v)| v >= value);
            top.insert(at, (index, value));
            top.truncate(count);
        }
    }
    top.into_iter().map(|(index, _)| index).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_tokens_are_the_largest_finite_ones_in_order() {
        let row = [0.5, f32::NEG_INFINITY, 3.0, 1.0, 3.0, -2.0];
        assert_eq!(top_tokens(&row, 3), vec![2, 4, 3]);
        assert_eq!(top_tokens(&row, 10), vec![2, 4, 3, 0, 5]);
        assert!(top_tokens(&[f32::NEG_INFINITY; 4], 2).is_empty());
    }
}
