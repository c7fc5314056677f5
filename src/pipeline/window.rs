//! One window's final text: the context's per-window policy.
//!
//! The plain decode is the first candidate. With context terms, more passes over the
//! same window (prompted with the terms, biased towards them, prompted with the whole
//! context) and the spoken-form matcher propose edits; the judge keeps those the model's
//! own scores of the audio support ([`judge`]), or, with the judge switched off, the
//! merge keeps the terms written where the plain text has words that sound like them.

use crate::context::prompt::MAX_GLOSSARY_TERMS;
use crate::context::{self, ContextLayers, ContextTerms, Message, TermOrigin};
use crate::correction::judge::{
    EditSource, Verdict, candidate_edits, check_homophone_edits, judge,
};
use crate::correction::{Corrector, contains_word};
use crate::engine::{BiasStrength, TermBias, WindowPasses};
use crate::error::Result;
use crate::providers::SpeechProvider;
use crate::transcript::keeps_the_speech;

/// Beams of the context pass's second try, after its greedy decode lost the speech.
const FALLBACK_BEAMS: usize = 3;
/// Biasing weight of a dictionary term (the caller says it matters).
const DICTIONARY_BIAS_WEIGHT: f32 = 1.0;
/// Biasing weight of a term mined from the messages (it may not be said).
const MINED_BIAS_WEIGHT: f32 = 0.8;

/// One window's texts between the passes: `first`, the plain decode; `text`, the
/// plain decode corrected with the passes' terms merged in; `heard`, the same from the
/// plain decode corrected without its guesses (`guesses`: the terms guessed;
/// [`Corrector::correct_without_guesses`]); `finish`, the correction.
#[derive(Clone, Copy)]
struct Passes<'p> {
    first: &'p str,
    text: &'p str,
    heard: &'p str,
    guesses: &'p [String],
    finish: &'p dyn Fn(&str) -> String,
}

impl<'p> Passes<'p> {
    fn new(
        first: &'p str,
        text: &'p str,
        heard: &'p str,
        guesses: &'p [String],
        finish: &'p dyn Fn(&str) -> String,
    ) -> Self {
        Passes {
            first,
            text,
            heard,
            guesses,
            finish,
        }
    }

    /// The terms among `candidates` that a prompted decode `second` writes, merged into
    /// the text ([`Corrector::merge_second_pass`]) and into `heard`; the merge into
    /// `heard`, corrected, is the text where it wins ([`Corrector::heard_merge_wins`]).
    /// Returns the text and `heard`, merged.
    fn merge(&self, corrector: &Corrector, second: &str, candidates: &[usize]) -> (String, String) {
        let into_text = corrector.merge_second_pass(self.text, second, candidates);
        let heard = corrector.merge_second_pass(self.heard, second, candidates);
        let into_heard = (self.finish)(&heard);
        if corrector.heard_merge_wins(&into_text, &into_heard, self.guesses) {
            (into_heard, heard)
        } else {
            (into_text, heard)
        }
    }
}

/// The prompted passes' transcripts, each where it kept the speech: the witnesses of
/// [`merge_witnessed`].
#[derive(Default)]
struct Witnesses {
    /// The term pass's ([`WindowPolicy::term_pass`]).
    term_pass: Option<String>,
    /// The context pass's ([`WindowPolicy::context_pass`]).
    context_pass: Option<String>,
}

/// `text` with the terms it does not write that both prompted decodes (`witnesses`)
/// wrote, merged from each in turn where `text` has words that sound roughly like them
/// ([`Corrector::merge_witnessed_terms`]). One witness is not enough for so loose a
/// match: a decode told the terms writes them unheard, and the two passes are prompted
/// differently (the terms alone, biased; the messages and the terms).
fn merge_witnessed(
    corrector: &Corrector,
    terms: &ContextTerms,
    text: String,
    witnesses: &Witnesses,
) -> String {
    let (Some(term_pass), Some(context_pass)) = (&witnesses.term_pass, &witnesses.context_pass)
    else {
        return text;
    };
    let witnessed: Vec<usize> = terms
        .terms()
        .iter()
        .enumerate()
        .filter(|(_, term)| {
            let term = term.text();
            !contains_word(&text, term)
                && contains_word(term_pass, term)
                && contains_word(context_pass, term)
        })
        .map(|(index, _)| index)
        .collect();
    if witnessed.is_empty() {
        return text;
    }
    let merged = corrector.merge_witnessed_terms(&text, context_pass, &witnessed);
    corrector.merge_witnessed_terms(&merged, term_pass, &witnessed)
}

/// The per-window policy of one transcriber: its speech provider (to tokenize prompts
/// and build biases) and the context layers switched on.
pub(super) struct WindowPolicy<'a> {
    engine: &'a dyn SpeechProvider,
    layers: ContextLayers,
    messages: &'a [Message],
    terms: &'a ContextTerms,
    corrector: Corrector,
}

impl<'a> WindowPolicy<'a> {
    pub(super) fn new(
        engine: &'a dyn SpeechProvider,
        layers: ContextLayers,
        messages: &'a [Message],
        terms: &'a ContextTerms,
    ) -> Self {
        WindowPolicy {
            engine,
            layers,
            messages,
            terms,
            corrector: Corrector::new(terms),
        }
    }
    /// One window's text from its plain decode and the context: candidate edits from the
    /// spoken-form matcher and from a decode of the same encoding prompted (and biased)
    /// with the context's terms, each kept only when the model's own scores of the audio
    /// support it ([`judge`]).
    pub(super) fn judge_window(
        &self,
        window: &mut dyn WindowPasses,
        verdicts: &mut Vec<Verdict>,
    ) -> Result<String> {
        let (messages, terms, corrector) = (self.messages, self.terms, &self.corrector);
        let layers = self.layers;
        let plain = window.plain_text().to_owned();
        if terms.is_empty() || plain.is_empty() {
            return Ok(plain);
        }
        if !layers.judge || !window.can_score() {
            let merged = self.merge_window(window, messages, terms, corrector)?;
            if merged == plain || !window.can_score() {
                return Ok(merged);
            }
            let prompt = self.glossary_prompt(&terms.leading(MAX_GLOSSARY_TERMS));
            let (text, mut checked) =
                check_homophone_edits(window, &plain, &merged, &prompt, corrector, terms)?;
            verdicts.append(&mut checked);
            return Ok(text);
        }
        let language = window.language();
        let glossary = terms.leading(MAX_GLOSSARY_TERMS);
        let prompt = self.glossary_prompt(&glossary);
        let bias = if layers.biasing {
            self.term_bias(&glossary)
        } else {
            None
        };
        let decode_prompt = if layers.prompt { prompt.as_str() } else { "" };
        let prompted = if decode_prompt.is_empty() && bias.is_none() {
            None
        } else {
            Some(window.decode_prompted(decode_prompt, bias.as_ref())?)
        };
        let mut edits = candidate_edits(corrector, &plain, prompted.as_deref(), language);
        if !layers.correction {
            edits.retain(|edit| edit.source == EditSource::Prompted);
        }
        let (text, mut judged) = judge(window, &plain, &edits, &prompt, corrector, terms)?;
        verdicts.append(&mut judged);
        Ok(text)
    }

    /// The judge's context prompt: `glossary` (the leading terms) rendered as a prompt.
    fn glossary_prompt(&self, glossary: &ContextTerms) -> String {
        context::prompt::render_prompt(&[], glossary, &|text: &str| self.count_tokens(text))
    }

    fn count_tokens(&self, text: &str) -> usize {
        self.engine
            .tokenize(text)
            .map_or_else(|_| context::prompt::estimate_tokens(text), |t| t.len())
    }

    /// The default pipeline (the judge switched off): spoken-form correction of the
    /// plain decode, then two more decodes of the same encoding, each a source of terms:
    /// one prompted with and biased towards the terms, those the plain text sounds like
    /// first ([`Self::term_pass`]), one prompted with the whole context as a user would
    /// prompt Whisper ([`Self::context_pass`]). Each runs only while a term is unwritten.
    fn merge_window(
        &self,
        window: &mut dyn WindowPasses,
        messages: &[Message],
        terms: &ContextTerms,
        corrector: &Corrector,
    ) -> Result<String> {
        let layers = self.layers;
        let language = window.language();
        let finish = |text: &str| {
            if layers.correction && !terms.is_empty() {
                corrector.correct(text, language).text
            } else {
                text.to_owned()
            }
        };
        let first = window.plain_text().to_owned();
        let correction =
            (layers.correction && !terms.is_empty()).then(|| corrector.correct(&first, language));
        let mut text = correction
            .as_ref()
            .map_or_else(|| first.clone(), |correction| correction.text.clone());
        let all_written = |text: &str| {
            terms
                .terms()
                .iter()
                .all(|term| contains_word(text, term.text()))
        };
        if !(layers.prompt || layers.biasing) || first.is_empty() {
            return Ok(text);
        }
        let (mut heard, guesses) = match &correction {
            Some(correction) => {
                let guesses = correction.guessed_terms();
                // The correction chooses its spans cheapest first, so a guess it did not
                // choose took no span from another: without guesses, the same text.
                let heard = if guesses.is_empty() {
                    correction.text.clone()
                } else {
                    corrector.correct_without_guesses(&first, language).text
                };
                (heard, guesses)
            }
            None => (first.clone(), Vec::new()),
        };
        let mut witnesses = Witnesses::default();
        if !all_written(&text) {
            let passes = Passes::new(&first, &text, &heard, &guesses, &finish);
            (text, heard) = self.term_pass(window, terms, corrector, &passes, &mut witnesses)?;
        }
        if layers.prompt && !all_written(&text) {
            let passes = Passes::new(&first, &text, &heard, &guesses, &finish);
            text =
                self.context_pass(window, messages, terms, corrector, &passes, &mut witnesses)?;
        }
        Ok(merge_witnessed(corrector, terms, text, &witnesses))
    }

    /// A decode prompted with the terms: those the plain transcript `first` sounds like
    /// by spelling rules ([`Corrector::relevant_terms`]), then the leading ones, as many
    /// as a glossary lists ([`MAX_GLOSSARY_TERMS`]); biased towards them too when the
    /// glossary holds every term. Not only the
    /// sound-alike ones: a name that is not said as it is spelled ("Qian") or a product
    /// respelled from a word ("Snyk") is rarely relevant by its spelling, while the
    /// decoder, told the terms and hearing the audio, writes it. The terms it writes are
    /// merged into `text` only where `text` has words that sound like them
    /// ([`Corrector::merge_second_pass`]): the decoder may write a term it was told
    /// about, and the merge keeps out one the audio did not say.
    ///
    /// Returns the text and `heard` with the terms merged ([`Passes::merge`]).
    fn term_pass(
        &self,
        window: &mut dyn WindowPasses,
        terms: &ContextTerms,
        corrector: &Corrector,
        passes: &Passes<'_>,
        witnesses: &mut Witnesses,
    ) -> Result<(String, String)> {
        let Passes {
            first,
            text,
            heard,
            finish,
            ..
        } = *passes;
        let unchanged = || (text.to_owned(), heard.to_owned());
        let layers = self.layers;
        let mut indices = corrector.relevant_terms(first);
        indices.truncate(MAX_GLOSSARY_TERMS);
        for index in 0..terms.len() {
            if indices.len() >= MAX_GLOSSARY_TERMS {
                break;
            }
            if !indices.contains(&index) {
                indices.push(index);
            }
        }
        let glossary = terms.picked(&indices);
        let unwritten = glossary
            .terms()
            .iter()
            .any(|t| !contains_word(text, t.text()));
        if !unwritten {
            return Ok(unchanged());
        }
        let count_tokens = |text: &str| self.count_tokens(text);
        let prompt = if layers.prompt {
            context::prompt::render_prompt(&[], &glossary, &count_tokens)
        } else {
            String::new()
        };
        // Biased only towards a glossary of every term. A longer list's glossary is chosen
        // by what the plain transcript sounds like (`relevant_terms`): a bias towards the
        // terms chosen that way counts that sound a second time, and the merge's sound
        // check a third ("Tarathin" for "tear a thin" came out "tarr, thin" with 1000
        // unrelated terms). The prompt still names them.
        let bias = if layers.biasing && terms.len() <= MAX_GLOSSARY_TERMS {
            self.term_bias(&glossary)
        } else {
            None
        };
        let mut second = finish(&window.decode_prompted(&prompt, bias.as_ref())?);
        if bias.is_some() && !prompt.is_empty() && !keeps_the_speech(text, &second) {
            // Prompt and bias together can tip Whisper into copying the prompt
            // ("Datadog, Opsgenie." for a ten-word sentence): the prompt alone usually
            // still spells the terms.
            second = finish(&window.decode_prompted(&prompt, None)?);
        }
        Ok(if keeps_the_speech(text, &second) {
            let merged = passes.merge(corrector, &second, &indices);
            witnesses.term_pass = Some(second);
            merged
        } else {
            unchanged()
        })
    }

    /// A decode prompted with the whole context (the messages and the terms, no bias):
    /// the terms it writes are merged into `text`, or it replaces `text` when it writes
    /// more terms and is the same transcript ([`Corrector::prefer_second_pass`]).
    fn context_pass(
        &self,
        window: &mut dyn WindowPasses,
        messages: &[Message],
        terms: &ContextTerms,
        corrector: &Corrector,
        passes: &Passes<'_>,
        witnesses: &mut Witnesses,
    ) -> Result<String> {
        let Passes { text, finish, .. } = *passes;
        let glossary = terms.leading(MAX_GLOSSARY_TERMS);
        let count_tokens = |text: &str| self.count_tokens(text);
        let prompt = context::prompt::render_prompt(messages, &glossary, &count_tokens);
        let mut second = finish(&window.decode_prompted(&prompt, None)?);
        if !keeps_the_speech(text, &second) || corrector.glues_words(text, &second) {
            // Greedy decoding prompted with a list of names tends to copy the list
            // ("Xiaoqing, Zhiwei, Jiaqi." for a sentence about them), and with a list
            // of identifiers to glue words ("WillAndFunWillHandleLeonCoralRotation");
            // the beams keep other continuations alive. Only these failures pay for
            // them, and only where a search costs about a greedy decode: on the 20-28 s
            // windows of a long dictation it took 3-8 s a window for one term of the
            // long-dictation set's 260 (docs/context.md).
            if !window.beams_are_cheap() {
                return Ok(text.to_owned());
            }
            second = finish(&window.decode_prompted_beams(&prompt, FALLBACK_BEAMS)?);
        }
        if !keeps_the_speech(text, &second) {
            return Ok(text.to_owned());
        }
        let all: Vec<usize> = (0..terms.len()).collect();
        let (merged, _) = passes.merge(corrector, &second, &all);
        let text = corrector.prefer_second_pass(&merged, &second, window.continues());
        witnesses.context_pass = Some(second);
        Ok(text)
    }

    /// The decode-time bias towards `terms`' written forms, weighted by origin (`None`
    /// when the speech provider cannot bias).
    fn term_bias(&self, terms: &ContextTerms) -> Option<TermBias> {
        let weighted: Vec<(String, f32)> = terms
            .terms()
            .iter()
            .flat_map(|term| {
                let weight = match term.origin() {
                    TermOrigin::Dictionary => DICTIONARY_BIAS_WEIGHT,
                    TermOrigin::Messages => MINED_BIAS_WEIGHT,
                };
                term.written_forms()
                    .into_iter()
                    .map(move |form| (form, weight))
            })
            .collect();
        self.engine.term_bias(&weighted, BiasStrength::default())
    }
}

#[cfg(test)]
mod tests {
    use super::Passes;
    use crate::context::{ContextTerms, Dictionary};
    use crate::correction::Corrector;

    fn merged(dictionary: &[&str], first: &str, second: &str) -> String {
        let dictionary = Dictionary::from_terms(dictionary).expect("valid");
        let terms = ContextTerms::from_context(&[], &dictionary);
        let corrector = Corrector::new(&terms);
        let correction = corrector.correct(first, None);
        let heard = corrector.correct_without_guesses(first, None).text;
        let finish = |text: &str| corrector.correct(text, None).text;
        let guesses = correction.guessed_terms();
        let passes = Passes::new(first, &correction.text, &heard, &guesses, &finish);
        let all: Vec<usize> = (0..terms.len()).collect();
        passes.merge(&corrector, second, &all).0
    }

    #[test]
    fn a_guess_gives_way_to_another_term_a_pass_writes_over_its_phrase() {
        assert_eq!(
            merged(
                &["esomeprazole", "Bazel"],
                "Give Essum Prasal for two weeks.",
                "Give esomeprazole for two weeks."
            ),
            "Give esomeprazole for two weeks."
        );
    }

    #[test]
    fn a_guess_stays_where_the_pass_writes_a_part_of_it() {
        assert_eq!(
            merged(
                &["scripts/seed_db.sh", "DB"],
                "Runscript slash cdb.sh before the demo.",
                "Runscript slash seed DB.sh before the demo."
            ),
            "Runscript slash scripts/seed_db.sh before the demo."
        );
    }

    #[test]
    fn a_term_the_plain_decode_matched_strictly_is_never_swapped() {
        let first = "Open src/components/NavBar.tsx now.";
        assert_eq!(
            merged(
                &["src/components/NavBar.tsx", "src/pages/index.tsx"],
                first,
                "Open src/pages/index.tsx now."
            ),
            first
        );
    }
}
