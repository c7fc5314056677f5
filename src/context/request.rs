//! Limits and wire-text helpers shared by the three request fields.
//!
//! Every parser first checks the raw text against a byte limit (so a huge field is
//! rejected before any parsing or allocation), then, for JSON forms, scans the nesting
//! depth (so a deeply nested input is rejected cleanly and never reaches a recursive
//! parser), and only then hands the text to `serde_json`.

use serde_json::Value;

use crate::error::{Error, Result};

use super::languages_table::LANGUAGE_COUNT;

/// Most messages in one request.
pub const MAX_MESSAGES: usize = 100;

/// Most bytes (UTF-8) of one message's `content` (16 KiB).
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024;

/// Most bytes (UTF-8) of all messages' `content` together (64 KiB).
pub const MAX_TOTAL_MESSAGE_BYTES: usize = 64 * 1024;

/// Most bytes of the `messages` field as sent (the JSON text), checked before parsing
/// (256 KiB: room for [`MAX_TOTAL_MESSAGE_BYTES`] of content even when every character
/// is `\uXXXX`-escaped, as Python's `json.dumps` does by default).
pub const MAX_MESSAGES_TEXT_BYTES: usize = 256 * 1024;

/// Most distinct languages in a list: the whole Whisper table (100), so any subset can
/// be sent. Duplicates are removed before counting.
pub const MAX_LANGUAGES: usize = LANGUAGE_COUNT;

/// Most bytes of the `languages` field as sent, checked before parsing (4 KiB: every
/// language's English name fits in a JSON array with room to spare).
pub const MAX_LANGUAGES_TEXT_BYTES: usize = 4 * 1024;

/// Most distinct terms in a dictionary (after trimming, dropping empties and
/// removing duplicates).
pub const MAX_DICTIONARY_TERMS: usize = 1000;

/// Most characters (Unicode scalar values, not bytes) of one dictionary term, after
/// trimming.
pub const MAX_TERM_CHARS: usize = 100;

/// Most bytes of the `dictionary` field as sent, checked before parsing (1 MiB).
pub const MAX_DICTIONARY_TEXT_BYTES: usize = 1024 * 1024;

/// Most distinct spoken forms given for one term in `sounds_like`.
pub const MAX_SOUNDS_LIKE_FORMS: usize = 10;

/// Most characters (Unicode scalar values) of one spoken form in `sounds_like`, after
/// trimming.
pub const MAX_SOUNDS_LIKE_FORM_CHARS: usize = 100;

/// Most bytes of the `sounds_like` field as sent, checked before parsing (1 MiB).
pub const MAX_SOUNDS_LIKE_TEXT_BYTES: usize = 1024 * 1024;

/// Deepest JSON nesting (arrays and objects) accepted in any field. The valid shapes
/// need at most 4 levels (`messages` with content parts); anything deeper is rejected
/// by a linear scan before parsing, well below `serde_json`'s own recursion limit (128).
pub const MAX_JSON_DEPTH: usize = 32;

/// Rejects `text` if it is longer than `limit` bytes.
pub(crate) fn check_text_size(param: &'static str, text: &str, limit: usize) -> Result<()> {
    if text.len() > limit {
        return Err(Error::invalid(
            param,
            format!(
                "{param} is {} bytes long, the limit is {limit} bytes",
                text.len()
            ),
        ));
    }
    Ok(())
}

/// Whether a field's text means "not given": empty, only whitespace, or JSON `null`.
pub(crate) fn is_absent(text: &str) -> bool {
    let text = text.trim();
    text.is_empty() || text == "null"
}

/// Rejects JSON text nested deeper than [`MAX_JSON_DEPTH`], without recursion.
///
/// Brackets inside strings are skipped; the scan does not otherwise validate the JSON
/// (the parser does that afterwards).
pub(crate) fn check_json_depth(param: &'static str, text: &str) -> Result<()> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (offset, byte) in text.bytes().enumerate() {
        if in_string {
            if escaped {
                escaped = false;
            } else if byte == b'\\' {
                escaped = true;
            } else if byte == b'"' {
                in_string = false;
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_JSON_DEPTH {
                    return Err(Error::invalid(
                        param,
                        format!(
                            "{param} JSON is nested more than {MAX_JSON_DEPTH} levels deep \
                             (at byte {offset})"
                        ),
                    ));
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

/// Parses `text` as JSON after the depth check, naming `param` in any error.
pub(crate) fn parse_json(param: &'static str, text: &str) -> Result<Value> {
    check_json_depth(param, text)?;
    serde_json::from_str(text)
        .map_err(|e| Error::invalid(param, format!("{param} is not valid JSON: {e}")))
}

/// `text` parsed as the JSON array that the field `param` must be as a whole; any other
/// JSON value is an error saying that `param` must be `expected`.
pub(crate) fn parse_json_array(
    param: &'static str,
    text: &str,
    expected: &str,
) -> Result<Vec<Value>> {
    match parse_json(param, text)? {
        Value::Array(items) => Ok(items),
        other => Err(wrong_type(param, param, expected, &other)),
    }
}

/// The strings of a JSON array of the field `param`, each with its position; any other
/// item is an error naming it (`dictionary[2] must be a string, got a number`).
pub(crate) fn indexed_strings(
    param: &'static str,
    items: Vec<Value>,
    expected: &str,
) -> Result<Vec<(usize, String)>> {
    let item = |(index, item)| match item {
        Value::String(text) => Ok((index, text)),
        other => Err(wrong_type(
            param,
            format!("{param}[{index}]"),
            expected,
            &other,
        )),
    };
    items.into_iter().enumerate().map(item).collect()
}

/// The error for the JSON value `value` at `what` (in the field `param`) that is not of
/// the `expected` type: "`what` must be `expected`, got a number".
pub(crate) fn wrong_type(
    param: &'static str,
    what: impl std::fmt::Display,
    expected: &str,
    value: &Value,
) -> Error {
    Error::invalid(
        param,
        format!("{what} must be {expected}, got {}", json_type(value)),
    )
}

/// "a string", "an array", ... for error messages.
pub(crate) fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A quoted, escaped excerpt of user text for error messages (at most 40 characters,
/// then `…`), so that huge or binary input never floods an error.
pub(crate) fn excerpt(text: &str) -> String {
    const MAX_CHARS: usize = 40;
    match text.char_indices().nth(MAX_CHARS) {
        None => format!("{text:?}"),
        Some((end, _)) => format!("{:?}…", &text[..end]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(result: Result<impl std::fmt::Debug>) -> String {
        match result {
            Err(Error::InvalidRequest { param, message }) => format!("{param}: {message}"),
            other => panic!("expected InvalidRequest, got {other:?}"),
        }
    }

    #[test]
    fn size_limit_is_inclusive() {
        assert!(check_text_size("messages", "abcd", 4).is_ok());
        assert_eq!(
            message(check_text_size("messages", "abcde", 4)),
            "messages: messages is 5 bytes long, the limit is 4 bytes"
        );
    }

    #[test]
    fn absent_forms() {
        for text in ["", "  ", "\n\t", "null", " null "] {
            assert!(is_absent(text), "{text:?}");
        }
        for text in ["nul", "[]", "\"\"", "NULL"] {
            assert!(!is_absent(text), "{text:?}");
        }
    }

    #[test]
    fn depth_at_limit_is_accepted() {
        let ok = format!(
            "{}{}",
            "[".repeat(MAX_JSON_DEPTH),
            "]".repeat(MAX_JSON_DEPTH)
        );
        assert!(check_json_depth("dictionary", &ok).is_ok());
        assert!(parse_json("dictionary", &ok).is_ok());
        let deep = format!("[{ok}]");
        assert_eq!(
            message(check_json_depth("dictionary", &deep)),
            "dictionary: dictionary JSON is nested more than 32 levels deep (at byte 32)"
        );
    }

    #[test]
    fn depth_scan_ignores_brackets_in_strings() {
        let text = format!(r#"["{}", "\"[{{", "\\"]"#, "[".repeat(1000));
        assert!(parse_json("dictionary", &text).is_ok());
    }

    #[test]
    fn huge_nesting_does_not_overflow() {
        let text = "[".repeat(100_000);
        assert!(message(parse_json("messages", &text)).contains("nested more than 32 levels"));
        let text = "{\"a\":".repeat(100_000);
        assert!(message(parse_json("messages", &text)).contains("nested more than 32 levels"));
    }

    #[test]
    fn invalid_json_names_the_field() {
        let msg = message(parse_json("languages", "[\"de\","));
        assert!(
            msg.starts_with("languages: languages is not valid JSON: "),
            "{msg}"
        );
    }

    #[test]
    fn excerpt_truncates_and_escapes() {
        assert_eq!(excerpt("ab\0c"), r#""ab\0c""#);
        let long = "é".repeat(50);
        assert_eq!(excerpt(&long), format!("{:?}…", "é".repeat(40)));
    }
}
