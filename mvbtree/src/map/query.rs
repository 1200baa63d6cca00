//! Queries of the newest state and at a snapshot: the synchronizing forms, each the
//! matching `_device` form (see `device.rs`) between host copies.

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
        self.find_at(None, keys)
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
        self.find_at(Some(snap), keys)
    }

    /// [`VersionedBTreeMap::get_many_at_device`] on host keys.
    fn find_at(&self, snap: Option<&Snapshot>, keys: &[K]) -> Result<Vec<Option<V>>> {
        self.read_ts(snap)?;
        let n = batch_len(keys.len())? as usize;
        if n == 0 {
            return Ok(Vec::new());
        }
        self.runner.clear_status()?;
        let stream = self.gpu.stream();
        let k = stream.clone_htod(keys)?;
        let mut values = stream.alloc_zeros::<V>(n)?;
        let mut found = stream.alloc_zeros::<u32>(n)?;
        self.get_many_at_device(snap, &k, &mut values, &mut found)?;
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
        self.read_ts(Some(snap))?;
        let n = batch_len(keys.len())? as usize;
        if n == 0 {
            return Ok(Vec::new());
        }
        self.runner.clear_status()?;
        let stream = self.gpu.stream();
        let k = stream.clone_htod(keys)?;
        let mut out_k = stream.alloc_zeros::<K>(n)?;
        let mut out_v = stream.alloc_zeros::<V>(n)?;
        let mut found = stream.alloc_zeros::<u32>(n)?;
        self.successor_many_at_device(Some(snap), &k, &mut out_k, &mut out_v, &mut found)?;
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
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = gpuds_mvbtree::VersionedBTreeMap::<u32, u32>::new(&gpu)?;
    /// map.insert_many(&[1, 5, 9], &[10, 50, 90])?;
    /// let s = map.snapshot()?;
    /// map.remove_many(&[5])?;
    /// assert_eq!(map.range_count_many_at(&s, &[(0, 5), (6, 1)])?, vec![2, 0]);
    /// # Ok::<(), gpuds_mvbtree::Error>(())
    /// ```
    pub fn range_count_many_at(&self, snap: &Snapshot, ranges: &[(K, K)]) -> Result<Vec<u32>> {
        self.read_ts(Some(snap))?;
        self.runner.clear_status()?;
        let counts = match self.range_counts(Some(snap), ranges)? {
            Some((_, _, c)) => self.gpu.stream().clone_dtoh(&c)?,
            None => Vec::new(),
        };
        self.query_status()?;
        Ok(counts)
    }

    /// The pairs of each inclusive range `(lo, hi)` at the snapshot, in key order
    /// (empty when `lo > hi`): a linearizable range query. A count pass, then a collect
    /// pass into exactly as many slots. Synchronizes.
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
        self.read_ts(Some(snap))?;
        self.runner.clear_status()?;
        let Some((lo, hi, counts)) = self.range_counts(Some(snap), ranges)? else {
            return Ok(Vec::new());
        };
        let counts = self.gpu.stream().clone_dtoh(&counts)?;
        let offsets = RangeOffsets::from_counts(&self.gpu, &counts)?;
        let (keys, values) = self.collect_into(Some(snap), &lo, &hi, &offsets)?;
        self.query_status()?;
        let mut from = 0usize;
        Ok(counts
            .iter()
            .map(|&c| {
                let range = from..from + c as usize;
                from = range.end;
                range.map(|i| (keys[i], values[i])).collect()
            })
            .collect())
    }

    /// The pairs of each inclusive range `(lo, hi)` at the snapshot, at most `cap` per
    /// range (the first in key order), and each range's full count, so that a count above
    /// `cap` shows a cut range (the shape of `GpuBTreeMap::range_many_capped`):
    /// [`VersionedBTreeMap::range_many_capped_at_device`] on host ranges. Synchronizes.
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
        self.read_ts(Some(snap))?;
        let n = batch_len(ranges.len())?;
        let slots = capped_len(n, cap)?;
        if n == 0 {
            return Ok((Vec::new(), Vec::new()));
        }
        self.runner.clear_status()?;
        let stream = self.gpu.stream();
        let (lo, hi) = self.upload_ranges(ranges)?;
        let mut keys = stream.alloc_zeros::<K>(slots.max(1) as usize)?;
        let mut values = stream.alloc_zeros::<V>(slots.max(1) as usize)?;
        let mut counts = stream.alloc_zeros::<u32>(n as usize)?;
        self.range_many_capped_at_device(
            Some(snap),
            &lo,
            &hi,
            cap,
            &mut keys,
            &mut values,
            &mut counts,
        )?;
        let counts = stream.clone_dtoh(&counts)?;
        let (keys, values) = (stream.clone_dtoh(&keys)?, stream.clone_dtoh(&values)?);
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

    /// [`VersionedBTreeMap::range_collect_at_device`] into fresh buffers of the offsets'
    /// total; the keys and values, on the host.
    fn collect_into(
        &self,
        snap: Option<&Snapshot>,
        lo: &CudaSlice<K>,
        hi: &CudaSlice<K>,
        offsets: &RangeOffsets,
    ) -> Result<(Vec<K>, Vec<V>)> {
        let stream = self.gpu.stream();
        let total = offsets.total().max(1) as usize;
        let mut keys = stream.alloc_zeros::<K>(total)?;
        let mut values = stream.alloc_zeros::<V>(total)?;
        self.range_collect_at_device(snap, lo, hi, offsets, &mut keys, &mut values)?;
        Ok((stream.clone_dtoh(&keys)?, stream.clone_dtoh(&values)?))
    }

    /// [`VersionedBTreeMap::range_count_many_at_device`] on host ranges: (lo, hi, counts)
    /// on the device, None for no ranges.
    #[allow(clippy::type_complexity)]
    fn range_counts(
        &self,
        snap: Option<&Snapshot>,
        ranges: &[(K, K)],
    ) -> Result<Option<(CudaSlice<K>, CudaSlice<K>, CudaSlice<u32>)>> {
        let n = batch_len(ranges.len())? as usize;
        if n == 0 {
            return Ok(None);
        }
        let (lo, hi) = self.upload_ranges(ranges)?;
        let mut counts = self.gpu.stream().alloc_zeros::<u32>(n)?;
        self.range_count_many_at_device(snap, &lo, &hi, &mut counts)?;
        Ok(Some((lo, hi, counts)))
    }

    /// The ranges' lower and upper bounds, copied to the device.
    fn upload_ranges(&self, ranges: &[(K, K)]) -> Result<(CudaSlice<K>, CudaSlice<K>)> {
        let stream = self.gpu.stream();
        let (lo, hi): (Vec<K>, Vec<K>) = ranges.iter().copied().unzip();
        Ok((stream.clone_htod(&lo)?, stream.clone_htod(&hi)?))
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

    /// The status after a query: reads and clears the words.
    fn query_status(&self) -> Result<()> {
        let flags = self.runner.take_status()?;
        if flags.is_ok() {
            Ok(())
        } else {
            Err(gpuds_core::Error::Status(flags).into())
        }
    }
}
