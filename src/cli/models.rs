//! `ctxscribe models fetch|list|dir` and `ctxscribe convert`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::ConvertArgs;
use crate::config;
use crate::error::{Error, Result};
use crate::model::convert_ct2_to_ggml;
use crate::model::fetch::{PINNED_MODELS, fetch_model, installed_models, pinned_model};

/// `models fetch`: installs every model of `names` (all checked before any download)
/// into `dir`, else the fetch directory.
pub(crate) fn fetch(
    names: &[String],
    dir: Option<PathBuf>,
    python: &str,
    keep_ct2: bool,
) -> Result<()> {
    let models = names
        .iter()
        .map(|name| pinned_model(name))
        .collect::<Result<Vec<_>>>()?;
    let dir = dir.map_or_else(fetch_dir, Ok)?;
    for model in models {
        let started = Instant::now();
        let report = fetch_model(model, &dir, python, keep_ct2, &mut |step| {
            eprintln!("ctxscribe: {}: {step}", model.name);
        })?;
        if report.fetched {
            println!(
                "installed {} in {:.1} s",
                report.path.display(),
                started.elapsed().as_secs_f64()
            );
        } else {
            println!("{} is installed already", report.path.display());
        }
    }
    Ok(())
}

/// `models dir`: the directory `fetch` installs into (absolute).
pub(crate) fn dir() -> Result<()> {
    println!("{}", display_dir(&fetch_dir()?));
    Ok(())
}

fn fetch_dir() -> Result<PathBuf> {
    config::fetch_model_dir().ok_or_else(|| {
        Error::invalid(
            "dir",
            "no model directory: set CTXSCRIBE_MODEL_DIR or HOME, or pass --dir",
        )
    })
}

/// `models list`: the models in every directory searched, then the fetchable ones.
pub(crate) fn list() -> Result<()> {
    let fetch_dir = config::fetch_model_dir();
    for dir in config::model_search_dirs() {
        let models = installed_models(&dir)
            .map_err(|e| Error::invalid("dir", format!("cannot read {}: {e}", dir.display())))?;
        let label = if fetch_dir.as_deref() == Some(dir.as_path()) {
            " (`models fetch` installs here)"
        } else {
            ""
        };
        if models.is_empty() && label.is_empty() {
            continue;
        }
        println!("{}{label}", display_dir(&dir));
        if models.is_empty() {
            println!("  (none)");
        }
        for (name, bytes) in models {
            println!("  {name:<28} {:>8.1} MB", bytes as f64 / 1e6);
        }
    }
    println!("fetchable (ctxscribe models fetch --model NAME):");
    for model in PINNED_MODELS {
        let installed = config::find_installed_model(model.file)
            .map_or_else(String::new, |p| format!(" [installed: {}]", p.display()));
        println!("  {:<10} {}{installed}", model.name, model.description);
    }
    Ok(())
}

fn display_dir(dir: &Path) -> String {
    std::path::absolute(dir).map_or_else(|_| dir.display().to_string(), |p| p.display().to_string())
}

/// `convert` (and the `ctxscribe-convert` binary): a CTranslate2 directory into a ggml
/// file; prints what it wrote and the model's shape.
pub(crate) fn convert(args: &ConvertArgs) -> Result<()> {
    let started = Instant::now();
    let report =
        convert_ct2_to_ggml(&args.ct2_dir, &args.out_file, args.weight_type).map_err(|e| {
            Error::ModelUnavailable {
                message: format!("cannot convert {}: {e}", args.ct2_dir.display()),
                source: Some(Box::new(e)),
            }
        })?;
    println!(
        "wrote {} ({} bytes, {}) in {:.2} s",
        report.output.display(),
        report.bytes_written,
        report.weight_type,
        started.elapsed().as_secs_f64()
    );
    let hparams = &report.hparams;
    println!(
        "  {} model: n_vocab {}, width {}, encoder {} layers x {} heads, \
         decoder {} layers x {} heads, {} mels",
        if hparams.is_multilingual() {
            "multilingual"
        } else {
            "English-only"
        },
        hparams.n_vocab,
        hparams.n_audio_state,
        hparams.n_audio_layer,
        hparams.n_audio_head,
        hparams.n_text_layer,
        hparams.n_text_head,
        hparams.n_mels
    );
    println!(
        "  {} tensors, {} vocabulary tokens",
        report.tensors_written, report.vocab_tokens_written
    );
    Ok(())
}
