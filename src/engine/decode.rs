//! Decoding one encoded window: greedy with temperature fallback, as Whisper is decoded
//! by OpenAI's reference and by faster-whisper, on our own loop over whisper.cpp's
//! decoder ([`DecoderState::logits_after`]).
//!
//! - Each attempt decodes `[<|startofprev|> prompt] <|sot|> <|lang|> <|transcribe|>
//!   [<|notimestamps|>]` and then one token per step under the rules of
//!   [`super::logits`], with the context terms' bias added ([`super::biasing`]).
//! - An attempt fails when its text compresses too well (a loop), its average
//!   log-probability is too low, or it runs out of its token budget (tied to the audio's
//!   length); the next attempt samples at a higher temperature. An attempt whose
//!   no-speech probability is high and whose text is unlikely is silence.
//! - Sampling draws from a generator seeded per attempt: the same audio and context give
//!   the same text, whatever the engine decoded before.
//! - A bias bonus that chose a token for a term the decoder then leaves is taken back:
//!   the decode returns to that step and picks without the bonus (sherpa-onnx's context
//!   graph withdraws such bonuses from a beam's score; a greedy decoder withdraws the
//!   choice).
//! - A decode with a draft (another decode of the window: [`super::draft`]) has the
//!   decoder check several of the draft's next tokens in one run and picks from the rows
//!   that run left, as it would token by token: the same text in fewer runs.
//! - The greedy temperature-0 attempt of an unbiased decode can report each segment as
//!   a timestamp closes it ([`SegmentHook`]), while its text so far passes the checks
//!   above: the caller can show it before the window is final.

use super::attempt::{AttemptSetup, Searched, ends_the_audio};
pub(crate) use super::attempt::{DecodeRequest, SegmentHook};
use super::beam;
use super::biasing::{MatchStatus, TermBias};
use super::binding::DecoderState;
use super::casing;
use super::draft::Lookahead;
use super::logits::{self, SplitMix64, StepRules};
use super::repeats::{MAX_COMPRESSION_RATIO, compression_ratio, loop_start, repeat_start};
use super::tokens::Vocabulary;
use crate::context::Language;
use crate::error::{Error, Result};

/// Temperatures of the successive attempts (OpenAI's and faster-whisper's defaults).
const TEMPERATURES: [f32; 6] = [0.0, 0.2, 0.4, 0.6, 0.8, 1.0];
/// An attempt whose average token log-probability is below this failed.
const MIN_AVG_LOGPROB: f32 = -1.0;
/// An attempt with a no-speech probability above this and a failed log-probability is
/// silence, not speech.
const NO_SPEECH_PROB: f32 = 0.6;
/// Whisper's prompt budget: at most this many tokens of previous text.
pub(crate) const MAX_PROMPT_TOKENS: usize = 223;
/// Whisper's `sample_len`: at most this many tokens per window.
const MAX_WINDOW_TOKENS: usize = 224;
/// Tokens any window may take, on top of [`TOKENS_PER_SEC`] per second of its audio.
const BASE_TOKENS: usize = 24;
/// Tokens per second of audio a window may take: fast speech writes about 6 (English)
/// to 12 (Chinese, Japanese) tokens a second, plus two timestamps per segment.
const TOKENS_PER_SEC: f64 = 16.0;
/// Times a decode may take a bias bonus back.
const MAX_WITHDRAWALS: usize = 8;
/// Seed of the sampling generators (any constant: only determinism matters).
const SEED: u64 = 0x6374_7873_6372_6962;

/// The outcome of a decode.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Decoded {
    /// The transcript tokens (text and timestamps), without the final end-of-text.
    pub(crate) tokens: Vec<i32>,
    pub(crate) avg_logprob: f32,
    pub(crate) compression_ratio: f32,
    /// Probability of `<|nospeech|>` after `<|sot|>`.
    pub(crate) no_speech_prob: f32,
    pub(crate) temperature: f32,
    /// The last attempt ran out of tokens.
    pub(crate) over_budget: bool,
    /// The decode judged the window silence: `tokens` is empty.
    pub(crate) silence: bool,
}

impl Decoded {
    fn fails(&self) -> bool {
        self.is_loop() || self.avg_logprob < MIN_AVG_LOGPROB
    }

    /// The text repeats itself (it compresses too well) or ran out of tokens.
    pub(crate) fn is_loop(&self) -> bool {
        self.over_budget || self.compression_ratio > MAX_COMPRESSION_RATIO
    }

    fn is_silence(&self) -> bool {
        self.no_speech_prob > NO_SPEECH_PROB && self.avg_logprob < MIN_AVG_LOGPROB
    }
}

/// The last [`MAX_PROMPT_TOKENS`] of `tokens`: what of a previous text fits a prompt.
pub(crate) fn prompt_tail(tokens: &[i32]) -> &[i32] {
    &tokens[tokens.len().saturating_sub(MAX_PROMPT_TOKENS)..]
}

/// The full token sequence of a decode's prefix, and where `<|sot|>` is in it.
pub(crate) fn prefix_tokens(
    vocabulary: &Vocabulary,
    prompt: &[i32],
    language: Language,
    timestamps: bool,
) -> (Vec<i32>, usize) {
    let mut prefix = Vec::with_capacity(prompt.len() + 5);
    if !prompt.is_empty() {
        prefix.push(vocabulary.special.prev);
        prefix.extend_from_slice(prompt_tail(prompt));
    }
    let sot_index = prefix.len();
    prefix.extend(vocabulary.task_prefix(language, timestamps));
    (prefix, sot_index)
}

/// Decodes the encoded window in `state` with temperature fallback.
pub(crate) fn decode(
    state: &mut DecoderState,
    vocabulary: &Vocabulary,
    request: &DecodeRequest<'_>,
) -> Result<Decoded> {
    let first = first_attempt(state, vocabulary, request)?;
    fall_back(state, vocabulary, request, first)
}

/// The temperature-0 attempt of [`decode`] alone: a caller may change the request
/// before falling back ([`fall_back`]).
pub(crate) fn first_attempt(
    state: &mut DecoderState,
    vocabulary: &Vocabulary,
    request: &DecodeRequest<'_>,
) -> Result<Decoded> {
    attempt(state, vocabulary, request, 0)
}

/// `first` (the temperature-0 attempt) when it is silence or stands, else the next
/// temperatures' attempts until one does; when none does, the likeliest that is not a
/// loop, else the likeliest.
pub(crate) fn fall_back(
    state: &mut DecoderState,
    vocabulary: &Vocabulary,
    request: &DecodeRequest<'_>,
    first: Decoded,
) -> Result<Decoded> {
    // The later attempts' segments are not shown: they replace text already shown.
    // Their draft, without another, is the first attempt: sampling at a low temperature
    // mostly writes its tokens again.
    let first_tokens = first.tokens.clone();
    let request = &DecodeRequest {
        on_segment: None,
        draft: request.draft.or(Some(&first_tokens)),
        ..*request
    };
    let mut decoded = first;
    let mut failed: Vec<Decoded> = Vec::new();
    for index in 1..=TEMPERATURES.len() {
        if decoded.silence || !decoded.fails() {
            return Ok(decoded);
        }
        failed.push(decoded);
        if index == TEMPERATURES.len() {
            break;
        }
        decoded = attempt(state, vocabulary, request, index)?;
    }
    let not_looping = failed
        .iter()
        .filter(|d| !d.is_loop())
        .max_by(|a, b| a.avg_logprob.total_cmp(&b.avg_logprob))
        .cloned();
    let best = not_looping.or_else(|| {
        failed
            .into_iter()
            .max_by(|a, b| a.avg_logprob.total_cmp(&b.avg_logprob))
            .map(|looped| one_copy(vocabulary, looped))
    });
    best.ok_or_else(|| Error::TranscriptionFailed {
        message: "no decoding attempt".into(),
        source: None,
    })
}

/// `decoded` (every attempt looped) with its text cut after the loop's first copy
/// ([`loop_start`]): what was read once, not the loop.
fn one_copy(vocabulary: &Vocabulary, mut decoded: Decoded) -> Decoded {
    if let Some(cut) = loop_start(vocabulary, &decoded.tokens) {
        decoded.tokens.truncate(cut);
        decoded.compression_ratio = compression_ratio(&vocabulary.text_of(&decoded.tokens));
    }
    decoded
}

/// Attempt `index` of the temperature fallback, seeded by its index; judged silence
/// when its no-speech probability says so (then without tokens).
fn attempt(
    state: &mut DecoderState,
    vocabulary: &Vocabulary,
    request: &DecodeRequest<'_>,
    index: usize,
) -> Result<Decoded> {
    let temperature = TEMPERATURES.get(index).copied().unwrap_or(1.0);
    let seed = SEED ^ (index as u64);
    let decoded = decode_attempt(state, vocabulary, request, temperature, seed)?;
    Ok(if decoded.is_silence() {
        Decoded {
            tokens: Vec::new(),
            silence: true,
            ..decoded
        }
    } else {
        decoded
    })
}

/// Tokens a window of `samples` samples may take.
pub(crate) fn token_budget(samples: usize) -> usize {
    let secs = samples as f64 / 16_000.0;
    // Truncation intended: a small positive count.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let per_sec = (secs * TOKENS_PER_SEC).ceil() as usize;
    (BASE_TOKENS + per_sec).min(MAX_WINDOW_TOKENS)
}

/// A bias bonus that chose a token: taken back if the term it started is left.
#[derive(Debug, Clone, Copy)]
struct BiasChoice {
    /// Index in the transcript tokens of the token the bonus chose.
    position: usize,
    /// Where the term's match starts.
    match_start: usize,
}

/// The bias bonuses of one greedy attempt that chose a token, and those taken back.
#[derive(Debug, Default)]
struct Withdrawals {
    /// The bonus-chosen token whose term is not written whole yet.
    pending: Option<BiasChoice>,
    /// Positions whose bonus was taken back: no bonus there any more.
    withdrawn: Vec<usize>,
}

impl Withdrawals {
    fn allow_bias_at(&self, position: usize) -> bool {
        !self.withdrawn.contains(&position)
    }

    /// A bonus changed the greedy choice to `token` after `generated`: remembered until
    /// its term is whole.
    fn chosen_by_bonus(
        &mut self,
        bias: &TermBias,
        vocabulary: &Vocabulary,
        generated: &[i32],
        token: i32,
    ) {
        if self.pending.is_none() {
            self.pending =
                bias.match_start(generated, vocabulary.bpe(), token)
                    .map(|match_start| BiasChoice {
                        position: generated.len(),
                        match_start,
                    });
        }
    }

    /// After the transcript tokens `generated` (`at_end`: the decoder wants to stop):
    /// the position to go back to when the pending term was left (or left unfinished),
    /// at most [`MAX_WITHDRAWALS`] times.
    fn rewind_to(
        &mut self,
        bias: &TermBias,
        vocabulary: &Vocabulary,
        generated: &[i32],
        at_end: bool,
    ) -> Option<usize> {
        let choice = self.pending?;
        let written = vocabulary.bytes_of(generated.get(choice.match_start..).unwrap_or_default());
        match bias.match_status(&written) {
            MatchStatus::Partial if !at_end => None,
            MatchStatus::Complete => {
                self.pending = None;
                None
            }
            MatchStatus::Partial | MatchStatus::Broken => {
                self.pending = None;
                (self.withdrawn.len() < MAX_WITHDRAWALS).then(|| {
                    self.withdrawn.push(choice.position);
                    choice.position
                })
            }
        }
    }
}

/// The prefix of `request`'s decodes, its no-speech probability (after `<|sot|>`, as
/// Whisper reads it), the step rules and the token budget.
fn setup(
    state: &mut DecoderState,
    vocabulary: &Vocabulary,
    request: &DecodeRequest<'_>,
) -> Result<AttemptSetup> {
    let (prefix, sot_index) = prefix_tokens(
        vocabulary,
        request.prompt,
        request.language,
        request.timestamps,
    );
    let no_speech_prob = {
        let logits = state.logits_after(&prefix[..=sot_index], request.threads)?;
        let total = logits::log_sum_exp(logits);
        usize::try_from(vocabulary.special.no_speech)
            .ok()
            .and_then(|i| logits.get(i))
            .map_or(0.0, |l| (l - total).exp())
    };
    let rules = StepRules {
        timestamps: request.timestamps,
        max_timestamp: request.audio_samples.div_ceil(320),
    };
    let budget = token_budget(request.audio_samples)
        .min(state.n_text_ctx().saturating_sub(prefix.len() + 1));
    Ok(AttemptSetup {
        prefix,
        no_speech_prob,
        rules,
        budget,
    })
}

/// One attempt at `temperature`: beam search at 0 when asked for, else greedy or
/// sampling.
fn decode_attempt(
    state: &mut DecoderState,
    vocabulary: &Vocabulary,
    request: &DecodeRequest<'_>,
    temperature: f32,
    seed: u64,
) -> Result<Decoded> {
    let setup = setup(state, vocabulary, request)?;
    let searched = if temperature == 0.0 && request.beam_size > 1 {
        beam::search(state, vocabulary, request, &setup)?
    } else {
        sample_or_pick(state, vocabulary, request, &setup, temperature, seed)?
    };
    Ok(finish(searched, &setup, vocabulary, request, temperature))
}

/// The lowercase token a greedy, unbiased step of a `request` that asks for sentence case
/// writes instead of `token` ([`casing::lowercase_if_unsure`]).
fn sentence_case(
    request: &DecodeRequest<'_>,
    temperature: f32,
    row: &[f32],
    token: i32,
    generated: &[i32],
    vocabulary: &Vocabulary,
) -> Option<(i32, f32)> {
    if !request.sentence_case || request.bias.is_some() || temperature != 0.0 {
        return None;
    }
    casing::lowercase_if_unsure(row, token, generated, vocabulary, request.term_words)
}

/// Greedy (temperature 0) or sampled decoding, with bias withdrawal at 0.
fn sample_or_pick(
    state: &mut DecoderState,
    vocabulary: &Vocabulary,
    request: &DecodeRequest<'_>,
    setup: &AttemptSetup,
    temperature: f32,
    seed: u64,
) -> Result<Searched> {
    let threads = request.threads;
    let (prefix, rules, budget) = (&setup.prefix, setup.rules, setup.budget);
    let mut rng = SplitMix64::new(seed);
    let mut sequence = prefix.clone();
    let mut logprobs: Vec<f32> = Vec::new();
    let mut withdrawals = Withdrawals::default();
    let mut scratch = Vec::new();
    let (mut over_budget, mut end_logprob) = (false, 0.0);
    let mut lookahead = Lookahead::through(vocabulary, request.draft);
    loop {
        request.stop.check()?;
        if let Some(lookahead) = &mut lookahead {
            lookahead.check_ahead(state, vocabulary, &sequence, prefix.len(), threads)?;
        }
        let generated = &sequence[prefix.len()..];
        let mut row = state.logits_after(&sequence, threads)?.to_vec();
        logits::apply_rules(&mut row, generated, vocabulary, rules);
        let unbiased_choice = (temperature == 0.0).then(|| logits::argmax(&row)).flatten();
        let bias = request
            .bias
            .filter(|_| withdrawals.allow_bias_at(generated.len()));
        if let Some(bias) = bias {
            bias.apply(generated, vocabulary.bpe(), &mut row, &mut scratch);
        }
        let Some((mut token, mut logprob)) = pick(&row, temperature, &mut rng) else {
            break;
        };
        if let Some(lower) = sentence_case(request, temperature, &row, token, generated, vocabulary)
        {
            (token, logprob) = lower;
        }
        if let Some(bias) = bias
            && unbiased_choice.is_some_and(|u| i32::try_from(u).ok() != Some(token))
        {
            withdrawals.chosen_by_bonus(bias, vocabulary, generated, token);
        }
        if ends_the_audio(vocabulary, request, token) {
            sequence.push(token);
            logprobs.push(logprob);
            break;
        }
        let at_end = token == vocabulary.special.eot;
        if !at_end {
            sequence.push(token);
            logprobs.push(logprob);
            if request.stop_at_repeat
                && let Some(cut) = repeat_start(vocabulary, &sequence[prefix.len()..])
            {
                sequence.truncate(prefix.len() + cut);
                logprobs.truncate(cut);
                break;
            }
            report_segment(vocabulary, request, &sequence[prefix.len()..], &logprobs);
        }
        if let Some(bias) = request.bias
            && let Some(position) =
                withdrawals.rewind_to(bias, vocabulary, &sequence[prefix.len()..], at_end)
        {
            sequence.truncate(prefix.len() + position);
            logprobs.truncate(position);
            continue;
        }
        if at_end {
            end_logprob = logprob;
            break;
        }
        if logprobs.len() >= budget {
            over_budget = true;
            break;
        }
    }
    Ok(Searched {
        tokens: sequence[prefix.len()..].to_vec(),
        logprobs,
        end_logprob,
        over_budget,
    })
}

/// Hands `generated` to the request's [`SegmentHook`] when its last token closes a
/// segment (a timestamp after text) of an unbiased attempt (no bias withdrawal can
/// rewind it) whose text so far would pass the fallback's checks (average
/// log-probability, compression ratio): segments of an attempt bound to fail are not
/// shown.
fn report_segment(
    vocabulary: &Vocabulary,
    request: &DecodeRequest<'_>,
    generated: &[i32],
    logprobs: &[f32],
) {
    let Some(SegmentHook(hook)) = request.on_segment else {
        return;
    };
    let closes = matches!(generated, [.., text, stamp]
        if vocabulary.is_text(*text) && vocabulary.is_timestamp(*stamp));
    if request.bias.is_some() || !closes {
        return;
    }
    #[allow(clippy::cast_precision_loss)]
    let avg_logprob = logprobs.iter().sum::<f32>() / logprobs.len().max(1) as f32;
    if avg_logprob >= MIN_AVG_LOGPROB
        && compression_ratio(&vocabulary.text_of(generated)) <= MAX_COMPRESSION_RATIO
    {
        hook(generated);
    }
}

/// The token of `row` chosen at `temperature` (the most likely at 0, else sampled) and
/// its log-probability.
fn pick(row: &[f32], temperature: f32, rng: &mut SplitMix64) -> Option<(i32, f32)> {
    let choice = if temperature == 0.0 {
        logits::argmax(row)
    } else {
        logits::sample(row, temperature, rng)
    }?;
    let logprob = row
        .get(choice)
        .map_or(f32::NEG_INFINITY, |l| l - logits::log_sum_exp(row));
    Some((i32::try_from(choice).ok()?, logprob))
}

/// The decode an attempt's search gives: a runaway last segment dropped, and the
/// measures temperature fallback judges it by.
fn finish(
    searched: Searched,
    setup: &AttemptSetup,
    vocabulary: &Vocabulary,
    request: &DecodeRequest<'_>,
    temperature: f32,
) -> Decoded {
    let Searched {
        mut tokens,
        mut logprobs,
        end_logprob,
        mut over_budget,
    } = searched;
    if over_budget && request.timestamps {
        // A timed decode that ran out of tokens wrote its last segment without closing
        // it: a runaway (Whisper repeating "The word is fair." into the silence after
        // it). The closed segments before it stand.
        if let Some(last) = tokens.iter().rposition(|&t| vocabulary.is_timestamp(t))
            && tokens[..last].iter().any(|&t| vocabulary.is_text(t))
        {
            tokens.truncate(last + 1);
            logprobs.truncate(last + 1);
            over_budget = false;
        }
    }
    let total: f32 = logprobs.iter().sum::<f32>() + end_logprob;
    #[allow(clippy::cast_precision_loss)]
    let avg_logprob = total / (tokens.len() + 1) as f32;
    Decoded {
        compression_ratio: compression_ratio(&vocabulary.text_of(&tokens)),
        tokens,
        avg_logprob,
        no_speech_prob: setup.no_speech_prob,
        temperature,
        over_budget,
        silence: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::tokens::tests::tiny_vocabulary;

    #[test]
    fn budget_grows_with_the_audio_up_to_whispers_limit() {
        assert_eq!(token_budget(0), BASE_TOKENS);
        assert_eq!(token_budget(16_000), BASE_TOKENS + 16);
        assert_eq!(token_budget(28 * 16_000), MAX_WINDOW_TOKENS);
    }

    #[test]
    fn prefix_puts_the_prompt_before_the_task_and_keeps_its_end() {
        let v = tiny_vocabulary();
        let en = Language::from_code("en").expect("known");
        let (plain, sot) = prefix_tokens(&v, &[], en, true);
        assert_eq!(sot, 0);
        assert_eq!(
            plain,
            vec![
                v.special.sot,
                v.special.first_language.unwrap_or(0),
                v.special.transcribe
            ]
        );
        let long: Vec<i32> = (0..300).map(|i| i % 5).collect();
        let (prompted, sot) = prefix_tokens(&v, &long, en, false);
        assert_eq!(prompted[0], v.special.prev);
        assert_eq!(sot, 1 + MAX_PROMPT_TOKENS);
        assert_eq!(prompted.last(), Some(&v.special.no_timestamps));
    }

    #[test]
    fn silence_needs_both_a_likely_no_speech_and_unlikely_text() {
        let decoded = Decoded {
            tokens: vec![1],
            avg_logprob: -1.5,
            compression_ratio: 1.0,
            no_speech_prob: 0.7,
            temperature: 0.0,
            over_budget: false,
            silence: false,
        };
        assert!(decoded.is_silence());
        assert!(
            !Decoded {
                avg_logprob: -0.5,
                ..decoded.clone()
            }
            .is_silence()
        );
        assert!(
            !Decoded {
                no_speech_prob: 0.3,
                ..decoded.clone()
            }
            .is_silence()
        );
        assert!(
            Decoded {
                over_budget: true,
                avg_logprob: -0.1,
                ..decoded
            }
            .fails()
        );
    }

    #[test]
    fn a_bonus_whose_term_is_left_is_taken_back_once_and_a_finished_one_stays() {
        use crate::engine::biasing::{BiasPhrase, BiasStrength};
        let v = tiny_vocabulary();
        // " ab" written as " a" then "b".
        let bias = TermBias::new(
            &[BiasPhrase {
                text: " ab".into(),
                tokenizations: vec![vec![3, 2]],
                weight: 1.0,
            }],
            BiasStrength::default(),
        );
        let mut w = Withdrawals::default();
        w.chosen_by_bonus(&bias, &v, &[], 3);
        assert_eq!(w.rewind_to(&bias, &v, &[3], false), None, "still partial");
        assert_eq!(
            w.rewind_to(&bias, &v, &[3, 1], false),
            Some(0),
            "left: \" aa\""
        );
        assert!(!w.allow_bias_at(0));
        assert!(w.allow_bias_at(1));
        let mut w = Withdrawals::default();
        w.chosen_by_bonus(&bias, &v, &[], 3);
        assert_eq!(w.rewind_to(&bias, &v, &[3, 2], false), None, "whole");
        assert_eq!(
            w.rewind_to(&bias, &v, &[3, 2, 1], true),
            None,
            "nothing pending"
        );
        // Unfinished when the decoder stops: taken back.
        let mut w = Withdrawals::default();
        w.chosen_by_bonus(&bias, &v, &[], 3);
        assert_eq!(w.rewind_to(&bias, &v, &[3], true), Some(0));
    }
}
