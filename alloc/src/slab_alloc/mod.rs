//! [`SlabAlloc`]: the host owner of a slab pool (construction and what it holds), and
//! [`SlabAllocRef`], its device ref. One idea per file: `device_ref` (the ref),
//! `grow` (reserve and growth), `status` (the status word and fault injection), `batch`
//! (host batches of allocations and frees), `check` (stats, validation, snapshots).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

use cudarc::driver::{
    CudaSlice, CudaView, CudaViewMut, DevicePtr, DeviceRepr, LaunchConfig, PushKernelArg,
};
use gpuds_core::failures::{self, CallStatus};
use gpuds_core::{Gpu, Kernel, Module, Program, Status, StatusWord};
use parking_lot::Mutex;

use crate::address::{BLOCK_BITS, SUPER_BITS, UNITS_PER_BLOCK, WORDS_PER_BLOCK};
use crate::config::{Layout, SlabAllocConfig};
use crate::error::{Error, Result};
use crate::faults::FaultState;
use crate::memory::{vmm_supported, Memory, SuperBlocks, VirtualRange};
use crate::snapshot::PoolSnapshot;

mod batch;
mod check;
mod device_ref;
mod grow;
mod status;

pub use check::{SlabAllocStats, SuperBlockStats};
pub use device_ref::SlabAllocRef;

const SOURCE: &str = include_str!("../../cuda/kernels/slab_alloc.cu");
const BLOCK: u32 = 256;

/// Status flag (structure bit 16) of the allocator's word: a unit was freed twice.
pub const DOUBLE_FREE: Status = Status(Status::FIRST_STRUCTURE_BIT);

/// The allocator's kernel module.
pub(crate) fn program() -> Program {
    Program::new("slab_alloc", SOURCE).headers(crate::cuda_headers())
}

/// The crate's kernel modules, loaded once per pool (a load by program fingerprints the
/// whole source, which would cost more than a small batch's kernel).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Modules {
    SlabAlloc = 0,
    Ebr = 1,
}

/// A slab pool: fixed-size units on the device, allocated by warps inside kernels.
///
/// One `SlabAlloc` per structure. It owns the units, the bitmap and a status word (RAII:
/// all freed on drop, after the stream has finished its work). Kernels get a
/// [`SlabAllocRef`] from [`SlabAlloc::device_ref`] and use `gpuds/alloc/slab_alloc.cuh`.
/// All work goes on the [`Gpu::stream`] of the handle it was made with.
///
/// # Examples
/// ```no_run
/// use gpuds_alloc::{SlabAlloc, SlabAllocConfig};
/// let gpu = gpuds_core::Gpu::new(0)?;
/// let mut pool = SlabAlloc::new(&gpu, SlabAllocConfig::default())?;
/// pool.reserve(1 << 20)?; // room for a million more units before the next batch
/// let units = pool.allocate(1000)?; // 1,000 distinct addresses, on the device
/// assert_eq!(pool.units_in_use()?, 1000);
/// pool.deallocate(&units)?;
/// pool.check_status()?;
/// pool.validate()?;
/// # Ok::<(), gpuds_alloc::Error>(())
/// ```
pub struct SlabAlloc {
    gpu: Gpu,
    config: SlabAllocConfig,
    bitmap: CudaSlice<u32>,
    num_blocks: u32,
    log_blocks_per_super: u32,
    status: Mutex<StatusWord>,
    seed: AtomicU32,
    modules: [OnceLock<Module>; 2],
    memory: Memory,
    faults: FaultState,
}

impl std::fmt::Debug for SlabAlloc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SlabAlloc")
            .field("config", &self.config)
            .field("num_blocks", &self.num_blocks)
            .field("layout", &self.layout())
            .finish()
    }
}

impl SlabAlloc {
    /// A pool of `config.initial_units` units (rounded up to memory blocks). Synchronizes.
    ///
    /// Fails with [`Error::InvalidConfig`] for a bad configuration and with
    /// [`Error::Unsupported`] for [`Layout::Light`] on a device without virtual memory
    /// management. In the classic layout, `blocks_per_super_block` is raised when the 256
    /// super blocks could not hold `max_units` otherwise.
    pub fn new(gpu: &Gpu, config: SlabAllocConfig) -> Result<Self> {
        config.validate()?;
        let light = match config.layout {
            Layout::Light => true,
            Layout::Classic => false,
            Layout::Auto => vmm_supported(gpu)?,
        };
        let max_blocks = config.max_blocks();
        let (memory, log_blocks_per_super) = if light {
            let bytes = max_blocks * config.block_bytes();
            let range = VirtualRange::reserve(gpu, bytes as usize)?;
            (Memory::Light(range), BLOCK_BITS)
        } else {
            let needed = max_blocks.div_ceil(1 << SUPER_BITS).next_power_of_two() as u32;
            let per_super = config.blocks_per_super_block.max(needed);
            let super_bytes = per_super as u64 * config.block_bytes();
            let supers = SuperBlocks::new(gpu, super_bytes as usize)?;
            (Memory::Classic(supers), per_super.trailing_zeros())
        };
        let mut pool = Self {
            gpu: gpu.clone(),
            bitmap: gpu.stream().alloc_zeros::<u32>(WORDS_PER_BLOCK as usize)?,
            num_blocks: 0,
            log_blocks_per_super,
            status: Mutex::new(StatusWord::new(gpu)?),
            seed: AtomicU32::new(0x2545_f491),
            modules: Default::default(),
            faults: FaultState::default(),
            memory,
            config,
        };
        let initial = pool.config.blocks_for(pool.config.initial_units);
        pool.grow_blocks(initial)?;
        gpu.synchronize()?;
        Ok(pool)
    }

    /// The configuration (after construction's adjustments).
    pub fn config(&self) -> &SlabAllocConfig {
        &self.config
    }

    /// The device handle.
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// The layout in use: [`Layout::Light`] or [`Layout::Classic`].
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// use gpuds_alloc::{Layout, SlabAlloc, SlabAllocConfig};
    /// let pool = SlabAlloc::new(&gpu, SlabAllocConfig::default())?;
    /// println!("{:?}", pool.layout()); // Light on every GPU with virtual memory management
    /// # Ok::<(), gpuds_alloc::Error>(())
    /// ```
    pub fn layout(&self) -> Layout {
        match self.memory {
            Memory::Light(_) => Layout::Light,
            Memory::Classic(_) => Layout::Classic,
        }
    }

    /// The device ref for kernels. Each call gets another hash seed, so that successive
    /// launches start their warps on different memory blocks. Fetch it again after
    /// [`SlabAlloc::reserve`] or [`SlabAlloc::reset`].
    pub fn device_ref(&self) -> SlabAllocRef {
        let stream = self.gpu.stream();
        let status = self.status.lock().slice().device_ptr(stream).0;
        let (base, super_bases) = match &self.memory {
            Memory::Light(range) => (range.base(), 0),
            Memory::Classic(supers) => (0, supers.table_ptr(stream)),
        };
        let (fail_at, faults) = self.faults.device_fields(stream);
        SlabAllocRef {
            bitmap: self.bitmap.device_ptr(stream).0,
            base,
            super_bases,
            status,
            num_blocks: self.num_blocks,
            log_blocks_per_super: self.log_blocks_per_super,
            unit_shift: self.config.unit_shift(),
            max_changes: self.config.max_resident_changes,
            seed: self.seed.fetch_add(0x9e37_79b9, Ordering::Relaxed),
            fail_at,
            faults,
        }
    }

    /// Units the pool holds now.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// use gpuds_alloc::{SlabAlloc, SlabAllocConfig};
    /// let pool = SlabAlloc::new(&gpu, SlabAllocConfig { initial_units: 3000, ..Default::default() })?;
    /// assert!(pool.capacity_units() >= 3000);
    /// # Ok::<(), gpuds_alloc::Error>(())
    /// ```
    pub fn capacity_units(&self) -> u64 {
        self.num_blocks as u64 * UNITS_PER_BLOCK as u64
    }
}
