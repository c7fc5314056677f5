//! Terms Whisper glued to the word next to them ("Pingaditya", "Prismaschema").

use super::phonetic::folded_letters;
use super::{Corrector, Replacement, tokenize};
use crate::context::mining::is_common_word;

impl Corrector {
    /// Whisper sometimes glues a prompted term to the word next to it ("Pingaditya",
    /// "Prismaschema", "OpenDocker-compose.yml"). A word that is not itself a common
    /// word, and whose letters are a term's letters (ignoring case and symbols) plus a
    /// common word before or after, is split in two, the term written exactly.
    pub(super) fn split_glued_terms(&self, text: &str) -> (String, Vec<Replacement>) {
        let mut out = String::with_capacity(text.len() + 8);
        let mut replacements = Vec::new();
        let mut last = 0;
        for token in tokenize(text) {
            let core = token.core;
            if core.chars().count() < 6 || is_word_or_derived_word(core) {
                continue;
            }
            let letters = folded_letters(core);
            let best = self
                .terms
                .iter()
                .filter(|term| term.letters.len() >= 4 && term.letters.len() + 2 <= letters.len())
                .filter_map(|term| {
                    let rest = letters.len() - term.letters.len();
                    if letters.ends_with(&term.letters) {
                        let split = byte_after_letters(core, rest)?;
                        let before = &core[..split];
                        is_glue_word(before).then(|| (term, format!("{before} {}", term.text)))
                    } else if letters.starts_with(&term.letters) {
                        let split = byte_after_letters(core, term.letters.len())?;
                        let after = &core[split..];
                        is_glue_word(after).then(|| (term, format!("{} {after}", term.text)))
                    } else {
                        None
                    }
                })
                .max_by_key(|(term, _)| term.letters.len());
            if let Some((term, replacement)) = best {
                out.push_str(&text[last..token.core_start]);
                out.push_str(&replacement);
                last = token.core_end;
                replacements.push(Replacement {
                    original: core.to_owned(),
                    term: term.text.clone(),
                    cost: 0.0,
                });
            }
        }
        out.push_str(&text[last..]);
        (out, replacements)
    }
}

/// The byte offset in `word` just after its first `count` folded letters (`None` when
/// that falls inside a symbol run that belongs to neither side).
fn byte_after_letters(word: &str, count: usize) -> Option<usize> {
    let mut seen = 0;
    for (index, c) in word.char_indices() {
        if seen == count {
            return Some(index);
        }
        seen += folded_letters(c.encode_utf8(&mut [0; 4])).len();
    }
    (seen == count).then_some(word.len())
}

/// A word that may be glued to a term: a common word of letters only.
fn is_glue_word(word: &str) -> bool {
    word.chars().count() >= 3 && word.chars().all(char::is_alphabetic) && is_common_word(word)
}

/// A common word, or one made of a common prefix and a common word ("redistribute",
/// "unwrap", "overfit"): such a word is never split into a term and a word.
fn is_word_or_derived_word(word: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "re", "un", "dis", "pre", "in", "im", "over", "under", "sub", "inter", "non", "mis", "out",
        "de", "co", "anti", "multi", "super",
    ];
    let lower = word.to_lowercase();
    is_common_word(&lower)
        || PREFIXES.iter().any(|prefix| {
            lower
                .strip_prefix(prefix)
                .is_some_and(|rest| rest.chars().count() >= 4 && is_common_word(rest))
        })
}
