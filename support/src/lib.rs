//! What ctxscribe's integration tests (`tests/common`) and benches (`benches/eval.rs`,
//! `benches/speed/`) share: the repository's paths, ../shared, the models of
//! `make setup`, the real clips of ../shared/eval/real with their manifest, and the
//! cases of the context sets ([`read_context_cases`]) and their breakdown by kind of
//! voice ([`ctxset_breakdown`]).
//!
//! Errors are returned as text for the benches to print; the tests' wrappers panic.

use std::path::{Path, PathBuf};
use std::process::Command;

mod context_cases;

pub use context_cases::{ContextCase, parse_context_cases, read_context_cases};

/// The repository root (this crate lives in its `support/`).
#[must_use]
pub fn repo_root() -> PathBuf {
    let support = Path::new(env!("CARGO_MANIFEST_DIR"));
    support.parent().unwrap_or(support).to_path_buf()
}

/// `../shared` (or `$CTXSCRIBE_SHARED`).
#[must_use]
pub fn shared_dir() -> PathBuf {
    std::env::var_os("CTXSCRIBE_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("../shared"))
}

/// The models directory written by `make setup` (or `$CTXSCRIBE_MODEL_DIR`).
#[must_use]
pub fn models_dir() -> PathBuf {
    std::env::var_os("CTXSCRIBE_MODEL_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("models"))
}

/// ../shared/eval/real's manifest.
#[must_use]
pub fn real_manifest_path() -> PathBuf {
    shared_dir().join("eval/real/manifest.tsv")
}

/// benches/ctxset/breakdown.py's table for the cases at `cases` and each `(label,
/// hypotheses file)` of `runs`: term recall, WER, the WER of the words outside the terms
/// and p50/p90 latency per kind of voice, side by side.
///
/// # Errors
/// python3 cannot run, or the script fails (its error output).
pub fn ctxset_breakdown(cases: &Path, runs: &[(&str, &Path)]) -> Result<String, String> {
    let output = Command::new("python3")
        .arg(repo_root().join("benches/ctxset/breakdown.py"))
        .arg(cases)
        .args(
            runs.iter()
                .map(|(label, hyps)| format!("{label}={}", hyps.display())),
        )
        .env("CTXSCRIBE_SHARED", shared_dir())
        .output()
        .map_err(|e| format!("cannot run breakdown.py: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "breakdown.py failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Runs the generator `script` (a path in the repository; idempotent) into `dir` (a path
/// in the repository) and returns that directory.
///
/// # Errors
/// The script cannot run or fails.
pub fn generated_dir(script: &str, dir: &str) -> Result<PathBuf, String> {
    let out = repo_root().join(dir);
    let status = Command::new("bash")
        .arg(repo_root().join(script))
        .arg(&out)
        .status()
        .map_err(|e| format!("run {script}: {e}"))?;
    if !status.success() {
        return Err(format!("{script} failed: {status}"));
    }
    Ok(out)
}

/// The real clips of ../shared/eval/real in supported containers, as
/// `scripts/prepare-eval.sh` writes them (it runs once per call; it is idempotent).
///
/// # Errors
/// The script fails.
pub fn prepare_real_clips() -> Result<PathBuf, String> {
    generated_dir("scripts/prepare-eval.sh", "target/fixtures/real")
}

/// One row of ../shared/eval/real/manifest.tsv.
#[derive(Debug, Clone)]
pub struct RealClip {
    /// The clip's id (its file's stem).
    pub id: String,
    /// The language code of its speech.
    pub language: String,
    /// Its length in seconds.
    pub duration_secs: f64,
    /// What is said.
    pub reference: String,
    /// The prepared wav file in `dir`.
    pub path: PathBuf,
}

/// The rows of the manifest text `manifest` (a header line first), their files in `dir`.
///
/// # Errors
/// A row with too few columns or a duration that is not a number.
pub fn parse_real_manifest(manifest: &str, dir: &Path) -> Result<Vec<RealClip>, String> {
    manifest
        .lines()
        .skip(1)
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            let cols: Vec<&str> = line.split('\t').collect();
            let [id, _, language, duration, reference, ..] = cols[..] else {
                return Err(format!(
                    "manifest row with {} columns: {line:?}",
                    cols.len()
                ));
            };
            Ok(RealClip {
                id: id.to_owned(),
                language: language.to_owned(),
                duration_secs: duration
                    .parse()
                    .map_err(|_| format!("{id}: duration {duration:?} is not a number"))?,
                reference: reference.to_owned(),
                path: dir.join(format!("{id}.wav")),
            })
        })
        .collect()
}

/// The real clips whose prepared files are in `dir` ([`prepare_real_clips`]), in
/// manifest order.
///
/// # Errors
/// The manifest cannot be read or parsed.
pub fn real_clips_in(dir: &Path) -> Result<Vec<RealClip>, String> {
    let path = real_manifest_path();
    let manifest = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    parse_real_manifest(&manifest, dir)
}

/// Every real clip, prepared ([`prepare_real_clips`]), in manifest order.
///
/// # Errors
/// The preparation fails, or the manifest cannot be read or parsed.
pub fn real_clips() -> Result<Vec<RealClip>, String> {
    real_clips_in(&prepare_real_clips()?)
}
