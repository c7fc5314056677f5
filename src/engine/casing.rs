//! Sentence case where the model is unsure of a capital.
//!
//! Mid-sentence, Whisper sometimes starts a word with a capital it gives barely more
//! probability than the same word in lowercase ("the Design" at 0.58 against "the design"
//! at 0.39), and that capital then carries on: the next word follows in Title Case almost
//! surely ("Review" at 0.92), so a near tie becomes "the Design Review". A greedy decode
//! cannot take it back; a beam search can, as it weighs whole continuations. So where
//! a greedy step picks a capitalised word mid-sentence while the same word in lowercase
//! holds at least [`LOWERCASE_SHARE`] of its probability, the lowercase word is written.
//! A name keeps its capital: the model gives its lowercase form a few percent at most
//! ("Brooklyn Bridge": 0.78 against 0.22 for "bridge"; "March" 0.99 against 0.01).
//! Only plain decodes do this ([`super::EngineRequest::sentence_case`]): a context's
//! prompt or biasing may ask for a capitalised term. In the plain decode of a request
//! with context, a capital that may start one of the terms' words stays
//! ([`super::EngineRequest::term_words`]): the corrections read the plain pass's capitals
//! ("Nav Bar" for `NavBar`). German (and Luxembourgish) write every noun with a capital.

use super::logits::log_sum_exp;
use super::tokens::Vocabulary;
use crate::context::Language;
use crate::transcript::capitalised_sentence_start;

/// The lowercase word wins when its probability is at least this share of the
/// capitalised word's: the capital must be at least twice as likely to stand.
const LOWERCASE_SHARE: f32 = 0.5;

/// The fewest letters of a term's word that a longer capitalised word must start with to
/// keep its capital: one or two letters ("j q" for `jq`) would keep most capitals.
const MIN_TERM_WORD_PREFIX: usize = 3;

/// Languages whose nouns are written with a capital mid-sentence.
const NOUN_CAPITALISING: [&str; 2] = ["de", "lb"];

/// True when `language` writes a capital mid-sentence only for names (where a tie
/// between a capital and lowercase is broken towards lowercase).
pub(super) fn applies_to(language: Language) -> bool {
    !NOUN_CAPITALISING.contains(&language.code())
}

/// The lowercase token to write instead of `chosen` (with its log-probability in `row`)
/// when `chosen` starts a capitalised word mid-sentence (after `generated`) that may not
/// start one of `term_words`, and the same word in lowercase is nearly as likely; `None`
/// keeps `chosen`.
pub(super) fn lowercase_if_unsure(
    row: &[f32],
    chosen: i32,
    generated: &[i32],
    vocabulary: &Vocabulary,
    term_words: &[String],
) -> Option<(i32, f32)> {
    let bpe = vocabulary.bpe();
    let lower = lowercase_word_start(bpe.bytes_of(chosen))?;
    if may_start_a_term_word(&lower[1..], term_words)
        || starts_a_sentence(&vocabulary.text_of(generated))
    {
        return None;
    }
    let logit = |token: i32| {
        usize::try_from(token)
            .ok()
            .and_then(|i| row.get(i))
            .copied()
    };
    // The likeliest token that begins with the same start in lowercase: the word may
    // be split otherwise (" Mainten" is " maintenance" in lowercase, while " mainten"
    // is a rare token).
    let candidate = (0..vocabulary.special.eot)
        .filter(|&t| bpe.bytes_of(t).starts_with(&lower))
        .max_by(|&a, &b| {
            let score = |t| logit(t).unwrap_or(f32::NEG_INFINITY);
            score(a).total_cmp(&score(b))
        })?;
    let (capital, lowercase) = (logit(chosen)?, logit(candidate)?);
    if lowercase - capital < LOWERCASE_SHARE.ln() {
        return None;
    }
    Some((candidate, lowercase - log_sum_exp(row)))
}

/// `tokens` (a decode's transcript tokens, which start a sentence) with the first word
/// capitalised where the text has it in lowercase ([`capitalised_sentence_start`]): the
/// first text token replaced by its text with a capital, one token where the vocabulary
/// has it, else that text's tokens.
pub(super) fn capitalise_first_word(
    tokens: &mut Vec<i32>,
    vocabulary: &Vocabulary,
    term_words: &[String],
) {
    if capitalised_sentence_start(&vocabulary.text_of(tokens), term_words).is_none() {
        return;
    }
    let bpe = vocabulary.bpe();
    let Some(index) = tokens.iter().position(|&t| vocabulary.is_text(t)) else {
        return;
    };
    let Ok(piece) = std::str::from_utf8(bpe.bytes_of(tokens[index])) else {
        return;
    };
    let Some(capital) = capitalised_sentence_start(piece, &[]) else {
        return;
    };
    if let Some(token) = bpe.id_of(capital.as_bytes()) {
        tokens[index] = token;
    } else if let Some(spelled) = bpe.encode(&capital) {
        tokens.splice(index..=index, spelled);
    }
}

/// `bytes` with its first letter in lowercase when it is a space, a capital and at
/// least one more letter, all lowercase ASCII (" Design"; not " I", " API" or " École").
fn lowercase_word_start(bytes: &[u8]) -> Option<Vec<u8>> {
    let [b' ', first, rest @ ..] = bytes else {
        return None;
    };
    if !first.is_ascii_uppercase() || rest.is_empty() || !rest.iter().all(u8::is_ascii_lowercase) {
        return None;
    }
    let mut lower = bytes.to_vec();
    lower[1] = first.to_ascii_lowercase();
    Some(lower)
}

/// True when a word that starts with `start` (lowercase letters) may be one of `words`
/// (sorted): a word of them starts with it (" Nav" of "nav"), or it starts with a word of
/// them of at least [`MIN_TERM_WORD_PREFIX`] letters (" Postgresql" of "postgres").
fn may_start_a_term_word(start: &[u8], words: &[String]) -> bool {
    let Ok(start) = std::str::from_utf8(start) else {
        return false;
    };
    // The words that start with `start` sort right at or after it.
    let from = words.partition_point(|word| word.as_str() < start);
    words.get(from).is_some_and(|word| word.starts_with(start))
        || (MIN_TERM_WORD_PREFIX..start.len()).any(|end| {
            start
                .get(..end)
                .is_some_and(|prefix| words.binary_search_by(|w| w.as_str().cmp(prefix)).is_ok())
        })
}

/// True when the next word starts a sentence: nothing written yet (a window's first
/// word may start one), or the text ends a sentence or opens a clause that may take a
/// capital (`.`, `!`, `?`, `:`, an opening quote).
fn starts_a_sentence(text: &str) -> bool {
    text.trim_end()
        .chars()
        .last()
        .is_none_or(|c| matches!(c, '.' | '!' | '?' | ':' | '"' | '\u{201c}'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::tokens::Vocabulary;
    use crate::engine::tokens::tests::vocabulary_of;

    const TEXTS: [&str; 9] = [
        " the",
        " Design",
        " design",
        " Mainten",
        " maintenance",
        " maint",
        " March",
        ".",
        " API",
    ];

    fn vocabulary() -> Vocabulary {
        vocabulary_of(&TEXTS)
    }

    /// Logits whose softmax gives the text tokens `probabilities` (the rest ~0).
    fn row(probabilities: &[(usize, f32)]) -> Vec<f32> {
        let mut row = vec![-30.0; vocabulary().n_vocab()];
        for &(token, p) in probabilities {
            row[token] = p.ln();
        }
        row
    }

    #[test]
    fn a_transcript_that_starts_in_lowercase_gets_a_capital_token() {
        let v = vocabulary_of(&[" that", " That", " has", " tit", " T", "it", "rate", " kub"]);
        let timestamp = v.timestamp_token(0);
        let mut tokens = vec![timestamp, 0, 2];
        capitalise_first_word(&mut tokens, &v, &[]);
        assert_eq!(tokens, [timestamp, 1, 2]);
        // A capitalised piece the vocabulary lacks is spelled by its tokens.
        let mut tokens = vec![3, 6];
        capitalise_first_word(&mut tokens, &v, &[]);
        assert_eq!(v.text_of(&tokens), " Titrate");
        // A term written in lowercase stays so.
        let mut tokens = vec![7];
        capitalise_first_word(&mut tokens, &v, &["kub".into()]);
        assert_eq!(tokens, [7]);
    }

    #[test]
    fn a_near_tie_mid_sentence_is_written_in_lowercase() {
        let v = vocabulary();
        let picked = lowercase_if_unsure(&row(&[(1, 0.6), (2, 0.4)]), 1, &[0], &v, &[]);
        let (token, logprob) = picked.expect("lowercase");
        assert_eq!(token, 2);
        assert!((logprob.exp() - 0.4).abs() < 0.01, "{logprob}");
    }

    #[test]
    fn a_word_split_otherwise_in_lowercase_is_found_by_its_start() {
        let v = vocabulary();
        let picked = lowercase_if_unsure(&row(&[(3, 0.6), (4, 0.34), (5, 0.05)]), 3, &[0], &v, &[]);
        assert_eq!(picked.map(|p| p.0), Some(4));
    }

    #[test]
    fn a_likely_capital_a_sentence_start_and_acronyms_keep_their_case() {
        let v = vocabulary();
        // Twice as likely: a name.
        assert!(lowercase_if_unsure(&row(&[(1, 0.66), (2, 0.32)]), 1, &[0], &v, &[]).is_none());
        // No lowercase form at all ("March" the month).
        assert!(lowercase_if_unsure(&row(&[(6, 0.9)]), 6, &[0], &v, &[]).is_none());
        // After a full stop, and first in a window.
        assert!(lowercase_if_unsure(&row(&[(1, 0.5), (2, 0.5)]), 1, &[0, 7], &v, &[]).is_none());
        assert!(lowercase_if_unsure(&row(&[(1, 0.5), (2, 0.5)]), 1, &[], &v, &[]).is_none());
        // Not a capitalised word.
        assert!(lowercase_if_unsure(&row(&[(8, 0.5), (0, 0.5)]), 8, &[0], &v, &[]).is_none());
        assert!(lowercase_if_unsure(&row(&[(2, 0.5), (1, 0.5)]), 2, &[0], &v, &[]).is_none());
    }

    #[test]
    fn a_capital_that_may_start_a_term_word_stays() {
        let v = vocabulary();
        let tie = row(&[(1, 0.5), (2, 0.5)]);
        let words =
            |list: &[&str]| -> Vec<String> { list.iter().map(|w| (*w).to_owned()).collect() };
        // " Design" may start "designer" (a term's word) and is "design" itself.
        for kept in [&["designer"][..], &["bar", "design"], &["des"]] {
            assert!(
                lowercase_if_unsure(&tie, 1, &[0], &v, &words(kept)).is_none(),
                "{kept:?}"
            );
        }
        // Unrelated words, and a word too short to tell ("j q" for `jq`: "de").
        for lowered in [&["bar", "nav"][..], &["de"], &["desk"]] {
            let picked = lowercase_if_unsure(&tie, 1, &[0], &v, &words(lowered));
            assert_eq!(picked.map(|p| p.0), Some(2), "{lowered:?}");
        }
    }

    #[test]
    fn german_keeps_every_capital() {
        assert!(!applies_to(Language::from_code("de").expect("de")));
        assert!(applies_to(Language::from_code("en").expect("en")));
        assert!(applies_to(Language::from_code("fr").expect("fr")));
    }
}
