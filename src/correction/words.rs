//! Transcript words for matching: each word's core (outer punctuation and a possessive
//! `'s` split off), its spoken words, phonetic key and letters.

use crate::context::mining::is_common_word;
use crate::context::spoken::transcript_words;

use super::phonetic::{folded_letters, phonetic_key};

/// One transcript word with its outer punctuation split off.
#[derive(Debug)]
pub(super) struct Token<'a> {
    /// Byte range of the core (without outer punctuation) in the transcript.
    pub(super) core_start: usize,
    pub(super) core_end: usize,
    pub(super) core: &'a str,
    pub(super) words: Vec<String>,
    /// The phonetic key and folded letters of `words`.
    pub(super) key: Vec<u8>,
    pub(super) letters: Vec<u8>,
    /// Punctuation after the core ends a span.
    pub(super) breaks_after: bool,
    pub(super) common: bool,
}

/// Punctuation that may open a word.
fn is_leading_punctuation(c: char) -> bool {
    matches!(
        c,
        '"' | '\'' | '(' | '[' | '{' | '¿' | '¡' | '«' | '\u{201c}' | '\u{2018}'
    )
}

/// Punctuation that may close a word.
fn is_trailing_punctuation(c: char) -> bool {
    matches!(
        c,
        '.' | ','
            | '!'
            | '?'
            | ';'
            | ':'
            | '"'
            | '\''
            | ')'
            | ']'
            | '}'
            | '»'
            | '…'
            | '\u{201d}'
            | '\u{2019}'
    )
}

/// Splits a transcript into words with their outer punctuation (and a possessive
/// `'s`) split off.
pub(super) fn tokenize(text: &str) -> Vec<Token<'_>> {
    let mut tokens = Vec::new();
    let mut offset = 0;
    for raw in text.split_inclusive(char::is_whitespace) {
        let word_start = offset;
        offset += raw.len();
        let word = raw.trim_end();
        if word.is_empty() {
            continue;
        }
        let leading = word.len() - word.trim_start_matches(is_leading_punctuation).len();
        let inner = &word[leading..];
        let mut core = inner.trim_end_matches(is_trailing_punctuation);
        for suffix in ["'s", "\u{2019}s"] {
            if let Some(stem) = core.strip_suffix(suffix)
                && stem.chars().count() >= 2
            {
                core = stem;
            }
        }
        let core_start = word_start + leading;
        let core_end = core_start + core.len();
        let trailing = &word[leading + core.len()..];
        let breaks_after = trailing
            .chars()
            .any(|c| matches!(c, '.' | ',' | '!' | '?' | ';' | ':' | '…'));
        let words = if core.is_empty() {
            Vec::new()
        } else {
            transcript_words(core)
        };
        let common = core.chars().all(char::is_alphabetic) && is_common_word(core);
        let key = phonetic_key(&words);
        let letters = words.iter().flat_map(|w| folded_letters(w)).collect();
        tokens.push(Token {
            core_start,
            core_end,
            core,
            words,
            key,
            letters,
            breaks_after,
            common,
        });
    }
    tokens
}
