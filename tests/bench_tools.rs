//! The benches' own scoring tools, on hand-counted inputs: benches/ctxset/breakdown.py
//! (term recall, WER and the WER outside the terms, terms written more often than said
//! and terms written in another case, per kind of voice).

use std::path::PathBuf;

use ctxscribe_test_support::{ctxset_breakdown, repo_root};

/// A fresh directory under target/ for this test's files.
fn scratch_dir(name: &str) -> PathBuf {
    let dir = repo_root().join("target/test-scratch").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create the scratch directory");
    dir
}

/// The numbers of breakdown.py's row for `voices`.
fn row(output: &str, voices: &str) -> Vec<String> {
    output
        .lines()
        .find(|line| line.split_whitespace().next() == Some(voices))
        .unwrap_or_else(|| panic!("no row for {voices} in:\n{output}"))
        .split_whitespace()
        .skip(1)
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_breakdown_counts_errors_outside_the_terms_per_kind_of_voice() {
    let dir = scratch_dir("breakdown");
    let cases = dir.join("cases.jsonl");
    std::fs::write(
        &cases,
        concat!(
            r#"{"id": "a", "voice": "kokoro:af_heart", "reference": "Run kubectl get pods now.", "terms": ["kubectl"]}"#,
            "\n",
            r#"{"id": "b", "voice": "espeak:en-us", "reference": "Ask Siobhan about the plan.", "terms": ["Siobhan"]}"#,
            "\n",
            r#"{"id": "c", "voice": "piper:en", "reference": "Ask Siobhan and Niamh.", "terms": ["Siobhan", "Niamh"], "dictionary": ["Siobhan", "Niamh", "Saoirse"]}"#,
            "\n",
        ),
    )
    .expect("write cases");
    // a: "kubectl" -> "cube control" (a substitution and an insertion beside the term:
    // both touch it). b: the term right, "the" -> "a" (one error outside the terms).
    let first = dir.join("first.jsonl");
    std::fs::write(
        &first,
        concat!(
            r#"{"id": "a", "text": "Run cube control get pods now.", "secs": 0.5}"#,
            "\n",
            r#"{"id": "b", "text": "Ask Siobhan about a plan.", "secs": 1.5}"#,
            "\n",
            r#"{"id": "c", "text": "Ask siobhan and Niamh, Niamh and Saoirse.", "secs": 2.0}"#,
            "\n",
        ),
    )
    .expect("write hypotheses");
    let second = dir.join("second.jsonl");
    std::fs::write(
        &second,
        r#"{"id": "a", "text": "Run kubectl get pods now."}"#.to_owned() + "\n",
    )
    .expect("write hypotheses");
    let text = ctxset_breakdown(&cases, &[("one", &first), ("two", &second)])
        .unwrap_or_else(|e| panic!("{e}"));
    // cases terms | recall wer outside extra case p50 p90 | the same for "two" | union.
    // "two" has no text for b and c: deletions, some of them terms' words. c: `Siobhan`
    // only in lowercase (a term in another case), `Niamh` once more than said and the
    // dictionary's `Saoirse` never said (two terms written more often than said), three
    // insertions after the term `Niamh` (touching it).
    assert_eq!(
        row(&text, "kokoro"),
        [
            "1", "1", "0.000", "0.400", "0.000", "0", "0", "0.50", "0.50", "1.000", "0.000",
            "0.000", "0", "0", "-", "-", "1.000"
        ]
    );
    assert_eq!(
        row(&text, "espeak"),
        [
            "1", "1", "1.000", "0.200", "0.200", "0", "0", "1.50", "1.50", "0.000", "1.000",
            "0.800", "0", "0", "-", "-", "1.000"
        ]
    );
    assert_eq!(
        row(&text, "piper"),
        [
            "1", "2", "0.500", "0.750", "0.000", "2", "1", "2.00", "2.00", "0.000", "1.000",
            "0.500", "0", "0", "-", "-", "0.500"
        ]
    );
    assert_eq!(
        row(&text, "all"),
        [
            "3", "4", "0.500", "0.429", "0.071", "2", "1", "1.50", "2.00", "0.250", "0.643",
            "0.429", "0", "0", "-", "-", "0.750"
        ]
    );
}
