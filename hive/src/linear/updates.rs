//! The updates of a [`LinearProbeMap`]: inserts, removals, mixed batches (`apply`), the
//! checks every batch passes first (lengths, reserved keys and values, room), and `check`
//! for the `_async` calls.

use cudarc::driver::{CudaView, PushKernelArg};
use gpuds_core::{DeviceKey, DeviceValue};

use super::control::Region;
use super::input::Staged;
use super::{invalid, same_len, Deletion, Input, LinearProbeMap, Operation, BLOCK};
use crate::error::{Error, Result};

impl<K: DeviceKey, V: DeviceValue> LinearProbeMap<K, V> {
    /// Inserts the pairs `(keys[i], values[i])`; a present key gets the new value. Keys
    /// repeated in the batch end with one of their values. Synchronizes:
    /// [`insert_many_async`](Self::insert_many_async) followed by [`check`](Self::check).
    ///
    /// Reserved keys or values: error naming the first, nothing applied. Past the
    /// maximum load factor (every key counted as new): the table grows first or the call
    /// fails with [`Error::LoadFactor`], by [`WhenFull`](super::WhenFull). Inserts that still find no room
    /// (the table was filled behind the host's back, by user kernels through
    /// [`device_ref`](Self::device_ref)) fail alone with `Status::TABLE_FULL` (or
    /// `RETRY_LIMIT`, key tombstones under contention): [`gpuds_core::Error::NotApplied`]
    /// names exactly them, every other insert took effect and the table stays valid. The
    /// call reports its own kernels only, never what an `_async` call left for
    /// [`check`](Self::check).
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = gpuds_hive::LinearProbeMap::<u32, u32>::new(&gpu, 1 << 10)?;
    /// map.insert_many(&[5, 6], &[50, 60])?;
    /// let keys = gpu.stream().clone_htod(&[7u32])?;
    /// let values = gpu.stream().clone_htod(&[70u32])?;
    /// map.insert_many(&keys, &values)?; // device buffers work alike
    /// assert_eq!(map.len()?, 3);
    /// # Ok::<(), gpuds_hive::Error>(())
    /// ```
    pub fn insert_many<KI, VI>(&mut self, keys: &KI, values: &VI) -> Result<()>
    where
        KI: Input<K> + ?Sized,
        VI: Input<V> + ?Sized,
    {
        self.launch_insert(keys, values, Region::Call)?;
        self.finish_call()
    }

    /// [`insert_many`](Self::insert_many) without synchronizing: the work is enqueued on
    /// [`Gpu::stream`](gpuds_core::Gpu::stream) (host inputs are copied first). Reserved keys and values in device
    /// inputs, and inserts that find no room, are recorded on the device and returned by
    /// the next [`check`](Self::check) (synchronizing calls never report them); after a
    /// rejected batch, later async batches that write are skipped until that check, so a
    /// rejected batch is never partly applied and the check says where the pending work
    /// stopped. Host inputs are checked at once. Synchronizes only to count occupied
    /// slots when the batch may pass the maximum load factor.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = gpuds_hive::LinearProbeMap::<u32, u32>::new(&gpu, 1 << 10)?;
    /// let keys = gpu.stream().clone_htod(&[1u32, 2])?;
    /// let values = gpu.stream().clone_htod(&[10u32, 20])?;
    /// map.insert_many_async(&keys, &values)?;
    /// map.check()?;
    /// # Ok::<(), gpuds_hive::Error>(())
    /// ```
    pub fn insert_many_async<KI, VI>(&mut self, keys: &KI, values: &VI) -> Result<()>
    where
        KI: Input<K> + ?Sized,
        VI: Input<V> + ?Sized,
    {
        self.launch_insert(keys, values, Region::Pending)
    }

    /// Launches an insert batch reporting to `region`. Does not synchronize, but to
    /// count occupied slots (`make_room`).
    pub(super) fn launch_insert<KI, VI>(
        &mut self,
        keys: &KI,
        values: &VI,
        region: Region,
    ) -> Result<()>
    where
        KI: Input<K> + ?Sized,
        VI: Input<V> + ?Sized,
    {
        let n = same_len(keys.len(), values.len())?;
        if n == 0 {
            return Ok(());
        }
        self.make_room(n as u64)?;
        self.open(region)?;
        let (keys_in, values_in) = (keys, values);
        let stream = self.gpu.stream().clone();
        let keys = Staged::new(&stream, keys)?;
        let values = Staged::new(&stream, values)?;
        let (k, v) = (keys.view(), values.view());
        self.precheck(keys_in, Some(values_in), &k, Some(&v), region)?;
        let table = self.table_ref(region);
        let guard = self.control.ptr(region);
        let failed = self.control.bits(&self.gpu, region, n)?;
        let count = n as u64;
        let kernel = self.kernels.insert.clone();
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&table)
            .arg(&guard)
            .arg(&k)
            .arg(&v)
            .arg(&count)
            .arg(&failed);
        // SAFETY: the arguments match linear_insert's signature; the kernel reads n keys
        // and values and touches only the table's slots, its region and its failure bits.
        unsafe { args.launch(self.shape(&kernel, n)?) }?;
        self.occupied_bound = self.occupied_bound.saturating_add(count);
        Ok(())
    }

    /// Removes the keys (absent keys are ignored). Synchronizes:
    /// [`remove_many_async`](Self::remove_many_async) followed by [`check`](Self::check).
    /// A reserved key: error naming the first, nothing applied.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = gpuds_hive::LinearProbeMap::<u32, u32>::new(&gpu, 1 << 10)?;
    /// map.insert_many(&[1, 2], &[10, 20])?;
    /// map.remove_many(&[1, 3])?;
    /// assert_eq!(map.to_vec()?, vec![(2, 20)]);
    /// # Ok::<(), gpuds_hive::Error>(())
    /// ```
    pub fn remove_many<KI: Input<K> + ?Sized>(&mut self, keys: &KI) -> Result<()> {
        self.launch_erase(keys, Region::Call)?;
        self.finish_call()
    }

    /// [`remove_many`](Self::remove_many) without synchronizing, with the reporting rules
    /// of [`insert_many_async`](Self::insert_many_async).
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = gpuds_hive::LinearProbeMap::<u32, u32>::new(&gpu, 1 << 10)?;
    /// map.insert_many(&[1, 2], &[10, 20])?;
    /// map.remove_many_async(&gpu.stream().clone_htod(&[1u32])?)?;
    /// map.check()?;
    /// assert_eq!(map.len()?, 1);
    /// # Ok::<(), gpuds_hive::Error>(())
    /// ```
    pub fn remove_many_async<KI: Input<K> + ?Sized>(&mut self, keys: &KI) -> Result<()> {
        self.launch_erase(keys, Region::Pending)
    }

    /// Launches a removal batch reporting to `region`. Does not synchronize.
    pub(super) fn launch_erase<KI: Input<K> + ?Sized>(
        &mut self,
        keys: &KI,
        region: Region,
    ) -> Result<()> {
        let n = keys.len();
        if n == 0 {
            return Ok(());
        }
        self.open(region)?;
        let keys_in = keys;
        let stream = self.gpu.stream().clone();
        let keys = Staged::new(&stream, keys)?;
        let k = keys.view();
        self.precheck::<KI, [V]>(keys_in, None, &k, None, region)?;
        let table = self.table_ref(region);
        let guard = self.control.ptr(region);
        let count = n as u64;
        let kernel = self.kernels.erase.clone();
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&table).arg(&guard).arg(&k).arg(&count);
        // SAFETY: the arguments match linear_erase's signature.
        unsafe { args.launch(self.erase_shape(n)?) }?;
        Ok(())
    }

    /// Reports what the `_async` calls since the last check (and user kernels through
    /// [`device_ref`](Self::device_ref)) recorded on the device, and clears it: the first
    /// reserved key or value of a rejected write batch (`Error::ReservedKey` /
    /// `Error::ReservedValue`, naming its index in that batch; later async write batches
    /// were skipped), else a lookup's reserved key, else the operations that found no
    /// room as [`gpuds_core::Error::NotApplied`], their indices counted over the async
    /// insert batches since the last check in call order (one sequence). Synchronizing
    /// calls never read or clear this. Synchronizes.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = gpuds_hive::LinearProbeMap::<u32, u32>::new(&gpu, 1 << 10)?;
    /// let keys = gpu.stream().clone_htod(&[1u32, u32::MAX])?;
    /// map.insert_many_async(&keys, &keys)?;
    /// assert!(matches!(map.check(), Err(gpuds_hive::Error::ReservedKey { index: 1, .. })));
    /// assert_eq!(map.len()?, 0); // nothing of the batch was applied
    /// # Ok::<(), gpuds_hive::Error>(())
    /// ```
    pub fn check(&mut self) -> Result<()> {
        self.control.finish(Region::Pending, Self::reserved())
    }

    /// Runs a mixed batch in one kernel, every operation concurrently with the others,
    /// and returns what each observed: the key's value just before it (`None`: absent).
    /// The results are those of some serial order of the batch (per key). Synchronizes.
    ///
    /// With [`Deletion::KeyTombstones`] a batch may not mix inserts and removes
    /// (invalid-argument error, nothing applied). Inserts that find no room fail alone,
    /// named in [`gpuds_core::Error::NotApplied`] (see [`insert_many`](Self::insert_many)).
    ///
    /// ```no_run
    /// use gpuds_hive::{LinearProbeMap, Operation};
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = LinearProbeMap::<u32, u32>::new(&gpu, 1 << 10)?;
    /// let seen = map.apply(&[Operation::Insert(1, 10), Operation::Insert(2, 20)])?;
    /// assert_eq!(seen, vec![None, None]);
    /// let seen = map.apply(&[Operation::Insert(1, 11), Operation::Remove(2), Operation::Get(3)])?;
    /// assert_eq!(seen, vec![Some(10), Some(20), None]);
    /// # Ok::<(), gpuds_hive::Error>(())
    /// ```
    pub fn apply(&mut self, ops: &[Operation<K, V>]) -> Result<Vec<Option<V>>> {
        let n = ops.len();
        if n == 0 {
            return Ok(Vec::new());
        }
        let keys: Vec<K> = ops.iter().map(Operation::key).collect();
        Self::check_keys(&keys)?;
        let empty = Self::reserved_value();
        let mut kinds = Vec::with_capacity(n);
        let mut values = Vec::with_capacity(n);
        let mut inserts = 0u64;
        for (index, op) in ops.iter().enumerate() {
            let (kind, value) = match *op {
                Operation::Insert(_, v) => {
                    if v.to_u64() == empty.to_u64() {
                        return Err(Error::ReservedValue {
                            index,
                            value: v.to_u64(),
                        });
                    }
                    inserts += 1;
                    (0u32, v)
                }
                Operation::Remove(_) => (1, V::from_u64(0)),
                Operation::Get(_) => (2, V::from_u64(0)),
            };
            kinds.push(kind);
            values.push(value);
        }
        let removes = kinds.iter().filter(|&&k| k == 1).count();
        if self.config.deletion == Deletion::KeyTombstones && inserts > 0 && removes > 0 {
            return Err(invalid(
                "a table with key tombstones cannot run inserts and removes in one batch"
                    .to_string(),
            ));
        }
        self.make_room(inserts)?;
        self.open(Region::Call)?;
        let stream = self.gpu.stream().clone();
        let kinds = stream.clone_htod(&kinds)?;
        let keys = stream.clone_htod(&keys)?;
        let values = stream.clone_htod(&values)?;
        // SAFETY: the kernel writes every element.
        let mut out = unsafe { stream.alloc::<V>(n) }?;
        let table = self.table_ref(Region::Call);
        let guard = self.control.ptr(Region::Call);
        let failed = self.control.bits(&self.gpu, Region::Call, n)?;
        let count = n as u64;
        let kernel = self.kernels.apply.clone();
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&table)
            .arg(&guard)
            .arg(&kinds)
            .arg(&keys)
            .arg(&values)
            .arg(&mut out)
            .arg(&count)
            .arg(&failed);
        // SAFETY: the arguments match linear_apply's signature; it writes out[..n] and its
        // failure bits.
        unsafe { args.launch(self.shape(&kernel, n)?) }?;
        self.occupied_bound = self.occupied_bound.saturating_add(inserts);
        self.finish_call()?;
        Ok(stream
            .clone_dtoh(&out)?
            .into_iter()
            .map(|v| (v.to_u64() != empty.to_u64()).then_some(v))
            .collect())
    }

    /// Checks a batch for reserved keys (and values): on the host for host inputs, by a
    /// kernel for device inputs, which records its finding in `region`, where the
    /// operation kernels read it (they skip the whole batch when it is set) and the
    /// region's reader reports it.
    pub(super) fn precheck<KI, VI>(
        &mut self,
        keys_in: &KI,
        values_in: Option<&VI>,
        keys: &CudaView<'_, K>,
        values: Option<&CudaView<'_, V>>,
        region: Region,
    ) -> Result<()>
    where
        KI: Input<K> + ?Sized,
        VI: Input<V> + ?Sized,
    {
        let keys_on_host = match keys_in.as_host() {
            Some(host) => {
                Self::check_keys(host)?;
                true
            }
            None => false,
        };
        let values_on_host = match values_in.map(|v| v.as_host()) {
            Some(Some(host)) => {
                let empty = Self::reserved_value();
                if let Some(index) = host.iter().position(|&v| v.to_u64() == empty.to_u64()) {
                    return Err(Error::ReservedValue {
                        index,
                        value: empty.to_u64(),
                    });
                }
                true
            }
            Some(None) => false,
            None => true,
        };
        if keys_on_host && values_on_host {
            return Ok(());
        }
        let stream = self.gpu.stream().clone();
        let n = keys.len() as u64;
        let kernel = self.kernels.first_reserved.clone();
        let shape = self.gpu.grid_for(&kernel, keys.len(), BLOCK)?;
        let null = 0u64;
        let mut args = stream.launch_builder(kernel.func());
        if keys_on_host {
            args.arg(&null);
        } else {
            args.arg(keys);
        }
        match values {
            Some(values) if !values_on_host => args.arg(values),
            _ => args.arg(&null),
        };
        let mut words = self.control.region_mut(region);
        args.arg(&n).arg(&mut words);
        // SAFETY: the arguments match linear_first_reserved's signature (a null pointer
        // skips keys or values); it lowers the region's first two words.
        unsafe { args.launch(shape) }?;
        Ok(())
    }

    pub(super) fn check_keys(keys: &[K]) -> Result<()> {
        match gpuds_core::keys::first_reserved(keys, &Self::reserved_keys()) {
            Some((index, key)) => Err(Error::ReservedKey {
                index,
                key: key.to_u64(),
            }),
            None => Ok(()),
        }
    }
}
