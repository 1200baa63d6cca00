//! Growing a pool: `reserve`, `reserve_within_max`, `reserve_capacity_within_max`, `reset`,
//! and the checked unit counts.

use super::*;

impl SlabAlloc {
    /// Grows the pool so that at least `free_units` units are free, with a quarter more
    /// of headroom so that warps keep finding free units quickly (less when the device
    /// has no room for the headroom, none past `max_units`). Call it before a batch that
    /// may allocate that many. Synchronizes.
    ///
    /// A request that cannot be met changes nothing: past `max_units` it fails with
    /// [`Error::PoolExhausted`], past [`MAX_UNITS`](crate::MAX_UNITS) (or overflowing)
    /// with [`CapacityOverflow`](gpuds_core::Error::CapacityOverflow), and when the device
    /// has no room for the units with [`OutOfMemory`](gpuds_core::Error::OutOfMemory).
    /// [`reserve_within_max`](Self::reserve_within_max) grows as far as `max_units`
    /// instead.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// use gpuds_alloc::{SlabAlloc, SlabAllocConfig};
    /// let mut pool = SlabAlloc::new(&gpu, SlabAllocConfig::default())?;
    /// pool.reserve(5_000_000)?;
    /// assert!(pool.capacity_units() >= 5_000_000);
    /// let capacity = pool.capacity_units();
    /// assert!(pool.reserve(u64::MAX).is_err());
    /// assert_eq!(pool.capacity_units(), capacity);
    /// # Ok::<(), gpuds_alloc::Error>(())
    /// ```
    pub fn reserve(&mut self, free_units: u64) -> Result<()> {
        let in_use = self.units_in_use()?;
        let needed = reserve_needed(in_use, free_units, &self.config)?;
        if needed > self.config.max_units {
            return Err(Error::PoolExhausted {
                needed,
                capacity: self.capacity_units(),
                max_units: self.config.max_units,
            });
        }
        self.grow_for(needed)
    }

    /// [`reserve`](Self::reserve) for callers whose count is a pessimistic bound: a
    /// request past `max_units` grows the pool to `max_units` and succeeds (the kernels
    /// then report exhaustion if they really run out). Fails only when the device has no
    /// room ([`OutOfMemory`](gpuds_core::Error::OutOfMemory), pool unchanged) or on a
    /// driver error. Synchronizes.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// use gpuds_alloc::{SlabAlloc, SlabAllocConfig};
    /// let config = SlabAllocConfig { max_units: 1 << 16, ..Default::default() };
    /// let mut pool = SlabAlloc::new(&gpu, config)?;
    /// pool.reserve_within_max(1 << 20)?;
    /// assert_eq!(pool.capacity_units(), 1 << 16);
    /// # Ok::<(), gpuds_alloc::Error>(())
    /// ```
    pub fn reserve_within_max(&mut self, free_units: u64) -> Result<()> {
        let in_use = self.units_in_use()?;
        let needed = in_use.saturating_add(free_units).min(self.config.max_units);
        self.grow_for(needed)
    }

    /// Grows the pool to hold `units` units in all, in use or free (with the headroom of
    /// [`reserve`](Self::reserve); at most `max_units`). Unlike
    /// [`reserve_within_max`](Self::reserve_within_max) it does not count the units in
    /// use, so it synchronizes only when it grows: for a caller that knows what is in
    /// use, such as one that has just [`reset`](Self::reset) the pool. Fails as
    /// `reserve_within_max` does.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// use gpuds_alloc::{SlabAlloc, SlabAllocConfig};
    /// let mut pool = SlabAlloc::new(&gpu, SlabAllocConfig::default())?;
    /// pool.reset()?;
    /// pool.reserve_capacity_within_max(1 << 20)?;
    /// assert!(pool.capacity_units() >= 1 << 20);
    /// # Ok::<(), gpuds_alloc::Error>(())
    /// ```
    pub fn reserve_capacity_within_max(&mut self, units: u64) -> Result<()> {
        self.grow_for(units.min(self.config.max_units))
    }

    /// Grows the pool to hold `needed` units (at most `max_units`) with headroom, or
    /// without it when the device has no room for it. Synchronizes when it grows.
    fn grow_for(&mut self, needed: u64) -> Result<()> {
        let with_headroom = needed.saturating_add(needed / 4);
        let blocks = self.config.blocks_for(with_headroom);
        if blocks <= self.num_blocks as u64 {
            return Ok(());
        }
        match self.grow_blocks(blocks) {
            Err(Error::Core(gpuds_core::Error::OutOfMemory { .. }))
                if self.config.blocks_for(needed) < blocks =>
            {
                self.grow_blocks(self.config.blocks_for(needed))?
            }
            other => other?,
        }
        self.gpu.synchronize()?;
        Ok(())
    }

    /// Grows to at least `blocks` memory blocks (never past the maximum). When the
    /// device has no room, the error is [`OutOfMemory`](gpuds_core::Error::OutOfMemory)
    /// and the pool's capacity is as it was.
    pub(super) fn grow_blocks(&mut self, blocks: u64) -> Result<()> {
        let blocks = blocks.min(self.config.max_blocks());
        let block_bytes = self.config.block_bytes();
        // At most 2^22 blocks of 256 KiB: no overflow.
        let bytes = blocks * block_bytes;
        if bytes > self.gpu.info().total_memory as u64 {
            // Not even an empty device holds it: fail before allocating anything.
            return Err(gpuds_core::Error::OutOfMemory {
                what: UNITS.to_string(),
                bytes,
            }
            .into());
        }
        self.faults.before_growth(bytes)?;
        let new_blocks = match &mut self.memory {
            Memory::Light(range) => {
                let mapped = range
                    .grow_to(bytes as usize)
                    .map_err(|e| e.out_of_memory(UNITS, bytes))?
                    as u64;
                (mapped / block_bytes).min(self.config.max_blocks())
            }
            Memory::Classic(supers) => {
                let per_super = 1u64 << self.log_blocks_per_super;
                let count = blocks.div_ceil(per_super);
                supers
                    .grow_to(&self.gpu, count as usize)
                    .map_err(|e| e.out_of_memory(UNITS, bytes))?;
                (count * per_super).min(self.config.max_blocks())
            }
        };
        if new_blocks <= self.num_blocks as u64 {
            return Ok(());
        }
        let mut bitmap = self.gpu.alloc_zeroed::<u32>(
            new_blocks as usize * WORDS_PER_BLOCK as usize,
            "the pool's bitmap",
        )?;
        let stream = self.gpu.stream();
        let old_words = self.num_blocks as usize * WORDS_PER_BLOCK as usize;
        if old_words > 0 {
            stream.memcpy_dtod(
                &self.bitmap.slice(..old_words),
                &mut bitmap.slice_mut(..old_words),
            )?;
        }
        self.bitmap = bitmap;
        self.num_blocks = new_blocks as u32;
        Ok(())
    }

    /// Every unit free again (the contents are left as they are). Does not synchronize.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// use gpuds_alloc::{SlabAlloc, SlabAllocConfig};
    /// let mut pool = SlabAlloc::new(&gpu, SlabAllocConfig::default())?;
    /// let _units = pool.allocate(100)?;
    /// pool.reset()?;
    /// assert_eq!(pool.units_in_use()?, 0);
    /// # Ok::<(), gpuds_alloc::Error>(())
    /// ```
    pub fn reset(&mut self) -> Result<()> {
        self.gpu.stream().memset_zeros(&mut self.bitmap)?;
        Ok(())
    }
}

/// What the pool's unit memory is called in out-of-memory errors.
const UNITS: &str = "the slab pool's units";

/// Units a [`SlabAlloc::reserve`] of `free_units` needs with `in_use` in use, or
/// [`CapacityOverflow`](gpuds_core::Error::CapacityOverflow) when that overflows or
/// passes [`MAX_UNITS`](crate::MAX_UNITS) (no configuration allows it).
fn reserve_needed(in_use: u64, free_units: u64, config: &SlabAllocConfig) -> Result<u64> {
    let needed = gpuds_core::size::checked_add(in_use, free_units, "units in use and asked for")?;
    if needed > crate::MAX_UNITS {
        return Err(gpuds_core::Error::CapacityOverflow(format!(
            "{needed} units ({in_use} in use, {free_units} asked for) pass the largest pool, \
             {} units (max_units is {})",
            crate::MAX_UNITS,
            config.max_units
        ))
        .into());
    }
    Ok(needed)
}

#[cfg(test)]
mod size_tests {
    use super::*;

    #[test]
    fn reserve_requests_are_checked() {
        let config = SlabAllocConfig::default();
        for in_use in [0u64, 1, 1 << 20, config.max_units] {
            for free in gpuds_testkit::strategy::capacity_edges() {
                match reserve_needed(in_use, free, &config) {
                    Ok(needed) => {
                        assert_eq!(needed, in_use + free);
                        assert!(needed <= crate::MAX_UNITS);
                    }
                    Err(Error::Core(gpuds_core::Error::CapacityOverflow(_))) => {
                        assert!(
                            u128::from(in_use) + u128::from(free) > u128::from(crate::MAX_UNITS)
                        );
                    }
                    Err(e) => panic!("{in_use} + {free}: {e}"),
                }
            }
        }
    }
}
