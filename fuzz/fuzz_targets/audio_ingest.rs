//! Audio ingestion: arbitrary bytes -> format detection -> 16 kHz mono PCM.
//!
//! Any input must give `Ok` with well-formed samples or a typed error: no panic, no
//! hang (the decode deadline), no unbounded memory (the duration cap).
#![no_main]

use std::time::Duration;

use ctxscribe::AudioLimits;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Tighter than the defaults so that one execution stays fast (at most 30 s of audio is
    // decoded; longer inputs are refused by the packet scan, before decoding); the checks
    // are the same code paths.
    let limits = AudioLimits {
        max_file_bytes: 4 * 1024 * 1024,
        max_duration_secs: 30.0,
        decode_timeout: Duration::from_secs(5),
        ..AudioLimits::default()
    };
    let detected = ctxscribe::audio::detect_format(data);
    match ctxscribe::audio::decode_to_16k_mono(data, &limits) {
        Ok(pcm) => {
            assert!(detected.is_ok(), "decoded bytes that detect_format rejects");
            assert!(pcm.duration_secs() <= limits.max_duration_secs + 1.0);
            assert!(pcm.samples.iter().all(|s| s.is_finite() && s.abs() <= 1.0));
        }
        Err(error) => {
            assert!(!error.code().as_str().is_empty());
        }
    }
});
