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

/// How to start a server process: on loopback, one engine thread, JSON logs on stderr
/// (collected), every `CTXSCRIBE_*` variable of this process removed.
/// `Launch::default()` is the English tiny model on a free port at the default log level.
#[derive(Debug, Clone, Copy)]
pub struct Launch<'a> {
    /// The port; 0 lets the server pick a free one.
    pub port: u16,
    /// A model file of the models directory.
    pub model: &'a str,
    /// `--log-level`, if not the server's default.
    pub log_level: Option<&'a str>,
    /// More arguments, after the ones above (later flags win).
    pub args: &'a [&'a str],
    /// Environment variables to set.
    pub env: &'a [(&'a str, &'a str)],
}

impl Default for Launch<'_> {
    fn default() -> Self {
        Launch {
            port: 0,
            model: "ggml-tiny.en.bin",
            log_level: None,
            args: &[],
            env: &[],
        }
    }
}

impl Launch<'_> {
    /// Starts the process without waiting for it. Its `addr` is `127.0.0.1:port` (with
    /// port 0 not yet the real one); the receiver gets the address it listens on once
    /// it logs "listening on".
    pub fn spawn(&self) -> (Server, mpsc::Receiver<SocketAddr>) {
        let mut command = Command::new(server_binary());
        command
            .args(["--host", "127.0.0.1", "--port", &self.port.to_string()])
            .args(["--log-format", "json"])
            .args(
                self.log_level
                    .map(|level| ["--log-level", level])
                    .iter()
                    .flatten(),
            )
            .args(["--threads", "1", "--model"])
            .arg(model(self.model))
            .args(self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for (name, _) in std::env::vars() {
            if name.starts_with("CTXSCRIBE_") {
                command.env_remove(name);
            }
        }
        command.envs(self.env.iter().copied());
        let mut child = command.spawn().expect("start the server");
        let stderr = child.stderr.take().expect("piped stderr");
        let logs = Arc::new(Mutex::new(Vec::new()));
        let (ready, listening) = mpsc::channel();
        let sink = Arc::clone(&logs);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if let Some(addr) = listening_addr(&line) {
                    let _ = ready.send(addr);
                }
                sink.lock().expect("log lock").push(line);
            }
        });
        let addr = SocketAddr::from(([127, 0, 0, 1], self.port));
        (Server { child, addr, logs }, listening)
    }

    /// Starts the server and waits until it listens; a server that exits or does not
    /// listen within two minutes gives its exit status (if it exited) and its log lines.
    pub fn listening(&self) -> Result<Server, (Option<ExitStatus>, Vec<String>)> {
        let (mut server, listening) = self.spawn();
        match listening.recv_timeout(Duration::from_secs(120)) {
            Ok(addr) => {
                server.addr = addr;
                Ok(server)
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                // Its stderr closed: the server is exiting.
                let status = server.child.wait().ok();
                Err((status, server.logs()))
            }
            // Dropping the server kills it.
            Err(mpsc::RecvTimeoutError::Timeout) => Err((None, server.logs())),
        }
    }
}

/// The address of a JSON "listening on" log line.
fn listening_addr(line: &str) -> Option<SocketAddr> {
    let entry = serde_json::from_str::<Value>(line).ok()?;
    let message = entry["message"].as_str()?;
    if !message.starts_with("listening on") {
        return None;
    }
    entry["addr"].as_str()?.parse().ok()
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
    Launch {
        args,
        env,
        ..Launch::default()
    }
    .listening()
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

    /// The JSON log entries with this message.
    pub fn entries(&self, message: &str) -> Vec<Value> {
        self.logs()
            .iter()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|e| e["message"] == message)
            .collect()
    }
}
