//! # gpuds-slabhash
//!
//! The slab hash (Ashkiani, Farach-Colton and Owens, "A Dynamic Hash Table for the GPU",
//! IPDPS 2018) and its set variant (Awad, dissertation, 2022, §5.4): hash tables with
//! chaining whose lists are *slab lists*, linked 128-byte slabs that one warp reads with
//! one coalesced load, one 32-bit word per lane. Keys and values are `u32` or `u64`
//! (every combination; other types do not compile).
//!
//! | on the CPU | in gpuds-slabhash |
//! | --- | --- |
//! | `HashMap<u64, u32>` | [`SlabHashMap<u64, u32>`] (unique keys: REPLACE) |
//! | a multimap | [`SlabHashMap`] with `unique_keys: false` (INSERT, SEARCHALL, DELETEALL) |
//! | `HashSet<u32>` | [`SlabHashSet`] (30 u32 or 15 u64 keys per slab) |
//! | a list node | a slab: 15, 10 or 7 pairs or 30 or 15 keys, an auxiliary word, a next address |
//! | `Box::new` for a node | SlabAlloc (`gpuds-alloc`), warp-synchronous |
//! | a reference into the map | [`MapRef`] / [`SetRef`], passed by value into kernels |
//!
//! ## Layout and invariants
//!
//! B buckets are B base slabs in one array; a bucket's further slabs come from a
//! [`gpuds_alloc::SlabAlloc`]. A key's bucket is the universal hash
//! ((a·k + b) mod p) mod B with random a, b (from the configured seed). Two key values
//! are reserved ([`SlabKey::RESERVED`]): the empty slot and the tombstone. A deleted key
//! becomes a tombstone, which keeps its slot until [`SlabHashMap::flush`] compacts the
//! lists: so empty slots are always a suffix of a list, list order is insertion order,
//! and DELETE and SEARCH see the least recent instance of a key.
//!
//! ## 64-bit keys and values
//!
//! A slab stays 128 bytes, one line per probe; a 64-bit key or value takes two lanes. The
//! entries per slab (u32/u32 15, u64/u32 and u32/u64 10, u64/u64 7; sets 30 and 15) and
//! the claim of a pair wider than 8 bytes (the key by CAS, then the value, under a busy
//! bit per slot) are described in `docs/slabhash.md`. The reserved keys are all ones and
//! all ones minus one of the key type.
//!
//! ## Operations
//!
//! All operations are batches, one kernel each; within a kernel every warp serves its
//! lanes' requests one at a time (the paper's warp-cooperative work sharing), so a
//! batch may mix keys, buckets and (with `apply`) operation kinds freely. Inputs may be
//! host slices or device memory ([`BatchInput`]).
//!
//! ## Failures
//!
//! A call reports its own failures and nothing else: its kernels get a status word and
//! failure bits of their own, read once where the call synchronizes, so a failed read
//! never shows up in a later update. A request that cannot be applied (its list full at
//! the step cap, the slab pool exhausted, a retry cap passed) fails alone: the call
//! returns [`gpuds_core::Error::NotApplied`] (in [`Error::Core`]) naming exactly those
//! requests, every other request took effect, and the table stays valid. No list is
//! ever longer than the step cap ([`SlabHashConfig::step_cap`]): an insert stops there
//! ([`LIST_FULL`]) rather than append past it, so every later read walks every list to
//! its end and answers.
//!
//! ## Device API
//!
//! `#include <gpuds/slabhash/map_ref.cuh>` (or `set_ref.cuh`) through [`cuda_headers`]
//! gives `gpuds::slabhash::map_ref<K, V>`: the warp-cooperative operations (replace,
//! insert, erase, erase_all, find, find_all, count_of) and a bucket iterator, on the
//! same memory as the host map. A user kernel that inserts through a ref (the same code
//! runs as a GPU test):
//!
#![doc = concat!(
    "```no_run\n",
    include_str!("../tests/doc/user_kernel.rs"),
    "# let gpu = gpuds_core::Gpu::new(0)?;\n",
    "squares_through_a_ref(&gpu)?;\n",
    "# Ok::<(), gpuds_slabhash::Error>(())\n",
    "```"
)]
#![warn(missing_docs)]

mod config;
mod error;
mod image;
mod input;
mod kernels;
mod keys;
mod layout;
mod map;
mod ops;
mod refs;
mod set;
mod sizing;
mod stats;
mod table;

pub use config::{buckets_for, SlabHashConfig, DEFAULT_BETA, MAX_BUCKETS};
pub use error::{Error, Result};
pub use image::Summary;
pub use input::{BatchInput, Staged};
pub use keys::{SlabKey, SlabValue};
pub use map::SlabHashMap;
pub use ops::{BatchResults, DeviceBatch, MapOp, MultiValues, OpResult, SetOp};
pub use refs::{MapRef, SetRef, TableRef};
pub use set::SlabHashSet;
pub use stats::SlabHashStats;

/// Status flag (the first structure bit) of a slab hash kernel: an insert found its key's
/// list full at the step cap ([`SlabHashConfig::step_cap`] slabs, every slot claimed) and
/// was not applied. Inserts never make a list longer than the step cap, so every read
/// walks every list to its end. Raise the step cap, use more buckets, or
/// [`flush`](SlabHashMap::flush) tombstones away.
///
/// ```
/// assert!(gpuds_slabhash::LIST_FULL.to_string().contains("structure flags 0x1"));
/// ```
pub const LIST_FULL: gpuds_core::Status =
    gpuds_core::Status(gpuds_core::Status::FIRST_STRUCTURE_BIT);

/// Every kernel module of gpuds-slabhash, with every instantiation the host types make
/// (maps of u32 and u64 keys to u32 and u64 values, sets of u32 and u64), so that a test
/// can compile all of them without a GPU.
pub fn programs() -> Vec<gpuds_core::Program> {
    use kernels::{program, Kind};
    vec![
        program::<u32, u32>(Kind::Map),
        program::<u32, u64>(Kind::Map),
        program::<u64, u32>(Kind::Map),
        program::<u64, u64>(Kind::Map),
        program::<u32, u32>(Kind::Set),
        program::<u64, u32>(Kind::Set),
    ]
}

/// gpuds-slabhash's device headers and those of the crates below (gpuds-alloc,
/// gpuds-core), as (include name, text).
pub fn cuda_headers() -> Vec<(&'static str, &'static str)> {
    let mut headers = gpuds_alloc::cuda_headers();
    headers.extend([
        (
            "gpuds/slabhash/layout.cuh",
            include_str!("../cuda/include/gpuds/slabhash/layout.cuh"),
        ),
        (
            "gpuds/slabhash/slab.cuh",
            include_str!("../cuda/include/gpuds/slabhash/slab.cuh"),
        ),
        (
            "gpuds/slabhash/detail/table.cuh",
            include_str!("../cuda/include/gpuds/slabhash/detail/table.cuh"),
        ),
        (
            "gpuds/slabhash/detail/alone.cuh",
            include_str!("../cuda/include/gpuds/slabhash/detail/alone.cuh"),
        ),
        (
            "gpuds/slabhash/detail/alone_wide.cuh",
            include_str!("../cuda/include/gpuds/slabhash/detail/alone_wide.cuh"),
        ),
        (
            "gpuds/slabhash/detail/tile_find.cuh",
            include_str!("../cuda/include/gpuds/slabhash/detail/tile_find.cuh"),
        ),
        (
            "gpuds/slabhash/detail/flush.cuh",
            include_str!("../cuda/include/gpuds/slabhash/detail/flush.cuh"),
        ),
        (
            "gpuds/slabhash/map_ref.cuh",
            include_str!("../cuda/include/gpuds/slabhash/map_ref.cuh"),
        ),
        (
            "gpuds/slabhash/set_ref.cuh",
            include_str!("../cuda/include/gpuds/slabhash/set_ref.cuh"),
        ),
    ]);
    headers
}
