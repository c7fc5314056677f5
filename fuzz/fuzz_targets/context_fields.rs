//! The form-field validators: `messages`, `languages`, `dictionary`, `sounds_like` as sent
//! on the wire; accepted spoken forms then go through the matcher on a fixed sentence.
//!
//! The first byte picks the parser, the rest is the field's text (bytes that are not
//! UTF-8 are cut at the first invalid sequence, as the server rejects them before the
//! parsers). Every input gives a value within the documented limits or an
//! `invalid_request` naming the field.
#![no_main]

use ctxscribe::context::{
    ContextTerms, MAX_DICTIONARY_TERMS, MAX_LANGUAGES, MAX_MESSAGES, MAX_SOUNDS_LIKE_FORM_CHARS,
    MAX_SOUNDS_LIKE_FORMS, MAX_TERM_CHARS, MAX_TOTAL_MESSAGE_BYTES, parse_dictionary,
    parse_languages, parse_messages, parse_sounds_like,
};
use ctxscribe::correction::Corrector;
use ctxscribe::Dictionary;
use libfuzzer_sys::fuzz_target;

fn text(bytes: &[u8]) -> &str {
    match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or_default(),
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let input = text(rest);
    match selector % 4 {
        0 => match parse_messages(input) {
            Ok(messages) => {
                assert!(messages.len() <= MAX_MESSAGES);
                let total: usize = messages.iter().map(|m| m.content.len()).sum();
                assert!(total <= MAX_TOTAL_MESSAGE_BYTES);
            }
            Err(e) => assert_eq!((e.code().as_str(), e.param()), ("invalid_request", Some("messages"))),
        },
        1 => match parse_languages(input) {
            Ok(languages) => {
                if let ctxscribe::context::Languages::AnyOf(list) = &languages {
                    assert!(list.len() <= MAX_LANGUAGES);
                }
            }
            Err(e) => assert_eq!(
                (e.code().as_str(), e.param()),
                ("invalid_request", Some("languages"))
            ),
        },
        3 => sounds_like(input),
        _ => match parse_dictionary(input) {
            Ok(dictionary) => {
                let terms = dictionary.terms();
                assert!(terms.len() <= MAX_DICTIONARY_TERMS);
                assert!(terms.iter().all(|t| t.chars().count() <= MAX_TERM_CHARS));
            }
            Err(e) => assert_eq!(
                (e.code().as_str(), e.param()),
                ("invalid_request", Some("dictionary"))
            ),
        },
    }
});

/// `sounds_like` text: within its limits or an `invalid_request` about it; accepted forms
/// attach to a dictionary of their keys (or fail typed) and are matched against a
/// sentence without a panic.
fn sounds_like(input: &str) {
    let sounds_like = match parse_sounds_like(input) {
        Ok(sounds_like) => sounds_like,
        Err(e) => {
            assert_eq!((e.code().as_str(), e.param()), ("invalid_request", Some("sounds_like")));
            return;
        }
    };
    for (_, forms) in sounds_like.entries() {
        assert!(forms.len() <= MAX_SOUNDS_LIKE_FORMS);
        assert!(forms
            .iter()
            .all(|f| (1..=MAX_SOUNDS_LIKE_FORM_CHARS).contains(&f.chars().count())));
    }
    let keys: Vec<&str> = sounds_like.entries().iter().map(|(k, _)| k.as_str()).collect();
    let Ok(dictionary) = Dictionary::from_terms(&keys) else {
        return;
    };
    match dictionary.with_sounds_like(sounds_like) {
        Ok(dictionary) => {
            let corrector = Corrector::new(&ContextTerms::from_context(&[], &dictionary));
            let sentence = "So she asked doctor win for the numbers again on Monday.";
            let _ = corrector.correct(sentence, None);
            let _ = corrector.relevant_terms(sentence);
        }
        Err(e) => assert_eq!(e.param(), Some("sounds_like")),
    }
}
