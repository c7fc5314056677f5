//! The embedded engine: our own Whisper decoding on whisper.cpp's encoder and decoder.
//!
//! One [`WhisperEngine`] holds the model (loaded once, shared by every call and thread)
//! and a pool of per-call states. A transcription is an [`EngineSession`] the caller
//! (the pipeline) pulls windows from (`session.rs`): load (`binding.rs`; the CPU kernels
//! from `kernels.rs` and the device from `device.rs`, the other two modules with
//! `unsafe`; matrices in bf16 where that is faster and fits, `weights.rs`) -> speech
//! detection and windows along speech boundaries ([`windows`]) -> per window
//! (`whisper.rs`): one encoder pass, language detection on that encoding (`detect.rs`),
//! the plain decode (`decode.rs`: greedy with temperature fallback, timestamp rules from
//! `logits.rs`, [`biasing`] with withdrawal) -> the window handed to the caller, who may
//! decode the same encoding again with a prompt and score candidate texts on it
//! (`score.rs`, teacher forcing) before it accepts the window's text.

mod attempt;
mod beam;
pub mod biasing;
mod binding;
pub mod bpe;
mod casing;
mod decode;
mod detect;
mod device;
mod draft;
mod encoded;
mod kernels;
mod logits;
mod pool;
mod repeats;
mod score;
mod session;
pub mod stop;
mod text;
mod tokens;
mod weights;
mod whisper;
pub mod windows;

use std::path::PathBuf;

pub use biasing::{BiasPhrase, BiasStrength, MatchStatus, TermBias};
pub use device::{Backend, Device, gpu_backends_built};
pub use encoded::EncodedWindow;
pub use kernels::{CpuKernels, cpu_kernels, cpu_kernels_json, cpu_kernels_loaded};
pub use session::WhisperSession;
pub use stop::{CancelToken, Stop};
pub use whisper::{WhisperEngine, available_cores, concurrent_calls};

use crate::context::Languages;

/// How the decoder searches for the transcript.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
#[non_exhaustive]
pub enum Decoding {
    /// Pick the most probable token at each step (fastest).
    #[default]
    Greedy,
    /// Beam search with `beam_size` beams.
    BeamSearch {
        /// Number of beams (whisper.cpp default: 5).
        beam_size: u8,
    },
}

/// How the model's weight matrices are held in memory. On a GPU they stay as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Weights {
    /// Nothing quantized: an f16 model's (the converted models are) matrices as bf16
    /// where the CPU multiplies it natively (AVX-512 BF16), else as stored.
    #[default]
    Unquantized,
    /// As [`Self::Unquantized`], and the decoder's matrices as 8-bit q8_0: a decoder step
    /// reads every one of them to write one token, and is bound by those bytes. Measured
    /// in docs/benchmarks.md: a decoder step about 1.3x faster and short clips 15-20%,
    /// the same plain WER, but 4 fewer of the context sets' 187 terms written; hence not
    /// the default.
    Fastest,
    /// Exactly as the model file stores them.
    AsStored,
}

/// Settings of the embedded engine.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// The whisper.cpp ggml/gguf model file.
    pub model_path: PathBuf,
    /// The Silero VAD model (ggml); `None` disables VAD (only digital silence is skipped).
    pub vad_model_path: Option<PathBuf>,
    /// Threads per transcription.
    pub threads: usize,
    /// Decoder search.
    pub decoding: Decoding,
    /// The weight matrices' format in memory.
    pub weights: Weights,
    /// Where the matrices are multiplied: a GPU of a backend this build includes, or the
    /// CPU.
    pub device: Device,
}

/// What the engine is asked to do with one signal.
#[derive(Debug, Clone, Copy)]
pub struct EngineRequest<'a> {
    /// 16 kHz mono samples in [-1, 1].
    pub samples: &'a [f32],
    /// Which languages the audio may be in.
    pub languages: &'a Languages,
    /// Text that conditions the decoder (Whisper's prompt), already rendered.
    pub prompt: &'a str,
    /// When to give up (deadline, cancellation), checked between decoding steps.
    pub stop: &'a Stop,
    /// Decode-time biasing towards the context terms' tokens, if any.
    pub bias: Option<&'a TermBias>,
    /// A capital the model is unsure of mid-sentence is written in lowercase (see
    /// `casing.rs`), unless the word may start one of `term_words`.
    pub sentence_case: bool,
    /// The context terms' words, lowercase and sorted, as
    /// [`crate::context::ContextTerms::words`] gives them (their written parts and spoken
    /// forms: "nav", "bar" for `NavBar`): a capital that may start one of them stays, since
    /// the corrections read the plain pass's capitals ("Nav Bar" for `NavBar`). Empty
    /// without context.
    pub term_words: &'a [String],
}

/// What the engine produced.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineOutput {
    /// The transcript, whitespace-normalised; empty when no speech was found.
    pub text: String,
    /// The language decoded in (`None` when there was no speech to decode).
    pub language: Option<crate::context::Language>,
    /// Seconds of audio that were decoded (speech windows only).
    pub decoded_secs: f64,
    /// The plain decodes' timed segments, in seconds of the input signal, in order. Their
    /// text is the plain decodes' (before any window judge rewrote it): the transcriber
    /// places the final text in them ([`crate::transcript::align_segments`]). Empty for
    /// providers without timestamps.
    pub segments: Vec<crate::transcript::Segment>,
}

/// One window of a transcription as the per-window judge sees it: its plain decode, and
/// more passes over the same audio. The embedded engine serves every pass from the
/// window's one encoding; a remote provider's "window" is the whole signal, each pass a
/// request.
pub trait WindowPasses {
    /// The language the window was decoded in, if known.
    fn language(&self) -> Option<crate::context::Language>;

    /// The window's plain (unprompted, unbiased unless the request asked) transcript.
    fn plain_text(&self) -> &str;

    /// True when the window's audio runs on past its plain text and the next window
    /// decodes that speech again: words a pass writes after the plain text's last word
    /// belong to the next window (the embedded engine; a remote provider's one window
    /// is the whole signal).
    fn continues(&self) -> bool {
        false
    }

    /// True when the window's text starts a sentence: it is the first with words, or
    /// the text before it ends a sentence (a remote provider's one window is the whole
    /// signal).
    fn starts_sentence(&self) -> bool {
        true
    }

    /// True when [`WindowPasses::score`] can score (the embedded engine).
    fn can_score(&self) -> bool {
        false
    }

    /// Decodes the window again, prompted with `prompt` and leaning towards `bias`.
    ///
    /// # Errors
    /// [`crate::Error::TranscriptionFailed`] when decoding fails or the deadline passes.
    fn decode_prompted(&mut self, prompt: &str, bias: Option<&TermBias>) -> crate::Result<String>;

    /// True when a beam search of this window ([`WindowPasses::decode_prompted_beams`])
    /// costs about what a greedy decode does: for a remote provider (which decodes as it
    /// always does), and for the embedded engine on a window of up to 10 s (whisper.cpp's
    /// batched search, on an encoding trimmed to the window). A longer window's search
    /// costs several greedy decodes: the batched one encodes the window again, and one
    /// of a full 30 s encoding advances hypothesis by hypothesis.
    fn beams_are_cheap(&self) -> bool {
        true
    }

    /// [`WindowPasses::decode_prompted`] without bias, searching `beams` hypotheses where
    /// the provider can (the embedded engine; others decode as they always do).
    ///
    /// # Errors
    /// [`crate::Error::TranscriptionFailed`] when decoding fails or the deadline passes.
    fn decode_prompted_beams(&mut self, prompt: &str, beams: usize) -> crate::Result<String> {
        let _ = beams;
        self.decode_prompted(prompt, None)
    }

    /// The model's log-probability of each token of `continuation` after `prefix` (both
    /// transcript text of this window, `prefix` may be empty), prompted with `prompt`
    /// (may be empty); `None` when the provider cannot score or cannot spell it.
    ///
    /// # Errors
    /// [`crate::Error::TranscriptionFailed`] when decoding fails or the deadline passes.
    fn score(
        &mut self,
        prompt: &str,
        prefix: &str,
        continuation: &str,
    ) -> crate::Result<Option<Vec<f32>>>;

    /// [`WindowPasses::score`] on token ids (`prompt`: previous-text tokens; `prefix`
    /// and `continuation`: transcript tokens); `None` when the provider cannot score.
    ///
    /// # Errors
    /// [`crate::Error::InvalidRequest`] for an empty continuation or a token outside the
    /// vocabulary; [`crate::Error::TranscriptionFailed`] when decoding fails.
    fn score_tokens(
        &mut self,
        prompt: &[i32],
        prefix: &[i32],
        continuation: &[i32],
    ) -> crate::Result<Option<Vec<f32>>> {
        let _ = (prompt, prefix, continuation);
        Ok(None)
    }
}

/// One transcription, pulled window by window by its caller: the embedded engine's
/// windows along the speech ([`WhisperSession`]), or a remote provider's whole signal as
/// one window.
pub trait EngineSession {
    /// The next window, encoded and decoded plainly, with more passes over it; `None`
    /// once the signal is done. `watch` sees its text while it is decoded. Every window
    /// returned must be [`EngineSession::accept`]ed before the next is asked for.
    ///
    /// # Errors
    /// [`crate::Error::TranscriptionFailed`] when decoding fails;
    /// [`crate::Error::Cancelled`] or [`crate::Error::DeadlineExceeded`] when the
    /// request's [`Stop`] says so.
    fn next_window(
        &mut self,
        watch: &mut SegmentWatcher<'_>,
    ) -> crate::Result<Option<Box<dyn WindowPasses + '_>>>;

    /// The last window's final text (empty: nothing to keep).
    fn accept(&mut self, text: String) -> WindowDone;

    /// The transcript of every accepted window.
    fn finish(&mut self) -> EngineOutput;
}

/// What accepting a window closed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WindowDone {
    /// The window's plain timed segments, in seconds of the input signal (their text is
    /// the plain decode's; none for providers without timestamps).
    pub segments: Vec<crate::transcript::Segment>,
    /// Seconds of the input signal transcribed so far.
    pub through_secs: f64,
}

/// Every window's plain decode: `session` driven to its end with no judge.
///
/// # Errors
/// As [`EngineSession::next_window`].
pub fn transcribe_plain(session: &mut dyn EngineSession) -> crate::Result<EngineOutput> {
    transcribe_judged(session, &mut |window| Ok(window.plain_text().to_owned()))
}

/// `session` driven to its end, each window's text from `judge` (for tests and
/// benches that look at windows; the pipeline pulls them itself).
///
/// # Errors
/// As [`EngineSession::next_window`], and whatever `judge` returns.
pub fn transcribe_judged(
    session: &mut dyn EngineSession,
    judge: &mut dyn FnMut(&mut dyn WindowPasses) -> crate::Result<String>,
) -> crate::Result<EngineOutput> {
    loop {
        let Some(mut window) = session.next_window(&mut |_: &str| {})? else {
            break;
        };
        let text = judge(&mut *window)?;
        drop(window);
        session.accept(text);
    }
    Ok(session.finish())
}

/// Watches a window while it is decoded: gets the window's text so far (its timed
/// segments the first, temperature-0, greedy attempt has closed, filtered and joined as
/// the window's text is) each time that attempt closes a segment whose text so far
/// passes the temperature fallback's checks. A later attempt (fallback) may still replace
/// the window's text: the window's final text is what its judge answers.
pub type SegmentWatcher<'a> = dyn FnMut(&str) + Send + 'a;
