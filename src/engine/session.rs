//! [`WhisperSession`]: one transcription, window by window, driven by its caller.
//!
//! The caller (the pipeline) pulls windows: [`EngineSession::next_window`] encodes the
//! next window, detects its language if not known yet and decodes it plainly; the caller
//! judges it (more passes over the same encoding) and hands back its final text with
//! [`EngineSession::accept`]; [`EngineSession::finish`] joins the texts.
//!
//! Whisper sometimes ends a timed window early: after "Why should one halt on the way?"
//! it wrote the end of the text and left the 2.8 s after it, "Your power is sufficient,
//! I said.", undecoded. Windows end 0.25 s after the VAD's last speech, so a longer rest
//! holds speech. It starts the next window when it fits there (decoded alone, 2.9 s of
//! "is the Brooklyn Bridge. The word is fare." after "How old" came out as "the word is
//! fair" twice), else it is decoded on its own, as another window of the session.

use super::binding::DecoderState;
use super::encoded::EncodedWindow;
use super::text::normalise_whitespace;
use super::whisper::{Run, WhisperEngine, trimmed_encoder_ctx};
use super::windows::{self, Window};
use super::{EngineOutput, EngineRequest, EngineSession, SegmentWatcher, WindowDone, WindowPasses};
use crate::audio::TARGET_SAMPLE_RATE;
use crate::context::Language;
use crate::error::Result;
use crate::transcript::Segment;

/// A timed window whose text ends at least this long (seconds) before the window does is
/// decoded on from there (the window's last 0.25 s are the VAD's pad after the speech).
const MIN_UNDECODED_TAIL_SECS: f64 = 1.0;
/// Times a window is decoded on after an early end.
const MAX_CONTINUATIONS: usize = 2;

/// One transcription on the embedded engine, pulled window by window (see the module's
/// documentation, `engine/session.rs`).
pub struct WhisperSession<'e> {
    engine: &'e WhisperEngine,
    request: EngineRequest<'e>,
    /// The request's own prompt, tokenized (empty: windows carry the previous text).
    context_prompt: Vec<i32>,
    /// The windows along the speech, in order.
    plan: Vec<Window>,
    /// The next window of `plan` to start.
    next: usize,
    /// The window being decoded, piece by piece.
    current: Option<Piecing>,
    /// The undecoded end of a window, to start the next one with.
    rest: Option<Window>,
    run: Run,
    /// Samples decoded so far (speech windows only).
    decoded_samples: usize,
    /// The decoder state, taken from the engine's pool at the first window.
    state: Option<DecoderState>,
}

impl std::fmt::Debug for WhisperSession<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WhisperSession")
            .field("windows", &self.plan.len())
            .field("next", &self.next)
            .field("language", &self.run.language)
            .finish_non_exhaustive()
    }
}

/// A window being decoded: its samples and the piece decoded last.
struct Piecing {
    window: Window,
    audio: Vec<f32>,
    /// Its index in the plan.
    index: usize,
    /// Where the piece decoded last starts, in `audio`.
    start: usize,
    /// Pieces decoded after the first.
    continuations: usize,
    /// Where the piece's timed text ends (samples of the piece) when at least
    /// [`MIN_UNDECODED_TAIL_SECS`] of the piece follow it: the next piece starts there.
    next_window_at: Option<usize>,
}

/// Moves [`Run::timed`], decoded from `window`'s samples `offset..`, to
/// [`Run::segments`] in seconds of the input signal; times never go back.
fn place_timed(run: &mut Run, window: &Window, offset: usize) {
    for (range, text) in run.timed.drain(..) {
        let floor = run.segments.last().map_or(0.0, |s: &Segment| s.end);
        let start = source_secs(window, offset + range.start).max(floor);
        let end = source_secs(window, offset + range.end).max(start);
        run.segments.push(Segment::new(start, end, text));
    }
}

/// Seconds of the input signal at `offset` samples into `window`.
fn source_secs(window: &Window, offset: usize) -> f64 {
    window.source_sample(offset) as f64 / f64::from(TARGET_SAMPLE_RATE)
}

impl WhisperEngine {
    /// Transcribes one 16 kHz mono signal: every window's plain decode.
    ///
    /// # Errors
    /// [`Error::TranscriptionFailed`] when whisper.cpp fails; [`Error::Cancelled`] or
    /// [`Error::DeadlineExceeded`] when `request.stop` says so; [`Error::InvalidRequest`]
    /// when `languages` cannot be served by this model.
    pub fn transcribe(&self, request: &EngineRequest<'_>) -> Result<EngineOutput> {
        self.on_engine_threads(|| super::transcribe_plain(&mut self.session(request)?))
    }

    /// A transcription of `request.samples` that the caller drives window by window
    /// ([`EngineSession`]). Call it, and the session's methods, inside
    /// [`WhisperEngine::on_engine_threads`].
    ///
    /// # Errors
    /// [`Error::InvalidRequest`] when `languages` cannot be served by this model;
    /// [`Error::TranscriptionFailed`] when speech detection fails.
    pub fn session<'a>(&'a self, request: &EngineRequest<'a>) -> Result<WhisperSession<'a>> {
        let forced = self.forced_language(request.languages)?;
        let samples = request.samples;
        let plan = if windows::is_digital_silence(samples) {
            Vec::new()
        } else {
            let regions = self.model.speech_regions(samples)?;
            windows::plan_windows(samples, &regions)
        };
        let context_prompt = self.tokenize(request.prompt)?;
        Ok(WhisperSession::new(
            self,
            *request,
            plan,
            forced,
            context_prompt,
        ))
    }
}

impl<'e> WhisperSession<'e> {
    pub(super) fn new(
        engine: &'e WhisperEngine,
        request: EngineRequest<'e>,
        plan: Vec<Window>,
        forced: Option<Language>,
        context_prompt: Vec<i32>,
    ) -> Self {
        WhisperSession {
            engine,
            request,
            context_prompt,
            next: 0,
            current: None,
            rest: None,
            run: Run {
                language: forced,
                carry: Vec::new(),
                texts: Vec::with_capacity(plan.len()),
                timed: Vec::new(),
                segments: Vec::new(),
            },
            plan,
            decoded_samples: 0,
            state: None,
        }
    }

    /// Starts the next window of the plan (joined to the rest of the previous one, if
    /// any); false when the plan is done.
    fn start_window(&mut self) -> Result<bool> {
        let Some(planned) = self.plan.get(self.next) else {
            return Ok(false);
        };
        let window = match self.rest.take() {
            Some(rest) => rest.joined_with(planned).unwrap_or_else(|| planned.clone()),
            None => planned.clone(),
        };
        self.request.stop.check()?;
        let audio = window.render(self.request.samples);
        self.decoded_samples += audio.len();
        self.current = Some(Piecing {
            window,
            audio,
            index: self.next,
            start: 0,
            continuations: 0,
            next_window_at: None,
        });
        self.next += 1;
        Ok(true)
    }
}

impl EngineSession for WhisperSession<'_> {
    fn next_window(
        &mut self,
        watch: &mut SegmentWatcher<'_>,
    ) -> Result<Option<Box<dyn WindowPasses + '_>>> {
        if self.current.is_none() && !self.start_window()? {
            return Ok(None);
        }
        let engine = self.engine;
        let state = match &mut self.state {
            Some(state) => state,
            empty => empty.insert(
                engine
                    .states
                    .take_or(|| engine.model.new_state(&engine.decoder_runs))?,
            ),
        };
        let Some(current) = self.current.as_mut() else {
            return Ok(None);
        };
        let piece = &current.audio[current.start..];
        let plain = engine.decode_window(
            state,
            piece,
            &self.context_prompt,
            &mut self.run,
            &self.request,
            watch,
        )?;
        let min_tail = windows::secs_to_samples(MIN_UNDECODED_TAIL_SECS);
        let next_window_at = plain
            .speech_end
            .filter(|&end| piece.len().saturating_sub(end) >= min_tail);
        current.next_window_at = next_window_at;
        Ok(Some(Box::new(EncodedWindow {
            model: &engine.model,
            threads: engine.threads,
            beam_size: engine.beam_size(),
            encoder_passes: &engine.encoder_passes,
            state,
            language: plain.language,
            audio: piece,
            trimmed_ctx: trimmed_encoder_ctx(piece.len()),
            stop: self.request.stop,
            plain_text: plain.plain_text,
            draft: plain.tokens,
            next_window_at,
            starts_sentence: plain.starts_sentence,
        })))
    }

    fn accept(&mut self, text: String) -> WindowDone {
        if !text.is_empty() {
            self.run.texts.push(text);
        }
        let Some(mut current) = self.current.take() else {
            return WindowDone::default();
        };
        let closed = self.run.segments.len();
        place_timed(&mut self.run, &current.window, current.start);
        let segments = self.run.segments[closed..].to_vec();
        if let Some(end) = current.next_window_at {
            current.start += end;
            let left = current.window.rest_from(current.start);
            if let Some(next) = self.plan.get(current.index + 1)
                && left.joined_with(next).is_some()
            {
                self.decoded_samples -= current.audio.len() - current.start;
                self.rest = Some(left);
            } else if current.continuations < MAX_CONTINUATIONS {
                current.continuations += 1;
                let through_secs = source_secs(&current.window, current.start);
                self.current = Some(current);
                return WindowDone {
                    segments,
                    through_secs,
                };
            }
        }
        let through_secs = match &self.rest {
            Some(_) => source_secs(&current.window, current.start),
            None => source_secs(&current.window, current.audio.len()),
        };
        WindowDone {
            segments,
            through_secs,
        }
    }

    fn finish(&mut self) -> EngineOutput {
        let text = normalise_whitespace(&self.run.texts.join(" "));
        EngineOutput {
            language: if text.is_empty() {
                None
            } else {
                self.run.language
            },
            text,
            decoded_secs: self.decoded_samples as f64 / f64::from(TARGET_SAMPLE_RATE),
            segments: std::mem::take(&mut self.run.segments),
        }
    }
}

impl Drop for WhisperSession<'_> {
    /// A state is reusable after any outcome: every window starts with an encode.
    fn drop(&mut self) {
        if let Some(state) = self.state.take() {
            self.engine.states.give_back(state);
        }
    }
}
