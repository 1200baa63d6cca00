//! [`VersionedTreeRef`], the Rust mirror of `gpuds::mvbtree::versioned_tree_ref`.

use std::marker::PhantomData;

use gpuds_btree::TreeRef;
use gpuds_core::cudarc::driver::DeviceRepr;

/// The versioned tree as kernels see it: the mirror of
/// `gpuds::mvbtree::versioned_tree_ref<K, V>` (`#include <gpuds/mvbtree/versioned_tree_ref.cuh>`),
/// passed by value to a user kernel.
///
/// It borrows the map it came from ([`crate::VersionedBTreeMap::device_ref`]), so no call
/// that takes `&mut self` can run while it lives: not an update (the pool and the version
/// log may grow), not a version collection (the log is replaced), and not a snapshot
/// (`copy_below` says which nodes a live snapshot can see, and whether kernels may hand
/// versions to the reclaimer; a ref fetched before a snapshot would let in-place updates
/// change nodes the snapshot reads). Launch the kernels that use it, let it go, and fetch
/// it again after such a call. Dropping a [`crate::Snapshot`] while a ref lives is safe:
/// the ref then copies nodes that no snapshot needs any more, which the collector frees.
///
/// # Examples
/// ```no_run
/// use gpuds_mvbtree::{Updates, VersionedBTreeMap};
/// let gpu = gpuds_core::Gpu::new(0)?;
/// let map = VersionedBTreeMap::<u32, u32>::new(&gpu)?;
/// let r = map.device_ref(Updates::OutOfPlace);
/// assert_eq!(r.mode, 1);
/// // pass to a kernel taking gpuds::mvbtree::versioned_tree_ref<unsigned, unsigned>
/// # Ok::<(), gpuds_mvbtree::Error>(())
/// ```
#[repr(C)]
#[derive(Debug)]
pub struct VersionedTreeRef<'map, K = u32, V = u32> {
    /// The tree of newest versions: node pool, root, step cap, status word, pair count.
    pub tree: TreeRef<K, V>,
    /// Device address of the global timestamp (u32).
    pub clock: u64,
    /// In-place updates copy a node first when its timestamp is below this (the newest
    /// live snapshot plus one; 0 when no snapshot is live).
    pub copy_below: u32,
    /// 0: in place ([`crate::Updates::InPlace`]); 1: out of place.
    pub mode: u32,
    /// Device address of the version log: heads that have older versions (u32 each).
    pub log: u64,
    /// Device address of the log's length (u32).
    pub log_len: u64,
    /// Entries the log can hold.
    pub log_cap: u32,
    /// In-place updates: the clock while the batch runs, or `UNSET_TS` (read it at each
    /// change; what the host hands out, the crate's kernels read it once per warp).
    pub now: u32,
    /// The borrow of the map (no bytes).
    pub(crate) map: PhantomData<&'map ()>,
}

impl<K, V> Clone for VersionedTreeRef<'_, K, V> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<K, V> Copy for VersionedTreeRef<'_, K, V> {}

// SAFETY: #[repr(C)] plain data whose layout matches the C++ struct (checked by the layout
// test; the borrow is a zero-sized marker at the end); kernels receive it by value.
unsafe impl<K: 'static, V: 'static> DeviceRepr for VersionedTreeRef<'_, K, V> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_matches_the_cpp_struct() {
        // tree_ref: slab_alloc_ref, root, max_steps, status, size; then the fields here.
        let tree = std::mem::size_of::<TreeRef<u32, u32>>();
        assert_eq!(tree % 8, 0);
        assert_eq!(
            std::mem::offset_of!(VersionedTreeRef<u32, u32>, clock),
            tree
        );
        assert_eq!(
            std::mem::offset_of!(VersionedTreeRef<u32, u32>, copy_below),
            tree + 8
        );
        assert_eq!(
            std::mem::offset_of!(VersionedTreeRef<u32, u32>, mode),
            tree + 12
        );
        assert_eq!(
            std::mem::offset_of!(VersionedTreeRef<u32, u32>, log),
            tree + 16
        );
        assert_eq!(
            std::mem::offset_of!(VersionedTreeRef<u32, u32>, log_len),
            tree + 24
        );
        assert_eq!(
            std::mem::offset_of!(VersionedTreeRef<u32, u32>, log_cap),
            tree + 32
        );
        assert_eq!(std::mem::size_of::<VersionedTreeRef<u64, u64>>(), tree + 40);
    }
}
