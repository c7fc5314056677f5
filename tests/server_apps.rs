//! The server for applications, end to end on a live `ctxscribe-server` on loopback:
//! README's server examples run as written (curl and the OpenAI Python SDK snippets),
//! `GET /v1/models`, `GET /metrics`, and `stream=true` (server-sent events), the latter
//! also through the official OpenAI Python SDK's `stream=True`.
//!
//! The SDK parts need the virtual environment of `scripts/setup-test-venv.sh`
//! (`make setup` runs it); the README examples need `curl` and `ffmpeg` (to make the
//! examples' `note.webm`).

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::server::{Server, start};
use common::*;
use serde_json::{Value, json};

const TRANSCRIPTIONS: &str = "/v1/audio/transcriptions";
const JFK: &str = "And so my fellow Americans, ask not what your country can do for you, ask \
                   what you can do for your country.";
const KEY: &str = "sk-apps-test-key";

fn jfk() -> PathBuf {
    real_clip("en_whisper_jfk").path
}

/// One answer, read to the end of a `Connection: close` exchange.
#[derive(Debug)]
struct Answer {
    status: u16,
    head: String,
    body: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("{} is not JSON ({e}): {}", self.status, self.body))
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.head.split("\r\n").skip(1).find_map(|line| {
            let (n, v) = line.split_once(':')?;
            n.trim().eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }

    fn error_code(&self) -> Value {
        self.json()["error"]["code"].clone()
    }
}

fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<(&str, &[u8])>,
) -> Answer {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(300)))
        .expect("read timeout");
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if let Some((content_type, bytes)) = body {
        head.push_str(&format!(
            "Content-Type: {content_type}\r\nContent-Length: {}\r\n",
            bytes.len()
        ));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).expect("send the head");
    if let Some((_, bytes)) = body {
        stream.write_all(bytes).expect("send the body");
    }
    let mut reply = Vec::new();
    stream.read_to_end(&mut reply).expect("read the answer");
    let reply = String::from_utf8(reply).expect("a UTF-8 answer");
    let (head, body) = reply.split_once("\r\n\r\n").expect("a complete answer");
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status");
    Answer {
        status,
        head: head.to_owned(),
        body: body.to_owned(),
    }
}

/// A `multipart/form-data` POST of `file` plus text fields.
fn transcribe(server: &Server, file: &Path, fields: &[(&str, &str)], key: Option<&str>) -> Answer {
    let boundary = "ctxscribe-apps-boundary-7d1f";
    let mut body = Vec::new();
    for (name, value) in fields {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
            )
            .as_bytes(),
        );
    }
    body.extend_from_slice(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\"\r\n\
             Content-Type: application/octet-stream\r\n\r\n"
        )
        .as_bytes(),
    );
    body.extend_from_slice(&std::fs::read(file).expect("read the audio"));
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    let content_type = format!("multipart/form-data; boundary={boundary}");
    let auth = key.map(|k| format!("Bearer {k}"));
    let headers: Vec<(&str, &str)> = auth
        .as_deref()
        .map(|a| vec![("Authorization", a)])
        .unwrap_or_default();
    http(
        server.addr,
        "POST",
        TRANSCRIPTIONS,
        &headers,
        Some((&content_type, &body)),
    )
}

/// The JSON payloads of a server-sent event stream's `data:` lines.
fn events(body: &str) -> Vec<Value> {
    body.split("\n\n")
        .filter(|event| !event.trim().is_empty())
        .map(|event| {
            let data = event
                .lines()
                .find_map(|line| line.strip_prefix("data: "))
                .unwrap_or_else(|| panic!("an event without data: {event:?}"));
            serde_json::from_str(data).unwrap_or_else(|e| panic!("{data}: {e}"))
        })
        .collect()
}

/// The Python of `scripts/setup-test-venv.sh`.
fn sdk_python() -> PathBuf {
    let python = std::env::var_os("CTXSCRIBE_OPENAI_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target/venv-openai/bin/python"));
    assert!(
        python.is_file(),
        "{} is missing: run `bash scripts/setup-test-venv.sh` (`make setup` runs it)",
        python.display()
    );
    python
}

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
    let python = sdk_python();
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
    let after = scrape();
    assert_eq!(sample(&after, ok), sample(&before, ok) + 1.0, "{after}");
    assert_eq!(sample(&after, bad), sample(&before, bad) + 1.0, "{after}");
    assert_eq!(
        sample(&after, engine),
        sample(&before, engine) + 1.0,
        "{after}"
    );
    let audio = sample(&after, "ctxscribe_audio_seconds_total");
    assert!((10.0..12.0).contains(&audio), "{after}");
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
// stream=true
// ---------------------------------------------------------------------------------------

#[test]
fn streaming_ends_with_the_plain_transcript() {
    let server = start(&[], &[]);
    let context = [(
        "messages",
        r#"[{"role": "user", "content": "Kennedy's inaugural address; fellow Americans."}]"#,
    )];
    let plain = transcribe(&server, &jfk(), &context, None);
    assert_eq!(plain.status, 200, "{}", plain.body);
    let plain = plain.json()["text"].as_str().expect("text").to_owned();

    let with_stream = [context[0], ("stream", "true")];
    let streamed = transcribe(&server, &jfk(), &with_stream, None);
    assert_eq!(streamed.status, 200, "{}", streamed.body);
    assert_eq!(streamed.header("content-type"), Some("text/event-stream"));
    let events = events(&streamed.body);
    let (done, deltas) = events.split_last().expect("events");
    assert_eq!(
        *done,
        json!({"type": "transcript.text.done", "text": plain}),
        "{}",
        streamed.body
    );
    assert!(!deltas.is_empty(), "{}", streamed.body);
    let joined: String = deltas
        .iter()
        .map(|d| {
            assert_eq!(d["type"], "transcript.text.delta", "{d}");
            d["delta"].as_str().expect("delta").to_owned()
        })
        .collect();
    assert_eq!(joined, plain);

    let off = transcribe(&server, &jfk(), &[("stream", "False")], None);
    assert_eq!(off.status, 200, "{}", off.body);
    assert_eq!(off.header("content-type"), Some("application/json"));

    // Errors before the first event keep their status codes and bodies.
    let invalid = transcribe(&server, &jfk(), &[("stream", "yes please")], None);
    assert_eq!(invalid.status, 400, "{}", invalid.body);
    assert_eq!(invalid.json()["error"]["param"], "stream");
    assert_eq!(invalid.error_code(), "invalid_request");
    let garbage = std::env::temp_dir().join(format!("ctxscribe-apps-{}.bin", std::process::id()));
    std::fs::write(&garbage, b"not audio at all, not at all").expect("write");
    let unsupported = transcribe(&server, &garbage, &[("stream", "true")], None);
    let _ = std::fs::remove_file(&garbage);
    assert_eq!(unsupported.status, 400, "{}", unsupported.body);
    assert_eq!(unsupported.error_code(), "unsupported_audio_type");
}

#[test]
fn openai_python_sdk_streams() {
    let python = sdk_python();
    let server = start(&[], &[("CTXSCRIBE_API_KEYS", KEY)]);
    let output = Command::new(&python)
        .arg(repo_root().join("tests/openai_sdk_stream.py"))
        .arg(format!("http://{}/v1", server.addr))
        .arg(KEY)
        .arg(jfk())
        .output()
        .expect("run tests/openai_sdk_stream.py");
    assert!(
        output.status.success(),
        "the SDK client failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let result: Value = serde_json::from_slice(&output.stdout).expect("JSON from the client");
    let plain = result["plain"].as_str().expect("plain");
    assert!(wer(JFK, plain) <= 0.1, "{result}");
    assert_eq!(result["done"], plain, "{result}");
    assert_eq!(result["deltas"], plain, "{result}");
    assert_eq!(
        result["types"].as_array().and_then(|t| t.last()),
        Some(&json!("transcript.text.done"))
    );
    assert_eq!(result["bad_stream"]["status"], 400, "{result}");
    assert_eq!(
        result["bad_stream"]["code"], "unsupported_audio_type",
        "{result}"
    );
    eprintln!("SDK stream: {result}");
}
