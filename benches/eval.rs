//! Accuracy and speed on the evaluation sets; prints numbers, asserts nothing.
//!
//! ```text
//! cargo bench --bench eval -- real [--model PATH] [--threads N] [--beam N] [--runs N]
//! ```
//! `real`: every clip of ../shared/eval/real (converted to supported containers by
//! scripts/prepare-eval.sh): latency and real-time factor per clip, jfk's median latency
//! over `--runs` runs, and the WER per language from ../shared/eval/score.py.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use ctxscribe::{ContextTranscriber, Decoding, Dictionary, Languages};

struct Options {
    mode: String,
    model: Option<PathBuf>,
    threads: Option<usize>,
    beam: Option<u8>,
    runs: usize,
}

fn parse_options() -> Result<Options, String> {
    let mut options = Options {
        mode: "real".into(),
        model: None,
        threads: None,
        beam: None,
        runs: 5,
    };
    let mut args = std::env::args().skip(1).filter(|a| a != "--bench");
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--model" => options.model = Some(PathBuf::from(value("--model")?)),
            "--threads" => {
                options.threads = Some(value("--threads")?.parse().map_err(|e| format!("{e}"))?);
            }
            "--beam" => options.beam = Some(value("--beam")?.parse().map_err(|e| format!("{e}"))?),
            "--runs" => options.runs = value("--runs")?.parse().map_err(|e| format!("{e}"))?,
            mode if !mode.starts_with('-') => options.mode = mode.to_owned(),
            other => return Err(format!("unknown option {other}")),
        }
    }
    Ok(options)
}

fn main() {
    let options = match parse_options() {
        Ok(options) => options,
        Err(message) => {
            eprintln!("eval: {message}");
            std::process::exit(2);
        }
    };
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let shared = std::env::var_os("CTXSCRIBE_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("../shared"));
    let mut builder = ContextTranscriber::builder();
    if let Some(model) = &options.model {
        builder = builder.with_model_path(model);
    }
    if let Some(threads) = options.threads {
        builder = builder.with_threads(threads);
    }
    if let Some(beam) = options.beam {
        builder = builder.with_decoding(Decoding::BeamSearch { beam_size: beam });
    }
    let load_started = Instant::now();
    let transcriber = match builder.build() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("eval: {e}");
            std::process::exit(1);
        }
    };
    println!(
        "model loaded in {:.2} s",
        load_started.elapsed().as_secs_f64()
    );
    match options.mode.as_str() {
        "real" => bench_real(&transcriber, &root, &shared, options.runs),
        other => {
            eprintln!("eval: unknown mode {other} (expected: real)");
            std::process::exit(2);
        }
    }
}

fn bench_real(transcriber: &ContextTranscriber, root: &Path, shared: &Path, runs: usize) {
    let clips_dir = root.join("target/fixtures/real");
    let status = Command::new("bash")
        .arg(root.join("scripts/prepare-eval.sh"))
        .arg(&clips_dir)
        .status();
    if !status.is_ok_and(|s| s.success()) {
        eprintln!("eval: scripts/prepare-eval.sh failed");
        std::process::exit(1);
    }
    let manifest_path = shared.join("eval/real/manifest.tsv");
    let manifest = std::fs::read_to_string(&manifest_path).unwrap_or_default();
    let out_dir = root.join("target/bench");
    let _ = std::fs::create_dir_all(&out_dir);
    let hyps_path = out_dir.join("real-hyps.jsonl");
    let mut hyps = Vec::new();

    let transcribe = |path: &Path| {
        let bytes = std::fs::read(path).unwrap_or_default();
        let started = Instant::now();
        let result = transcriber.transcribe_blocking(
            bytes.into(),
            vec![],
            Languages::Auto,
            Dictionary::default(),
        );
        (result, started.elapsed())
    };

    // jfk: median latency over several runs (model loaded, one warm-up run first).
    let jfk = clips_dir.join("en_whisper_jfk.wav");
    let _ = transcribe(&jfk);
    let mut latencies: Vec<Duration> = (0..runs.max(1)).map(|_| transcribe(&jfk).1).collect();
    latencies.sort();
    let median = latencies[latencies.len() / 2];
    println!(
        "jfk.wav (11.0 s): median latency {:.3} s over {} runs (min {:.3}, max {:.3}), RTF {:.3}",
        median.as_secs_f64(),
        latencies.len(),
        latencies[0].as_secs_f64(),
        latencies[latencies.len() - 1].as_secs_f64(),
        median.as_secs_f64() / 11.0
    );

    println!(
        "{:<34} {:>4} {:>7} {:>8} {:>6}",
        "clip", "lang", "audio_s", "latency", "rtf"
    );
    let (mut total_audio, mut total_time) = (0.0, 0.0);
    for line in manifest.lines().skip(1).filter(|l| !l.trim().is_empty()) {
        let cols: Vec<&str> = line.split('\t').collect();
        let (id, duration) = (cols[0], cols[3].parse::<f64>().unwrap_or(0.0));
        let (result, elapsed) = transcribe(&clips_dir.join(format!("{id}.wav")));
        let (text, language) = match result {
            Ok(t) => (t.text, t.language.map_or("-", |l| l.code()).to_owned()),
            Err(e) => (String::new(), format!("ERR {}", e.code())),
        };
        total_audio += duration;
        total_time += elapsed.as_secs_f64();
        println!(
            "{id:<34} {language:>4} {duration:>7.2} {:>8.3} {:>6.3}",
            elapsed.as_secs_f64(),
            elapsed.as_secs_f64() / duration.max(0.01)
        );
        hyps.push(serde_json::json!({ "id": id, "text": text }).to_string());
    }
    println!(
        "total: {total_audio:.1} s of audio in {total_time:.1} s, RTF {:.3}",
        total_time / total_audio.max(0.01)
    );
    let written = std::fs::File::create(&hyps_path)
        .and_then(|mut f| f.write_all((hyps.join("\n") + "\n").as_bytes()));
    if let Err(e) = written {
        eprintln!("eval: cannot write {}: {e}", hyps_path.display());
        return;
    }
    let scored = Command::new("python3")
        .arg(shared.join("eval/score.py"))
        .arg("real")
        .arg(&manifest_path)
        .arg(&hyps_path)
        .output();
    match scored {
        Ok(output) => {
            let text = String::from_utf8_lossy(&output.stdout);
            if let Some(summary) = text.lines().last() {
                println!("{summary}");
            }
        }
        Err(e) => eprintln!("eval: cannot run score.py: {e}"),
    }
}
