//! Audio ingestion on real encodings of one speech clip.
//!
//! The fixtures are generated (once per test binary, and only if missing) by
//! `tests/fixtures/make-fixtures.sh` into `target/fixtures/audio` from
//! `$CTXSCRIBE_SHARED/eval/real/en_whisper_jfk.flac` (default `<repo>/../shared`): 11.0 s
//! of speech in every supported family, plus unsupported and damaged files.
//!
//! Run with `--nocapture` to see the decode timings and the similarity of every decoded
//! format to the WAV reference.

mod common;

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use common::audio::{
    CLIP_SECS, assert_typed_error, assert_well_formed, read_fixture as read, rms, summary,
};
use ctxscribe::Error;
use ctxscribe::audio::{self, AudioFormat, AudioLimits, Pcm16k, TARGET_SAMPLE_RATE};

fn decode_with(bytes: &[u8], limits: &AudioLimits) -> Result<Pcm16k, Error> {
    audio::decode_to_16k_mono(bytes, limits)
}

fn decode(name: &str) -> Result<Pcm16k, Error> {
    decode_with(&read(name), &AudioLimits::default())
}

/// Normalised cross-correlation of `x` against `reference` at lag `lag` (x shifted left).
fn ncc_at(reference: &[f32], x: &[f32], lag: isize) -> f64 {
    let (mut dot, mut e_ref, mut e_x) = (0.0f64, 0.0f64, 0.0f64);
    for (i, &r) in reference.iter().enumerate() {
        let j = i as isize + lag;
        if j < 0 || j as usize >= x.len() {
            continue;
        }
        let v = f64::from(x[j as usize]);
        dot += f64::from(r) * v;
        e_ref += f64::from(r).powi(2);
        e_x += v * v;
    }
    if e_ref == 0.0 || e_x == 0.0 {
        0.0
    } else {
        dot / (e_ref * e_x).sqrt()
    }
}

fn decimate4(x: &[f32]) -> Vec<f32> {
    x.chunks(4).map(|c| c.iter().sum::<f32>() / 4.0).collect()
}

/// Best normalised cross-correlation within ±`max_lag` samples: `(lag, ncc)`. Coarse search
/// on signals decimated by 4, then refined at full rate.
fn best_alignment(reference: &[f32], x: &[f32], max_lag: isize) -> (isize, f64) {
    let (r4, x4) = (decimate4(reference), decimate4(x));
    let coarse = (-max_lag / 4..=max_lag / 4)
        .map(|lag| (lag, ncc_at(&r4, &x4, lag)))
        .fold((0, f64::MIN), |best, c| if c.1 > best.1 { c } else { best });
    (coarse.0 * 4 - 6..=coarse.0 * 4 + 6)
        .map(|lag| (lag, ncc_at(reference, x, lag)))
        .fold((0, f64::MIN), |best, c| if c.1 > best.1 { c } else { best })
}

/// Pearson correlation of the 100 ms RMS envelopes, after shifting `x` by `lag`.
fn envelope_correlation(reference: &[f32], x: &[f32], lag: isize) -> f64 {
    const WINDOW: usize = 1600;
    let shifted: Vec<f32> = (0..reference.len())
        .map(|i| {
            let j = i as isize + lag;
            if j >= 0 && (j as usize) < x.len() {
                x[j as usize]
            } else {
                0.0
            }
        })
        .collect();
    let env = |s: &[f32]| -> Vec<f64> { s.chunks(WINDOW).map(rms).collect() };
    let (a, b) = (env(reference), env(&shifted));
    let n = a.len().min(b.len()) as f64;
    let (ma, mb) = (a.iter().sum::<f64>() / n, b.iter().sum::<f64>() / n);
    let (mut cov, mut va, mut vb) = (0.0, 0.0, 0.0);
    for (x, y) in a.iter().zip(&b) {
        cov += (x - ma) * (y - mb);
        va += (x - ma).powi(2);
        vb += (y - mb).powi(2);
    }
    cov / (va * vb).sqrt()
}

/// Every supported fixture: its family, and the waveform correlation it must reach against
/// the WAV reference (lossy codecs at low rates, 8 kHz telephony and different mixes are
/// allowed less).
const SUPPORTED: &[(&str, AudioFormat, f64)] = &[
    ("ok_wav_s16_16k_mono.wav", AudioFormat::Wav, 0.99),
    ("ok_wav_s24_44k_stereo.wav", AudioFormat::Wav, 0.99),
    ("ok_wav_f32_22k_mono.wav", AudioFormat::Wav, 0.99),
    ("ok_wav_u8_8k_mono.wav", AudioFormat::Wav, 0.9),
    ("ok_wav_mulaw_8k_mono.wav", AudioFormat::Wav, 0.9),
    ("ok_wav_s16_48k_stereo.wav", AudioFormat::Wav, 0.99),
    ("ok_wav_adpcm_16k_mono.wav", AudioFormat::Wav, 0.95),
    ("ok_mp3_cbr_128k.mp3", AudioFormat::Mp3, 0.95),
    ("ok_mp3_vbr_mono.mp3", AudioFormat::Mp3, 0.95),
    ("ok_mp3_big_id3.mp3", AudioFormat::Mp3, 0.95),
    ("ok_m4a_aac.m4a", AudioFormat::M4a, 0.95),
    ("ok_m4a_aac_faststart.m4a", AudioFormat::M4a, 0.95),
    ("ok_ogg_vorbis.ogg", AudioFormat::Ogg, 0.95),
    ("ok_ogg_opus.ogg", AudioFormat::Ogg, 0.9),
    ("ok_ogg_opus_chained.ogg", AudioFormat::Ogg, 0.9),
    ("ok_ogg_vorbis_chained_rates.ogg", AudioFormat::Ogg, 0.9),
    ("ok_webm_opus.webm", AudioFormat::Webm, 0.9),
    ("ok_webm_opus_live.webm", AudioFormat::Webm, 0.9),
    ("ok_webm_opus_16k.webm", AudioFormat::Webm, 0.9),
    ("ok_webm_vorbis.webm", AudioFormat::Webm, 0.95),
    ("ok_mka_opus.mka", AudioFormat::Webm, 0.9),
    ("ok_mka_pcm.mka", AudioFormat::Webm, 0.99),
];

fn reference() -> &'static Pcm16k {
    static REFERENCE: OnceLock<Pcm16k> = OnceLock::new();
    REFERENCE.get_or_init(|| decode("ok_wav_s24_44k_stereo.wav").expect("reference decodes"))
}

#[test]
fn supported_fixtures_decode_to_16k_mono_speech() {
    let reference = reference();
    assert!((reference.duration_secs() - CLIP_SECS).abs() < 0.01);
    println!(
        "{:34} {:>9} {:>8} {:>7} {:>7} {:>6} {:>6}",
        "fixture", "decode ms", "secs", "rate", "lag ms", "ncc", "env"
    );
    let mut failures = Vec::new();
    for &(name, format, min_ncc) in SUPPORTED {
        let bytes = read(name);
        assert_eq!(audio::detect_format(&bytes).ok(), Some(format), "{name}");
        // Best of three, to report a stable timing.
        let mut best = Duration::MAX;
        let mut decoded = None;
        for _ in 0..3 {
            let start = Instant::now();
            let pcm = decode_with(&bytes, &AudioLimits::default())
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            best = best.min(start.elapsed());
            decoded = Some(pcm);
        }
        let pcm = decoded.expect("decoded");
        assert_well_formed(name, &pcm);
        assert_eq!(pcm.source_format, format, "{name}");
        let (lag, ncc) = best_alignment(&reference.samples, &pcm.samples, 2000);
        let env = envelope_correlation(&reference.samples, &pcm.samples, lag);
        println!(
            "{name:34} {:>9.2} {:>8.3} {:>7} {:>7.2} {ncc:>6.3} {env:>6.3}",
            best.as_secs_f64() * 1e3,
            pcm.duration_secs(),
            pcm.source_sample_rate,
            lag as f64 * 1e3 / f64::from(TARGET_SAMPLE_RATE),
        );
        if (pcm.duration_secs() - CLIP_SECS).abs() > 0.1 {
            failures.push(format!("{name}: duration {:.3} s", pcm.duration_secs()));
        }
        if rms(&pcm.samples) < 0.02 {
            failures.push(format!("{name}: rms {:.4}", rms(&pcm.samples)));
        }
        if ncc < min_ncc {
            failures.push(format!("{name}: waveform correlation {ncc:.3} < {min_ncc}"));
        }
        if env < 0.95 {
            failures.push(format!("{name}: envelope correlation {env:.3} < 0.95"));
        }
        if lag.abs() > 800 {
            failures.push(format!("{name}: misaligned by {lag} samples"));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn sources_are_described() {
    let cases = [
        ("ok_wav_s24_44k_stereo.wav", 44_100, 2),
        ("ok_wav_u8_8k_mono.wav", 8_000, 1),
        ("ok_mp3_vbr_mono.mp3", 44_100, 1),
        // Opus is always decoded at 16 kHz, whatever the input rate was.
        ("ok_webm_opus_16k.webm", 16_000, 1),
        ("ok_ogg_opus.ogg", 16_000, 2),
        // Chained: the first link's description.
        ("ok_ogg_vorbis_chained_rates.ogg", 44_100, 2),
    ];
    for (name, rate, channels) in cases {
        let pcm = decode(name).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            (pcm.source_sample_rate, pcm.source_channels),
            (rate, channels),
            "{name}"
        );
    }
}

/// AUDIO.md pitfall 2: a WebM Opus track declaring 44.1 kHz must still decode (at 16 kHz).
#[test]
fn webm_opus_declaring_a_non_opus_rate_decodes() {
    let mut bytes = read("ok_webm_opus.webm");
    // SamplingFrequency (0xB5), 8-byte float 48000.0 -> 44100.0.
    let from = [0xB5, 0x88, 0x40, 0xE7, 0x70, 0, 0, 0, 0, 0];
    let to = [0xB5, 0x88, 0x40, 0xE5, 0x88, 0x80, 0, 0, 0, 0];
    let at = bytes
        .windows(from.len())
        .position(|w| w == from)
        .expect("the fixture declares SamplingFrequency 48000.0");
    bytes[at..at + to.len()].copy_from_slice(&to);
    let pcm = decode_with(&bytes, &AudioLimits::default()).expect("decodes");
    assert_eq!(pcm.source_sample_rate, 16_000);
    assert!(
        (pcm.duration_secs() - CLIP_SECS).abs() < 0.1,
        "{}",
        pcm.duration_secs()
    );
    let (_, ncc) = best_alignment(&reference().samples, &pcm.samples, 2000);
    assert!(ncc > 0.9, "{ncc}");
}

#[test]
fn unsupported_fixtures_are_rejected_by_name() {
    let cases = [
        ("unsupported_flac.flac", "flac"),
        ("unsupported_aiff.aiff", "aiff"),
        ("unsupported_rf64.wav", "rf64 (64-bit wav)"),
        ("unsupported_ogg_flac.oga", "ogg (flac)"),
        ("unsupported_ogg_speex.spx", "ogg (speex)"),
        ("unsupported_mp2.mp2", "mp2"),
        ("unsupported_adts.aac", "aac (adts)"),
        ("unsupported_mka_aac.mka", "matroska (aac)"),
        ("unsupported_caf.caf", "caf"),
        ("unsupported_text.txt", "text"),
        ("unsupported_json.json", "text"),
        ("unsupported_random.bin", "unknown"),
        ("bad_empty.wav", "empty"),
    ];
    for (name, expected) in cases {
        match decode(name) {
            Err(Error::UnsupportedAudioType { detected }) => {
                assert_eq!(detected, expected, "{name}")
            }
            other => panic!(
                "{name}: expected unsupported_audio_type, got {}",
                summary(&other)
            ),
        }
        // detect_format agrees, except for Matroska, whose codec is only seen when decoding.
        if !name.ends_with(".mka") {
            assert_eq!(
                audio::detect_format(&read(name)).map_err(|e| e.code().as_str()),
                Err("unsupported_audio_type"),
                "{name}"
            );
        }
    }
}

/// What a damaged file must give.
#[derive(Debug, Clone, Copy)]
enum Expect {
    /// Decodes, to a duration within this range (seconds).
    Shorter(f64, f64),
    /// Fails with `audio_decode_failed`.
    DecodeFailed,
}

#[test]
fn damaged_fixtures_give_typed_errors_or_the_audio_before_the_damage() {
    use Expect::{DecodeFailed, Shorter};
    let cases = [
        // Cut at 50 %: the first half decodes, except an MP4 whose index (moov) was at the
        // end, and Ogg loses the partial page (pages are ~1 s).
        ("bad_trunc50_wav_s16_16k_mono.wav", Shorter(5.4, 5.6)),
        ("bad_trunc50_mp3_cbr_128k.mp3", Shorter(5.3, 5.6)),
        ("bad_trunc50_ogg_vorbis.ogg", Shorter(4.0, 5.6)),
        ("bad_trunc50_ogg_opus.ogg", Shorter(4.0, 5.6)),
        ("bad_trunc50_webm_opus.webm", Shorter(5.2, 5.7)),
        ("bad_trunc50_webm_opus_live.webm", Shorter(5.2, 5.7)),
        ("bad_trunc50_m4a_aac.m4a", DecodeFailed),
        ("bad_trunc50_m4a_aac_faststart.m4a", Shorter(5.0, 5.6)),
        // Cut at 100 bytes: inside the headers, nothing to decode. A wav keeps its 11
        // samples of audio (22 bytes after a 78-byte header).
        ("bad_trunc100_wav_s16_16k_mono.wav", Shorter(0.0, 0.01)),
        ("bad_trunc100_mp3_cbr_128k.mp3", DecodeFailed),
        ("bad_trunc100_ogg_vorbis.ogg", DecodeFailed),
        ("bad_trunc100_ogg_opus.ogg", DecodeFailed),
        ("bad_trunc100_webm_opus.webm", DecodeFailed),
        ("bad_trunc100_webm_opus_live.webm", DecodeFailed),
        ("bad_trunc100_m4a_aac.m4a", DecodeFailed),
        ("bad_trunc100_m4a_aac_faststart.m4a", DecodeFailed),
        // The middle 10 % overwritten with random bytes. PCM cannot tell noise from audio;
        // MP3 resynchronises; Ogg drops the pages failing their CRC; AAC skips the packets
        // it cannot decode; the seekable WebM reader stops at the damage; the live WebM one
        // reports it.
        ("bad_corrupt_wav_s16_16k_mono.wav", Shorter(10.99, 11.01)),
        ("bad_corrupt_mp3_cbr_128k.mp3", Shorter(9.0, 11.05)),
        ("bad_corrupt_ogg_vorbis.ogg", Shorter(8.0, 10.5)),
        ("bad_corrupt_ogg_opus.ogg", Shorter(8.0, 10.5)),
        ("bad_corrupt_webm_opus.webm", Shorter(3.0, 6.0)),
        ("bad_corrupt_webm_opus_live.webm", DecodeFailed),
        ("bad_corrupt_m4a_aac.m4a", Shorter(9.0, 11.05)),
        ("bad_corrupt_m4a_aac_faststart.m4a", Shorter(9.0, 11.05)),
    ];
    let mut failures = Vec::new();
    for (name, expect) in cases {
        let result = decode(name);
        println!("{name:38} {}", summary(&result));
        match (expect, &result) {
            (Shorter(min, max), Ok(pcm)) => {
                assert_well_formed(name, pcm);
                if !(min..=max).contains(&pcm.duration_secs()) {
                    failures.push(format!(
                        "{name}: {:.3} s, expected {min}..={max}",
                        pcm.duration_secs()
                    ));
                }
            }
            (DecodeFailed, Err(e)) if e.code() == "audio_decode_failed" => {
                assert_typed_error(name, e)
            }
            _ => failures.push(format!(
                "{name}: expected {expect:?}, got {}",
                summary(&result)
            )),
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn any_cut_point_gives_the_audio_before_it_or_a_decode_error() {
    // Uploads cut short are the common damage: whatever the cut point, never a panic, never
    // an error other than audio_decode_failed, never more audio than the whole file, and
    // (for streams with their index in front) audio once the headers are complete.
    for &(name, _, _) in SUPPORTED {
        let bytes = read(name);
        for percent in (5..100).step_by(5) {
            let cut = bytes.len() * percent / 100;
            let what = format!("{name} cut at {percent} %");
            match decode_with(&bytes[..cut], &AudioLimits::default()) {
                Ok(pcm) => {
                    assert_well_formed(&what, &pcm);
                    assert!(pcm.duration_secs() < CLIP_SECS + 0.1, "{what}");
                }
                Err(e) => {
                    assert_eq!(e.code(), "audio_decode_failed", "{what}: {e}");
                    assert_typed_error(&what, &e);
                    // Only where nothing is decodable yet: the moov of an MP4 at the end,
                    // the 1.1 MB ID3 tag in front of the big-tag MP3, Ogg/WebM before the
                    // first complete audio page or cluster.
                    let headers_only = name == "ok_m4a_aac.m4a"
                        || name == "ok_mp3_big_id3.mp3"
                        || (name.contains("ogg") && percent <= 20)
                        || percent <= 5;
                    assert!(headers_only, "{what}: {e}");
                }
            }
        }
    }
}

#[test]
fn a_cut_that_decodes_is_reported_and_a_whole_file_is_not() {
    // The audio before a cut is transcribed; the transcript's `audio_truncated` warning
    // comes from `ProbedAudio::truncation`. Every supported fixture, whole and cut at every
    // 5 %: whole files are never reported, and every cut that decodes is.
    let limits = AudioLimits::default();
    let mut missed = Vec::new();
    println!("{:34} {:>9} {:>9}", "fixture", "cuts seen", "decoded");
    for &(name, _, _) in SUPPORTED {
        let bytes = read(name);
        let whole = audio::ProbedAudio::new(bytes.clone(), &limits).expect("probes");
        assert_eq!(whole.truncation(), None, "{name} is whole");
        let (mut seen, mut decoded) = (0, 0);
        for percent in (5..100).step_by(5) {
            let cut = bytes[..bytes.len() * percent / 100].to_vec();
            let Ok(probed) = audio::ProbedAudio::new(cut, &limits) else {
                continue;
            };
            if probed.decode(&limits).is_err() {
                continue;
            }
            decoded += 1;
            match probed.truncation() {
                Some(message) if !message.is_empty() => seen += 1,
                _ => missed.push(format!("{name} cut at {percent} %")),
            }
        }
        println!("{name:34} {seen:>9} {decoded:>9}");
    }
    assert!(
        missed.is_empty(),
        "cuts transcribed without a warning: {missed:#?}"
    );
}

#[test]
fn oversize_uploads_are_file_too_large() {
    let bytes = read("ok_wav_s16_16k_mono.wav");
    let limits = AudioLimits {
        max_file_bytes: 100_000,
        ..AudioLimits::default()
    };
    match decode_with(&bytes, &limits) {
        Err(Error::FileTooLarge { size, limit }) => {
            assert_eq!(size, bytes.len() as u64);
            assert_eq!(limit, 100_000);
        }
        other => panic!("expected file_too_large, got {}", summary(&other)),
    }
    // Checked before the type: even garbage is too large first.
    let err = decode_with(&vec![0u8; 100_001], &limits).expect_err("too large");
    assert_eq!(err.code(), "file_too_large");
    // At the limit exactly, it is accepted.
    let limits = AudioLimits {
        max_file_bytes: bytes.len() as u64,
        ..AudioLimits::default()
    };
    assert!(decode_with(&bytes, &limits).is_ok());
}

#[test]
fn long_files_are_audio_too_long() {
    let short = AudioLimits {
        max_duration_secs: 10.0,
        ..AudioLimits::default()
    };
    let enough = AudioLimits {
        max_duration_secs: 40.0,
        ..AudioLimits::default()
    };
    // Declared duration (Ogg's last granule position), the running count of decoded samples
    // (live WebM declares nothing), and WAV (whose declared length is not trusted).
    for name in [
        "long_silence_30s_opus.ogg",
        "long_tone_30s_live.webm",
        "long_tone_30s.wav",
    ] {
        let bytes = read(name);
        match decode_with(&bytes, &short) {
            Err(Error::AudioTooLong { limit_secs }) => assert_eq!(limit_secs, 10.0, "{name}"),
            other => panic!("{name}: expected audio_too_long, got {}", summary(&other)),
        }
        let pcm = decode_with(&bytes, &enough).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(
            (pcm.duration_secs() - 30.0).abs() < 0.1,
            "{name}: {}",
            pcm.duration_secs()
        );
        assert_well_formed(name, &pcm);
    }
    // The 11 s clips against a 10 s limit: declared (MP3's Xing frame count, MP4, Ogg) or
    // counted (live WebM), it is refused.
    for name in [
        "ok_mp3_vbr_mono.mp3",
        "ok_m4a_aac.m4a",
        "ok_ogg_opus.ogg",
        "ok_webm_opus_live.webm",
        "ok_wav_s16_16k_mono.wav",
    ] {
        let err = decode_with(&read(name), &short).expect_err(name);
        assert_eq!(err.code(), "audio_too_long", "{name}");
    }
    // Silence decodes as silence.
    let pcm = decode_with(&read("long_silence_30s_opus.ogg"), &enough).expect("silence");
    assert!(rms(&pcm.samples) < 1e-3);
}

#[test]
fn the_deadline_applies_to_real_files() {
    let limits = AudioLimits {
        decode_timeout: Duration::ZERO,
        ..AudioLimits::default()
    };
    for name in ["ok_mp3_cbr_128k.mp3", "ok_webm_opus.webm", "ok_m4a_aac.m4a"] {
        let err = decode_with(&read(name), &limits).expect_err(name);
        assert_eq!(err.code(), "audio_decode_failed", "{name}");
        assert!(err.to_string().contains("took too long"), "{name}: {err}");
    }
}

/// xorshift64*: deterministic bytes without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// Random bytes of many lengths.
fn random_inputs(rng: &mut Rng) -> Vec<(String, Vec<u8>)> {
    (0..=64)
        .chain((0..60).map(|i| 65 + i * 1097))
        .map(|len| (format!("random {len} bytes"), rng.bytes(len)))
        .collect()
}

/// Valid magic numbers followed by garbage.
fn magic_then_garbage_inputs(rng: &mut Rng) -> Vec<(String, Vec<u8>)> {
    let magics: [&[u8]; 9] = [
        b"RIFF\x24\x00\x01\x00WAVEfmt \x10\x00\x00\x00",
        b"\x1A\x45\xDF\xA3\x9F\x42\x86\x81\x01\x42\x82\x84webm",
        b"\x1A\x45\xDF\xA3\x9F\x42\x86\x81\x01\x42\x82\x88matroska",
        b"OggS\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00",
        b"\x00\x00\x00\x20ftypM4A \x00\x00\x00\x00",
        b"ID3\x04\x00\x00\x00\x00\x00\x20",
        b"\xFF\xFB\x90\x64",
        b"fLaC",
        b"OggS\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x13OpusHead",
    ];
    let mut inputs = Vec::new();
    for magic in magics {
        for len in [0, 1, 10, 100, 1000, 10_000, 100_000] {
            let mut bytes = magic.to_vec();
            bytes.extend(rng.bytes(len));
            inputs.push((format!("{:?}.. + {len}", &magic[..4]), bytes));
        }
    }
    inputs
}

/// Mutations of every supported fixture: flipped bytes (most in the headers), overwritten
/// runs, random cuts.
fn mutated_fixture_inputs(rng: &mut Rng) -> Vec<(String, Vec<u8>)> {
    let mut inputs = Vec::new();
    for &(name, _, _) in SUPPORTED {
        let original = read(name);
        if original.len() > 1 << 20 {
            continue;
        }
        for round in 0..12 {
            let bytes = mutate(&original, round, rng);
            inputs.push((format!("{name} mutation {round}"), bytes));
        }
    }
    inputs
}

/// Mutation `round` of `original`: flipped bits (in the first 4 KiB on even rounds), an
/// overwritten run every third round, a random cut every fourth.
fn mutate(original: &[u8], round: i32, rng: &mut Rng) -> Vec<u8> {
    let mut bytes = original.to_vec();
    let flips = 1 + rng.below(16);
    for _ in 0..flips {
        let span = if round % 2 == 0 {
            bytes.len().min(4096)
        } else {
            bytes.len()
        };
        let at = rng.below(span);
        bytes[at] ^= 1 << rng.below(8);
    }
    if round % 3 == 0 {
        let at = rng.below(bytes.len());
        let run = rng.below(512).min(bytes.len() - at);
        let noise = rng.bytes(run);
        bytes[at..at + run].copy_from_slice(&noise);
    }
    if round % 4 == 0 {
        let cut = rng.below(bytes.len());
        bytes.truncate(cut);
    }
    bytes
}

#[test]
fn garbage_and_mutations_never_panic() {
    let limits = AudioLimits {
        max_duration_secs: 120.0,
        decode_timeout: Duration::from_secs(10),
        ..AudioLimits::default()
    };
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut inputs = random_inputs(&mut rng);
    inputs.extend(magic_then_garbage_inputs(&mut rng));
    inputs.extend(mutated_fixture_inputs(&mut rng));

    let started = Instant::now();
    let (mut ok, mut failed) = (0, 0);
    for (what, bytes) in &inputs {
        let start = Instant::now();
        match decode_with(bytes, &limits) {
            Ok(pcm) => {
                assert_well_formed(what, &pcm);
                assert!(pcm.duration_secs() <= limits.max_duration_secs, "{what}");
                ok += 1;
            }
            Err(e) => {
                assert_typed_error(what, &e);
                failed += 1;
            }
        }
        assert!(
            start.elapsed() < Duration::from_secs(12),
            "{what}: took {:?}",
            start.elapsed()
        );
        // detect_format must be total too.
        let _ = audio::detect_format(bytes);
    }
    println!(
        "{} inputs: {ok} decoded, {failed} typed errors, {:.2} s",
        inputs.len(),
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn resample_to_16k_matches_the_decoder() {
    // Mono 22.05 kHz float WAV decoded vs. its own samples resampled directly.
    let bytes = read("ok_wav_f32_22k_mono.wav");
    let pcm = decode_with(&bytes, &AudioLimits::default()).expect("decodes");
    // The data chunk of this file follows a LIST chunk; find it.
    let at = bytes
        .windows(4)
        .position(|w| w == b"data")
        .expect("data chunk")
        + 8;
    let raw: Vec<f32> = bytes[at..]
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let direct = audio::resample_to_16k(&raw, 22_050).expect("resamples");
    assert_eq!(direct.len(), pcm.samples.len());
    let max_diff = direct
        .iter()
        .zip(&pcm.samples)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max);
    assert!(max_diff < 1e-5, "{max_diff}");
}
