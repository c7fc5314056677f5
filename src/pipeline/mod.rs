//! The pipeline, stage by stage, in one place (`Pipeline::stages`, which
//! [`ContextTranscriber::run`](crate::ContextTranscriber::run) runs):
//!
//! 1. decode the audio ([`crate::audio`]) to 16 kHz mono;
//! 2. the context's terms ([`ContextTerms`]: the dictionary's and those mined from the
//!    messages);
//! 3. for each window the engine session yields (`crate::engine::EngineSession`): its
//!    plain pass, the context's candidates and their judgement (`pipeline/window.rs`), then the
//!    window's text, segments and progress as [`Event`]s;
//! 4. the optional LLM review of the whole text;
//! 5. the final text placed in the plain decode's timed segments, and the [`Transcript`].
//!
//! The pipeline pulls windows from the engine, so it owns the order of the stages, and a
//! run's [`RunOptions`] (deadline, cancel token, event sink) travel with it explicitly.
//!
//! Events come at two grains:
//!
//! - **A request without context terms** (no dictionary and no messages, or none that
//!   give a term): every window's text is its plain decode, so it is reported segment by
//!   segment. Each time the window's first attempt (greedy, temperature 0) closes a timed
//!   segment, and its text so far would pass the temperature fallback's checks (average
//!   log-probability, compression ratio), the window's text so far is reported. A window
//!   may then be decoded again: temperature fallback, or the retry without the previous
//!   window's text when the first attempt loops. Sent text cannot be taken back, so once
//!   the window is final, only the final text's extension of what was sent for it is
//!   sent, when it extends it; when it does not, nothing more is sent for that window
//!   (the next window's text follows after a space). The [`Event::Done`] transcript is
//!   always the authoritative text: the deltas joined equal it unless a window was
//!   replaced this way (or the LLM review below rewrote it).
//! - **A request with context terms**: the window's corrections need the whole window,
//!   so the text is reported per window (up to 28 s of speech; see
//!   `engine::windows`), after its corrections; no later step takes a reported word back.
//!
//! In both, the optional LLM review (`CTXSCRIBE_LLM_URL`) runs after the last window and
//! may change text already reported.

mod events;
mod options;
mod stream;
mod window;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

use crate::audio::{AudioLimits, TARGET_SAMPLE_RATE};
use crate::context::{ContextLayers, ContextTerms};
use crate::engine::{EngineOutput, EngineRequest, Stop};
use crate::error::{Error, Result};
use crate::providers::{LlmCorrector, SpeechProvider};
use crate::request::TranscriptionRequest;
use crate::transcript::{
    StageTimings, Transcript, Verdict, align_segments, capitalised_sentence_start,
};
use events::{Events, WindowText};
use window::WindowPolicy;

pub use options::{Event, EventSink, RunOptions};
pub use stream::{Next, TranscriptStream};

/// Everything a run needs that outlives it: the speech provider, the optional LLM step,
/// the limits and the context layers.
#[derive(Debug)]
pub(crate) struct Pipeline {
    /// The embedded engine or a remote endpoint.
    pub(crate) engine: Box<dyn SpeechProvider>,
    /// The optional LLM correction step.
    pub(crate) llm: Option<LlmCorrector>,
    pub(crate) limits: AudioLimits,
    /// The transcriber's time limit for every run.
    pub(crate) timeout: Option<Duration>,
    pub(crate) layers: ContextLayers,
}

impl Pipeline {
    /// Runs `request` through every stage, on the engine's threads; a panic in a stage
    /// (or in the event sink) fails the run instead of unwinding into the caller.
    ///
    /// # Errors
    /// Every failure is an [`Error`] whose [`Error::code`] is the contract code;
    /// [`Error::Cancelled`] and [`Error::DeadlineExceeded`] when `options` says so.
    pub(crate) fn run(
        &self,
        request: TranscriptionRequest,
        options: RunOptions<'_>,
    ) -> Result<Transcript> {
        let started = Instant::now();
        let stop = options.stop(self.timeout, started);
        let mut result = None;
        let mut run_once = Some((request, options));
        self.engine.on_engine_threads(&mut || {
            if let Some((request, options)) = run_once.take() {
                result = Some(
                    catch_unwind(AssertUnwindSafe(|| {
                        self.stages(request, options, &stop, started)
                    }))
                    .unwrap_or_else(|_| Err(panicked())),
                );
            }
        });
        result.unwrap_or_else(|| Err(panicked()))
    }

    /// The stages, in order (see the [module](self)).
    fn stages(
        &self,
        request: TranscriptionRequest,
        options: RunOptions<'_>,
        stop: &Stop,
        started: Instant,
    ) -> Result<Transcript> {
        let TranscriptionRequest {
            audio,
            messages,
            languages,
            dictionary,
        } = request;
        let warnings = audio.warnings();
        stop.check()?;
        // 1. The audio, decoded to 16 kHz mono.
        let samples = audio.decode(&self.limits)?;
        let decoded = Instant::now();
        let audio_secs = samples.len() as f64 / f64::from(TARGET_SAMPLE_RATE);
        // 2. The context's terms.
        let terms = ContextTerms::from_context(&messages, &dictionary);
        // 3. Each window: its plain pass, the candidates and their judgement, its events.
        let policy = WindowPolicy::new(&*self.engine, self.layers, &messages, &terms);
        let mut events = Events::new(options.sink, audio_secs);
        let term_words = terms.words();
        let request = EngineRequest {
            samples: &samples,
            languages: &languages,
            prompt: "",
            stop,
            bias: None,
            sentence_case: true,
            term_words: &term_words,
        };
        let (output, edits) = self.windows(&request, &policy, !terms.is_empty(), &mut events)?;
        // 4. The optional LLM review of the whole text.
        let text = match &self.llm {
            Some(llm) if self.layers.correction && !output.text.is_empty() => {
                llm.correct(&output.text, &terms, &messages, output.language, stop)?
                    .text
            }
            _ => output.text,
        };
        // 5. The text placed in the plain decode's timed segments: the transcript.
        let finished = Instant::now();
        let transcript = Transcript {
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
        };
        events.done(&transcript);
        Ok(transcript)
    }

    /// Every window of `request` from an engine session, judged by `policy`, reported
    /// to `events` (while decoded only without context terms: with them, the
    /// corrections need the whole window); the engine's output and the judge's verdicts.
    fn windows(
        &self,
        request: &EngineRequest<'_>,
        policy: &WindowPolicy<'_>,
        has_terms: bool,
        events: &mut Events<'_, '_>,
    ) -> Result<(EngineOutput, Vec<Verdict>)> {
        let mut session = self.engine.session(request)?;
        let mut verdicts = Vec::new();
        loop {
            let mut watch = |text: &str| {
                if !has_terms {
                    events.text(WindowText::Decoding(text));
                }
            };
            let Some(mut window) = session.next_window(&mut watch)? else {
                break;
            };
            let mut text = policy.judge_window(&mut *window, &mut verdicts)?;
            // A pass prompted with the context may write a sentence's first word in
            // lowercase (it continues the prompt) where the plain decode starts it with a
            // capital (the engine's, see `capitalise_first_word`; a remote provider's
            // text is kept as it comes).
            let plain_capital = window
                .plain_text()
                .trim_start()
                .starts_with(char::is_uppercase);
            if plain_capital
                && window.starts_sentence()
                && let Some(capitalised) = capitalised_sentence_start(&text, request.term_words)
            {
                text = capitalised;
            }
            drop(window);
            events.text(WindowText::Final(&text));
            let done = session.accept(text.clone());
            events.accepted(&text, &done);
        }
        Ok((session.finish(), verdicts))
    }
}

/// The error of a run that panicked.
fn panicked() -> Error {
    Error::TranscriptionFailed {
        message: "the transcription panicked (the engine or an event handler)".into(),
        source: None,
    }
}
