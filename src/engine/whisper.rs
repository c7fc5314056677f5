//! [`WhisperEngine`]: load -> windows -> encode -> detect -> decode/score.
//!
//! One call: speech detection (Silero VAD, or a digital-silence check) -> windows along
//! speech boundaries ([`super::windows`]) -> for each window, one encoder pass
//! ([`DecoderState::encode`], over the window's own length where that is safe) shared by
//! language detection ([`super::detect`]), the plain decode ([`super::decode`]) and
//! whatever the caller's per-window judge asks for: prompted and biased decodes, scores
//! of candidate texts ([`super::EncodedWindow`]).

use std::cell::RefCell;
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::biasing::{BiasPhrase, BiasStrength, TermBias};
use super::binding::{BeamSearch, DecoderState, Model};
use super::casing;
use super::decode::{self, DecodeRequest, Decoded, SegmentHook};
use super::detect::{Detection, decide_by_decoding, detect};
use super::encoded::searched_tokens;
use super::pool::Pool;
use super::repeats;
use super::text::window_text;
use super::{Backend, Decoding, EngineConfig, EngineRequest, SegmentWatcher};
use crate::audio::TARGET_SAMPLE_RATE;
use crate::context::{Language, Languages};
use crate::error::{Error, Result};
use crate::transcript::{Segment, keeps_the_speech, starts_a_sentence_after};

/// A window decoded at a temperature above this does not condition the next one
/// (faster-whisper's `prompt_reset_on_temperature`).
const CARRY_MAX_TEMPERATURE: f32 = 0.5;
/// A greedy plain decode whose tokens average a log-probability under this is unsure of
/// its words: its window is searched again with [`UNSURE_BEAMS`] beams before any
/// sampled attempt ([`WhisperEngine::search_unsure`]). Chosen on the tuning half of
/// benches/langid (docs/engine.md#beams-where-the-decode-is-unsure).
const UNSURE_AVG_LOGPROB: f32 = -0.8;
/// Beams of the search of an unsure window (faster-whisper's default).
const UNSURE_BEAMS: usize = 5;

/// `encoder_ctx` meaning the model's full context (30 s).
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

/// The embedded Whisper engine: the model, loaded once, and a pool of per-call states.
pub struct WhisperEngine {
    pub(super) model: Model,
    pub(super) states: Pool<DecoderState>,
    /// The threads every call runs on (see [`engine_threads`]).
    engine_threads: rayon_core::ThreadPool,
    pub(super) threads: usize,
    decoding: Decoding,
    /// Encoder passes so far (for tests and benchmarks: one per window is the goal).
    pub(super) encoder_passes: AtomicUsize,
    /// Decoder runs so far, shared with every state of the pool (for tests and
    /// benchmarks).
    pub(super) decoder_runs: Arc<AtomicUsize>,
}

impl std::fmt::Debug for WhisperEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WhisperEngine")
            .field("model", &self.model.description())
            .field("multilingual", &self.model.is_multilingual())
            .field("vad", &self.model.has_vad())
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
        let model = Model::load(
            &config.model_path,
            config.vad_model_path.as_deref(),
            config.weights,
            config.device,
        )?;
        let threads = config.threads.max(1);
        Ok(WhisperEngine {
            model,
            states: Pool::new(),
            engine_threads: engine_threads(threads)?,
            threads,
            decoding: config.decoding,
            encoder_passes: AtomicUsize::new(0),
            decoder_runs: Arc::new(AtomicUsize::new(0)),
        })
    }

    /// True when the model knows more languages than English.
    #[must_use]
    pub fn is_multilingual(&self) -> bool {
        self.model.is_multilingual()
    }

    /// The device the engine runs on.
    #[must_use]
    pub fn backend(&self) -> &Backend {
        self.model.backend()
    }

    /// True when a VAD model is loaded.
    #[must_use]
    pub fn has_vad(&self) -> bool {
        self.model.has_vad()
    }

    /// Threads used per transcription.
    #[must_use]
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Encoder passes this engine has run since it was loaded.
    #[must_use]
    pub fn encoder_passes(&self) -> usize {
        self.encoder_passes.load(Ordering::Relaxed)
    }

    /// Decoder runs this engine has made since it was loaded (a run decodes one token,
    /// or checks several of a draft).
    #[must_use]
    pub fn decoder_runs(&self) -> usize {
        self.decoder_runs.load(Ordering::Relaxed)
    }

    /// What one decoder run of one token costs, apart from the encoder, the search and
    /// draft checks (a diagnostic for benchmarks): `audio` (at most 30 s) is encoded
    /// once, the English transcription prefix decoded, then the tokens of `text` one run
    /// each. Returns the mean seconds per run and how many runs that is.
    ///
    /// # Errors
    /// An engine failure, or [`Error::InvalidRequest`] for text that tokenizes to nothing.
    pub fn decoder_step_seconds(&self, audio: &[f32], text: &str) -> Result<(f64, usize)> {
        let tokens = self.model.tokenize(text)?;
        if tokens.is_empty() {
            return Err(Error::invalid("text", "nothing to decode"));
        }
        let english = Language::from_code("en")?;
        self.on_engine_threads(|| {
            let mut state = self
                .states
                .take_or(|| self.model.new_state(&self.decoder_runs))?;
            self.encode(&mut state, audio, 0)?;
            let mut sequence = self.model.vocabulary().task_prefix(english, false);
            state.logits_after(&sequence, self.threads)?;
            let started = std::time::Instant::now();
            for &token in &tokens {
                sequence.push(token);
                state.logits_after(&sequence, self.threads)?;
            }
            let seconds = started.elapsed().as_secs_f64() / tokens.len() as f64;
            self.states.give_back(state);
            Ok((seconds, tokens.len()))
        })
    }

    /// Tokenizes `text` with the model's vocabulary (whisper.cpp's greedy tokenizer).
    ///
    /// # Errors
    /// [`Error::InvalidRequest`] for text the tokenizer rejects (e.g. NUL bytes).
    pub fn tokenize(&self, text: &str) -> Result<Vec<i32>> {
        self.model.tokenize(text)
    }

    /// The decoder tokens that write `text`: Whisper's canonical BPE tokenization (what
    /// the model learned to write), or `None` when the vocabulary cannot spell it.
    #[must_use]
    pub fn bpe_tokens(&self, text: &str) -> Option<Vec<i32>> {
        self.model.vocabulary().bpe().encode(text)
    }

    /// The decode-time bias towards `terms` (written form, weight), with each form's
    /// canonical tokenization and whisper.cpp's greedy one (the decoder writes either).
    #[must_use]
    pub fn term_bias(&self, terms: &[(String, f32)], strength: BiasStrength) -> TermBias {
        let phrases: Vec<BiasPhrase> = terms
            .iter()
            .map(|(text, weight)| {
                let mut tokenizations = Vec::with_capacity(2);
                for tokens in [self.bpe_tokens(text), self.tokenize(text).ok()]
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

    /// Runs `work` on one of the engine's own threads, whatever thread calls (see
    /// [`engine_threads`]); the caller blocks until it is done. Calls beyond the number
    /// of engine threads wait their turn.
    pub fn on_engine_threads<R: Send>(&self, work: impl FnOnce() -> R + Send) -> R {
        self.engine_threads.install(work)
    }

    /// Encodes one window's `audio`, detects its language if not known yet
    /// (`run.language`) and decodes it plainly, showing `watch` its text while the first
    /// attempt decodes. Returns its language, its plain text and where its timed text
    /// ends (samples), if it is timed.
    pub(super) fn decode_window(
        &self,
        state: &mut DecoderState,
        audio: &[f32],
        context_prompt: &[i32],
        run: &mut Run,
        request: &EngineRequest<'_>,
        watch: &mut SegmentWatcher<'_>,
    ) -> Result<PlainWindow> {
        let (language, full) = self.encode_and_detect(state, audio, run.language, request)?;
        run.language = Some(language);
        // Decodes are timed: untimed, on an encoding trimmed to the window, Whisper has
        // no sign of where the speech ends and repeats it until its token budget ("Remind
        // me to walker the plants before I leave." four times for a 3 s clip, prompted).
        // A plain window is conditioned on the previous window's text, a request's own
        // prompt replaces that.
        let prompt = if context_prompt.is_empty() {
            &run.carry
        } else {
            context_prompt
        };
        // A window that starts a sentence starts with a capital (`capitalise_first_word`).
        let starts_sentence = run.starts_a_sentence();
        let sentence_case = |tokens: &mut Vec<i32>| {
            if starts_sentence {
                casing::capitalise_first_word(tokens, self.model.vocabulary(), request.term_words);
            }
        };
        // The first attempt's closed segments are shown to the watcher as they come.
        let watch = RefCell::new(watch);
        let report = |tokens: &[i32]| {
            let mut tokens = tokens.to_vec();
            sentence_case(&mut tokens);
            let (text, _) = window_text(
                self.model.vocabulary(),
                &tokens,
                audio.len(),
                &mut Vec::new(),
            );
            (*watch.borrow_mut())(&text);
        };
        let window_request = |prompt, on_segment| DecodeRequest {
            language,
            prompt,
            timestamps: true,
            bias: request.bias,
            audio_samples: audio.len(),
            stop: request.stop,
            threads: self.threads,
            beam_size: self.beam_size(),
            stop_at_repeat: false,
            sentence_case: request.sentence_case
                && context_prompt.is_empty()
                && casing::applies_to(language),
            term_words: request.term_words,
            on_segment,
            draft: None,
        };
        let vocabulary = self.model.vocabulary();
        let carried = context_prompt.is_empty() && !run.carry.is_empty();
        let decode_plain = |state: &mut DecoderState| -> Result<Decoded> {
            let hook = Some(SegmentHook(&report));
            let first = decode::first_attempt(state, vocabulary, &window_request(prompt, hook))?;
            if let Some(searched) =
                self.search_unsure(state, audio, language, prompt, &first, request)?
            {
                // A search conditioned on the previous text that reads it again is checked
                // as the greedy decode is, below.
                if !(carried && repeats::echoes_prompt(vocabulary, prompt, &searched.tokens)) {
                    return Ok(searched);
                }
            }
            if carried {
                let (carried, alone) = (window_request(prompt, None), window_request(&[], None));
                self.decode_carried(state, first, &carried, &alone)
            } else {
                decode::fall_back(state, vocabulary, &window_request(prompt, None), first)
            }
        };
        let mut decoded = decode_plain(state)?;
        if decoded.silence && !full {
            // The voice activity detector found speech in this window; a decode of the
            // encoding trimmed to it that calls it silence is not believed until the full
            // 30 s encoding, which Whisper was trained on, says so too (a synthetic
            // Spanish voice with the language forced came out empty on the trimmed one).
            self.encode(state, audio, FULL_ENCODER_CTX)?;
            decoded = decode_plain(state)?;
        }
        sentence_case(&mut decoded.tokens);
        Ok(self.plain_window(decoded, language, starts_sentence, audio.len(), run))
    }

    /// A window's plain decode as its text, its timed segments (into `run.timed`) and the
    /// next window's prompt (`run.carry`).
    fn plain_window(
        &self,
        decoded: Decoded,
        language: Language,
        starts_sentence: bool,
        audio_samples: usize,
        run: &mut Run,
    ) -> PlainWindow {
        let vocabulary = self.model.vocabulary();
        let (plain_text, speech_end) =
            window_text(vocabulary, &decoded.tokens, audio_samples, &mut run.timed);
        run.carry = if decoded.temperature <= CARRY_MAX_TEMPERATURE {
            let text_tokens: Vec<i32> = decoded
                .tokens
                .iter()
                .copied()
                .filter(|&t| vocabulary.is_text(t))
                .collect();
            decode::prompt_tail(&text_tokens).to_vec()
        } else {
            Vec::new()
        };
        PlainWindow {
            language,
            plain_text,
            speech_end,
            tokens: decoded.tokens,
            starts_sentence,
        }
    }

    /// The decode of a window conditioned on the previous window's text (`carried`,
    /// whose first attempt is `first`), checked
    /// against the same window decoded alone. Conditioned on the previous text, Whisper
    /// can loop at every temperature ("The word is fair." thirteen times after "How
    /// old" in the 5 min bench file) or end by repeating its last sentence ("Go forward
    /// ten meters." twice for one) or read a sentence of the previous text again: a loop
    /// is decoded again alone before any higher temperature, and a repeated ending or an
    /// echo of the previous text is kept only when the window decoded alone has it too
    /// (the speaker said it twice). A decode alone that starts by reading the end of the
    /// previous text again loses that start ([`repeats::without_reread_start`]), unless
    /// the decode conditioned on that text starts by reading it too.
    fn decode_carried(
        &self,
        state: &mut DecoderState,
        first: Decoded,
        carried: &DecodeRequest<'_>,
        alone: &DecodeRequest<'_>,
    ) -> Result<Decoded> {
        let vocabulary = self.model.vocabulary();
        let alone_decode = |state: &mut DecoderState| -> Result<Decoded> {
            let mut decoded = decode::decode(state, vocabulary, alone)?;
            // The speaker may say again what ended the previous window (jfk five times
            // over): then the decode conditioned on it reads it too, and the decode alone
            // keeps it.
            let first_rereads =
                repeats::without_reread_start(vocabulary, carried.prompt, &first.tokens)
                    != first.tokens;
            if !first_rereads {
                decoded.tokens =
                    repeats::without_reread_start(vocabulary, carried.prompt, &decoded.tokens);
            }
            Ok(decoded)
        };
        if first.is_loop() {
            return alone_decode(state);
        }
        let doubled = repeats::ends_doubled(vocabulary, &first.tokens);
        let echoes = |tokens: &[i32]| repeats::echoes_prompt(vocabulary, carried.prompt, tokens);
        let echo = echoes(&first.tokens);
        if doubled || echo {
            let without = alone_decode(state)?;
            let said = (doubled && repeats::ends_doubled(vocabulary, &without.tokens))
                || (echo && echoes(&without.tokens));
            if !said {
                return Ok(without);
            }
        }
        decode::fall_back(state, vocabulary, carried, first)
    }

    /// whisper.cpp's batched beam search over a window whose greedy plain decode `plain`
    /// is unsure ([`UNSURE_AVG_LOGPROB`]), with the same `prompt`, as a decode at
    /// temperature 0. `None`, and the temperature fallback goes on from `plain`, where
    /// `plain` is sure or silence, where the engine decodes with beams already, where
    /// the window is too long for an encoding trimmed to it (the search's own encoder
    /// pass is cheap on a trimmed one: a 5 s window, a tenth of a full 30 s one), and
    /// where the search reads its text again from the start (the plain decode does not),
    /// loops or ends by repeating its last sentence, or drops speech the plain text has
    /// ([`keeps_the_speech`]).
    fn search_unsure(
        &self,
        state: &DecoderState,
        audio: &[f32],
        language: Language,
        prompt: &[i32],
        plain: &Decoded,
        request: &EngineRequest<'_>,
    ) -> Result<Option<Decoded>> {
        let Some(encoder_ctx) = trimmed_encoder_ctx(audio.len()) else {
            return Ok(None);
        };
        if self.beam_size() > 1 || plain.silence || plain.avg_logprob >= UNSURE_AVG_LOGPROB {
            return Ok(None);
        }
        let search = BeamSearch {
            language: language.code(),
            prompt: decode::prompt_tail(prompt),
            encoder_ctx,
            beams: UNSURE_BEAMS,
            max_tokens: decode::token_budget(audio.len()),
            stop: request.stop,
            threads: self.threads,
        };
        let tokens = searched_tokens(&self.model, state, audio, &search, &self.encoder_passes)?;
        let vocabulary = self.model.vocabulary();
        let text = |tokens: &[i32]| window_text(vocabulary, tokens, audio.len(), &mut Vec::new()).0;
        let (searched, greedy) = (text(&tokens), text(&plain.tokens));
        let restarts = repeats::restart_offset(&searched).is_some()
            && repeats::restart_offset(&greedy).is_none();
        let keeps = keeps_the_speech(&greedy, &searched);
        let compression_ratio = repeats::compression_ratio(&vocabulary.text_of(&tokens));
        let loops = compression_ratio > repeats::MAX_COMPRESSION_RATIO
            || repeats::ends_doubled(vocabulary, &tokens);
        Ok(
            (!searched.is_empty() && keeps && !restarts && !loops).then(|| Decoded {
                compression_ratio,
                tokens,
                temperature: 0.0,
                over_budget: false,
                ..plain.clone()
            }),
        )
    }

    /// Encodes `audio` into `state` and returns its language (`known`, else detected on
    /// this encoding) and whether the encoding is the full 30 s one. A trimmed encoding
    /// whose detection is unsure is replaced by a full 30 s one (Whisper's detection was
    /// trained on those, and its decodes of hard audio are better there) and detected
    /// again; if that is still unsure among a set's members, they are read there
    /// ([`Self::read_candidates`]).
    fn encode_and_detect(
        &self,
        state: &mut DecoderState,
        audio: &[f32],
        known: Option<Language>,
        request: &EngineRequest<'_>,
    ) -> Result<(Language, bool)> {
        let encoder_ctx = encoder_ctx_for(audio.len());
        let full = encoder_ctx == FULL_ENCODER_CTX;
        self.encode(state, audio, encoder_ctx)?;
        if let Some(language) = known {
            return Ok((language, full));
        }
        let vocabulary = self.model.vocabulary();
        let detection = detect(state, vocabulary, request.languages, self.threads)?;
        if full || detection.is_sure() {
            return Ok((detection.best(), full));
        }
        self.encode(state, audio, FULL_ENCODER_CTX)?;
        let detection = detect(state, vocabulary, request.languages, self.threads)?;
        if !detection.is_sure()
            && let Some(language) = self.read_candidates(state, audio, request, &detection)?
        {
            return Ok((language, true));
        }
        Ok((detection.best(), true))
    }

    /// An unsure detection among a set's members decided by the model's reading of the
    /// audio in each ([`decide_by_decoding`]; a reading that loops does not count);
    /// `None` over all of Whisper's languages (there the detection alone picked more
    /// right than the readings: docs/engine.md) or when no member reads.
    fn read_candidates(
        &self,
        state: &mut DecoderState,
        audio: &[f32],
        request: &EngineRequest<'_>,
        detection: &Detection,
    ) -> Result<Option<Language>> {
        if !matches!(request.languages, Languages::AnyOf(_)) {
            return Ok(None);
        }
        let vocabulary = self.model.vocabulary();
        decide_by_decoding(&detection.ranked, |language| {
            let request = DecodeRequest {
                language,
                prompt: &[],
                timestamps: true,
                bias: None,
                audio_samples: audio.len(),
                stop: request.stop,
                threads: self.threads,
                beam_size: 1,
                stop_at_repeat: false,
                sentence_case: false,
                term_words: &[],
                on_segment: None,
                draft: None,
            };
            let decoded = decode::first_attempt(state, vocabulary, &request)?;
            Ok((!decoded.is_loop()).then_some(decoded.avg_logprob))
        })
    }

    /// Beams of a decode's first attempt (1: greedy).
    pub(super) fn beam_size(&self) -> usize {
        match self.decoding {
            Decoding::Greedy => 1,
            Decoding::BeamSearch { beam_size } => usize::from(beam_size.max(1)),
        }
    }

    fn encode(&self, state: &mut DecoderState, audio: &[f32], encoder_ctx: i32) -> Result<()> {
        self.encoder_passes.fetch_add(1, Ordering::Relaxed);
        state.encode(audio, encoder_ctx, self.threads)
    }

    /// The language fixed by the request or the model, if any; errors for requests this
    /// model cannot serve (a non-English language on an English-only model).
    pub(super) fn forced_language(&self, languages: &Languages) -> Result<Option<Language>> {
        let english = Language::from_code("en")?;
        let count = self.model.vocabulary().special.language_count;
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
        if self.model.is_multilingual() {
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
}

/// A window's plain decode ([`WhisperEngine::decode_window`]).
pub(super) struct PlainWindow {
    pub(super) language: Language,
    pub(super) plain_text: String,
    /// Where its timed text ends (samples of the window), if timed.
    pub(super) speech_end: Option<usize>,
    /// Its transcript tokens (text and timestamps).
    pub(super) tokens: Vec<i32>,
    /// It starts a sentence ([`Run::starts_a_sentence`]).
    pub(super) starts_sentence: bool,
}

/// What a transcription carries from one window to the next.
pub(super) struct Run {
    /// The language, once known (forced, or detected on the first window).
    pub(super) language: Option<Language>,
    /// The previous window's text tokens: the next timed window's prompt.
    pub(super) carry: Vec<i32>,
    pub(super) texts: Vec<String>,
    /// The last decoded piece's plain segments (samples of the piece, text).
    pub(super) timed: Vec<(Range<usize>, String)>,
    /// The plain segments so far, in seconds of the input signal.
    pub(super) segments: Vec<Segment>,
}

impl Run {
    /// True when the next window starts a sentence: no text with words before it, or
    /// the last one ends a sentence.
    fn starts_a_sentence(&self) -> bool {
        self.texts
            .iter()
            .rev()
            .find(|text| !text.trim().is_empty())
            .is_none_or(|text| starts_a_sentence_after(text))
    }
}

/// The encoder context of an encoding trimmed to a window of `samples` samples; `None`
/// for a window too long for one.
pub(super) fn trimmed_encoder_ctx(samples: usize) -> Option<i32> {
    Some(encoder_ctx_for(samples)).filter(|&ctx| ctx != FULL_ENCODER_CTX)
}

/// Encoder context for a window of `samples` samples (whisper.cpp's `audio_ctx`). The
/// encoder's cost grows faster than linearly with its context, and Whisper pads every
/// input to 30 s, so a short window is encoded over its own length plus
/// [`ENCODER_CTX_MARGIN`], at least [`MIN_TRIMMED_ENCODER_CTX`], rounded up to
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

/// The cores this process may use (at least one).
#[must_use]
pub fn available_cores() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// How many calls of `threads_per_call` threads the cores hold at once (at least one):
/// the engine's own threads, and the server's default `--max-concurrent`.
#[must_use]
pub fn concurrent_calls(threads_per_call: usize) -> usize {
    (available_cores() / threads_per_call.max(1)).max(1)
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
        .num_threads(concurrent_calls(threads_per_call))
        .thread_name(|index| format!("ctxscribe-engine-{index}"))
        .build()
        .map_err(|e| Error::TranscriptionFailed {
            message: format!("cannot start the engine threads: {e}"),
            source: Some(Box::new(e)),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoder_ctx_covers_the_window_with_a_margin() {
        // 5 s: 250 frames + 64 margin = 314 -> 320.
        assert_eq!(encoder_ctx_for(5 * 16_000), 320);
        assert_eq!(encoder_ctx_for(1), 256);
        assert_eq!(encoder_ctx_for(3 * 16_000), 256);
        assert_eq!(encoder_ctx_for(28 * 16_000), 1472);
        assert_eq!(encoder_ctx_for(28_700 * 16), FULL_ENCODER_CTX);
    }

    #[test]
    fn engine_threads_fit_calls_of_the_configured_threads_into_the_cores() {
        let cores = available_cores();
        let one_per_core = engine_threads(1).expect("threads start");
        assert_eq!(one_per_core.current_num_threads(), cores);
        let wider_than_the_machine = engine_threads(cores + 1).expect("threads start");
        assert_eq!(wider_than_the_machine.current_num_threads(), 1);
        let name =
            wider_than_the_machine.install(|| std::thread::current().name().map(String::from));
        assert_eq!(name.as_deref(), Some("ctxscribe-engine-0"));
    }
}
