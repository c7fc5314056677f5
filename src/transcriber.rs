//! [`ContextTranscriber`]: the one operation of the library, audio in, transcript out.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::audio::AudioLimits;
use crate::config;
use crate::context::{ContextLayers, Dictionary, Languages, Message};
use crate::engine::{Backend, Decoding, Device, EngineConfig, Weights, WhisperEngine};
use crate::error::{Error, Result};
use crate::pipeline::{Pipeline, RunOptions, TranscriptStream};
use crate::providers::{self, EndpointConfig, LlmCorrector};
use crate::request::{Audio, TranscriptionRequest};
use crate::transcript::Transcript;

/// Transcribes audio files, helped by chat-style context and a dictionary of terms.
///
/// Load it once and share it: it is `Clone` (an `Arc` inside), `Send` and `Sync`; the model
/// is loaded once and every clone and thread uses it, each call with its own decoder state.
///
/// ```no_run
/// use ctxscribe::{ContextTranscriber, Dictionary, Languages};
/// # fn main() -> ctxscribe::Result<()> {
/// let transcriber = ContextTranscriber::builder().with_threads(2).build()?;
/// let audio = std::fs::read("note.webm").expect("readable file");
/// let transcript = transcriber.transcribe_blocking(
///     audio.into(),
///     vec![],
///     Languages::Auto,
///     Dictionary::from_terms(["kubectl"])?,
/// )?;
/// println!("{}", transcript.text);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct ContextTranscriber {
    inner: Arc<Pipeline>,
}

impl ContextTranscriber {
    /// A builder with the defaults: the installed multilingual base model (or
    /// `$CTXSCRIBE_MODEL`), all cores, greedy decoding, the default [`AudioLimits`].
    pub fn builder() -> ContextTranscriberBuilder {
        ContextTranscriberBuilder::default()
    }

    /// Transcribes `audio`, helped by `messages` and `dictionary`, in one of `languages`.
    ///
    /// The CPU-heavy work runs off the async threads (on Tokio's blocking pool inside a
    /// Tokio runtime, else on a thread of its own).
    ///
    /// # Errors
    /// Every failure is an [`Error`] whose [`Error::code`] is the contract code.
    pub async fn transcribe(
        &self,
        audio: Audio,
        messages: Vec<Message>,
        languages: Languages,
        dictionary: Dictionary,
    ) -> Result<Transcript> {
        let this = self.clone();
        off_the_async_threads(move || {
            this.transcribe_blocking(audio, messages, languages, dictionary)
        })
        .await
    }

    /// Like [`ContextTranscriber::transcribe`], on the calling thread; blocks until done.
    /// Checks the inputs ([`TranscriptionRequest::check`]), then
    /// [`ContextTranscriber::run`].
    ///
    /// # Errors
    /// Every failure is an [`Error`] whose [`Error::code`] is the contract code.
    pub fn transcribe_blocking(
        &self,
        audio: Audio,
        messages: Vec<Message>,
        languages: Languages,
        dictionary: Dictionary,
    ) -> Result<Transcript> {
        let request = TranscriptionRequest::check(
            audio,
            messages,
            languages,
            dictionary,
            &self.inner.limits,
        )?;
        self.run(request, RunOptions::new())
    }

    /// Checks the inputs against this transcriber's limits ([`TranscriptionRequest::check`]):
    /// a request for [`ContextTranscriber::run`] or [`ContextTranscriber::stream`].
    ///
    /// # Errors
    /// The contract's client errors (`invalid_request`, `unsupported_audio_type`, ...).
    pub fn request(
        &self,
        audio: Audio,
        messages: Vec<Message>,
        languages: Languages,
        dictionary: Dictionary,
    ) -> Result<TranscriptionRequest> {
        TranscriptionRequest::check(audio, messages, languages, dictionary, &self.inner.limits)
    }

    /// A checked request's transcript, on the calling thread; blocks until done. The one
    /// entry point every other form goes through: `options` carries the run's cancel
    /// token, time limit and event sink (see [`crate::pipeline`] for the stages and the
    /// events).
    ///
    /// # Errors
    /// Every failure is an [`Error`] whose [`Error::code`] is the contract code;
    /// [`Error::Cancelled`] once the token is cancelled, [`Error::DeadlineExceeded`] once
    /// the time limit passes, [`Error::TranscriptionFailed`] when the event sink panics.
    pub fn run(
        &self,
        request: TranscriptionRequest,
        options: RunOptions<'_>,
    ) -> Result<Transcript> {
        self.inner.run(request, options)
    }

    /// The events of a run of `request` as an iterator, the run on a thread of its own:
    /// deltas, segments and progress, then [`crate::Event::Done`] with the transcript (or
    /// one error). The options' cancel token and time limit apply; their event sink, if
    /// any, gets every event too, on the run's thread. Dropping the stream stops the run.
    ///
    /// ```no_run
    /// use ctxscribe::{CancelToken, ContextTranscriber, Dictionary, Event, Languages, RunOptions};
    /// # fn main() -> ctxscribe::Result<()> {
    /// let transcriber = ContextTranscriber::builder().build()?;
    /// let audio = std::fs::read("note.webm").expect("readable file");
    /// let request =
    ///     transcriber.request(audio.into(), vec![], Languages::Auto, Dictionary::default())?;
    /// let options = RunOptions::new().with_cancel(CancelToken::new());
    /// for event in transcriber.stream(request, options) {
    ///     match event? {
    ///         Event::Delta(text) => print!("{text}"),
    ///         Event::Done(transcript) => println!("\n{} s of audio", transcript.audio_secs),
    ///         _ => {}
    ///     }
    /// }
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn stream(
        &self,
        request: TranscriptionRequest,
        options: RunOptions<'static>,
    ) -> TranscriptStream {
        TranscriptStream::start(Arc::clone(&self.inner), request, options)
    }

    /// True when the loaded model knows more languages than English.
    #[must_use]
    pub fn is_multilingual(&self) -> bool {
        self.inner.engine.is_multilingual()
    }

    /// The device the embedded engine runs on (CPU or a GPU, with the reason a GPU was
    /// not used); `None` with a remote speech provider.
    #[must_use]
    pub fn backend(&self) -> Option<Backend> {
        self.inner.engine.backend()
    }

    /// The limits applied to every input.
    #[must_use]
    pub fn audio_limits(&self) -> &AudioLimits {
        &self.inner.limits
    }
}

/// Runs `work` off the async threads (on Tokio's blocking pool inside a Tokio runtime,
/// else on a thread of its own) and waits for its result.
async fn off_the_async_threads(
    work: impl FnOnce() -> Result<Transcript> + Send + 'static,
) -> Result<Transcript> {
    let (sender, receiver) = tokio::sync::oneshot::channel();
    let job = move || {
        let _ = sender.send(work());
    };
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => drop(handle.spawn_blocking(job)),
        Err(_) => drop(std::thread::spawn(job)),
    }
    receiver.await.unwrap_or_else(|_| {
        Err(Error::TranscriptionFailed {
            message: "the transcription worker stopped unexpectedly".into(),
            source: None,
        })
    })
}

/// Builds a [`ContextTranscriber`]; every setting has a default.
#[derive(Debug, Clone, Default)]
#[must_use]
pub struct ContextTranscriberBuilder {
    model_path: Option<PathBuf>,
    vad: VadSetting,
    threads: Option<usize>,
    decoding: Decoding,
    weights: Option<Weights>,
    device: Option<Device>,
    limits: AudioLimits,
    timeout: Option<Duration>,
    layers: ContextLayers,
    speech: SpeechSetting,
    llm: LlmSetting,
}

#[derive(Debug, Clone, Default)]
enum SpeechSetting {
    /// `$CTXSCRIBE_ASR_URL` if set, else the embedded engine.
    #[default]
    Default,
    Embedded,
    Remote(EndpointConfig),
}

#[derive(Debug, Clone, Default)]
enum LlmSetting {
    /// `$CTXSCRIBE_LLM_URL` if set, else none.
    #[default]
    Default,
    Off,
    Remote(EndpointConfig),
}

#[derive(Debug, Clone, Default)]
enum VadSetting {
    #[default]
    Default,
    Path(PathBuf),
    Off,
}

impl ContextTranscriberBuilder {
    /// Uses this whisper.cpp ggml/gguf model file (any size, e.g. an official
    /// `ggml-large-v3-turbo.bin`), or the model `ctxscribe models fetch` installed under
    /// this name (`tiny.en`). Default: `$CTXSCRIBE_MODEL`, else the converted
    /// multilingual base in `$CTXSCRIBE_MODEL_DIR` or `~/.local/share/ctxscribe/models`
    /// (see [`crate::config::resolve_model_path`]).
    pub fn with_model_path(mut self, path: impl Into<PathBuf>) -> Self {
        self.model_path = Some(path.into());
        self
    }

    /// Uses this Silero VAD model (whisper.cpp ggml format) to skip non-speech.
    /// Default: `$CTXSCRIBE_VAD_MODEL`, else the one installed next to the model.
    pub fn with_vad_model_path(mut self, path: impl Into<PathBuf>) -> Self {
        self.vad = VadSetting::Path(path.into());
        self
    }

    /// Turns voice activity detection off: the whole signal is decoded, only digital
    /// silence is skipped.
    pub fn without_vad(mut self) -> Self {
        self.vad = VadSetting::Off;
        self
    }

    /// Engine threads per transcription, 1 to [`config::MAX_THREADS`] (checked by
    /// [`Self::build`]). Default: `$CTXSCRIBE_THREADS`, else all cores.
    pub fn with_threads(mut self, threads: usize) -> Self {
        self.threads = Some(threads);
        self
    }

    /// Greedy (default) or beam-search decoding, 1 to [`config::MAX_BEAM_SIZE`] beams
    /// (checked by [`Self::build`]).
    pub fn with_decoding(mut self, decoding: Decoding) -> Self {
        self.decoding = decoding;
        self
    }

    /// The model's matrices in memory: [`Weights::Unquantized`] (bf16 where the CPU
    /// multiplies it natively), [`Weights::Fastest`] (and 8-bit decoder matrices) or
    /// [`Weights::AsStored`]. Default: `$CTXSCRIBE_WEIGHTS` (`fastest`, `as-stored`),
    /// else [`Weights::Unquantized`].
    pub fn with_weights(mut self, weights: Weights) -> Self {
        self.weights = Some(weights);
        self
    }

    /// Where the engine runs: [`Device::Auto`] (the first GPU of a backend this build
    /// includes, else the CPU), [`Device::Cpu`] or [`Device::Gpu`] (an error when there is
    /// none). Default: `$CTXSCRIBE_DEVICE`, else [`Device::Auto`].
    pub fn with_device(mut self, device: Device) -> Self {
        self.device = Some(device);
        self
    }

    /// Limits on upload size and decoded duration.
    pub fn with_audio_limits(mut self, limits: AudioLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Gives up on a transcription after this long ([`Error::DeadlineExceeded`]; a run's
    /// own [`RunOptions::with_timeout`] may be shorter). Default: none.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Which context layers run (prompt, post-correction, decode-time biasing).
    /// Default: [`ContextLayers::DEFAULT`] (prompt, correction, biasing; not yet the judge);
    /// switch layers on or off to measure what each contributes.
    pub fn with_context_layers(mut self, layers: ContextLayers) -> Self {
        self.layers = layers;
        self
    }

    /// Transcribes through an OpenAI-compatible speech endpoint
    /// (`POST {base}/v1/audio/transcriptions`) instead of the embedded engine; the
    /// context layers still run here. Default: `$CTXSCRIBE_ASR_URL` (see [`config`]) if
    /// set, else the embedded engine. Needs the `remote` feature (on by default).
    pub fn with_remote_speech(mut self, endpoint: EndpointConfig) -> Self {
        self.speech = SpeechSetting::Remote(endpoint);
        self
    }

    /// Uses the embedded engine even when `$CTXSCRIBE_ASR_URL` is set.
    pub fn with_embedded_speech(mut self) -> Self {
        self.speech = SpeechSetting::Embedded;
        self
    }

    /// Adds an LLM correction step through an OpenAI-compatible chat endpoint
    /// (`POST {base}/v1/chat/completions`): it proposes, and only edits that map a span
    /// to a term it sounds like or fix spelling are kept (see `correction::llm`).
    /// An endpoint failure fails the transcription (`transcription_failed`). Default:
    /// `$CTXSCRIBE_LLM_URL` if set, else none. Needs the `remote` feature.
    pub fn with_llm_correction(mut self, endpoint: EndpointConfig) -> Self {
        self.llm = LlmSetting::Remote(endpoint);
        self
    }

    /// No LLM correction step, even when `$CTXSCRIBE_LLM_URL` is set.
    pub fn without_llm_correction(mut self) -> Self {
        self.llm = LlmSetting::Off;
        self
    }

    /// Loads the model (or sets up the remote speech provider, which loads none).
    ///
    /// # Errors
    /// [`Error::InvalidRequest`] for threads or beams out of range ([`config::check_threads`],
    /// [`config::check_beam_size`]).
    /// [`Error::ModelUnavailable`] when the model (or the configured VAD model) is missing
    /// or cannot be loaded; the message names the setup command. The same when a remote
    /// provider is configured in a build without the `remote` feature.
    pub fn build(self) -> Result<ContextTranscriber> {
        let threads = match self.threads {
            Some(threads) => config::check_threads(i64::try_from(threads).unwrap_or(i64::MAX))?,
            None => config::default_threads(),
        };
        if let Decoding::BeamSearch { beam_size } = self.decoding {
            config::check_beam_size(beam_size.into())?;
        }
        let llm = match self.llm {
            LlmSetting::Default => config::llm_correction_from_env(),
            LlmSetting::Off => None,
            LlmSetting::Remote(endpoint) => Some(endpoint),
        }
        .map(LlmCorrector::new)
        .transpose()?;
        let remote = match &self.speech {
            SpeechSetting::Default => config::remote_speech_from_env(),
            SpeechSetting::Embedded => None,
            SpeechSetting::Remote(endpoint) => Some(endpoint.clone()),
        };
        if let Some(endpoint) = remote {
            return Ok(ContextTranscriber {
                inner: Arc::new(Pipeline {
                    engine: providers::remote_speech(endpoint)?,
                    llm,
                    limits: self.limits,
                    timeout: self.timeout,
                    layers: self.layers,
                }),
            });
        }
        let model_path = config::resolve_model_path(self.model_path)?;
        let vad_model_path = match self.vad {
            VadSetting::Default => config::default_vad_model_path(&model_path),
            VadSetting::Path(path) => Some(path),
            VadSetting::Off => None,
        };
        let engine = WhisperEngine::load(&EngineConfig {
            model_path,
            vad_model_path,
            threads,
            decoding: self.decoding,
            weights: self.weights.unwrap_or_else(config::default_weights),
            device: match self.device {
                Some(device) => device,
                None => config::default_device()?,
            },
        })?;
        Ok(ContextTranscriber {
            inner: Arc::new(Pipeline {
                engine: Box::new(engine),
                llm,
                limits: self.limits,
                timeout: self.timeout,
                layers: self.layers,
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transcriber_is_shareable() {
        fn assert_shareable<T: Clone + Send + Sync + 'static>() {}
        assert_shareable::<ContextTranscriber>();
    }

    #[test]
    fn missing_model_names_the_setup_command() {
        let error = ContextTranscriber::builder()
            .with_model_path("/nonexistent/ggml-model.bin")
            .build()
            .expect_err("no such model");
        assert_eq!(error.code(), "model_unavailable");
        assert!(error.to_string().contains("make setup"), "{error}");
        assert!(
            error.to_string().contains("`ctxscribe models fetch`"),
            "{error}"
        );
    }
}
