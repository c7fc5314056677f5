//! One decoder step's logit rules, as Whisper was trained to be decoded (OpenAI's
//! `decoding.py` filters, also in whisper.cpp and faster-whisper): suppressed tokens, a
//! blank start, the timestamp-token rules; then log-softmax, argmax and sampling.
//! Pure functions over a logits row, unit-tested without a model.

use super::tokens::Vocabulary;

/// Latest first timestamp of a timed transcript, in timestamp steps (1.0 s).
const MAX_INITIAL_TIMESTAMP: usize = 50;

/// How one step is constrained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StepRules {
    /// The decode writes timestamp tokens.
    pub(crate) timestamps: bool,
    /// Latest timestamp step the audio allows (its length in 0.02 s steps).
    pub(crate) max_timestamp: usize,
}

/// Applies the rules for the step after the transcript tokens `generated` (the tokens
/// after the task prefix) to `logits`, in place: suppressed tokens get -inf.
pub(crate) fn apply_rules(
    logits: &mut [f32],
    generated: &[i32],
    vocabulary: &Vocabulary,
    rules: StepRules,
) {
    let special = vocabulary.special;
    for &token in vocabulary.suppressed() {
        set(logits, token, f32::NEG_INFINITY);
    }
    if generated.is_empty() {
        // A transcript does not start blank.
        set(logits, special.eot, f32::NEG_INFINITY);
        if let Some(space) = vocabulary.space() {
            set(logits, space, f32::NEG_INFINITY);
        }
    }
    let begin = index(special.timestamp_begin).min(logits.len());
    if !rules.timestamps {
        logits[begin..].fill(f32::NEG_INFINITY);
        return;
    }
    apply_timestamp_rules(logits, generated, vocabulary, rules);
}

/// OpenAI's `ApplyTimestampRules`: timestamps come in pairs (start, end), do not go
/// back, and a segment has a nonzero length; the first token is a timestamp of at most
/// 1 s; no timestamp lies past the audio.
fn apply_timestamp_rules(
    logits: &mut [f32],
    generated: &[i32],
    vocabulary: &Vocabulary,
    rules: StepRules,
) {
    let special = vocabulary.special;
    let begin = index(special.timestamp_begin).min(logits.len());
    let eot = index(special.eot).min(begin);
    let is_ts = |t: &i32| vocabulary.is_timestamp(*t);
    let last_was_timestamp = generated.last().is_some_and(is_ts);
    let penultimate_was_timestamp =
        generated.len() < 2 || generated.iter().rev().nth(1).is_some_and(is_ts);
    if last_was_timestamp {
        if penultimate_was_timestamp {
            // A pair just closed: text (or the end) must follow.
            logits[begin..].fill(f32::NEG_INFINITY);
        } else {
            // A segment's end: a timestamp (the next start) or the end must follow.
            logits[..eot].fill(f32::NEG_INFINITY);
        }
    }
    if let Some(last) = generated.iter().rev().find(|t| is_ts(t)) {
        let last = vocabulary.timestamp_index(*last).unwrap_or(0);
        // Timestamps do not go back, and a segment's end is after its start.
        let lowest = if last_was_timestamp && !penultimate_was_timestamp {
            last
        } else {
            last + 1
        };
        let end = (begin + lowest).min(logits.len());
        logits[begin..end].fill(f32::NEG_INFINITY);
    }
    if generated.is_empty() {
        logits[..begin].fill(f32::NEG_INFINITY);
        let end = (begin + MAX_INITIAL_TIMESTAMP + 1).min(logits.len());
        logits[end..].fill(f32::NEG_INFINITY);
    }
    let past_audio = (begin + rules.max_timestamp + 1).min(logits.len());
    logits[past_audio..].fill(f32::NEG_INFINITY);
    // When the timestamps together are likelier than any text token, write one (both
    // sides are log-probabilities up to the same normaliser).
    let timestamps = log_sum_exp(&logits[begin..]);
    let best_text = logits[..begin]
        .iter()
        .copied()
        .fold(f32::NEG_INFINITY, f32::max);
    if timestamps > best_text {
        logits[..begin].fill(f32::NEG_INFINITY);
    }
}

/// `log(sum(exp(values)))`, -inf for none or all -inf.
pub(crate) fn log_sum_exp(values: &[f32]) -> f32 {
    let max = values.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    if max == f32::NEG_INFINITY {
        return max;
    }
    let sum: f32 = values.iter().map(|v| (v - max).exp()).sum();
    max + sum.ln()
}

/// Log-softmax of `logits`.
#[cfg(test)]
pub(crate) fn log_softmax(logits: &[f32]) -> Vec<f32> {
    let total = log_sum_exp(logits);
    logits.iter().map(|l| l - total).collect()
}

/// The index of the largest logit (the first of equals), `None` when all are -inf.
pub(crate) fn argmax(logits: &[f32]) -> Option<usize> {
    let mut best: Option<(usize, f32)> = None;
    for (i, &l) in logits.iter().enumerate() {
        if l > f32::NEG_INFINITY && best.is_none_or(|(_, b)| l > b) {
            best = Some((i, l));
        }
    }
    best.map(|(i, _)| i)
}

/// Samples an index from `softmax(logits / temperature)` with `rng`.
pub(crate) fn sample(logits: &[f32], temperature: f32, rng: &mut SplitMix64) -> Option<usize> {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    if max == f32::NEG_INFINITY {
        return None;
    }
    let weights: Vec<f64> = logits
        .iter()
        .map(|l| f64::from((l - max) / temperature).exp())
        .collect();
    let total: f64 = weights.iter().sum();
    let mut target = rng.next_f64() * total;
    for (i, w) in weights.iter().enumerate() {
        if *w > 0.0 {
            if target < *w {
                return Some(i);
            }
            target -= w;
        }
    }
    argmax(logits)
}

/// A small, seedable random generator (SplitMix64): a decode seeds its own, so the same
/// audio gives the same text whatever ran before.
#[derive(Debug, Clone)]
pub(crate) struct SplitMix64(u64);

impl SplitMix64 {
    pub(crate) fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub(crate) fn next_f64(&mut self) -> f64 {
        // 53 random bits: exactly representable.
        #[allow(clippy::cast_precision_loss)]
        let value = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        value
    }
}

fn set(logits: &mut [f32], token: i32, value: f32) {
    if let Some(slot) = usize::try_from(token).ok().and_then(|i| logits.get_mut(i)) {
        *slot = value;
    }
}

fn index(token: i32) -> usize {
    usize::try_from(token).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::tokens::tests::tiny_vocabulary;

    fn flat(v: &Vocabulary) -> Vec<f32> {
        vec![0.0; v.n_vocab()]
    }

    fn allowed(logits: &[f32]) -> Vec<usize> {
        logits
            .iter()
            .enumerate()
            .filter(|(_, l)| l.is_finite())
            .map(|(i, _)| i)
            .collect()
    }

    const UNTIMED: StepRules = StepRules {
        timestamps: false,
        max_timestamp: 1500,
    };

    #[test]
    fn untimed_first_step_allows_text_but_no_blank_end_or_timestamp() {
        let v = tiny_vocabulary();
        let mut logits = flat(&v);
        apply_rules(&mut logits, &[], &v, UNTIMED);
        assert_eq!(allowed(&logits), vec![1, 2, 3, 4, 5, 8, 10, 11, 12]);
        let mut logits = flat(&v);
        apply_rules(&mut logits, &[3], &v, UNTIMED);
        assert!(logits[index(v.special.eot)].is_finite());
        assert!(logits[0].is_finite(), "a space may follow text");
    }

    #[test]
    fn timed_decoding_starts_with_an_early_timestamp_and_pairs_them() {
        let v = tiny_vocabulary();
        let rules = StepRules {
            timestamps: true,
            max_timestamp: 250,
        };
        let begin = index(v.special.timestamp_begin);
        let mut logits = flat(&v);
        apply_rules(&mut logits, &[], &v, rules);
        assert_eq!(allowed(&logits), (begin..=begin + 50).collect::<Vec<_>>());
        // After <|0.00|> text: text, or a later timestamp closing the segment.
        let t0 = v.timestamp_token(0);
        // Text tokens far likelier than the timestamps together.
        let texty = |v: &Vocabulary| {
            let mut logits = flat(v);
            logits[..begin].fill(20.0);
            logits
        };
        let mut logits = texty(&v);
        apply_rules(&mut logits, &[t0, 3], &v, rules);
        assert!(logits[3].is_finite());
        assert!(!logits[begin].is_finite(), "a segment has a nonzero length");
        assert!(logits[begin + 1].is_finite());
        assert!(!logits[begin + 251].is_finite(), "nothing past the audio");
        // After a closing timestamp: the next start (not earlier) or the end.
        let t5 = v.timestamp_token(5);
        let mut logits = texty(&v);
        apply_rules(&mut logits, &[t0, 3, t5], &v, rules);
        assert!(!logits[3].is_finite());
        assert!(logits[index(v.special.eot)].is_finite());
        assert!(logits[begin + 5].is_finite());
        assert!(!logits[begin + 4].is_finite());
        // After a pair: text or the end only.
        let mut logits = texty(&v);
        apply_rules(&mut logits, &[t0, 3, t5, t5], &v, rules);
        assert!(logits[3].is_finite());
        assert!(!logits[begin + 6].is_finite());
    }

    #[test]
    fn likely_timestamps_win_over_any_single_text_token() {
        let v = tiny_vocabulary();
        let rules = StepRules {
            timestamps: true,
            max_timestamp: 1500,
        };
        let begin = index(v.special.timestamp_begin);
        let mut logits = vec![-10.0; v.n_vocab()];
        logits[3] = 1.0;
        for l in &mut logits[begin + 10..begin + 200] {
            *l = -1.0; // 190 timestamps together outweigh the text token
        }
        apply_rules(&mut logits, &[v.timestamp_token(0), 4], &v, rules);
        assert!(!logits[3].is_finite());
        assert_eq!(argmax(&logits), Some(begin + 10));
    }

    #[test]
    fn softmax_argmax_and_seeded_sampling() {
        let logits = [0.0, 2.0, f32::NEG_INFINITY, 1.0];
        let lp = log_softmax(&logits);
        let total: f32 = lp.iter().map(|l| l.exp()).sum();
        assert!((total - 1.0).abs() < 1e-5);
        assert_eq!(argmax(&logits), Some(1));
        assert_eq!(argmax(&[f32::NEG_INFINITY; 3]), None);
        let draw = |seed| {
            let mut rng = SplitMix64::new(seed);
            (0..20)
                .map(|_| sample(&logits, 1.0, &mut rng))
                .collect::<Vec<_>>()
        };
        assert_eq!(draw(7), draw(7));
        assert!(draw(7).iter().all(|i| *i != Some(2)));
        let mut rng = SplitMix64::new(1);
        let low_t: Vec<_> = (0..20).map(|_| sample(&logits, 0.01, &mut rng)).collect();
        assert!(low_t.iter().all(|i| *i == Some(1)));
    }
}
