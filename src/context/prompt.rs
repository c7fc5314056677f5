//! Rendering the request context into Whisper's decoder prompt.
//!
//! Whisper conditions on previous text: a prompt that already contains a rare term makes
//! the decoder spell it that way. The prompt is the most recent context message text
//! (trimmed from its start) followed by a glossary of the dictionary terms: Whisper weighs
//! the end of its prompt most, and its budget trimming keeps the end.

use super::{Dictionary, Message};

/// Rough byte budget for the context text part of the prompt (Whisper's whole prompt is
/// 223 tokens, about 4 bytes each for English).
const CONTEXT_TEXT_BYTES: usize = 400;

/// Renders the prompt for `messages` and `dictionary`; empty when there is no context.
#[must_use]
pub fn render_prompt(messages: &[Message], dictionary: &Dictionary) -> String {
    let context_text = recent_context_text(messages, CONTEXT_TEXT_BYTES);
    let glossary = dictionary.terms().join(", ");
    match (context_text.is_empty(), glossary.is_empty()) {
        (true, true) => String::new(),
        (false, true) => context_text,
        (true, false) => format!("Glossary: {glossary}."),
        (false, false) => format!("{context_text} Glossary: {glossary}."),
    }
}

/// The most recent message text, at most `budget` bytes, cut at a word boundary.
fn recent_context_text(messages: &[Message], budget: usize) -> String {
    let joined = messages
        .iter()
        .map(|m| m.content.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|text| !text.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    if joined.len() <= budget {
        return joined;
    }
    let mut start = joined.len() - budget;
    while !joined.is_char_boundary(start) {
        start += 1;
    }
    let tail = &joined[start..];
    match tail.find(' ') {
        Some(space) => tail[space + 1..].to_owned(),
        None => tail.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_context_gives_empty_prompt() {
        assert_eq!(render_prompt(&[], &Dictionary::default()), "");
    }

    #[test]
    fn glossary_comes_last() {
        let dictionary = Dictionary::from_terms(["kubectl", "Grafana"]).expect("valid terms");
        let messages = vec![Message::user("Deploying   the\nbilling worker.")];
        assert_eq!(
            render_prompt(&messages, &dictionary),
            "Deploying the billing worker. Glossary: kubectl, Grafana."
        );
    }

    #[test]
    fn long_context_keeps_its_most_recent_words() {
        let long = "word ".repeat(500) + "latest";
        let text = recent_context_text(&[Message::user(long)], 40);
        assert!(text.len() <= 40);
        assert!(text.ends_with("latest"));
        assert!(text.starts_with("word"));
    }
}
