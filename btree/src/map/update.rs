//! Insertions and removals.

use super::*;
use batch::keyed_on_host;
use gpuds_core::cudarc::driver::{CudaSlice, PushKernelArg};
use gpuds_core::failures::indices;

impl<K: TreeKey, V: TreeValue> GpuBTreeMap<K, V> {
    /// Inserts `(keys[i], values[i])` for every i; an existing key's value is replaced
    /// (when a key repeats in the batch, one of its values wins). Synchronizes.
    ///
    /// When the pool runs out of nodes below [`BTreeConfig::max_nodes`], it is grown and
    /// the insertions that failed run again. At the maximum the call fails with
    /// [`gpuds_core::Error::NotApplied`] (flag `POOL_EXHAUSTED`, see
    /// [`Error::is_pool_exhausted`]) naming exactly the pairs that were not inserted;
    /// every other pair was, and the tree is valid. Near the limit even a key that is
    /// present may fail to be updated: an insertion splits every full node on its path
    /// (proactive splitting).
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut tree = gpuds_btree::GpuBTreeMap::<u32, u32>::new(&gpu)?;
    /// tree.insert_many(&[3, 1, 2], &[30, 10, 20])?;
    /// tree.insert_many(&[1], &[11])?;
    /// assert_eq!(tree.to_vec()?, vec![(1, 11), (2, 20), (3, 30)]);
    /// # Ok::<(), gpuds_btree::Error>(())
    /// ```
    pub fn insert_many(&mut self, keys: &[K], values: &[V]) -> Result<()> {
        same_len(keys.len(), values.len(), "values")?;
        if keys.is_empty() {
            return Ok(());
        }
        let stream = self.gpu.stream().clone();
        self.run_growing(|tree, at| {
            let (k, v) = (picked(keys, at), picked(values, at));
            let (k, v) = (stream.clone_htod(&*k)?, stream.clone_htod(&*v)?);
            let failed = tree.launch_insert(&k, &v)?;
            let flags = tree.runner.take_status()?;
            let bits = if flags.is_ok() {
                Vec::new()
            } else {
                stream.clone_dtoh(&failed)?
            };
            Ok((flags, indices(&bits, k.len())))
        })
    }

    /// [`GpuBTreeMap::insert_many`] from device buffers. Does not synchronize unless the
    /// pool must grow; call [`GpuBTreeMap::check`] to see the status. It does not retry:
    /// when its nodes run out below the pool's maximum (see [`BTreeConfig::max_nodes`]),
    /// `check` reports a pool-exhausted error and some pairs were not inserted; insert
    /// them again, or use [`GpuBTreeMap::insert_many`], which grows the pool and retries.
    pub fn insert_many_device(&mut self, keys: &CudaSlice<K>, values: &CudaSlice<V>) -> Result<()> {
        self.launch_insert(keys, values).map(drop)
    }

    /// Launches the batched insertion; returns its failed bits (one per request).
    fn launch_insert(
        &mut self,
        keys: &CudaSlice<K>,
        values: &CudaSlice<V>,
    ) -> Result<CudaSlice<u32>> {
        let n = same_len(keys.len(), values.len(), "values")?;
        let stream = self.gpu.stream().clone();
        let words = (n as usize).div_ceil(32);
        let mut failed = stream.alloc_zeros::<u32>(words.max(1))?;
        if n == 0 {
            return Ok(failed);
        }
        self.runner
            .ensure_room(split_bound(n as usize, self.layout.pairs()))?;
        let mut replaced = stream.alloc_zeros::<u32>(words)?;
        let r = self.device_ref();
        let shape = self.grid(&self.kernels.insert, n as usize)?;
        let mut args = stream.launch_builder(self.kernels.insert.func());
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

    /// Removes each key; returns the removed values. Nodes are never merged (§3.4.4).
    /// Synchronizes.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut tree = gpuds_btree::GpuBTreeMap::<u32, u32>::new(&gpu)?;
    /// tree.insert_many(&[1, 2], &[10, 20])?;
    /// assert_eq!(tree.remove_many(&[2, 3])?, vec![Some(20), None]);
    /// assert_eq!(tree.len()?, 1);
    /// # Ok::<(), gpuds_btree::Error>(())
    /// ```
    ///
    /// A removal that passes `max_steps` fails and changes nothing: the call then returns
    /// [`gpuds_core::Error::NotApplied`] naming exactly those keys; every other removal
    /// took effect.
    pub fn remove_many(&mut self, keys: &[K]) -> Result<Vec<Option<V>>> {
        self.runner.clear_status()?;
        let gpu = self.gpu.clone();
        let mut failed = None;
        let values = keyed_on_host(&gpu, keys, |k, v, f| {
            failed = Some(self.launch_keyed(&self.kernels.remove, k, v, f, true)?);
            Ok(())
        })?;
        let flags = self.runner.take_status()?;
        if flags.is_ok() {
            return Ok(values);
        }
        let bits = match failed {
            Some(f) => gpu.stream().clone_dtoh(&f)?,
            None => Vec::new(),
        };
        Err(self.runner.failure(flags, indices(&bits, keys.len())))
    }

    /// [`GpuBTreeMap::remove_many`] on device buffers: removed values and removed bits.
    /// Does not synchronize; [`GpuBTreeMap::check`] reports a removal that failed.
    pub fn remove_many_device(
        &mut self,
        keys: &CudaSlice<K>,
        old_values: &mut CudaSlice<V>,
        removed: &mut CudaSlice<u32>,
    ) -> Result<()> {
        self.launch_keyed(&self.kernels.remove, keys, old_values, removed, true)
            .map(drop)
    }
}
