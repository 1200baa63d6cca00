//! Host batches: allocating and freeing units from the host, and the launches behind them.

use super::*;

impl SlabAlloc {
    fn kernel(&self, name: &str) -> Result<Kernel> {
        self.kernel_of(Modules::SlabAlloc, name)
    }

    /// Kernel `name` of one of the crate's modules, from this pool's module cache.
    pub(crate) fn kernel_of(&self, which: Modules, name: &str) -> Result<Kernel> {
        let cell = &self.modules[which as usize];
        let module = match cell.get() {
            Some(module) => module,
            None => {
                let program = match which {
                    Modules::SlabAlloc => program(),
                    Modules::Ebr => crate::ebr::program(),
                };
                let module = self.gpu.load(&program)?;
                cell.get_or_init(|| module)
            }
        };
        Ok(module.kernel(name)?)
    }

    /// A grid-stride launch over `threads` threads.
    fn grid(&self, kernel: &Kernel, threads: usize) -> Result<LaunchConfig> {
        Ok(self.gpu.grid_for(kernel, threads, BLOCK)?)
    }

    /// Units in use per memory block.
    pub(super) fn block_counts(&self) -> Result<Vec<u32>> {
        let stream = self.gpu.stream();
        let mut counts = stream.alloc_zeros::<u32>(self.num_blocks.max(1) as usize)?;
        let kernel = self.kernel("slab_alloc_count")?;
        let shape = self.grid(&kernel, self.num_blocks as usize * 32)?;
        let r = self.device_ref();
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&r).arg(&mut counts);
        // SAFETY: the kernel writes counts[g] for g < num_blocks, within its length.
        unsafe { args.launch(shape) }?;
        let mut counts = stream.clone_dtoh(&counts)?;
        counts.truncate(self.num_blocks as usize);
        Ok(counts)
    }

    /// Units in use (bits set in the bitmap). Synchronizes.
    pub fn units_in_use(&self) -> Result<u64> {
        Ok(self.block_counts()?.iter().map(|&c| c as u64).sum())
    }

    /// Allocates one unit for each element of `out` (the lanes of each warp claim in
    /// parallel). Does not synchronize: a unit the pool could not give is
    /// [`crate::NULL_UNIT`] and [`SlabAlloc::check_status`] then reports
    /// [`Error::PoolExhausted`].
    pub fn allocate_into(&self, out: &mut CudaViewMut<'_, u32>) -> Result<()> {
        self.launch_allocation("slab_alloc_allocate_lanes", out, self.device_ref())
    }

    /// As [`SlabAlloc::allocate_into`], but each warp serves its lanes one after another
    /// with the warp-cooperative `allocate()`, as the paper's experiment does.
    pub fn allocate_each_into(&self, out: &mut CudaViewMut<'_, u32>) -> Result<()> {
        self.launch_allocation("slab_alloc_allocate_each", out, self.device_ref())
    }

    /// The ref a synchronizing call's kernels get: the pool, with the call's own status
    /// word in place of the pool's.
    fn call_ref(&self, call: &CallStatus) -> SlabAllocRef {
        SlabAllocRef {
            status: call.status_ptr(),
            ..self.device_ref()
        }
    }

    fn launch_allocation(
        &self,
        name: &str,
        out: &mut CudaViewMut<'_, u32>,
        r: SlabAllocRef,
    ) -> Result<()> {
        if out.is_empty() {
            return Ok(());
        }
        let kernel = self.kernel(name)?;
        let shape = self.grid(&kernel, out.len())?;
        let n = out.len() as u64;
        let mut args = self.gpu.stream().launch_builder(kernel.func());
        args.arg(&r).arg(out).arg(&n);
        // SAFETY: the kernel writes out[..n]; the ref is valid while self lives.
        unsafe { args.launch(shape) }?;
        Ok(())
    }

    /// Allocates one unit for each element of `out`, as
    /// [`allocate_into`](Self::allocate_into), and reports its own outcome. Synchronizes.
    ///
    /// When the pool runs out, the entries that got no unit hold [`crate::NULL_UNIT`]
    /// and the call fails with [`gpuds_core::Error::NotApplied`] (in [`Error::Core`])
    /// naming exactly them; every other entry holds a fresh unit, which stays allocated
    /// (free them with [`deallocate_view`](Self::deallocate_view), or keep them). The
    /// pool's own status word is neither read nor changed.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// use gpuds_alloc::{Error, SlabAlloc, SlabAllocConfig};
    /// let pool = SlabAlloc::new(&gpu, SlabAllocConfig::default())?;
    /// let mut out = gpu.stream().alloc_zeros::<u32>(1000)?;
    /// match pool.try_allocate_into(&mut out.slice_mut(..)) {
    ///     Ok(()) => {}
    ///     Err(Error::Core(gpuds_core::Error::NotApplied { not_applied, .. })) => {
    ///         // out[i] for i in not_applied is NULL_UNIT: reserve more and retry those
    ///         # let _ = not_applied;
    ///     }
    ///     Err(e) => return Err(e),
    /// }
    /// # Ok::<(), gpuds_alloc::Error>(())
    /// ```
    pub fn try_allocate_into(&self, out: &mut CudaViewMut<'_, u32>) -> Result<()> {
        if out.is_empty() {
            return Ok(());
        }
        let call = CallStatus::new(&self.gpu, out.len())?;
        self.launch_allocation("slab_alloc_allocate_lanes", out, self.call_ref(&call))?;
        let status = call.status()?;
        if status.is_ok() {
            return Ok(());
        }
        let got = self.gpu.stream().clone_dtoh(&*out)?;
        let missing = null_entries(&got);
        Err(failures::error_of(status, missing)
            .unwrap_or(gpuds_core::Error::Status(status))
            .into())
    }

    /// `n` (at least 1) fresh units on the device, or none. Synchronizes. When the pool
    /// runs out, the units the kernel did give are freed again and the call fails with
    /// [`Error::PoolExhausted`]: nothing is allocated, nothing is lost. (To keep what was
    /// given, use [`try_allocate_into`](Self::try_allocate_into).) The pool's own status
    /// word is neither read nor changed.
    pub fn allocate(&self, n: usize) -> Result<CudaSlice<u32>> {
        if n == 0 {
            return Err(gpuds_core::Error::InvalidArgument(
                "allocate needs at least one unit".into(),
            )
            .into());
        }
        let mut out = self.gpu.stream().alloc_zeros::<u32>(n)?;
        match self.try_allocate_into(&mut out.slice_mut(..)) {
            Ok(()) => Ok(out),
            Err(Error::Core(gpuds_core::Error::NotApplied { status, .. }))
                if status.contains(Status::POOL_EXHAUSTED) =>
            {
                let call = CallStatus::new(&self.gpu, 0)?;
                self.launch_deallocation(&out.slice(..), self.call_ref(&call))?;
                call.check()?;
                Err(Error::PoolExhausted {
                    needed: 0,
                    capacity: self.capacity_units(),
                    max_units: self.config.max_units,
                })
            }
            Err(e) => Err(e),
        }
    }

    /// Frees every address of `units` (null entries are skipped). Does not synchronize;
    /// a unit freed twice sets [`DOUBLE_FREE`] and an address outside the pool sets
    /// `OUT_OF_BOUNDS`, reported by [`SlabAlloc::check_status`].
    pub fn deallocate_view(&self, units: &CudaView<'_, u32>) -> Result<()> {
        self.launch_deallocation(units, self.device_ref())
    }

    fn launch_deallocation(&self, units: &CudaView<'_, u32>, r: SlabAllocRef) -> Result<()> {
        if units.is_empty() {
            return Ok(());
        }
        let kernel = self.kernel("slab_alloc_deallocate")?;
        let shape = self.grid(&kernel, units.len())?;
        let n = units.len() as u64;
        let mut args = self.gpu.stream().launch_builder(kernel.func());
        args.arg(&r).arg(units).arg(&n);
        // SAFETY: the kernel reads units[..n].
        unsafe { args.launch(shape) }?;
        Ok(())
    }

    /// Frees every address of `units`; see [`SlabAlloc::deallocate_view`].
    pub fn deallocate(&self, units: &CudaSlice<u32>) -> Result<()> {
        self.deallocate_view(&units.slice(..))
    }
}

/// The entries of an allocation that got no unit ([`crate::NULL_UNIT`]), ascending.
fn null_entries(units: &[u32]) -> Vec<usize> {
    units
        .iter()
        .enumerate()
        .filter(|&(_, &a)| a == crate::NULL_UNIT)
        .map(|(i, _)| i)
        .collect()
}

#[cfg(test)]
mod call_tests {
    use super::*;

    #[test]
    fn the_entries_without_a_unit_are_named() {
        let null = crate::NULL_UNIT;
        assert!(null_entries(&[]).is_empty());
        assert!(null_entries(&[0, 1, 2]).is_empty());
        assert_eq!(null_entries(&[null, 5, null, 0, null]), vec![0, 2, 4]);
    }
}
