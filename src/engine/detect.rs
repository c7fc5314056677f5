//! Language detection from an encoding: Whisper's own, one decoder step on
//! `<|startoftranscript|>`, read over the language tokens. It shares the window's
//! encoding with every decode of the window (and the plain decode continues the same
//! token sequence, so the step is not repeated).

use super::binding::DecoderState;
use super::tokens::Vocabulary;
use crate::context::{Language, Languages};
use crate::error::{Error, Result};

/// The most probable language `languages` allows, and its probability among all the
/// model's languages.
pub(crate) fn detect_language(
    state: &mut DecoderState,
    vocabulary: &Vocabulary,
    languages: &Languages,
    threads: usize,
) -> Result<(Language, f32)> {
    let no_language = || Error::TranscriptionFailed {
        message: "language detection returned no allowed language".into(),
        source: None,
    };
    let first = vocabulary.special.first_language.ok_or_else(no_language)?;
    let row = state.logits_after(&[vocabulary.special.sot], threads)?;
    let count = vocabulary.special.language_count;
    let language_logits: Vec<(Language, f32)> = (0..count)
        .filter_map(|index| {
            let id = i32::try_from(index).ok()?;
            let language = Language::from_whisper_id(id)?;
            let logit = *row.get(usize::try_from(first + id).ok()?)?;
            Some((language, logit))
        })
        .collect();
    best_allowed(&language_logits, languages).ok_or_else(no_language)
}

/// The allowed language with the largest logit and its softmax probability over all.
fn best_allowed(
    language_logits: &[(Language, f32)],
    languages: &Languages,
) -> Option<(Language, f32)> {
    let max = language_logits
        .iter()
        .map(|(_, logit)| *logit)
        .fold(f32::NEG_INFINITY, f32::max);
    let total: f32 = language_logits
        .iter()
        .map(|(_, logit)| (logit - max).exp())
        .sum();
    language_logits
        .iter()
        .filter(|(language, _)| languages.allows(*language))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|&(language, logit)| (language, (logit - max).exp() / total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_best_allowed_language_keeps_its_share_of_all() {
        let lang = |c| Language::from_code(c).expect("known");
        let logits = [(lang("en"), 2.0), (lang("de"), 1.0), (lang("fr"), 0.0)];
        let (best, p) = best_allowed(&logits, &Languages::Auto).expect("some");
        assert_eq!(best, lang("en"));
        assert!((p - 0.665).abs() < 0.01, "{p}");
        let only_fr = Languages::from_codes(["fr"]).expect("valid");
        let (best, p) = best_allowed(&logits, &only_fr).expect("some");
        assert_eq!(best, lang("fr"));
        assert!(p < 0.1);
    }
}
