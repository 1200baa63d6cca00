//! Queries of the newest state and at a snapshot.

use super::*;

impl<K: TreeKey, V: TreeValue> VersionedBTreeMap<K, V> {
    /// The value of each key in the newest state. Synchronizes.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = gpuds_mvbtree::VersionedBTreeMap::<u32, u32>::new(&gpu)?;
    /// map.insert_many(&[1], &[10])?;
    /// assert_eq!(map.get_many(&[1, 2])?, vec![Some(10), None]);
    /// # Ok::<(), gpuds_mvbtree::Error>(())
    /// ```
    pub fn get_many(&self, keys: &[K]) -> Result<Vec<Option<V>>> {
        self.find_at(LATEST, keys)
    }

    /// The value of each key at the snapshot. Synchronizes.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = gpuds_mvbtree::VersionedBTreeMap::<u32, u32>::new(&gpu)?;
    /// map.insert_many(&[1], &[10])?;
    /// let s = map.snapshot()?;
    /// map.insert_many(&[1], &[11])?;
    /// assert_eq!(map.get_many_at(&s, &[1])?, vec![Some(10)]);
    /// # Ok::<(), gpuds_mvbtree::Error>(())
    /// ```
    pub fn get_many_at(&self, snap: &Snapshot, keys: &[K]) -> Result<Vec<Option<V>>> {
        self.find_at(at(&self.snapshots, snap)?, keys)
    }

    fn find_at(&self, ts: u32, keys: &[K]) -> Result<Vec<Option<V>>> {
        let n = batch_len(keys.len())?;
        if n == 0 {
            return Ok(Vec::new());
        }
        self.clear_status()?;
        let stream = self.gpu.stream();
        let k = stream.clone_htod(keys)?;
        let mut values = stream.alloc_zeros::<V>(n as usize)?;
        let mut found = stream.alloc_zeros::<u32>(n as usize)?;
        let r = self.device_ref(Updates::InPlace);
        let shape = self.query_grid(&self.kernels.find, n as usize)?;
        let mut args = stream.launch_builder(self.kernels.find.func());
        args.arg(&r)
            .arg(&ts)
            .arg(&k)
            .arg(&n)
            .arg(&mut values)
            .arg(&mut found);
        // SAFETY: keys, values and found hold n elements.
        unsafe { args.launch(shape) }?;
        let (values, found) = (stream.clone_dtoh(&values)?, stream.clone_dtoh(&found)?);
        self.query_status()?;
        Ok(values
            .into_iter()
            .zip(found)
            .map(|(v, f)| (f != 0).then_some(v))
            .collect())
    }

    /// For each key, the first pair with a greater key at the snapshot. Synchronizes.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = gpuds_mvbtree::VersionedBTreeMap::<u32, u32>::new(&gpu)?;
    /// map.insert_many(&[5, 9], &[50, 90])?;
    /// let s = map.snapshot()?;
    /// map.remove_many(&[9])?;
    /// assert_eq!(map.successor_many_at(&s, &[5, 9])?, vec![Some((9, 90)), None]);
    /// # Ok::<(), gpuds_mvbtree::Error>(())
    /// ```
    pub fn successor_many_at(&self, snap: &Snapshot, keys: &[K]) -> Result<Vec<Option<(K, V)>>> {
        let ts = at(&self.snapshots, snap)?;
        let n = batch_len(keys.len())?;
        if n == 0 {
            return Ok(Vec::new());
        }
        self.clear_status()?;
        let stream = self.gpu.stream();
        let k = stream.clone_htod(keys)?;
        let mut out_k = stream.alloc_zeros::<K>(n as usize)?;
        let mut out_v = stream.alloc_zeros::<V>(n as usize)?;
        let mut found = stream.alloc_zeros::<u32>(n as usize)?;
        let r = self.device_ref(Updates::InPlace);
        let shape = self.query_grid(&self.kernels.successor, n as usize)?;
        let mut args = stream.launch_builder(self.kernels.successor.func());
        args.arg(&r)
            .arg(&ts)
            .arg(&k)
            .arg(&n)
            .arg(&mut out_k)
            .arg(&mut out_v)
            .arg(&mut found);
        // SAFETY: every buffer holds n elements.
        unsafe { args.launch(shape) }?;
        let (ks, vs, found) = (
            stream.clone_dtoh(&out_k)?,
            stream.clone_dtoh(&out_v)?,
            stream.clone_dtoh(&found)?,
        );
        self.query_status()?;
        Ok(ks
            .into_iter()
            .zip(vs)
            .zip(found)
            .map(|(kv, f)| (f != 0).then_some(kv))
            .collect())
    }

    /// The number of keys in each inclusive range `(lo, hi)` at the snapshot (0 when
    /// `lo > hi`). Synchronizes.
    pub fn range_count_many_at(&self, snap: &Snapshot, ranges: &[(K, K)]) -> Result<Vec<u32>> {
        let ts = at(&self.snapshots, snap)?;
        self.clear_status()?;
        let counts = self.range_counts(ts, ranges)?;
        let counts = match counts {
            Some((_, _, c)) => self.gpu.stream().clone_dtoh(&c)?,
            None => Vec::new(),
        };
        self.query_status()?;
        Ok(counts)
    }

    /// The pairs of each inclusive range `(lo, hi)` at the snapshot, in key order
    /// (empty when `lo > hi`): a linearizable range query. Synchronizes.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = gpuds_mvbtree::VersionedBTreeMap::<u32, u32>::new(&gpu)?;
    /// map.insert_many(&[1, 5, 9], &[10, 50, 90])?;
    /// let s = map.snapshot()?;
    /// map.insert_many(&[2], &[20])?;
    /// assert_eq!(map.range_many_at(&s, &[(0, 5), (6, 1)])?, vec![vec![(1, 10), (5, 50)], vec![]]);
    /// # Ok::<(), gpuds_mvbtree::Error>(())
    /// ```
    pub fn range_many_at(&self, snap: &Snapshot, ranges: &[(K, K)]) -> Result<Vec<Vec<(K, V)>>> {
        let ts = at(&self.snapshots, snap)?;
        self.ranges_at(ts, ranges)
    }

    /// Counts, then collects, the ranges at `ts`.
    pub(super) fn ranges_at(&self, ts: u32, ranges: &[(K, K)]) -> Result<Vec<Vec<(K, V)>>> {
        self.clear_status()?;
        let Some((lo, hi, counts)) = self.range_counts(ts, ranges)? else {
            return Ok(Vec::new());
        };
        let counts = self.gpu.stream().clone_dtoh(&counts)?;
        let mut offsets = Vec::with_capacity(counts.len() + 1);
        let mut total = 0u64;
        offsets.push(0u64);
        for &c in &counts {
            total += c as u64;
            offsets.push(total);
        }
        let (keys, values) = self.collect_into(ts, &lo, &hi, &offsets)?;
        self.query_status()?;
        Ok(offsets
            .windows(2)
            .map(|w| {
                (w[0] as usize..w[1] as usize)
                    .map(|i| (keys[i], values[i]))
                    .collect()
            })
            .collect())
    }

    /// The pairs of each inclusive range `(lo, hi)` at the snapshot, at most `cap` per
    /// range (the first in key order), and each range's full count, so that a count above
    /// `cap` shows a cut range (the shape of `GpuBTreeMap::range_many_capped`). A count
    /// pass, then a collect pass into `cap` slots per range. Synchronizes.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = gpuds_mvbtree::VersionedBTreeMap::<u32, u32>::new(&gpu)?;
    /// map.insert_many(&[1, 2, 3], &[10, 20, 30])?;
    /// let s = map.snapshot()?;
    /// map.remove_many(&[1])?;
    /// let (ranges, counts) = map.range_many_capped_at(&s, &[(0, 9), (3, 3)], 2)?;
    /// assert_eq!(ranges, vec![vec![(1, 10), (2, 20)], vec![(3, 30)]]);
    /// assert_eq!(counts, vec![3, 1]);
    /// # Ok::<(), gpuds_mvbtree::Error>(())
    /// ```
    #[allow(clippy::type_complexity)]
    pub fn range_many_capped_at(
        &self,
        snap: &Snapshot,
        ranges: &[(K, K)],
        cap: u32,
    ) -> Result<(Vec<Vec<(K, V)>>, Vec<u32>)> {
        let ts = at(&self.snapshots, snap)?;
        let n = batch_len(ranges.len())? as u64;
        let slots = n * cap as u64;
        if slots > u32::MAX as u64 {
            return Err(gpuds_core::Error::CapacityOverflow(format!(
                "{n} ranges of capacity {cap} need {slots} output pairs; at most {} per call",
                u32::MAX
            ))
            .into());
        }
        self.clear_status()?;
        let Some((lo, hi, counts)) = self.range_counts(ts, ranges)? else {
            return Ok((Vec::new(), Vec::new()));
        };
        let counts = self.gpu.stream().clone_dtoh(&counts)?;
        let offsets: Vec<u64> = (0..=n).map(|i| i * cap as u64).collect();
        let (keys, values) = self.collect_into(ts, &lo, &hi, &offsets)?;
        self.query_status()?;
        let pairs = counts
            .iter()
            .enumerate()
            .map(|(i, &c)| {
                let from = i * cap as usize;
                (from..from + c.min(cap) as usize)
                    .map(|j| (keys[j], values[j]))
                    .collect()
            })
            .collect();
        Ok((pairs, counts))
    }

    /// The collect pass at `ts`: range i writes its first `offsets[i + 1] - offsets[i]`
    /// pairs from `offsets[i]`; the keys and values, on the host.
    fn collect_into(
        &self,
        ts: u32,
        lo: &CudaSlice<K>,
        hi: &CudaSlice<K>,
        offsets: &[u64],
    ) -> Result<(Vec<K>, Vec<V>)> {
        let stream = self.gpu.stream();
        let n = (offsets.len() - 1) as u32;
        let total = offsets.last().copied().unwrap_or(0);
        let d_offsets = stream.clone_htod(offsets)?;
        let mut keys = stream.alloc_zeros::<K>(total.max(1) as usize)?;
        let mut values = stream.alloc_zeros::<V>(total.max(1) as usize)?;
        let r = self.device_ref(Updates::InPlace);
        let shape = self.query_grid(&self.kernels.range_collect, n as usize)?;
        let mut args = stream.launch_builder(self.kernels.range_collect.func());
        args.arg(&r)
            .arg(&ts)
            .arg(lo)
            .arg(hi)
            .arg(&n)
            .arg(&d_offsets)
            .arg(&mut keys)
            .arg(&mut values);
        // SAFETY: lo and hi hold n elements, offsets n + 1, keys and values the total.
        unsafe { args.launch(shape) }?;
        Ok((stream.clone_dtoh(&keys)?, stream.clone_dtoh(&values)?))
    }

    /// Launches the range counts at `ts`: (lo, hi, counts) on the device, None for no
    /// ranges.
    #[allow(clippy::type_complexity)]
    fn range_counts(
        &self,
        ts: u32,
        ranges: &[(K, K)],
    ) -> Result<Option<(CudaSlice<K>, CudaSlice<K>, CudaSlice<u32>)>> {
        let n = batch_len(ranges.len())?;
        if n == 0 {
            return Ok(None);
        }
        let stream = self.gpu.stream();
        let lo: Vec<K> = ranges.iter().map(|r| r.0).collect();
        let hi: Vec<K> = ranges.iter().map(|r| r.1).collect();
        let (lo, hi) = (stream.clone_htod(&lo)?, stream.clone_htod(&hi)?);
        let mut counts = stream.alloc_zeros::<u32>(n as usize)?;
        let r = self.device_ref(Updates::InPlace);
        let shape = self.query_grid(&self.kernels.range_count, n as usize)?;
        let mut args = stream.launch_builder(self.kernels.range_count.func());
        args.arg(&r)
            .arg(&ts)
            .arg(&lo)
            .arg(&hi)
            .arg(&n)
            .arg(&mut counts);
        // SAFETY: lo, hi and counts hold n elements.
        unsafe { args.launch(shape) }?;
        Ok(Some((lo, hi, counts)))
    }

    /// Every pair of the newest state in key order, read from a host copy of the node
    /// pool (which is checked on the way: see [`crate::validate::walk_at`]). Synchronizes.
    pub fn to_vec(&self) -> Result<Vec<(K, V)>> {
        self.pairs_at(LATEST)
    }

    /// Every pair at the snapshot, in key order, read from a host copy of the node pool.
    /// Synchronizes.
    pub fn to_vec_at(&self, snap: &Snapshot) -> Result<Vec<(K, V)>> {
        self.pairs_at(at(&self.snapshots, snap)?)
    }

    /// A grid of whole warps for `n` query requests.
    fn query_grid(&self, kernel: &Kernel, n: usize) -> Result<LaunchConfig> {
        self.grid(kernel, n)
    }

    /// The status after a query: reads and clears the words.
    fn query_status(&self) -> Result<()> {
        let flags = self.take_status()?;
        if flags.is_ok() {
            Ok(())
        } else {
            Err(gpuds_core::Error::Status(flags).into())
        }
    }
}
