//! Insertions and removals.

use super::*;
use gpuds_btree::runner::picked;
use gpuds_core::failures::indices;

impl<K: TreeKey, V: TreeValue> VersionedBTreeMap<K, V> {
    /// Inserts `(keys[i], values[i])` for every i in the newest state, in place
    /// ([`Updates::InPlace`]): a node a live snapshot can see is copied once first, other
    /// nodes are changed in place. An existing key's value is replaced (when a key repeats
    /// in the batch, one of its values wins). Synchronizes; then runs the version
    /// collector when versions may have become free.
    ///
    /// When the pool runs out of nodes below [`BTreeConfig::max_nodes`] it is grown and
    /// the insertions that failed run again; at the maximum the call fails with
    /// [`gpuds_core::Error::NotApplied`] naming exactly the pairs not inserted, and the
    /// tree (every version of it) stays valid.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = gpuds_mvbtree::VersionedBTreeMap::<u32, u32>::new(&gpu)?;
    /// map.insert_many(&[3, 1, 2], &[30, 10, 20])?;
    /// assert_eq!(map.to_vec()?, vec![(1, 10), (2, 20), (3, 30)]);
    /// # Ok::<(), gpuds_mvbtree::Error>(())
    /// ```
    pub fn insert_many(&mut self, keys: &[K], values: &[V]) -> Result<()> {
        self.insert_many_with(keys, values, Updates::InPlace)
    }

    /// [`VersionedBTreeMap::insert_many`] with the update mode given:
    /// [`Updates::OutOfPlace`] makes a new version of every leaf it changes (VoB-Tree).
    pub fn insert_many_with(&mut self, keys: &[K], values: &[V], mode: Updates) -> Result<()> {
        same_len(keys.len(), values.len(), "values")?;
        if keys.is_empty() {
            return Ok(());
        }
        let stream = self.gpu.stream().clone();
        self.run_growing(|map, at| {
            let k = stream.clone_htod(&*picked(keys, at))?;
            let v = stream.clone_htod(&*picked(values, at))?;
            let failed = map.launch_insert(&k, &v, mode)?;
            let flags = map.runner.take_status()?;
            let bits = if flags.is_ok() {
                Vec::new()
            } else {
                stream.clone_dtoh(&failed)?
            };
            Ok((flags, indices(&bits, k.len())))
        })
    }

    /// [`VersionedBTreeMap::insert_many_with`] from device buffers. Does not synchronize
    /// unless the pool must grow, does not retry and does not collect versions: call
    /// [`VersionedBTreeMap::check`] for the status and
    /// [`VersionedBTreeMap::collect_versions`] to free versions.
    pub fn insert_many_device(
        &mut self,
        keys: &CudaSlice<K>,
        values: &CudaSlice<V>,
        mode: Updates,
    ) -> Result<()> {
        self.launch_insert(keys, values, mode).map(drop)
    }

    /// Launches the batched insertion; returns its failed bits (one per request).
    fn launch_insert(
        &mut self,
        keys: &CudaSlice<K>,
        values: &CudaSlice<V>,
        mode: Updates,
    ) -> Result<CudaSlice<u32>> {
        let n = same_len(keys.len(), values.len(), "values")?;
        let stream = self.gpu.stream().clone();
        let words = (n as usize).div_ceil(32).max(1);
        let mut failed = stream.alloc_zeros::<u32>(words)?;
        if n == 0 {
            return Ok(failed);
        }
        self.ensure_room(self.update_bound(n as usize, mode))?;
        let mut replaced = stream.alloc_zeros::<u32>(words)?;
        let r = self.tree_ref(mode);
        // No version can be made (in place, no live snapshot): the kernel without copies.
        let kernel = if self.makes_versions(mode) {
            &self.kernels.insert
        } else {
            &self.kernels.insert_plain
        };
        let shape = self.grid(kernel, n as usize)?;
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&r)
            .arg(keys)
            .arg(values)
            .arg(&n)
            .arg(&mut replaced)
            .arg(&mut failed);
        // SAFETY: keys and values hold n elements; replaced and failed ceil(n / 32) words.
        unsafe { args.launch(shape) }?;
        Ok(failed)
    }

    /// Whether updates in `mode` may copy nodes as older versions: out of place, or in
    /// place while a snapshot is live (the device's copy rule then has a threshold).
    fn makes_versions(&self, mode: Updates) -> bool {
        mode == Updates::OutOfPlace || self.snapshots.bounds().is_some()
    }

    /// Units a batch of `n` updates may take.
    fn update_bound(&self, n: usize, mode: Updates) -> u64 {
        let copies = self.makes_versions(mode);
        node_bound(n, crate::node::pairs_per_node(self.layout), copies)
    }

    /// Removes each key from the newest state (in place, as
    /// [`VersionedBTreeMap::insert_many`]); returns the removed values. Nodes are never
    /// merged. Synchronizes; then runs the version collector when due.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = gpuds_mvbtree::VersionedBTreeMap::<u32, u32>::new(&gpu)?;
    /// map.insert_many(&[1, 2], &[10, 20])?;
    /// assert_eq!(map.remove_many(&[2, 3])?, vec![Some(20), None]);
    /// # Ok::<(), gpuds_mvbtree::Error>(())
    /// ```
    pub fn remove_many(&mut self, keys: &[K]) -> Result<Vec<Option<V>>> {
        self.remove_many_with(keys, Updates::InPlace)
    }

    /// [`VersionedBTreeMap::remove_many`] with the update mode given. A removal that
    /// needs a unit for a copy when the pool is at its maximum, or passes `max_steps`,
    /// fails and changes nothing: the call then returns
    /// [`gpuds_core::Error::NotApplied`] naming exactly those keys.
    pub fn remove_many_with(&mut self, keys: &[K], mode: Updates) -> Result<Vec<Option<V>>> {
        let n = batch_len(keys.len())? as usize;
        if n == 0 {
            return Ok(Vec::new());
        }
        let stream = self.gpu.stream().clone();
        let k = stream.clone_htod(keys)?;
        let mut result = vec![None; n];
        self.run_growing(|map, at| {
            // Later rounds rerun only the removals that failed (every other one took effect).
            let (k, idx): (CudaSlice<K>, Vec<usize>) = match at {
                None => (k.clone(), (0..n).collect()),
                Some(at) => (
                    stream.clone_htod(&at.iter().map(|&i| keys[i]).collect::<Vec<_>>())?,
                    at.to_vec(),
                ),
            };
            let m = k.len();
            let mut v = stream.alloc_zeros::<V>(m)?;
            let mut r = stream.alloc_zeros::<u32>(m.div_ceil(32))?;
            let failed = map.launch_erase(&k, &mut v, &mut r, mode)?;
            let flags = map.runner.take_status()?;
            let (v, r) = (stream.clone_dtoh(&v)?, stream.clone_dtoh(&r)?);
            for (j, &i) in idx.iter().enumerate() {
                if r[j / 32] >> (j % 32) & 1 == 1 {
                    result[i] = Some(v[j]);
                }
            }
            let bits = if flags.is_ok() {
                Vec::new()
            } else {
                stream.clone_dtoh(&failed)?
            };
            Ok((flags, indices(&bits, m)))
        })?;
        Ok(result)
    }

    /// [`VersionedBTreeMap::remove_many_with`] on device buffers: removed values and
    /// removed bits. Does not synchronize, retry or collect versions.
    pub fn remove_many_device(
        &mut self,
        keys: &CudaSlice<K>,
        old_values: &mut CudaSlice<V>,
        removed: &mut CudaSlice<u32>,
        mode: Updates,
    ) -> Result<()> {
        self.launch_erase(keys, old_values, removed, mode).map(drop)
    }

    /// Launches the batched removal; returns its failed bits.
    fn launch_erase(
        &mut self,
        keys: &CudaSlice<K>,
        old_values: &mut CudaSlice<V>,
        removed: &mut CudaSlice<u32>,
        mode: Updates,
    ) -> Result<CudaSlice<u32>> {
        let n = batch_len(keys.len())?;
        let words = (n as usize).div_ceil(32);
        if old_values.len() < n as usize || removed.len() < words {
            return Err(gpuds_core::Error::InvalidArgument(format!(
                "{n} removals need {n} values and {words} bit words"
            ))
            .into());
        }
        let stream = self.gpu.stream().clone();
        let mut failed = stream.alloc_zeros::<u32>(words.max(1))?;
        if n == 0 {
            return Ok(failed);
        }
        let copies = self.makes_versions(mode);
        self.ensure_room(if copies { n as u64 + 64 } else { 0 })?;
        let r = self.tree_ref(mode);
        // No version can be made (in place, no live snapshot): the 16-lane removal kernel.
        let kernel = if copies {
            &self.kernels.erase
        } else {
            &self.kernels.erase_plain
        };
        let shape = self.grid(kernel, n as usize)?;
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&r)
            .arg(keys)
            .arg(&n)
            .arg(old_values)
            .arg(removed)
            .arg(&mut failed);
        // SAFETY: keys hold n elements, old_values n, removed and failed ceil(n / 32) words.
        unsafe { args.launch(shape) }?;
        Ok(failed)
    }
}
