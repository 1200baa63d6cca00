//! [`TreeRef`], the Rust mirror of `gpuds::btree::tree_ref`.

use gpuds_alloc::SlabAllocRef;
use gpuds_core::cudarc::driver::DeviceRepr;

/// The tree as kernels see it: the mirror of `gpuds::btree::tree_ref`
/// (`#include <gpuds/btree/tree_ref.cuh>`), passed by value to a user kernel. Fetch it
/// again after any call that may grow the pool ([`crate::GpuBTreeMap::insert_many`],
/// [`crate::GpuBTreeMap::apply`], the bulk build).
///
/// # Examples
/// ```no_run
/// use gpuds_btree::GpuBTreeMap;
/// let gpu = gpuds_core::Gpu::new(0)?;
/// let tree = GpuBTreeMap::<u32, u32>::new(&gpu)?;
/// let r = tree.device_ref();
/// assert_ne!(r.root, gpuds_btree::node::NULL_NODE);
/// // pass to a kernel: builder.arg(&r)
/// # Ok::<(), gpuds_btree::Error>(())
/// ```
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TreeRef {
    /// The node pool.
    pub alloc: SlabAllocRef,
    /// Address of the root (it never moves).
    pub root: u32,
    /// Cap on node visits and restarts of one operation.
    pub max_steps: u32,
    /// Device address of the tree's status word.
    pub status: u64,
    /// Device address of the pair count (u64).
    pub size: u64,
}

// SAFETY: TreeRef is #[repr(C)] plain data whose layout matches the C++ struct (checked by
// the layout test); kernels receive it by value.
unsafe impl DeviceRepr for TreeRef {}
