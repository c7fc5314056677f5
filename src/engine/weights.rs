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

/// Whether a model file of `file_len` bytes can be converted in memory: read whole, it
/// lives beside whisper.cpp's own copy until the load ends, so the system must report
/// three times its size available (Linux's `MemAvailable`; a system that reports
/// nothing is assumed to have room). A large model on a small machine loads as stored.
#[must_use]
pub(crate) fn room_to_convert(file_len: u64) -> bool {
    available_memory().is_none_or(|available| available >= file_len.saturating_mul(3))
}

/// Whether an all-f32 model file of `file_len` bytes can be loaded as f16: read whole,
/// then its f16 copy (half its size) and whisper.cpp's own copy of that, twice its size
/// in all, must fit in the memory the system reports available.
#[must_use]
pub(crate) fn room_to_narrow_f32(file_len: u64) -> bool {
    available_memory().is_none_or(|available| available >= file_len.saturating_mul(2))
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
    fn only_a_model_that_fits_three_times_in_memory_is_converted() {
        assert!(room_to_convert(148 << 20), "the base model on this machine");
        assert!(!room_to_convert(u64::MAX / 2));
        assert!(room_to_narrow_f32(291 << 20), "the base model in f32");
        assert!(!room_to_narrow_f32(u64::MAX / 2));
    }
}
