//! The server for applications, end to end on a live `ctxscribe-server` on loopback:
//! README's server examples run as written (curl and the OpenAI Python SDK snippets),
//! `GET /v1/models`, `GET /metrics` and the page `GET /`. `stream=true` is
//! tests/server_streaming.rs.
//!
//! The SDK parts need the virtual environment of `scripts/setup-test-venv.sh`
//! (`make setup` runs it); the README examples need `curl` and `ffmpeg` (to make the
//! examples' `note.webm`).

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::apps::*;
use common::server::start;
use common::*;
use serde_json::Value;

// ---------------------------------------------------------------------------------------
// README's examples
// ---------------------------------------------------------------------------------------

/// The fenced blocks of `markdown` in language `lang`.
fn code_blocks(markdown: &str, lang: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in markdown.lines() {
        match &mut current {
            None if line.trim_start() == format!("```{lang}") => current = Some(String::new()),
            Some(block) if line.trim_start() == "```" => {
                blocks.push(std::mem::take(block));
                current = None;
            }
            Some(block) => {
                block.push_str(line);
                block.push('\n');
            }
            None => {}
        }
    }
    blocks
}

/// Every `curl` command of README's `sh` blocks, continuation lines joined.
fn readme_curl_commands(readme: &str) -> Vec<String> {
    let mut commands = Vec::new();
    for block in code_blocks(readme, "sh") {
        let mut command = String::new();
        for line in block.lines() {
            match line.strip_suffix('\\') {
                Some(part) => command.push_str(part),
                None => {
                    command.push_str(line);
                    if command.trim_start().starts_with("curl ") {
                        commands.push(command.trim().to_owned());
                    }
                    command.clear();
                }
            }
        }
    }
    commands
}

/// A directory holding the examples' `note.webm` (jfk as WebM/Opus) and a `.curlrc`
/// that makes curl print the status after the body.
fn examples_dir() -> PathBuf {
    let dir = repo_root().join("target/readme-examples");
    std::fs::create_dir_all(&dir).expect("make the examples directory");
    let status = Command::new("ffmpeg")
        .args(["-nostdin", "-loglevel", "error", "-y", "-i"])
        .arg(jfk())
        .args(["-c:a", "libopus", "-b:a", "32k"])
        .arg(dir.join("note.webm"))
        .status()
        .expect("run ffmpeg");
    assert!(status.success(), "ffmpeg failed: {status}");
    std::fs::write(
        dir.join(".curlrc"),
        "write-out = \"\\nHTTP %{http_code}\\n\"\n",
    )
    .expect("write .curlrc");
    dir
}

#[test]
fn readme_examples_run_as_written() {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).expect("README.md");
    let server = start(&[], &[]);
    let dir = examples_dir();
    let commands = readme_curl_commands(&readme);
    assert!(commands.len() >= 4, "{commands:#?}");
    let here = server.addr.to_string();
    for command in &commands {
        // The examples' address is the only change.
        let runnable = command.replace("127.0.0.1:8080", &here);
        let output = Command::new("bash")
            .args(["-c", &runnable])
            .current_dir(&dir)
            .env("CURL_HOME", &dir)
            .output()
            .expect("run bash");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let (body, status) = stdout
            .trim_end()
            .rsplit_once("\nHTTP ")
            .unwrap_or_else(|| panic!("{command}: no status in {stdout:?}"));
        assert_eq!(status, "200", "{command}:\n{body}");
        if command.contains("stream=true") {
            let events = events(body);
            let done = events.last().expect("events");
            assert_eq!(done["type"], "transcript.text.done", "{body}");
            assert!(
                wer(JFK, done["text"].as_str().unwrap_or("")) <= 0.1,
                "{body}"
            );
        } else if command.contains("/metrics") {
            assert!(body.contains("ctxscribe_requests_total{"), "{body}");
        } else if command.contains("/v1/models") {
            assert_eq!(
                serde_json::from_str::<Value>(body).expect("JSON")["object"],
                "list"
            );
        } else {
            let answer: Value = serde_json::from_str(body).expect("JSON");
            let text = answer["text"]
                .as_str()
                .unwrap_or_else(|| panic!("{answer}"));
            assert!(wer(JFK, text) <= 0.2, "{command}: {text}");
        }
    }

    // The OpenAI SDK snippets, with the server's address.
    let python = test_venv_python();
    let snippets: Vec<String> = code_blocks(&readme, "python")
        .into_iter()
        .filter(|block| block.contains("OpenAI(base_url=\"http://127.0.0.1:8080/v1\""))
        .collect();
    assert!(!snippets.is_empty(), "no SDK snippet in README.md");
    for snippet in snippets {
        let output = Command::new(&python)
            .args(["-c", &snippet.replace("127.0.0.1:8080", &here)])
            .current_dir(&dir)
            .output()
            .expect("run python");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "{snippet}\n{stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(wer(JFK, &stdout) <= 0.2, "{snippet}: {stdout}");
    }
}

// ---------------------------------------------------------------------------------------
// GET /v1/models and GET /metrics
// ---------------------------------------------------------------------------------------

#[test]
fn models_list_the_loaded_model() {
    let server = start(&[], &[("CTXSCRIBE_API_KEYS", KEY)]);
    let missing = http(server.addr, "GET", "/v1/models", &[], None);
    assert_eq!(missing.status, 401, "{}", missing.body);
    assert_eq!(missing.error_code(), "invalid_api_key");

    let bearer = format!("Bearer {KEY}");
    let listed = http(
        server.addr,
        "GET",
        "/v1/models",
        &[("Authorization", &bearer)],
        None,
    );
    assert_eq!(listed.status, 200, "{}", listed.body);
    assert_eq!(listed.header("content-type"), Some("application/json"));
    let list = listed.json();
    assert_eq!(list["object"], "list");
    let models = list["data"].as_array().expect("data");
    assert_eq!(models.len(), 1, "{list}");
    let model = &models[0];
    assert_eq!(model["id"], "ggml-tiny.en.bin");
    assert_eq!(model["object"], "model");
    assert_eq!(model["owned_by"], "ctxscribe");
    assert!(model["created"].as_u64().is_some_and(|t| t > 1_600_000_000));
    // The CPU kernels the engine chose: a name and ggml's features of them.
    let kernels = &model["cpu_kernels"];
    assert!(
        kernels["variant"].as_str().is_some_and(|v| !v.is_empty()),
        "{model}"
    );
    assert!(
        kernels["features"]
            .as_array()
            .is_some_and(|f| f.iter().any(|x| x == "SSE3")),
        "{model}"
    );
    // The device it runs on: the CPU in a build without a GPU backend.
    assert_eq!(model["backend"]["name"], "CPU", "{model}");
    assert!(
        model["backend"]["description"]
            .as_str()
            .is_some_and(|d| d.contains("SSE3")),
        "{model}"
    );

    let post = http(
        server.addr,
        "POST",
        "/v1/models",
        &[("X-Api-Key", KEY)],
        None,
    );
    assert_eq!(post.status, 405);
    assert_eq!(post.header("allow"), Some("GET"));
}

/// The value of the sample `name` (with its labels, as written) in a metrics text.
fn sample(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
        .map_or(0.0, |v| v.trim().parse().unwrap_or(f64::NAN))
}

#[test]
fn metrics_count_requests_and_stages() {
    let server = start(&[], &[("CTXSCRIBE_API_KEYS", KEY)]);
    let scrape = || {
        let answer = http(server.addr, "GET", "/metrics", &[("X-Api-Key", KEY)], None);
        assert_eq!(answer.status, 200, "{}", answer.body);
        assert!(
            answer
                .header("content-type")
                .is_some_and(|t| t.starts_with("application/openmetrics-text")),
            "{}",
            answer.head
        );
        answer.body
    };
    let unauthorized = http(server.addr, "GET", "/metrics", &[], None);
    assert_eq!(unauthorized.status, 401);
    assert_eq!(unauthorized.error_code(), "invalid_api_key");

    let ok = "ctxscribe_requests_total{path=\"/v1/audio/transcriptions\",status=\"200\",code=\"\"}";
    let bad = "ctxscribe_requests_total{path=\"/v1/audio/transcriptions\",status=\"400\",\
               code=\"invalid_request\"}";
    let engine = "ctxscribe_stage_seconds_count{stage=\"engine\"}";
    let before = scrape();
    assert!(
        before.contains("ctxscribe_model_info{model=\"ggml-tiny.en.bin\""),
        "{before}"
    );
    let answer = transcribe(&server, &jfk(), &[], Some(KEY));
    assert_eq!(answer.status, 200, "{}", answer.body);
    let answer = transcribe(&server, &jfk(), &[("languages", "xx-bogus")], Some(KEY));
    assert_eq!(answer.status, 400, "{}", answer.body);
    // A streamed transcription counts its engine stages and audio too (once its last
    // event is sent: `transcribe` reads the answer to its end).
    let answer = transcribe(&server, &jfk(), &[("stream", "true")], Some(KEY));
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert!(
        answer.body.contains("transcript.text.done"),
        "{}",
        answer.body
    );
    let after = scrape();
    assert_eq!(sample(&after, ok), sample(&before, ok) + 2.0, "{after}");
    assert_eq!(sample(&after, bad), sample(&before, bad) + 1.0, "{after}");
    assert_eq!(
        sample(&after, engine),
        sample(&before, engine) + 2.0,
        "{after}"
    );
    let audio = sample(&after, "ctxscribe_audio_seconds_total");
    assert!((20.0..24.0).contains(&audio), "{after}");
    for stage in ["read", "queue", "decode", "total"] {
        let count = format!("ctxscribe_stage_seconds_count{{stage=\"{stage}\"}}");
        assert!(sample(&after, &count) >= 1.0, "{stage}: {after}");
    }
    assert_eq!(
        sample(&after, "ctxscribe_in_flight_requests"),
        0.0,
        "{after}"
    );
    assert_eq!(sample(&after, "ctxscribe_queued_requests"), 0.0, "{after}");
    assert!(after.trim_end().ends_with("# EOF"), "{after}");

    // `--metrics-public` opens /metrics, and only it.
    let open = start(&["--metrics-public"], &[("CTXSCRIBE_API_KEYS", KEY)]);
    assert_eq!(http(open.addr, "GET", "/metrics", &[], None).status, 200);
    assert_eq!(http(open.addr, "GET", "/v1/models", &[], None).status, 401);
}

// ---------------------------------------------------------------------------------------
// GET /
// ---------------------------------------------------------------------------------------

/// `GET /` is the page, public even with keys; a huge query string is a bounded, typed
/// answer.
#[test]
fn the_page_is_public_and_bounded() {
    let server = start(&[], &[("CTXSCRIBE_API_KEYS", KEY)]);
    let page = http(server.addr, "GET", "/", &[], None);
    assert_eq!(page.status, 200, "{}", page.body);
    assert_eq!(
        page.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    assert!(
        page.body.contains(r#"<script src="/page/app.js""#),
        "{}",
        page.body
    );
    let script = http(server.addr, "GET", "/page/app.js", &[], None);
    assert_eq!(script.status, 200);
    assert!(
        script.body.contains("transcript.text.delta"),
        "{}",
        script.body
    );
    assert_eq!(
        http(server.addr, "GET", "/page/app.css", &[], None).status,
        200
    );
    // The API behind it still needs the key.
    let no_key = transcribe(&server, &jfk(), &[("stream", "true")], None);
    assert_eq!(no_key.status, 401, "{}", no_key.body);

    let long = format!("/?q={}", "a".repeat(10_000));
    let answer = http(server.addr, "GET", &long, &[], None);
    assert_eq!(answer.status, 414, "{}", answer.body);
    assert_eq!(answer.error_code(), "uri_too_long");
    // A URI over 64 KiB is refused by hyper itself (an empty 414) before any handler.
    let huge = format!("/?q={}", "a".repeat(100_000));
    assert_eq!(http(server.addr, "GET", &huge, &[], None).status, 414);
    let post = http(server.addr, "POST", "/", &[], None);
    assert_eq!(post.status, 405, "{}", post.body);
    assert_eq!(post.header("allow"), Some("GET"));
}
