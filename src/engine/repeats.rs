//! Text that repeats itself: a decode that reads its own text again, an ending doubled,
//! and the compression ratio that tells a loop from speech. Decoding
//! ([`super::decode`]) and the engine's windows ([`super::whisper`]) act on these signs.

use std::collections::HashSet;

use super::tokens::Vocabulary;
use crate::transcript::word_key;

/// An attempt whose text's zlib compression ratio is above this is a loop.
pub(crate) const MAX_COMPRESSION_RATIO: f32 = 2.4;
/// A decode's text repeats itself when it ends with two copies of a span of at least
/// this many text tokens (about a five-word sentence)...
const MIN_REPEATED_SPAN: usize = 8;
/// ... or with three copies of a span of at least this many ("BibTeX, BibTeX, BibTeX";
/// "very, very, very" is two tokens a copy and stays).
const MIN_TRIPLED_SPAN: usize = 3;

/// Where the repetition at the end of `tokens` starts, if their text tokens (timestamps
/// aside: a loop may restart its segment) end with two copies of a span of at least
/// [`MIN_REPEATED_SPAN`] tokens, or three of at least [`MIN_TRIPLED_SPAN`]: the index in
/// `tokens` of the first token of the second copy.
pub(crate) fn repeat_start(vocabulary: &Vocabulary, tokens: &[i32]) -> Option<usize> {
    repeat_start_of(vocabulary, tokens, MIN_REPEATED_SPAN)
}

/// Whether the text of `tokens` (a decode's) ends with two copies of a span of at least
/// [`MIN_TRIPLED_SPAN`] tokens ("Go forward ten meters. Go forward ten meters."): a
/// sign, in a decode conditioned on the previous window's text, that the conditioning
/// and not the audio wrote the second copy.
pub(crate) fn ends_doubled(vocabulary: &Vocabulary, tokens: &[i32]) -> bool {
    repeat_start_of(vocabulary, tokens, MIN_TRIPLED_SPAN).is_some()
}

/// Words in a row that a decode must share with the previous window's text, which
/// conditions it, to be read as an echo of that text: a short sentence ("Your power is
/// sufficient, I said.").
const MIN_ECHO_WORDS: usize = 6;

/// Whether the text of `tokens` (a decode conditioned on `prompt`, the previous window's
/// text) holds [`MIN_ECHO_WORDS`] or more words in a row that `prompt` holds in the same
/// order (compared in lowercase letters and digits): a sign that the conditioning, not
/// the audio, wrote them. Windows cut without the VAD's speech boundaries can start in
/// a pause, and Whisper fills it with a sentence of the previous window ("And so my
/// fellow Americans ..." again in one second of silence before the next speaker).
pub(crate) fn echoes_prompt(vocabulary: &Vocabulary, prompt: &[i32], tokens: &[i32]) -> bool {
    let (said, decoded) = (word_keys(vocabulary, prompt), word_keys(vocabulary, tokens));
    let runs: HashSet<&[String]> = said.windows(MIN_ECHO_WORDS).collect();
    decoded
        .windows(MIN_ECHO_WORDS)
        .any(|run| runs.contains(run))
}

/// `tokens` (a decode of a window without the previous window's text, `prompt`) less
/// the words at its start that re-read the end of `prompt`: [`MIN_ECHO_WORDS`] or more
/// words that end `prompt` and start the decode, the longest such run (compared in
/// lowercase letters and digits). Where a window starts before the audio the previous
/// window transcribed ends (its last timestamp came early), the decode conditioned on
/// that text goes on after it, but the one without reads it again.
pub(crate) fn without_reread_start(
    vocabulary: &Vocabulary,
    prompt: &[i32],
    tokens: &[i32],
) -> Vec<i32> {
    let said = word_keys(vocabulary, prompt);
    let words = words_of(vocabulary, tokens);
    let longest = (MIN_ECHO_WORDS..=said.len().min(words.len()))
        .rev()
        .find(|&n| {
            said[said.len() - n..]
                .iter()
                .eq(words[..n].iter().map(|(_, key)| key))
        });
    let Some(n) = longest else {
        return tokens.to_vec();
    };
    let Some(&(end, _)) = words.get(n) else {
        // Every word re-reads the previous text: nothing new was heard.
        return Vec::new();
    };
    // The segment the first new word is in keeps its opening timestamp.
    let opening = tokens[..end]
        .iter()
        .rposition(|&t| vocabulary.is_timestamp(t));
    opening
        .map(|at| tokens[at])
        .into_iter()
        .chain(tokens[end..].iter().copied())
        .collect()
}

/// The keys (lowercase letters and digits) of the words `tokens` write, words without
/// either left out.
fn word_keys(vocabulary: &Vocabulary, tokens: &[i32]) -> Vec<String> {
    vocabulary
        .text_of(tokens)
        .split_whitespace()
        .map(word_key)
        .filter(|key| !key.is_empty())
        .collect()
}

/// The words of the text tokens among `tokens` (a token that starts with a space starts
/// a word), each with the index in `tokens` of its first token and its key (lowercase
/// letters and digits); words without letters or digits are left out.
fn words_of(vocabulary: &Vocabulary, tokens: &[i32]) -> Vec<(usize, String)> {
    let mut words: Vec<(usize, Vec<u8>)> = Vec::new();
    for (index, &token) in tokens.iter().enumerate() {
        if !vocabulary.is_text(token) {
            continue;
        }
        let bytes = vocabulary.bpe().bytes_of(token);
        match words.last_mut() {
            Some((_, word)) if !bytes.starts_with(b" ") => word.extend_from_slice(bytes),
            _ => words.push((index, bytes.to_vec())),
        }
    }
    words
        .into_iter()
        .map(|(index, bytes)| (index, word_key(&String::from_utf8_lossy(&bytes))))
        .filter(|(_, key)| !key.is_empty())
        .collect()
}

/// [`repeat_start`] with two copies of spans from `min_doubled` tokens on.
fn repeat_start_of(vocabulary: &Vocabulary, tokens: &[i32], min_doubled: usize) -> Option<usize> {
    let text = text_tokens(vocabulary, tokens);
    let n = text.len();
    let same = |a: usize, b: usize, len: usize| (0..len).all(|k| text[a + k].1 == text[b + k].1);
    for len in MIN_TRIPLED_SPAN..=n / 2 {
        let copies_needed = copies_needed(len, min_doubled);
        if n < len * copies_needed {
            continue;
        }
        let last = n - len;
        if (1..copies_needed).all(|c| same(last - c * len, last, len)) {
            let second = n - (copies_needed - 1) * len;
            return text.get(second).map(|&(i, _)| i);
        }
    }
    None
}

/// Where a loop that fills the end of `tokens` starts repeating: the periodic tail of
/// their text tokens (timestamps aside), at least two copies of a span from
/// [`MIN_REPEATED_SPAN`] tokens or three from [`MIN_TRIPLED_SPAN`], is followed back to
/// its first copy; the index in `tokens` of the first token after that copy. A decode
/// whose every attempt looped keeps one copy of what it read, not the loop.
pub(crate) fn loop_start(vocabulary: &Vocabulary, tokens: &[i32]) -> Option<usize> {
    let text = text_tokens(vocabulary, tokens);
    let n = text.len();
    for len in MIN_TRIPLED_SPAN..=n / 2 {
        let copies_needed = copies_needed(len, MIN_REPEATED_SPAN);
        // The periodic tail: from `start` on, every token equals the one `len` later.
        let mut start = n - len;
        while start > 0 && text[start - 1].1 == text[start - 1 + len].1 {
            start -= 1;
        }
        if n - start >= len * copies_needed {
            return text.get(start + len).map(|&(i, _)| i);
        }
    }
    None
}

/// The text tokens of `tokens` (timestamps and other specials aside), each with its index.
fn text_tokens(vocabulary: &Vocabulary, tokens: &[i32]) -> Vec<(usize, i32)> {
    tokens
        .iter()
        .enumerate()
        .filter(|&(_, &t)| vocabulary.is_text(t))
        .map(|(i, &t)| (i, t))
        .collect()
}

/// Words of a second copy that make a text read again from its start
/// ([`restart_offset`]); fewer are often said again ("Check the logs, then check the
/// logs.").
const MIN_RESTART_WORDS: usize = 5;

/// Where `text` starts reading itself again from its first word: the byte offset of the
/// second copy when every word from there on repeats the words from the start with the
/// same period (words compared in lowercase letters and digits, so "Restart the
/// worker..., restart the worker..." counts; the last word may be cut short), the period
/// is at least [`MIN_TRIPLED_SPAN`] words and the second copy a whole period or at least
/// [`MIN_RESTART_WORDS`] words.
/// A batched beam search over a trimmed encoding does not hear where the speech ends
/// and reads it again until its token budget runs out.
pub(crate) fn restart_offset(text: &str) -> Option<usize> {
    let words: Vec<(usize, String)> = text
        .split_whitespace()
        .filter_map(|word| {
            let offset = word.as_ptr() as usize - text.as_ptr() as usize;
            let key = word_key(word);
            (!key.is_empty()).then_some((offset, key))
        })
        .collect();
    let n = words.len();
    (MIN_TRIPLED_SPAN..n)
        .take_while(|&period| n - period >= MIN_RESTART_WORDS.min(period))
        .find(|&period| {
            (period..n).all(|i| {
                let (said, again) = (&words[i - period].1, &words[i].1);
                said == again || (i + 1 == n && said.starts_with(again.as_str()))
            })
        })
        .map(|period| words[period].0)
}

/// Copies of a `len`-token span that make a repeat: two from `min_doubled` tokens on,
/// else three.
fn copies_needed(len: usize, min_doubled: usize) -> usize {
    if len >= min_doubled { 2 } else { 3 }
}

/// `text`'s length over its zlib-compressed length: repeated text compresses well.
pub(crate) fn compression_ratio(text: &str) -> f32 {
    if text.is_empty() {
        return 0.0;
    }
    let compressed = miniz_oxide::deflate::compress_to_vec_zlib(text.as_bytes(), 6);
    #[allow(clippy::cast_precision_loss)]
    let ratio = text.len() as f32 / compressed.len().max(1) as f32;
    ratio
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::tokens::tests::{tiny_vocabulary, vocabulary_of};

    #[test]
    fn loops_compress_well_and_speech_does_not() {
        let speech = "And so my fellow Americans, ask not what your country can do for you.";
        assert!(
            compression_ratio(speech) < 1.6,
            "{}",
            compression_ratio(speech)
        );
        let looping = "I will do it. ".repeat(12);
        assert!(compression_ratio(&looping) > MAX_COMPRESSION_RATIO);
        assert!(compression_ratio("").abs() < f32::EPSILON);
    }

    #[test]
    fn a_text_that_reads_itself_again_is_cut_at_the_second_copy() {
        let v = tiny_vocabulary();
        let ts = v.special.timestamp_begin;
        let sentence = [3, 4, 5, 10, 1, 2, 9, 8];
        let mut twice = vec![ts];
        twice.extend(sentence);
        twice.push(ts + 3);
        twice.extend(sentence);
        assert_eq!(repeat_start(&v, &twice), Some(10), "timestamps aside");
        assert_eq!(repeat_start(&v, &twice[..17]), None, "not yet a whole copy");
        let short = [3, 4, 11, 3, 4, 11];
        assert_eq!(repeat_start(&v, &short), None, "a short span twice stays");
        let thrice = [1, 3, 4, 11, 3, 4, 11, 3, 4, 11];
        assert_eq!(repeat_start(&v, &thrice), Some(4), "three copies: keep one");
        assert_eq!(
            repeat_start(&v, &[3, 11, 3, 11, 3, 11]),
            None,
            "very, very, very"
        );
        assert_eq!(repeat_start(&v, &[]), None);
    }

    #[test]
    fn a_loop_is_followed_back_to_its_first_copy() {
        let v = tiny_vocabulary();
        let ts = v.special.timestamp_begin;
        // "And so my fellow Americans." read again and again, cut off mid-copy.
        let copy = [3, 4, 5, 10, 1, 2];
        let mut looped = vec![ts, 9];
        for _ in 0..6 {
            looped.extend(copy);
        }
        looped.extend(&copy[..3]);
        assert_eq!(loop_start(&v, &looped), Some(2 + 6), "keep 9 and one copy");
        assert_eq!(
            loop_start(&v, &looped[..2 + 12]),
            None,
            "two short copies stay"
        );
        let long = [3, 4, 5, 10, 1, 2, 9, 8];
        let twice: Vec<i32> = long.iter().chain(&long).copied().collect();
        assert_eq!(loop_start(&v, &twice), Some(8));
        assert_eq!(
            loop_start(&v, &[3, 11, 3, 11, 3, 11]),
            None,
            "very, very, very"
        );
        assert_eq!(loop_start(&v, &[]), None);
    }

    /// Words of jfk's sentence and of the Quilter clip, one token each.
    fn jfk_and_quilter_vocabulary() -> Vocabulary {
        vocabulary_of(&[
            " And",
            " so",
            " my",
            " fellow",
            " Americans",
            ",",
            " ask",
            " not",
            " Mr",
            ".",
            " Quilter",
            " is",
            " the",
            " apostle",
        ])
    }

    #[test]
    fn a_decode_that_reads_the_previous_text_again_echoes_it() {
        let v = jfk_and_quilter_vocabulary();
        let ts = v.special.timestamp_begin;
        let prompt = [0, 1, 2, 3, 4, 5, 6, 7];
        // The previous sentence again, timestamps between, then the new speech.
        let echo = [ts, 0, 1, 2, 3, 4, ts + 50, 6, 7, 8, 9, 10, 11];
        assert!(echoes_prompt(&v, &prompt, &echo));
        // Five words of it are not an echo; nor is new speech, nor an empty prompt.
        assert!(!echoes_prompt(
            &v,
            &prompt,
            &[ts, 1, 2, 3, 4, 5, 8, 10, 11, 12, 13]
        ));
        assert!(!echoes_prompt(&v, &prompt, &[8, 9, 10, 11, 12, 13]));
        assert!(!echoes_prompt(&v, &[], &echo));
    }

    #[test]
    fn a_decode_without_the_previous_text_loses_its_reread_start() {
        let v = jfk_and_quilter_vocabulary();
        let ts = v.special.timestamp_begin;
        let prompt = [8, 10, 11, 12, 13, 9, 0, 1, 2, 3, 4, 5, 6, 7];
        // "And so my fellow Americans, ask not" ends the previous text and starts this
        // decode, then new speech in a second segment and mid-segment.
        let reread = [ts, 0, 1, 2, 3, 4, 6, 7, 9, ts + 40, ts + 40, 8, 10, ts + 60];
        assert_eq!(
            without_reread_start(&v, &prompt, &reread),
            vec![ts + 40, 8, 10, ts + 60]
        );
        let mid = [ts, 1, 2, 3, 4, 5, 6, 7, 8, 10, ts + 60];
        assert_eq!(
            without_reread_start(&v, &prompt, &mid),
            vec![ts, 8, 10, ts + 60]
        );
        // All of it re-read: nothing is left.
        assert!(without_reread_start(&v, &prompt, &[ts, 1, 2, 3, 4, 5, 6, 7, ts + 9]).is_empty());
        // Five words, or words from the middle of the previous text, stay.
        let five = [ts, 3, 4, 5, 6, 7, 8, ts + 50];
        assert_eq!(without_reread_start(&v, &prompt, &five), five.to_vec());
        let middle = [ts, 8, 10, 11, 12, 13, 0, 1, 2, ts + 50];
        assert_eq!(without_reread_start(&v, &prompt, &middle), middle.to_vec());
    }

    #[test]
    fn a_text_that_starts_over_is_cut_where_it_does() {
        let twice = "Restart the worker with systemctl and check its status, \
                     restart the worker with systemctl and check its status.";
        let at = restart_offset(twice).map(|at| twice[..at].trim_end());
        assert_eq!(
            at,
            Some("Restart the worker with systemctl and check its status,")
        );
        let budget = "Make use debouncedValue at 300ms. Make use debouncedValue at 300ms. \
                      Make use debounc";
        assert_eq!(restart_offset(budget), Some(34), "cut short by the budget");
        // Speech that says its words again, not from the start, or too short to tell.
        for speech in [
            "The cache, the cache, the cache again.",
            "Ship it. Ship it.",
            "Go forward ten meters, then go back ten meters.",
            "Very, very, very good.",
            "Check the logs, then check the logs.",
            "Check the logs, check the",
            "",
        ] {
            assert_eq!(restart_offset(speech), None, "{speech}");
        }
        assert_eq!(restart_offset("Go forward ten. Go forward ten."), Some(16));
    }

    #[test]
    fn an_ending_doubled_from_three_tokens_on_is_a_sign_to_check() {
        let v = tiny_vocabulary();
        let decoded = |tokens: &[i32]| tokens.to_vec();
        // "Go forward ten meters." twice: five tokens a copy, below MIN_REPEATED_SPAN.
        let go = [3, 4, 5, 10, 1];
        assert!(ends_doubled(
            &v,
            &decoded(&[9, 8, 3, 4, 5, 10, 1, 3, 4, 5, 10, 1])
        ));
        assert_eq!(
            repeat_start(&v, &[9, 8, 3, 4, 5, 10, 1, 3, 4, 5, 10, 1]),
            None
        );
        assert!(!ends_doubled(&v, &decoded(&go)));
        assert!(!ends_doubled(&v, &decoded(&[3, 11, 3, 11])), "very, very");
        assert!(!ends_doubled(
            &v,
            &decoded(&[3, 4, 5, 10, 1, 9, 3, 4, 5, 10, 1, 8])
        ));
    }
}
