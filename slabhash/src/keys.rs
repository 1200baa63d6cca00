//! Which key and value types a slab hash stores, and its reserved keys.

use gpuds_core::{DeviceKey, DeviceValue};

mod sealed {
    pub trait Sealed {}
    impl Sealed for u32 {}
}

/// A key type of a slab hash: a [`DeviceKey`] with the two reserved values of the slab
/// list (the paper's §III-B footnote): [`SlabKey::EMPTY`] marks a slot never used,
/// [`SlabKey::TOMBSTONE`] a deleted key. Batches holding either are rejected.
///
/// Implemented for `u32`, the paper's configuration (one key per lane of a slab).
pub trait SlabKey: DeviceKey + sealed::Sealed {
    /// The empty-slot marker (all ones).
    const EMPTY: Self;
    /// The deleted-key marker (all ones but the lowest bit).
    const TOMBSTONE: Self;
    /// Both reserved values.
    const RESERVED: [Self; 2] = [Self::EMPTY, Self::TOMBSTONE];
}

impl SlabKey for u32 {
    const EMPTY: u32 = u32::MAX;
    const TOMBSTONE: u32 = u32::MAX - 1;
}

/// A value type of a [`SlabHashMap`](crate::SlabHashMap): any 32-bit [`DeviceValue`]
/// (every value is allowed). Implemented for `u32`.
pub trait SlabValue: DeviceValue + PartialEq + sealed::Sealed {
    /// What [`get_many_into`](crate::SlabHashMap::get_many_into) writes for a missing
    /// key (all ones).
    const NOT_FOUND: Self;
}

impl SlabValue for u32 {
    const NOT_FOUND: u32 = u32::MAX;
}
