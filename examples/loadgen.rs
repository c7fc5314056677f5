//! A load generator for the reference server: `make load` (scripts/load.sh) runs it.
//!
//! ```sh
//! cargo run --release --features server --example loadgen -- \
//!     --addr 127.0.0.1:8080 --concurrency 32 --secs 60 --clip short.wav [--pid SERVER_PID]
//! ```
//!
//! `--concurrency` clients each send one request at a time on a new connection
//! (`Connection: close`) for `--secs` seconds, cycling through a mix: 3 in 5 a valid clip
//! (one of those 3 with `stream=true`), the others invalid (no file, a bad dictionary,
//! bytes that are no audio, not multipart). Every request must be answered: a connection
//! error, a reply without a status line, or a 200 stream without its
//! `transcript.text.done` event counts as lost. Prints requests/s, p50/p99 latency, the status
//! distribution per request kind, lost requests and, with `--pid`, the server's peak RSS
//! (`VmHWM`). `--backoff`: after a 503 a client waits `Retry-After` seconds (as the
//! OpenAI SDKs do) instead of retrying at once. `--expect-text TEXT`: every valid clip
//! answered 200 must have exactly this `text` (e.g. from a direct call; behind a load
//! balancer, every replica must give the same answer). Exits 1 if a request was lost,
//! got a status outside 200 / 4xx / 503, or a wrong text.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use std::io::{Read, Write};
use std::net::TcpStream;

const BOUNDARY: &str = "ctxscribe-load-5f1c";

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Valid,
    Stream,
    NoFile,
    BadDictionary,
    NotAudio,
    NotMultipart,
}

/// The request mix, cycled through by every client.
const MIX: [Kind; 10] = [
    Kind::Valid,
    Kind::NoFile,
    Kind::Valid,
    Kind::BadDictionary,
    Kind::Valid,
    Kind::Stream,
    Kind::NotAudio,
    Kind::Valid,
    Kind::NotMultipart,
    Kind::Valid,
];

#[derive(Debug)]
struct Args {
    addr: SocketAddr,
    concurrency: usize,
    secs: f64,
    clip: std::path::PathBuf,
    pid: Option<u32>,
    /// Wait `Retry-After` seconds after a 503, as the OpenAI SDKs do.
    backoff: bool,
    /// The `text` every valid clip answered 200 must have.
    expect_text: Option<String>,
}

fn parse_args() -> Result<Args, String> {
    let mut addr = None;
    let mut concurrency = 32;
    let mut secs = 60.0;
    let mut clip = None;
    let mut pid = None;
    let mut backoff = false;
    let mut expect_text = None;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--addr" => addr = Some(value()?.parse().map_err(|e| format!("--addr: {e}"))?),
            "--concurrency" => {
                concurrency = value()?
                    .parse()
                    .map_err(|e| format!("--concurrency: {e}"))?;
            }
            "--secs" => secs = value()?.parse().map_err(|e| format!("--secs: {e}"))?,
            "--clip" => clip = Some(value()?.into()),
            "--pid" => pid = Some(value()?.parse().map_err(|e| format!("--pid: {e}"))?),
            "--backoff" => backoff = true,
            "--expect-text" => expect_text = Some(value()?),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(Args {
        addr: addr.ok_or("--addr is required")?,
        concurrency: concurrency.max(1),
        secs,
        clip: clip.ok_or("--clip is required")?,
        pid,
        backoff,
        expect_text,
    })
}

fn multipart(parts: &[(&str, &[u8])]) -> Vec<u8> {
    let mut body = Vec::new();
    for (name, data) in parts {
        body.extend_from_slice(format!("--{BOUNDARY}\r\n").as_bytes());
        let filename = if *name == "file" {
            "; filename=\"clip\""
        } else {
            ""
        };
        body.extend_from_slice(
            format!("Content-Disposition: form-data; name=\"{name}\"{filename}\r\n\r\n").as_bytes(),
        );
        body.extend_from_slice(data);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{BOUNDARY}--\r\n").as_bytes());
    body
}

/// The whole request (head and body) for each kind.
fn requests(clip: &[u8]) -> BTreeMap<Kind, Vec<u8>> {
    let form = format!("multipart/form-data; boundary={BOUNDARY}");
    let request = |content_type: &str, body: Vec<u8>| {
        let mut bytes = format!(
            "POST /v1/audio/transcriptions HTTP/1.1\r\nHost: load\r\nContent-Type: \
             {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        )
        .into_bytes();
        bytes.extend_from_slice(&body);
        bytes
    };
    BTreeMap::from([
        (
            Kind::Valid,
            request(
                &form,
                multipart(&[("file", clip), ("dictionary", b"Brooklyn")]),
            ),
        ),
        (
            Kind::Stream,
            request(
                &form,
                multipart(&[
                    ("file", clip),
                    ("dictionary", b"Brooklyn"),
                    ("stream", b"true"),
                ]),
            ),
        ),
        (
            Kind::NoFile,
            request(&form, multipart(&[("model", b"whisper-1")])),
        ),
        (
            Kind::BadDictionary,
            request(
                &form,
                multipart(&[("file", clip), ("dictionary", b"[1, 2]")]),
            ),
        ),
        (
            Kind::NotAudio,
            request(&form, multipart(&[("file", b"this is not audio at all")])),
        ),
        (
            Kind::NotMultipart,
            request("application/json", b"{\"file\": 1}".to_vec()),
        ),
    ])
}

/// One answer: the status, `Retry-After` (seconds) and the JSON body's `text` (a
/// stream's: its done event's).
struct Reply {
    status: u16,
    retry_after: Option<u64>,
    text: Option<String>,
}

/// One request on a new connection, or `None` when it got no answer.
fn send(addr: SocketAddr, request: &[u8]) -> Option<Reply> {
    let mut stream = TcpStream::connect(addr).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(900)))
        .ok()?;
    // A server that answers early (4xx) may stop reading: a failed write is not a loss,
    // a missing answer is.
    let _ = stream.write_all(request);
    let mut reply = Vec::new();
    let _ = stream.read_to_end(&mut reply);
    let head = String::from_utf8_lossy(&reply);
    let (head, body) = head.split_once("\r\n\r\n").unwrap_or((&head, ""));
    let mut lines = head.split("\r\n");
    let status: u16 = lines.next()?.split(' ').nth(1)?.parse().ok()?;
    let retry_after = lines
        .filter_map(|l| l.split_once(':'))
        .find(|(name, _)| name.eq_ignore_ascii_case("retry-after"))
        .and_then(|(_, v)| v.trim().parse().ok());
    let text = serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v["text"].as_str().map(str::to_owned))
        .or_else(|| done_text(body));
    let is_stream = head
        .to_ascii_lowercase()
        .contains("content-type: text/event-stream");
    if status == 200 && is_stream && text.is_none() {
        // A stream that ended without its done event is a lost answer.
        return None;
    }
    Some(Reply {
        status,
        retry_after,
        text,
    })
}

/// The `text` of a server-sent event stream's `transcript.text.done` event (each event
/// is whole within one chunk, so the chunked framing needs no decoding).
fn done_text(body: &str) -> Option<String> {
    body.lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter_map(|data| serde_json::from_str::<serde_json::Value>(data).ok())
        .find(|event| event["type"] == "transcript.text.done")
        .and_then(|event| event["text"].as_str().map(str::to_owned))
}

#[derive(Debug, Default)]
struct Tally {
    latencies: Vec<Duration>,
    statuses: BTreeMap<(Kind, u16), Vec<Duration>>,
    lost: BTreeMap<Kind, usize>,
    /// Valid clips answered 200 with another text than `--expect-text`.
    wrong: Vec<Option<String>>,
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn peak_rss_mib(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib / 1024.0)
}

/// One client's requests, one at a time until `end`, the kinds of [`MIX`] in turn
/// from the `client`-th.
fn run_client(
    client: usize,
    args: &Args,
    requests: &BTreeMap<Kind, Vec<u8>>,
    end: Instant,
) -> Tally {
    let expect = args.expect_text.as_deref();
    let mut tally = Tally::default();
    let mut turn = client;
    while Instant::now() < end {
        let kind = MIX[turn % MIX.len()];
        turn += 1;
        let Some(request) = requests.get(&kind) else {
            break;
        };
        let sent = Instant::now();
        match send(args.addr, request) {
            Some(reply) => {
                let took = sent.elapsed();
                tally.latencies.push(took);
                let status = reply.status;
                tally.statuses.entry((kind, status)).or_default().push(took);
                if matches!(kind, Kind::Valid | Kind::Stream)
                    && status == 200
                    && expect.is_some_and(|e| reply.text.as_deref() != Some(e))
                {
                    tally.wrong.push(reply.text);
                }
                if args.backoff && status == 503 {
                    let wait = Duration::from_secs(reply.retry_after.unwrap_or(1));
                    std::thread::sleep(wait.min(end - Instant::now().min(end)));
                }
            }
            None => *tally.lost.entry(kind).or_default() += 1,
        }
    }
    tally
}

/// The clients' tallies as one.
fn merge(tallies: Vec<Tally>) -> Tally {
    let mut total = Tally::default();
    for tally in tallies {
        total.latencies.extend(tally.latencies);
        for (key, took) in tally.statuses {
            total.statuses.entry(key).or_default().extend(took);
        }
        for (key, n) in tally.lost {
            *total.lost.entry(key).or_default() += n;
        }
        total.wrong.extend(tally.wrong);
    }
    total
}

/// The table of answers by request kind and status (and the lost ones); gives how many
/// had a status their kind should not get.
fn print_statuses(total: &mut Tally) -> usize {
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!("\n| request kind | status | count | p50 | p99 |\n|---|---|---|---|---|");
    let mut unexpected = 0;
    for ((kind, status), took) in &mut total.statuses {
        took.sort_unstable();
        let n = took.len();
        println!(
            "| {kind:?} | {status} | {n} | {:.1} ms | {:.1} ms |",
            ms(percentile(took, 0.50)),
            ms(percentile(took, 0.99))
        );
        let fine = match kind {
            Kind::Valid | Kind::Stream => matches!(status, 200 | 503),
            _ => (400..500).contains(status) || *status == 503,
        };
        if !fine {
            unexpected += n;
        }
    }
    for (kind, n) in &total.lost {
        println!("| {kind:?} | lost | {n} | | |");
    }
    unexpected
}

fn main() -> std::process::ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("loadgen: {message}");
            return std::process::ExitCode::from(2);
        }
    };
    let clip = match std::fs::read(&args.clip) {
        Ok(clip) => clip,
        Err(e) => {
            eprintln!("loadgen: cannot read {}: {e}", args.clip.display());
            return std::process::ExitCode::from(2);
        }
    };
    let requests = Arc::new(requests(&clip));
    let started = Instant::now();
    let end = started + Duration::from_secs_f64(args.secs);
    let tallies: Vec<Tally> = std::thread::scope(|scope| {
        let clients: Vec<_> = (0..args.concurrency)
            .map(|client| {
                let (args, requests) = (&args, Arc::clone(&requests));
                scope.spawn(move || run_client(client, args, &requests, end))
            })
            .collect();
        clients.into_iter().filter_map(|c| c.join().ok()).collect()
    });
    let elapsed = started.elapsed().as_secs_f64();
    let mut total = merge(tallies);
    total.latencies.sort_unstable();
    let answered = total.latencies.len();
    let lost: usize = total.lost.values().sum();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!("| metric | value |\n|---|---|");
    println!(
        "| duration | {elapsed:.1} s, concurrency {} |",
        args.concurrency
    );
    println!("| requests answered | {answered} |");
    println!("| requests lost (no answer) | {lost} |");
    println!(
        "| throughput | {:.1} requests/s |",
        answered as f64 / elapsed
    );
    println!(
        "| latency p50 | {:.1} ms |",
        ms(percentile(&total.latencies, 0.50))
    );
    println!(
        "| latency p99 | {:.1} ms |",
        ms(percentile(&total.latencies, 0.99))
    );
    println!(
        "| latency max | {:.1} ms |",
        ms(percentile(&total.latencies, 1.0))
    );
    if let Some(pid) = args.pid {
        match peak_rss_mib(pid) {
            Some(mib) => println!("| server peak RSS (VmHWM) | {mib:.0} MiB |"),
            None => println!("| server peak RSS | unavailable |"),
        }
    }
    let unexpected = print_statuses(&mut total);
    let wrong = total.wrong.len();
    if let Some(expected) = &args.expect_text {
        println!("\nvalid clips answered 200 with another text than {expected:?}: {wrong}");
        for text in total.wrong.iter().take(3) {
            println!("  got {text:?}");
        }
    }
    if lost > 0 || unexpected > 0 || wrong > 0 {
        eprintln!(
            "loadgen: {lost} lost, {unexpected} with an unexpected status, {wrong} wrong texts"
        );
        return std::process::ExitCode::FAILURE;
    }
    std::process::ExitCode::SUCCESS
}
