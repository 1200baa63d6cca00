//! [`SlabAllocRef`], the device view of a [`SlabAlloc`].

use super::*;

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
