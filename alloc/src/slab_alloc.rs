//! [`SlabAlloc`]: the host owner of a slab pool, and [`SlabAllocRef`], its device ref.

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

const SOURCE: &str = include_str!("../cuda/kernels/slab_alloc.cu");
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

/// The device view of a [`SlabAlloc`]: the Rust twin of `gpuds::alloc::slab_alloc_ref`
/// (same fields in the same order). Trivially copyable, passed by value to kernels and
/// embeddable in other `#[repr(C)]` refs. It does not own anything: it is valid while its
/// [`SlabAlloc`] lives and until the next [`SlabAlloc::reserve`] (fetch it again after
/// growing).
///
/// # Examples
/// ```no_run
/// use gpuds_alloc::{SlabAlloc, SlabAllocConfig, SlabAllocRef};
/// let gpu = gpuds_core::Gpu::new(0)?;
/// let pool = SlabAlloc::new(&gpu, SlabAllocConfig::default())?;
/// let r: SlabAllocRef = pool.device_ref();
/// assert_eq!(r.unit_bytes(), 128);
/// // pass to a kernel: builder.arg(&r)
/// # Ok::<(), gpuds_alloc::Error>(())
/// ```
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SlabAllocRef {
    /// Device address of the bitmap (32 words per memory block).
    pub bitmap: u64,
    /// Light layout: device address of unit 0; classic: 0.
    pub base: u64,
    /// Classic layout: device address of the super block base table.
    pub super_bases: u64,
    /// Device address of the allocator's status word.
    pub status: u64,
    /// Memory blocks in the pool.
    pub num_blocks: u32,
    /// log2 of memory blocks per super block.
    pub log_blocks_per_super: u32,
    /// log2 of bytes per unit.
    pub unit_shift: u32,
    /// Resident-block changes one allocation may make before it fails.
    pub max_changes: u32,
    /// Start of the warps' block hash sequence; differs between `device_ref` calls.
    pub seed: u32,
    /// Fault injection (tests with the `fault-injection` feature): the request that fails;
    /// 0 when off.
    pub fail_at: u32,
    /// Fault injection: device address of the request counter; 0 when off.
    pub faults: u64,
}

// SAFETY: #[repr(C)] plain data with the layout of slab_alloc_ref (checked by a GPU
// layout test); pointers are device addresses.
unsafe impl DeviceRepr for SlabAllocRef {}

impl SlabAllocRef {
    /// Bytes per unit.
    pub fn unit_bytes(&self) -> u32 {
        1 << self.unit_shift
    }
}

/// Occupancy of one super block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SuperBlockStats {
    /// Memory blocks of this super block in the pool.
    pub blocks: u32,
    /// Units in use.
    pub units_in_use: u64,
}

/// What [`SlabAlloc::stats`] reports.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SlabAllocStats {
    /// Light or classic (never `Auto`).
    pub layout: Layout,
    /// Bytes per unit.
    pub unit_bytes: u32,
    /// Units the pool holds.
    pub capacity_units: u64,
    /// Units whose bit is set.
    pub units_in_use: u64,
    /// Memory blocks with every unit in use.
    pub full_blocks: u64,
    /// Per super block, in address order.
    pub super_blocks: Vec<SuperBlockStats>,
    /// Device memory held: units (mapped or allocated) plus the bitmap and tables.
    pub bytes_reserved: u64,
    /// Virtual address space reserved (light layout; equals the unit bytes for classic).
    pub virtual_bytes: u64,
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

    /// Grows the pool so that at least `free_units` units are free, with a quarter more
    /// of headroom so that warps keep finding free units quickly (less when the device
    /// has no room for the headroom, none past `max_units`). Call it before a batch that
    /// may allocate that many. Synchronizes.
    ///
    /// A request that cannot be met changes nothing: past `max_units` it fails with
    /// [`Error::PoolExhausted`], past [`MAX_UNITS`](crate::MAX_UNITS) (or overflowing)
    /// with [`CapacityOverflow`](gpuds_core::Error::CapacityOverflow), and when the device
    /// has no room for the units with [`OutOfMemory`](gpuds_core::Error::OutOfMemory).
    /// [`reserve_within_max`](Self::reserve_within_max) grows as far as `max_units`
    /// instead.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// use gpuds_alloc::{SlabAlloc, SlabAllocConfig};
    /// let mut pool = SlabAlloc::new(&gpu, SlabAllocConfig::default())?;
    /// pool.reserve(5_000_000)?;
    /// assert!(pool.capacity_units() >= 5_000_000);
    /// let capacity = pool.capacity_units();
    /// assert!(pool.reserve(u64::MAX).is_err());
    /// assert_eq!(pool.capacity_units(), capacity);
    /// # Ok::<(), gpuds_alloc::Error>(())
    /// ```
    pub fn reserve(&mut self, free_units: u64) -> Result<()> {
        let in_use = self.units_in_use()?;
        let needed = reserve_needed(in_use, free_units, &self.config)?;
        if needed > self.config.max_units {
            return Err(Error::PoolExhausted {
                needed,
                capacity: self.capacity_units(),
                max_units: self.config.max_units,
            });
        }
        self.grow_for(needed)
    }

    /// [`reserve`](Self::reserve) for callers whose count is a pessimistic bound: a
    /// request past `max_units` grows the pool to `max_units` and succeeds (the kernels
    /// then report exhaustion if they really run out). Fails only when the device has no
    /// room ([`OutOfMemory`](gpuds_core::Error::OutOfMemory), pool unchanged) or on a
    /// driver error. Synchronizes.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// use gpuds_alloc::{SlabAlloc, SlabAllocConfig};
    /// let config = SlabAllocConfig { max_units: 1 << 16, ..Default::default() };
    /// let mut pool = SlabAlloc::new(&gpu, config)?;
    /// pool.reserve_within_max(1 << 20)?;
    /// assert_eq!(pool.capacity_units(), 1 << 16);
    /// # Ok::<(), gpuds_alloc::Error>(())
    /// ```
    pub fn reserve_within_max(&mut self, free_units: u64) -> Result<()> {
        let in_use = self.units_in_use()?;
        let needed = in_use.saturating_add(free_units).min(self.config.max_units);
        self.grow_for(needed)
    }

    /// Grows the pool to hold `needed` units (at most `max_units`) with headroom, or
    /// without it when the device has no room for it. Synchronizes when it grows.
    fn grow_for(&mut self, needed: u64) -> Result<()> {
        let with_headroom = needed.saturating_add(needed / 4);
        let blocks = self.config.blocks_for(with_headroom);
        if blocks <= self.num_blocks as u64 {
            return Ok(());
        }
        match self.grow_blocks(blocks) {
            Err(Error::Core(gpuds_core::Error::OutOfMemory { .. }))
                if self.config.blocks_for(needed) < blocks =>
            {
                self.grow_blocks(self.config.blocks_for(needed))?
            }
            other => other?,
        }
        self.gpu.synchronize()?;
        Ok(())
    }

    /// Grows to at least `blocks` memory blocks (never past the maximum). When the
    /// device has no room, the error is [`OutOfMemory`](gpuds_core::Error::OutOfMemory)
    /// and the pool's capacity is as it was.
    fn grow_blocks(&mut self, blocks: u64) -> Result<()> {
        let blocks = blocks.min(self.config.max_blocks());
        let block_bytes = self.config.block_bytes();
        // At most 2^22 blocks of 256 KiB: no overflow.
        let bytes = blocks * block_bytes;
        if bytes > self.gpu.info().total_memory as u64 {
            // Not even an empty device holds it: fail before allocating anything.
            return Err(gpuds_core::Error::OutOfMemory {
                what: UNITS.to_string(),
                bytes,
            }
            .into());
        }
        self.faults.before_growth(bytes)?;
        let new_blocks = match &mut self.memory {
            Memory::Light(range) => {
                let mapped = range
                    .grow_to(bytes as usize)
                    .map_err(|e| e.out_of_memory(UNITS, bytes))?
                    as u64;
                (mapped / block_bytes).min(self.config.max_blocks())
            }
            Memory::Classic(supers) => {
                let per_super = 1u64 << self.log_blocks_per_super;
                let count = blocks.div_ceil(per_super);
                supers
                    .grow_to(&self.gpu, count as usize)
                    .map_err(|e| e.out_of_memory(UNITS, bytes))?;
                (count * per_super).min(self.config.max_blocks())
            }
        };
        if new_blocks <= self.num_blocks as u64 {
            return Ok(());
        }
        let mut bitmap = self.gpu.alloc_zeroed::<u32>(
            new_blocks as usize * WORDS_PER_BLOCK as usize,
            "the pool's bitmap",
        )?;
        let stream = self.gpu.stream();
        let old_words = self.num_blocks as usize * WORDS_PER_BLOCK as usize;
        if old_words > 0 {
            stream.memcpy_dtod(
                &self.bitmap.slice(..old_words),
                &mut bitmap.slice_mut(..old_words),
            )?;
        }
        self.bitmap = bitmap;
        self.num_blocks = new_blocks as u32;
        Ok(())
    }

    /// Every unit free again (the contents are left as they are). Does not synchronize.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// use gpuds_alloc::{SlabAlloc, SlabAllocConfig};
    /// let mut pool = SlabAlloc::new(&gpu, SlabAllocConfig::default())?;
    /// let _units = pool.allocate(100)?;
    /// pool.reset()?;
    /// assert_eq!(pool.units_in_use()?, 0);
    /// # Ok::<(), gpuds_alloc::Error>(())
    /// ```
    pub fn reset(&mut self) -> Result<()> {
        self.gpu.stream().memset_zeros(&mut self.bitmap)?;
        Ok(())
    }

    /// Clears the status word in stream order, without synchronizing (before a call's
    /// kernels, so that the call reports its own flags only).
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// use gpuds_alloc::{SlabAlloc, SlabAllocConfig};
    /// let pool = SlabAlloc::new(&gpu, SlabAllocConfig::default())?;
    /// pool.clear_status()?;
    /// # Ok::<(), gpuds_alloc::Error>(())
    /// ```
    pub fn clear_status(&self) -> Result<()> {
        Ok(self.status.lock().clear()?)
    }

    /// Injects `faults` (see [`crate::faults`]), replacing earlier ones and restarting their
    /// counts; `Faults::default()` lifts them. Refs taken before this call keep the old
    /// setting. Only with the `fault-injection` feature.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// use gpuds_alloc::{faults::Faults, SlabAlloc, SlabAllocConfig};
    /// let mut pool = SlabAlloc::new(&gpu, SlabAllocConfig::default())?;
    /// pool.inject_faults(Faults { fail_growth: Some(1), ..Default::default() })?;
    /// assert!(pool.reserve(1 << 22).is_err());
    /// pool.inject_faults(Faults::default())?;
    /// pool.reserve(1 << 22)?;
    /// # Ok::<(), gpuds_alloc::Error>(())
    /// ```
    #[cfg(feature = "fault-injection")]
    pub fn inject_faults(&mut self, faults: crate::faults::Faults) -> Result<()> {
        let counter = match faults.fail_request {
            Some(_) => Some(self.gpu.stream().alloc_zeros::<u32>(1)?),
            None => None,
        };
        self.faults = FaultState {
            faults,
            counter,
            growths: 0,
        };
        Ok(())
    }

    /// Fault injection: the allocation requests counted since the last
    /// [`SlabAlloc::inject_faults`] with `fail_request` set (0 without one). Synchronizes.
    #[cfg(feature = "fault-injection")]
    pub fn fault_requests(&self) -> Result<u32> {
        match &self.faults.counter {
            Some(c) => Ok(self
                .gpu
                .stream()
                .clone_dtoh(c)?
                .first()
                .copied()
                .unwrap_or(0)),
            None => Ok(0),
        }
    }

    /// Reads and clears the status word, returning the raw flags. Synchronizes.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// use gpuds_alloc::{SlabAlloc, SlabAllocConfig};
    /// let pool = SlabAlloc::new(&gpu, SlabAllocConfig::default())?;
    /// assert!(pool.take_status()?.is_ok());
    /// # Ok::<(), gpuds_alloc::Error>(())
    /// ```
    pub fn take_status(&self) -> Result<Status> {
        Ok(self.status.lock().take()?)
    }

    /// Reads and clears the status word. `POOL_EXHAUSTED` becomes
    /// [`Error::PoolExhausted`]; other flags become `Error::Core(Status(..))` (e.g.
    /// [`DOUBLE_FREE`]). Synchronizes.
    ///
    /// The word collects what the non-synchronizing calls
    /// ([`allocate_into`](Self::allocate_into), [`allocate_each_into`](Self::allocate_each_into),
    /// [`deallocate_view`](Self::deallocate_view)) and kernels through
    /// [`device_ref`](Self::device_ref) record, from the last check (or
    /// [`clear_status`](Self::clear_status)) on. The synchronizing calls
    /// ([`allocate`](Self::allocate), [`try_allocate_into`](Self::try_allocate_into)) give
    /// their kernels a word of their own and report it themselves: they never read or
    /// clear this one, and nothing of theirs shows up here.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// use gpuds_alloc::{Error, SlabAlloc, SlabAllocConfig};
    /// let pool = SlabAlloc::new(&gpu, SlabAllocConfig::default())?;
    /// // ... kernels allocate through pool.device_ref() ...
    /// match pool.check_status() {
    ///     Err(Error::PoolExhausted { .. }) => { /* reserve more and retry the batch */ }
    ///     other => other?,
    /// }
    /// # Ok::<(), gpuds_alloc::Error>(())
    /// ```
    pub fn check_status(&self) -> Result<()> {
        let flags = self.take_status()?;
        if flags.contains(Status::POOL_EXHAUSTED) {
            return Err(Error::PoolExhausted {
                needed: 0,
                capacity: self.capacity_units(),
                max_units: self.config.max_units,
            });
        }
        Ok(flags.into_result()?)
    }

    fn kernel(&self, name: &str) -> Result<Kernel> {
        self.kernel_of(Modules::SlabAlloc, name)
    }

    /// Kernel `name` of one of the crate's modules, from this pool's module cache.
    pub(crate) fn kernel_of(&self, which: Modules, name: &str) -> Result<Kernel> {
        let cell = &self.modules[which as usize];
        let module = match cell.get() {
            Some(module) => module,
            None => {
                let program = match which {
                    Modules::SlabAlloc => program(),
                    Modules::Ebr => crate::ebr::program(),
                };
                let module = self.gpu.load(&program)?;
                cell.get_or_init(|| module)
            }
        };
        Ok(module.kernel(name)?)
    }

    /// A grid-stride launch over `threads` threads.
    fn grid(&self, kernel: &Kernel, threads: usize) -> Result<LaunchConfig> {
        Ok(self.gpu.grid_for(kernel, threads, BLOCK)?)
    }

    /// Units in use per memory block.
    fn block_counts(&self) -> Result<Vec<u32>> {
        let stream = self.gpu.stream();
        let mut counts = stream.alloc_zeros::<u32>(self.num_blocks.max(1) as usize)?;
        let kernel = self.kernel("slab_alloc_count")?;
        let shape = self.grid(&kernel, self.num_blocks as usize * 32)?;
        let r = self.device_ref();
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&r).arg(&mut counts);
        // SAFETY: the kernel writes counts[g] for g < num_blocks, within its length.
        unsafe { args.launch(shape) }?;
        let mut counts = stream.clone_dtoh(&counts)?;
        counts.truncate(self.num_blocks as usize);
        Ok(counts)
    }

    /// Units in use (bits set in the bitmap). Synchronizes.
    pub fn units_in_use(&self) -> Result<u64> {
        Ok(self.block_counts()?.iter().map(|&c| c as u64).sum())
    }

    /// Allocates one unit for each element of `out` (the lanes of each warp claim in
    /// parallel). Does not synchronize: a unit the pool could not give is
    /// [`crate::NULL_UNIT`] and [`SlabAlloc::check_status`] then reports
    /// [`Error::PoolExhausted`].
    pub fn allocate_into(&self, out: &mut CudaViewMut<'_, u32>) -> Result<()> {
        self.launch_allocation("slab_alloc_allocate_lanes", out, self.device_ref())
    }

    /// As [`SlabAlloc::allocate_into`], but each warp serves its lanes one after another
    /// with the warp-cooperative `allocate()`, as the paper's experiment does.
    pub fn allocate_each_into(&self, out: &mut CudaViewMut<'_, u32>) -> Result<()> {
        self.launch_allocation("slab_alloc_allocate_each", out, self.device_ref())
    }

    /// The ref a synchronizing call's kernels get: the pool, with the call's own status
    /// word in place of the pool's.
    fn call_ref(&self, call: &CallStatus) -> SlabAllocRef {
        SlabAllocRef {
            status: call.status_ptr(),
            ..self.device_ref()
        }
    }

    fn launch_allocation(
        &self,
        name: &str,
        out: &mut CudaViewMut<'_, u32>,
        r: SlabAllocRef,
    ) -> Result<()> {
        if out.is_empty() {
            return Ok(());
        }
        let kernel = self.kernel(name)?;
        let shape = self.grid(&kernel, out.len())?;
        let n = out.len() as u64;
        let mut args = self.gpu.stream().launch_builder(kernel.func());
        args.arg(&r).arg(out).arg(&n);
        // SAFETY: the kernel writes out[..n]; the ref is valid while self lives.
        unsafe { args.launch(shape) }?;
        Ok(())
    }

    /// Allocates one unit for each element of `out`, as
    /// [`allocate_into`](Self::allocate_into), and reports its own outcome. Synchronizes.
    ///
    /// When the pool runs out, the entries that got no unit hold [`crate::NULL_UNIT`]
    /// and the call fails with [`gpuds_core::Error::NotApplied`] (in [`Error::Core`])
    /// naming exactly them; every other entry holds a fresh unit, which stays allocated
    /// (free them with [`deallocate_view`](Self::deallocate_view), or keep them). The
    /// pool's own status word is neither read nor changed.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// use gpuds_alloc::{Error, SlabAlloc, SlabAllocConfig};
    /// let pool = SlabAlloc::new(&gpu, SlabAllocConfig::default())?;
    /// let mut out = gpu.stream().alloc_zeros::<u32>(1000)?;
    /// match pool.try_allocate_into(&mut out.slice_mut(..)) {
    ///     Ok(()) => {}
    ///     Err(Error::Core(gpuds_core::Error::NotApplied { not_applied, .. })) => {
    ///         // out[i] for i in not_applied is NULL_UNIT: reserve more and retry those
    ///         # let _ = not_applied;
    ///     }
    ///     Err(e) => return Err(e),
    /// }
    /// # Ok::<(), gpuds_alloc::Error>(())
    /// ```
    pub fn try_allocate_into(&self, out: &mut CudaViewMut<'_, u32>) -> Result<()> {
        if out.is_empty() {
            return Ok(());
        }
        let call = CallStatus::new(&self.gpu, out.len())?;
        self.launch_allocation("slab_alloc_allocate_lanes", out, self.call_ref(&call))?;
        let status = call.status()?;
        if status.is_ok() {
            return Ok(());
        }
        let got = self.gpu.stream().clone_dtoh(&*out)?;
        let missing = null_entries(&got);
        Err(failures::error_of(status, missing)
            .unwrap_or(gpuds_core::Error::Status(status))
            .into())
    }

    /// `n` (at least 1) fresh units on the device, or none. Synchronizes. When the pool
    /// runs out, the units the kernel did give are freed again and the call fails with
    /// [`Error::PoolExhausted`]: nothing is allocated, nothing is lost. (To keep what was
    /// given, use [`try_allocate_into`](Self::try_allocate_into).) The pool's own status
    /// word is neither read nor changed.
    pub fn allocate(&self, n: usize) -> Result<CudaSlice<u32>> {
        if n == 0 {
            return Err(gpuds_core::Error::InvalidArgument(
                "allocate needs at least one unit".into(),
            )
            .into());
        }
        let mut out = self.gpu.stream().alloc_zeros::<u32>(n)?;
        match self.try_allocate_into(&mut out.slice_mut(..)) {
            Ok(()) => Ok(out),
            Err(Error::Core(gpuds_core::Error::NotApplied { status, .. }))
                if status.contains(Status::POOL_EXHAUSTED) =>
            {
                let call = CallStatus::new(&self.gpu, 0)?;
                self.launch_deallocation(&out.slice(..), self.call_ref(&call))?;
                call.check()?;
                Err(Error::PoolExhausted {
                    needed: 0,
                    capacity: self.capacity_units(),
                    max_units: self.config.max_units,
                })
            }
            Err(e) => Err(e),
        }
    }

    /// Frees every address of `units` (null entries are skipped). Does not synchronize;
    /// a unit freed twice sets [`DOUBLE_FREE`] and an address outside the pool sets
    /// `OUT_OF_BOUNDS`, reported by [`SlabAlloc::check_status`].
    pub fn deallocate_view(&self, units: &CudaView<'_, u32>) -> Result<()> {
        self.launch_deallocation(units, self.device_ref())
    }

    fn launch_deallocation(&self, units: &CudaView<'_, u32>, r: SlabAllocRef) -> Result<()> {
        if units.is_empty() {
            return Ok(());
        }
        let kernel = self.kernel("slab_alloc_deallocate")?;
        let shape = self.grid(&kernel, units.len())?;
        let n = units.len() as u64;
        let mut args = self.gpu.stream().launch_builder(kernel.func());
        args.arg(&r).arg(units).arg(&n);
        // SAFETY: the kernel reads units[..n].
        unsafe { args.launch(shape) }?;
        Ok(())
    }

    /// Frees every address of `units`; see [`SlabAlloc::deallocate_view`].
    pub fn deallocate(&self, units: &CudaSlice<u32>) -> Result<()> {
        self.deallocate_view(&units.slice(..))
    }

    /// Occupancy and memory use. Synchronizes.
    pub fn stats(&self) -> Result<SlabAllocStats> {
        let counts = self.block_counts()?;
        let per_super = 1usize << self.log_blocks_per_super;
        let super_blocks: Vec<SuperBlockStats> = counts
            .chunks(per_super)
            .map(|c| SuperBlockStats {
                blocks: c.len() as u32,
                units_in_use: c.iter().map(|&u| u as u64).sum(),
            })
            .collect();
        let (unit_bytes, virtual_bytes, table) = match &self.memory {
            Memory::Light(range) => (range.mapped() as u64, range.reserved() as u64, 0),
            Memory::Classic(supers) => (supers.bytes() as u64, supers.bytes() as u64, 2048),
        };
        Ok(SlabAllocStats {
            layout: self.layout(),
            unit_bytes: self.config.unit_bytes,
            capacity_units: self.capacity_units(),
            units_in_use: counts.iter().map(|&c| c as u64).sum(),
            full_blocks: counts.iter().filter(|&&c| c == UNITS_PER_BLOCK).count() as u64,
            super_blocks,
            bytes_reserved: unit_bytes + self.bitmap.len() as u64 * 4 + table,
            virtual_bytes,
        })
    }

    /// Checks what the owner believes against the device: the bitmap covers exactly the
    /// pool's blocks, every block's count is at most 1,024 and the super block counts add
    /// up, the memory behind the blocks is mapped (light) or the device's super block table
    /// matches the host's (classic), and no kernel recorded a double free or an address
    /// outside the pool (those flags are left in the status word). Synchronizes.
    pub fn validate(&self) -> Result<()> {
        self.validate_counts(None)
    }

    /// [`SlabAlloc::validate`], and also that exactly `expected` units are in use.
    pub fn validate_in_use(&self, expected: u64) -> Result<()> {
        self.validate_counts(Some(expected))
    }

    fn validate_counts(&self, expected: Option<u64>) -> Result<()> {
        let bad = |m: String| Err(Error::Corrupted(m));
        let words = self.num_blocks as usize * WORDS_PER_BLOCK as usize;
        if self.bitmap.len() < words {
            return bad(format!(
                "bitmap has {} words for {} blocks",
                self.bitmap.len(),
                self.num_blocks
            ));
        }
        let stats = self.stats()?;
        if let Some(c) = self
            .block_counts()?
            .iter()
            .position(|&c| c > UNITS_PER_BLOCK)
        {
            return bad(format!("block {c} counts more than 1024 units"));
        }
        let by_super: u64 = stats.super_blocks.iter().map(|s| s.units_in_use).sum();
        if by_super != stats.units_in_use || stats.units_in_use > stats.capacity_units {
            return bad(format!(
                "{} units in use by super block, {} in all, capacity {}",
                by_super, stats.units_in_use, stats.capacity_units
            ));
        }
        if let Some(expected) = expected {
            if expected != stats.units_in_use {
                return bad(format!(
                    "{} units in use, {expected} expected",
                    stats.units_in_use
                ));
            }
        }
        let stream = self.gpu.stream();
        match &self.memory {
            Memory::Light(range) => {
                let needed = self.num_blocks as u64 * self.config.block_bytes();
                if (range.mapped() as u64) < needed {
                    return bad(format!(
                        "{} bytes mapped for {needed} bytes of blocks",
                        range.mapped()
                    ));
                }
            }
            Memory::Classic(supers) => {
                if stream.clone_dtoh(supers.device_table())? != supers.host_table(stream) {
                    return bad("the device's super block table differs from the host's".into());
                }
            }
        }
        let flags = Status(stream.clone_dtoh(self.status.lock().slice())?[0]);
        if flags.contains(DOUBLE_FREE) || flags.contains(Status::OUT_OF_BOUNDS) {
            return bad(format!("kernels reported: {flags}"));
        }
        Ok(())
    }

    /// A host copy of the bitmap and every unit. Synchronizes; copies the whole pool.
    pub fn snapshot(&self) -> Result<PoolSnapshot> {
        let stream = self.gpu.stream();
        let words_per_block = self.config.block_bytes() as usize / 4;
        let total = self.num_blocks as usize * words_per_block;
        let bitmap = stream.clone_dtoh(&self.bitmap.slice(..self.num_blocks as usize * 32))?;
        let mut words = vec![0u32; total];
        match &self.memory {
            Memory::Light(range) => {
                if total > 0 {
                    // SAFETY: the first `total` words of the range are mapped and the copy
                    // is waited for before `words` is used.
                    unsafe {
                        cudarc::driver::result::memcpy_dtoh_async(
                            &mut words,
                            range.base(),
                            stream.cu_stream(),
                        )
                    }?;
                }
            }
            Memory::Classic(supers) => {
                let super_words = words_per_block << self.log_blocks_per_super;
                for (chunk, block) in words.chunks_mut(super_words).zip(supers.blocks()) {
                    let bytes = stream.clone_dtoh(&block.slice(..chunk.len() * 4))?;
                    for (w, b) in chunk.iter_mut().zip(bytes.chunks_exact(4)) {
                        *w = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                    }
                }
            }
        }
        stream.synchronize()?;
        Ok(PoolSnapshot {
            unit_bytes: self.config.unit_bytes,
            log_blocks_per_super: self.log_blocks_per_super,
            bitmap,
            words,
        })
    }
}

/// What the pool's unit memory is called in out-of-memory errors.
const UNITS: &str = "the slab pool's units";

/// The entries of an allocation that got no unit ([`crate::NULL_UNIT`]), ascending.
fn null_entries(units: &[u32]) -> Vec<usize> {
    units
        .iter()
        .enumerate()
        .filter(|&(_, &a)| a == crate::NULL_UNIT)
        .map(|(i, _)| i)
        .collect()
}

/// Units a [`SlabAlloc::reserve`] of `free_units` needs with `in_use` in use, or
/// [`CapacityOverflow`](gpuds_core::Error::CapacityOverflow) when that overflows or
/// passes [`MAX_UNITS`](crate::MAX_UNITS) (no configuration allows it).
fn reserve_needed(in_use: u64, free_units: u64, config: &SlabAllocConfig) -> Result<u64> {
    let needed = gpuds_core::size::checked_add(in_use, free_units, "units in use and asked for")?;
    if needed > crate::MAX_UNITS {
        return Err(gpuds_core::Error::CapacityOverflow(format!(
            "{needed} units ({in_use} in use, {free_units} asked for) pass the largest pool, \
             {} units (max_units is {})",
            crate::MAX_UNITS,
            config.max_units
        ))
        .into());
    }
    Ok(needed)
}

#[cfg(test)]
mod size_tests {
    use super::*;

    #[test]
    fn reserve_requests_are_checked() {
        let config = SlabAllocConfig::default();
        for in_use in [0u64, 1, 1 << 20, config.max_units] {
            for free in gpuds_testkit::strategy::capacity_edges() {
                match reserve_needed(in_use, free, &config) {
                    Ok(needed) => {
                        assert_eq!(needed, in_use + free);
                        assert!(needed <= crate::MAX_UNITS);
                    }
                    Err(Error::Core(gpuds_core::Error::CapacityOverflow(_))) => {
                        assert!(
                            u128::from(in_use) + u128::from(free) > u128::from(crate::MAX_UNITS)
                        );
                    }
                    Err(e) => panic!("{in_use} + {free}: {e}"),
                }
            }
        }
    }
}

#[cfg(test)]
mod call_tests {
    use super::*;

    #[test]
    fn the_entries_without_a_unit_are_named() {
        let null = crate::NULL_UNIT;
        assert!(null_entries(&[]).is_empty());
        assert!(null_entries(&[0, 1, 2]).is_empty());
        assert_eq!(null_entries(&[null, 5, null, 0, null]), vec![0, 2, 4]);
    }
}
