//! [`Gpu`]: one CUDA device, its default stream and its compiled-module cache.

use std::sync::Arc;

use cudarc::driver::sys::CUdevice_attribute as Attr;
use cudarc::driver::{CudaContext, CudaStream};

use crate::compile::Arch;
use crate::error::{Error, Result};
use crate::libs;

/// Properties of a device, read once when it is opened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The device's ordinal.
    pub ordinal: usize,
    /// Marketing name, e.g. `NVIDIA H100 80GB HBM3`.
    pub name: String,
    /// Compute capability as (major, minor).
    pub compute_capability: (u32, u32),
    /// Number of streaming multiprocessors.
    pub sm_count: u32,
    /// L2 cache size in bytes.
    pub l2_bytes: usize,
    /// Total device memory in bytes.
    pub total_memory: usize,
    /// Most resident threads per SM.
    pub max_threads_per_sm: u32,
    /// Shared memory per block (opt-in maximum) in bytes.
    pub max_shared_per_block: usize,
    /// Warp size (32 on every NVIDIA GPU so far).
    pub warp_size: u32,
}

struct Inner {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    info: DeviceInfo,
    /// Injected allocation faults (tests; see [`crate::faults`]).
    faults: parking_lot::Mutex<crate::faults::AllocFaultState>,
}

/// A handle to one CUDA device.
///
/// `Gpu` is cheap to clone (it is reference counted) and is what every gpuds structure is
/// built on. It owns the device's primary context, a default stream on which structures
/// launch their kernels; compiled modules are cached per process and device.
///
/// | CPU notion | CUDA notion behind it |
/// | --- | --- |
/// | a computer | a device (`Gpu`), picked by ordinal |
/// | a queue of work | a stream ([`Gpu::stream`], [`Gpu::new_stream`]) |
/// | a compiled function | a kernel in a module ([`crate::Program`], [`Gpu::load`]) |
///
/// # Examples
/// ```no_run
/// let gpu = gpuds_core::Gpu::new(0)?;
/// println!("{} with {} SMs", gpu.info().name, gpu.info().sm_count);
/// # Ok::<(), gpuds_core::Error>(())
/// ```
#[derive(Clone)]
pub struct Gpu {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gpu")
            .field("info", &self.inner.info)
            .finish()
    }
}

impl Gpu {
    /// Makes this handle's (and its clones') own allocations fail on purpose (tests only:
    /// the `fault-injection` feature; see [`crate::faults`]); `AllocFaults::default()`
    /// lifts the faults.
    #[cfg(feature = "fault-injection")]
    pub fn inject_allocation_faults(&self, faults: crate::faults::AllocFaults) {
        self.inner.faults.lock().inject(faults);
    }

    /// Counts an allocation of `bytes` for `what` against the injected faults.
    pub(crate) fn charge_allocation(&self, bytes: u64, what: &str) -> Result<()> {
        self.inner.faults.lock().charge(bytes, what)
    }

    /// Number of CUDA devices, or an error when no driver is installed.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// if gpuds_core::Gpu::device_count()? == 0 {
    ///     println!("no CUDA device");
    /// }
    /// # Ok::<(), gpuds_core::Error>(())
    /// ```
    pub fn device_count() -> Result<usize> {
        libs::ensure_driver()?;
        match CudaContext::device_count() {
            Ok(n) => Ok(n.max(0) as usize),
            // A driver without a usable device fails cuInit with this code.
            Err(e) if e.0 == cudarc::driver::sys::CUresult::CUDA_ERROR_NO_DEVICE => Ok(0),
            Err(e) => Err(e.into()),
        }
    }

    /// Opens device `ordinal`.
    ///
    /// Fails with [`Error::NoDriver`] when no driver library is present and with
    /// [`Error::NoDevice`] when the ordinal is out of range; never panics.
    pub fn new(ordinal: usize) -> Result<Self> {
        let count = Self::device_count()?;
        if ordinal >= count {
            return Err(Error::NoDevice { ordinal, count });
        }
        let ctx = CudaContext::new(ordinal)?;
        let attr = |a| ctx.attribute(a).map(|v| v.max(0) as u32);
        let (major, minor) = ctx.compute_capability()?;
        let info = DeviceInfo {
            ordinal,
            name: ctx.name()?,
            compute_capability: (major.max(0) as u32, minor.max(0) as u32),
            sm_count: attr(Attr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
            l2_bytes: attr(Attr::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)? as usize,
            total_memory: ctx.total_mem()?,
            max_threads_per_sm: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)?,
            max_shared_per_block: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?
                as usize,
            warp_size: attr(Attr::CU_DEVICE_ATTRIBUTE_WARP_SIZE)?,
        };
        let stream = ctx.default_stream();
        keep_freed_memory(&ctx);
        Ok(Self {
            inner: Arc::new(Inner {
                ctx,
                stream,
                info,
                faults: Default::default(),
            }),
        })
    }

    /// Properties of this device.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// let info = gpu.info();
    /// println!("{} has {} SMs and {} bytes of L2", info.name, info.sm_count, info.l2_bytes);
    /// # Ok::<(), gpuds_core::Error>(())
    /// ```
    pub fn info(&self) -> &DeviceInfo {
        &self.inner.info
    }

    /// The architecture kernels are compiled for on this device (`sm_XY`).
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// println!("kernels compile for {}", gpu.arch()); // e.g. sm_90
    /// # Ok::<(), gpuds_core::Error>(())
    /// ```
    pub fn arch(&self) -> Arch {
        let (major, minor) = self.inner.info.compute_capability;
        Arch::new(major, minor)
    }

    /// The device's context, for direct cudarc calls.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// gpu.context().synchronize()?;
    /// # Ok::<(), gpuds_core::Error>(())
    /// ```
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.inner.ctx
    }

    /// The stream gpuds structures built on this handle launch their work on.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// let on_device = gpu.stream().clone_htod(&[1u32, 2, 3])?;
    /// assert_eq!(gpu.stream().clone_dtoh(&on_device)?, vec![1, 2, 3]);
    /// # Ok::<(), gpuds_core::Error>(())
    /// ```
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.inner.stream
    }

    /// A new stream on this device, for overlapping independent work.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// let side = gpu.new_stream()?;
    /// let buffer = side.alloc_zeros::<u32>(1024)?;
    /// side.synchronize()?;
    /// # drop(buffer);
    /// # Ok::<(), gpuds_core::Error>(())
    /// ```
    pub fn new_stream(&self) -> Result<Arc<CudaStream>> {
        Ok(self.inner.ctx.new_stream()?)
    }

    /// Free and total device memory in bytes, as the driver reports them now.
    ///
    /// It first gives the device the freed memory its stream-ordered pool keeps (see
    /// [`set_cached_memory_limit`](Self::set_cached_memory_limit)), so that the free
    /// figure counts it: as far as the frees have completed (frees still queued on a
    /// stream stay with the pool until a synchronization). The pool's next allocations
    /// map that memory again.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// let (free, total) = gpu.memory_info()?;
    /// assert!(free <= total);
    /// # Ok::<(), gpuds_core::Error>(())
    /// ```
    pub fn memory_info(&self) -> Result<(usize, usize)> {
        // Best effort: a pool that cannot be trimmed leaves the figure without it.
        let _ = trim_memory_pool(&self.inner.ctx);
        Ok(self.inner.ctx.mem_get_info()?)
    }

    /// How much memory the device's stream-ordered pool may hold, in bytes, before it
    /// gives freed memory back to the device at a synchronization: the pool's
    /// reservation, the memory in use included (the driver's release threshold).
    ///
    /// gpuds allocates its scratch and its structures' arrays from the device's
    /// stream-ordered pool (`cuMemAllocAsync`). By default the driver hands every freed
    /// byte back to the device at the next synchronization, and the next allocation maps
    /// it again: a bulk build that allocates and frees its scratch each call spends about
    /// as long on that as on its kernels. [`Gpu::new`] therefore lets the pool keep what
    /// is freed (no limit), as caching allocators do, unless the pool already has a
    /// limit (set by this method or by another library); this sets one. `0` is the
    /// driver's default, which a later [`Gpu::new`] raises again: `1` keeps nothing for
    /// good. The setting belongs to the device's pool, so it holds for every handle and
    /// every library of the process that allocates from it.
    /// [`memory_info`](Self::memory_info) and
    /// [`release_cached_memory`](Self::release_cached_memory) give the kept memory back.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// // Keep freed memory only while the pool holds less than 8 GiB in all.
    /// gpu.set_cached_memory_limit(8 << 30)?;
    /// # Ok::<(), gpuds_core::Error>(())
    /// ```
    pub fn set_cached_memory_limit(&self, bytes: u64) -> Result<()> {
        match memory_pool(&self.inner.ctx) {
            Some(pool) => threshold(pool, Some(bytes)).map(drop),
            None => Ok(()),
        }
    }

    /// Gives the freed memory the device's stream-ordered pool keeps (see
    /// [`set_cached_memory_limit`](Self::set_cached_memory_limit)) back to the device,
    /// as far as the frees are complete, so that other processes and allocations outside
    /// the pool (mapped slab pools, managed memory) can use it.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// gpu.synchronize()?;
    /// gpu.release_cached_memory()?;
    /// # Ok::<(), gpuds_core::Error>(())
    /// ```
    pub fn release_cached_memory(&self) -> Result<()> {
        trim_memory_pool(&self.inner.ctx)
    }

    /// Waits until all work on the default stream has finished.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// gpu.synchronize()?;
    /// # Ok::<(), gpuds_core::Error>(())
    /// ```
    pub fn synchronize(&self) -> Result<()> {
        Ok(self.inner.stream.synchronize()?)
    }
}

/// The device's current stream-ordered memory pool, or `None` where the device has none.
fn memory_pool(ctx: &CudaContext) -> Option<cudarc::driver::sys::CUmemoryPool> {
    // SAFETY: the device handle is the context's.
    let pool = unsafe { cudarc::driver::result::device::get_mem_pool(ctx.cu_device()) };
    pool.ok().filter(|p| !p.is_null())
}

/// The pool's release threshold, read (`set`: None) or set.
fn threshold(pool: cudarc::driver::sys::CUmemoryPool, set: Option<u64>) -> Result<u64> {
    use cudarc::driver::{result::mem_pool, sys::CUmemPool_attribute as A};
    let attr = A::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD;
    let mut value = set.unwrap_or(0);
    let ptr = (&mut value as *mut u64).cast();
    // SAFETY: a pool of this device; the attribute's value is a cuuint64_t.
    match set {
        Some(_) => unsafe { mem_pool::set_attribute(pool, attr, ptr) }?,
        None => unsafe { mem_pool::get_attribute(pool, attr, ptr) }?,
    }
    Ok(value)
}

/// Lets the device's pool keep freed memory (no release threshold) when its threshold is
/// still the driver's default (0): a limit set before (by
/// [`Gpu::set_cached_memory_limit`] or another library) stays. Best effort: a device
/// without stream-ordered pools, whose allocations are not pooled, has nothing to set,
/// and a pool that refuses the attribute keeps the driver's behaviour.
fn keep_freed_memory(ctx: &CudaContext) {
    if let Some(pool) = memory_pool(ctx) {
        if matches!(threshold(pool, None), Ok(0)) {
            let _ = threshold(pool, Some(u64::MAX));
        }
    }
}

/// Releases the freed memory the device's pool keeps, as far as it safely can.
///
/// Public for the crates that map memory outside the pool (a failed mapping may
/// succeed once the pool has given its cached memory back);
/// [`Gpu::release_cached_memory`] is the same for a handle.
///
/// ```no_run
/// let gpu = gpuds_core::Gpu::new(0)?;
/// gpu.synchronize()?;
/// gpuds_core::trim_memory_pool(gpu.context())?;
/// # Ok::<(), gpuds_core::Error>(())
/// ```
pub fn trim_memory_pool(ctx: &CudaContext) -> Result<()> {
    if let Some(pool) = memory_pool(ctx) {
        // SAFETY: a pool of this device; 0 bytes kept.
        unsafe { cudarc::driver::result::mem_pool::trim_to(pool, 0) }?;
    }
    Ok(())
}
