//! What an upload costs before the engine sees it: CPU time of
//! `ctxscribe::audio::decode_to_16k_mono` (the server's limits: 25 MiB, one hour) over every
//! file of the given directories (default: the audio fixtures, the hostile fixtures and the
//! `audio_ingest` fuzz corpus), then the worst ten by CPU time per MiB as charged (see
//! below).
//!
//! Checks the ingestion targets and exits non-zero when one is missed:
//! * CPU time <= 2 s per MiB of input (inputs under 64 KiB are counted as 64 KiB: below
//!   that, a decoder's fixed set-up cost, about a millisecond, is all there is);
//! * the 2 h-of-silence WebM and Ogg are refused (`audio_too_long`) in < 0.5 s.
//!
//!   usage: cargo run --release --example ingest_cost [-- DIR_OR_FILE...]
//!   (`make ingest-cost` builds the fixtures and the seed corpus first)
//!
//! CPU time is the calling thread's on-CPU time (`/proc/thread-self/schedstat`, Linux;
//! another process on the machine changes the wall-clock time much more than this). It
//! advances by scheduler ticks, so a short decode is repeated (until 40 ms in all, at most
//! 100 runs) and the mean is reported.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use ctxscribe::AudioLimits;

const MIB: f64 = 1024.0 * 1024.0;
/// Target: CPU seconds per MiB of input.
const SECS_PER_MIB: f64 = 2.0;
/// Inputs smaller than this are charged as this size.
const MIN_CHARGED_BYTES: u64 = 64 * 1024;
/// Target for the duration bombs.
const BOMB_SECS: f64 = 0.5;
/// Short decodes are repeated until this much CPU time has accumulated...
const MIN_MEASURED: Duration = Duration::from_millis(40);
/// ... or this many runs.
const MAX_RUNS: u32 = 100;
const BOMBS: [&str; 2] = ["bomb_silence_2h_opus.webm", "bomb_silence_2h_opus.ogg"];

/// On-CPU time of the calling thread.
fn thread_cpu() -> Duration {
    let ns = std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .unwrap_or(0);
    Duration::from_nanos(ns)
}

struct Row {
    path: PathBuf,
    size: u64,
    cpu: Duration,
    outcome: String,
}

impl Row {
    fn budget(&self) -> f64 {
        SECS_PER_MIB * self.size.max(MIN_CHARGED_BYTES) as f64 / MIB
    }
    /// CPU seconds per MiB charged (inputs under [`MIN_CHARGED_BYTES`] count as that much):
    /// the figure the target applies to, and the order of the table.
    fn secs_per_mib(&self) -> f64 {
        self.cpu.as_secs_f64() / (self.size.max(MIN_CHARGED_BYTES) as f64 / MIB)
    }
}

fn measure(path: &Path, limits: &AudioLimits) -> Option<Row> {
    let bytes = std::fs::read(path).ok()?;
    let mut total = Duration::ZERO;
    let mut runs = 0u32;
    let mut outcome = String::new();
    // The counter advances by scheduler ticks (a few ms): repeat short decodes until the
    // total is well above one tick, and report the mean.
    while runs == 0 || (total < MIN_MEASURED && runs < MAX_RUNS) {
        let start = thread_cpu();
        let result = ctxscribe::audio::decode_to_16k_mono(&bytes, limits);
        total += thread_cpu().saturating_sub(start);
        runs += 1;
        outcome = match &result {
            Ok(pcm) => format!("ok {:.1} s", pcm.duration_secs()),
            Err(e) => format!("{}: {e}", e.code()),
        };
    }
    Some(Row {
        path: path.to_owned(),
        size: bytes.len() as u64,
        cpu: total / runs,
        outcome,
    })
}

fn files(args: &[String]) -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let roots: Vec<PathBuf> = if args.is_empty() {
        [
            "target/fixtures/audio",
            "target/fixtures/hostile",
            "fuzz/corpus/audio_ingest",
        ]
        .iter()
        .map(|d| root.join(d))
        .collect()
    } else {
        args.iter().map(PathBuf::from).collect()
    };
    let mut out = Vec::new();
    for r in roots {
        if r.is_file() {
            out.push(r);
        } else if let Ok(entries) = std::fs::read_dir(&r) {
            let mut found: Vec<PathBuf> = entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_file())
                .filter(|p| {
                    !p.file_name()
                        .is_some_and(|f| f.to_string_lossy().starts_with('.'))
                })
                .collect();
            found.sort();
            out.extend(found);
        } else {
            eprintln!("ingest_cost: skipping {} (not found)", r.display());
        }
    }
    out
}

fn name(path: &Path) -> String {
    let parent = path
        .parent()
        .and_then(Path::file_name)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    let file = path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let short: String = file.chars().take(44).collect();
    format!("{parent}/{short}")
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let limits = AudioLimits::default();
    let mut rows: Vec<Row> = files(&args)
        .iter()
        .filter_map(|p| measure(p, &limits))
        .collect();
    if rows.is_empty() {
        eprintln!("ingest_cost: no inputs");
        return ExitCode::FAILURE;
    }
    let total: Duration = rows.iter().map(|r| r.cpu).sum();
    rows.sort_by(|a, b| b.secs_per_mib().total_cmp(&a.secs_per_mib()));
    println!(
        "{} inputs, {:.2} s CPU in all; worst ten by CPU time per MiB:",
        rows.len(),
        total.as_secs_f64()
    );
    println!(
        "{:64} {:>10} {:>9} {:>8}  outcome",
        "input", "bytes", "cpu ms", "s/MiB"
    );
    for r in rows.iter().take(10) {
        println!(
            "{:64} {:>10} {:>9.1} {:>8.3}  {}",
            name(&r.path),
            r.size,
            r.cpu.as_secs_f64() * 1e3,
            r.secs_per_mib(),
            r.outcome.chars().take(70).collect::<String>()
        );
    }
    let slowest = rows
        .iter()
        .max_by_key(|r| r.cpu)
        .map(|r| (name(&r.path), r.cpu));
    if let Some((n, cpu)) = slowest {
        println!("slowest input: {n} ({:.1} ms)", cpu.as_secs_f64() * 1e3);
    }

    let mut failed = false;
    for r in &rows {
        if r.cpu.as_secs_f64() > r.budget() {
            failed = true;
            println!(
                "FAIL {}: {:.1} ms CPU > {:.1} ms ({SECS_PER_MIB} s/MiB)",
                name(&r.path),
                r.cpu.as_secs_f64() * 1e3,
                r.budget() * 1e3
            );
        }
    }
    for bomb in BOMBS {
        match rows
            .iter()
            .find(|r| r.path.file_name().is_some_and(|f| f == bomb))
        {
            Some(r) => {
                let ok = r.outcome.starts_with("audio_too_long") && r.cpu.as_secs_f64() < BOMB_SECS;
                failed |= !ok;
                println!(
                    "{} {bomb}: {} in {:.1} ms CPU (target: audio_too_long in < {BOMB_SECS} s)",
                    if ok { "ok  " } else { "FAIL" },
                    r.outcome,
                    r.cpu.as_secs_f64() * 1e3
                );
            }
            None if args.is_empty() => {
                failed = true;
                println!("FAIL {bomb}: not found (run tests/fixtures/make-fixtures.sh)");
            }
            None => {}
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        println!("all inputs within {SECS_PER_MIB} s CPU per MiB");
        ExitCode::SUCCESS
    }
}
