//! End-to-end tests of the reference HTTP server (`ctxscribe::server`, as the
//! `ctxscribe-server` binary): the compiled server on a free loopback port, real audio, the real engine (English tiny for speed,
//! base where the timing matters), and a raw HTTP/1.1 client so every byte on the wire
//! is under the test's control. One more test drives the server with the official
//! OpenAI Python SDK.
//!
//! The server is the `ctxscribe-server` binary Cargo builds for the tests
//! (`tests/common/server.rs` starts it). The SDK test needs the virtual environment made
//! by `scripts/setup-test-venv.sh` (`make setup` runs it).

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use common::apps::{JFK, TRANSCRIPTIONS, request_head};
use common::server::{Server, launch, start};
use common::*;
use serde_json::{Value, json};

const MIB: usize = 1024 * 1024;

impl Server {
    /// The JSON log lines, parsed.
    fn log_entries(&self) -> Vec<Value> {
        self.logs()
            .iter()
            .map(|line| serde_json::from_str(line).unwrap_or_else(|_| panic!("not JSON: {line}")))
            .collect()
    }

    /// The access-log lines of request `id` (waits a little for the log reader).
    fn request_log(&self, id: &str) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let lines: Vec<Value> = self
                .log_entries()
                .into_iter()
                .filter(|e| e["message"] == "request" && e["request_id"] == id)
                .collect();
            if !lines.is_empty() || Instant::now() > deadline {
                return lines;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn get(&self, path: &str) -> Reply {
        self.send("GET", path, &[], None)
    }

    fn health(&self) -> Value {
        let reply = self.get("/health");
        assert_eq!(reply.status, 200, "{}", reply.text());
        reply.json()
    }

    /// Polls /health until `in_flight` and `waiting` have these values; panics with
    /// `what` and the last health after `within`.
    fn wait_for_places(&self, in_flight: u64, waiting: u64, within: Duration, what: &str) {
        let deadline = Instant::now() + within;
        loop {
            let health = self.health();
            if health["in_flight"] == in_flight && health["waiting"] == waiting {
                return;
            }
            assert!(Instant::now() < deadline, "{what}: {health}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// POSTs `form` to the transcription endpoint.
    fn transcribe(&self, form: &Form) -> Reply {
        self.transcribe_with(form, &[])
    }

    fn transcribe_with(&self, form: &Form, headers: &[(&str, &str)]) -> Reply {
        let (content_type, body) = form.encode();
        self.send(
            "POST",
            TRANSCRIPTIONS,
            headers,
            Some((content_type.as_str(), body.as_slice())),
        )
    }

    fn send(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<(&str, &[u8])>,
    ) -> Reply {
        let head = request_head(self.addr, method, path, headers, body);
        exchange(self.addr, head.as_bytes(), body.map_or(&[][..], |(_, b)| b))
    }

    /// Waits for the process to exit on its own.
    fn wait_exit(&mut self, timeout: Duration) -> ExitStatus {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().expect("poll the server") {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "the server did not exit within {timeout:?}:\n{}",
                self.logs().join("\n")
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

// ---------------------------------------------------------------------------------------
// A raw HTTP/1.1 client
// ---------------------------------------------------------------------------------------

#[derive(Debug)]
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    /// Interim (1xx) statuses received before the final one.
    interim: Vec<u16>,
    /// How long until the final reply was complete.
    took: Duration,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("reply {} is not JSON ({e}): {}", self.status, self.text()))
    }
}

/// Sends `head` and `body` on a new connection and reads one reply. A server that
/// answers early may stop reading, so a failed write is not an error here.
fn exchange(addr: SocketAddr, head: &[u8], body: &[u8]) -> Reply {
    let started = Instant::now();
    let mut stream = TcpStream::connect(addr).expect("connect to the server");
    stream
        .set_read_timeout(Some(Duration::from_secs(300)))
        .expect("set a read timeout");
    let _ = stream.write_all(head).and_then(|()| stream.write_all(body));
    read_reply(&mut stream, started)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Reads one reply, skipping `100 Continue`; the body is as long as Content-Length says.
fn read_reply(stream: &mut TcpStream, started: Instant) -> Reply {
    let mut buffer = Vec::new();
    let mut interim = Vec::new();
    let mut chunk = [0u8; 64 * 1024];
    loop {
        if let Some(end) = find(&buffer, b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buffer[..end]).into_owned();
            let mut lines = head.split("\r\n");
            let status: u16 = lines
                .next()
                .and_then(|line| line.split(' ').nth(1))
                .and_then(|code| code.parse().ok())
                .unwrap_or_else(|| panic!("bad status line in {head:?}"));
            let headers: Vec<(String, String)> = lines
                .filter_map(|line| line.split_once(':'))
                .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
                .collect();
            if (100..200).contains(&status) {
                interim.push(status);
                buffer.drain(..end + 4);
                continue;
            }
            let length: usize = headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
                .and_then(|(_, v)| v.parse().ok())
                .expect("the server always sends Content-Length");
            if buffer.len() >= end + 4 + length {
                return Reply {
                    status,
                    headers,
                    body: buffer[end + 4..end + 4 + length].to_vec(),
                    interim,
                    took: started.elapsed(),
                };
            }
        }
        match stream.read(&mut chunk) {
            Ok(0) => panic!(
                "connection closed before a complete reply: {:?}",
                String::from_utf8_lossy(&buffer)
            ),
            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            Err(e) => panic!(
                "reading the reply failed ({e}) after {:?}",
                String::from_utf8_lossy(&buffer)
            ),
        }
    }
}

/// A `multipart/form-data` body.
#[derive(Debug, Clone, Default)]
struct Form {
    parts: Vec<Part>,
}

#[derive(Debug, Clone)]
struct Part {
    name: String,
    filename: Option<String>,
    content_type: Option<String>,
    data: Vec<u8>,
}

const BOUNDARY: &str = "ctxscribe-e2e-7d1e0c";

impl Form {
    fn new() -> Self {
        Form::default()
    }

    fn text(mut self, name: &str, value: &str) -> Self {
        self.parts.push(Part {
            name: name.to_owned(),
            filename: None,
            content_type: None,
            data: value.as_bytes().to_vec(),
        });
        self
    }

    /// A text field with arbitrary bytes (not necessarily UTF-8).
    fn raw(mut self, name: &str, data: Vec<u8>) -> Self {
        self.parts.push(Part {
            name: name.to_owned(),
            filename: None,
            content_type: None,
            data,
        });
        self
    }

    /// The audio file at `path` as the `file` part.
    fn file(self, path: &Path) -> Self {
        let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
        let name = path
            .file_name()
            .map_or_else(|| "audio".into(), |n| n.to_string_lossy().into_owned());
        self.file_bytes(&name, "application/octet-stream", bytes)
    }

    fn file_bytes(mut self, filename: &str, content_type: &str, data: Vec<u8>) -> Self {
        self.parts.push(Part {
            name: "file".to_owned(),
            filename: Some(filename.to_owned()),
            content_type: Some(content_type.to_owned()),
            data,
        });
        self
    }

    fn encode(&self) -> (String, Vec<u8>) {
        let mut body = Vec::new();
        for part in &self.parts {
            body.extend_from_slice(format!("--{BOUNDARY}\r\n").as_bytes());
            let mut disposition = format!("Content-Disposition: form-data; name=\"{}\"", part.name);
            if let Some(filename) = &part.filename {
                disposition.push_str(&format!("; filename=\"{filename}\""));
            }
            body.extend_from_slice(disposition.as_bytes());
            body.extend_from_slice(b"\r\n");
            if let Some(content_type) = &part.content_type {
                body.extend_from_slice(format!("Content-Type: {content_type}\r\n").as_bytes());
            }
            body.extend_from_slice(b"\r\n");
            body.extend_from_slice(&part.data);
            body.extend_from_slice(b"\r\n");
        }
        body.extend_from_slice(format!("--{BOUNDARY}--\r\n").as_bytes());
        (format!("multipart/form-data; boundary={BOUNDARY}"), body)
    }
}

// ---------------------------------------------------------------------------------------
// Assertions and audio
// ---------------------------------------------------------------------------------------

/// An error reply: the status, the OpenAI-style body with exactly its four keys, the
/// code and the param.
#[track_caller]
fn assert_error(reply: &Reply, status: u16, code: &str, param: Option<&str>) {
    assert_eq!(reply.status, status, "{}", reply.text());
    assert_eq!(reply.header("content-type"), Some("application/json"));
    let body = reply.json();
    let error = body["error"]
        .as_object()
        .unwrap_or_else(|| panic!("no error object: {body}"));
    let mut keys: Vec<&str> = error.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["code", "message", "param", "type"], "{body}");
    assert_eq!(body.as_object().map(|o| o.len()), Some(1), "{body}");
    assert_eq!(error["code"], code, "{body}");
    assert_eq!(
        error["param"],
        param.map_or(Value::Null, |p| json!(p)),
        "{body}"
    );
    let kind = if status >= 500 {
        "server_error"
    } else {
        "invalid_request_error"
    };
    assert_eq!(error["type"], kind, "{body}");
    assert!(
        error["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{body}"
    );
}

/// A success reply: 200 and exactly `{"text": <string>}`; returns the text.
#[track_caller]
fn assert_text(reply: &Reply) -> String {
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.header("content-type"), Some("application/json"));
    let body = reply.json();
    let object = body.as_object().expect("a JSON object");
    assert_eq!(object.len(), 1, "{body}");
    object["text"]
        .as_str()
        .expect("text is a string")
        .to_owned()
}

fn jfk() -> PathBuf {
    real_clip("en_whisper_jfk").path
}

/// A short clip (1.8 s) for tests that need a success but not its words.
fn short_clip() -> PathBuf {
    real_clip("en_google_brooklyn_bridge").path
}

fn jfk_form() -> Form {
    Form::new().file(&jfk())
}

/// A 16 kHz mono 16-bit wav header claiming `data_len` bytes of samples.
fn wav_header(data_len: usize) -> Vec<u8> {
    let data_len = u32::try_from(data_len).expect("small enough");
    let mut header = Vec::new();
    header.extend_from_slice(b"RIFF");
    header.extend_from_slice(&(36 + data_len).to_le_bytes());
    header.extend_from_slice(b"WAVEfmt ");
    for field in [16u32.to_le_bytes(), [1, 0, 1, 0], 16_000u32.to_le_bytes()] {
        header.extend_from_slice(&field);
    }
    header.extend_from_slice(&32_000u32.to_le_bytes());
    header.extend_from_slice(&[2, 0, 16, 0]);
    header.extend_from_slice(b"data");
    header.extend_from_slice(&data_len.to_le_bytes());
    header
}

/// Runs `f` on `n` threads at once; returns their results in order.
fn in_parallel<T: Send + 'static>(
    n: usize,
    f: impl Fn(usize) -> T + Send + Sync + 'static,
) -> Vec<T> {
    let f = Arc::new(f);
    let barrier = Arc::new(std::sync::Barrier::new(n));
    let handles: Vec<_> = (0..n)
        .map(|i| {
            let f = Arc::clone(&f);
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                barrier.wait();
                f(i)
            })
        })
        .collect();
    handles
        .into_iter()
        .map(|h| h.join().expect("request thread"))
        .collect()
}

// ---------------------------------------------------------------------------------------
// The contract
// ---------------------------------------------------------------------------------------

#[test]
fn every_supported_type_is_transcribed() {
    let server = start(&[], &[]);
    let text = assert_text(&server.transcribe(&jfk_form().text("model", "whisper-1")));
    assert!(wer(JFK, &text) <= 0.1, "{text}");

    for name in [
        "ok_webm_opus.webm",
        "ok_mp3_cbr_128k.mp3",
        "ok_m4a_aac.m4a",
        "ok_ogg_opus.ogg",
    ] {
        let reply = server.transcribe(&Form::new().file(&audio_fixture(name)));
        let text = assert_text(&reply);
        assert!(wer(JFK, &text) <= 0.2, "{name}: {text}");
    }

    // The bytes decide, never the part's file name or content type.
    let wav = std::fs::read(short_clip()).expect("read clip");
    let reply = server.transcribe(&Form::new().file_bytes("speech.flac", "text/plain", wav));
    assert!(!assert_text(&reply).is_empty());
    let flac = std::fs::read(audio_fixture("unsupported_flac.flac")).expect("read flac");
    let reply = server.transcribe(&Form::new().file_bytes("speech.wav", "audio/wav", flac));
    assert_error(&reply, 400, "unsupported_audio_type", Some("file"));
}

#[test]
fn contract_errors() {
    let server = start(&[], &[]);
    let wav = std::fs::read(short_clip()).expect("read clip");
    check_non_multipart_bodies_are_refused(&server);
    check_missing_file_and_unsupported_audio(&server);
    check_invalid_response_format_and_context_fields(&server, &wav);
    check_routing(&server);
    check_health_without_keys(&server);
}

/// Not multipart/form-data (415), or multipart/form-data that is unusable (400).
fn check_non_multipart_bodies_are_refused(server: &Server) {
    // Not multipart/form-data: 415, whatever the body.
    for content_type in [
        "application/json",
        "application/x-www-form-urlencoded",
        "text/plain",
        "multipart/mixed; boundary=x",
        "not a mime type",
    ] {
        let reply = server.send(
            "POST",
            TRANSCRIPTIONS,
            &[],
            Some((content_type, br#"{"file": "x"}"#)),
        );
        assert_error(&reply, 415, "unsupported_media_type", None);
    }
    let reply = server.send("POST", TRANSCRIPTIONS, &[], None);
    assert_error(&reply, 415, "unsupported_media_type", None);

    // multipart/form-data, but unusable.
    let reply = server.send(
        "POST",
        TRANSCRIPTIONS,
        &[],
        Some(("multipart/form-data", b"--x\r\n")),
    );
    assert_error(&reply, 400, "invalid_multipart", None);
    let reply = server.send(
        "POST",
        TRANSCRIPTIONS,
        &[],
        Some((
            "multipart/form-data; boundary=zzz",
            b"this is not multipart",
        )),
    );
    assert_error(&reply, 400, "invalid_multipart", None);
}

/// No file part, a file of an unsupported type, and a supported type that does not decode.
fn check_missing_file_and_unsupported_audio(server: &Server) {
    // No file part (also when the other fields are wrong: missing_file comes first).
    let reply = server.transcribe(&Form::new().text("model", "whisper-1"));
    assert_error(&reply, 400, "missing_file", Some("file"));
    let reply = server.transcribe(
        &Form::new()
            .text("response_format", "srt")
            .text("languages", "xx"),
    );
    assert_error(&reply, 400, "missing_file", Some("file"));
    let reply = server.transcribe(&Form::new().text("audio", "RIFF"));
    assert_error(&reply, 400, "missing_file", Some("file"));

    // Not a supported type (before response_format and the context fields).
    for name in [
        "unsupported_flac.flac",
        "unsupported_aiff.aiff",
        "unsupported_text.txt",
        "bad_empty.wav",
    ] {
        let reply = server.transcribe(
            &Form::new()
                .file(&audio_fixture(name))
                .text("response_format", "text")
                .text("dictionary", "[1]"),
        );
        assert_error(&reply, 400, "unsupported_audio_type", Some("file"));
    }
    // A supported type that does not decode.
    let reply =
        server.transcribe(&Form::new().file(&audio_fixture("bad_trunc100_mp3_cbr_128k.mp3")));
    assert_error(&reply, 400, "audio_decode_failed", Some("file"));
}

/// A valid wav with a bad response_format or an invalid context field (or a second file).
fn check_invalid_response_format_and_context_fields(server: &Server, wav: &[u8]) {
    let with_wav = || Form::new().file_bytes("a.wav", "audio/wav", wav.to_vec());

    // response_format other than json (before the context fields).
    for format in ["text", "srt", "verbose_json", "vtt", "JSON"] {
        let reply = server.transcribe(
            &with_wav()
                .text("response_format", format)
                .text("languages", "xx"),
        );
        assert_error(
            &reply,
            400,
            "unsupported_response_format",
            Some("response_format"),
        );
    }

    // Invalid context fields: invalid_request naming the field.
    for (field, value) in [
        ("messages", "not json"),
        ("messages", r#"{"role": "user", "content": "x"}"#),
        ("messages", r#"[{"role": "assistant", "content": "x"}]"#),
        ("messages", r#"[{"role": "user"}]"#),
        ("languages", "xx"),
        ("languages", "[]"),
        ("languages", r#"["en", "auto"]"#),
        ("languages", "[1]"),
        ("languages", r#""xx""#),
        ("dictionary", "[1, 2]"),
        ("dictionary", r#"{"term": "x"}"#),
        ("dictionary", "bad\u{7}term"),
        ("language", "klingon"),
        ("prompt", "nul \u{0} inside"),
        ("sounds_like", r#"["win"]"#),
        ("sounds_like", r#"{"Nguyen": "win"}"#),
        ("sounds_like", r#"{"Nguyen": ["win"]}"#),
    ] {
        let reply = server.transcribe(&with_wav().text(field, value));
        assert_error(&reply, 400, "invalid_request", Some(field));
    }
    // `sounds_like` keys must be dictionary terms; forms are words as said; and the
    // dictionary keeps the contract's form, strings only.
    for (dictionary, sounds_like) in [
        ("Nguyen", r#"{"Nguyen": ["win", 3]}"#),
        ("Nguyen", r#"{"Nguyen": ["w1n"]}"#),
        ("Nguyen", r#"{"nguyen": ["win"]}"#),
    ] {
        let form = with_wav()
            .text("dictionary", dictionary)
            .text("sounds_like", sounds_like);
        assert_error(
            &server.transcribe(&form),
            400,
            "invalid_request",
            Some("sounds_like"),
        );
    }
    let reply = server.transcribe(&with_wav().text("dictionary", r#"[{"Nguyen": ["win"]}]"#));
    assert_error(&reply, 400, "invalid_request", Some("dictionary"));
    let reply = server.transcribe(&with_wav().text("dictionary", "a").text("dictionary", "b"));
    assert_error(&reply, 400, "invalid_request", Some("dictionary"));
    let reply = server.transcribe(&with_wav().file_bytes("b.wav", "audio/wav", wav.to_vec()));
    assert_error(&reply, 400, "invalid_request", Some("file"));
}

/// Unknown paths answer 404, wrong methods 405 with `Allow`.
fn check_routing(server: &Server) {
    let reply = server.get("/v1/audio/translations");
    assert_error(&reply, 404, "not_found", None);
    let reply = server.get(TRANSCRIPTIONS);
    assert_error(&reply, 405, "method_not_allowed", None);
    assert_eq!(reply.header("allow"), Some("POST"));
    let reply = server.send("POST", "/health", &[], Some(("text/plain", b"")));
    assert_error(&reply, 405, "method_not_allowed", None);
    assert_eq!(reply.header("allow"), Some("GET"));
}

/// Health, and no authentication without keys (said at startup).
fn check_health_without_keys(server: &Server) {
    let health = server.health();
    assert_eq!(health["status"], "ok");
    assert_eq!(health["auth"], false);
    assert_eq!(health["model"], "ggml-tiny.en.bin");
    assert!(
        server
            .logs()
            .iter()
            .any(|l| l.contains("authentication disabled")),
        "{:?}",
        server.logs()
    );
}

#[test]
fn request_fields_and_openai_compatibility() {
    let server = start(&[], &[]);
    let clip = short_clip();

    // OpenAI's fields, unknown fields and every context field, with the file last.
    let form = Form::new()
        .text("timestamp_granularities[]", "word")
        .text("stream", "false")
        .text("model", "whisper-1")
        .text("temperature", "0")
        .text("response_format", "json")
        .text("prompt", "Directions in New York.")
        .text("language", "en")
        .text(
            "messages",
            r#"[{"role": "system", "content": "Travel notes."},
                {"role": "user", "content": [{"type": "text", "text": "Brooklyn"}], "name": "x"}]"#,
        )
        .text("languages", r#""en""#)
        .text("dictionary", r#"["Brooklyn Bridge", "Manhattan"]"#)
        .text("sounds_like", r#"{"Manhattan": ["man hatton"]}"#)
        .file(&clip);
    let text = assert_text(&server.transcribe(&form));
    assert!(text.to_lowercase().contains("brooklyn"), "{text}");

    // File first; a JSON array of languages; a comma-separated dictionary.
    let form = Form::new()
        .file(&clip)
        .text("languages", r#"["en"]"#)
        .text("dictionary", "Brooklyn Bridge, Manhattan");
    assert_text(&server.transcribe(&form));

    // What OpenAI's SDKs send for lists in extra_body.
    let form = Form::new()
        .file(&clip)
        .text("messages[][role]", "system")
        .text("messages[][role]", "user")
        .text("messages[][content]", "Travel notes.")
        .text("messages[][content]", "Directions.")
        .text("languages[]", "en")
        .text("dictionary[]", "Brooklyn Bridge")
        .text("dictionary[]", "Manhattan");
    assert_text(&server.transcribe(&form));

    // Empty fields mean "not given"; `auto`.
    let form = Form::new()
        .file(&clip)
        .text("messages", "")
        .text("languages", "auto")
        .text("dictionary", " ")
        .text("response_format", "")
        .text("prompt", "");
    assert_text(&server.transcribe(&form));
}

#[test]
fn a_truncated_upload_is_transcribed_and_says_so() {
    // The audio before the cut is transcribed; the header and the log line say the file
    // was cut, streamed or not; the body keeps the contract's shape.
    let server = start(&[], &[]);
    for name in [
        "bad_trunc50_wav_s16_16k_mono.wav",
        "bad_trunc50_webm_opus.webm",
        "bad_trunc50_ogg_opus.ogg",
        "bad_trunc50_mp3_cbr_128k.mp3",
        "bad_trunc50_m4a_aac_faststart.m4a",
    ] {
        let id = format!("trunc-{name}");
        let reply = server.transcribe_with(
            &Form::new().file(&audio_fixture(name)),
            &[("X-Request-Id", id.as_str())],
        );
        let text = assert_text(&reply);
        assert!(!text.is_empty(), "{name}: the audio before the cut");
        assert_eq!(
            reply.header("x-ctxscribe-warning"),
            Some("audio_truncated"),
            "{name}"
        );
        let lines = server.request_log(&id);
        assert_eq!(lines[0]["warnings"], "audio_truncated", "{name}: {lines:?}");
        // Streamed: the header comes with the answer's head, before the first event.
        let (content_type, body) = Form::new()
            .file(&audio_fixture(name))
            .text("stream", "true")
            .encode();
        let head = request_head(
            server.addr,
            "POST",
            TRANSCRIPTIONS,
            &[],
            Some((content_type.as_str(), body.as_slice())),
        );
        let mut stream = TcpStream::connect(server.addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(120)))
            .expect("timeout");
        stream.write_all(head.as_bytes()).expect("head");
        stream.write_all(&body).expect("body");
        let mut answer = Vec::new();
        let mut chunk = [0u8; 4096];
        while find(&answer, b"\r\n\r\n").is_none() {
            let read = stream.read(&mut chunk).expect("read the head");
            assert!(read > 0, "{name}: the answer ended before its head");
            answer.extend_from_slice(&chunk[..read]);
        }
        let head = String::from_utf8_lossy(&answer).to_lowercase();
        assert!(head.starts_with("http/1.1 200"), "{name}: {head}");
        assert!(
            head.contains("\r\nx-ctxscribe-warning: audio_truncated\r\n"),
            "{name}: {head}"
        );
    }
    let whole = server.transcribe(&jfk_form());
    assert_text(&whole);
    assert_eq!(whole.header("x-ctxscribe-warning"), None);
}

#[test]
fn one_log_line_per_request_without_audio_or_fields() {
    let server = start(&[], &[]);
    let secret_term = "Zyxwvutsrq";
    let form = jfk_form().text("dictionary", &format!(r#"["{secret_term}"]"#));
    let reply = server.transcribe_with(&form, &[("X-Request-Id", "e2e-log-1")]);
    assert_text(&reply);
    assert_eq!(reply.header("x-request-id"), Some("e2e-log-1"));
    let timing = reply.header("server-timing").expect("Server-Timing");
    assert!(
        timing.contains("decode;dur=") && timing.contains("engine;dur="),
        "{timing}"
    );

    let lines = server.request_log("e2e-log-1");
    assert_eq!(lines.len(), 1, "{lines:?}");
    let line = &lines[0];
    assert_eq!(line["status"], 200);
    assert_eq!(line["method"], "POST");
    assert_eq!(line["path"], TRANSCRIPTIONS);
    assert!((line["audio_secs"].as_f64().expect("audio_secs") - 11.0).abs() < 0.05);
    for stage in ["read_ms", "queue_ms", "decode_ms", "engine_ms", "total_ms"] {
        assert!(
            line[stage].as_f64().is_some_and(|v| v >= 0.0),
            "{stage}: {line}"
        );
    }
    assert!(line["engine_ms"].as_f64() <= line["total_ms"].as_f64());

    // An error: its code, a generated id, still one line.
    let reply = server.transcribe(&Form::new().text("dictionary", secret_term));
    assert_error(&reply, 400, "missing_file", Some("file"));
    let id = reply
        .header("x-request-id")
        .expect("a generated id")
        .to_owned();
    let lines = server.request_log(&id);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["status"], 400);
    assert_eq!(lines[0]["code"], "missing_file");

    let logs = server.logs().join("\n");
    assert!(!logs.contains(secret_term), "a field leaked into the logs");
    assert!(!logs.contains("RIFF"), "audio leaked into the logs");
}

// ---------------------------------------------------------------------------------------
// Authentication
// ---------------------------------------------------------------------------------------

#[test]
fn api_keys_in_either_header() {
    let dir = repo_root().join(format!("target/tmp/server-keys-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let key_file = dir.join("keys.txt");
    std::fs::write(&key_file, "# ops team\nsk-file-key-0003\n").expect("write key file");
    let server = start(
        &["--api-key-file", key_file.to_str().expect("utf-8 path")],
        &[("CTXSCRIBE_API_KEYS", "sk-env-key-0001, sk-env-key-0002")],
    );
    let cheap = Form::new().text("model", "whisper-1"); // passes auth, then missing_file

    // Missing or wrong keys: 401 before anything else.
    for headers in [
        &[][..],
        &[("Authorization", "Bearer sk-wrong")][..],
        &[("Authorization", "Bearer sk-env-key-000")][..],
        &[("Authorization", "Bearer sk-env-key-00011")][..],
        &[("Authorization", "Basic c2stZW52LWtleS0wMDAx")][..],
        &[("Authorization", "sk-env-key-0001")][..],
        &[("X-Api-Key", "sk-wrong")][..],
        &[("X-Api-Key", "")][..],
    ] {
        let reply = server.transcribe_with(&cheap, headers);
        assert_error(&reply, 401, "invalid_api_key", None);
        assert_eq!(reply.header("www-authenticate"), Some("Bearer"));
        assert!(!reply.text().contains("sk-env-key"), "{}", reply.text());
    }
    let reply = server.send(
        "POST",
        TRANSCRIPTIONS,
        &[],
        Some(("application/json", b"{}")),
    );
    assert_error(&reply, 401, "invalid_api_key", None);

    // Right keys, from the environment and the file, in both headers.
    for headers in [
        &[("Authorization", "Bearer sk-env-key-0001")][..],
        &[("Authorization", "bearer sk-env-key-0002")][..],
        &[("X-Api-Key", "sk-env-key-0001")][..],
        &[("X-Api-Key", "sk-file-key-0003")][..],
        &[("Authorization", "Bearer sk-file-key-0003")][..],
    ] {
        let reply = server.transcribe_with(&cheap, headers);
        assert_error(&reply, 400, "missing_file", Some("file"));
    }
    let reply = server.send(
        "POST",
        TRANSCRIPTIONS,
        &[("X-Api-Key", "sk-env-key-0002")],
        Some(("application/json", b"{}")),
    );
    assert_error(&reply, 415, "unsupported_media_type", None);
    let reply = server.transcribe_with(&jfk_form(), &[("X-Api-Key", "sk-file-key-0003")]);
    assert!(wer(JFK, &assert_text(&reply)) <= 0.1);
    let reply = server.transcribe_with(
        &Form::new().file(&short_clip()),
        &[("Authorization", "Bearer sk-env-key-0002")],
    );
    assert_text(&reply);

    // Health needs no key.
    assert_eq!(server.health()["auth"], true);

    let logs = server.logs().join("\n");
    assert!(logs.contains("authentication enabled"), "{logs}");
    for secret in ["sk-env-key", "sk-file-key", "sk-wrong", "c2stZW52"] {
        assert!(!logs.contains(secret), "{secret} leaked into the logs");
    }
    std::fs::remove_dir_all(&dir).expect("clean up");
}

// ---------------------------------------------------------------------------------------
// Limits
// ---------------------------------------------------------------------------------------

#[test]
fn upload_limits() {
    const LIMIT: usize = 1_000_000;
    let limit = LIMIT.to_string();
    let server = start(&["--max-file-bytes", &limit, "--max-audio-secs", "5"], &[]);
    let max_body = LIMIT + 4 * MIB;

    // A file part over the limit, found while streaming.
    let jfk_bytes = std::fs::metadata(jfk()).expect("jfk").len();
    assert!(jfk_bytes > LIMIT as u64);
    assert_error(
        &server.transcribe(&jfk_form()),
        413,
        "file_too_large",
        Some("file"),
    );
    // Under the limit: fine.
    assert_text(&server.transcribe(&Form::new().file(&short_clip())));
    // Small, but 11 s of audio with a 5 s limit.
    let reply = server.transcribe(&Form::new().file(&audio_fixture("ok_mp3_vbr_mono.mp3")));
    assert_error(&reply, 400, "audio_too_long", Some("file"));

    // A declared Content-Length over the limit: 413 at once, before any body byte.
    let head = |expect: bool| {
        format!(
            "POST {TRANSCRIPTIONS} HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; \
             boundary={BOUNDARY}\r\nContent-Length: {}\r\n{}\r\n",
            max_body + 1,
            if expect {
                "Expect: 100-continue\r\n"
            } else {
                ""
            }
        )
    };
    let reply = exchange(server.addr, head(false).as_bytes(), b"");
    assert_error(&reply, 413, "request_too_large", None);
    assert!(reply.took < Duration::from_secs(3), "{:?}", reply.took);
    let reply = exchange(server.addr, head(true).as_bytes(), b"");
    assert_error(&reply, 413, "request_too_large", None);
    assert!(
        reply.interim.is_empty(),
        "asked for the body: {:?}",
        reply.interim
    );
    // A large body under the limit reaches the form (which then lacks a file).
    assert_error(
        &server.transcribe(&Form::new().text("padding", &"x".repeat(MIB))),
        400,
        "missing_file",
        Some("file"),
    );

    // A text field over the server's 2 MiB field cap, and one under it but over the
    // library's 1 MiB dictionary limit.
    let reply = server.transcribe(&Form::new().text("dictionary", &"a,".repeat(MIB + 1)));
    assert_error(&reply, 413, "request_too_large", Some("dictionary"));
    let big = "term,".repeat(MIB * 3 / 2 / 5);
    let reply = server.transcribe(&Form::new().file(&short_clip()).text("dictionary", &big));
    assert_error(&reply, 400, "invalid_request", Some("dictionary"));

    // A chunked body (no Content-Length) over the whole-body limit: 413 while streaming.
    let mut form = Form::new();
    for i in 0..6 {
        form = form.text(&format!("extra{i}"), &"y".repeat(MIB));
    }
    let (content_type, body) = form.encode();
    assert!(body.len() > max_body);
    let mut chunked = Vec::new();
    for piece in body.chunks(64 * 1024) {
        chunked.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
        chunked.extend_from_slice(piece);
        chunked.extend_from_slice(b"\r\n");
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    let head = format!(
        "POST {TRANSCRIPTIONS} HTTP/1.1\r\nHost: x\r\nContent-Type: {content_type}\r\n\
         Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    );
    let reply = exchange(server.addr, head.as_bytes(), &chunked);
    assert_error(&reply, 413, "request_too_large", None);
}

#[test]
fn default_upload_limit_is_25_mib() {
    let server = start(&[], &[]);
    // A wav of 25 MiB + 1 byte (header included).
    let size = 25 * MIB + 1;
    let mut wav = wav_header(size - 44);
    wav.resize(size, 0);
    let reply = server.transcribe(&Form::new().file_bytes("big.wav", "audio/wav", wav));
    assert_error(&reply, 413, "file_too_large", Some("file"));
    let head = format!(
        "POST {TRANSCRIPTIONS} HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; \
         boundary=b\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        29 * MIB + 1
    );
    assert_error(
        &exchange(server.addr, head.as_bytes(), b""),
        413,
        "request_too_large",
        None,
    );
}

#[test]
fn slow_uploads_and_slow_transcriptions_time_out() {
    // The base model on one thread needs well over half a second for jfk.
    let base = model("ggml-base.bin");
    let server = start(
        &[
            "--model",
            base.to_str().expect("utf-8 path"),
            "--request-timeout",
            "0.5",
        ],
        &[],
    );
    // An upload that stalls: 408.
    let head = format!(
        "POST {TRANSCRIPTIONS} HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; \
         boundary={BOUNDARY}\r\nContent-Length: 1000\r\nConnection: close\r\n\r\n--{BOUNDARY}\r\n"
    );
    let reply = exchange(server.addr, head.as_bytes(), b"");
    assert_error(&reply, 408, "request_timeout", None);
    assert!(reply.took < Duration::from_secs(5), "{:?}", reply.took);

    // A transcription past the deadline: 502 at the deadline, and the engine stops.
    let reply = server.transcribe(&jfk_form());
    assert_error(&reply, 502, "transcription_failed", None);
    assert!(reply.took < Duration::from_secs(5), "{:?}", reply.took);
    let deadline = Instant::now() + Duration::from_secs(20);
    while server.health()["in_flight"] != 0 {
        assert!(Instant::now() < deadline, "the engine did not stop");
        std::thread::sleep(Duration::from_millis(50));
    }
}

// ---------------------------------------------------------------------------------------
// Load
// ---------------------------------------------------------------------------------------

#[test]
fn a_full_server_answers_503_with_retry_after() {
    let server = Arc::new(start(&["--max-concurrent", "1", "--max-queue", "1"], &[]));
    let form = Arc::new(jfk_form());
    let replies = {
        let server = Arc::clone(&server);
        in_parallel(8, move |_| server.transcribe(&form))
    };
    let ok = replies.iter().filter(|r| r.status == 200).count();
    let busy: Vec<&Reply> = replies.iter().filter(|r| r.status == 503).collect();
    assert_eq!(
        ok + busy.len(),
        8,
        "only 200 or 503: {:?}",
        replies.iter().map(|r| r.status).collect::<Vec<_>>()
    );
    assert!(ok >= 1 && !busy.is_empty(), "{ok} ok, {} busy", busy.len());
    let mut fastest_ok = Duration::MAX;
    for reply in &replies {
        if reply.status == 200 {
            assert!(wer(JFK, &assert_text(reply)) <= 0.1);
            fastest_ok = fastest_ok.min(reply.took);
        }
    }
    for reply in busy {
        assert_error(reply, 503, "server_busy", None);
        let retry: u64 = reply
            .header("retry-after")
            .and_then(|v| v.parse().ok())
            .expect("a Retry-After in seconds");
        assert!((1..=60).contains(&retry), "{retry}");
        // Refused at once, not after waiting for the engine.
        assert!(
            reply.took < fastest_ok,
            "{:?} >= {fastest_ok:?}",
            reply.took
        );
    }
    // Free again afterwards.
    assert_text(&server.transcribe(&Form::new().file(&short_clip())));
    let health = server.health();
    assert_eq!(
        (health["in_flight"].clone(), health["waiting"].clone()),
        (json!(0), json!(0))
    );
}

#[test]
fn queued_requests_wait_their_turn() {
    let server = Arc::new(start(&["--max-concurrent", "1", "--max-queue", "8"], &[]));
    let form = Arc::new(Form::new().file(&short_clip()));
    let replies = {
        let server = Arc::clone(&server);
        in_parallel(4, move |_| server.transcribe(&form))
    };
    for reply in &replies {
        assert!(!assert_text(reply).is_empty());
    }
}

#[test]
fn a_missing_model_stops_the_server_at_startup() {
    let Err((status, logs)) = launch(&["--model", "/nonexistent/ggml-model.bin"], &[]) else {
        panic!("the server started without its model");
    };
    assert!(status.is_some_and(|s| s.code() == Some(1)), "{status:?}");
    let logs = logs.join("\n");
    assert!(
        logs.contains("model") && logs.contains("make setup"),
        "{logs}"
    );

    let Err((status, logs)) = launch(&["--port", "not-a-port"], &[]) else {
        panic!("the server started with a bad port");
    };
    assert!(status.is_some_and(|s| s.code() == Some(2)), "{status:?}");
    assert!(logs.join("\n").contains("--port"), "{logs:?}");
}

#[test]
fn sigterm_finishes_the_requests_in_flight() {
    let mut server = start(&[], &[]);
    let addr = server.addr;
    let (content_type, body) = jfk_form().encode();
    let in_flight = std::thread::spawn(move || {
        let head = format!(
            "POST {TRANSCRIPTIONS} HTTP/1.1\r\nHost: x\r\nContent-Type: {content_type}\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        exchange(addr, head.as_bytes(), &body)
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    while server.health()["in_flight"] != 1 {
        assert!(Instant::now() < deadline, "the request never started");
        std::thread::sleep(Duration::from_millis(10));
    }
    let status = Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .expect("run kill");
    assert!(status.success());

    let reply = in_flight.join().expect("request thread");
    assert!(wer(JFK, &assert_text(&reply)) <= 0.1);
    let exit = server.wait_exit(Duration::from_secs(30));
    assert!(exit.success(), "{exit}");
    assert!(
        TcpStream::connect(addr).is_err(),
        "still accepting after shutdown"
    );
    let logs = server.logs().join("\n");
    assert!(logs.contains("shutting down"), "{logs}");
    assert!(logs.contains("all requests finished"), "{logs}");
}

// ---------------------------------------------------------------------------------------
// Hostile input (issue 7): every case gets a bounded, typed answer, the server stays up
// and its memory returns to where it was
// ---------------------------------------------------------------------------------------

/// The resident set of a process, from /proc (Linux), in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("read /proc status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc/<pid>/status")
}

/// The offset of `name`'s payload in a RIFF file (after its 8-byte chunk header).
fn riff_chunk(bytes: &[u8], name: &[u8; 4]) -> usize {
    let mut at = 12;
    while at + 8 <= bytes.len() {
        let size = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().expect("4 bytes")) as usize;
        if &bytes[at..at + 4] == name {
            return at + 8;
        }
        at += 8 + size + (size & 1);
    }
    panic!("no {:?} chunk", String::from_utf8_lossy(name))
}

/// The short clip (a wav) with `patch` applied to its bytes.
fn patched_wav(patch: impl Fn(&mut Vec<u8>)) -> Vec<u8> {
    let mut wav = std::fs::read(short_clip()).expect("read the short clip");
    patch(&mut wav);
    wav
}

/// A fragmented MP4 whose every `trun` box claims 0xFFFFFFFF samples.
fn fmp4_with_huge_sample_counts() -> Vec<u8> {
    let mut bytes =
        std::fs::read(audio_fixture("ok_m4a_aac_fragmented.m4a")).expect("read the fMP4 fixture");
    let mut patched = 0;
    let mut at = 0;
    while let Some(found) = find(&bytes[at..], b"trun") {
        let count = at + found + 8; // type, then version + flags, then sample_count
        bytes[count..count + 4].copy_from_slice(&u32::MAX.to_be_bytes());
        patched += 1;
        at = count + 4;
    }
    assert!(patched > 0, "no trun box in the fragmented fixture");
    bytes
}

/// One hostile request and the answer it must get.
struct Hostile {
    case: &'static str,
    form: Form,
    status: u16,
    code: &'static str,
    param: Option<&'static str>,
}

fn hostile(
    case: &'static str,
    form: Form,
    status: u16,
    code: &'static str,
    param: Option<&'static str>,
) -> Hostile {
    Hostile {
        case,
        form,
        status,
        code,
        param,
    }
}

/// A form whose `file` part is `wav`.
fn wav_form(wav: &[u8]) -> Form {
    Form::new().file_bytes("a.wav", "audio/wav", wav.to_vec())
}

fn hostile_cases() -> Vec<Hostile> {
    let wav = std::fs::read(short_clip()).expect("read clip");
    let mut cases = duration_bomb_cases();
    cases.extend(lying_size_cases());
    cases.extend(lying_format_cases());
    cases.extend(oversized_field_cases(&wav));
    cases.extend(malformed_field_cases(&wav));
    cases
}

/// Duration bombs: 2 h of silence in ~2 MB (default 3600 s limit).
fn duration_bomb_cases() -> Vec<Hostile> {
    let fixture = |name: &str| Form::new().file(&audio_fixture(name));
    vec![
        hostile(
            "2 h of silence, Ogg Opus (1.9 MB)",
            fixture("bomb_silence_2h_opus.ogg"),
            400,
            "audio_too_long",
            Some("file"),
        ),
        hostile(
            "2 h of silence, WebM Opus (2.0 MB)",
            fixture("bomb_silence_2h_opus.webm"),
            400,
            "audio_too_long",
            Some("file"),
        ),
        hostile(
            "2 h of silence, FLAC (1.3 MB)",
            fixture("bomb_silence_2h.flac"),
            400,
            "unsupported_audio_type",
            Some("file"),
        ),
    ]
}

/// Lying headers: wav chunk sizes that claim 4 GiB.
fn lying_size_cases() -> Vec<Hostile> {
    vec![
        hostile(
            "wav whose data chunk claims 4 GiB",
            Form::new().file_bytes(
                "a.wav",
                "audio/wav",
                patched_wav(|w| {
                    let data = riff_chunk(w, b"data");
                    w[data - 4..data].copy_from_slice(&u32::MAX.to_le_bytes());
                }),
            ),
            400,
            "audio_decode_failed",
            Some("file"),
        ),
        // What streaming recorders write: both sizes 0xFFFFFFFF, the real data shorter.
        hostile(
            "wav whose RIFF and data sizes claim 4 GiB",
            Form::new().file_bytes(
                "a.wav",
                "audio/wav",
                patched_wav(|w| {
                    let data = riff_chunk(w, b"data");
                    w[data - 4..data].copy_from_slice(&u32::MAX.to_le_bytes());
                    w[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
                }),
            ),
            200,
            "",
            None,
        ),
        hostile(
            "wav whose RIFF size claims 4 GiB",
            Form::new().file_bytes(
                "a.wav",
                "audio/wav",
                patched_wav(|w| w[4..8].copy_from_slice(&u32::MAX.to_le_bytes())),
            ),
            200,
            "",
            None,
        ),
    ]
}

/// Lying headers: impossible wav formats and fMP4 sample counts.
fn lying_format_cases() -> Vec<Hostile> {
    vec![
        hostile(
            "wav declaring 0 channels",
            Form::new().file_bytes(
                "a.wav",
                "audio/wav",
                patched_wav(|w| {
                    let fmt = riff_chunk(w, b"fmt ");
                    w[fmt + 2..fmt + 4].copy_from_slice(&0u16.to_le_bytes());
                }),
            ),
            400,
            "audio_decode_failed",
            Some("file"),
        ),
        hostile(
            "wav declaring a 0 Hz sample rate",
            Form::new().file_bytes(
                "a.wav",
                "audio/wav",
                patched_wav(|w| {
                    let fmt = riff_chunk(w, b"fmt ");
                    w[fmt + 4..fmt + 8].copy_from_slice(&0u32.to_le_bytes());
                }),
            ),
            400,
            "audio_decode_failed",
            Some("file"),
        ),
        hostile(
            "wav declaring 4 GHz",
            Form::new().file_bytes(
                "a.wav",
                "audio/wav",
                patched_wav(|w| {
                    let fmt = riff_chunk(w, b"fmt ");
                    w[fmt + 4..fmt + 8].copy_from_slice(&u32::MAX.to_le_bytes());
                }),
            ),
            400,
            "audio_decode_failed",
            Some("file"),
        ),
        hostile(
            "fragmented MP4, every trun claiming 0xFFFFFFFF samples",
            Form::new().file_bytes("a.m4a", "audio/mp4", fmp4_with_huge_sample_counts()),
            400,
            "audio_decode_failed",
            Some("file"),
        ),
    ]
}

/// Hostile JSON and text fields: too deep, too long, too many.
fn oversized_field_cases(wav: &[u8]) -> Vec<Hostile> {
    let mut many_items = wav_form(wav);
    for i in 0..100_000 {
        many_items = many_items.text("dictionary[]", &format!("t{i}"));
    }
    let hundred_k_terms: Vec<String> = (0..100_000).map(|i| format!("term{i}")).collect();
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let huge_messages = json!([{"role": "user", "content": "x".repeat(MIB)}]).to_string();
    let long_messages = json!(
        (0..1000)
            .map(|_| json!({"role": "user", "content": "y".repeat(200)}))
            .collect::<Vec<_>>()
    )
    .to_string();
    vec![
        hostile(
            "messages nested 100,000 deep",
            wav_form(wav).text("messages", &deep),
            400,
            "invalid_request",
            Some("messages"),
        ),
        hostile(
            "messages of 1 MiB (limit 256 KiB)",
            wav_form(wav).text("messages", &huge_messages),
            400,
            "invalid_request",
            Some("messages"),
        ),
        hostile(
            "1000 messages",
            wav_form(wav).text("messages", &long_messages),
            400,
            "invalid_request",
            Some("messages"),
        ),
        hostile(
            "messages of 3 MiB (over the 2 MiB field cap)",
            wav_form(wav).text("messages", &"[".repeat(3 * MIB)),
            413,
            "request_too_large",
            Some("messages"),
        ),
        hostile(
            "100,000 dictionary terms, comma list",
            wav_form(wav).text("dictionary", &hundred_k_terms.join(",")),
            400,
            "invalid_request",
            Some("dictionary"),
        ),
        hostile(
            "100,000 dictionary terms, JSON array",
            wav_form(wav).text("dictionary", &json!(hundred_k_terms).to_string()),
            400,
            "invalid_request",
            Some("dictionary"),
        ),
        hostile(
            "100,000 dictionary[] fields",
            many_items,
            400,
            "invalid_request",
            Some("dictionary"),
        ),
    ]
}

/// Hostile JSON and text fields: bad bytes and bad values; then multipart framing.
fn malformed_field_cases(wav: &[u8]) -> Vec<Hostile> {
    vec![
        hostile(
            "messages not UTF-8",
            wav_form(wav).raw(
                "messages",
                b"[{\"role\":\"user\",\"content\":\"\xff\xfe\"}]".to_vec(),
            ),
            400,
            "invalid_request",
            Some("messages"),
        ),
        hostile(
            "dictionary not UTF-8",
            wav_form(wav).raw("dictionary", b"caf\xc3".to_vec()),
            400,
            "invalid_request",
            Some("dictionary"),
        ),
        hostile(
            "NUL bytes in dictionary",
            wav_form(wav).raw("dictionary", b"kube\0ctl,helm".to_vec()),
            400,
            "invalid_request",
            Some("dictionary"),
        ),
        hostile(
            "NUL escaped in messages JSON",
            wav_form(wav).text("messages", r#"[{"role":"user","content":"a\u0000b"}]"#),
            400,
            "invalid_request",
            Some("messages"),
        ),
        hostile(
            "NUL bytes in languages",
            wav_form(wav).raw("languages", b"de\0en".to_vec()),
            400,
            "invalid_request",
            Some("languages"),
        ),
        hostile(
            "NUL bytes as the file",
            Form::new().file_bytes("a.wav", "audio/wav", vec![0; 4096]),
            400,
            "unsupported_audio_type",
            Some("file"),
        ),
        hostile(
            "stream neither true nor false",
            wav_form(wav).text("stream", "yes please"),
            400,
            "invalid_request",
            Some("stream"),
        ),
        hostile(
            "stream of 1 MiB",
            wav_form(wav).text("stream", &"true".repeat(MIB / 4)),
            400,
            "invalid_request",
            Some("stream"),
        ),
        // Multipart framing.
        hostile(
            "two file parts",
            wav_form(wav).file_bytes("b.wav", "audio/wav", wav.to_vec()),
            400,
            "invalid_request",
            Some("file"),
        ),
    ]
}

#[test]
fn hostile_input_gets_bounded_typed_answers_and_memory_returns_to_baseline() {
    let server = start(&[], &[]);
    let pid = server.child.id();
    let cases = hostile_cases();
    // Streaming clients of a 39 s clip (several deltas).
    let long = sse::joined_clip(
        "hostile-39s",
        &[
            "en_whisper_jfk",
            "en_picovoice_quilter",
            "en_ls_file_1221-135766-0001",
            "en_fw_stereo_left",
        ],
    );
    let run_round = |round: usize| {
        check_hostile_cases(&server, &cases, round);
        check_raw_framing_errors(&server);
        check_endless_part_header(&server);
        check_abandoned_streams(&server, &long);
    };

    // Round 0 warms the allocator; the baseline is taken after it.
    run_round(0);
    let baseline = rss_kib(pid);
    for round in 1..=2 {
        run_round(round);
    }
    let after = rss_kib(pid);
    eprintln!("hostile: server RSS {baseline} KiB after round 0, {after} KiB after 2 more rounds");
    let logs = server.logs();
    let cancelled = logs
        .iter()
        .filter(|l| l.contains("transcription cancelled"));
    eprintln!(
        "hostile: {} streams cancelled by a hang-up",
        cancelled.count()
    );
    // Every round sends ~40 MB; a leak of any request's body or decoded audio would show.
    assert!(
        after <= baseline + 64 * 1024,
        "RSS grew from {baseline} KiB to {after} KiB"
    );
    let health = server.health();
    assert_eq!(
        (health["in_flight"].clone(), health["waiting"].clone()),
        (json!(0), json!(0))
    );
    assert_text(&server.transcribe(&Form::new().file(&short_clip())));
}

/// Every hostile case gets its expected answer (printed in round 0).
fn check_hostile_cases(server: &Server, cases: &[Hostile], round: usize) {
    for case in cases {
        let reply = server.transcribe(&case.form);
        if case.status == 200 {
            assert_eq!(reply.status, 200, "{}: {}", case.case, reply.text());
            assert_text(&reply);
        } else {
            assert_error(&reply, case.status, case.code, case.param);
        }
        if round == 0 {
            eprintln!(
                "hostile: {:<58} -> {} {}",
                case.case, reply.status, case.code
            );
        }
    }
}

/// Raw framing errors that the Form builder cannot express.
fn check_raw_framing_errors(server: &Server) {
    // (content type, body, status, code, param)
    type RawCase = (
        &'static str,
        &'static [u8],
        u16,
        &'static str,
        Option<&'static str>,
    );
    let raw_cases: [RawCase; 4] = [
        (
            "multipart/form-data; boundary=b",
            b"--b\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\nRIFF",
            400,
            "invalid_multipart",
            None,
        ),
        (
            "multipart/form-data; boundary=b",
            b"--b\r\nContent-Disposition: form-data\r\n\r\nx\r\n--b--\r\n",
            400,
            "missing_file",
            Some("file"),
        ),
        (
            "multipart/form-data; boundary=b",
            b"--b\r\n\r\n\r\n--b--\r\n",
            400,
            "invalid_multipart",
            None,
        ),
        (
            "multipart/form-data; boundary=",
            b"--\r\n\r\n",
            400,
            "invalid_multipart",
            None,
        ),
    ];
    for (content_type, body, status, code, param) in raw_cases {
        let reply = server.send("POST", TRANSCRIPTIONS, &[], Some((content_type, body)));
        assert_error(&reply, status, code, param);
    }
}

/// A part whose headers go on for 1 MiB: multer buffers them (bounded by the body
/// limit), then the 4-byte "file" does not decode.
fn check_endless_part_header(server: &Server) {
    let mut body = b"--b\r\nContent-Disposition: form-data; name=\"file\"\r\nX-Pad: ".to_vec();
    body.resize(body.len() + MIB, b'a');
    body.extend_from_slice(b"\r\n\r\nRIFF\r\n--b--\r\n");
    let reply = server.send(
        "POST",
        TRANSCRIPTIONS,
        &[],
        Some(("multipart/form-data; boundary=b", &body)),
    );
    assert_error(&reply, 400, "audio_decode_failed", Some("file"));
}

/// Streaming clients of `long`: one that reads nothing until its transcription is over,
/// then hangs up; one that hangs up after the first delta.
fn check_abandoned_streams(server: &Server, long: &Path) {
    let unread = sse::send(server, long, &[("stream", "true")]);
    server.wait_for_places(1, 0, Duration::from_secs(60), "an unread stream starts");
    server.wait_for_places(0, 0, Duration::from_secs(120), "an unread stream ends");
    drop(unread);
    let mut hangs_up = sse::send(server, long, &[("stream", "true")]);
    assert!(sse::read_until(&mut hangs_up, b"transcript.text.delta"));
    drop(hangs_up);
    server.wait_for_places(0, 0, Duration::from_secs(60), "a stream hung up mid-way");
}

/// Sends `head` then `body` one byte every `every`, until the server answers or closes.
fn drip(addr: SocketAddr, head: &[u8], body: &[u8], every: Duration) -> Reply {
    let started = Instant::now();
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .expect("timeout");
    let _ = stream.write_all(head);
    let mut reader = stream.try_clone().expect("clone the stream");
    let (done, finished) = mpsc::channel();
    let body = body.to_vec();
    let writer = std::thread::spawn(move || {
        for byte in body {
            if finished.try_recv().is_ok() || stream.write_all(&[byte]).is_err() {
                break;
            }
            std::thread::sleep(every);
        }
    });
    let reply = read_reply(&mut reader, started);
    let _ = done.send(());
    writer.join().expect("writer");
    reply
}

#[test]
fn slow_drip_uploads_and_clients_that_hang_up() {
    // A short request timeout for the drip; the rest on a server with the default.
    let impatient = start(&["--request-timeout", "3"], &[]);
    let server = start(&["--max-concurrent", "1"], &[]);
    let (content_type, body) = Form::new().file(&short_clip()).encode();
    let head = format!(
        "POST {TRANSCRIPTIONS} HTTP/1.1\r\nHost: x\r\nContent-Type: {content_type}\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );

    // Slowloris on the body: a byte every 50 ms keeps the connection busy, but the
    // request timeout (from the first byte) ends it with 408.
    let reply = drip(
        impatient.addr,
        head.as_bytes(),
        &body,
        Duration::from_millis(50),
    );
    assert_error(&reply, 408, "request_timeout", None);

    // Slowloris on the headers, 50 connections at once: the server still answers others.
    let dribblers: Vec<TcpStream> = (0..50)
        .map(|_| {
            let mut s = TcpStream::connect(server.addr).expect("connect");
            s.write_all(b"POST /v1/audio/transcriptions HTTP/1.1\r\nHost: x\r\nX-Slow: ")
                .expect("write");
            s
        })
        .collect();
    assert_text(&server.transcribe(&Form::new().file(&short_clip())));
    assert_eq!(server.health()["waiting"], 0);
    drop(dribblers);

    // A client that disconnects mid-upload: its place is freed.
    for _ in 0..5 {
        let mut stream = TcpStream::connect(server.addr).expect("connect");
        stream.write_all(head.as_bytes()).expect("head");
        stream
            .write_all(&body[..body.len() / 2])
            .expect("half the body");
        drop(stream);
    }
    // Their places are freed (the server notices the hang-ups asynchronously).
    server.wait_for_places(
        0,
        0,
        Duration::from_secs(60),
        "hung-up uploads still hold places",
    );
    // A client that disconnects mid-transcription: its transcription is cancelled at the
    // engine's next step and frees its slot; nothing is left running.
    let (content_type, jfk_body) = jfk_form().encode();
    let jfk_head = format!(
        "POST {TRANSCRIPTIONS} HTTP/1.1\r\nHost: x\r\nContent-Type: {content_type}\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        jfk_body.len()
    );
    let mut stream = TcpStream::connect(server.addr).expect("connect");
    stream.write_all(jfk_head.as_bytes()).expect("head");
    stream.write_all(&jfk_body).expect("body");
    // Generous: other tests of this binary load the CPU at the same time.
    let deadline = Instant::now() + Duration::from_secs(120);
    while server.health()["in_flight"] != 1 {
        if Instant::now() >= deadline {
            // Say what the server answered instead, if anything.
            let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
            let mut reply = Vec::new();
            let _ = stream.read_to_end(&mut reply);
            panic!(
                "the transcription never started; the server said: {}",
                String::from_utf8_lossy(&reply)
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    drop(stream);
    server.wait_for_places(0, 0, Duration::from_secs(30), "a slot stayed taken");
    // Still serving.
    assert_text(&server.transcribe(&Form::new().file(&short_clip())));
}

#[test]
fn sigterm_under_load_finishes_the_queue_and_refuses_new_requests() {
    let mut server = start(&["--max-concurrent", "1", "--max-queue", "8"], &[]);
    let addr = server.addr;
    let (content_type, body) = jfk_form().encode();
    let head = format!(
        "POST {TRANSCRIPTIONS} HTTP/1.1\r\nHost: x\r\nContent-Type: {content_type}\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let request = Arc::new((head, body));
    let clients: Vec<_> = (0..4)
        .map(|_| {
            let request = Arc::clone(&request);
            std::thread::spawn(move || exchange(addr, request.0.as_bytes(), &request.1))
        })
        .collect();
    // One transcribing, the others admitted and waiting for the engine.
    server.wait_for_places(1, 3, Duration::from_secs(60), "the load never built up");
    let status = Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .expect("run kill");
    assert!(status.success());

    // New requests are refused: no connection, or a 503 (health says draining), never
    // a transcription.
    std::thread::sleep(Duration::from_millis(200));
    if let Ok(mut stream) = TcpStream::connect(addr) {
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .expect("timeout");
        let _ = stream.write_all(request.0.as_bytes());
        let _ = stream.write_all(&request.1);
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer);
        let answer = String::from_utf8_lossy(&answer);
        assert!(
            answer.is_empty() || answer.starts_with("HTTP/1.1 503"),
            "a new request was served while draining: {answer}"
        );
    }
    // Every request admitted before the signal is transcribed.
    for client in clients {
        let reply = client.join().expect("client thread");
        assert!(wer(JFK, &assert_text(&reply)) <= 0.1);
    }
    let exit = server.wait_exit(Duration::from_secs(60));
    assert!(exit.success(), "{exit}");
    let logs = server.logs().join("\n");
    assert!(logs.contains("all requests finished"), "{logs}");
}

#[test]
fn api_key_edge_cases() {
    let server = start(
        &[],
        &[("CTXSCRIBE_API_KEYS", "  sk-padded-0001  ,sk-second-0002")],
    );
    let cheap = Form::new().text("model", "whisper-1"); // passes auth, then missing_file
    let refused: &[&[(&str, &str)]] = &[
        // The key in a header the server does not read.
        &[("Api-Key", "sk-padded-0001")],
        &[("X-Auth-Token", "sk-padded-0001")],
        &[("Proxy-Authorization", "Bearer sk-padded-0001")],
        &[("Authorization", "Token sk-padded-0001")],
        &[("Authorization", "sk-padded-0001")],
        // Empty keys.
        &[("Authorization", "Bearer")],
        &[("Authorization", "Bearer   ")],
        &[("X-Api-Key", "   ")],
        // The configured key with its padding, or cut, or with inner whitespace.
        &[("X-Api-Key", "sk-padded-0001x")],
        &[("X-Api-Key", "sk-padded- 0001")],
        &[("Authorization", "Bearer sk-padded-000")],
        // Several guesses in one request.
        &[
            ("Authorization", "Bearer sk-guess-1"),
            ("Authorization", "Bearer sk-second-0002"),
        ],
        &[("X-Api-Key", "sk-guess-2"), ("X-Api-Key", "sk-padded-0001")],
    ];
    for headers in refused {
        let reply = server.transcribe_with(&cheap, headers);
        assert_error(&reply, 401, "invalid_api_key", None);
    }
    // Configured with padding, presented with or without it: the same key.
    for headers in [
        &[("X-Api-Key", "sk-padded-0001")][..],
        &[("X-Api-Key", "  sk-padded-0001  ")][..],
        &[("Authorization", "Bearer    sk-padded-0001 ")][..],
        &[("Authorization", "BEARER sk-second-0002")][..],
        // Both headers, one right: allowed (a proxy may add the other).
        &[
            ("Authorization", "Bearer sk-wrong"),
            ("X-Api-Key", "sk-second-0002"),
        ][..],
    ] {
        let reply = server.transcribe_with(&cheap, headers);
        assert_error(&reply, 400, "missing_file", Some("file"));
    }
    let logs = server.logs().join("\n");
    for secret in ["sk-padded", "sk-second", "sk-guess", "sk-wrong"] {
        assert!(!logs.contains(secret), "{secret} leaked into the logs");
    }
}

// ---------------------------------------------------------------------------------------
// The official OpenAI Python SDK
// ---------------------------------------------------------------------------------------

#[test]
fn openai_python_sdk() {
    let python = test_venv_python();
    let server = start(&[], &[("CTXSCRIBE_API_KEYS", "sk-sdk-test-key")]);
    let output = Command::new(&python)
        .arg(repo_root().join("tests/openai_sdk_client.py"))
        .arg(format!("http://{}/v1", server.addr))
        .arg("sk-sdk-test-key")
        .arg(jfk())
        .output()
        .expect("run tests/openai_sdk_client.py");
    assert!(
        output.status.success(),
        "the SDK client failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let results: Value = serde_json::from_slice(&output.stdout).expect("JSON from the client");

    for case in ["dictionary", "context", "tuple_file", "sounds_like"] {
        let text = results[case]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("{case}: {results}"));
        assert!(wer(JFK, text) <= 0.1, "{case}: {text}");
    }
    let errors = [
        (
            "text_format",
            400,
            "unsupported_response_format",
            json!("response_format"),
        ),
        ("bad_languages", 400, "invalid_request", json!("languages")),
        (
            "bad_sounds_like",
            400,
            "invalid_request",
            json!("sounds_like"),
        ),
        ("bad_key", 401, "invalid_api_key", Value::Null),
        ("no_file_type", 400, "unsupported_audio_type", json!("file")),
    ];
    for (case, status, code, param) in errors {
        let error = &results[case];
        assert_eq!(error["status"], status, "{case}: {error}");
        assert_eq!(error["code"], code, "{case}: {error}");
        assert_eq!(error["param"], param, "{case}: {error}");
        assert_eq!(
            error["keys"],
            json!(["code", "message", "param", "type"]),
            "{case}: {error}"
        );
    }
}

// ---------------------------------------------------------------------------------------
// Latency (a benchmark, not a test)
// ---------------------------------------------------------------------------------------

fn p50(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// A stage's duration from the reply's `Server-Timing` header.
fn server_timing(reply: &Reply, stage: &str) -> Duration {
    let header = reply.header("server-timing").expect("Server-Timing");
    let ms: f64 = header
        .split(',')
        .find_map(|part| part.trim().strip_prefix(&format!("{stage};dur=")))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {stage} in {header}"));
    Duration::from_secs_f64(ms / 1e3)
}

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// p50 latency of jfk.wav over HTTP (a fresh connection, upload, queue, decode, engine,
/// answer) against a direct `transcribe_blocking` call on the same bytes, same model and
/// threads. Runs alternate between the two, after one warm-up each, so that load from
/// elsewhere on the machine hits both alike. `CTXSCRIBE_BENCH_RUNS` (default 7) and
/// `CTXSCRIBE_BENCH_THREADS` (default: all cores) change the setup.
#[test]
#[ignore = "benchmark: cargo test --release --features server --test server -- --ignored --nocapture"]
fn latency_http_vs_library() {
    let runs = env_number("CTXSCRIBE_BENCH_RUNS", 7);
    let threads = env_number(
        "CTXSCRIBE_BENCH_THREADS",
        std::thread::available_parallelism().map_or(1, usize::from),
    );
    let base = model("ggml-base.bin");
    let bytes = std::fs::read(jfk()).expect("read jfk");
    let transcriber = ctxscribe::ContextTranscriber::builder()
        .with_model_path(&base)
        .with_threads(threads)
        .build()
        .expect("load base");
    let server = start(
        &[
            "--model",
            base.to_str().expect("utf-8 path"),
            "--threads",
            &threads.to_string(),
        ],
        &[],
    );
    let form = jfk_form();

    let (mut library, mut http) = (Vec::new(), Vec::new());
    // Wall time minus the decode and engine stages: what the call itself costs.
    let (mut library_extra, mut http_extra) = (Vec::new(), Vec::new());
    for run in 0..=runs {
        let started = Instant::now();
        let transcript = transcriber
            .transcribe_blocking(
                bytes.clone().into(),
                vec![],
                ctxscribe::Languages::Auto,
                ctxscribe::Dictionary::default(),
            )
            .expect("transcribe");
        let library_took = started.elapsed();
        assert!(wer(JFK, &transcript.text) <= 0.1, "{}", transcript.text);

        let reply = server.transcribe(&form);
        assert!(wer(JFK, &assert_text(&reply)) <= 0.1);
        let stages = server_timing(&reply, "decode") + server_timing(&reply, "engine");
        if run > 0 {
            library.push(library_took);
            library_extra
                .push(library_took - transcript.timings.decode - transcript.timings.engine);
            http.push(reply.took);
            http_extra.push(reply.took.saturating_sub(stages));
        }
    }
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "library ms: {:?}",
        library.iter().map(|d| ms(*d).round()).collect::<Vec<_>>()
    );
    println!(
        "http ms:    {:?}",
        http.iter().map(|d| ms(*d).round()).collect::<Vec<_>>()
    );
    println!(
        "outside decode + engine, p50: library {:.2} ms, HTTP {:.2} ms",
        ms(p50(library_extra)),
        ms(p50(http_extra))
    );
    let (library, http) = (p50(library), p50(http));
    println!(
        "jfk.wav (11 s), ggml-base, {threads} threads, {runs} runs each after a warm-up: \
         p50 library {:.0} ms, p50 HTTP {:.0} ms, difference {:+.1} ms",
        ms(library),
        ms(http),
        ms(http) - ms(library)
    );
}
