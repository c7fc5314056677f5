//! Model files of every weight type the engine takes: f16 as stored or converted in
//! memory (8-bit decoder matrices, bf16), kept converted on disk, q8_0, and all-f32
//! files, which load with f16 matrices.

mod common;

use common::apps::JFK;
use common::*;
use ctxscribe::{ContextTranscriber, Languages, Weights};

#[test]
fn quantized_q8_0_base_transcribes_jfk_exactly() {
    let transcriber = ContextTranscriber::builder()
        .with_model_path(model("ggml-base-q8_0.bin"))
        .build()
        .expect("load q8_0");
    let clip = real_clip("en_whisper_jfk");
    let transcript = transcribe_file(&transcriber, &clip.path, Languages::Auto).expect("ok");
    assert_eq!(norm_words(&transcript.text), norm_words(JFK));
}

/// The fastest weights hold the decoder's matrices as 8-bit q8_0 copies of the model's
/// f16 ones and, on a CPU with AVX-512 BF16, the others as bf16 (src/engine/weights.rs):
/// every English real clip must come out as well as with the matrices as stored
/// (measured: 0.003 apart).
#[test]
fn the_fastest_weights_hear_the_real_clips_as_well_as_the_stored_f16_ones() {
    let load = |weights| base_builder().with_weights(weights).build().expect("load");
    let (fastest, stored) = (load(Weights::Fastest), load(Weights::AsStored));
    let cpu_has_bf16 = std::fs::read_to_string("/proc/cpuinfo")
        .is_ok_and(|cpu| cpu.split_whitespace().any(|flag| flag == "avx512_bf16"));
    let on_gpu = fastest.backend().is_some_and(|backend| backend.is_gpu());
    let described = format!("{fastest:?}");
    assert_eq!(
        described.contains("q8_0 decoder matrices"),
        !on_gpu,
        "{described}"
    );
    assert_eq!(
        described.contains("bf16"),
        cpu_has_bf16 && !on_gpu,
        "{described}"
    );
    assert!(!format!("{stored:?}").contains("matrices"));
    let (mut errors, mut words) = ([0usize; 2], 0usize);
    for clip in real_clips()
        .into_iter()
        .filter(|clip| clip.language == "en")
    {
        let reference = norm_words(&clip.reference);
        words += reference.len();
        for (errors, transcriber) in errors.iter_mut().zip([&fastest, &stored]) {
            let text = transcribe_file(transcriber, &clip.path, Languages::Auto)
                .expect("transcribe")
                .text;
            *errors += edit_distance(&reference, &norm_words(&text));
        }
    }
    let [fast, f16] = errors.map(|e| e as f64 / words.max(1) as f64);
    eprintln!("English real clips: WER fastest {fast:.3}, as stored {f16:.3} ({words} words)");
    assert!(
        words > 100 && fast <= f16 + 0.01,
        "fastest {fast:.3} vs as stored {f16:.3}"
    );
}

/// An all-f32 ggml file (whisper.cpp's converter writes one when asked not to use f16)
/// makes whisper.cpp create f32 convolution kernels, which ggml's CPU convolution aborts
/// the process on at the first encoding. The engine loads it with f16 matrices and
/// kernels instead, and it hears jfk as the official f16 file does.
#[test]
fn an_all_f32_model_file_loads_and_hears_jfk_as_the_f16_one() {
    let f16 = std::fs::read(model("ggml-base.bin")).expect("read the base model");
    let dir = repo_root().join(format!("target/tmp/model-files-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch directory");
    let path = dir.join("ggml-base-f32.bin");
    std::fs::write(&path, widened_to_f32(&f16)).expect("write the f32 model");
    let loaded = ContextTranscriber::builder().with_model_path(&path).build();
    let _ = std::fs::remove_dir_all(&dir);
    let transcriber = loaded.expect("the f32 model loads");
    assert!(
        format!("{transcriber:?}").contains("matrices from an f32 file"),
        "{transcriber:?}"
    );
    let clip = real_clip("en_whisper_jfk");
    let heard = transcribe_file(&transcriber, &clip.path, Languages::Auto).expect("transcribe");
    let official = transcribe_file(base_transcriber(), &clip.path, Languages::Auto).expect("ok");
    assert_eq!(heard.text, official.text);
    assert_eq!(norm_words(&heard.text), norm_words(JFK));
}

/// A model converted as it loads (the fastest weights' 8-bit decoder matrices) is kept in
/// the cache directory and loaded from there the next time, with the same text; a kept
/// copy that does not load (cut short) is made again; `off`, or a directory that cannot be
/// made, keeps nothing and the model still loads.
#[test]
fn a_converted_model_is_kept_on_disk_and_loaded_from_there_next_time() {
    let dir = repo_root().join(format!("target/tmp/model-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let jfk = real_clip("en_whisper_jfk").path;
    let transcribe = |cache: &std::ffi::OsStr| {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_ctxscribe"))
            .args(["transcribe", "--json"])
            .arg(&jfk)
            .env("CTXSCRIBE_MODEL_DIR", models_dir())
            .env("CTXSCRIBE_CACHE_DIR", cache)
            .env("CTXSCRIBE_WEIGHTS", "fastest")
            .output()
            .expect("run ctxscribe");
        assert!(output.status.success(), "{output:?}");
        let line: serde_json::Value =
            serde_json::from_slice(&output.stdout).expect("one JSON line");
        line["text"].as_str().expect("text").to_owned()
    };
    let kept = || -> Vec<(std::path::PathBuf, u64)> {
        std::fs::read_dir(&dir)
            .map(|entries| {
                entries
                    .flatten()
                    .map(|entry| (entry.path(), entry.metadata().map_or(0, |m| m.len())))
                    .collect()
            })
            .unwrap_or_default()
    };
    let first = transcribe(dir.as_os_str());
    let copies = kept();
    assert_eq!(copies.len(), 1, "{copies:?}");
    let (copy, size) = copies[0].clone();
    let name = copy
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    assert!(name.starts_with("ggml-base.q8_0-decoder"), "{name}");
    let stored = std::fs::metadata(model("ggml-base.bin"))
        .expect("model")
        .len();
    assert!(
        size < stored * 4 / 5,
        "{size} bytes against the file's {stored}"
    );
    assert_eq!(
        transcribe(dir.as_os_str()),
        first,
        "loaded from the kept copy"
    );
    let cut = std::fs::read(&copy).expect("the copy");
    std::fs::write(&copy, &cut[..cut.len() / 2]).expect("cut it short");
    assert_eq!(transcribe(dir.as_os_str()), first, "made again");
    assert_eq!(kept(), vec![(copy.clone(), size)]);
    assert_eq!(transcribe(std::ffi::OsStr::new("off")), first);
    assert_eq!(kept(), vec![(copy, size)]);
    assert!(
        !repo_root().join("off").exists(),
        "`off` is not a directory name"
    );
    // A directory that cannot be made (below a file): converted in memory, as with `off`.
    let blocked = dir.join("a-file");
    std::fs::write(&blocked, b"not a directory").expect("write");
    assert_eq!(transcribe(blocked.join("cache").as_os_str()), first);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(norm_words(&first), norm_words(JFK));
}

/// The ggml whisper file `f16` with every f16 tensor widened to f32 and the header's
/// `ftype` 0 (all f32): the layout whisper.cpp's converter writes without f16.
fn widened_to_f32(f16: &[u8]) -> Vec<u8> {
    let i32_at = |at: usize| i32::from_le_bytes(f16[at..at + 4].try_into().expect("4 bytes"));
    let count = |at: usize| usize::try_from(i32_at(at)).expect("a count");
    let mut at = 4 + 11 * 4;
    at += 8 + count(at) * count(at + 4) * 4; // mel filters
    let tokens = count(at);
    at += 4;
    for _ in 0..tokens {
        at += 4 + count(at);
    }
    let mut out = f16[..at].to_vec();
    out[44..48].copy_from_slice(&0i32.to_le_bytes()); // ftype, the eleventh of the header
    while at < f16.len() {
        let (n_dims, name_len, tensor_type) = (count(at), count(at + 4), i32_at(at + 8));
        let header_len = 12 + 4 * n_dims + name_len;
        let elements: usize = (0..n_dims).map(|d| count(at + 12 + 4 * d)).product();
        let mut header = f16[at..at + header_len].to_vec();
        at += header_len;
        if tensor_type == 1 {
            header[8..12].copy_from_slice(&0i32.to_le_bytes());
            out.extend_from_slice(&header);
            for half in f16[at..at + 2 * elements].chunks_exact(2) {
                let value = f16_to_f32(u16::from_le_bytes([half[0], half[1]]));
                out.extend_from_slice(&value.to_le_bytes());
            }
            at += 2 * elements;
        } else {
            assert_eq!(tensor_type, 0, "an f16 file holds f16 and f32 tensors");
            out.extend_from_slice(&header);
            out.extend_from_slice(&f16[at..at + 4 * elements]);
            at += 4 * elements;
        }
    }
    out
}

/// IEEE half -> single precision (exact).
fn f16_to_f32(half: u16) -> f32 {
    let sign = if half & 0x8000 == 0 { 1.0 } else { -1.0 };
    let exponent = i32::from((half >> 10) & 0x1f);
    let mantissa = f32::from(half & 0x3ff);
    sign * match exponent {
        0 => mantissa * 2f32.powi(-24),
        0x1f if mantissa == 0.0 => f32::INFINITY,
        0x1f => f32::NAN,
        _ => (1.0 + mantissa / 1024.0) * 2f32.powi(exponent - 15),
    }
}
