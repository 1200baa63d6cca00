//! The capacity of a [`LinearProbeMap`]: `clear`, `rehash`, `reserve` and the growth an
//! insert batch triggers when it would pass the maximum load factor.

use cudarc::driver::PushKernelArg;
use gpuds_core::{DeviceKey, DeviceValue};

use super::control::Region;
use super::{Geometry, LinearConfig, LinearProbeMap, WhenFull};
use crate::error::{Error, Result};

impl<K: DeviceKey, V: DeviceValue> LinearProbeMap<K, V> {
    /// Removes every pair and tombstone, keeping the capacity. Synchronizes.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = gpuds_hive::LinearProbeMap::<u32, u32>::new(&gpu, 64)?;
    /// map.insert_many(&[1], &[1])?;
    /// map.clear()?;
    /// assert!(map.is_empty()?);
    /// # Ok::<(), gpuds_hive::Error>(())
    /// ```
    pub fn clear(&mut self) -> Result<()> {
        gpuds_core::primitives::fill(&self.gpu, &mut self.slots, u64::MAX)?;
        self.occupied_bound = 0;
        Ok(self.gpu.synchronize()?)
    }

    /// Rebuilds the table on the GPU into `new_capacity` slots (rounded up to a power of
    /// two, at least the live pairs at the maximum load factor), dropping tombstones.
    /// The device ref changes. Synchronizes.
    ///
    /// A capacity past [`MAX_CAPACITY`](super::MAX_CAPACITY) is [`gpuds_core::Error::CapacityOverflow`], and a
    /// table the device has no room for [`gpuds_core::Error::OutOfMemory`]; either way the
    /// table is left as it was (the new slots are allocated before the old are let go).
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = gpuds_hive::LinearProbeMap::<u32, u32>::new(&gpu, 64)?;
    /// map.insert_many(&[1, 2], &[10, 20])?;
    /// map.rehash(1 << 12)?;
    /// assert_eq!((map.capacity(), map.len()?), (1 << 12, 2));
    /// # Ok::<(), gpuds_hive::Error>(())
    /// ```
    pub fn rehash(&mut self, new_capacity: u64) -> Result<()> {
        let live = self.census(false)?[0];
        let needed = self.config.slots_for(live)?;
        let config = LinearConfig {
            capacity: new_capacity.max(needed),
            ..self.config
        };
        config.validate()?;
        let capacity = config.slots()?;
        let geometry = Geometry::new(capacity, config.group_width, config.probing)?;
        let old = std::mem::replace(&mut self.slots, Self::empty_slots(&self.gpu, capacity)?);
        let old_geometry = std::mem::replace(&mut self.geometry, geometry);
        let old_slots = old_geometry.slots(self.config.group_width);
        self.open(Region::Call)?;
        let stream = self.gpu.stream().clone();
        let table = self.table_ref(Region::Call);
        let kernel = self.kernels.migrate.clone();
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&table).arg(&old).arg(&old_slots);
        // SAFETY: the arguments match linear_migrate's signature; it reads old's slots.
        unsafe { args.launch(self.shape(&kernel, old_slots as usize)?) }?;
        if let Err(e) = self.finish_call() {
            // A pair that found no room in the new table: keep the old one, as it was.
            self.slots = old;
            self.geometry = old_geometry;
            return Err(e);
        }
        self.occupied_bound = live;
        drop(old);
        Ok(())
    }

    /// Makes room for `additional` more keys within the maximum load factor, rebuilding
    /// into a larger table if needed (see [`rehash`](Self::rehash)). Never reduces the
    /// capacity. Synchronizes.
    ///
    /// More keys than the largest table ([`MAX_CAPACITY`](super::MAX_CAPACITY) slots) holds at the load factor
    /// is [`gpuds_core::Error::CapacityOverflow`]; a table the device has no room for is
    /// [`gpuds_core::Error::OutOfMemory`]. Either way nothing changes.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = gpuds_hive::LinearProbeMap::<u32, u32>::new(&gpu, 64)?;
    /// map.reserve(1000)?;
    /// assert!(map.capacity() as f64 * map.config().max_load_factor >= 1000.0);
    /// assert!(map.reserve(u64::MAX).is_err());
    /// assert_eq!(map.capacity(), 2048);
    /// # Ok::<(), gpuds_hive::Error>(())
    /// ```
    pub fn reserve(&mut self, additional: u64) -> Result<()> {
        let [live, dead, erased, ..] = self.census(false)?;
        self.occupied_bound = live + dead + erased;
        let target =
            self.config
                .reserve_target(self.capacity(), self.occupied_bound, live, additional)?;
        match target {
            Some(wanted) => self.rehash(wanted),
            None => Ok(()),
        }
    }

    /// Occupied slots (live pairs and tombstones), counted on the device.
    pub(super) fn occupied(&mut self) -> Result<u64> {
        let [live, dead, erased, ..] = self.census(false)?;
        self.occupied_bound = live + dead + erased;
        Ok(self.occupied_bound)
    }

    /// Checks that `incoming` more keys stay within the maximum load factor; grows the
    /// table or fails by the configuration.
    pub(super) fn make_room(&mut self, incoming: u64) -> Result<()> {
        let capacity = self.capacity();
        let limit = self.config.limit(capacity);
        if self.occupied_bound.saturating_add(incoming) <= limit {
            return Ok(());
        }
        let occupied = self.occupied()?;
        if occupied.saturating_add(incoming) <= limit {
            return Ok(());
        }
        match self.config.when_full {
            WhenFull::Fail => Err(Error::LoadFactor {
                incoming,
                occupied,
                limit,
                capacity,
            }),
            WhenFull::Grow => self.reserve(incoming),
        }
    }
}
