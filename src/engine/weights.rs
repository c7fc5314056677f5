//! What the model's matrices become in memory as it loads ([`crate::Weights`]): the
//! decoder's as 8 bits (with [`crate::Weights::Fastest`]), the others as bf16 where ggml
//! multiplies bf16 natively, an all-f32 file's as f16 ([`Conversion`]), and whether
//! memory has room for it.
//!
//! A decoder step reads all of the decoder's matrices (about 48 M weights in the base
//! model) plus the cross-attention keys and values to write one token. q8_0 (ggml's
//! 32-value blocks of 8-bit integers with one f16 scale) moves 1.06 bytes a weight
//! against f16's 2: on an AVX2 CPU a step ran 1.29x faster, with the same plain WER but a
//! few context terms fewer, so it is not the default (docs/benchmarks.md). The encoder
//! multiplies batches of 1500 frames and stays in a float type.
//!
//! The converted models (`ctxscribe models fetch`) store their weight matrices as IEEE
//! half floats (f16), Whisper's own training precision. ggml multiplies f16 matrices by
//! converting them to f32 as it goes; on a CPU with AVX-512 BF16 instructions it
//! multiplies bfloat16 (bf16) matrices natively (`vdpbf16ps`). Measured on an AMD EPYC
//! (2 threads, base model, the speed bench's 5 min file): the encoder takes 7.8 s with
//! bf16 matrices against 10.7 s with f16, a decoder step 5.5 ms against 5.8 ms, with the
//! same WER on the 62 real clips, the 5 s, 60 s and 5 min sets (docs/engine.md).
//!
//! [`crate::model::convert`] rewrites the file in memory; this module decides which
//! conversions apply and says whether there is room for them.

use std::path::Path;

use super::Weights;
use crate::model::convert;

/// True when whisper.cpp was built able to create the decoder's matrices in a type of
/// their own (`whisper-additions.cmake`).
pub(super) const CREATES_DECODER_TYPE: bool = cfg!(whisper_additions);

/// What a model file's matrices become in memory as it loads (see `binding::load_context`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct Conversion {
    /// An all-f32 file's matrices and convolution kernels to f16.
    pub(super) from_f32: bool,
    /// The decoder's f16 matrices to q8_0.
    pub(super) q8_0_decoder: bool,
    /// The (other) f16 matrices to bf16.
    pub(super) bf16: bool,
}

impl Conversion {
    /// The conversions `weights` asks for that apply to the file at `path` here.
    pub(super) fn wanted(path: &Path, weights: Weights, use_gpu: bool, native_bf16: bool) -> Self {
        use std::io::Read;
        let mut header = [0u8; 48];
        let read = std::fs::File::open(path).and_then(|mut file| file.read_exact(&mut header));
        let from_f32 = read.is_ok() && convert::is_all_f32_model(&header);
        let f16 = from_f32 || (read.is_ok() && convert::is_f16_model(&header));
        let on_cpu = f16 && !use_gpu && weights != Weights::AsStored;
        Conversion {
            from_f32,
            q8_0_decoder: on_cpu && weights == Weights::Fastest && CREATES_DECODER_TYPE,
            bf16: on_cpu && native_bf16,
        }
    }

    /// The model in `bytes` converted, and which conversions applied (one that finds
    /// nothing to convert does not).
    pub(super) fn convert(
        self,
        mut bytes: Vec<u8>,
    ) -> std::result::Result<(Vec<u8>, Conversion), String> {
        let mut made = Conversion::default();
        if self.from_f32 {
            made.from_f32 = true;
            bytes = convert::f32_model_to_f16(&bytes)
                .ok_or("an all-f32 model file that does not parse as a whole whisper model")?;
        }
        if self.q8_0_decoder
            && let Some((quantized, _)) = convert::decoder_matrices_to_q8_0(&bytes)
        {
            bytes = quantized;
            made.q8_0_decoder = true;
        }
        made.bf16 = self.bf16 && convert::f16_matrices_to_bf16(&mut bytes).is_some();
        Ok((bytes, made))
    }

    /// Its name in the cache's file names.
    pub(super) fn name(self) -> String {
        let parts = [
            (self.from_f32, "f16"),
            (self.q8_0_decoder, "q8_0-decoder"),
            (self.bf16, "bf16"),
        ];
        let named: Vec<&str> = parts
            .iter()
            .filter(|(on, _)| *on)
            .map(|(_, name)| *name)
            .collect();
        named.join("+")
    }

    /// What the model's description says of it.
    pub(super) fn description(self) -> String {
        let mut parts = Vec::new();
        if self.from_f32 {
            parts.push("f16 matrices from an f32 file");
        }
        if self.q8_0_decoder {
            parts.push("q8_0 decoder matrices");
        }
        if self.bf16 {
            parts.push(if self.q8_0_decoder {
                "bf16 encoder matrices"
            } else {
                "bf16 matrices"
            });
        }
        parts.join(", ")
    }
}

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
