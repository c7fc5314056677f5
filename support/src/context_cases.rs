//! The cases of a context set: ../shared/eval/context, and the sets laid out like it
//! (`cases.jsonl` + `audio/ID.wav`: benches/ctxset, benches/heldout, benches/realctx).
//! One reader, parsed by the library's own request parsers, for the benches and tests.

use std::path::Path;

use ctxscribe::context::{parse_languages, parse_messages};
use ctxscribe::{Dictionary, Languages, Message};
use serde_json::Value;

/// One line of a context set's `cases.jsonl`, as the request fields.
#[derive(Debug, Clone)]
pub struct ContextCase {
    /// The case's id (its audio is `audio/ID.wav` beside `cases.jsonl`).
    pub id: String,
    /// What is said, as it should be written.
    pub reference: String,
    /// The conversation context (`messages`; none when absent).
    pub messages: Vec<Message>,
    /// The allowed languages (`languages`: a code or a list; `Auto` when absent).
    pub languages: Languages,
    /// The glossary (`dictionary`; empty when absent).
    pub dictionary: Dictionary,
    /// The line itself, for fields sent as written (e.g. to the server).
    pub json: Value,
}

impl ContextCase {
    /// The one language given, if exactly one is (faster-whisper takes one or none).
    #[must_use]
    pub fn single_language(&self) -> Option<String> {
        match &self.languages {
            Languages::One(language) => Some(language.code().to_owned()),
            _ => None,
        }
    }

    /// The case's audio in the set directory `set_dir`.
    #[must_use]
    pub fn audio_path(&self, set_dir: &Path) -> std::path::PathBuf {
        set_dir.join(format!("audio/{}.wav", self.id))
    }
}

/// The cases of the `cases.jsonl` at `path`, in file order.
///
/// # Errors
/// The file cannot be read, or a line is not JSON or has a field the library refuses.
pub fn read_context_cases(path: &Path) -> Result<Vec<ContextCase>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    parse_context_cases(&text)
}

/// The cases in `text` (JSON lines; blank lines skipped).
///
/// # Errors
/// A line is not JSON or has a field the library refuses.
pub fn parse_context_cases(text: &str) -> Result<Vec<ContextCase>, String> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(parse_case)
        .collect()
}

fn parse_case(line: &str) -> Result<ContextCase, String> {
    let value: Value = serde_json::from_str(line).map_err(|e| e.to_string())?;
    let field = |name: &str| value.get(name).map(ToString::to_string).unwrap_or_default();
    let text = |name: &str| value[name].as_str().unwrap_or_default().to_owned();
    let id = text("id");
    let messages = parse_messages(&field("messages"))
        .map_err(|e| format!("{id}: {e}"))?
        .into_vec();
    let languages = parse_languages(&field("languages")).map_err(|e| format!("{id}: {e}"))?;
    let terms: Vec<String> = value
        .get("dictionary")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|t| t.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let dictionary = Dictionary::from_terms(terms).map_err(|e| format!("{id}: {e}"))?;
    Ok(ContextCase {
        reference: text("reference"),
        id,
        messages,
        languages,
        dictionary,
        json: value,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_case_with_every_field_and_one_with_none() {
        let text = r#"{"id":"a","reference":"Hi.","languages":"fr","dictionary":["Kubernetes"],"messages":[{"role":"user","content":"x"}]}

{"id":"b","languages":["de","en"]}
"#;
        let cases = parse_context_cases(text).expect("valid cases");
        assert_eq!(cases.len(), 2);
        assert_eq!(cases[0].id, "a");
        assert_eq!(cases[0].reference, "Hi.");
        assert_eq!(cases[0].single_language().as_deref(), Some("fr"));
        assert_eq!(cases[0].messages.len(), 1);
        assert_eq!(cases[0].dictionary.terms().len(), 1);
        assert_eq!(cases[1].single_language(), None);
        assert!(matches!(cases[1].languages, Languages::AnyOf(_)));
        assert!(cases[1].messages.is_empty());
        assert_eq!(
            cases[1].audio_path(Path::new("set")),
            Path::new("set/audio/b.wav")
        );
    }

    #[test]
    fn a_refused_field_names_its_case() {
        let err = parse_context_cases(r#"{"id":"c","languages":"xx-not-a-language"}"#)
            .expect_err("an unknown language");
        assert!(err.starts_with("c: "), "{err}");
        assert!(parse_context_cases("{not json").is_err());
    }
}
