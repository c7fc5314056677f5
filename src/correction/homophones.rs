//! Edits a transcript's corrections made where sound cannot decide: an ordinary word
//! replaced by a term it spells ("Jason" -> `JSON`), a capitalised term written for the
//! word of its letters ("nix" -> `Nix`). `judge::check_homophone_edits` lets the model
//! weigh each.

use std::ops::Range;

use super::merge::{MAX_ALIGNED_WORDS, Splice, differing_blocks_by, joined_key};
use super::phonetic::weighted_distance;
use super::words::capitalised;
use super::{Corrector, Token, contains_word, tokenize};
use crate::context::mining::is_ordinary_word;

/// A word of a first transcript (the splice's bytes `from..to`) that a corrected version
/// replaced by the splice's text (bytes `corrected` there), which writes the term that
/// the word spells ([`Corrector::homophone_edits`]); or (`word` set) a capitalised term
/// the corrected version writes where the first has no word of its letters, weighed
/// against that word in lowercase (`from..to` = `corrected`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HomophoneEdit {
    pub(crate) splice: Splice,
    pub(crate) corrected: Range<usize>,
    /// The ordinary word the term is weighed against (its lowercase form), when the
    /// first transcript's words are not the alternative.
    pub(crate) word: Option<String>,
    /// The alternative is the term's own letters in another case ("flask" / `Flask`).
    pub(crate) same_letters: bool,
    /// The word is the term's spoken form as the caller gave it (`sounds_like`: "win" for
    /// `Nguyen`): the model weighs this reading of it as a name ("Win") against the
    /// ordinary word ("win"), since it cannot know the term's spelling is said so.
    pub(crate) name_reading: Option<String>,
}

impl Corrector {
    /// The common words of `first` (whole words of Whisper's vocabulary) that
    /// `corrected` (a later version of it) replaced by a term one of them already
    /// spells, as the term is said or (a one-word term) as written: "Jason" -> `JSON`
    /// (said "jason"), "the sequel" -> `SQL`, "spark" -> `Spark`. Whisper heard the sound
    /// right and chose an ordinary word; only the sentence's meaning can tell which was
    /// meant, which the sound-based guards cannot. Also every capitalised one-word term
    /// written in place of its own letters in another case where they make an ordinary
    /// word ("flask" -> `Flask`, not "tailscale" -> `Tailscale`), and where `first` has no
    /// word of its letters ([`Corrector::ordinary_word_terms`]); both are
    /// `same_letters`. Not listed: a word that only sounds like the term ("quadrant" for
    /// `Qdrant`: misheard), words that together spell a spoken form ("parse config file"
    /// for `parse_config_file`), a lowercase term (`helm`: case changes no meaning).
    pub(crate) fn homophone_edits(&self, first: &str, corrected: &str) -> Vec<HomophoneEdit> {
        let (ours, theirs) = (tokenize(first), tokenize(corrected));
        if ours.len().max(theirs.len()) > MAX_ALIGNED_WORDS {
            return Vec::new();
        }
        let mut edits = Vec::new();
        // Case counts: "flask" -> `Flask` is an edit.
        for block in differing_blocks_by(&ours, &theirs, false) {
            let (old, new) = (&ours[block.ours.clone()], &theirs[block.theirs.clone()]);
            let (Some(old_first), Some(old_last), Some(new_first), Some(new_last)) =
                (old.first(), old.last(), new.first(), new.last())
            else {
                continue;
            };
            let text = &corrected[new_first.core_start..new_last.core_end];
            let block_edit = |term, same_letters| HomophoneEdit {
                splice: Splice {
                    from: old_first.core_start,
                    to: old_last.core_end,
                    text: text.to_owned(),
                    term,
                },
                corrected: new_first.core_start..new_last.core_end,
                word: None,
                name_reading: None,
                same_letters,
            };
            if let Some(term) = self.capitalised_as_is(old, text) {
                edits.push(block_edit(term, true));
                continue;
            }
            // Whisper chose ordinary words (whole words of its vocabulary).
            if !old.iter().all(|word| word.common) {
                continue;
            }
            let letters: Vec<u8> = old
                .iter()
                .flat_map(|w| w.spoken.letters.iter().copied())
                .collect();
            let term = (0..self.terms.len()).find(|&term| {
                let entry = &self.terms[term];
                let spells = |word: &[u8]| {
                    (entry.plain_word && entry.letters == word)
                        || self
                            .forms
                            .iter()
                            .any(|form| form.term == term && form.letters == word)
                };
                // A lowercase term changes no meaning ("Helm" -> `helm`), and several
                // words that spell a spoken form say the term in full ("dash dash
                // atomic" -> `--atomic`).
                entry.text.chars().any(char::is_uppercase)
                    && contains_word(text, &entry.text)
                    && old.iter().any(|word| spells(&word.spoken.letters))
                    && !(old.len() > 1 && spells(&letters))
            });
            // Ordinary words that sound like a spoken form the caller gave ("so she" for
            // `Xóchitl`, said "so chee").
            let term = term.or_else(|| {
                (0..self.terms.len()).find(|&term| {
                    self.terms[term].text == text
                        && self.forms.iter().any(|f| f.term == term && f.given)
                })
            });
            if let Some(term) = term {
                let mut edit = block_edit(term, false);
                edit.name_reading = self.name_reading(old, term);
                edits.push(edit);
            }
        }
        edits.extend(self.ordinary_word_terms(first, corrected, &edits));
        edits.sort_by_key(|edit| edit.corrected.start);
        edits
    }

    /// The caller's spoken form of term `term` (`sounds_like`) that the words `old` say,
    /// as a name ("Win" for "win", "Sochee" for "so she"): the closest given form, when no
    /// derived form and not the term's own letters spell the words.
    fn name_reading(&self, old: &[Token<'_>], term: usize) -> Option<String> {
        let entry = &self.terms[term];
        let letters: Vec<u8> = old
            .iter()
            .flat_map(|w| w.spoken.letters.iter().copied())
            .collect();
        let derived = (entry.plain_word && entry.letters == letters)
            || self.forms.iter().any(|form| {
                form.term == term
                    && !form.given
                    && (form.letters == letters
                        || old.iter().any(|w| w.spoken.letters == form.letters))
            });
        if derived {
            return None;
        }
        let key = joined_key(old);
        let form = self
            .forms
            .iter()
            .filter(|form| form.term == term && form.given)
            .min_by_key(|form| {
                let distance = weighted_distance(&key, &form.key, f32::MAX).unwrap_or(f32::MAX);
                // Hundredths of a phone are enough to order them; a name is one word.
                ((distance * 100.0) as u32, form.words.len())
            })?;
        Some(capitalised(&form.words.join(" ")))
    }

    /// The capitalised one-word term (`Flask`) that `text` is when the word `old` is the
    /// same letters in another case ("flask") and an ordinary word, whether or not
    /// Whisper's vocabulary holds it whole ([`is_ordinary_word`]). A name written in
    /// lowercase ("tailscale") is no word the term could be mistaken for: not listed.
    fn capitalised_as_is(&self, old: &[Token<'_>], text: &str) -> Option<usize> {
        let [word] = old else {
            return None;
        };
        self.terms
            .iter()
            .position(|entry| {
                entry.text == text
                    && is_capitalised(&entry.text)
                    && entry.letters == word.spoken.letters
            })
            .filter(|_| is_ordinary_word(word.core))
    }

    /// Where `corrected` writes a capitalised one-word term (`Nix`, `Flask`, `Cerys`)
    /// whose letters `first` does not write in any case: the prompted passes may have
    /// heard an ordinary word and written the term ("Let's mix the" -> "Let's Nix the"
    /// for "let's nix the"; "Fill the flask" -> `Flask`). Sound cannot tell the term
    /// from the word of the same letters; the sentence can. The term's letters need not
    /// make a word here: `first` wrote something else, which the prompted passes may
    /// have replaced by a name that sounds like it ("Dino" -> `Deno`), and the sentence
    /// read with the name and without it still tells. Not listed: a term at a sentence
    /// start (its case tells nothing), or inside `judged` (edits already listed).
    fn ordinary_word_terms(
        &self,
        first: &str,
        corrected: &str,
        judged: &[HomophoneEdit],
    ) -> Vec<HomophoneEdit> {
        let mut edits = Vec::new();
        let first = first.to_lowercase();
        for (term, entry) in self.terms.iter().enumerate() {
            if !is_capitalised(&entry.text) {
                continue;
            }
            // The first transcript's own word is weighed by `homophone_edits`, or kept
            // (a name Whisper spelled in lowercase, "tailscale").
            let word = entry.text.to_lowercase();
            if contains_word(&first, &word) {
                continue;
            }
            for (from, _) in corrected.match_indices(&entry.text) {
                let to = from + entry.text.len();
                let glued = corrected[..from].ends_with(char::is_alphanumeric)
                    || corrected[to..].starts_with(char::is_alphanumeric);
                let before = corrected[..from].trim_end();
                let sentence_start = before.is_empty() || before.ends_with(['.', '!', '?', ':']);
                let overlaps = judged
                    .iter()
                    .any(|edit| edit.corrected.start < to && from < edit.corrected.end);
                if glued || sentence_start || overlaps {
                    continue;
                }
                edits.push(HomophoneEdit {
                    splice: Splice {
                        from,
                        to,
                        text: entry.text.clone(),
                        term,
                    },
                    corrected: from..to,
                    word: Some(word.clone()),
                    name_reading: None,
                    same_letters: true,
                });
            }
        }
        edits
    }
}

/// A capital, then lowercase letters only (`Flask`, not `JSON` or `flask`).
fn is_capitalised(text: &str) -> bool {
    let mut chars = text.chars();
    chars.next().is_some_and(char::is_uppercase) && chars.all(char::is_lowercase)
}

#[cfg(test)]
mod tests {
    use crate::correction::merge::Splice;
    use crate::correction::tests::corrector;

    fn homophone_edits(dictionary: &[&str], first: &str, corrected: &str) -> Vec<String> {
        corrector(dictionary, &[])
            .homophone_edits(first, corrected)
            .into_iter()
            .map(|edit| {
                let Splice { from, to, text, .. } = edit.splice;
                assert_eq!(corrected[edit.corrected], text);
                let old = edit.word.as_deref().unwrap_or(&first[from..to]);
                format!("{old} -> {text}")
            })
            .collect()
    }

    #[test]
    fn words_replaced_by_a_term_they_spell_are_listed_and_misheard_ones_are_not() {
        let listed = homophone_edits(&["JSON"], "Jason said it works.", "JSON said it works.");
        assert_eq!(listed, ["Jason -> JSON"]);
        let listed = homophone_edits(&["Spark"], "Fit new spark plugs.", "Fit new Spark plugs.");
        assert_eq!(listed, ["spark -> Spark"]);
        // A capitalised term in place of its own letters is listed where they make an
        // ordinary word, known to Whisper's vocabulary or not (the sentence decides), and
        // not where they are the name in lowercase; a lowercase term changes no meaning;
        // words that say a spoken form in full are the term.
        let listed = homophone_edits(&["Flask"], "Fill the flask.", "Fill the Flask.");
        assert_eq!(listed, ["flask -> Flask"]);
        assert!(homophone_edits(&["Tailscale"], "Use tailscale.", "Use Tailscale.").is_empty());
        assert!(homophone_edits(&["helm"], "Helm upgrade it.", "helm upgrade it.").is_empty());
        let listed = homophone_edits(
            &["--atomic"],
            "Upgrade dash dash atomic now.",
            "Upgrade --atomic now.",
        );
        assert!(listed.is_empty(), "{listed:?}");
        // Misheard: the word does not spell the term (the capitalised term is weighed
        // against its own letters in lowercase only).
        let listed = homophone_edits(&["Qdrant"], "Store it in quadrant.", "Store it in Qdrant.");
        assert_eq!(listed, ["qdrant -> Qdrant"]);
        // Several words that spell a spoken form are an identity.
        let listed = homophone_edits(
            &["parse_config_file"],
            "Call parse config file first.",
            "Call parse_config_file first.",
        );
        assert!(listed.is_empty(), "{listed:?}");
        // A name Whisper guessed ("Sersha" for Saoirse) is no homophone of the term; the
        // capitalised term is still weighed against its own letters.
        let listed = homophone_edits(&["Saoirse"], "Ask Sersha today.", "Ask Saoirse today.");
        assert_eq!(listed, ["saoirse -> Saoirse"]);
        assert!(homophone_edits(&["JSON"], "Jason said.", "Jason said.").is_empty());
    }

    #[test]
    fn a_capitalised_word_term_the_passes_wrote_is_weighed_against_the_word() {
        let listed = homophone_edits(&["Nix"], "Let's mix the sync.", "Let's Nix the sync.");
        assert_eq!(listed, ["nix -> Nix"]);
        // Weighed whether or not its letters make a word: the first transcript wrote
        // another one, which the name may have replaced by its sound.
        let first = "The kids loved the Dino exhibit.";
        let listed = homophone_edits(&["Deno"], first, "The kids loved the Deno exhibit.");
        assert_eq!(listed, ["deno -> Deno"]);
        let edits = corrector(&["Flask"], &[])
            .homophone_edits("Feel the last wind.", "Fill the Flask with.");
        assert_eq!(edits.len(), 1);
        assert_eq!(edits[0].word.as_deref(), Some("flask"));
        // Whisper wrote it unprompted; a sentence start tells nothing; an acronym is
        // not a word in capitals.
        assert!(homophone_edits(&["Flask"], "Use Flask here.", "Use Flask here.").is_empty());
        assert!(homophone_edits(&["Flask"], "Feel it.", "Flask it.").is_empty());
        assert!(homophone_edits(&["CUDA"], "Use cooler.", "Use CUDA.").is_empty());
        assert!(homophone_edits(&["Flask"], "Use flasks.", "Use Flasks.").is_empty());
    }
}
