//! A run's events: text deltas while windows are decoded and once they are final,
//! segments and progress once they are accepted, the transcript at the end.

use super::options::{Event, EventSink};
use crate::engine::WindowDone;
use crate::transcript::{Transcript, align_segments};

/// A window's text as the pipeline reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum WindowText<'a> {
    /// The window's plain decode so far: the segments its first (greedy,
    /// temperature-0) attempt has closed. A later attempt may still replace it.
    Decoding(&'a str),
    /// The window's final text, the context's corrections included.
    Final(&'a str),
}

/// Turns a run's window texts into [`Event`]s for its sink, if it has one.
pub(super) struct Events<'s, 'a> {
    sink: Option<&'s mut EventSink<'a>>,
    deltas: Deltas,
    total_secs: f64,
}

impl<'s, 'a> Events<'s, 'a> {
    pub(super) fn new(sink: Option<&'s mut EventSink<'a>>, total_secs: f64) -> Self {
        Events {
            sink,
            deltas: Deltas::default(),
            total_secs,
        }
    }

    fn send(&mut self, event: &Event) {
        if let Some(sink) = self.sink.as_mut() {
            sink(event);
        }
    }

    /// A window's text, while decoded or final.
    pub(super) fn text(&mut self, text: WindowText<'_>) {
        if self.sink.is_some()
            && let Some(delta) = self.deltas.push(text)
        {
            self.send(&Event::Delta(delta));
        }
    }

    /// An accepted window (`done`) whose final text is `text`: its segments, with
    /// `text` placed in them, and the progress.
    pub(super) fn accepted(&mut self, text: &str, done: &WindowDone) {
        if self.sink.is_none() {
            return;
        }
        for segment in align_segments(&done.segments, text, done.through_secs) {
            self.send(&Event::Segment(segment));
        }
        self.send(&Event::Progress {
            done_secs: done.through_secs.min(self.total_secs),
            total_secs: self.total_secs,
        });
    }

    /// The final transcript.
    pub(super) fn done(&mut self, transcript: &Transcript) {
        if self.sink.is_some() {
            self.send(&Event::Done(Box::new(transcript.clone())));
        }
    }
}

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
