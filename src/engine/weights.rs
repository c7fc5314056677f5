//! When the model's matrices are held as bf16 ([`crate::Weights::Fastest`]).
//!
//! The converted models (`ctxscribe models fetch`) store their weight matrices as IEEE
//! half floats (f16), Whisper's own training precision. ggml multiplies f16 matrices by
//! converting them to f32 as it goes; on a CPU with AVX-512 BF16 instructions it
//! multiplies bfloat16 (bf16) matrices natively (`vdpbf16ps`). Measured on an AMD EPYC
//! (2 threads, base model, the speed bench's 5 min file): the encoder takes 7.8 s with
//! bf16 matrices against 10.7 s with f16, a decoder step 5.5 ms against 5.8 ms, with the
//! same WER on the 62 real clips, the 5 s, 60 s and 5 min sets (docs/engine.md). The file
//! is rewritten in memory by [`crate::model::convert::f16_matrices_to_bf16`]; this module
//! says whether there is room.

/// Whether `needed` more bytes fit in the memory the system reports available (Linux's
/// `MemAvailable`; a system that reports nothing is assumed to have room). A model
/// converted in memory needs a few copies of its file at once while it loads
/// (`engine/binding.rs` says how many); without room it loads as stored, or not at all.
#[must_use]
pub(crate) fn room_for(needed: u64) -> bool {
    available_memory().is_none_or(|available| available >= needed)
}

/// Bytes of memory available to new allocations, as `/proc/meminfo` reports them.
fn available_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info
        .lines()
        .find(|line| line.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn room_is_what_the_system_reports_available() {
        assert!(
            room_for(3 * (148 << 20)),
            "the base model converted to bf16 here"
        );
        assert!(
            room_for(2 * (291 << 20)),
            "the base model in f32 loaded as f16 here"
        );
        assert!(!room_for(u64::MAX / 2));
    }
}
