//! Transcripts as they are decoded: the text of each window of speech as soon as it is
//! final, and cancellation of a transcription nobody waits for any more.
//!
//! [`ContextTranscriber::transcribe_request_streaming`] reports text per window (up to
//! 28 s of speech; see [`crate::engine::windows`]), after the context's corrections of
//! that window, so no later step takes a reported word back, except the optional LLM
//! review of the whole transcript (`CTXSCRIBE_LLM_URL`), which runs after the last window.
//!
//! Cancellation rides the engine's deadline checks (between decoding steps): a
//! [`CancelFlag`] set from another thread stops the transcription at its next check with
//! [`crate::Error::TranscriptionFailed`] (see [`crate::engine::cancel`]).

pub use crate::engine::cancel::CancelFlag;
use crate::engine::cancel::{check_cancelled, with_cancel};
use crate::error::Result;
use crate::request::TranscriptionRequest;
use crate::transcriber::ContextTranscriber;
use crate::transcript::Transcript;

/// Turns the windows' final texts into deltas whose concatenation is the engine's
/// transcript: the windows joined by a space, whitespace-normalised (as the engine joins
/// them).
#[derive(Debug, Default)]
struct Deltas {
    /// Every window's text so far, joined by spaces.
    joined: String,
    /// The normalised text reported so far.
    sent: String,
}

impl Deltas {
    /// The new text after `window`'s, if any.
    fn push(&mut self, window: &str) -> Option<String> {
        if window.is_empty() {
            return None;
        }
        if !self.joined.is_empty() {
            self.joined.push(' ');
        }
        self.joined.push_str(window);
        let normalised = self.joined.split_whitespace().collect::<Vec<_>>().join(" ");
        let delta = normalised.strip_prefix(self.sent.as_str())?.to_owned();
        self.sent = normalised;
        (!delta.is_empty()).then_some(delta)
    }
}

impl ContextTranscriber {
    /// Like [`ContextTranscriber::transcribe_request_blocking`], reporting the text as it
    /// is decoded: `on_delta` gets each window's new text (the first without, the next
    /// with a leading space) once that window is final, on the engine's thread; keep it
    /// quick. Joined, the deltas are the returned [`Transcript::text`], unless the LLM
    /// review changed the whole text at the end. `cancel` stops the transcription at the
    /// engine's next check.
    ///
    /// # Errors
    /// As [`ContextTranscriber::transcribe_request_blocking`];
    /// [`crate::Error::TranscriptionFailed`] once `cancel` is set.
    pub fn transcribe_request_streaming(
        &self,
        request: TranscriptionRequest,
        cancel: &CancelFlag,
        on_delta: &mut (dyn FnMut(&str) + Send),
    ) -> Result<Transcript> {
        let mut deltas = Deltas::default();
        let mut on_window = |window: &str| {
            if let Some(delta) = deltas.push(window) {
                on_delta(&delta);
            }
        };
        with_cancel(Some(cancel.clone()), || {
            check_cancelled()?;
            self.transcribe_observed(request, &mut on_window)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_join_as_the_engine_joins_windows() {
        let mut deltas = Deltas::default();
        let windows = [
            " And so my fellow Americans, ",
            "",
            "  ask not  ",
            "what you can do.",
        ];
        let pieces: Vec<String> = windows.iter().filter_map(|w| deltas.push(w)).collect();
        assert_eq!(
            pieces,
            [
                "And so my fellow Americans,",
                " ask not",
                " what you can do."
            ]
        );
        let engine = windows
            .join(" ")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        assert_eq!(pieces.concat(), engine);
        assert_eq!(deltas.push("   "), None);
    }
}
