//! Guessing a request's language from the ones before it, so that detection can share
//! the decode's encoder pass.
//!
//! Whisper detects the language from one decoder step on the encoder's output, and
//! whisper.cpp's `whisper_full` always runs its own encoder pass. Detecting first and
//! then decoding therefore encodes the first window twice (a fifth of a 3-15 s request).
//! When the engine can guess the language, it decodes with the guess right away and
//! detects from that decode's encoder output; a wrong guess costs a second decode. The
//! guess never changes the result, only the cost: the language is always detected from
//! the same encoding of the first window, and the text is always decoded in it.
//!
//! The guess is the language detected last, when the request allows it. Guessing pays
//! when it is right about half the time or more (a wasted decode costs about twice a
//! detection encoder pass), so the engine keeps a running hit rate of that guess, also
//! over the requests it did not guess for, and guesses only while the rate is high
//! enough. Traffic that alternates between languages therefore goes back to detecting
//! first after two misses.

use crate::context::{Language, Languages};

/// Hit rate under which the engine detects first instead of guessing.
const MIN_HIT_RATE: f32 = 0.5;
/// Weight of the newest outcome in the running hit rate.
const NEWEST_WEIGHT: f32 = 0.3;

/// The last detected language and how often it was the next request's language.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct LanguageGuess {
    last: Option<Language>,
    hit_rate: f32,
}

impl Default for LanguageGuess {
    fn default() -> Self {
        LanguageGuess {
            last: None,
            hit_rate: 1.0,
        }
    }
}

impl LanguageGuess {
    /// The language the engine would guess for a request allowing `languages`, whether
    /// or not guessing currently pays.
    pub(crate) fn candidate(&self, languages: &Languages) -> Option<Language> {
        self.last.filter(|language| languages.allows(*language))
    }

    /// The language to decode with before detection, or `None` to detect first.
    pub(crate) fn guess(&self, languages: &Languages) -> Option<Language> {
        self.candidate(languages)
            .filter(|_| self.hit_rate >= MIN_HIT_RATE)
    }

    /// Records the language detected for a request whose candidate was `candidate`.
    pub(crate) fn record(&mut self, candidate: Option<Language>, detected: Language) {
        if let Some(candidate) = candidate {
            let hit = if candidate == detected { 1.0 } else { 0.0 };
            self.hit_rate = (1.0 - NEWEST_WEIGHT) * self.hit_rate + NEWEST_WEIGHT * hit;
        }
        self.last = Some(detected);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lang(code: &str) -> Language {
        Language::from_code(code).expect("known code")
    }

    #[test]
    fn nothing_is_guessed_before_the_first_detection() {
        let guess = LanguageGuess::default();
        assert_eq!(guess.guess(&Languages::Auto), None);
        assert_eq!(guess.candidate(&Languages::Auto), None);
    }

    #[test]
    fn the_last_language_is_guessed_when_the_request_allows_it() {
        let mut guess = LanguageGuess::default();
        guess.record(None, lang("de"));
        assert_eq!(guess.guess(&Languages::Auto), Some(lang("de")));
        let de_or_en = Languages::from_codes(["de", "en"]).expect("valid");
        assert_eq!(guess.guess(&de_or_en), Some(lang("de")));
        let fr_or_en = Languages::from_codes(["fr", "en"]).expect("valid");
        assert_eq!(guess.guess(&fr_or_en), None);
    }

    #[test]
    fn alternating_languages_stop_the_guessing_and_a_steady_one_resumes_it() {
        let mut guess = LanguageGuess::default();
        guess.record(None, lang("en"));
        let mut guessed = 0;
        for detected in ["de", "en", "de", "en", "de", "en"] {
            if guess.guess(&Languages::Auto).is_some() {
                guessed += 1;
            }
            guess.record(guess.candidate(&Languages::Auto), lang(detected));
        }
        assert_eq!(guessed, 2, "two misses are enough to stop guessing");
        assert_eq!(guess.guess(&Languages::Auto), None);
        // The rate keeps learning while the engine detects first.
        for _ in 0..3 {
            guess.record(guess.candidate(&Languages::Auto), lang("en"));
        }
        assert_eq!(guess.guess(&Languages::Auto), Some(lang("en")));
    }

    #[test]
    fn one_miss_in_steady_traffic_keeps_guessing() {
        let mut guess = LanguageGuess::default();
        guess.record(None, lang("en"));
        for _ in 0..5 {
            guess.record(guess.candidate(&Languages::Auto), lang("en"));
        }
        guess.record(guess.candidate(&Languages::Auto), lang("fr"));
        assert_eq!(guess.guess(&Languages::Auto), Some(lang("fr")));
    }
}
