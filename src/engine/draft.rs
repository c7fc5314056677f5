//! Drafts: what a decode will likely write next, read from another decode of the same
//! window (a prompted pass's draft is the window's last decode, at first the plain one;
//! a sampled attempt's is the greedy one). The decoder checks a draft's next tokens in one run
//! ([`DecoderState::decode_ahead`](super::binding::DecoderState::decode_ahead)) instead
//! of one run per token; each is kept only while the decode, picking from the rows that
//! run left exactly as it would token by token, writes it. A decode that leaves the
//! draft goes on token by token until its last written text is found in the draft again.
//!
//! A prompted pass over a window mostly writes the plain decode's text again, with a
//! term or a word changed here and there: the draft's tokens after the change are found
//! by its last few text tokens (prompt lookup decoding, as in speculative decoding
//! without a draft model).

use super::binding::{CHECKS_DRAFTS, DecoderState};
use super::tokens::Vocabulary;
use crate::error::Result;

/// The fewest draft tokens checked in one run (twice as many at first).
const MIN_WIDTH: usize = 4;
/// The most draft tokens checked in one run (a run of 32 tokens costs about eight
/// single-token runs: more wasted where the decode leaves the draft early).
const MAX_WIDTH: usize = 32;
/// Text tokens of the decode that must match the draft to place it there (fewer at the
/// start).
const MATCH_TOKENS: usize = 3;

/// A decode's way through its draft: where it last was, and how many tokens to check
/// in the next run (doubled while every token is written, halved when one is not).
#[derive(Debug)]
pub(crate) struct Lookahead<'a> {
    draft: &'a [i32],
    /// The draft's text tokens (no timestamps) with their indices in it.
    draft_text: Vec<(usize, i32)>,
    width: usize,
    /// Where in the draft the last proposal started.
    cursor: usize,
    /// The last proposal: the decode's length then, and the tokens proposed.
    last: Option<(usize, usize)>,
}

impl<'a> Lookahead<'a> {
    /// The way through `draft` of a decode that has one, where the decoder can check
    /// drafts ([`CHECKS_DRAFTS`]).
    pub(crate) fn through(vocabulary: &Vocabulary, draft: Option<&'a [i32]>) -> Option<Self> {
        draft
            .filter(|_| CHECKS_DRAFTS)
            .map(|draft| Lookahead::new(vocabulary, draft))
    }

    pub(crate) fn new(vocabulary: &Vocabulary, draft: &'a [i32]) -> Self {
        let draft_text = draft
            .iter()
            .copied()
            .enumerate()
            .filter(|&(_, t)| vocabulary.is_text(t))
            .collect();
        Lookahead {
            draft,
            draft_text,
            width: MIN_WIDTH * 2,
            cursor: 0,
            last: None,
        }
    }

    /// Has the decoder check the draft's next tokens after `sequence` (the prefix, then
    /// transcript tokens from `transcript_start`) in one run, unless its last run left
    /// the row after `sequence` already.
    pub(crate) fn check_ahead(
        &mut self,
        state: &mut DecoderState,
        vocabulary: &Vocabulary,
        sequence: &[i32],
        transcript_start: usize,
        threads: usize,
    ) -> Result<()> {
        if state.has_row(sequence) {
            return Ok(());
        }
        let generated = sequence.get(transcript_start..).unwrap_or_default();
        let draft = self.propose(vocabulary, generated);
        state.decode_ahead(sequence, draft, threads)
    }

    /// The draft's tokens to check after the transcript tokens `generated` (empty when
    /// the draft has nothing that follows them).
    fn propose(&mut self, vocabulary: &Vocabulary, generated: &[i32]) -> &'a [i32] {
        if let Some((at, proposed)) = self.last.take() {
            // Every proposed token written, and the one after them from the last row.
            self.width = if generated.len() > at + proposed {
                (self.width * 2).min(MAX_WIDTH)
            } else {
                (self.width / 2).max(MIN_WIDTH)
            };
        }
        let Some(start) = self.continuation(vocabulary, generated) else {
            return &[];
        };
        let end = (start + self.width).min(self.draft.len());
        self.cursor = start;
        self.last = Some((generated.len(), end - start));
        &self.draft[start..end]
    }

    /// Where in the draft the decode's next token is likely: after the draft's place of
    /// `generated`'s last text tokens, past as many timestamps as `generated` wrote after
    /// them.
    fn continuation(&self, vocabulary: &Vocabulary, generated: &[i32]) -> Option<usize> {
        let draft = self.draft;
        let stamps_after = generated
            .iter()
            .rev()
            .take_while(|&&t| !vocabulary.is_text(t))
            .count();
        let mut text: Vec<i32> = generated
            .iter()
            .rev()
            .copied()
            .filter(|&t| vocabulary.is_text(t))
            .take(MATCH_TOKENS)
            .collect();
        text.reverse();
        let after_text = if text.is_empty() {
            0
        } else {
            self.place_of(&text)? + 1
        };
        let stamps_there = draft
            .get(after_text..)?
            .iter()
            .take_while(|&&t| !vocabulary.is_text(t))
            .count();
        let start = after_text + stamps_after.min(stamps_there);
        (start < draft.len()).then_some(start)
    }

    /// The draft index of the last token of the text tokens `text` (at most
    /// [`MATCH_TOKENS`]; its shorter tails when the draft has no such run): the first place
    /// at or after the cursor, else the first anywhere.
    fn place_of(&self, text: &[i32]) -> Option<usize> {
        for n in (1..=text.len()).rev() {
            let tail = &text[text.len() - n..];
            let places: Vec<usize> = self
                .draft_text
                .windows(n)
                .filter(|run| run.iter().map(|&(_, t)| t).eq(tail.iter().copied()))
                .filter_map(|run| run.last().map(|&(index, _)| index))
                .collect();
            let place = places
                .iter()
                .copied()
                .find(|&index| index + 1 >= self.cursor)
                .or_else(|| places.first().copied());
            if place.is_some() {
                return place;
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::tokens::tests::vocabulary_of;

    /// A vocabulary of 100 text tokens, and its first timestamp token.
    fn vocabulary() -> (Vocabulary, i32) {
        let texts: Vec<String> = (0..100).map(|i| format!(" w{i}")).collect();
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        let vocabulary = vocabulary_of(&texts);
        let first_stamp = vocabulary.special.timestamp_begin;
        (vocabulary, first_stamp)
    }

    #[test]
    fn a_decode_that_follows_the_draft_is_proposed_its_next_tokens_in_wider_runs() {
        let (vocabulary, _) = vocabulary();
        let draft: Vec<i32> = (0..80).collect();
        let mut lookahead = Lookahead::new(&vocabulary, &draft);
        assert_eq!(lookahead.propose(&vocabulary, &[]), &draft[..8]);
        // All 8 written, and the next from the last row: 16 proposed after them.
        assert_eq!(lookahead.propose(&vocabulary, &draft[..9]), &draft[9..25]);
        // The decode left the draft at its 12th token: nothing follows that in the draft.
        let mut left = draft[..11].to_vec();
        left.push(90);
        assert_eq!(lookahead.propose(&vocabulary, &left), &[] as &[i32]);
        // Back on the draft: proposed from after its last text tokens, half as many.
        left.extend_from_slice(&draft[11..14]);
        assert_eq!(lookahead.propose(&vocabulary, &left), &draft[14..22]);
    }

    #[test]
    fn timestamps_the_decode_wrote_itself_are_skipped_in_the_draft() {
        let (vocabulary, stamp) = vocabulary();
        // <|0.00|> w0 w1 w2 <|1.00|> <|1.00|> w3 w4 <|2.00|>
        let draft = [stamp, 0, 1, 2, stamp + 50, stamp + 50, 3, 4, stamp + 100];
        let mut lookahead = Lookahead::new(&vocabulary, &draft);
        // Its own closing timestamp (another time): the draft's opening one is next.
        let closed = [stamp, 0, 1, 2, stamp + 48];
        assert_eq!(lookahead.propose(&vocabulary, &closed), &draft[5..]);
        // Both timestamps written: the draft's text after them.
        let opened = [stamp, 0, 1, 2, stamp + 48, stamp + 49];
        assert_eq!(lookahead.propose(&vocabulary, &opened), &draft[6..]);
        // A word the draft repeats is placed at or after where the last proposal was.
        let repeated = [stamp + 2, 9, 9, 9];
        let mut again = Lookahead::new(&vocabulary, &repeated);
        assert_eq!(again.propose(&vocabulary, &[stamp + 2, 9]), &repeated[2..]);
        assert_eq!(
            again.propose(&vocabulary, &[stamp + 2, 9, 9]),
            &repeated[3..]
        );
    }
}
