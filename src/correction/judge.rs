//! The judge: which candidate edits of a window's plain transcript the acoustic model
//! supports.
//!
//! Candidates come from every source, on the window's one encoding:
//! - the spoken-form matcher on the plain transcript, strict ([`Corrector::correct`]'s
//!   own choices) and loose (every span that sounds roughly like a term, at the
//!   relevance threshold);
//! - the decode prompted with the context (and biased towards its terms): each term it
//!   writes that the plain one does not, where the plain one has words that sound like
//!   it (`Corrector::second_pass_splices`).
//!
//! An edit whose span already spells the term's spoken form letter for letter ("kube
//! control" for `kubectl`) is a phonetic identity and needs no judge. Every other edit
//! is scored by the model itself: teacher-forced log-probabilities of the window's text
//! up to the span, then either the span as decoded or the term (its written form or a
//! spoken form, whichever the model likes best: the audio says the spoken one), then
//! the next words. Two margins (edit minus original): unprompted, and prompted with the
//! context prompt, which acts like a prior and erodes the margin on near-homophones
//! ("Jason said" / "JSON said"). The edit is kept when
//! `UNPROMPTED_WEIGHT * unprompted + PROMPTED_WEIGHT * prompted + prior(origin) > 0`.

use super::Corrector;
use super::homophones::HomophoneEdit;
use super::merge::{Splice, apply_splices};
use super::words::capitalised;
use crate::context::{ContextTerms, Language, TermOrigin};
use crate::engine::WindowPasses;
use crate::error::Result;
pub use crate::transcript::{EditSource, Verdict};

/// Words after the span that both texts are scored on: the model re-synchronises there,
/// so an edit that breaks the sentence pays for it.
const TAIL_WORDS: usize = 2;
/// Spoken forms of a term scored besides its written form.
const SCORED_SPOKEN_FORMS: usize = 2;
/// Most candidate edits a window's judge scores (the lowest-cost ones), bounding the
/// time a long term list can cost.
const MAX_JUDGED_EDITS: usize = 12;
/// Weight of the unprompted log-probability margin.
const UNPROMPTED_WEIGHT: f32 = 1.0;
/// Weight of the prompted log-probability margin.
const PROMPTED_WEIGHT: f32 = 1.0;
/// Prior (nats) of an edit towards a dictionary term: the caller named it.
const DICTIONARY_PRIOR: f32 = 0.0;
/// Prior (nats) of an edit towards a term mined from the messages.
const MESSAGES_PRIOR: f32 = 0.0;

/// A candidate edit of the plain transcript, where it came from and its matching cost.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Edit {
    pub(crate) splice: Splice,
    pub(crate) cost: f32,
    pub(crate) source: EditSource,
}

/// The candidate edits of `plain` from the spoken-form matcher and from the `prompted`
/// decode, without duplicates, identities first, then by cost.
pub(crate) fn candidate_edits(
    corrector: &Corrector,
    plain: &str,
    prompted: Option<&str>,
    language: Option<Language>,
) -> Vec<Edit> {
    let mut edits = corrector.matched_edits(plain, language);
    if let Some(prompted) = prompted {
        let all: Vec<usize> = (0..corrector.terms.len()).collect();
        edits.extend(
            corrector
                .second_pass_splices(plain, prompted, &all)
                .into_iter()
                .map(|splice| Edit {
                    splice,
                    cost: f32::INFINITY,
                    source: EditSource::Prompted,
                }),
        );
    }
    edits.sort_by(|a, b| {
        (a.source != EditSource::Identity)
            .cmp(&(b.source != EditSource::Identity))
            .then(a.cost.total_cmp(&b.cost))
    });
    let mut unique: Vec<Edit> = Vec::with_capacity(edits.len());
    for edit in edits {
        let same = unique.iter().any(|e| {
            let (a, b) = (&e.splice, &edit.splice);
            (a.from, a.to, &a.text) == (b.from, b.to, &b.text)
        });
        if !same && !edit.splice.is_identity(plain) {
            unique.push(edit);
        }
    }
    unique
}

/// Judges `edits` of `plain` on the window's encoding and applies the kept ones.
/// Returns the text and a verdict per edit.
///
/// # Errors
/// When scoring fails (the decoder, or the deadline).
pub(crate) fn judge(
    window: &mut dyn WindowPasses,
    plain: &str,
    edits: &[Edit],
    prompt: &str,
    corrector: &Corrector,
    terms: &ContextTerms,
) -> Result<(String, Vec<Verdict>)> {
    let judged = edits.len().min(MAX_JUDGED_EDITS);
    let mut margins: Vec<(Option<f32>, Option<f32>)> = vec![(None, None); judged];
    // All unprompted scores first, then all prompted ones, each in text order: the
    // decoder's cache then keeps the shared prefix of consecutive scorings.
    let mut order: Vec<usize> = (0..judged)
        .filter(|&i| edits[i].source != EditSource::Identity)
        .collect();
    order.sort_by_key(|&i| edits[i].splice.from);
    for &i in &order {
        margins[i].0 = margin(window, "", plain, &edits[i].splice, corrector, true)?;
    }
    if !prompt.is_empty() {
        for &i in &order {
            margins[i].1 = margin(window, prompt, plain, &edits[i].splice, corrector, true)?;
        }
    }
    let mut verdicts: Vec<Verdict> = edits
        .iter()
        .enumerate()
        .map(|(i, edit)| {
            let (unprompted, prompted) = margins.get(i).copied().unwrap_or((None, None));
            let dictionary = terms
                .terms()
                .get(edit.splice.term)
                .is_some_and(|t| t.origin() == TermOrigin::Dictionary);
            let score = decision_score(edit.source, unprompted, prompted, dictionary);
            let Splice { from, to, .. } = edit.splice;
            Verdict {
                original: plain.get(from..to).unwrap_or_default().to_owned(),
                replacement: edit.splice.text.clone(),
                source: edit.source,
                dictionary,
                unprompted,
                prompted,
                score,
                applied: false,
            }
        })
        .collect();
    // The kept edits, best first, that overlap no better one.
    let mut kept: Vec<usize> = (0..edits.len())
        .filter(|&i| verdicts[i].score > 0.0)
        .collect();
    kept.sort_by(|&a, &b| verdicts[b].score.total_cmp(&verdicts[a].score));
    let mut placed: Vec<usize> = Vec::new();
    for i in kept {
        let overlaps = placed
            .iter()
            .any(|&j| edits[i].splice.overlaps(&edits[j].splice));
        if !overlaps {
            placed.push(i);
            verdicts[i].applied = true;
        }
    }
    let text = apply_splices(plain, placed.iter().map(|&i| &edits[i].splice));
    Ok((text, verdicts))
}

/// `corrected` (a later version of the window's `plain` transcript) with the edits that
/// replaced an ordinary word by a term it spells ([`Corrector::homophone_edits`]: "Jason"
/// -> `JSON`) taken back where the model's own scores do not support the term as
/// written: the same decision as [`judge`]'s (unprompted and `prompt`ed margins and the
/// origin's prior). The sound is the same either way; the decoder, which reads the whole
/// sentence, weighs the meaning, and the prompt (the terms) acts as a prior. A
/// capitalised one-word term written in place of its letters in lowercase ("tailscale")
/// or where the first transcript has no word of its letters ("Let's Nix the" for "let's
/// mix the") is weighed against that word in lowercase, by the prompted margin alone:
/// the model that knows the context decides between a name and a word that sound the
/// same. Returns the text and a verdict per such edit.
///
/// # Errors
/// When scoring fails (the decoder, or the deadline).
pub(crate) fn check_homophone_edits(
    window: &mut dyn WindowPasses,
    plain: &str,
    corrected: &str,
    prompt: &str,
    corrector: &Corrector,
    terms: &ContextTerms,
) -> Result<(String, Vec<Verdict>)> {
    let mut text = corrected.to_owned();
    let mut verdicts = Vec::new();
    let mut edits = corrector.homophone_edits(plain, corrected);
    let unjudged = edits.split_off(edits.len().min(MAX_JUDGED_EDITS));
    // From the end, so that the byte ranges of the edits before stay valid. Past the
    // judged limit, a caller's spoken form read into ordinary words has nothing but the
    // caller's word for it (the model never weighed it): taken back.
    for common in unjudged.into_iter().rev() {
        if common.name_reading.is_some()
            && let Some(original) = plain.get(common.splice.from..common.splice.to)
            && text.get(common.corrected.clone()).is_some()
        {
            text.replace_range(common.corrected, original);
        }
    }
    for common in edits.into_iter().rev() {
        // The alternative in its sentence: the first transcript's words, or the
        // ordinary word in the corrected one.
        let (base, from, to) = alternative(&common, plain, corrected);
        let edit = Splice {
            from,
            to,
            text: common
                .name_reading
                .clone()
                .unwrap_or_else(|| common.splice.text.clone()),
            term: common.splice.term,
        };
        let source = EditSource::Matched;
        // Weighed as written: a spoken form spells the word itself ("jason") and ties.
        // A capitalised term against its own letters in lowercase: the same sound, so
        // only the sentence read with the context can tell (the unprompted model does
        // not know the name exists). Else both margins, as the judge weighs them.
        let same_letters =
            (common.same_letters || common.name_reading.is_some()) && !prompt.is_empty();
        let unprompted = if same_letters {
            None
        } else {
            margin(window, "", &base, &edit, corrector, false)?
        };
        let prompted = if prompt.is_empty() {
            None
        } else {
            margin(window, prompt, &base, &edit, corrector, false)?
        };
        let dictionary = terms
            .terms()
            .get(edit.term)
            .is_some_and(|t| t.origin() == TermOrigin::Dictionary);
        let (score, scored) = if same_letters {
            (prompted.unwrap_or(f32::INFINITY), prompted.is_some())
        } else {
            let score = decision_score(source, unprompted, prompted, dictionary);
            (score, unprompted.is_some())
        };
        // An edit the model could not score stays: the guards that made it still hold.
        let keep = !scored || score > 0.0;
        // Taken back, the first transcript's word as it was written ("Win" stays "Win").
        let original = if common.name_reading.is_some() {
            plain.get(common.splice.from..common.splice.to)
        } else {
            base.get(from..to)
        }
        .unwrap_or_default();
        if !keep && text.get(common.corrected.clone()).is_some() {
            text.replace_range(common.corrected, original);
        }
        verdicts.push(Verdict {
            original: original.to_owned(),
            replacement: common.splice.text,
            source,
            dictionary,
            unprompted,
            prompted,
            score,
            applied: keep,
        });
    }
    verdicts.reverse();
    Ok((text, verdicts))
}

/// The sentence an edit of [`check_homophone_edits`] is weighed against, and the bytes
/// of the alternative words in it: the first transcript's words; the ordinary word in
/// the corrected one; or, for a caller's spoken form, the words as ordinary words
/// (lowercase, but at a sentence's start), against the form read as a name.
fn alternative(common: &HomophoneEdit, plain: &str, corrected: &str) -> (String, usize, usize) {
    match (&common.name_reading, &common.word) {
        (Some(_), _) => {
            // The words as ordinary words (lowercase, but at a sentence's start),
            // against the caller's spoken form read as a name.
            let (from, to) = (common.splice.from, common.splice.to);
            let mut base = plain.to_owned();
            let words = plain.get(from..to).unwrap_or_default();
            let starts_sentence = plain
                .get(..from)
                .unwrap_or_default()
                .trim_end()
                .chars()
                .last()
                .is_none_or(|c| matches!(c, '.' | '!' | '?'));
            let mut ordinary = words.to_lowercase();
            if starts_sentence {
                ordinary = capitalised(&ordinary);
            }
            base.replace_range(from..to, &ordinary);
            (base, from, from + ordinary.len())
        }
        (None, None) => (plain.to_owned(), common.splice.from, common.splice.to),
        (None, Some(word)) => {
            let mut base = corrected.to_owned();
            base.replace_range(common.corrected.clone(), word);
            (base, common.splice.from, common.splice.from + word.len())
        }
    }
}

/// The decision score of an edit: identities are kept; scored edits by their margins
/// and their origin's prior; unscored ones (over the judged limit, or a provider that
/// cannot score) are not kept.
fn decision_score(
    source: EditSource,
    unprompted: Option<f32>,
    prompted: Option<f32>,
    dictionary: bool,
) -> f32 {
    if source == EditSource::Identity {
        return f32::INFINITY;
    }
    let Some(unprompted) = unprompted else {
        return f32::NEG_INFINITY;
    };
    let prior = if dictionary {
        DICTIONARY_PRIOR
    } else {
        MESSAGES_PRIOR
    };
    UNPROMPTED_WEIGHT * unprompted + PROMPTED_WEIGHT * prompted.unwrap_or(unprompted) + prior
}

/// The model's log-probability margin of `edit` over the words it replaces, with
/// `prompt`: the best of the term's written form and (with `spoken_forms`) its spoken
/// forms (the edit's own text for a block), each followed by the next [`TAIL_WORDS`]
/// words. `None` when unscorable.
fn margin(
    window: &mut dyn WindowPasses,
    prompt: &str,
    plain: &str,
    edit: &Splice,
    corrector: &Corrector,
    spoken_forms: bool,
) -> Result<Option<f32>> {
    let prefix = plain[..edit.from].trim_end();
    let prefix = if prefix.is_empty() {
        String::new()
    } else {
        format!(" {prefix}")
    };
    let tail = tail_words(&plain[edit.to..]);
    let original = format!(" {}{tail}", &plain[edit.from..edit.to]);
    let Some(original) = total(window.score(prompt, &prefix, &original)?) else {
        return Ok(None);
    };
    let mut forms = vec![edit.text.clone()];
    let term_only = corrector
        .terms
        .get(edit.term)
        .is_some_and(|t| t.text == edit.text);
    if term_only && spoken_forms {
        forms.extend(
            corrector
                .spoken_texts(edit.term)
                .into_iter()
                .take(SCORED_SPOKEN_FORMS),
        );
    }
    let mut best: Option<f32> = None;
    for form in forms {
        if let Some(score) = total(window.score(prompt, &prefix, &format!(" {form}{tail}"))?) {
            best = Some(best.map_or(score, |b| b.max(score)));
        }
    }
    Ok(best.map(|b| b - original))
}

/// The first [`TAIL_WORDS`] words of `rest` (with the space before them), as written.
fn tail_words(rest: &str) -> &str {
    let mut end = 0;
    let mut words = 0;
    let mut in_word = false;
    for (i, c) in rest.char_indices() {
        if c.is_whitespace() {
            if in_word {
                words += 1;
                in_word = false;
                if words == TAIL_WORDS {
                    break;
                }
            }
        } else {
            in_word = true;
        }
        end = i + c.len_utf8();
    }
    &rest[..end]
}

fn total(scores: Option<Vec<f32>>) -> Option<f32> {
    scores.map(|s| s.iter().sum())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::{Dictionary, Message};

    #[test]
    fn the_tail_is_the_next_words_as_written() {
        assert_eq!(tail_words(" cache keeps evicting"), " cache keeps");
        assert_eq!(tail_words(", then stop."), ", then");
        assert_eq!(tail_words(""), "");
        assert_eq!(tail_words(" end."), " end.");
    }

    #[test]
    fn identities_need_no_judge_and_unscored_edits_are_not_kept() {
        assert!(decision_score(EditSource::Identity, None, None, true) > 0.0);
        assert!(decision_score(EditSource::Loose, None, None, true) < 0.0);
        assert!(decision_score(EditSource::Loose, Some(2.0), Some(1.0), true) > 0.0);
        assert!(decision_score(EditSource::Prompted, Some(-3.0), Some(1.0), false) < 0.0);
    }

    #[test]
    fn candidates_come_from_the_matcher_and_the_prompted_decode() {
        let terms = ContextTerms::from_context(
            &[Message::user("Editing user_service.py")],
            &Dictionary::from_terms(["Kubernetes", "kubectl"]).expect("valid"),
        );
        let corrector = Corrector::new(&terms);
        let plain = "Run cube control on the cooper nighties cluster from user service dot pie.";
        let prompted = "Run kubectl on the Kubernetes cluster from user_service.py.";
        let edits = candidate_edits(&corrector, plain, Some(prompted), None);
        let texts: Vec<(&str, EditSource)> = edits
            .iter()
            .map(|e| (&plain[e.splice.from..e.splice.to], e.source))
            .collect();
        assert!(
            texts.contains(&("cube control", EditSource::Identity)),
            "{texts:?}"
        );
        // The prompted decode's Kubernetes lands on the span the matcher also found.
        assert!(
            edits.iter().any(|e| {
                let Splice { from, to, text, .. } = &e.splice;
                text == "Kubernetes" && &plain[*from..*to] == "cooper nighties"
            }),
            "{texts:?}"
        );
        assert!(
            edits.iter().any(|e| e.splice.text == "user_service.py"),
            "{texts:?}"
        );
        assert!(edits.iter().all(|e| !e.splice.is_identity(plain)));
    }
}
