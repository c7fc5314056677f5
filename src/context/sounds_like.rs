//! The `sounds_like` field: how dictionary terms are said, in the caller's words
//! (`{"Nguyen": ["win", "nuh win"]}`), for names not said as they are spelled.
//!
//! The accepted forms and every decision are documented on [`parse_sounds_like`]; a
//! [`SoundsLike`] is attached to its dictionary with
//! [`Dictionary::with_sounds_like`](super::Dictionary::with_sounds_like), which checks
//! that every key is one of the dictionary's terms.

use serde_json::Value;

use crate::error::{Error, Result};

use super::request::{
    MAX_DICTIONARY_TERMS, MAX_SOUNDS_LIKE_FORM_CHARS, MAX_SOUNDS_LIKE_FORMS,
    MAX_SOUNDS_LIKE_TEXT_BYTES, check_text_size, excerpt, is_absent, parse_json, wrong_type,
};

pub(super) const PARAM: &str = "sounds_like";

/// Validated spoken forms per term: each term once (trimmed), each form trimmed,
/// non-empty and distinct within its term, in the order given.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SoundsLike {
    entries: Vec<(String, Vec<String>)>,
}

impl SoundsLike {
    /// Validates `(term, forms)` pairs from Rust, C or Python. A term given twice has
    /// the forms of both (duplicates removed).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidRequest`] with `param = "sounds_like"`: more than
    /// [`MAX_DICTIONARY_TERMS`] terms; naming the term, more than
    /// [`MAX_SOUNDS_LIKE_FORMS`] forms, or a form that is empty, longer than
    /// [`MAX_SOUNDS_LIKE_FORM_CHARS`] characters, or has a character other than
    /// letters, spaces, apostrophes and hyphens.
    pub fn from_pairs<I, T, F, S>(pairs: I) -> Result<Self>
    where
        I: IntoIterator<Item = (T, F)>,
        T: AsRef<str>,
        F: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut sounds_like = SoundsLike::default();
        for (term, forms) in pairs {
            sounds_like.add(term.as_ref(), forms)?;
        }
        Ok(sounds_like)
    }

    /// The terms with their forms, in the order given.
    #[must_use]
    pub fn entries(&self) -> &[(String, Vec<String>)] {
        &self.entries
    }

    /// Whether no term has a form.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.iter().all(|(_, forms)| forms.is_empty())
    }

    /// The forms given for `term` (none when it has no entry).
    #[must_use]
    pub fn forms(&self, term: &str) -> &[String] {
        self.entries
            .iter()
            .find(|(key, _)| key == term)
            .map_or(&[], |(_, forms)| forms.as_slice())
    }

    fn add<S: AsRef<str>>(&mut self, term: &str, forms: impl IntoIterator<Item = S>) -> Result<()> {
        let term = term.trim();
        let position = match self.entries.iter().position(|(key, _)| key == term) {
            Some(position) => position,
            None if self.entries.len() == MAX_DICTIONARY_TERMS => {
                // Every key is a dictionary term: no more keys than it may have terms,
                // which also bounds this search.
                return Err(Error::invalid(
                    PARAM,
                    format!(
                        "sounds_like has more than {MAX_DICTIONARY_TERMS} terms, the \
                         dictionary's limit"
                    ),
                ));
            }
            None => {
                self.entries.push((term.to_owned(), Vec::new()));
                self.entries.len() - 1
            }
        };
        for (index, form) in forms.into_iter().enumerate() {
            let form = check_form(term, index, form.as_ref())?;
            let kept = &mut self.entries[position].1;
            if kept.contains(&form) {
                continue;
            }
            if kept.len() == MAX_SOUNDS_LIKE_FORMS {
                return Err(Error::invalid(
                    PARAM,
                    format!(
                        "sounds_like[{}] has more than {MAX_SOUNDS_LIKE_FORMS} distinct \
                         forms, the limit is {MAX_SOUNDS_LIKE_FORMS}",
                        excerpt(term)
                    ),
                ));
            }
            kept.push(form);
        }
        Ok(())
    }
}

/// Parses the `sounds_like` field as sent on the wire (a form field, a C string, a
/// Python string).
///
/// The form is a JSON object mapping dictionary terms to arrays of spoken forms:
/// `{"Nguyen": ["win", "nuh win"], "Siobhan": ["shiv awn"]}`. Empty, all-whitespace,
/// JSON `null` and `{}` mean no forms.
///
/// Each form is trimmed and must then be 1 to [`MAX_SOUNDS_LIKE_FORM_CHARS`]
/// characters of letters (any script), spaces, apostrophes (`'`, `’`) and hyphens —
/// words as they are said, not symbols or digits (say "three", not "3"); duplicates
/// within a term are dropped; a term has at most [`MAX_SOUNDS_LIKE_FORMS`] distinct
/// forms. That every key is a term of the request's dictionary is checked when the
/// forms are attached to it
/// ([`Dictionary::with_sounds_like`](super::Dictionary::with_sounds_like)).
///
/// Limits: [`MAX_SOUNDS_LIKE_TEXT_BYTES`] of text (checked before parsing),
/// [`MAX_JSON_DEPTH`](super::MAX_JSON_DEPTH) levels of JSON nesting.
///
/// # Errors
///
/// [`Error::InvalidRequest`] with `param = "sounds_like"` saying what is wrong and where
/// (`sounds_like["Nguyen"][1] must be a string, got a number`).
pub fn parse_sounds_like(text: &str) -> Result<SoundsLike> {
    check_text_size(PARAM, text, MAX_SOUNDS_LIKE_TEXT_BYTES)?;
    if is_absent(text) {
        return Ok(SoundsLike::default());
    }
    let object = match parse_json(PARAM, text)? {
        Value::Object(object) => object,
        other => {
            return Err(wrong_type(
                PARAM,
                PARAM,
                "a JSON object mapping dictionary terms to arrays of spoken forms",
                &other,
            ));
        }
    };
    let mut sounds_like = SoundsLike::default();
    for (term, forms) in object {
        let forms = match forms {
            Value::Array(forms) => forms,
            other => {
                let what = format!("sounds_like[{}]", excerpt(&term));
                return Err(wrong_type(PARAM, what, "an array of strings", &other));
            }
        };
        let mut texts = Vec::with_capacity(forms.len());
        for (index, form) in forms.into_iter().enumerate() {
            match form {
                Value::String(text) => texts.push(text),
                other => {
                    let what = format!("sounds_like[{}][{index}]", excerpt(&term));
                    return Err(wrong_type(PARAM, what, "a string", &other));
                }
            }
        }
        sounds_like.add(&term, texts)?;
    }
    Ok(sounds_like)
}

/// `form` trimmed, or the error saying why it is not a spoken form.
fn check_form(term: &str, index: usize, form: &str) -> Result<String> {
    let form = form.trim();
    let chars = form.chars().count();
    let what = || format!("sounds_like[{}][{index}]", excerpt(term));
    if chars == 0 {
        return Err(Error::invalid(PARAM, format!("{} is empty", what())));
    }
    if chars > MAX_SOUNDS_LIKE_FORM_CHARS {
        return Err(Error::invalid(
            PARAM,
            format!(
                "{} is {chars} characters long, the limit is {MAX_SOUNDS_LIKE_FORM_CHARS} \
                 characters: {}",
                what(),
                excerpt(form)
            ),
        ));
    }
    if let Some(bad) = form.chars().find(|&c| !is_form_char(c)) {
        return Err(Error::invalid(
            PARAM,
            format!(
                "{} may only have letters, spaces, apostrophes and hyphens, got {:?} \
                 (U+{:04X}): {}",
                what(),
                bad,
                u32::from(bad),
                excerpt(form)
            ),
        ));
    }
    Ok(form.to_owned())
}

/// A character a spoken form may have.
fn is_form_char(c: char) -> bool {
    c.is_alphabetic() || c == ' ' || c == '-' || super::spoken::is_apostrophe(c)
}

/// The words of a spoken form, as the matcher compares them: lowercase, split at
/// spaces and hyphens ("Nuh-win" -> `["nuh", "win"]`).
#[must_use]
pub fn form_words(form: &str) -> Vec<String> {
    form.split([' ', '-'])
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::test_support::{accepted, rejected};

    fn ok(text: &str) -> Vec<(String, Vec<String>)> {
        accepted(parse_sounds_like, text).entries().to_vec()
    }

    fn err(text: &str) -> String {
        rejected(parse_sounds_like, "sounds_like", text)
    }

    #[test]
    fn json_object_of_arrays() {
        assert_eq!(
            ok(r#"{"Nguyen": [" win ", "nuh win", "win"], "Siobhan": ["shiv-awn", "O’Brien"]}"#),
            [
                (
                    "Nguyen".to_owned(),
                    vec!["win".to_owned(), "nuh win".to_owned()]
                ),
                (
                    "Siobhan".to_owned(),
                    vec!["shiv-awn".to_owned(), "O’Brien".to_owned()]
                ),
            ]
        );
        assert_eq!(ok(r#"{"Zoë": ["zo ee"]}"#)[0].1, ["zo ee"]);
    }

    #[test]
    fn absent_forms_mean_nothing() {
        for text in ["", "  ", "null", "{}", r#"{"a": []}"#] {
            assert!(accepted(parse_sounds_like, text).is_empty(), "{text:?}");
        }
    }

    #[test]
    fn wrong_shapes_are_typed() {
        assert_eq!(
            err(r#"["win"]"#),
            "sounds_like must be a JSON object mapping dictionary terms to arrays of spoken \
             forms, got an array"
        );
        assert_eq!(
            err(r#"{"Nguyen": "win"}"#),
            r#"sounds_like["Nguyen"] must be an array of strings, got a string"#
        );
        assert_eq!(
            err(r#"{"Nguyen": ["win", 3]}"#),
            r#"sounds_like["Nguyen"][1] must be a string, got a number"#
        );
        assert!(err("{\"a\": [").starts_with("sounds_like is not valid JSON: "));
        assert!(err(&"[".repeat(100_000)).contains("nested more than 32 levels deep"));
    }

    #[test]
    fn forms_are_words_as_said() {
        assert_eq!(
            err(r#"{"Nguyen": ["  "]}"#),
            r#"sounds_like["Nguyen"][0] is empty"#
        );
        assert_eq!(
            err(r#"{"K8s": ["k 8 s"]}"#),
            r#"sounds_like["K8s"][0] may only have letters, spaces, apostrophes and hyphens, got '8' (U+0038): "k 8 s""#
        );
        assert!(err(r#"{"a": ["b\tc"]}"#).contains("U+0009"));
        assert!(err(r#"{"a": ["b.c"]}"#).contains("'.'"));
        let long = "a".repeat(MAX_SOUNDS_LIKE_FORM_CHARS + 1);
        assert!(
            err(&format!(r#"{{"a": ["{long}"]}}"#))
                .starts_with(r#"sounds_like["a"][0] is 101 characters long, the limit is 100"#)
        );
        let at_limit = "é".repeat(MAX_SOUNDS_LIKE_FORM_CHARS);
        assert_eq!(ok(&format!(r#"{{"a": ["{at_limit}"]}}"#))[0].1, [at_limit]);
    }

    #[test]
    fn at_most_ten_distinct_forms_per_term() {
        let forms = |n: usize| -> Vec<String> {
            (0..n)
                .map(|i| format!("form {}", char::from(b'a' + u8::try_from(i).unwrap_or(0))))
                .collect()
        };
        let ten = serde_json::json!({ "a": forms(MAX_SOUNDS_LIKE_FORMS) }).to_string();
        assert_eq!(ok(&ten)[0].1.len(), MAX_SOUNDS_LIKE_FORMS);
        let mut repeated = forms(MAX_SOUNDS_LIKE_FORMS);
        repeated.extend(forms(3));
        let repeated = serde_json::json!({ "a": repeated }).to_string();
        assert_eq!(ok(&repeated)[0].1.len(), MAX_SOUNDS_LIKE_FORMS);
        let eleven = serde_json::json!({ "a": forms(MAX_SOUNDS_LIKE_FORMS + 1) }).to_string();
        assert_eq!(
            err(&eleven),
            r#"sounds_like["a"] has more than 10 distinct forms, the limit is 10"#
        );
    }

    #[test]
    fn no_more_terms_than_a_dictionary_may_have() {
        let pairs = |n: usize| (0..n).map(|i| (format!("t{i}"), ["form"]));
        let most = SoundsLike::from_pairs(pairs(MAX_DICTIONARY_TERMS)).expect("at the limit");
        assert_eq!(most.entries().len(), MAX_DICTIONARY_TERMS);
        let over = |_: &str| SoundsLike::from_pairs(pairs(MAX_DICTIONARY_TERMS + 1));
        assert_eq!(
            rejected(over, "sounds_like", ""),
            "sounds_like has more than 1000 terms, the dictionary's limit"
        );
    }

    #[test]
    fn the_size_limit_comes_before_parsing() {
        let huge = " ".repeat(MAX_SOUNDS_LIKE_TEXT_BYTES + 1);
        assert_eq!(
            err(&huge),
            "sounds_like is 1048577 bytes long, the limit is 1048576 bytes"
        );
    }

    #[test]
    fn pairs_from_code_merge_a_repeated_term() {
        let sounds_like = SoundsLike::from_pairs([
            ("Nguyen", vec!["win"]),
            (" Nguyen ", vec!["nuh win", "win"]),
        ])
        .expect("valid");
        assert_eq!(sounds_like.forms("Nguyen"), ["win", "nuh win"]);
        assert!(sounds_like.forms("Siobhan").is_empty());
        assert!(SoundsLike::from_pairs([("a", vec!["1"])]).is_err());
    }

    #[test]
    fn form_words_split_at_spaces_and_hyphens() {
        assert_eq!(form_words("Nuh-win  Ó'Brien"), ["nuh", "win", "ó'brien"]);
    }
}
