//! [`TreeRef`], the Rust mirror of `gpuds::btree::tree_ref`.

use std::marker::PhantomData;

use gpuds_alloc::SlabAllocRef;
use gpuds_core::cudarc::driver::DeviceRepr;

/// The tree as kernels see it: the mirror of `gpuds::btree::tree_ref<K, V>`
/// (`#include <gpuds/btree/tree_ref.cuh>`), passed by value to a user kernel. Its fields
/// are the same for every `K` and `V`; the types say which `tree_ref` instantiation (and
/// so which node layout) the kernel must use. Fetch it
/// again after any call that may grow the pool ([`crate::GpuBTreeMap::insert_many`],
/// [`crate::GpuBTreeMap::apply`], the bulk build).
///
/// # Examples
/// ```no_run
/// use gpuds_btree::GpuBTreeMap;
/// let gpu = gpuds_core::Gpu::new(0)?;
/// let tree = GpuBTreeMap::<u64, u32>::new(&gpu)?;
/// let r = tree.device_ref();
/// assert_ne!(r.root, gpuds_btree::node::NULL_NODE);
/// // pass to a kernel taking gpuds::btree::tree_ref<unsigned long long, unsigned>: builder.arg(&r)
/// # Ok::<(), gpuds_btree::Error>(())
/// ```
#[repr(C)]
#[derive(Debug)]
pub struct TreeRef<K = u32, V = u32> {
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
    /// The key and value types (no data: the C++ twin has no such field).
    pub types: PhantomData<fn() -> (K, V)>,
}

// Written out rather than derived, so that they hold for every K and V (a derive would
// ask K and V for them too).
impl<K, V> Clone for TreeRef<K, V> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<K, V> Copy for TreeRef<K, V> {}
impl<K, V> PartialEq for TreeRef<K, V> {
    fn eq(&self, other: &Self) -> bool {
        (
            self.alloc,
            self.root,
            self.max_steps,
            self.status,
            self.size,
        ) == (
            other.alloc,
            other.root,
            other.max_steps,
            other.status,
            other.size,
        )
    }
}
impl<K, V> Eq for TreeRef<K, V> {}
impl<K, V> Default for TreeRef<K, V> {
    fn default() -> Self {
        Self {
            alloc: SlabAllocRef::default(),
            root: 0,
            max_steps: 0,
            status: 0,
            size: 0,
            types: PhantomData,
        }
    }
}

// SAFETY: TreeRef is #[repr(C)] plain data whose layout matches the C++ struct (checked by
// the layout test; the PhantomData takes no room); kernels receive it by value.
unsafe impl<K: 'static, V: 'static> DeviceRepr for TreeRef<K, V> {}
