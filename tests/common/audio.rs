//! Helpers of the audio ingestion tests (`tests/audio_ingestion.rs`, `tests/audio_hostile.rs`).

use ctxscribe::Error;
use ctxscribe::audio::Pcm16k;

use super::audio_fixtures_dir;

/// Length of the speech clip every fixture of `tests/fixtures/make-fixtures.sh` encodes.
pub const CLIP_SECS: f64 = 11.0;

/// The typed errors an upload may be answered with.
pub const ERROR_CODES: [&str; 4] = [
    "unsupported_audio_type",
    "audio_decode_failed",
    "audio_too_long",
    "file_too_large",
];

/// A file of the audio fixtures.
pub fn read_fixture(name: &str) -> Vec<u8> {
    let path = audio_fixtures_dir().join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

pub fn rms(x: &[f32]) -> f64 {
    if x.is_empty() {
        return 0.0;
    }
    (x.iter().map(|&v| f64::from(v).powi(2)).sum::<f64>() / x.len() as f64).sqrt()
}

/// A one-line description of a decode result (never the samples themselves).
pub fn summary(result: &Result<Pcm16k, Error>) -> String {
    match result {
        Ok(pcm) => format!(
            "Ok({:?}, {:.3} s, {} Hz, {} ch)",
            pcm.source_format,
            pcm.duration_secs(),
            pcm.source_sample_rate,
            pcm.source_channels
        ),
        Err(e) => format!("Err({}: {e})", e.code()),
    }
}

/// Checks the invariants of any successful decode.
pub fn assert_well_formed(name: &str, pcm: &Pcm16k) {
    assert!(
        pcm.samples
            .iter()
            .all(|s| s.is_finite() && (-1.0..=1.0).contains(s)),
        "{name}: samples must be finite and within [-1, 1]"
    );
}

/// Checks a failure is one of the typed audio errors, not a caught panic.
pub fn assert_typed_error(what: &str, err: &Error) {
    assert!(
        ERROR_CODES.contains(&err.code().as_str()),
        "{what}: unexpected error code {} ({err})",
        err.code()
    );
    assert!(
        !err.to_string().contains("panicked"),
        "{what}: a decoder panicked: {err}"
    );
}
