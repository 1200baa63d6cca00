//! The on-disk cache of compiled kernels.
//!
//! NVRTC takes from a fraction of a second to several seconds per module; the disk cache
//! lets a later process load the CUBIN directly. Entries are files named by the 128-bit
//! fingerprint of everything that determines the image (sources, headers, defines,
//! options, architecture, NVRTC version), so a stale entry can never be picked up.
//!
//! The folder is `$GPUDS_CACHE_DIR`, else `$XDG_CACHE_HOME/gpuds/kernels`, else
//! `$HOME/.cache/gpuds/kernels`. Setting `GPUDS_DISK_CACHE=0` (or `off`, `false`)
//! turns the disk cache off. The cache is best effort: a folder that cannot be written
//! only costs recompilation, never an error.

use std::path::PathBuf;

use crate::error::{Error, Result};

/// The cache folder in use, or `None` when the disk cache is off or no folder is known.
///
/// ```
/// if let Some(dir) = gpuds_core::cache::dir() {
///     println!("compiled kernels are kept in {}", dir.display());
/// }
/// ```
pub fn dir() -> Option<PathBuf> {
    if let Ok(v) = std::env::var("GPUDS_DISK_CACHE") {
        if matches!(
            v.to_ascii_lowercase().as_str(),
            "0" | "off" | "false" | "no"
        ) {
            return None;
        }
    }
    if let Some(dir) = std::env::var_os("GPUDS_CACHE_DIR") {
        return Some(PathBuf::from(dir));
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("gpuds").join("kernels"))
}

fn entry(key: u128) -> Option<PathBuf> {
    dir().map(|d| d.join(format!("{key:032x}.cubin")))
}

/// Reads a cached image, if there is one.
pub(crate) fn read(key: u128) -> Option<Vec<u8>> {
    std::fs::read(entry(key)?).ok().filter(|b| !b.is_empty())
}

/// Removes one entry (best effort).
pub(crate) fn remove(key: u128) {
    if let Some(path) = entry(key) {
        let _ = std::fs::remove_file(path);
    }
}

/// Stores an image; failures are ignored (the cache is an optimisation).
pub(crate) fn write(key: u128, image: &[u8]) {
    let Some(path) = entry(key) else { return };
    let Some(parent) = path.parent() else { return };
    if std::fs::create_dir_all(parent).is_err() {
        return;
    }
    // Write then rename, so a concurrent reader never sees half a file.
    let tmp = path.with_extension(format!("{}.tmp", std::process::id()));
    if std::fs::write(&tmp, image).is_ok() && std::fs::rename(&tmp, &path).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}

/// Removes every cached kernel. Returns how many entries were removed.
///
/// ```no_run
/// let removed = gpuds_core::cache::clear()?;
/// println!("removed {removed} cached kernels");
/// # Ok::<(), gpuds_core::Error>(())
/// ```
pub fn clear() -> Result<usize> {
    let Some(dir) = dir() else { return Ok(0) };
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(source) => return Err(Error::Cache { path: dir, source }),
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "cubin") {
            std::fs::remove_file(&path).map_err(|source| Error::Cache {
                path: path.clone(),
                source,
            })?;
            removed += 1;
        }
    }
    Ok(removed)
}
