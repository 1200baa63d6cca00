//! [`Placement`]: where a structure's memory lives, and [`Region`], one allocation there.

use std::sync::atomic::{AtomicU64, Ordering};

use cudarc::driver::sys;
use gpuds_core::Gpu;

use crate::error::{Error, Result};

/// Where a table's memory lives. Chosen in a table's configuration.
///
/// ```
/// use gpuds_oversub::Placement;
/// assert_eq!(Placement::default(), Placement::Device);
/// assert_eq!(Placement::HostMapped.name(), "host-mapped");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Placement {
    /// Plain device memory: the structure fits on the GPU.
    #[default]
    Device,
    /// CUDA managed memory with the paper's hints (§3.1: accessed by the device,
    /// prefetched to it). Guarded: an allocation that would take the process's managed
    /// memory above the device's free memory minus a margin is refused
    /// ([`Error::ManagedGuard`]), because managed memory beyond free GPU memory can hang
    /// the GPU. For in-memory runs and comparisons at sizes that fit.
    Managed,
    /// Pinned host memory mapped into the device's address space (zero copy): kernels
    /// read and write the structure over the host link. What the paper's best UVM hint
    /// (accessed-by: remote mapping instead of migration) amounts to, without managed
    /// memory; it can hold structures many times the GPU's memory.
    HostMapped,
    /// Real oversubscription without unified memory (beyond the paper): the structure's
    /// home is pinned host memory, and a device-resident cache of at most
    /// `device_budget_bytes` holds whole containers (a range table's inner tables). Each
    /// batch is sorted, split into runs of ranges that fit the cache, and every run's
    /// missing containers are copied in (least recently used ones evicted first, dirty
    /// ones written back) before its kernel runs. For range tables (inner tables) and
    /// range skip lists (each range's node pool); a budget smaller than one container is
    /// a configuration error.
    Tiered {
        /// The most device bytes the cache may hold.
        device_budget_bytes: u64,
    },
}

impl Placement {
    /// Every placement.
    pub const ALL: [Placement; 3] = [Placement::Device, Placement::Managed, Placement::HostMapped];

    /// A short name (`device`, `managed`, `host-mapped`).
    pub fn name(self) -> &'static str {
        match self {
            Placement::Device => "device",
            Placement::Managed => "managed",
            Placement::HostMapped => "host-mapped",
            Placement::Tiered { .. } => "tiered",
        }
    }
}

/// Managed bytes this process holds through [`Region`]s.
static MANAGED_BYTES: AtomicU64 = AtomicU64::new(0);

/// The margin kept free of managed memory: a tenth of the free memory, at least 1 GiB.
fn managed_margin(free: u64) -> u64 {
    (free / 10).max(1 << 30)
}

/// One allocation of `bytes` in a [`Placement`], zero-filled; freed on drop.
pub struct Region {
    gpu: Gpu,
    placement: Placement,
    bytes: u64,
    device: u64,
    host: *mut std::ffi::c_void,
}

// SAFETY: the region owns its allocation; the raw host pointer is only used by this
// owner (zero fill, free), never shared.
unsafe impl Send for Region {}
// SAFETY: shared references only read the addresses.
unsafe impl Sync for Region {}

impl std::fmt::Debug for Region {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Region")
            .field("placement", &self.placement)
            .field("bytes", &self.bytes)
            .finish()
    }
}

/// `what`'s driver result as ours.
pub(crate) fn check(r: sys::CUresult, what: &str) -> Result<()> {
    if r == sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(gpuds_core::Error::InvalidArgument(format!("{what} failed: {r:?}")).into())
    }
}

/// A zero-filled pinned host allocation of `size` bytes with `flags`.
fn pinned(size: usize, flags: u32) -> Result<*mut std::ffi::c_void> {
    let mut h: *mut std::ffi::c_void = std::ptr::null_mut();
    // SAFETY: a pinned host allocation into a local.
    let r = unsafe { sys::cuMemHostAlloc(&mut h, size, flags) };
    if r != sys::CUresult::CUDA_SUCCESS || h.is_null() {
        return Err(Error::HostAlloc {
            bytes: size as u64,
            reason: format!("{r:?}"),
        });
    }
    // SAFETY: `size` bytes at h are ours.
    unsafe { std::ptr::write_bytes(h.cast::<u8>(), 0, size) };
    Ok(h)
}

impl Region {
    /// A zero-filled allocation of `bytes` (at least one byte) in `placement`.
    /// Synchronizes.
    pub fn new(gpu: &Gpu, placement: Placement, bytes: u64) -> Result<Self> {
        let bytes = bytes.max(1);
        let size = usize::try_from(bytes)
            .map_err(|_| gpuds_core::Error::CapacityOverflow(format!("{bytes} bytes")))?;
        gpu.context().bind_to_thread()?;
        let stream = gpu.stream();
        let mut region = Region {
            gpu: gpu.clone(),
            placement,
            bytes,
            device: 0,
            host: std::ptr::null_mut(),
        };
        match placement {
            Placement::Device => {
                let (free, _) = gpu.memory_info()?;
                if bytes > free as u64 {
                    return Err(gpuds_core::Error::OutOfMemory {
                        what: "a device region".into(),
                        bytes,
                    }
                    .into());
                }
                let mut p: sys::CUdeviceptr = 0;
                // SAFETY: a plain allocation into a local.
                check(unsafe { sys::cuMemAlloc_v2(&mut p, size) }, "cuMemAlloc")?;
                region.device = p;
                // SAFETY: `size` bytes at p were just allocated.
                check(
                    unsafe { sys::cuMemsetD8Async(p, 0, size, stream.cu_stream()) },
                    "cuMemset",
                )?;
            }
            Placement::Managed => {
                let (free, _) = gpu.memory_info()?;
                let free = free as u64;
                let limit = free.saturating_sub(managed_margin(free));
                let held = MANAGED_BYTES.load(Ordering::Relaxed);
                let would_be = held.saturating_add(bytes);
                if would_be > limit {
                    return Err(Error::ManagedGuard {
                        requested: bytes,
                        would_be,
                        limit,
                        free,
                    });
                }
                let mut p: sys::CUdeviceptr = 0;
                // SAFETY: a plain managed allocation into a local.
                check(
                    unsafe {
                        sys::cuMemAllocManaged(
                            &mut p,
                            size,
                            sys::CUmemAttach_flags::CU_MEM_ATTACH_GLOBAL as u32,
                        )
                    },
                    "cuMemAllocManaged",
                )?;
                MANAGED_BYTES.fetch_add(bytes, Ordering::Relaxed);
                region.device = p;
                let location = sys::CUmemLocation {
                    type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
                    id: gpu.context().cu_device(),
                };
                // SAFETY: hints and a prefetch on the range just allocated.
                unsafe {
                    check(
                        sys::cuMemAdvise_v2(
                            p,
                            size,
                            sys::CUmem_advise::CU_MEM_ADVISE_SET_ACCESSED_BY,
                            location,
                        ),
                        "cuMemAdvise",
                    )?;
                    check(
                        sys::cuMemsetD8Async(p, 0, size, stream.cu_stream()),
                        "cuMemset",
                    )?;
                    check(
                        sys::cuMemPrefetchAsync_v2(p, size, location, 0, stream.cu_stream()),
                        "cuMemPrefetchAsync",
                    )?;
                }
            }
            Placement::Tiered { .. } => {
                region.host = pinned(size, 0)?;
            }
            Placement::HostMapped => {
                let h = pinned(size, sys::CU_MEMHOSTALLOC_DEVICEMAP)?;
                region.host = h;
                let mut p: sys::CUdeviceptr = 0;
                // SAFETY: h is a mapped pinned allocation.
                check(
                    unsafe { sys::cuMemHostGetDevicePointer_v2(&mut p, h, 0) },
                    "cuMemHostGetDevicePointer",
                )?;
                region.device = p;
            }
        }
        stream.synchronize()?;
        Ok(region)
    }

    /// The device address of the region's first byte (0 for a `Tiered` home, which the
    /// device reaches only through copies).
    pub fn device_ptr(&self) -> u64 {
        self.device
    }

    /// The host address of a pinned region (`HostMapped`, `Tiered`), else null.
    pub(crate) fn host_ptr(&self) -> *mut std::ffi::c_void {
        self.host
    }

    /// Its size in bytes.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Where it lives.
    pub fn placement(&self) -> Placement {
        self.placement
    }

    /// Copies the region to the host (its first `bytes` bytes, as u64 words).
    /// Synchronizes.
    pub fn to_host_words(&self) -> Result<Vec<u64>> {
        self.words_at(0, self.bytes)
    }

    /// Copies `bytes` bytes from `offset` to the host, as u64 words (both multiples of 8,
    /// inside the region). Synchronizes.
    pub(crate) fn words_at(&self, offset: u64, bytes: u64) -> Result<Vec<u64>> {
        if offset.checked_add(bytes).is_none_or(|end| end > self.bytes) {
            return Err(Error::Invalid(format!(
                "{bytes} bytes at {offset} pass the region's {} bytes",
                self.bytes
            )));
        }
        let words = (bytes / 8) as usize;
        let mut out = vec![0u64; words];
        self.gpu.stream().synchronize()?;
        if words == 0 {
            return Ok(out);
        }
        if !self.host.is_null() {
            // SAFETY: the pinned region holds at least words * 8 bytes; no copy or kernel
            // uses it now (synchronized).
            unsafe {
                std::ptr::copy_nonoverlapping(
                    self.host.cast::<u8>().add(offset as usize).cast::<u64>(),
                    out.as_mut_ptr(),
                    words,
                )
            };
            return Ok(out);
        }
        // SAFETY: the region holds at least words * 8 bytes; the stream is idle.
        check(
            unsafe {
                sys::cuMemcpyDtoH_v2(out.as_mut_ptr().cast(), self.device + offset, words * 8)
            },
            "cuMemcpyDtoH",
        )?;
        Ok(out)
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        if self.device == 0 && self.host.is_null() {
            return; // nothing was allocated (a refused or failed request)
        }
        let _ = self.gpu.stream().synchronize();
        let _ = self.gpu.context().bind_to_thread();
        // SAFETY: the allocation is ours and no kernel uses it any more (synchronized).
        unsafe {
            match self.placement {
                Placement::Device => {
                    let _ = sys::cuMemFree_v2(self.device);
                }
                Placement::Managed => {
                    let _ = sys::cuMemFree_v2(self.device);
                    MANAGED_BYTES.fetch_sub(self.bytes, Ordering::Relaxed);
                }
                Placement::HostMapped | Placement::Tiered { .. } => {
                    if !self.host.is_null() {
                        let _ = sys::cuMemFreeHost(self.host);
                    }
                }
            }
        }
    }
}

/// Managed bytes the process holds through regions now.
pub fn managed_bytes() -> u64 {
    MANAGED_BYTES.load(Ordering::Relaxed)
}
