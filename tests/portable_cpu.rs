//! The portable engine's CPU kernels.
//!
//! On CPUs older than this machine's, emulated by qemu-user (`qemu-x86_64 -cpu MODEL`,
//! installed by `make setup`), the command line transcribes jfk with tiny.en exactly as
//! it does natively: on the linked-in x86-64-v2 kernels (Nehalem) and on the embedded AVX
//! module (Sandy Bridge). On Haswell it chooses the AVX2 module and answers without an
//! illegal instruction; qemu's emulation of FMA/F16C code is too slow for a transcription
//! there (over 10 minutes for jfk), so that module's arithmetic is checked natively
//! instead: here, every embedded module this CPU can run, forced by
//! `CTXSCRIBE_CPU_KERNELS`, transcribes jfk exactly. A CPU below the floor (Core 2, no
//! SSE4.2) and a bad `CTXSCRIBE_CPU_KERNELS` get typed errors, not SIGILL.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use serde_json::Value;

/// `ctxscribe transcribe --json` on jfk with tiny.en, under `qemu-x86_64 -cpu <cpu>`
/// when `cpu` is given: (exit status, the JSON line or Null, stderr).
fn transcribe_jfk(cpu: Option<&str>) -> (i32, Value, String) {
    transcribe(cpu, &real_clip("en_whisper_jfk").path, None)
}

/// `ctxscribe transcribe --json FILE` with tiny.en, under `qemu-x86_64 -cpu <cpu>` when
/// `cpu` is given, with `CTXSCRIBE_CPU_KERNELS=<kernels>` when given.
fn transcribe(cpu: Option<&str>, file: &Path, kernels: Option<&str>) -> (i32, Value, String) {
    let binary = env!("CARGO_BIN_EXE_ctxscribe");
    let mut command = match cpu {
        Some(cpu) => {
            let mut command = Command::new("qemu-x86_64");
            command.args(["-cpu", cpu, binary]);
            command
        }
        None => Command::new(binary),
    };
    command
        .args(["transcribe", "--json", "--model"])
        .arg(model("ggml-tiny.en.bin"))
        .arg(file)
        .env("CTXSCRIBE_THREADS", "2")
        // Set, so the binary does not re-execute itself to set it: a re-executed
        // process would run outside the emulator.
        .env("GOMP_SPINCOUNT", "1000");
    if let Some(kernels) = kernels {
        command.env("CTXSCRIBE_CPU_KERNELS", kernels);
    }
    let output = command.output().unwrap_or_else(|e| {
        panic!("cannot run {command:?}: {e} (qemu-user is installed by `make setup`)")
    });
    let stdout = String::from_utf8_lossy(&output.stdout);
    let json = stdout
        .lines()
        .find(|line| line.starts_with('{'))
        .map_or(Value::Null, |line| {
            serde_json::from_str(line).expect("JSON line")
        });
    (
        output.status.code().unwrap_or(-1),
        json,
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// jfk's text from this machine's best kernels, or `None` for a build with nothing to
/// emulate or choose (not x86-64, or a CTXSCRIBE_NATIVE=1 build, which runs only where it
/// was built, by design).
fn portable_jfk_text() -> Option<String> {
    if !cfg!(target_arch = "x86_64") {
        return None;
    }
    let (status, json, stderr) = transcribe_jfk(None);
    assert_eq!(status, 0, "{stderr}");
    (json["cpu_kernels"]["variant"] != "native")
        .then(|| json["text"].as_str().expect("text").to_owned())
}

/// The project's 30 s silence fixture: the engine answers it without transcribing.
fn silence() -> PathBuf {
    audio_fixture("long_silence_30s_opus.ogg")
}

#[test]
fn older_cpus_transcribe_jfk_exactly_on_their_own_kernels() {
    let Some(expected) = portable_jfk_text() else {
        eprintln!("not a portable x86-64 build: nothing to emulate");
        return;
    };
    assert!(
        wer(&real_clip("en_whisper_jfk").reference, &expected) < 0.1,
        "{expected}"
    );
    for (cpu, variant) in [("Nehalem", "x86-64-v2"), ("SandyBridge", "sandybridge")] {
        let (status, json, stderr) = transcribe_jfk(Some(cpu));
        assert_eq!(status, 0, "{cpu}: {stderr}");
        assert_eq!(json["cpu_kernels"]["variant"], variant, "{cpu}: {json}");
        assert_eq!(json["text"], expected.as_str(), "{cpu}");
    }
    let (status, json, stderr) = transcribe(Some("Haswell"), &silence(), None);
    assert_eq!(status, 0, "Haswell: {stderr}");
    assert_eq!(json["cpu_kernels"]["variant"], "haswell", "{json}");
    assert_eq!(json["text"], "", "{json}");
}

#[test]
fn every_module_this_cpu_runs_transcribes_jfk_exactly() {
    let Some(expected) = portable_jfk_text() else {
        eprintln!("not a portable x86-64 build: no modules");
        return;
    };
    let jfk = real_clip("en_whisper_jfk").path;
    let mut ran = Vec::new();
    for variant in [
        "x86-64-v2",
        "sandybridge",
        "haswell",
        "alderlake",
        "skylakex",
        "cascadelake",
        "icelake",
        "zen4",
        "sapphirerapids",
    ] {
        let (status, json, stderr) = transcribe(None, &jfk, Some(variant));
        if status == 3 && stderr.contains("this CPU cannot run those kernels") {
            continue;
        }
        assert_eq!(status, 0, "{variant}: {stderr}");
        assert_eq!(json["cpu_kernels"]["variant"], variant, "{json}");
        assert_eq!(json["text"], expected.as_str(), "{variant}");
        ran.push(variant);
    }
    eprintln!("ran: {ran:?}");
    assert!(ran.len() >= 3, "{ran:?}");
}

#[test]
fn a_bad_kernels_name_is_a_typed_error() {
    if portable_jfk_text().is_none() {
        return;
    }
    let (status, json, stderr) = transcribe(None, &silence(), Some("pentium"));
    assert_eq!((status, json), (3, Value::Null), "{stderr}");
    assert!(
        stderr.contains("model_unavailable")
            && stderr
                .contains("CTXSCRIBE_CPU_KERNELS=pentium: no such CPU kernels (auto, x86-64-v2, ")
            && stderr.contains("haswell"),
        "{stderr}"
    );
}

#[test]
fn a_cpu_below_the_floor_gets_a_typed_error_not_sigill() {
    if portable_jfk_text().is_none() {
        eprintln!("not a portable x86-64 build: nothing to emulate");
        return;
    }
    let (status, json, stderr) = transcribe_jfk(Some("core2duo"));
    assert_eq!(status, 3, "{stderr}");
    assert_eq!(json, Value::Null);
    assert!(
        stderr.contains("model_unavailable") && stderr.contains("SSE4.2 (x86-64-v2"),
        "{stderr}"
    );
}
