//! Language detection from an encoding: Whisper's own, one decoder step on
//! `<|startoftranscript|>`, read over the language tokens. It shares the window's
//! encoding with every decode of the window (and the plain decode continues the same
//! token sequence, so the step is not repeated).

use super::binding::DecoderState;
use super::tokens::Vocabulary;
use crate::context::{Language, Languages};
use crate::error::{Error, Result};

/// A detection whose best allowed language holds at least this share of the probability
/// over all of Whisper's languages is taken as it is; below it, the window is encoded
/// over the full 30 s and detected again (docs/engine.md#language). On the 64 real clips
/// the least sure trimmed detection was 0.60, and trimmed and full agreed everywhere.
const SURE_PROBABILITY: f32 = 0.7;
/// Candidates an unsure detection decodes, at most.
const MAX_CANDIDATES: usize = 6;
/// A language less likely than this is not worth a decode.
const MIN_CANDIDATE_PROBABILITY: f32 = 0.01;
/// Weight of a candidate's detection log-probability beside its decode's average token
/// log-probability. Chosen on benches/langid's tuning half (0.2-0.3 picked the most
/// languages right there; 0, the decode alone, favoured unlikely languages whose reading
/// happened to be fluent: Hungarian, Lithuanian and Japanese for espeak-ng French, German
/// and Portuguese).
const DETECTION_WEIGHT: f32 = 0.3;

/// A detection: the languages allowed, likeliest first, each with its probability among
/// the allowed ones (a set constrains detection to its members; never empty), and the
/// first one's probability among all the model's languages (how sure the detector is:
/// a set's members can share little of it).
pub(crate) struct Detection {
    pub(crate) ranked: Vec<(Language, f32)>,
    pub(crate) certainty: f32,
}

impl Detection {
    /// The likeliest allowed language.
    pub(crate) fn best(&self) -> Language {
        self.ranked[0].0
    }

    pub(crate) fn is_sure(&self) -> bool {
        self.certainty >= SURE_PROBABILITY
    }
}

/// Detects the language of the encoding in `state` among those `languages` allows.
pub(crate) fn detect(
    state: &mut DecoderState,
    vocabulary: &Vocabulary,
    languages: &Languages,
    threads: usize,
) -> Result<Detection> {
    let no_language = || Error::TranscriptionFailed {
        message: "language detection returned no allowed language".into(),
        source: None,
    };
    let first = vocabulary.special.first_language.ok_or_else(no_language)?;
    let row = state.logits_after(&[vocabulary.special.sot], threads)?;
    let count = vocabulary.special.language_count;
    let all: Vec<(Language, f32)> = (0..count)
        .filter_map(|index| {
            let id = i32::try_from(index).ok()?;
            let language = Language::from_whisper_id(id)?;
            let logit = *row.get(usize::try_from(first + id).ok()?)?;
            Some((language, logit))
        })
        .collect();
    let allowed: Vec<(Language, f32)> = all
        .iter()
        .copied()
        .filter(|(language, _)| languages.allows(*language))
        .collect();
    let ranked = softmax_ranked(allowed);
    let best = ranked.first().ok_or_else(no_language)?.0;
    let certainty = softmax_ranked(all)
        .into_iter()
        .find(|(language, _)| *language == best)
        .map_or(0.0, |(_, p)| p);
    Ok(Detection { ranked, certainty })
}

/// `logits` as probabilities (softmax over them), likeliest first.
fn softmax_ranked(mut logits: Vec<(Language, f32)>) -> Vec<(Language, f32)> {
    let max = logits
        .iter()
        .map(|(_, logit)| *logit)
        .fold(f32::NEG_INFINITY, f32::max);
    let total: f32 = logits.iter().map(|(_, logit)| (logit - max).exp()).sum();
    for (_, logit) in &mut logits {
        *logit = (*logit - max).exp() / total;
    }
    logits.sort_by(|a, b| b.1.total_cmp(&a.1));
    logits
}

/// The language of an unsure detection (`ranked`, from [`Detection`]) decided by the
/// model's reading of the audio: each likely candidate is decoded (`read(language)`:
/// the average token log-probability of its decode, `None` when the reading does not
/// count) and the best reading, weighed with its detection probability, wins. Speech
/// the detector hesitates on is usually read more fluently in its own language than in
/// the others. `None` when no candidate reads.
pub(crate) fn decide_by_decoding(
    ranked: &[(Language, f32)],
    mut read: impl FnMut(Language) -> Result<Option<f32>>,
) -> Result<Option<Language>> {
    let mut best: Option<(Language, f32)> = None;
    for &(language, probability) in ranked.iter().take(MAX_CANDIDATES) {
        if probability < MIN_CANDIDATE_PROBABILITY {
            break;
        }
        let Some(average_logprob) = read(language)? else {
            continue;
        };
        let score = average_logprob + DETECTION_WEIGHT * probability.ln();
        if best.is_none_or(|(_, top)| score > top) {
            best = Some((language, score));
        }
    }
    Ok(best.map(|(language, _)| language))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lang(code: &str) -> Language {
        Language::from_code(code).expect("known")
    }

    #[test]
    fn probabilities_are_shares_of_the_allowed_languages_likeliest_first() {
        let ranked = softmax_ranked(vec![
            (lang("fr"), 0.0),
            (lang("en"), 2.0),
            (lang("de"), 1.0),
        ]);
        let order: Vec<&str> = ranked.iter().map(|(l, _)| l.code()).collect();
        assert_eq!(order, ["en", "de", "fr"]);
        assert!((ranked[0].1 - 0.665).abs() < 0.01, "{ranked:?}");
        let total: f32 = ranked.iter().map(|(_, p)| p).sum();
        assert!((total - 1.0).abs() < 1e-5);
    }

    #[test]
    fn an_unsure_detection_goes_to_the_language_the_model_reads_best() {
        let ranked = [
            (lang("es"), 0.55),
            (lang("it"), 0.3),
            (lang("pt"), 0.145),
            (lang("fr"), 0.005),
        ];
        let mut decoded = Vec::new();
        let chosen = decide_by_decoding(&ranked, |language| {
            decoded.push(language.code());
            Ok(Some(if language == lang("it") { -0.3 } else { -0.9 }))
        })
        .expect("no error");
        assert_eq!(chosen, Some(lang("it")));
        assert_eq!(decoded, ["es", "it", "pt"], "not the unlikely French");
        // A near tie goes to the likelier detection.
        let chosen = decide_by_decoding(&ranked, |_| Ok(Some(-0.5))).expect("no error");
        assert_eq!(chosen, Some(lang("es")));
        // No candidate reads: no decision.
        let chosen = decide_by_decoding(&ranked, |_| Ok(None)).expect("no error");
        assert_eq!(chosen, None);
    }
}
