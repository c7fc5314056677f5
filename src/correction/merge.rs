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
//! - a term the second transcript writes where the first has nothing, or nothing that
//!   sounds like it, is dropped: the decoder wrote it because it was told to, not
//!   because it heard it;
//! - a term that is itself an ordinary word replaces ordinary words only when they sound
//!   exactly like it (`Spark` for "spark"), never when they merely sound close ("left"
//!   is not the word list's "lefts"): Whisper spells ordinary words, so the one it wrote
//!   unprompted is the one it heard, and a biased decode tips it over to a neighbour.
//!
//! The second transcript is taken whole ([`Corrector::prefer_second_pass`]) when it
//! writes more of the terms than the merge and is still the same transcript: about as
//! many letters and at least half of the merged words, and no term written where the
//! merge has no word or only function words (as the merge drops such a term). Where the first pass misheard a
//! name or a product ("the top, Tash" for "up stash"), the prompted decoder, which
//! heard the same audio knowing the terms, is the better witness than a spelling-based
//! sound match; the alignment of misheard words with a term is the weak link.
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
            let (Some(from), Some(to)) = (
                theirs.get(block.theirs.start),
                theirs.get(block.theirs.end.wrapping_sub(1)),
            ) else {
                return false;
            };
            if block.theirs.is_empty() {
                return false; // the second transcript left words out: it added nothing
            }
            let added = &second[from.core_start..to.core_end];
            !at_an_end
                && ours[block.ours.clone()]
                    .iter()
                    .all(|token| says_nothing(&token.words))
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
                .flat_map(|token| token.words.iter())
                .collect();
            let only_terms_and_known_words = theirs_block.iter().all(|token| {
                token.common
                    || (!token.words.is_empty()
                        && token.words.iter().all(|word| said_words.contains(&word)))
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
            splices.extend(self.term_spans(ours_block, &block_terms));
        }
        splices
    }

    /// For each of `terms`, the span of `tokens` that sounds most like it, as
    /// non-overlapping replacements by the term. The distance is normalised by the
    /// length of the term's spoken form, not the span's: a long span gets no credit for
    /// the sounds it has beyond the term ("contract to Sersha" is not `Kubernetes`).
    fn term_spans(&self, tokens: &[Token<'_>], terms: &[usize]) -> Vec<Splice> {
        let mut candidates: Vec<_> = self
            .candidates(tokens, MatchMode::Relevance)
            .into_iter()
            .filter(|candidate| terms.contains(&candidate.term))
            .filter_map(|mut candidate| {
                let span = &tokens[candidate.start..candidate.end];
                if span.iter().any(|token| self.writes_a_term(token.core)) {
                    return None; // a written term stays (see `second_pass_splices`)
                }
                let threshold =
                    self.merge_threshold(span, &[candidate.term], RELEVANCE_THRESHOLD)?;
                candidate.cost = self.distance_to_term(&joined_key(span), candidate.term)?;
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
                from: tokens[candidate.start].core_start,
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
        } else if terms.iter().all(|&index| ordinary(index)) {
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
        let lost: Vec<Vec<u8>> = before
            .iter()
            .filter(|term| !after.contains(term))
            .map(|term| folded_letters(term))
            .collect();
        let mut gained = after
            .iter()
            .filter(|term| !before.contains(term))
            .peekable();
        gained.peek().is_some()
            && before
                .iter()
                .filter(|term| !after.contains(term))
                .all(|term| guesses.contains(term))
            && gained.all(|term| {
                let letters = folded_letters(term);
                !lost.iter().any(|guess| {
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
    !token.letters.is_empty()
        && ours.iter().any(|word| {
            word.letters.len() > token.letters.len()
                && (word.letters.starts_with(&token.letters)
                    || word.letters.ends_with(&token.letters))
        })
}

/// The phonetic key of consecutive tokens, as one key.
pub(super) fn joined_key(tokens: &[Token<'_>]) -> Vec<u8> {
    let mut key: Vec<u8> = tokens.iter().flat_map(|t| t.key.iter().copied()).collect();
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
mod tests {
    use crate::context::{ContextTerms, Dictionary, Message};
    use crate::correction::Corrector;

    fn merge(dictionary: &[&str], first: &str, second: &str) -> String {
        let dictionary = Dictionary::from_terms(dictionary).expect("valid");
        let terms = ContextTerms::from_context(&Vec::<Message>::new(), &dictionary);
        let corrector = Corrector::new(&terms);
        let all: Vec<usize> = (0..terms.len()).collect();
        corrector.merge_second_pass(first, second, &all)
    }

    #[test]
    fn words_the_first_transcript_glued_count_as_said() {
        // The first pass glued the term to an unusual word ("Zeitjahrenlewote" for "seit
        // Jahren Levo..."); the second one split them and says that word too.
        assert_eq!(
            merge(
                &["Grafana"],
                "Open the graffanadashbord now.",
                "Open the Grafana dashbord now."
            ),
            "Open the Grafana dashbord now."
        );
        // An unusual word the first pass has nowhere, glued or not, keeps the block out.
        assert_eq!(
            merge(
                &["Grafana"],
                "Open the graffanadashbord now.",
                "Open the Grafana blorp now."
            ),
            "Open the graffanadashbord now."
        );
    }

    #[test]
    fn a_term_replaces_the_words_that_sound_like_it_and_nothing_else() {
        assert_eq!(
            merge(
                &["Kubernetes"],
                "der Server läuft jetzt auf Kuhmatter Simhation Centum.",
                "Nächster Mal läuft jetzt auf Kubernetes im Händen zu tun."
            ),
            "der Server läuft jetzt auf Kubernetes Simhation Centum."
        );
    }

    #[test]
    fn a_written_term_is_not_swapped_for_a_longer_one_that_contains_it() {
        let dictionary = ["ShipmentTracker", "ShipmentTracker.kt"];
        assert_eq!(
            merge(
                &dictionary,
                "The ShipmentTracker class swallows the timeout.",
                "The ShipmentTracker.kt, swallows the timeout."
            ),
            "The ShipmentTracker class swallows the timeout."
        );
        assert_eq!(
            merge(
                &dictionary,
                "Open shipment tracker, dot Katie.",
                "Open ShipmentTracker.kt."
            ),
            "Open ShipmentTracker.kt."
        );
    }

    fn prefer(dictionary: &[&str], merged: &str, second: &str) -> String {
        prefer_in_window(dictionary, merged, second, false)
    }

    /// [`prefer`] in a window that `more_follows` (or not).
    fn prefer_in_window(
        dictionary: &[&str],
        merged: &str,
        second: &str,
        more_follows: bool,
    ) -> String {
        let dictionary = Dictionary::from_terms(dictionary).expect("valid");
        let terms = ContextTerms::from_context(&Vec::<Message>::new(), &dictionary);
        Corrector::new(&terms).prefer_second_pass(merged, second, more_follows)
    }

    /// Word-level edits of dictated sentences (words dropped, repeated, replaced by a
    /// term or another word, punctuation moved), as two decodes of one window differ:
    /// every merge of one into the other returns text and never panics (a block where
    /// the second transcript left words out is empty on its side).
    #[test]
    fn merging_any_two_transcripts_of_a_window_never_panics() {
        let terms = [
            "Upstash",
            "Ktor",
            "esomeprazole",
            "Bazel",
            "scripts/seed_db.sh",
            "DB",
            "NavBar.tsx",
            "--atomic",
        ];
        let dictionary = Dictionary::from_terms(terms).expect("valid");
        let corrector = Corrector::new(&ContextTerms::from_context(&[], &dictionary));
        let words = [
            "The", "rate", "limiter", "keeps", "its", "counters", "in", "the", "top,", "Tash.",
            "Give", "Essum", "Prasal", "for", "two", "weeks.", "Could", "a", "new", "hire", "set",
            "this", "up", "alone?", "Run", "script", "slash", "cdb.sh", "now,", "é",
        ];
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = |below: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            usize::try_from(seed % below as u64).expect("small")
        };
        for _ in 0..3000 {
            let first: Vec<&str> = (0..1 + next(14))
                .map(|_| words[next(words.len())])
                .collect();
            let mut second = first.clone();
            for _ in 0..next(5) {
                let at = next(second.len() + 1);
                match next(4) {
                    0 if at < second.len() => {
                        second.remove(at);
                    }
                    1 => second.insert(at, terms[next(terms.len())]),
                    2 if at < second.len() => second[at] = words[next(words.len())],
                    _ => second.insert(at, ","),
                }
            }
            let (first, second) = (first.join(" "), second.join(" "));
            let all: Vec<usize> = (0..terms.len()).collect();
            let merged = corrector.merge_second_pass(&first, &second, &all);
            let preferred = corrector.prefer_second_pass(&merged, &second, next(2) == 0);
            let guesses = corrector.correct(&first, None).guessed_terms();
            let _ = corrector.heard_merge_wins(&merged, &preferred, &guesses);
            assert!(
                !merged.is_empty() && !preferred.is_empty(),
                "{first:?} / {second:?}"
            );
        }
    }

    #[test]
    fn the_second_transcript_is_taken_whole_only_when_it_is_the_same_transcript() {
        let merged = "The rate limit will keep its count on the top, Tash.";
        let second = "The rate limit to keep its count on the Upstash.";
        assert_eq!(prefer(&["Upstash"], merged, second), second);
        assert_eq!(prefer(&["Redis"], merged, second), merged, "no more terms");
        let merged = "Hold the methotrexate until the lever ends, I'm come down.";
        let copied = "folic acid, folic, hydroxychloroquine, methotrexate.";
        let terms = ["methotrexate", "folic acid", "hydroxychloroquine"];
        assert_eq!(prefer(&terms, merged, copied), merged, "the prompt copied");
        let short = "Upstash.";
        assert_eq!(
            prefer(
                &["Upstash"],
                "The rate limit keeps its count on the top, Tash.",
                short
            ),
            "The rate limit keeps its count on the top, Tash.",
            "speech lost"
        );
    }

    #[test]
    fn words_the_second_transcript_adds_at_either_end_are_left_out() {
        let merged = "Store the orders in 9 more DV with a key.";
        let second = "Store the orders in DynamoDB with a key. Right mid-end";
        assert_eq!(
            prefer(&["DynamoDB"], merged, second),
            "Store the orders in DynamoDB with a key."
        );
        let second = "Thank you. Store the orders in DynamoDB with a key.";
        assert_eq!(
            prefer(&["DynamoDB"], merged, second),
            "Store the orders in DynamoDB with a key."
        );
        // Unless they write a term.
        let second = "Store the orders in DynamoDB with a key. Cosmos DB.";
        assert_eq!(prefer(&["DynamoDB", "Cosmos DB"], merged, second), second);
        // Where the next window transcribes what follows, the words after the end are
        // its speech, terms or not: kept, they would be written twice.
        assert_eq!(
            prefer_in_window(&["DynamoDB", "Cosmos DB"], merged, second, true),
            "Store the orders in DynamoDB with a key."
        );
    }

    #[test]
    fn a_block_that_sounds_alike_is_taken_whole() {
        assert_eq!(
            merge(
                &["Jenkins", "GitHub"],
                "Move the pipeline from Jenkins to get her actions.",
                "Move the Pipeline from Jenkins to GitHub actions."
            ),
            "Move the pipeline from Jenkins to GitHub actions."
        );
        assert_eq!(
            merge(
                &["Aditya", "Priyanka"],
                "Ping added it at mpianca about the launch.",
                "Ping Aditya and Priyanka about the launch."
            ),
            "Ping Aditya and Priyanka about the launch."
        );
    }

    #[test]
    fn a_term_without_a_sound_alike_in_the_first_transcript_is_dropped() {
        let first = "Let's review the numbers again on Monday.";
        assert_eq!(
            merge(&["PyTorch"], first, "Let's review PyTorch again on Monday."),
            first
        );
        assert_eq!(merge(&["Datadog"], first, "Datadog."), first);
        assert_eq!(
            merge(
                &["Datadog"],
                first,
                "Let's review the numbers again on Monday. Datadog."
            ),
            first
        );
    }

    #[test]
    fn a_term_glued_to_the_next_word_is_taken_with_the_word() {
        assert_eq!(
            merge(
                &["Snyk", "Dependabot"],
                "Sneak-flagged two vulnerable packages.",
                "Snyk flagged two vulnerable packages."
            ),
            "Snyk flagged two vulnerable packages."
        );
        // The word glued to the term must be one the first pass said.
        assert_eq!(
            merge(
                &["Snyk", "Dependabot"],
                "Sneak-flagged two vulnerable packages.",
                "Snyk flogged two vulnerable packages."
            ),
            "Sneak-flagged two vulnerable packages."
        );
    }

    #[test]
    fn a_long_span_does_not_stand_for_a_shorter_term() {
        // "contract to Sersha" is loosely like Kubernetes over its own length, but the
        // span has far more sounds than the term.
        let first = "Send the contract to Sersha and tag before lunch.";
        let second = "Send the Kubernetes and tag before lunch.";
        assert_eq!(merge(&["Kubernetes"], first, second), first);
        let first = "The quarterly report is due.";
        assert_eq!(
            merge(&["Kubernetes"], first, "The Kubernetes is due."),
            first
        );
    }

    #[test]
    fn common_words_give_way_only_to_a_close_sound() {
        let first = "Let's review the numbers again on Monday.";
        assert_eq!(
            merge(&["NumPy"], first, "Let's review the NumPy again on Monday."),
            first
        );
    }

    #[test]
    fn an_ordinary_word_gives_way_to_an_ordinary_word_term_only_when_it_sounds_the_same() {
        // A LibriSpeech word list's "lefts" over a real clip's "rear, left" (biased decode).
        assert_eq!(
            merge(&["lefts"], "rear, left.", "Rear lefts."),
            "rear, left."
        );
        assert_eq!(
            merge(
                &["meter's"],
                "Go forward 10 meters.",
                "Go forward 10 meter's."
            ),
            "Go forward 10 meters."
        );
        // Nor is one common word respelled with an apostrophe, wherever the prompted
        // decode puts it.
        let first = "The girls sent the letters home.";
        assert_eq!(
            merge(
                &["letter's", "girl's"],
                first,
                "The girl's, and the letter's, home."
            ),
            first
        );
        // A term that is not an ordinary word still replaces a close sound.
        assert_eq!(
            merge(
                &["Qdrant"],
                "Store them in quadrant.",
                "Store them in Qdrant."
            ),
            "Store them in Qdrant."
        );
    }

    #[test]
    fn the_second_transcript_is_not_taken_whole_for_a_term_over_function_words() {
        let merged = "She moved the road to the open file. The new higher set is up alone.";
        let second = "She moved the road to the open file. Ktor, New Hire set, Missed Alone.";
        assert_eq!(prefer(&["Ktor", "Upstash"], merged, second), merged);
        // Over words that say something, the same transcript is taken.
        let merged = "She moved the road to the open file. Cater new higher set is up alone.";
        let second = "She moved the road to the open file. Ktor new higher set is up alone.";
        assert_eq!(prefer(&["Ktor", "Upstash"], merged, second), second);
        // A second transcript that leaves words out and adds a term elsewhere.
        let merged = "Log in, please, to the top, Tash today.";
        let second = "Log in to Upstash today.";
        assert_eq!(prefer(&["Ktor", "Upstash"], merged, second), second);
    }

    #[test]
    fn the_second_transcript_is_not_taken_whole_for_an_ordinary_word_term() {
        let merged = "Eight of spades, four of clubs.";
        let second = "8 of side's, 4 of clubs.";
        assert_eq!(prefer(&["side's", "Kubernetes"], merged, second), merged);
    }

    #[test]
    fn terms_the_first_transcript_already_writes_change_nothing() {
        let first = "Deploy it on Kubernetes.";
        assert_eq!(
            merge(&["Kubernetes"], first, "Deploy it on Kubernetes now."),
            first
        );
        assert_eq!(merge(&["Kubernetes"], "", "Kubernetes."), "");
    }

    #[test]
    fn a_term_the_first_transcript_writes_is_not_swapped_for_a_sibling() {
        let terms = ["src/components/NavBar.tsx", "src/pages/index.tsx"];
        let first = "Open src/components/NavBar.tsx and fix the import.";
        let second = "src/pages/index.tsx and fix the import.";
        assert_eq!(merge(&terms, first, second), first);
        assert_eq!(prefer(&terms, first, second), first);
        let terms = ["ssh-keygen", "ssh-agent", "ed25519"];
        let first = "Generate a new key with ssh-keygen dash T E D two five five one nine.";
        let second = "Generate a new key with ssh-agent -t ed25519.";
        let merged = merge(&terms, first, second);
        assert!(
            merged.contains("ssh-keygen") && !merged.contains("ssh-agent"),
            "{merged}"
        );
        assert_eq!(prefer(&terms, first, second), first);
        // Adding a term next to a written one is still a merge.
        let first = "Generate a new key with ssh-keygen dash t e d two five five one nine.";
        let second = "Generate a new key with ssh-keygen -t ed25519.";
        assert!(merge(&terms, first, second).contains("ed25519"));
    }
}
