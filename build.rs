//! Embeds the CPU kernel variants of the engine.
//!
//! `.cargo/config.toml` makes whisper-rs-sys's CMake build include
//! `src/engine/ggml-cpu-variants.cmake`, which builds the linked-in CPU backend for the
//! x86-64-v2 floor and ggml's faster CPU backends (AVX2, AVX-512, ...) as loadable
//! modules, and reports their directory as whisper-rs-sys's `cpu_variants_dir` metadata.
//! This script writes `$OUT_DIR/cpu_variants.rs` with the modules' bytes; the engine
//! loads the best one the CPU runs (`src/engine/kernels.rs`). Without the include (a
//! crate built outside this workspace, or `CTXSCRIBE_NATIVE=1`) the list is empty and the
//! linked-in backend is whisper-rs-sys's `-march=native` one.
//!
//! The same include builds whisper.cpp with two additions
//! (`src/engine/whisper-additions.cmake`): every decoded token's logits, and the decoder's
//! matrices in a type of their own. This script then sets `whisper_additions`, under
//! which the engine checks drafts of several tokens in one decoder run and loads the
//! decoder's matrices in 8 bits.

use std::env;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

const PREFIX: &str = "libggml-cpu-";
const SUFFIX: &str = ".so";
/// The CMake file that lists the variants (`.cargo/config.toml` includes it).
const VARIANTS_CMAKE: &str = "src/engine/ggml-cpu-variants.cmake";

fn main() {
    println!("cargo:rerun-if-env-changed=DEP_WHISPER_CPU_VARIANTS_DIR");
    println!("cargo:rerun-if-env-changed=DEP_WHISPER_ADDITIONS");
    println!("cargo::rustc-check-cfg=cfg(whisper_additions)");
    // whisper.cpp built with ctxscribe's additions (whisper-additions.cmake).
    if env::var("DEP_WHISPER_ADDITIONS").is_ok_and(|value| value == "1") {
        println!("cargo:rustc-cfg=whisper_additions");
    }
    println!("cargo:rerun-if-env-changed=CTXSCRIBE_NATIVE");
    println!("cargo:rerun-if-env-changed=CMAKE_PROJECT_INCLUDE");
    println!("cargo:rerun-if-changed={VARIANTS_CMAKE}");
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let variants = match env::var_os("DEP_WHISPER_CPU_VARIANTS_DIR") {
        Some(dir) => modules_in(Path::new(&dir)),
        None => Vec::new(),
    };
    check_the_build_matches(&variants);
    let mut code = String::from(
        "/// The CPU kernel modules built beside the engine: (variant, shared object).\n\
         pub(crate) static CPU_VARIANTS: &[(&str, &[u8])] = &[\n",
    );
    for (tag, path) in &variants {
        println!("cargo:rerun-if-changed={}", path.display());
        let _ = writeln!(
            code,
            "    ({tag:?}, include_bytes!({:?})),",
            path.display().to_string()
        );
    }
    code.push_str("];\n");
    fs::write(out_dir.join("cpu_variants.rs"), code).expect("write cpu_variants.rs");
}

/// `(variant, path)` of every `libggml-cpu-<variant>.so` in `dir`, by name.
fn modules_in(dir: &Path) -> Vec<(String, PathBuf)> {
    let entries = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("the CPU variants directory {}: {e}", dir.display()));
    let mut variants: Vec<(String, PathBuf)> = entries
        .filter_map(|entry| {
            let path = entry.ok()?.path();
            let name = path.file_name()?.to_str()?;
            let tag = name.strip_prefix(PREFIX)?.strip_suffix(SUFFIX)?.to_owned();
            Some((tag, path))
        })
        .collect();
    variants.sort();
    assert!(
        !variants.is_empty(),
        "no {PREFIX}*{SUFFIX} in {}: whisper-rs-sys's build did not build the CPU variants",
        dir.display()
    );
    variants
}

/// A whisper-rs-sys build left from before a switch to or from `CTXSCRIBE_NATIVE=1`
/// (cargo does not rebuild it when the environment changes) would silently give the
/// other kind of artifact; say how to rebuild instead.
fn check_the_build_matches(variants: &[(String, PathBuf)]) {
    let include_set = env::var("CMAKE_PROJECT_INCLUDE")
        .is_ok_and(|path| path.ends_with("ggml-cpu-variants.cmake"));
    let x86_64 = env::var("CARGO_CFG_TARGET_ARCH").is_ok_and(|arch| arch == "x86_64");
    let native = env::var("CTXSCRIBE_NATIVE").is_ok_and(|value| value == "1");
    let portable_wanted = include_set && x86_64 && !native;
    if portable_wanted == variants.is_empty() {
        panic!(
            "whisper-rs-sys was built {} but this build wants {}: run `cargo clean -p \
             whisper-rs-sys` (or use another CARGO_TARGET_DIR) and build again",
            if variants.is_empty() {
                "with -march=native"
            } else {
                "with portable CPU variants"
            },
            if portable_wanted {
                "portable CPU variants"
            } else {
                "the -march=native engine (CTXSCRIBE_NATIVE=1)"
            }
        );
    }
    // Nor does it when the variants' CMake file changes: a variant added there but not
    // built would be missing from the engine without a word.
    let listed = listed_variants();
    let built: Vec<&str> = variants.iter().map(|(tag, _)| tag.as_str()).collect();
    if portable_wanted && !listed.is_empty() && listed != built {
        panic!(
            "whisper-rs-sys built the CPU variants {built:?}, but {VARIANTS_CMAKE} lists \
             {listed:?}: run `cargo clean -p whisper-rs-sys` and build again"
        );
    }
}

/// The variant names `ggml_add_cpu_backend_variant(<name> ...)` in the CMake file adds,
/// sorted (empty when the file cannot be read: outside this workspace).
fn listed_variants() -> Vec<String> {
    let Ok(text) = fs::read_to_string(VARIANTS_CMAKE) else {
        return Vec::new();
    };
    let mut names: Vec<String> = text
        .lines()
        .filter_map(|line| line.trim().strip_prefix("ggml_add_cpu_backend_variant("))
        .filter_map(|rest| rest.split_whitespace().next())
        .map(str::to_owned)
        .collect();
    names.sort();
    names
}
