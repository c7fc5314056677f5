//! Dictation latency of ctxscribe against faster-whisper, side by side in one run; prints
//! numbers, asserts nothing.
//!
//! ```text
//! cargo bench --bench speed -- [--runs N] [--threads N] [--model PATH] [--beam N]
//!     [--sets 3s,5s,10s,15s,jfk,60s,5min,context,ctx-tuning,ctx-validation,ctxlong-tuning,
//!             ctxlong-validation,ctxforeign-tuning,ctxforeign-validation,real] [--no-fw]
//!     [--concurrency]
//!     [--python PATH] [--ct2 DIR] [--fw-compute int8|float32]
//! ```
//! `make bench` installs faster-whisper into target/venv-fw and runs this. faster-whisper
//! (int8, greedy, its defaults otherwise) runs as a persistent subprocess
//! (benches/fw_driver.py) on the same CTranslate2 weights that ctxscribe's model was
//! converted from (models/ct2/base); both engines get the same 16 kHz samples, in
//! alternating order, and language detection on (no language given), as a user's default
//! request would. Clips are built from the English clips of ../shared/eval/real: "3s" ..
//! "15s" join consecutive clips up to about that length (up to 10 clips, none sharing a
//! source clip), "jfk" is the 11 s jfk clip alone, "60s" and "5min" join them (cycled)
//! into one long file; "context" is
//! ../shared/eval/context with each case's messages and dictionary (faster-whisper gets
//! ctxscribe's rendered prompt as `initial_prompt` and searches with 5 beams, its
//! default); "ctx-tuning" and "ctx-validation" are the two halves of benches/ctxset
//! (target/ctxset, made by its synthesize.sh), likewise, with p90 latency besides the
//! median; "ctxlong-tuning" and "ctxlong-validation" are long dictations joined from
//! those halves' English sentences with the union of their context (target/ctxlong, made
//! by benches/ctxlong/synthesize.sh), likewise; "ctxforeign-tuning" and
//! "ctxforeign-validation" are those halves' German, French and Spanish cases spoken by
//! espeak-ng voices of each language (target/ctxforeign, made by
//! `CTXSET_FOREIGN_ESPEAK=1 benches/ctxset/synthesize.sh`), likewise; "real" is every clip of
//! ../shared/eval/real as it is (11 languages, once each: the widest WER comparison).
//! WER and term recall come from ../shared/eval/score.py (the eval's own normaliser).
//! With the 5 s set, the cost of a second decode of a window (on the same encoding)
//! against the window's first pass is printed too, and a decoder step's cost with each
//! format of the weights in memory (`Weights`). `--concurrency`: requests/s for 5 s
//! clips with 1, 2 and 4 concurrent requests on one shared transcriber.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use ctxscribe::{Audio, ContextTranscriber, Decoding, Dictionary, Languages, Message};
use ctxscribe_test_support::ctxset_breakdown;

mod engine;
mod fw;
mod sets;

use fw::FasterWhisper;
use sets::{context_set, joined_set, load_real_clips, long_set, single_set};

const RATE: f64 = 16_000.0;
/// Requests per concurrency level in the throughput bench.
const THROUGHPUT_REQUESTS: usize = 16;
/// Silence between two joined clips, in seconds.
const GAP_SECS: f64 = 0.3;
/// faster-whisper's beam size on the context sets (its default).
const FW_CONTEXT_BEAM: usize = 5;

struct Options {
    runs: usize,
    threads: usize,
    model: Option<PathBuf>,
    beam: Option<u8>,
    sets: Vec<String>,
    fw: bool,
    concurrency: bool,
    python: PathBuf,
    ct2: PathBuf,
    /// faster-whisper's `compute_type`.
    fw_compute: String,
}

fn parse_options(root: &Path) -> Result<Options, String> {
    let mut options = Options {
        runs: 5,
        threads: 2,
        model: None,
        beam: None,
        sets: [
            "3s",
            "5s",
            "10s",
            "15s",
            "60s",
            "5min",
            "context",
            "ctx-tuning",
            "ctx-validation",
            "real",
        ]
        .map(String::from)
        .to_vec(),
        fw: true,
        concurrency: false,
        python: root.join("target/venv-fw/bin/python"),
        ct2: root.join("models/ct2/base"),
        fw_compute: "int8".into(),
    };
    let mut args = std::env::args().skip(1).filter(|a| a != "--bench");
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        let number = |text: String| text.parse::<usize>().map_err(|e| format!("{e}"));
        match arg.as_str() {
            "--runs" => options.runs = number(value("--runs")?)?.max(1),
            "--threads" => options.threads = number(value("--threads")?)?.max(1),
            "--model" => options.model = Some(PathBuf::from(value("--model")?)),
            "--beam" => options.beam = Some(value("--beam")?.parse().map_err(|e| format!("{e}"))?),
            "--sets" => {
                options.sets = value("--sets")?
                    .split(',')
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect();
            }
            "--no-fw" => options.fw = false,
            "--concurrency" => options.concurrency = true,
            "--python" => options.python = PathBuf::from(value("--python")?),
            "--ct2" => options.ct2 = PathBuf::from(value("--ct2")?),
            "--fw-compute" => options.fw_compute = value("--fw-compute")?,
            other => return Err(format!("unknown option {other}")),
        }
    }
    Ok(options)
}

/// One test input with what is needed to score it.
struct Clip {
    id: String,
    samples: Vec<f32>,
    reference: String,
    messages: Vec<Message>,
    dictionary: Dictionary,
    languages: Languages,
    /// The language passed to faster-whisper (`None`: it detects).
    fw_language: Option<String>,
    /// The reference's language code, for the scorer's normaliser.
    reference_language: String,
}

impl Clip {
    fn secs(&self) -> f64 {
        self.samples.len() as f64 / RATE
    }
}

struct Set {
    name: String,
    clips: Vec<Clip>,
    runs: usize,
    /// The cases file of a context set (scored for term recall), `None` for plain sets.
    cases: Option<PathBuf>,
}

impl Set {
    fn is_context(&self) -> bool {
        self.cases.is_some()
    }
}

fn main() {
    // The engine's threads wait as in the CLI and the server (docs/engine.md#threads).
    ctxscribe::config::exec_with_engine_environment();
    let root = ctxscribe_test_support::repo_root();
    let options = match parse_options(&root) {
        Ok(options) => options,
        Err(message) => {
            eprintln!("speed: {message}");
            std::process::exit(2);
        }
    };
    let shared = ctxscribe_test_support::shared_dir();
    if let Err(message) = run(&root, &shared, &options) {
        eprintln!("speed: {message}");
        std::process::exit(1);
    }
}

/// ctxscribe with `options`' threads, model and beam; prints it and its load time.
fn load_transcriber(options: &Options) -> Result<ContextTranscriber, String> {
    let mut builder = ContextTranscriber::builder().with_threads(options.threads);
    if let Some(model) = &options.model {
        builder = builder.with_model_path(model);
    }
    if let Some(beam) = options.beam {
        builder = builder.with_decoding(Decoding::BeamSearch { beam_size: beam });
    }
    let started = Instant::now();
    let transcriber = builder.build().map_err(|e| e.to_string())?;
    println!(
        "ctxscribe: {transcriber:?}, loaded in {:.2} s",
        started.elapsed().as_secs_f64()
    );
    Ok(transcriber)
}

fn run(root: &Path, shared: &Path, options: &Options) -> Result<(), String> {
    println!("load average at start: {}", load_average());
    let transcriber = load_transcriber(options)?;

    let real = load_real_clips()?;
    let english: Vec<(String, Vec<f32>, String)> = real
        .iter()
        .filter(|clip| clip.reference_language == "en")
        .map(|clip| {
            (
                clip.id.clone(),
                clip.samples.clone(),
                clip.reference.clone(),
            )
        })
        .collect();
    if english.is_empty() {
        return Err("no English clips in the eval manifest".into());
    }
    let sets = build_sets(root, shared, options, real, &english)?;

    let mut fw = if options.fw {
        let started = Instant::now();
        let fw = FasterWhisper::start(root, options)?;
        println!(
            "faster-whisper: {}, greedy, {} threads, {}, loaded in {:.2} s",
            options.fw_compute,
            options.threads,
            options.ct2.display(),
            started.elapsed().as_secs_f64()
        );
        Some(fw)
    } else {
        None
    };

    // Warm-up: one short clip through each engine.
    if let Some(clip) = sets.iter().flat_map(|s| s.clips.first()).next() {
        let _ = transcribe_ctx(&transcriber, clip);
        if let Some(fw) = fw.as_mut() {
            fw.transcribe(clip, 1)?;
        }
    }

    let out_dir = root.join("target/bench");
    std::fs::create_dir_all(&out_dir).map_err(|e| e.to_string())?;
    let mut rows = Vec::new();
    for set in &sets {
        let row = bench_set(&transcriber, fw.as_mut(), set, shared, &out_dir)?;
        print_row_header();
        print_row(&row);
        rows.push(row);
    }

    print_summary(options, &rows, fw.as_mut())?;
    print_breakdowns(&sets, &out_dir, fw.is_some());

    if let Some(five) = sets.iter().find(|s| s.name == "5s") {
        engine::bench_second_decode(options, &five.clips)?;
        engine::bench_decoder_step(options, &five.clips)?;
    }

    if options.concurrency {
        drop(fw);
        let five = sets
            .iter()
            .find(|s| s.name == "5s")
            .map_or_else(|| joined_set("5s", &english, 5.0, 5, 1), |s| s.copy());
        bench_concurrency(&transcriber, &five.clips);
    }
    Ok(())
}

/// The sets of `options.sets`, from the `real` clips (`english`: the English ones, id,
/// samples and reference) and the context sets.
fn build_sets(
    root: &Path,
    shared: &Path,
    options: &Options,
    real: Vec<Clip>,
    english: &[(String, Vec<f32>, String)],
) -> Result<Vec<Set>, String> {
    let mut real = Some(real);
    let mut sets = Vec::new();
    for name in &options.sets {
        let set = match name.as_str() {
            "3s" => joined_set(name, english, 3.0, 10, options.runs),
            "5s" => joined_set(name, english, 5.0, 10, options.runs),
            "10s" => joined_set(name, english, 10.0, 10, options.runs),
            "15s" => joined_set(name, english, 15.0, 10, options.runs),
            "jfk" => single_set(name, english, "en_whisper_jfk", options.runs)?,
            "60s" => long_set(name, english, 60.0, options.runs.min(3)),
            "5min" => long_set(name, english, 300.0, options.runs.min(2)),
            "context" => context_set(&shared.join("eval/context"), name, options.runs.min(2))?,
            "ctx-tuning"
            | "ctx-validation"
            | "ctxlong-tuning"
            | "ctxlong-validation"
            | "ctxforeign-tuning"
            | "ctxforeign-validation" => {
                // benches/ctxset/synthesize.sh (ctxforeign: with CTXSET_FOREIGN_ESPEAK=1)
                // and benches/ctxlong/synthesize.sh write them (make bench runs the first).
                let (set, half) = name.split_once('-').unwrap_or((name, ""));
                let set = if set == "ctx" { "ctxset" } else { set };
                let dir = root.join("target").join(set).join(half);
                if !dir.join("cases.jsonl").is_file() {
                    println!("speed: skipping {name}: run benches/{set}/synthesize.sh first");
                    continue;
                }
                context_set(&dir, name, 1)?
            }
            "real" => Set {
                name: name.clone(),
                clips: real.take().unwrap_or_default(),
                runs: 1,
                cases: None,
            },
            other => return Err(format!("unknown set {other}")),
        };
        sets.push(set);
    }
    Ok(sets)
}

/// For each half of benches/ctxset, [`ctxset_breakdown`] beside faster-whisper: term
/// recall and WER per kind of voice, the WER of the words outside the terms (what no
/// term edit can fix), the terms written more often than said and those written in
/// another case.
fn print_breakdowns(sets: &[Set], out_dir: &Path, fw_ran: bool) {
    for set in sets.iter().filter(|s| s.name.starts_with("ctx")) {
        let Some(cases) = &set.cases else { continue };
        let (ctx, fw) = (
            hyps_path(out_dir, set, "ctx"),
            hyps_path(out_dir, set, "fw"),
        );
        let mut runs = vec![("ctx", ctx.as_path())];
        if fw_ran {
            runs.push(("fw", fw.as_path()));
        }
        match ctxset_breakdown(cases, &runs) {
            Ok(table) => print!(
                "\n{} by voice (outside = WER of the words outside the terms; extra = terms \
                 written more often than said; case = terms written in another case):\n{table}",
                set.name
            ),
            Err(e) => eprintln!("speed: {e}"),
        }
    }
}

/// The summary table of every set's row, and both engines' peak memory.
fn print_summary(
    options: &Options,
    rows: &[Row],
    fw: Option<&mut FasterWhisper>,
) -> Result<(), String> {
    println!();
    println!(
        "summary ({} threads each; latency = median over clips x runs; load average now {})",
        options.threads,
        load_average()
    );
    print_row_header();
    for row in rows {
        print_row(row);
    }
    println!(
        "peak RSS: ctxscribe bench process {:.0} MB (includes the test audio)",
        peak_rss_mb()
    );
    if let Some(fw) = fw {
        println!(
            "peak RSS: faster-whisper driver {:.0} MB",
            fw.peak_rss_mb()?
        );
    }
    Ok(())
}

impl Set {
    fn copy(&self) -> Set {
        Set {
            name: self.name.clone(),
            runs: self.runs,
            cases: self.cases.clone(),
            clips: self
                .clips
                .iter()
                .map(|c| Clip {
                    id: c.id.clone(),
                    samples: c.samples.clone(),
                    reference: c.reference.clone(),
                    messages: c.messages.clone(),
                    dictionary: c.dictionary.clone(),
                    languages: c.languages.clone(),
                    fw_language: c.fw_language.clone(),
                    reference_language: c.reference_language.clone(),
                })
                .collect(),
        }
    }
}

struct Row {
    name: String,
    clips: usize,
    audio_secs: f64,
    ctx: f64,
    fw: Option<f64>,
    ctx_quality: String,
    fw_quality: String,
}

fn print_row_header() {
    println!(
        "{:<8} {:>5} {:>7} {:>8} {:>8} {:>6} {:>7} {:>7}  {:<34} {:<34}",
        "set",
        "clips",
        "audio_s",
        "ctx_s",
        "fw_s",
        "ratio",
        "ctx_rtf",
        "fw_rtf",
        "ctxscribe quality",
        "faster-whisper quality"
    );
}

fn print_row(row: &Row) {
    let (fw, ratio, fw_rtf) = match row.fw {
        Some(fw) => (
            format!("{fw:.3}"),
            format!("{:.2}", row.ctx / fw.max(1e-9)),
            format!("{:.3}", fw / row.audio_secs),
        ),
        None => ("-".into(), "-".into(), "-".into()),
    };
    println!(
        "{:<8} {:>5} {:>7.1} {:>8.3} {:>8} {:>6} {:>7.3} {:>7}  {:<34} {:<34}",
        row.name,
        row.clips,
        row.audio_secs,
        row.ctx,
        fw,
        ratio,
        row.ctx / row.audio_secs,
        fw_rtf,
        row.ctx_quality,
        row.fw_quality
    );
}

fn bench_set(
    transcriber: &ContextTranscriber,
    mut fw: Option<&mut FasterWhisper>,
    set: &Set,
    shared: &Path,
    out_dir: &Path,
) -> Result<Row, String> {
    let mut ctx_times = Vec::new();
    let mut fw_times = Vec::new();
    // With context, faster-whisper gets the context as its prompt and searches with 5
    // beams, its default (what a user of it would run); plain sets are greedy for both.
    let fw_beam = if set.is_context() { FW_CONTEXT_BEAM } else { 1 };
    // The first run's text and latency of each clip (written beside the text).
    let mut ctx_texts = vec![(String::new(), 0.0); set.clips.len()];
    let mut fw_texts = vec![(String::new(), 0.0); set.clips.len()];
    for run in 0..set.runs {
        for (index, clip) in set.clips.iter().enumerate() {
            // Alternate which engine goes first, so that neither always runs on a cache
            // the other has just warmed (or a CPU the other has just heated).
            let ctx_first = (run + index) % 2 == 0;
            let mut fw_result = None;
            if !ctx_first && let Some(fw) = fw.as_deref_mut() {
                fw_result = Some(fw.transcribe(clip, fw_beam)?);
            }
            let (text, secs) = transcribe_ctx(transcriber, clip);
            if ctx_first && let Some(fw) = fw.as_deref_mut() {
                fw_result = Some(fw.transcribe(clip, fw_beam)?);
            }
            ctx_times.push(secs);
            if run == 0 {
                ctx_texts[index] = (text, secs);
            }
            if let Some((text, secs)) = fw_result {
                fw_times.push(secs);
                if run == 0 {
                    fw_texts[index] = (text, secs);
                }
            }
        }
    }
    let audio_secs = set.clips.iter().map(Clip::secs).sum::<f64>() / set.clips.len() as f64;
    let fw_ran = fw.is_some();
    let (ctx_quality, fw_quality) = if set.is_context() {
        (
            format!(
                "{} p90={:.3}",
                score_context(shared, out_dir, "ctx", set, &ctx_texts)?,
                quantile(&mut ctx_times, 0.9)
            ),
            if fw_ran {
                format!(
                    "{} p90={:.3}",
                    score_context(shared, out_dir, "fw", set, &fw_texts)?,
                    quantile(&mut fw_times, 0.9)
                )
            } else {
                String::new()
            },
        )
    } else {
        (
            score_real(out_dir, "ctx", set, &ctx_texts)?,
            if fw_ran {
                score_real(out_dir, "fw", set, &fw_texts)?
            } else {
                String::new()
            },
        )
    };
    Ok(Row {
        name: set.name.clone(),
        clips: set.clips.len(),
        audio_secs,
        ctx: median(&mut ctx_times),
        fw: fw_ran.then(|| median(&mut fw_times)),
        ctx_quality,
        fw_quality,
    })
}

fn transcribe_ctx(transcriber: &ContextTranscriber, clip: &Clip) -> (String, f64) {
    let started = Instant::now();
    let result = transcriber.transcribe_blocking(
        Audio::Pcm {
            samples: clip.samples.clone(),
            sample_rate: 16_000,
        },
        clip.messages.clone(),
        clip.languages.clone(),
        clip.dictionary.clone(),
    );
    let secs = started.elapsed().as_secs_f64();
    match result {
        Ok(transcript) => (transcript.text, secs),
        Err(e) => {
            eprintln!("speed: ctxscribe failed on {}: {e}", clip.id);
            (String::new(), secs)
        }
    }
}

fn bench_concurrency(transcriber: &ContextTranscriber, clips: &[Clip]) {
    println!();
    println!(
        "throughput, 5 s clips, one shared transcriber (load average {})",
        load_average()
    );
    println!(
        "{:>11} {:>9} {:>9} {:>10} {:>12}",
        "concurrency", "requests", "wall_s", "requests/s", "median_lat_s"
    );
    for concurrency in [1usize, 2, 4] {
        // Untimed: one request per worker, so that each has a decoder state and the
        // engine's language guess is English, as in steady traffic.
        std::thread::scope(|scope| {
            for worker in 0..concurrency {
                scope.spawn(move || transcribe_ctx(transcriber, &clips[worker % clips.len()]));
            }
        });
        let per_worker = THROUGHPUT_REQUESTS / concurrency;
        let started = Instant::now();
        let mut latencies: Vec<f64> = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..concurrency)
                .map(|worker| {
                    scope.spawn(move || {
                        (0..per_worker)
                            .map(|i| {
                                let clip = &clips[(worker + i * concurrency) % clips.len()];
                                transcribe_ctx(transcriber, clip).1
                            })
                            .collect::<Vec<f64>>()
                    })
                })
                .collect();
            workers
                .into_iter()
                .flat_map(|w| w.join().unwrap_or_default())
                .collect()
        });
        let wall = started.elapsed().as_secs_f64();
        let requests = latencies.len();
        println!(
            "{concurrency:>11} {requests:>9} {wall:>9.2} {:>10.2} {:>12.3}",
            requests as f64 / wall,
            median(&mut latencies)
        );
    }
    println!("peak RSS: ctxscribe bench process {:.0} MB", peak_rss_mb());
}

/// Where `engine`'s texts of `set` are written (target/bench/speed-SET-ENGINE.jsonl).
fn hyps_path(out_dir: &Path, set: &Set, engine: &str) -> PathBuf {
    out_dir.join(format!("speed-{}-{engine}.jsonl", set.name))
}

/// One line per clip: its id, text and latency in seconds (`secs`, first run).
fn write_hyps(path: &Path, set: &Set, texts: &[(String, f64)]) -> Result<(), String> {
    let lines: String = set
        .clips
        .iter()
        .zip(texts)
        .map(|(clip, (text, secs))| {
            serde_json::json!({ "id": clip.id, "text": text, "secs": secs }).to_string() + "\n"
        })
        .collect();
    std::fs::write(path, lines).map_err(|e| format!("{}: {e}", path.display()))
}

/// WER of `texts` by score.py's `real` mode (its normaliser), on a manifest of this set.
fn score_real(
    out_dir: &Path,
    engine: &str,
    set: &Set,
    texts: &[(String, f64)],
) -> Result<String, String> {
    let manifest = out_dir.join(format!("speed-{}.tsv", set.name));
    let mut tsv = String::from("id\tfile\tlanguage\tduration_s\treference\n");
    for clip in &set.clips {
        tsv.push_str(&format!(
            "{}\t-\t{}\t{:.3}\t{}\n",
            clip.id,
            clip.reference_language,
            clip.secs(),
            clip.reference.replace(['\t', '\n'], " ")
        ));
    }
    std::fs::write(&manifest, tsv).map_err(|e| e.to_string())?;
    let hyps = hyps_path(out_dir, set, engine);
    write_hyps(&hyps, set, texts)?;
    let summary = score(&["real".as_ref(), manifest.as_os_str(), hyps.as_os_str()])?;
    if set.name == "real" {
        println!("{engine}: {summary}");
    }
    Ok(summary
        .split_whitespace()
        .find_map(|w| w.strip_prefix("wer_all="))
        .map_or(summary.clone(), |wer| format!("wer={wer}")))
}

/// Term recall, false insertions and WER by score.py's `context` mode.
fn score_context(
    shared: &Path,
    out_dir: &Path,
    engine: &str,
    set: &Set,
    texts: &[(String, f64)],
) -> Result<String, String> {
    let hyps = hyps_path(out_dir, set, engine);
    write_hyps(&hyps, set, texts)?;
    let cases = set
        .cases
        .clone()
        .unwrap_or_else(|| shared.join("eval/context/cases.jsonl"));
    let summary = score(&["context".as_ref(), cases.as_os_str(), hyps.as_os_str()])?;
    Ok(summary
        .trim_start_matches("summary: ")
        .replace("term_recall=", "recall=")
        .replace("false_insertions=", "ins="))
}

fn score(args: &[&std::ffi::OsStr]) -> Result<String, String> {
    let shared = std::env::var_os("CTXSCRIBE_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared"));
    let output = Command::new("python3")
        .arg(shared.join("eval/score.py"))
        .args(args)
        .output()
        .map_err(|e| format!("cannot run score.py: {e}"))?;
    let text = String::from_utf8_lossy(&output.stdout);
    text.lines()
        .last()
        .map(str::to_owned)
        .ok_or_else(|| "score.py printed nothing".into())
}

/// The nearest-rank `q` quantile of `values`.
fn quantile(values: &mut [f64], q: f64) -> f64 {
    values.sort_by(f64::total_cmp);
    // Nearest rank: a small positive index.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let rank = ((q * values.len() as f64).ceil() as usize).clamp(1, values.len().max(1));
    values.get(rank - 1).copied().unwrap_or(f64::NAN)
}

fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len().is_multiple_of(2) {
        (values[mid - 1] + values[mid]) / 2.0
    } else {
        values[mid]
    }
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

/// Peak resident set size of this process (VmHWM), in MB.
fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kb| kb / 1024.0)
}
