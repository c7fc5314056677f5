//! The server's settings: command-line flags, then `CTXSCRIBE_*` variables, then defaults.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

use crate::AudioLimits;

/// One command-line option and its environment variable.
pub(crate) struct OptionSpec {
    pub(crate) flag: &'static str,
    pub(crate) env: &'static str,
    /// `None` for a switch (`--no-vad`), else the value's name in the usage text.
    pub(crate) value: Option<&'static str>,
    pub(crate) help: &'static str,
}

pub(crate) const OPTIONS: &[OptionSpec] = &[
    OptionSpec {
        flag: "--host",
        env: "CTXSCRIBE_HOST",
        value: Some("ADDR"),
        help: "address to listen on [default: 127.0.0.1]",
    },
    OptionSpec {
        flag: "--port",
        env: "CTXSCRIBE_PORT",
        value: Some("PORT"),
        help: "port to listen on; 0 picks a free one (logged) [default: 8080]",
    },
    OptionSpec {
        flag: "--model",
        env: "CTXSCRIBE_MODEL",
        value: Some("PATH"),
        help: "whisper.cpp ggml/gguf model, or a fetched model's name (tiny.en) [default: \
               ggml-base.bin in $CTXSCRIBE_MODEL_DIR or ~/.local/share/ctxscribe/models]",
    },
    OptionSpec {
        flag: "--vad-model",
        env: "CTXSCRIBE_VAD_MODEL",
        value: Some("PATH"),
        help: "Silero VAD model [default: silero-v6.2.0-ggml.bin next to the model]",
    },
    OptionSpec {
        flag: "--no-vad",
        env: "CTXSCRIBE_NO_VAD",
        value: None,
        help: "decode the whole signal, skipping only digital silence",
    },
    OptionSpec {
        flag: "--threads",
        env: "CTXSCRIBE_THREADS",
        value: Some("N"),
        help: "engine threads per transcription [default: all cores]",
    },
    OptionSpec {
        flag: "--api-key-file",
        env: "CTXSCRIBE_API_KEY_FILE",
        value: Some("PATH"),
        help: "file of API keys, one per line (keys may also come from CTXSCRIBE_API_KEYS, \
               comma-separated); no keys = no authentication",
    },
    OptionSpec {
        flag: "--max-file-bytes",
        env: "CTXSCRIBE_MAX_FILE_BYTES",
        value: Some("BYTES"),
        help: "largest audio upload [default: 26214400, 25 MiB as OpenAI]",
    },
    OptionSpec {
        flag: "--max-audio-secs",
        env: "CTXSCRIBE_MAX_AUDIO_SECS",
        value: Some("SECS"),
        help: "longest decoded audio [default: 3600]",
    },
    OptionSpec {
        flag: "--max-concurrent",
        env: "CTXSCRIBE_MAX_CONCURRENT",
        value: Some("N"),
        help: "transcriptions running at once [default: cores / threads, at least 1]",
    },
    OptionSpec {
        flag: "--max-queue",
        env: "CTXSCRIBE_MAX_QUEUE",
        value: Some("N"),
        help: "requests uploading or waiting beyond those [default: 4 x max-concurrent]",
    },
    OptionSpec {
        flag: "--request-timeout",
        env: "CTXSCRIBE_REQUEST_TIMEOUT",
        value: Some("SECS"),
        help: "limit per request: upload, queue and transcription [default: 600]",
    },
    OptionSpec {
        flag: "--max-connections",
        env: "CTXSCRIBE_MAX_CONNECTIONS",
        value: Some("N"),
        help: "open connections served at once [default: 1024]",
    },
    OptionSpec {
        flag: "--metrics-public",
        env: "CTXSCRIBE_METRICS_PUBLIC",
        value: None,
        help: "serve GET /metrics without an API key (for a scraper on a private network)",
    },
    OptionSpec {
        flag: "--log-format",
        env: "CTXSCRIBE_LOG_FORMAT",
        value: Some("text|json"),
        help: "log line format on stderr [default: text]",
    },
    OptionSpec {
        flag: "--log-level",
        env: "CTXSCRIBE_LOG_LEVEL",
        value: Some("LEVEL"),
        help: "error, warn, info, debug or trace [default: info]",
    },
];

pub(crate) fn usage() -> String {
    let mut text = String::from(
        "ctxscribe reference server: POST /v1/audio/transcriptions, GET /v1/models, \
         GET /metrics, GET /health\n\n\
         usage: server [OPTIONS]   (cargo run --release --features server --example server -- ...)\n\n\
         Every option can also be set by its environment variable; the flag wins.\n\n",
    );
    for option in OPTIONS {
        let flag = match option.value {
            Some(value) => format!("{} {value}", option.flag),
            None => option.flag.to_owned(),
        };
        text.push_str(&format!(
            "  {flag:<28} {}\n  {:<28} env: {}\n",
            option.help, "", option.env
        ));
    }
    text.push_str("  -h, --help                   this text\n");
    text
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

/// What the command line asks for.
#[derive(Debug)]
pub(crate) enum Parsed {
    Run(Box<Config>),
    Help,
}

impl Config {
    /// Parses `--flag value` / `--flag=value` arguments; `env` reads a variable (an empty
    /// value counts as unset).
    pub(crate) fn from_args(
        args: impl IntoIterator<Item = String>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Parsed, String> {
        let Some(given) = read_flags(args)? else {
            return Ok(Parsed::Help);
        };
        let settings = Settings { given, env };
        let threads = settings.threads()?;
        let max_concurrent = settings
            .count("--max-concurrent")?
            .unwrap_or_else(|| crate::config::concurrent_calls(threads));
        let max_queue = match settings.integer("--max-queue", 0)? {
            Some(n) => usize::try_from(n).map_err(|_| format!("--max-queue: {n} is too large"))?,
            None => 4 * max_concurrent,
        };
        // In this order: the first bad value is the one reported.
        let port = settings.port()?;
        let log_format = settings.log_format()?;
        let log_level = settings.log_level()?;
        let request_timeout = settings.request_timeout()?;
        Ok(Parsed::Run(Box::new(Config {
            host: settings
                .get("--host")
                .map_or_else(|| "127.0.0.1".to_owned(), |(_, v)| v.trim().to_owned()),
            port,
            model: settings.path("--model"),
            vad_model: settings.path("--vad-model"),
            no_vad: settings.switch("--no-vad")?,
            threads,
            api_key_file: settings.path("--api-key-file"),
            max_file_bytes: settings
                .integer("--max-file-bytes", 1)?
                .unwrap_or(AudioLimits::default().max_file_bytes),
            max_audio_secs: settings
                .number("--max-audio-secs", 0.001)?
                .unwrap_or(AudioLimits::default().max_duration_secs),
            max_concurrent,
            max_queue,
            request_timeout,
            max_connections: settings.count("--max-connections")?.unwrap_or(1024),
            metrics_public: settings.switch("--metrics-public")?,
            log_format,
            log_level,
        })))
    }
}

/// The flags given on the command line, by [`OptionSpec::flag`] (a switch's value is
/// `"true"`); `None` when help is asked for.
fn read_flags(
    args: impl IntoIterator<Item = String>,
) -> Result<Option<BTreeMap<&'static str, String>>, String> {
    let mut given = BTreeMap::new();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        if arg == "-h" || arg == "--help" {
            return Ok(None);
        }
        let (name, inline) = match arg.split_once('=') {
            Some((name, value)) => (name.to_owned(), Some(value.to_owned())),
            None => (arg.clone(), None),
        };
        let spec = OPTIONS
            .iter()
            .find(|o| o.flag == name)
            .ok_or_else(|| format!("unknown argument {arg:?}"))?;
        let value = match (spec.value, inline) {
            (None, None) => "true".to_owned(),
            (None, Some(_)) => return Err(format!("{} takes no value", spec.flag)),
            (Some(_), Some(value)) => value,
            (Some(_), None) => args
                .next()
                .ok_or_else(|| format!("{} needs a value", spec.flag))?,
        };
        given.insert(spec.flag, value);
    }
    Ok(Some(given))
}

/// The options' values: a flag given, else its environment variable, typed and checked;
/// errors name where the value came from.
struct Settings<E> {
    given: BTreeMap<&'static str, String>,
    env: E,
}

impl<E: Fn(&str) -> Option<String>> Settings<E> {
    /// The value of `flag` and where it came from (the flag or the variable).
    fn get(&self, flag: &str) -> Option<(String, String)> {
        let spec = OPTIONS.iter().find(|o| o.flag == flag)?;
        if let Some(value) = self.given.get(spec.flag) {
            return Some((spec.flag.to_owned(), value.clone()));
        }
        (self.env)(spec.env)
            .filter(|v| !v.trim().is_empty())
            .map(|v| (spec.env.to_owned(), v))
    }

    fn path(&self, flag: &str) -> Option<PathBuf> {
        self.get(flag).map(|(_, v)| PathBuf::from(v))
    }

    fn number(&self, flag: &str, min: f64) -> Result<Option<f64>, String> {
        self.get(flag)
            .map(|(from, text)| match text.trim().parse::<f64>() {
                Ok(n) if n.is_finite() && n >= min => Ok(n),
                _ => Err(format!("{from}: expected a number >= {min}, got {text:?}")),
            })
            .transpose()
    }

    fn integer(&self, flag: &str, min: u64) -> Result<Option<u64>, String> {
        self.get(flag)
            .map(|(from, text)| match text.trim().parse::<u64>() {
                Ok(n) if n >= min => Ok(n),
                _ => Err(format!(
                    "{from}: expected a whole number >= {min}, got {text:?}"
                )),
            })
            .transpose()
    }

    fn count(&self, flag: &str) -> Result<Option<usize>, String> {
        self.integer(flag, 1)?
            .map(|n| usize::try_from(n).map_err(|_| format!("{flag}: {n} is too large")))
            .transpose()
    }

    fn switch(&self, flag: &str) -> Result<bool, String> {
        match self.get(flag) {
            None => Ok(false),
            Some((from, text)) => match text.trim().to_ascii_lowercase().as_str() {
                "1" | "true" | "yes" | "on" => Ok(true),
                "0" | "false" | "no" | "off" => Ok(false),
                _ => Err(format!("{from}: expected true or false, got {text:?}")),
            },
        }
    }

    fn threads(&self) -> Result<usize, String> {
        match self.count("--threads")? {
            Some(threads) => {
                crate::config::check_threads(i64::try_from(threads).unwrap_or(i64::MAX))
                    .map_err(|e| format!("--threads: {e}"))
            }
            None => Ok(crate::config::default_threads()),
        }
    }

    fn port(&self) -> Result<u16, String> {
        match self.integer("--port", 0)? {
            Some(port) => u16::try_from(port).map_err(|_| format!("--port: {port} is not a port")),
            None => Ok(8080),
        }
    }

    fn log_format(&self) -> Result<LogFormat, String> {
        match self.get("--log-format") {
            None => Ok(LogFormat::Text),
            Some((from, text)) => match text.trim() {
                "text" => Ok(LogFormat::Text),
                "json" => Ok(LogFormat::Json),
                _ => Err(format!("{from}: expected text or json, got {text:?}")),
            },
        }
    }

    fn log_level(&self) -> Result<tracing::Level, String> {
        match self.get("--log-level") {
            None => Ok(tracing::Level::INFO),
            Some((from, text)) => text.trim().parse::<tracing::Level>().map_err(|_| {
                format!("{from}: expected error, warn, info, debug or trace, got {text:?}")
            }),
        }
    }

    fn request_timeout(&self) -> Result<Duration, String> {
        let secs = self.number("--request-timeout", 0.001)?.unwrap_or(600.0);
        Duration::try_from_secs_f64(secs)
            .map_err(|_| format!("--request-timeout: {secs} is out of range"))
    }
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
    use super::*;

    fn config(args: &[&str], env: &[(&str, &str)]) -> Result<Config, String> {
        let env: BTreeMap<String, String> = env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        match Config::from_args(args.iter().map(|a| (*a).to_owned()), |name| {
            env.get(name).cloned()
        })? {
            Parsed::Run(config) => Ok(*config),
            Parsed::Help => Err("help".to_owned()),
        }
    }

    #[test]
    fn config_defaults() {
        let config = config(&["--threads", "2"], &[]).expect("valid");
        assert_eq!(config.host, "127.0.0.1");
        assert_eq!(config.port, 8080);
        assert_eq!(config.threads, 2);
        assert_eq!(config.max_file_bytes, 25 * 1024 * 1024);
        assert_eq!(config.max_queue, 4 * config.max_concurrent);
        assert!(config.max_concurrent >= 1);
        assert_eq!(config.request_timeout, Duration::from_secs(600));
        assert_eq!(config.log_format, LogFormat::Text);
        assert!(!config.no_vad);
        assert!(config.model.is_none());
    }

    #[test]
    fn flags_win_over_environment() {
        let env = [
            ("CTXSCRIBE_PORT", "9000"),
            ("CTXSCRIBE_HOST", "0.0.0.0"),
            ("CTXSCRIBE_MAX_QUEUE", "0"),
            ("CTXSCRIBE_NO_VAD", "yes"),
            ("CTXSCRIBE_MODEL", ""),
        ];
        let config = config(
            &[
                "--port=9100",
                "--model",
                "m.bin",
                "--request-timeout",
                "2.5",
            ],
            &env,
        )
        .expect("valid");
        assert_eq!(config.port, 9100);
        assert_eq!(config.host, "0.0.0.0");
        assert_eq!(config.max_queue, 0);
        assert!(config.no_vad);
        assert_eq!(config.model, Some(PathBuf::from("m.bin")));
        assert_eq!(config.request_timeout, Duration::from_millis(2500));
    }

    #[test]
    fn bad_arguments_are_explained() {
        for (args, expected) in [
            (&["--port", "70000"][..], "--port"),
            (&["--port"][..], "needs a value"),
            (&["--bogus"][..], "unknown argument"),
            (&["--max-concurrent", "0"][..], "--max-concurrent"),
            (&["--log-format", "xml"][..], "text or json"),
            (&["--no-vad=1"][..], "takes no value"),
            (&["--request-timeout", "-1"][..], "--request-timeout"),
        ] {
            let error = config(args, &[]).expect_err("invalid");
            assert!(error.contains(expected), "{args:?}: {error}");
        }
        let error = config(&[], &[("CTXSCRIBE_THREADS", "many")]).expect_err("invalid");
        assert!(error.contains("CTXSCRIBE_THREADS"), "{error}");
        assert_eq!(config(&["--help"], &[]).expect_err("help"), "help");
        assert!(usage().contains("--max-queue N"));
    }
}
