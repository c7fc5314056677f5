//! Transcripts as they are decoded, and cancellation of a transcription nobody waits
//! for any more.
//!
//! [`ContextTranscriber::transcribe_request_streaming`] reports text at two grains:
//!
//! - **A request without context terms** (no dictionary and no messages, or none that
//!   give a term): every window's text is its plain decode, so it is reported segment by
//!   segment. Each time the window's first attempt (greedy, temperature 0) closes a timed
//!   segment (a timestamp token after text), and its text so far would pass the
//!   temperature fallback's checks (average log-probability, compression ratio), the
//!   window's text so far is reported (`engine::SegmentWatcher`). A window may
//!   then be decoded again: temperature fallback, or the retry without the previous
//!   window's text when the first attempt loops. Sent text cannot be taken back, so once
//!   the window is final, only the final text's extension of what was sent for it is
//!   sent, when it extends it; when it does not, nothing more is sent for that window
//!   (the next window's text follows after a space). The returned transcript (and the
//!   server's `transcript.text.done`) is always the authoritative text, exactly the
//!   non-streamed transcript: the deltas joined equal it unless a window was replaced
//!   this way (or the LLM review below rewrote it).
//! - **A request with context terms**: the window's corrections need the whole window,
//!   so the text is reported per window (up to 28 s of speech; see
//!   `engine::windows`), after its corrections; no later step takes a reported
//!   word back.
//!
//! In both, the optional LLM review of the whole transcript (`CTXSCRIBE_LLM_URL`) runs
//! after the last window and may change text already reported.
//!
//! Cancellation rides the engine's deadline checks (between decoding steps): a
//! [`CancelFlag`] set from another thread stops the transcription at its next check with
//! [`crate::Error::TranscriptionFailed`] (see `engine::cancel`).

pub use crate::engine::cancel::CancelFlag;
use crate::engine::cancel::{check_cancelled, with_cancel};
use crate::error::Result;
use crate::request::TranscriptionRequest;
use crate::transcriber::{ContextTranscriber, WindowText};
use crate::transcript::Transcript;

/// Turns the windows' texts (while decoded, and final) into deltas that only extend what
/// was sent: joined, they are the engine's transcript (the windows joined by a space,
/// whitespace-normalised, as the engine joins them) unless a window's final text does
/// not extend what was sent of it.
#[derive(Debug, Default)]
struct Deltas {
    /// Text was sent: the next window's starts with a space.
    sent_any: bool,
    /// The current window's text sent so far, whitespace-normalised.
    window: String,
}

impl Deltas {
    /// The delta for `text`, the current window's text so far or (`last`) its final one.
    fn push(&mut self, text: WindowText<'_>) -> Option<String> {
        let (text, last) = match text {
            WindowText::Decoding(text) => (text, false),
            WindowText::Final(text) => (text, true),
        };
        let delta = self.extend(text);
        if last {
            self.window.clear();
        }
        delta
    }

    /// What `text` adds to the current window's text sent so far, if it extends it.
    fn extend(&mut self, text: &str) -> Option<String> {
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        let rest = text.strip_prefix(self.window.as_str())?;
        if rest.is_empty() {
            return None;
        }
        let space = if self.window.is_empty() && self.sent_any {
            " "
        } else {
            ""
        };
        let delta = format!("{space}{rest}");
        self.window = text;
        self.sent_any = true;
        Some(delta)
    }
}

impl ContextTranscriber {
    /// Like [`ContextTranscriber::transcribe_request_blocking`], reporting the text as it
    /// is decoded (see the [module](crate::streaming) for the grain): `on_delta` gets
    /// each new piece of text (a piece that starts a window after another one starts with
    /// a space), on the engine's thread; keep it quick. Joined, the deltas are the
    /// returned [`Transcript::text`] unless a window decoded again did not extend the
    /// text already reported of it, or the LLM review changed the text at the end; the
    /// returned transcript is always the non-streamed one. `cancel` stops the
    /// transcription at the engine's next check.
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
        let mut on_text = |text: WindowText<'_>| {
            if let Some(delta) = deltas.push(text) {
                on_delta(&delta);
            }
        };
        with_cancel(Some(cancel.clone()), || {
            check_cancelled()?;
            self.transcribe_observed(request, &mut on_text)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use WindowText::{Decoding, Final};

    #[test]
    fn final_windows_join_as_the_engine_joins_them() {
        let mut deltas = Deltas::default();
        let windows = [
            " And so my fellow Americans, ",
            "",
            "  ask not  ",
            "what you can do.",
        ];
        let pieces: Vec<String> = windows
            .iter()
            .filter_map(|w| deltas.push(Final(w)))
            .collect();
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
        assert_eq!(deltas.push(Final("   ")), None);
    }

    #[test]
    fn segments_stream_and_a_replaced_window_sends_only_an_extension() {
        let mut deltas = Deltas::default();
        let events = [
            Decoding("And so,"),
            Decoding("And so, my fellow"),
            Final("And so, my fellow Americans,"),
            // Decoded again: the final text extends what was sent.
            Decoding("ask not"),
            Final("ask not what"),
            // Decoded again: the final text rewrites what was sent, so nothing more.
            Decoding("The word is fair."),
            Final("Your power is sufficient."),
            Decoding("I said."),
            Final("I said."),
        ];
        let pieces: Vec<String> = events.iter().filter_map(|&e| deltas.push(e)).collect();
        assert_eq!(
            pieces,
            [
                "And so,",
                " my fellow",
                " Americans,",
                " ask not",
                " what",
                " The word is fair.",
                " I said."
            ]
        );
    }
}
