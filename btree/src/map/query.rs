//! Phased lookups and successor queries, and the per-key launch removals share.

use super::*;
use batch::keyed_on_host;
use gpuds_core::cudarc::driver::{CudaSlice, PushKernelArg};

impl<K: TreeKey, V: TreeValue> GpuBTreeMap<K, V> {
    /// The value of each key, if present. Synchronizes.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut tree = gpuds_btree::GpuBTreeMap::<u32, u32>::new(&gpu)?;
    /// tree.insert_many(&[7], &[70])?;
    /// assert_eq!(tree.get_many(&[7, 8])?, vec![Some(70), None]);
    /// # Ok::<(), gpuds_btree::Error>(())
    /// ```
    pub fn get_many(&self, keys: &[K]) -> Result<Vec<Option<V>>> {
        self.runner.clear_status()?;
        let values = keyed_on_host(&self.gpu, keys, |k, v, f| self.get_many_device(k, v, f))?;
        self.check()?;
        Ok(values)
    }

    /// Phased lookups on device buffers: `values[i]` and bit i of `found` (32 keys per
    /// word). Does not synchronize. Must not overlap a kernel that modifies the tree.
    pub fn get_many_device(
        &self,
        keys: &CudaSlice<K>,
        values: &mut CudaSlice<V>,
        found: &mut CudaSlice<u32>,
    ) -> Result<()> {
        self.launch_keyed(&self.kernels.get, keys, values, found, false)
            .map(drop)
    }

    /// Launches a per-key kernel taking (tree, keys, n, values, bits), and with `failures`
    /// a failed bit per request, which it returns (removals); else (lookups) the returned
    /// buffer is empty.
    pub(super) fn launch_keyed(
        &self,
        kernel: &Kernel,
        keys: &CudaSlice<K>,
        values: &mut CudaSlice<V>,
        bits: &mut CudaSlice<u32>,
        failures: bool,
    ) -> Result<CudaSlice<u32>> {
        let n = query_len(keys.len(), values.len(), bits.len())?;
        let stream = self.gpu.stream();
        let words = if failures {
            (n as usize).div_ceil(32).max(1)
        } else {
            1
        };
        let mut failed = stream.alloc_zeros::<u32>(words)?;
        if n == 0 {
            return Ok(failed);
        }
        let r = self.device_ref();
        let shape = self.grid(kernel, n as usize)?;
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&r).arg(keys).arg(&n).arg(values).arg(bits);
        if failures {
            args.arg(&mut failed);
        }
        // SAFETY: buffer lengths were checked by query_len; failed holds ceil(n / 32) words.
        unsafe { args.launch(shape) }?;
        Ok(failed)
    }

    /// For each key k, the pair with the smallest key greater than k. Synchronizes.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut tree = gpuds_btree::GpuBTreeMap::<u32, u32>::new(&gpu)?;
    /// tree.insert_many(&[10, 20], &[1, 2])?;
    /// assert_eq!(tree.successor_many(&[0, 10, 20])?, vec![Some((10, 1)), Some((20, 2)), None]);
    /// # Ok::<(), gpuds_btree::Error>(())
    /// ```
    pub fn successor_many(&self, keys: &[K]) -> Result<Vec<Option<(K, V)>>> {
        self.runner.clear_status()?;
        let n = batch_len(keys.len())?;
        if n == 0 {
            return Ok(Vec::new());
        }
        let stream = self.gpu.stream();
        let k = stream.clone_htod(keys)?;
        let mut out_keys = stream.alloc_zeros::<K>(n as usize)?;
        let mut out_values = stream.alloc_zeros::<V>(n as usize)?;
        let mut found = stream.alloc_zeros::<u32>((n as usize).div_ceil(32))?;
        self.successor_many_device(&k, &mut out_keys, &mut out_values, &mut found)?;
        let (ks, vs) = (
            stream.clone_dtoh(&out_keys)?,
            stream.clone_dtoh(&out_values)?,
        );
        let found = stream.clone_dtoh(&found)?;
        self.check()?;
        Ok((0..n as usize)
            .map(|i| bit(&found, i).then(|| (ks[i], vs[i])))
            .collect())
    }

    /// Phased successor queries on device buffers. Does not synchronize.
    pub fn successor_many_device(
        &self,
        keys: &CudaSlice<K>,
        out_keys: &mut CudaSlice<K>,
        out_values: &mut CudaSlice<V>,
        found: &mut CudaSlice<u32>,
    ) -> Result<()> {
        let n = query_len(
            keys.len(),
            out_keys.len().min(out_values.len()),
            found.len(),
        )?;
        if n == 0 {
            return Ok(());
        }
        let r = self.device_ref();
        let shape = self.grid(&self.kernels.successor, n as usize)?;
        let mut args = self
            .gpu
            .stream()
            .launch_builder(self.kernels.successor.func());
        args.arg(&r)
            .arg(keys)
            .arg(&n)
            .arg(out_keys)
            .arg(out_values)
            .arg(found);
        // SAFETY: buffer lengths were checked by query_len.
        unsafe { args.launch(shape) }?;
        Ok(())
    }
}
