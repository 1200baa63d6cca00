//! What both tables share: key checks, the call status, and the launch of a request
//! kernel.

use cudarc::driver::{CudaSlice, LaunchConfig};
use gpuds_core::{Gpu, Kernel};

use crate::error::{Error, Result};

/// The reserved keys: 0 (empty slot) and all ones (tombstone).
pub const RESERVED_KEYS: [u32; 2] = [0, u32::MAX];

pub(crate) fn check_host_keys(keys: &[u32]) -> Result<()> {
    match keys.iter().position(|k| RESERVED_KEYS.contains(k)) {
        Some(index) => Err(Error::ReservedKey {
            index,
            key: keys[index],
        }),
        None => Ok(()),
    }
}

pub(crate) fn same_len(what: &'static str, a: usize, b: usize) -> Result<()> {
    if a == b {
        Ok(())
    } else {
        Err(Error::LengthMismatch { what, a, b })
    }
}

/// Checks device keys for reserved values (one kernel and a synchronization).
pub(crate) fn check_device_keys(
    gpu: &Gpu,
    first_reserved: &Kernel,
    keys: &CudaSlice<u32>,
) -> Result<()> {
    use cudarc::driver::PushKernelArg;
    let n = keys.len();
    if n == 0 {
        return Ok(());
    }
    let stream = gpu.stream();
    let mut out = stream.alloc_zeros::<u64>(1)?;
    let n64 = n as u64;
    let mut args = stream.launch_builder(first_reserved.func());
    args.arg(keys).arg(&n64).arg(&mut out);
    // SAFETY: reads keys[..n], writes one word.
    unsafe { args.launch(shape(gpu, first_reserved, n)?) }?;
    let bad = stream.clone_dtoh(&out)?[0];
    if bad == 0 {
        return Ok(());
    }
    let index = (n64 - bad) as usize;
    let key = stream.clone_dtoh(&keys.slice(index..index + 1))?[0];
    Err(Error::ReservedKey { index, key })
}

pub(crate) fn shape(gpu: &Gpu, kernel: &Kernel, n: usize) -> Result<LaunchConfig> {
    Ok(gpu.grid_for(kernel, n.max(1), crate::kernels::BLOCK)?)
}

/// Bits of a found/removed bitmap as bools.
pub(crate) fn bits(words: &[u32], n: usize) -> Vec<bool> {
    (0..n).map(|i| words[i / 32] >> (i % 32) & 1 == 1).collect()
}
