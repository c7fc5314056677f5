//! `ctxscribe transcribe FILE...`.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::time::Instant;

use serde_json::json;

use super::{EXIT_INTERRUPTED, EXIT_OK, TranscribeArgs, report};
use crate::context::{
    Messages, SoundsLike, parse_dictionary, parse_languages, parse_messages, parse_sounds_like,
};
use crate::error::{Error, Result};
use crate::{
    AudioLimits, Backend, CancelToken, CheckedAudio, ContextTranscriber, Dictionary, Event,
    Languages, RunOptions, Transcript, TranscriptionRequest,
};

/// Files at least this long (seconds of audio) show their progress in audio seconds.
const AUDIO_PROGRESS_MIN_SECS: f64 = 30.0;

/// The validated context every file is transcribed with.
struct Context {
    messages: Messages,
    languages: Languages,
    dictionary: Dictionary,
}

/// Transcribes every file; a file that fails is reported and the others go on. Returns
/// the exit status: the worst of the files'.
pub(crate) fn run(args: &TranscribeArgs) -> Result<i32> {
    let context = Context {
        messages: match &args.messages {
            Some(text) => parse_messages(&messages_text(text)?)?,
            None => Messages::default(),
        },
        languages: args
            .languages
            .as_deref()
            .map_or(Ok(Languages::Auto), parse_languages)?,
        dictionary: args
            .dictionary
            .as_deref()
            .map_or_else(|| Ok(Dictionary::default()), parse_dictionary)?
            .with_sounds_like(sounds_like(&args.sounds_like)?)?,
    };
    let mut builder = ContextTranscriber::builder();
    if let Some(model) = &args.model {
        // A path, or the name of an installed pinned model (config::resolve_model_path).
        builder = builder.with_model_path(model);
    }
    let transcriber = builder.build()?;
    if let Some(reason) = transcriber.backend().and_then(|backend| backend.fallback) {
        eprintln!("ctxscribe: warning: {reason}; the engine runs on the CPU");
    }
    let interrupt = CancelToken::new();
    cancel_on_ctrl_c(&interrupt);
    let mut progress = Progress::new(args.files.len());
    let mut status = EXIT_OK;
    let stdout = std::io::stdout();
    for (index, file) in args.files.iter().enumerate() {
        let name = file.display().to_string();
        progress.show(index, &name, None);
        let mut on_event = |event: &Event| {
            if let Event::Progress {
                done_secs,
                total_secs,
            } = *event
            {
                progress.show(index, &name, Some((done_secs, total_secs)));
            }
        };
        let options = RunOptions::new()
            .with_cancel(interrupt.clone())
            .on_event(&mut on_event);
        let result = transcribe_file(&transcriber, file, &context, options);
        progress.clear();
        if interrupt.is_cancelled() {
            eprintln!("ctxscribe: interrupted");
            return Ok(EXIT_INTERRUPTED);
        }
        match result {
            Ok(transcript) => {
                if !args.json {
                    for warning in &transcript.warnings {
                        eprintln!(
                            "ctxscribe: warning: {name}: {}: {}",
                            warning.code, warning.message
                        );
                    }
                }
                let line = if args.json {
                    json_line(&name, &transcript, transcriber.backend())
                } else if args.files.len() > 1 {
                    format!("{name}: {}", transcript.text)
                } else {
                    transcript.text
                };
                let mut out = stdout.lock();
                writeln!(out, "{line}")
                    .and_then(|()| out.flush())
                    .map_err(|e| Error::invalid("output", format!("cannot write: {e}")))?;
            }
            Err(error) => status = status.max(report(Some(&name), &error)),
        }
    }
    Ok(status)
}

/// `--messages`: the JSON itself, or `@FILE` holding it.
fn messages_text(value: &str) -> Result<String> {
    field_text("messages", value)
}

/// `value`, or the text of the file `@FILE` names, for the field `param`.
fn field_text(param: &'static str, value: &str) -> Result<String> {
    let Some(path) = value.strip_prefix('@') else {
        return Ok(value.to_owned());
    };
    std::fs::read_to_string(path)
        .map_err(|e| Error::invalid(param, format!("cannot read {path}: {e}")))
}

/// The `--sounds-like` values together: each is `TERM=FORM[,FORM...]`, a JSON object
/// (the HTTP field's form) or `@FILE` holding one.
fn sounds_like(values: &[String]) -> Result<SoundsLike> {
    let mut pairs: Vec<(String, Vec<String>)> = Vec::new();
    for value in values {
        let text = field_text("sounds_like", value)?;
        if text.trim_start().starts_with('{') {
            pairs.extend_from_slice(parse_sounds_like(&text)?.entries());
        } else if let Some((term, forms)) = text.split_once('=') {
            pairs.push((
                term.to_owned(),
                forms.split(',').map(str::to_owned).collect(),
            ));
        } else {
            return Err(Error::invalid(
                "sounds_like",
                format!(
                    "--sounds-like must be TERM=FORM[,FORM...] or a JSON object, got {:?}",
                    text.chars().take(40).collect::<String>()
                ),
            ));
        }
    }
    SoundsLike::from_pairs(pairs)
}

/// Reads and transcribes one file: `-`, a directory or a missing file is an
/// `invalid_request` about `file`.
fn transcribe_file(
    transcriber: &ContextTranscriber,
    file: &Path,
    context: &Context,
    options: RunOptions<'_>,
) -> Result<Transcript> {
    if file.as_os_str() == "-" {
        return Err(Error::invalid(
            "file",
            "reading audio from standard input (`-`) is not supported; give a file path",
        ));
    }
    let bytes = read_audio(file, transcriber.audio_limits())?;
    let audio = CheckedAudio::new(bytes.into(), transcriber.audio_limits())?;
    let request = TranscriptionRequest::new(
        audio,
        context.messages.clone(),
        context.languages.clone(),
        context.dictionary.clone(),
    );
    transcriber.run(request, options)
}

/// The first Ctrl-C cancels `token` (the transcription stops at its next step and the
/// command exits with [`EXIT_INTERRUPTED`]); a second one exits at once. Where a handler
/// is installed already (the command run twice in one process), the first one stays.
fn cancel_on_ctrl_c(token: &CancelToken) {
    let token = token.clone();
    let _ = ctrlc::set_handler(move || {
        if token.is_cancelled() {
            std::process::exit(EXIT_INTERRUPTED);
        }
        token.cancel();
    });
}

/// The bytes of the audio file at `path`, refused before reading when over the limit.
fn read_audio(path: &Path, limits: &AudioLimits) -> Result<Vec<u8>> {
    let invalid = |what: String| Error::invalid("file", format!("{}: {what}", path.display()));
    let metadata = std::fs::metadata(path).map_err(|e| invalid(e.to_string()))?;
    if metadata.is_dir() {
        return Err(invalid("is a directory, not an audio file".into()));
    }
    if metadata.len() > limits.max_file_bytes {
        return Err(Error::FileTooLarge {
            size: metadata.len(),
            limit: limits.max_file_bytes,
        });
    }
    std::fs::read(path).map_err(|e| invalid(e.to_string()))
}

/// One file's `--json` line.
fn json_line(file: &str, transcript: &Transcript, backend: Option<Backend>) -> String {
    let segments: Vec<_> = transcript
        .segments
        .iter()
        .map(|s| json!({"start": round_ms(s.start), "end": round_ms(s.end), "text": s.text}))
        .collect();
    json!({
        "file": file,
        "text": transcript.text,
        "language": transcript.language.map(|l| l.code()),
        "audio_secs": round_ms(transcript.audio_secs),
        "segments": segments,
        "warnings": transcript
            .warnings
            .iter()
            .map(|w| json!({"code": w.code.as_str(), "message": w.message}))
            .collect::<Vec<_>>(),
        "cpu_kernels": crate::engine::cpu_kernels_json(),
        "backend": backend.map(|backend| backend.to_json()),
        "timings": {
            "decode_secs": round_ms(transcript.timings.decode.as_secs_f64()),
            "engine_secs": round_ms(transcript.timings.engine.as_secs_f64()),
            "total_secs": round_ms(transcript.timings.total.as_secs_f64()),
        },
    })
    .to_string()
}

fn round_ms(secs: f64) -> f64 {
    (secs * 1000.0).round() / 1000.0
}

/// A one-line progress display on stderr, only when stderr is a terminal.
struct Progress {
    total: usize,
    started: Instant,
    enabled: bool,
}

impl Progress {
    fn new(total: usize) -> Self {
        Self {
            total,
            started: Instant::now(),
            enabled: std::io::stderr().is_terminal(),
        }
    }

    /// File `index` of the files, `name`, and how far it is (`audio`: seconds of audio
    /// transcribed, of the file's length), shown for files of at least
    /// [`AUDIO_PROGRESS_MIN_SECS`].
    fn show(&mut self, index: usize, name: &str, audio: Option<(f64, f64)>) {
        if !self.enabled {
            return;
        }
        let width = 20;
        let audio = audio.filter(|&(_, total)| total >= AUDIO_PROGRESS_MIN_SECS);
        let (done, of_audio) = match audio {
            Some((done, total)) => (
                ((done / total).clamp(0.0, 1.0) * width as f64) as usize,
                format!(" {done:.0}/{total:.0} s of audio"),
            ),
            None => (index * width / self.total.max(1), String::new()),
        };
        eprint!(
            "\r\x1b[2K[{}{}] {}/{}{of_audio} {:.0} s  {name}",
            "#".repeat(done),
            "-".repeat(width - done),
            index + 1,
            self.total,
            self.started.elapsed().as_secs_f64()
        );
    }

    fn clear(&mut self) {
        if self.enabled {
            eprint!("\r\x1b[2K");
        }
    }
}
