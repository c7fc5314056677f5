//! Shared helpers of the integration tests: paths to ../shared and generated fixtures,
//! one transcriber per test binary, and the scorer's word normalisation.
#![allow(dead_code)]

#[cfg(feature = "server")]
pub mod apps;
pub mod audio;
#[cfg(feature = "server")]
pub mod server;
#[cfg(feature = "server")]
pub mod sse;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use ctxscribe::engine::{Decoding, EngineConfig, EngineRequest, Stop, WhisperEngine};
use ctxscribe::{
    ContextTranscriber, ContextTranscriberBuilder, Dictionary, Language, Languages, Transcript,
};

// Not every test binary uses every one.
#[allow(unused_imports)]
pub use ctxscribe_test_support::{RealClip, models_dir, repo_root, shared_dir};

/// A model file installed by `make setup`; panics with the command to run when missing.
pub fn model(file: &str) -> PathBuf {
    let path = models_dir().join(file);
    assert!(
        path.is_file(),
        "{} is missing: run `make setup` first",
        path.display()
    );
    path
}

/// The Python of `scripts/setup-test-venv.sh` (the OpenAI SDK and Selenium), or
/// `$CTXSCRIBE_OPENAI_PYTHON`; panics with the command to run when missing.
pub fn test_venv_python() -> PathBuf {
    let python = std::env::var_os("CTXSCRIBE_OPENAI_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target/venv-openai/bin/python"));
    assert!(
        python.is_file(),
        "{} is missing: run `bash scripts/setup-test-venv.sh` (`make setup` runs it)",
        python.display()
    );
    python
}

/// Real clips of ../shared/eval/real, all in supported containers (scripts/prepare-eval.sh,
/// run once per test binary).
pub fn real_clips_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        ctxscribe_test_support::prepare_real_clips().unwrap_or_else(|e| panic!("{e}"))
    })
    .clone()
}

/// Runs the generator `script` (a path in the repository; idempotent) into `dir` (a path
/// in the repository) and returns that directory.
fn generated_dir(script: &str, dir: &str) -> PathBuf {
    ctxscribe_test_support::generated_dir(script, dir).unwrap_or_else(|e| panic!("{e}"))
}

/// The rows of ../shared/eval/real/manifest.tsv, their files prepared.
pub fn real_clips() -> Vec<RealClip> {
    ctxscribe_test_support::real_clips_in(&real_clips_dir()).unwrap_or_else(|e| panic!("{e}"))
}

pub fn real_clip(id: &str) -> RealClip {
    real_clips()
        .into_iter()
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("no clip {id}"))
}

/// A builder for the default multilingual base model with the VAD.
pub fn base_builder() -> ContextTranscriberBuilder {
    ContextTranscriber::builder()
        .with_model_path(model("ggml-base.bin"))
        .with_vad_model_path(model("silero-v6.2.0-ggml.bin"))
}

/// The base model's own engine (greedy), on `threads` threads, with the Silero VAD when
/// `vad`: for tests that count its encoder passes or call it below the pipeline.
pub fn base_engine(threads: usize, vad: bool) -> WhisperEngine {
    WhisperEngine::load(&EngineConfig {
        model_path: model("ggml-base.bin"),
        vad_model_path: vad.then(|| model("silero-v6.2.0-ggml.bin")),
        threads,
        decoding: Decoding::Greedy,
        weights: ctxscribe::config::default_weights(),
        device: ctxscribe::config::default_device().expect("CTXSCRIBE_DEVICE is auto, cpu or gpu"),
    })
    .expect("model loads")
}

/// An engine request for `samples` in `languages` as plain transcription makes it: no
/// prompt, no bias, no deadline, sentence case on.
pub fn plain_request<'a>(samples: &'a [f32], languages: &'a Languages) -> EngineRequest<'a> {
    static NEVER: Stop = Stop::NEVER;
    EngineRequest {
        samples,
        languages,
        prompt: "",
        stop: &NEVER,
        bias: None,
        sentence_case: true,
        term_words: &[],
    }
}

/// The samples of the audio file at `path`, decoded to 16 kHz mono.
pub fn samples_16k(path: &Path) -> Vec<f32> {
    let bytes = std::fs::read(path).expect("read");
    ctxscribe::audio::decode_to_16k_mono(&bytes, &ctxscribe::AudioLimits::default())
        .expect("decode")
        .samples
}

/// The default multilingual base model, loaded once per test binary.
pub fn base_transcriber() -> &'static ContextTranscriber {
    static TRANSCRIBER: OnceLock<ContextTranscriber> = OnceLock::new();
    TRANSCRIBER.get_or_init(|| base_builder().build().expect("load base model"))
}

/// The transcript's segments: one at least for a text, times in order within the audio,
/// and their texts joined by spaces are the text (whitespace normalised).
pub fn assert_segments_cover(transcript: &Transcript) {
    let segments = &transcript.segments;
    assert_eq!(
        segments.is_empty(),
        transcript.text.is_empty(),
        "{segments:?}"
    );
    let mut previous_end = 0.0;
    for segment in segments {
        assert!(
            previous_end <= segment.start
                && segment.start <= segment.end
                && segment.end <= transcript.audio_secs + 0.01,
            "{segments:?}"
        );
        assert!(!segment.text.is_empty() && segment.text.trim() == segment.text);
        previous_end = segment.end;
    }
    let joined: Vec<&str> = segments.iter().map(|s| s.text.as_str()).collect();
    assert_eq!(
        joined.join(" "),
        transcript
            .text
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    );
}

/// The language of a Whisper code the test knows to exist (`"de"`).
pub fn lang(code: &str) -> Language {
    Language::from_code(code).expect("known language")
}

/// Transcribes a file with no context.
pub fn transcribe_file(
    transcriber: &ContextTranscriber,
    path: &Path,
    languages: Languages,
) -> ctxscribe::Result<Transcript> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    transcriber.transcribe_blocking(bytes.into(), vec![], languages, Dictionary::default())
}

/// The scorer's normalisation (shared/eval/score.py): lower case, punctuation and `_` to
/// spaces, split on whitespace (NFKC is a no-op for the texts compared here).
pub fn norm_words(text: &str) -> Vec<String> {
    text.to_lowercase()
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '\'' || c.is_whitespace() {
                c
            } else {
                ' '
            }
        })
        .collect::<String>()
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

/// Word-level edit distance.
pub fn edit_distance(reference: &[String], hypothesis: &[String]) -> usize {
    let mut previous: Vec<usize> = (0..=hypothesis.len()).collect();
    for (i, r) in reference.iter().enumerate() {
        let mut current = vec![i + 1];
        for (j, h) in hypothesis.iter().enumerate() {
            let substitution = previous[j] + usize::from(r != h);
            current.push((previous[j + 1] + 1).min(current[j] + 1).min(substitution));
        }
        previous = current;
    }
    previous[hypothesis.len()]
}

/// Word error rate of `hypothesis` against `reference`.
pub fn wer(reference: &str, hypothesis: &str) -> f64 {
    let r = norm_words(reference);
    let h = norm_words(hypothesis);
    edit_distance(&r, &h) as f64 / r.len().max(1) as f64
}

/// `target/fixtures/audio`, generated on first use by `tests/fixtures/make-fixtures.sh`
/// (idempotent; needs bash, ffmpeg and openssl).
pub fn audio_fixtures_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| generated_dir("tests/fixtures/make-fixtures.sh", "target/fixtures/audio"))
}

/// A file of [`audio_fixtures_dir`].
pub fn audio_fixture(name: &str) -> PathBuf {
    let path = audio_fixtures_dir().join(name);
    assert!(path.is_file(), "no fixture {}", path.display());
    path
}

/// `target/fixtures/hostile`: hours of silence in every container and other hostile
/// uploads, generated on first use by `tests/fixtures/make-hostile.sh` (needs bash,
/// ffmpeg and python3).
pub fn hostile_fixtures_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| generated_dir("tests/fixtures/make-hostile.sh", "target/fixtures/hostile"))
}

/// One clip of a set of sentences that say a term or only a word like it
/// (`target/fixtures/homophones`, `target/fixtures/sounds-like`; espeak-ng, generated on
/// first use).
pub struct HomophoneClip {
    pub path: PathBuf,
    /// True when the sentence says the terms; false when an ordinary word only spells one.
    pub says_terms: bool,
    pub term: String,
    /// The sentence as written.
    pub sentence: String,
}

/// The clips of tests/fixtures/make-homophones.sh.
pub fn homophone_clips() -> Vec<HomophoneClip> {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    let dir = DIR.get_or_init(|| {
        generated_dir(
            "tests/fixtures/make-homophones.sh",
            "target/fixtures/homophones",
        )
    });
    term_clips(dir, "homophones.tsv")
}

/// The clips of tests/fixtures/make-sounds-like.sh: names said unlike their spelling,
/// and ordinary words that are a name's spoken form.
pub fn sounds_like_clips() -> Vec<HomophoneClip> {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    let dir = DIR.get_or_init(|| {
        generated_dir(
            "tests/fixtures/make-sounds-like.sh",
            "target/fixtures/sounds-like",
        )
    });
    term_clips(dir, "sounds-like.tsv")
}

/// The clips of tests/fixtures/make-casing.sh: ordinary compound nouns mid-sentence, the
/// `term` a name the sentence capitalises (or `-`).
pub fn casing_clips() -> Vec<HomophoneClip> {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    let dir = DIR
        .get_or_init(|| generated_dir("tests/fixtures/make-casing.sh", "target/fixtures/casing"));
    term_clips(dir, "casing.tsv")
}

/// The clips `table` (name, kind: term|word, term, sentence) in `dir` lists.
fn term_clips(dir: &Path, table: &str) -> Vec<HomophoneClip> {
    let text = std::fs::read_to_string(dir.join(table)).unwrap_or_else(|e| panic!("{table}: {e}"));
    text.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split('\t').collect();
            let [name, kind, term, sentence] = fields[..] else {
                return None;
            };
            Some(HomophoneClip {
                path: dir.join(format!("{name}.wav")),
                says_terms: kind == "term",
                term: term.to_owned(),
                sentence: sentence.to_owned(),
            })
        })
        .collect()
}

/// A synthetic-voice clip of `target/fixtures/voices` (tests/fixtures/make-voices.sh,
/// espeak-ng), generated on first use, with its language and sentence.
pub fn voice_clips() -> Vec<(PathBuf, String, String)> {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    // tests/fixtures/make-voices.sh needs espeak-ng and ffmpeg.
    let dir = DIR
        .get_or_init(|| generated_dir("tests/fixtures/make-voices.sh", "target/fixtures/voices"));
    let table = std::fs::read_to_string(dir.join("voices.tsv")).expect("voices.tsv");
    table
        .lines()
        .filter_map(|line| {
            let mut fields = line.split('\t');
            let name = fields.next()?;
            let language = fields.next()?;
            let sentence = fields.next()?;
            Some((
                dir.join(format!("{name}.wav")),
                language.to_owned(),
                sentence.to_owned(),
            ))
        })
        .collect()
}
