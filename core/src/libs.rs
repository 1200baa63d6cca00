//! Finding the CUDA driver and NVRTC libraries before cudarc touches them.
//!
//! cudarc loads both libraries lazily and panics when one is missing. Every entry point
//! of gpuds checks here first and turns a missing library into an [`Error`].

use std::path::PathBuf;
use std::sync::OnceLock;

use crate::error::{Error, Result};

/// Returns `Ok` when the CUDA driver library can be loaded.
///
/// ```no_run
/// if gpuds_core::ensure_driver().is_err() {
///     println!("install an NVIDIA driver");
/// }
/// ```
pub fn ensure_driver() -> Result<()> {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: is_culib_present only tries to dlopen the library and drops the handle.
    let present = *PRESENT.get_or_init(|| unsafe { cudarc::driver::sys::is_culib_present() });
    if present {
        Ok(())
    } else {
        Err(Error::NoDriver)
    }
}

/// Returns `Ok` when NVRTC can be loaded.
///
/// When the dynamic loader cannot find it by name, the library is looked for at
/// `GPUDS_NVRTC_PATH` (a file), then under `$CUDA_HOME`, `$CUDA_PATH` and the toolkit's
/// default install prefix, and preloaded from there so that cudarc finds it by soname.
///
/// ```no_run
/// gpuds_core::ensure_nvrtc()?;
/// # Ok::<(), gpuds_core::Error>(())
/// ```
pub fn ensure_nvrtc() -> Result<()> {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    let present = *PRESENT.get_or_init(|| {
        if let Some(file) = std::env::var_os("GPUDS_NVRTC_PATH") {
            preload(&PathBuf::from(file));
        }
        // SAFETY: as above, a probe that drops its handle.
        if unsafe { cudarc::nvrtc::sys::is_culib_present() } {
            return true;
        }
        for file in candidate_files() {
            if preload(&file) && unsafe { cudarc::nvrtc::sys::is_culib_present() } {
                return true;
            }
        }
        false
    });
    if present {
        Ok(())
    } else {
        Err(Error::NoNvrtc)
    }
}

/// NVRTC library files under the usual toolkit prefixes, newest soname first.
fn candidate_files() -> Vec<PathBuf> {
    let mut prefixes: Vec<PathBuf> = ["CUDA_HOME", "CUDA_PATH"]
        .iter()
        .filter_map(std::env::var_os)
        .map(PathBuf::from)
        .collect();
    prefixes.push(PathBuf::from("/usr/local/cuda"));
    let mut files = Vec::new();
    for prefix in prefixes {
        for lib in [
            "lib64",
            "lib",
            "targets/x86_64-linux/lib",
            "targets/sbsa-linux/lib",
        ] {
            let Ok(entries) = std::fs::read_dir(prefix.join(lib)) else {
                continue;
            };
            let mut found: Vec<PathBuf> = entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("libnvrtc.so"))
                })
                .collect();
            found.sort();
            found.reverse();
            files.extend(found);
        }
    }
    files
}

/// Loads a library by path and keeps it loaded for the life of the process.
fn preload(file: &PathBuf) -> bool {
    // SAFETY: loading NVRTC runs only its own initialisers, which have no preconditions.
    match unsafe { libloading::Library::new(file) } {
        Ok(lib) => {
            std::mem::forget(lib);
            true
        }
        Err(_) => false,
    }
}
