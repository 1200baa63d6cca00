//! The range table's lookups and removals, from host slices and on the device: each
//! batch sorted with its keys' positions, run per range (per run of cached ranges when
//! tiered), the answers written at the positions.

use cudarc::driver::{CudaSlice, PushKernelArg};
use gpuds_core::failures::CallStatus;

use super::{Access, RangeTable, Sorted};
use crate::batch::{
    answers, bits, check_device_keys, check_host_keys, check_outputs, shape, Failures,
};
use crate::error::{Error, Result};

impl RangeTable {
    /// The value of each key (`None` where absent); the batch runs sorted, the answers
    /// come back in the caller's order. Synchronizes.
    pub fn get_many(&mut self, keys: &[u32]) -> Result<Vec<Option<u32>>> {
        let (found, values) = self.query(keys, true)?;
        Ok(answers(&found, values))
    }

    /// Whether each key is present. Synchronizes.
    pub fn contains_many(&mut self, keys: &[u32]) -> Result<Vec<bool>> {
        Ok(self.query(keys, false)?.0)
    }

    fn query(&mut self, keys: &[u32], want_values: bool) -> Result<(Vec<bool>, Vec<u32>)> {
        check_host_keys(keys)?;
        let n = keys.len();
        let stream = self.gpu.stream().clone();
        let mut found_all = Vec::with_capacity(n);
        let mut values_all = Vec::with_capacity(if want_values { n } else { 0 });
        let mut failures = Failures::default();
        for (c, chunk) in keys.chunks(self.config.batch).enumerate() {
            let m = chunk.len();
            let sorted = self.sorted_with_index(stream.clone_htod(chunk)?, 0)?;
            let mut found = stream.alloc_zeros::<u32>(m.div_ceil(32))?;
            let mut values = stream.alloc_zeros::<u32>(if want_values { m } else { 1 })?;
            let call = CallStatus::new(&self.gpu, m)?;
            self.find_sorted(
                &sorted,
                want_values.then_some(&mut values),
                &mut found,
                &call,
            )?;
            failures.take(call.check().map_err(Error::from), c * self.config.batch)?;
            found_all.extend(bits(&stream.clone_dtoh(&found)?, m));
            if want_values {
                values_all.extend(stream.clone_dtoh(&values)?);
            }
        }
        failures.finish((found_all, values_all))
    }

    /// Lookups of keys on the device (checked on the device first), in batches of
    /// `config.batch`, each sorted on the device: bit `i % 32` of `found[i / 32]` is set
    /// where `keys[i]` is present (`found` is cleared first and needs
    /// `keys.len().div_ceil(32)` words), and `values[i]` gets its value (`u32::MAX` where
    /// absent; `values` needs `keys.len()` words, or pass `None`). The answers are in the
    /// caller's order and stay on the device. Synchronizes.
    ///
    /// ```no_run
    /// use gpuds_oversub::RangeTable;
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut t = RangeTable::new(&gpu)?;
    /// t.insert_many(&[5, 6], &[50, 60])?;
    /// let keys = gpu.stream().clone_htod(&[6u32, 7])?;
    /// let mut values = gpu.stream().alloc_zeros::<u32>(2)?;
    /// let mut found = gpu.stream().alloc_zeros::<u32>(1)?;
    /// t.get_many_device(&keys, Some(&mut values), &mut found)?;
    /// assert_eq!(gpu.stream().clone_dtoh(&found)?, vec![0b01]);
    /// assert_eq!(gpu.stream().clone_dtoh(&values)?, vec![60, u32::MAX]);
    /// # Ok::<(), gpuds_oversub::Error>(())
    /// ```
    pub fn get_many_device(
        &mut self,
        keys: &CudaSlice<u32>,
        mut values: Option<&mut CudaSlice<u32>>,
        found: &mut CudaSlice<u32>,
    ) -> Result<()> {
        check_outputs(keys.len(), values.as_deref(), found)?;
        self.device_chunks(keys, found, |t, sorted, found, call| {
            t.find_sorted(sorted, values.as_deref_mut(), found, call)
        })
    }

    /// The device forms' driver: checks `keys` on the device, clears `bits` (found or
    /// removed, checked by the caller to hold a bit per key), and runs `op` on each chunk
    /// of `config.batch` keys sorted with their positions in `keys`, under one call status.
    fn device_chunks(
        &mut self,
        keys: &CudaSlice<u32>,
        bits: &mut CudaSlice<u32>,
        mut op: impl FnMut(&mut Self, &Sorted, &mut CudaSlice<u32>, &CallStatus) -> Result<()>,
    ) -> Result<()> {
        let n = keys.len();
        check_device_keys(&self.gpu, &self.module.kernel("first_reserved_u32")?, keys)?;
        if n == 0 {
            return Ok(());
        }
        let stream = self.gpu.stream().clone();
        stream.memset_zeros(bits)?;
        let call = CallStatus::new(&self.gpu, n)?;
        for start in (0..n).step_by(self.config.batch) {
            let chunk = stream.clone_dtod(&keys.slice(start..n.min(start + self.config.batch)))?;
            let sorted = self.sorted_with_index(chunk, start as u64)?;
            op(self, &sorted, bits, &call)?;
        }
        call.check()?;
        Ok(())
    }

    /// Runs the lookups of one sorted batch (keys and their positions, which index
    /// `values` and `found`).
    fn find_sorted(
        &mut self,
        (k, index): &Sorted,
        mut values: Option<&mut CudaSlice<u32>>,
        found: &mut CudaSlice<u32>,
        call: &CallStatus,
    ) -> Result<()> {
        let kernel = self.module.kernel("range_find_u32")?;
        self.for_each_run(k, Access::Lookup, &mut |t, run| {
            let r = t.table_ref(call.status_ptr());
            let (len64, null, failed) = (run.len as u64, 0u64, call.bits_ptr());
            let span = run.start..run.start + run.len;
            let (rk, ri) = (k.slice(span.clone()), index.slice(span));
            let mut args = t.gpu.stream().launch_builder(kernel.func());
            args.arg(&r).arg(&rk).arg(&ri).arg(&len64);
            match values.as_deref_mut() {
                Some(v) => args.arg(v),
                None => args.arg(&null),
            };
            args.arg(&mut *found).arg(&failed);
            // SAFETY: reads the run's sorted keys and their positions (below the length
            // of `values`, checked by the callers, and of the found bits); writes
            // values[position] and the found bits.
            unsafe { args.launch(shape(&t.gpu, &kernel, run.len)?) }?;
            Ok(())
        })
    }

    /// Removes each key; `true` where this batch removed it (answers in the caller's
    /// order). Synchronizes.
    pub fn remove_many(&mut self, keys: &[u32]) -> Result<Vec<bool>> {
        check_host_keys(keys)?;
        let stream = self.gpu.stream().clone();
        let mut out = Vec::with_capacity(keys.len());
        let mut failures = Failures::default();
        for (c, chunk) in keys.chunks(self.config.batch).enumerate() {
            let m = chunk.len();
            let sorted = self.sorted_with_index(stream.clone_htod(chunk)?, 0)?;
            let mut removed = stream.alloc_zeros::<u32>(m.div_ceil(32))?;
            let call = CallStatus::new(&self.gpu, m)?;
            self.erase_sorted(&sorted, &mut removed, &call)?;
            failures.take(call.check().map_err(Error::from), c * self.config.batch)?;
            out.extend(bits(&stream.clone_dtoh(&removed)?, m));
        }
        failures.finish(out)
    }

    /// [`remove_many`](Self::remove_many) of keys on the device (checked on the device
    /// first), in batches of `config.batch`: bit `i % 32` of `removed[i / 32]` is set
    /// where this call removed `keys[i]` (`removed` is cleared first and needs
    /// `keys.len().div_ceil(32)` words). Synchronizes.
    pub fn remove_many_device(
        &mut self,
        keys: &CudaSlice<u32>,
        removed: &mut CudaSlice<u32>,
    ) -> Result<()> {
        check_outputs(keys.len(), None, removed)?;
        self.device_chunks(keys, removed, |t, sorted, removed, call| {
            t.erase_sorted(sorted, removed, call)
        })
    }

    /// Runs the removals of one sorted batch (keys and their positions, which index the
    /// removed bits).
    fn erase_sorted(
        &mut self,
        (k, index): &Sorted,
        removed: &mut CudaSlice<u32>,
        call: &CallStatus,
    ) -> Result<()> {
        let kernel = self.module.kernel("range_erase_u32")?;
        self.for_each_run(k, Access::Remove, &mut |t, run| {
            let r = t.table_ref(call.status_ptr());
            let (len64, failed) = (run.len as u64, call.bits_ptr());
            let span = run.start..run.start + run.len;
            let (rk, ri) = (k.slice(span.clone()), index.slice(span));
            let mut args = t.gpu.stream().launch_builder(kernel.func());
            args.arg(&r)
                .arg(&rk)
                .arg(&ri)
                .arg(&len64)
                .arg(&mut *removed)
                .arg(&failed);
            // SAFETY: reads the run's sorted keys and positions (below the removed bits'
            // length, checked by the callers); writes the removed bits.
            unsafe { args.launch(shape(&t.gpu, &kernel, run.len)?) }?;
            Ok(())
        })
    }
}
