//! # gpuds-hive
//!
//! Open-addressing hash tables on the GPU:
//!
//! - `LinearProbeMap`: the simple lock-free table (one 8-byte slot per pair, insert by
//!   compare-and-swap on the key, lookups that stop at an empty slot), on a probing core
//!   (linear or double hashing, 1 to 32 lanes per operation) that other gpuds crates
//!   share.
//! - `HiveMap`: a resizable bucketed cuckoo table with warp-cooperative insertion, a
//!   stash and linear-hashing resize.
//!
//! Every operation is a batch run by one kernel; device refs let user kernels operate on
//! the same tables (`#include <gpuds/hive/...>` through [`cuda_headers`]).
#![warn(missing_docs)]

mod error;
pub mod hive;
pub mod linear;
pub mod probe;

pub use error::{Error, Result};
pub use hive::{HashPair, HiveConfig, HiveMap, HiveRef, HiveStats};
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
            "gpuds/hive/detail/hive_bucket.cuh",
            include_str!("../cuda/include/gpuds/hive/detail/hive_bucket.cuh"),
        ),
        (
            "gpuds/hive/detail/stash.cuh",
            include_str!("../cuda/include/gpuds/hive/detail/stash.cuh"),
        ),
        (
            "gpuds/hive/hive_ref.cuh",
            include_str!("../cuda/include/gpuds/hive/hive_ref.cuh"),
        ),
    ]);
    headers
}
