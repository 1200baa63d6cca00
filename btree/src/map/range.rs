//! Range queries: counts, two-pass collect and one-pass capped collect.

use super::*;
use crate::ops::Ranges;
use batch::{capped_len, capped_room};
use gpuds_core::cudarc::driver::{CudaSlice, PushKernelArg};
use gpuds_core::primitives::exclusive_scan;

impl<K: TreeKey, V: TreeValue> GpuBTreeMap<K, V> {
    /// For each `(lo, hi)`, the number of pairs with `lo <= key <= hi` (0 when
    /// `lo > hi`). Synchronizes.
    pub fn range_count_many(&self, ranges: &[(K, K)]) -> Result<Vec<u32>> {
        self.runner.clear_status()?;
        let n = batch_len(ranges.len())?;
        if n == 0 {
            return Ok(Vec::new());
        }
        let stream = self.gpu.stream();
        let (lo, hi): (Vec<K>, Vec<K>) = ranges.iter().copied().unzip();
        let (lo, hi) = (stream.clone_htod(&lo)?, stream.clone_htod(&hi)?);
        let mut counts = stream.alloc_zeros::<u32>(n as usize)?;
        self.range_count_device(&lo, &hi, &mut counts)?;
        let counts = stream.clone_dtoh(&counts)?;
        self.check()?;
        Ok(counts)
    }

    /// The count pass on device buffers. Does not synchronize.
    pub fn range_count_device(
        &self,
        lo: &CudaSlice<K>,
        hi: &CudaSlice<K>,
        counts: &mut CudaSlice<u32>,
    ) -> Result<()> {
        let n = query_len(lo.len().min(hi.len()), counts.len(), usize::MAX)?;
        if n == 0 {
            return Ok(());
        }
        let r = self.device_ref();
        let shape = self.grid(&self.kernels.range_count, n as usize)?;
        let mut args = self
            .gpu
            .stream()
            .launch_builder(self.kernels.range_count.func());
        args.arg(&r).arg(lo).arg(hi).arg(&n).arg(counts);
        // SAFETY: lo, hi and counts hold at least n elements.
        unsafe { args.launch(shape) }?;
        Ok(())
    }

    /// The collect pass on device buffers: query i writes its pairs at `offsets[i]`, at
    /// most `counts[i]` of them (the count pass's results and their exclusive scan). Does
    /// not synchronize. Offsets and counts that pass the outputs' length are cut to it
    /// (nothing is written outside the outputs) and reported as `OUT_OF_BOUNDS` by
    /// [`GpuBTreeMap::check`].
    #[allow(clippy::too_many_arguments)]
    pub fn range_collect_device(
        &self,
        lo: &CudaSlice<K>,
        hi: &CudaSlice<K>,
        offsets: &CudaSlice<u32>,
        counts: &CudaSlice<u32>,
        out_keys: &mut CudaSlice<K>,
        out_values: &mut CudaSlice<V>,
    ) -> Result<()> {
        let n = query_len(
            lo.len().min(hi.len()),
            offsets.len().min(counts.len()),
            usize::MAX,
        )?;
        if n == 0 {
            return Ok(());
        }
        let r = self.device_ref();
        let shape = self.grid(&self.kernels.range_collect, n as usize)?;
        let mut args = self
            .gpu
            .stream()
            .launch_builder(self.kernels.range_collect.func());
        let out_len = out_keys.len().min(out_values.len()).min(u32::MAX as usize) as u32;
        args.arg(&r)
            .arg(lo)
            .arg(hi)
            .arg(&n)
            .arg(offsets)
            .arg(counts)
            .arg(out_keys)
            .arg(out_values)
            .arg(&out_len);
        // SAFETY: each query writes at most counts[i] pairs from offsets[i], cut by the
        // kernel to the outputs' length out_len.
        unsafe { args.launch(shape) }?;
        Ok(())
    }

    /// The one-pass collect for a known bound: query i writes its first pairs in key
    /// order, at most `cap`, to `out_keys` / `out_values` from index `i * cap`, and the
    /// number of pairs in its range to `counts[i]` (above `cap`: only `cap` written). No
    /// count pass, no scan. At most `u32::MAX` output pairs (`n * cap`) per call. Does not
    /// synchronize.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut tree = gpuds_btree::GpuBTreeMap::<u32, u32>::new(&gpu)?;
    /// tree.insert_many(&[1, 2, 3], &[10, 20, 30])?;
    /// let stream = gpu.stream();
    /// let (lo, hi) = (stream.clone_htod(&[1u32, 3])?, stream.clone_htod(&[3u32, 9])?);
    /// let (mut k, mut v) = (stream.alloc_zeros::<u32>(4)?, stream.alloc_zeros::<u32>(4)?);
    /// let mut counts = stream.alloc_zeros::<u32>(2)?;
    /// tree.range_collect_capped_device(&lo, &hi, 2, &mut k, &mut v, &mut counts)?;
    /// assert_eq!(stream.clone_dtoh(&counts)?, vec![3, 1]); // the first range is cut at 2
    /// assert_eq!(stream.clone_dtoh(&k)?[..3], [1, 2, 3]);
    /// # Ok::<(), gpuds_btree::Error>(())
    /// ```
    pub fn range_collect_capped_device(
        &self,
        lo: &CudaSlice<K>,
        hi: &CudaSlice<K>,
        cap: u32,
        out_keys: &mut CudaSlice<K>,
        out_values: &mut CudaSlice<V>,
        counts: &mut CudaSlice<u32>,
    ) -> Result<()> {
        let n = query_len(lo.len().min(hi.len()), counts.len(), usize::MAX)?;
        capped_room(n, cap, out_keys.len().min(out_values.len()))?;
        if n == 0 {
            return Ok(());
        }
        let r = self.device_ref();
        let kernel = &self.kernels.range_collect_capped;
        let shape = self.grid(kernel, n as usize)?;
        let mut args = self.gpu.stream().launch_builder(kernel.func());
        args.arg(&r)
            .arg(lo)
            .arg(hi)
            .arg(&n)
            .arg(&cap)
            .arg(out_keys)
            .arg(out_values)
            .arg(counts);
        // SAFETY: lo, hi and counts hold at least n elements, the outputs n * cap (checked).
        unsafe { args.launch(shape) }?;
        Ok(())
    }

    /// Every pair with `lo <= key <= hi` for each range, at most `cap` per range (the
    /// first in key order), in one pass; also returns each range's full count, so a
    /// count above `cap` shows a cut range. Synchronizes.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut tree = gpuds_btree::GpuBTreeMap::<u32, u32>::new(&gpu)?;
    /// tree.insert_many(&[1, 2, 3], &[10, 20, 30])?;
    /// let (ranges, counts) = tree.range_many_capped(&[(0, 9), (3, 3)], 2)?;
    /// assert_eq!(ranges.get(0), &[(1, 10), (2, 20)]);
    /// assert_eq!(counts, vec![3, 1]);
    /// # Ok::<(), gpuds_btree::Error>(())
    /// ```
    pub fn range_many_capped(
        &self,
        ranges: &[(K, K)],
        cap: u32,
    ) -> Result<(Ranges<K, V>, Vec<u32>)> {
        self.runner.clear_status()?;
        let n = batch_len(ranges.len())?;
        if n == 0 {
            return Ok((Ranges::new(vec![0], Vec::new()), Vec::new()));
        }
        let stream = self.gpu.stream();
        let (lo, hi): (Vec<K>, Vec<K>) = ranges.iter().copied().unzip();
        let (lo, hi) = (stream.clone_htod(&lo)?, stream.clone_htod(&hi)?);
        let room = capped_len(n, cap)?.max(1) as usize;
        let mut keys = stream.alloc_zeros::<K>(room)?;
        let mut values = stream.alloc_zeros::<V>(room)?;
        let mut counts = stream.alloc_zeros::<u32>(n as usize)?;
        self.range_collect_capped_device(&lo, &hi, cap, &mut keys, &mut values, &mut counts)?;
        let (keys, values) = (stream.clone_dtoh(&keys)?, stream.clone_dtoh(&values)?);
        let counts = stream.clone_dtoh(&counts)?;
        self.check()?;
        let mut starts = Vec::with_capacity(n as usize + 1);
        let mut pairs = Vec::new();
        for (i, &c) in counts.iter().enumerate() {
            starts.push(pairs.len());
            let from = i * cap as usize;
            let len = c.min(cap) as usize;
            pairs.extend(
                keys[from..from + len]
                    .iter()
                    .copied()
                    .zip(values[from..from + len].iter().copied()),
            );
        }
        starts.push(pairs.len());
        Ok((Ranges::new(starts, pairs), counts))
    }

    /// Every pair with `lo <= key <= hi` for each range, in key order: a count pass, an
    /// exclusive scan of the counts into per-query offsets, then a collect pass. A range
    /// with `lo > hi` is empty. Synchronizes.
    pub fn range_many(&self, ranges: &[(K, K)]) -> Result<Ranges<K, V>> {
        self.runner.clear_status()?;
        let n = batch_len(ranges.len())?;
        if n == 0 {
            return Ok(Ranges::new(vec![0], Vec::new()));
        }
        let stream = self.gpu.stream();
        let (lo, hi): (Vec<K>, Vec<K>) = ranges.iter().copied().unzip();
        let (lo, hi) = (stream.clone_htod(&lo)?, stream.clone_htod(&hi)?);
        let mut counts = stream.alloc_zeros::<u32>(n as usize)?;
        self.range_count_device(&lo, &hi, &mut counts)?;
        let mut offsets = stream.alloc_zeros::<u32>(n as usize)?;
        let counts_host = stream.clone_dtoh(&counts)?;
        let total: u64 = counts_host.iter().map(|&c| c as u64).sum();
        if total > u32::MAX as u64 {
            return Err(gpuds_core::Error::CapacityOverflow(format!(
                "the ranges hold {total} pairs; at most {} per call",
                u32::MAX
            ))
            .into());
        }
        exclusive_scan(&self.gpu, &counts, &mut offsets)?;
        let mut keys = stream.alloc_zeros::<K>(total.max(1) as usize)?;
        let mut values = stream.alloc_zeros::<V>(total.max(1) as usize)?;
        self.range_collect_device(&lo, &hi, &offsets, &counts, &mut keys, &mut values)?;
        let (keys, values) = (stream.clone_dtoh(&keys)?, stream.clone_dtoh(&values)?);
        self.check()?;
        let mut starts = Vec::with_capacity(n as usize + 1);
        let mut at = 0usize;
        for &c in &counts_host {
            starts.push(at);
            at += c as usize;
        }
        starts.push(at);
        let pairs = keys.into_iter().zip(values).take(at).collect();
        Ok(Ranges::new(starts, pairs))
    }
}
