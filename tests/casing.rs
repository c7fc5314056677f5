//! Casing of plain transcripts: ordinary nouns mid-sentence stay in lowercase where the
//! model is unsure of a capital, and names keep theirs (espeak-ng clips of
//! tests/fixtures/make-casing.sh, base model).

mod common;

use common::*;
use ctxscribe::Languages;

/// Words of `transcript` written with a capital mid-sentence (after a word that does not
/// end a sentence) that `sentence` writes in lowercase.
fn spurious_capitals(sentence: &str, transcript: &str) -> Vec<String> {
    let trim = |w: &str| {
        w.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'')
            .to_owned()
    };
    let lowercase: Vec<String> = sentence
        .split_whitespace()
        .map(trim)
        .filter(|w| w.chars().next().is_some_and(char::is_lowercase))
        .collect();
    let written: Vec<&str> = transcript.split_whitespace().collect();
    written
        .iter()
        .enumerate()
        .skip(1)
        .filter(|(i, _)| !written[i - 1].ends_with(['.', '!', '?']))
        .map(|(_, w)| trim(w))
        .filter(|w| w.chars().next().is_some_and(char::is_uppercase))
        .filter(|w| lowercase.contains(&w.to_lowercase()))
        .collect()
}

#[test]
fn ordinary_nouns_mid_sentence_stay_lowercase_and_names_keep_their_capital() {
    let mut capitals = Vec::new();
    let mut report = Vec::new();
    for clip in casing_clips() {
        let text = transcribe_file(base_transcriber(), &clip.path, Languages::Auto)
            .expect("transcribe")
            .text;
        capitals.extend(spurious_capitals(&clip.sentence, &text));
        // A name heard is written with its capital.
        let name = clip.term.as_str();
        let heard = text
            .split_whitespace()
            .any(|w| w.to_lowercase().starts_with(&name.to_lowercase()));
        assert!(
            name == "-" || !heard || text.contains(name),
            "{name} lost its capital: {text}"
        );
        report.push(format!("{} -> {text}", clip.sentence));
    }
    // Measured on these 14 clips: 4 such capitals ("School Board" in one voice, where the
    // model is sure of them), 9 when every capital the model prefers is written.
    assert!(capitals.len() <= 5, "{capitals:?}\n{}", report.join("\n"));
}

#[test]
fn a_capital_is_spurious_only_mid_sentence_where_the_sentence_has_the_word_lowercase() {
    let sentence = "We met the city council in April.";
    assert_eq!(
        spurious_capitals(
            sentence,
            "We met the City Council in April. City hall is next."
        ),
        ["City", "Council"]
    );
    assert!(spurious_capitals(sentence, "We met the city council in April.").is_empty());
}
