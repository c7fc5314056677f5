//! The whisper.cpp binding (through whisper-rs): the model, the per-call encoder/decoder
//! state and the VAD. With `kernels.rs` and `device.rs` (which ask ggml for its CPU
//! kernels and devices before a model loads), the only module of the core crate with
//! `unsafe`; everything above it (encoding, detection, decoding, scoring) is safe Rust
//! over five operations:
//! [`DecoderState::encode`], [`DecoderState::logits_after`] (with
//! [`DecoderState::decode_ahead`], which checks a draft of several tokens in one decoder
//! run), [`DecoderState::search_beams`] and [`Model::speech_regions`].

use std::ffi::c_void;
use std::io::Write;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use whisper_rs::whisper_rs_sys as sys;
use whisper_rs::{
    FullParams, SamplingStrategy, WhisperContext, WhisperContextParameters, WhisperState,
    WhisperVadContext, WhisperVadContextParams, WhisperVadParams,
};

use super::pool::Pool;
use super::stop::Stop;
use super::tokens::Vocabulary;
use super::weights::{self, Conversion};
use super::{Backend, Device, Weights};
use crate::audio::TARGET_SAMPLE_RATE;
use crate::error::{Error, Result};
use crate::model::locate::{CHECKOUT_SETUP_COMMAND, install_hint};
use crate::model::{cache, fetch};

/// The loaded model: weights, vocabulary and the VAD, shared by every call and thread.
pub(crate) struct Model {
    context: WhisperContext,
    vocabulary: Vocabulary,
    vad_model_path: Option<String>,
    vad_contexts: Pool<WhisperVadContext>,
    description: String,
    backend: Backend,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model")
            .field("model", &self.description)
            .field("vad", &self.vad_model_path.is_some())
            .field("backend", &self.backend.name)
            .finish_non_exhaustive()
    }
}

impl Model {
    /// Loads the whisper.cpp model at `model_path` and checks the VAD model.
    pub(crate) fn load(
        model_path: &Path,
        vad_model_path: Option<&Path>,
        weights: Weights,
        device: Device,
    ) -> Result<Self> {
        whisper_rs::install_logging_hooks();
        install_abort_hook();
        // The CPU kernels are chosen (and registered with ggml) before the first model.
        let kernels = super::kernels::cpu_kernels()?;
        let (use_gpu, backend) = super::device::choose(device, &kernels.to_string())?;
        if !model_path.is_file() {
            return Err(Error::ModelUnavailable {
                message: format!(
                    "model file {} not found; {}, or point CTXSCRIBE_MODEL at a whisper.cpp \
                     ggml/gguf file",
                    model_path.display(),
                    install_hint()
                ),
                source: None,
            });
        }
        fetch::check_model_file(model_path)?;
        let (context, became) = load_context(model_path, weights, use_gpu, kernels.has_bf16())
            .map_err(|e| Error::ModelUnavailable {
                message: format!(
                    "{} is not a loadable whisper.cpp model ({e}){}",
                    model_path.display(),
                    replace_hint(model_path)
                ),
                source: None,
            })?;
        let vad_model_path = vad_model_path.map(checked_vad_path).transpose()?;
        let vocabulary = Vocabulary::new(&context);
        let description = format!(
            "{} ({} text layers, {}{}{})",
            model_path.display(),
            context.model_n_text_layer(),
            if context.is_multilingual() {
                "multilingual"
            } else {
                "English-only"
            },
            became.map_or_else(String::new, |became| format!(", {became}")),
            if backend.is_gpu() {
                format!(", on {}", backend.name)
            } else {
                String::new()
            }
        );
        let model = Model {
            context,
            vocabulary,
            vad_model_path,
            vad_contexts: Pool::new(),
            description,
            backend,
        };
        // Load the VAD once now so that a broken file fails at start-up, not per request.
        if model.vad_model_path.is_some() {
            let vad = model.new_vad_context()?;
            model.vad_contexts.give_back(vad);
        }
        Ok(model)
    }

    pub(crate) fn vocabulary(&self) -> &Vocabulary {
        &self.vocabulary
    }

    pub(crate) fn description(&self) -> &str {
        &self.description
    }

    pub(crate) fn backend(&self) -> &Backend {
        &self.backend
    }

    pub(crate) fn is_multilingual(&self) -> bool {
        self.context.is_multilingual()
    }

    pub(crate) fn has_vad(&self) -> bool {
        self.vad_model_path.is_some()
    }

    /// whisper.cpp's greedy (longest-match) tokenization of `text`.
    pub(crate) fn tokenize(&self, text: &str) -> Result<Vec<i32>> {
        if text.is_empty() {
            return Ok(Vec::new());
        }
        // Every token covers at least one byte, so len + 1 slots always suffice (whisper-rs
        // mishandles the "buffer too small" return value, so it must never happen).
        self.context
            .tokenize(text, text.len() + 1)
            .map_err(|e| Error::invalid("prompt", format!("cannot tokenize context: {e}")))
    }

    /// A fresh encoder/decoder state, counting its decoder runs in `runs`.
    pub(crate) fn new_state(&self, runs: &Arc<AtomicUsize>) -> Result<DecoderState> {
        let state = self
            .context
            .create_state()
            .map_err(|e| Error::TranscriptionFailed {
                message: format!("cannot allocate decoder state: {e}"),
                source: Some(Box::new(e)),
            })?;
        Ok(DecoderState {
            state,
            n_vocab: self.vocabulary.n_vocab(),
            encoded: false,
            cached: Vec::new(),
            rows: 0..0,
            rows_from: 0,
            runs: Arc::clone(runs),
            n_text_ctx: usize::try_from(self.context.n_text_ctx()).unwrap_or(0),
        })
    }

    /// Speech regions of `samples` in samples: from the VAD when loaded, else the whole
    /// signal.
    pub(crate) fn speech_regions(&self, samples: &[f32]) -> Result<Vec<Range<usize>>> {
        if self.vad_model_path.is_none() {
            return Ok(std::iter::once(0..samples.len()).collect());
        }
        let mut vad = self.vad_contexts.take_or(|| self.new_vad_context())?;
        let result = vad.segments_from_samples(WhisperVadParams::default(), samples);
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

/// For a file named like a model `ctxscribe models fetch` installs: how to replace it.
fn replace_hint(path: &Path) -> String {
    fetch::pinned_by_file(path).map_or_else(String::new, |model| {
        format!("; {}", fetch::replace_hint(model))
    })
}

fn checked_vad_path(path: &Path) -> Result<String> {
    let text =
        path.to_str()
            .filter(|p| !p.contains('\0'))
            .ok_or_else(|| Error::ModelUnavailable {
                message: format!("VAD model path {} is not valid UTF-8", path.display()),
                source: None,
            })?;
    if !path.is_file() {
        return Err(Error::ModelUnavailable {
            message: format!(
                "VAD model {} not found; run `{CHECKOUT_SETUP_COMMAND}` or unset CTXSCRIBE_VAD_MODEL",
                path.display()
            ),
            source: None,
        });
    }
    Ok(text.to_owned())
}

/// One call's encoder output and decoder KV cache (whisper.cpp's `whisper_state`).
///
/// [`DecoderState::encode`] fills the encoder output (and the cross-attention keys and
/// values) for one window; any number of [`DecoderState::decode`] calls then reuse it.
/// The decoder's KV cache holds one token sequence: a decode at `n_past` keeps the first
/// `n_past` cached positions and drops the rest, so a shared prefix is decoded once.
pub(crate) struct DecoderState {
    state: WhisperState,
    n_vocab: usize,
    encoded: bool,
    /// The tokens whose keys and values the decoder's KV cache holds, in order.
    cached: Vec<i32>,
    /// The positions of `cached` whose logits rows (the logits of the token after
    /// `cached[..=position]`) the last decoder run left in whisper.cpp's buffer.
    rows: Range<usize>,
    /// The position of the buffer's first row (the last run's first token).
    rows_from: usize,
    /// The engine's count of decoder runs.
    runs: Arc<AtomicUsize>,
    /// Positions the decoder has (Whisper: 448).
    n_text_ctx: usize,
}

/// True when whisper.cpp was built able to copy out every decoded token's logits
/// (`whisper-additions.cmake`): [`DecoderState::decode_ahead`] checks a draft in one
/// decoder run. Otherwise it does nothing and decodes go token by token.
pub(crate) const CHECKS_DRAFTS: bool = cfg!(whisper_additions);

#[cfg(whisper_additions)]
unsafe extern "C" {
    /// Makes the calling thread's next decoder runs copy out every token's logits row
    /// (`on`), or only the last token's, as whisper.cpp does by default.
    fn ctxscribe_whisper_all_logits(on: bool);
}

impl std::fmt::Debug for DecoderState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DecoderState")
            .field("encoded", &self.encoded)
            .finish_non_exhaustive()
    }
}

/// Installs [`report_abort`] as ggml's abort callback, once per process.
fn install_abort_hook() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        // SAFETY: `report_abort` is a plain function valid for the whole process; it only
        // reads the message ggml passes (a NUL-terminated string ggml owns for the call).
        // ggml keeps the callback in one global, set here before any model is loaded.
        unsafe {
            sys::ggml_set_abort_callback(Some(report_abort));
        }
    });
}

/// ggml's abort callback: writes ggml's message to stderr, then ggml aborts the
/// process, as it would without the callback. Without it ggml first forks a debugger to
/// print a backtrace, and where the debugger cannot attach (a container without ptrace),
/// waits for it forever: a server that hits one of ggml's internal checks hangs holding
/// its port instead of exiting for its supervisor to restart it.
unsafe extern "C" fn report_abort(message: *const std::ffi::c_char) {
    let message = if message.is_null() {
        std::borrow::Cow::Borrowed("(no message)")
    } else {
        // SAFETY: ggml passes a NUL-terminated buffer that lives for the whole call.
        unsafe { std::ffi::CStr::from_ptr(message) }.to_string_lossy()
    };
    // Not `eprintln!`: it panics when stderr is closed, and nothing may unwind out of here.
    let _ = writeln!(
        std::io::stderr(),
        "ctxscribe: the engine (ggml) aborted the process: {message}"
    );
}

/// The whisper.cpp context of the model file at `path` (on the GPU [`super::device`]
/// chose when `use_gpu`), and what its matrices became in memory, if anything
/// (`crate::model::convert`'s conversions, [`Conversion`]):
///
/// - an all-f32 file's matrices and convolution kernels become f16 (ggml's CPU
///   convolution takes no f32 kernels: it would abort the process at the first encoding),
///   when memory has room for it ([`weights::room_for`] twice its size; else an error);
/// - on the CPU, an f16 model's decoder matrices become q8_0 with [`Weights::Fastest`]
///   (when whisper.cpp was built able to create them so), and its other matrices bf16
///   with [`Weights::Fastest`] or [`Weights::Unquantized`] when ggml has native bf16
///   kernels; when memory has no room ([`weights::room_for`] three times the file's
///   size), the file loads as stored.
///
/// A converted model is kept on disk ([`crate::model::cache`]) and loaded from there
/// next time. Converting reads the file whole (its size again, until whisper.cpp has
/// copied it); anything else loads from a file as it is.
fn load_context(
    path: &Path,
    weights: Weights,
    use_gpu: bool,
    native_bf16: bool,
) -> std::result::Result<(WhisperContext, Option<String>), String> {
    let params = || {
        let mut params = WhisperContextParameters::default();
        params.use_gpu(use_gpu);
        // Flash attention stays off: whisper.cpp's flash-attention graphs pad the
        // encoder's and the cross-attention's keys to a multiple of 256 without a mask, so
        // an encoding trimmed to a window attends to stale rows (5 s clips: WER 0.355 vs
        // 0.113); unpadded, ggml's CPU flash attention was slower (docs/benchmarks.md).
        params.flash_attn(false);
        params
    };
    let from_file = |file: &Path| WhisperContext::new_with_params(file, params());
    let conversion = Conversion::wanted(path, weights, use_gpu, native_bf16);
    let file_len = std::fs::metadata(path).map_err(|e| e.to_string())?.len();
    if conversion.from_f32 && !weights::room_for(file_len.saturating_mul(2)) {
        return Err(format!(
            "an all-f32 model file is loaded as f16, which needs twice its size ({} MB) of \
             available memory; use an f16 or quantized file of the model",
            file_len.saturating_mul(2) >> 20
        ));
    }
    if conversion == Conversion::default() {
        return from_file(path)
            .map(|context| (context, None))
            .map_err(|e| e.to_string());
    }
    let cached = cache::converted_path(path, &conversion.name());
    if let Some(cached) = cached.as_deref().filter(|cached| cached.is_file()) {
        match loading(conversion, || from_file(cached)) {
            Ok(context) => return Ok((context, Some(conversion.description()))),
            // Made again below.
            Err(_) => drop(std::fs::remove_file(cached)),
        }
    }
    // Read whole, beside its converted copy and whisper.cpp's own copy until the load
    // ends: three times its size (a large model on a small machine loads as stored).
    if !conversion.from_f32 && !weights::room_for(file_len.saturating_mul(3)) {
        return from_file(path)
            .map(|context| (context, None))
            .map_err(|e| e.to_string());
    }
    let (bytes, made) = conversion.convert(std::fs::read(path).map_err(|e| e.to_string())?)?;
    let context = loading(made, || {
        WhisperContext::new_from_buffer_with_params(&bytes, params())
    })
    .map_err(|e| e.to_string())?;
    if made == conversion
        && let Some(cached) = cached
    {
        // Not kept (a read-only home, a full disk): the next load converts again.
        let _ = cache::store(&cached, &bytes);
    }
    Ok((
        context,
        (made != Conversion::default()).then(|| made.description()),
    ))
}

#[cfg(whisper_additions)]
unsafe extern "C" {
    /// Makes the calling thread's next model loads create the decoder's matrices as the
    /// ggml type `decoder_type` (-1: the file's weight type, whisper.cpp's default).
    fn ctxscribe_whisper_decoder_type(decoder_type: std::ffi::c_int);
}

/// Runs `load` (a model load on this thread) with whisper.cpp creating the decoder's
/// matrices as q8_0 when `conversion` made them so.
fn loading<T>(conversion: Conversion, load: impl FnOnce() -> T) -> T {
    #[cfg(whisper_additions)]
    if conversion.q8_0_decoder {
        let q8_0 = std::ffi::c_int::try_from(sys::ggml_type_GGML_TYPE_Q8_0).unwrap_or(8);
        // SAFETY: the function sets a thread-local value of the patched whisper.cpp that
        // its model loader reads; `load` runs the whole load on this thread, and the
        // value is set back to the default right after it.
        unsafe { ctxscribe_whisper_decoder_type(q8_0) };
        let loaded = load();
        // SAFETY: as above; whisper.cpp's default again.
        unsafe { ctxscribe_whisper_decoder_type(-1) };
        return loaded;
    }
    let _ = conversion;
    load()
}

impl DecoderState {
    /// Encodes `audio` (16 kHz mono, at most 30 s) with an encoder context of
    /// `encoder_ctx` frames (0: Whisper's full 30 s).
    ///
    /// whisper.cpp sets the spectrogram and the encoder context only inside
    /// `whisper_full`; this call lets `whisper_full` compute both and stops it (through
    /// its encoder-begin callback) before it encodes, then runs the encoder once.
    pub(crate) fn encode(&mut self, audio: &[f32], encoder_ctx: i32, threads: usize) -> Result<()> {
        self.encoded = false;
        self.cached.clear();
        self.rows = 0..0;
        if audio.is_empty() {
            return Err(failed("encoder", "no audio to encode"));
        }
        let mut params = FullParams::new(SamplingStrategy::Greedy { best_of: 1 });
        params.set_n_threads(i32::try_from(threads).unwrap_or(1));
        params.set_language(Some("en"));
        params.set_audio_ctx(encoder_ctx);
        params.set_no_context(true);
        params.set_print_special(false);
        params.set_print_progress(false);
        params.set_print_realtime(false);
        params.set_print_timestamps(false);
        // SAFETY: `stop_before_encoding` ignores its arguments and returns false; it needs
        // no user data and is a plain function, valid for the whole call.
        unsafe {
            params.set_start_encoder_callback(Some(stop_before_encoding));
        }
        self.state
            .full(params, audio)
            .map_err(|e| failed("spectrogram", e))?;
        self.state
            .encode(0, threads)
            .map_err(|e| failed("encoder", e))?;
        self.encoded = true;
        Ok(())
    }

    /// whisper.cpp's own beam search over `audio`, the window this state has encoded:
    /// the transcript tokens (text and timestamps) of its best hypothesis, one segment.
    ///
    /// `whisper_full` runs on a fresh state of `model`'s: it encodes `audio` again over
    /// `search.encoder_ctx` (the callers trim it to the window, also where this state's
    /// encoding is the full 30 s one: a tenth of the cost on a 5 s window), then
    /// advances all its
    /// hypotheses in one decoder batch per step, each a sequence of its own in that
    /// state's KV cache. [`Self::logits_after`] holds one sequence, so a beam search
    /// through it decodes every hypothesis again from where they part. This state, its
    /// encoding and its KV cache are left as they were. The fresh state costs 19 ms; a
    /// kept one carried something of a search into the next (a tuning case's result
    /// depended on which case ran before it) and would hold its enlarged KV cache
    /// between requests.
    pub(crate) fn search_beams(
        &self,
        model: &Model,
        audio: &[f32],
        search: &BeamSearch<'_>,
    ) -> Result<Vec<i32>> {
        if !self.encoded {
            return Err(failed("beam search", "search before encode"));
        }
        let mut searcher = model
            .context
            .create_state()
            .map_err(|e| failed("beam search state", e))?;
        let beam_size = i32::try_from(search.beams.max(2)).unwrap_or(2);
        let mut params = FullParams::new(SamplingStrategy::BeamSearch {
            beam_size,
            patience: -1.0,
        });
        params.set_n_threads(i32::try_from(search.threads).unwrap_or(1));
        params.set_language(Some(search.language));
        params.set_audio_ctx(search.encoder_ctx);
        params.set_no_context(true);
        params.set_tokens(search.prompt);
        params.set_single_segment(true);
        params.set_max_tokens(i32::try_from(search.max_tokens).unwrap_or(i32::MAX));
        // One attempt at temperature 0; OpenAI's non-speech token suppression.
        params.set_temperature_inc(0.0);
        params.set_suppress_nst(true);
        params.set_print_special(false);
        params.set_print_progress(false);
        params.set_print_realtime(false);
        params.set_print_timestamps(false);
        let stop = search.stop;
        // SAFETY: `should_stop` only reads the `Stop` behind its user data, through a
        // shared reference (an `Instant` and an atomic flag: safe from any of ggml's
        // threads). `stop` outlives the `full` call below, the only user of the pointer,
        // and is not moved or mutated while it runs.
        unsafe {
            params.set_abort_callback(Some(should_stop));
            params.set_abort_callback_user_data(std::ptr::from_ref(stop).cast_mut().cast());
        }
        let searched = searcher.full(params, audio);
        stop.check()?;
        searched.map_err(|e| failed("beam search", e))?;
        let mut tokens = Vec::new();
        for index in 0..searcher.full_n_segments() {
            let Some(segment) = searcher.get_segment(index) else {
                continue;
            };
            tokens.extend(
                (0..segment.n_tokens())
                    .filter_map(|t| segment.get_token(t))
                    .map(|token| token.token_id()),
            );
        }
        Ok(tokens)
    }

    /// Decoder positions (the longest token sequence [`DecoderState::logits_after`] takes).
    pub(crate) fn n_text_ctx(&self) -> usize {
        self.n_text_ctx
    }

    /// The logits of the token after `sequence` (`n_vocab` floats), on the current
    /// encoding. Only the part of `sequence` the KV cache does not already hold is
    /// decoded: the longest prefix shared with the previous call is reused, so decoding
    /// token by token, or scoring several continuations of one prefix, costs one decoder
    /// run per new token. A row the last decoder run left (the last token's, or every
    /// token's after [`Self::decode_ahead`]) is returned without a run.
    pub(crate) fn logits_after(&mut self, sequence: &[i32], threads: usize) -> Result<&[f32]> {
        if !self.has_row(sequence) {
            self.run(sequence, &[], threads)?;
        }
        self.row(sequence.len() - 1)
    }

    /// True when the last decoder run left the logits row after `sequence`.
    pub(crate) fn has_row(&self, sequence: &[i32]) -> bool {
        !sequence.is_empty()
            && self.rows.contains(&(sequence.len() - 1))
            && self.cached.starts_with(sequence)
    }

    /// Decodes `sequence` and then `draft` in one decoder run, keeping every new
    /// token's logits row (where whisper.cpp can copy them out: [`CHECKS_DRAFTS`]):
    /// [`Self::logits_after`] then returns the rows after `sequence` and after each of
    /// `draft`'s tokens that a decode writes in turn, without a run of its own. Checking
    /// 8 draft tokens costs about 2.4 single-token runs (measured in docs/engine.md). A
    /// draft longer than the decoder's context left is cut.
    pub(crate) fn decode_ahead(
        &mut self,
        sequence: &[i32],
        draft: &[i32],
        threads: usize,
    ) -> Result<()> {
        if !CHECKS_DRAFTS || draft.is_empty() {
            return Ok(());
        }
        let room = self.n_text_ctx.saturating_sub(sequence.len());
        self.run(sequence, &draft[..draft.len().min(room)], threads)
    }

    /// One decoder run over what of `sequence` + `draft` the KV cache lacks (at least
    /// `sequence`'s last token), every row copied out when `draft` is not empty.
    fn run(&mut self, sequence: &[i32], draft: &[i32], threads: usize) -> Result<()> {
        if !self.encoded {
            return Err(failed("decoder", "decode before encode"));
        }
        if sequence.is_empty() || sequence.len() + draft.len() > self.n_text_ctx {
            return Err(failed(
                "decoder",
                "token sequence out of the decoder's context",
            ));
        }
        let shared = self
            .cached
            .iter()
            .zip(sequence)
            .take_while(|(a, b)| a == b)
            .count();
        // `sequence`'s last token is always decoded: its logits are the ones wanted.
        let n_past = shared.min(sequence.len() - 1);
        self.cached.truncate(n_past);
        self.rows = 0..0;
        let every_row = !draft.is_empty();
        let joined;
        let new = if every_row {
            joined = [&sequence[n_past..], draft].concat();
            &joined
        } else {
            &sequence[n_past..]
        };
        #[cfg(whisper_additions)]
        // SAFETY: the function sets a thread-local flag of the patched whisper.cpp; the
        // decode below runs its batch preparation on this thread, and the flag is set
        // back before anything else decodes here.
        unsafe {
            ctxscribe_whisper_all_logits(every_row);
        }
        self.runs.fetch_add(1, Ordering::Relaxed);
        let decoded = self.state.decode(new, n_past, threads);
        #[cfg(whisper_additions)]
        // SAFETY: as above; whisper.cpp's default again.
        unsafe {
            ctxscribe_whisper_all_logits(false);
        }
        decoded.map_err(|e| failed("decoder", e))?;
        self.cached.extend_from_slice(new);
        self.rows_from = n_past;
        let first_filled = if every_row {
            n_past
        } else {
            self.cached.len() - 1
        };
        self.rows = first_filled..self.cached.len();
        Ok(())
    }

    /// The logits row after `cached[..=position]`, which [`Self::rows`] holds.
    fn row(&self, position: usize) -> Result<&[f32]> {
        if !self.rows.contains(&position) {
            return Err(failed("logits", "no logits row for this position"));
        }
        let first_row = self.state.get_logits().map_err(|e| failed("logits", e))?;
        if first_row.len() != self.n_vocab {
            return Err(failed("logits", "unexpected logits length"));
        }
        let index = position - self.rows_from;
        // SAFETY: after a decoder run over n tokens, whisper.cpp's logits buffer (the one
        // `whisper_get_logits_from_state` points to, whose first row `get_logits`
        // returns) holds n * n_vocab floats (`logits_out.resize(n_tokens*n_vocab)` in
        // `whisper_decode_internal`); the run's token i is at position `rows_from + i`,
        // and `rows` lists the positions whose rows it copied out (the last token's,
        // marked by `whisper_batch_prep_legacy`, or every token's with the all-logits
        // flag), so `index < n`. The slice borrows `self`, so no other run can resize
        // the buffer while it lives.
        let row = unsafe {
            std::slice::from_raw_parts(first_row.as_ptr().add(index * self.n_vocab), self.n_vocab)
        };
        Ok(row)
    }
}

/// What [`DecoderState::search_beams`] searches with.
#[derive(Debug)]
pub(crate) struct BeamSearch<'a> {
    /// The window's language code (`en`).
    pub(crate) language: &'a str,
    /// Previous-text tokens (the context prompt); may be empty.
    pub(crate) prompt: &'a [i32],
    /// The encoder context of the search's own encoder pass (frames; 0: the full 30 s).
    pub(crate) encoder_ctx: i32,
    /// Hypotheses kept per step (at least 2).
    pub(crate) beams: usize,
    /// Most tokens the transcript may have.
    pub(crate) max_tokens: usize,
    /// When to give up (also checked by whisper.cpp between steps).
    pub(crate) stop: &'a Stop,
    pub(crate) threads: usize,
}

/// whisper.cpp's abort callback: true once the [`Stop`] behind `user_data` is due.
unsafe extern "C" fn should_stop(user_data: *mut c_void) -> bool {
    // SAFETY: `search_beams` passes a pointer to a `Stop` that outlives the call that
    // invokes this callback, and nothing mutates it meanwhile; a shared reference is
    // enough (`Stop` is `Sync`).
    let stop = unsafe { &*user_data.cast_const().cast::<Stop>() };
    stop.is_due()
}

/// whisper.cpp's encoder-begin callback that stops `whisper_full` before its first
/// encoder pass, after it has set the spectrogram and the encoder context.
unsafe extern "C" fn stop_before_encoding(
    _context: *mut whisper_rs::WhisperSysContext,
    _state: *mut whisper_rs::WhisperSysState,
    _user_data: *mut c_void,
) -> bool {
    false
}

fn failed(what: &str, error: impl std::fmt::Display) -> Error {
    Error::TranscriptionFailed {
        message: format!("whisper.cpp {what} failed: {error}"),
        source: None,
    }
}

/// Centiseconds (whisper.cpp's time unit) to a sample index at 16 kHz.
pub(crate) fn centis_to_samples(centis: f32) -> usize {
    let samples = f64::from(centis.max(0.0)) / 100.0 * f64::from(TARGET_SAMPLE_RATE);
    // Truncation intended: a non-negative, bounded time converted to an index.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let index = samples.round() as usize;
    index
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn centiseconds_convert_to_samples() {
        assert_eq!(centis_to_samples(100.0), 16_000);
        assert_eq!(centis_to_samples(-5.0), 0);
    }

    /// Set in the child process of the test below: abort through ggml.
    const ABORT_CHILD: &str = "CTXSCRIBE_TEST_GGML_ABORT_CHILD";

    /// ggml's internal checks end in `ggml_abort`. With the hook, the process writes the
    /// message and aborts at once; without it, ggml forks a debugger first, which hangs
    /// where it cannot attach (this machine's containers), so the child must end in time.
    #[test]
    fn a_ggml_abort_reports_its_message_and_ends_the_process_without_hanging() {
        if std::env::var_os(ABORT_CHILD).is_some() {
            install_abort_hook();
            // SAFETY: `ggml_abort` takes a file name, a line and a printf format, here
            // NUL-terminated literals whose format has no conversions; it never returns.
            unsafe {
                sys::ggml_abort(c"test.c".as_ptr(), 7, c"GGML_ASSERT(test) failed".as_ptr());
            }
        }
        let mut child = std::process::Command::new(std::env::current_exe().expect("test binary"))
            .args(["--exact", "engine::binding::tests::a_ggml_abort_reports_its_message_and_ends_the_process_without_hanging", "--nocapture"])
            .env(ABORT_CHILD, "1")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("the test binary starts");
        let started = std::time::Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().expect("waitable") {
                break status;
            }
            if started.elapsed() > std::time::Duration::from_secs(60) {
                let _ = child.kill();
                panic!("the aborting child still runs after 60 s (a debugger waits on it)");
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().expect("piped"), &mut stderr)
            .expect("stderr");
        assert!(!status.success(), "{status:?}");
        assert!(
            stderr.contains(
                "the engine (ggml) aborted the process: test.c:7: GGML_ASSERT(test) failed"
            ),
            "{stderr}"
        );
    }
}
