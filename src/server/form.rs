//! The `multipart/form-data` request: streaming it in within the limits, and validating
//! its fields (through the library's parsers) into a checked
//! [`TranscriptionRequest`].
//!
//! This module depends on nothing else in the server but [`super::api_error`]; the fuzz
//! target `fuzz/fuzz_targets/multipart_form.rs` drives it through the library.

use std::collections::BTreeMap;

use crate::context::{
    Languages, Message, Messages, parse_dictionary, parse_languages, parse_messages,
    parse_sounds_like,
};
use crate::{
    AudioLimits, CheckedAudio, Dictionary, Error as LibError, ErrorCode, TranscriptionRequest,
};
use bytes::Bytes;
use http_body_util::BodyDataStream;
use hyper::body::Body;
use serde_json::{Value, json};

use super::api_error::{ApiError, ServerCode};

/// Most bytes of one form field other than `file` (the library's largest field limit,
/// `dictionary`, is 1 MiB; its own limits give the precise errors below this one).
pub const MAX_TEXT_FIELD_BYTES: u64 = 2 * 1024 * 1024;

/// Text fields the server knows (everything else is ignored).
pub const TEXT_FIELDS: &[&str] = &[
    "messages",
    "languages",
    "dictionary",
    "sounds_like",
    "prompt",
    "language",
    "response_format",
    "model",
    "temperature",
    "stream",
];

/// The fields of one request, as sent.
#[derive(Debug, Default)]
pub struct Form {
    pub file: Option<Vec<u8>>,
    pub text: BTreeMap<&'static str, String>,
    /// `languages[]` / `dictionary[]` items, in order.
    pub lists: BTreeMap<&'static str, Vec<String>>,
    /// `sounds_like[TERM][]` items (what OpenAI's SDKs send for the object in
    /// `extra_body`), in order: the term and one spoken form.
    pub sound_items: Vec<(String, String)>,
    /// `messages[][key]` values: the n-th value of each key goes to message n.
    pub message_items: Vec<serde_json::Map<String, Value>>,
    pub message_key_counts: BTreeMap<String, usize>,
}

/// What a multipart field name means.
#[derive(Debug, PartialEq)]
pub enum FieldName {
    File,
    Text(&'static str),
    ListItem(&'static str),
    MessageItem(String),
    /// `sounds_like[TERM][]`: one spoken form of TERM.
    SoundsLikeItem(String),
    Unknown,
}

pub fn classify(name: &str) -> FieldName {
    if name == "file" {
        return FieldName::File;
    }
    if let Some(known) = TEXT_FIELDS.iter().find(|f| **f == name) {
        return FieldName::Text(known);
    }
    match name {
        "languages[]" => return FieldName::ListItem("languages"),
        "dictionary[]" => return FieldName::ListItem("dictionary"),
        _ => {}
    }
    if let Some(term) = name
        .strip_prefix("sounds_like[")
        .and_then(|rest| rest.strip_suffix("][]"))
    {
        return FieldName::SoundsLikeItem(term.to_owned());
    }
    if let Some(key) = name
        .strip_prefix("messages[][")
        .and_then(|rest| rest.strip_suffix(']'))
    {
        return FieldName::MessageItem(key.to_owned());
    }
    FieldName::Unknown
}

/// Reads the multipart body, streaming, in any field order, within the size limits.
pub async fn read_form<B>(
    body: &mut B,
    boundary: String,
    max_file_bytes: u64,
    max_body: u64,
) -> Result<Form, ApiError>
where
    B: Body<Data = Bytes> + Send + Unpin,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let limits = multer::SizeLimit::new()
        .whole_stream(max_body)
        .per_field(MAX_TEXT_FIELD_BYTES)
        .for_field("file", max_file_bytes);
    let mut multipart = multer::Multipart::with_constraints(
        BodyDataStream::new(body),
        boundary,
        multer::Constraints::new().size_limit(limits),
    );
    let mut form = Form::default();
    while let Some(mut field) = multipart.next_field().await.map_err(multipart_error)? {
        let name = field.name().unwrap_or_default().to_owned();
        let kind = classify(&name);
        if kind == FieldName::Unknown {
            while field.chunk().await.map_err(multipart_error)?.is_some() {}
            continue;
        }
        if kind == FieldName::File {
            if form.file.is_some() {
                return Err(twice("file"));
            }
            let mut file = Vec::new();
            while let Some(chunk) = field.chunk().await.map_err(multipart_error)? {
                file.extend_from_slice(&chunk);
            }
            form.file = Some(file);
            continue;
        }
        let bytes = field.bytes().await.map_err(multipart_error)?;
        let text = String::from_utf8(bytes.to_vec()).map_err(|_| {
            ApiError::new(
                ErrorCode::InvalidRequest,
                format!("{name} is not valid UTF-8 text"),
            )
            .param(base_name(&name))
        })?;
        form.add(kind, text)?;
    }
    Ok(form)
}

/// `dictionary` for `dictionary[]`, `messages` for `messages[][role]`.
pub fn base_name(name: &str) -> &str {
    name.split('[').next().unwrap_or(name)
}

pub fn twice(field: &str) -> ApiError {
    ApiError::new(
        ErrorCode::InvalidRequest,
        format!("{field} was given more than once"),
    )
    .param(field)
}

pub fn multipart_error(error: multer::Error) -> ApiError {
    match error {
        multer::Error::FieldSizeExceeded { limit, field_name } => match field_name.as_deref() {
            Some("file") => ApiError::new(
                ErrorCode::FileTooLarge,
                format!("The audio file is larger than the limit of {limit} bytes."),
            )
            .param("file"),
            name => {
                let name = name.unwrap_or_default();
                ApiError::new(
                    ServerCode::RequestTooLarge,
                    format!("The field {name:?} is larger than the limit of {limit} bytes."),
                )
                .param(base_name(name))
            }
        },
        multer::Error::StreamSizeExceeded { limit } => ApiError::new(
            ServerCode::RequestTooLarge,
            format!("The request body is larger than the limit of {limit} bytes."),
        ),
        multer::Error::StreamReadFailed(_) => ApiError::new(
            ServerCode::InvalidMultipart,
            "The request body could not be read to its end.",
        ),
        other => ApiError::new(
            ServerCode::InvalidMultipart,
            format!("The multipart/form-data body is malformed: {other}."),
        ),
    }
}

impl Form {
    pub fn add(&mut self, kind: FieldName, value: String) -> Result<(), ApiError> {
        match kind {
            FieldName::Text(name) => {
                let bracketed = self.lists.contains_key(name)
                    || (name == "messages" && !self.message_items.is_empty())
                    || (name == "sounds_like" && !self.sound_items.is_empty());
                if self.text.insert(name, value).is_some() || bracketed {
                    return Err(twice(name));
                }
            }
            FieldName::ListItem(name) => {
                if self.text.contains_key(name) {
                    return Err(twice(name));
                }
                self.lists.entry(name).or_default().push(value);
            }
            FieldName::MessageItem(key) => {
                if self.text.contains_key("messages") {
                    return Err(twice("messages"));
                }
                if key.is_empty() || key.contains(['[', ']']) {
                    return Err(ApiError::new(
                        ErrorCode::InvalidRequest,
                        format!(
                            "messages[][{key}] is not supported: bracketed messages take \
                             messages[][role] and messages[][content] (a string); send \
                             messages as a JSON string for content parts"
                        ),
                    )
                    .param("messages"));
                }
                let index = self.message_key_counts.entry(key.clone()).or_insert(0);
                if self.message_items.len() <= *index {
                    self.message_items.push(serde_json::Map::new());
                }
                self.message_items[*index].insert(key, Value::String(value));
                *index += 1;
            }
            FieldName::SoundsLikeItem(term) => {
                if self.text.contains_key("sounds_like") {
                    return Err(twice("sounds_like"));
                }
                self.sound_items.push((term, value));
            }
            FieldName::File | FieldName::Unknown => {}
        }
        Ok(())
    }

    /// A field's text, `None` when absent or empty (an empty field means "not given").
    pub fn text(&self, name: &str) -> Option<&str> {
        self.text
            .get(name)
            .map(String::as_str)
            .filter(|t| !t.trim().is_empty())
    }

    /// The `stream` field: `true` or `false` (any case; empty or absent means false),
    /// else an `invalid_request` about `stream`.
    pub fn stream(&self) -> Result<bool, ApiError> {
        match self.text("stream").map(str::trim) {
            None => Ok(false),
            Some(value) if value.eq_ignore_ascii_case("true") => Ok(true),
            Some(value) if value.eq_ignore_ascii_case("false") => Ok(false),
            Some(value) => Err(ApiError::new(
                ErrorCode::InvalidRequest,
                format!(
                    "stream must be true or false, got {:?}",
                    value.chars().take(40).collect::<String>()
                ),
            )
            .param("stream")),
        }
    }

    /// `messages` / `languages` / `dictionary` as text for the library's parser: the
    /// field itself, or its bracketed items as a JSON array; `None` when not given.
    pub fn wire_text(&self, name: &str) -> Option<String> {
        if let Some(text) = self.text(name) {
            return Some(text.to_owned());
        }
        if name == "messages" {
            return (!self.message_items.is_empty()).then(|| {
                Value::Array(
                    self.message_items
                        .iter()
                        .cloned()
                        .map(Value::Object)
                        .collect(),
                )
                .to_string()
            });
        }
        self.lists.get(name).map(|items| json!(items).to_string())
    }

    /// `sounds_like` as text for the library's parser: the field itself, or its
    /// `sounds_like[TERM][]` items as a JSON object; `None` when not given.
    fn sounds_like_text(&self) -> Option<String> {
        if let Some(text) = self.text("sounds_like") {
            return Some(text.to_owned());
        }
        if self.sound_items.is_empty() {
            return None;
        }
        let mut object = serde_json::Map::new();
        for (term, form) in &self.sound_items {
            if let Value::Array(forms) = object
                .entry(term.clone())
                .or_insert_with(|| Value::Array(Vec::new()))
            {
                forms.push(Value::String(form.clone()));
            }
        }
        Some(Value::Object(object).to_string())
    }

    /// Validates the fields, in the contract's order, into the library's checked
    /// request (audio probed once, against `limits`; context validated once).
    pub fn into_request(mut self, limits: &AudioLimits) -> Result<TranscriptionRequest, ApiError> {
        let Some(audio) = self.file.take() else {
            return Err(ApiError::new(
                ServerCode::MissingFile,
                "The request has no `file` part: send the audio as a multipart file field \
                 named `file`.",
            )
            .param("file"));
        };
        let audio = CheckedAudio::new(audio.into(), limits)?;
        if let Some(format) = self.text("response_format")
            && format.trim() != "json"
        {
            return Err(ApiError::new(
                ServerCode::UnsupportedResponseFormat,
                format!(
                    "response_format {:?} is not supported; this server returns json \
                     ({{\"text\": ...}}) only.",
                    format.chars().take(40).collect::<String>()
                ),
            )
            .param("response_format"));
        }
        let mut messages = match self.wire_text("messages") {
            Some(text) => parse_messages(&text)?,
            None => Messages::default(),
        };
        let languages = match (self.wire_text("languages"), self.text("language")) {
            (Some(text), _) => parse_languages(&text)?,
            (None, Some(language)) => {
                parse_languages(language).map_err(|e| ApiError::invalid_field("language", e))?
            }
            (None, None) => Languages::Auto,
        };
        let mut dictionary = match self.wire_text("dictionary") {
            Some(text) => parse_dictionary(&text)?,
            None => Dictionary::default(),
        };
        if let Some(text) = self.sounds_like_text() {
            dictionary = dictionary.with_sounds_like(parse_sounds_like(&text)?)?;
        }
        if let Some(prompt) = self.text("prompt") {
            // The prompt's own limits, with errors that name it, then the limits on all
            // the messages together.
            let prompt = crate::context::validate_messages(vec![Message::user(prompt)]).map_err(
                |e| match e {
                    LibError::InvalidRequest { message, .. } => ApiError::new(
                        ErrorCode::InvalidRequest,
                        message.replacen("messages[0].content", "prompt", 1),
                    )
                    .param("prompt"),
                    other => other.into(),
                },
            )?;
            messages = messages.append(prompt)?;
        }
        Ok(TranscriptionRequest::new(
            audio, messages, languages, dictionary,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::parse_languages;

    #[test]
    fn field_names() {
        assert_eq!(classify("file"), FieldName::File);
        assert_eq!(classify("prompt"), FieldName::Text("prompt"));
        assert_eq!(classify("dictionary[]"), FieldName::ListItem("dictionary"));
        assert_eq!(
            classify("sounds_like[Dr. Nguyen][]"),
            FieldName::SoundsLikeItem("Dr. Nguyen".to_owned())
        );
        assert_eq!(classify("sounds_like[Nguyen]"), FieldName::Unknown);
        assert_eq!(classify("languages[]"), FieldName::ListItem("languages"));
        assert_eq!(
            classify("messages[][role]"),
            FieldName::MessageItem("role".to_owned())
        );
        assert_eq!(classify("timestamp_granularities[]"), FieldName::Unknown);
        assert_eq!(classify("File"), FieldName::Unknown);
    }

    /// A 0.1 s silent 16 kHz mono wav.
    fn wav() -> Vec<u8> {
        let data = vec![0u8; 3200];
        let mut bytes = Vec::new();
        bytes.extend_from_slice(b"RIFF");
        bytes.extend_from_slice(&(36 + data.len() as u32).to_le_bytes());
        bytes.extend_from_slice(b"WAVEfmt ");
        bytes.extend_from_slice(&16u32.to_le_bytes());
        bytes.extend_from_slice(&1u16.to_le_bytes());
        bytes.extend_from_slice(&1u16.to_le_bytes());
        bytes.extend_from_slice(&16_000u32.to_le_bytes());
        bytes.extend_from_slice(&32_000u32.to_le_bytes());
        bytes.extend_from_slice(&2u16.to_le_bytes());
        bytes.extend_from_slice(&16u16.to_le_bytes());
        bytes.extend_from_slice(b"data");
        bytes.extend_from_slice(&(data.len() as u32).to_le_bytes());
        bytes.extend_from_slice(&data);
        bytes
    }

    fn form(fields: &[(&str, &str)]) -> Result<Form, ApiError> {
        let mut form = Form {
            file: Some(wav()),
            ..Form::default()
        };
        for (name, value) in fields {
            form.add(classify(name), (*value).to_owned())?;
        }
        Ok(form)
    }

    fn job(fields: &[(&str, &str)]) -> Result<TranscriptionRequest, ApiError> {
        form(fields)?.into_request(&AudioLimits::default())
    }

    #[test]
    fn bracketed_messages_pair_the_nth_role_with_the_nth_content() {
        // httpx groups repeated keys: every role first, then every content.
        let grouped = job(&[
            ("messages[][role]", "system"),
            ("messages[][role]", "user"),
            ("messages[][content]", "Kubernetes notes."),
            ("messages[][content]", "kubectl apply"),
        ])
        .expect("valid");
        assert_eq!(
            grouped.messages(),
            [
                Message::system("Kubernetes notes."),
                Message::user("kubectl apply")
            ]
        );
        let interleaved = job(&[
            ("messages[][role]", "system"),
            ("messages[][content]", "Kubernetes notes."),
            ("messages[][role]", "user"),
            ("messages[][content]", "kubectl apply"),
        ])
        .expect("valid");
        assert_eq!(interleaved.messages(), grouped.messages());

        let error = job(&[
            ("messages[][role]", "assistant"),
            ("messages[][content]", "x"),
        ])
        .expect_err("assistant");
        assert_eq!(
            (error.code.as_str(), error.param.as_deref()),
            ("invalid_request", Some("messages"))
        );
        let error = form(&[("messages[][content][][type]", "text")]).expect_err("nested");
        assert_eq!(error.param.as_deref(), Some("messages"));
    }

    #[test]
    fn list_items_and_openai_fields() {
        let job = job(&[
            ("dictionary[]", "kubectl"),
            ("dictionary[]", "Grafana"),
            ("languages[]", "de"),
            ("languages[]", "en"),
            ("prompt", "Previously: the cluster."),
            ("model", "whisper-1"),
            ("temperature", "0.2"),
            ("response_format", "json"),
        ])
        .expect("valid");
        assert_eq!(job.dictionary().terms(), ["kubectl", "Grafana"]);
        assert_eq!(*job.languages(), parse_languages("de,en").expect("valid"));
        assert_eq!(job.messages(), [Message::user("Previously: the cluster.")]);
    }

    #[test]
    fn sounds_like_items_as_openai_sdks_send_them() {
        let request = job(&[
            ("dictionary[]", "Nguyen"),
            ("dictionary[]", "Dr. Müller"),
            ("sounds_like[Nguyen][]", "win"),
            ("sounds_like[Dr. Müller][]", "doctor mueller"),
            ("sounds_like[Nguyen][]", "nuh win"),
        ])
        .expect("valid");
        let sounds_like = request.dictionary().sounds_like();
        assert_eq!(sounds_like.forms("Nguyen"), ["win", "nuh win"]);
        assert_eq!(sounds_like.forms("Dr. Müller"), ["doctor mueller"]);
        for fields in [
            &[("dictionary", "Nguyen"), ("sounds_like[Nguyen][]", "w1n")][..],
            &[("dictionary", "Nguyen"), ("sounds_like[Nguyn][]", "win")][..],
            &[
                ("dictionary", "Nguyen"),
                ("sounds_like", r#"{"Nguyen": ["win"]}"#),
                ("sounds_like[Nguyen][]", "win"),
            ][..],
            &[
                ("dictionary", "Nguyen"),
                ("sounds_like[Nguyen][]", "win"),
                ("sounds_like", r#"{"Nguyen": ["win"]}"#),
            ][..],
        ] {
            let error = job(fields).expect_err("invalid");
            assert_eq!(
                (error.code.as_str(), error.param.as_deref()),
                ("invalid_request", Some("sounds_like")),
                "{fields:?}"
            );
        }
    }

    #[test]
    fn language_is_used_only_without_languages() {
        let only = job(&[("language", "de")]).expect("valid");
        assert_eq!(*only.languages(), parse_languages("de").expect("valid"));
        let both = job(&[("language", "de"), ("languages", "[\"fr\",\"it\"]")]).expect("valid");
        assert_eq!(*both.languages(), parse_languages("fr,it").expect("valid"));
        let empty = job(&[("languages", " "), ("language", "de")]).expect("valid");
        assert_eq!(*empty.languages(), parse_languages("de").expect("valid"));
        let error = job(&[("language", "klingon")]).expect_err("unknown");
        assert_eq!(
            (error.code.as_str(), error.param.as_deref()),
            ("invalid_request", Some("language"))
        );
        assert_eq!(
            job(&[("language", ""), ("response_format", " ")])
                .expect("empty = absent")
                .languages(),
            &Languages::Auto
        );
    }

    #[test]
    fn prompt_errors_name_the_prompt() {
        let long = "a".repeat(crate::context::MAX_MESSAGE_BYTES + 1);
        let error = job(&[("prompt", &long)]).expect_err("too long");
        assert_eq!(error.param.as_deref(), Some("prompt"));
        assert!(error.message.starts_with("prompt is"), "{}", error.message);
    }

    #[test]
    fn fields_given_twice_are_invalid() {
        for fields in [
            &[("dictionary", "a"), ("dictionary", "b")][..],
            &[("dictionary", "a"), ("dictionary[]", "b")][..],
            &[("dictionary[]", "a"), ("dictionary", "b")][..],
            &[("messages", "[]"), ("messages[][role]", "user")][..],
            &[("messages[][role]", "user"), ("messages", "[]")][..],
        ] {
            let error = form(fields).expect_err("twice");
            assert_eq!(error.code, "invalid_request", "{fields:?}");
            assert!(
                error.message.contains("more than once"),
                "{}",
                error.message
            );
        }
    }

    #[test]
    fn checks_run_in_the_contract_order() {
        let error = Form::default()
            .into_request(&AudioLimits::default())
            .expect_err("no file");
        assert_eq!(
            (error.code.as_str(), error.param.as_deref()),
            ("missing_file", Some("file"))
        );

        let mut text_file = form(&[("response_format", "srt"), ("languages", "xx")]).expect("form");
        text_file.file = Some(b"hello".to_vec());
        let error = text_file
            .into_request(&AudioLimits::default())
            .expect_err("not audio");
        assert_eq!(error.code, "unsupported_audio_type");

        let error = job(&[("response_format", "srt"), ("languages", "xx")]).expect_err("format");
        assert_eq!(
            (error.code.as_str(), error.param.as_deref()),
            ("unsupported_response_format", Some("response_format"))
        );
        let error = job(&[("languages", "xx"), ("dictionary", "[1]")]).expect_err("languages");
        assert_eq!(error.param.as_deref(), Some("languages"));
    }

    #[test]
    fn stream_is_true_or_false() {
        for (value, expected) in [
            ("true", true),
            (" TRUE ", true),
            ("false", false),
            ("", false),
        ] {
            let fields = form(&[("stream", value)]).expect("form");
            assert_eq!(fields.stream().expect(value), expected, "{value:?}");
        }
        assert!(!Form::default().stream().expect("absent"));
        let error = form(&[("stream", "1")])
            .expect("form")
            .stream()
            .expect_err("not a boolean");
        assert_eq!(
            (error.code.as_str(), error.param.as_deref()),
            ("invalid_request", Some("stream"))
        );
        let error = form(&[("stream", "true"), ("stream", "true")]).expect_err("twice");
        assert_eq!(error.param.as_deref(), Some("stream"));
    }
}
