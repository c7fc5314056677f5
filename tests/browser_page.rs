//! The server's page (`GET /`) in a real headless Chromium: it records from a fake
//! microphone playing the jfk clip, sends with `stream=true` and the API key, and shows
//! the transcript; then a picked file with a dictionary; then a wrong key. Screenshots go
//! to `target/browser/` (`page.png` is the file case).
//!
//! Needs Debian's `chromium` and `chromium-driver` (`make setup` installs them) and the
//! virtual environment of `scripts/setup-test-venv.sh` (Selenium, pinned).

mod common;

use std::process::Command;

use common::apps::JFK;
use common::server::start;
use common::*;
use serde_json::Value;

const KEY: &str = "sk-browser-test-key";

/// One send's outcome as the page shows it.
fn shown<'a>(result: &'a Value, case: &str) -> (&'a str, &'a str, &'a str) {
    let case = &result[case];
    let text = |key: &str| {
        case[key]
            .as_str()
            .unwrap_or_else(|| panic!("{key}: {case}"))
    };
    (text("state"), text("transcript"), text("timing"))
}

#[test]
fn the_page_records_streams_and_shows_the_transcript() {
    let server = start(&[], &[("CTXSCRIBE_API_KEYS", KEY)]);
    let clip = real_clip("en_whisper_jfk");
    let out = repo_root().join("target/browser");
    for old in ["record.png", "page.png", "wrong-key.png"] {
        let _ = std::fs::remove_file(out.join(old));
    }
    let output = Command::new(test_venv_python())
        .arg(repo_root().join("tests/browser_page.py"))
        .arg(format!("http://{}", server.addr))
        .arg(KEY)
        .arg(&clip.path)
        // The clip, and a second for the recorder's last chunk.
        .arg(format!("{}", clip.duration_secs + 1.0))
        .arg(&clip.path)
        .arg(&out)
        .output()
        .expect("run tests/browser_page.py");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "browser_page.py failed:\n{stdout}\n{}\nserver:\n{}",
        String::from_utf8_lossy(&output.stderr),
        server.logs().join("\n")
    );
    let result: Value = serde_json::from_str(stdout.trim()).expect("one JSON object");
    eprintln!("page: {result:#}");

    // Recorded through MediaRecorder (WebM/Opus) from the fake microphone.
    let (state, transcript, timing) = shown(&result, "record");
    assert_eq!(state, "done", "{result:#}");
    assert!(wer(JFK, transcript) <= 0.2, "recorded: {transcript:?}");
    assert!(timing.contains("done in"), "{timing}");
    assert!(
        result["record"]["audio"]
            .as_str()
            .is_some_and(|a| a.contains("audio/webm")),
        "{result:#}"
    );

    // A picked file, with a dictionary and a language.
    let (state, transcript, timing) = shown(&result, "file");
    assert_eq!(state, "done", "{result:#}");
    assert!(wer(JFK, transcript) <= 0.1, "file: {transcript:?}");
    assert!(timing.starts_with("First text after"), "{timing}");

    // A wrong key: the page shows the typed error.
    let (state, transcript, _) = shown(&result, "wrong_key");
    assert_eq!(state, "error", "{result:#}");
    assert!(transcript.is_empty(), "{transcript}");
    assert!(
        result["wrong_key"]["status"]
            .as_str()
            .is_some_and(|s| s.contains("401 invalid_api_key")),
        "{result:#}"
    );

    for png in ["record.png", "page.png", "wrong-key.png"] {
        let bytes = std::fs::read(out.join(png)).expect("a screenshot");
        assert!(bytes.starts_with(b"\x89PNG"), "{png} is no PNG");
    }
    // The server saw the page's requests: the page itself and two transcriptions.
    let logs = server.logs().join("\n");
    assert!(logs.contains(r#""path":"/""#), "{logs}");
}
