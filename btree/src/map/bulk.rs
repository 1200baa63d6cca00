//! The bulk build (§3.4.1): sort, drop repeated keys, write the whole tree in one kernel.

use super::*;
use crate::validate::bulk_shape;
use gpuds_core::cudarc::driver::{CudaSlice, PushKernelArg};

impl<K: TreeKey, V: TreeValue> GpuBTreeMap<K, V> {
    /// Replaces the contents with the given pairs (for a repeated key the last pair
    /// wins): sorts them with the core radix sort and writes the whole tree in one kernel
    /// with [`BTreeConfig::bulk_fill`] pairs per node (scaled to the node's pairs,
    /// [`BTreeConfig::fill_for`]; §3.4.1). Synchronizes.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut tree = gpuds_btree::GpuBTreeMap::<u32, u32>::new(&gpu)?;
    /// tree.bulk_build(&[5, 3, 5, 1], &[50, 30, 51, 10])?;
    /// assert_eq!(tree.to_vec()?, vec![(1, 10), (3, 30), (5, 51)]);
    /// # Ok::<(), gpuds_btree::Error>(())
    /// ```
    pub fn bulk_build(&mut self, keys: &[K], values: &[V]) -> Result<()> {
        same_len(keys.len(), values.len(), "values")?;
        let stream = self.gpu.stream();
        let (mut k, mut v) = if keys.is_empty() {
            (stream.alloc_zeros::<K>(1)?, stream.alloc_zeros::<V>(1)?)
        } else {
            (stream.clone_htod(keys)?, stream.clone_htod(values)?)
        };
        if keys.is_empty() {
            return self.clear();
        }
        self.bulk_build_device(&mut k, &mut v)
    }

    /// [`GpuBTreeMap::bulk_build`] from device buffers, which it sorts in place.
    /// Synchronizes once (it reads the number of distinct keys); the build itself is one
    /// kernel with node addresses computed, not allocated. More than `u32::MAX` pairs (the
    /// kernels' counts) is a [`CapacityOverflow`](gpuds_core::Error::CapacityOverflow) with
    /// the tree unchanged; on another error the tree is left empty.
    pub fn bulk_build_device(
        &mut self,
        keys: &mut CudaSlice<K>,
        values: &mut CudaSlice<V>,
    ) -> Result<()> {
        batch_len(keys.len().max(values.len()))?;
        let result = self.try_bulk_build(keys, values);
        if result.is_err() {
            // A partial build is not a tree: start over empty (keep the first error).
            let _ = self.check();
            let _ = self.clear();
        }
        result
    }

    fn try_bulk_build(&mut self, keys: &mut CudaSlice<K>, values: &mut CudaSlice<V>) -> Result<()> {
        let n = same_len(keys.len(), values.len(), "values")?;
        if n == 0 {
            return self.clear();
        }
        let stream = self.gpu.stream().clone();
        self.sorter.sort_pairs(keys, values)?;
        // Count the repeated keys first (a read-only pass): without repeats, the common
        // case, the sorted buffers are the build's input and no compaction runs.
        let mut repeats = stream.alloc_zeros::<u32>(1)?;
        {
            let kernel = &self.kernels.count_repeats;
            let shape = self.gpu.grid_for(kernel, n as usize, BLOCK)?;
            let mut args = stream.launch_builder(kernel.func());
            args.arg(&*keys).arg(&n).arg(&mut repeats);
            // SAFETY: keys holds n elements; repeats one word.
            unsafe { args.launch(shape) }?;
        }
        let r = stream.clone_dtoh(&repeats)?.first().copied().unwrap_or(0);
        let m = n.saturating_sub(r);
        if r == 0 {
            let total = self.room_for_build(m)?;
            self.launch_build(keys, values, m, total, false)?;
            self.finish_build(total);
            return Ok(());
        }
        // SAFETY (all three): every element is written before it is read: flags by
        // btree_last_of_run, the first m of the outputs by the compactions, and the build
        // reads only those.
        let mut flags = unsafe { stream.alloc::<u32>(n as usize) }?;
        let mut unique_keys = unsafe { stream.alloc::<K>(m.max(1) as usize) }?;
        let mut unique_values = unsafe { stream.alloc::<V>(m.max(1) as usize) }?;
        {
            let shape = self
                .gpu
                .grid_for(&self.kernels.last_of_run, n as usize, BLOCK)?;
            let mut args = stream.launch_builder(self.kernels.last_of_run.func());
            args.arg(&*keys).arg(&n).arg(&mut flags);
            // SAFETY: keys and flags hold n elements.
            unsafe { args.launch(shape) }?;
        }
        self.scanner
            .compact(keys, &flags, &mut unique_keys, &mut repeats)?;
        self.scanner
            .compact(values, &flags, &mut unique_values, &mut repeats)?;
        let total = self.room_for_build(m)?;
        self.launch_build(&unique_keys, &unique_values, m, total, false)?;
        self.finish_build(total);
        Ok(())
    }

    /// Replaces the contents with `keys[i] -> values[i]`, keys already strictly increasing
    /// (checked on the device first: otherwise an invalid-argument error and the tree is
    /// unchanged): the bulk build without its sort. Synchronizes once, after the check
    /// and the build kernel (which writes nothing when the check failed). On another
    /// error the tree is left empty.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut tree = gpuds_btree::GpuBTreeMap::<u32, u32>::new(&gpu)?;
    /// let keys = gpu.stream().clone_htod(&[1u32, 5, 9])?;
    /// tree.bulk_build_sorted_device(&keys, &keys)?;
    /// assert_eq!(tree.len()?, 3);
    /// let unsorted = gpu.stream().clone_htod(&[5u32, 1])?;
    /// assert!(tree.bulk_build_sorted_device(&unsorted, &unsorted).is_err());
    /// assert_eq!(tree.len()?, 3);
    /// # Ok::<(), gpuds_btree::Error>(())
    /// ```
    pub fn bulk_build_sorted_device(
        &mut self,
        keys: &CudaSlice<K>,
        values: &CudaSlice<V>,
    ) -> Result<()> {
        let n = same_len(keys.len(), values.len(), "values")?;
        if n == 0 {
            return self.clear();
        }
        let result = self.try_bulk_build_sorted(keys, values, n);
        if let Err(e) = &result {
            if !matches!(e, Error::Core(gpuds_core::Error::InvalidArgument(_))) {
                let _ = self.check();
                let _ = self.clear();
            }
        }
        result
    }

    fn try_bulk_build_sorted(
        &mut self,
        keys: &CudaSlice<K>,
        values: &CudaSlice<V>,
        n: u32,
    ) -> Result<()> {
        // Room first: growing the pool keeps the old tree's units (nothing is lost when
        // the input then turns out unsorted).
        let total = self.room_for_build(n)?;
        let stream = self.gpu.stream().clone();
        if n > 1 {
            let kernel = &self.kernels.check_increasing;
            let shape = self.gpu.grid_for(kernel, n as usize, BLOCK)?;
            let mut status = self.runner.status();
            let mut args = stream.launch_builder(kernel.func());
            args.arg(keys).arg(&n).arg(status.slice_mut());
            // SAFETY: keys holds n elements; the status word one.
            unsafe { args.launch(shape) }?;
        }
        self.launch_build(keys, values, n, total, n > 1)?;
        let flags = self.runner.status().take()?;
        if flags.contains(gpuds_core::Status(UNSORTED_INPUT)) {
            // The build kernel saw the flag and wrote nothing: the tree is as it was.
            return Err(gpuds_core::Error::InvalidArgument(
                "bulk_build_sorted_device needs strictly increasing keys".into(),
            )
            .into());
        }
        self.finish_build(total);
        flags.into_result()?;
        Ok(())
    }

    /// Grows the pool, when needed, to hold a bulk build of `m` pairs (plus headroom for
    /// later insertions); returns the build's number of nodes.
    fn room_for_build(&mut self, m: u32) -> Result<u64> {
        let pairs = self.layout.pairs();
        let total = bulk_shape(m as u64, self.config.fill_for(pairs), pairs as u32).nodes();
        // Headroom as well as room: warps find free units quickly in a pool that is not full.
        let wanted = total + total / 4 + 1024;
        if self.runner.pool().capacity_units() < wanted {
            match self.runner.pool_mut().reserve_within_max(wanted) {
                Ok(()) | Err(gpuds_alloc::Error::PoolExhausted { .. }) => {}
                Err(e) => return Err(e.into()),
            }
            if self.runner.pool().capacity_units() < total {
                return Err(gpuds_alloc::Error::PoolExhausted {
                    needed: total,
                    capacity: self.runner.pool().capacity_units(),
                    max_units: self.config.max_nodes,
                }
                .into());
            }
        }
        Ok(total)
    }

    /// Enqueues `btree_bulk_build` (§3.4.1): the whole tree of `m` strictly increasing
    /// pairs, `total` nodes, in one kernel, into units [0, total) of the pool (claimed by
    /// the kernel itself, every other unit freed). With `gated` the kernel first reads the
    /// status word and writes nothing when `btree_check_increasing` flagged the input.
    fn launch_build(
        &self,
        keys: &CudaSlice<K>,
        values: &CudaSlice<V>,
        m: u32,
        total: u64,
        gated: bool,
    ) -> Result<()> {
        let stream = self.gpu.stream().clone();
        let r = self.device_ref();
        let gate: u64 = if gated { r.status } else { 0 };
        let fill = self.config.fill_for(self.layout.pairs());
        let kernel = &self.kernels.bulk_build;
        let words = self.runner.pool().capacity_units() / 32;
        // One lane per 16 bytes of node.
        let lanes = self.layout.node_bytes as u64 / 16;
        let threads = (total * lanes).max(words) as usize;
        let grid = self.gpu.grid_for(kernel, threads, BLOCK)?;
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&r)
            .arg(keys)
            .arg(values)
            .arg(&m)
            .arg(&fill)
            .arg(&total)
            .arg(&gate);
        // SAFETY: keys and values hold m elements; the pool holds at least `total` units
        // (room_for_build); gate is the tree's status word or null.
        unsafe { args.launch(grid) }?;
        Ok(())
    }

    /// The host's side of a finished bulk build of `total` nodes: the root is the last
    /// node of the run, linear index total - 1.
    fn finish_build(&mut self, total: u64) {
        let last = total.saturating_sub(1) as u32;
        let log = self.runner.pool().device_ref().log_blocks_per_super;
        self.root = gpuds_alloc::address::address(
            last >> gpuds_alloc::address::UNIT_BITS,
            last & (gpuds_alloc::address::UNITS_PER_BLOCK - 1),
            log,
        );
        self.runner.set_used(total);
    }
}
