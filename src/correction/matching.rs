//! How one span of a transcript is matched against the terms' spoken forms: the
//! candidates and their costs under the guards of the [module](super), and the
//! non-overlapping ones chosen. Forms are indexed by the class of their first phone
//! ([`buckets_of`]).

use super::phonetic::{
    ConsonantProfile, PROFILE_UNIT_COST, edits_within, is_vowel_phone, weighted_distance,
};
use super::words::{Token, said_leading_symbols};
use super::{
    COMMON_SPAN_THRESHOLD, Candidate, Corrector, FUNCTION_WORD_PENALTY, FUNCTION_WORDS,
    MATCH_THRESHOLD, MIN_FUZZY_KEY_LEN, MIN_RELEVANCE_KEY_LEN, MatchMode, NEAR_SPELLING_EDIT_COST,
    NEAR_SPELLING_MIN_LETTERS, SINGLE_COMMON_WORD_THRESHOLD, Span, TermEntry,
    UNKNOWN_WORD_THRESHOLD,
};
use crate::context::mining::is_ordinary_word;
use crate::context::spoken::is_apostrophe;

impl Corrector {
    /// Matches the span `range` of `tokens` (`span_text`: its words, key and letters)
    /// against `forms` (indices into the spoken forms), or, when `None`, against the
    /// forms that start with the span's class of sound ([`buckets_of`]).
    pub(super) fn match_span(
        &self,
        tokens: &[Token<'_>],
        (start, end): (usize, usize),
        span_text: &Span,
        mode: MatchMode,
        forms: Option<&[usize]>,
        candidates: &mut Vec<Candidate>,
    ) {
        let loose = mode.relevance_threshold();
        let relevance = loose.is_some();
        let fuzzy = mode == MatchMode::Correct { fuzzy: true };
        let (words, key, letters) = (&span_text.words, &span_text.key, &span_text.letters);
        let Some(&first) = key.first() else {
            return;
        };
        let Some(bucket_forms) =
            forms.or_else(|| self.buckets.get(&bucket(first)).map(Vec::as_slice))
        else {
            return;
        };
        let profile = ConsonantProfile::of(key);
        let span = &tokens[start..end];
        let all_common = span.iter().all(|t| t.common);
        let single_common = span.len() == 1 && span[0].common;
        let single_unknown =
            span.len() == 1 && !span[0].common && span[0].spoken.letters.len() >= 4;
        for &form_index in bucket_forms {
            let form = &self.forms[form_index];
            let longest = key.len().max(form.key.len());
            let term = &self.terms[form.term];
            if !relevance && single_common && !term.plain_word && &term.letters != letters {
                // One common word becomes an identifier, acronym or file name only by
                // casing ("json" -> "JSON"), never by sound ("Jason" is not "JSON").
                continue;
            }
            if !relevance
                && single_common
                && term.ordinary
                && same_but_apostrophes(span[0].core, &term.text)
            {
                // "meters" is not a word list's "meter's": the same ordinary word, its
                // apostrophe chosen by grammar, which Whisper knows.
                continue;
            }
            if &form.letters == letters {
                candidates.push(Candidate {
                    start,
                    end,
                    term: form.term,
                    cost: 0.0,
                    skip: 0,
                });
                continue;
            }
            if !relevance && term.ordinary && &form.key != key {
                // A term that is a common word itself replaces words only when they
                // sound the same: "spades" is not a word list's "side's".
                continue;
            }
            let min_key_len = if relevance {
                MIN_RELEVANCE_KEY_LEN
            } else {
                MIN_FUZZY_KEY_LEN
            };
            if !(fuzzy || relevance) || key.len() < min_key_len || form.key.len() < min_key_len {
                continue;
            }
            // Cheapest possible cost of the length difference alone.
            #[allow(clippy::cast_precision_loss)]
            let (length_gap, longest_f) =
                (key.len().abs_diff(form.key.len()) as f32, longest as f32);
            let threshold = span_threshold(loose, all_common, single_common, single_unknown, term);
            let penalty = if relevance {
                0.0
            } else {
                function_word_penalty(words, &form.words)
            };
            let limit = (threshold - penalty) * longest_f;
            #[allow(clippy::cast_precision_loss)]
            let profile_gap = profile.difference(&form.profile) as f32 * PROFILE_UNIT_COST;
            if limit < 0.0 || length_gap * 0.3 > limit + 1e-4 || profile_gap > limit + 1e-4 {
                continue;
            }
            if let Some(distance) = weighted_distance(key, &form.key, limit + 1e-4) {
                candidates.push(Candidate {
                    start,
                    end,
                    term: form.term,
                    cost: distance / longest_f + penalty,
                    skip: 0,
                });
            }
        }
    }

    /// A word Whisper wrote without knowing it, spelled within a letter or two of a long
    /// term ("uvcorn" for `uvicorn`, "mapier" for `Zapier`). Its sound may be far from the
    /// term's by English rules, or start with another class of phone, but a name misheard
    /// by one letter keeps its spelling. Only a word that is neither in Whisper's
    /// vocabulary nor an English word, and only towards a term of at least
    /// [`NEAR_SPELLING_MIN_LETTERS`] letters that is not an English word itself: one edit
    /// up to 9 letters, two from 10. The match is a guess ([`is_guess`]): a pass told the
    /// terms that writes another term there wins.
    pub(super) fn match_near_spelling(
        &self,
        token: &Token<'_>,
        at: usize,
        candidates: &mut Vec<Candidate>,
    ) {
        let letters = &token.spoken.letters;
        if token.common
            || letters.len() + 1 < NEAR_SPELLING_MIN_LETTERS
            || !token.core.chars().all(char::is_alphabetic)
            || is_ordinary_word(token.core)
        {
            return;
        }
        for (index, term) in self.terms.iter().enumerate() {
            if term.ordinary
                || term.letters.len() < NEAR_SPELLING_MIN_LETTERS
                || &term.letters == letters
            {
                continue;
            }
            let most = if term.letters.len() >= 10 { 2 } else { 1 };
            // The word list is asked only of the few terms within reach.
            if let Some(edits) = edits_within(letters, &term.letters, true, most)
                && !is_ordinary_word(&term.text)
            {
                #[allow(clippy::cast_precision_loss)]
                candidates.push(Candidate {
                    start: at,
                    end: at + 1,
                    term: index,
                    cost: MATCH_THRESHOLD + NEAR_SPELLING_EDIT_COST * edits as f32,
                    skip: 0,
                });
            }
        }
    }
}

/// The largest distance per phone for a fuzzy match of a span to a term: strict for
/// common words (one word, or only common words), looser for one unknown word that may be
/// a misheard name, loosest when only looking for relevance (what the prompt names).
fn span_threshold(
    loose: Option<f32>,
    all_common: bool,
    single_common: bool,
    single_unknown: bool,
    term: &TermEntry,
) -> f32 {
    if let Some(loose) = loose {
        loose
    } else if single_common {
        SINGLE_COMMON_WORD_THRESHOLD
    } else if all_common {
        COMMON_SPAN_THRESHOLD
    } else if single_unknown && !term.is_lowercase_word() {
        UNKNOWN_WORD_THRESHOLD
    } else {
        MATCH_THRESHOLD
    }
}

/// True for words that are all function words ("the", "of a"): no term is said so.
pub(super) fn says_nothing(words: &[String]) -> bool {
    words.iter().all(|w| FUNCTION_WORDS.contains(&w.as_str()))
}

/// The cost of the span's function words ("the", "of") that the term's spoken form does
/// not have: a match that swallows them is less likely.
fn function_word_penalty(words: &[String], form_words: &[String]) -> f32 {
    #[allow(clippy::cast_precision_loss)]
    let count = words
        .iter()
        .filter(|w| FUNCTION_WORDS.contains(&w.as_str()) && !form_words.contains(w))
        .count() as f32;
    count * FUNCTION_WORD_PENALTY
}

/// True for the cost of a guess: a match looser than [`MATCH_THRESHOLD`] allows any span
/// but one unknown word ([`UNKNOWN_WORD_THRESHOLD`]).
pub(super) fn is_guess(cost: f32) -> bool {
    cost > MATCH_THRESHOLD + 1e-4
}

/// Picks the best non-overlapping candidates: lowest cost, then most words, then the
/// higher-ranked term; skips spans that already spell a term and no-op replacements.
pub(super) fn choose(
    mut candidates: Vec<Candidate>,
    protected: &[bool],
    tokens: &[Token<'_>],
    terms: &[TermEntry],
) -> Vec<Candidate> {
    candidates.sort_by(|a, b| {
        a.cost
            .total_cmp(&b.cost)
            .then((b.end - b.start).cmp(&(a.end - a.start)))
            .then(a.term.cmp(&b.term))
            .then(a.start.cmp(&b.start))
    });
    let mut taken = protected.to_vec();
    let mut chosen: Vec<Candidate> = Vec::new();
    for candidate in candidates {
        let range = candidate.start..candidate.end;
        if taken[range.clone()].iter().any(|&t| t) {
            continue;
        }
        let single_core = (candidate.end - candidate.start == 1)
            .then(|| tokens[candidate.start].core.get(candidate.skip..))
            .flatten();
        if single_core == Some(terms[candidate.term].text.as_str()) {
            continue;
        }
        taken[range].iter_mut().for_each(|t| *t = true);
        chosen.push(candidate);
    }
    for candidate in &mut chosen {
        let span = candidate.start..candidate.end;
        let start = said_leading_symbols(tokens, span, &terms[candidate.term].text, &taken);
        taken[start..candidate.start]
            .iter_mut()
            .for_each(|t| *t = true);
        if start < candidate.start {
            // The span now opens with the symbols' names, elided word and all.
            candidate.skip = 0;
        }
        candidate.start = start;
    }
    chosen.sort_by_key(|c| c.start);
    chosen
}

/// The buckets a form with phonetic key `key` is indexed under: its first phone's, and
/// another where it starts with two consonants that English does not begin a word with,
/// which Whisper writes as English would say them:
/// - a nasal before a consonant (`Ngozi`, `Nkechi`, `Mbali`): with a vowel before it
///   ("Angozi", "Enkechi"), the vowels' bucket;
/// - a stop before a consonant other than `l`, `r`, `w`, `y` (`Przemysław` read
///   "pshehmiswahf", `Tsipras`, `Pfizer`, `Gdańsk`): without the stop ("Shemiswa",
///   "Sipras"), the second phone's bucket.
pub(super) fn buckets_of(key: &[u8]) -> impl Iterator<Item = u8> {
    let first = key.first().copied().map(bucket);
    let second = match key {
        [b'm' | b'n' | b'N', next, ..] if !is_vowel_phone(*next) => Some(bucket(b'a')),
        [b'p' | b'b' | b't' | b'd' | b'k' | b'g', next, ..]
            if !is_vowel_phone(*next) && !matches!(next, b'l' | b'r' | b'w' | b'y') =>
        {
            Some(bucket(*next)).filter(|&class| Some(class) != first)
        }
        _ => None,
    };
    first.into_iter().chain(second)
}

/// The class of a first phone: voicing and place variants share a bucket, vowels and
/// the weak `h`, `w`, `y` share one.
fn bucket(phone: u8) -> u8 {
    match phone {
        b'p' | b'b' => b'p',
        b't' | b'd' | b'T' => b't',
        b'k' | b'g' => b'k',
        b'f' | b'v' => b'f',
        b's' | b'z' | b'S' | b'Z' => b's',
        b'C' | b'J' => b'C',
        b'm' | b'n' | b'N' => b'm',
        b'h' | b'w' | b'y' => b'a',
        vowel if is_vowel_phone(vowel) => b'a',
        other => other,
    }
}

/// True when `a` and `b` differ by apostrophes (and maybe case), nothing else.
pub(super) fn same_but_apostrophes(a: &str, b: &str) -> bool {
    let bare = |text: &str| -> String {
        text.chars()
            .filter(|&c| !is_apostrophe(c))
            .flat_map(char::to_lowercase)
            .collect()
    };
    bare(a) == bare(b) && a.to_lowercase() != b.to_lowercase()
}
