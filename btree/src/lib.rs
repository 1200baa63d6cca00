//! # gpuds-btree
//!
//! [`GpuBTreeMap`], the warp-cooperative GPU B-link tree of Awad (2022), chapter 3
//! ("Engineering a High-Performance GPU B-Tree"): an ordered map of `u32` or `u64` keys to
//! `u32` or `u64` values (all four combinations; [`TreeKey`], [`TreeValue`]) that
//! supports batched insertion, lookup, deletion, range and successor queries, mixed
//! concurrent batches and a bulk build, all on the GPU. A program switches `u32` to `u64`
//! in the type parameters and nothing else.
//!
//! | on the CPU (`std::collections::BTreeMap`) | here |
//! | --- | --- |
//! | `insert` / `extend` | [`GpuBTreeMap::insert_many`] (a key's value is replaced) |
//! | `get` | [`GpuBTreeMap::get_many`] |
//! | `remove` | [`GpuBTreeMap::remove_many`] (nodes are never merged) |
//! | `range(lo..=hi)` | [`GpuBTreeMap::range_many`], [`GpuBTreeMap::range_many_capped`] (one pass), [`GpuBTreeMap::range_count_many`] |
//! | `range((Excluded(k), Unbounded)).next()` | [`GpuBTreeMap::successor_many`] |
//! | `FromIterator` | [`GpuBTreeMap::bulk_build`] (sort, then the whole tree in one kernel) |
//! | a node of 11 keys | a 128-byte node of 14 pairs (u32/u32) or 6 pairs (64-bit keys or values), a metadata slot, a B-link slot ([`node`]) |
//!
//! ## Design (§3.3 of the dissertation, each decision)
//!
//! - **One node per cache line**, read by one tile with one coalesced load. Node
//!   addresses are 32-bit slab units of a `gpuds_alloc::SlabAlloc` of 128-byte units.
//! - **Full 32- and 64-bit keys.** The original steals the most significant bit of the
//!   keys for the leaf and latch flags (31-bit keys, 15 pairs). Here latch, count and
//!   level sit in a metadata slot, so every `u32` or `u64` is a key and **no key is
//!   reserved**. It costs one pair of fanout (14 instead of 15, the fanout of the
//!   versioned tree), a count to keep per node, and a node height of at most one level
//!   more for the same keys. A 64-bit key or value makes a slot 16 bytes: a 128-byte node
//!   then holds 6 pairs (read by 8 lanes), see [`node::NodeLayout`].
//! - **Warp-cooperative work sharing** (§3.3.6): each thread brings a request, a tile
//!   serialises its lanes' requests (ballot, find first set, shuffle) and does each with
//!   all its lanes. Phased queries use tiles of 8, 16 or 32 lanes
//!   ([`BTreeConfig::query_tile`]; `gpuds-bench btree` measures all three): a tile of 8
//!   holds two pairs per lane and a warp works on four queries at a time. Range queries
//!   with 8 or 16 lanes run all the tiles of a warp in step, so that their ballots and
//!   shuffles take the whole warp (`detail/read.cuh`, `range_lockstep`). Deletions use
//!   at least 16 lanes and insertions whole warps (the slab allocator hands out units per
//!   warp), because a reachable node is changed by one store instruction of 16 lanes.
//! - **B-link side links** (§3.3.2): every node holds its right sibling and that
//!   sibling's minimum key, so readers never latch: a reader that reaches a node after a
//!   split moved its key right follows the link.
//! - **Decoupled read and write modes** (§3.3.3): updates descend in read mode and latch
//!   only the node they change, then re-read it.
//! - **Proactive splitting** (§3.3.4): an insertion splits every full node it meets on
//!   the way down, so a split changes only the node and its parent.
//! - **Restarts instead of spinlocks** (§3.3.5): a latch that is taken sends the
//!   insertion back to the last known parent (or the root when the split needs a node it
//!   does not know); it spins, bounded, only where the dissertation does: on the parent
//!   during a split and on the leaf of a deletion.
//! - **Bounded**: every operation has a cap of [`BTreeConfig::max_steps`] node visits and
//!   restarts; passing it sets `RETRY_LIMIT` in the status word and ends that one
//!   operation, which the batch then returns as an error.
//! - **Memory ordering**: latches are taken with an acquire CAS and released with a
//!   release store (`gpuds/core/memory.cuh`); loads that may race with a writer are
//!   relaxed GPU-scope loads (served coherently by L2); phased queries, which run while
//!   nothing modifies the tree, read through the non-coherent cache.
//!
//! ## Concurrent semantics of [`GpuBTreeMap::apply`] (§3.5.6)
//!
//! A mixed batch runs inserts, removals, lookups, successor and count queries in one
//! kernel. Every pair present before the batch and not updated by it is seen by every
//! query of the batch. Operations on keys the batch updates complete in some order the
//! hardware picks: a lookup of such a key may see it before or after each update, and a
//! count or successor over such keys may see any mix. The per-key results always match
//! some serial order of that key's operations. For exact answers, put updates and queries
//! in different batches (phased operation).
//!
//! As in the original, a reader loads a node with one load instruction of its tile (one
//! 128-byte line) and a writer changes a reachable node with one store instruction of
//! the line, latch release included; the tree relies on the hardware serving each as one
//! transaction, so that a reader never sees half of a change (a new count beside old
//! pairs). Phased queries never race with writers.
//!
//! ## Bad input
//!
//! No key is reserved. A range with `lo > hi` is empty (count 0). When the pool reaches
//! [`BTreeConfig::max_nodes`] a batch fails with a pool-exhausted error
//! ([`Error::is_pool_exhausted`]); the tree stays valid and holds some of the batch's
//! pairs (at the limit even updates of present keys may fail, since an insertion splits
//! every full node on its way down). Batches are limited to `u32::MAX` requests.
//!
//! # Examples
//! ```no_run
//! use gpuds_btree::GpuBTreeMap;
//! let gpu = gpuds_core::Gpu::new(0)?;
//! let mut tree = GpuBTreeMap::<u32, u32>::new(&gpu)?;
//! tree.insert_many(&[5, 1, 9], &[50, 10, 90])?;
//! assert_eq!(tree.get_many(&[1, 2])?, vec![Some(10), None]);
//! assert_eq!(tree.successor_many(&[5])?, vec![Some((9, 90))]);
//! let ranges = tree.range_many(&[(0, 6)])?;
//! assert_eq!(ranges.get(0), &[(1, 10), (5, 50)]);
//! tree.validate()?;
//! # Ok::<(), gpuds_btree::Error>(())
//! ```
#![warn(missing_docs)]

mod config;
mod error;
mod kernels;
mod keys;
mod map;
pub mod node;
mod ops;
pub mod runner;
mod sorted_array;
mod tree_ref;
pub mod validate;

pub use config::BTreeConfig;
pub use error::{Error, Result};
pub use keys::{TreeKey, TreeValue, TreeWord, Word};
pub use map::{BTreeStats, GpuBTreeMap};
pub use ops::{Ranges, TreeOp, TreeReply};
pub use sorted_array::SortedArray;
pub use tree_ref::TreeRef;

/// Every kernel module of gpuds-btree (for every key and value type: the update module
/// and the query module for each tile; for 64-bit pairs both node sizes; and the
/// sorted-array baseline), so that a test can compile all of them without a GPU.
///
/// ```no_run
/// for program in gpuds_btree::programs() {
///     program.compile(gpuds_core::Arch::new(9, 0), gpuds_core::Output::Ptx)?;
/// }
/// # Ok::<(), gpuds_core::Error>(())
/// ```
pub fn programs() -> Vec<gpuds_core::Program> {
    let mut all = Vec::new();
    instances::<u32, u32>(&mut all, &[128]);
    instances::<u64, u32>(&mut all, &[128, 256]);
    instances::<u32, u64>(&mut all, &[128, 256]);
    instances::<u64, u64>(&mut all, &[128, 256]);
    all.push(sorted_array::program());
    all
}

/// The modules of one key and value type, for each wide node size given.
fn instances<K: TreeKey, V: TreeValue>(
    all: &mut Vec<gpuds_core::Program>,
    wide_node_bytes: &[u32],
) {
    for &bytes in wide_node_bytes {
        all.push(kernels::update_program::<K, V>(bytes));
        for tile in [8, 16, 32] {
            all.push(kernels::query_program::<K, V>(tile, bytes));
        }
    }
}

/// gpuds-btree's device headers and those of the crates below, as (include name, text).
///
/// ```
/// let headers = gpuds_btree::cuda_headers();
/// assert!(headers.iter().any(|(name, _)| *name == "gpuds/btree/tree_ref.cuh"));
/// assert!(headers.iter().any(|(name, _)| *name == "gpuds/alloc/slab_alloc.cuh"));
/// ```
pub fn cuda_headers() -> Vec<(&'static str, &'static str)> {
    let mut headers = gpuds_alloc::cuda_headers();
    headers.extend([
        (
            "gpuds/btree/node.cuh",
            include_str!("../cuda/include/gpuds/btree/node.cuh"),
        ),
        (
            "gpuds/btree/latch.cuh",
            include_str!("../cuda/include/gpuds/btree/latch.cuh"),
        ),
        (
            "gpuds/btree/tree_ref.cuh",
            include_str!("../cuda/include/gpuds/btree/tree_ref.cuh"),
        ),
        (
            "gpuds/btree/detail/read.cuh",
            include_str!("../cuda/include/gpuds/btree/detail/read.cuh"),
        ),
        (
            "gpuds/btree/detail/write.cuh",
            include_str!("../cuda/include/gpuds/btree/detail/write.cuh"),
        ),
        (
            "gpuds/btree/detail/work_share.cuh",
            include_str!("../cuda/include/gpuds/btree/detail/work_share.cuh"),
        ),
    ]);
    headers
}
