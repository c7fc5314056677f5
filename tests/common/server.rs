//! The reference server as a process, for the integration tests: Cargo builds the
//! `ctxscribe-server` binary (feature `server`) before the tests and names it in
//! `CARGO_BIN_EXE_ctxscribe-server`; nothing is built here.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use serde_json::Value;

use super::model;

/// The server binary Cargo built for this test run.
pub fn server_binary() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_ctxscribe-server"))
}

/// A running server; killed when dropped.
pub struct Server {
    pub child: Child,
    pub addr: SocketAddr,
    pub logs: Arc<Mutex<Vec<String>>>,
}

/// Starts the server with the English tiny model, one engine thread, JSON logs, on a
/// free port, plus `args` (later flags win) and `env` (every other `CTXSCRIBE_*`
/// variable is removed), and waits until it listens.
pub fn start(args: &[&str], env: &[(&str, &str)]) -> Server {
    launch(args, env).unwrap_or_else(|(status, logs)| {
        panic!(
            "the server did not start ({status:?}):\n{}",
            logs.join("\n")
        )
    })
}

/// Like [`start`]; a server that exits or does not listen within two minutes gives its
/// exit status (if it exited) and its log lines.
pub fn launch(
    args: &[&str],
    env: &[(&str, &str)],
) -> Result<Server, (Option<ExitStatus>, Vec<String>)> {
    let tiny = model("ggml-tiny.en.bin");
    let mut command = Command::new(server_binary());
    command
        .args(["--host", "127.0.0.1", "--port", "0", "--log-format", "json"])
        .args(["--threads", "1", "--model"])
        .arg(&tiny)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (name, _) in std::env::vars() {
        if name.starts_with("CTXSCRIBE_") {
            command.env_remove(name);
        }
    }
    command.envs(env.iter().copied());
    let mut child = command.spawn().expect("start the server");
    let stderr = child.stderr.take().expect("piped stderr");
    let logs = Arc::new(Mutex::new(Vec::new()));
    let (ready, listening) = mpsc::channel();
    let sink = Arc::clone(&logs);
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if let Ok(entry) = serde_json::from_str::<Value>(&line)
                && entry["message"]
                    .as_str()
                    .is_some_and(|m| m.starts_with("listening on"))
                && let Some(addr) = entry["addr"].as_str().and_then(|a| a.parse().ok())
            {
                let _ = ready.send(addr);
            }
            sink.lock().expect("log lock").push(line);
        }
    });
    match listening.recv_timeout(Duration::from_secs(120)) {
        Ok(addr) => Ok(Server { child, addr, logs }),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            // Its stderr closed: the server is exiting.
            let status = child.wait().ok();
            Err((status, logs.lock().expect("log lock").clone()))
        }
        Err(mpsc::RecvTimeoutError::Timeout) => {
            let _ = child.kill();
            let _ = child.wait();
            Err((None, logs.lock().expect("log lock").clone()))
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// Every log line so far.
    pub fn logs(&self) -> Vec<String> {
        self.logs.lock().expect("log lock").clone()
    }
}
