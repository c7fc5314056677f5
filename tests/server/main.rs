//! End-to-end tests of the reference HTTP server (`ctxscribe::server`, as the
//! `ctxscribe-server` binary): the compiled server on a free loopback port, real audio,
//! the real engine (English tiny for speed, base where the timing matters), and a raw
//! HTTP/1.1 client (`client.rs`) so every byte on the wire is under the test's control:
//! the contract (`contract.rs`), authentication (`auth.rs`), limits and load
//! (`limits.rs`), hostile input (`hostile.rs`), and the official OpenAI Python SDK
//! (`sdk.rs`).
//!
//! The server is the `ctxscribe-server` binary Cargo builds for the tests
//! (`tests/common/server.rs` starts it). The SDK test needs the virtual environment made
//! by `scripts/setup-test-venv.sh` (`make setup` runs it).

#[path = "../common/mod.rs"]
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

mod auth;
mod client;
mod contract;
mod hostile;
mod limits;
mod sdk;

use client::*;

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
