//! A raw HTTP/1.1 client for the tests of the server for applications
//! (tests/server_apps.rs, tests/server_streaming.rs): requests on a fresh connection,
//! multipart transcription forms, server-sent events.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use super::real_clip;
use super::server::Server;

/// The transcription endpoint.
pub const TRANSCRIPTIONS: &str = "/v1/audio/transcriptions";
/// What jfk says.
pub const JFK: &str = "And so my fellow Americans, ask not what your country can do for you, ask \
                   what you can do for your country.";
/// The API key the tests start servers with (`CTXSCRIBE_API_KEYS`).
pub const KEY: &str = "sk-apps-test-key";

/// The jfk clip of ../shared/eval/real.
pub fn jfk() -> PathBuf {
    real_clip("en_whisper_jfk").path
}

/// One answer, read to the end of a `Connection: close` exchange.
#[derive(Debug)]
pub struct Answer {
    /// The status code.
    pub status: u16,
    /// The status line and the headers.
    pub head: String,
    /// The body, de-chunked.
    pub body: String,
}

impl Answer {
    /// The body as JSON; panics when it is not.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("{} is not JSON ({e}): {}", self.status, self.body))
    }

    /// The value of the header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.head.split("\r\n").skip(1).find_map(|line| {
            let (n, v) = line.split_once(':')?;
            n.trim().eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }

    /// The OpenAI-style error body's `error.code`.
    pub fn error_code(&self) -> Value {
        self.json()["error"]["code"].clone()
    }
}

/// The head of a `Connection: close` request: the request line, `Host`, `headers`, and
/// for a body its `Content-Type` and `Content-Length`.
pub fn request_head(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<(&str, &[u8])>,
) -> String {
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if let Some((content_type, bytes)) = body {
        head.push_str(&format!(
            "Content-Type: {content_type}\r\nContent-Length: {}\r\n",
            bytes.len()
        ));
    }
    head.push_str("Connection: close\r\n\r\n");
    head
}

/// One request on a fresh connection (`Connection: close`), its answer read to the end.
pub fn http(
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
    let head = request_head(addr, method, path, headers, body);
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
pub fn transcribe(
    server: &Server,
    file: &Path,
    fields: &[(&str, &str)],
    key: Option<&str>,
) -> Answer {
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
pub fn multipart(file: &Path, fields: &[(&str, &str)]) -> (String, Vec<u8>) {
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
pub fn events(body: &str) -> Vec<Value> {
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
