//! [`HiveMap`]: the resizable bucketed cuckoo hash table of the Hive paper.
//!
//! Pairs of 32-bit keys and values are packed into 64-bit words and kept in buckets of
//! 16 (or 8, or 32) slots; a bucket is read by a tile of as many lanes, one slot each.
//! Each key has two candidate buckets (two hash functions, [`HashPair`]); inserts go
//! through the paper's four steps (replace, claim-then-commit, bounded cuckoo eviction,
//! stash), lookups and deletes look in the two buckets and the stash. The table grows
//! and shrinks by linear hashing, K buckets at a time, between batches.
//!
//! The device code is `gpuds/hive/hive_ref.cuh`; [`HiveMap::device_ref`] hands out its
//! mirror for user kernels.

mod config;
mod device;
mod image;
mod resize;
mod stats;

use cudarc::driver::{CudaSlice, CudaView, DevicePtr, LaunchConfig, PushKernelArg};
use gpuds_core::failures::{self, CallStatus};
use gpuds_core::{Gpu, StatusWord};

pub use config::{HashPair, HiveConfig, MAX_BUCKETS};
pub use device::HiveRef;
pub use stats::HiveStats;

use device::{Counters, Kernels, CTRL_STASH_TAIL, CTRL_WORDS, EMPTY};
use image::Image;

use crate::error::{Error, Result};
use crate::{Input, Operation};

pub(crate) use device::programs;

/// Threads per block of every HiveMap kernel.
const BLOCK: u32 = 256;
/// The most operations of a bulk insert per pair of kernels (the queue between them has
/// room for that many indices, 64 MiB).
const QUEUED: usize = 1 << 24;
/// Operations of a user kernel (through [`HiveMap::device_ref`]) whose failure the
/// table's own failure bits record (indices below this; 8 KiB of bits).
const OWN_FAILED_OPS: usize = 1 << 16;
/// What the table's allocations are for, as out-of-memory errors name them.
const SLOTS: &str = "the table's slots";
const META: &str = "the table's bucket metadata";
const STASH: &str = "the table's stash";

/// The resizable bucketed cuckoo hash table of the Hive paper, for 32-bit keys and
/// values. Key `u32::MAX` is reserved (it is the key of the empty slot word).
///
/// Every operation is a batch run by one kernel on [`Gpu::stream`]. Updates take
/// `&mut self`, synchronize at their end (they read back the status word and the length)
/// and may resize the table afterwards when [`HiveConfig::auto_resize`] is on; queries
/// take `&self`.
///
/// # Examples
/// ```no_run
/// use gpuds_hive::HiveMap;
/// let gpu = gpuds_core::Gpu::new(0)?;
/// let mut map = HiveMap::new(&gpu, 1 << 20)?;
/// map.insert_many(&[1, 2, 3], &[10, 20, 30])?;
/// assert_eq!(map.get_many(&[2, 4])?, vec![Some(20), None]);
/// assert_eq!(map.remove_many(&[1, 4])?, 1);
/// assert_eq!(map.len(), 2);
/// map.validate()?;
/// # Ok::<(), gpuds_hive::Error>(())
/// ```
pub struct HiveMap {
    gpu: Gpu,
    config: HiveConfig,
    kernels: Kernels,
    slots: CudaSlice<u64>,
    meta: CudaSlice<u32>,
    stash: CudaSlice<u64>,
    ctrl: CudaSlice<u64>,
    failed: CudaSlice<u32>,
    status: StatusWord,
    level_mask: u32,
    split: u32,
    min_buckets: u32,
    len: usize,
    /// Stash reservations after the last update (the host's copy of the tail).
    stash_tail: u64,
    /// The bulk insert's queue of the inserts its first kernel leaves to the second (two
    /// counters, then indices into the batch), kept for later batches: 4 bytes per
    /// operation of the largest batch so far, at most 64 MiB.
    queue: Option<CudaSlice<u32>>,
    expansions: u64,
    contractions: u64,
}

impl std::fmt::Debug for HiveMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HiveMap")
            .field("len", &self.len)
            .field("buckets", &self.buckets())
            .field("level_mask", &self.level_mask)
            .field("split", &self.split)
            .field("config", &self.config)
            .finish()
    }
}

/// Splits a bucket count into a linear-hashing level mask and split pointer.
fn level_of(buckets: u32) -> (u32, u32) {
    let base = 1u32 << buckets.ilog2();
    (base - 1, buckets - base)
}

impl HiveMap {
    /// A table with at least `capacity` slots and the default [`HiveConfig`].
    /// Synchronizes.
    ///
    /// More than [`MAX_BUCKETS`] buckets' worth of slots is a
    /// [`CapacityOverflow`](gpuds_core::Error::CapacityOverflow); a table the device has
    /// no room for is [`OutOfMemory`](gpuds_core::Error::OutOfMemory).
    pub fn new(gpu: &Gpu, capacity: usize) -> Result<Self> {
        Self::with_config(
            gpu,
            HiveConfig {
                capacity,
                ..Default::default()
            },
        )
    }

    /// A table shaped by `config` (checked first). Synchronizes.
    ///
    /// ```no_run
    /// use gpuds_hive::{HashPair, HiveConfig, HiveMap};
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let map = HiveMap::with_config(&gpu, HiveConfig {
    ///     capacity: 1 << 20,
    ///     slots_per_bucket: 32,
    ///     hash: HashPair::Crc32,
    ///     auto_resize: false,
    ///     ..Default::default()
    /// })?;
    /// assert_eq!(map.capacity(), 1 << 20);
    /// # Ok::<(), gpuds_hive::Error>(())
    /// ```
    pub fn with_config(gpu: &Gpu, config: HiveConfig) -> Result<Self> {
        config.validate()?;
        let kernels = Kernels::load(gpu, config.slots_per_bucket, config.hash)?;
        // At most MAX_BUCKETS (2^30) buckets of at most 32 slots (validated): these
        // products fit, and the allocations report the device running out of memory.
        let buckets = config.buckets() as u32;
        let (level_mask, split) = level_of(buckets);
        let s = config.slots_per_bucket as usize;
        let stream = gpu.stream();
        // SAFETY: hive_init (below) writes every slot and metadata word in use; expansion
        // writes the rest before using it.
        let slots = unsafe { gpu.alloc_uninit::<u64>(buckets as usize * s, SLOTS) }?;
        let meta = unsafe { gpu.alloc_uninit::<u32>(2 * buckets as usize, META) }?;
        let stash_words = config.stash_capacity(buckets as usize * s);
        // SAFETY: filled with empty words right below.
        let mut stash = unsafe { gpu.alloc_uninit::<u64>(stash_words, STASH) }?;
        gpuds_core::primitives::fill(gpu, &mut stash, EMPTY)?;
        let mut map = HiveMap {
            gpu: gpu.clone(),
            kernels,
            slots,
            meta,
            stash,
            ctrl: stream.alloc_zeros::<u64>(CTRL_WORDS)?,
            failed: stream.alloc_zeros::<u32>(failures::words_for(OWN_FAILED_OPS))?,
            status: StatusWord::new(gpu)?,
            level_mask,
            split,
            min_buckets: buckets,
            len: 0,
            stash_tail: 0,
            queue: None,
            expansions: 0,
            contractions: 0,
            config,
        };
        map.init_buckets(0, buckets)?;
        map.gpu.synchronize()?;
        Ok(map)
    }

    /// The configuration the table was made with.
    pub fn config(&self) -> &HiveConfig {
        &self.config
    }

    /// The defines a user kernel that includes `gpuds/hive/hive_ref.cuh` must be compiled
    /// with to work on this table.
    ///
    /// ```no_run
    /// use gpuds_core::Program;
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let map = gpuds_hive::HiveMap::new(&gpu, 1 << 16)?;
    /// let mut program = Program::new("mine", "#include <gpuds/hive/hive_ref.cuh>\n")
    ///     .headers(gpuds_hive::cuda_headers());
    /// for (name, value) in map.defines() {
    ///     program = program.define(name, value);
    /// }
    /// # Ok::<(), gpuds_hive::Error>(())
    /// ```
    pub fn defines(&self) -> Vec<(&'static str, u32)> {
        vec![
            ("HIVE_SLOTS", self.config.slots_per_bucket),
            ("HIVE_HASH", self.config.hash.define()),
        ]
    }

    /// Pairs stored (known on the host after every update; no synchronization).
    pub fn len(&self) -> usize {
        self.len
    }

    /// `true` when no pair is stored.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Buckets in use.
    pub fn buckets(&self) -> usize {
        self.level_mask as usize + 1 + self.split as usize
    }

    /// Slots in use: buckets times slots per bucket.
    pub fn capacity(&self) -> usize {
        self.buckets() * self.config.slots_per_bucket as usize
    }

    /// `len / capacity`.
    pub fn load_factor(&self) -> f64 {
        self.len as f64 / self.capacity() as f64
    }

    /// The device view for user kernels (valid until the next `&mut self` call). After
    /// a user kernel changed the table through it, call [`refresh`](Self::refresh)
    /// before the next host call, so that the host's length and stash state are current
    /// and what the kernel recorded is reported. The ref carries the table's own status
    /// word and failure bits (operations with an index below 65,536 get one); host calls
    /// never use or read them, each having its own.
    pub fn device_ref(&self) -> HiveRef {
        let stream = self.gpu.stream();
        let ptr = |p: u64| p;
        let (slots, _a) = self.slots.device_ptr(stream);
        let (meta, _b) = self.meta.device_ptr(stream);
        let (stash, _c) = self.stash.device_ptr(stream);
        let (ctrl, _d) = self.ctrl.device_ptr(stream);
        let (status, _e) = self.status.slice().device_ptr(stream);
        let (failed, _f) = self.failed.device_ptr(stream);
        HiveRef {
            slots: ptr(slots),
            meta: ptr(meta),
            stash: ptr(stash),
            ctrl: ptr(ctrl),
            status: ptr(status),
            failed: ptr(failed),
            level_mask: self.level_mask,
            split: self.split,
            buckets: self.buckets() as u32,
            stash_capacity: self.stash.len() as u32,
            failed_capacity: OWN_FAILED_OPS as u32,
            eviction_bound: self.config.eviction_bound,
        }
    }

    /// The ref a host call's kernels get: the call's own status word and a failure bit
    /// for each of its operations.
    fn call_ref(&self, call: &CallStatus) -> HiveRef {
        HiveRef {
            status: call.status_ptr(),
            failed: call.bits_ptr(),
            failed_capacity: u32::try_from(call.ops()).unwrap_or(u32::MAX),
            ..self.device_ref()
        }
    }

    /// Reads the length and the stash state back from the device, after user kernels
    /// wrote through [`device_ref`](Self::device_ref), and reports (and clears) what they
    /// recorded in the table's status word and failure bits:
    /// [`gpuds_core::Error::NotApplied`] naming the operations marked failed, or
    /// [`gpuds_core::Error::Status`] for flags that name none. Synchronizes.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = gpuds_hive::HiveMap::new(&gpu, 1 << 16)?;
    /// let r = map.device_ref();
    /// // ... launch a kernel that inserts through `r` ...
    /// # let _ = r;
    /// map.refresh()?;
    /// # Ok::<(), gpuds_hive::Error>(())
    /// ```
    pub fn refresh(&mut self) -> Result<()> {
        let status = self.status.take()?;
        let failure = if status.is_ok() {
            None
        } else {
            let stream = self.gpu.stream().clone();
            let bits = stream.clone_dtoh(&self.failed)?;
            stream.memset_zeros(&mut self.failed)?;
            failures::error_of(status, failures::indices(&bits, OWN_FAILED_OPS))
        };
        self.finish_update(failure.map(Error::from))
    }

    fn shape(&self, kernel: &gpuds_core::Kernel, items: usize) -> Result<LaunchConfig> {
        let threads = items.div_ceil(self.config.slots_per_bucket as usize)
            * self.config.slots_per_bucket as usize;
        Ok(self.gpu.grid_for(kernel, threads.max(1), BLOCK)?)
    }

    fn init_buckets(&mut self, from: u32, to: u32) -> Result<()> {
        if from >= to {
            return Ok(());
        }
        let r = self.device_ref();
        let kernel = &self.kernels.init;
        let shape = self.shape(
            kernel,
            (to - from) as usize * self.config.slots_per_bucket as usize,
        )?;
        let mut args = self.gpu.stream().launch_builder(kernel.func());
        args.arg(&r).arg(&from).arg(&to);
        // SAFETY: the ref's arrays hold every bucket below `to`.
        unsafe { args.launch(shape) }?;
        Ok(())
    }

    /// Puts a batch of keys on the device: a host batch is checked for reserved keys
    /// and copied; a device batch is used in place, and checked by a pass over it when
    /// `check_device` (updates must not apply anything of a batch with a reserved key).
    fn stage_keys<'a, I: Input<u32> + ?Sized>(
        &self,
        keys: &'a I,
        check_device: bool,
    ) -> Result<Staged<'a>> {
        match keys.as_device() {
            Some(view) => {
                if check_device {
                    self.check_device_keys(&view)?;
                }
                Ok(Staged::Device(view))
            }
            None => {
                let host = keys.as_host().unwrap_or(&[]);
                if let Some((index, key)) = gpuds_core::keys::first_reserved(host, &[u32::MAX]) {
                    return Err(Error::ReservedKey {
                        index,
                        key: key as u64,
                    });
                }
                Ok(Staged::Host(stage(&self.gpu, host)?))
            }
        }
    }

    /// Rejects reserved keys in a device batch (one pass; synchronizes).
    fn check_device_keys(&self, keys: &CudaView<'_, u32>) -> Result<()> {
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
                key: key as u64,
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
    /// let mut map = gpuds_hive::HiveMap::new(&gpu, 1 << 16)?;
    /// map.insert_many(&[7, 8], &[70, 80])?;
    /// assert!(map.insert_many(&[1, u32::MAX], &[0, 0]).is_err());
    /// # Ok::<(), gpuds_hive::Error>(())
    /// ```
    pub fn insert_many<KI, VI>(&mut self, keys: &KI, values: &VI) -> Result<()>
    where
        KI: Input<u32> + ?Sized,
        VI: Input<u32> + ?Sized,
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

    fn insert_staged(
        &mut self,
        keys: &CudaView<'_, u32>,
        values: &CudaView<'_, u32>,
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
        // no fill beside them (see kernels/hive.cu).
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

    /// Looks keys up: the value of each, or `None`. Synchronizes. Lookups cannot fail
    /// (no writer runs beside them, so they never wait or retry) and report nothing; in
    /// particular nothing an earlier call or a user kernel recorded.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = gpuds_hive::HiveMap::new(&gpu, 1 << 16)?;
    /// map.insert_many(&[5], &[50])?;
    /// assert_eq!(map.get_many(&[5, 6])?, vec![Some(50), None]);
    /// # Ok::<(), gpuds_hive::Error>(())
    /// ```
    pub fn get_many<I: Input<u32> + ?Sized>(&self, keys: &I) -> Result<Vec<Option<u32>>> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let k = self.stage_keys(keys, false)?;
        let stream = self.gpu.stream();
        let mut values = stream.alloc_zeros::<u32>(keys.len())?;
        let mut found = stream.alloc_zeros::<u8>(keys.len())?;
        self.launch_find(&k.view(), Some(&mut values), Some(&mut found), 0)?;
        let values = stream.clone_dtoh(&values)?;
        let found = stream.clone_dtoh(&found)?;
        Ok(values
            .into_iter()
            .zip(found)
            .map(|(v, f)| (f != 0).then_some(v))
            .collect())
    }

    /// Looks keys up into `values` (`absent` for missing keys). Device keys are not
    /// checked for the reserved key, which is simply never found; host keys are. Does
    /// not synchronize for device keys: the work is enqueued on [`Gpu::stream`]. As for
    /// [`get_many`](Self::get_many), the lookups cannot fail, so there is no status to
    /// read later.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let map = gpuds_hive::HiveMap::new(&gpu, 1 << 16)?;
    /// let keys = gpu.stream().clone_htod(&[1u32, 2])?;
    /// let mut values = gpu.stream().alloc_zeros::<u32>(2)?;
    /// map.get_many_into(&keys.as_view(), &mut values, u32::MAX)?;
    /// assert_eq!(gpu.stream().clone_dtoh(&values)?, vec![u32::MAX; 2]);
    /// # Ok::<(), gpuds_hive::Error>(())
    /// ```
    pub fn get_many_into<I: Input<u32> + ?Sized>(
        &self,
        keys: &I,
        values: &mut CudaSlice<u32>,
        absent: u32,
    ) -> Result<()> {
        if values.len() < keys.len() {
            return Err(gpuds_core::Error::InvalidArgument(format!(
                "{} keys but room for {} values",
                keys.len(),
                values.len()
            ))
            .into());
        }
        if keys.is_empty() {
            return Ok(());
        }
        let k = self.stage_keys(keys, false)?;
        self.launch_find(&k.view(), Some(values), None, absent)
    }

    /// Whether each key is present. Synchronizes.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = gpuds_hive::HiveMap::new(&gpu, 1 << 16)?;
    /// map.insert_many(&[5], &[50])?;
    /// assert_eq!(map.contains_many(&[5, 6])?, vec![true, false]);
    /// # Ok::<(), gpuds_hive::Error>(())
    /// ```
    pub fn contains_many<I: Input<u32> + ?Sized>(&self, keys: &I) -> Result<Vec<bool>> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let k = self.stage_keys(keys, false)?;
        let stream = self.gpu.stream();
        let mut found = stream.alloc_zeros::<u8>(keys.len())?;
        self.launch_find(&k.view(), None, Some(&mut found), 0)?;
        let found = stream.clone_dtoh(&found)?;
        Ok(found.into_iter().map(|f| f != 0).collect())
    }

    fn launch_find(
        &self,
        keys: &CudaView<'_, u32>,
        values: Option<&mut CudaSlice<u32>>,
        found: Option<&mut CudaSlice<u8>>,
        absent: u32,
    ) -> Result<()> {
        let stream = self.gpu.stream();
        let mut r = self.device_ref();
        if self.stash_tail == 0 {
            // No writer runs with this kernel: an empty stash stays empty.
            r.stash_capacity = 0;
        }
        let n = keys.len() as u64;
        let null = 0u64;
        let kernel = &self.kernels.find;
        let shape = self.shape(kernel, keys.len())?;
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&r).arg(keys).arg(&n);
        match values {
            Some(v) => args.arg(v),
            None => args.arg(&null),
        };
        match found {
            Some(f) => args.arg(f),
            None => args.arg(&null),
        };
        args.arg(&absent);
        // SAFETY: the kernel reads n keys and writes n entries of each non-null output.
        unsafe { args.launch(shape) }?;
        Ok(())
    }

    /// Removes keys (host or device); returns how many were present. A reserved key fails
    /// the batch before anything is removed. A removal that passes the retry cap under
    /// contention fails alone and is named in [`gpuds_core::Error::NotApplied`].
    /// Synchronizes.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = gpuds_hive::HiveMap::new(&gpu, 1 << 16)?;
    /// map.insert_many(&[5, 6], &[50, 60])?;
    /// assert_eq!(map.remove_many(&[5, 9])?, 1);
    /// # Ok::<(), gpuds_hive::Error>(())
    /// ```
    pub fn remove_many<I: Input<u32> + ?Sized>(&mut self, keys: &I) -> Result<usize> {
        if keys.is_empty() {
            return Ok(0);
        }
        let k = self.stage_keys(keys, true)?;
        self.remove_staged(&k.view())
    }

    fn remove_staged(&mut self, keys: &CudaView<'_, u32>) -> Result<usize> {
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
    /// let mut map = HiveMap::new(&gpu, 1 << 16)?;
    /// let seen = map.apply(&[Operation::Insert(1, 10), Operation::Get(2), Operation::Remove(3)])?;
    /// assert_eq!(seen, vec![None, None, None]);
    /// # Ok::<(), gpuds_hive::Error>(())
    /// ```
    pub fn apply(&mut self, ops: &[Operation<u32, u32>]) -> Result<Vec<Option<u32>>> {
        if ops.is_empty() {
            return Ok(Vec::new());
        }
        update_len(ops.len())?;
        let keys: Vec<u32> = ops
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
        let values: Vec<u32> = ops
            .iter()
            .map(|op| match *op {
                Operation::Insert(_, v) => v,
                _ => 0,
            })
            .collect();
        let inserts = kinds.iter().filter(|&&k| k == 0).count();
        self.grow_for(inserts)?;
        let stream = self.gpu.stream();
        let kinds = stream.clone_htod(&kinds)?;
        let values = stream.clone_htod(&values)?;
        let mut out = stream.alloc_zeros::<u64>(ops.len())?;
        let call = CallStatus::new(&self.gpu, ops.len())?;
        self.launch_apply(
            &call,
            &kinds.as_view(),
            &k.view(),
            &values.as_view(),
            &mut out,
        )?;
        let out = stream.clone_dtoh(&out)?;
        self.finish_call(&call)?;
        Ok(out
            .into_iter()
            .map(|w| (w & (1 << 32) != 0).then_some(w as u32))
            .collect())
    }

    /// [`apply`](Self::apply) on a batch already in device memory, for callers that
    /// generate operations on the GPU: `kinds[i]` is 0 (insert `keys[i]` with
    /// `values[i]`), 1 (remove) or 2 (get), and `out[i]` receives what the operation
    /// observed: `(1 << 32) | value` when the key was present just before it, 0 when it
    /// was absent, `1 << 33` when it failed (the call then returns
    /// [`gpuds_core::Error::NotApplied`] naming those operations). Reserved keys are
    /// rejected first (a pass over the keys); kinds other than 0 and 1 are gets.
    /// Synchronizes.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = gpuds_hive::HiveMap::new(&gpu, 1 << 16)?;
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
        let n = keys.len();
        if kinds.len() != n || values.len() != n || out.len() < n {
            return Err(gpuds_core::Error::InvalidArgument(format!(
                "{} kinds, {n} keys, {} values and room for {} results",
                kinds.len(),
                values.len(),
                out.len()
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
        keys: &CudaView<'_, u32>,
        values: &CudaView<'_, u32>,
        out: &mut CudaSlice<u64>,
    ) -> Result<()> {
        let r = self.call_ref(call);
        let n = keys.len() as u64;
        let kernel = &self.kernels.apply;
        let shape = self.shape(kernel, keys.len())?;
        let mut args = self.gpu.stream().launch_builder(kernel.func());
        args.arg(&r)
            .arg(kinds)
            .arg(keys)
            .arg(values)
            .arg(&n)
            .arg(out);
        // SAFETY: the kernel reads n operations and writes n results.
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

    /// Every pair, in no particular order. Synchronizes.
    pub fn to_vec(&self) -> Result<Vec<(u32, u32)>> {
        Ok(self.image()?.pairs())
    }

    /// Size, load, stash occupancy and the insert-step counts. Synchronizes.
    pub fn stats(&self) -> Result<HiveStats> {
        let stream = self.gpu.stream();
        let ctrl = stream.clone_dtoh(&self.ctrl)?;
        let counters = Counters::of(&ctrl);
        let stash = stream.clone_dtoh(&self.stash)?;
        let stash_used = stash.iter().filter(|&&w| w != EMPTY).count();
        let s = self.config.slots_per_bucket as usize;
        let allocated = self.slots.len() / s;
        Ok(HiveStats {
            len: self.len,
            capacity: self.capacity(),
            buckets: self.buckets(),
            allocated_buckets: allocated,
            load_factor: self.load_factor(),
            level_mask: self.level_mask,
            split: self.split,
            stash_used,
            stash_capacity: stash.len(),
            stash_occupancy: stash_used as f64 / stash.len() as f64,
            insert_steps: counters.steps,
            evictions: counters.moves,
            expansions: self.expansions,
            contractions: self.contractions,
            memory_bytes: allocated * (s * 8 + 8)
                + stash.len() * 8
                + self.queue.as_ref().map_or(0, |q| q.len() * 4),
        })
    }

    /// Zeroes the insert-step and eviction counters of [`stats`](Self::stats).
    /// Synchronizes.
    pub fn reset_counters(&mut self) -> Result<()> {
        let stream = self.gpu.stream();
        let mut ctrl = stream.clone_dtoh(&self.ctrl)?;
        Counters::reset_history(&mut ctrl);
        stream.memcpy_htod(&ctrl, &mut self.ctrl)?;
        self.gpu.synchronize()?;
        Ok(())
    }

    /// Copies the table to the host and checks its invariants: every free bit matches
    /// an empty slot, no bucket is locked, every key sits in one of its two buckets
    /// (under the current level mask and split pointer) or in the stash below its tail,
    /// a key outside its first bucket has that bucket's SPILL (second bucket) or STASHED
    /// (stash) flag set, no key is stored twice, and the count matches the length.
    /// Synchronizes.
    pub fn validate(&self) -> Result<()> {
        let image = self.image()?;
        image.check().map_err(Error::Invalid)?;
        if image.len as usize != self.len {
            return Err(Error::Invalid(format!(
                "the device counts {} pairs, the host {}",
                image.len, self.len
            )));
        }
        Ok(())
    }

    fn image(&self) -> Result<Image> {
        let stream = self.gpu.stream();
        let s = self.config.slots_per_bucket as usize;
        let buckets = self.buckets();
        let ctrl = stream.clone_dtoh(&self.ctrl)?;
        Ok(Image {
            slots_per_bucket: self.config.slots_per_bucket,
            hash: self.config.hash,
            level_mask: self.level_mask,
            split: self.split,
            slots: stream.clone_dtoh(&self.slots.slice(..buckets * s))?,
            meta: stream.clone_dtoh(&self.meta.slice(..2 * buckets))?,
            stash: stream.clone_dtoh(&self.stash)?,
            stash_tail: ctrl[CTRL_STASH_TAIL],
            len: Counters::of(&ctrl).len,
        })
    }

    /// After an update call: its own status (the operations it could not apply, see
    /// [`finish_update`](Self::finish_update)). Synchronizes.
    fn finish_call(&mut self, call: &CallStatus) -> Result<()> {
        let failure = call.check().err().map(Error::from);
        self.finish_update(failure)
    }

    /// After an update: reads the length and the stash state, resizes if the load asks
    /// for it (also after a failure: the table is valid and the failed operations took
    /// no room), then returns `failure`, the update's own error, if any.
    fn finish_update(&mut self, failure: Option<Error>) -> Result<()> {
        let ctrl = self.gpu.stream().clone_dtoh(&self.ctrl)?;
        self.len = Counters::of(&ctrl).len as usize;
        self.stash_tail = ctrl[CTRL_STASH_TAIL];
        self.after_update()?;
        match failure {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

fn check_lengths(keys: usize, values: usize) -> Result<()> {
    if keys != values {
        return Err(
            gpuds_core::Error::InvalidArgument(format!("{keys} keys but {values} values")).into(),
        );
    }
    Ok(())
}

fn stage(gpu: &Gpu, data: &[u32]) -> Result<CudaSlice<u32>> {
    Ok(gpu.stream().clone_htod(data)?)
}

/// A batch on the device: copied from the host for this call, or borrowed.
enum Staged<'a> {
    Host(CudaSlice<u32>),
    Device(CudaView<'a, u32>),
}

impl Staged<'_> {
    fn view(&self) -> CudaView<'_, u32> {
        match self {
            Staged::Host(s) => s.as_view(),
            Staged::Device(v) => v.slice(..),
        }
    }
}

/// Checks the length of an update batch: its kernels record failed operations by 32-bit
/// index, so a longer batch is refused whole
/// ([`CapacityOverflow`](gpuds_core::Error::CapacityOverflow)), never truncated.
fn update_len(n: usize) -> Result<()> {
    gpuds_core::size::u32_len(n, "operations of an update batch")?;
    Ok(())
}
