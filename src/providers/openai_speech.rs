//! An OpenAI-compatible speech endpoint: `POST {base}/v1/audio/transcriptions`,
//! multipart with `file` (16-bit PCM WAV, 16 kHz mono), `model`, `prompt` (the rendered
//! context prompt), `language` (when exactly one is allowed) and
//! `response_format=json`; the answer's `text` is the transcript.
//!
//! Works with OpenAI, speaches, whisper.cpp's server, vLLM and another ctxscribe server.

use reqwest::RequestBuilder;
use reqwest::multipart::{Form, Part};

use super::http::{self, Endpoint};
use super::{EndpointConfig, SpeechProvider};
use crate::audio::TARGET_SAMPLE_RATE;
use crate::context::{Language, Languages};
use crate::engine::{EngineOutput, EngineRequest};
use crate::error::{Error, Result};

/// A remote speech-to-text endpoint.
#[derive(Debug, Clone)]
pub struct OpenAiSpeech {
    endpoint: Endpoint,
}

impl OpenAiSpeech {
    /// A provider for `config` (no request is made yet).
    ///
    /// # Errors
    /// [`Error::ModelUnavailable`] when the HTTP client cannot be created.
    pub fn new(config: EndpointConfig) -> Result<Self> {
        let endpoint = Endpoint::new(config, "audio/transcriptions", "speech provider")?;
        Ok(OpenAiSpeech { endpoint })
    }
}

impl SpeechProvider for OpenAiSpeech {
    fn transcribe(&self, request: &EngineRequest<'_>) -> Result<EngineOutput> {
        let decoded_secs = request.samples.len() as f64 / f64::from(TARGET_SAMPLE_RATE);
        let wav = wav_16bit(request.samples);
        let prompt = request.prompt.to_owned();
        let language = match request.languages {
            Languages::One(language) => Some(*language),
            Languages::Auto | Languages::AnyOf(_) => None,
        };
        let model = self.endpoint.config.model.clone();
        let with_form = move |post: RequestBuilder| {
            let mut form = Form::new()
                .part(
                    "file",
                    Part::bytes(wav.clone())
                        .file_name("audio.wav")
                        .mime_str("audio/wav")
                        .unwrap_or_else(|_| Part::bytes(wav.clone()).file_name("audio.wav")),
                )
                .text("model", model.clone())
                .text("response_format", "json");
            if !prompt.is_empty() {
                form = form.text("prompt", prompt.clone());
            }
            if let Some(language) = language {
                form = form.text("language", language.code());
            }
            post.multipart(form)
        };
        let body = self.endpoint.post(request.stop, with_form)?;
        let (text, answered) = parse_answer(&body).map_err(|cause| self.endpoint.error(cause))?;
        let detected = answered.filter(|l| request.languages.allows(*l));
        let language = match request.languages {
            Languages::One(language) => Some(*language),
            _ => detected,
        };
        Ok(EngineOutput {
            language: if text.is_empty() { None } else { language },
            text,
            decoded_secs,
            segments: Vec::new(),
        })
    }

    fn tokenize(&self, _text: &str) -> Result<Vec<i32>> {
        Err(Error::TranscriptionFailed {
            message: "a remote speech provider has no local tokenizer".into(),
            source: None,
        })
    }

    fn is_multilingual(&self) -> bool {
        true
    }
}

/// The `text` (whitespace-normalised) and `language` (a code or an English name, as
/// verbose answers give it) of a JSON answer.
fn parse_answer(body: &[u8]) -> std::result::Result<(String, Option<Language>), String> {
    let value: serde_json::Value = serde_json::from_slice(body)
        .map_err(|e| format!("malformed JSON answer ({e}): {}", http::quote(body)))?;
    let text = value
        .get("text")
        .and_then(serde_json::Value::as_str)
        .ok_or_else(|| format!("the answer has no \"text\": {}", http::quote(body)))?;
    let language = value
        .get("language")
        .and_then(serde_json::Value::as_str)
        .and_then(|l| Language::from_code(l).ok());
    Ok((
        text.split_whitespace().collect::<Vec<_>>().join(" "),
        language,
    ))
}

/// 16 kHz mono samples as a 16-bit PCM WAV file.
fn wav_16bit(samples: &[f32]) -> Vec<u8> {
    let data_len = u32::try_from(samples.len() * 2).unwrap_or(u32::MAX - 36);
    let mut wav = Vec::with_capacity(44 + samples.len() * 2);
    wav.extend_from_slice(b"RIFF");
    wav.extend_from_slice(&(36 + data_len).to_le_bytes());
    wav.extend_from_slice(b"WAVEfmt ");
    wav.extend_from_slice(&16u32.to_le_bytes());
    wav.extend_from_slice(&1u16.to_le_bytes()); // PCM
    wav.extend_from_slice(&1u16.to_le_bytes()); // mono
    wav.extend_from_slice(&TARGET_SAMPLE_RATE.to_le_bytes());
    wav.extend_from_slice(&(TARGET_SAMPLE_RATE * 2).to_le_bytes());
    wav.extend_from_slice(&2u16.to_le_bytes());
    wav.extend_from_slice(&16u16.to_le_bytes());
    wav.extend_from_slice(b"data");
    wav.extend_from_slice(&data_len.to_le_bytes());
    for &sample in samples {
        let value = (sample.clamp(-1.0, 1.0) * f32::from(i16::MAX)).round() as i16;
        wav.extend_from_slice(&value.to_le_bytes());
    }
    wav
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_parsed_or_named_malformed() {
        let (text, language) =
            parse_answer(br#"{"text":"  hello   world ","language":"english"}"#).expect("valid");
        assert_eq!(text, "hello world");
        assert_eq!(language.map(Language::code), Some("en"));
        assert!(parse_answer(b"{\"txt\":1}").is_err());
        let error = parse_answer(b"<html>oops").expect_err("not JSON");
        assert!(
            error.contains("malformed JSON") && error.contains("<html>oops"),
            "{error}"
        );
    }

    #[test]
    fn wav_is_a_valid_header_plus_samples() {
        let wav = wav_16bit(&[0.0, 1.0, -1.0]);
        assert_eq!(wav.len(), 44 + 6);
        assert_eq!(&wav[..4], b"RIFF");
        assert_eq!(&wav[44..], &[0, 0, 0xff, 0x7f, 0x01, 0x80]);
    }
}
