//! Replicas behind a real load balancer: two `ctxscribe-server` processes on loopback
//! behind nginx with the project's configuration (`deploy/nginx/ctxscribe.conf.template`).
//!
//! Correctness only, never wall-clock limits (`make scale-test` prints the numbers):
//! - a replica answers `/health` with 200 only once its model is loaded, and while it
//!   loads the balancer sends every request to the other replica;
//! - a replica sent SIGTERM mid-run drains (exits 0) and no request is lost: every
//!   answer is a 200 with the text of a direct call;
//! - a replica killed with SIGKILL mid-run loses nothing either: nginx sends the
//!   requests it held to the other replica (`proxy_next_upstream ... non_idempotent`).
//!
//! Needs nginx (`make setup` installs it).

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use common::server::{Launch, Server};
use common::*;
use serde_json::Value;

const BOUNDARY: &str = "ctxscribe-scale-test";
/// Clients sending requests through the balancer at once.
const CLIENTS: usize = 4;

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

fn signal(child: &Child, name: &str) {
    let status = Command::new("kill")
        .args([name, &child.id().to_string()])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill {name} failed");
}

/// A replica: the server on a fixed port with debug logs (one line per `/health`),
/// `model_file` and `extra` arguments, not waited for.
fn spawn_replica(port: u16, model_file: &str, extra: &[&str]) -> Server {
    let launch = Launch {
        port,
        model: model_file,
        log_level: Some("debug"),
        args: extra,
        ..Launch::default()
    };
    launch.spawn().0
}

/// A replica with the English tiny model, once it answers `/health` with 200.
fn start_replica(port: u16, extra: &[&str]) -> Server {
    let replica = spawn_replica(port, "ggml-tiny.en.bin", extra);
    replica.wait_healthy();
    replica
}

impl Server {
    fn wait_healthy(&self) {
        for _ in 0..1200 {
            if health(self.addr) == Some(200) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("replica on {} never healthy: {:#?}", self.addr, self.logs());
    }

    fn wait(&mut self) -> ExitStatus {
        self.child.wait().expect("wait for the replica")
    }
}

/// nginx with the project's configuration in front of `ports`.
struct Nginx {
    child: Child,
    addr: SocketAddr,
    dir: PathBuf,
}

impl Nginx {
    fn start(ports: &[u16], name: &str) -> Nginx {
        let dir = repo_root().join("target/scale-test").join(name);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("make the nginx directory");
        let template =
            std::fs::read_to_string(repo_root().join("deploy/nginx/ctxscribe.conf.template"))
                .expect("read the nginx template");
        let port = free_port();
        let upstreams: String = ports
            .iter()
            .map(|p| format!("        server 127.0.0.1:{p} max_fails=1 fail_timeout=2s;\n"))
            .collect();
        let conf = template
            .replace("@RUNDIR@", &dir.to_string_lossy())
            .replace("@LISTEN@", &format!("127.0.0.1:{port}"))
            .replace("@UPSTREAMS@", &upstreams);
        std::fs::write(dir.join("nginx.conf"), conf).expect("write nginx.conf");
        let child = Command::new(nginx_binary())
            .arg("-p")
            .arg(&dir)
            .arg("-c")
            .arg(dir.join("nginx.conf"))
            .arg("-e")
            .arg(dir.join("error.log"))
            .stdin(Stdio::null())
            .spawn()
            .expect("start nginx");
        // Stopped by `Drop` also when it never listens.
        let nginx = Nginx {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            dir,
        };
        for _ in 0..300 {
            if TcpStream::connect(nginx.addr).is_ok() {
                return nginx;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!(
            "nginx did not listen: {:?}",
            std::fs::read_to_string(nginx.dir.join("error.log"))
        );
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // SIGTERM: the master stops its workers (SIGKILL would leave them running).
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }
}

fn nginx_binary() -> &'static str {
    ["/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/bin/nginx"]
        .into_iter()
        .find(|p| Path::new(p).is_file())
        .expect("nginx is missing: run `make setup` (installs the Debian package nginx-light)")
}

/// `GET /health`: the status, or `None` without an answer (nothing listening).
fn health(addr: SocketAddr) -> Option<u16> {
    exchange(
        addr,
        b"GET /health HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
    )
    .map(|a| a.0)
}

/// One request on a new connection: the status and body, or `None` without an answer.
fn exchange(addr: SocketAddr, request: &[u8]) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect(addr).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(300)))
        .ok()?;
    stream.write_all(request).ok()?;
    let mut reply = Vec::new();
    stream.read_to_end(&mut reply).ok()?;
    let reply = String::from_utf8_lossy(&reply);
    let (head, body) = reply.split_once("\r\n\r\n")?;
    let status = head.split(' ').nth(1)?.parse().ok()?;
    Some((status, body.to_owned()))
}

/// A transcription request for `clip`, whole.
fn transcription_request(clip: &Path) -> Vec<u8> {
    let audio = std::fs::read(clip).expect("read the clip");
    let mut body = format!(
        "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"c.wav\"\r\n\r\n"
    )
    .into_bytes();
    body.extend_from_slice(&audio);
    body.extend_from_slice(format!("\r\n--{BOUNDARY}--\r\n").as_bytes());
    let mut request = format!(
        "POST /v1/audio/transcriptions HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\
         Content-Type: multipart/form-data; boundary={BOUNDARY}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    request.extend_from_slice(&body);
    request
}

/// The transcript in a 200 answer's body.
fn text_of(answer: &(u16, String)) -> Option<String> {
    let json: Value = serde_json::from_str(&answer.1).ok()?;
    json["text"].as_str().map(str::to_owned)
}

/// One request's answer (status and body), or `None` when it got none.
type Answer = Option<(u16, String)>;

/// Clients sending the request through the balancer until stopped; every answer kept.
struct Clients {
    stop: Arc<AtomicBool>,
    answered: Arc<AtomicUsize>,
    threads: Vec<std::thread::JoinHandle<Vec<Answer>>>,
}

impl Clients {
    fn start(addr: SocketAddr, request: Arc<Vec<u8>>) -> Clients {
        let stop = Arc::new(AtomicBool::new(false));
        let answered = Arc::new(AtomicUsize::new(0));
        let threads = (0..CLIENTS)
            .map(|_| {
                let (stop, answered, request) = (
                    Arc::clone(&stop),
                    Arc::clone(&answered),
                    Arc::clone(&request),
                );
                std::thread::spawn(move || {
                    let mut answers = Vec::new();
                    while !stop.load(Ordering::SeqCst) {
                        answers.push(exchange(addr, &request));
                        answered.fetch_add(1, Ordering::SeqCst);
                    }
                    answers
                })
            })
            .collect();
        Clients {
            stop,
            answered,
            threads,
        }
    }

    /// Waits until `n` more requests got an answer (or none) from now.
    fn wait_for(&self, n: usize) {
        let target = self.answered.load(Ordering::SeqCst) + n;
        while self.answered.load(Ordering::SeqCst) < target {
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until `done()` holds, or `n` more requests got an answer (or none).
    fn wait_until(&self, n: usize, done: impl Fn() -> bool) {
        let target = self.answered.load(Ordering::SeqCst) + n;
        while !done() && self.answered.load(Ordering::SeqCst) < target {
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn finish(self) -> Vec<Answer> {
        self.stop.store(true, Ordering::SeqCst);
        self.threads
            .into_iter()
            .flat_map(|t| t.join().expect("a client thread"))
            .collect()
    }
}

/// Every request answered 200 with `expected`.
fn assert_all_right(answers: &[Answer], expected: &str, what: &str) {
    assert!(!answers.is_empty(), "{what}: no requests");
    for answer in answers {
        let answer = answer
            .as_ref()
            .unwrap_or_else(|| panic!("{what}: a request got no answer"));
        assert_eq!(answer.0, 200, "{what}: {}", answer.1);
        assert_eq!(
            text_of(answer).as_deref(),
            Some(expected),
            "{what}: {}",
            answer.1
        );
    }
}

/// Every request answered: 200 with `expected`, or 503 (`server_busy`); how many 503s.
fn assert_right_or_busy(answers: &[Answer], expected: &str, what: &str) -> usize {
    let mut busy = 0;
    for answer in answers {
        let answer = answer
            .as_ref()
            .unwrap_or_else(|| panic!("{what}: a request got no answer"));
        if answer.0 == 503 {
            assert!(answer.1.contains("server_busy"), "{what}: {}", answer.1);
            busy += 1;
        } else {
            assert_eq!(answer.0, 200, "{what}: {}", answer.1);
            assert_eq!(
                text_of(answer).as_deref(),
                Some(expected),
                "{what}: {}",
                answer.1
            );
        }
    }
    busy
}

/// Requests a replica answered with 200 (its access log lines).
fn served(replica: &Server) -> usize {
    replica
        .entries("request")
        .iter()
        .filter(|e| e["path"] == "/v1/audio/transcriptions" && e["status"] == 200)
        .count()
}

#[test]
fn replicas_behind_nginx_lose_nothing_on_sigterm_or_sigkill() {
    let clip = real_clip("en_google_brooklyn_bridge").path;
    let request = Arc::new(transcription_request(&clip));
    let (port_a, port_b) = (free_port(), free_port());
    let mut a = start_replica(port_a, &[]);
    let mut b = start_replica(port_b, &[]);
    let direct = exchange(a.addr, &request).expect("a direct answer");
    assert_eq!(direct.0, 200, "{}", direct.1);
    let expected = text_of(&direct).expect("a text");
    assert!(!expected.trim().is_empty(), "an empty transcript");
    let nginx = Nginx::start(&[port_a, port_b], "replicas");

    // SIGTERM a mid-run: it drains and exits 0; nothing is lost.
    let clients = Clients::start(nginx.addr, Arc::clone(&request));
    clients.wait_for(8);
    let served_before = (served(&a), served(&b));
    signal(&a.child, "-TERM");
    let status = a.wait();
    assert!(
        status.success(),
        "a exited with {status} after SIGTERM: {:#?}",
        a.logs()
    );
    clients.wait_for(8);
    let answers = clients.finish();
    assert_all_right(&answers, &expected, "SIGTERM");
    assert!(
        served_before.0 > 0 && served_before.1 > 0,
        "both replicas must have served before the signal: {served_before:?}"
    );
    drop(a);

    // a comes back; while its model loads, everything goes to b.
    let clients = Clients::start(nginx.addr, Arc::clone(&request));
    a = spawn_replica(port_a, "ggml-tiny.en.bin", &[]);
    a.wait_healthy();
    // nginx tries a again once its fail_timeout (2 s) has passed.
    clients.wait_until(400, || served(&a) > 0);
    assert!(
        served(&a) > 0,
        "the restarted replica got no request: {:#?}",
        a.logs()
    );

    // SIGKILL b mid-run: nginx retries what b held on a; nothing is lost.
    signal(&b.child, "-KILL");
    let _ = b.wait();
    clients.wait_for(8);
    let answers = clients.finish();
    assert_all_right(&answers, &expected, "restart and SIGKILL");
    let log = std::fs::read_to_string(nginx.dir.join("error.log")).unwrap_or_default();
    assert!(
        log.contains("connect() failed") || log.contains("upstream"),
        "nginx never saw a replica fail (the test did not exercise a retry):\n{log}"
    );
}

#[test]
fn health_is_not_ready_until_the_model_is_loaded() {
    // The base model takes a while to load: long enough to probe the replica meanwhile.
    let port = free_port();
    let replica = spawn_replica(port, "ggml-base.bin", &[]);
    let mut answers = Vec::new();
    while answers.last() != Some(&Some(200)) {
        answers.push(health(replica.addr));
        std::thread::sleep(Duration::from_millis(5));
        assert!(
            answers.len() < 60_000,
            "never healthy: {:#?}",
            replica.logs()
        );
    }
    // In the server's own order: every `/health` it answered came after "model loaded".
    std::thread::sleep(Duration::from_millis(200));
    let logs = replica.logs();
    let loaded = logs
        .iter()
        .position(|l| l.contains("\"model loaded\""))
        .unwrap_or_else(|| panic!("no 'model loaded' line: {logs:#?}"));
    let first_health = logs
        .iter()
        .position(|l| l.contains("\"message\":\"health\""))
        .unwrap_or_else(|| panic!("no health line at debug level: {logs:#?}"));
    assert!(
        first_health > loaded,
        "/health answered before the model loaded: {logs:#?}"
    );
    assert!(
        answers.len() > 1,
        "the replica was never probed while loading (the probe came too late)"
    );
}

/// docs/deploy.md's "Replicas behind a load balancer" `sh` block runs as written: `make
/// scale-test`, here with short runs (`SECS=3 CONCURRENCY=4`) and `CARGO=true` (the
/// binaries are the ones this `cargo test` built; a nested cargo would wait for this one's
/// lock).
#[test]
fn readme_scale_test_command_runs() {
    let readme =
        std::fs::read_to_string(repo_root().join("docs/deploy.md")).expect("docs/deploy.md");
    let section = readme
        .split("\n## ")
        .find(|s| s.starts_with("Replicas behind a load balancer"))
        .expect("a 'Replicas behind a load balancer' section");
    let commands: Vec<&str> = section
        .split("```sh\n")
        .skip(1)
        .filter_map(|block| block.split("```").next())
        .flat_map(str::lines)
        .filter(|line| line.starts_with("make "))
        .collect();
    assert_eq!(commands, ["make scale-test"], "{section}");
    let output = Command::new("bash")
        .args(["-c", commands[0]])
        .current_dir(repo_root())
        .env("SECS", "3")
        .env("CONCURRENCY", "4")
        .env("CARGO", "true")
        .output()
        .expect("run make");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let rows: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("| 1 replica") || l.starts_with("| 2 replicas"))
        .collect();
    assert_eq!(rows.len(), 4, "{stdout}");
    for row in rows {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        assert_eq!((cells[3], cells[4]), ("0", "0"), "lost / wrong text: {row}");
    }
}

/// Replicas with one engine slot and no queue, more clients than slots, then one
/// replica killed: the busy survivor's 503s reach the clients as 503s (with
/// `server_busy`), never as nginx's 502 "no live upstreams" (which a retried 503
/// caused: nginx counted it as a failure and took the busy replica out).
#[test]
fn busy_replicas_answer_503_through_nginx_never_502() {
    let clip = real_clip("en_google_brooklyn_bridge").path;
    let request = Arc::new(transcription_request(&clip));
    let (port_a, port_b) = (free_port(), free_port());
    let busy_args = ["--max-concurrent", "1", "--max-queue", "0"];
    let a = start_replica(port_a, &busy_args);
    let mut b = start_replica(port_b, &busy_args);
    let direct = exchange(a.addr, &request).expect("a direct answer");
    let expected = text_of(&direct).expect("a text");
    let nginx = Nginx::start(&[port_a, port_b], "busy");
    let clients = Clients::start(nginx.addr, Arc::clone(&request));
    clients.wait_for(20);
    signal(&b.child, "-KILL");
    let _ = b.wait();
    clients.wait_for(40);
    let answers = clients.finish();
    let busy = assert_right_or_busy(&answers, &expected, "busy replicas");
    assert!(
        busy > 0,
        "no replica was ever busy: the test did not exercise a 503"
    );
    assert!(busy < answers.len(), "no request was transcribed");
}
