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
use std::time::{Duration, Instant};

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
    let split = reply
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a complete answer");
    let head = String::from_utf8(reply[..split].to_vec()).expect("a UTF-8 head");
    let mut body = reply[split + 4..].to_vec();
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        body = dechunk(&body);
    }
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status");
    Answer {
        status,
        head,
        body: String::from_utf8(body).expect("a UTF-8 body"),
    }
}

/// The payload of a `Transfer-Encoding: chunked` body.
fn dechunk(mut body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let line_end = body
            .windows(2)
            .position(|w| w == b"\r\n")
            .expect("a chunk size line");
        let size = std::str::from_utf8(&body[..line_end])
            .ok()
            .and_then(|line| usize::from_str_radix(line.split(';').next()?.trim(), 16).ok())
            .expect("a hexadecimal chunk size");
        if size == 0 {
            return out;
        }
        let start = line_end + 2;
        out.extend_from_slice(&body[start..start + size]);
        body = &body[start + size + 2..];
    }
}

/// A `multipart/form-data` POST of `file` plus text fields.
fn transcribe(server: &Server, file: &Path, fields: &[(&str, &str)], key: Option<&str>) -> Answer {
    let (content_type, body) = multipart(file, fields);
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

/// The content type and body of a `multipart/form-data` form of `file` plus text fields.
fn multipart(file: &Path, fields: &[(&str, &str)]) -> (String, Vec<u8>) {
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
    (format!("multipart/form-data; boundary={boundary}"), body)
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
    let python = test_venv_python();
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

/// A `stream=true` transcription of `file`, read as it arrives: each event with the time
/// it arrived after the request was sent.
fn stream_timed(server: &Server, file: &Path, fields: &[(&str, &str)]) -> Vec<(Duration, Value)> {
    let mut fields = fields.to_vec();
    fields.push(("stream", "true"));
    let (content_type, body) = multipart(file, &fields);
    let mut stream = TcpStream::connect(server.addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(300)))
        .expect("read timeout");
    let head = format!(
        "POST {TRANSCRIPTIONS} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\
         Content-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
        server.addr,
        body.len()
    );
    stream.write_all(head.as_bytes()).expect("send the head");
    stream.write_all(&body).expect("send the body");
    let sent = Instant::now();
    let (mut raw, mut timed) = (Vec::new(), Vec::new());
    let mut buffer = [0u8; 16 * 1024];
    loop {
        let read = stream.read(&mut buffer).expect("read the answer");
        if read == 0 {
            break;
        }
        raw.extend_from_slice(&buffer[..read]);
        // Events are whole in the raw bytes (one chunk each): count the complete ones.
        let text = String::from_utf8_lossy(&raw).into_owned();
        let complete: Vec<Value> = text
            .match_indices("data: ")
            .filter_map(|(at, _)| {
                let rest = &text[at + 6..];
                let end = rest.find("\n\n")?;
                serde_json::from_str(&rest[..end]).ok()
            })
            .collect();
        let arrived = sent.elapsed();
        for event in complete.into_iter().skip(timed.len()) {
            timed.push((arrived, event));
        }
    }
    assert!(
        String::from_utf8_lossy(&raw).starts_with("HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&raw)
    );
    timed
}

/// `clips` of ../shared/eval/real joined into one 16 kHz mono WAV under target/.
fn joined_clip(name: &str, clips: &[&str]) -> PathBuf {
    let out = repo_root().join(format!("target/readme-examples/{name}.wav"));
    std::fs::create_dir_all(out.parent().expect("a parent")).expect("make the directory");
    let mut command = Command::new("ffmpeg");
    command.args(["-nostdin", "-loglevel", "error", "-y"]);
    let mut filter = String::new();
    for (index, clip) in clips.iter().enumerate() {
        command.arg("-i").arg(real_clip(clip).path);
        filter.push_str(&format!(
            "[{index}:a]aresample=16000,aformat=channel_layouts=mono[a{index}];"
        ));
    }
    for index in 0..clips.len() {
        filter.push_str(&format!("[a{index}]"));
    }
    filter.push_str(&format!("concat=n={}:v=0:a=1[out]", clips.len()));
    let status = command
        .args(["-filter_complex", &filter, "-map", "[out]"])
        .arg(&out)
        .status()
        .expect("run ffmpeg");
    assert!(status.success(), "ffmpeg failed: {status}");
    out
}

/// Deltas arrive per window of speech, as each is decoded; joined they are the done
/// event's text, which is the non-streamed text. Prints the time to the first delta and
/// to the done event (a measurement, not asserted).
#[test]
fn streaming_sends_each_window_as_it_is_decoded() {
    let server = start(&[], &[]);
    let cases = [
        (
            "joined-16s",
            vec!["en_whisper_jfk", "en_fw_stereo_right"],
            1,
        ),
        (
            "joined-39s",
            vec![
                "en_whisper_jfk",
                "en_picovoice_quilter",
                "en_ls_file_1221-135766-0001",
                "en_fw_stereo_left",
            ],
            // Windows are at most 28 s: two at least.
            2,
        ),
    ];
    for (name, clips, min_deltas) in cases {
        let file = joined_clip(name, &clips);
        let plain = transcribe(&server, &file, &[], None);
        assert_eq!(plain.status, 200, "{}", plain.body);
        let plain = plain.json()["text"].as_str().expect("text").to_owned();
        let timed = stream_timed(&server, &file, &[]);
        let ((done_at, done), deltas) = timed.split_last().expect("events");
        assert_eq!(
            *done,
            json!({"type": "transcript.text.done", "text": plain})
        );
        let joined: String = deltas
            .iter()
            .map(|(_, d)| d["delta"].as_str().expect("a delta").to_owned())
            .collect();
        assert_eq!(joined, plain, "{timed:?}");
        assert!(deltas.len() >= min_deltas, "{name}: {timed:?}");
        let first = deltas.first().map_or(*done_at, |(at, _)| *at);
        eprintln!(
            "stream {name}: {} deltas, first delta after {:.0} ms, done after {:.0} ms",
            deltas.len(),
            first.as_secs_f64() * 1e3,
            done_at.as_secs_f64() * 1e3
        );
    }
}

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

/// On every case of ../shared/eval/context, with its messages and terms, the done
/// event's text is the non-streamed text. Long: `cargo test --release --all-features
/// --test server_apps -- --ignored`.
#[test]
#[ignore = "24 cases twice on the engine; run with --ignored"]
fn streaming_done_is_the_plain_text_on_every_context_case() {
    let server = start(&[], &[]);
    let dir = shared_dir().join("eval/context");
    let cases = std::fs::read_to_string(dir.join("cases.jsonl")).expect("cases.jsonl");
    let mut checked = 0;
    for line in cases.lines().filter(|l| !l.trim().is_empty()) {
        let case: Value = serde_json::from_str(line).expect("a JSON case");
        let id = case["id"].as_str().expect("an id");
        let messages = case["messages"].to_string();
        let dictionary = case["terms"].to_string();
        let fields = [
            ("messages", messages.as_str()),
            ("dictionary", dictionary.as_str()),
        ];
        let file = dir.join(format!("audio/{id}.wav"));
        let plain = transcribe(&server, &file, &fields, None);
        assert_eq!(plain.status, 200, "{id}: {}", plain.body);
        let plain = plain.json()["text"].as_str().expect("text").to_owned();
        let timed = stream_timed(&server, &file, &fields);
        let (_, done) = timed.last().expect("events");
        assert_eq!(done["text"], plain.as_str(), "{id}: {timed:?}");
        let joined: String = timed
            .iter()
            .filter_map(|(_, e)| e["delta"].as_str())
            .collect();
        assert_eq!(joined, plain, "{id}");
        checked += 1;
    }
    assert!(checked > 0, "no case in cases.jsonl");
    eprintln!("done.text == the non-streamed text on {checked} context cases");
}

/// Waits (up to two minutes) until the server runs no transcription.
fn wait_idle(server: &Server) {
    for _ in 0..1200 {
        let health = http(server.addr, "GET", "/health", &[], None).json();
        if health["in_flight"] == 0 {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("the server is still busy: {}", server.logs().join("\n"));
}

/// A client that hangs up, streamed or not, cancels its transcription: the engine stops
/// at its next step (the log says so) and the one engine slot is free for the next.
#[test]
fn a_client_that_hangs_up_cancels_its_transcription() {
    let server = start(&["--max-concurrent", "1", "--max-queue", "0"], &[]);
    let long = [
        "en_whisper_jfk",
        "en_picovoice_quilter",
        "en_ls_file_1221-135766-0001",
        "en_fw_stereo_left",
    ]
    .repeat(3);
    // Two minutes of speech: five windows at least, seconds of engine time.
    let file = joined_clip("joined-2min", &long);
    let cancelled = |server: &Server| {
        server
            .logs()
            .iter()
            .filter(|line| line.contains("transcription cancelled"))
            .count()
    };
    for stream in [true, false] {
        let mut fields = vec![];
        if stream {
            fields.push(("stream", "true"));
        }
        let (content_type, body) = multipart(&file, &fields);
        let mut client = TcpStream::connect(server.addr).expect("connect");
        let head = format!(
            "POST {TRANSCRIPTIONS} HTTP/1.1\r\nHost: {}\r\n\
             Content-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
            server.addr,
            body.len()
        );
        client.write_all(head.as_bytes()).expect("send the head");
        client.write_all(&body).expect("send the body");
        if stream {
            // Hang up after the first event, with windows still to decode.
            client
                .set_read_timeout(Some(Duration::from_secs(300)))
                .expect("read timeout");
            let mut seen = Vec::new();
            let mut buffer = [0u8; 4096];
            while !String::from_utf8_lossy(&seen).contains("\n\n")
                || !String::from_utf8_lossy(&seen).contains("data: ")
            {
                let read = client.read(&mut buffer).expect("read");
                assert!(read > 0, "{}", String::from_utf8_lossy(&seen));
                seen.extend_from_slice(&buffer[..read]);
            }
        } else {
            // Hang up while the engine runs.
            for _ in 0..600 {
                if http(server.addr, "GET", "/health", &[], None).json()["in_flight"] == 1 {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        let before = cancelled(&server);
        drop(client);
        wait_idle(&server);
        assert_eq!(
            cancelled(&server),
            before + 1,
            "stream={stream}: not cancelled:\n{}",
            server.logs().join("\n")
        );
    }
    // The slot is free: the next request runs.
    let next = transcribe(&server, &jfk(), &[], None);
    assert_eq!(next.status, 200, "{}", next.body);
}
