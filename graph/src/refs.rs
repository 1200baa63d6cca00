//! [`GraphRef`]: the `#[repr(C)]` mirror of `gpuds::graph::graph_ref<V>`, passed by value
//! into kernels.

use std::marker::PhantomData;

use cudarc::driver::DeviceRepr;
use gpuds_slabhash::TableRef;

/// One vertex of the dictionary, as the device keeps it (`gpuds::graph::vertex_entry`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VertexEntry {
    /// Device address of the vertex's first base slab.
    pub base: u64,
    /// Its bucket count (bits 0-30); bit 31: the vertex is deleted.
    pub buckets: u32,
    /// Its out-edges.
    pub count: u32,
}

// SAFETY: plain data with the layout of gpuds::graph::vertex_entry.
unsafe impl DeviceRepr for VertexEntry {}
// SAFETY: all zero bits are a valid VertexEntry.
unsafe impl cudarc::driver::ValidAsZeroBits for VertexEntry {}

/// The device view of a [`DynamicGraph`](crate::DynamicGraph): pass it by value to a
/// kernel taking a `gpuds::graph::graph_ref<V>` (`#include <gpuds/graph/graph_ref.cuh>`;
/// `V` is `gpuds::slabhash::no_value` for a set graph, `unsigned` or `unsigned long long`
/// for a map graph). It stays valid until the next call on the graph that may grow it
/// (an insertion, vertex insertion); fetch a fresh one before each launch. A user kernel
/// that writes through it must be done before the graph's next call: the graph's query
/// calls (`edge_exists_many`, `edge_values_many`, the triangle counts) read the tables
/// with read-only loads, which no writer may run beside (calls on one stream run in
/// order, so a kernel launched on the graph's stream is done in time).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GraphRef<W> {
    /// The slab lists' shared fields (counters, status, pool, hash, step cap); its
    /// `buckets` is unused.
    pub lists: TableRef,
    /// Device address of the vertex dictionary (`vertex_entry*`).
    pub vertices: u64,
    /// Vertex ids in the dictionary.
    pub num_vertices: u32,
    /// `UNDIRECTED` (1), `KEEP_SELF_LOOPS` (2), `HAS_DELETED` (4).
    pub flags: u32,
    values: PhantomData<W>,
}

impl<W> GraphRef<W> {
    pub(crate) fn new(lists: TableRef, vertices: u64, num_vertices: u32, flags: u32) -> Self {
        Self {
            lists,
            vertices,
            num_vertices,
            flags,
            values: PhantomData,
        }
    }
}

// SAFETY: plain data with the layout of gpuds::graph::graph_ref<V> (checked by the
// layout test); the u64 fields are device addresses.
unsafe impl<W> DeviceRepr for GraphRef<W> {}

/// `flags`: each edge stored in both tables.
pub(crate) const UNDIRECTED: u32 = 1;
/// `flags`: self loops are edges.
pub(crate) const KEEP_SELF_LOOPS: u32 = 2;
/// `flags`: some vertex is deleted.
pub(crate) const HAS_DELETED: u32 = 4;
/// Bit 31 of `VertexEntry::buckets`.
pub(crate) const DELETED_BIT: u32 = 1 << 31;

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    #[test]
    fn host_layout_has_no_surprises() {
        assert_eq!(size_of::<VertexEntry>(), 16);
        assert_eq!(offset_of!(GraphRef<u32>, vertices), size_of::<TableRef>());
        assert_eq!(
            offset_of!(GraphRef<u32>, num_vertices),
            size_of::<TableRef>() + 8
        );
        assert_eq!(size_of::<GraphRef<()>>(), size_of::<TableRef>() + 16);
    }
}
