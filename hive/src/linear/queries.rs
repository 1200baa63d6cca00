//! The queries of a [`LinearProbeMap`]: lookups, the length, export, statistics and
//! `validate`.

use cudarc::driver::{CudaSlice, PushKernelArg};
use gpuds_core::{DeviceKey, DeviceValue};

use super::control::Region;
use super::input::Staged;
use super::{check, invalid, Input, LinearProbeMap, LinearStats, BLOCK};
use crate::error::Result;

impl<K: DeviceKey, V: DeviceValue> LinearProbeMap<K, V> {
    /// The value of each key (`None` when absent). Synchronizes.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = gpuds_hive::LinearProbeMap::<u32, u32>::new(&gpu, 1 << 10)?;
    /// map.insert_many(&[1], &[10])?;
    /// assert_eq!(map.get_many(&[1, 2])?, vec![Some(10), None]);
    /// # Ok::<(), gpuds_hive::Error>(())
    /// ```
    pub fn get_many<KI: Input<K> + ?Sized>(&mut self, keys: &KI) -> Result<Vec<Option<V>>> {
        let n = keys.len();
        // SAFETY: the find writes every element read below.
        let mut out = unsafe { self.gpu.stream().alloc::<V>(n.max(1)) }?;
        self.get_many_into(keys, &mut out)?;
        let empty = Self::reserved_value();
        let host = self.gpu.stream().clone_dtoh(&out)?;
        Ok(host[..n]
            .iter()
            .map(|&v| (v.to_u64() != empty.to_u64()).then_some(v))
            .collect())
    }

    /// Writes the value of `keys[i]` to `out[i]`, or the reserved value `V::MAX` when
    /// the key is absent. `out` must hold at least `keys.len()` elements. Synchronizes
    /// (to read the status), but leaves the results on the device.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = gpuds_hive::LinearProbeMap::<u32, u32>::new(&gpu, 1 << 10)?;
    /// map.insert_many(&[1], &[10])?;
    /// let mut out = gpu.stream().alloc_zeros::<u32>(2)?;
    /// map.get_many_into(&[1, 2], &mut out)?;
    /// assert_eq!(gpu.stream().clone_dtoh(&out)?, vec![10, u32::MAX]);
    /// # Ok::<(), gpuds_hive::Error>(())
    /// ```
    pub fn get_many_into<KI: Input<K> + ?Sized>(
        &mut self,
        keys: &KI,
        out: &mut CudaSlice<V>,
    ) -> Result<()> {
        self.launch_find(keys, out, Region::Call)?;
        self.finish_call()
    }

    /// [`get_many_into`](Self::get_many_into) without synchronizing: the lookups are
    /// enqueued on [`Gpu::stream`](gpuds_core::Gpu::stream). A reserved key reads as absent and is reported by the
    /// next [`check`](Self::check) (reserved keys are never present; the lookups change
    /// nothing, so they run without a check before the batch, and keep no later write
    /// from running).
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = gpuds_hive::LinearProbeMap::<u32, u32>::new(&gpu, 1 << 10)?;
    /// map.insert_many(&[1], &[10])?;
    /// let keys = gpu.stream().clone_htod(&[1u32, 2])?;
    /// let mut out = gpu.stream().alloc_zeros::<u32>(2)?;
    /// map.get_many_into_async(&keys, &mut out)?;
    /// map.check()?;
    /// assert_eq!(gpu.stream().clone_dtoh(&out)?, vec![10, u32::MAX]);
    /// # Ok::<(), gpuds_hive::Error>(())
    /// ```
    pub fn get_many_into_async<KI: Input<K> + ?Sized>(
        &mut self,
        keys: &KI,
        out: &mut CudaSlice<V>,
    ) -> Result<()> {
        self.launch_find(keys, out, Region::Pending)
    }

    /// Launches a lookup batch reporting to `region`. Does not synchronize.
    pub(super) fn launch_find<KI: Input<K> + ?Sized>(
        &mut self,
        keys: &KI,
        out: &mut CudaSlice<V>,
        region: Region,
    ) -> Result<()> {
        let n = keys.len();
        if out.len() < n {
            return Err(invalid(format!(
                "output holds {} values for {n} keys",
                out.len()
            )));
        }
        if n == 0 {
            return Ok(());
        }
        self.open(region)?;
        let stream = self.gpu.stream().clone();
        let keys = Staged::new(&stream, keys)?;
        let k = keys.view();
        let table = self.table_ref(region);
        let guard = self.control.ptr(region);
        let count = n as u64;
        let kernel = self.kernels.find.clone();
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&table)
            .arg(&guard)
            .arg(&k)
            .arg(&mut *out)
            .arg(&count);
        // SAFETY: the arguments match linear_find's signature; it writes out[..n] and
        // may lower its region's lookup key word.
        unsafe { args.launch(self.shape(&kernel, n)?) }?;
        Ok(())
    }

    /// Whether each key is present. Synchronizes.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = gpuds_hive::LinearProbeMap::<u32, u32>::new(&gpu, 1 << 10)?;
    /// map.insert_many(&[1], &[10])?;
    /// assert_eq!(map.contains_many(&[1, 2])?, vec![true, false]);
    /// # Ok::<(), gpuds_hive::Error>(())
    /// ```
    pub fn contains_many<KI: Input<K> + ?Sized>(&mut self, keys: &KI) -> Result<Vec<bool>> {
        Ok(self
            .get_many(keys)?
            .into_iter()
            .map(|v| v.is_some())
            .collect())
    }

    /// The number of pairs (a census of the slots on the device). Synchronizes.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = gpuds_hive::LinearProbeMap::<u32, u32>::new(&gpu, 1 << 10)?;
    /// map.insert_many(&[1, 1, 2], &[10, 11, 20])?;
    /// assert_eq!(map.len()?, 2);
    /// # Ok::<(), gpuds_hive::Error>(())
    /// ```
    pub fn len(&self) -> Result<usize> {
        Ok(self.census(false)?[0] as usize)
    }

    /// `true` when the table holds no pair. Synchronizes.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// assert!(gpuds_hive::LinearProbeMap::<u32, u32>::new(&gpu, 64)?.is_empty()?);
    /// # Ok::<(), gpuds_hive::Error>(())
    /// ```
    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }

    /// Every pair, in slot order. Copies the table to the host; synchronizes.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = gpuds_hive::LinearProbeMap::<u32, u32>::new(&gpu, 64)?;
    /// map.insert_many(&[1], &[10])?;
    /// assert_eq!(map.to_vec()?, vec![(1, 10)]);
    /// # Ok::<(), gpuds_hive::Error>(())
    /// ```
    pub fn to_vec(&self) -> Result<Vec<(K, V)>> {
        let words = self.gpu.stream().clone_dtoh(&self.slots)?;
        Ok(check::decode::<K, V>(&words)
            .filter_map(|(_, slot)| slot.live())
            .collect())
    }

    /// Occupancy and probe lengths (a census of the slots on the device). Synchronizes.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = gpuds_hive::LinearProbeMap::<u32, u32>::new(&gpu, 1 << 10)?;
    /// map.insert_many(&(0..512).collect::<Vec<u32>>(), &vec![1u32; 512])?;
    /// let stats = map.stats()?;
    /// assert_eq!((stats.len, stats.load_factor), (512, 0.5));
    /// assert!(stats.mean_probe < 2.0);
    /// # Ok::<(), gpuds_hive::Error>(())
    /// ```
    pub fn stats(&self) -> Result<LinearStats> {
        let [live, dead, erased, probe_sum, probe_max] = self.census(true)?;
        let capacity = self.capacity();
        Ok(LinearStats {
            capacity,
            len: live,
            tombstones: dead + erased,
            load_factor: (live + dead + erased) as f64 / capacity as f64,
            mean_probe: if live == 0 {
                0.0
            } else {
                probe_sum as f64 / live as f64
            },
            max_probe: probe_max,
            bytes: (capacity as usize * Self::words_per_slot() * 8) as u64,
        })
    }

    /// Copies the table to the host and checks its invariants: no reserved key with a
    /// value, no key twice, every key reachable from its start window (no window with an
    /// empty slot before it on its probe sequence). Synchronizes.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = gpuds_hive::LinearProbeMap::<u32, u32>::new(&gpu, 1 << 10)?;
    /// map.insert_many(&[1, 2], &[10, 20])?;
    /// map.validate()?;
    /// # Ok::<(), gpuds_hive::Error>(())
    /// ```
    pub fn validate(&self) -> Result<()> {
        let words = self.gpu.stream().clone_dtoh(&self.slots)?;
        check::validate::<K, V>(&words, self.geometry, &self.config)
    }

    /// [live, value-tombstoned, key-tombstoned, probe sum, probe max].
    pub(super) fn census(&self, walk: bool) -> Result<[u64; 5]> {
        let stream = self.gpu.stream();
        let mut out = stream.alloc_zeros::<u64>(5)?;
        let table = self.device_ref();
        let walk = u32::from(walk);
        let kernel = &self.kernels.census;
        let shape = self.gpu.grid_for(kernel, self.capacity() as usize, BLOCK)?;
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&table).arg(&walk).arg(&mut out);
        // SAFETY: the arguments match linear_census's signature; it adds into out[..5].
        unsafe { args.launch(shape) }?;
        let words = stream.clone_dtoh(&out)?;
        let mut result = [0u64; 5];
        result.copy_from_slice(&words[..5]);
        Ok(result)
    }
}
