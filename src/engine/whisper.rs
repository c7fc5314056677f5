//! The whisper.cpp binding (through whisper-rs). The only module of the core crate with
//! `unsafe`: the abort callback that enforces a request's deadline and the logits filter
//! callback that applies decode-time biasing ([`super::biasing`]).

use std::collections::HashMap;
use std::ffi::c_void;
use std::ops::Range;
use std::panic::AssertUnwindSafe;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use whisper_rs::{
    FullParams, SamplingStrategy, WhisperContext, WhisperContextParameters, WhisperState,
    WhisperVadContext, WhisperVadContextParams, WhisperVadParams,
};

use super::biasing::{BiasPhrase, BiasStrength, TermBias};
use super::bpe::BpeVocabulary;
use super::language_guess::LanguageGuess;
use super::pool::Pool;
use super::windows::{self, Window};
use super::{Decoding, EngineConfig, EngineOutput, EngineRequest};
use crate::audio::TARGET_SAMPLE_RATE;
use crate::config::SETUP_COMMAND;
use crate::context::{Language, Languages};
use crate::error::{Error, Result};

/// Vocabulary size of the large-v3 models, the first with a 100th language (`yue`).
const VOCAB_WITH_CANTONESE: i32 = 51_866;
/// Whisper's prompt budget: at most this many tokens of previous text count.
const MAX_PROMPT_TOKENS: usize = 223;
/// The language is detected from the whole first window when it is at most this long
/// (seconds), else from its first [`DETECTION_SECS`]. The whole window's encoder pass is
/// the one its decode makes, so detection can share it (see [`super::language_guess`]);
/// longer windows share it less often (whisper.cpp encodes them twice more often), and
/// then a second encoder pass over the whole window costs much more than one over 5 s.
const MAX_SHARED_DETECTION_SECS: f64 = 20.0;
/// Seconds at the start of a longer first window that language detection listens to:
/// on the real clips (11 languages) 5 s gave the same languages as 10 s.
const DETECTION_SECS: f64 = 5.0;

/// The embedded Whisper engine: the model, loaded once, and pools of per-call state.
pub struct WhisperEngine {
    context: WhisperContext,
    multilingual: bool,
    /// Language tokens the model has: 99, or 100 for large-v3 models (which add `yue`).
    language_count: usize,
    vad_model_path: Option<String>,
    vad_contexts: Pool<WhisperVadContext>,
    states: Pool<WhisperState>,
    /// Decoding parameters per language, see [`WhisperEngine::base_params`].
    params_by_language: Mutex<HashMap<Language, LanguageParams>>,
    /// The language to decode with before detecting it (see [`super::language_guess`]).
    language_guess: Mutex<LanguageGuess>,
    /// The threads every call runs on (see [`WhisperEngine::transcribe`]).
    engine_threads: rayon_core::ThreadPool,
    threads: usize,
    decoding: Decoding,
    model_description: String,
    /// The text tokens' bytes, for the canonical (BPE) tokenization of bias terms.
    bpe: BpeVocabulary,
}

impl std::fmt::Debug for WhisperEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WhisperEngine")
            .field("model", &self.model_description)
            .field("multilingual", &self.multilingual)
            .field("vad", &self.vad_model_path.is_some())
            .field("threads", &self.threads)
            .field("engine_threads", &self.engine_threads.current_num_threads())
            .field("decoding", &self.decoding)
            .finish_non_exhaustive()
    }
}

impl WhisperEngine {
    /// Loads the model (and checks the VAD model) named by `config`.
    ///
    /// # Errors
    /// [`Error::ModelUnavailable`] when a file is missing or not a loadable model.
    pub fn load(config: &EngineConfig) -> Result<Self> {
        whisper_rs::install_logging_hooks();
        let model_path = &config.model_path;
        if !model_path.is_file() {
            return Err(Error::ModelUnavailable {
                message: format!(
                    "model file {} not found; run `{SETUP_COMMAND}` to install the default \
                     model, or point CTXSCRIBE_MODEL at a whisper.cpp ggml/gguf file",
                    model_path.display()
                ),
                source: None,
            });
        }
        let mut context_params = WhisperContextParameters::default();
        context_params.use_gpu(false);
        // Flash attention stays off: on this CPU it was no faster and raised WER on short
        // clips (5 s clips: WER 0.355 vs 0.113, measured with `make bench`).
        context_params.flash_attn(false);
        let context = WhisperContext::new_with_params(model_path, context_params).map_err(|e| {
            Error::ModelUnavailable {
                message: format!(
                    "{} is not a loadable whisper.cpp model ({e})",
                    model_path.display()
                ),
                source: Some(Box::new(e)),
            }
        })?;
        let vad_model_path = match &config.vad_model_path {
            None => None,
            Some(path) => {
                let text = path.to_str().filter(|p| !p.contains('\0')).ok_or_else(|| {
                    Error::ModelUnavailable {
                        message: format!("VAD model path {} is not valid UTF-8", path.display()),
                        source: None,
                    }
                })?;
                if !path.is_file() {
                    return Err(Error::ModelUnavailable {
                        message: format!(
                            "VAD model {} not found; run `{SETUP_COMMAND}` or unset \
                             CTXSCRIBE_VAD_MODEL",
                            path.display()
                        ),
                        source: None,
                    });
                }
                Some(text.to_owned())
            }
        };
        let bpe = BpeVocabulary::new((0..context.token_eot()).filter_map(|id| {
            let bytes = context.token_to_bytes(id).ok()?;
            Some((bytes.to_vec(), id))
        }));
        let threads = config.threads.max(1);
        let engine_threads = engine_threads(threads)?;
        let engine = WhisperEngine {
            engine_threads,
            bpe,
            multilingual: context.is_multilingual(),
            language_count: if context.n_vocab() >= VOCAB_WITH_CANTONESE {
                100
            } else {
                99
            },
            model_description: format!(
                "{} ({} text layers, {})",
                model_path.display(),
                context.model_n_text_layer(),
                if context.is_multilingual() {
                    "multilingual"
                } else {
                    "English-only"
                }
            ),
            context,
            vad_model_path,
            vad_contexts: Pool::new(),
            states: Pool::new(),
            params_by_language: Mutex::new(HashMap::new()),
            language_guess: Mutex::new(LanguageGuess::default()),
            threads,
            decoding: config.decoding,
        };
        // Load the VAD once now so that a broken file fails at start-up, not per request.
        if engine.vad_model_path.is_some() {
            let vad = engine.new_vad_context()?;
            engine.vad_contexts.give_back(vad);
        }
        Ok(engine)
    }

    /// True when the model knows more languages than English.
    #[must_use]
    pub fn is_multilingual(&self) -> bool {
        self.multilingual
    }

    /// True when a VAD model is loaded.
    #[must_use]
    pub fn has_vad(&self) -> bool {
        self.vad_model_path.is_some()
    }

    /// Threads used per transcription.
    #[must_use]
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Tokenizes `text` with the model's vocabulary (whisper.cpp's greedy tokenizer).
    ///
    /// # Errors
    /// [`Error::InvalidRequest`] for text the tokenizer rejects (e.g. NUL bytes).
    pub fn tokenize(&self, text: &str) -> Result<Vec<i32>> {
        if text.is_empty() {
            return Ok(Vec::new());
        }
        // Every token covers at least one byte, so len + 1 slots always suffice (whisper-rs
        // mishandles the "buffer too small" return value, so it must never happen).
        self.context
            .tokenize(text, text.len() + 1)
            .map_err(|e| Error::invalid("prompt", format!("cannot tokenize context: {e}")))
    }

    /// The decoder tokens that write `text`: Whisper's canonical BPE tokenization (what
    /// the model learned to write), or `None` when the vocabulary cannot spell it.
    #[must_use]
    pub fn bpe_tokens(&self, text: &str) -> Option<Vec<i32>> {
        self.bpe.encode(text)
    }

    /// The decode-time bias towards `terms` (written form, weight), with each form's
    /// canonical tokenization and whisper.cpp's greedy one (the decoder writes either).
    #[must_use]
    pub fn term_bias(&self, terms: &[(String, f32)], strength: BiasStrength) -> TermBias {
        let phrases: Vec<BiasPhrase> = terms
            .iter()
            .map(|(text, weight)| {
                let mut tokenizations = Vec::with_capacity(2);
                for tokens in [self.bpe.encode(text), self.tokenize(text).ok()]
                    .into_iter()
                    .flatten()
                {
                    if !tokenizations.contains(&tokens) {
                        tokenizations.push(tokens);
                    }
                }
                BiasPhrase {
                    text: text.clone(),
                    tokenizations,
                    weight: *weight,
                }
            })
            .collect();
        TermBias::new(&phrases, strength)
    }

    /// Transcribes one 16 kHz mono signal.
    ///
    /// # Errors
    /// [`Error::TranscriptionFailed`] when whisper.cpp fails or the deadline passes;
    /// [`Error::InvalidRequest`] when `languages` cannot be served by this model.
    pub fn transcribe(&self, request: &EngineRequest<'_>) -> Result<EngineOutput> {
        // On one of the engine's own threads, whatever thread calls: see
        // `engine_threads`. The caller blocks until it is done; calls beyond the number
        // of engine threads wait their turn.
        self.engine_threads
            .install(|| self.transcribe_on_engine_thread(request))
    }

    fn transcribe_on_engine_thread(&self, request: &EngineRequest<'_>) -> Result<EngineOutput> {
        let samples = request.samples;
        let no_speech = EngineOutput {
            text: String::new(),
            language: None,
            decoded_secs: 0.0,
        };
        let forced = self.forced_language(request.languages)?;
        if windows::is_digital_silence(samples) {
            return Ok(no_speech);
        }
        let regions = self.speech_regions(samples)?;
        let plan = windows::plan_windows(samples, &regions);
        if plan.is_empty() {
            return Ok(no_speech);
        }

        let mut state = self.states.take_or(|| self.new_state())?;
        let result = self.transcribe_windows(&mut state, samples, &plan, forced, request);
        // A state is reusable after any outcome: whisper_full resets it at the start.
        self.states.give_back(state);
        result
    }

    fn transcribe_windows(
        &self,
        state: &mut WhisperState,
        samples: &[f32],
        plan: &[Window],
        forced: Option<Language>,
        request: &EngineRequest<'_>,
    ) -> Result<EngineOutput> {
        let context_tokens = self.tokenize(request.prompt)?;
        // Every window gets the same prompt: the context's, never the previous window's
        // text. Windows start and end at pauses, so that text adds little, and prompted
        // with it Whisper dropped the last 20 s of a 60 s file (WER 0.262, 0.079 without).
        let prompt = context_prompt(&context_tokens);
        let mode_for = |samples: usize| {
            WindowMode::for_window(samples, request.trim_encoder, !prompt.is_empty())
        };
        let mut language = forced;
        let mut texts: Vec<String> = Vec::with_capacity(plan.len());
        let mut decoded_samples = 0usize;
        for window in plan {
            check_deadline(request.deadline)?;
            let audio = window.render(samples);
            decoded_samples += audio.len();
            let mode = mode_for(audio.len());
            let (decoded, window_language) = match language {
                Some(language) => (
                    self.decode_window(state, &audio, language, prompt, mode, request, None)?,
                    language,
                ),
                None => self.decode_detecting_language(state, &audio, prompt, mode, request)?,
            };
            language = Some(window_language);
            let mut speech_end = decoded.speech_end;
            if !decoded.text.is_empty() {
                texts.push(decoded.text);
            }
            // Whisper sometimes ends a timed window early: after "Why should one halt on
            // the way?" it wrote the end of the text and left the 2.8 s after it, "Your
            // power is sufficient, I said.", undecoded (the full 30 s context did the
            // same). Windows end 0.25 s after the VAD's last speech, so a longer rest
            // holds speech: it is decoded as a window of its own.
            let min_tail = windows::secs_to_samples(MIN_UNDECODED_TAIL_SECS);
            for _ in 0..MAX_CONTINUATIONS {
                let Some(end) =
                    speech_end.filter(|&end| audio.len().saturating_sub(end) >= min_tail)
                else {
                    break;
                };
                let rest = &audio[end..];
                let decoded = self.decode_window(
                    state,
                    rest,
                    window_language,
                    prompt,
                    mode_for(rest.len()),
                    request,
                    None,
                )?;
                speech_end = decoded.speech_end.map(|rest_end| end + rest_end);
                if !decoded.text.is_empty() {
                    texts.push(decoded.text);
                }
            }
        }
        let text = normalise_whitespace(&texts.join(" "));
        Ok(EngineOutput {
            language: if text.is_empty() { None } else { language },
            text,
            decoded_secs: decoded_samples as f64 / f64::from(TARGET_SAMPLE_RATE),
        })
    }

    /// The language fixed by the request or the model, if any; errors for requests this
    /// model cannot serve (a non-English language on an English-only model).
    fn forced_language(&self, languages: &Languages) -> Result<Option<Language>> {
        let english = Language::from_code("en")?;
        let count = self.language_count;
        let none_available = match languages {
            Languages::Auto => false,
            Languages::One(language) => !language.available_in(count),
            Languages::AnyOf(set) => set.iter().all(|language| !language.available_in(count)),
        };
        if none_available {
            return Err(Error::invalid(
                "languages",
                "the loaded model knows none of the requested languages",
            ));
        }
        if self.multilingual {
            return Ok(match languages {
                Languages::One(language) => Some(*language),
                Languages::AnyOf(set) if set.len() == 1 => set.first().copied(),
                _ => None,
            });
        }
        if languages.allows(english) {
            Ok(Some(english))
        } else {
            Err(Error::invalid(
                "languages",
                "the loaded model is English-only; it cannot transcribe the requested languages",
            ))
        }
    }

    /// Decodes the request's first window and detects its language, from one encoder
    /// pass when the first guess is right (see [`super::language_guess`]).
    ///
    /// A first window of up to [`MAX_SHARED_DETECTION_SECS`] is decoded with a guess:
    /// the language detected last, while that guess is usually right, else the language
    /// of the window's first [`DETECTION_SECS`] (a cheaper encoder pass). The language is
    /// then detected from that decode's own encoder pass, and the window is decoded
    /// again only when the guess was wrong. The language therefore always comes from the
    /// window's first encoder pass at the window's context, and the text is always
    /// decoded in it: the guess changes the cost, never the result. A longer first
    /// window takes the language of its first [`DETECTION_SECS`].
    fn decode_detecting_language(
        &self,
        state: &mut WhisperState,
        audio: &[f32],
        prompt: &[i32],
        mode: WindowMode,
        request: &EngineRequest<'_>,
    ) -> Result<(DecodedWindow, Language)> {
        let languages = request.languages;
        let start = &audio[..windows::secs_to_samples(DETECTION_SECS).min(audio.len())];
        let start_ctx =
            WindowMode::for_window(start.len(), request.trim_encoder, !prompt.is_empty())
                .encoder_ctx;
        let (candidate, history_guess) = {
            let guess = lock_ignoring_poison(&self.language_guess);
            (guess.candidate(languages), guess.guess(languages))
        };
        if audio.len() > windows::secs_to_samples(MAX_SHARED_DETECTION_SECS) {
            let best = self.best_language(state, start, start_ctx, languages)?;
            let detected = self.settle_language(state, start, start_ctx, best, languages)?;
            lock_ignoring_poison(&self.language_guess).record(candidate, detected);
            let decoded =
                self.decode_window(state, audio, detected, prompt, mode, request, None)?;
            return Ok((decoded, detected));
        }
        let guess = match history_guess {
            Some(language) => language,
            None => self.best_language(state, start, start_ctx, languages)?.0,
        };
        // A decode in the wrong language can loop until Whisper's token limit and retry
        // at every fallback temperature (English clips decoded as Chinese took up to
        // 4.6 s instead of 0.2 s); the guessed decode stops at its budget instead.
        let budget = guessed_decode_budget(audio.len());
        let decoded =
            self.decode_window(state, audio, guess, prompt, mode, request, Some(budget))?;
        // With one encoder pass (a decode stopped over budget stops after it), the state
        // still holds the whole window's encoding from its start, at its context.
        let best = if decoded.encoder_passes == 1 {
            self.best_language_of_encoding(state, languages)?
        } else {
            self.best_language(state, audio, mode.encoder_ctx, languages)?
        };
        let detected = self.settle_language(state, audio, mode.encoder_ctx, best, languages)?;
        lock_ignoring_poison(&self.language_guess).record(candidate, detected);
        if guess == detected && !decoded.over_budget {
            return Ok((decoded, detected));
        }
        let decoded = self.decode_window(state, audio, detected, prompt, mode, request, None)?;
        Ok((decoded, detected))
    }

    /// The detected language, given the best allowed language and its probability on
    /// an encoder context of `encoder_ctx` frames. A trimmed context is less sure of
    /// itself: when the probability is under [`MIN_TRIMMED_DETECTION_PROBABILITY`],
    /// detection runs again over the full 30 s (an espeak-ng German clip allowed to be
    /// German or English came out as English, at 0.05, on trimmed contexts; context dev
    /// set d21).
    fn settle_language(
        &self,
        state: &mut WhisperState,
        audio: &[f32],
        encoder_ctx: i32,
        (language, probability): (Language, f32),
        languages: &Languages,
    ) -> Result<Language> {
        if encoder_ctx == FULL_ENCODER_CTX || probability >= MIN_TRIMMED_DETECTION_PROBABILITY {
            return Ok(language);
        }
        self.best_language(state, audio, FULL_ENCODER_CTX, languages)
            .map(|(language, _)| language)
    }

    /// The most probable allowed language of `audio` with the encoder over `encoder_ctx`
    /// frames, and its probability: one encoder pass, then
    /// [`WhisperEngine::best_language_of_encoding`].
    fn best_language(
        &self,
        state: &mut WhisperState,
        audio: &[f32],
        encoder_ctx: i32,
        languages: &Languages,
    ) -> Result<(Language, f32)> {
        // The encoder runs on the state's spectrogram with the state's encoder context
        // (audio_ctx), and only `whisper_full` sets them. This call sets both for `audio`
        // and stops before its own encoder pass; the pass below is then exactly the first
        // one a `whisper_full` call on `audio` makes, whatever the state did before.
        let mut params = self.base_params(Language::from_code("en")?);
        params.set_audio_ctx(encoder_ctx);
        // SAFETY: `stop_before_encoding` ignores its arguments and returns false; it
        // needs no user data.
        unsafe {
            params.set_start_encoder_callback(Some(stop_before_encoding));
        }
        state
            .full(params, audio)
            .map_err(|e| detection_failed("spectrogram", e))?;
        state
            .encode(0, self.threads)
            .map_err(|e| detection_failed("encoder", e))?;
        self.best_language_of_encoding(state, languages)
    }

    /// The most probable allowed language of the encoder output the state holds, and
    /// its probability among the model's languages: Whisper's detection, one decoder
    /// step on the start-of-transcript token (what whisper.cpp's detection does after
    /// its own encoder pass).
    fn best_language_of_encoding(
        &self,
        state: &mut WhisperState,
        languages: &Languages,
    ) -> Result<(Language, f32)> {
        state
            .decode(&[self.context.token_sot()], 0, self.threads)
            .map_err(|e| detection_failed("decoder", e))?;
        let logits = state
            .get_logits()
            .map_err(|e| detection_failed("logits", e))?;
        let language_logits: Vec<(Language, f32)> = (0..self.language_count)
            .filter_map(|index| {
                let id = i32::try_from(index).ok()?;
                let language = Language::from_whisper_id(id)?;
                let token = usize::try_from(self.context.token_lang(id)).ok()?;
                Some((language, *logits.get(token)?))
            })
            .collect();
        let max = language_logits
            .iter()
            .map(|(_, logit)| *logit)
            .fold(f32::NEG_INFINITY, f32::max);
        let total: f32 = language_logits
            .iter()
            .map(|(_, logit)| (logit - max).exp())
            .sum();
        language_logits
            .iter()
            .filter(|(language, _)| languages.allows(*language))
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map(|&(language, logit)| (language, (logit - max).exp() / total))
            .ok_or_else(|| Error::TranscriptionFailed {
                message: "language detection returned no allowed language".into(),
                source: None,
            })
    }

    /// The decoding parameters for `language`, built once per language and cloned per
    /// window: whisper-rs leaks the C string of every `set_language` call, so building them
    /// per call would leak a little memory per window in a long-running server.
    fn base_params(&self, language: Language) -> FullParams<'static, 'static> {
        let mut cache = lock_ignoring_poison(&self.params_by_language);
        let entry = cache.entry(language).or_insert_with(|| {
            let strategy = match self.decoding {
                Decoding::Greedy => SamplingStrategy::Greedy { best_of: 1 },
                Decoding::BeamSearch { beam_size } => SamplingStrategy::BeamSearch {
                    beam_size: i32::from(beam_size.max(1)),
                    patience: -1.0,
                },
            };
            let mut params = FullParams::new(strategy);
            params.set_n_threads(i32::try_from(self.threads).unwrap_or(1));
            params.set_language(Some(language.code()));
            params.set_translate(false);
            params.set_no_context(true);
            // Untimed, one segment; `decode_window` switches timestamps on per window
            // (see `WindowMode`), the language-detection decode stays untimed.
            params.set_no_timestamps(true);
            params.set_single_segment(true);
            params.set_print_special(false);
            params.set_print_progress(false);
            params.set_print_realtime(false);
            params.set_print_timestamps(false);
            params.set_suppress_blank(true);
            params.set_suppress_nst(true);
            LanguageParams(params)
        });
        entry.0.clone()
    }

    /// Decodes one window in `language`. With `max_graph_runs`, whisper.cpp is stopped
    /// after that many encoder and decoder runs, and the window comes back empty and
    /// marked [`DecodedWindow::over_budget`].
    #[allow(clippy::too_many_arguments)]
    fn decode_window(
        &self,
        state: &mut WhisperState,
        audio: &[f32],
        language: Language,
        prompt: &[i32],
        mode: WindowMode,
        request: &EngineRequest<'_>,
        max_graph_runs: Option<usize>,
    ) -> Result<DecodedWindow> {
        let deadline = request.deadline;
        let mut params = self.base_params(language);
        let encoder_passes = AtomicUsize::new(0);
        // SAFETY: `count_encoder_pass` only increments the `AtomicUsize` behind the
        // pointer, which lives on this stack frame until after `state.full` returns (the
        // params, and with them the pointer, are consumed by that call).
        unsafe {
            params.set_start_encoder_callback(Some(count_encoder_pass));
            params.set_start_encoder_callback_user_data(
                std::ptr::from_ref(&encoder_passes)
                    .cast_mut()
                    .cast::<c_void>(),
            );
        }
        params.set_tokens(prompt);
        params.set_audio_ctx(mode.encoder_ctx);
        params.set_no_timestamps(!mode.timestamps);
        params.set_single_segment(!mode.timestamps);
        let bias = request
            .bias
            .filter(|bias| !bias.is_empty())
            .map(|bias| BiasCallbackData {
                bias,
                vocabulary: &self.bpe,
                n_vocab: usize::try_from(self.context.n_vocab()).unwrap_or(0),
            });
        if let Some(bias) = &bias {
            // SAFETY: `apply_bias` only reads the `BiasCallbackData` behind the pointer
            // (immutable, shared safely by decoders on several threads) and writes the
            // `n_vocab` logits whisper.cpp hands it. The data lives on this stack frame
            // until after `state.full` returns, and the params (with the pointer) are
            // consumed by that call.
            unsafe {
                params.set_filter_logits_callback(Some(apply_bias));
                params.set_filter_logits_callback_user_data(
                    std::ptr::from_ref(bias).cast_mut().cast::<c_void>(),
                );
            }
        }
        let limits = RunLimits {
            deadline,
            max_graph_runs: max_graph_runs.unwrap_or(usize::MAX),
            graph_runs: AtomicUsize::new(0),
        };
        // SAFETY: `abort_past_limits` only reads the `RunLimits` behind the pointer and
        // increments its atomic counter; it lives on this stack frame until after
        // `state.full` returns (the params, and with them the pointer, are consumed by
        // that call).
        unsafe {
            params.set_abort_callback(Some(abort_past_limits));
            params.set_abort_callback_user_data(
                std::ptr::from_ref(&limits).cast_mut().cast::<c_void>(),
            );
        }
        let outcome = state.full(params, audio);
        let past_deadline = deadline.is_some_and(|d| Instant::now() >= d);
        if outcome.is_err() && !past_deadline && limits.over_budget() {
            return Ok(DecodedWindow {
                text: String::new(),
                encoder_passes: encoder_passes.load(Ordering::Relaxed),
                over_budget: true,
                speech_end: None,
            });
        }
        outcome.map_err(|e| {
            if past_deadline {
                Error::TranscriptionFailed {
                    message: "transcription timed out".into(),
                    source: Some(Box::new(e)),
                }
            } else {
                Error::TranscriptionFailed {
                    message: format!("whisper.cpp failed: {e}"),
                    source: Some(Box::new(e)),
                }
            }
        })?;
        let mut text = String::new();
        let mut speech_end = None;
        for segment in state.as_iter() {
            // Timed decoding can write past the speech: a segment that starts in the
            // trailing pad is not speech.
            if mode.timestamps && starts_in_trailing_pad(segment.start_timestamp(), audio.len()) {
                continue;
            }
            let piece = segment
                .to_str_lossy()
                .map_err(|e| Error::TranscriptionFailed {
                    message: format!("cannot read segment text: {e}"),
                    source: Some(Box::new(e)),
                })?;
            if !is_non_speech_annotation(&piece) {
                text.push_str(&piece);
                text.push(' ');
                if mode.timestamps {
                    let end = centis_to_samples(segment.end_timestamp() as f32);
                    speech_end = Some(end.min(audio.len()));
                }
            }
        }
        Ok(DecodedWindow {
            text: normalise_whitespace(&text),
            encoder_passes: encoder_passes.load(Ordering::Relaxed),
            over_budget: false,
            speech_end,
        })
    }

    /// Speech regions in samples: from the VAD when loaded, else the whole signal.
    fn speech_regions(&self, samples: &[f32]) -> Result<Vec<Range<usize>>> {
        if self.vad_model_path.is_none() {
            return Ok(std::iter::once(0..samples.len()).collect());
        }
        let mut vad = self.vad_contexts.take_or(|| self.new_vad_context())?;
        let params = WhisperVadParams::default();
        let result = vad.segments_from_samples(params, samples);
        let regions = result.map(|segments| {
            segments
                .map(|segment| {
                    // whisper.cpp reports VAD segments in centiseconds.
                    let start = centis_to_samples(segment.start);
                    let end = centis_to_samples(segment.end).min(samples.len());
                    start..end
                })
                .filter(|r| r.start < r.end)
                .collect::<Vec<_>>()
        });
        self.vad_contexts.give_back(vad);
        regions.map_err(|e| Error::TranscriptionFailed {
            message: format!("voice activity detection failed: {e}"),
            source: Some(Box::new(e)),
        })
    }

    fn new_state(&self) -> Result<WhisperState> {
        self.context
            .create_state()
            .map_err(|e| Error::TranscriptionFailed {
                message: format!("cannot allocate decoder state: {e}"),
                source: Some(Box::new(e)),
            })
    }

    fn new_vad_context(&self) -> Result<WhisperVadContext> {
        let path = self.vad_model_path.as_deref().unwrap_or_default();
        let mut params = WhisperVadContextParams::default();
        params.set_n_threads(1);
        params.set_use_gpu(false);
        WhisperVadContext::new(path, params).map_err(|e| Error::ModelUnavailable {
            message: format!("{path} is not a loadable Silero VAD model ({e})"),
            source: Some(Box::new(e)),
        })
    }
}

/// Encoder and decoder runs a guessed-language decode of a window of `samples` samples
/// may take: [`BASE_GUESSED_DECODE_RUNS`] plus [`GUESSED_DECODE_RUNS_PER_SEC`] per second
/// of audio.
fn guessed_decode_budget(samples: usize) -> usize {
    let secs = samples as f64 / f64::from(TARGET_SAMPLE_RATE);
    // Truncation intended: a small positive count.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let per_sec = (secs * GUESSED_DECODE_RUNS_PER_SEC).ceil() as usize;
    BASE_GUESSED_DECODE_RUNS + per_sec
}

/// The engine's threads: as many as the cores hold calls of `threads_per_call` threads,
/// at least one. whisper.cpp's CPU backend runs each computation as an OpenMP parallel
/// region, and libgomp gives every thread that starts one a team of worker threads of
/// its own. Called from many threads (a server's blocking pool, Python or C thread
/// pools), the process soon has more OpenMP threads than cores, and then libgomp stops
/// spinning between regions: every decoder step waited for its worker to wake up (jfk
/// took 0.29 s from the first calling thread, 0.44 s from a second one). Running every
/// call on these few long-lived threads keeps the OpenMP threads within the cores.
fn engine_threads(threads_per_call: usize) -> Result<rayon_core::ThreadPool> {
    rayon_core::ThreadPoolBuilder::new()
        .num_threads(crate::config::concurrent_calls(threads_per_call))
        .thread_name(|index| format!("ctxscribe-engine-{index}"))
        .build()
        .map_err(|e| Error::TranscriptionFailed {
            message: format!("cannot start the engine threads: {e}"),
            source: Some(Box::new(e)),
        })
}

/// One decoded window.
struct DecodedWindow {
    /// The window's text, whitespace-normalised.
    text: String,
    /// Encoder passes `whisper_full` made: more than one when it moved on through the
    /// window after a segment that ended early.
    encoder_passes: usize,
    /// Stopped after its budget of encoder and decoder runs (the text is empty).
    over_budget: bool,
    /// Where the last timed segment of text ends, in samples of the window (`None`
    /// without timestamps or text).
    speech_end: Option<usize>,
}

/// What the abort callback checks while whisper.cpp runs one window.
struct RunLimits {
    deadline: Option<Instant>,
    /// Encoder and decoder runs allowed (`usize::MAX`: no limit).
    max_graph_runs: usize,
    /// Encoder and decoder runs so far (whisper.cpp calls the abort callback after each).
    graph_runs: AtomicUsize,
}

impl RunLimits {
    fn over_budget(&self) -> bool {
        self.graph_runs.load(Ordering::Relaxed) > self.max_graph_runs
    }
}

fn detection_failed(what: &str, error: whisper_rs::WhisperError) -> Error {
    Error::TranscriptionFailed {
        message: format!("language detection failed: {what}: {error}"),
        source: Some(Box::new(error)),
    }
}

fn lock_ignoring_poison<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// Encoder and decoder runs per second of audio a guessed-language decode may take, on
/// top of [`BASE_GUESSED_DECODE_RUNS`]. Decodes in the right language took at most 18
/// runs on the real clips (a 1.35 s clip) and at most 7.5 per second on clips over 3 s
/// (real clips and the speed bench's joined clips).
const GUESSED_DECODE_RUNS_PER_SEC: f64 = 8.0;
/// Encoder and decoder runs any guessed-language decode may take.
const BASE_GUESSED_DECODE_RUNS: usize = 24;

/// A timed window whose text ends at least this long (seconds) before the window does is
/// decoded on from there (the window's last 0.25 s are the VAD's pad after the speech).
const MIN_UNDECODED_TAIL_SECS: f64 = 1.0;
/// Times a window is decoded on after an early end.
const MAX_CONTINUATIONS: usize = 2;

/// Probability a language detected on a trimmed encoder context needs; below it,
/// detection runs again over the full 30 s.
const MIN_TRIMMED_DETECTION_PROBABILITY: f32 = 0.5;

/// `audio_ctx` value meaning the model's full context (30 s).
const FULL_ENCODER_CTX: i32 = 0;
/// Encoder frames per second of audio (Whisper: 1500 frames for 30 s).
const ENCODER_FRAMES_PER_SEC: usize = 50;
/// Encoder frames of Whisper's full 30 s window.
const FULL_WINDOW_FRAMES: usize = 1500;
/// Encoder frames added after the window's own length (1.28 s).
const ENCODER_CTX_MARGIN: usize = 64;
/// Shortest trimmed encoder context (5.12 s): on shorter contexts Whisper repeated or
/// dropped one-word clips (real clips, no context: WER 0.154 with no minimum, 0.135 with
/// this one, as with the full context).
const MIN_TRIMMED_ENCODER_CTX: usize = 256;
/// A trimmed encoder context is rounded up to a multiple of this.
const ENCODER_CTX_BLOCK: usize = 32;

/// How one window is decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct WindowMode {
    /// whisper.cpp's `audio_ctx` (encoder frames), [`FULL_ENCODER_CTX`] for 30 s.
    encoder_ctx: i32,
    /// Decode with timestamp tokens (several segments per window).
    timestamps: bool,
}

impl WindowMode {
    /// The mode of a window of `samples` samples, decoded with a context prompt or not.
    ///
    /// - Without a prompt, the decoder writes timestamps, as Whisper was trained to
    ///   decode long audio: with a single untimed segment it ended early on windows of
    ///   several sentences and dropped whole sentences (joined 10 s clips: WER 0.186,
    ///   against faster-whisper's 0.078).
    /// - With a context prompt it writes one untimed segment: timestamps let the biased,
    ///   prompted pass turn "numbers" into a dictionary's "NumPy's" (context dev set).
    /// - The encoder runs over the window's own length only when `trim` allows it
    ///   ([`EngineRequest::trim_encoder`]) and there is no prompt: with a prompt, a
    ///   trimmed encoder made Whisper loop and translate (context dev set: WER 1.051
    ///   against 0.071).
    fn for_window(samples: usize, trim: bool, prompted: bool) -> Self {
        WindowMode {
            encoder_ctx: if trim && !prompted {
                encoder_ctx_for(samples)
            } else {
                FULL_ENCODER_CTX
            },
            timestamps: !prompted,
        }
    }
}

/// Encoder context for an unprompted window of `samples` samples (whisper.cpp's
/// `audio_ctx`). The encoder's cost grows faster than linearly with its context, and
/// Whisper pads every input to 30 s, so a short window is encoded over its own length
/// plus [`ENCODER_CTX_MARGIN`], at least [`MIN_TRIMMED_ENCODER_CTX`], rounded up to
/// [`ENCODER_CTX_BLOCK`]. [`FULL_ENCODER_CTX`] when that reaches 30 s.
fn encoder_ctx_for(samples: usize) -> i32 {
    let samples_per_frame = TARGET_SAMPLE_RATE as usize / ENCODER_FRAMES_PER_SEC;
    let frames =
        (samples.div_ceil(samples_per_frame) + ENCODER_CTX_MARGIN).max(MIN_TRIMMED_ENCODER_CTX);
    let ctx = frames.div_ceil(ENCODER_CTX_BLOCK) * ENCODER_CTX_BLOCK;
    if ctx >= FULL_WINDOW_FRAMES {
        FULL_ENCODER_CTX
    } else {
        i32::try_from(ctx).unwrap_or(FULL_ENCODER_CTX)
    }
}

/// Decoding parameters without callbacks, shared between threads (cloned per window).
struct LanguageParams(FullParams<'static, 'static>);

// SAFETY: `FullParams` is not Send/Sync only because it may hold boxed Rust callbacks
// (`FnMut` closures). `LanguageParams` is built without any callback, so it holds only
// plain C parameters and pointers to leaked, immutable C strings (the language code); a
// clone shares no mutable state with the original.
unsafe impl Send for LanguageParams {}
// SAFETY: see the `Send` impl: nothing reachable through a shared reference is mutable.
unsafe impl Sync for LanguageParams {}

/// whisper.cpp's encoder-begin callback that stops `whisper_full` before its first
/// encoder pass, after it has set the spectrogram and the encoder context.
unsafe extern "C" fn stop_before_encoding(
    _context: *mut whisper_rs::WhisperSysContext,
    _state: *mut whisper_rs::WhisperSysState,
    _user_data: *mut c_void,
) -> bool {
    false
}

/// whisper.cpp's encoder-begin callback that counts the encoder passes of a
/// `whisper_full` call and lets each run.
///
/// # Safety
/// `user_data` must point to a live `AtomicUsize`.
unsafe extern "C" fn count_encoder_pass(
    _context: *mut whisper_rs::WhisperSysContext,
    _state: *mut whisper_rs::WhisperSysState,
    user_data: *mut c_void,
) -> bool {
    // SAFETY: `decode_window` passes a pointer to an `AtomicUsize` that outlives the
    // whisper_full call during which this callback runs.
    if let Some(counter) = unsafe { user_data.cast::<AtomicUsize>().as_ref() } {
        counter.fetch_add(1, Ordering::Relaxed);
    }
    true
}

/// whisper.cpp's abort callback, called after every encoder and decoder run: counts the
/// runs and is true once the deadline has passed or the runs are over budget.
///
/// # Safety
/// `user_data` must point to a live `RunLimits`.
unsafe extern "C" fn abort_past_limits(user_data: *mut c_void) -> bool {
    // SAFETY: the caller (decode_window) passes a pointer to a `RunLimits` that outlives
    // the whisper_full call during which this callback runs; it is only read, apart from
    // its atomic counter.
    let Some(limits) = (unsafe { user_data.cast::<RunLimits>().as_ref() }) else {
        return false;
    };
    limits.graph_runs.fetch_add(1, Ordering::Relaxed);
    limits.over_budget() || limits.deadline.is_some_and(|d| Instant::now() >= d)
}

/// What the logits filter callback needs: the bias, the vocabulary's token bytes and the
/// length of the logits array.
struct BiasCallbackData<'a> {
    bias: &'a TermBias,
    vocabulary: &'a BpeVocabulary,
    n_vocab: usize,
}

/// whisper.cpp's logits filter callback: adds the biasing bonuses for the decoder's
/// tokens so far. Runs once per decoder per step, possibly on several threads at once.
///
/// # Safety
/// `user_data` must point to a live `BiasCallbackData`; `tokens` must point to
/// `n_tokens` token records and `logits` to `n_vocab` floats (whisper.cpp guarantees
/// both for the duration of the call).
unsafe extern "C" fn apply_bias(
    _context: *mut whisper_rs::WhisperSysContext,
    _state: *mut whisper_rs::WhisperSysState,
    tokens: *const whisper_rs::WhisperTokenData,
    n_tokens: std::os::raw::c_int,
    logits: *mut f32,
    user_data: *mut c_void,
) {
    if user_data.is_null() || logits.is_null() {
        return;
    }
    // SAFETY: `decode_window` passes a pointer to a `BiasCallbackData` that outlives the
    // whisper_full call during which this runs; it is only read.
    let data = unsafe { &*user_data.cast::<BiasCallbackData<'_>>() };
    let count = usize::try_from(n_tokens).unwrap_or(0);
    let records: &[whisper_rs::WhisperTokenData] = if tokens.is_null() || count == 0 {
        &[]
    } else {
        // SAFETY: whisper.cpp passes the decoder's `n_tokens` token records, alive and
        // unchanged for the duration of the call.
        unsafe { std::slice::from_raw_parts(tokens, count) }
    };
    // SAFETY: whisper.cpp's logits buffer holds one float per vocabulary entry
    // (`n_vocab`), and only this decoder's thread touches it during the call.
    let logits = unsafe { std::slice::from_raw_parts_mut(logits, data.n_vocab) };
    let generated: Vec<i32> = records.iter().map(|record| record.id).collect();
    // A panic must not unwind into C; the matcher does not panic, but be certain.
    let _ = std::panic::catch_unwind(AssertUnwindSafe(|| {
        let mut scratch = Vec::new();
        data.bias
            .apply(&generated, data.vocabulary, logits, &mut scratch);
    }));
}

fn check_deadline(deadline: Option<Instant>) -> Result<()> {
    match deadline {
        Some(d) if Instant::now() >= d => Err(Error::TranscriptionFailed {
            message: "transcription timed out".into(),
            source: None,
        }),
        _ => Ok(()),
    }
}

/// The decoder prompt: the context prompt within Whisper's budget. When it is over
/// budget its end is kept, as Whisper itself would.
fn context_prompt(context: &[i32]) -> &[i32] {
    &context[context.len().saturating_sub(MAX_PROMPT_TOKENS)..]
}

fn centis_to_samples(centis: f32) -> usize {
    let samples = f64::from(centis.max(0.0)) / 100.0 * f64::from(TARGET_SAMPLE_RATE);
    // Truncation intended: a non-negative, bounded time converted to an index.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let index = samples.round() as usize;
    index
}

/// Whether a segment starting at `start_centis` (whisper.cpp's centiseconds) starts in
/// the last [`windows::SPEECH_PAD_SECS`] of a window of `window_samples` samples. Windows
/// end with that much audio after the VAD's last speech, so a segment that starts there
/// is Whisper writing past the speech: a 60 s file gained a "Thank you." at 25.00 s of a
/// 25.17 s window.
fn starts_in_trailing_pad(start_centis: i64, window_samples: usize) -> bool {
    let window_centis = window_samples as f64 * 100.0 / f64::from(TARGET_SAMPLE_RATE);
    start_centis as f64 >= window_centis - windows::SPEECH_PAD_SECS * 100.0
}

/// Whisper's non-speech annotations (`[BLANK_AUDIO]`, `(wind howling)`, `[Music]`): a
/// segment that is nothing but one bracketed phrase is not speech.
fn is_non_speech_annotation(segment: &str) -> bool {
    let trimmed = segment.trim();
    let bracketed = |open: char, close: char| {
        trimmed.starts_with(open)
            && trimmed.ends_with(close)
            && trimmed[1..trimmed.len() - 1]
                .chars()
                .all(|c| c != open && c != close)
    };
    trimmed.is_empty() || bracketed('[', ']') || bracketed('(', ')') || bracketed('*', '*')
}

fn normalise_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompt_keeps_the_end_of_the_context_within_budget() {
        let context: Vec<i32> = (1000..1100).collect();
        assert_eq!(context_prompt(&context), context.as_slice());
        let huge: Vec<i32> = (0..500).collect();
        let prompt = context_prompt(&huge);
        assert_eq!(prompt.len(), MAX_PROMPT_TOKENS);
        assert_eq!(prompt.last(), Some(&499));
    }

    #[test]
    fn only_segments_starting_in_the_trailing_pad_are_past_the_speech() {
        let window = 25 * 16_000 + 2_720; // 25.17 s
        assert!(starts_in_trailing_pad(2_500, window));
        assert!(starts_in_trailing_pad(2_600, window));
        assert!(!starts_in_trailing_pad(2_490, window));
        assert!(!starts_in_trailing_pad(0, window));
        // On a 1 s window only the last 0.25 s is the pad.
        assert!(!starts_in_trailing_pad(0, 16_000));
        assert!(!starts_in_trailing_pad(74, 16_000));
        assert!(starts_in_trailing_pad(75, 16_000));
    }

    #[test]
    fn annotations_are_not_speech() {
        assert!(is_non_speech_annotation(" [BLANK_AUDIO]"));
        assert!(is_non_speech_annotation("(wind howling)"));
        assert!(is_non_speech_annotation("  "));
        assert!(!is_non_speech_annotation("And so (he said) yes"));
        assert!(!is_non_speech_annotation("[a] and [b]"));
    }

    #[test]
    fn encoder_ctx_covers_the_window_with_a_margin() {
        // 5 s: 250 frames + 64 margin = 314 -> 320.
        assert_eq!(encoder_ctx_for(5 * 16_000), 320);
        // Short windows get the minimum.
        assert_eq!(encoder_ctx_for(1), 256);
        assert_eq!(encoder_ctx_for(3 * 16_000), 256);
        // 28 s (the longest window): 1400 + 64 = 1464 -> 1472.
        assert_eq!(encoder_ctx_for(28 * 16_000), 1472);
        // From 28.7 s on, the margin reaches 30 s: the full context.
        assert_eq!(encoder_ctx_for(28_700 * 16), FULL_ENCODER_CTX);
        let ctx = encoder_ctx_for(10 * 16_000);
        assert!(ctx >= 500 + 64 && ctx.rem_euclid(32) == 0, "{ctx}");
    }

    #[test]
    fn only_unprompted_windows_are_trimmed_and_only_context_free_ones_timed() {
        let five_secs = 5 * 16_000;
        let plain = WindowMode::for_window(five_secs, true, false);
        assert_eq!(
            plain,
            WindowMode {
                encoder_ctx: 320,
                timestamps: true
            }
        );
        let prompted = WindowMode::for_window(five_secs, true, true);
        assert_eq!(
            prompted,
            WindowMode {
                encoder_ctx: FULL_ENCODER_CTX,
                timestamps: false
            }
        );
        // The request can forbid trimming (the first pass of a request with context).
        let untrimmed = WindowMode::for_window(five_secs, false, false);
        assert_eq!(
            untrimmed,
            WindowMode {
                encoder_ctx: FULL_ENCODER_CTX,
                timestamps: true
            }
        );
    }

    #[test]
    fn engine_threads_fit_calls_of_the_configured_threads_into_the_cores() {
        let cores = crate::config::available_cores();
        let one_per_core = engine_threads(1).expect("threads start");
        assert_eq!(one_per_core.current_num_threads(), cores);
        let wider_than_the_machine = engine_threads(cores + 1).expect("threads start");
        assert_eq!(wider_than_the_machine.current_num_threads(), 1);
        let name =
            wider_than_the_machine.install(|| std::thread::current().name().map(String::from));
        assert_eq!(name.as_deref(), Some("ctxscribe-engine-0"));
    }

    #[test]
    fn centiseconds_convert_to_samples() {
        assert_eq!(centis_to_samples(100.0), 16_000);
        assert_eq!(centis_to_samples(-5.0), 0);
    }
}
