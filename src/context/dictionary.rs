//! The `dictionary` field: terms the transcript should spell exactly (names, jargon).
//!
//! The accepted forms and every decision are documented on [`parse_dictionary`].

use std::collections::HashSet;

use crate::error::{Error, Result};

use super::request::{
    MAX_DICTIONARY_TERMS, MAX_DICTIONARY_TEXT_BYTES, MAX_TERM_CHARS, check_text_size, excerpt,
    indexed_strings, is_absent, parse_json_array,
};
use super::sounds_like::{self, SoundsLike};

const PARAM: &str = "dictionary";

/// Validated dictionary terms: trimmed, non-empty, distinct, in the order given; and
/// the spoken forms given for some of them ([`Dictionary::with_sounds_like`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Dictionary {
    terms: Vec<String>,
    sounds_like: SoundsLike,
}

impl Dictionary {
    /// Validates terms from Rust, C or Python; see [`Dictionary::from_terms`].
    ///
    /// # Errors
    ///
    /// As [`Dictionary::from_terms`].
    pub fn new<I, S>(terms: I) -> Result<Self>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        Dictionary::from_terms(terms)
    }

    /// Validates terms from Rust, C or Python: trims them, drops empty ones, removes
    /// duplicates (case-sensitive, first occurrence kept) and keeps the order.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidRequest`] with `param = "dictionary"` for a term with a control
    /// character or longer than [`MAX_TERM_CHARS`] characters (named by index), or more
    /// than [`MAX_DICTIONARY_TERMS`] distinct terms.
    pub fn from_terms<I, S>(terms: I) -> Result<Self>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        from_indexed(terms.into_iter().enumerate())
    }

    /// The terms, in order.
    #[must_use]
    pub fn terms(&self) -> &[String] {
        &self.terms
    }

    /// Whether there are no terms.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// How many terms there are.
    #[must_use]
    pub fn len(&self) -> usize {
        self.terms.len()
    }

    /// The dictionary with `sounds_like`'s spoken forms attached to its terms: each is
    /// matched in the transcript like the forms derived from the term's spelling (see
    /// [`parse_sounds_like`](super::parse_sounds_like)). Replaces forms attached before.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidRequest`] with `param = "sounds_like"` for a key that is not a term
    /// of this dictionary (compared exactly, after trimming).
    pub fn with_sounds_like(mut self, sounds_like: SoundsLike) -> Result<Self> {
        if let Some((term, _)) = sounds_like
            .entries()
            .iter()
            .find(|(term, _)| !self.terms.contains(term))
        {
            return Err(Error::invalid(
                sounds_like::PARAM,
                format!(
                    "sounds_like has the key {} that is not a term of the dictionary; every \
                     key must be one of the dictionary's terms, spelled the same",
                    excerpt(term)
                ),
            ));
        }
        self.sounds_like = sounds_like;
        Ok(self)
    }

    /// The spoken forms given for the terms.
    #[must_use]
    pub fn sounds_like(&self) -> &SoundsLike {
        &self.sounds_like
    }
}

/// Parses the `dictionary` field as sent on the wire (a form field, a C string, a
/// Python string).
///
/// Wire forms (decided by the first non-whitespace character):
///
/// - `[` or `{`: JSON. It must be an array of strings (`["Ramipril", "Dr. Müller"]`);
///   any other item type, and an object, is invalid.
/// - anything else: a comma-separated list (`Ramipril, Dr. Müller`). A term containing
///   a comma, or a first term starting with `[` or `{`, must be sent as a JSON array.
/// - empty, all-whitespace or JSON `null`: no terms.
///
/// Every term is trimmed (Unicode whitespace); empty terms are dropped; duplicates are
/// removed case-sensitively, keeping the first occurrence (`Ada` and `ADA` are two
/// terms); the order as sent is kept. The inner text is kept verbatim (no case
/// folding, no whitespace collapsing). A term with a control character (U+0000–U+001F,
/// U+007F–U+009F, including NUL, tab and newline inside the term) is invalid.
/// Errors name a term by its 0-based position as sent (`dictionary[3]`), counting
/// empty items.
///
/// Limits: [`MAX_DICTIONARY_TERMS`] distinct terms, [`MAX_TERM_CHARS`] characters per
/// term, [`MAX_DICTIONARY_TEXT_BYTES`] of text (checked before parsing),
/// [`MAX_JSON_DEPTH`](super::MAX_JSON_DEPTH) levels of JSON nesting.
///
/// # Errors
///
/// [`Error::InvalidRequest`] with `param = "dictionary"` saying what is wrong and where
/// (`dictionary[2] must be a string, got a number`).
pub fn parse_dictionary(text: &str) -> Result<Dictionary> {
    check_text_size(PARAM, text, MAX_DICTIONARY_TEXT_BYTES)?;
    if is_absent(text) {
        return Ok(Dictionary::default());
    }
    let trimmed = text.trim_start();
    if !(trimmed.starts_with('[') || trimmed.starts_with('{')) {
        return from_indexed(text.split(',').enumerate());
    }
    let expected = "a JSON array of strings or a comma-separated list";
    let items = parse_json_array(PARAM, text, expected)?;
    from_indexed(indexed_strings(PARAM, items, "a string")?)
}

/// Terms with their position as sent.
fn from_indexed<S: AsRef<str>>(terms: impl IntoIterator<Item = (usize, S)>) -> Result<Dictionary> {
    let mut seen: HashSet<String> = HashSet::new();
    let mut kept = Vec::new();
    for (index, term) in terms {
        let term = term.as_ref().trim();
        if term.is_empty() {
            continue;
        }
        let chars = term.chars().count();
        if chars > MAX_TERM_CHARS {
            return Err(Error::invalid(
                PARAM,
                format!(
                    "dictionary[{index}] is {chars} characters long, the limit is \
                     {MAX_TERM_CHARS} characters: {}",
                    excerpt(term)
                ),
            ));
        }
        if let Some((at, control)) = term.chars().enumerate().find(|(_, c)| c.is_control()) {
            return Err(Error::invalid(
                PARAM,
                format!(
                    "dictionary[{index}] contains the control character U+{:04X} at \
                     character {at}: {}",
                    u32::from(control),
                    excerpt(term)
                ),
            ));
        }
        if !seen.contains(term) {
            if kept.len() == MAX_DICTIONARY_TERMS {
                return Err(Error::invalid(
                    PARAM,
                    format!(
                        "too many dictionary terms: more than {MAX_DICTIONARY_TERMS} distinct \
                         terms, the limit is {MAX_DICTIONARY_TERMS}"
                    ),
                ));
            }
            seen.insert(term.to_owned());
            kept.push(term.to_owned());
        }
    }
    Ok(Dictionary {
        terms: kept,
        sounds_like: SoundsLike::default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::test_support::{accepted, rejected};

    fn ok(text: &str) -> Vec<String> {
        accepted(parse_dictionary, text).terms().to_vec()
    }

    fn err(text: &str) -> String {
        rejected(parse_dictionary, "dictionary", text)
    }

    #[test]
    fn json_array() {
        assert_eq!(
            ok(r#"["Ramipril", " Dr. Müller ", "", "Ramipril", "ramipril", "a, b"]"#),
            ["Ramipril", "Dr. Müller", "ramipril", "a, b"]
        );
        assert_eq!(ok(r#" [ "x" ] "#), ["x"]);
    }

    #[test]
    fn comma_list_with_empties_and_duplicates() {
        assert_eq!(
            ok(" Ramipril, Dr. Müller,, ,Ramipril,ramipril ,\"quoted\" ,"),
            ["Ramipril", "Dr. Müller", "ramipril", "\"quoted\""]
        );
        assert_eq!(ok("single"), ["single"]);
        assert_eq!(ok("New  York"), ["New  York"], "inner whitespace is kept");
        assert!(ok(",,, ,").is_empty());
    }

    #[test]
    fn empty_forms() {
        for text in ["", "  ", "null", "[]", "[\"\", \"  \"]"] {
            assert!(ok(text).is_empty(), "{text:?}");
        }
        assert!(Dictionary::default().is_empty());
        assert_eq!(Dictionary::default().len(), 0);
    }

    #[test]
    fn non_string_items_are_invalid() {
        for (item, kind) in [
            ("1", "a number"),
            ("null", "null"),
            ("true", "a boolean"),
            ("[\"a\"]", "an array"),
            ("{}", "an object"),
        ] {
            assert_eq!(
                err(&format!(r#"["a", "b", {item}]"#)),
                format!("dictionary[2] must be a string, got {kind}")
            );
        }
    }

    #[test]
    fn wrong_json_shapes_are_invalid() {
        assert_eq!(
            err(r#"{"terms": ["a"]}"#),
            "dictionary must be a JSON array of strings or a comma-separated list, got an object"
        );
        assert!(err("[\"a\",").starts_with("dictionary is not valid JSON: "));
        assert!(err("[a, b]").starts_with("dictionary is not valid JSON: "));
    }

    #[test]
    fn control_characters_are_invalid() {
        assert_eq!(
            err(r#"["ok", "a\u0000b"]"#),
            r#"dictionary[1] contains the control character U+0000 at character 1: "a\0b""#
        );
        assert_eq!(
            err("a,b\tc"),
            r#"dictionary[1] contains the control character U+0009 at character 1: "b\tc""#
        );
        assert!(err("x\u{85}y").contains("U+0085"));
        assert!(err("a\u{7f}").contains("U+007F"));
        assert!(Dictionary::from_terms(["a\nb"]).is_err());
        // Surrounding whitespace (including newlines) is trimmed, not rejected.
        assert_eq!(ok("\n a \r\n,\tb\t"), ["a", "b"]);
    }

    #[test]
    fn term_length_limit_counts_characters() {
        let at_limit = "ü".repeat(MAX_TERM_CHARS);
        assert_eq!(ok(&at_limit), std::slice::from_ref(&at_limit));
        let over = "ü".repeat(MAX_TERM_CHARS + 1);
        let msg = err(&format!("a,{over}"));
        assert!(
            msg.starts_with("dictionary[1] is 101 characters long, the limit is 100 characters: "),
            "{msg}"
        );
        assert!(msg.ends_with("…"), "long terms are abbreviated: {msg}");
    }

    #[test]
    fn term_count_limit_counts_distinct_terms() {
        let terms: Vec<String> = (0..MAX_DICTIONARY_TERMS).map(|i| format!("t{i}")).collect();
        assert_eq!(ok(&terms.join(",")).len(), MAX_DICTIONARY_TERMS);
        let mut with_dups = terms.clone();
        with_dups.extend(terms.iter().cloned());
        assert_eq!(
            Dictionary::from_terms(&with_dups).map(|d| d.len()).ok(),
            Some(MAX_DICTIONARY_TERMS)
        );
        let mut over = terms;
        over.push("one more".into());
        assert_eq!(
            err(&over.join(",")),
            "too many dictionary terms: more than 1000 distinct terms, the limit is 1000"
        );
        let json = serde_json::to_string(&over).unwrap_or_default();
        assert!(err(&json).starts_with("too many dictionary terms"));
    }

    #[test]
    fn size_and_depth_limits() {
        let huge = ",".repeat(MAX_DICTIONARY_TEXT_BYTES + 1);
        assert_eq!(
            err(&huge),
            "dictionary is 1048577 bytes long, the limit is 1048576 bytes"
        );
        assert!(err(&"[".repeat(100_000)).contains("nested more than 32 levels deep"));
        assert!(err(&"{".repeat(100_000)).contains("nested more than 32 levels deep"));
    }

    #[test]
    fn sounds_like_keys_must_be_terms() {
        let dictionary = Dictionary::from_terms(["Nguyen", "Siobhan"]).expect("valid");
        let given = SoundsLike::from_pairs([("Nguyen", ["win"])]).expect("valid");
        let with = dictionary.clone().with_sounds_like(given).expect("a term");
        assert_eq!(with.sounds_like().forms("Nguyen"), ["win"]);
        assert_eq!(with.terms(), dictionary.terms());
        let stranger = SoundsLike::from_pairs([("nguyen", ["win"])]).expect("valid");
        let attach = |_: &str| dictionary.with_sounds_like(stranger);
        assert!(
            rejected(attach, "sounds_like", "")
                .starts_with("sounds_like has the key \"nguyen\" that is not")
        );
    }

    #[test]
    fn from_terms_accepts_strs_and_strings() {
        let dictionary = Dictionary::from_terms(["b", "a", "b"]).unwrap_or_default();
        assert_eq!(dictionary.terms(), ["b", "a"]);
        assert_eq!(dictionary.len(), 2);
        let owned = Dictionary::new(vec![String::from(" x ")]).unwrap_or_default();
        assert_eq!(owned.terms(), ["x"]);
        match Dictionary::from_terms(["ok", "bad\u{0}"]) {
            Err(e) => {
                assert_eq!(e.code(), "invalid_request");
                assert_eq!(e.param(), Some("dictionary"));
            }
            Ok(d) => panic!("{d:?}"),
        }
    }
}
