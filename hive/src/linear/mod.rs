//! [`LinearProbeMap`]: the simple lock-free open-addressing table (Farrell, 2020) on the
//! shared probing core ([`crate::probe`]).
//!
//! ```text
//! LinearProbeMap::new(gpu: &Gpu, capacity: u64) -> Result<Self>
//! LinearProbeMap::with_config(gpu: &Gpu, config: LinearConfig) -> Result<Self>
//! insert_many(&mut self, keys: &impl Input<K>, values: &impl Input<V>) -> Result<()>
//! get_many(&mut self, keys) -> Result<Vec<Option<V>>>
//! get_many_into(&mut self, keys, out: &mut CudaSlice<V>) -> Result<()>
//! contains_many(&mut self, keys) -> Result<Vec<bool>>
//! remove_many(&mut self, keys) -> Result<()>
//! insert_many_async, get_many_into_async, remove_many_async, check
//! apply(&mut self, ops: &[Operation<K, V>]) -> Result<Vec<Option<V>>>
//! len, is_empty, capacity, clear, to_vec, stats, validate, rehash, reserve, device_ref
//! ```
//!
//! # The table
//!
//! Power-of-two capacity; each slot holds one key and one value (one 8-byte word for
//! `u32` keys and values, 16 bytes otherwise); keys are hashed with the murmur3
//! finalizer. An insert claims a slot by compare-and-swap on the empty slot and a key
//! never moves afterwards; a lookup stops at the first window holding an empty slot.
//! Probing is linear (default) or double hashing, by groups of 1 to 32 lanes
//! ([`LinearConfig`]).
//!
//! Reserved: keys `K::MAX` (the empty key) and `K::MAX - 1` (the erased key of key
//! tombstones; reserved in both modes so that the key domain does not depend on the
//! mode), and the value `V::MAX` (the empty value, which marks absence). For `u32`:
//! keys `0xffff_ffff` and `0xffff_fffe`, value `0xffff_ffff`. Batches holding them are
//! rejected with [`Error::ReservedKey`] / [`Error::ReservedValue`] and nothing is applied.
//!
//! Deletion ([`Deletion`]): value tombstones (default; safe with any concurrent mix) or
//! key tombstones with slot reuse (for batches that never mix inserts and removes).
//!
//! | call | synchronizes the stream? |
//! | --- | --- |
//! | `insert_many`, `get_many(_into)`, `contains_many`, `remove_many`, `apply`, `check`, `len`, `stats`, `to_vec`, `validate`, `clear`, `rehash`, `reserve` | yes: each reads the table's status (or its result) back |
//! | `insert_many_async`, `get_many_into_async`, `remove_many_async` | no: work is enqueued on the GPU's stream and problems are reported by the next `check` (never by a synchronizing call, which reports its own kernels only); they synchronize only to count occupied slots when an insert batch may pass the maximum load factor |
//! | `device_ref`, `capacity`, `config` | no |

mod check;
mod config;
mod control;
mod input;
pub(crate) mod kernels;

use std::marker::PhantomData;

use cudarc::driver::{CudaSlice, CudaView, DevicePtr, DeviceRepr, LaunchConfig, PushKernelArg};
use gpuds_core::{DeviceKey, DeviceValue, Gpu, Kernel};

pub use check::LinearStats;
pub use config::{Deletion, LinearConfig, WhenFull, MAX_CAPACITY};
pub use input::Input;

use crate::error::{Error, Result};
use crate::probe::Geometry;
use control::{Control, Region, Reserved};
use input::Staged;
use kernels::{Kernels, Variant};

/// Threads per block of the operation kernels.
const BLOCK: u32 = 256;
/// Threads per block of the erase kernel, launched with one tile per key (see
/// `erase_shape`).
const ERASE_BLOCK: u32 = 1024;

/// One operation of a mixed batch ([`LinearProbeMap::apply`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operation<K, V> {
    /// Insert or replace.
    Insert(K, V),
    /// Remove.
    Remove(K),
    /// Look up.
    Get(K),
}

impl<K: Copy, V> Operation<K, V> {
    fn key(&self) -> K {
        match *self {
            Operation::Insert(k, _) | Operation::Remove(k) | Operation::Get(k) => k,
        }
    }
}

/// The device ref of a [`LinearProbeMap`]: `#[repr(C)]` twin of
/// `gpuds::hive::linear_ref<K, V, G, Probing, KEY_TOMBSTONES>` (see
/// [`LinearProbeMap::cuda_ref_type`] for the exact instantiation). Non-owning: valid
/// while the map lives and is not rebuilt.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinearRef {
    /// Device address of the slot array.
    pub slots: u64,
    /// The table's geometry.
    pub geometry: Geometry,
    /// Device address of the table's status word (`unsigned*`).
    pub status: u64,
}

// SAFETY: plain data with the layout of its C++ twin (checked by a layout test).
unsafe impl DeviceRepr for LinearRef {}

/// The simple lock-free GPU hash table: open addressing with compare-and-swap inserts,
/// value or key tombstones, linear or double-hashing probing by groups of 1 to 32 lanes.
///
/// See the [module documentation](self) for the table, its reserved keys and which
/// calls synchronize.
///
/// # Examples
/// ```no_run
/// use gpuds_core::Gpu;
/// use gpuds_hive::{LinearProbeMap, Operation};
/// let gpu = Gpu::new(0)?;
/// let mut map = LinearProbeMap::<u32, u32>::new(&gpu, 1 << 20)?;
/// map.insert_many(&[1, 2, 3], &[10, 20, 30])?;
/// assert_eq!(map.get_many(&[2, 4])?, vec![Some(20), None]);
/// map.remove_many(&[1])?;
/// assert_eq!(map.len()?, 2);
/// let seen = map.apply(&[Operation::Insert(4, 40), Operation::Get(3), Operation::Remove(2)])?;
/// assert_eq!(seen, vec![None, Some(30), Some(20)]);
/// map.validate()?;
/// # Ok::<(), gpuds_hive::Error>(())
/// ```
pub struct LinearProbeMap<K: DeviceKey, V: DeviceValue> {
    gpu: Gpu,
    config: LinearConfig,
    kernels: Kernels,
    variant: Variant,
    geometry: Geometry,
    slots: CudaSlice<u64>,
    /// Where kernels report: the running synchronizing call's region and the pending
    /// region of the `_async` calls (see `control.rs`).
    control: Control,
    /// An upper bound on the occupied slots (live pairs and tombstones).
    occupied_bound: u64,
    pairs: PhantomData<(K, V)>,
}

impl<K: DeviceKey, V: DeviceValue> std::fmt::Debug for LinearProbeMap<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinearProbeMap")
            .field("config", &self.config)
            .field("capacity", &self.capacity())
            .field("occupied_bound", &self.occupied_bound)
            .finish()
    }
}

impl<K: DeviceKey, V: DeviceValue> LinearProbeMap<K, V> {
    /// An empty table of at least `capacity` slots (rounded up to a power of two) with
    /// the default [`LinearConfig`].
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let map = gpuds_hive::LinearProbeMap::<u64, u64>::new(&gpu, 1000)?;
    /// assert_eq!(map.capacity(), 1024);
    /// # Ok::<(), gpuds_hive::Error>(())
    /// ```
    pub fn new(gpu: &Gpu, capacity: u64) -> Result<Self> {
        Self::with_config(
            gpu,
            LinearConfig {
                capacity,
                ..LinearConfig::default()
            },
        )
    }

    /// An empty table configured by `config` (checked first).
    ///
    /// ```no_run
    /// use gpuds_hive::{probe::{GroupWidth, Probing}, LinearConfig, LinearProbeMap};
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let config = LinearConfig {
    ///     capacity: 1 << 16,
    ///     probing: Probing::DoubleHashing,
    ///     group_width: GroupWidth::new(8)?,
    ///     ..LinearConfig::default()
    /// };
    /// let map = LinearProbeMap::<u32, u32>::with_config(&gpu, config)?;
    /// assert_eq!(map.capacity(), 1 << 16);
    /// # Ok::<(), gpuds_hive::Error>(())
    /// ```
    pub fn with_config(gpu: &Gpu, config: LinearConfig) -> Result<Self> {
        config.validate()?;
        let variant = Variant::of::<K, V>(&config);
        let kernels = Kernels::load(gpu, &variant)?;
        let capacity = config.slots()?;
        let geometry = Geometry::new(capacity, config.group_width, config.probing)?;
        let slots = Self::empty_slots(gpu, capacity)?;
        let control = Control::new(gpu)?;
        Ok(LinearProbeMap {
            gpu: gpu.clone(),
            config,
            kernels,
            variant,
            geometry,
            slots,
            control,
            occupied_bound: 0,
            pairs: PhantomData,
        })
    }

    /// 8-byte words per slot: one for 4-byte keys and values, else two.
    fn words_per_slot() -> usize {
        if std::mem::size_of::<K>() == 4 && std::mem::size_of::<V>() == 4 {
            1
        } else {
            2
        }
    }

    /// A slot array of `capacity` empty slots: [`gpuds_core::Error::CapacityOverflow`]
    /// when its size overflows, [`gpuds_core::Error::OutOfMemory`] when the device has no
    /// room for it.
    fn empty_slots(gpu: &Gpu, capacity: u64) -> Result<CudaSlice<u64>> {
        let words =
            gpuds_core::size::checked_mul(capacity, Self::words_per_slot() as u64, "slot words")?;
        let words = gpuds_core::size::to_usize(words, "slot words")?;
        // SAFETY: every word is filled with the empty pattern before use.
        let mut slots = unsafe { gpu.alloc_uninit::<u64>(words, "the table's slots") }?;
        gpuds_core::primitives::fill(gpu, &mut slots, u64::MAX)?;
        Ok(slots)
    }

    /// The reserved keys: the empty key `K::MAX` and the erased key `K::MAX - 1`.
    ///
    /// ```
    /// assert_eq!(gpuds_hive::LinearProbeMap::<u32, u32>::reserved_keys(), [u32::MAX, u32::MAX - 1]);
    /// ```
    pub fn reserved_keys() -> [K; 2] {
        [K::MAX, K::from_u64(K::MAX.to_u64() - 1)]
    }

    /// The reserved value `V::MAX`, which marks absence.
    ///
    /// ```
    /// assert_eq!(gpuds_hive::LinearProbeMap::<u32, u64>::reserved_value(), u64::MAX);
    /// ```
    pub fn reserved_value() -> V {
        V::from_u64(u64::MAX)
    }

    /// The configuration (its capacity is the one asked for; see [`capacity`](Self::capacity)).
    pub fn config(&self) -> &LinearConfig {
        &self.config
    }

    /// The number of slots. Does not synchronize.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// assert_eq!(gpuds_hive::LinearProbeMap::<u32, u32>::new(&gpu, 100)?.capacity(), 128);
    /// # Ok::<(), gpuds_hive::Error>(())
    /// ```
    pub fn capacity(&self) -> u64 {
        self.geometry.slots(self.config.group_width)
    }

    /// The device ref, to pass by value to user kernels that include
    /// `<gpuds/hive/linear_ref.cuh>` (see [`cuda_ref_type`](Self::cuda_ref_type)). Does
    /// not synchronize. Valid until the table is rebuilt (`rehash`, `reserve`, or an
    /// insert batch that grows it) or dropped.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let map = gpuds_hive::LinearProbeMap::<u32, u32>::new(&gpu, 1 << 10)?;
    /// assert_eq!(map.device_ref().geometry.windows, 1 << 10);
    /// # Ok::<(), gpuds_hive::Error>(())
    /// ```
    pub fn device_ref(&self) -> LinearRef {
        let stream = self.gpu.stream();
        let (slots, _slots_sync) = self.slots.device_ptr(stream);
        LinearRef {
            slots,
            geometry: self.geometry,
            status: self.control.status_ptr(Region::Pending),
        }
    }

    /// The ref a launch reporting to `region` passes.
    fn table_ref(&self, region: Region) -> LinearRef {
        LinearRef {
            status: self.control.status_ptr(region),
            ..self.device_ref()
        }
    }

    /// The reserved values, to name what a region recorded.
    fn reserved() -> Reserved {
        Reserved {
            keys: Self::reserved_keys().map(|k| k.to_u64()),
            value: Self::reserved_value().to_u64(),
        }
    }

    /// Before the kernels of a launch reporting to `region`: a synchronizing call's region
    /// is cleared, so that the call reports its own failures only.
    fn open(&mut self, region: Region) -> Result<()> {
        match region {
            Region::Call => self.control.begin_call(),
            Region::Pending => Ok(()),
        }
    }

    /// The end of a synchronizing call: what its kernels recorded, as its error.
    /// Synchronizes.
    fn finish_call(&mut self) -> Result<()> {
        self.control.finish(Region::Call, Self::reserved())
    }

    /// The C++ type [`device_ref`](Self::device_ref) mirrors, e.g.
    /// `gpuds::hive::linear_ref<unsigned int, unsigned int, 1, gpuds::probing::linear, false>`.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let map = gpuds_hive::LinearProbeMap::<u32, u32>::new(&gpu, 1 << 10)?;
    /// assert!(map.cuda_ref_type().starts_with("gpuds::hive::linear_ref<unsigned int"));
    /// # Ok::<(), gpuds_hive::Error>(())
    /// ```
    pub fn cuda_ref_type(&self) -> String {
        self.variant.ref_type()
    }

    /// Inserts the pairs `(keys[i], values[i])`; a present key gets the new value. Keys
    /// repeated in the batch end with one of their values. Synchronizes:
    /// [`insert_many_async`](Self::insert_many_async) followed by [`check`](Self::check).
    ///
    /// Reserved keys or values: error naming the first, nothing applied. Past the
    /// maximum load factor (every key counted as new): the table grows first or the call
    /// fails with [`Error::LoadFactor`], by [`WhenFull`]. Inserts that still find no room
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
    /// [`Gpu::stream`] (host inputs are copied first). Reserved keys and values in device
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
    fn launch_insert<KI, VI>(&mut self, keys: &KI, values: &VI, region: Region) -> Result<()>
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
    /// enqueued on [`Gpu::stream`]. A reserved key reads as absent and is reported by the
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
    fn launch_find<KI: Input<K> + ?Sized>(
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
    fn launch_erase<KI: Input<K> + ?Sized>(&mut self, keys: &KI, region: Region) -> Result<()> {
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

    /// Rebuilds the table on the GPU into `new_capacity` slots (rounded up to a power of
    /// two, at least the live pairs at the maximum load factor), dropping tombstones.
    /// The device ref changes. Synchronizes.
    ///
    /// A capacity past [`MAX_CAPACITY`] is [`gpuds_core::Error::CapacityOverflow`], and a
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
    /// More keys than the largest table ([`MAX_CAPACITY`] slots) holds at the load factor
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
    fn occupied(&mut self) -> Result<u64> {
        let [live, dead, erased, ..] = self.census(false)?;
        self.occupied_bound = live + dead + erased;
        Ok(self.occupied_bound)
    }

    /// Checks that `incoming` more keys stay within the maximum load factor; grows the
    /// table or fails by the configuration.
    fn make_room(&mut self, incoming: u64) -> Result<()> {
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

    /// [live, value-tombstoned, key-tombstoned, probe sum, probe max].
    fn census(&self, walk: bool) -> Result<[u64; 5]> {
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

    /// Checks a batch for reserved keys (and values): on the host for host inputs, by a
    /// kernel for device inputs, which records its finding in `region`, where the
    /// operation kernels read it (they skip the whole batch when it is set) and the
    /// region's reader reports it.
    fn precheck<KI, VI>(
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

    fn check_keys(keys: &[K]) -> Result<()> {
        match gpuds_core::keys::first_reserved(keys, &Self::reserved_keys()) {
            Some((index, key)) => Err(Error::ReservedKey {
                index,
                key: key.to_u64(),
            }),
            None => Ok(()),
        }
    }

    fn shape(&self, kernel: &Kernel, ops: usize) -> Result<LaunchConfig> {
        let threads = ops.saturating_mul(self.config.group_width.get() as usize);
        Ok(self.gpu.grid_for(kernel, threads, BLOCK)?)
    }

    /// The erase kernel gets one tile per key in blocks of 1,024 threads rather than a
    /// resident grid that loops (its grid-stride loop then runs once per tile): on an
    /// H100, erasing half of the keys of a table of 2^25 slots ran 10 to 12 % faster at
    /// loads 0.5 and 0.8 (the guide's results). Inserts and lookups keep the resident grid.
    fn erase_shape(&self, ops: usize) -> Result<LaunchConfig> {
        let threads = ops.saturating_mul(self.config.group_width.get() as usize);
        Ok(gpuds_core::launch::one_thread_per_item(
            threads,
            ERASE_BLOCK,
        )?)
    }
}

fn same_len(keys: usize, values: usize) -> Result<usize> {
    if keys != values {
        return Err(invalid(format!("{keys} keys but {values} values")));
    }
    Ok(keys)
}

fn invalid(message: String) -> Error {
    Error::Core(gpuds_core::Error::InvalidArgument(message))
}
