//! The version collector: frees the older versions no live snapshot can reach.

use super::*;

impl<K: TreeKey, V: TreeValue> VersionedBTreeMap<K, V> {
    /// Frees every older version that no live [`Snapshot`] can reach: each version list
    /// is cut after the first version stamped at or before the oldest live snapshot (with
    /// no live snapshot, after the head), and what kernels handed to the epoch-based
    /// reclaimer and is still in limbo goes back to the pool. Returns the units freed from
    /// version lists. The update calls run
    /// it themselves when versions may have become free; call it after `_device` updates
    /// or after dropping snapshots to free memory at once. Synchronizes.
    ///
    /// Snapshots taken inside kernels (tile-wide) must not outlive their kernel: their
    /// versions are not protected once the kernel has ended.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = gpuds_mvbtree::VersionedBTreeMap::<u32, u32>::new(&gpu)?;
    /// map.insert_many(&[1], &[10])?;
    /// let s = map.snapshot()?;
    /// map.insert_many(&[1], &[11])?; // copies the leaf for s
    /// drop(s);
    /// assert_eq!(map.collect_versions()?, 1);
    /// # Ok::<(), gpuds_mvbtree::Error>(())
    /// ```
    pub fn collect_versions(&mut self) -> Result<u64> {
        let len = self.logged()?;
        self.collect_logged(len)
    }

    /// The log's length (heads with older versions logged since the last run).
    /// Synchronizes.
    fn logged(&self) -> Result<u32> {
        Ok(self
            .gpu
            .stream()
            .clone_dtoh(&self.log_len)?
            .first()
            .copied()
            .unwrap_or(0))
    }

    /// [`VersionedBTreeMap::collect_versions`] with the log's length `len`, read after
    /// the last kernel that may log a head.
    fn collect_logged(&mut self, len: u32) -> Result<u64> {
        // Versions kernels handed to the reclaimer and still in limbo: no kernel runs now.
        let drained = self.reclaimer.drain(self.runner.pool())?;
        self.runner.release(drained);
        let stream = self.gpu.stream().clone();
        let keep = self.snapshots.bounds().map(|(oldest, _)| oldest);
        self.collector.last_keep = keep;
        if len == 0 {
            self.collector.last_len = 0;
            return Ok(0);
        }
        if len as usize > self.log.len() {
            // Heads were not logged (cannot happen while the log has an entry per unit).
            return Err(gpuds_core::Error::Status(Status(crate::LOG_FULL)).into());
        }
        let n = len.min(self.log.len() as u32);
        self.runner.clear_status()?;
        let fresh = stream.alloc_zeros::<u32>(self.log.len())?;
        let old_log = std::mem::replace(&mut self.log, fresh);
        stream.memset_zeros(&mut self.log_len)?;
        let mut freed = stream.alloc_zeros::<u64>(1)?;
        let keep_ts = keep.unwrap_or(crate::node::UNSET_TS);
        let r = self.tree_ref(Updates::InPlace);
        let shape = self
            .gpu
            .grid_for(&self.kernels.collect, n as usize, BLOCK)?;
        let mut args = stream.launch_builder(self.kernels.collect.func());
        let mut log_len = std::mem::replace(&mut self.log_len, stream.alloc_zeros::<u32>(1)?);
        args.arg(&r)
            .arg(&old_log)
            .arg(&n)
            .arg(&keep_ts)
            .arg(&self.log)
            .arg(&mut log_len)
            .arg(&mut freed);
        // SAFETY: old_log holds n heads; the new log as many entries; freed one word.
        unsafe { args.launch(shape) }?;
        self.log_len = log_len;
        let freed = stream.clone_dtoh(&freed)?.first().copied().unwrap_or(0);
        let flags = self.runner.take_status()?;
        self.collector.last_len = self.logged()?;
        self.collector.freed += freed;
        self.collector.runs += 1;
        self.runner.release(freed);
        if !flags.is_ok() {
            return Err(gpuds_core::Error::Status(flags).into());
        }
        Ok(freed)
    }

    /// Runs the collector when versions may have become free since it last ran: new
    /// heads were logged, or the oldest live snapshot changed. Synchronizes.
    pub(super) fn collect_if_due(&mut self) -> Result<()> {
        let len = self.logged()?;
        let keep = self.snapshots.bounds().map(|(oldest, _)| oldest);
        if len == 0 || (len == self.collector.last_len && keep == self.collector.last_keep) {
            return Ok(());
        }
        self.collect_logged(len).map(drop)
    }
}
