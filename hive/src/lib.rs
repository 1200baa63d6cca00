//! # gpuds-hive
//!
//! Open-addressing hash tables on the GPU:
//!
//! - [`LinearProbeMap`]: the simple lock-free table of Farrell (2020): one 8-byte slot per
//!   `u32` pair, insert by compare-and-swap, lookups that stop at an empty slot, value or
//!   key tombstones ([`Deletion`]), a maximum load factor that grows the table or fails
//!   ([`WhenFull`]). It stands on the probing core of [`probe`] (linear or double
//!   hashing, 1 to 32 lanes per operation), which other gpuds crates share.
//! - [`HiveMap`]: the resizable bucketed cuckoo table of the Hive paper, with
//!   warp-cooperative insertion, a stash and linear-hashing resize, for `u32` keys and
//!   values or `u64` keys with `u32` or `u64` values ([`HiveKey`], [`HiveValue`]).
//!
//! Every operation is a batch run by one kernel; device refs let user kernels operate on
//! the same tables (`#include <gpuds/hive/...>` through [`cuda_headers`]).
//!
//! ```no_run
//! use gpuds_hive::{probe::{GroupWidth, Probing}, LinearConfig, LinearProbeMap};
//! let gpu = gpuds_core::Gpu::new(0)?;
//! let config = LinearConfig { capacity: 1 << 20, probing: Probing::DoubleHashing,
//!                             group_width: GroupWidth::new(4)?, ..LinearConfig::default() };
//! let mut map = LinearProbeMap::<u64, u64>::with_config(&gpu, config)?;
//! map.insert_many(&[1, 2], &[10, 20])?;
//! assert_eq!(map.get_many(&[1, 3])?, vec![Some(10), None]);
//! # Ok::<(), gpuds_hive::Error>(())
//! ```
#![warn(missing_docs)]

mod error;
pub mod hive;
pub mod linear;
pub mod probe;

pub use error::{Error, Result};
pub use hive::{HashPair, HiveConfig, HiveKey, HiveMap, HiveRef, HiveStats, HiveValue};
pub use linear::{
    Deletion, Input, LinearConfig, LinearProbeMap, LinearRef, LinearStats, Operation, WhenFull,
};

/// Every kernel module of gpuds-hive, with representative instantiations, so that a test
/// can compile all of them without a GPU.
pub fn programs() -> Vec<gpuds_core::Program> {
    let mut programs = linear::kernels::programs();
    programs.extend(hive::programs());
    programs
}

/// gpuds-hive's device headers as (include name, text), chained after gpuds-core's.
pub fn cuda_headers() -> Vec<(&'static str, &'static str)> {
    let mut headers = gpuds_core::cuda_headers();
    headers.extend([
        (
            "gpuds/hive/probing.cuh",
            include_str!("../cuda/include/gpuds/hive/probing.cuh"),
        ),
        (
            "gpuds/hive/detail/linear_slot.cuh",
            include_str!("../cuda/include/gpuds/hive/detail/linear_slot.cuh"),
        ),
        (
            "gpuds/hive/linear_ref.cuh",
            include_str!("../cuda/include/gpuds/hive/linear_ref.cuh"),
        ),
        (
            "gpuds/hive/hashers.cuh",
            include_str!("../cuda/include/gpuds/hive/hashers.cuh"),
        ),
        (
            "gpuds/hive/detail/hive_slot.cuh",
            include_str!("../cuda/include/gpuds/hive/detail/hive_slot.cuh"),
        ),
        (
            "gpuds/hive/detail/hive_bucket.cuh",
            include_str!("../cuda/include/gpuds/hive/detail/hive_bucket.cuh"),
        ),
        (
            "gpuds/hive/detail/stash.cuh",
            include_str!("../cuda/include/gpuds/hive/detail/stash.cuh"),
        ),
        (
            "gpuds/hive/detail/hive_locate.cuh",
            include_str!("../cuda/include/gpuds/hive/detail/hive_locate.cuh"),
        ),
        (
            "gpuds/hive/hive_ref.cuh",
            include_str!("../cuda/include/gpuds/hive/hive_ref.cuh"),
        ),
        (
            "gpuds/hive/detail/batch_loop.cuh",
            include_str!("../cuda/include/gpuds/hive/detail/batch_loop.cuh"),
        ),
        (
            "gpuds/hive/detail/op_ring.cuh",
            include_str!("../cuda/include/gpuds/hive/detail/op_ring.cuh"),
        ),
        (
            "gpuds/hive/detail/bulk_insert.cuh",
            include_str!("../cuda/include/gpuds/hive/detail/bulk_insert.cuh"),
        ),
        (
            "gpuds/hive/detail/fill_insert.cuh",
            include_str!("../cuda/include/gpuds/hive/detail/fill_insert.cuh"),
        ),
        (
            "gpuds/hive/detail/wide_fill.cuh",
            include_str!("../cuda/include/gpuds/hive/detail/wide_fill.cuh"),
        ),
        (
            "gpuds/hive/detail/wide_queued.cuh",
            include_str!("../cuda/include/gpuds/hive/detail/wide_queued.cuh"),
        ),
    ]);
    headers
}
