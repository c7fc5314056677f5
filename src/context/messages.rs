//! The `messages` field: chat-style context for the transcription.
//!
//! The accepted forms and every decision are documented on [`parse_messages`].

use std::fmt;

use serde_json::{Map, Value};

use crate::error::{Error, Result};

use super::request::{
    MAX_MESSAGE_BYTES, MAX_MESSAGES, MAX_MESSAGES_TEXT_BYTES, MAX_TOTAL_MESSAGE_BYTES,
    check_text_size, excerpt, is_absent, parse_json_array, wrong_type,
};

const PARAM: &str = "messages";

/// Who wrote a context message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions or background for the transcription (`"system"`).
    System,
    /// Text from the user, such as earlier turns of the conversation (`"user"`).
    User,
}

impl Role {
    /// The wire name: `"system"` or `"user"`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One context message. Build it freely; [`validate_messages`] checks the limits and gives
/// [`Messages`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// What it says, verbatim.
    pub content: String,
}

impl Message {
    /// A message with the given role.
    #[must_use]
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        Message {
            role,
            content: content.into(),
        }
    }

    /// A `system` message.
    #[must_use]
    pub fn system(content: impl Into<String>) -> Self {
        Message::new(Role::System, content)
    }

    /// A `user` message.
    #[must_use]
    pub fn user(content: impl Into<String>) -> Self {
        Message::new(Role::User, content)
    }
}

/// Context messages within the limits: what [`parse_messages`] and [`validate_messages`]
/// give, and what [`TranscriptionRequest::new`](crate::TranscriptionRequest::new) takes
/// without checking them again. It reads as a slice of [`Message`]s.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Messages(Vec<Message>);

impl Messages {
    /// These messages followed by `more`, checked against the limits on all messages
    /// together ([`MAX_MESSAGES`], [`MAX_TOTAL_MESSAGE_BYTES`]); each message is within
    /// its own limits already.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidRequest`] with `param = "messages"` naming the limit.
    pub fn append(mut self, more: Messages) -> Result<Messages> {
        self.0.extend(more.0);
        check_count(self.0.len())?;
        check_total(&self.0)?;
        Ok(self)
    }

    /// The messages, oldest first.
    #[must_use]
    pub fn as_slice(&self) -> &[Message] {
        &self.0
    }

    /// The messages as a vector.
    #[must_use]
    pub fn into_vec(self) -> Vec<Message> {
        self.0
    }
}

impl std::ops::Deref for Messages {
    type Target = [Message];

    fn deref(&self) -> &[Message] {
        &self.0
    }
}

impl From<Messages> for Vec<Message> {
    fn from(messages: Messages) -> Self {
        messages.0
    }
}

impl IntoIterator for Messages {
    type Item = Message;
    type IntoIter = std::vec::IntoIter<Message>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl<'a> IntoIterator for &'a Messages {
    type Item = &'a Message;
    type IntoIter = std::slice::Iter<'a, Message>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl<const N: usize> PartialEq<[Message; N]> for Messages {
    fn eq(&self, other: &[Message; N]) -> bool {
        self.0 == other
    }
}

/// Parses the `messages` field as sent on the wire (a form field, a C string, a Python
/// string) and applies [`validate_messages`].
///
/// Wire form: a JSON array of `{"role": ..., "content": ...}` objects.
///
/// - `role` is `"system"` or `"user"`, exactly (lowercase). Any other role, including
///   `"assistant"` and `"tool"`, is rejected with the index and the role
///   (`messages[2].role must be "system" or "user", got "assistant"`).
/// - `content` is a string, or OpenAI's content-parts form
///   `[{"type": "text", "text": "..."}, ...]`, whose text parts are joined with `"\n"`.
///   A part of any other type (`image_url`, `input_audio`, ...) is rejected.
///   `null`, numbers, objects and a missing `content` are rejected.
/// - Unknown extra fields (OpenAI clients add `name`) are ignored, in messages and in
///   content parts.
/// - Content is kept verbatim (not trimmed); an empty content is accepted. A NUL
///   character is rejected (whisper.cpp takes its prompt as a C string); other control
///   characters (newlines, tabs) are kept.
/// - An empty array, an empty (or all-whitespace) field and JSON `null` all mean
///   "no context".
/// - Limits: [`MAX_MESSAGES`] messages, [`MAX_MESSAGE_BYTES`] per content,
///   [`MAX_TOTAL_MESSAGE_BYTES`] for all contents, [`MAX_MESSAGES_TEXT_BYTES`] for the
///   JSON text (checked before parsing), [`MAX_JSON_DEPTH`](super::MAX_JSON_DEPTH) levels of nesting.
///
/// # Errors
///
/// [`Error::InvalidRequest`] with `param = "messages"` saying what is wrong and where
/// (`messages[3].content must be a string or an array of text parts, got a number`).
pub fn parse_messages(json_text: &str) -> Result<Messages> {
    check_text_size(PARAM, json_text, MAX_MESSAGES_TEXT_BYTES)?;
    if is_absent(json_text) {
        return Ok(Messages::default());
    }
    let expected = r#"a JSON array of {"role", "content"} objects"#;
    let items = parse_json_array(PARAM, json_text, expected)?;
    check_count(items.len())?;
    let messages = items
        .into_iter()
        .enumerate()
        .map(|(index, item)| message_from_json(index, item))
        .collect::<Result<Vec<_>>>()?;
    validate_messages(messages)
}

/// Checks already-typed messages (from Rust, C or Python) against the limits:
/// at most [`MAX_MESSAGES`] messages, [`MAX_MESSAGE_BYTES`] per content,
/// [`MAX_TOTAL_MESSAGE_BYTES`] in total, and no NUL character. Returns them unchanged,
/// as [`Messages`].
///
/// # Errors
///
/// [`Error::InvalidRequest`] with `param = "messages"` naming the limit and the index.
pub fn validate_messages(messages: Vec<Message>) -> Result<Messages> {
    check_count(messages.len())?;
    for (index, message) in messages.iter().enumerate() {
        let len = message.content.len();
        if len > MAX_MESSAGE_BYTES {
            return Err(Error::invalid(
                PARAM,
                format!(
                    "messages[{index}].content is {len} bytes long, \
                     the limit is {MAX_MESSAGE_BYTES} bytes per message"
                ),
            ));
        }
        if let Some(at) = message.content.find('\0') {
            return Err(Error::invalid(
                PARAM,
                format!("messages[{index}].content contains a NUL character at byte {at}"),
            ));
        }
    }
    check_total(&messages)?;
    Ok(Messages(messages))
}

/// The limit on the contents of all messages together.
fn check_total(messages: &[Message]) -> Result<()> {
    let total: usize = messages.iter().map(|m| m.content.len()).sum();
    if total > MAX_TOTAL_MESSAGE_BYTES {
        return Err(Error::invalid(
            PARAM,
            format!(
                "the contents of all messages total {total} bytes, \
                 the limit is {MAX_TOTAL_MESSAGE_BYTES} bytes"
            ),
        ));
    }
    Ok(())
}

fn check_count(count: usize) -> Result<()> {
    if count > MAX_MESSAGES {
        return Err(Error::invalid(
            PARAM,
            format!("too many messages: {count}, the limit is {MAX_MESSAGES}"),
        ));
    }
    Ok(())
}

fn message_from_json(index: usize, item: Value) -> Result<Message> {
    let mut object = match item {
        Value::Object(object) => object,
        other => {
            let expected = r#"an object with "role" and "content""#;
            return Err(wrong_type(
                PARAM,
                format!("messages[{index}]"),
                expected,
                &other,
            ));
        }
    };
    let role = match object.get("role") {
        None => {
            return Err(Error::invalid(
                PARAM,
                format!("messages[{index}].role is missing"),
            ));
        }
        Some(Value::String(role)) => match role.as_str() {
            "system" => Role::System,
            "user" => Role::User,
            other => {
                return Err(Error::invalid(
                    PARAM,
                    format!(
                        "messages[{index}].role must be \"system\" or \"user\", got {}",
                        excerpt(other)
                    ),
                ));
            }
        },
        Some(other) => {
            let expected = r#"the string "system" or "user""#;
            return Err(wrong_type(
                PARAM,
                format!("messages[{index}].role"),
                expected,
                other,
            ));
        }
    };
    let content = match object.remove("content") {
        None => {
            return Err(Error::invalid(
                PARAM,
                format!("messages[{index}].content is missing"),
            ));
        }
        Some(Value::String(content)) => content,
        Some(Value::Array(parts)) => join_text_parts(index, parts)?,
        Some(other) => {
            let what = format!("messages[{index}].content");
            let expected = "a string or an array of text parts";
            return Err(wrong_type(PARAM, what, expected, &other));
        }
    };
    Ok(Message { role, content })
}

/// Joins OpenAI content parts `[{"type": "text", "text": "..."}]` with newlines.
fn join_text_parts(index: usize, parts: Vec<Value>) -> Result<String> {
    let mut texts = Vec::with_capacity(parts.len());
    for (part_index, part) in parts.into_iter().enumerate() {
        let at = format!("messages[{index}].content[{part_index}]");
        let mut part: Map<String, Value> = match part {
            Value::Object(part) => part,
            other => {
                let expected = r#"an object {"type": "text", "text": ...}"#;
                return Err(wrong_type(PARAM, &at, expected, &other));
            }
        };
        match part.get("type") {
            Some(Value::String(kind)) if kind == "text" => {}
            Some(Value::String(kind)) => {
                return Err(Error::invalid(
                    PARAM,
                    format!(
                        "{at}.type must be \"text\" (only text parts are supported), got {}",
                        excerpt(kind)
                    ),
                ));
            }
            Some(other) => {
                let expected = r#"the string "text""#;
                return Err(wrong_type(PARAM, format!("{at}.type"), expected, other));
            }
            None => return Err(Error::invalid(PARAM, format!("{at}.type is missing"))),
        }
        match part.remove("text") {
            Some(Value::String(text)) => texts.push(text),
            Some(other) => {
                return Err(wrong_type(PARAM, format!("{at}.text"), "a string", &other));
            }
            None => return Err(Error::invalid(PARAM, format!("{at}.text is missing"))),
        }
    }
    Ok(texts.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::test_support::{accepted, rejected};

    fn err(text: &str) -> String {
        rejected(parse_messages, "messages", text)
    }

    fn ok(text: &str) -> Vec<Message> {
        accepted(parse_messages, text).into_vec()
    }

    #[test]
    fn accepts_system_and_user() {
        let messages = ok(r#"[
            {"role": "system", "content": "Medical dictation."},
            {"role": "user", "content": "Patient Müller, 5 mg Ramipril"}
        ]"#);
        assert_eq!(
            messages,
            vec![
                Message::system("Medical dictation."),
                Message::user("Patient Müller, 5 mg Ramipril"),
            ]
        );
    }

    #[test]
    fn empty_forms_mean_no_context() {
        for text in ["[]", " [ ] ", "", "   ", "null"] {
            assert!(ok(text).is_empty(), "{text:?}");
        }
    }

    #[test]
    fn extra_fields_are_ignored() {
        let messages = ok(r#"[{"role": "user", "name": "bob", "content": "hi", "x": {"y": [1]}}]"#);
        assert_eq!(messages, vec![Message::user("hi")]);
    }

    #[test]
    fn content_is_kept_verbatim() {
        let messages = ok(
            r#"[{"role": "user", "content": "  two\nlines\t "}, {"role": "system", "content": ""}]"#,
        );
        assert_eq!(messages[0].content, "  two\nlines\t ");
        assert_eq!(messages[1].content, "");
    }

    #[test]
    fn content_parts_are_joined() {
        let messages = ok(r#"[{"role": "user", "content": [
            {"type": "text", "text": "first"},
            {"type": "text", "text": "second", "cache_control": {"type": "ephemeral"}}
        ]}]"#);
        assert_eq!(messages, vec![Message::user("first\nsecond")]);
        assert_eq!(ok(r#"[{"role": "user", "content": []}]"#)[0].content, "");
    }

    #[test]
    fn rejects_other_roles() {
        assert_eq!(
            err(
                r#"[{"role":"system","content":"a"},{"role":"user","content":"b"},{"role":"assistant","content":"c"}]"#
            ),
            r#"messages[2].role must be "system" or "user", got "assistant""#
        );
        assert_eq!(
            err(r#"[{"role":"User","content":"a"}]"#),
            r#"messages[0].role must be "system" or "user", got "User""#
        );
        assert_eq!(
            err(r#"[{"role":"tool","content":"a"}]"#),
            r#"messages[0].role must be "system" or "user", got "tool""#
        );
    }

    #[test]
    fn rejects_bad_role_types() {
        assert_eq!(err(r#"[{"content":"a"}]"#), "messages[0].role is missing");
        assert_eq!(
            err(r#"[{"role":1,"content":"a"}]"#),
            r#"messages[0].role must be the string "system" or "user", got a number"#
        );
        assert_eq!(
            err(r#"[{"role":null,"content":"a"}]"#),
            r#"messages[0].role must be the string "system" or "user", got null"#
        );
    }

    #[test]
    fn rejects_bad_content() {
        assert_eq!(
            err(r#"[{"role":"user"}]"#),
            "messages[0].content is missing"
        );
        for (content, kind) in [
            ("null", "null"),
            ("42", "a number"),
            ("true", "a boolean"),
            (r#"{"text":"a"}"#, "an object"),
        ] {
            assert_eq!(
                err(&format!(r#"[{{"role":"user","content":{content}}}]"#)),
                format!(
                    "messages[0].content must be a string or an array of text parts, got {kind}"
                )
            );
        }
    }

    #[test]
    fn rejects_bad_content_parts() {
        let text = |parts: &str| format!(r#"[{{"role":"user","content":[{parts}]}}]"#);
        assert_eq!(
            err(&text(r#""plain""#)),
            r#"messages[0].content[0] must be an object {"type": "text", "text": ...}, got a string"#
        );
        assert_eq!(
            err(&text(
                r#"{"type":"text","text":"a"},{"type":"image_url","image_url":{}}"#
            )),
            r#"messages[0].content[1].type must be "text" (only text parts are supported), got "image_url""#
        );
        assert_eq!(
            err(&text(r#"{"text":"a"}"#)),
            "messages[0].content[0].type is missing"
        );
        assert_eq!(
            err(&text(r#"{"type":3,"text":"a"}"#)),
            r#"messages[0].content[0].type must be the string "text", got a number"#
        );
        assert_eq!(
            err(&text(r#"{"type":"text"}"#)),
            "messages[0].content[0].text is missing"
        );
        assert_eq!(
            err(&text(r#"{"type":"text","text":["a"]}"#)),
            "messages[0].content[0].text must be a string, got an array"
        );
    }

    #[test]
    fn rejects_wrong_json_types() {
        assert_eq!(
            err(r#"{"role":"user","content":"a"}"#),
            r#"messages must be a JSON array of {"role", "content"} objects, got an object"#
        );
        assert_eq!(
            err(r#""hello""#),
            r#"messages must be a JSON array of {"role", "content"} objects, got a string"#
        );
        assert_eq!(
            err("[\"hello\"]"),
            r#"messages[0] must be an object with "role" and "content", got a string"#
        );
        assert_eq!(
            err("[[]]"),
            r#"messages[0] must be an object with "role" and "content", got an array"#
        );
    }

    #[test]
    fn rejects_invalid_json() {
        for text in ["[", "hello", r#"[{"role":"user","content":"a"},]"#, "[]x"] {
            assert!(
                err(text).starts_with("messages is not valid JSON: "),
                "{text:?}"
            );
        }
    }

    #[test]
    fn rejects_deep_nesting_without_overflow() {
        let msg = err(&"[".repeat(100_000));
        assert!(msg.contains("nested more than 32 levels deep"), "{msg}");
        let nested = format!(
            r#"[{{"role":"user","content":"a","x":{}1{}}}]"#,
            "[".repeat(40),
            "]".repeat(40)
        );
        assert!(err(&nested).contains("nested more than 32 levels deep"));
    }

    #[test]
    fn rejects_huge_text_before_parsing() {
        let text = format!("[{}", " ".repeat(MAX_MESSAGES_TEXT_BYTES));
        assert_eq!(
            err(&text),
            format!(
                "messages is {} bytes long, the limit is {MAX_MESSAGES_TEXT_BYTES} bytes",
                MAX_MESSAGES_TEXT_BYTES + 1
            )
        );
    }

    #[test]
    fn rejects_nul() {
        assert_eq!(
            err(r#"[{"role":"user","content":"ab\u0000c"}]"#),
            "messages[0].content contains a NUL character at byte 2"
        );
        assert!(validate_messages(vec![Message::system("a\0")]).is_err());
    }

    #[test]
    fn message_count_limit() {
        let one = r#"{"role":"user","content":"x"}"#;
        let at_limit = format!("[{}]", vec![one; MAX_MESSAGES].join(","));
        assert_eq!(ok(&at_limit).len(), MAX_MESSAGES);
        let over = format!("[{}]", vec![one; MAX_MESSAGES + 1].join(","));
        assert_eq!(err(&over), "too many messages: 101, the limit is 100");
        assert!(validate_messages(vec![Message::user("x"); MAX_MESSAGES + 1]).is_err());
    }

    #[test]
    fn message_size_limits() {
        let at_limit = Message::user("a".repeat(MAX_MESSAGE_BYTES));
        assert!(validate_messages(vec![at_limit.clone(); 4]).is_ok());
        let over = Message::user("a".repeat(MAX_MESSAGE_BYTES + 1));
        match validate_messages(vec![Message::system("s"), over]) {
            Err(e) => assert_eq!(
                e.to_string(),
                "invalid messages: messages[1].content is 16385 bytes long, \
                 the limit is 16384 bytes per message"
            ),
            Ok(_) => panic!("accepted an oversized message"),
        }
        match validate_messages(vec![at_limit; 5]) {
            Err(e) => assert_eq!(
                e.to_string(),
                "invalid messages: the contents of all messages total 81920 bytes, \
                 the limit is 65536 bytes"
            ),
            Ok(_) => panic!("accepted oversized messages"),
        }
        // The per-message limit counts UTF-8 bytes, also when parsed from escapes.
        let escaped = format!(
            r#"[{{"role":"user","content":"{}"}}]"#,
            "\\u00e9".repeat(MAX_MESSAGE_BYTES / 2 + 1)
        );
        assert!(err(&escaped).contains("messages[0].content is 16386 bytes long"));
    }

    #[test]
    fn role_serde_is_lowercase() {
        assert_eq!(
            serde_json::to_string(&Role::System).ok().as_deref(),
            Some("\"system\"")
        );
        assert_eq!(
            serde_json::from_str::<Role>("\"user\"").ok(),
            Some(Role::User)
        );
        assert!(serde_json::from_str::<Role>("\"assistant\"").is_err());
        assert_eq!(Role::User.to_string(), "user");
    }

    #[test]
    fn append_checks_the_limits_on_all_messages_together() {
        let one = |content: &str| validate_messages(vec![Message::user(content)]);
        // `count` messages of `content` are within the limits; one more ("x") is not.
        let one_more_fails = |count: usize, content: &str, reason: &str| {
            let full = (0..count).fold(Messages::default(), |full, _| {
                full.append(one(content).expect("valid"))
                    .expect("within the limits")
            });
            let over = full.append(one("x").expect("valid"));
            assert!(
                matches!(&over, Err(Error::InvalidRequest { message, .. })
                    if message.contains(reason)),
                "{over:?}"
            );
        };
        let at_limit = "a".repeat(MAX_MESSAGE_BYTES);
        one_more_fails(
            MAX_TOTAL_MESSAGE_BYTES / MAX_MESSAGE_BYTES,
            &at_limit,
            "total",
        );
        one_more_fails(MAX_MESSAGES, "x", "too many");
    }
}
