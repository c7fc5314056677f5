//! The server's settings: command-line flags, then `CTXSCRIBE_*` variables, then defaults.

use std::ffi::OsStr;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::builder::{BoolishValueParser, RangedU64ValueParser, TypedValueParser};
use clap::parser::ValueSource;
use clap::{CommandFactory, FromArgMatches, Parser, ValueEnum};

use crate::AudioLimits;

const AFTER_HELP: &str = "\
Every option can also be set by its environment variable; the flag wins, and an empty
variable counts as unset. API keys come from CTXSCRIBE_API_KEYS (comma-separated) and
the key file, never from the command line.
From the source tree: cargo run --release --features server --example server -- [OPTIONS]";

/// The command line; each flag's variable is read by [`Config::from_args`].
#[derive(Debug, Parser)]
#[command(
    name = "server",
    about = "ctxscribe reference server: POST /v1/audio/transcriptions, GET /v1/models, \
             GET /metrics, GET /health",
    after_help = AFTER_HELP,
    args_override_self = true
)]
struct Flags {
    /// Address to listen on
    #[arg(
        long,
        env = "CTXSCRIBE_HOST",
        value_name = "ADDR",
        default_value = "127.0.0.1"
    )]
    host: String,
    /// Port to listen on; 0 picks a free one (logged)
    #[arg(long, env = "CTXSCRIBE_PORT", default_value_t = 8080)]
    port: u16,
    /// whisper.cpp ggml/gguf model, or a fetched model's name (tiny.en) [default:
    /// ggml-base.bin in $CTXSCRIBE_MODEL_DIR or ~/.local/share/ctxscribe/models]
    #[arg(long, env = "CTXSCRIBE_MODEL", value_name = "PATH")]
    model: Option<PathBuf>,
    /// Silero VAD model [default: silero-v6.2.0-ggml.bin next to the model]
    #[arg(long, env = "CTXSCRIBE_VAD_MODEL", value_name = "PATH")]
    vad_model: Option<PathBuf>,
    /// Decode the whole signal, skipping only digital silence
    #[arg(long, env = "CTXSCRIBE_NO_VAD")]
    no_vad: bool,
    /// Engine threads per transcription [default: all cores]
    #[arg(long, env = "CTXSCRIBE_THREADS", value_name = "N", value_parser =
        RangedU64ValueParser::<usize>::new().range(1..=crate::config::MAX_THREADS as u64))]
    threads: Option<usize>,
    /// File of API keys, one per line; no keys = no authentication
    #[arg(long, env = "CTXSCRIBE_API_KEY_FILE", value_name = "PATH")]
    api_key_file: Option<PathBuf>,
    /// Largest audio upload, in bytes (25 MiB, as OpenAI)
    #[arg(long, env = "CTXSCRIBE_MAX_FILE_BYTES", value_name = "BYTES",
        default_value_t = AudioLimits::default().max_file_bytes,
        value_parser = clap::value_parser!(u64).range(1..))]
    max_file_bytes: u64,
    /// Longest decoded audio
    #[arg(long, env = "CTXSCRIBE_MAX_AUDIO_SECS", value_name = "SECS",
        default_value_t = AudioLimits::default().max_duration_secs, value_parser = seconds)]
    max_audio_secs: f64,
    /// Transcriptions running at once [default: cores / threads, at least 1]
    #[arg(long, env = "CTXSCRIBE_MAX_CONCURRENT", value_name = "N", value_parser = count(1))]
    max_concurrent: Option<usize>,
    /// Requests uploading or waiting beyond those [default: 4 x max-concurrent]
    #[arg(long, env = "CTXSCRIBE_MAX_QUEUE", value_name = "N", value_parser = count(0))]
    max_queue: Option<usize>,
    /// Limit per request: upload, queue and transcription, in seconds
    #[arg(long, env = "CTXSCRIBE_REQUEST_TIMEOUT", value_name = "SECS", default_value = "600",
        value_parser = duration)]
    request_timeout: Duration,
    /// Open connections served at once
    #[arg(long, env = "CTXSCRIBE_MAX_CONNECTIONS", value_name = "N", default_value_t = 1024,
        value_parser = count(1))]
    max_connections: usize,
    /// Serve GET /metrics without an API key (for a scraper on a private network)
    #[arg(long, env = "CTXSCRIBE_METRICS_PUBLIC")]
    metrics_public: bool,
    /// Log line format on stderr
    #[arg(
        long,
        env = "CTXSCRIBE_LOG_FORMAT",
        value_name = "FORMAT",
        default_value = "text"
    )]
    log_format: LogFormat,
    /// error, warn, info, debug or trace
    #[arg(
        long,
        env = "CTXSCRIBE_LOG_LEVEL",
        value_name = "LEVEL",
        default_value = "info"
    )]
    log_level: tracing::Level,
}

/// A whole number of at least `min`.
fn count(min: u64) -> RangedU64ValueParser<usize> {
    RangedU64ValueParser::new().range(min..)
}

/// A number of seconds, at least a millisecond.
fn seconds(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(secs) if secs.is_finite() && secs >= 0.001 => Ok(secs),
        _ => Err("expected a number >= 0.001".to_owned()),
    }
}

fn duration(text: &str) -> Result<Duration, String> {
    Duration::try_from_secs_f64(seconds(text)?).map_err(|e| e.to_string())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum LogFormat {
    Text,
    Json,
}

/// The server's settings, from flags, then environment variables, then defaults.
#[derive(Debug, Clone)]
pub(crate) struct Config {
    pub(crate) host: String,
    pub(crate) port: u16,
    pub(crate) model: Option<PathBuf>,
    pub(crate) vad_model: Option<PathBuf>,
    pub(crate) no_vad: bool,
    pub(crate) threads: usize,
    pub(crate) api_key_file: Option<PathBuf>,
    pub(crate) max_file_bytes: u64,
    pub(crate) max_audio_secs: f64,
    pub(crate) max_concurrent: usize,
    pub(crate) max_queue: usize,
    pub(crate) request_timeout: Duration,
    pub(crate) max_connections: usize,
    pub(crate) metrics_public: bool,
    pub(crate) log_format: LogFormat,
    pub(crate) log_level: tracing::Level,
}

impl Config {
    /// Parses the command line `args` (the program's name first); a flag not given there
    /// comes from its variable, read with `env` (an empty value counts as unset), else
    /// from its default. The error is clap's, help included: `exit()` shows it.
    pub(crate) fn from_args(
        args: impl IntoIterator<Item = String>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Config, clap::Error> {
        // Clap would read the process's variables itself when the command is built (the
        // tests could not pass theirs) and take an empty one as a value. So the parser
        // has no variables: each one set for a flag not on the command line is passed
        // as that flag, after it. The help, rendered first, still names them.
        let mut argv: Vec<String> = args.into_iter().collect();
        // A negative number is a value to refuse, not an unknown flag.
        let mut command = Flags::command().mut_args(|arg| {
            let takes_values = arg.get_action().takes_values();
            arg.hide_env_values(true)
                .allow_negative_numbers(takes_values)
        });
        if let Some(bin) = argv.first().and_then(|a| Path::new(a).file_name()) {
            command = command.bin_name(bin.to_string_lossy().into_owned());
        }
        let mut parser = command
            .clone()
            .mut_args(|arg| arg.env(None))
            .override_help(command.render_help());
        let given = parser.try_get_matches_from_mut(&argv)?;
        for arg in command.get_arguments() {
            let (Some(name), Some(long)) = (arg.get_env(), arg.get_long()) else {
                continue;
            };
            let name = name.to_string_lossy();
            let value = env(&name).unwrap_or_default();
            let value = value.trim();
            let on_command_line =
                given.value_source(arg.get_id().as_str()) == Some(ValueSource::CommandLine);
            if value.is_empty() || on_command_line {
                continue;
            }
            // Checked alone, so that an error names the variable.
            let checked = if arg.get_action().takes_values() {
                let flag = format!("--{long}={value}");
                parser
                    .try_get_matches_from_mut(["server", &flag])
                    .map(|_| Some(flag))
            } else {
                BoolishValueParser::new()
                    .parse_ref(&parser, Some(arg), OsStr::new(value))
                    .map(|on| on.then(|| format!("--{long}")))
            };
            match checked {
                Ok(flag) => argv.extend(flag),
                Err(error) => return Err(from_variable(&mut parser, &name, &error)),
            }
        }
        let flags = Flags::from_arg_matches(&parser.try_get_matches_from_mut(argv)?)?;
        let threads = flags.threads.unwrap_or_else(crate::config::default_threads);
        let max_concurrent = flags
            .max_concurrent
            .unwrap_or_else(|| crate::config::concurrent_calls(threads));
        Ok(Config {
            host: flags.host,
            port: flags.port,
            model: flags.model,
            vad_model: flags.vad_model,
            no_vad: flags.no_vad,
            threads,
            api_key_file: flags.api_key_file,
            max_file_bytes: flags.max_file_bytes,
            max_audio_secs: flags.max_audio_secs,
            max_concurrent,
            max_queue: flags
                .max_queue
                .unwrap_or_else(|| max_concurrent.saturating_mul(4)),
            request_timeout: flags.request_timeout,
            max_connections: flags.max_connections,
            metrics_public: flags.metrics_public,
            log_format: flags.log_format,
            log_level: flags.log_level,
        })
    }
}

/// `error`, about the value of the variable `name`, as an error that names the variable.
fn from_variable(parser: &mut clap::Command, name: &str, error: &clap::Error) -> clap::Error {
    let text = error.render().to_string();
    let line = text.lines().next().unwrap_or_default();
    parser.error(
        error.kind(),
        format!("{name}: {}", line.trim_start_matches("error: ")),
    )
}

pub(crate) fn init_logging(format: LogFormat, level: tracing::Level) {
    let builder = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(level)
        .with_target(false);
    match format {
        LogFormat::Text => builder.with_ansi(std::io::stderr().is_terminal()).init(),
        LogFormat::Json => builder
            .with_ansi(false)
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_span_list(false)
            .init(),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use clap::error::ErrorKind;

    use super::*;

    fn config(args: &[&str], env: &[(&str, &str)]) -> Result<Config, clap::Error> {
        let env: BTreeMap<String, String> = env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let args = std::iter::once("server").chain(args.iter().copied());
        Config::from_args(args.map(str::to_owned), |name| env.get(name).cloned())
    }

    #[test]
    fn config_defaults() {
        let config = config(&["--threads", "2"], &[]).expect("valid");
        assert_eq!(config.host, "127.0.0.1");
        assert_eq!(config.port, 8080);
        assert_eq!(config.threads, 2);
        assert_eq!(config.max_file_bytes, 25 * 1024 * 1024);
        assert!((config.max_audio_secs - 3600.0).abs() < f64::EPSILON);
        assert_eq!(config.max_queue, 4 * config.max_concurrent);
        assert!(config.max_concurrent >= 1);
        assert_eq!(config.request_timeout, Duration::from_secs(600));
        assert_eq!(config.max_connections, 1024);
        assert_eq!(config.log_format, LogFormat::Text);
        assert_eq!(config.log_level, tracing::Level::INFO);
        assert!(!config.no_vad);
        assert!(!config.metrics_public);
        assert!(config.model.is_none());
    }

    #[test]
    fn flags_win_over_environment() {
        let unset = config(&[], &[("CTXSCRIBE_MODEL", ""), ("CTXSCRIBE_PORT", " ")]);
        let unset = unset.expect("empty variables are unset");
        assert_eq!((unset.model, unset.port), (None, 8080));
        let env = [
            ("CTXSCRIBE_PORT", "9000"),
            ("CTXSCRIBE_HOST", "0.0.0.0"),
            ("CTXSCRIBE_MAX_QUEUE", " 0 "),
            ("CTXSCRIBE_NO_VAD", "yes"),
            ("CTXSCRIBE_METRICS_PUBLIC", "off"),
            ("CTXSCRIBE_MODEL", ""),
            ("CTXSCRIBE_THREADS", "not used: the flag wins"),
        ];
        let config = config(
            &[
                "--port=9100",
                "--model",
                "m.bin",
                "--request-timeout",
                "2.5",
                "--threads",
                "1",
                "--threads",
                "3",
            ],
            &env,
        )
        .expect("valid");
        assert_eq!(config.port, 9100);
        assert_eq!(config.host, "0.0.0.0");
        assert_eq!(config.max_queue, 0);
        assert!(config.no_vad);
        assert!(!config.metrics_public);
        assert_eq!(config.threads, 3);
        assert_eq!(config.model, Some(PathBuf::from("m.bin")));
        assert_eq!(config.request_timeout, Duration::from_millis(2500));
    }

    #[test]
    fn bad_arguments_are_explained() {
        for (args, expected) in [
            (&["--port", "70000"][..], "--port"),
            (&["--port"][..], "a value is required for '--port"),
            (&["--bogus"][..], "unexpected argument '--bogus'"),
            (&["--max-concurrent", "0"][..], "--max-concurrent"),
            (&["--threads", "100000"][..], "--threads"),
            (&["--log-format", "xml"][..], "--log-format"),
            (&["--log-level", "loud"][..], "--log-level"),
            (&["--no-vad=1"][..], "unexpected value '1' for '--no-vad'"),
            (&["--request-timeout", "-1"][..], "--request-timeout"),
            (&["--max-audio-secs", "inf"][..], "--max-audio-secs"),
            (&["--max-file-bytes", "0"][..], "--max-file-bytes"),
        ] {
            let error = config(args, &[]).expect_err("invalid").to_string();
            assert!(error.contains(expected), "{args:?}: {error}");
        }
        for (name, value) in [
            ("CTXSCRIBE_THREADS", "many"),
            ("CTXSCRIBE_NO_VAD", "maybe"),
            ("CTXSCRIBE_REQUEST_TIMEOUT", "0"),
        ] {
            let error = config(&[], &[(name, value)])
                .expect_err("invalid")
                .to_string();
            assert!(error.contains(name), "{error}");
        }
    }

    #[test]
    fn help_names_every_flag_and_variable() {
        Flags::command().debug_assert();
        let help = config(&["--help"], &[]).expect_err("help");
        assert_eq!(help.kind(), ErrorKind::DisplayHelp);
        let help = help.to_string();
        assert!(help.contains("--max-queue <N>"), "{help}");
        for arg in Flags::command().get_arguments() {
            if let Some(name) = arg.get_env() {
                let env = format!("env: {}", name.to_string_lossy());
                assert!(help.contains(&env), "{env}: {help}");
            }
        }
    }
}
