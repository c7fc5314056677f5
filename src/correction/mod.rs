//! Spoken-to-written correction: after decoding, transcript spans that sound like a
//! context term are replaced by the term's spelling ("read me dot md" -> `README.md`,
//! "parse config file" -> `parse_config_file`, "redis" -> `Redis`).
//!
//! A span (one to [`MAX_SPAN_WORDS`] transcript words, never across punctuation that
//! ends a phrase; a comma next to a said symbol or an abbreviation's full stop does
//! not) is turned into spoken words by the same rules as the terms' [spoken
//! forms](crate::context::spoken), then compared with every spoken form of every term:
//!
//! - the same letters (ignoring case, spaces and separators) is an exact match;
//! - otherwise the normalised weighted edit distance of their [phonetic keys](phonetic)
//!   must stay under [`MATCH_THRESHOLD`], plus [`FUNCTION_WORD_PENALTY`] for each
//!   function word ("the", "and", ...) the span has and the term does not say;
//! - or, for one word that is neither in Whisper's vocabulary nor an English word, its
//!   letters must be within one edit of a term of [`NEAR_SPELLING_MIN_LETTERS`] letters
//!   or more, two from ten ("uvcorn" -> `uvicorn`), as a guess.
//!
//! The spoken forms are the caller's (`sounds_like`: "win" for `Nguyen`) and those derived
//! from the term's spelling; a caller's form of function words only ("the") is ignored.
//!
//! Guards, so that a term never appears unless the audio matched it:
//! - a span that is one common word ("engine", "Jason") is only replaced by a plain
//!   one-word term of nearly the same sound ([`SINGLE_COMMON_WORD_THRESHOLD`]:
//!   `Tokyo` -> `tokio`, `Century` -> `Sentry`), never by an identifier, acronym or
//!   file name (`JSON`) except by casing alone (`json` -> `JSON`);
//! - a span made only of common words needs a much closer sound
//!   ([`COMMON_SPAN_THRESHOLD`]: "web page" is not `webpack`, "engine makes" not
//!   `nginx`);
//! - short keys (under [`MIN_FUZZY_KEY_LEN`] phones) only match exactly;
//! - the keys follow English spelling; in a German, Spanish or French transcript a span
//!   matches only with the term's own key by that language's spelling (`spellings.rs`:
//!   "que torolaco" is `ketorolaco` in Spanish); in any other language only the same
//!   letters match.
//!
//! Before that, a word that glues a term to a common word ("Pingaditya",
//! "OpenDocker-compose.yml") is split in two when its letters are exactly the term's
//! plus the common word's.
//!
//! Words outside a replaced span are left exactly as they were (case, punctuation).
//! The best (lowest cost, then longest, then highest-ranked term) non-overlapping
//! matches win. Cost is O(spans x candidate forms): forms are bucketed by their first
//! phone class and filtered by key length before any distance is computed.

mod glued;
mod homophones;
pub mod judge;
pub mod llm; // acceptance of LLM corrections
mod matching;
mod merge;
pub mod phonetic;
mod spellings;
#[cfg(test)]
mod tests;
mod words;

use std::collections::HashMap;

use crate::context::mining::{is_common_word, is_ordinary_word};
use crate::context::spoken::is_apostrophe;
use crate::context::{ContextTerms, Language, TermKind};

use matching::{buckets_of, choose, is_guess, same_but_apostrophes, says_nothing};
use merge::Splice;
use spellings::{Spelling, key_by};
use words::{Token, hyphen_joined, split_said_symbols, tokenize, tokenize_by};

use phonetic::{ConsonantProfile, folded_letters, phonetic_key};

/// Most transcript words one term may span, unless its longest spoken form is longer
/// (a path said symbol by symbol); see [`MAX_LONG_SPAN_WORDS`].
pub const MAX_SPAN_WORDS: usize = 8;
/// Most transcript words any term may span: its longest spoken form plus two.
pub const MAX_LONG_SPAN_WORDS: usize = 16;
/// Highest normalised phonetic distance accepted between a span and a spoken form.
pub const MATCH_THRESHOLD: f32 = 0.15;
/// The same for a span made only of common words.
pub const COMMON_SPAN_THRESHOLD: f32 = 0.08;
/// The same for a span that is one common word (and only towards a one-word term).
pub const SINGLE_COMMON_WORD_THRESHOLD: f32 = 0.05;
/// The same for a span that is one word Whisper has no whole-word token for (a spelling
/// it guessed for a name it did not know, like "Sersha" for Saoirse), matched to a term
/// that is not one lowercase ordinary word ("amiable" became a word list's "annibal").
pub const UNKNOWN_WORD_THRESHOLD: f32 = 0.3;
/// The fewest letters of a term that a word spelled within a letter or two of it may
/// become ([`Corrector`]'s near spellings: "uvcorn" for `uvicorn`).
pub const NEAR_SPELLING_MIN_LETTERS: usize = 6;
/// The cost of a near spelling per letter edit, above [`MATCH_THRESHOLD`]: a guess.
pub const NEAR_SPELLING_EDIT_COST: f32 = 0.05;
/// Added to the distance for each function word of the span the form does not say.
pub const FUNCTION_WORD_PENALTY: f32 = 0.1;
/// Highest normalised phonetic distance at which a span makes a term relevant
/// ([`Corrector::relevant_terms`]).
pub const RELEVANCE_THRESHOLD: f32 = 0.45;
/// Highest normalised phonetic distance at which the merge gives a span of unusual
/// words to a term that two prompted decodes of the window, each prompted differently,
/// both wrote: two witnesses need less of the plain decode's sound than one
/// ([`Corrector::merge_witnessed_terms`]).
pub const WITNESSED_THRESHOLD: f32 = 0.55;
/// Keys with fewer phones than this are never relevant by sound alone.
pub const MIN_RELEVANCE_KEY_LEN: usize = 3;
/// Keys with fewer phones than this only match exactly.
pub const MIN_FUZZY_KEY_LEN: usize = 4;

/// Function words: glue that rarely belongs to a term.
const FUNCTION_WORDS: &[&str] = &[
    "a", "an", "the", "and", "or", "but", "of", "to", "in", "on", "at", "for", "with", "by",
    "from", "is", "are", "was", "were", "be", "been", "it", "its", "it's", "this", "that", "these",
    "those", "as", "we", "you", "he", "she", "they", "i", "me", "my", "our", "your", "his", "her",
    "their", "not", "no", "so", "if", "then", "than", "do", "does", "did", "will", "would", "can",
    "could", "should", "there", "here", "what", "which", "who", "up", "out", "about", "into",
    "over", "just", "all", "some", "any",
];

/// One replacement made in a transcript.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Replacement {
    /// The replaced text, as the engine wrote it.
    pub original: String,
    /// The term written in its place.
    pub term: String,
    /// The match cost (0 for an exact match).
    pub cost: f32,
}

/// A corrected transcript and what was changed.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Correction {
    /// The transcript with the replacements made.
    pub text: String,
    /// The replacements, in text order.
    pub replacements: Vec<Replacement>,
}

impl Correction {
    /// The terms of the replacements that were guesses: one word Whisper has no
    /// whole-word token for, matched to a name more loosely than [`MATCH_THRESHOLD`]
    /// allows any other span ([`Corrector::correct_without_guesses`] leaves them out).
    #[must_use]
    pub fn guessed_terms(&self) -> Vec<String> {
        self.replacements
            .iter()
            .filter(|replacement| is_guess(replacement.cost))
            .map(|replacement| replacement.term.clone())
            .collect()
    }
}

/// Corrects transcripts towards the terms of one request; build it once per request.
#[derive(Debug, Clone)]
pub struct Corrector {
    terms: Vec<TermEntry>,
    forms: Vec<FormEntry>,
    /// Forms by the class of their first phone.
    buckets: HashMap<u8, Vec<usize>>,
    /// Most transcript tokens a span may have (from the longest spoken form).
    max_span_words: usize,
}

#[derive(Debug, Clone)]
struct TermEntry {
    text: String,
    /// The letters of the written term (folded), for case-only fixes.
    letters: Vec<u8>,
    /// One ordinary word (a name or a lowercase word, letters and apostrophes only).
    plain_word: bool,
    /// A common word or its possessive ([`is_common_word_or_possessive`]): it replaces
    /// words only when they sound the same (here and in the merge).
    ordinary: bool,
    /// `ordinary`, or one word written as an English word is (lowercase, or a capital
    /// then lowercase) that Whisper's vocabulary or the English word list holds
    /// ([`is_ordinary_word`]: `Mongoose`, `Flask`, not `LaTeX`): in the merge it too
    /// replaces ordinary words only when they sound the same.
    english_word: bool,
}

impl TermEntry {
    /// One lowercase ordinary word ("aasvogels"): not a name Whisper would guess a
    /// spelling for, so a single unknown word must sound as close to it as to any term.
    fn is_lowercase_word(&self) -> bool {
        self.plain_word && !self.text.chars().any(char::is_uppercase)
    }
}

#[derive(Debug, Clone)]
struct FormEntry {
    term: usize,
    words: Vec<String>,
    key: Vec<u8>,
    profile: ConsonantProfile,
    letters: Vec<u8>,
    /// The caller gave this form (`sounds_like`).
    given: bool,
}

/// The spoken words of a span of tokens, with their key and letters.
#[derive(Debug, Clone, Default)]
struct Span {
    words: Vec<String>,
    key: Vec<u8>,
    letters: Vec<u8>,
}

/// What a span is matched for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MatchMode {
    /// Correction, with every guard.
    Correct {
        /// Phonetic matching, not only exact: the keys follow the transcript's
        /// spelling conventions (English, or of unknown language; German, Spanish, French).
        fuzzy: bool,
    },
    /// Loose matching that decides which terms to prompt for, and which span a term
    /// one prompted decode wrote replaces ([`RELEVANCE_THRESHOLD`]).
    Relevance,
    /// Relevance for a term two prompted decodes both wrote ([`WITNESSED_THRESHOLD`]).
    Witnessed,
}

impl MatchMode {
    /// The loose threshold of a relevance mode; `None` for correction.
    pub(super) fn relevance_threshold(self) -> Option<f32> {
        match self {
            MatchMode::Relevance => Some(RELEVANCE_THRESHOLD),
            MatchMode::Witnessed => Some(WITNESSED_THRESHOLD),
            MatchMode::Correct { .. } => None,
        }
    }
}

/// A possible replacement of tokens `start..end` by term `term`.
#[derive(Debug, Clone, Copy)]
struct Candidate {
    start: usize,
    end: usize,
    term: usize,
    cost: f32,
    /// Bytes of the first token's core left before the term: its elided word, when the
    /// span starts at the word after it ([`words::Elided`]).
    skip: usize,
}

impl Candidate {
    /// Where the replaced text starts in the transcript `tokens` came from.
    fn from(&self, tokens: &[Token<'_>]) -> usize {
        tokens[self.start].core_start + self.skip
    }
}

impl Corrector {
    /// Indexes the spoken forms of `terms`.
    #[must_use]
    pub fn new(terms: &ContextTerms) -> Self {
        let mut entries = Vec::with_capacity(terms.len());
        let mut forms = Vec::new();
        let mut buckets: HashMap<u8, Vec<usize>> = HashMap::new();
        for (index, term) in terms.terms().iter().enumerate() {
            // An apostrophe keeps a word a word ("o'shanter", "hastie's").
            let plain_word = matches!(term.kind(), TermKind::Name | TermKind::Word)
                && term
                    .text()
                    .chars()
                    .all(|c| c.is_alphabetic() || is_apostrophe(c));
            let ordinary = is_common_word_or_possessive(term.text());
            entries.push(TermEntry {
                text: term.text().to_owned(),
                letters: folded_letters(term.text()),
                plain_word,
                ordinary,
                english_word: ordinary
                    || (plain_word
                        && term.text().chars().skip(1).all(char::is_lowercase)
                        && is_ordinary_word(term.text())),
            });
            let given = term.given_forms().len();
            for (form_index, form) in term.spoken_forms().iter().enumerate() {
                if form_index < given && says_nothing(&form.words) {
                    // A caller's form of function words only ("the", "a") would put the
                    // term over ordinary speech; it names nothing.
                    continue;
                }
                let key = phonetic_key(&form.words);
                if key.is_empty() {
                    continue;
                }
                let letters = form.words.iter().flat_map(|w| folded_letters(w)).collect();
                for class in buckets_of(&key) {
                    buckets.entry(class).or_default().push(forms.len());
                }
                forms.push(FormEntry {
                    term: index,
                    words: form.words.clone(),
                    profile: ConsonantProfile::of(&key),
                    key,
                    letters,
                    given: form_index < given,
                });
            }
        }
        let longest_form = forms.iter().map(|f| f.words.len()).max().unwrap_or(0);
        Corrector {
            terms: entries,
            forms,
            buckets,
            max_span_words: (longest_form + 2).clamp(MAX_SPAN_WORDS, MAX_LONG_SPAN_WORDS),
        }
    }

    /// Replaces the spans of `text` that sound like a term by the term. `language` is
    /// the transcript's language (`None`: unknown, treated as English).
    #[must_use]
    pub fn correct(&self, text: &str, language: Option<Language>) -> Correction {
        self.correct_with(text, language, true)
    }

    /// [`Corrector::correct`] without its guesses: one word Whisper has no whole-word
    /// token for, matched loosely to a name ([`UNKNOWN_WORD_THRESHOLD`]), stays as
    /// written. A guess is the spelling rules' reading of a word the decoder did not
    /// know; a decode prompted with the terms hears the audio, and where it writes
    /// another term over the guessed word's phrase it is the better witness ("Essum
    /// Prasal" is `esomeprazole`, not the `Bazel` that "Prasal" alone sounds like).
    #[must_use]
    pub fn correct_without_guesses(&self, text: &str, language: Option<Language>) -> Correction {
        self.correct_with(text, language, false)
    }

    fn correct_with(&self, text: &str, language: Option<Language>, guesses: bool) -> Correction {
        if self.forms.is_empty() || text.is_empty() {
            return Correction {
                text: text.to_owned(),
                replacements: Vec::new(),
            };
        }
        let english = language.is_none_or(|l| l.code() == "en");
        let (unglued, mut replacements) = if english {
            self.split_glued_terms(text)
        } else {
            (text.to_owned(), Vec::new())
        };
        let mut corrected = self.correct_spans(&unglued, language, guesses);
        replacements.append(&mut corrected.replacements);
        corrected.replacements = replacements;
        corrected
    }

    /// The span-matching pass (see the module documentation).
    fn correct_spans(&self, text: &str, language: Option<Language>, guesses: bool) -> Correction {
        let unchanged = || Correction {
            text: text.to_owned(),
            replacements: Vec::new(),
        };
        let view = split_said_symbols(text);
        let (tokens, mut candidates) = self.strict_candidates(&view, language);
        if !guesses {
            candidates.retain(|candidate| !is_guess(candidate.cost));
        }
        let protected = self.already_written(&tokens, text);
        let chosen = choose(candidates, &protected, &tokens, &self.terms);
        if chosen.is_empty() {
            return unchanged();
        }
        let mut out = String::with_capacity(text.len() + 16);
        let mut replacements = Vec::with_capacity(chosen.len());
        let mut last = 0;
        for candidate in chosen {
            let (from, to) = (candidate.from(&tokens), tokens[candidate.end - 1].core_end);
            let term = &self.terms[candidate.term].text;
            if from > last && hyphen_joined(text, &view, from - 1) {
                out.push_str(&text[last..from - 1]);
                out.push(' ');
            } else {
                out.push_str(&text[last..from]);
            }
            out.push_str(term);
            replacements.push(Replacement {
                original: text[from..to].to_owned(),
                term: term.clone(),
                cost: candidate.cost,
            });
            last = to;
            if hyphen_joined(text, &view, to) {
                out.push(' ');
                last = to + 1;
            }
        }
        out.push_str(&text[last..]);
        Correction {
            text: out,
            replacements,
        }
    }

    /// Every span of `tokens` that matches a term in `mode`.
    fn candidates(&self, tokens: &[Token<'_>], mode: MatchMode) -> Vec<Candidate> {
        self.candidates_of(tokens, mode, None)
    }

    /// [`Self::candidates`] for the `terms` given only, each compared with every span
    /// whatever its first sound: the merge asks about the few terms a prompted decode
    /// wrote, so the index by first sound, which keeps a thousand terms cheap, would
    /// only lose the names whose first sound Whisper heard as another class ("Kiff
    /// Produktion" for `Cefpodoxim`).
    fn candidates_among(
        &self,
        tokens: &[Token<'_>],
        mode: MatchMode,
        terms: &[usize],
    ) -> Vec<Candidate> {
        let forms: Vec<usize> = (0..self.forms.len())
            .filter(|&index| terms.contains(&self.forms[index].term))
            .collect();
        self.candidates_of(tokens, mode, Some(&forms))
            .into_iter()
            .filter(|candidate| terms.contains(&candidate.term))
            .collect()
    }

    /// The candidates of every span of `tokens` against `forms` (indices into the
    /// spoken forms), or against the forms that start with a span's class of sound.
    fn candidates_of(
        &self,
        tokens: &[Token<'_>],
        mode: MatchMode,
        forms: Option<&[usize]>,
    ) -> Vec<Candidate> {
        let mut candidates = Vec::new();
        for start in 0..tokens.len() {
            let first = &tokens[start];
            if first.spoken.words.is_empty() {
                continue;
            }
            if matches!(
                mode,
                MatchMode::Relevance | MatchMode::Witnessed | MatchMode::Correct { fuzzy: true }
            ) {
                self.match_near_spelling(first, start, &mut candidates);
            }
            let whole = (first.spoken.clone(), 0);
            self.spans_from(tokens, start, whole, mode, forms, &mut candidates);
            if let Some(elided) = &first.elided {
                let opening = (elided.span.clone(), elided.skip);
                self.spans_from(tokens, start, opening, mode, forms, &mut candidates);
            }
        }
        candidates
    }

    /// The candidates of the spans that start with `opening`'s span (the token at
    /// `start`, or the word after its elided word: `opening`'s bytes of its core left
    /// out) and run on over the next tokens up to a phrase's end; against `forms` as in
    /// [`Self::candidates_of`].
    fn spans_from(
        &self,
        tokens: &[Token<'_>],
        start: usize,
        opening: (Span, usize),
        mode: MatchMode,
        forms: Option<&[usize]>,
        candidates: &mut Vec<Candidate>,
    ) {
        let (mut span, skip) = opening;
        for end in start + 1..=(start + self.max_span_words).min(tokens.len()) {
            let token = &tokens[end - 1];
            if end > start + 1 {
                if token.spoken.words.is_empty() {
                    break;
                }
                span.words.extend(token.spoken.words.iter().cloned());
                // Keys are deduplicated phone runs: a join repeats no phone.
                let repeated = usize::from(
                    span.key.last().is_some() && span.key.last() == token.spoken.key.first(),
                );
                span.key
                    .extend_from_slice(&token.spoken.key[repeated.min(token.spoken.key.len())..]);
                span.letters.extend_from_slice(&token.spoken.letters);
            }
            let before = candidates.len();
            self.match_span(tokens, (start, end), &span, mode, forms, candidates);
            for candidate in &mut candidates[before..] {
                candidate.skip = skip;
            }
            if token.breaks_after {
                break;
            }
        }
    }

    /// Candidate edits of `text` for the judge ([`judge`]): the strict matcher's choices
    /// (identities when the span sounds exactly like a spoken form) and every loose
    /// sound-alike span (the relevance threshold, no guards) of words that do not
    /// already spell a term, the cheapest term per span.
    pub(crate) fn matched_edits(&self, text: &str, language: Option<Language>) -> Vec<judge::Edit> {
        if self.forms.is_empty() || text.is_empty() {
            return Vec::new();
        }
        let tokens = tokenize(text);
        let protected = self.already_written(&tokens, text);
        let edit = |candidate: &Candidate, source| judge::Edit {
            splice: Splice {
                from: candidate.from(&tokens),
                to: tokens[candidate.end - 1].core_end,
                text: self.terms[candidate.term].text.clone(),
                term: candidate.term,
            },
            cost: candidate.cost,
            source,
        };
        let strict = choose(
            self.strict_candidates(text, language).1,
            &protected,
            &tokens,
            &self.terms,
        );
        let mut edits: Vec<judge::Edit> = strict
            .iter()
            .map(|c| {
                let source = if c.cost <= 0.0 {
                    judge::EditSource::Identity
                } else {
                    judge::EditSource::Matched
                };
                edit(c, source)
            })
            .collect();
        let mut loose: Vec<Candidate> = self
            .candidates(&tokens, MatchMode::Relevance)
            .into_iter()
            .filter(|c| !protected[c.start..c.end].iter().any(|&p| p))
            .collect();
        // The closest span per term, then per span: a term said once has one place.
        loose.sort_by(|a, b| {
            a.cost
                .total_cmp(&b.cost)
                .then((b.end - b.start).cmp(&(a.end - a.start)))
        });
        let mut placed_terms: Vec<usize> = strict.iter().map(|c| c.term).collect();
        let mut spans: Vec<(usize, usize)> = Vec::new();
        for candidate in &loose {
            if !placed_terms.contains(&candidate.term)
                && !spans.contains(&(candidate.start, candidate.end))
            {
                placed_terms.push(candidate.term);
                spans.push((candidate.start, candidate.end));
                edits.push(edit(candidate, judge::EditSource::Loose));
            }
        }
        edits
    }

    /// The tokens of `text` and the strict matcher's candidates among them: phonetic keys
    /// by English spelling in English (or an unknown language), by the language's own in
    /// German, Spanish and French (`spellings.rs`); exact matches only in any other
    /// language, whose spelling no rules here read.
    fn strict_candidates<'t>(
        &self,
        text: &'t str,
        language: Option<Language>,
    ) -> (Vec<Token<'t>>, Vec<Candidate>) {
        let spelling = Spelling::of(language);
        let english = language.is_none_or(|l| l.code() == "en");
        let mode = MatchMode::Correct {
            fuzzy: english || spelling != Spelling::English,
        };
        let mut tokens = tokenize_by(text, spelling);
        let candidates = if spelling == Spelling::English {
            self.candidates(&tokens, mode)
        } else {
            // Whisper's vocabulary, which tells a common word, holds few whole words of
            // these languages ("contrato", "donné" are two tokens each): any word may be
            // an ordinary one, so every span is guarded as common words are, and only
            // the term's own key is a match (another spelling of the same sounds). A
            // nearly equal key is often an ordinary word or the same word in another
            // language ("gabapentina" said, `gabapentin` in a list of 1000 terms).
            for token in &mut tokens {
                token.common = true;
            }
            let mut candidates = self.respelled(spelling).candidates(&tokens, mode);
            candidates.retain(|candidate| candidate.cost <= 0.0);
            candidates
        };
        (tokens, candidates)
    }

    /// This corrector with its spoken forms keyed by `spelling` (the same terms and
    /// forms, so candidates name the same terms).
    fn respelled(&self, spelling: Spelling) -> Corrector {
        let mut forms = Vec::with_capacity(self.forms.len());
        let mut buckets: HashMap<u8, Vec<usize>> = HashMap::new();
        for form in &self.forms {
            let key = key_by(&form.words, spelling);
            if key.is_empty() {
                continue;
            }
            for class in buckets_of(&key) {
                buckets.entry(class).or_default().push(forms.len());
            }
            forms.push(FormEntry {
                profile: ConsonantProfile::of(&key),
                key,
                ..form.clone()
            });
        }
        Corrector {
            terms: self.terms.clone(),
            forms,
            buckets,
            max_span_words: self.max_span_words,
        }
    }

    /// The spoken forms of term `term` (an index into this corrector's terms), most
    /// likely first, as text.
    pub(crate) fn spoken_texts(&self, term: usize) -> Vec<String> {
        self.forms
            .iter()
            .filter(|form| form.term == term)
            .map(|form| form.words.join(" "))
            .collect()
    }

    /// The indices (into the [`ContextTerms`] this corrector was built from) of the
    /// terms that a first, unprompted transcript gives reason to expect: some span
    /// sounds loosely like them ([`RELEVANCE_THRESHOLD`], any language, no common-word
    /// guards), or a word contains their letters. A prompt of only these terms helps
    /// the second decoding without dragging unrelated speech towards a long list.
    #[must_use]
    pub fn relevant_terms(&self, text: &str) -> Vec<usize> {
        let mut relevant = self.relevant_terms_as_written(text);
        // Juncture: "an umpide" may be "a numpide" ("numb pie"), and the other way round.
        if let Some(rejoined) = move_article_n(text) {
            relevant.extend(self.relevant_terms_as_written(&rejoined));
            relevant.sort_unstable();
            relevant.dedup();
        }
        relevant
    }

    fn relevant_terms_as_written(&self, text: &str) -> Vec<usize> {
        let tokens = tokenize(text);
        let mut relevant: Vec<usize> = self
            .candidates(&tokens, MatchMode::Relevance)
            .into_iter()
            .map(|c| c.term)
            .collect();
        for token in &tokens {
            for (index, term) in self.terms.iter().enumerate() {
                if term.letters.len() >= 4
                    && token.spoken.letters.len() >= term.letters.len()
                    && token
                        .spoken
                        .letters
                        .windows(term.letters.len())
                        .any(|w| w == term.letters.as_slice())
                {
                    relevant.push(index);
                }
            }
        }
        relevant.sort_unstable();
        relevant.dedup();
        relevant
    }

    /// Marks tokens that already spell a term exactly (so nothing overwrites them).
    fn already_written(&self, tokens: &[Token<'_>], text: &str) -> Vec<bool> {
        let mut protected = vec![false; tokens.len()];
        for start in 0..tokens.len() {
            let elided = tokens[start]
                .elided
                .as_ref()
                .map_or(0, |elided| elided.skip);
            for end in start + 1..=(start + self.max_span_words).min(tokens.len()) {
                let to = tokens[end - 1].core_end;
                let written = [0, elided].iter().any(|&skip| {
                    let span = &text[tokens[start].core_start + skip..to];
                    self.terms.iter().any(|t| t.text == span)
                });
                if written {
                    protected[start..end].iter_mut().for_each(|p| *p = true);
                }
            }
        }
        protected
    }
}

/// `text` with the "n" of every article moved across the word boundary: "an umpide"
/// becomes "a numpide" and "a napple" becomes "an apple" (`None` when there is none).
/// The sound is the same, and Whisper guesses the split.
fn move_article_n(text: &str) -> Option<String> {
    let words: Vec<&str> = text.split(' ').collect();
    let mut out: Vec<String> = Vec::with_capacity(words.len());
    let mut changed = false;
    let mut index = 0;
    while index < words.len() {
        let word = words[index];
        let next = words.get(index + 1).copied().unwrap_or("");
        let next_starts = |vowel: bool| {
            next.chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() && "aeiouAEIOU".contains(c) == vowel)
        };
        if word.eq_ignore_ascii_case("an") && next_starts(true) {
            out.push(word[..1].to_owned());
            out.push(format!("n{next}"));
            (changed, index) = (true, index + 2);
        } else if word.eq_ignore_ascii_case("a")
            && next.len() > 2
            && next.starts_with(['n', 'N'])
            && next[1..].starts_with(|c: char| "aeiou".contains(c))
        {
            out.push(format!("{word}n"));
            out.push(next[1..].to_owned());
            (changed, index) = (true, index + 2);
        } else {
            out.push(word.to_owned());
            index += 1;
        }
    }
    changed.then(|| out.join(" "))
}

/// A common word or its possessive (a word list's "meter's", "side's"): Whisper spells
/// such words itself, so the one it wrote is the one it heard unless they sound the same.
fn is_common_word_or_possessive(text: &str) -> bool {
    let stem = text
        .strip_suffix("'s")
        .or_else(|| text.strip_suffix("\u{2019}s"))
        .unwrap_or(text);
    is_common_word(stem)
}

/// True when `text` has `word` not glued to other letters or digits.
#[must_use]
pub fn contains_word(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
    })
}
