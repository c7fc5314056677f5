//! Speech providers and the optional LLM corrector.
//!
//! [`SpeechProvider`] turns 16 kHz mono samples into text. Two implement it: the
//! embedded whisper.cpp engine ([`WhisperEngine`], the default) and, with the `remote`
//! feature (on by default), [`openai_speech::OpenAiSpeech`], any OpenAI-compatible
//! `POST {base}/v1/audio/transcriptions` endpoint (OpenAI, speaches, whisper.cpp's
//! server, vLLM, another ctxscribe server). Term mining, the prompt, correction and its
//! guards run in [`crate::ContextTranscriber`] for both.
//!
//! [`chat_llm::ChatLlm`] is the optional correction step through an OpenAI-compatible
//! chat-completions endpoint; what it proposes is checked by
//! `correction::llm::review`.
//!
//! The HTTP clients are async (reqwest); the blocking transcription path runs them on a
//! lazily created, process-wide Tokio runtime, which also keeps their
//! pooled connections alive between calls.

use std::fmt;
use std::time::Duration;

use crate::context::{ContextTerms, Language, Message};
use crate::correction::llm::{LlmReview, review};
use crate::engine::{
    BiasStrength, EngineOutput, EngineRequest, EngineSession, SegmentWatcher, Stop, TermBias,
    WhisperEngine, WindowDone, WindowPasses,
};
use crate::error::Result;

#[cfg(feature = "remote")]
pub mod chat_llm;
#[cfg(feature = "remote")]
mod http;
#[cfg(feature = "remote")]
pub mod openai_speech;

/// Something that transcribes one signal: the embedded engine or a remote endpoint.
pub trait SpeechProvider: Send + Sync + fmt::Debug {
    /// Transcribes `request.samples` (16 kHz mono), conditioned on `request.prompt`.
    ///
    /// # Errors
    /// [`crate::Error::TranscriptionFailed`] when the provider fails (with the cause,
    /// never a secret); [`crate::Error::Cancelled`] or
    /// [`crate::Error::DeadlineExceeded`] when `request.stop` says so.
    fn transcribe(&self, request: &EngineRequest<'_>) -> Result<EngineOutput>;

    /// A transcription of `request.samples` that the caller pulls window by window, each
    /// with more passes over it. By default the whole signal is one window and each
    /// further pass is another [`SpeechProvider::transcribe`] call.
    ///
    /// # Errors
    /// As [`SpeechProvider::transcribe`].
    fn session<'a>(&'a self, request: &EngineRequest<'a>) -> Result<Box<dyn EngineSession + 'a>> {
        Ok(Box::new(WholeSignal {
            provider: self,
            request: *request,
            plain: None,
            text: None,
            started: false,
        }))
    }

    /// Runs `work` where the provider wants its sessions driven (the embedded engine: on
    /// its own threads); by default on the calling thread.
    fn on_engine_threads(&self, work: &mut (dyn FnMut() + Send)) {
        work();
    }

    /// The provider's tokens for `text`, used to fit the prompt into its budget.
    ///
    /// # Errors
    /// When the provider cannot tokenize locally (remote providers): callers estimate.
    fn tokenize(&self, text: &str) -> Result<Vec<i32>>;

    /// True when the model may know more languages than English (a remote provider
    /// cannot tell, and says true).
    fn is_multilingual(&self) -> bool;

    /// The device a local engine runs on; `None` for remote providers.
    fn backend(&self) -> Option<crate::engine::Backend> {
        None
    }

    /// Decode-time biasing towards `terms` (written form, weight), for providers that
    /// decode locally; `None` for those that cannot bias (remote endpoints).
    fn term_bias(&self, terms: &[(String, f32)], strength: BiasStrength) -> Option<TermBias> {
        let _ = (terms, strength);
        None
    }
}

/// A provider's whole signal as one window (see [`SpeechProvider::session`]).
struct WholeSignal<'a, P: ?Sized> {
    provider: &'a P,
    request: EngineRequest<'a>,
    /// The plain transcript, once decoded.
    plain: Option<EngineOutput>,
    /// The window's final text, once accepted.
    text: Option<String>,
    started: bool,
}

impl<P: SpeechProvider + ?Sized> EngineSession for WholeSignal<'_, P> {
    fn next_window(
        &mut self,
        _watch: &mut SegmentWatcher<'_>,
    ) -> Result<Option<Box<dyn WindowPasses + '_>>> {
        if std::mem::replace(&mut self.started, true) {
            return Ok(None);
        }
        let plain = self.plain.insert(self.provider.transcribe(&self.request)?);
        if plain.text.is_empty() {
            return Ok(None);
        }
        Ok(Some(Box::new(WholeWindow {
            provider: self.provider,
            request: &self.request,
            plain,
        })))
    }

    fn accept(&mut self, text: String) -> WindowDone {
        self.text = Some(text);
        WindowDone {
            segments: self
                .plain
                .as_ref()
                .map(|plain| plain.segments.clone())
                .unwrap_or_default(),
            through_secs: self.request.samples.len() as f64
                / f64::from(crate::audio::TARGET_SAMPLE_RATE),
        }
    }

    fn finish(&mut self) -> EngineOutput {
        let plain = self.plain.take().unwrap_or_else(|| EngineOutput {
            text: String::new(),
            language: None,
            decoded_secs: 0.0,
            segments: Vec::new(),
        });
        match self.text.take() {
            Some(text) => EngineOutput { text, ..plain },
            None => plain,
        }
    }
}

/// The one window of a [`WholeSignal`] session.
struct WholeWindow<'a, P: ?Sized> {
    provider: &'a P,
    request: &'a EngineRequest<'a>,
    plain: &'a EngineOutput,
}

impl<P: SpeechProvider + ?Sized> WindowPasses for WholeWindow<'_, P> {
    fn language(&self) -> Option<Language> {
        self.plain.language
    }

    fn plain_text(&self) -> &str {
        &self.plain.text
    }

    fn decode_prompted(&mut self, prompt: &str, bias: Option<&TermBias>) -> Result<String> {
        let languages = self.plain.language.map_or_else(
            || self.request.languages.clone(),
            crate::context::Languages::One,
        );
        let request = EngineRequest {
            prompt,
            bias,
            languages: &languages,
            ..*self.request
        };
        self.provider.transcribe(&request).map(|output| output.text)
    }

    fn score(
        &mut self,
        _prompt: &str,
        _prefix: &str,
        _continuation: &str,
    ) -> Result<Option<Vec<f32>>> {
        Ok(None)
    }
}

impl SpeechProvider for WhisperEngine {
    fn transcribe(&self, request: &EngineRequest<'_>) -> Result<EngineOutput> {
        WhisperEngine::transcribe(self, request)
    }

    fn session<'a>(&'a self, request: &EngineRequest<'a>) -> Result<Box<dyn EngineSession + 'a>> {
        Ok(Box::new(WhisperEngine::session(self, request)?))
    }

    fn on_engine_threads(&self, work: &mut (dyn FnMut() + Send)) {
        WhisperEngine::on_engine_threads(self, work);
    }

    fn tokenize(&self, text: &str) -> Result<Vec<i32>> {
        WhisperEngine::tokenize(self, text)
    }

    fn is_multilingual(&self) -> bool {
        WhisperEngine::is_multilingual(self)
    }

    fn backend(&self) -> Option<crate::engine::Backend> {
        Some(WhisperEngine::backend(self).clone())
    }

    fn term_bias(&self, terms: &[(String, f32)], strength: BiasStrength) -> Option<TermBias> {
        Some(WhisperEngine::term_bias(self, terms, strength))
    }
}

/// The remote speech provider for `config`.
///
/// # Errors
/// [`crate::Error::ModelUnavailable`] when the client cannot be created, or when this build
/// has no `remote` feature.
pub fn remote_speech(config: EndpointConfig) -> Result<Box<dyn SpeechProvider>> {
    #[cfg(feature = "remote")]
    {
        Ok(Box::new(openai_speech::OpenAiSpeech::new(config)?))
    }
    #[cfg(not(feature = "remote"))]
    {
        Err(without_remote(&config))
    }
}

#[cfg(not(feature = "remote"))]
fn without_remote(config: &EndpointConfig) -> crate::Error {
    crate::Error::ModelUnavailable {
        message: format!(
            "a remote provider is configured ({}) but ctxscribe was built without the \
             `remote` feature",
            redact_url(&config.base_url)
        ),
        source: None,
    }
}

/// The optional LLM correction step: a chat model proposes, [`review`] decides.
#[derive(Debug, Clone)]
pub struct LlmCorrector {
    #[cfg(feature = "remote")]
    chat: chat_llm::ChatLlm,
    #[cfg(not(feature = "remote"))]
    never: std::convert::Infallible,
}

impl LlmCorrector {
    /// A corrector through the chat endpoint of `config`.
    ///
    /// # Errors
    /// [`crate::Error::ModelUnavailable`] when the client cannot be created, or when this build
    /// has no `remote` feature.
    pub fn new(config: EndpointConfig) -> Result<Self> {
        #[cfg(feature = "remote")]
        {
            Ok(LlmCorrector {
                chat: chat_llm::ChatLlm::new(config)?,
            })
        }
        #[cfg(not(feature = "remote"))]
        {
            Err(without_remote(&config))
        }
    }

    /// Asks the model to correct `text` and keeps what [`review`] accepts; the
    /// transcript is returned unchanged when the proposal is rejected.
    ///
    /// # Errors
    /// [`crate::Error::TranscriptionFailed`] when the endpoint fails.
    pub fn correct(
        &self,
        text: &str,
        terms: &ContextTerms,
        messages: &[Message],
        language: Option<Language>,
        stop: &Stop,
    ) -> Result<LlmReview> {
        #[cfg(feature = "remote")]
        {
            let proposal = self.chat.propose(text, terms, messages, stop)?;
            Ok(review(text, &proposal, terms, language))
        }
        #[cfg(not(feature = "remote"))]
        {
            let _ = (text, terms, messages, language, stop, review);
            match self.never {}
        }
    }
}

/// Default time allowed for one HTTP request to a provider.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// Default number of retries after a 429, a 5xx or a failed connection.
pub const DEFAULT_MAX_RETRIES: u32 = 2;

/// Where and how to reach an OpenAI-compatible endpoint.
///
/// `Debug` never shows the API key.
#[derive(Clone, PartialEq, Eq)]
pub struct EndpointConfig {
    /// Base URL, e.g. `https://api.openai.com` or `http://127.0.0.1:8000` (a trailing
    /// `/v1` is accepted too).
    pub base_url: String,
    /// Bearer token sent as `Authorization`, if any.
    pub api_key: Option<String>,
    /// The `model` field sent with every request.
    pub model: String,
    /// Time allowed for one HTTP request (connection included).
    pub timeout: Duration,
    /// Retries after a 429, a 5xx or a failed connection, with exponential backoff
    /// (`Retry-After` honoured), never past the transcription's deadline.
    pub max_retries: u32,
}

impl EndpointConfig {
    /// An endpoint with the default timeout and retries, no key.
    #[must_use]
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        EndpointConfig {
            base_url: base_url.into(),
            api_key: None,
            model: model.into(),
            timeout: DEFAULT_REQUEST_TIMEOUT,
            max_retries: DEFAULT_MAX_RETRIES,
        }
    }

    /// The same with this API key.
    #[must_use]
    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into()).filter(|k: &String| !k.is_empty());
        self
    }

    /// The same with this per-request timeout.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The same with this many retries.
    #[must_use]
    pub fn with_max_retries(mut self, retries: u32) -> Self {
        self.max_retries = retries;
        self
    }

    /// `{base}/v1/{path}`, whether or not the base already ends in `/v1`.
    #[must_use]
    pub fn url(&self, path: &str) -> String {
        let base = self.base_url.trim_end_matches('/');
        let base = base.strip_suffix("/v1").unwrap_or(base);
        format!("{base}/v1/{path}")
    }
}

impl fmt::Debug for EndpointConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EndpointConfig")
            .field("base_url", &redact_url(&self.base_url))
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("model", &self.model)
            .field("timeout", &self.timeout)
            .field("max_retries", &self.max_retries)
            .finish()
    }
}

/// `url` without credentials (`user:pass@`) and without a query string, for messages.
#[must_use]
pub fn redact_url(url: &str) -> String {
    let url = url.split(['?', '#']).next().unwrap_or_default();
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            let host = authority
                .rsplit_once('@')
                .map_or(authority, |(_, host)| host);
            format!("{scheme}://{host}{path}")
        }
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_built_and_redacted() {
        let config = EndpointConfig::new("http://user:secret@host:8000/v1/", "m")
            .with_api_key("sk-hidden-123");
        assert_eq!(
            config.url("audio/transcriptions"),
            "http://user:secret@host:8000/v1/audio/transcriptions"
        );
        let debug = format!("{config:?}");
        assert!(
            !debug.contains("secret") && !debug.contains("sk-hidden"),
            "{debug}"
        );
        assert_eq!(
            redact_url("https://a:b@api.example/v1/x?key=sk-1"),
            "https://api.example/v1/x"
        );
        assert_eq!(
            EndpointConfig::new("http://h", "m").url("chat/completions"),
            "http://h/v1/chat/completions"
        );
    }
}
