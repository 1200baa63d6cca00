//! The pool's status word and fault injection.

use super::*;

impl SlabAlloc {
    /// Clears the status word in stream order, without synchronizing (before a call's
    /// kernels, so that the call reports its own flags only).
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// use gpuds_alloc::{SlabAlloc, SlabAllocConfig};
    /// let pool = SlabAlloc::new(&gpu, SlabAllocConfig::default())?;
    /// pool.clear_status()?;
    /// # Ok::<(), gpuds_alloc::Error>(())
    /// ```
    pub fn clear_status(&self) -> Result<()> {
        Ok(self.status.lock().clear()?)
    }

    /// Injects `faults` (see [`crate::faults`]), replacing earlier ones and restarting their
    /// counts; `Faults::default()` lifts them. Refs taken before this call keep the old
    /// setting. Only with the `fault-injection` feature.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// use gpuds_alloc::{faults::Faults, SlabAlloc, SlabAllocConfig};
    /// let mut pool = SlabAlloc::new(&gpu, SlabAllocConfig::default())?;
    /// pool.inject_faults(Faults { fail_growth: Some(1), ..Default::default() })?;
    /// assert!(pool.reserve(1 << 22).is_err());
    /// pool.inject_faults(Faults::default())?;
    /// pool.reserve(1 << 22)?;
    /// # Ok::<(), gpuds_alloc::Error>(())
    /// ```
    #[cfg(feature = "fault-injection")]
    pub fn inject_faults(&mut self, faults: crate::faults::Faults) -> Result<()> {
        let counter = match faults.fail_request {
            Some(_) => Some(self.gpu.stream().alloc_zeros::<u32>(1)?),
            None => None,
        };
        self.faults = FaultState {
            faults,
            counter,
            growths: 0,
        };
        Ok(())
    }

    /// Fault injection: the allocation requests counted since the last
    /// [`SlabAlloc::inject_faults`] with `fail_request` set (0 without one). Synchronizes.
    #[cfg(feature = "fault-injection")]
    pub fn fault_requests(&self) -> Result<u32> {
        match &self.faults.counter {
            Some(c) => Ok(self
                .gpu
                .stream()
                .clone_dtoh(c)?
                .first()
                .copied()
                .unwrap_or(0)),
            None => Ok(0),
        }
    }

    /// Reads and clears the status word, returning the raw flags. Synchronizes.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// use gpuds_alloc::{SlabAlloc, SlabAllocConfig};
    /// let pool = SlabAlloc::new(&gpu, SlabAllocConfig::default())?;
    /// assert!(pool.take_status()?.is_ok());
    /// # Ok::<(), gpuds_alloc::Error>(())
    /// ```
    pub fn take_status(&self) -> Result<Status> {
        Ok(self.status.lock().take()?)
    }

    /// Reads and clears the status word. `POOL_EXHAUSTED` becomes
    /// [`Error::PoolExhausted`]; other flags become `Error::Core(Status(..))` (e.g.
    /// [`DOUBLE_FREE`]). Synchronizes.
    ///
    /// The word collects what the non-synchronizing calls
    /// ([`allocate_into`](Self::allocate_into), [`allocate_each_into`](Self::allocate_each_into),
    /// [`deallocate_view`](Self::deallocate_view)) and kernels through
    /// [`device_ref`](Self::device_ref) record, from the last check (or
    /// [`clear_status`](Self::clear_status)) on. The synchronizing calls
    /// ([`allocate`](Self::allocate), [`try_allocate_into`](Self::try_allocate_into)) give
    /// their kernels a word of their own and report it themselves: they never read or
    /// clear this one, and nothing of theirs shows up here.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// use gpuds_alloc::{Error, SlabAlloc, SlabAllocConfig};
    /// let pool = SlabAlloc::new(&gpu, SlabAllocConfig::default())?;
    /// // ... kernels allocate through pool.device_ref() ...
    /// match pool.check_status() {
    ///     Err(Error::PoolExhausted { .. }) => { /* reserve more and retry the batch */ }
    ///     other => other?,
    /// }
    /// # Ok::<(), gpuds_alloc::Error>(())
    /// ```
    pub fn check_status(&self) -> Result<()> {
        let flags = self.take_status()?;
        if flags.contains(Status::POOL_EXHAUSTED) {
            return Err(Error::PoolExhausted {
                needed: 0,
                capacity: self.capacity_units(),
                max_units: self.config.max_units,
            });
        }
        Ok(flags.into_result()?)
    }
}
