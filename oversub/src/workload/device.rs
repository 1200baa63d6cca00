//! The sequences, their values and search batches generated on the device: the same
//! keys as the host functions for the same arguments, bit for bit (the host functions
//! are the reference; `gpuds/oversub/workload.cuh` mirrors them formula by formula).
//! Every key is a function of its position, so one thread computes each, in a
//! grid-stride loop: any `n` up to [`KEY_MAX`], no host memory, no copy over the link.

use cudarc::driver::{CudaSlice, PushKernelArg};
use gpuds_core::primitives::{RadixSorter, Scanner};
use gpuds_core::{Error as CoreError, Gpu};

use super::permute::derive_seed;
use super::{salt, Sequence, KEY_MAX, KEY_MIN};
use crate::batch::shape;
use crate::error::Result;
use crate::kernels::workload_kernel;

impl Sequence {
    /// The kernel's number for this sequence (`gpuds::oversub::workload::kind`).
    fn device_kind(self) -> u32 {
        match self {
            Sequence::Mi => 0,
            Sequence::Du => 1,
            Sequence::Dr => 2,
            Sequence::Su => 3,
            Sequence::Sr => 4,
            Sequence::Sur => 5,
            Sequence::Dul => 6,
            Sequence::Zz => 7,
        }
    }

    /// [`keys`](Self::keys) generated on the device: the same `n` keys for the same
    /// `(n, seed)`, in a new device buffer, with blocks of `max(n / 8, 1)` keys. Does not
    /// synchronize: the keys are there once [`Gpu::stream`] reaches them.
    ///
    /// Fails with [`gpuds_core::Error::InvalidArgument`] if `n > KEY_MAX` (the host
    /// twin panics instead).
    ///
    /// ```no_run
    /// use gpuds_oversub::workload::Sequence;
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let keys = Sequence::Sur.device_keys(&gpu, 1 << 24, 7)?;
    /// let first = gpu.stream().clone_dtoh(&keys.slice(..1000))?;
    /// assert_eq!(first, Sequence::Sur.keys(1 << 24, 7)[..1000]);
    /// # Ok::<(), gpuds_oversub::Error>(())
    /// ```
    pub fn device_keys(self, gpu: &Gpu, n: usize, seed: u64) -> Result<CudaSlice<u32>> {
        self.device_keys_with(gpu, n, seed, (n / 8).max(1))
    }

    /// [`keys_with`](Self::keys_with) generated on the device (see
    /// [`device_keys`](Self::device_keys)). Does not synchronize.
    ///
    /// Fails with [`gpuds_core::Error::InvalidArgument`] if `n > KEY_MAX` or
    /// `block == 0` (the host twin panics instead).
    ///
    /// ```no_run
    /// use gpuds_oversub::workload::Sequence;
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let keys = Sequence::Du.device_keys_with(&gpu, 10, 1, 5)?;
    /// assert_eq!(gpu.stream().clone_dtoh(&keys)?, Sequence::Du.keys_with(10, 1, 5));
    /// # Ok::<(), gpuds_oversub::Error>(())
    /// ```
    pub fn device_keys_with(
        self,
        gpu: &Gpu,
        n: usize,
        seed: u64,
        block: usize,
    ) -> Result<CudaSlice<u32>> {
        if block == 0 {
            return Err(invalid(
                "the block of a sequence must hold at least one key".into(),
            ));
        }
        if n as u64 > KEY_MAX as u64 {
            return Err(invalid(format!(
                "a sequence holds at most {KEY_MAX} keys, {n} asked"
            )));
        }
        let stream = gpu.stream();
        let mut out = stream.alloc_zeros::<u32>(n)?;
        if n == 0 {
            return Ok(out);
        }
        let kernel = workload_kernel(gpu, "sequence_keys")?;
        let (kind, largest) = (self.device_kind(), self.largest(n));
        let (n64, block64) = (n as u64, block as u64);
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&kind)
            .arg(&largest)
            .arg(&n64)
            .arg(&block64)
            .arg(&seed)
            .arg(&mut out);
        // SAFETY: the arguments match the kernel's signature; it writes out[..n].
        unsafe { args.launch(shape(gpu, &kernel, n)?) }?;
        Ok(out)
    }
}

fn invalid(message: String) -> crate::Error {
    CoreError::InvalidArgument(message).into()
}

/// [`values`](super::values) on the device: the value of each key, in a new device
/// buffer. Does not synchronize.
///
/// ```no_run
/// use gpuds_oversub::workload::{device_values, values, Sequence};
/// let gpu = gpuds_core::Gpu::new(0)?;
/// let keys = Sequence::Sr.device_keys(&gpu, 1000, 3)?;
/// let v = device_values(&gpu, &keys, 3)?;
/// assert_eq!(gpu.stream().clone_dtoh(&v)?, values(&Sequence::Sr.keys(1000, 3), 3));
/// # Ok::<(), gpuds_oversub::Error>(())
/// ```
pub fn device_values(gpu: &Gpu, keys: &CudaSlice<u32>, seed: u64) -> Result<CudaSlice<u32>> {
    let n = keys.len();
    let stream = gpu.stream();
    let mut out = stream.alloc_zeros::<u32>(n)?;
    if n == 0 {
        return Ok(out);
    }
    let kernel = workload_kernel(gpu, "sequence_values")?;
    let (n64, value_key) = (n as u64, derive_seed(seed, salt::VALUE, 0) as u32);
    let mut args = stream.launch_builder(kernel.func());
    args.arg(keys).arg(&n64).arg(&value_key).arg(&mut out);
    // SAFETY: reads keys[..n], writes out[..n].
    unsafe { args.launch(shape(gpu, &kernel, n)?) }?;
    Ok(out)
}

/// [`absent_keys`](super::absent_keys) on the device: `count` distinct keys absent
/// from `present`, the same ones in the same order. Synchronizes (to learn how many
/// absent keys the candidates held).
///
/// The host walks a seeded order of the whole key range and keeps the first `count`
/// keys not in `present`. Here the first `count + present.len()` keys of that order
/// (they hold at least `count` absent ones) are computed at once, each checked by a
/// binary search in a sorted copy of `present`, and a stream compaction keeps the
/// absent ones in order. Fails with [`gpuds_core::Error::InvalidArgument`] when the key
/// range holds fewer than `count` keys outside `present` (the host twin panics), and
/// with [`gpuds_core::Error::CapacityOverflow`] past `u32::MAX` candidates.
///
/// ```no_run
/// use gpuds_oversub::workload::{absent_keys, device_absent_keys, Sequence};
/// let gpu = gpuds_core::Gpu::new(0)?;
/// let keys = Sequence::Su.device_keys(&gpu, 1000, 1)?;
/// let misses = device_absent_keys(&gpu, &keys, 300, 2)?;
/// assert_eq!(gpu.stream().clone_dtoh(&misses)?, absent_keys(&Sequence::Su.keys(1000, 1), 300, 2));
/// # Ok::<(), gpuds_oversub::Error>(())
/// ```
pub fn device_absent_keys(
    gpu: &Gpu,
    present: &CudaSlice<u32>,
    count: usize,
    seed: u64,
) -> Result<CudaSlice<u32>> {
    let stream = gpu.stream();
    let mut out = stream.alloc_zeros::<u32>(count)?;
    if count == 0 {
        return Ok(out);
    }
    let range = (KEY_MAX - KEY_MIN) as u64 + 1;
    let candidates = (count as u64)
        .checked_add(present.len() as u64)
        .map_or(range, |c| c.min(range));
    let len = usize::try_from(candidates)
        .map_err(|_| CoreError::CapacityOverflow(format!("{candidates} absent-key candidates")))?;
    // An empty `present` still passes one (unread) word to the kernel.
    let sorted = if present.is_empty() {
        stream.alloc_zeros::<u32>(1)?
    } else {
        let mut sorted = stream.clone_dtod(present)?;
        RadixSorter::new(gpu)?.sort_keys(&mut sorted)?;
        sorted
    };
    let mut keys = stream.alloc_zeros::<u32>(len)?;
    let mut flags = stream.alloc_zeros::<u32>(len)?;
    let kernel = workload_kernel(gpu, "absent_candidates")?;
    let (present_len, len64) = (present.len() as u64, candidates);
    let mut args = stream.launch_builder(kernel.func());
    args.arg(&sorted)
        .arg(&present_len)
        .arg(&seed)
        .arg(&len64)
        .arg(&mut keys)
        .arg(&mut flags);
    // SAFETY: reads sorted[..present_len]; writes keys[..len] and flags[..len].
    unsafe { args.launch(shape(gpu, &kernel, len)?) }?;
    let mut kept = stream.alloc_zeros::<u32>(1)?;
    Scanner::new(gpu)?.compact(&keys, &flags, &mut out, &mut kept)?;
    let kept = stream.clone_dtoh(&kept)?[0] as usize;
    if kept < count {
        return Err(invalid(format!("{count} absent keys asked, {kept} exist")));
    }
    Ok(out)
}

/// [`search_queries`](super::search_queries) on the device: `keys` in their order with
/// position `every - 1` of each group of `every` replaced by a key absent from `keys`
/// (`every == 0`: a copy of `keys`). Synchronizes (through
/// [`device_absent_keys`]); fails as it does.
///
/// ```no_run
/// use gpuds_oversub::workload::{device_search_queries, search_queries, Sequence};
/// let gpu = gpuds_core::Gpu::new(0)?;
/// let keys = Sequence::Du.device_keys(&gpu, 12, 1)?;
/// let queries = device_search_queries(&gpu, &keys, 3, 7)?;
/// assert_eq!(gpu.stream().clone_dtoh(&queries)?, search_queries(&Sequence::Du.keys(12, 1), 3, 7));
/// # Ok::<(), gpuds_oversub::Error>(())
/// ```
pub fn device_search_queries(
    gpu: &Gpu,
    keys: &CudaSlice<u32>,
    every: usize,
    seed: u64,
) -> Result<CudaSlice<u32>> {
    let n = keys.len();
    let stream = gpu.stream();
    if n == 0 {
        return Ok(stream.alloc_zeros::<u32>(0)?);
    }
    if every == 0 {
        return Ok(stream.clone_dtod(keys)?);
    }
    let misses = device_absent_keys(gpu, keys, n / every, seed)?;
    let mut out = stream.alloc_zeros::<u32>(n)?;
    let kernel = workload_kernel(gpu, "search_queries")?;
    let (n64, every64) = (n as u64, every as u64);
    let mut args = stream.launch_builder(kernel.func());
    args.arg(keys)
        .arg(&n64)
        .arg(&every64)
        .arg(&misses)
        .arg(&mut out);
    // SAFETY: reads keys[..n] and misses[..n / every] (position j replaced reads
    // misses[j / every] with (j / every + 1)·every <= n); writes out[..n].
    unsafe { args.launch(shape(gpu, &kernel, n)?) }?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_follow_the_papers_order() {
        for (i, seq) in Sequence::ALL.into_iter().enumerate() {
            assert_eq!(seq.device_kind(), i as u32, "{seq}");
        }
    }
}
