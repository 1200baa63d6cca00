//! Epoch-based reclamation: [`Collector`] (host owner) and [`EbrRef`] (device ref).
//!
//! # The problem
//!
//! A lock-free structure that unlinks a unit (a slab, a tree node) cannot hand it back to
//! [`SlabAlloc`] at once: warps that read the structure a moment ago may still be
//! reading it. Epoch-based reclamation defers the free until every thread block that could
//! hold a reference has finished the operation it was in.
//!
//! # The protocol (device side: `gpuds/alloc/ebr.cuh`)
//!
//! Block-granular and DEBRA-style, as in the dissertation's §4.4.4: a global epoch; an
//! announce array with one entry per block of a persistent grid; each block keeps three
//! limbo bags (by epoch mod 3) in shared memory, overflowing into its own global storage.
//! Blocks call `enter()` / `leave()` around each round of operations and `retire(unit)`
//! for what they unlink. On `enter()` a block announces the epoch it reads, hands back
//! the bag of an epoch three behind (two epochs after the last epoch in which its units
//! can have been unlinked; the header's comment gives the argument) and scans the next
//! part of the announce array; a pass that saw every active block at the current epoch
//! advances it. At kernel end (`end()`) the shared bags go to the block's global storage,
//! where the next kernel carries on with them, and [`Collector::drain`] hands everything
//! back when no kernel runs.
//!
//! Kernels that reclaim run with at most [`Collector::slots`] blocks
//! ([`Collector::grid`] gives such a launch). Structures that never free take the null
//! reclaimer (`null_reclaimer_ref` / `null_block`), which has the same interface.

use cudarc::driver::{CudaSlice, DevicePtr, DeviceRepr, LaunchConfig, PushKernelArg};
use gpuds_core::failures::CallStatus;
use gpuds_core::{Gpu, Kernel, Program, Status, StatusWord};
use parking_lot::Mutex;

use crate::error::{Error, Result};
use crate::slab_alloc::{Modules, SlabAlloc, SlabAllocRef};

const SOURCE: &str = include_str!("../cuda/kernels/ebr.cu");
const BAGS: usize = 3;

/// Status flag (structure bit 17) of the collector's word: a block's global limbo storage
/// was full and a retired unit was dropped (it stays allocated; counted in
/// [`CollectorStats::dropped`]).
pub const LIMBO_FULL: Status = Status(Status::FIRST_STRUCTURE_BIT << 1);

/// The collector's kernel module (drain, and the read/retire churn of tests and benches).
pub(crate) fn program() -> Program {
    Program::new("ebr", SOURCE).headers(crate::cuda_headers())
}

/// The device view of a [`Collector`] and the pool it returns units to: the Rust twin of
/// `gpuds::alloc::ebr_ref`. Valid while both live and until the pool grows.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct EbrRef {
    /// Where reclaimed units go.
    pub pool: SlabAllocRef,
    /// Device address of the global epoch.
    pub epoch: u64,
    /// Device address of the announce array.
    pub announce: u64,
    /// Device address of the per-slot epochs.
    pub slot_epoch: u64,
    /// Device address of the per-slot, per-bag counts.
    pub slot_counts: u64,
    /// Device address of the per-slot, per-bag global storage.
    pub slot_bags: u64,
    /// Device address of the counters (retired, reclaimed, dropped).
    pub counters: u64,
    /// Device address of the collector's status word.
    pub status: u64,
    /// Entries of the announce array (the most blocks a reclaiming grid may have).
    pub slots: u32,
    /// Units per global bag.
    pub bag_capacity: u32,
    /// Nonzero: reclaimed units are filled with this word before they are freed.
    pub poison: u32,
    /// Zero.
    pub reserved: u32,
}

// SAFETY: #[repr(C)] plain data with the layout of ebr_ref (checked by a GPU layout
// test); pointers are device addresses.
unsafe impl DeviceRepr for EbrRef {}

/// Configuration of a [`Collector`].
///
/// # Examples
/// ```
/// use gpuds_alloc::CollectorConfig;
/// let config = CollectorConfig { bag_capacity: 4096, ..Default::default() };
/// config.validate()?;
/// # Ok::<(), gpuds_alloc::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CollectorConfig {
    /// Entries of the announce array, i.e. the most blocks a reclaiming kernel may run
    /// with. 0 picks one per 128 resident threads of the device (enough for persistent
    /// grids of blocks of 128 threads or more).
    pub slots: u32,
    /// Units each block can hold per epoch in global storage (beyond what shared memory
    /// holds). Retiring more than that in one epoch drops units (see [`LIMBO_FULL`]).
    pub bag_capacity: u32,
    /// Nonzero: reclaimed units are filled with this word first, so that tests can catch
    /// a read after free.
    pub poison: u32,
}

impl Default for CollectorConfig {
    fn default() -> Self {
        Self {
            slots: 0,
            bag_capacity: 1024,
            poison: 0,
        }
    }
}

impl CollectorConfig {
    /// Checks every field.
    ///
    /// ```
    /// use gpuds_alloc::CollectorConfig;
    /// assert!(CollectorConfig { bag_capacity: 0, ..Default::default() }.validate().is_err());
    /// ```
    pub fn validate(&self) -> Result<()> {
        if self.bag_capacity == 0 || self.bag_capacity > 1 << 24 {
            return Err(Error::InvalidConfig(format!(
                "bag_capacity is {}, must be between 1 and 2^24",
                self.bag_capacity
            )));
        }
        if self.slots > 1 << 20 {
            return Err(Error::InvalidConfig(format!(
                "slots is {}, must be at most 2^20",
                self.slots
            )));
        }
        Ok(())
    }
}

/// What [`Collector::stats`] reports.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CollectorStats {
    /// The global epoch.
    pub epoch: u32,
    /// Units retired (counted when the retiring kernel ends).
    pub retired: u64,
    /// Units handed back to the pool.
    pub reclaimed: u64,
    /// Units dropped because a block's limbo storage was full (they stay allocated).
    pub dropped: u64,
    /// Units waiting in limbo, by the epoch they were retired in (ascending).
    pub pending: Vec<(u32, u64)>,
}

impl CollectorStats {
    /// Units waiting in limbo, all epochs together.
    pub fn pending_total(&self) -> u64 {
        self.pending.iter().map(|&(_, n)| n).sum()
    }
}

/// Epoch-based reclamation for the units of a [`SlabAlloc`]: the global epoch, the
/// announce array and every block's limbo storage (RAII).
///
/// # Examples
/// ```no_run
/// use gpuds_alloc::{Collector, CollectorConfig, SlabAlloc, SlabAllocConfig};
/// let gpu = gpuds_core::Gpu::new(0)?;
/// let pool = SlabAlloc::new(&gpu, SlabAllocConfig::default())?;
/// let collector = Collector::new(&gpu, CollectorConfig::default())?;
/// let r = collector.device_ref(&pool); // pass to a kernel that includes gpuds/alloc/ebr.cuh
/// # let _ = r;
/// // ... kernels retire units ...
/// collector.drain(&pool)?; // no kernel running: everything in limbo goes back
/// let stats = collector.stats()?;
/// assert_eq!(stats.retired, stats.reclaimed + stats.dropped);
/// # Ok::<(), gpuds_alloc::Error>(())
/// ```
pub struct Collector {
    gpu: Gpu,
    config: CollectorConfig,
    slots: u32,
    epoch: CudaSlice<u32>,
    announce: CudaSlice<u32>,
    slot_epoch: CudaSlice<u32>,
    slot_counts: CudaSlice<u32>,
    slot_bags: CudaSlice<u32>,
    counters: CudaSlice<u64>,
    status: Mutex<StatusWord>,
}

impl std::fmt::Debug for Collector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Collector")
            .field("config", &self.config)
            .field("slots", &self.slots)
            .finish()
    }
}

impl Collector {
    /// A collector at epoch 0 with empty bags. Synchronizes. Bags the device has no room
    /// for (`slots × 3 × bag_capacity` units) are
    /// [`OutOfMemory`](gpuds_core::Error::OutOfMemory).
    pub fn new(gpu: &Gpu, config: CollectorConfig) -> Result<Self> {
        config.validate()?;
        let info = gpu.info();
        let slots = if config.slots == 0 {
            (info.sm_count * (info.max_threads_per_sm / 128).max(1)).max(1)
        } else {
            config.slots
        };
        let stream = gpu.stream();
        // At most 2^20 slots of 3 bags of 2^24 units (validated): no overflow; bags the
        // device has no room for are OutOfMemory.
        let bag_words = slots as usize * BAGS * config.bag_capacity as usize;
        let collector = Self {
            gpu: gpu.clone(),
            slots,
            epoch: stream.alloc_zeros::<u32>(1)?,
            announce: stream.alloc_zeros::<u32>(slots as usize)?,
            slot_epoch: stream.alloc_zeros::<u32>(slots as usize)?,
            slot_counts: stream.alloc_zeros::<u32>(slots as usize * BAGS)?,
            // SAFETY: bag entries are written before they are counted, and only counted
            // entries are read.
            slot_bags: unsafe {
                gpu.alloc_uninit::<u32>(bag_words.max(1), "the collector's bags")
            }?,
            counters: stream.alloc_zeros::<u64>(3)?,
            status: Mutex::new(StatusWord::new(gpu)?),
            config,
        };
        gpu.synchronize()?;
        Ok(collector)
    }

    /// The configuration.
    pub fn config(&self) -> &CollectorConfig {
        &self.config
    }

    /// Entries of the announce array: the most blocks a reclaiming kernel may have.
    pub fn slots(&self) -> u32 {
        self.slots
    }

    /// The device ref for kernels, returning units to `pool`. Fetch it again after the
    /// pool grows.
    pub fn device_ref(&self, pool: &SlabAlloc) -> EbrRef {
        let stream = self.gpu.stream();
        let ptr = |s: &CudaSlice<u32>| s.device_ptr(stream).0;
        EbrRef {
            pool: pool.device_ref(),
            epoch: ptr(&self.epoch),
            announce: ptr(&self.announce),
            slot_epoch: ptr(&self.slot_epoch),
            slot_counts: ptr(&self.slot_counts),
            slot_bags: ptr(&self.slot_bags),
            counters: self.counters.device_ptr(stream).0,
            status: ptr(self.status.lock().slice()),
            slots: self.slots,
            bag_capacity: self.config.bag_capacity,
            poison: self.config.poison,
            reserved: 0,
        }
    }

    /// A persistent launch of `kernel` with blocks of `block` threads: as many blocks as
    /// fit on the device at once, at most [`Collector::slots`].
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// # let kernel = gpu.load(&gpuds_core::Program::new("k", "extern \"C\" __global__ void k() {}"))?.kernel("k")?;
    /// let collector = gpuds_alloc::Collector::new(&gpu, Default::default())?;
    /// let shape = collector.grid(&kernel, 256, 0)?;
    /// assert!(shape.grid_dim.0 <= collector.slots());
    /// # Ok::<(), gpuds_alloc::Error>(())
    /// ```
    pub fn grid(&self, kernel: &Kernel, block: u32, shared_bytes: u32) -> Result<LaunchConfig> {
        let mut shape = self.gpu.persistent_grid(kernel, block, shared_bytes)?;
        shape.grid_dim.0 = shape.grid_dim.0.min(self.slots);
        Ok(shape)
    }

    /// Hands every unit in limbo back to `pool`. Only when no kernel that uses this
    /// collector runs (the stream order guarantees that for kernels on the same stream).
    /// Synchronizes; returns the number of units reclaimed. Its frees report to a status
    /// word of the call's own: a unit freed twice or outside the pool fails the drain
    /// itself (`Error::Core(Status)`), and nothing is left in the pool's word.
    pub fn drain(&self, pool: &SlabAlloc) -> Result<u64> {
        let before = self.counters()?[1];
        let kernel = pool.kernel_of(Modules::Ebr, "ebr_drain")?;
        let shape = self
            .gpu
            .grid_for(&kernel, self.slots as usize * BAGS * 32, 256)?;
        let call = CallStatus::new(&self.gpu, 0)?;
        let mut r = self.device_ref(pool);
        r.pool.status = call.status_ptr();
        let mut args = self.gpu.stream().launch_builder(kernel.func());
        args.arg(&r);
        // SAFETY: the kernel reads the collector's arrays within their lengths.
        unsafe { args.launch(shape) }?;
        let reclaimed = self.counters()?[1] - before;
        call.check()?;
        Ok(reclaimed)
    }

    fn counters(&self) -> Result<Vec<u64>> {
        Ok(self.gpu.stream().clone_dtoh(&self.counters)?)
    }

    /// Reads and clears the collector's status word ([`LIMBO_FULL`], or `OUT_OF_BOUNDS`
    /// when a grid was larger than the announce array). Synchronizes.
    pub fn check_status(&self) -> Result<()> {
        Ok(self.take_status()?.into_result()?)
    }

    /// Reads and clears the collector's status word, returning the raw flags (as
    /// [`SlabAlloc::take_status`]), for a caller that folds them into its own.
    /// Synchronizes.
    ///
    /// ```no_run
    /// use gpuds_alloc::{Collector, CollectorConfig, LIMBO_FULL};
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let collector = Collector::new(&gpu, CollectorConfig::default())?;
    /// // ... kernels retire units through collector.device_ref(&pool) ...
    /// let flags = collector.take_status()?;
    /// assert!(!flags.contains(LIMBO_FULL));
    /// assert!(collector.take_status()?.is_ok()); // cleared
    /// # Ok::<(), gpuds_alloc::Error>(())
    /// ```
    pub fn take_status(&self) -> Result<Status> {
        Ok(self.status.lock().take()?)
    }

    /// The epoch, the counters and the units pending per epoch. Synchronizes; the
    /// pending figures are exact when no kernel runs.
    pub fn stats(&self) -> Result<CollectorStats> {
        let stream = self.gpu.stream();
        let counters = self.counters()?;
        let epoch = stream.clone_dtoh(&self.epoch)?[0];
        let slot_epoch = stream.clone_dtoh(&self.slot_epoch)?;
        let counts = stream.clone_dtoh(&self.slot_counts)?;
        let mut pending = std::collections::BTreeMap::<u32, u64>::new();
        for (slot, &e) in slot_epoch.iter().enumerate() {
            for back in 0..BAGS as u32 {
                let t = e.wrapping_sub(back);
                let bag = (e % BAGS as u32 + BAGS as u32 - back) % BAGS as u32;
                let n = counts[slot * BAGS + bag as usize] as u64;
                if n != 0 {
                    *pending.entry(t).or_default() += n;
                }
            }
        }
        Ok(CollectorStats {
            epoch,
            retired: counters[0],
            reclaimed: counters[1],
            dropped: counters[2],
            pending: pending.into_iter().collect(),
        })
    }
}
