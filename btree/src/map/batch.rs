//! Batch plumbing shared by the operations: lengths, result bits, node bounds.

use gpuds_core::cudarc::driver::CudaSlice;
use gpuds_core::{DeviceKey, DeviceValue, Gpu};

use crate::error::Result;

/// Nodes a batch of `inserts` insertions may add to a tree of nodes of `node_pairs`
/// pairs, reserved before it runs. An insertion that reaches a full leaf splits it (at
/// most one such split per insertion); a split one level up needs h = node_pairs / 2
/// splits below it (pairs landed in a half), or a node that was already full, and a root
/// split adds two nodes: at most n + n / (h - 1) nodes (14 pairs: 7/6 of the insertions,
/// reserved as 4/3; 6 pairs: 3/2) plus the internal nodes that were full before the
/// batch, which this bound leaves out. A batch that needs those too (rare: trees whose
/// internal nodes are nearly all full) fails part of its insertions with
/// `POOL_EXHAUSTED`; the synchronizing forms then grow the pool and insert those again,
/// so that only the pool's maximum ends them.
pub(super) fn split_bound(inserts: usize, node_pairs: usize) -> u64 {
    let n = inserts as u64;
    let per_split = (node_pairs as u64 / 2).saturating_sub(1).clamp(1, 3);
    n + n.div_ceil(per_split) + 64
}

/// The elements of `all` at the positions `at`, or all of them (`None`).
pub(super) fn picked<'a, T: Copy>(all: &'a [T], at: Option<&[usize]>) -> std::borrow::Cow<'a, [T]> {
    match at {
        None => std::borrow::Cow::Borrowed(all),
        Some(at) => std::borrow::Cow::Owned(at.iter().map(|&i| all[i]).collect()),
    }
}

/// The batch length as the kernels' 32-bit count: more than `u32::MAX` operations is a
/// [`CapacityOverflow`](gpuds_core::Error::CapacityOverflow), never truncated.
pub(crate) fn batch_len(n: usize) -> Result<u32> {
    Ok(gpuds_core::size::u32_len(n, "operations in one batch")?)
}

pub(crate) fn same_len(a: usize, b: usize, what: &str) -> Result<u32> {
    if a != b {
        return Err(gpuds_core::Error::InvalidArgument(format!("{a} keys but {b} {what}")).into());
    }
    batch_len(a)
}

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

/// Output pairs of `n` capped ranges of capacity `cap`: at most `u32::MAX` per call.
pub(super) fn capped_len(n: u32, cap: u32) -> Result<u64> {
    let needed = n as u64 * cap as u64;
    if needed > u32::MAX as u64 {
        return Err(gpuds_core::Error::CapacityOverflow(format!(
            "{n} ranges of capacity {cap} need {needed} output pairs; at most {} per call",
            u32::MAX
        ))
        .into());
    }
    Ok(needed)
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
