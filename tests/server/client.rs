//! A raw HTTP/1.1 client and the multipart forms the tests send.

use super::*;

#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
    /// Interim (1xx) statuses received before the final one.
    pub(crate) interim: Vec<u16>,
    /// How long until the final reply was complete.
    pub(crate) took: Duration,
}

impl Reply {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub(crate) fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("reply {} is not JSON ({e}): {}", self.status, self.text()))
    }
}

/// Sends `head` and `body` on a new connection and reads one reply. A server that
/// answers early may stop reading, so a failed write is not an error here.
pub(crate) fn exchange(addr: SocketAddr, head: &[u8], body: &[u8]) -> Reply {
    let started = Instant::now();
    let mut stream = TcpStream::connect(addr).expect("connect to the server");
    stream
        .set_read_timeout(Some(Duration::from_secs(300)))
        .expect("set a read timeout");
    let _ = stream.write_all(head).and_then(|()| stream.write_all(body));
    read_reply(&mut stream, started)
}

pub(crate) fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Reads one reply, skipping `100 Continue`; the body is as long as Content-Length says.
pub(crate) fn read_reply(stream: &mut TcpStream, started: Instant) -> Reply {
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
pub(crate) struct Form {
    parts: Vec<Part>,
}

#[derive(Debug, Clone)]
struct Part {
    name: String,
    filename: Option<String>,
    content_type: Option<String>,
    data: Vec<u8>,
}

pub(crate) const BOUNDARY: &str = "ctxscribe-e2e-7d1e0c";

impl Form {
    pub(crate) fn new() -> Self {
        Form::default()
    }

    pub(crate) fn text(mut self, name: &str, value: &str) -> Self {
        self.parts.push(Part {
            name: name.to_owned(),
            filename: None,
            content_type: None,
            data: value.as_bytes().to_vec(),
        });
        self
    }

    /// A text field with arbitrary bytes (not necessarily UTF-8).
    pub(crate) fn raw(mut self, name: &str, data: Vec<u8>) -> Self {
        self.parts.push(Part {
            name: name.to_owned(),
            filename: None,
            content_type: None,
            data,
        });
        self
    }

    /// The audio file at `path` as the `file` part.
    pub(crate) fn file(self, path: &Path) -> Self {
        let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
        let name = path
            .file_name()
            .map_or_else(|| "audio".into(), |n| n.to_string_lossy().into_owned());
        self.file_bytes(&name, "application/octet-stream", bytes)
    }

    pub(crate) fn file_bytes(mut self, filename: &str, content_type: &str, data: Vec<u8>) -> Self {
        self.parts.push(Part {
            name: "file".to_owned(),
            filename: Some(filename.to_owned()),
            content_type: Some(content_type.to_owned()),
            data,
        });
        self
    }

    pub(crate) fn encode(&self) -> (String, Vec<u8>) {
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
