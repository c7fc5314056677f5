//! One decode of an encoded window as its attempts share it: the request, what every
//! attempt starts from, and what one attempt's search wrote. Used by the greedy and
//! sampling decoder (`decode.rs`) and the beam search (`beam.rs`).

use super::biasing::TermBias;
use super::logits::StepRules;
use super::stop::Stop;
use super::tokens::Vocabulary;
use crate::context::Language;

/// A timestamp this close to the end of the audio (timestamp steps, 0.1 s) ends a
/// timed transcript.
const AUDIO_END_STEPS: usize = 5;

/// One decode of an encoded window.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DecodeRequest<'a> {
    pub(crate) language: Language,
    /// Previous text (tokens after `<|startofprev|>`), at most [`MAX_PROMPT_TOKENS`].
    pub(crate) prompt: &'a [i32],
    /// Write timestamp tokens (segments), or one untimed segment.
    pub(crate) timestamps: bool,
    pub(crate) bias: Option<&'a TermBias>,
    /// The window's audio length in samples (16 kHz).
    pub(crate) audio_samples: usize,
    /// When to give up (checked before every step).
    pub(crate) stop: &'a Stop,
    pub(crate) threads: usize,
    /// Beams of the temperature-0 attempt (1: greedy).
    pub(crate) beam_size: usize,
    /// End the decode where its text starts repeating itself ([`repeat_start`]), keeping
    /// the first copy: for prompted decodes, which on a trimmed encoding may read the
    /// sentence again instead of ending.
    pub(crate) stop_at_repeat: bool,
    /// Break a greedy step's near tie between a capitalised word mid-sentence and the
    /// same word in lowercase towards lowercase ([`super::casing`]): for plain decodes of
    /// languages that capitalise only names.
    pub(crate) sentence_case: bool,
    /// Words whose capital [`Self::sentence_case`] keeps ([`super::EngineRequest::term_words`]).
    pub(crate) term_words: &'a [String],
    /// Told of each segment the first, greedy (temperature-0) attempt closes
    /// ([`report_segment`]); [`fall_back`]'s attempts ignore it.
    pub(crate) on_segment: Option<SegmentHook<'a>>,
    /// Transcript tokens this decode likely writes again, checked several at a time
    /// ([`super::draft`]): another decode of the same window. The text is the same
    /// with or without it.
    pub(crate) draft: Option<&'a [i32]>,
}

/// Gets an attempt's transcript tokens so far each time a timestamp closes a segment.
#[derive(Clone, Copy)]
pub(crate) struct SegmentHook<'a>(pub(crate) &'a dyn Fn(&[i32]));

impl std::fmt::Debug for SegmentHook<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SegmentHook")
    }
}

/// What every attempt of a decode starts from.
pub(super) struct AttemptSetup {
    /// The prompt and task tokens before the transcript.
    pub(super) prefix: Vec<i32>,
    pub(super) no_speech_prob: f32,
    pub(super) rules: StepRules,
    /// Transcript tokens the attempt may write.
    pub(super) budget: usize,
}

/// What one attempt's search wrote.
pub(super) struct Searched {
    /// Transcript tokens, without the end-of-text.
    pub(super) tokens: Vec<i32>,
    /// The log-probability of each of `tokens`.
    pub(super) logprobs: Vec<f32>,
    /// The log-probability of the end-of-text (0 when the attempt did not end with it).
    pub(super) end_logprob: f32,
    pub(super) over_budget: bool,
}

/// True when `token` is a timestamp within [`AUDIO_END_STEPS`] of the end of the audio:
/// it ends a timed transcript (whisper.cpp's rule: on a short window the decoder
/// otherwise fills the time left with repeats).
pub(super) fn ends_the_audio(
    vocabulary: &Vocabulary,
    request: &DecodeRequest<'_>,
    token: i32,
) -> bool {
    request.timestamps
        && vocabulary
            .timestamp_index(token)
            .is_some_and(|index| (index + AUDIO_END_STEPS) * 320 >= request.audio_samples)
}
