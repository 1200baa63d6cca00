//! # gpuds-mvbtree
//!
//! [`VersionedBTreeMap`], the GPU multiversion B-Tree of Awad (2022), chapter 4 ("A GPU
//! Multiversion B-Tree"): an ordered map of `u32` or `u64` keys to `u32` or `u64` values
//! whose nodes keep their older versions, so that a [`Snapshot`] sees the map exactly as
//! it was when taken, however many updates ran since. Range queries at a snapshot are
//! linearizable: they never see one concurrent insertion and miss another (§4.2.1), which
//! `gpuds_btree::GpuBTreeMap`'s concurrent ranges can.
//!
//! | on the CPU | here |
//! | --- | --- |
//! | `BTreeMap::insert` / `remove` | [`VersionedBTreeMap::insert_many`], [`VersionedBTreeMap::remove_many`] (newest state) |
//! | `BTreeMap::get` | [`VersionedBTreeMap::get_many`] (newest), [`VersionedBTreeMap::get_many_at`] |
//! | a clone of the map, kept | [`VersionedBTreeMap::snapshot`] (one CAS; no copy) |
//! | `range(lo..=hi)` on the clone | [`VersionedBTreeMap::range_many_at`], [`VersionedBTreeMap::range_count_many_at`] |
//! | `range((Excluded(k), Unbounded)).next()` | [`VersionedBTreeMap::successor_many_at`] |
//!
//! ## Design
//!
//! - **Versioned nodes** ([`node`]): a `GpuBTreeMap` node of the same size with one pair
//!   slot taken for the version (timestamp, older version), so a u32/u32 node holds 13
//!   pairs instead of 14. Every address in the tree names the head of a version list, and
//!   heads never move: a change that must keep the old contents copies the head to a
//!   fresh unit and changes the head in place (§4.4.1), so parents never change for a
//!   copy.
//! - **Snapshots** (§4.4.2): a global timestamp; taking a snapshot moves it by one CAS.
//!   A query at snapshot s reads, for every node it reaches, the first version of the
//!   list stamped at or before s.
//! - **Two update modes** ([`Updates`], §4.3.1): in place (ViB-Tree) when no snapshot is
//!   taken while the batch runs, out of place (VoB-Tree) when one may be (another stream,
//!   or tiles in a kernel); out-of-place versions are stamped by whoever meets them first
//!   (the vCAS rule of Wei et al.), so a snapshot sees a change entirely or not at all.
//!   Beyond the dissertation, in-place batches copy a node only when a live snapshot can
//!   see it: with no snapshot held they cost what `GpuBTreeMap`'s updates cost.
//! - **Long-lived snapshots and version collection**: a [`Snapshot`] may be held across
//!   any number of later batches. Between batches the collector frees the versions no
//!   live snapshot can reach (each list is cut after the version the oldest live snapshot
//!   reads), so memory stays within the live data plus the versions newer than the oldest
//!   live snapshot.
//! - The B-link write protocol (latches, proactive splits, restarts, bounded spins) and
//!   the node reads are gpuds-btree's device headers, reused.
//!
//! See `docs/mvbtree.md` for the full design and the measured results.
#![warn(missing_docs)]

mod error;
mod kernels;
mod map;
pub mod node;
mod ops;
mod snapshot;
mod tree_ref;
pub mod validate;

pub use error::{Error, Result};
pub use gpuds_btree::{BTreeConfig, TreeKey, TreeValue};
pub use map::{MvReplyBuffers, RangeOffsets, VersionStats, VersionedBTreeMap, RECLAIMER};
pub use ops::{MvOp, MvReply, Updates};
pub use snapshot::Snapshot;
pub use tree_ref::VersionedTreeRef;

/// Node bytes for 64-bit keys or values (the B-Tree's default: 256-byte nodes read by 16
/// lanes under a sequence number).
pub(crate) const WIDE_NODE_BYTES: u32 = 256;
/// Status flag: the version log was full (cannot happen while the log has an entry per
/// pool unit).
pub(crate) const LOG_FULL: u32 = gpuds_core::Status::FIRST_STRUCTURE_BIT << 2;
/// Status flag: the snapshot clock is exhausted.
pub(crate) const CLOCK_FULL: u32 = gpuds_core::Status::FIRST_STRUCTURE_BIT << 3;

/// The kernel module of every key and value type and query tile, so that a test can compile all of them
/// without a GPU.
///
/// ```no_run
/// for program in gpuds_mvbtree::programs() {
///     program.compile(gpuds_core::Arch::new(9, 0), gpuds_core::Output::Ptx)?;
/// }
/// # Ok::<(), gpuds_core::Error>(())
/// ```
pub fn programs() -> Vec<gpuds_core::Program> {
    let mut all = Vec::new();
    for tile in [8, 16, 32] {
        all.push(kernels::program::<u32, u32>(tile));
        all.push(kernels::program::<u64, u32>(tile));
        all.push(kernels::program::<u32, u64>(tile));
        all.push(kernels::program::<u64, u64>(tile));
    }
    all
}

/// gpuds-mvbtree's device headers and those of the crates below, as (include name, text).
///
/// ```
/// let headers = gpuds_mvbtree::cuda_headers();
/// assert!(headers.iter().any(|(name, _)| *name == "gpuds/mvbtree/versioned_tree_ref.cuh"));
/// assert!(headers.iter().any(|(name, _)| *name == "gpuds/btree/latch.cuh"));
/// ```
pub fn cuda_headers() -> Vec<(&'static str, &'static str)> {
    let mut headers = gpuds_btree::cuda_headers();
    headers.extend([
        (
            "gpuds/mvbtree/version.cuh",
            include_str!("../cuda/include/gpuds/mvbtree/version.cuh"),
        ),
        (
            "gpuds/mvbtree/versioned_tree_ref.cuh",
            include_str!("../cuda/include/gpuds/mvbtree/versioned_tree_ref.cuh"),
        ),
        (
            "gpuds/mvbtree/detail/vread.cuh",
            include_str!("../cuda/include/gpuds/mvbtree/detail/vread.cuh"),
        ),
        (
            "gpuds/mvbtree/detail/vwrite.cuh",
            include_str!("../cuda/include/gpuds/mvbtree/detail/vwrite.cuh"),
        ),
        (
            "gpuds/mvbtree/detail/vlockstep.cuh",
            include_str!("../cuda/include/gpuds/mvbtree/detail/vlockstep.cuh"),
        ),
    ]);
    headers
}
