//! Transcript words for matching: each word's core (outer punctuation and a possessive
//! `'s` split off), its spoken words, phonetic key and letters, and those of the word
//! after a French or Italian elided word that opens it.

use crate::context::mining::is_common_word;
use crate::context::spoken::{symbol_name, transcript_words};

use super::Span;
use super::phonetic::folded_letters;
use super::spellings::{Spelling, key_by};

/// One transcript word with its outer punctuation split off.
#[derive(Debug)]
pub(super) struct Token<'a> {
    /// Byte range of the core (without outer punctuation) in the transcript.
    pub(super) core_start: usize,
    pub(super) core_end: usize,
    pub(super) core: &'a str,
    /// The core's spoken words, with their phonetic key and folded letters.
    pub(super) spoken: Span,
    /// Punctuation after the core ends a span.
    pub(super) breaks_after: bool,
    pub(super) common: bool,
    /// The word after a French or Italian elided word that opens the core ("oxicodon"
    /// of "l'oxicodon"), matched on its own too.
    pub(super) elided: Option<Elided>,
}

/// The word of a [`Token`] after its elided word ([`elided_prefix_len`]).
#[derive(Debug)]
pub(super) struct Elided {
    /// Bytes of the core before the word (the elided word and its apostrophe).
    pub(super) skip: usize,
    /// The word's spoken words, key and letters.
    pub(super) span: Span,
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

/// Words French and Italian shorten to their first letters and an apostrophe before a
/// vowel or a mute `h`, glued to the next word ("l'oxycodone", "d'Elasticsearch",
/// "qu'Ollama", "dell'ossicodone"). Lowercase only: a capitalised one starts a name
/// (`L'Oréal`, `D'Angelo`).
const ELIDED_WORDS: [&str; 19] = [
    "l", "d", "j", "m", "n", "s", "t", "c", "qu", "jusqu", "lorsqu", "puisqu", "un", "dell", "all",
    "nell", "sull", "dall", "quell",
];

/// The length of the elided word and apostrophe that open `core` ("l'" of
/// "l'oxicodon"), or 0. The word after it may be a term on its own ("de l'oxycodone"),
/// or the elided consonant may be the first sound of a name Whisper split there
/// ("à s'égolet" for `Ségolène`), so a token is matched both ways.
fn elided_prefix_len(core: &str) -> usize {
    let Some((head, rest)) = core.split_once(['\'', '\u{2019}']) else {
        return 0;
    };
    let mut letters = rest.chars();
    let starts_with_vowel = letters.next().is_some_and(|c| {
        let mut buffer = [0; 4];
        matches!(
            folded_letters(c.encode_utf8(&mut buffer)).as_slice(),
            [b'a' | b'e' | b'i' | b'o' | b'u' | b'y' | b'h']
        )
    });
    let word_follows = letters.next().is_some_and(char::is_alphabetic);
    if starts_with_vowel && word_follows && ELIDED_WORDS.contains(&head) {
        core.len() - rest.len()
    } else {
        0
    }
}

/// Splits a transcript into words with their outer punctuation (and a possessive
/// `'s`) split off; keys by English spelling.
pub(super) fn tokenize(text: &str) -> Vec<Token<'_>> {
    tokenize_by(text, Spelling::English)
}

/// [`tokenize`] with keys by `spelling`'s conventions (the same tokens).
pub(super) fn tokenize_by(text: &str, spelling: Spelling) -> Vec<Token<'_>> {
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
        let spoken = if core.is_empty() {
            Span::default()
        } else {
            spoken_span(core, spelling)
        };
        // Digits are as known as common words: Whisper chose to write the number.
        let common = (core.chars().all(char::is_alphabetic) && is_common_word(core))
            || (!core.is_empty() && core.chars().all(|c| c.is_ascii_digit()));
        let skip = elided_prefix_len(core);
        let elided = (skip > 0).then(|| Elided {
            skip,
            span: spoken_span(&core[skip..], spelling),
        });
        tokens.push(Token {
            core_start,
            core_end,
            core,
            spoken,
            breaks_after,
            common,
            elided,
        });
    }
    join_spoken_symbols(text, &mut tokens);
    tokens
}

/// A transcript word's spoken words ([`transcript_words`]) with their key by
/// `spelling`'s conventions and their folded letters.
fn spoken_span(word: &str, spelling: Spelling) -> Span {
    let words = transcript_words(word);
    Span {
        key: key_by(&words, spelling),
        letters: words.iter().flat_map(|w| folded_letters(w)).collect(),
        words,
    }
}

/// Symbols a speaker says inside a path or identifier (their names: "slash",
/// "underscore", "dot", "dash").
pub(super) const PATH_SYMBOLS: [char; 4] = ['/', '_', '.', '-'];

/// The names of [`PATH_SYMBOLS`], as [`transcript_words`] hears them.
fn path_symbol_names() -> impl Iterator<Item = &'static str> {
    PATH_SYMBOLS
        .iter()
        .filter_map(|&symbol| symbol_name(symbol))
}

/// Lets a span run across punctuation that does not end a phrase: a comma after a said
/// symbol or before a word that starts with one (Whisper punctuates a dictated path as
/// a list and glues a symbol to the next word, "tests, slash test, underscore checkout,
/// underscoreflow.py"), and a full stop followed by a lowercase word (an
/// abbreviation's, "etc. hosts": a sentence starts with a capital). A longer span is
/// only a candidate: it must still sound like a term.
fn join_spoken_symbols(text: &str, tokens: &mut [Token<'_>]) {
    let symbol_at = |word: Option<&String>, first: bool| {
        word.is_some_and(|w| {
            path_symbol_names().any(|s| if first { w.starts_with(s) } else { w == s })
        })
    };
    for i in 1..tokens.len() {
        let (before, after) = tokens.split_at_mut(i);
        let (token, next) = (&mut before[i - 1], &after[0]);
        if !token.breaks_after {
            continue;
        }
        let trailing = text[token.core_end..next.core_start].trim_end();
        let comma = trailing == ",";
        let stop = trailing == ".";
        let said_symbol = symbol_at(token.spoken.words.last(), false)
            || symbol_at(next.spoken.words.first(), true);
        let lowercase_next = next.core.chars().next().is_some_and(char::is_lowercase);
        if (comma && said_symbol) || (stop && lowercase_next) {
            token.breaks_after = false;
        }
    }
}

/// `text` with the hyphens that glue a said symbol's name to its neighbours turned into
/// spaces, byte for byte (the same length and offsets): Whisper writes a dictated
/// option or path with hyphens between the words ("get pods-dash-all-name spaces",
/// "ripgrap-dash-hidden"), so the words the speaker said are one token and no span can
/// start at "dash". The spoken-form matcher reads this view; the text it writes keeps
/// the hyphens it does not replace ([`hyphen_joined`]).
pub(super) fn split_said_symbols(text: &str) -> String {
    let mut view = text.as_bytes().to_vec();
    let has_letters = |p: Option<&&str>| p.is_some_and(|p| p.chars().any(char::is_alphanumeric));
    let mut offset = 0;
    for word in text.split_inclusive(char::is_whitespace) {
        let mut start = offset;
        offset += word.len();
        let parts: Vec<&str> = word.trim_end().split('-').collect();
        for (i, part) in parts.iter().enumerate() {
            let end = start + part.len();
            let said = path_symbol_names().any(|name| part.eq_ignore_ascii_case(name));
            if said && i > 0 && has_letters(parts.get(i - 1)) {
                view[start - 1] = b' ';
            }
            if said && has_letters(parts.get(i + 1)) {
                view[end] = b' ';
            }
            start = end + 1;
        }
    }
    // Only ASCII hyphens became ASCII spaces: still UTF-8.
    String::from_utf8(view).unwrap_or_else(|_| text.to_owned())
}

/// True when byte `at` of `text` is a hyphen that `view` ([`split_said_symbols`]) turned
/// into a space: a replacement that starts or ends beside it writes a space there
/// instead ("pods-dash-all-name spaces" -> "pods --all-namespaces").
pub(super) fn hyphen_joined(text: &str, view: &str, at: usize) -> bool {
    text.as_bytes().get(at) == Some(&b'-') && view.as_bytes().get(at) == Some(&b' ')
}

/// Where the span `span` of `tokens` starts once it takes the names of its term's leading
/// symbols said just before it: the term writes its dashes, so a "dash" left in front of
/// `--all-namespaces` was said for it ("pods dash dash all name spaces", where the
/// closest span starts at the second dash or at "all"). At most as many names as the
/// term has leading symbols, counting those the span already starts with; never a
/// token `taken` by another span, nor across punctuation.
pub(super) fn said_leading_symbols(
    tokens: &[Token<'_>],
    span: std::ops::Range<usize>,
    term: &str,
    taken: &[bool],
) -> usize {
    let Some(symbol) = term.chars().next().filter(|c| !c.is_alphanumeric()) else {
        return span.start;
    };
    let Some(name) = symbol_name(symbol) else {
        return span.start;
    };
    let said = |token: &Token<'_>| matches!(token.spoken.words.as_slice(), [word] if word == name);
    let leading = term.chars().take_while(|&c| c == symbol).count();
    let in_span = tokens[span.clone()]
        .iter()
        .take_while(|token| said(token))
        .count();
    let mut start = span.start;
    for _ in in_span..leading {
        match start.checked_sub(1) {
            Some(before)
                if !taken[before] && !tokens[before].breaks_after && said(&tokens[before]) =>
            {
                start = before;
            }
            _ => break,
        }
    }
    start
}

impl super::Corrector {
    /// True when the prompted transcript `second` glued words together where `first`
    /// has them apart, a failure of greedy decoding prompted with identifiers: it
    /// continues the prompt's style ("WillAndFunWillHandleLeonCoralRotation" for "Win
    /// and Fung will handle the on call rotation", "intottsconfig.build.json" for "into
    /// T S config dot build dot json"). Glued: a word of `second` that `first` does not
    /// have and that is not a term, but has a term glued to other letters or three or
    /// more camel-case parts.
    pub(crate) fn glues_words(&self, first: &str, second: &str) -> bool {
        tokenize(second).iter().any(|token| {
            let word = token.core;
            if self.terms.iter().any(|term| term.text == word) || super::contains_word(first, word)
            {
                return false;
            }
            let glued_term = self
                .terms
                .iter()
                .any(|term| word.contains(&term.text) && !super::contains_word(word, &term.text));
            glued_term || camel_parts(word) >= GLUED_CAMEL_PARTS
        })
    }
}

/// Camel-case parts of a word that make it a glued phrase rather than a name
/// (`McDonald`, `YouTube` and `PowerShell` have two).
const GLUED_CAMEL_PARTS: usize = 3;

/// The camel-case parts of `word`: one, plus one per lowercase letter followed by an
/// uppercase one.
fn camel_parts(word: &str) -> usize {
    let chars: Vec<char> = word.chars().collect();
    1 + chars
        .windows(2)
        .filter(|pair| pair[0].is_lowercase() && pair[1].is_uppercase())
        .count()
}

/// `text` with its first letter in upper case.
pub(super) fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::tokenize;
    use crate::correction::tests::corrector;

    #[test]
    fn a_french_or_italian_elided_word_is_told_apart_from_the_word_it_is_glued_to() {
        let text = "de l'oxicodon, qu'Ollama dell'ossicodone we've L'Oréal c'mon o'clock";
        let elided: Vec<(&str, Option<&str>)> = tokenize(text)
            .iter()
            .map(|token| {
                let after = token
                    .elided
                    .as_ref()
                    .map(|elided| &token.core[elided.skip..]);
                (token.core, after)
            })
            .collect();
        assert_eq!(
            elided,
            [
                ("de", None),
                ("l'oxicodon", Some("oxicodon")),
                ("qu'Ollama", Some("Ollama")),
                ("dell'ossicodone", Some("ossicodone")),
                ("we've", None),
                ("L'Oréal", None),
                ("c'mon", None),
                ("o'clock", None),
            ]
        );
    }

    #[test]
    fn a_term_after_an_elided_word_is_merged_behind_it_and_a_name_split_there_whole() {
        let merged = corrector(&["oxycodone"], &[]).merge_second_pass(
            "Où l'y a donné de l'oxicodon subtilie.",
            "Oulia donnait le oxycodone, c'est-il.",
            &[0],
        );
        assert_eq!(merged, "Où l'y a donné de l'oxycodone subtilie.");
        // The elided consonant is the name's first sound here.
        let merged = corrector(&["Ségolène", "Grégoire"], &[]).merge_second_pass(
            "Envoyer le compte rendu à s'égolet et à Grégoire.",
            "Envoyer le compte rendu à Ségolène et à Grégoire.",
            &[0],
        );
        assert_eq!(merged, "Envoyer le compte rendu à Ségolène et à Grégoire.");
    }

    fn glues(dictionary: &[&str], first: &str, second: &str) -> bool {
        corrector(dictionary, &[]).glues_words(first, second)
    }

    #[test]
    fn words_glued_by_a_prompted_decode_are_told_from_terms_and_names() {
        let names = ["Nguyen", "Phuong"];
        let first = "Will and firm will handle the on-coral rotation this week.";
        assert!(glues(
            &names,
            first,
            "WillAndFunWillHandleLeonCoralRotation this week."
        ));
        let files = ["tsconfig.build.json"];
        let first = "Copy most compiler options in torts. Config. Not. Build. Not. Jason.";
        assert!(glues(
            &files,
            first,
            "Copy those compiler options, and intottsconfig.build.json."
        ));
        // A term, a word the first pass has, two camel-case parts: not glued.
        assert!(!glues(
            &files,
            first,
            "Copy those compiler options into tsconfig.build.json."
        ));
        let first = "Ask the McDonald team about YouTube.";
        assert!(!glues(
            &names,
            first,
            "Ask the McDonald team about YouTube."
        ));
        assert!(!glues(&names, "Open power shell.", "Open PowerShell."));
        let identifiers = ["isFeatureEnabled"];
        let first = "This feature enabled can always returns false.";
        assert!(!glues(
            &identifiers,
            first,
            "The isFeatureEnabled check returns false."
        ));
    }
}
