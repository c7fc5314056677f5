//! The terms of a request: dictionary terms first, then terms mined from the messages,
//! each with its spoken forms.
//!
//! [`ContextTerms`] is what the later stages share: the prompt lists the terms
//! ([`super::prompt`]), decode-time biasing can build a token trie over each term's
//! [`Term::written_forms`], and post-correction (`correction`) maps transcript
//! spans whose sound matches a [`Term::spoken_forms`] entry back to the written term.

use std::collections::HashSet;

pub use super::mining::TermKind;
use super::mining::{is_common_word, mine_terms};
use super::spoken::{Piece, SpokenForm, split_pieces, spoken_forms};
use super::{Dictionary, Message};

/// At most this many mined terms are kept (the dictionary is never cut).
pub const MAX_MINED_TERMS: usize = 200;

/// Where a term comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TermOrigin {
    /// The request's `dictionary`: the caller says it matters.
    Dictionary,
    /// Mined from the request's `messages`: it may or may not be said.
    Messages,
}

/// One term the transcript should spell exactly.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Term {
    text: String,
    origin: TermOrigin,
    kind: TermKind,
    /// The forms the caller gave (`sounds_like`) first, then those derived from the
    /// spelling.
    spoken: Vec<SpokenForm>,
    /// How many of `spoken` the caller gave.
    given: usize,
}

impl Term {
    /// A term with its spoken forms derived from `text`.
    #[must_use]
    pub fn new(text: impl Into<String>, origin: TermOrigin, kind: TermKind) -> Self {
        let text = text.into();
        let spoken = spoken_forms(&text);
        Term {
            text,
            origin,
            kind,
            spoken,
            given: 0,
        }
    }

    /// The term with `forms` (how the caller says it is said, `sounds_like`) before
    /// the forms derived from its spelling; a derived form the caller also gave is kept
    /// once, as given.
    #[must_use]
    pub fn with_given_forms(mut self, forms: &[String]) -> Self {
        let mut given: Vec<SpokenForm> = Vec::with_capacity(forms.len());
        for form in forms {
            let words = super::form_words(form);
            if !words.is_empty() && !given.iter().any(|g| g.words == words) {
                given.push(SpokenForm { words });
            }
        }
        self.spoken.retain(|form| !given.contains(form));
        self.given = given.len();
        given.append(&mut self.spoken);
        self.spoken = given;
        self
    }

    /// The term as it must be written (`user_service.py`).
    #[must_use]
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Where it comes from.
    #[must_use]
    pub fn origin(&self) -> TermOrigin {
        self.origin
    }

    /// What it looks like.
    #[must_use]
    pub fn kind(&self) -> TermKind {
        self.kind
    }

    /// How it is said: the forms the caller gave, then those derived from the
    /// spelling, most likely first (`user underscore service dot pie`, ...).
    #[must_use]
    pub fn spoken_forms(&self) -> &[SpokenForm] {
        &self.spoken
    }

    /// The spoken forms the caller gave (`sounds_like`), a prefix of
    /// [`Term::spoken_forms`].
    #[must_use]
    pub fn given_forms(&self) -> &[SpokenForm] {
        &self.spoken[..self.given]
    }

    /// The texts a decoder should produce for this term: the term itself, and the
    /// same preceded by a space (Whisper's tokens for a word in running text start
    /// with a space). A token trie for decode-time biasing is built over these.
    #[must_use]
    pub fn written_forms(&self) -> Vec<String> {
        vec![self.text.clone(), format!(" {}", self.text)]
    }

    /// True for a term that is one ordinary word with ordinary casing: a common word
    /// (Whisper spells it unaided) is a weak term and gets stricter matching.
    #[must_use]
    pub fn is_common_word(&self) -> bool {
        is_common_word(&self.text)
    }
}

/// The terms of one request: the dictionary's in its order, then the mined ones, best
/// first; each text once (a mined term equal to a dictionary term, ignoring case, is
/// dropped).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ContextTerms {
    terms: Vec<Term>,
}

impl ContextTerms {
    /// Mines `messages` and merges the result after `dictionary`.
    #[must_use]
    pub fn from_context(messages: &[Message], dictionary: &Dictionary) -> Self {
        let mut seen: HashSet<String> = HashSet::new();
        let mut terms = Vec::new();
        for text in dictionary.terms() {
            if seen.insert(text.to_lowercase()) {
                let term = Term::new(text.clone(), TermOrigin::Dictionary, kind_of(text));
                terms.push(term.with_given_forms(dictionary.sounds_like().forms(text)));
            }
        }
        for mined in mine_terms(messages).into_iter().take(MAX_MINED_TERMS) {
            if seen.insert(mined.text.to_lowercase()) {
                terms.push(Term::new(mined.text, TermOrigin::Messages, mined.kind));
            }
        }
        ContextTerms { terms }
    }

    /// The first `count` terms (all of them when there are fewer), in rank order: the
    /// glossary a prompt lists.
    #[must_use]
    pub fn leading(&self, count: usize) -> Self {
        self.subset(&(0..self.len().min(count)).collect::<Vec<_>>())
    }

    /// The terms at `indices` (positions in [`ContextTerms::terms`]) in the order of
    /// `indices`, each once; indices out of range are ignored. A prompt lists them in
    /// that order (its budget cuts the last).
    #[must_use]
    pub fn picked(&self, indices: &[usize]) -> ContextTerms {
        let mut seen = HashSet::new();
        ContextTerms {
            terms: indices
                .iter()
                .filter(|&&i| seen.insert(i))
                .filter_map(|&i| self.terms.get(i).cloned())
                .collect(),
        }
    }

    /// The terms at `indices` (positions in [`ContextTerms::terms`]), in their order;
    /// indices out of range are ignored.
    #[must_use]
    pub fn subset(&self, indices: &[usize]) -> ContextTerms {
        let mut indices = indices.to_vec();
        indices.sort_unstable();
        self.picked(&indices)
    }

    /// The terms, dictionary first, best first.
    #[must_use]
    pub fn terms(&self) -> &[Term] {
        &self.terms
    }

    /// True when there are no terms.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// How many terms there are.
    #[must_use]
    pub fn len(&self) -> usize {
        self.terms.len()
    }

    /// The terms' words, lowercase, each once, sorted: the words of their spoken forms
    /// and the words of their spelling as [`split_pieces`] splits it ("nav", "bar" and
    /// "tsx" for `NavBar.tsx`).
    #[must_use]
    pub fn words(&self) -> Vec<String> {
        let mut words = std::collections::BTreeSet::new();
        for term in &self.terms {
            let spoken = term
                .spoken
                .iter()
                .flat_map(|form| form.words.iter().cloned());
            let written = split_pieces(&term.text)
                .into_iter()
                .filter_map(|piece| match piece {
                    Piece::Word(word) => Some(word.to_lowercase()),
                    Piece::Number(_) | Piece::Symbol(_) => None,
                });
            words.extend(spoken.chain(written));
        }
        words.into_iter().collect()
    }
}

/// The kind of a dictionary term, from its shape.
#[must_use]
pub fn kind_of(text: &str) -> TermKind {
    let letters = text.chars().filter(|c| c.is_alphabetic()).count();
    let upper = text.chars().filter(|c| c.is_uppercase()).count();
    if text.contains(char::is_whitespace) {
        TermKind::Phrase
    } else if text.contains('/') || text.contains('\\') {
        TermKind::Path
    } else if text.contains('.')
        && text.rsplit_once('.').is_some_and(|(_, ext)| {
            !ext.is_empty() && ext.chars().all(|c| c.is_ascii_alphanumeric())
        })
    {
        TermKind::FileName
    } else if letters > 0 && upper == letters && letters >= 2 {
        TermKind::Acronym
    } else if text.contains(['_', '-'])
        || text.chars().skip(1).any(char::is_uppercase)
        || text.chars().any(|c| c.is_ascii_digit())
    {
        TermKind::Identifier
    } else if text.chars().next().is_some_and(char::is_uppercase) {
        TermKind::Name
    } else {
        TermKind::Word
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dictionary_terms_come_first_and_win_duplicates() {
        let dictionary = Dictionary::from_terms(["Chroma", "kubectl"]).expect("valid");
        let messages = [Message::user("LangChain plus chroma, maybe Milvus later.")];
        let terms = ContextTerms::from_context(&messages, &dictionary);
        let texts: Vec<&str> = terms.terms().iter().map(Term::text).collect();
        assert_eq!(texts, ["Chroma", "kubectl", "LangChain", "Milvus"]);
        assert_eq!(terms.terms()[0].origin(), TermOrigin::Dictionary);
        assert_eq!(terms.terms()[2].origin(), TermOrigin::Messages);
    }

    #[test]
    fn subset_keeps_the_order() {
        let dictionary = Dictionary::from_terms(["a1", "b2", "c3"]).expect("valid");
        let terms = ContextTerms::from_context(&[], &dictionary);
        let subset = terms.subset(&[2, 0, 7, 0]);
        let texts: Vec<&str> = subset.terms().iter().map(Term::text).collect();
        assert_eq!(texts, ["a1", "c3"]);
    }

    #[test]
    fn kinds_follow_the_shape() {
        assert_eq!(kind_of("user_service.py"), TermKind::FileName);
        assert_eq!(kind_of("getUserById"), TermKind::Identifier);
        assert_eq!(kind_of("MRI"), TermKind::Acronym);
        assert_eq!(kind_of("Grafana"), TermKind::Name);
        assert_eq!(kind_of("lisinopril"), TermKind::Word);
        assert_eq!(kind_of("Dr. Müller"), TermKind::Phrase);
        assert_eq!(kind_of("shadcn/ui"), TermKind::Path);
        assert_eq!(kind_of("Q3"), TermKind::Identifier);
        assert_eq!(kind_of("LLM"), TermKind::Acronym);
    }

    #[test]
    fn picked_terms_keep_the_order_they_were_picked_in() {
        let dictionary = Dictionary::from_terms(["kubectl", "Grafana", "Qian"]).expect("valid");
        let terms = ContextTerms::from_context(&[], &dictionary);
        let texts = |terms: &ContextTerms| -> Vec<String> {
            terms.terms().iter().map(|t| t.text().to_owned()).collect()
        };
        assert_eq!(texts(&terms.picked(&[2, 0, 2, 9])), ["Qian", "kubectl"]);
        assert_eq!(texts(&terms.subset(&[2, 0])), ["kubectl", "Qian"]);
    }

    #[test]
    fn given_forms_come_first_and_once() {
        let dictionary = Dictionary::from_terms(["Nguyen", "Grafana"])
            .and_then(|d| {
                d.with_sounds_like(super::super::SoundsLike::from_pairs([(
                    "Nguyen",
                    ["win", "Nuh-Win", "nuh win", "nguyen"],
                )])?)
            })
            .expect("valid");
        let terms = ContextTerms::from_context(&[], &dictionary);
        let nguyen = &terms.terms()[0];
        let given: Vec<String> = nguyen.given_forms().iter().map(SpokenForm::text).collect();
        assert_eq!(given, ["win", "nuh win", "nguyen"]);
        let all: Vec<String> = nguyen.spoken_forms().iter().map(SpokenForm::text).collect();
        assert_eq!(&all[..3], given.as_slice());
        assert_eq!(all.iter().filter(|f| *f == "nguyen").count(), 1);
        assert!(terms.terms()[1].given_forms().is_empty());
    }

    #[test]
    fn written_forms_include_the_running_text_spelling() {
        let term = Term::new("Grafana", TermOrigin::Dictionary, TermKind::Name);
        assert_eq!(term.written_forms(), ["Grafana", " Grafana"]);
        assert_eq!(term.spoken_forms()[0].text(), "grafana");
    }

    #[test]
    fn the_words_are_the_spoken_words_and_the_written_parts_sorted_once() {
        let dictionary = Dictionary::from_terms(["NavBar.tsx", "Caoimhín"]).expect("valid");
        let words = ContextTerms::from_context(&[], &dictionary).words();
        for word in ["nav", "bar", "tsx", "dot", "caoimhín"] {
            assert!(words.iter().any(|w| w == word), "{word} in {words:?}");
        }
        assert!(words.windows(2).all(|pair| pair[0] < pair[1]), "{words:?}");
    }
}
