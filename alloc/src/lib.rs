//! # gpuds-alloc
//!
//! Memory management for the gpuds structures that allocate inside kernels: the slab hash,
//! the B-Trees and the graph.
//!
//! - [`SlabAlloc`]: the warp-synchronous slab allocator of the slab hash paper (§V). The
//!   pool holds fixed-size units (64, 128 or 256 bytes), 1,024 to a memory block, memory
//!   blocks grouped in super blocks; a unit is a 32-bit address ([`address`]). A warp
//!   allocates from its resident memory block, whose bitmap it keeps in registers: one
//!   atomic OR on one bitmap word claims a unit. The device API is
//!   `#include <gpuds/alloc/slab_alloc.cuh>`.
//! - [`Collector`]: block-granular, DEBRA-style epoch-based reclamation, so that
//!   structures can retire the units they unlink while other warps still read them
//!   (`#include <gpuds/alloc/ebr.cuh>`; see the [`Collector`] docs for the protocol).
//!
//! | on the CPU | in gpuds-alloc |
//! | --- | --- |
//! | a heap | a [`SlabAlloc`] pool, one per structure |
//! | a pointer | a 32-bit unit address; `ref.pointer(a)` on the device |
//! | `malloc` / `free` | `warp_allocator::allocate()` / `slab_alloc_ref::deallocate(a)` |
//! | out of memory | `null_unit` and `POOL_EXHAUSTED` → [`Error::PoolExhausted`] |
//!
//! ## SlabAlloc-light and growth: which design, and why
//!
//! The paper's classic SlabAlloc decodes an address through a table of super block bases;
//! its "light" variant makes decode one base plus offset (about a quarter faster
//! lookups) but gives up growth. We keep both properties with the driver's virtual memory
//! management: a virtual range for the largest pool (`max_units`) is reserved once, and
//! growing maps more physical memory right after what is mapped. The pool stays
//! contiguous, decode is `base + address * unit_bytes`, and no unit ever moves, so refs
//! held by other structures stay valid. Only virtual addresses are reserved up front;
//! physical memory follows [`SlabAlloc::reserve`]. This is [`Layout::Light`], chosen by
//! [`Layout::Auto`] whenever the device supports virtual memory management. On a device
//! that does not, [`Layout::Classic`] allocates each super block separately and decodes
//! through the table.
//!
//! ## Exhaustion
//!
//! The host grows the pool before a batch that may need it ([`SlabAlloc::reserve`]). A
//! warp that still finds no free unit after a bounded number of resident-block changes
//! gets `null_unit`, the allocator's status word records `POOL_EXHAUSTED`, and
//! [`SlabAlloc::check_status`] turns that into [`Error::PoolExhausted`]. The allocator
//! stays consistent; grow and retry. That word collects what the non-synchronizing calls
//! and kernels record until `check_status`; the synchronizing calls give their kernels a
//! word of their own and report their own failures: [`SlabAlloc::try_allocate_into`]
//! names exactly the entries that got no unit (`gpuds_core::Error::NotApplied`) and
//! keeps the rest, [`SlabAlloc::allocate`] gives back what it got and allocates nothing.
//!
//! ## A walk-through
//!
//! ```no_run
//! use gpuds_alloc::{SlabAlloc, SlabAllocConfig};
//! use gpuds_core::cudarc::driver::PushKernelArg;
//! use gpuds_core::{Gpu, Program};
//!
//! let gpu = Gpu::new(0)?;
//! let mut pool = SlabAlloc::new(&gpu, SlabAllocConfig::default())?;
//! pool.reserve(1 << 20)?;
//! // A kernel that gives every thread a unit and writes its index there.
//! let program = Program::new(
//!     "stamp",
//!     r#"#include <gpuds/alloc/slab_alloc.cuh>
//!        using namespace gpuds::alloc;
//!        extern "C" __global__ void stamp(slab_alloc_ref pool, unit_addr* out) {
//!            warp_allocator allocator(pool);          // all 32 lanes, converged
//!            unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
//!            unit_addr a = allocator.allocate_lane(true);
//!            if (a != null_unit) *pool.pointer_as<unsigned>(a) = i;
//!            out[i] = a;
//!        }"#,
//! )
//! .headers(gpuds_alloc::cuda_headers());
//! let kernel = gpu.load(&program)?.kernel("stamp")?;
//! let mut out = gpu.stream().alloc_zeros::<u32>(1 << 20)?;
//! let r = pool.device_ref();
//! let mut args = gpu.stream().launch_builder(kernel.func());
//! args.arg(&r).arg(&mut out);
//! unsafe { args.launch(gpuds_core::launch::shape(4096, 256, 0)) }.map_err(gpuds_core::Error::from)?;
//! pool.check_status()?;
//! assert_eq!(pool.units_in_use()?, 1 << 20);
//! pool.validate()?;
//! # Ok::<(), gpuds_alloc::Error>(())
//! ```
#![warn(missing_docs)]

pub mod address;
mod config;
mod ebr;
mod error;
pub mod faults;
mod memory;
mod slab_alloc;
mod snapshot;
pub mod workload;

pub use address::NULL_UNIT;
pub use config::{Layout, SlabAllocConfig, MAX_UNITS};
pub use ebr::{Collector, CollectorConfig, CollectorStats, EbrRef, LIMBO_FULL};
pub use error::{Error, Result};
pub use slab_alloc::{SlabAlloc, SlabAllocRef, SlabAllocStats, SuperBlockStats, DOUBLE_FREE};
pub use snapshot::PoolSnapshot;

/// Every kernel module of gpuds-alloc, so that a test can compile all of them without a
/// GPU.
pub fn programs() -> Vec<gpuds_core::Program> {
    vec![slab_alloc::program(), ebr::program()]
}

/// gpuds-alloc's device headers and those of the crates below, as (include name, text).
pub fn cuda_headers() -> Vec<(&'static str, &'static str)> {
    let mut headers = gpuds_core::cuda_headers();
    headers.push(("gpuds/alloc/faults.cuh", faults::HEADER));
    headers.push((
        "gpuds/alloc/slab_alloc.cuh",
        include_str!("../cuda/include/gpuds/alloc/slab_alloc.cuh"),
    ));
    headers.push((
        "gpuds/alloc/ebr.cuh",
        include_str!("../cuda/include/gpuds/alloc/ebr.cuh"),
    ));
    headers
}
