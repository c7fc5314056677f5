//! Where the engine's matrices are multiplied: the CPU, or a GPU of a backend the build
//! includes (the crate's `cuda`, `vulkan`, `metal` and `hipblas` features, passed to
//! whisper.cpp).
//!
//! whisper.cpp takes the first GPU device ggml lists when asked to use one, and falls
//! back to the CPU silently when there is none, or when it cannot start the one it found
//! (its weights may then already sit in that device's buffers). So before a model loads,
//! [`choose`] finds that same device and starts it once: with [`Device::Auto`] a GPU that
//! is missing or fails to start leaves the engine on the CPU, saying why in
//! [`Backend::fallback`]; with [`Device::Gpu`] it is a typed error. Vulkan lists only
//! real GPUs unless `GGML_VK_VISIBLE_DEVICES` names others (Mesa's CPU driver, lavapipe,
//! is how the tests run the Vulkan path on a machine without a GPU).

use whisper_rs::whisper_rs_sys as sys;

use super::kernels::owned_text;
use crate::error::{Error, Result};

/// Where the engine runs, as asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Device {
    /// The first GPU of a backend this build includes, else the CPU (with the reason in
    /// [`Backend::fallback`]).
    #[default]
    Auto,
    /// The CPU, even where a GPU is available.
    Cpu,
    /// A GPU; loading fails with [`Error::ModelUnavailable`] when there is none.
    Gpu,
}

impl Device {
    /// The names [`Device::parse`] accepts, for messages.
    pub const NAMES: &'static str = "auto, cpu or gpu";

    /// `auto`, `cpu` or `gpu` (case and surrounding space ignored).
    ///
    /// # Errors
    /// [`Error::InvalidRequest`] naming `field` for anything else.
    pub fn parse(value: &str, field: &'static str) -> Result<Self> {
        match value.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(Self::Auto),
            "cpu" => Ok(Self::Cpu),
            "gpu" => Ok(Self::Gpu),
            other => Err(Error::invalid(
                field,
                format!("unknown device {other:?}: expected {}", Self::NAMES),
            )),
        }
    }
}

/// The device a loaded engine runs on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backend {
    /// `CPU`, or ggml's name of the GPU device (`Vulkan0`, `CUDA0`, `Metal`).
    pub name: String,
    /// The device's description (the GPU's name, or the CPU kernels in use).
    pub description: String,
    /// Why a GPU was not used when [`Device::Auto`] looked for one (`None` when a GPU
    /// runs, when the CPU was asked for, or when the build has no GPU backend).
    pub fallback: Option<String>,
}

impl Backend {
    /// True when the engine runs on a GPU.
    #[must_use]
    pub fn is_gpu(&self) -> bool {
        self.name != CPU
    }

    /// The JSON the CLI and the server report.
    #[must_use]
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "name": self.name,
            "description": self.description,
            "fallback": self.fallback,
        })
    }
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.name, self.description)?;
        match &self.fallback {
            Some(reason) => write!(f, "; {reason}"),
            None => Ok(()),
        }
    }
}

const CPU: &str = "CPU";

/// The GPU backends this build includes (the crate features that enable them).
#[must_use]
pub fn gpu_backends_built() -> &'static [&'static str] {
    &[
        #[cfg(feature = "cuda")]
        "cuda",
        #[cfg(feature = "vulkan")]
        "vulkan",
        #[cfg(feature = "metal")]
        "metal",
        #[cfg(feature = "hipblas")]
        "hipblas",
    ]
}

/// Whether whisper.cpp should use a GPU, and the backend the engine will run on.
pub(crate) fn choose(device: Device, cpu_description: &str) -> Result<(bool, Backend)> {
    let cpu = |fallback: Option<String>| Backend {
        name: CPU.to_owned(),
        description: cpu_description.to_owned(),
        fallback,
    };
    if device == Device::Cpu {
        return Ok((false, cpu(None)));
    }
    if gpu_backends_built().is_empty() {
        return match device {
            Device::Gpu => Err(unavailable(
                "no GPU backend in this build (build with the `cuda`, `vulkan`, `metal` or \
                 `hipblas` feature)"
                    .to_owned(),
            )),
            _ => Ok((false, cpu(None))),
        };
    }
    match first_gpu().and_then(started) {
        Ok(gpu) => Ok((true, gpu)),
        Err(reason) if device == Device::Gpu => Err(unavailable(reason)),
        Err(reason) => Ok((false, cpu(Some(format!("no GPU used: {reason}"))))),
    }
}

fn unavailable(reason: String) -> Error {
    Error::ModelUnavailable {
        message: format!("a GPU was asked for (device gpu) but {reason}"),
        source: None,
    }
}

/// The device whisper.cpp would take: the first GPU or integrated GPU ggml lists.
fn first_gpu() -> std::result::Result<sys::ggml_backend_dev_t, String> {
    // SAFETY: ggml's device registry is initialised on first use and lives for the
    // process; the count and the devices it returns are valid for that long.
    let count = unsafe { sys::ggml_backend_dev_count() };
    (0..count)
        // SAFETY: `index` is below the count ggml just gave.
        .map(|index| unsafe { sys::ggml_backend_dev_get(index) })
        .find(|&dev| {
            // SAFETY: `dev` is a registered device (above).
            let kind = unsafe { sys::ggml_backend_dev_type(dev) };
            kind == sys::ggml_backend_dev_type_GGML_BACKEND_DEVICE_TYPE_GPU
                || kind == sys::ggml_backend_dev_type_GGML_BACKEND_DEVICE_TYPE_IGPU
        })
        .ok_or_else(|| {
            format!(
                "the {} backend found no device",
                gpu_backends_built().join("/")
            )
        })
}

/// Starts `dev` once (and stops it) to know that whisper.cpp can, and describes it.
fn started(dev: sys::ggml_backend_dev_t) -> std::result::Result<Backend, String> {
    // SAFETY: `dev` is a registered device; the returned strings are ggml's own, valid
    // while the device is, and copied here.
    let (name, description) = unsafe {
        (
            owned_text(sys::ggml_backend_dev_name(dev)).unwrap_or_default(),
            owned_text(sys::ggml_backend_dev_description(dev)).unwrap_or_default(),
        )
    };
    // SAFETY: `dev` is a registered device; NULL parameters ask for its defaults.
    let backend = unsafe { sys::ggml_backend_dev_init(dev, std::ptr::null()) };
    if backend.is_null() {
        return Err(format!("{name} ({description}) failed to start"));
    }
    // SAFETY: `backend` was just created by `ggml_backend_dev_init` and is used no more.
    unsafe { sys::ggml_backend_free(backend) };
    Ok(Backend {
        name,
        description,
        fallback: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_names_parse_and_others_are_typed_errors() {
        assert_eq!(Device::parse(" GPU ", "device").ok(), Some(Device::Gpu));
        assert_eq!(Device::parse("cpu", "device").ok(), Some(Device::Cpu));
        assert_eq!(Device::parse("auto", "device").ok(), Some(Device::Auto));
        let error = Device::parse("cuda0", "device").expect_err("not a device");
        assert!(error.to_string().contains("auto, cpu or gpu"), "{error}");
    }

    #[test]
    fn the_cpu_asked_for_is_the_cpu_and_a_gpu_missing_is_typed_or_falls_back() {
        let (gpu, backend) = choose(Device::Cpu, "kernels").expect("the CPU always runs");
        assert!(!gpu && !backend.is_gpu() && backend.fallback.is_none());
        let (gpu, backend) = choose(Device::Auto, "kernels").expect("auto never fails");
        assert_eq!(gpu, backend.is_gpu());
        if !backend.is_gpu() && !gpu_backends_built().is_empty() {
            assert!(backend.fallback.is_some(), "{backend}");
        }
        match choose(Device::Gpu, "kernels") {
            Ok((gpu, backend)) => assert!(gpu && backend.is_gpu()),
            Err(error) => assert!(matches!(error, Error::ModelUnavailable { .. }), "{error}"),
        }
    }
}
