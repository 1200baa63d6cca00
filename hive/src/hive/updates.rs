//! The updates of a [`HiveMap`]: inserts, removals, mixed batches (`apply`,
//! `apply_device_into`, and `apply_device` for `u32` pairs), `clear`, and the checks of
//! a batch's keys.

use cudarc::driver::{CudaSlice, CudaView, PushKernelArg};
use gpuds_core::failures::CallStatus;

use super::device::EMPTY;
use super::{check_lengths, stage, update_len, HiveKey, HiveMap, HiveValue, Staged, BLOCK, QUEUED};
use crate::error::{Error, Result};
use crate::{Input, Operation};

/// What operation i of a mixed batch observed, as the apply kernel writes it.
const SEEN_PRESENT: u8 = 1;

/// Where the apply kernel writes what each operation observed.
enum Observations<'o, V> {
    /// `observed[i]` (0 absent, 1 present, 2 failed) and the value before, `previous[i]`.
    Split(&'o mut CudaSlice<u8>, &'o mut CudaSlice<V>),
    /// One word per operation (`u32` values only): `(1 << 32) | value`, 0, or `1 << 33`.
    Packed(&'o mut CudaSlice<u64>),
}

impl<K: HiveKey, V: HiveValue<K>> HiveMap<K, V> {
    /// Puts a batch of keys on the device: a host batch is checked for reserved keys
    /// and copied; a device batch is used in place, and checked by a pass over it when
    /// `check_device` (updates must not apply anything of a batch with a reserved key).
    pub(super) fn stage_keys<'a, I: Input<K> + ?Sized>(
        &self,
        keys: &'a I,
        check_device: bool,
    ) -> Result<Staged<'a, K>> {
        match keys.as_device() {
            Some(view) => {
                if check_device {
                    self.check_device_keys(&view)?;
                }
                Ok(Staged::Device(view))
            }
            None => {
                let host = keys.as_host().unwrap_or(&[]);
                if let Some((index, key)) = gpuds_core::keys::first_reserved(host, K::RESERVED) {
                    return Err(Error::ReservedKey {
                        index,
                        key: key.to_u64(),
                    });
                }
                Ok(Staged::Host(stage(&self.gpu, host)?))
            }
        }
    }

    /// Rejects reserved keys in a device batch (one pass; synchronizes).
    pub(super) fn check_device_keys(&self, keys: &CudaView<'_, K>) -> Result<()> {
        if keys.is_empty() {
            return Ok(());
        }
        let stream = self.gpu.stream();
        let n = keys.len() as u64;
        let mut first = stream.clone_htod(&[n])?;
        let kernel = &self.kernels.first_reserved;
        let shape = self.gpu.grid_for(kernel, keys.len(), BLOCK)?;
        let mut args = stream.launch_builder(kernel.func());
        args.arg(keys).arg(&n).arg(&mut first);
        // SAFETY: the kernel reads keys[..n] and writes one word.
        unsafe { args.launch(shape) }?;
        let index = stream.clone_dtoh(&first)?[0];
        if index < n {
            let i = index as usize;
            let key = stream.clone_dtoh(&keys.slice(i..i + 1))?[0];
            return Err(Error::ReservedKey {
                index: i,
                key: key.to_u64(),
            });
        }
        Ok(())
    }

    /// Inserts or replaces the pairs `(keys[i], values[i])`; keys and values may be host
    /// slices or device buffers ([`Input`]). Synchronizes.
    ///
    /// A reserved key fails the whole batch before anything is applied
    /// ([`Error::ReservedKey`]). An insert that finds no room even in the stash
    /// (`Status::STASH_FULL`) or passes a retry cap under contention
    /// (`Status::RETRY_LIMIT`) fails alone: the others are applied and
    /// [`gpuds_core::Error::NotApplied`] (in [`Error::Core`]) names exactly the failed
    /// indices; the table stays valid and later calls see what was applied. With several
    /// pairs of one key in a batch, one of them wins (the batch runs concurrently).
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = gpuds_hive::HiveMap::<u32, u32>::new(&gpu, 1 << 16)?;
    /// map.insert_many(&[7, 8], &[70, 80])?;
    /// assert!(map.insert_many(&[1, u32::MAX], &[0, 0]).is_err());
    /// # Ok::<(), gpuds_hive::Error>(())
    /// ```
    pub fn insert_many<KI, VI>(&mut self, keys: &KI, values: &VI) -> Result<()>
    where
        KI: Input<K> + ?Sized,
        VI: Input<V> + ?Sized,
    {
        check_lengths(keys.len(), values.len())?;
        if keys.is_empty() {
            return Ok(());
        }
        let k = self.stage_keys(keys, true)?;
        let v = match values.as_device() {
            Some(view) => Staged::Device(view),
            None => Staged::Host(stage(&self.gpu, values.as_host().unwrap_or(&[]))?),
        };
        self.insert_staged(&k.view(), &v.view())
    }

    pub(super) fn insert_staged(
        &mut self,
        keys: &CudaView<'_, K>,
        values: &CudaView<'_, V>,
    ) -> Result<()> {
        update_len(keys.len())?;
        self.grow_for(keys.len())?;
        let call = CallStatus::new(&self.gpu, keys.len())?;
        if self.config.slots_per_bucket > 16 {
            let r = self.call_ref(&call);
            let n = keys.len() as u64;
            let null = 0u64;
            let kernel = &self.kernels.insert;
            let shape = self.shape(kernel, keys.len())?;
            let mut args = self.gpu.stream().launch_builder(kernel.func());
            args.arg(&r).arg(keys).arg(values).arg(&n).arg(&null);
            // SAFETY: the kernel reads n keys and values and works inside the ref's arrays
            // (with 32-slot buckets it queues nothing).
            unsafe { args.launch(shape) }?;
            return self.finish_call(&call);
        }
        // Buckets of up to 16 slots insert in two kernels per part of at most QUEUED
        // operations: the first fills empty slots lane by lane and queues what it leaves
        // (full buckets, the stash, contention), the second runs the queued inserts with
        // no fill beside them (see kernels/hive.cu; packed and wide slots alike).
        let stream = self.gpu.stream().clone();
        // Two counters (entries, and the chunks of them the second kernel's warps took),
        // then the entries.
        let room = keys.len().min(QUEUED) + 2;
        if self.queue.as_ref().is_none_or(|q| q.len() < room) {
            self.queue = None;
            // SAFETY: the counters are zeroed before each first kernel, which writes every
            // entry below its count before the second kernel reads them.
            self.queue = Some(unsafe { stream.alloc::<u32>(room) }?);
        }
        let r = self.call_ref(&call);
        let queue = self.queue.as_mut().expect("allocated above");
        for start in (0..keys.len()).step_by(QUEUED) {
            let end = (start + QUEUED).min(keys.len());
            let (k, v) = (keys.slice(start..end), values.slice(start..end));
            let n = (end - start) as u64;
            stream.memset_zeros(&mut queue.slice_mut(..2))?;
            let kernel = &self.kernels.insert;
            let shape = self.gpu.grid_for(kernel, end - start, BLOCK)?;
            let mut args = stream.launch_builder(kernel.func());
            args.arg(&r).arg(&k).arg(&v).arg(&n).arg(&*queue);
            // SAFETY: the kernel reads n keys and values, appends at most n entries to the
            // queue (each operation at most once) and works inside the ref's arrays.
            unsafe { args.launch(shape) }?;
            let kernel = &self.kernels.insert_queued;
            let shape = self.gpu.grid_for(kernel, end - start, BLOCK)?;
            let mut args = stream.launch_builder(kernel.func());
            let offset = start as u64;
            args.arg(&r).arg(&k).arg(&v).arg(&*queue).arg(&offset);
            // SAFETY: the kernel reads the entries the first kernel queued (indices below n).
            unsafe { args.launch(shape) }?;
        }
        self.finish_call(&call)
    }

    /// Removes keys (host or device); returns how many were present. A reserved key fails
    /// the batch before anything is removed. A removal that passes the retry cap under
    /// contention fails alone and is named in [`gpuds_core::Error::NotApplied`].
    /// Synchronizes.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = gpuds_hive::HiveMap::<u32, u32>::new(&gpu, 1 << 16)?;
    /// map.insert_many(&[5, 6], &[50, 60])?;
    /// assert_eq!(map.remove_many(&[5, 9])?, 1);
    /// # Ok::<(), gpuds_hive::Error>(())
    /// ```
    pub fn remove_many<I: Input<K> + ?Sized>(&mut self, keys: &I) -> Result<usize> {
        if keys.is_empty() {
            return Ok(0);
        }
        let k = self.stage_keys(keys, true)?;
        self.remove_staged(&k.view())
    }

    pub(super) fn remove_staged(&mut self, keys: &CudaView<'_, K>) -> Result<usize> {
        update_len(keys.len())?;
        let before = self.len;
        let call = CallStatus::new(&self.gpu, keys.len())?;
        let r = self.call_ref(&call);
        let n = keys.len() as u64;
        let null = 0u64;
        let kernel = &self.kernels.erase;
        let shape = self.shape(kernel, keys.len())?;
        let mut args = self.gpu.stream().launch_builder(kernel.func());
        args.arg(&r).arg(keys).arg(&n).arg(&null);
        // SAFETY: the kernel reads n keys and works inside the ref's arrays.
        unsafe { args.launch(shape) }?;
        self.finish_call(&call)
            .map(|()| before.saturating_sub(self.len))
    }

    /// Runs a mixed batch in one kernel (inserts, removes and gets interleaved, as the
    /// paper's imbalanced workload does) and returns what each operation observed: the
    /// key's value just before it (`None`: absent). Synchronizes.
    ///
    /// Operations on different keys are independent; operations on one key take effect
    /// in some serial order. Operations that fail (an insert with the stash full, any
    /// operation past the retry cap) are named in [`gpuds_core::Error::NotApplied`] (in
    /// [`Error::Core`]); the rest of the batch is applied.
    ///
    /// ```no_run
    /// use gpuds_hive::{HiveMap, Operation};
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = HiveMap::<u32, u32>::new(&gpu, 1 << 16)?;
    /// let seen = map.apply(&[Operation::Insert(1, 10), Operation::Get(2), Operation::Remove(3)])?;
    /// assert_eq!(seen, vec![None, None, None]);
    /// # Ok::<(), gpuds_hive::Error>(())
    /// ```
    pub fn apply(&mut self, ops: &[Operation<K, V>]) -> Result<Vec<Option<V>>> {
        if ops.is_empty() {
            return Ok(Vec::new());
        }
        update_len(ops.len())?;
        let keys: Vec<K> = ops
            .iter()
            .map(|op| match *op {
                Operation::Insert(k, _) | Operation::Remove(k) | Operation::Get(k) => k,
            })
            .collect();
        let k = self.stage_keys(&keys, true)?;
        let kinds: Vec<u8> = ops
            .iter()
            .map(|op| match op {
                Operation::Insert(..) => 0,
                Operation::Remove(_) => 1,
                Operation::Get(_) => 2,
            })
            .collect();
        let values: Vec<V> = ops
            .iter()
            .map(|op| match *op {
                Operation::Insert(_, v) => v,
                _ => V::from_u64(0),
            })
            .collect();
        let inserts = kinds.iter().filter(|&&k| k == 0).count();
        self.grow_for(inserts)?;
        let stream = self.gpu.stream();
        let kinds = stream.clone_htod(&kinds)?;
        let values = stream.clone_htod(&values)?;
        let mut observed = stream.alloc_zeros::<u8>(ops.len())?;
        let mut previous = stream.alloc_zeros::<V>(ops.len())?;
        let call = CallStatus::new(&self.gpu, ops.len())?;
        self.launch_apply(
            &call,
            &kinds.as_view(),
            &k.view(),
            &values.as_view(),
            Observations::Split(&mut observed, &mut previous),
        )?;
        let observed = stream.clone_dtoh(&observed)?;
        let previous = stream.clone_dtoh(&previous)?;
        self.finish_call(&call)?;
        Ok(observed
            .into_iter()
            .zip(previous)
            .map(|(o, v)| (o == SEEN_PRESENT).then_some(v))
            .collect())
    }

    /// [`apply`](Self::apply) on a batch already in device memory, for callers that
    /// generate operations on the GPU: `kinds[i]` is 0 (insert `keys[i]` with
    /// `values[i]`), 1 (remove) or 2 (get); `observed[i]` receives what the operation
    /// observed: 1 when the key was present just before it (and `previous[i]` its value
    /// then), 0 when it was absent, 2 when it failed (the call then returns
    /// [`gpuds_core::Error::NotApplied`] naming those operations). Reserved keys are
    /// rejected first (a pass over the keys); kinds other than 0 and 1 are gets.
    /// Synchronizes.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = gpuds_hive::HiveMap::<u64, u64>::new(&gpu, 1 << 16)?;
    /// let s = gpu.stream();
    /// let (kinds, keys, values) = (s.clone_htod(&[0u8, 2])?, s.clone_htod(&[4u64, 4])?, s.clone_htod(&[40u64, 0])?);
    /// let (mut observed, mut previous) = (s.alloc_zeros::<u8>(2)?, s.alloc_zeros::<u64>(2)?);
    /// map.apply_device_into(&kinds.as_view(), &keys.as_view(), &values.as_view(), &mut observed, &mut previous)?;
    /// assert_eq!(s.clone_dtoh(&observed)?, vec![0, 1]);
    /// assert_eq!(s.clone_dtoh(&previous)?[1], 40);
    /// # Ok::<(), gpuds_hive::Error>(())
    /// ```
    pub fn apply_device_into(
        &mut self,
        kinds: &CudaView<'_, u8>,
        keys: &CudaView<'_, K>,
        values: &CudaView<'_, V>,
        observed: &mut CudaSlice<u8>,
        previous: &mut CudaSlice<V>,
    ) -> Result<()> {
        let room = observed.len().min(previous.len());
        self.apply_checked(
            kinds,
            keys,
            values,
            room,
            Observations::Split(observed, previous),
        )
    }

    /// The checks and the launch of a device mixed batch with room for `room` results.
    fn apply_checked(
        &mut self,
        kinds: &CudaView<'_, u8>,
        keys: &CudaView<'_, K>,
        values: &CudaView<'_, V>,
        room: usize,
        out: Observations<'_, V>,
    ) -> Result<()> {
        let n = keys.len();
        if kinds.len() != n || values.len() != n || room < n {
            return Err(gpuds_core::Error::InvalidArgument(format!(
                "{} kinds, {n} keys, {} values and room for {room} results",
                kinds.len(),
                values.len(),
            ))
            .into());
        }
        if n == 0 {
            return Ok(());
        }
        update_len(n)?;
        self.check_device_keys(keys)?;
        // Every operation might be an insert of a new key.
        self.grow_for(n)?;
        let call = CallStatus::new(&self.gpu, n)?;
        self.launch_apply(&call, kinds, keys, values, out)?;
        self.finish_call(&call)
    }

    fn launch_apply(
        &self,
        call: &CallStatus,
        kinds: &CudaView<'_, u8>,
        keys: &CudaView<'_, K>,
        values: &CudaView<'_, V>,
        out: Observations<'_, V>,
    ) -> Result<()> {
        let r = self.call_ref(call);
        let n = keys.len() as u64;
        let null = 0u64;
        let kernel = &self.kernels.apply;
        let shape = self.shape(kernel, keys.len())?;
        let mut args = self.gpu.stream().launch_builder(kernel.func());
        args.arg(&r).arg(kinds).arg(keys).arg(values).arg(&n);
        match out {
            Observations::Split(observed, previous) => args.arg(observed).arg(previous).arg(&null),
            Observations::Packed(packed) => args.arg(&null).arg(&null).arg(packed),
        };
        // SAFETY: the kernel reads n operations and writes n results (into the split
        // outputs, or into the packed words when those are given).
        unsafe { args.launch(shape) }?;
        Ok(())
    }

    /// Removes every pair (the size stays). Synchronizes.
    pub fn clear(&mut self) -> Result<()> {
        let buckets = self.buckets() as u32;
        self.init_buckets(0, buckets)?;
        gpuds_core::primitives::fill(&self.gpu, &mut self.stash, EMPTY)?;
        self.gpu.stream().memset_zeros(&mut self.ctrl)?;
        self.gpu.synchronize()?;
        self.len = 0;
        self.stash_tail = 0;
        Ok(())
    }
}

impl HiveMap<u32, u32> {
    /// [`apply_device_into`](Self::apply_device_into) with what each operation observed
    /// packed into one word, for tables of `u32` pairs: `kinds[i]` is 0 (insert `keys[i]` with
    /// `values[i]`), 1 (remove) or 2 (get), and `out[i]` receives what the operation
    /// observed: `(1 << 32) | value` when the key was present just before it, 0 when it
    /// was absent, `1 << 33` when it failed (the call then returns
    /// [`gpuds_core::Error::NotApplied`] naming those operations). Reserved keys are
    /// rejected first (a pass over the keys); kinds other than 0 and 1 are gets.
    /// Synchronizes.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = gpuds_hive::HiveMap::<u32, u32>::new(&gpu, 1 << 16)?;
    /// let s = gpu.stream();
    /// let (kinds, keys, values) = (s.clone_htod(&[0u8, 2])?, s.clone_htod(&[4u32, 4])?, s.clone_htod(&[40u32, 0])?);
    /// let mut out = s.alloc_zeros::<u64>(2)?;
    /// map.apply_device(&kinds.as_view(), &keys.as_view(), &values.as_view(), &mut out)?;
    /// # Ok::<(), gpuds_hive::Error>(())
    /// ```
    pub fn apply_device(
        &mut self,
        kinds: &CudaView<'_, u8>,
        keys: &CudaView<'_, u32>,
        values: &CudaView<'_, u32>,
        out: &mut CudaSlice<u64>,
    ) -> Result<()> {
        let room = out.len();
        self.apply_checked(kinds, keys, values, room, Observations::Packed(out))
    }
}
