//! Converted copies of model files, kept on disk so that a conversion the engine makes as
//! a model loads (the decoder's matrices to 8 bits, the others to bf16: `Weights`) costs
//! once per model file, not at every start. Converting the base model in memory takes
//! about half a second on 2 cores; loading its converted copy takes less than loading
//! the stored file, being smaller.
//!
//! Where: `$CTXSCRIBE_CACHE_DIR`, else `$XDG_CACHE_HOME/ctxscribe`, else
//! `~/.cache/ctxscribe`; `CTXSCRIBE_CACHE_DIR=off` keeps nothing (every load converts in
//! memory). A copy is named after the model file, the conversion and a hash of the model
//! file's path, size and modification time: a model file that changes gets a new copy,
//! which replaces the old ones of that name and conversion. A copy is written to a
//! temporary file and renamed into place, so a reader never sees half of one; a copy
//! that does not load is removed and made again. Failing to write one (a read-only
//! home) only means the next load converts again.

use std::hash::Hasher;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::locate::non_empty_env;

/// Environment variable naming the directory of converted copies (`off`: none).
pub const ENV_CACHE_DIR: &str = "CTXSCRIBE_CACHE_DIR";

/// Bumped when a conversion's output changes, so that older copies are not used.
const FORMAT: u64 = 1;

/// The directory of converted copies, `None` when caching is off or there is no home.
#[must_use]
pub fn cache_dir() -> Option<PathBuf> {
    match non_empty_env(ENV_CACHE_DIR) {
        Some(dir) if dir.trim() == "off" => None,
        Some(dir) => Some(PathBuf::from(dir)),
        None => non_empty_env("XDG_CACHE_HOME")
            .map(|cache| Path::new(&cache).join("ctxscribe"))
            .or_else(|| {
                non_empty_env("HOME").map(|home| Path::new(&home).join(".cache/ctxscribe"))
            }),
    }
}

/// Where the copy of `model` converted by `conversion` (a short name, e.g.
/// `q8_0-decoder`) is or would be kept: `None` when caching is off or the model file
/// cannot be read.
#[must_use]
pub(crate) fn converted_path(model: &Path, conversion: &str) -> Option<PathBuf> {
    let dir = cache_dir()?;
    let metadata = std::fs::metadata(model).ok()?;
    let modified = metadata
        .modified()
        .ok()
        .and_then(|time| time.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |since| since.as_nanos());
    let canonical = std::fs::canonicalize(model).ok()?;
    // FNV-1a: stable across builds and platforms, unlike std's default hasher.
    let mut hash = Fnv1a::default();
    hash.write(canonical.as_os_str().as_encoded_bytes());
    hash.write_u64(metadata.len());
    hash.write_u128(modified);
    hash.write_u64(FORMAT);
    Some(dir.join(format!(
        "{}.{conversion}.{:016x}.bin",
        prefix_of(model),
        hash.finish()
    )))
}

/// Keeps `bytes` as the converted copy at `path` (from [`converted_path`]), replacing
/// older copies of the same model file name and conversion.
///
/// # Errors
/// Any failure to create the directory or write the file; nothing is left half written.
pub(crate) fn store(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    // Unique to this store: loads in other processes and threads may store the same copy.
    static STORES: AtomicU64 = AtomicU64::new(0);
    let temporary = dir.join(format!(
        ".{name}.{}-{}.partial",
        std::process::id(),
        STORES.fetch_add(1, Ordering::Relaxed)
    ));
    let written = std::fs::File::create(&temporary)
        .and_then(|mut file| file.write_all(bytes).and_then(|()| file.sync_all()))
        .and_then(|()| std::fs::rename(&temporary, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
        return written;
    }
    // The same name and conversion before the hash: older copies of this model file.
    let family = name.rsplitn(3, '.').nth(2).unwrap_or_default().to_owned();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let other = entry.file_name().to_string_lossy().into_owned();
            let same_family = other.rsplitn(3, '.').nth(2) == Some(family.as_str());
            if same_family && other != name && other.ends_with(".bin") {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
    Ok(())
}

/// The model file's name without its extension, with dots made dashes (the copy's
/// name is split at dots).
fn prefix_of(model: &Path) -> String {
    model
        .file_stem()
        .unwrap_or_default()
        .to_string_lossy()
        .replace('.', "-")
}

/// 64-bit FNV-1a.
struct Fnv1a(u64);

impl Default for Fnv1a {
    fn default() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv1a {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0 ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_replaces_the_older_copies_of_its_model_and_conversion_only() {
        let dir = std::env::temp_dir().join(format!("ctxscribe-cache-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let keep = [
            "ggml-base.bf16.00000000000000aa.bin",
            "ggml-tiny-en.q8_0-decoder.00000000000000aa.bin",
        ];
        let old = "ggml-base.q8_0-decoder.00000000000000aa.bin";
        for name in keep.iter().chain([&old]) {
            std::fs::create_dir_all(&dir).expect("dir");
            std::fs::write(dir.join(name), b"old").expect("write");
        }
        let new = dir.join("ggml-base.q8_0-decoder.00000000000000bb.bin");
        store(&new, b"new").expect("store");
        let mut left: Vec<String> = std::fs::read_dir(&dir)
            .expect("dir")
            .flatten()
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        let _ = std::fs::remove_dir_all(&dir);
        let mut expected: Vec<String> = keep.iter().map(|name| (*name).to_owned()).collect();
        expected.push("ggml-base.q8_0-decoder.00000000000000bb.bin".to_owned());
        expected.sort();
        assert_eq!(left, expected);
    }

    #[test]
    fn the_name_follows_the_model_file_and_its_conversion() {
        assert_eq!(prefix_of(Path::new("/m/ggml-tiny.en.bin")), "ggml-tiny-en");
        let mut one = Fnv1a::default();
        one.write(b"a");
        assert_eq!(one.finish(), 0xaf63_dc4c_8601_ec8c, "FNV-1a of \"a\"");
    }
}
