//! The result of one transcription.

use std::time::Duration;

use crate::context::Language;

/// The final transcript of one audio file.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Transcript {
    /// The transcript text; empty when the audio holds no speech.
    pub text: String,
    /// The text in timed pieces, in order (times never go back); their texts joined by
    /// spaces are `text` (see [`align_segments`]). Empty when `text` is.
    pub segments: Vec<Segment>,
    /// The language the audio was transcribed in; `None` when there was no speech.
    pub language: Option<Language>,
    /// Duration of the input audio in seconds.
    pub audio_secs: f64,
    /// Time spent per pipeline stage.
    pub timings: StageTimings,
    /// Every candidate edit the context judge weighed, with its scores and whether it is
    /// in the text (empty without context).
    pub edits: Vec<Verdict>,
    /// What the caller should know about the result although it succeeded, e.g. that the
    /// file was cut short and only the audio before the cut is transcribed.
    pub warnings: Vec<Warning>,
}

/// Where a candidate edit of the context judge came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EditSource {
    /// The span spells one of the term's spoken forms letter for letter.
    Identity,
    /// The spoken-form matcher at its strict thresholds.
    Matched,
    /// A span that sounds roughly like the term (the relevance threshold).
    Loose,
    /// The prompted decode wrote the term there.
    Prompted,
}

/// One candidate edit and the judge's verdict on it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Verdict {
    /// The words of the plain transcript the edit replaces.
    pub original: String,
    /// What it writes instead.
    pub replacement: String,
    /// Where the edit came from.
    pub source: EditSource,
    /// Whether the term came from the dictionary (else from the messages).
    pub dictionary: bool,
    /// Unprompted log-probability margin of the edit over the original (nats), when
    /// scored.
    pub unprompted: Option<f32>,
    /// The same with the context prompt.
    pub prompted: Option<f32>,
    /// The decision score: kept when positive.
    pub score: f32,
    /// Whether the edit is in the transcript (kept and not overlapping a better one).
    pub applied: bool,
}

/// Something a successful transcription tells its caller: the text is what could be
/// transcribed, but not all that was sent.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Warning {
    /// What happened.
    pub code: WarningCode,
    /// A sentence saying where and how much.
    pub message: String,
}

impl Warning {
    /// A warning of kind `code`.
    #[must_use]
    pub fn new(code: WarningCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

/// The kinds of [`Warning`]; each has a stable string ([`WarningCode::as_str`]) that every
/// face (CLI JSON, HTTP header, Python, C) reports as it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WarningCode {
    /// `audio_truncated`: the file ends inside its container (a WAV data chunk, an MP3
    /// frame, an Ogg page, a WebM cluster, an MP4 box); the audio before the cut is
    /// transcribed.
    AudioTruncated,
}

impl WarningCode {
    /// The stable code string (`"audio_truncated"`).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            WarningCode::AudioTruncated => "audio_truncated",
        }
    }
}

impl std::fmt::Display for WarningCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Wall-clock time per pipeline stage of one transcription.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct StageTimings {
    /// Probing, decoding and resampling the audio.
    pub decode: Duration,
    /// Speech detection, language detection and Whisper decoding.
    pub engine: Duration,
    /// The whole call.
    pub total: Duration,
}

/// One timed piece of a transcript.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Segment {
    /// Where the piece starts, in seconds from the start of the input audio.
    pub start: f64,
    /// Where the piece ends, in seconds from the start of the input audio (`>= start`).
    pub end: f64,
    /// The piece's text, without leading or trailing whitespace.
    pub text: String,
}

impl Segment {
    /// A segment from `start` to `end` seconds holding `text`.
    #[must_use]
    pub fn new(start: f64, end: f64, text: impl Into<String>) -> Self {
        Self {
            start,
            end,
            text: text.into(),
        }
    }
}

/// The most word pairs [`align_segments`] compares (about 2,000 words against 2,000);
/// longer texts are aligned by position.
const MAX_ALIGNED_PAIRS: usize = 4_000_000;

/// `text`'s words placed in the `timed` segments of the decode it came from.
///
/// The context passes, the correction and the LLM review rewrite words of the plain
/// decode the engine timed; each word of `text` goes to the segment of the plain word it
/// is aligned with (a longest common subsequence of the words, compared without case and
/// punctuation), and a word not found there goes with the word before it. The segments
/// returned keep `timed`'s times, in order, and their texts joined by spaces are `text`
/// with its whitespace normalised. Without `timed` segments (a remote provider), the
/// whole text is one segment over the whole audio (`audio_secs`).
#[must_use]
pub fn align_segments(timed: &[Segment], text: &str, audio_secs: f64) -> Vec<Segment> {
    let words: Vec<&str> = text.split_whitespace().collect();
    if words.is_empty() {
        return Vec::new();
    }
    let plain: Vec<(String, usize)> = timed
        .iter()
        .enumerate()
        .flat_map(|(index, segment)| {
            segment
                .text
                .split_whitespace()
                .map(move |word| (word_key(word), index))
        })
        .collect();
    if plain.is_empty() {
        return vec![Segment::new(0.0, audio_secs.max(0.0), words.join(" "))];
    }
    let owners = word_owners(&plain, &words);
    let mut out: Vec<Segment> = Vec::new();
    let mut current: Option<usize> = None;
    for (word, owner) in words.iter().zip(owners) {
        match out.last_mut() {
            Some(last) if current == Some(owner) => {
                last.text.push(' ');
                last.text.push_str(word);
            }
            _ => {
                let source = &timed[owner];
                out.push(Segment::new(source.start, source.end, *word));
                current = Some(owner);
            }
        }
    }
    out
}

/// The index of the timed segment each of `words` belongs to, never decreasing.
fn word_owners(plain: &[(String, usize)], words: &[&str]) -> Vec<usize> {
    let keys: Vec<String> = words.iter().map(|w| word_key(w)).collect();
    let positional = |i: usize| plain[(i * plain.len() / words.len()).min(plain.len() - 1)].1;
    let matched = if plain.len().saturating_mul(words.len()) <= MAX_ALIGNED_PAIRS {
        lcs_matches(plain, &keys)
    } else {
        vec![None; words.len()]
    };
    let first_match = matched.iter().flatten().next().copied();
    let mut owners = Vec::with_capacity(words.len());
    let mut previous: Option<usize> = None;
    for (i, found) in matched.iter().enumerate() {
        let owner = match (found, previous, first_match) {
            (Some(owner), _, _) => *owner,
            (None, Some(previous), _) => previous,
            (None, None, Some(first)) => first,
            (None, None, None) => positional(i),
        };
        let owner = previous.map_or(owner, |p| owner.max(p));
        owners.push(owner);
        previous = Some(owner);
    }
    owners
}

/// For each of `keys`, the segment of the plain word a longest common subsequence pairs
/// it with, if any. Empty keys (punctuation alone) never pair.
fn lcs_matches(plain: &[(String, usize)], keys: &[String]) -> Vec<Option<usize>> {
    let (n, m) = (plain.len(), keys.len());
    let same = |i: usize, j: usize| !keys[j].is_empty() && plain[i].0 == keys[j];
    // lengths[i * (m + 1) + j]: LCS of plain[i..] and keys[j..].
    let mut lengths = vec![0u32; (n + 1) * (m + 1)];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lengths[i * (m + 1) + j] = if same(i, j) {
                lengths[(i + 1) * (m + 1) + j + 1] + 1
            } else {
                lengths[(i + 1) * (m + 1) + j].max(lengths[i * (m + 1) + j + 1])
            };
        }
    }
    let mut matched = vec![None; m];
    let (mut i, mut j) = (0, 0);
    while i < n && j < m {
        if same(i, j) {
            matched[j] = Some(plain[i].1);
            i += 1;
            j += 1;
        } else if lengths[(i + 1) * (m + 1) + j] >= lengths[i * (m + 1) + j + 1] {
            i += 1;
        } else {
            j += 1;
        }
    }
    matched
}

/// A word compared without case and punctuation.
pub(crate) fn word_key(word: &str) -> String {
    word.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// True when the transcript `second`, another decode of the same audio, still holds
/// about as much speech as `first`, counted in letters and digits: a prompt can make
/// Whisper write the term and drop the rest of the sentence ("Alert, scope today the dog,
/// and the uncall uses our genius." became "Datadog."), and a search can end early.
/// Letters, not words: a term glues several misheard words into one ("jolly and broken"
/// -> "Anjali, Rohan").
pub(crate) fn keeps_the_speech(first: &str, second: &str) -> bool {
    let letters = |text: &str| text.chars().filter(|c| c.is_alphanumeric()).count();
    letters(second) * MIN_LETTERS_KEPT.1 >= letters(first) * MIN_LETTERS_KEPT.0
}

/// True when text that follows `previous` (the transcript so far) starts a sentence:
/// nothing before it, or `previous` ends one (`.`, `!`, `?`, `…`).
pub(crate) fn starts_a_sentence_after(previous: &str) -> bool {
    previous
        .trim_end()
        .trim_end_matches(['"', '\'', ')', '\u{201d}'])
        .chars()
        .last()
        .is_none_or(|c| matches!(c, '.' | '!' | '?' | '\u{2026}'))
}

/// `text`, which starts a sentence, with its first word capitalised where it is written
/// in lowercase: Whisper starts a transcript in lowercase where it gives the capital a
/// little less than the lowercase word (" that" 36.6 against " That" 35.2 for "The has
/// unsaved changes flag..."), as a segment of its training data that continues one.
/// Only a word of lowercase letters (with apostrophes or hyphens inside: "l'analyse"),
/// none of whose parts is one of `term_words` (the context's terms' words, lowercase,
/// sorted): a term written in lowercase (`kubectl`) or an identifier (`settings.py`,
/// `hasUnsavedChanges`) stays as written. `None` when nothing changes.
pub(crate) fn capitalised_sentence_start(text: &str, term_words: &[String]) -> Option<String> {
    let start = text.len() - text.trim_start().len();
    let rest = &text[start..];
    let word = rest.split_whitespace().next()?;
    let core = word.trim_end_matches(|c: char| !c.is_alphanumeric());
    let mut chars = core.chars();
    let first = chars.next()?;
    let lowercase_word = first.is_lowercase()
        && chars.all(|c| c.is_lowercase() || c == '\'' || c == '-')
        && !core.ends_with(['\'', '-']);
    let term_word = core.split(['\'', '-']).any(|part| {
        term_words
            .binary_search_by(|w| w.as_str().cmp(part))
            .is_ok()
    });
    let capital: String = first.to_uppercase().collect();
    if !lowercase_word || term_word || capital == first.to_string() {
        return None;
    }
    Some(format!(
        "{}{capital}{}",
        &text[..start],
        &rest[first.len_utf8()..]
    ))
}

/// The share of the first transcript's letters another must keep (numerator,
/// denominator).
const MIN_LETTERS_KEPT: (usize, usize) = (3, 5);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_pass_that_copies_the_prompt_does_not_keep_the_speech() {
        let first = "Alert, scope today the dog, and the uncall uses our genius.";
        assert!(!keeps_the_speech(first, "Datadog, Opsgenie."));
        assert!(keeps_the_speech(
            first,
            "Alert, scope Datadog, and the uncall uses Opsgenie."
        ));
        // Several misheard words glued into the terms are not lost speech.
        assert!(keeps_the_speech(
            "Big and jolly and broken about the Q4 road map.",
            "Being Anjali, Rohan about Q4 roadmap."
        ));
        assert!(keeps_the_speech("", ""));
    }

    #[test]
    fn a_sentence_start_in_lowercase_gets_its_capital_unless_a_term_or_identifier() {
        let capital = |text: &str| capitalised_sentence_start(text, &["kubectl".into()]);
        assert_eq!(
            capital(" that has unsaved changes flag.").as_deref(),
            Some(" That has unsaved changes flag.")
        );
        assert_eq!(
            capital("le fichier contient la clé.").as_deref(),
            Some("Le fichier contient la clé.")
        );
        assert_eq!(
            capital("l'analyse, d'abord.").as_deref(),
            Some("L'analyse, d'abord.")
        );
        assert_eq!(capital("élève.").as_deref(), Some("Élève."));
        for kept in [
            "That is fine.",
            "kubectl apply it.",
            "settings.py holds it.",
            "hasUnsavedChanges never resets.",
            "e.g. this one.",
            "3 pods restarted.",
            "",
            "日本語です。",
        ] {
            assert_eq!(capital(kept), None, "{kept}");
        }
    }

    #[test]
    fn a_sentence_starts_after_its_end_or_nothing() {
        assert!(starts_a_sentence_after(""));
        assert!(starts_a_sentence_after("It works. "));
        assert!(starts_a_sentence_after("Does it?"));
        assert!(starts_a_sentence_after("He said \"stop.\""));
        assert!(!starts_a_sentence_after("And so, my fellow Americans,"));
        assert!(!starts_a_sentence_after("We use settings"));
    }

    fn timed() -> Vec<Segment> {
        vec![
            Segment::new(0.0, 2.0, "And so my fellow Americans,"),
            Segment::new(2.5, 6.0, "ask not what your country can do for you,"),
            Segment::new(6.0, 11.0, "ask what you can do for your country."),
        ]
    }

    fn texts(segments: &[Segment]) -> Vec<&str> {
        segments.iter().map(|s| s.text.as_str()).collect()
    }

    #[test]
    fn unchanged_text_keeps_the_segments() {
        let text = "And so my fellow Americans, ask not what your country can do for you, ask \
                    what you can do for your country.";
        assert_eq!(align_segments(&timed(), text, 11.0), timed());
    }

    #[test]
    fn rewritten_words_stay_in_their_segment() {
        let text = "And so my fellow Americans: ask not what your Kubernetes can do for you, \
                    ask what you can do for your country.";
        let segments = align_segments(&timed(), text, 11.0);
        assert_eq!(
            texts(&segments),
            [
                "And so my fellow Americans:",
                "ask not what your Kubernetes can do for you,",
                "ask what you can do for your country."
            ]
        );
        assert_eq!(segments[1].start, 2.5);
    }

    #[test]
    fn a_segment_whose_words_all_went_disappears() {
        let segments = align_segments(&timed(), "And so my fellow Americans.", 11.0);
        assert_eq!(
            segments,
            [Segment::new(0.0, 2.0, "And so my fellow Americans.")]
        );
        let text = "ask not what your country can do, ask what you can do for your country.";
        let segments = align_segments(&timed(), text, 11.0);
        assert_eq!(segments.len(), 2, "{segments:?}");
        assert_eq!((segments[0].start, segments[1].start), (2.5, 6.0));
        assert_eq!(texts(&segments).join(" "), text);
    }

    #[test]
    fn text_without_any_common_word_is_placed_by_position_in_order() {
        let segments = align_segments(&timed(), "x y z w", 11.0);
        assert_eq!(texts(&segments).join(" "), "x y z w");
        assert!(segments.windows(2).all(|p| p[0].end <= p[1].start));
    }

    #[test]
    fn no_timed_segments_give_one_segment_over_the_audio() {
        assert_eq!(
            align_segments(&[], "  hello   world ", 3.5),
            [Segment::new(0.0, 3.5, "hello world")]
        );
        assert!(align_segments(&timed(), "  ", 11.0).is_empty());
    }
}
