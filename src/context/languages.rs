//! The `languages` field: which languages the audio may be in.
//!
//! The accepted forms and every decision are documented on [`parse_languages`].

use std::fmt;
use std::str::FromStr;

use serde_json::Value;

use crate::error::{Error, Result};

use super::languages_table::{LANGUAGE_COUNT, TABLE};
use super::request::{
    MAX_LANGUAGES, MAX_LANGUAGES_TEXT_BYTES, check_text_size, excerpt, indexed_strings, is_absent,
    parse_json, wrong_type,
};

const PARAM: &str = "languages";

// Language ids are stored in a u8.
const _: () = assert!(LANGUAGE_COUNT <= u8::MAX as usize);

/// ISO codes that whisper.cpp spells differently, for "did you mean" hints only.
const HINTS: [(&str, &str); 7] = [
    ("jv", "jw"),
    ("nb", "no"),
    ("iw", "he"),
    ("in", "id"),
    ("ji", "yi"),
    ("fil", "tl"),
    ("cmn", "zh"),
];

/// One of Whisper's languages. Cheap to copy; compares and orders by whisper.cpp id.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Language(u8);

impl Language {
    /// Looks up a language by its Whisper code (`"de"`) or English name (`"german"`),
    /// ignoring ASCII case and surrounding whitespace.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidRequest`] with `param = "languages"` if it is not in Whisper's
    /// table (with a hint for `en-US`-style and common alias codes).
    pub fn from_code(code: &str) -> Result<Language> {
        lookup(code).map_err(|message| Error::invalid(PARAM, message))
    }

    /// The language with this whisper.cpp id (`0..LANGUAGE_COUNT`), if any.
    #[must_use]
    pub fn from_whisper_id(id: i32) -> Option<Language> {
        let index = usize::try_from(id).ok()?;
        if index < LANGUAGE_COUNT {
            u8::try_from(index).ok().map(Language)
        } else {
            None
        }
    }

    /// Every language, in whisper.cpp id order.
    pub fn all() -> impl ExactSizeIterator<Item = Language> {
        // LANGUAGE_COUNT fits in a u8 (asserted at compile time above).
        (0..=u8::MAX).take(LANGUAGE_COUNT).map(Language)
    }

    /// The Whisper code, e.g. `"de"`, `"haw"`, `"yue"` (`whisper_lang_str()`).
    #[must_use]
    pub fn code(self) -> &'static str {
        TABLE[usize::from(self.0)].0
    }

    /// The lowercase English name as whisper.cpp spells it, e.g. `"german"`,
    /// `"haitian creole"` (`whisper_lang_str_full()`).
    #[must_use]
    pub fn english_name(self) -> &'static str {
        TABLE[usize::from(self.0)].1
    }

    /// The whisper.cpp language id, equal to `whisper_lang_id(code)`: the offset of the
    /// language's token after `<|startoftranscript|>` (`whisper_token_lang(ctx, id)`).
    #[must_use]
    pub fn whisper_id(self) -> i32 {
        i32::from(self.0)
    }

    /// Whether a model with `model_language_count` language tokens knows this
    /// language: 99 for multilingual models before v3, 100 for large-v3 and
    /// large-v3-turbo (only `yue` needs 100).
    #[must_use]
    pub fn available_in(self, model_language_count: usize) -> bool {
        usize::from(self.0) < model_language_count
    }
}

impl fmt::Debug for Language {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Language").field(&self.code()).finish()
    }
}

/// Writes the code (`de`).
impl fmt::Display for Language {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// Same as [`Language::from_code`].
impl FromStr for Language {
    type Err = Error;

    fn from_str(code: &str) -> Result<Language> {
        Language::from_code(code)
    }
}

/// Which languages the audio may be in.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Languages {
    /// Detect the language among all of Whisper's.
    #[default]
    Auto,
    /// The audio is in this language: no detection.
    One(Language),
    /// Detect the language among these only. Parsers and validators produce two or
    /// more distinct languages here; see [`validate_languages`] for values built by hand.
    AnyOf(Vec<Language>),
}

impl Languages {
    /// A set of languages from codes or English names (a Python list, a C array):
    /// trimmed, case-insensitive, deduplicated keeping first occurrences; one distinct
    /// language gives [`Languages::One`].
    ///
    /// # Errors
    ///
    /// [`Error::InvalidRequest`] with `param = "languages"` if the list is empty,
    /// contains `"auto"`, an empty item or an unknown language (named by index), or
    /// has more than [`MAX_LANGUAGES`] distinct languages.
    pub fn from_codes<I, S>(codes: I) -> Result<Self>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        from_indexed(codes.into_iter().enumerate())
    }

    /// Whether `language` is allowed: always for [`Languages::Auto`].
    #[must_use]
    pub fn allows(&self, language: Language) -> bool {
        match self {
            Languages::Auto => true,
            Languages::One(one) => *one == language,
            Languages::AnyOf(any) => any.contains(&language),
        }
    }

    /// Whether this is [`Languages::Auto`].
    #[must_use]
    pub fn is_auto(&self) -> bool {
        matches!(self, Languages::Auto)
    }
}

/// Parses the `languages` field as sent on the wire (a form field, a C string, a
/// Python string).
///
/// Wire forms (surrounding whitespace is ignored everywhere):
///
/// | text | meaning |
/// |---|---|
/// | `auto` (any case), empty, all-whitespace, JSON `null` | [`Languages::Auto`] |
/// | `de`, `DE`, ` de `, `german` | [`Languages::One`] |
/// | `"de"` (a JSON string) | its content, read as plain text (`auto`, a code, a comma list) |
/// | `de,en` (commas) | a set, like the JSON array; empty items are dropped |
/// | `["de", "en"]` (a JSON array of strings) | [`Languages::AnyOf`] |
///
/// - Codes are whisper.cpp's (its `g_lang` table): 99 languages in every multilingual
///   model, plus `yue` (Cantonese), which only large-v3 and large-v3-turbo have (100
///   language tokens). See [`Language::available_in`].
/// - A language is its code (`de`) or its English name as whisper.cpp spells it
///   (`german`, `haitian creole`), like `whisper_lang_id()` accepts, but matched
///   case-insensitively after trimming. Other spellings are rejected; a code with a
///   region (`en-US`) or a common ISO alias whisper spells differently (`jv` for `jw`,
///   `nb` for `no`, ...) gets a "did you mean" hint rather than being accepted.
/// - Lists are sets: duplicates (also `de` and `german`) are removed keeping the
///   first occurrence's order, and a list with one distinct language becomes
///   [`Languages::One`], so [`Languages::AnyOf`] always holds two or more.
/// - An empty list (`[]`, `,`) is invalid, not "auto": it would allow no language.
///   A list containing `auto` is invalid: send `auto` alone.
/// - Limits: [`MAX_LANGUAGES`] distinct languages (the whole table, so effectively
///   none), [`MAX_LANGUAGES_TEXT_BYTES`] of text (checked before parsing),
///   [`MAX_JSON_DEPTH`](super::MAX_JSON_DEPTH) levels of JSON nesting.
///
/// # Errors
///
/// [`Error::InvalidRequest`] with `param = "languages"` saying what is wrong and where
/// (`languages[1]: unknown language "xx" ...`).
pub fn parse_languages(text: &str) -> Result<Languages> {
    check_text_size(PARAM, text, MAX_LANGUAGES_TEXT_BYTES)?;
    if is_absent(text) {
        return Ok(Languages::Auto);
    }
    let trimmed = text.trim();
    if trimmed.starts_with('[') || trimmed.starts_with('"') || trimmed.starts_with('{') {
        match parse_json(PARAM, trimmed)? {
            Value::String(inner) => parse_plain(&inner),
            Value::Array(items) => {
                from_indexed(indexed_strings(PARAM, items, "a string language code")?)
            }
            other => Err(wrong_type(
                PARAM,
                PARAM,
                "\"auto\", a language code, a comma-separated list of codes or a JSON \
                 array of codes",
                &other,
            )),
        }
    } else {
        parse_plain(trimmed)
    }
}

/// Normalises a [`Languages`] built by hand: an empty [`Languages::AnyOf`] is
/// rejected, duplicates are removed, and a single language becomes [`Languages::One`].
///
/// # Errors
///
/// [`Error::InvalidRequest`] with `param = "languages"` for an empty list or more than
/// [`MAX_LANGUAGES`] distinct languages.
pub fn validate_languages(languages: Languages) -> Result<Languages> {
    match languages {
        Languages::AnyOf(list) => {
            let mut set = LanguageSet::default();
            for language in list {
                set.insert(language)?;
            }
            set.finish()
        }
        other => Ok(other),
    }
}

/// `auto`, a single language or a comma-separated list (no JSON).
fn parse_plain(text: &str) -> Result<Languages> {
    let text = text.trim();
    if text.is_empty() || text.eq_ignore_ascii_case("auto") {
        return Ok(Languages::Auto);
    }
    if text.contains(',') {
        return from_indexed(
            text.split(',')
                .enumerate()
                .filter(|(_, code)| !code.trim().is_empty()),
        );
    }
    lookup(text)
        .map(Languages::One)
        .map_err(|message| Error::invalid(PARAM, message))
}

/// A list of `(position as sent, code)`.
fn from_indexed<S: AsRef<str>>(codes: impl IntoIterator<Item = (usize, S)>) -> Result<Languages> {
    let mut set = LanguageSet::default();
    for (index, code) in codes {
        let code = code.as_ref().trim();
        if code.is_empty() {
            return Err(Error::invalid(
                PARAM,
                format!("languages[{index}] is empty"),
            ));
        }
        if code.eq_ignore_ascii_case("auto") {
            return Err(Error::invalid(
                PARAM,
                format!(
                    "languages[{index}] is \"auto\", which cannot be part of a list; \
                     send \"auto\" alone to detect among all languages"
                ),
            ));
        }
        let language = lookup(code)
            .map_err(|message| Error::invalid(PARAM, format!("languages[{index}]: {message}")))?;
        set.insert(language)?;
    }
    set.finish()
}

/// Distinct languages in first-occurrence order.
struct LanguageSet {
    seen: [bool; LANGUAGE_COUNT],
    order: Vec<Language>,
}

impl Default for LanguageSet {
    fn default() -> Self {
        LanguageSet {
            seen: [false; LANGUAGE_COUNT],
            order: Vec::new(),
        }
    }
}

impl LanguageSet {
    fn insert(&mut self, language: Language) -> Result<()> {
        let Some(seen) = self.seen.get_mut(usize::from(language.0)) else {
            // Unreachable for values from this module; kept total for safety.
            return Err(Error::invalid(
                PARAM,
                format!("unknown language id {}", language.0),
            ));
        };
        if !*seen {
            *seen = true;
            self.order.push(language);
            if self.order.len() > MAX_LANGUAGES {
                return Err(Error::invalid(
                    PARAM,
                    format!(
                        "too many languages: more than {MAX_LANGUAGES}, the limit is {MAX_LANGUAGES}"
                    ),
                ));
            }
        }
        Ok(())
    }

    fn finish(self) -> Result<Languages> {
        match self.order.as_slice() {
            [] => Err(Error::invalid(
                PARAM,
                "the list of languages is empty; send \"auto\" to detect the language, \
                 or at least one language code",
            )),
            [one] => Ok(Languages::One(*one)),
            _ => Ok(Languages::AnyOf(self.order)),
        }
    }
}

/// Finds a language by code or English name; the error is the message body.
fn lookup(text: &str) -> std::result::Result<Language, String> {
    let text = text.trim();
    if let Some(language) = find(text) {
        return Ok(language);
    }
    let mut message = format!(
        "unknown language {}: expected one of Whisper's language codes (such as \"en\", \
         \"de\", \"yue\") or its English name (such as \"german\")",
        excerpt(text)
    );
    if let Some(hint) = hint(text) {
        message.push_str("; did you mean \"");
        message.push_str(hint.code());
        message.push_str("\"?");
    }
    Err(message)
}

/// Exact lookup (ASCII case-insensitive) of a trimmed code or English name.
fn find(text: &str) -> Option<Language> {
    TABLE
        .iter()
        .position(|(code, name)| text.eq_ignore_ascii_case(code) || text.eq_ignore_ascii_case(name))
        .and_then(|index| u8::try_from(index).ok())
        .map(Language)
}

/// A likely intended language for an unknown code: `en-US` -> `en`, `jv` -> `jw`.
fn hint(text: &str) -> Option<Language> {
    let base = text.split(['-', '_']).next().unwrap_or(text);
    if base.len() < text.len()
        && let Some(language) = find(base)
    {
        return Some(language);
    }
    HINTS
        .iter()
        .find(|(alias, _)| base.eq_ignore_ascii_case(alias))
        .and_then(|(_, code)| find(code))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::test_support::{accepted, rejected};

    fn lang(code: &str) -> Language {
        accepted(Language::from_code, code)
    }

    fn ok(text: &str) -> Languages {
        accepted(parse_languages, text)
    }

    fn err(text: &str) -> String {
        rejected(parse_languages, "languages", text)
    }

    #[test]
    fn language_accessors() {
        let de = lang("de");
        assert_eq!(de.code(), "de");
        assert_eq!(de.english_name(), "german");
        assert_eq!(de.whisper_id(), 2);
        assert_eq!(lang("en").whisper_id(), 0);
        assert_eq!(lang("zh").whisper_id(), 1);
        assert_eq!(lang("pl").whisper_id(), 10);
        assert_eq!(lang("haw").whisper_id(), 93);
        assert_eq!(lang("su").whisper_id(), 98);
        assert_eq!(lang("yue").whisper_id(), 99);
        assert_eq!(lang("yue").english_name(), "cantonese");
        assert_eq!(de.to_string(), "de");
        assert_eq!(format!("{de:?}"), "Language(\"de\")");
        assert_eq!("DE".parse::<Language>().ok(), Some(de));
        assert_eq!(Language::all().len(), 100);
        assert_eq!(Language::from_whisper_id(2), Some(de));
        assert_eq!(Language::from_whisper_id(100), None);
        assert_eq!(Language::from_whisper_id(-1), None);
        assert!(lang("su").available_in(99));
        assert!(!lang("yue").available_in(99));
        assert!(lang("yue").available_in(100));
    }

    #[test]
    fn codes_and_names_round_trip() {
        for language in Language::all() {
            assert_eq!(lang(language.code()), language);
            assert_eq!(lang(language.english_name()), language);
            assert_eq!(lang(&language.code().to_uppercase()), language);
            assert_eq!(
                Language::from_whisper_id(language.whisper_id()),
                Some(language)
            );
        }
    }

    #[test]
    fn lookup_is_trimmed_and_case_insensitive() {
        for (written, code) in [
            (" De\t", "de"),
            ("GERMAN", "de"),
            ("Haitian Creole", "ht"),
            ("javanese", "jw"),
        ] {
            assert_eq!(lang(written), lang(code), "{written:?}");
        }
    }

    #[test]
    fn unknown_languages_are_rejected_with_hints() {
        let unknown = |code: &str| match Language::from_code(code) {
            Err(Error::InvalidRequest {
                param: "languages",
                message,
            }) => message,
            other => panic!("{code:?}: {other:?}"),
        };
        assert_eq!(
            unknown("xx"),
            "unknown language \"xx\": expected one of Whisper's language codes (such as \
             \"en\", \"de\", \"yue\") or its English name (such as \"german\")"
        );
        assert!(unknown("en-US").ends_with("; did you mean \"en\"?"));
        assert!(unknown("pt_BR").ends_with("; did you mean \"pt\"?"));
        assert!(unknown("jv").ends_with("; did you mean \"jw\"?"));
        assert!(unknown("nb").ends_with("; did you mean \"no\"?"));
        assert!(!unknown("xx-YY").contains("did you mean"));
        assert!(unknown("").starts_with("unknown language \"\""));
        assert!(unknown("de\0").starts_with("unknown language \"de\\0\""));
        assert!(unknown("haitian  creole").contains("unknown language"));
        assert!(unknown(&"x".repeat(10_000)).contains("…"));
    }

    #[test]
    fn auto_forms() {
        for text in [
            "auto", "AUTO", " auto ", "", "  ", "null", "\"auto\"", "\"\"",
        ] {
            assert_eq!(ok(text), Languages::Auto, "{text:?}");
        }
    }

    #[test]
    fn single_forms() {
        let de = Languages::One(lang("de"));
        for text in [
            "de",
            " DE ",
            "german",
            "\"de\"",
            " \" De \" ",
            "[\"de\"]",
            "de,",
            ",de",
            "de,DE,german",
            "[\"de\",\"german\"]",
        ] {
            assert_eq!(ok(text), de, "{text:?}");
        }
    }

    #[test]
    fn list_forms() {
        let de_en = Languages::AnyOf(vec![lang("de"), lang("en")]);
        for text in [
            "[\"de\",\"en\"]",
            " [ \"DE\" , \"english\" , \"de\" ] ",
            "de,en",
            " de , en ,, de ",
            "\"de,en\"",
        ] {
            assert_eq!(ok(text), de_en, "{text:?}");
        }
        assert_eq!(
            ok("en,de"),
            Languages::AnyOf(vec![lang("en"), lang("de")]),
            "order is kept"
        );
    }

    #[test]
    fn whole_table_is_allowed() {
        let codes: Vec<&str> = Language::all().map(Language::code).collect();
        let json = serde_json::to_string(&codes).unwrap_or_default();
        match ok(&json) {
            Languages::AnyOf(list) => assert_eq!(list.len(), MAX_LANGUAGES),
            other => panic!("{other:?}"),
        }
        let names: Vec<&str> = Language::all().map(Language::english_name).collect();
        assert!(ok(&names.join(",")).allows(lang("yue")));
    }

    #[test]
    fn empty_lists_are_invalid() {
        let empty = "the list of languages is empty; send \"auto\" to detect the language, \
                     or at least one language code";
        for text in ["[]", " [ ] ", ",", " , ,", "\",\""] {
            assert_eq!(err(text), empty, "{text:?}");
        }
        assert!(Languages::from_codes(Vec::<String>::new()).is_err());
    }

    #[test]
    fn auto_in_a_list_is_invalid() {
        let expected = "languages[1] is \"auto\", which cannot be part of a list; \
                        send \"auto\" alone to detect among all languages";
        assert_eq!(err("[\"de\",\"auto\"]"), expected);
        assert_eq!(err("de,Auto"), expected);
        assert_eq!(err("[\"auto\"]"), expected.replace("[1]", "[0]"));
        assert!(Languages::from_codes(["auto"]).is_err());
    }

    #[test]
    fn list_items_are_validated_by_index() {
        assert!(err("[\"de\",\"xx\"]").starts_with("languages[1]: unknown language \"xx\""));
        assert!(err("de,,xx").starts_with("languages[2]: unknown language \"xx\""));
        assert_eq!(err("[\"de\",\"\"]"), "languages[1] is empty");
        assert_eq!(err("[\"de\",\" \"]"), "languages[1] is empty");
        assert_eq!(
            err("[\"de\",2]"),
            "languages[1] must be a string language code, got a number"
        );
        assert_eq!(
            err("[[\"de\"]]"),
            "languages[0] must be a string language code, got an array"
        );
        assert_eq!(
            err("[null]"),
            "languages[0] must be a string language code, got null"
        );
    }

    #[test]
    fn wrong_shapes_are_invalid() {
        assert_eq!(
            err("{\"de\": true}"),
            "languages must be \"auto\", a language code, a comma-separated list of codes \
             or a JSON array of codes, got an object"
        );
        assert!(err("xx").starts_with("unknown language \"xx\""));
        assert!(err("42").starts_with("unknown language \"42\""));
        assert!(err("true").starts_with("unknown language \"true\""));
        assert!(err("[\"de\"").starts_with("languages is not valid JSON: "));
        assert!(err("\"de").starts_with("languages is not valid JSON: "));
        assert!(
            err("\"[\\\"de\\\"]\"").starts_with("unknown language"),
            "no nested JSON"
        );
    }

    #[test]
    fn size_and_depth_limits() {
        let huge = "[".repeat(100_000);
        assert!(err(&huge).starts_with("languages is 100000 bytes long, the limit is 4096 bytes"));
        let deep = "[".repeat(1000);
        assert!(err(&deep).contains("nested more than 32 levels deep"));
        let long = format!("[{}]", vec!["\"de\""; 1000].join(","));
        assert!(err(&long).contains("the limit is 4096 bytes"));
        // Many duplicates within the byte limit are fine.
        let dups = vec!["de"; 1000].join(",");
        assert_eq!(ok(&dups), Languages::One(lang("de")));
    }

    #[test]
    fn from_codes_and_allows() {
        let set = Languages::from_codes(["fr", " FR ", "italian"]).unwrap_or_default();
        assert_eq!(set, Languages::AnyOf(vec![lang("fr"), lang("it")]));
        assert!(set.allows(lang("it")));
        assert!(!set.allows(lang("de")));
        assert!(Languages::Auto.allows(lang("yue")));
        assert!(Languages::Auto.is_auto());
        assert!(Languages::One(lang("de")).allows(lang("de")));
        assert!(!Languages::One(lang("de")).allows(lang("en")));
        assert_eq!(
            Languages::from_codes(vec![String::from("de")]).ok(),
            Some(Languages::One(lang("de")))
        );
        match Languages::from_codes(["de", "klingon"]) {
            Err(e) => assert_eq!(e.param(), Some("languages")),
            Ok(l) => panic!("{l:?}"),
        }
        assert_eq!(Languages::default(), Languages::Auto);
    }

    #[test]
    fn validate_normalises_hand_built_values() {
        let (de, en) = (lang("de"), lang("en"));
        assert!(validate_languages(Languages::AnyOf(vec![])).is_err());
        assert_eq!(
            validate_languages(Languages::AnyOf(vec![de, de])).ok(),
            Some(Languages::One(de))
        );
        assert_eq!(
            validate_languages(Languages::AnyOf(vec![en, de, en])).ok(),
            Some(Languages::AnyOf(vec![en, de]))
        );
        assert_eq!(
            validate_languages(Languages::Auto).ok(),
            Some(Languages::Auto)
        );
        assert_eq!(
            validate_languages(Languages::One(de)).ok(),
            Some(Languages::One(de))
        );
    }
}
