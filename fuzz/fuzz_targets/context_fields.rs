//! The form-field validators: `messages`, `languages`, `dictionary` as sent on the wire.
//!
//! The first byte picks the parser, the rest is the field's text (bytes that are not
//! UTF-8 are cut at the first invalid sequence, as the server rejects them before the
//! parsers). Every input gives a value within the documented limits or an
//! `invalid_request` naming the field.
#![no_main]

use ctxscribe::context::{
    MAX_DICTIONARY_TERMS, MAX_LANGUAGES, MAX_MESSAGES, MAX_TERM_CHARS, MAX_TOTAL_MESSAGE_BYTES,
    parse_dictionary, parse_languages, parse_messages,
};
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
    match selector % 3 {
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
