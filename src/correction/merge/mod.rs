//! Merging the prompted second transcript into the unprompted first one.
//!
//! The second decoding (prompted with the relevant terms and biased towards them) is
//! good at spelling the terms and bad at everything else: the prompt rewrites ordinary
//! speech ("der Server" -> "Nächster Mal"), capitalises words ("Prisma Schema"),
//! repeats a term or copies the prompt. The unprompted first transcript stays the text;
//! the second one only contributes the terms it writes that the first does not, and
//! only where the first has words that sound like them:
//!
//! - the two transcripts are aligned word by word (same letters, ignoring case and
//!   punctuation); between two aligned words lies a block where they differ;
//! - a block whose second-pass words are new terms, common words and words the first
//!   pass's block already says (whole, or glued to a neighbour: "Zeitjahrenlewote" for
//!   "seit Jahren Levothyroxin"), and sound like the first-pass words as a whole
//!   (normalised phonetic distance within [`BLOCK_THRESHOLD`]), is taken from the second
//!   transcript: "get her" -> "GitHub", "added it at mpianca" -> "Aditya and Priyanka",
//!   "Sneak-flagged" -> "Snyk flagged" (a term Whisper glued to the next word);
//! - otherwise each new term of the block replaces the span of the block's first-pass
//!   words that sounds most like it, within the relevance threshold
//!   ([`super::RELEVANCE_THRESHOLD`]; [`COMMON_WORDS_MERGE_THRESHOLD`] for a span of
//!   common words): "Kuhmatter Simhation Centum" keeps "Simhation Centum" and gets
//!   "Kubernetes";
//! - a term both prompted decodes of a window wrote, each prompted differently, may
//!   take words that sound further from it ([`Corrector::merge_witnessed_terms`]);
//! - a term the second transcript writes where the first has nothing, or nothing that
//!   sounds like it, is dropped: the decoder wrote it because it was told to, not
//!   because it heard it;
//! - a term that is itself an ordinary word (of Whisper's vocabulary, or written as a
//!   word and in the English word list: `Mongoose`) replaces ordinary words only when
//!   they sound exactly like it (`Spark` for "spark"), never when they merely sound
//!   close ("left" is not the word list's "lefts", "mango juice" not "`Mongoose` juice"):
//!   Whisper spells ordinary words, so the one it wrote unprompted is the one it heard,
//!   and a biased decode tips it over to a neighbour.
//!
//! The second transcript is taken whole ([`Corrector::prefer_second_pass`]) when it
//! writes more of the terms than the merge and is still the same transcript: about as
//! many letters and at least half of the merged words, and no term written where the
//! merge has no word or only function words (as the merge drops such a term). Where the
//! first pass misheard a name or a product ("the top, Tash" for "up stash"), the prompted
//! decoder, which heard the same audio knowing the terms, is the better witness than a
//! spelling-based sound match; the alignment of misheard words with a term is the weak
//! link.
//! Measured on the context sets (benches/ctxset; docs/context.md): term recall +0.06 on the
//! tuning half, +0.07 on the validation half.

use super::phonetic::{folded_letters, weighted_distance};
use super::words::PATH_SYMBOLS;
use super::{
    Corrector, MatchMode, RELEVANCE_THRESHOLD, Token, contains_word, same_but_apostrophes,
    says_nothing, tokenize,
};

/// Highest normalised phonetic distance at which a whole differing block of the second
/// transcript replaces the first's ("get her" -> "GitHub").
pub const BLOCK_THRESHOLD: f32 = 0.35;
/// Highest normalised phonetic distance at which a span of common words of the first
/// transcript is replaced by a term: common words are likely what was said ("numbers"
/// is not `NumPy`, "computers" not `Kubernetes`).
pub const COMMON_WORDS_MERGE_THRESHOLD: f32 = 0.3;

/// The whole second transcript replaces the merge only when it keeps at least this
/// fraction (numerator / denominator) of the merged transcript's words: a prompted
/// decode that kept fewer is another transcript (the prompt copied: "folic acid,
/// folic, hydroxychloroquine." for a sentence about methotrexate).
const SECOND_PASS_MIN_SHARED_WORDS: (usize, usize) = (1, 2);
/// ... and has between 3/5 and 5/3 of its letters.
const SECOND_PASS_LETTERS_RATIO: (usize, usize) = (3, 5);

/// Most words per transcript the word alignment handles; longer transcripts (minutes of
/// audio) are merged in the first transcript's favour: it is returned unchanged.
pub(super) const MAX_ALIGNED_WORDS: usize = 2_000;

/// A replacement of a transcript's bytes `from..to` by `text`, which writes the term
/// `term` (an index into the corrector's terms).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Splice {
    pub(crate) from: usize,
    pub(crate) to: usize,
    pub(crate) text: String,
    pub(crate) term: usize,
}

impl Splice {
    /// Whether the two replace some of the same bytes.
    pub(crate) fn overlaps(&self, other: &Splice) -> bool {
        self.from < other.to && other.from < self.to
    }

    /// Whether it replaces bytes of `text` by the same bytes.
    pub(crate) fn is_identity(&self, text: &str) -> bool {
        text.get(self.from..self.to) == Some(self.text.as_str())
    }
}

/// `text` with `splices`, which do not overlap, applied.
pub(crate) fn apply_splices<'s>(
    text: &str,
    splices: impl IntoIterator<Item = &'s Splice>,
) -> String {
    let mut splices: Vec<&Splice> = splices.into_iter().collect();
    splices.sort_by_key(|splice| splice.from);
    let mut out = String::with_capacity(text.len() + 16);
    let mut last = 0;
    for splice in splices {
        out.push_str(&text[last..splice.from]);
        out.push_str(&splice.text);
        last = splice.to;
    }
    out.push_str(&text[last..]);
    out
}

impl Corrector {
    /// `first` with the terms among `relevant` (indices into the terms this corrector
    /// was built from) that `second` writes and `first` does not, each where `first`
    /// has words that sound like it (see the module documentation). Returns `first`
    /// unchanged when there is nothing to take.
    #[must_use]
    pub fn merge_second_pass(&self, first: &str, second: &str, relevant: &[usize]) -> String {
        apply_splices(first, &self.second_pass_splices(first, second, relevant))
    }

    /// `second` (already corrected) instead of `merged` (the first transcript with the
    /// second's terms merged in) when it writes more of the terms and is the same
    /// transcript: between 3/5 and 5/3 of `merged`'s letters and at least half of its
    /// words, and adds no term that is an ordinary word (see the module documentation);
    /// else `merged`. `more_follows`: the speech after `merged`'s last word is
    /// transcribed elsewhere (the next window), so the words `second` adds after it are
    /// dropped even where they write a term.
    #[must_use]
    pub fn prefer_second_pass(&self, merged: &str, second: &str, more_follows: bool) -> String {
        let written = |text: &str| {
            self.terms
                .iter()
                .filter(|term| contains_word(text, &term.text))
                .count()
        };
        if written(second) <= written(merged) {
            return merged.to_owned();
        }
        if self.drops_a_term(merged, second) {
            return merged.to_owned(); // terms are added, never swapped (see the merge)
        }
        if self.terms.iter().any(|term| {
            term.ordinary && contains_word(second, &term.text) && !contains_word(merged, &term.text)
        }) {
            // A prompted decode that writes an ordinary-word term the merge did not take
            // ("meter's" for "meters") is not the better witness (see the merge).
            return merged.to_owned();
        }
        let letters = |text: &str| text.chars().filter(|c| c.is_alphanumeric()).count();
        let (low, high) = SECOND_PASS_LETTERS_RATIO;
        let (ours, theirs) = (letters(merged), letters(second));
        if theirs * high < ours * low || theirs * low > ours * high {
            return merged.to_owned();
        }
        let words = |text: &str| -> Vec<String> {
            text.split(|c: char| !c.is_alphanumeric() && c != '\'')
                .filter(|w| !w.is_empty())
                .map(str::to_lowercase)
                .collect()
        };
        let merged_words = words(merged);
        let second_words: std::collections::HashSet<String> = words(second).into_iter().collect();
        let shared = merged_words
            .iter()
            .filter(|w| second_words.contains(*w))
            .count();
        let (num, den) = SECOND_PASS_MIN_SHARED_WORDS;
        if shared * den < merged_words.len() * num || self.adds_a_term_over_nothing(merged, second)
        {
            return merged.to_owned();
        }
        self.without_added_ends(merged, second, more_follows)
    }

    /// True when `second` writes a term that `merged` does not where `merged` has,
    /// between the same aligned words, no word or only function words ("Ktor, New Hire
    /// set" for "The new higher set"): nothing the first transcript heard sounds like
    /// it, and the merge drops such a term too. Words added before `merged`'s first word
    /// or after its last are [`Self::without_added_ends`]' business.
    fn adds_a_term_over_nothing(&self, merged: &str, second: &str) -> bool {
        let (ours, theirs) = (tokenize(merged), tokenize(second));
        if ours.len().max(theirs.len()) > MAX_ALIGNED_WORDS {
            return false;
        }
        differing_blocks(&ours, &theirs).iter().any(|block| {
            let at_an_end =
                block.ours.is_empty() && (block.ours.start == 0 || block.ours.start == ours.len());
            if block.theirs.is_empty() {
                return false; // the second transcript left words out: it added nothing
            }
            let (from, to) = (&theirs[block.theirs.start], &theirs[block.theirs.end - 1]);
            let added = &second[from.core_start..to.core_end];
            !at_an_end
                && ours[block.ours.clone()]
                    .iter()
                    .all(|token| says_nothing(&token.spoken.words))
                && self.terms.iter().any(|term| {
                    contains_word(added, &term.text) && !contains_word(merged, &term.text)
                })
        })
    }

    /// `second` without the words it adds before the first word of `merged` or after
    /// its last, unless they write a term (after the last: unless `more_follows`): a
    /// prompted decode that runs on past the speech ("... with a TTL attribute. Right
    /// mid-end") or starts with the prompt. The first transcript has no words there, and
    /// the prompted one is only the better witness of the terms.
    fn without_added_ends(&self, merged: &str, second: &str, more_follows: bool) -> String {
        let (ours, theirs) = (tokenize(merged), tokenize(second));
        if ours.is_empty() || ours.len().max(theirs.len()) > MAX_ALIGNED_WORDS {
            return second.to_owned();
        }
        let blocks = differing_blocks(&ours, &theirs);
        let mut start = 0;
        let mut end = second.len();
        if let Some(last) = blocks.last()
            && last.ours.is_empty()
            && last.ours.start == ours.len()
            && let Some(first_added) = theirs.get(last.theirs.start)
        {
            let (kept, added) = second.split_at(first_added.core_start);
            if more_follows || !self.writes_a_term(added) {
                end = kept.trim_end().len();
            }
        }
        if let Some(first) = blocks.first()
            && first.ours.is_empty()
            && first.ours.start == 0
            && let Some(first_kept) = theirs.get(first.theirs.end)
        {
            let (added, _) = second.split_at(first_kept.core_start);
            if !self.writes_a_term(added) {
                start = first_kept.core_start;
            }
        }
        if start >= end {
            return second.to_owned();
        }
        second[start..end].to_owned()
    }

    /// The replacements [`Corrector::merge_second_pass`] makes: for the terms among
    /// `candidates` that `second` writes and `first` does not, a block of `first` that
    /// sounds like `second`'s block as a whole, or the span that sounds most like the
    /// term. Non-overlapping, in no particular order.
    pub(crate) fn second_pass_splices(
        &self,
        first: &str,
        second: &str,
        candidates: &[usize],
    ) -> Vec<Splice> {
        self.splices_matched(first, second, candidates, MatchMode::Relevance)
    }

    /// [`Corrector::merge_second_pass`] of the terms among `witnessed` that two decodes
    /// of the window, each prompted differently, both wrote (`second` is one of them):
    /// a term's span of unusual words may sound further from it, within
    /// [`super::WITNESSED_THRESHOLD`]. On garbled audio (espeak-ng voices outside English) the
    /// plain decode's words for a name are often too far for one witness ("Genevilla"
    /// for `Echeverría`, "Dibobro" for `Thibault`, "leotuato" for `Neo4j`: 0.48-0.55),
    /// while a distractor the passes write copying the prompt's list is written by one
    /// of them, or where the plain decode's words sound further still ("cumts" for
    /// `Codecov`: 0.63). Spans of common words keep their strict threshold.
    #[must_use]
    pub fn merge_witnessed_terms(&self, first: &str, second: &str, witnessed: &[usize]) -> String {
        apply_splices(
            first,
            &self.splices_matched(first, second, witnessed, MatchMode::Witnessed),
        )
    }

    /// [`Corrector::second_pass_splices`], each term's span matched in `mode`
    /// ([`MatchMode::Relevance`] or [`MatchMode::Witnessed`]).
    fn splices_matched(
        &self,
        first: &str,
        second: &str,
        candidates: &[usize],
        mode: MatchMode,
    ) -> Vec<Splice> {
        let new_terms: Vec<usize> = candidates
            .iter()
            .copied()
            .filter(|&index| {
                self.terms.get(index).is_some_and(|term| {
                    !contains_word(first, &term.text) && contains_word(second, &term.text)
                })
            })
            .collect();
        if new_terms.is_empty() {
            return Vec::new();
        }
        let ours = tokenize(first);
        let theirs = tokenize(second);
        if ours.len() > MAX_ALIGNED_WORDS || theirs.len() > MAX_ALIGNED_WORDS {
            return Vec::new();
        }
        let mut splices = Vec::new();
        for block in differing_blocks(&ours, &theirs) {
            let (ours_block, theirs_block) =
                (&ours[block.ours.clone()], &theirs[block.theirs.clone()]);
            let (Some(ours_first), Some(ours_last)) = (ours_block.first(), ours_block.last())
            else {
                continue; // the second transcript added words the first has no sound for
            };
            let (Some(theirs_first), Some(theirs_last)) =
                (theirs_block.first(), theirs_block.last())
            else {
                continue;
            };
            let theirs_text = &second[theirs_first.core_start..theirs_last.core_end];
            let block_terms: Vec<usize> = new_terms
                .iter()
                .copied()
                .filter(|&index| contains_word(theirs_text, &self.terms[index].text))
                .collect();
            if block_terms.is_empty() {
                continue;
            }
            let said_words: Vec<&String> = ours_block
                .iter()
                .flat_map(|token| token.spoken.words.iter())
                .collect();
            let only_terms_and_known_words = theirs_block.iter().all(|token| {
                token.common
                    || (!token.spoken.words.is_empty()
                        && token.spoken.words.iter().all(|w| said_words.contains(&w)))
                    || glued_in(token, ours_block)
                    || block_terms
                        .iter()
                        .any(|&index| contains_word(token.core, &self.terms[index].text))
            });
            let sounds_alike = || {
                self.merge_threshold(ours_block, &block_terms, BLOCK_THRESHOLD)
                    .is_some_and(|threshold| {
                        sound_alike(
                            &joined_key(ours_block),
                            &joined_key(theirs_block),
                            threshold,
                        )
                    })
            };
            // A term the first transcript writes stays: the second may add terms, not
            // swap one for another ("src/components/NavBar.tsx" for "src/pages/index.tsx",
            // ssh-keygen for ssh-agent: siblings sound alike, the first was matched).
            let ours_text = &first[ours_first.core_start..ours_last.core_end];
            if only_terms_and_known_words
                && !self.drops_a_term(ours_text, theirs_text)
                && sounds_alike()
            {
                splices.push(Splice {
                    from: ours_first.core_start,
                    to: ours_last.core_end,
                    text: theirs_text.to_owned(),
                    term: block_terms[0],
                });
                continue;
            }
            splices.extend(self.term_spans(ours_block, &block_terms, mode));
        }
        splices
    }

    /// For each of `terms`, the span of `tokens` that sounds most like it, as
    /// non-overlapping replacements by the term. The distance is normalised by the
    /// length of the term's spoken form, not the span's: a long span gets no credit for
    /// the sounds it has beyond the term ("contract to Sersha" is not `Kubernetes`).
    fn term_spans(&self, tokens: &[Token<'_>], terms: &[usize], mode: MatchMode) -> Vec<Splice> {
        let loose = mode.relevance_threshold().unwrap_or(RELEVANCE_THRESHOLD);
        let mut candidates: Vec<_> = self
            .candidates_among(tokens, mode, terms)
            .into_iter()
            .filter_map(|mut candidate| {
                let span = &tokens[candidate.start..candidate.end];
                if span.iter().any(|token| self.writes_a_term(token.core)) {
                    return None; // a written term stays (see `second_pass_splices`)
                }
                let threshold = self.merge_threshold(span, &[candidate.term], loose)?;
                let key = joined_key_after(span, candidate.skip > 0);
                candidate.cost = self.distance_to_term(&key, candidate.term)?;
                (candidate.cost <= threshold + 1e-4).then_some(candidate)
            })
            .collect();
        candidates.sort_by(|a, b| a.cost.total_cmp(&b.cost).then(a.start.cmp(&b.start)));
        let mut taken = vec![false; tokens.len()];
        let mut placed: Vec<usize> = Vec::new();
        let mut splices = Vec::new();
        for candidate in candidates {
            let range = candidate.start..candidate.end;
            if placed.contains(&candidate.term) || taken[range.clone()].iter().any(|&t| t) {
                continue;
            }
            taken[range].iter_mut().for_each(|t| *t = true);
            placed.push(candidate.term);
            splices.push(Splice {
                from: candidate.from(tokens),
                to: tokens[candidate.end - 1].core_end,
                text: self.terms[candidate.term].text.clone(),
                term: candidate.term,
            });
        }
        splices
    }

    /// How far (normalised phonetic distance) the first transcript's `span` may sound
    /// from `terms` and still give way to them: `loose` for a span with an unusual word,
    /// [`COMMON_WORDS_MERGE_THRESHOLD`] for ordinary words, and only the same sound for
    /// ordinary words replaced by terms that are ordinary words themselves, or their
    /// possessives ("left" is not "lefts"; see the module documentation). `None`: never,
    /// for one common word that the terms only respell with an apostrophe ("lessons" is
    /// not "lesson's": grammar, which Whisper knows).
    fn merge_threshold(&self, span: &[Token<'_>], terms: &[usize], loose: f32) -> Option<f32> {
        let ordinary = |index: usize| self.terms.get(index).is_some_and(|t| t.ordinary);
        let english = |index: usize| self.terms.get(index).is_some_and(|t| t.english_word);
        if let [token] = span
            && token.common
            && terms.iter().all(|&index| {
                ordinary(index) && same_but_apostrophes(token.core, &self.terms[index].text)
            })
        {
            return None;
        }
        Some(if !span.iter().all(|token| token.common) {
            loose
        } else if terms.iter().all(|&index| english(index)) {
            0.0
        } else {
            COMMON_WORDS_MERGE_THRESHOLD
        })
    }

    /// Whether a prompted decode's terms merged into the plain decode corrected without
    /// its guesses (`into_heard`, corrected since) make a better text than the same
    /// terms merged into the plain decode corrected (`into_text`; `guesses`: the terms
    /// its correction guessed, [`super::Correction::guessed_terms`]). The merge never
    /// swaps a term for another, so a guessed term keeps out the term a decode hearing
    /// the audio with the context writes over the guessed word's phrase (`esomeprazole`
    /// over "Essum Prasal", guessed `Bazel` by "Prasal" alone). `into_heard` wins when it
    /// writes a term `into_text` does not and lacks only guesses, none of them a longer
    /// spelling of a term it writes instead (a pass that writes `DB` in "seed DB.sh"
    /// agrees with the guess `scripts/seed_db.sh`).
    #[must_use]
    pub fn heard_merge_wins(&self, into_text: &str, into_heard: &str, guesses: &[String]) -> bool {
        let (before, after) = (
            self.written_terms(into_text),
            self.written_terms(into_heard),
        );
        let lost: Vec<&String> = before.iter().filter(|term| !after.contains(term)).collect();
        if !lost.iter().all(|term| guesses.contains(term)) {
            return false;
        }
        let lost_letters: Vec<Vec<u8>> = lost.iter().map(|term| folded_letters(term)).collect();
        let mut gained = after
            .iter()
            .filter(|term| !before.contains(term))
            .peekable();
        gained.peek().is_some()
            && gained.all(|term| {
                let letters = folded_letters(term);
                !lost_letters.iter().any(|guess| {
                    letters.is_empty()
                        || guess
                            .windows(letters.len())
                            .any(|part| part == letters.as_slice())
                })
            })
    }

    /// The terms `text` writes, in the terms' order.
    #[must_use]
    pub fn written_terms(&self, text: &str) -> Vec<String> {
        self.terms
            .iter()
            .filter(|term| contains_word(text, &term.text))
            .map(|term| term.text.clone())
            .collect()
    }

    /// True when `text` writes one of the terms.
    fn writes_a_term(&self, text: &str) -> bool {
        self.terms
            .iter()
            .any(|term| contains_word(text, &term.text))
    }

    /// True when `before` writes a term that `after` does not, or only as part of a
    /// longer one: a pass that would drop it swaps terms instead of adding them
    /// ("ShipmentTracker class" is not `ShipmentTracker.kt`).
    fn drops_a_term(&self, before: &str, after: &str) -> bool {
        self.terms.iter().any(|term| {
            contains_whole_term(before, &term.text) && !contains_whole_term(after, &term.text)
        })
    }

    /// The smallest weighted distance from `key` to a spoken form of term `term`,
    /// divided by that form's key length.
    fn distance_to_term(&self, key: &[u8], term: usize) -> Option<f32> {
        self.forms
            .iter()
            .filter(|form| form.term == term && !form.key.is_empty())
            .filter_map(|form| {
                #[allow(clippy::cast_precision_loss)]
                let length = form.key.len() as f32;
                weighted_distance(key, &form.key, f32::MAX).map(|d| d / length)
            })
            .min_by(f32::total_cmp)
    }
}

/// Where two tokenised transcripts differ: token ranges of each, between aligned words.
#[derive(Debug, PartialEq)]
pub(super) struct Block {
    pub(super) ours: std::ops::Range<usize>,
    pub(super) theirs: std::ops::Range<usize>,
}

/// The blocks between the words of a longest common subsequence of `ours` and
/// `theirs` (words compared by their letters and digits, ignoring case).
fn differing_blocks(ours: &[Token<'_>], theirs: &[Token<'_>]) -> Vec<Block> {
    differing_blocks_by(ours, theirs, true)
}

/// [`differing_blocks`], with words compared by their letters and digits in any case
/// (`ignore_case`) or only in the same case.
pub(super) fn differing_blocks_by(
    ours: &[Token<'_>],
    theirs: &[Token<'_>],
    ignore_case: bool,
) -> Vec<Block> {
    let fold = |token: &Token<'_>| -> String {
        let letters = token.core.chars().filter(|c| c.is_alphanumeric());
        if ignore_case {
            letters.flat_map(char::to_lowercase).collect()
        } else {
            letters.collect()
        }
    };
    let a: Vec<String> = ours.iter().map(fold).collect();
    let b: Vec<String> = theirs.iter().map(fold).collect();
    // lcs[i][j]: length of the longest common subsequence of a[i..] and b[j..].
    let width = b.len() + 1;
    let mut lcs = vec![0u32; (a.len() + 1) * width];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i * width + j] = if !a[i].is_empty() && a[i] == b[j] {
                lcs[(i + 1) * width + j + 1] + 1
            } else {
                lcs[(i + 1) * width + j].max(lcs[i * width + j + 1])
            };
        }
    }
    let mut blocks = Vec::new();
    let (mut i, mut j) = (0, 0);
    let (mut block_i, mut block_j) = (0, 0);
    while i < a.len() && j < b.len() {
        if !a[i].is_empty() && a[i] == b[j] {
            if block_i < i || block_j < j {
                blocks.push(Block {
                    ours: block_i..i,
                    theirs: block_j..j,
                });
            }
            i += 1;
            j += 1;
            (block_i, block_j) = (i, j);
        } else if lcs[(i + 1) * width + j] >= lcs[i * width + j + 1] {
            i += 1;
        } else {
            j += 1;
        }
    }
    if block_i < a.len() || block_j < b.len() {
        blocks.push(Block {
            ours: block_i..a.len(),
            theirs: block_j..b.len(),
        });
    }
    blocks
}

/// True when `text` writes `term` as [`contains_word`] does and not joined to more of
/// an identifier or path: `ShipmentTracker` is not written in "ShipmentTracker.kt".
fn contains_whole_term(text: &str, term: &str) -> bool {
    text.match_indices(term).any(|(at, _)| {
        let joined = |c: Option<char>, next: Option<char>| {
            c.is_some_and(char::is_alphanumeric)
                || (c.is_some_and(|c| PATH_SYMBOLS.contains(&c))
                    && next.is_some_and(char::is_alphanumeric))
        };
        let mut before = text[..at].chars().rev();
        let mut after = text[at + term.len()..].chars();
        let (b1, b2) = (before.next(), before.next());
        let (a1, a2) = (after.next(), after.next());
        !joined(b1, b2) && !joined(a1, a2)
    })
}

/// True when `token`'s letters begin or end a longer word of `ours`: the first
/// transcript glued the word to its neighbour ("Zeitjahrenlewote" for "seit Jahren
/// Levo..."), and the second one, which split them, says it too.
fn glued_in(token: &Token<'_>, ours: &[Token<'_>]) -> bool {
    let letters = &token.spoken.letters;
    !letters.is_empty()
        && ours.iter().any(|word| {
            let longer = &word.spoken.letters;
            longer.len() > letters.len()
                && (longer.starts_with(letters) || longer.ends_with(letters))
        })
}

/// The phonetic key of consecutive tokens, as one key.
pub(super) fn joined_key(tokens: &[Token<'_>]) -> Vec<u8> {
    joined_key_after(tokens, false)
}

/// [`joined_key`], from the word after the first token's elided word when `elided`
/// (and the token has one).
fn joined_key_after(tokens: &[Token<'_>], elided: bool) -> Vec<u8> {
    let mut key: Vec<u8> = tokens
        .iter()
        .enumerate()
        .flat_map(|(index, token)| match &token.elided {
            Some(after) if elided && index == 0 => after.span.key.iter().copied(),
            _ => token.spoken.key.iter().copied(),
        })
        .collect();
    key.dedup();
    key
}

/// True when two keys are within `threshold` of each other (normalised by the longer
/// one).
fn sound_alike(a: &[u8], b: &[u8], threshold: f32) -> bool {
    let longest = a.len().max(b.len());
    if a.is_empty() || b.is_empty() {
        return false;
    }
    #[allow(clippy::cast_precision_loss)]
    let limit = threshold * longest as f32;
    weighted_distance(a, b, limit + 1e-4).is_some()
}

#[cfg(test)]
mod tests;
