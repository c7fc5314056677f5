//! `stream=true` clients for the server tests (over [`super::apps`]): a transcription
//! POST read as it arrives or not at all, its server-sent events timed, and real clips
//! joined into longer files.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use super::apps::{TRANSCRIPTIONS, multipart, request_head, transcribe};
use super::server::Server;
use super::{real_clip, repo_root};

/// A connection that has sent a transcription POST of `file` with `fields` (whole).
pub fn send(server: &Server, file: &Path, fields: &[(&str, &str)]) -> TcpStream {
    let (content_type, body) = multipart(file, fields);
    let mut stream = TcpStream::connect(server.addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(300)))
        .expect("read timeout");
    let head = request_head(
        server.addr,
        "POST",
        TRANSCRIPTIONS,
        &[],
        Some((&content_type, &body)),
    );
    stream.write_all(head.as_bytes()).expect("send the head");
    stream.write_all(&body).expect("send the body");
    stream
}

/// The non-streamed transcript of `file` with `fields`.
pub fn plain_text(server: &Server, file: &Path, fields: &[(&str, &str)]) -> String {
    let answer = transcribe(server, file, fields, None);
    assert_eq!(answer.status, 200, "{}", answer.body);
    answer.json()["text"].as_str().expect("a text").to_owned()
}

/// A `stream=true` transcription of `file`, read as it arrives: each event with the time
/// it arrived after the request was sent.
pub fn stream_timed(
    server: &Server,
    file: &Path,
    fields: &[(&str, &str)],
) -> Vec<(Duration, Value)> {
    let mut fields = fields.to_vec();
    fields.push(("stream", "true"));
    let mut stream = send(server, file, &fields);
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
pub fn joined_clip(name: &str, clips: &[&str]) -> PathBuf {
    let out = repo_root().join(format!("target/stream-clips/{name}.wav"));
    std::fs::create_dir_all(out.parent().expect("a parent")).expect("make the directory");
    // Written aside and renamed: tests running at once may join the same file.
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let aside = out.with_extension(format!("{}-{nanos}.wav", std::process::id()));
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
        .arg(&aside)
        .status()
        .expect("run ffmpeg");
    assert!(status.success(), "ffmpeg failed: {status}");
    std::fs::rename(&aside, &out).expect("rename the joined clip");
    out
}

/// Reads `stream` until `needle` has arrived (true) or the answer ended (false).
pub fn read_until(stream: &mut TcpStream, needle: &[u8]) -> bool {
    let (mut raw, mut buffer) = (Vec::new(), [0u8; 4096]);
    loop {
        match stream.read(&mut buffer) {
            Ok(0) | Err(_) => return false,
            Ok(read) => raw.extend_from_slice(&buffer[..read]),
        }
        if raw.windows(needle.len()).any(|w| w == needle) {
            return true;
        }
    }
}
