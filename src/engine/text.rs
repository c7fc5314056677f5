//! A window's transcript text from its decoded tokens: segments in the window's
//! trailing pad and non-speech annotations dropped, whitespace normalised.

use std::ops::Range;

use super::tokens::{SECS_PER_TIMESTAMP, Vocabulary, segments};
use super::windows;
use crate::audio::TARGET_SAMPLE_RATE;

/// The text of a window's decoded `tokens` and, when timed, where its last segment
/// ends; its segments (samples of the window, text) go to `timed`. Segments that start
/// in the window's trailing pad, are only a non-speech annotation, or copy the segment
/// before them in much less time ([`is_hurried_copy`]) are dropped.
pub(super) fn window_text(
    vocabulary: &Vocabulary,
    tokens: &[i32],
    audio_samples: usize,
    timed: &mut Vec<(Range<usize>, String)>,
) -> (String, Option<usize>) {
    let mut text = String::new();
    let mut speech_end = None;
    let mut previous: Option<(String, Option<usize>)> = None;
    for segment in segments(vocabulary, tokens) {
        let piece = vocabulary.text_of(segment.tokens);
        if let Some(start) = segment.start
            && starts_in_trailing_pad(start, audio_samples)
        {
            continue;
        }
        if is_non_speech_annotation(&piece) {
            continue;
        }
        let steps = segment
            .start
            .zip(segment.end)
            .map(|(s, e)| e.saturating_sub(s));
        if let Some((before, before_steps)) = &previous
            && is_hurried_copy(before, *before_steps, &piece, steps)
        {
            continue;
        }
        previous = Some((piece.clone(), steps));
        text.push_str(&piece);
        text.push(' ');
        if let Some(end) = segment.end {
            speech_end = Some(timestamp_to_samples(end).min(audio_samples));
        }
        let from = segment
            .start
            .map_or(0, timestamp_to_samples)
            .min(audio_samples);
        let to = segment.end.map_or(audio_samples, timestamp_to_samples);
        timed.push((from..to.clamp(from, audio_samples), piece.trim().to_owned()));
    }
    (normalise_whitespace(&text), speech_end)
}

/// A segment that starts this close before the next window (seconds), or later, is that
/// window's speech: the plain decode's last segment ended there, and the next sentence
/// starts after a pause.
const NEXT_WINDOW_SLACK_SECS: f64 = 0.3;

/// The text of the `timed` segments (samples of a window, text) that start before
/// `next` (where the next window starts, less [`NEXT_WINDOW_SLACK_SECS`]); `None` when
/// every segment does (the text is whole).
pub(super) fn text_before(timed: &[(Range<usize>, String)], next: usize) -> Option<String> {
    let from = next.saturating_sub(windows::secs_to_samples(NEXT_WINDOW_SLACK_SECS));
    if timed.iter().all(|(range, _)| range.start < from) {
        return None;
    }
    let kept: Vec<&str> = timed
        .iter()
        .filter(|(range, _)| range.start < from)
        .map(|(_, piece)| piece.as_str())
        .collect();
    Some(normalise_whitespace(&kept.join(" ")))
}

/// Whether a segment of text `piece` lasting `steps` timestamp steps copies the segment
/// before it (`before`, lasting `before_steps`): the same words in less than half the
/// time. Said again, the same words take about as long; written again in a fraction of
/// it, they are Whisper repeating itself at a fallback temperature (a 3.5 s window came
/// out as its sentence at 0.00-3.22 s and the same sentence again at 3.22-3.52 s).
fn is_hurried_copy(
    before: &str,
    before_steps: Option<usize>,
    piece: &str,
    steps: Option<usize>,
) -> bool {
    let (Some(before_steps), Some(steps)) = (before_steps, steps) else {
        return false;
    };
    let same_words =
        normalise_whitespace(before).to_lowercase() == normalise_whitespace(piece).to_lowercase();
    same_words && !piece.trim().is_empty() && steps * 2 < before_steps
}

fn timestamp_to_samples(index: usize) -> usize {
    windows::secs_to_samples(index as f64 * SECS_PER_TIMESTAMP)
}

/// Whether a segment starting at timestamp step `start` starts in the last
/// [`windows::SPEECH_PAD_SECS`] of a window of `window_samples` samples. Windows end with
/// that much audio after the VAD's last speech, so a segment that starts there is
/// Whisper writing past the speech: a 60 s file gained a "Thank you." at 25.00 s of a
/// 25.17 s window.
fn starts_in_trailing_pad(start: usize, window_samples: usize) -> bool {
    let window_secs = window_samples as f64 / f64::from(TARGET_SAMPLE_RATE);
    start as f64 * SECS_PER_TIMESTAMP >= window_secs - windows::SPEECH_PAD_SECS
}

/// Whisper's non-speech annotations (`[BLANK_AUDIO]`, `(wind howling)`, `[Music]`): a
/// segment that is nothing but one bracketed phrase is not speech.
fn is_non_speech_annotation(segment: &str) -> bool {
    let trimmed = segment.trim();
    let bracketed = |open: char, close: char| {
        trimmed.starts_with(open)
            && trimmed.ends_with(close)
            && trimmed[1..trimmed.len() - 1]
                .chars()
                .all(|c| c != open && c != close)
    };
    trimmed.is_empty() || bracketed('[', ']') || bracketed('(', ')') || bracketed('*', '*')
}

pub(super) fn normalise_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_from_where_the_next_window_starts_are_cut() {
        let secs = |s: f64| windows::secs_to_samples(s);
        let timed = vec![
            (
                secs(0.0)..secs(3.0),
                "Karris booked the big room.".to_owned(),
            ),
            (
                secs(3.6)..secs(6.0),
                "Refer the patient to Dr. Adebayo.".to_owned(),
            ),
            (
                secs(6.8)..secs(9.0),
                "Start apixaban twice daily.".to_owned(),
            ),
        ];
        // The plain text ended at 6.0 s: the third sentence is the next window's.
        assert_eq!(
            text_before(&timed, secs(6.0)).as_deref(),
            Some("Karris booked the big room. Refer the patient to Dr. Adebayo.")
        );
        // A segment starting just before the plain text's end is the next window's too.
        assert_eq!(
            text_before(&timed, secs(6.9)).as_deref(),
            Some("Karris booked the big room. Refer the patient to Dr. Adebayo.")
        );
        assert_eq!(text_before(&timed, secs(9.5)), None, "all before: whole");
        assert_eq!(text_before(&timed, 0).as_deref(), Some(""));
    }

    #[test]
    fn only_segments_starting_in_the_trailing_pad_are_past_the_speech() {
        let window = 25 * 16_000 + 2_720; // 25.17 s
        assert!(starts_in_trailing_pad(1_250, window));
        assert!(starts_in_trailing_pad(1_300, window));
        assert!(!starts_in_trailing_pad(1_245, window));
        assert!(!starts_in_trailing_pad(0, window));
        // On a 1 s window only the last 0.25 s is the pad.
        assert!(!starts_in_trailing_pad(0, 16_000));
        assert!(!starts_in_trailing_pad(37, 16_000));
        assert!(starts_in_trailing_pad(38, 16_000));
    }

    #[test]
    fn a_segment_that_copies_the_one_before_in_a_fraction_of_its_time_is_a_copy() {
        let sentence = " Continue metformin at night.";
        assert!(is_hurried_copy(sentence, Some(322), sentence, Some(30)));
        assert!(is_hurried_copy(
            sentence,
            Some(322),
            " continue  metformin at night.",
            Some(30)
        ));
        // Said twice: about as long each time.
        assert!(!is_hurried_copy(sentence, Some(322), sentence, Some(250)));
        assert!(!is_hurried_copy(
            sentence,
            Some(322),
            " Stop metformin.",
            Some(30)
        ));
        assert!(
            !is_hurried_copy(sentence, None, sentence, Some(30)),
            "untimed"
        );
    }

    #[test]
    fn annotations_are_not_speech() {
        assert!(is_non_speech_annotation(" [BLANK_AUDIO]"));
        assert!(is_non_speech_annotation("(wind howling)"));
        assert!(is_non_speech_annotation("  "));
        assert!(!is_non_speech_annotation("And so (he said) yes"));
        assert!(!is_non_speech_annotation("[a] and [b]"));
    }
}
