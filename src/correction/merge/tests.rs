//! Tests of the merge of a prompted transcript into the plain one.

use crate::context::{ContextTerms, Dictionary, Message};
use crate::correction::Corrector;

/// A corrector of `dictionary`'s terms, and the indices of all of them.
fn corrector(dictionary: &[&str]) -> (Corrector, Vec<usize>) {
    let dictionary = Dictionary::from_terms(dictionary).expect("valid");
    let terms = ContextTerms::from_context(&Vec::<Message>::new(), &dictionary);
    (Corrector::new(&terms), (0..terms.len()).collect())
}

fn merge(dictionary: &[&str], first: &str, second: &str) -> String {
    let (corrector, all) = corrector(dictionary);
    corrector.merge_second_pass(first, second, &all)
}

#[test]
fn words_the_first_transcript_glued_count_as_said() {
    // The first pass glued the term to an unusual word ("Zeitjahrenlewote" for "seit
    // Jahren Levo..."); the second one split them and says that word too.
    assert_eq!(
        merge(
            &["Grafana"],
            "Open the graffanadashbord now.",
            "Open the Grafana dashbord now."
        ),
        "Open the Grafana dashbord now."
    );
    // An unusual word the first pass has nowhere, glued or not, keeps the block out.
    assert_eq!(
        merge(
            &["Grafana"],
            "Open the graffanadashbord now.",
            "Open the Grafana blorp now."
        ),
        "Open the graffanadashbord now."
    );
}

#[test]
fn a_term_replaces_the_words_that_sound_like_it_and_nothing_else() {
    assert_eq!(
        merge(
            &["Kubernetes"],
            "der Server läuft jetzt auf Kuhmatter Simhation Centum.",
            "Nächster Mal läuft jetzt auf Kubernetes im Händen zu tun."
        ),
        "der Server läuft jetzt auf Kubernetes Simhation Centum."
    );
}

#[test]
fn a_written_term_is_not_swapped_for_a_longer_one_that_contains_it() {
    let dictionary = ["ShipmentTracker", "ShipmentTracker.kt"];
    assert_eq!(
        merge(
            &dictionary,
            "The ShipmentTracker class swallows the timeout.",
            "The ShipmentTracker.kt, swallows the timeout."
        ),
        "The ShipmentTracker class swallows the timeout."
    );
    assert_eq!(
        merge(
            &dictionary,
            "Open shipment tracker, dot Katie.",
            "Open ShipmentTracker.kt."
        ),
        "Open ShipmentTracker.kt."
    );
}

fn prefer(dictionary: &[&str], merged: &str, second: &str) -> String {
    prefer_in_window(dictionary, merged, second, false)
}

/// [`prefer`] in a window that `more_follows` (or not).
fn prefer_in_window(dictionary: &[&str], merged: &str, second: &str, more_follows: bool) -> String {
    corrector(dictionary)
        .0
        .prefer_second_pass(merged, second, more_follows)
}

/// Word-level edits of dictated sentences (words dropped, repeated, replaced by a
/// term or another word, punctuation moved), as two decodes of one window differ:
/// every merge of one into the other returns text and never panics (a block where
/// the second transcript left words out is empty on its side).
#[test]
fn merging_any_two_transcripts_of_a_window_never_panics() {
    let terms = [
        "Upstash",
        "Ktor",
        "esomeprazole",
        "Bazel",
        "scripts/seed_db.sh",
        "DB",
        "NavBar.tsx",
        "--atomic",
    ];
    let dictionary = Dictionary::from_terms(terms).expect("valid");
    let corrector = Corrector::new(&ContextTerms::from_context(&[], &dictionary));
    let words = [
        "The", "rate", "limiter", "keeps", "its", "counters", "in", "the", "top,", "Tash.", "Give",
        "Essum", "Prasal", "for", "two", "weeks.", "Could", "a", "new", "hire", "set", "this",
        "up", "alone?", "Run", "script", "slash", "cdb.sh", "now,", "é",
    ];
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = |below: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        usize::try_from(seed % below as u64).expect("small")
    };
    for _ in 0..3000 {
        let first: Vec<&str> = (0..1 + next(14))
            .map(|_| words[next(words.len())])
            .collect();
        let mut second = first.clone();
        for _ in 0..next(5) {
            let at = next(second.len() + 1);
            match next(4) {
                0 if at < second.len() => {
                    second.remove(at);
                }
                1 => second.insert(at, terms[next(terms.len())]),
                2 if at < second.len() => second[at] = words[next(words.len())],
                _ => second.insert(at, ","),
            }
        }
        let (first, second) = (first.join(" "), second.join(" "));
        let all: Vec<usize> = (0..terms.len()).collect();
        let merged = corrector.merge_second_pass(&first, &second, &all);
        let preferred = corrector.prefer_second_pass(&merged, &second, next(2) == 0);
        let corrected = corrector.correct(&first, None);
        let guesses = corrected.guessed_terms();
        if guesses.is_empty() {
            // What the pipeline relies on to skip the correction without guesses.
            assert_eq!(
                corrector.correct_without_guesses(&first, None).text,
                corrected.text
            );
        }
        let _ = corrector.heard_merge_wins(&merged, &preferred, &guesses);
        assert!(
            !merged.is_empty() && !preferred.is_empty(),
            "{first:?} / {second:?}"
        );
    }
}

#[test]
fn the_second_transcript_is_taken_whole_only_when_it_is_the_same_transcript() {
    let merged = "The rate limit will keep its count on the top, Tash.";
    let second = "The rate limit to keep its count on the Upstash.";
    assert_eq!(prefer(&["Upstash"], merged, second), second);
    assert_eq!(prefer(&["Redis"], merged, second), merged, "no more terms");
    let merged = "Hold the methotrexate until the lever ends, I'm come down.";
    let copied = "folic acid, folic, hydroxychloroquine, methotrexate.";
    let terms = ["methotrexate", "folic acid", "hydroxychloroquine"];
    assert_eq!(prefer(&terms, merged, copied), merged, "the prompt copied");
    let short = "Upstash.";
    assert_eq!(
        prefer(
            &["Upstash"],
            "The rate limit keeps its count on the top, Tash.",
            short
        ),
        "The rate limit keeps its count on the top, Tash.",
        "speech lost"
    );
}

#[test]
fn words_the_second_transcript_adds_at_either_end_are_left_out() {
    let merged = "Store the orders in 9 more DV with a key.";
    let second = "Store the orders in DynamoDB with a key. Right mid-end";
    assert_eq!(
        prefer(&["DynamoDB"], merged, second),
        "Store the orders in DynamoDB with a key."
    );
    let second = "Thank you. Store the orders in DynamoDB with a key.";
    assert_eq!(
        prefer(&["DynamoDB"], merged, second),
        "Store the orders in DynamoDB with a key."
    );
    // Unless they write a term.
    let second = "Store the orders in DynamoDB with a key. Cosmos DB.";
    assert_eq!(prefer(&["DynamoDB", "Cosmos DB"], merged, second), second);
    // Where the next window transcribes what follows, the words after the end are
    // its speech, terms or not: kept, they would be written twice.
    assert_eq!(
        prefer_in_window(&["DynamoDB", "Cosmos DB"], merged, second, true),
        "Store the orders in DynamoDB with a key."
    );
}

#[test]
fn a_block_that_sounds_alike_is_taken_whole() {
    assert_eq!(
        merge(
            &["Jenkins", "GitHub"],
            "Move the pipeline from Jenkins to get her actions.",
            "Move the Pipeline from Jenkins to GitHub actions."
        ),
        "Move the pipeline from Jenkins to GitHub actions."
    );
    assert_eq!(
        merge(
            &["Aditya", "Priyanka"],
            "Ping added it at mpianca about the launch.",
            "Ping Aditya and Priyanka about the launch."
        ),
        "Ping Aditya and Priyanka about the launch."
    );
}

#[test]
fn a_term_without_a_sound_alike_in_the_first_transcript_is_dropped() {
    let first = "Let's review the numbers again on Monday.";
    assert_eq!(
        merge(&["PyTorch"], first, "Let's review PyTorch again on Monday."),
        first
    );
    assert_eq!(merge(&["Datadog"], first, "Datadog."), first);
    assert_eq!(
        merge(
            &["Datadog"],
            first,
            "Let's review the numbers again on Monday. Datadog."
        ),
        first
    );
}

#[test]
fn a_term_glued_to_the_next_word_is_taken_with_the_word() {
    assert_eq!(
        merge(
            &["Snyk", "Dependabot"],
            "Sneak-flagged two vulnerable packages.",
            "Snyk flagged two vulnerable packages."
        ),
        "Snyk flagged two vulnerable packages."
    );
    // The word glued to the term must be one the first pass said.
    assert_eq!(
        merge(
            &["Snyk", "Dependabot"],
            "Sneak-flagged two vulnerable packages.",
            "Snyk flogged two vulnerable packages."
        ),
        "Sneak-flagged two vulnerable packages."
    );
}

#[test]
fn a_long_span_does_not_stand_for_a_shorter_term() {
    // "contract to Sersha" is loosely like Kubernetes over its own length, but the
    // span has far more sounds than the term.
    let first = "Send the contract to Sersha and tag before lunch.";
    let second = "Send the Kubernetes and tag before lunch.";
    assert_eq!(merge(&["Kubernetes"], first, second), first);
    let first = "The quarterly report is due.";
    assert_eq!(
        merge(&["Kubernetes"], first, "The Kubernetes is due."),
        first
    );
}

#[test]
fn common_words_give_way_only_to_a_close_sound() {
    let first = "Let's review the numbers again on Monday.";
    assert_eq!(
        merge(&["NumPy"], first, "Let's review the NumPy again on Monday."),
        first
    );
}

#[test]
fn an_ordinary_word_gives_way_to_an_ordinary_word_term_only_when_it_sounds_the_same() {
    // A LibriSpeech word list's "lefts" over a real clip's "rear, left" (biased decode).
    assert_eq!(
        merge(&["lefts"], "rear, left.", "Rear lefts."),
        "rear, left."
    );
    assert_eq!(
        merge(
            &["meter's"],
            "Go forward 10 meters.",
            "Go forward 10 meter's."
        ),
        "Go forward 10 meters."
    );
    // Nor is one common word respelled with an apostrophe, wherever the prompted
    // decode puts it.
    let first = "The girls sent the letters home.";
    assert_eq!(
        merge(
            &["letter's", "girl's"],
            first,
            "The girl's, and the letter's, home."
        ),
        first
    );
    // So does an English word Whisper's vocabulary does not hold whole ("mongoose" is
    // the word list's): a long dictation's union context had `Mongo` and `Mongoose`, and
    // both prompted decodes wrote "Mongoose juice" for "mango juice".
    let first = "Grab some mango juice for the team.";
    let second = "Grab some Mongoose juice for the team.";
    assert_eq!(merge(&["Mongo", "Mongoose"], first, second), first);
    // A term that is not an ordinary word still replaces a close sound.
    assert_eq!(
        merge(
            &["Qdrant"],
            "Store them in quadrant.",
            "Store them in Qdrant."
        ),
        "Store them in Qdrant."
    );
}

#[test]
fn the_second_transcript_is_not_taken_whole_for_a_term_over_function_words() {
    let merged = "She moved the road to the open file. The new higher set is up alone.";
    let second = "She moved the road to the open file. Ktor, New Hire set, Missed Alone.";
    assert_eq!(prefer(&["Ktor", "Upstash"], merged, second), merged);
    // Over words that say something, the same transcript is taken.
    let merged = "She moved the road to the open file. Cater new higher set is up alone.";
    let second = "She moved the road to the open file. Ktor new higher set is up alone.";
    assert_eq!(prefer(&["Ktor", "Upstash"], merged, second), second);
    // A second transcript that leaves words out and adds a term elsewhere.
    let merged = "Log in, please, to the top, Tash today.";
    let second = "Log in to Upstash today.";
    assert_eq!(prefer(&["Ktor", "Upstash"], merged, second), second);
}

#[test]
fn the_second_transcript_is_not_taken_whole_for_an_ordinary_word_term() {
    let merged = "Eight of spades, four of clubs.";
    let second = "8 of side's, 4 of clubs.";
    assert_eq!(prefer(&["side's", "Kubernetes"], merged, second), merged);
}

#[test]
fn terms_the_first_transcript_already_writes_change_nothing() {
    let first = "Deploy it on Kubernetes.";
    assert_eq!(
        merge(&["Kubernetes"], first, "Deploy it on Kubernetes now."),
        first
    );
    assert_eq!(merge(&["Kubernetes"], "", "Kubernetes."), "");
}

#[test]
fn a_term_the_first_transcript_writes_is_not_swapped_for_a_sibling() {
    let terms = ["src/components/NavBar.tsx", "src/pages/index.tsx"];
    let first = "Open src/components/NavBar.tsx and fix the import.";
    let second = "src/pages/index.tsx and fix the import.";
    assert_eq!(merge(&terms, first, second), first);
    assert_eq!(prefer(&terms, first, second), first);
    let terms = ["ssh-keygen", "ssh-agent", "ed25519"];
    let first = "Generate a new key with ssh-keygen dash T E D two five five one nine.";
    let second = "Generate a new key with ssh-agent -t ed25519.";
    let merged = merge(&terms, first, second);
    assert!(
        merged.contains("ssh-keygen") && !merged.contains("ssh-agent"),
        "{merged}"
    );
    assert_eq!(prefer(&terms, first, second), first);
    // Adding a term next to a written one is still a merge.
    let first = "Generate a new key with ssh-keygen dash t e d two five five one nine.";
    let second = "Generate a new key with ssh-keygen -t ed25519.";
    assert!(merge(&terms, first, second).contains("ed25519"));
}

#[test]
fn a_term_whose_first_sound_was_heard_as_another_class_is_still_merged() {
    // "Kiff" for "Cef": a stop heard for a sibilant. The merge compares the terms the
    // prompted decode wrote with every span, not only those that start alike.
    assert_eq!(
        merge(
            &["Cefpodoxim"],
            "Heute Abend bekommen die Kiff-Produktion gegen die Infektion.",
            "Heute Abend bekommen die Cefpodoxim, Gigabienfektion."
        ),
        "Heute Abend bekommen die Cefpodoxim gegen die Infektion."
    );
}

fn merge_witnessed(dictionary: &[&str], first: &str, second: &str) -> String {
    let (corrector, all) = corrector(dictionary);
    corrector.merge_witnessed_terms(first, second, &all)
}

#[test]
fn a_term_two_passes_wrote_takes_words_that_sound_further_from_it() {
    // An espeak-ng voice in Spanish: the plain decode's "Genevilla" is too far from
    // `Echeverría` for one pass's word, not for two.
    let first = "La moto la cimena de Genevilla y Salados resultamos mañana.";
    let second = "La mottona Ximena Echeverría, Esar. Los insultamos mayara.";
    let dictionary = ["Echeverría", "Itziar"];
    assert_eq!(merge(&dictionary, first, second), first);
    assert_eq!(
        merge_witnessed(&dictionary, first, second),
        "La moto la cimena de Echeverría y Salados resultamos mañana."
    );
}

#[test]
fn a_witnessed_term_still_needs_words_that_sound_like_it() {
    // Both passes copied the prompt's list; "cumts" is far from `Codecov`, and common
    // words keep their strict threshold.
    let first = "So how cumts and the coverage drop below 80%";
    let second = "SonarQube, Codecov. It's dropped below 80%.";
    assert_eq!(merge_witnessed(&["Codecov"], first, second), first);
    assert_eq!(
        merge_witnessed(
            &["Datadog"],
            "The next page is ready.",
            "The Datadog is ready."
        ),
        "The next page is ready."
    );
}
