//! [`ContextTranscriber`]: the one operation of the library, audio in, transcript out.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::audio::{AudioLimits, TARGET_SAMPLE_RATE};
use crate::config;
use crate::context::TermOrigin;
use crate::context::prompt::MAX_GLOSSARY_TERMS;
use crate::context::{self, ContextLayers, ContextTerms, Dictionary, Languages, Message};
use crate::correction::judge::{
    EditSource, Verdict, candidate_edits, check_homophone_edits, judge,
};
use crate::correction::{Corrector, contains_word};
use crate::engine::{
    BiasStrength, Decoding, EngineConfig, EngineOutput, EngineRequest, TermBias, Weights,
    WhisperEngine, WindowPasses,
};
use crate::error::{Error, Result};
use crate::providers::{self, EndpointConfig, LlmCorrector, SpeechProvider};
use crate::request::{Audio, TranscriptionRequest};
use crate::transcript::{StageTimings, Transcript, align_segments};

/// Beams of the context pass's second try, after its greedy decode lost the speech.
const FALLBACK_BEAMS: usize = 3;
/// Biasing weight of a dictionary term (the caller says it matters).
const DICTIONARY_BIAS_WEIGHT: f32 = 1.0;
/// Biasing weight of a term mined from the messages (it may not be said).
const MINED_BIAS_WEIGHT: f32 = 0.8;

/// A window's text as [`ContextTranscriber::transcribe_observed`] reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WindowText<'a> {
    /// The window's plain decode so far: the segments its first (greedy,
    /// temperature-0) attempt has closed. A later attempt may still replace it.
    Decoding(&'a str),
    /// The window's final text, the context's corrections included.
    Final(&'a str),
}

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
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// The embedded engine or a remote endpoint.
    engine: Box<dyn SpeechProvider>,
    /// The optional LLM correction step.
    llm: Option<LlmCorrector>,
    limits: AudioLimits,
    timeout: Option<Duration>,
    layers: ContextLayers,
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

    /// Transcribes a request checked already ([`TranscriptionRequest`]): nothing is
    /// validated or probed again. Like [`ContextTranscriber::transcribe`] otherwise.
    ///
    /// # Errors
    /// Every failure is an [`Error`] whose [`Error::code`] is the contract code.
    pub async fn transcribe_request(&self, request: TranscriptionRequest) -> Result<Transcript> {
        let this = self.clone();
        off_the_async_threads(move || this.transcribe_request_blocking(request)).await
    }

    /// Like [`ContextTranscriber::transcribe`], on the calling thread; blocks until done.
    /// Checks the inputs ([`TranscriptionRequest::check`]), then
    /// [`ContextTranscriber::transcribe_request_blocking`].
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
        self.transcribe_request_blocking(request)
    }

    /// A checked request's transcript, on the calling thread; blocks until done.
    ///
    /// The pipeline, stage by stage: decode the audio ->
    /// the context's terms ([`ContextTerms`]) -> per window of speech, one encoding and
    /// its plain decode, then the context judge (`judge_window`) on
    /// the same encoding -> the optional LLM review -> the [`Transcript`].
    ///
    /// The context goes through the layers switched on with
    /// [`ContextTranscriberBuilder::with_context_layers`]: the terms of the dictionary and
    /// those mined from the messages; a first, unprompted decoding; spoken-to-written
    /// correction ([`Corrector`]); while a term is unwritten, a decoding of the same
    /// encoding prompted with and biased towards the terms the first one sounds like,
    /// then one prompted with the messages and all the terms; the terms they write are
    /// merged into the first transcript where it has words that sound like them
    /// ([`Corrector::merge_second_pass`]), and the second replaces it when it writes
    /// more terms and is the same transcript ([`Corrector::prefer_second_pass`]).
    ///
    /// # Errors
    /// Every failure is an [`Error`] whose [`Error::code`] is the contract code.
    pub fn transcribe_request_blocking(&self, request: TranscriptionRequest) -> Result<Transcript> {
        self.transcribe_observed(request, &mut |_: WindowText<'_>| {})
    }

    /// [`ContextTranscriber::transcribe_request_blocking`], handing `on_text` each
    /// window's text as soon as it is known (for `crate::streaming`): while a window is
    /// decoded ([`WindowText::Decoding`], requests whose context gives no terms only),
    /// and once it is final ([`WindowText::Final`]), in the engine's window order.
    pub(crate) fn transcribe_observed(
        &self,
        request: TranscriptionRequest,
        on_text: &mut (dyn FnMut(WindowText<'_>) + Send),
    ) -> Result<Transcript> {
        let TranscriptionRequest {
            audio,
            messages,
            languages,
            dictionary,
        } = request;
        let started = Instant::now();
        let deadline = self.inner.timeout.map(|t| started + t);
        let warnings = audio.warnings();
        let samples = audio.decode(&self.inner.limits)?;
        let decoded = Instant::now();
        let terms = ContextTerms::from_context(&messages, &dictionary);
        let (output, edits) =
            self.recognise(&samples, &languages, &messages, &terms, deadline, on_text)?;
        let mut text = output.text;
        // The optional LLM correction, after the phonetic one; only the edits
        // `correction::llm::review` can justify are kept.
        if let Some(llm) = &self.inner.llm
            && self.inner.layers.correction
            && !text.is_empty()
        {
            text = llm
                .correct(&text, &terms, &messages, output.language, deadline)?
                .text;
        }
        let finished = Instant::now();
        let audio_secs = samples.len() as f64 / f64::from(TARGET_SAMPLE_RATE);
        Ok(Transcript {
            segments: align_segments(&output.segments, &text, audio_secs),
            text,
            language: output.language,
            audio_secs,
            timings: StageTimings {
                decode: decoded - started,
                engine: finished - decoded,
                total: finished - started,
            },
            edits,
            warnings,
        })
    }

    /// The speech provider's transcript of `samples`, each window judged with the
    /// context's `terms` (`judge_window`) on its own encoding, and
    /// the judge's verdicts.
    fn recognise(
        &self,
        samples: &[f32],
        languages: &Languages,
        messages: &[Message],
        terms: &ContextTerms,
        deadline: Option<Instant>,
        on_text: &mut (dyn FnMut(WindowText<'_>) + Send),
    ) -> Result<(EngineOutput, Vec<Verdict>)> {
        let request = EngineRequest {
            samples,
            languages,
            prompt: "",
            deadline,
            bias: None,
        };
        let corrector = Corrector::new(terms);
        let mut verdicts = Vec::new();
        let on_text = Mutex::new(on_text);
        let tell = |text: WindowText<'_>| {
            (*on_text.lock().unwrap_or_else(PoisonError::into_inner))(text);
        };
        let mut judge = |window: &mut dyn WindowPasses| {
            let text = self.judge_window(window, messages, terms, &corrector, &mut verdicts)?;
            tell(WindowText::Final(&text));
            Ok(text)
        };
        // Without terms a window's text is its plain decode: shown while it is decoded.
        // With them, the corrections need the whole window.
        let mut watch = |text: &str| {
            if terms.is_empty() {
                tell(WindowText::Decoding(text));
            }
        };
        let output = catch_unwind(AssertUnwindSafe(|| {
            self.inner
                .engine
                .transcribe_windows_watched(&request, &mut judge, &mut watch)
        }))
        .unwrap_or_else(|_| {
            Err(Error::TranscriptionFailed {
                message: "the engine panicked".into(),
                source: None,
            })
        })?;
        Ok((output, verdicts))
    }

    /// One window's text from its plain decode and the context: candidate edits from the
    /// spoken-form matcher and from a decode of the same encoding prompted (and biased)
    /// with the context's terms, each kept only when the model's own scores of the audio
    /// support it ([`judge`]).
    fn judge_window(
        &self,
        window: &mut dyn WindowPasses,
        messages: &[Message],
        terms: &ContextTerms,
        corrector: &Corrector,
        verdicts: &mut Vec<Verdict>,
    ) -> Result<String> {
        let layers = self.inner.layers;
        let plain = window.plain_text().to_owned();
        if terms.is_empty() || plain.is_empty() {
            return Ok(plain);
        }
        if !layers.judge || !window.can_score() {
            let merged = self.merge_window(window, messages, terms, corrector)?;
            if merged == plain || !window.can_score() {
                return Ok(merged);
            }
            let prompt = self.glossary_prompt(&terms.leading(MAX_GLOSSARY_TERMS));
            let (text, mut checked) =
                check_homophone_edits(window, &plain, &merged, &prompt, corrector, terms)?;
            verdicts.append(&mut checked);
            return Ok(text);
        }
        let language = window.language();
        let glossary = terms.leading(MAX_GLOSSARY_TERMS);
        let prompt = self.glossary_prompt(&glossary);
        let bias = if layers.biasing {
            self.term_bias(&glossary)
        } else {
            None
        };
        let decode_prompt = if layers.prompt { prompt.as_str() } else { "" };
        let prompted = if decode_prompt.is_empty() && bias.is_none() {
            None
        } else {
            Some(window.decode_prompted(decode_prompt, bias.as_ref())?)
        };
        let mut edits = candidate_edits(corrector, &plain, prompted.as_deref(), language);
        if !layers.correction {
            edits.retain(|edit| edit.source == EditSource::Prompted);
        }
        let (text, mut judged) = judge(window, &plain, &edits, &prompt, corrector, terms)?;
        verdicts.append(&mut judged);
        Ok(text)
    }

    /// The judge's context prompt: `glossary` (the leading terms) rendered as a prompt.
    fn glossary_prompt(&self, glossary: &ContextTerms) -> String {
        context::prompt::render_prompt(&[], glossary, &|text: &str| self.count_tokens(text))
    }

    fn count_tokens(&self, text: &str) -> usize {
        self.inner
            .engine
            .tokenize(text)
            .map_or_else(|_| context::prompt::estimate_tokens(text), |t| t.len())
    }

    /// The default pipeline (the judge switched off): spoken-form correction of the
    /// plain decode, then two more decodes of the same encoding, each a source of terms:
    /// one prompted with and biased towards the terms, those the plain text sounds like
    /// first ([`Self::term_pass`]), one prompted with the whole context as a user would
    /// prompt Whisper ([`Self::context_pass`]). Each runs only while a term is unwritten.
    fn merge_window(
        &self,
        window: &mut dyn WindowPasses,
        messages: &[Message],
        terms: &ContextTerms,
        corrector: &Corrector,
    ) -> Result<String> {
        let layers = self.inner.layers;
        let language = window.language();
        let finish = |text: &str| {
            if layers.correction && !terms.is_empty() {
                corrector.correct(text, language).text
            } else {
                text.to_owned()
            }
        };
        let first = window.plain_text().to_owned();
        let mut text = finish(&first);
        let all_written = |text: &str| {
            terms
                .terms()
                .iter()
                .all(|term| contains_word(text, term.text()))
        };
        if !(layers.prompt || layers.biasing) || first.is_empty() {
            return Ok(text);
        }
        if !all_written(&text) {
            text = self.term_pass(window, terms, corrector, &first, &text, &finish)?;
        }
        if layers.prompt && !all_written(&text) {
            text = self.context_pass(window, messages, terms, corrector, &text, &finish)?;
        }
        Ok(text)
    }

    /// A decode prompted with the terms: those the plain transcript `first` sounds like
    /// by spelling rules ([`Corrector::relevant_terms`]), then the leading ones, as many
    /// as a glossary lists ([`MAX_GLOSSARY_TERMS`]); biased towards them too when the
    /// glossary holds every term. Not only the
    /// sound-alike ones: a name that is not said as it is spelled ("Qian") or a product
    /// respelled from a word ("Snyk") is rarely relevant by its spelling, while the
    /// decoder, told the terms and hearing the audio, writes it. The terms it writes are
    /// merged into `text` only where `text` has words that sound like them
    /// ([`Corrector::merge_second_pass`]): the decoder may write a term it was told
    /// about, and the merge keeps out one the audio did not say.
    fn term_pass(
        &self,
        window: &mut dyn WindowPasses,
        terms: &ContextTerms,
        corrector: &Corrector,
        first: &str,
        text: &str,
        finish: &dyn Fn(&str) -> String,
    ) -> Result<String> {
        let layers = self.inner.layers;
        let mut indices = corrector.relevant_terms(first);
        indices.truncate(MAX_GLOSSARY_TERMS);
        for index in 0..terms.len() {
            if indices.len() >= MAX_GLOSSARY_TERMS {
                break;
            }
            if !indices.contains(&index) {
                indices.push(index);
            }
        }
        let glossary = terms.picked(&indices);
        let unwritten = glossary
            .terms()
            .iter()
            .any(|t| !contains_word(text, t.text()));
        if !unwritten {
            return Ok(text.to_owned());
        }
        let count_tokens = |text: &str| self.count_tokens(text);
        let prompt = if layers.prompt {
            context::prompt::render_prompt(&[], &glossary, &count_tokens)
        } else {
            String::new()
        };
        // Biased only towards a glossary of every term. A longer list's glossary is chosen
        // by what the plain transcript sounds like (`relevant_terms`): a bias towards the
        // terms chosen that way counts that sound a second time, and the merge's sound
        // check a third ("Tarathin" for "tear a thin" came out "tarr, thin" with 1000
        // unrelated terms). The prompt still names them.
        let bias = if layers.biasing && terms.len() <= MAX_GLOSSARY_TERMS {
            self.term_bias(&glossary)
        } else {
            None
        };
        let mut second = finish(&window.decode_prompted(&prompt, bias.as_ref())?);
        if bias.is_some() && !prompt.is_empty() && !keeps_the_speech(text, &second) {
            // Prompt and bias together can tip Whisper into copying the prompt
            // ("Datadog, Opsgenie." for a ten-word sentence): the prompt alone usually
            // still spells the terms.
            second = finish(&window.decode_prompted(&prompt, None)?);
        }
        Ok(if keeps_the_speech(text, &second) {
            corrector.merge_second_pass(text, &second, &indices)
        } else {
            text.to_owned()
        })
    }

    /// A decode prompted with the whole context (the messages and the terms, no bias):
    /// the terms it writes are merged into `text`, or it replaces `text` when it writes
    /// more terms and is the same transcript ([`Corrector::prefer_second_pass`]).
    fn context_pass(
        &self,
        window: &mut dyn WindowPasses,
        messages: &[Message],
        terms: &ContextTerms,
        corrector: &Corrector,
        text: &str,
        finish: &dyn Fn(&str) -> String,
    ) -> Result<String> {
        let glossary = terms.leading(MAX_GLOSSARY_TERMS);
        let count_tokens = |text: &str| self.count_tokens(text);
        let prompt = context::prompt::render_prompt(messages, &glossary, &count_tokens);
        let mut second = finish(&window.decode_prompted(&prompt, None)?);
        if !keeps_the_speech(text, &second) || corrector.glues_words(text, &second) {
            // Greedy decoding prompted with a list of names tends to copy the list
            // ("Xiaoqing, Zhiwei, Jiaqi." for a sentence about them), and with a list
            // of identifiers to glue words ("WillAndFunWillHandleLeonCoralRotation");
            // the beams keep other continuations alive. Only these failures pay for them.
            second = finish(&window.decode_prompted_beams(&prompt, FALLBACK_BEAMS)?);
        }
        if !keeps_the_speech(text, &second) {
            return Ok(text.to_owned());
        }
        let all: Vec<usize> = (0..terms.len()).collect();
        let merged = corrector.merge_second_pass(text, &second, &all);
        Ok(corrector.prefer_second_pass(&merged, &second))
    }

    /// The decode-time bias towards `terms`' written forms, weighted by origin (`None`
    /// when the speech provider cannot bias).
    fn term_bias(&self, terms: &ContextTerms) -> Option<TermBias> {
        let weighted: Vec<(String, f32)> = terms
            .terms()
            .iter()
            .flat_map(|term| {
                let weight = match term.origin() {
                    TermOrigin::Dictionary => DICTIONARY_BIAS_WEIGHT,
                    TermOrigin::Messages => MINED_BIAS_WEIGHT,
                };
                term.written_forms()
                    .into_iter()
                    .map(move |form| (form, weight))
            })
            .collect();
        self.inner
            .engine
            .term_bias(&weighted, BiasStrength::default())
    }

    /// True when the loaded model knows more languages than English.
    #[must_use]
    pub fn is_multilingual(&self) -> bool {
        self.inner.engine.is_multilingual()
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

/// True when the prompted transcript `second` still holds about as much speech as the
/// unprompted `first`, counted in letters and digits: a prompt can make Whisper write
/// the term and drop the rest of the sentence ("Alert, scope today the dog, and the
/// uncall uses our genius." became "Datadog."), which writes more terms but loses the
/// speech. Letters, not words: a term glues several misheard words into one ("jolly
/// and broken" -> "Anjali, Rohan").
fn keeps_the_speech(first: &str, second: &str) -> bool {
    let letters = |text: &str| text.chars().filter(|c| c.is_alphanumeric()).count();
    letters(second) * SECOND_PASS_MIN_LETTERS_DEN >= letters(first) * SECOND_PASS_MIN_LETTERS_NUM
}

/// The prompted transcript must keep at least this fraction (numerator / denominator)
/// of the unprompted one's letters.
const SECOND_PASS_MIN_LETTERS_NUM: usize = 3;
const SECOND_PASS_MIN_LETTERS_DEN: usize = 5;

/// Builds a [`ContextTranscriber`]; every setting has a default.
#[derive(Debug, Clone, Default)]
#[must_use]
pub struct ContextTranscriberBuilder {
    model_path: Option<PathBuf>,
    vad: VadSetting,
    threads: Option<usize>,
    decoding: Decoding,
    weights: Option<Weights>,
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

    /// The model's matrices in memory: [`Weights::Fastest`] (bf16 where the CPU
    /// multiplies it natively) or [`Weights::AsStored`]. Default: `$CTXSCRIBE_WEIGHTS`
    /// (`as-stored`), else [`Weights::Fastest`].
    pub fn with_weights(mut self, weights: Weights) -> Self {
        self.weights = Some(weights);
        self
    }

    /// Limits on upload size and decoded duration.
    pub fn with_audio_limits(mut self, limits: AudioLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Gives up on a transcription after this long (`transcription_failed`). Default: none.
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
                inner: Arc::new(Inner {
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
        })?;
        Ok(ContextTranscriber {
            inner: Arc::new(Inner {
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
    fn a_second_pass_that_copies_the_prompt_does_not_keep_the_speech() {
        let first = "Alert, scope today the dog, and the uncall uses our genius.";
        assert!(!keeps_the_speech(first, "Datadog, Opsgenie."));
        assert!(keeps_the_speech(
            first,
            "Alert, scope Datadog, and the uncall uses Opsgenie."
        ));
        // Several misheard words glued into the terms are not lost speech.
        assert!(keeps_the_speech(
            "Big and jolly and broken about the Q4 road map.",
            "Being Anjali, Rohan about Q4 roadmap."
        ));
        assert!(keeps_the_speech("", ""));
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
