//! Batch plumbing shared by the operations: lengths, result bits, node bounds.

use gpuds_core::cudarc::driver::CudaSlice;
use gpuds_core::{DeviceKey, DeviceValue, Gpu};

use crate::error::Result;
pub(crate) use crate::runner::{batch_len, capped_len, capped_room};

/// The batch length, checked against the result buffers (`out` results, `bits` words of
/// one bit per request).
pub(crate) fn query_len(keys: usize, out: usize, bits: usize) -> Result<u32> {
    let n = batch_len(keys)?;
    if out < keys || bits < keys.div_ceil(32) {
        return Err(gpuds_core::Error::InvalidArgument(format!(
            "{keys} requests need {keys} results and {} bit words; got {out} and {bits}",
            keys.div_ceil(32)
        ))
        .into());
    }
    Ok(n)
}

pub(crate) fn bit(bits: &[u32], i: usize) -> bool {
    bits.get(i / 32).is_some_and(|w| w >> (i % 32) & 1 == 1)
}

/// Runs a per-key device batch (`run(keys, values, bits)`) on host keys and returns each
/// key's value where its bit is set. Synchronizes.
pub(super) fn keyed_on_host<K: DeviceKey, V: DeviceValue>(
    gpu: &Gpu,
    keys: &[K],
    run: impl FnOnce(&CudaSlice<K>, &mut CudaSlice<V>, &mut CudaSlice<u32>) -> Result<()>,
) -> Result<Vec<Option<V>>> {
    let n = batch_len(keys.len())? as usize;
    if n == 0 {
        return Ok(Vec::new());
    }
    let stream = gpu.stream();
    let k = stream.clone_htod(keys)?;
    let mut values = stream.alloc_zeros::<V>(n)?;
    let mut found = stream.alloc_zeros::<u32>(n.div_ceil(32))?;
    run(&k, &mut values, &mut found)?;
    let (values, found) = (stream.clone_dtoh(&values)?, stream.clone_dtoh(&found)?);
    Ok(values
        .into_iter()
        .enumerate()
        .map(|(i, v)| bit(&found, i).then_some(v))
        .collect())
}
