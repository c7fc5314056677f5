//! Which CPU kernels the engine runs, chosen at run time.
//!
//! A portable build (the default in this workspace, see `ggml-cpu-variants.cmake` beside
//! this file and the crate's `build.rs`) links in ggml's CPU backend built for the
//! x86-64-v2 floor (SSE4.2) and embeds ggml's faster CPU backends (AVX2, AVX-512,
//! AVX-512 VNNI/BF16, AMX) as shared objects. Before the first model loads, each
//! embedded backend is opened from memory (`memfd_create`; a temporary file where that
//! is refused), asked for ggml's score of this CPU (0: it would not run here), and the
//! best is registered with ggml in place of the linked-in one. Each module holds its own
//! copy of ggml's base library and binds its own symbols, so it works inside a Python
//! extension or a C host's process as well as in the command line.
//!
//! A `-march=native` build (`CTXSCRIBE_NATIVE=1`) embeds nothing and runs the linked-in
//! backend. Either way [`cpu_kernels`] says what runs, with ggml's own feature list.
//! `CTXSCRIBE_CPU_KERNELS=<variant>` (or `x86-64-v2`) runs the named kernels instead of
//! the best, where the CPU can: for comparing them, and for the tests that run each one.

use std::ffi::{CStr, CString, c_char, c_void};
use std::io::Write as _;
use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd};
use std::sync::OnceLock;

use whisper_rs::whisper_rs_sys as sys;

use crate::error::{Error, Result};

include!(concat!(env!("OUT_DIR"), "/cpu_variants.rs"));

/// The CPU kernels the engine runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuKernels {
    /// `native` (built for the building machine's CPU), `x86-64-v2` (the linked-in
    /// portable floor) or the loaded variant's name (`haswell`, `skylakex`,
    /// `cascadelake`, `icelake`, `alderlake`, `zen4`, `sapphirerapids`).
    pub variant: String,
    /// ggml's features of that backend (`AVX2`, `AVX512_BF16`, `OPENMP`, ...).
    pub features: Vec<String>,
    /// Why a faster embedded variant could not be loaded, when the linked-in kernels run
    /// because of it.
    pub fallback: Option<String>,
}

impl CpuKernels {
    /// True when the kernels multiply bf16 matrices natively (AVX-512 BF16).
    #[must_use]
    pub fn has_bf16(&self) -> bool {
        self.features.iter().any(|feature| feature == "AVX512_BF16")
    }
}

impl std::fmt::Display for CpuKernels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.variant, self.features.join(" "))?;
        match &self.fallback {
            Some(reason) => write!(f, "; {reason}"),
            None => Ok(()),
        }
    }
}

static KERNELS: OnceLock<std::result::Result<CpuKernels, String>> = OnceLock::new();
/// The loaded module's path and memory file, kept while the process runs.
static LOADED_MODULE: OnceLock<(CString, Option<OwnedFd>)> = OnceLock::new();

/// The CPU kernels the engine runs, choosing them on the first call (before the first
/// model loads; every later call gives the same answer).
///
/// # Errors
/// [`Error::ModelUnavailable`] when this CPU is below the portable build's floor
/// (x86-64-v2). An embedded variant that cannot be loaded is skipped (the next one, or
/// the linked-in kernels, run) and named in [`CpuKernels::fallback`].
pub fn cpu_kernels() -> Result<&'static CpuKernels> {
    KERNELS
        .get_or_init(choose)
        .as_ref()
        .map_err(|message| Error::ModelUnavailable {
            message: message.clone(),
            source: None,
        })
}

/// The CPU kernels the engine runs if they have been chosen (a model was loaded in this
/// process), without choosing them.
#[must_use]
pub fn cpu_kernels_loaded() -> Option<&'static CpuKernels> {
    KERNELS.get().and_then(|kernels| kernels.as_ref().ok())
}

/// The JSON the CLI and the server report: `{"variant": ..., "features": [...]}`, or
/// null when no local model was loaded.
#[must_use]
pub fn cpu_kernels_json() -> serde_json::Value {
    cpu_kernels_loaded().map_or(
        serde_json::Value::Null,
        |kernels| serde_json::json!({"variant": kernels.variant, "features": kernels.features}),
    )
}

/// The environment variable that names the kernels to run instead of the best.
pub const KERNELS_VARIABLE: &str = "CTXSCRIBE_CPU_KERNELS";
/// The linked-in kernels of a portable build.
const LINKED_IN: &str = "x86-64-v2";

fn choose() -> std::result::Result<CpuKernels, String> {
    let wanted = std::env::var(KERNELS_VARIABLE)
        .ok()
        .filter(|name| !name.is_empty() && name != "auto");
    if CPU_VARIANTS.is_empty() {
        return match wanted {
            Some(name) if name != "native" => Err(format!(
                "{KERNELS_VARIABLE}={name}: this build has only the kernels for the CPU it was \
                 built on (native)"
            )),
            _ => Ok(linked_in("native")),
        };
    }
    #[cfg(target_arch = "x86_64")]
    if !std::arch::is_x86_feature_detected!("sse4.2") {
        return Err(
            "this build of ctxscribe needs an x86-64 CPU with SSE4.2 (x86-64-v2, \
                    2008 or later); this CPU lacks it"
                .to_owned(),
        );
    }
    if let Some(name) = wanted {
        return chosen_by_name(&name);
    }
    // The most capable variant first: each one's features include those of every later
    // one it could replace, so the first that ggml scores above 0 is ggml's best. Opened
    // modules are not closed until the choice is made: C++ modules may stay mapped after
    // dlclose, and a reused `/proc/self/fd/N` name would open the earlier one again.
    let mut rejected = Vec::new();
    let mut unloadable = Vec::new();
    for (variant, bytes) in by_preference() {
        match Module::open(variant, bytes) {
            Ok(module) if module.score() > 0 => match module.register(variant) {
                Ok(kernels) => return Ok(kernels),
                Err(error) => unloadable.push(error),
            },
            Ok(module) => {
                module.remove_temporary_file();
                rejected.push(module);
            }
            // E.g. a system without the OpenMP runtime the module links (libgomp.so.1):
            // the next variant or the linked-in kernels still run.
            Err(error) => unloadable.push(error),
        }
    }
    let mut kernels = linked_in(LINKED_IN);
    kernels.fallback = unloadable.into_iter().next();
    Ok(kernels)
}

/// The kernels `CTXSCRIBE_CPU_KERNELS` names, if this build has them and the CPU runs them.
fn chosen_by_name(name: &str) -> std::result::Result<CpuKernels, String> {
    if name == LINKED_IN {
        return Ok(linked_in(LINKED_IN));
    }
    let Some((variant, bytes)) = CPU_VARIANTS.iter().find(|(variant, _)| *variant == name) else {
        let names: Vec<&str> = by_preference()
            .iter()
            .map(|(variant, _)| *variant)
            .collect();
        return Err(format!(
            "{KERNELS_VARIABLE}={name}: no such CPU kernels (auto, {LINKED_IN}, {})",
            names.join(", ")
        ));
    };
    let module = Module::open(variant, bytes)?;
    if module.score() == 0 {
        module.remove_temporary_file();
        return Err(format!(
            "{KERNELS_VARIABLE}={name}: this CPU cannot run those kernels"
        ));
    }
    module.register(variant)
}

/// Variants from the most capable to the least (ggml's x86 variant names), then any
/// other embedded one.
const PREFERENCE: [&str; 8] = [
    "sapphirerapids",
    "zen4",
    "icelake",
    "cascadelake",
    "skylakex",
    "alderlake",
    "haswell",
    "sandybridge",
];

fn by_preference() -> Vec<&'static (&'static str, &'static [u8])> {
    let mut variants: Vec<_> = CPU_VARIANTS.iter().collect();
    variants.sort_by_key(|(name, _)| {
        PREFERENCE
            .iter()
            .position(|p| p == name)
            .unwrap_or(PREFERENCE.len())
    });
    variants
}

/// The linked-in CPU backend, named `variant`.
fn linked_in(variant: &str) -> CpuKernels {
    // SAFETY: `ggml_backend_cpu_reg` returns the static registration of the linked-in
    // CPU backend; it takes no arguments and is valid for the process's lifetime.
    let reg = unsafe { sys::ggml_backend_cpu_reg() };
    CpuKernels {
        variant: variant.to_owned(),
        features: features_of(reg),
        fallback: None,
    }
}

/// ggml's feature list of a CPU backend registration.
fn features_of(reg: sys::ggml_backend_reg_t) -> Vec<String> {
    type GetFeatures =
        unsafe extern "C" fn(sys::ggml_backend_reg_t) -> *mut sys::ggml_backend_feature;
    let name = c"ggml_backend_get_features";
    // SAFETY: `reg` is a live registration (linked in, or registered from a module that
    // stays loaded) and `name` is a NUL-terminated string.
    let address = unsafe { sys::ggml_backend_reg_get_proc_address(reg, name.as_ptr()) };
    if address.is_null() {
        return Vec::new();
    }
    // SAFETY: ggml's CPU backend returns `ggml_backend_get_features` under this name with
    // this signature (ggml-backend.h's `ggml_backend_get_features_t`).
    let get: GetFeatures = unsafe { std::mem::transmute::<*mut c_void, GetFeatures>(address) };
    // SAFETY: the function returns a static array ended by an entry whose name is NULL.
    let mut entry = unsafe { get(reg) };
    let mut features = Vec::new();
    // SAFETY: each entry up to the NULL-named one is valid, with NUL-terminated strings
    // that live as long as the backend.
    while !entry.is_null() && !unsafe { (*entry).name }.is_null() {
        // SAFETY: `entry` is before the terminating entry, so both strings are valid.
        let (name, value) = unsafe {
            (
                CStr::from_ptr((*entry).name),
                CStr::from_ptr((*entry).value),
            )
        };
        let name = name.to_string_lossy();
        // Boolean features read "1"; others (e.g. the thread model) give their value.
        if value.to_bytes() == b"1" {
            features.push(name.into_owned());
        } else {
            features.push(format!("{name}={}", value.to_string_lossy()));
        }
        // SAFETY: not past the terminating entry (checked above).
        entry = unsafe { entry.add(1) };
    }
    features
}

/// One embedded CPU backend, opened from a file that holds its bytes.
struct Module {
    /// `/proc/self/fd/N` of the memory file, or a temporary file's path.
    path: CString,
    handle: Library,
    /// The memory file (kept open while the module may be loaded), or none for a
    /// temporary file (removed once scored or loaded: the mapping outlives the name).
    memory: Option<OwnedFd>,
}

/// A `dlopen` handle, closed when dropped.
struct Library(*mut c_void);

impl Drop for Library {
    fn drop(&mut self) {
        if !self.0.is_null() {
            // SAFETY: the handle came from `dlopen` and nothing from the module is in use
            // (only its score function was called).
            unsafe { libc::dlclose(self.0) };
        }
    }
}

impl Module {
    fn open(variant: &str, bytes: &[u8]) -> std::result::Result<Module, String> {
        let failed = |what: &str, error: &dyn std::fmt::Display| {
            format!("cannot load the engine's {variant} CPU kernels: {what}: {error}")
        };
        let (path, memory) = match memory_file(variant, bytes) {
            Ok(fd) => (format!("/proc/self/fd/{}", fd.as_raw_fd()), Some(fd)),
            Err(_) => {
                let path =
                    temporary_file(variant, bytes).map_err(|e| failed("temporary file", &e))?;
                (path, None)
            }
        };
        let path = CString::new(path).map_err(|e| failed("path", &e))?;
        // SAFETY: `path` is NUL-terminated; the file is a shared object this build made.
        // RTLD_LOCAL keeps its symbols (its own copy of ggml) out of the process's scope.
        let handle = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        let module = Module {
            path,
            handle: Library(handle),
            memory,
        };
        if handle.is_null() {
            module.remove_temporary_file();
            return Err(failed(&module.path.to_string_lossy(), &dl_error()));
        }
        Ok(module)
    }

    fn remove_temporary_file(&self) {
        if self.memory.is_none() {
            let _ = std::fs::remove_file(self.path.to_string_lossy().as_ref());
        }
    }

    /// ggml's score of this CPU for the module's kernels (0: they would not run here).
    fn score(&self) -> u32 {
        type Score = unsafe extern "C" fn() -> i32;
        // SAFETY: `handle` is open and the name is NUL-terminated.
        let address = unsafe { libc::dlsym(self.handle.0, c"ggml_backend_score".as_ptr()) };
        if address.is_null() {
            return 0;
        }
        // SAFETY: ggml's CPU variants export `int ggml_backend_score(void)`, which only
        // reads CPUID.
        let score: Score = unsafe { std::mem::transmute::<*mut c_void, Score>(address) };
        // SAFETY: as above: no arguments, no state.
        u32::try_from(unsafe { score() }).unwrap_or(0)
    }

    /// Registers the module's backend with ggml in place of the linked-in one, so that
    /// whisper.cpp's "the CPU device" is this one.
    fn register(self, variant: &str) -> std::result::Result<CpuKernels, String> {
        silence_logs(self.handle.0);
        // SAFETY: `path` names the open module; ggml opens it again (a second reference
        // to the same mapping), calls its `ggml_backend_init` and keeps it registered.
        let reg = unsafe { sys::ggml_backend_load(self.path.as_ptr()) };
        self.remove_temporary_file();
        if reg.is_null() {
            return Err(format!(
                "cannot load the engine's {variant} CPU kernels from {}: ggml refused them",
                self.path.to_string_lossy()
            ));
        }
        // SAFETY: both registrations are live; unloading the linked-in one only removes
        // it from ggml's list (no model has been loaded yet, so nothing uses it).
        unsafe { sys::ggml_backend_unload(sys::ggml_backend_cpu_reg()) };
        let kernels = CpuKernels {
            variant: variant.to_owned(),
            features: features_of(reg),
            fallback: None,
        };
        // The module stays loaded for the life of the process (ggml holds its own
        // reference, this one is never closed); its memory file and name are kept.
        let Module {
            path,
            handle,
            memory,
        } = self;
        std::mem::forget(handle);
        let _ = LOADED_MODULE.set((path, memory));
        Ok(kernels)
    }
}

/// The module's own copy of ggml logs to stderr by default; a library stays quiet, like
/// the linked-in copy under whisper-rs's hooks.
fn silence_logs(handle: *mut c_void) {
    type LogSet = unsafe extern "C" fn(sys::ggml_log_callback, *mut c_void);
    unsafe extern "C" fn quiet(_: sys::ggml_log_level, _: *const c_char, _: *mut c_void) {}
    // SAFETY: `handle` is open and the name is NUL-terminated.
    let address = unsafe { libc::dlsym(handle, c"ggml_log_set".as_ptr()) };
    if !address.is_null() {
        // SAFETY: the module's ggml exports `ggml_log_set` with this signature; `quiet`
        // ignores its arguments and lives for the whole program.
        unsafe {
            let set: LogSet = std::mem::transmute::<*mut c_void, LogSet>(address);
            set(Some(quiet), std::ptr::null_mut());
        }
    }
}

fn memory_file(variant: &str, bytes: &[u8]) -> std::io::Result<OwnedFd> {
    let name =
        CString::new(format!("ctxscribe-ggml-cpu-{variant}")).map_err(std::io::Error::other)?;
    // SAFETY: `name` is NUL-terminated; the returned descriptor is checked before use.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` is a new descriptor that nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut file = std::fs::File::from(fd);
    file.write_all(bytes)?;
    Ok(OwnedFd::from(file))
}

fn temporary_file(variant: &str, bytes: &[u8]) -> std::io::Result<String> {
    let path = std::env::temp_dir().join(format!(
        "ctxscribe-ggml-cpu-{variant}-{}.so",
        std::process::id()
    ));
    std::fs::write(&path, bytes)?;
    Ok(path.display().to_string())
}

fn dl_error() -> String {
    // SAFETY: `dlerror` returns NULL or a NUL-terminated message valid until the next
    // dl* call on this thread, copied here at once.
    unsafe { owned_text(libc::dlerror()) }.unwrap_or_else(|| "unknown error".to_owned())
}

/// A C string someone else owns, copied; `None` for NULL.
///
/// # Safety
/// `text` is NULL or points to a NUL-terminated string valid for this call.
pub(super) unsafe fn owned_text(text: *const c_char) -> Option<String> {
    if text.is_null() {
        return None;
    }
    // SAFETY: non-NULL and NUL-terminated (the caller's promise).
    Some(
        unsafe { CStr::from_ptr(text) }
            .to_string_lossy()
            .into_owned(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernels_are_chosen_once_and_name_their_features() {
        let kernels = cpu_kernels().expect("this machine runs the engine");
        assert!(!kernels.variant.is_empty());
        assert!(
            kernels
                .features
                .iter()
                .any(|f| f == "SSE3" || f == "AVX2" || f.starts_with("AVX")),
            "{kernels}"
        );
        assert!(std::ptr::eq(kernels, cpu_kernels().expect("same answer")));
        if !CPU_VARIANTS.is_empty() {
            assert_ne!(kernels.variant, "native");
        }
    }
}
