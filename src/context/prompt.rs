//! Rendering the request context into Whisper's decoder prompt.
//!
//! Whisper conditions on previous text: a prompt that already contains a rare term makes
//! the decoder spell it that way. The prompt is built within a token budget so that
//! nothing is silently cut by the engine (which keeps only the last 223 tokens, shared
//! with the previous window's text):
//!
//! 1. the term list gets its budget first: dictionary terms in their order, then mined
//!    terms, best first, while they fit ([`GLOSSARY_TOKEN_BUDGET`], at most
//!    [`MAX_GLOSSARY_TERMS`]: short lists bias better than long ones);
//! 2. the most recent message text fills what is left of [`PROMPT_TOKEN_BUDGET`], cut at
//!    a word boundary from its start.
//!
//! The text comes first and the term list last, where Whisper weighs it most. There are
//! no framing words ("Glossary:"): an English word in the prompt drags other languages
//! towards English, and the list reads like transcript text in any language. The list
//! ends with a full stop so the decoder does not take it as a list to continue.
//!
//! The prompt starts with a space, as OpenAI's Whisper encodes its `initial_prompt`: the
//! first term is then tokenized as a word in running text (` NumPy`), not as the start
//! of a word, which otherwise makes the decoder glue it to the word before it
//! ("You snumPy").

use super::Message;
use super::terms::ContextTerms;

/// Tokens the whole prompt may use; the rest of Whisper's 223 carries the previous
/// window's text on long audio.
pub const PROMPT_TOKEN_BUDGET: usize = 160;
/// Tokens the term list may use.
pub const GLOSSARY_TOKEN_BUDGET: usize = 120;
/// At most this many terms are listed.
pub const MAX_GLOSSARY_TERMS: usize = 40;

/// Renders the prompt for `messages` and their `terms`; empty when there is no context.
///
/// `count_tokens` gives the number of decoder tokens of a text (the engine's tokenizer;
/// [`estimate_tokens`] when there is none).
#[must_use]
pub fn render_prompt(
    messages: &[Message],
    terms: &ContextTerms,
    count_tokens: &dyn Fn(&str) -> usize,
) -> String {
    let glossary = render_glossary(terms, count_tokens);
    let glossary_tokens = if glossary.is_empty() {
        0
    } else {
        count_tokens(&glossary) + 1
    };
    let text_budget = PROMPT_TOKEN_BUDGET.saturating_sub(glossary_tokens);
    let context_text = recent_context_text(messages, text_budget, count_tokens);
    let prompt = match (context_text.is_empty(), glossary.is_empty()) {
        (true, true) => String::new(),
        (false, true) => context_text,
        (true, false) => glossary,
        (false, false) => format!("{context_text} {glossary}"),
    };
    if prompt.is_empty() {
        return prompt;
    }
    // The pieces were counted one by one; joined, whisper.cpp's greedy tokenizer may
    // need a few more. Drop leading words until the whole fits.
    let prompt = format!(" {prompt}");
    let fitted = fit_from_end(&prompt, PROMPT_TOKEN_BUDGET, count_tokens);
    if fitted.starts_with(' ') {
        fitted
    } else {
        format!(" {fitted}")
    }
}

/// The terms, best first, joined by commas and ended by a full stop, within budget.
fn render_glossary(terms: &ContextTerms, count_tokens: &dyn Fn(&str) -> usize) -> String {
    let mut listed: Vec<&str> = Vec::new();
    let mut used = 1; // the full stop
    for term in terms.terms() {
        if listed.len() >= MAX_GLOSSARY_TERMS {
            break;
        }
        let cost = count_tokens(&format!(", {}", term.text()));
        if used + cost > GLOSSARY_TOKEN_BUDGET {
            continue; // a shorter term further down may still fit
        }
        used += cost;
        listed.push(term.text());
    }
    if listed.is_empty() {
        return String::new();
    }
    let mut glossary = listed.join(", ");
    if !glossary.ends_with(['.', '!', '?']) {
        glossary.push('.');
    }
    glossary
}

/// The most recent message text, whitespace-normalised, within `budget` tokens, cut at
/// a word boundary from its start; ends with sentence punctuation.
fn recent_context_text(
    messages: &[Message],
    budget: usize,
    count_tokens: &dyn Fn(&str) -> usize,
) -> String {
    if budget < 4 {
        return String::new();
    }
    let joined = messages
        .iter()
        .map(|m| m.content.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|text| !text.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    if joined.is_empty() {
        return String::new();
    }
    let mut text = fit_from_end(&joined, budget - 1, count_tokens);
    if !text.is_empty() && !text.ends_with(['.', '!', '?', ':', ';']) {
        text.push('.');
    }
    text
}

/// The longest word-boundary suffix of `text` within `budget` tokens (without its
/// leading space when cut).
fn fit_from_end(text: &str, budget: usize, count_tokens: &dyn Fn(&str) -> usize) -> String {
    if count_tokens(text) <= budget {
        return text.to_owned();
    }
    let starts: Vec<usize> = text
        .char_indices()
        .filter(|&(i, c)| i > 0 && c == ' ')
        .map(|(i, _)| i + 1)
        .collect();
    // The number of tokens only shrinks as the start moves right: binary search.
    let (mut low, mut high) = (0usize, starts.len());
    while low < high {
        let mid = (low + high) / 2;
        if count_tokens(&text[starts[mid]..]) <= budget {
            high = mid;
        } else {
            low = mid + 1;
        }
    }
    starts
        .get(low)
        .map(|&start| text[start..].to_owned())
        .unwrap_or_default()
}

/// A conservative token count without the model's tokenizer: whisper.cpp's tokens cover
/// about four bytes of English prose and fewer of identifiers, digits and other
/// scripts; this counts one token per three bytes of each word, at least one per word
/// and per punctuation mark.
#[must_use]
pub fn estimate_tokens(text: &str) -> usize {
    text.split_whitespace()
        .map(|word| {
            let punctuation = word.chars().filter(|c| c.is_ascii_punctuation()).count();
            word.len().div_ceil(3).max(1) + punctuation
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::Dictionary;

    fn render(messages: &[Message], dictionary: &[&str]) -> String {
        let dictionary = Dictionary::from_terms(dictionary).expect("valid terms");
        let terms = ContextTerms::from_context(messages, &dictionary);
        render_prompt(messages, &terms, &estimate_tokens)
    }

    #[test]
    fn empty_context_gives_empty_prompt() {
        assert_eq!(render(&[], &[]), "");
    }

    #[test]
    fn text_first_then_dictionary_then_mined_terms() {
        let messages = vec![Message::user("Deploying   the\nbilling_worker to Grafana")];
        assert_eq!(
            render(&messages, &["kubectl", "Grafana"]),
            " Deploying the billing_worker to Grafana. kubectl, Grafana, billing_worker."
        );
        assert_eq!(render(&[], &["NumPy", "SciPy"]), " NumPy, SciPy.");
    }

    #[test]
    fn prompt_stays_within_budget() {
        let many: Vec<String> = (0..1000).map(|i| format!("Term{i}x")).collect();
        let refs: Vec<&str> = many.iter().map(String::as_str).collect();
        let messages = vec![Message::user("word ".repeat(2000) + "latest")];
        let prompt = render(&messages, &refs);
        assert!(estimate_tokens(&prompt) <= PROMPT_TOKEN_BUDGET, "{prompt}");
        assert!(prompt.starts_with(' '));
        assert!(prompt.contains("Term0x, Term1x") && prompt.contains("latest."));
        assert!(prompt.ends_with('.'));
        assert!(prompt.matches(", ").count() < MAX_GLOSSARY_TERMS);
    }

    #[test]
    fn long_context_keeps_its_most_recent_words() {
        let long = "word ".repeat(500) + "latest";
        let text = recent_context_text(&[Message::user(long)], 40, &estimate_tokens);
        assert!(estimate_tokens(&text) <= 40);
        assert!(text.ends_with("latest."));
        assert!(text.starts_with("word"));
    }

    #[test]
    fn estimate_is_conservative_for_prose() {
        // 11 words of plain English are about 12 Whisper tokens.
        let n = estimate_tokens("And so my fellow Americans, ask not what your country can");
        assert!((12..=30).contains(&n), "{n}");
    }
}
