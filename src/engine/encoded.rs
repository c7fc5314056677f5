//! One window's encoding, open for the passes the caller's judge asks for: prompted
//! and biased decodes, beam searches and teacher-forced scores, all on the window's one
//! encoder pass ([`EncodedWindow`], made by [`super::WhisperEngine`] for each window).

use std::sync::atomic::{AtomicUsize, Ordering};

use super::WindowPasses;
use super::biasing::TermBias;
use super::binding::{BeamSearch, DecoderState, Model};
use super::decode::{self, DecodeRequest};
use super::repeats;
use super::score::score;
use super::stop::Stop;
use super::text::{text_before, window_text};
use crate::context::Language;
use crate::error::Result;

/// The longest window whose beam search costs about a greedy decode (10 s): whisper.cpp's
/// batched search encodes the window again and decodes every beam to its end, 0.45-0.99 s
/// on the short dictation clips (2-6.5 s) and 3-8 s on the 20-28 s windows of a long
/// dictation.
const CHEAP_SEARCH_MAX_SAMPLES: usize = 10 * crate::audio::TARGET_SAMPLE_RATE as usize;

/// One window's encoding, open for more decodes and for scoring: every pass the
/// window's judge asks for reuses the one encoder pass (and the KV cache of any prefix
/// the passes share).
pub struct EncodedWindow<'a> {
    pub(super) model: &'a Model,
    /// Threads of a whisper.cpp call.
    pub(super) threads: usize,
    /// Beams of a decode (1: greedy), as the engine is configured.
    pub(super) beam_size: usize,
    /// The engine's count of encoder passes.
    pub(super) encoder_passes: &'a AtomicUsize,
    pub(super) state: &'a mut DecoderState,
    pub(super) language: Language,
    /// The window's samples (the encoding's input).
    pub(super) audio: &'a [f32],
    /// The encoder context of an encoding trimmed to the window, which whisper.cpp's
    /// beam search encodes it over; `None` for a window too long for one.
    pub(super) trimmed_ctx: Option<i32>,
    pub(super) stop: &'a Stop,
    pub(super) plain_text: String,
    /// The transcript tokens of the window's last decode (at first the plain one): the
    /// draft of the next prompted decode ([`super::draft`]), which mostly writes them
    /// again; a pass prompted with the terms after another writes them where it did.
    pub(super) draft: Vec<i32>,
    /// Where in `audio` the next window starts (the plain text's speech end), when the
    /// window's audio runs on past its plain text; `None` when it ends with it.
    pub(super) next_window_at: Option<usize>,
    /// The window's text starts a sentence ([`WindowPasses::starts_sentence`]).
    pub(super) starts_sentence: bool,
}

impl std::fmt::Debug for EncodedWindow<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EncodedWindow")
            .field("language", &self.language)
            .field("audio_samples", &self.audio.len())
            .field("plain_text", &self.plain_text)
            .finish_non_exhaustive()
    }
}

impl EncodedWindow<'_> {
    /// A decode of this window's encoding prompted with `prompt`, leaning towards
    /// `bias`, with `beams` hypotheses (1: greedy), that stops where its text repeats.
    fn decode_with(
        &mut self,
        prompt: &str,
        bias: Option<&TermBias>,
        beams: usize,
    ) -> Result<String> {
        let prompt_tokens = self.model.tokenize(prompt)?;
        let decoded = decode::decode(
            self.state,
            self.model.vocabulary(),
            &DecodeRequest {
                language: self.language,
                prompt: &prompt_tokens,
                timestamps: true,
                bias: bias.filter(|b| !b.is_empty()),
                audio_samples: self.audio.len(),
                stop: self.stop,
                threads: self.threads,
                beam_size: beams,
                stop_at_repeat: true,
                sentence_case: false,
                term_words: &[],
                on_segment: None,
                draft: Some(&self.draft),
            },
        )?;
        // A decode that lost much of the speech (a copy of the prompt) is no draft.
        if !decoded.is_loop() && decoded.tokens.len() * 2 >= self.draft.len() {
            self.draft.clone_from(&decoded.tokens);
        }
        Ok(self.text_of(&decoded.tokens))
    }

    /// The text of `tokens` decoded on this window, without the segments that start
    /// where the next window does ([`EncodedWindow::next_window_at`]): the plain text
    /// ended there and the next window decodes the speech after it again. A prompted
    /// decode hears the whole window and can run on into that speech ("Karris booked
    /// the big room." at the end of one window and the start of the next); kept, it
    /// would be written twice.
    fn text_of(&self, tokens: &[i32]) -> String {
        let mut timed = Vec::new();
        let (text, _) = window_text(
            self.model.vocabulary(),
            tokens,
            self.audio.len(),
            &mut timed,
        );
        self.next_window_at
            .and_then(|next| text_before(&timed, next))
            .unwrap_or(text)
    }

    /// A decode of this window prompted with `prompt`, by whisper.cpp's batched beam
    /// search with `beams` hypotheses ([`DecoderState::search_beams`]), cut where its text
    /// starts repeating or reading itself again from the start.
    fn search_beams(&mut self, prompt: &str, beams: usize, encoder_ctx: i32) -> Result<String> {
        let prompt_tokens = self.model.tokenize(prompt)?;
        let search = BeamSearch {
            language: self.language.code(),
            prompt: decode::prompt_tail(&prompt_tokens),
            encoder_ctx,
            beams,
            max_tokens: decode::token_budget(self.audio.len()),
            stop: self.stop,
            threads: self.threads,
        };
        let tokens = searched_tokens(
            self.model,
            self.state,
            self.audio,
            &search,
            self.encoder_passes,
        )?;
        let mut text = self.text_of(&tokens);
        // Read again from its start where the plain decode, which hears the speech end,
        // does not say it twice: the search ran on past the speech.
        if let Some(at) = repeats::restart_offset(&text)
            && repeats::restart_offset(&self.plain_text).is_none()
        {
            text.truncate(at);
            text.truncate(text.trim_end_matches([' ', ',', ';']).len());
        }
        Ok(text)
    }
}

/// The transcript tokens (text and timestamps) of whisper.cpp's batched beam search over
/// `audio`, the window `state` has encoded ([`DecoderState::search_beams`]), up to where
/// they start repeating themselves ([`repeats::repeat_start`]).
pub(super) fn searched_tokens(
    model: &Model,
    state: &DecoderState,
    audio: &[f32],
    search: &BeamSearch<'_>,
    encoder_passes: &AtomicUsize,
) -> Result<Vec<i32>> {
    let vocabulary = model.vocabulary();
    encoder_passes.fetch_add(1, Ordering::Relaxed);
    let mut tokens = state.search_beams(model, audio, search)?;
    if let Some(start) = repeats::repeat_start(vocabulary, &tokens) {
        tokens.truncate(start);
    }
    tokens.retain(|&t| vocabulary.is_text(t) || vocabulary.is_timestamp(t));
    Ok(tokens)
}

impl WindowPasses for EncodedWindow<'_> {
    fn language(&self) -> Option<Language> {
        Some(self.language)
    }

    fn plain_text(&self) -> &str {
        &self.plain_text
    }

    fn continues(&self) -> bool {
        self.next_window_at.is_some()
    }

    fn starts_sentence(&self) -> bool {
        self.starts_sentence
    }

    fn can_score(&self) -> bool {
        true
    }

    fn beams_are_cheap(&self) -> bool {
        self.trimmed_ctx.is_some() && self.audio.len() <= CHEAP_SEARCH_MAX_SAMPLES
    }

    fn decode_prompted(&mut self, prompt: &str, bias: Option<&TermBias>) -> Result<String> {
        let beams = self.beam_size;
        self.decode_with(prompt, bias, beams)
    }

    fn decode_prompted_beams(&mut self, prompt: &str, beams: usize) -> Result<String> {
        let beams = beams.max(self.beam_size);
        // whisper.cpp's batched search encodes the window again: cheap on an encoding
        // trimmed to the window (a 4 s clip: 0.35-0.6 s for 2-5 beams, encoder pass
        // included, against 0.5-1.7 s for the sequential search), 1.3-2.7 s on a full 30 s
        // one. A short window encoded over 30 s for its language is searched trimmed too.
        if beams > 1
            && let Some(encoder_ctx) = self.trimmed_ctx
        {
            self.search_beams(prompt, beams, encoder_ctx)
        } else {
            self.decode_with(prompt, None, beams)
        }
    }

    fn score(
        &mut self,
        prompt: &str,
        prefix: &str,
        continuation: &str,
    ) -> Result<Option<Vec<f32>>> {
        let prompt = self.model.tokenize(prompt)?;
        let bpe = self.model.vocabulary().bpe();
        let prefix = bpe.encode(prefix).unwrap_or_default();
        let Some(continuation) = bpe.encode(continuation) else {
            return Ok(None);
        };
        self.score_tokens(&prompt, &prefix, &continuation)
    }

    /// Teacher forcing on this window's encoding, untimed: the task prefix, the `prompt`
    /// (previous-text tokens, may be empty), the `prefix` transcript tokens, then the
    /// log-probability of each token of `continuation`.
    fn score_tokens(
        &mut self,
        prompt: &[i32],
        prefix: &[i32],
        continuation: &[i32],
    ) -> Result<Option<Vec<f32>>> {
        self.stop.check()?;
        let vocabulary = self.model.vocabulary();
        let (mut sequence, _) = decode::prefix_tokens(vocabulary, prompt, self.language, false);
        sequence.extend_from_slice(prefix);
        let threads = self.threads;
        score(self.state, vocabulary, &sequence, continuation, threads).map(Some)
    }
}
