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
mod queries;
mod resize;
mod updates;

use std::marker::PhantomData;

use cudarc::driver::{CudaSlice, DevicePtr, DeviceRepr, LaunchConfig};
use gpuds_core::{DeviceKey, DeviceValue, Gpu, Kernel};

pub use check::LinearStats;
pub use config::{Deletion, LinearConfig, WhenFull, MAX_CAPACITY};
pub use input::Input;

use crate::error::{Error, Result};
use crate::probe::Geometry;
use control::{Control, Region, Reserved};
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
