//! Tests of the spoken-form corrector (`Corrector`).

use super::*;
use crate::context::{Dictionary, Message};

pub(super) fn corrector(dictionary: &[&str], messages: &[&str]) -> Corrector {
    let dictionary = Dictionary::from_terms(dictionary).expect("valid");
    let messages: Vec<Message> = messages.iter().map(|m| Message::user(*m)).collect();
    corrector_of(&dictionary, &messages)
}

fn corrector_of(dictionary: &Dictionary, messages: &[Message]) -> Corrector {
    Corrector::new(&ContextTerms::from_context(messages, dictionary))
}

fn fix(c: &Corrector, text: &str) -> String {
    c.correct(text, None).text
}

#[test]
fn spoken_identifiers_and_files_become_written() {
    let c = corrector(&["README.md", "parse_config_file", "getUserById"], &[]);
    assert_eq!(fix(&c, "Open read me dot md now."), "Open README.md now.");
    assert_eq!(
        fix(&c, "Call parse config file."),
        "Call parse_config_file."
    );
    assert_eq!(
        fix(&c, "and call get user by I.D."),
        "and call getUserById."
    );
}

#[test]
fn long_paths_are_matched_whole_with_each_symbol_said_or_not() {
    let c = corrector(
        &["src/utils/date_format.ts", "src/api-client/http_retry.rs"],
        &[],
    );
    // Slashes said, the underscore not.
    assert_eq!(
        fix(
            &c,
            "Open source slash utils slash date format dot TS and go."
        ),
        "Open src/utils/date_format.ts and go."
    );
    // Nine words, past the usual span limit: the whole path, not its tail.
    assert_eq!(
        fix(&c, "Open source slash API client slash HTTP retry dot RS."),
        "Open src/api-client/http_retry.rs."
    );
}

#[test]
fn library_names_said_without_their_dot_are_fixed() {
    let c = corrector(&["Next.js", "Vue.js", "Node.js"], &[]);
    assert_eq!(
        fix(&c, "It runs on node JS and view JS."),
        "It runs on Node.js and Vue.js."
    );
    assert_eq!(fix(&c, "What a nice view."), "What a nice view.");
}

#[test]
fn an_article_n_may_belong_to_the_next_word() {
    assert_eq!(
        move_article_n("Use an umpide to vectorize.").as_deref(),
        Some("Use a numpide to vectorize.")
    );
    assert_eq!(
        move_article_n("It was a napple.").as_deref(),
        Some("It was an apple.")
    );
    assert_eq!(move_article_n("A day and a test."), None);
    let c = corrector(&["NumPy", "Kubernetes"], &[]);
    let relevant = c.relevant_terms("Use an umpide to vectorize the loop.");
    assert_eq!(relevant, [0]);
}

#[test]
fn sound_alike_spellings_are_fixed() {
    let c = corrector(&["NumPy", "webpack", "Airflow", "Redis"], &[]);
    assert_eq!(
        fix(&c, "Use numb pie to vectorize."),
        "Use NumPy to vectorize."
    );
    assert_eq!(fix(&c, "because web pack cannot"), "because webpack cannot");
    assert_eq!(fix(&c, "from air flow to"), "from Airflow to");
    assert_eq!(fix(&c, "The redis cache"), "The Redis cache");
}

#[test]
fn ordinary_words_are_not_turned_into_terms() {
    let c = corrector(&["JSON", "nginx", "webpack", "NumPy", "PyTorch"], &[]);
    for text in [
        "Jason said the engine makes a web page.",
        "Let's review the numbers again on Monday.",
        "",
    ] {
        assert_eq!(fix(&c, text), text);
    }
}

#[test]
fn case_and_punctuation_outside_matches_are_kept() {
    let c = corrector(&["Sentry"], &[]);
    assert_eq!(
        fix(&c, "We log to sentry, and PAGE through it!"),
        "We log to Sentry, and PAGE through it!"
    );
    assert_eq!(fix(&c, "(sentry's) fine"), "(Sentry's) fine");
}

#[test]
fn terms_glued_to_a_word_are_split_off() {
    let c = corrector(&["Aditya", "Prisma", "docker-compose.yml", "Redis"], &[]);
    assert_eq!(fix(&c, "Pingaditya and"), "Ping Aditya and");
    assert_eq!(fix(&c, "The Prismaschema is"), "The Prisma schema is");
    assert_eq!(
        fix(&c, "OpenDocker-compose.yml and"),
        "Open docker-compose.yml and"
    );
    // A common word that starts like a term is not split.
    assert_eq!(fix(&c, "redistribute it"), "redistribute it");
}

#[test]
fn a_guessed_spelling_of_a_name_becomes_the_name() {
    let c = corrector(&["Saoirse", "Tadhg", "Caoimhe"], &[]);
    // "Sersha" is no word: Whisper guessed how to spell a name it heard.
    assert_eq!(
        fix(&c, "Send it to Sersha and Tadhg."),
        "Send it to Saoirse and Tadhg."
    );
    // A real word that sounds about as close stays.
    assert_eq!(fix(&c, "Send it to Sasha."), "Send it to Sasha.");
    // An unknown word that sounds unlike every term stays.
    assert_eq!(fix(&c, "Send it to Zbigniew."), "Send it to Zbigniew.");
}

#[test]
fn a_guess_gives_way_to_the_term_a_prompted_decode_heard() {
    // "Prasal" alone sounds like `Bazel` as closely as a guessed name may; the phrase
    // "Essum Prasal" is the drug a decode prompted with the terms wrote.
    let c = corrector(&["esomeprazole", "Bazel", "Saoirse"], &[]);
    let plain = "Give Essum Prasal for two weeks.";
    assert_eq!(fix(&c, plain), "Give Essum Bazel for two weeks.");
    let heard = c.correct_without_guesses(plain, None).text;
    assert_eq!(heard, plain);
    let all = [0, 1, 2];
    let merged = c.merge_second_pass(&heard, "Give esomeprazole for two weeks.", &all);
    assert_eq!(merged, "Give esomeprazole for two weeks.");
    assert_eq!(fix(&c, &merged), merged);
    // Merged into the guess, the same pass cannot swap one term for another.
    let guessed = fix(&c, plain);
    assert_eq!(
        c.merge_second_pass(&guessed, "Give esomeprazole for two weeks.", &all),
        guessed
    );
    // Strict matches stay: only guesses wait for the passes. "Sersha" says the
    // Irish reading of Saoirse ("seersha") closely enough to be one.
    assert_eq!(
        c.correct_without_guesses("Send it to Sersha and Bazel.", None)
            .text,
        "Send it to Saoirse and Bazel."
    );
}

#[test]
fn a_word_spelled_a_letter_off_a_long_term_becomes_the_term() {
    let c = corrector(&["uvicorn", "Zapier", "Wojciechowski", "ffmpeg"], &[]);
    // Far from the term by sound ("uvcorn" reads "uhv-korn", "mapier" starts with
    // another phone), one letter from it in writing.
    assert_eq!(
        fix(&c, "Run uvcorn with reload."),
        "Run uvicorn with reload."
    );
    assert_eq!(fix(&c, "Sync it with mapier."), "Sync it with Zapier.");
    // Two letters are allowed from ten letters up.
    assert_eq!(fix(&c, "Ask Wojcichowsky."), "Ask Wojciechowski.");
    // Too far: two letters off a term of under ten letters.
    assert_eq!(fix(&c, "Convert it with ffmp."), "Convert it with ffmp.");
    assert_eq!(fix(&c, "Sync it with mapiex."), "Sync it with mapiex.");
    // Words Whisper knows, or English words, are what was said: a letter from a
    // term is another word ("unicorn" is not `uvicorn`, nor "rapier" `Zapier`).
    assert_eq!(fix(&c, "Draw a unicorn."), "Draw a unicorn.");
    assert_eq!(fix(&c, "Draw a rapier."), "Draw a rapier.");
    // A guess: a decode told the terms that writes another term there wins.
    assert_eq!(
        c.correct_without_guesses("Run uvcorn with reload.", None)
            .text,
        "Run uvcorn with reload."
    );
}

#[test]
fn a_near_spelling_needs_a_long_term_that_is_no_word() {
    // A word list's word is said by its own sound; a short term is a letter away from
    // too many words.
    let c = corrector(&["tablet", "Neovim", "Kafka"], &[]);
    assert_eq!(fix(&c, "Open tabled now."), "Open tabled now.");
    assert_eq!(fix(&c, "Ask Kafke."), "Ask Kafke.");
    assert_eq!(fix(&c, "Open Neovin now."), "Open Neovim now.");
}

#[test]
fn a_lowercase_word_of_a_list_needs_a_close_match_to_replace_an_unknown_word() {
    // A rare-word list of the real clips: "amiable" (a word, though not a common
    // one) sounds about as close to "annibal" as "Sersha" to Saoirse, but the
    // lowercase word is no name Whisper guessed a spelling for.
    let c = corrector(&["annibal", "aasvogels", "zuroaga"], &[]);
    assert_eq!(
        fix(&c, "He might even have been made amiable himself."),
        "He might even have been made amiable himself."
    );
}

#[test]
fn relevance_is_loose_but_not_indiscriminate() {
    let c = corrector(&["Saoirse", "Tadhg", "Caoimhe", "Kubernetes"], &[]);
    let relevant = c.relevant_terms("Send the contract to SERSHA and tag before lunch.");
    assert_eq!(relevant, [0, 1]);
    // Loose enough that a long span may make a term worth a prompted pass
    // ("quarterly report is" ~ Kubernetes); `merge_second_pass` decides whether the
    // term is written, by the term's own length.
    assert_eq!(c.relevant_terms("The quarterly report is due."), [3]);
    assert!(c.relevant_terms("The report is due.").is_empty());
    assert!(c.relevant_terms("It runs on Kuhmatter now.").contains(&3));
}

#[test]
fn common_word_may_become_a_plain_word_term_with_the_same_sound() {
    let c = corrector(&[], &["Rust service uses tokio and axum."]);
    assert_eq!(fix(&c, "the Tokyo runtime"), "the tokio runtime");
}

#[test]
fn languages_without_spelling_rules_get_exact_matches_only() {
    let c = corrector(&["Kubernetes", "Postgres"], &[]);
    let dutch = Language::from_code("nl").expect("known");
    assert_eq!(
        c.correct("op kubernetes in het rekencentrum", Some(dutch))
            .text,
        "op Kubernetes in het rekencentrum"
    );
    assert_eq!(
        c.correct("naar Postgresse.", Some(dutch)).text,
        "naar Postgresse."
    );
}

#[test]
fn german_spanish_and_french_are_matched_by_their_own_spelling() {
    let language = |code| Language::from_code(code).expect("known");
    let c = corrector(&["ketorolaco", "Quiroga", "Gauthier", "Ciclosporin"], &[]);
    // A drug written as two words, as Spanish spells what it heard.
    assert_eq!(
        c.correct(
            "Le recetamos que torolaco para el dolor.",
            Some(language("es"))
        )
        .text,
        "Le recetamos ketorolaco para el dolor."
    );
    assert_eq!(
        c.correct("Thibault Gautier présentera la démo.", Some(language("fr")))
            .text,
        "Thibault Gauthier présentera la démo."
    );
    assert_eq!(
        c.correct("Wir reduzieren Ziklosporin morgen.", Some(language("de")))
            .text,
        "Wir reduzieren Ciclosporin morgen."
    );
    // Common words of the language stay, however close they sound.
    for (code, text) in [
        ("es", "Yo quiero que lo revises hoy."),
        ("fr", "Il est gauche et pas très doué."),
        ("de", "Wir sehen uns morgen."),
    ] {
        assert_eq!(c.correct(text, Some(language(code))).text, text);
    }
}

#[test]
fn contains_word_needs_word_boundaries() {
    assert!(contains_word("Use NumPy to", "NumPy"));
    assert!(!contains_word("You snumPy to", "numPy"));
    assert!(contains_word("Open main.rs.", "main.rs"));
    assert!(!contains_word("Redistribute it", "Redis"));
}

#[test]
fn thousand_terms_stay_fast() {
    // Made-up names from syllables the sentence does not have.
    let syllables = ["zor", "quix", "vel", "thrun", "yop", "gaz", "blick", "murf"];
    let terms: Vec<String> = (0..1000)
        .map(|i| {
            let s = |k: usize| syllables[(i / k) % syllables.len()];
            format!("{}{}{}{}", s(1), s(8), s(64), i % 7)
        })
        .collect();
    let refs: Vec<&str> = terms.iter().map(String::as_str).collect();
    let text = "The quick brown fox jumps over the lazy dog while the engineers deploy \
                the new build on Kubernetes and watch the dashboards in Grafana until \
                the error rate drops below one percent again";
    // Mining, spoken forms, indexing and correcting: everything a request pays.
    let started = std::time::Instant::now();
    let c = corrector(&refs, &[]);
    let indexed = started.elapsed();
    let out = fix(&c, text);
    let elapsed = started.elapsed();
    eprintln!("index {indexed:?}");
    assert_eq!(out, text);
    assert_eq!(c.terms.len(), 1000);
    // Well under 50 ms in release builds on an idle core; debug builds are slower.
    assert!(elapsed.as_millis() < 500, "{elapsed:?}");
    eprintln!(
        "1000 terms, {} words: {elapsed:?}",
        text.split_whitespace().count()
    );
}

#[test]
fn common_words_give_way_to_an_ordinary_word_term_only_when_they_sound_the_same() {
    // A 1000-word list's "side's" over a real clip's "spades"; "meters" and "meter's"
    // sound the same (a homophone: sound cannot decide).
    let c = corrector(&["side's", "kubectl"], &[]);
    assert_eq!(
        fix(&c, "Eight of spades, four of clubs."),
        "Eight of spades, four of clubs."
    );
    assert_eq!(
        fix(&c, "Run kube control get pods."),
        "Run kubectl get pods."
    );
}

#[test]
fn a_path_said_as_a_list_or_after_an_abbreviation_is_matched_whole() {
    let c = corrector(
        &[],
        &["Files: lib/billing/invoice_total.rs, lib/billing/tax.rs"],
    );
    // Whisper punctuates a dictated path like a list and glues a symbol to a word.
    assert_eq!(
        fix(
            &c,
            "See lib, slash billing, slash invoice, underscoretotal.rs first."
        ),
        "See lib/billing/invoice_total.rs first."
    );
    // A full stop before a lowercase word is an abbreviation's, not a sentence's end.
    let c = corrector(&["/usr/local/bin"], &[]);
    assert_eq!(
        fix(&c, "Copy it to usr. local bin today."),
        "Copy it to /usr/local/bin today."
    );
    assert_eq!(
        fix(&c, "Ask the user. Local bins are full."),
        "Ask the user. Local bins are full."
    );
}

#[test]
fn a_word_list_does_not_respell_numbers_possessives_or_unknown_names() {
    // Lowercase rare words (a LibriSpeech-style list): apostrophes keep them words, so
    // an unknown word needs a close sound; a number is as known as a common word; a
    // common word is not its own possessive.
    let c = corrector(&["sevin", "boy's", "hastie's"], &[]);
    for text in [
        "Add 7 drops twice a day.",
        "The boys ran home.",
        "Ask Hester about it.",
    ] {
        assert_eq!(fix(&c, text), text);
    }
    assert_eq!(fix(&c, "Ask hasties about it."), "Ask hastie's about it.");
}

#[test]
fn a_said_symbol_glued_with_hyphens_is_a_word_of_its_own() {
    assert_eq!(
        words::split_said_symbols("get pods-dash-all-name spaces, well-known"),
        "get pods dash all-name spaces, well-known"
    );
    let c = corrector(&["--dry-run", "--force"], &[]);
    // The option's dashes are said before it and written by it; the word Whisper glued
    // them to stays.
    assert_eq!(
        fix(&c, "Run helm upgrade-dash-dash-dry run first."),
        "Run helm upgrade --dry-run first."
    );
    assert_eq!(
        fix(&c, "Then push dash dash force now."),
        "Then push --force now."
    );
    // Nothing matched: the hyphens stay.
    assert_eq!(fix(&c, "Open the dash-board."), "Open the dash-board.");
}

fn corrector_sounding(pairs: &[(&str, &[&str])]) -> Corrector {
    let terms: Vec<&str> = pairs.iter().map(|(term, _)| *term).collect();
    let dictionary = Dictionary::from_terms(&terms)
        .and_then(|d| {
            d.with_sounds_like(crate::context::SoundsLike::from_pairs(
                pairs.iter().copied(),
            )?)
        })
        .expect("valid");
    corrector_of(&dictionary, &[])
}

#[test]
fn a_given_spoken_form_is_matched_like_a_derived_one() {
    let c = corrector_sounding(&[("Nguyen", &["win", "nuh win"]), ("Xóchitl", &["so chee"])]);
    assert_eq!(
        fix(&c, "Please ask Doctor Win to call."),
        "Please ask Doctor Nguyen to call."
    );
    assert_eq!(
        fix(&c, "Sochee leads the review."),
        "Xóchitl leads the review."
    );
    let c = corrector_sounding(&[("Nguyen", &["the", "for you"])]);
    assert_eq!(
        fix(&c, "Ask the doctor for you."),
        "Ask the doctor for you."
    );
}

#[test]
fn polish_and_pinyin_names_are_matched_by_their_own_spelling() {
    // As Whisper wrote the names said by an English voice (the long-dictation set).
    let c = corrector(&["Zhiwei", "Przemysław"], &[]);
    assert_eq!(
        fix(
            &c,
            "Xiaoqing approved the design, but Jure Wei still has questions."
        ),
        "Xiaoqing approved the design, but Zhiwei still has questions."
    );
    assert_eq!(
        fix(&c, "Agnieszka and Shemiswa approved the vendor contract."),
        "Agnieszka and Przemysław approved the vendor contract."
    );
    // Ordinary words that only come near the respelling stay.
    let sentence = "The jury was still out on the schema swap.";
    assert_eq!(fix(&c, sentence), sentence);
}

#[test]
fn a_vowel_written_before_a_nasal_onset_still_matches_the_name() {
    // English has no "ng" or "nk" onset; Whisper writes a vowel before it.
    let c = corrector(&["Ngozi", "Nkechi", "Temitope"], &[]);
    assert_eq!(
        fix(&c, "Kwame merged it. Angozi and Temitope are leading."),
        "Kwame merged it. Ngozi and Temitope are leading."
    );
    assert_eq!(fix(&c, "Ask Enkechi about it."), "Ask Nkechi about it.");
    // Ordinary words that start like it stay.
    let sentence = "And go see the angle of the ink chart.";
    assert_eq!(fix(&c, sentence), sentence);
}

#[test]
fn a_name_whose_first_consonant_english_drops_still_matches() {
    let c = corrector(&["Przemysław", "Tsipras", "Agnieszka"], &[]);
    assert_eq!(
        fix(&c, "Agnieszka and Shemiswa approved it."),
        "Agnieszka and Przemysław approved it."
    );
    assert_eq!(fix(&c, "Ask Sipras about it."), "Ask Tsipras about it.");
    // An onset English has keeps its stop ("tr", "pl"), and ordinary words stay.
    let sentence = "She misses the trip to the sea.";
    assert_eq!(fix(&c, sentence), sentence);
}

#[test]
fn a_term_written_as_an_english_word_is_one_and_a_mixed_case_name_is_not() {
    let c = corrector(
        &["Mongoose", "pandas", "girl's", "LaTeX", "NixOS", "Qdrant"],
        &[],
    );
    let english: Vec<(&str, bool)> = c
        .terms
        .iter()
        .map(|term| (term.text.as_str(), term.english_word))
        .collect();
    assert_eq!(
        english,
        [
            ("Mongoose", true),
            ("pandas", true),
            ("girl's", true),
            ("LaTeX", false),
            ("NixOS", false),
            ("Qdrant", false),
        ]
    );
}
