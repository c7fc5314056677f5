//! Hostile uploads: hours of silence in every container (`tests/fixtures/make-hostile.sh`),
//! and the inputs fuzzing found (`fuzz/run.sh audio_ingest`), each turned into a test that
//! failed before its fix. Every one must be answered with a typed error or well-formed
//! audio, never a panic caught on the way out.

mod common;

use common::audio::{
    CLIP_SECS, assert_typed_error, assert_well_formed, read_fixture as read, rms, summary,
};
use common::hostile_fixtures_dir as hostile;
use ctxscribe::Error;
use ctxscribe::audio::{self, AudioFormat, AudioLimits, Pcm16k};

fn decode_with(bytes: &[u8], limits: &AudioLimits) -> Result<Pcm16k, Error> {
    audio::decode_to_16k_mono(bytes, limits)
}

fn decode(name: &str) -> Result<Pcm16k, Error> {
    decode_with(&read(name), &AudioLimits::default())
}

/// Files of hours of silence in every container: refused for their length (before
/// decoding, which the unit tests check with a packet counter; `examples/ingest_cost.rs`
/// prints the CPU times). Just under the limit they are accepted, whole (in 8 kHz AAC and
/// Vorbis too, the sparsest encoder outputs, 63 and 89 bytes per second), unless they hold
/// fewer bytes per second of audio than `AudioLimits::min_bytes_per_sec` (48).
#[test]
fn hostile_fixtures_are_refused_for_their_length_or_decoded_whole() {
    let limits = AudioLimits::default();
    let refused = [
        ("bomb_silence_2h_opus_live.webm", "audio_too_long"),
        ("bomb_silence_2h_opus_chained.ogg", "audio_too_long"),
        ("bomb_silence_2h_vorbis.webm", "audio_too_long"),
        ("bomb_silence_2h_mp3.mp3", "audio_too_long"),
        ("bomb_silence_2h_aac_fragmented.m4a", "audio_too_long"),
        ("bomb_silence_100min_adpcm.wav", "audio_too_long"),
        ("bomb_trun_4g_samples.m4a", "audio_decode_failed"),
        // 26 bytes per second of audio, under AudioLimits::min_bytes_per_sec.
        ("plc_59min_opus.ogg", "audio_decode_failed"),
    ];
    let mut failures = Vec::new();
    for (name, code) in refused {
        let bytes = std::fs::read(hostile().join(name)).expect(name);
        let result = decode_with(&bytes, &limits);
        println!("{name:38} {}", summary(&result));
        match &result {
            Err(e) if e.code() == code => assert_typed_error(name, e),
            _ => failures.push(format!("{name}: expected {code}, got {}", summary(&result))),
        }
    }
    // The 2 h fixtures of tests/fixtures/make-fixtures.sh too.
    for name in ["bomb_silence_2h_opus.webm", "bomb_silence_2h_opus.ogg"] {
        let err = decode(name).expect_err(name);
        assert_eq!(err.code(), "audio_too_long", "{name}");
    }
    for name in [
        "silence_59min_opus.ogg",
        "silence_59min_opus.webm",
        "silence_59min_aac_8k.m4a",
        "silence_59min_vorbis_8k.ogg",
    ] {
        let bytes = std::fs::read(hostile().join(name)).expect(name);
        let result = decode_with(&bytes, &limits);
        println!("{name:38} {}", summary(&result));
        match &result {
            Ok(pcm) if (pcm.duration_secs() - 3540.0).abs() < 1.0 => {
                assert_well_formed(name, pcm);
                assert!(
                    rms(&pcm.samples) < 1e-3,
                    "{name}: silence decodes as silence"
                );
            }
            _ => failures.push(format!("{name}: expected 3540 s, got {}", summary(&result))),
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// An MS ADPCM WAV (mono, 16 kHz, 256-byte blocks) whose blocks start with the largest
/// step size and then repeat the nibble that triples it.
fn ms_adpcm_runaway_wav(blocks: usize) -> Vec<u8> {
    const COEFFS: [(i16, i16); 7] = [
        (256, 0),
        (512, -256),
        (0, 0),
        (192, 64),
        (240, 0),
        (460, -208),
        (392, -232),
    ];
    let mut fmt = Vec::new();
    for v in [2u16, 1] {
        fmt.extend_from_slice(&v.to_le_bytes()); // WAVE_FORMAT_ADPCM, mono
    }
    fmt.extend_from_slice(&16_000u32.to_le_bytes());
    fmt.extend_from_slice(&8_192u32.to_le_bytes()); // bytes per second
    for v in [256u16, 4, 32, 500, 7] {
        fmt.extend_from_slice(&v.to_le_bytes()); // block align, bits, extra, frames, coefs
    }
    for (a, b) in COEFFS {
        fmt.extend_from_slice(&a.to_le_bytes());
        fmt.extend_from_slice(&b.to_le_bytes());
    }
    let mut data = Vec::new();
    for _ in 0..blocks {
        data.push(0); // predictor
        data.extend_from_slice(&i16::MAX.to_le_bytes()); // step size
        data.extend_from_slice(&[0; 4]); // two samples
        data.resize(data.len() + 249, 0x88); // nibble 8: the step size times 3
    }
    let mut wav = b"RIFF".to_vec();
    let riff_len = 4 + 8 + fmt.len() + 8 + data.len();
    wav.extend_from_slice(&u32::try_from(riff_len).expect("small").to_le_bytes());
    wav.extend_from_slice(b"WAVEfmt ");
    wav.extend_from_slice(&u32::try_from(fmt.len()).expect("small").to_le_bytes());
    wav.extend_from_slice(&fmt);
    wav.extend_from_slice(b"data");
    wav.extend_from_slice(&u32::try_from(data.len()).expect("small").to_le_bytes());
    wav.extend_from_slice(&data);
    wav
}

/// Fuzz crash 1947ea89 (audio_ingest): symphonia's MS ADPCM decoder overflows i32 when the
/// step size runs away (fuzz/Cargo.toml explains). With the release profile the overflow
/// wraps and the sample is clamped: the file decodes to (loud) noise within [-1, 1]. With
/// overflow checks the decoder panics, and the library answers audio_decode_failed.
#[test]
fn ms_adpcm_with_a_runaway_step_size_decodes_to_noise() {
    let wav = ms_adpcm_runaway_wav(8);
    assert_eq!(audio::detect_format(&wav).ok(), Some(AudioFormat::Wav));
    match decode_with(&wav, &AudioLimits::default()) {
        Ok(pcm) => {
            assert_well_formed("runaway MS ADPCM", &pcm);
            assert_eq!(pcm.samples.len(), 8 * 500);
            assert!(rms(&pcm.samples) > 0.1, "the runaway is audible");
        }
        Err(e) if cfg!(debug_assertions) => {
            assert_eq!(e.code(), "audio_decode_failed");
            assert!(e.to_string().contains("overflow"), "{e}");
        }
        Err(e) => panic!("release builds decode it: {e}"),
    }
}

/// Fuzz crash dabeacc9 (audio_ingest): a PCM WAV declaring 32768 channels overflows the u16
/// block-align check of symphonia's WAV reader (fuzz/Cargo.toml explains); the file is
/// refused either way.
#[test]
fn wav_with_32768_channels_is_refused() {
    let mut wav = b"RIFF\x46\x5f\x05\x00WAVEfmt \x10\x00\x00\x00\x01\x00".to_vec();
    wav.extend_from_slice(&0x8000u16.to_le_bytes()); // channels
    wav.extend_from_slice(&16_000u32.to_le_bytes());
    wav.extend_from_slice(&32_000u32.to_le_bytes());
    wav.extend_from_slice(&2u16.to_le_bytes()); // block align
    wav.extend_from_slice(&16u16.to_le_bytes()); // bits per sample
    wav.extend_from_slice(b"data\x00\x10\x00\x00");
    wav.resize(wav.len() + 4096, 0);
    let err = decode_with(&wav, &AudioLimits::default()).expect_err("refused");
    assert_eq!(err.code(), "audio_decode_failed", "{err}");
    if !cfg!(debug_assertions) {
        assert!(!err.to_string().contains("panicked"), "{err}");
    }
}

/// Fuzz corpus entry c9543056 (14 s of CPU for 2800 bytes): a fragmented MP4 whose `trun`
/// claims 2^32 - 1 samples without per-sample fields, which symphonia's reader counts
/// through. Refused from the count before the reader sees it.
#[test]
fn a_trun_claiming_more_samples_than_bytes_is_refused() {
    let mut bytes = read("ok_m4a_aac_fragmented.m4a");
    let at = trun_type_at(&bytes);
    // Flags: keep the data offset, drop the per-sample duration/size/flags/offset fields.
    bytes[at + 6] = 0;
    bytes[at + 8..at + 12].copy_from_slice(&u32::MAX.to_be_bytes());
    let err = decode_with(&bytes, &AudioLimits::default()).expect_err("refused");
    assert_eq!(err.code(), "audio_decode_failed", "{err}");
    assert!(err.to_string().contains("more packets"), "{err}");
    // The unpatched file decodes.
    let pcm = decode("ok_m4a_aac_fragmented.m4a").expect("decodes");
    assert!((pcm.duration_secs() - CLIP_SECS).abs() < 0.1);
}

/// The big-endian `u32` at byte `at` of `bytes`.
fn be32(bytes: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(bytes[at..at + 4].try_into().expect("4 bytes"))
}

/// Where the type of `mp4`'s first `trun` box starts (its size is the 4 bytes before).
fn trun_type_at(mp4: &[u8]) -> usize {
    mp4.windows(4)
        .position(|w| w == b"trun")
        .expect("a trun box")
}

/// The boxes an MP4 sample table sits in.
const SAMPLE_TABLE_PATH: [&[u8; 4]; 5] = [b"moov", b"trak", b"mdia", b"minf", b"stbl"];

/// `mp4` with its `stco` box (32-bit chunk offsets) rewritten as a `co64` box (64-bit) of
/// the same offsets passed through `patch`; the boxes around it grow with it. The `moov`
/// must come after the `mdat`, so that no sample moves.
fn stco_to_co64(mp4: &[u8], patch: impl Fn(u64) -> u64) -> Vec<u8> {
    let mut parents = Vec::new();
    let mut pos = 0;
    while &mp4[pos + 4..pos + 8] != b"stco" {
        let kind: &[u8] = &mp4[pos + 4..pos + 8];
        if SAMPLE_TABLE_PATH.iter().any(|k| k.as_slice() == kind) {
            parents.push(pos);
            pos += 8;
        } else {
            pos += be32(mp4, pos) as usize;
        }
    }
    let count = be32(mp4, pos + 12) as usize;
    let mut table = Vec::new();
    table.extend_from_slice(&u32::try_from(16 + 8 * count).expect("small").to_be_bytes());
    table.extend_from_slice(b"co64\0\0\0\0");
    table.extend_from_slice(&mp4[pos + 12..pos + 16]);
    for i in 0..count {
        let offset = u64::from(be32(mp4, pos + 16 + 4 * i));
        table.extend_from_slice(&patch(offset).to_be_bytes());
    }
    let mut out = mp4[..pos].to_vec();
    for &parent in &parents {
        let grown = be32(mp4, parent) + u32::try_from(4 * count).expect("small");
        out[parent..parent + 4].copy_from_slice(&grown.to_be_bytes());
    }
    out.extend_from_slice(&table);
    out.extend_from_slice(&mp4[pos + be32(mp4, pos) as usize..]);
    out
}

/// Fuzz crash 8ff9824f (audio_ingest): an MP4 chunk offset near 2^64 made symphonia seek
/// 2^63 bytes or more forward, and an `assert!` in its MediaSourceStream::seek_buffered
/// fired (the library caught the panic; 0xF000... and u64::MAX do it here, 2^63 does not). Sample data placed outside the file is refused before
/// symphonia reads the tables.
#[test]
fn mp4_chunk_offsets_outside_the_file_are_refused() {
    let original = read("ok_m4a_aac.m4a");
    // The same offsets in 64 bits: the same audio.
    let wide = stco_to_co64(&original, |offset| offset);
    assert_ne!(wide, original);
    let pcm = decode_with(&wide, &AudioLimits::default()).expect("co64 decodes");
    assert!((pcm.duration_secs() - CLIP_SECS).abs() < 0.1);
    let len = wide.len() as u64;
    for far in [len + 1, 1 << 40, 1 << 63, 0xF000_0000_0000_0000, u64::MAX] {
        let bytes = stco_to_co64(&original, |_| far);
        let err = decode_with(&bytes, &AudioLimits::default()).expect_err("refused");
        assert_typed_error(&format!("co64 offset {far}"), &err);
        assert_eq!(err.code(), "audio_decode_failed", "{err}");
        assert!(err.to_string().contains("outside"), "{far}: {err}");
    }
}

/// A fragment's data offset is signed: from the `moof` start, a large negative one wrapped
/// around to a position near 2^64 in symphonia, with the same assert. Refused.
#[test]
fn a_negative_trun_data_offset_is_refused() {
    let mut bytes = read("ok_m4a_aac_fragmented.m4a");
    let at = trun_type_at(&bytes);
    assert_eq!(bytes[at + 7] & 1, 1, "the trun has a data offset");
    bytes[at + 12..at + 16].copy_from_slice(&(-0x7FFF_FFFFi32).to_be_bytes());
    let err = decode_with(&bytes, &AudioLimits::default()).expect_err("refused");
    assert_typed_error("negative trun data offset", &err);
    assert!(err.to_string().contains("outside"), "{err}");
}

/// Fuzz crash b75345f2 (audio_ingest): symphonia reads bit 0x4 of a `trun`'s first-sample
/// flags (part of the sample's degradation priority) as "the first sample's duration is
/// recorded" and indexes the run's empty duration table (the library caught the panic). The
/// fragmented fixture's run (data offset, a duration and a size per sample) is rewritten
/// in place to carry first-sample flags with that bit and a size per sample, the durations
/// coming from the `tfhd` default; a `free` box fills the bytes saved. The same audio.
#[test]
fn a_trun_first_sample_degradation_priority_is_not_read_as_a_duration() {
    let original = read("ok_m4a_aac_fragmented.m4a");
    let at = trun_type_at(&original) - 4;
    assert_eq!(
        be32(&original, at + 8),
        0x301,
        "data offset, durations and sizes"
    );
    let size = be32(&original, at) as usize;
    let count = be32(&original, at + 12) as usize;
    assert_eq!(size, 20 + 8 * count);
    let mut run = Vec::new();
    run.extend_from_slice(&u32::try_from(24 + 4 * count).expect("small").to_be_bytes());
    run.extend_from_slice(b"trun");
    run.extend_from_slice(&0x205u32.to_be_bytes());
    run.extend_from_slice(&original[at + 12..at + 20]);
    run.extend_from_slice(&0x0200_0004u32.to_be_bytes());
    for i in 0..count {
        // Each sample's size, after its duration.
        run.extend_from_slice(&original[at + 24 + 8 * i..at + 28 + 8 * i]);
    }
    let free = size - run.len();
    run.extend_from_slice(&u32::try_from(free).expect("small").to_be_bytes());
    run.extend_from_slice(b"free");
    run.resize(size, 0);
    let mut bytes = original.clone();
    bytes[at..at + size].copy_from_slice(&run);
    let pcm = decode_with(&bytes, &AudioLimits::default()).expect("decodes");
    assert_well_formed("first-sample flags 0x4", &pcm);
    let plain = decode_with(&original, &AudioLimits::default()).expect("original decodes");
    assert_eq!(pcm.samples.len(), plain.samples.len());
    assert!((rms(&pcm.samples) - rms(&plain.samples)).abs() < 1e-6);
}

/// Writes `(value, bits)` fields into `bytes` from its first bit on, least significant bit
/// first (Vorbis bit packing), leaving the bits after them as they were.
fn write_vorbis_bits(bytes: &mut [u8], fields: &[(u32, u32)]) {
    let mut pos = 0usize;
    for &(value, n) in fields {
        for i in 0..n {
            let mask = 1u8 << (pos % 8);
            if (value >> i) & 1 == 1 {
                bytes[pos / 8] |= mask;
            } else {
                bytes[pos / 8] &= !mask;
            }
            pos += 1;
        }
    }
}

/// Fuzz crash 14bd1fbf (audio_ingest): a WebM Vorbis file whose setup header holds a
/// length-ordered codebook of 33-bit codewords. symphonia's Vorbis decoder indexes past its
/// 33-entry table (a debug_assert! in the fuzz build, an index out of bounds in release;
/// the library caught the panic). Refused from the setup header before the decoder opens.
#[test]
fn vorbis_codewords_over_32_bits_are_refused() {
    let original = read("ok_webm_vorbis.webm");
    let setup = original
        .windows(7)
        .position(|w| w == b"\x05vorbis")
        .expect("a setup header");
    // The codebook count, then the first codebook: "BCV", dimensions (16 bits), entries
    // (24 bits), all byte-aligned; the length-ordered flag is the next bit.
    let count = setup + 7;
    assert_eq!(&original[count + 1..count + 4], b"BCV");
    let entries = u32::from_le_bytes([
        original[count + 6],
        original[count + 7],
        original[count + 8],
        0,
    ]);
    let width = 32 - entries.leading_zeros();
    // Length-ordered, first length 32, an empty run (the length becomes 33), then every
    // entry at 33 bits, no lookup table.
    let mut bytes = original.clone();
    let fields = [(1, 1), (31, 5), (0, width), (entries, width), (0, 4)];
    write_vorbis_bits(&mut bytes[count + 9..], &fields);
    let err = decode_with(&bytes, &AudioLimits::default()).expect_err("refused");
    assert_typed_error("33-bit Vorbis codewords", &err);
    assert_eq!(err.code(), "audio_decode_failed");
    assert!(err.to_string().contains("33 bits"), "{err}");
    // The same codebook at 32 bits (no empty run) is read as a codebook again: the check
    // does not refuse it (the decoder may still find the rest of the header damaged).
    let mut bytes = original.clone();
    let fields = [(1, 1), (31, 5), (entries, width), (0, 4)];
    write_vorbis_bits(&mut bytes[count + 9..], &fields);
    let result = decode_with(&bytes, &AudioLimits::default());
    if let Err(e) = &result {
        assert_typed_error("32-bit Vorbis codewords", e);
        assert!(!e.to_string().contains("33 bits"), "{e}");
    }
    let pcm = decode_with(&original, &AudioLimits::default()).expect("decodes");
    assert!((pcm.duration_secs() - CLIP_SECS).abs() < 0.1);
}

#[test]
fn a_vorbis_floor_that_repeats_an_x_value_is_refused_before_the_decoder_divides_by_zero() {
    // ../shared/fuzz: a WebM whose Vorbis floor 1 lists one X value twice; symphonia's
    // line renderer divided by the zero distance between them and panicked.
    let path = common::shared_dir().join("fuzz/vorbis-floor1-duplicate-x.webm");
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let err = decode_with(&bytes, &AudioLimits::default()).expect_err("refused");
    assert_eq!(err.code(), "audio_decode_failed");
    let message = err.to_string();
    assert!(message.contains("floor 1 lists the X value"), "{message}");
    assert!(!message.contains("panicked"), "{message}");
}
