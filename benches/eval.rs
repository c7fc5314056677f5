//! Accuracy and speed on the evaluation sets; prints numbers, asserts nothing.
//!
//! ```text
//! cargo bench --bench eval -- real [--model PATH] [--threads N] [--beam N] [--runs N]
//! cargo bench --bench eval -- context [--layers prompt,correction] [--beam N]
//! cargo bench --bench eval -- context-ablation [--beam N]
//! ```
//! `real`: every clip of ../shared/eval/real (converted to supported containers by
//! scripts/prepare-eval.sh): latency and real-time factor per clip, jfk's median latency
//! over `--runs` runs, and the WER per language from ../shared/eval/score.py.
//!
//! `context`: the dictation cases of ../shared/eval/context with their messages and
//! dictionary, through the context layers named by `--layers` (`all`, `none`, or a
//! comma list of `prompt`, `correction`, `biasing`, `judge`; default: the library's
//! default layers, `default`); term_recall,
//! false_insertions and WER from score.py, hypotheses in target/bench/.
//! `CTXSCRIBE_EVAL_CONTEXT_DIR=DIR` takes the cases from DIR instead (the held-out set
//! that benches/heldout/synthesize.sh writes to target/heldout).
//! `context-ablation`: the same for no context, each layer alone and both
//! (`--reuse-baseline` takes the no-context decoding from target/bench/).
//!
//! `recorrect HYPS`: no model; applies the correction layer to the hypotheses of an
//! earlier `context` run (e.g. target/bench/context-prompt-hyps.jsonl) and scores them,
//! to work on correction without decoding again.
//!
//! The real clips with context (the LibriSpeech rare-word lists, irrelevant contexts,
//! 1000 unrelated terms) are context sets too: benches/realctx/run.sh writes and scores
//! them (`make eval-real-context`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use ctxscribe::context::ContextLayers;
use ctxscribe::{ContextTranscriber, ContextTranscriberBuilder, Decoding, Dictionary, Languages};
use ctxscribe_test_support::{ContextCase, ctxset_breakdown, read_context_cases};

struct Options {
    mode: String,
    model: Option<PathBuf>,
    threads: Option<usize>,
    beam: Option<u8>,
    runs: usize,
    layers: ContextLayers,
    /// `context-ablation`: take the no-context pass from an earlier run's hypotheses.
    reuse_baseline: bool,
}

/// `all`, `none`, or a comma list of `prompt`, `correction`, `biasing`.
fn parse_layers(text: &str) -> Result<ContextLayers, String> {
    match text {
        "all" => return Ok(ContextLayers::ALL),
        "default" => return Ok(ContextLayers::DEFAULT),
        "none" | "" => return Ok(ContextLayers::NONE),
        _ => {}
    }
    let mut layers = ContextLayers::NONE;
    for name in text.split(',').map(str::trim) {
        match name {
            "prompt" => layers.prompt = true,
            "correction" => layers.correction = true,
            "biasing" => layers.biasing = true,
            "judge" => layers.judge = true,
            other => {
                return Err(format!(
                    "unknown layer {other} (prompt, correction, biasing, judge)"
                ));
            }
        }
    }
    Ok(layers)
}

/// A short name of a layer set, for tables and file names.
fn layers_name(layers: ContextLayers) -> String {
    let mut names = Vec::new();
    if layers.prompt {
        names.push("prompt");
    }
    if layers.correction {
        names.push("correction");
    }
    if layers.biasing {
        names.push("biasing");
    }
    if layers.judge {
        names.push("judge");
    }
    if names.is_empty() {
        "none".to_owned()
    } else {
        names.join("+")
    }
}

fn parse_options() -> Result<Options, String> {
    let mut options = Options {
        mode: "real".into(),
        model: None,
        threads: None,
        beam: None,
        runs: 5,
        layers: ContextLayers::DEFAULT,
        reuse_baseline: false,
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
            "--layers" => options.layers = parse_layers(&value("--layers")?)?,
            "--reuse-baseline" => options.reuse_baseline = true,
            "recorrect" => options.mode = format!("recorrect={}", value("recorrect")?),
            mode if !mode.starts_with('-') => options.mode = mode.to_owned(),
            other => return Err(format!("unknown option {other}")),
        }
    }
    Ok(options)
}

fn main() {
    // The engine's threads wait as in the CLI and the server (docs/engine.md#threads).
    ctxscribe::config::exec_with_engine_environment();
    let options = match parse_options() {
        Ok(options) => options,
        Err(message) => {
            eprintln!("eval: {message}");
            std::process::exit(2);
        }
    };
    let root = ctxscribe_test_support::repo_root();
    let shared = ctxscribe_test_support::shared_dir();
    let set = ContextSet::from_env(&shared);
    let paths = &Paths {
        root: root.clone(),
        shared: shared.clone(),
        set,
    };
    let base_builder = {
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
        builder
    };
    let load = |layers: ContextLayers| load_transcriber(base_builder.clone(), layers);
    if let Some(hyps) = options.mode.strip_prefix("recorrect=") {
        if let Some(summary) = recorrect(Path::new(hyps), paths, true) {
            println!("{summary}");
        }
        return;
    }
    match options.mode.as_str() {
        "real" => bench_real(&load(options.layers), &root, &shared, options.runs),
        "context" => {
            let summary = bench_context(&load(options.layers), options.layers, paths, true);
            println!("{}", summary.unwrap_or_default());
        }
        "context-ablation" => context_ablation(&options, paths, &load),
        other => {
            eprintln!("eval: unknown mode {other} (expected: real, context, context-ablation)");
            std::process::exit(2);
        }
    }
}

/// `context-ablation`: the context set decoded with each layer combination; prints one
/// row per combination.
fn context_ablation(
    options: &Options,
    paths: &Paths,
    load: &dyn Fn(ContextLayers) -> ContextTranscriber,
) {
    // With the prompt off, correction is a pure function of the decoded text: the
    // unprompted decoding is scored without and with it. With the prompt on, the
    // second pass is chosen with the correction layer, so both are decoded.
    let none = ContextLayers::NONE;
    let prompt = ContextLayers {
        prompt: true,
        ..none
    };
    let prompt_correction = ContextLayers {
        correction: true,
        ..prompt
    };
    let biasing = ContextLayers {
        biasing: true,
        ..none
    };
    let biasing_correction = ContextLayers {
        correction: true,
        ..biasing
    };
    let mut rows = Vec::new();
    let none_hyps = paths.set.hyps_path(&paths.root, none);
    if options.reuse_baseline && none_hyps.is_file() {
        let raw = recorrect_with(&none_hyps, paths, false, false);
        rows.push(format!(
            "{:<22} {} (reused)",
            "none",
            raw.unwrap_or_default()
        ));
    } else {
        let started = Instant::now();
        let raw = bench_context(&load(none), none, paths, false);
        let secs = started.elapsed().as_secs_f64();
        rows.push(format!(
            "{:<22} {} ({secs:.0} s)",
            "none",
            raw.unwrap_or_default()
        ));
    }
    let corrected = recorrect(&none_hyps, paths, false);
    rows.push(format!(
        "{:<22} {}",
        "correction",
        corrected.unwrap_or_default()
    ));
    println!("{}\n{}", rows[0], rows[1]);
    for layers in [
        prompt,
        biasing,
        prompt_correction,
        biasing_correction,
        ContextLayers::DEFAULT,
        ContextLayers::ALL,
    ] {
        let started = Instant::now();
        let summary = bench_context(&load(layers), layers, paths, false);
        let secs = started.elapsed().as_secs_f64();
        let row = format!(
            "{:<22} {} ({secs:.0} s)",
            layers_name(layers),
            summary.unwrap_or_default()
        );
        println!("{row}");
        rows.push(row);
    }
    let decoding = options
        .beam
        .map_or("greedy".to_owned(), |b| format!("beam {b}"));
    println!("\nablation ({decoding}):");
    for row in rows {
        println!("{row}");
    }
}

fn load_transcriber(
    builder: ContextTranscriberBuilder,
    layers: ContextLayers,
) -> ContextTranscriber {
    let load_started = Instant::now();
    match builder.with_context_layers(layers).build() {
        Ok(t) => {
            println!(
                "model loaded in {:.2} s (layers: {})",
                load_started.elapsed().as_secs_f64(),
                layers_name(layers)
            );
            t
        }
        Err(e) => {
            eprintln!("eval: {e}");
            std::process::exit(1);
        }
    }
}

/// Where the bench reads and writes.
struct Paths {
    /// The repository.
    root: PathBuf,
    /// ../shared (or `CTXSCRIBE_SHARED`).
    shared: PathBuf,
    set: ContextSet,
}

/// The context set: ../shared/eval/context, or `CTXSCRIBE_EVAL_CONTEXT_DIR` (another set
/// laid out the same way: benches/ctxset, benches/heldout, benches/realctx write some).
struct ContextSet {
    dir: PathBuf,
    /// `NAME-` for another set than ../shared/eval/context, so that its hypotheses are
    /// kept apart; empty for that one.
    hyps_prefix: String,
}

impl ContextSet {
    fn from_env(shared: &Path) -> ContextSet {
        match std::env::var_os("CTXSCRIBE_EVAL_CONTEXT_DIR") {
            Some(dir) => {
                let dir = PathBuf::from(dir);
                let hyps_prefix = dir
                    .file_name()
                    .map(|n| format!("{}-", n.to_string_lossy()))
                    .unwrap_or_default();
                ContextSet { dir, hyps_prefix }
            }
            None => ContextSet {
                dir: shared.join("eval/context"),
                hyps_prefix: String::new(),
            },
        }
    }

    fn cases_path(&self) -> PathBuf {
        self.dir.join("cases.jsonl")
    }

    /// target/bench/context-[SET-]LAYERS-hyps.jsonl.
    fn hyps_path(&self, root: &Path, layers: ContextLayers) -> PathBuf {
        root.join(format!(
            "target/bench/context-{}{}-hyps.jsonl",
            self.hyps_prefix,
            layers_name(layers)
        ))
    }
}

/// Runs the context dev set through `transcriber`; returns score.py's summary line.
fn bench_context(
    transcriber: &ContextTranscriber,
    layers: ContextLayers,
    paths: &Paths,
    verbose: bool,
) -> Option<String> {
    let cases_path = paths.set.cases_path();
    let cases = match read_context_cases(&cases_path) {
        Ok(cases) => cases,
        Err(e) => {
            eprintln!("eval: {e}");
            return None;
        }
    };
    let hyps_path = paths.set.hyps_path(&paths.root, layers);
    if let Some(out_dir) = hyps_path.parent() {
        let _ = std::fs::create_dir_all(out_dir);
    }
    let (hyps, times) = decode_cases(transcriber, cases, &paths.set.dir);
    if let Err(e) = std::fs::write(&hyps_path, hyps.join("\n") + "\n") {
        eprintln!("eval: cannot write {}: {e}", hyps_path.display());
        return None;
    }
    let output = Command::new("python3")
        .arg(paths.shared.join("eval/score.py"))
        .arg("context")
        .arg(&cases_path)
        .arg(&hyps_path)
        .output();
    let output = match output {
        Ok(output) => String::from_utf8_lossy(&output.stdout).into_owned(),
        Err(e) => {
            eprintln!("eval: cannot run score.py: {e}");
            return None;
        }
    };
    if verbose {
        for line in output.lines() {
            println!("{line}");
        }
        println!("written: {}", hyps_path.display());
        // Term recall and WER per kind of voice, and the WER of the words outside the
        // terms (what no term edit can fix).
        match ctxset_breakdown(&cases_path, &[("ctxscribe", &hyps_path)]) {
            Ok(table) => {
                print!("by voice (outside = WER of the words outside the terms):\n{table}")
            }
            Err(e) => eprintln!("eval: {e}"),
        }
    }
    let summary = output
        .lines()
        .last()
        .unwrap_or_default()
        .trim_start_matches("summary: ");
    Some(format!("{summary} {}", timing_summary(times)))
}

/// `time/case=... p50=... p90=... max=...` of the seconds per case.
fn timing_summary(mut times: Vec<f64>) -> String {
    let total_time: f64 = times.iter().sum();
    let slowest = times.iter().copied().fold(0.0, f64::max);
    #[allow(clippy::cast_precision_loss)]
    let mean = total_time / times.len().max(1) as f64;
    times.sort_by(f64::total_cmp);
    let quantile = |q: f64| {
        // Nearest rank: a small positive index.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let rank = ((q * times.len() as f64).ceil() as usize).clamp(1, times.len().max(1));
        times.get(rank - 1).copied().unwrap_or(0.0)
    };
    format!(
        "time/case={mean:.2}s p50={:.2}s p90={:.2}s max={slowest:.2}s",
        quantile(0.5),
        quantile(0.9)
    )
}

/// Transcribes `cases` (their audio in `set_dir`); gives one JSON line per case and the
/// seconds each took. `CTXSCRIBE_EVAL_ONLY=d05,d18` runs only those cases (to look at
/// them closely).
fn decode_cases(
    transcriber: &ContextTranscriber,
    cases: Vec<ContextCase>,
    set_dir: &Path,
) -> (Vec<String>, Vec<f64>) {
    let mut hyps = Vec::new();
    let mut times: Vec<f64> = Vec::new();
    let only: Option<Vec<String>> = std::env::var("CTXSCRIBE_EVAL_ONLY")
        .ok()
        .map(|ids| ids.split(',').map(str::to_owned).collect());
    for case in cases {
        if only.as_ref().is_some_and(|ids| !ids.contains(&case.id)) {
            continue;
        }
        let bytes = std::fs::read(case.audio_path(set_dir)).unwrap_or_default();
        let started = Instant::now();
        let result = transcriber.transcribe_blocking(
            bytes.into(),
            case.messages,
            case.languages,
            case.dictionary,
        );
        let elapsed = started.elapsed().as_secs_f64();
        times.push(elapsed);
        let (text, language, edits) = match result {
            Ok(t) => (t.text, t.language.map(|l| l.code()), t.edits),
            Err(e) => {
                eprintln!("eval: {}: {e}", case.id);
                (String::new(), None, Vec::new())
            }
        };
        hyps.push(
            serde_json::json!({
                "id": case.id,
                "text": text,
                "language": language,
                "secs": elapsed,
                "edits": edits,
            })
            .to_string(),
        );
    }
    (hyps, times)
}

/// Applies the correction layer to the hypotheses in `hyps_path` (with the language
/// each was decoded in) and scores them against the set's cases; returns score.py's
/// summary and the time taken.
fn recorrect(hyps_path: &Path, paths: &Paths, verbose: bool) -> Option<String> {
    recorrect_with(hyps_path, paths, verbose, true)
}

/// [`recorrect`], or with `correct` false only the scoring of the hypotheses as they are.
fn recorrect_with(hyps_path: &Path, paths: &Paths, verbose: bool, correct: bool) -> Option<String> {
    let cases_path = paths.set.cases_path();
    let cases = match read_context_cases(&cases_path) {
        Ok(cases) => cases,
        Err(e) => {
            eprintln!("eval: {e}");
            return None;
        }
    };
    let hyps_text = std::fs::read_to_string(hyps_path).unwrap_or_default();
    let mut hyps: std::collections::HashMap<String, (String, Option<String>)> = Default::default();
    for line in hyps_text.lines().filter(|l| !l.trim().is_empty()) {
        if let Ok(value) = serde_json::from_str::<serde_json::Value>(line) {
            let field = |name: &str| value[name].as_str().map(str::to_owned);
            hyps.insert(
                field("id").unwrap_or_default(),
                (field("text").unwrap_or_default(), field("language")),
            );
        }
    }
    let mut lines = Vec::new();
    let started = Instant::now();
    for case in &cases {
        let (text, language) = hyps.get(&case.id).cloned().unwrap_or_default();
        let language = language.and_then(|code| ctxscribe::Language::from_code(&code).ok());
        let terms =
            ctxscribe::context::ContextTerms::from_context(&case.messages, &case.dictionary);
        let corrected = if correct {
            ctxscribe::correction::Corrector::new(&terms).correct(&text, language)
        } else {
            ctxscribe::correction::Correction {
                text,
                replacements: Vec::new(),
            }
        };
        for replacement in corrected.replacements.iter().filter(|_| verbose) {
            println!(
                "{}: {:?} -> {:?} (cost {:.3})",
                case.id, replacement.original, replacement.term, replacement.cost
            );
        }
        lines.push(serde_json::json!({ "id": case.id, "text": corrected.text }).to_string());
    }
    let correction_ms = started.elapsed().as_secs_f64() * 1e3;
    let out_path = paths.root.join("target/bench/recorrected-hyps.jsonl");
    let _ = std::fs::write(&out_path, lines.join("\n") + "\n");
    let output = Command::new("python3")
        .arg(paths.shared.join("eval/score.py"))
        .arg("context")
        .arg(&cases_path)
        .arg(&out_path)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    if verbose {
        print!("{output}");
    }
    let summary = output
        .lines()
        .last()?
        .trim_start_matches("summary: ")
        .to_owned();
    Some(format!(
        "{summary} correction={correction_ms:.1}ms/{} cases",
        cases.len()
    ))
}

fn bench_real(transcriber: &ContextTranscriber, root: &Path, shared: &Path, runs: usize) {
    let clips = match ctxscribe_test_support::real_clips() {
        Ok(clips) => clips,
        Err(e) => {
            eprintln!("eval: {e}");
            std::process::exit(1);
        }
    };
    let manifest_path = ctxscribe_test_support::real_manifest_path();
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

    let jfk = clips
        .iter()
        .find(|c| c.id == "en_whisper_jfk")
        .map_or_else(PathBuf::new, |c| c.path.clone());
    print_jfk_latency(&transcribe, &jfk, runs);

    println!(
        "{:<34} {:>4} {:>7} {:>8} {:>6}",
        "clip", "lang", "audio_s", "latency", "rtf"
    );
    let (mut total_audio, mut total_time) = (0.0, 0.0);
    for clip in &clips {
        let (id, duration) = (&clip.id, clip.duration_secs);
        let (result, elapsed) = transcribe(&clip.path);
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

/// jfk: median latency over `runs` runs of `transcribe` (model loaded, one warm-up run
/// first).
fn print_jfk_latency<R>(transcribe: &impl Fn(&Path) -> (R, Duration), jfk: &Path, runs: usize) {
    let _ = transcribe(jfk);
    let mut latencies: Vec<Duration> = (0..runs.max(1)).map(|_| transcribe(jfk).1).collect();
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
}
