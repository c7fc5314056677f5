//! faster-whisper, the engine compared against, driven over a pipe.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use ctxscribe::context::ContextTerms;
use ctxscribe::context::prompt::{estimate_tokens, render_prompt};

use super::{Clip, Options};

/// faster-whisper in a persistent Python process (benches/fw_driver.py).
pub(crate) struct FasterWhisper {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl FasterWhisper {
    pub(crate) fn start(root: &Path, options: &Options) -> Result<Self, String> {
        let python = &options.python;
        let mut child = Command::new(python)
            .arg(root.join("benches/fw_driver.py"))
            .arg(&options.ct2)
            .arg(options.threads.to_string())
            .arg(&options.fw_compute)
            // CTranslate2 bundles libgomp too: faster-whisper runs with libgomp's
            // defaults, as its users get them, not with the spin count this bench
            // starts itself with (`exec_with_engine_environment`).
            .env_remove(ctxscribe::config::ENV_GOMP_SPINCOUNT)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| {
                format!(
                    "cannot start {} (run `make bench`, which installs faster-whisper): {e}",
                    python.display()
                )
            })?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        let mut fw = FasterWhisper {
            child,
            stdin,
            stdout,
        };
        fw.read_reply()?;
        Ok(fw)
    }

    fn read_reply(&mut self) -> Result<serde_json::Value, String> {
        let mut line = String::new();
        self.stdout
            .read_line(&mut line)
            .map_err(|e| format!("faster-whisper driver: {e}"))?;
        if line.is_empty() {
            return Err("faster-whisper driver exited".into());
        }
        serde_json::from_str(&line).map_err(|e| format!("faster-whisper driver said {line}: {e}"))
    }

    pub(crate) fn transcribe(&mut self, clip: &Clip, beam: usize) -> Result<(String, f64), String> {
        // What OpenAI-compatible servers do with context: messages and terms as the prompt.
        let terms = ContextTerms::from_context(&clip.messages, &clip.dictionary);
        let prompt = render_prompt(&clip.messages, &terms, &estimate_tokens);
        let header = serde_json::json!({
            "n": clip.samples.len(),
            "prompt": if prompt.is_empty() { None } else { Some(prompt) },
            "language": clip.fw_language,
            "beam": beam,
        });
        let mut bytes = Vec::with_capacity(clip.samples.len() * 4);
        for sample in &clip.samples {
            bytes.extend_from_slice(&sample.to_le_bytes());
        }
        self.stdin
            .write_all(format!("{header}\n").as_bytes())
            .and_then(|()| self.stdin.write_all(&bytes))
            .and_then(|()| self.stdin.flush())
            .map_err(|e| format!("faster-whisper driver: {e}"))?;
        let reply = self.read_reply()?;
        let text = reply["text"].as_str().unwrap_or_default().to_owned();
        let secs = reply["secs"].as_f64().unwrap_or(f64::NAN);
        Ok((text, secs))
    }

    pub(crate) fn peak_rss_mb(&mut self) -> Result<f64, String> {
        self.stdin
            .write_all(b"{\"cmd\": \"rss\"}\n")
            .and_then(|()| self.stdin.flush())
            .map_err(|e| format!("faster-whisper driver: {e}"))?;
        Ok(self.read_reply()?["peak_rss_mb"]
            .as_f64()
            .unwrap_or(f64::NAN))
    }
}

impl Drop for FasterWhisper {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
