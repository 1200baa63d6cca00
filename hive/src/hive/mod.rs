//! [`HiveMap`]: the resizable bucketed cuckoo hash table of the Hive paper.
//!
//! Pairs are kept in buckets of 16 (or 8, or 32) slots; a bucket is read by a tile of as
//! many lanes, one slot each. Pairs of 32-bit keys and values are packed into one 64-bit
//! word; with `u64` keys (and `u32` or `u64` values) a bucket holds its keys together
//! and their values after them (`u64` values in buckets of 16 slots: in two parts of 8
//! slots, one line each) ([`HiveKey`], [`HiveValue`]).
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
mod queries;
mod resize;
mod stats;
mod types;
mod updates;

use std::marker::PhantomData;

use cudarc::driver::{CudaSlice, CudaView, DevicePtr, LaunchConfig, PushKernelArg};
use gpuds_core::failures::{self, CallStatus};
use gpuds_core::{DeviceType, Gpu, StatusWord};

pub use config::{HashPair, HiveConfig, MAX_BUCKETS};
pub use device::HiveRef;
pub use stats::HiveStats;
pub use types::{HiveKey, HiveValue};

use device::{Counters, Kernels, CTRL_STASH_TAIL, CTRL_WORDS, EMPTY};
use types::{words_per_entry, Layout};

use crate::error::{Error, Result};

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

/// The resizable bucketed cuckoo hash table of the Hive paper, for `u32` keys and values
/// (the default), or `u64` keys with `u32` or `u64` values: `HiveMap<u64, u64>` has the
/// same methods, and other type pairs do not compile. Reserved keys ([`HiveKey::RESERVED`]:
/// `u32::MAX`; `u64::MAX` and `u64::MAX - 1`) are rejected with
/// [`Error::ReservedKey`].
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
/// let mut map = HiveMap::<u32, u32>::new(&gpu, 1 << 20)?;
/// map.insert_many(&[1, 2, 3], &[10, 20, 30])?;
/// assert_eq!(map.get_many(&[2, 4])?, vec![Some(20), None]);
/// assert_eq!(map.remove_many(&[1, 4])?, 1);
/// assert_eq!(map.len(), 2);
/// map.validate()?;
///
/// let mut wide = HiveMap::<u64, u64>::new(&gpu, 1 << 20)?;
/// wide.insert_many(&[1 << 40, 7], &[u64::MAX, 70])?;
/// assert_eq!(wide.get_many(&[1 << 40, 1])?, vec![Some(u64::MAX), None]);
/// # Ok::<(), gpuds_hive::Error>(())
/// ```
pub struct HiveMap<K: HiveKey = u32, V: HiveValue<K> = u32> {
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
    pairs: PhantomData<(K, V)>,
}

impl<K: HiveKey, V: HiveValue<K>> std::fmt::Debug for HiveMap<K, V> {
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

impl<K: HiveKey, V: HiveValue<K>> HiveMap<K, V> {
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
    /// let map = HiveMap::<u32, u32>::with_config(&gpu, HiveConfig {
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
        let kernels = Kernels::load::<K, V>(gpu, config.slots_per_bucket, config.hash)?;
        // At most MAX_BUCKETS (2^30) buckets of at most 32 slots (validated): these
        // products fit, and the allocations report the device running out of memory.
        let buckets = config.buckets() as u32;
        let (level_mask, split) = level_of(buckets);
        let s = config.slots_per_bucket as usize;
        let w = words_per_entry::<K>();
        let bucket_words = Layout::of::<K, V>(s).bucket_words();
        let stream = gpu.stream();
        // SAFETY: hive_init (below) writes every slot and metadata word in use; expansion
        // writes the rest before using it.
        let slots = unsafe { gpu.alloc_uninit::<u64>(buckets as usize * bucket_words, SLOTS) }?;
        let meta = unsafe { gpu.alloc_uninit::<u32>(2 * buckets as usize, META) }?;
        let stash_words = config.stash_capacity(buckets as usize * s) * w;
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
            pairs: PhantomData,
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
    /// let map = gpuds_hive::HiveMap::<u32, u32>::new(&gpu, 1 << 16)?;
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

    /// The C++ type of this table's device ref, whose `#[repr(C)]` twin
    /// [`device_ref`](Self::device_ref) hands out: `gpuds::hive::hive_ref<K, V>` with the
    /// key and value types spelled in C++.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let map = gpuds_hive::HiveMap::<u64, u32>::new(&gpu, 1 << 16)?;
    /// assert_eq!(map.cuda_ref_type(), "gpuds::hive::hive_ref<unsigned long long, unsigned int>");
    /// # Ok::<(), gpuds_hive::Error>(())
    /// ```
    pub fn cuda_ref_type(&self) -> String {
        device::ref_type::<K, V>()
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
            stash_capacity: self.stash_entries() as u32,
            failed_capacity: OWN_FAILED_OPS as u32,
            eviction_bound: self.config.eviction_bound,
        }
    }

    /// Stash entries (each one pair: one or two words).
    fn stash_entries(&self) -> usize {
        self.stash.len() / words_per_entry::<K>()
    }

    /// How the buckets lie in the slot array.
    fn layout(&self) -> Layout {
        Layout::of::<K, V>(self.config.slots_per_bucket as usize)
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
    /// let mut map = gpuds_hive::HiveMap::<u32, u32>::new(&gpu, 1 << 16)?;
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

fn stage<T: DeviceType>(gpu: &Gpu, data: &[T]) -> Result<CudaSlice<T>> {
    Ok(gpu.stream().clone_htod(data)?)
}

/// A batch on the device: copied from the host for this call, or borrowed.
enum Staged<'a, T> {
    Host(CudaSlice<T>),
    Device(CudaView<'a, T>),
}

impl<T: DeviceType> Staged<'_, T> {
    fn view(&self) -> CudaView<'_, T> {
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
