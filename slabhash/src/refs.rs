//! Device refs: the `#[repr(C)]` mirrors of `gpuds::slabhash::map_ref<K, V>` and
//! `gpuds::slabhash::set_ref<K>`, passed by value into kernels.

use std::marker::PhantomData;

use cudarc::driver::DeviceRepr;
use gpuds_alloc::SlabAllocRef;
use gpuds_core::hash::Universal;

/// The fields every slab hash ref carries, in the order of `gpuds::slabhash::detail::table`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableRef {
    /// Device address of the B base slabs (32 words each).
    pub buckets: u64,
    /// Device address of the counters: 32 stripes of 16 `u64` words (one 128-byte line
    /// each), live keys in word 0 and claimed slots in word 1 of a stripe; a warp adds its
    /// changes to stripe `global warp id % 32`, and the totals are the sums.
    pub counters: u64,
    /// Device address of the table's status word.
    pub status: u64,
    /// The slab pool.
    pub alloc: SlabAllocRef,
    /// The bucket hash.
    pub hash: Universal,
    /// B.
    pub num_buckets: u32,
    /// 1 when keys are unique (REPLACE), 0 when duplicates are allowed.
    pub unique_keys: u32,
    /// The most slabs a list may have and a request may visit (see
    /// [`SlabHashConfig::step_cap`](crate::SlabHashConfig::step_cap)).
    pub step_cap: u32,
}

/// The device view of a [`SlabHashMap`](crate::SlabHashMap): pass it by value to a kernel
/// taking a `gpuds::slabhash::map_ref<K, V>` (`#include <gpuds/slabhash/map_ref.cuh>`).
///
/// It stays valid until the next call on the map that may grow the slab pool (an
/// insertion, `clear`, `flush`); fetch a fresh one with `device_ref()` before each
/// launch. A kernel that writes through it must be done before the map's next call
/// (launch it on the map's stream, or synchronize): the map's bulk lookups read the
/// table with read-only loads that assume no writer in flight. See the crate
/// documentation for an example.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MapRef<K, V> {
    /// The table's fields.
    pub table: TableRef,
    types: PhantomData<(K, V)>,
}

/// The device view of a [`SlabHashSet`](crate::SlabHashSet), for kernels taking a
/// `gpuds::slabhash::set_ref<K>` (`#include <gpuds/slabhash/set_ref.cuh>`). Same validity
/// rules as [`MapRef`].
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SetRef<K> {
    /// The table's fields.
    pub table: TableRef,
    types: PhantomData<K>,
}

impl<K, V> MapRef<K, V> {
    pub(crate) fn new(table: TableRef) -> Self {
        Self {
            table,
            types: PhantomData,
        }
    }
}

impl<K> SetRef<K> {
    pub(crate) fn new(table: TableRef) -> Self {
        Self {
            table,
            types: PhantomData,
        }
    }
}

// SAFETY: plain data with the layout of gpuds::slabhash::detail::table (checked by the
// layout tests); the u64 fields are device addresses.
unsafe impl DeviceRepr for TableRef {}
// SAFETY: #[repr(transparent)] over TableRef, the layout of map_ref<K, V>.
unsafe impl<K, V> DeviceRepr for MapRef<K, V> {}
// SAFETY: #[repr(transparent)] over TableRef, the layout of set_ref<K>.
unsafe impl<K> DeviceRepr for SetRef<K> {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{align_of, offset_of, size_of};

    #[test]
    fn host_layout_has_no_surprises() {
        // 3 pointers, the 64-byte allocator ref, the 12-byte hash, 3 words.
        assert_eq!(size_of::<SlabAllocRef>(), 64);
        assert_eq!(offset_of!(TableRef, alloc), 24);
        assert_eq!(offset_of!(TableRef, hash), 88);
        assert_eq!(offset_of!(TableRef, step_cap), 108);
        assert_eq!(size_of::<TableRef>(), 112);
        assert_eq!(align_of::<TableRef>(), 8);
        assert_eq!(size_of::<MapRef<u32, u32>>(), size_of::<TableRef>());
        assert_eq!(size_of::<SetRef<u32>>(), size_of::<TableRef>());
    }
}
