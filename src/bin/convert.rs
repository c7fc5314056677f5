//! `ctxscribe-convert`: converts a CTranslate2 ("faster-whisper") Whisper model directory
//! into a whisper.cpp ggml file.
//!
//! ```text
//! ctxscribe-convert CT2_DIR OUT_FILE [--type f16|q8_0|q5_1]
//! ```
//! The output is written to a temporary file beside `OUT_FILE` and renamed into place.

use std::error::Error as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use ctxscribe::model::{WeightType, convert_ct2_to_ggml};

const USAGE: &str = "\
usage: ctxscribe-convert CT2_DIR OUT_FILE [--type f16|q8_0|q5_1]

Converts a CTranslate2 Whisper model (CT2_DIR/model.bin + CT2_DIR/vocabulary.txt)
into a whisper.cpp ggml file. --type chooses how weight matrices are stored
(default f16, like the official ggml-*.bin files).";

/// Parsed command line.
#[derive(Debug)]
struct Arguments {
    ct2_dir: PathBuf,
    output: PathBuf,
    weight_type: WeightType,
}

/// What the command line asks for.
#[derive(Debug)]
enum Command {
    Convert(Arguments),
    Help,
}

fn parse_arguments(mut args: impl Iterator<Item = String>) -> Result<Command, String> {
    let mut positional = Vec::new();
    let mut weight_type = WeightType::F16;
    while let Some(arg) = args.next() {
        let type_value = match arg.as_str() {
            "-h" | "--help" => return Ok(Command::Help),
            "--type" | "-t" => Some(args.next().ok_or("--type needs a value")?),
            _ => arg.strip_prefix("--type=").map(str::to_owned),
        };
        match type_value {
            Some(value) => weight_type = value.parse().map_err(|error| format!("{error}"))?,
            None if arg.starts_with('-') && arg != "-" => {
                return Err(format!("unknown option {arg:?}"));
            }
            None => positional.push(PathBuf::from(arg)),
        }
    }
    let [ct2_dir, output]: [PathBuf; 2] = positional.try_into().map_err(|found: Vec<_>| {
        format!(
            "expected CT2_DIR and OUT_FILE, got {} arguments",
            found.len()
        )
    })?;
    Ok(Command::Convert(Arguments {
        ct2_dir,
        output,
        weight_type,
    }))
}

fn main() -> ExitCode {
    let arguments = match parse_arguments(std::env::args().skip(1)) {
        Ok(Command::Convert(arguments)) => arguments,
        Ok(Command::Help) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("error: {message}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };

    let started = Instant::now();
    match convert_ct2_to_ggml(&arguments.ct2_dir, &arguments.output, arguments.weight_type) {
        Ok(report) => {
            let hparams = &report.hparams;
            println!(
                "wrote {} ({} bytes, {}) in {:.2} s",
                report.output.display(),
                report.bytes_written,
                report.weight_type,
                started.elapsed().as_secs_f64()
            );
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
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprint!("error: {error}");
            let mut source = error.source();
            while let Some(cause) = source {
                eprint!(": {cause}");
                source = cause.source();
            }
            eprintln!();
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Command, String> {
        parse_arguments(args.iter().map(|arg| (*arg).to_owned()))
    }

    #[test]
    fn parses_positionals_and_type() {
        let Ok(Command::Convert(arguments)) = parse(&["dir", "out.bin", "--type", "q8_0"]) else {
            panic!("expected a conversion");
        };
        assert_eq!(arguments.ct2_dir, PathBuf::from("dir"));
        assert_eq!(arguments.output, PathBuf::from("out.bin"));
        assert_eq!(arguments.weight_type, WeightType::Q8_0);

        let Ok(Command::Convert(arguments)) = parse(&["--type=q5_1", "dir", "out.bin"]) else {
            panic!("expected a conversion");
        };
        assert_eq!(arguments.weight_type, WeightType::Q5_1);

        let Ok(Command::Convert(arguments)) = parse(&["dir", "out.bin"]) else {
            panic!("expected a conversion");
        };
        assert_eq!(arguments.weight_type, WeightType::F16);
    }

    #[test]
    fn rejects_bad_command_lines() {
        assert!(parse(&["dir"]).is_err());
        assert!(parse(&["dir", "out", "extra"]).is_err());
        assert!(parse(&["dir", "out", "--type", "q4_0"]).is_err());
        assert!(parse(&["dir", "out", "--type"]).is_err());
        assert!(parse(&["dir", "out", "--fast"]).is_err());
        assert!(matches!(parse(&["--help"]), Ok(Command::Help)));
    }
}
