//! The key and value types of [`crate::GpuBTreeMap`]: `u32` and `u64`, in all four
//! combinations. The traits are sealed, so a type the tree cannot store is a compile error:
//!
//! ```compile_fail
//! let gpu = gpuds_core::Gpu::new(0).unwrap();
//! let tree = gpuds_btree::GpuBTreeMap::<u32, u16>::new(&gpu);
//! ```
//!
//! ```compile_fail
//! let gpu = gpuds_core::Gpu::new(0).unwrap();
//! let tree = gpuds_btree::GpuBTreeMap::<i64, u32>::new(&gpu);
//! ```

use gpuds_core::{DeviceKey, DeviceValue};

mod sealed {
    pub trait Sealed {}
    impl Sealed for u32 {}
    impl Sealed for u64 {}
}

/// A key type of [`crate::GpuBTreeMap`]: `u32` or `u64`. Every value of the type is a
/// valid key (no key is reserved). Sealed.
pub trait TreeKey: DeviceKey + std::fmt::LowerHex + sealed::Sealed {
    /// The word of a mixed batch with `u32` values: the wider of this and `u32`.
    type WithU32: TreeWord;
}
impl TreeKey for u32 {
    type WithU32 = u32;
}
impl TreeKey for u64 {
    type WithU32 = u64;
}

/// A value type of [`crate::GpuBTreeMap`]: `u32` or `u64`; every value can be stored.
/// Sealed.
pub trait TreeValue: DeviceValue + Eq + std::hash::Hash + Default + sealed::Sealed {
    /// The word of a mixed batch with keys `K` (see [`Word`]).
    type Word<K: TreeKey>: TreeWord;
}
impl TreeValue for u32 {
    type Word<K: TreeKey> = K::WithU32;
}
impl TreeValue for u64 {
    type Word<K: TreeKey> = u64;
}

/// A mixed batch's argument and first result word ([`Word`]): `u32` or `u64`. Sealed.
pub trait TreeWord: DeviceValue + Default + sealed::Sealed {}
impl TreeWord for u32 {}
impl TreeWord for u64 {}

/// The word of a mixed batch of a `GpuBTreeMap<K, V>`: the wider of `K` and `V`, so that
/// it holds an insertion's value, a count's upper bound, the value a lookup or removal
/// found, a successor's key and a count ([`crate::GpuBTreeMap::apply_device`]).
///
/// ```
/// use gpuds_btree::Word;
/// let a: Word<u32, u32> = 1u32;
/// let b: Word<u64, u32> = 1u64;
/// let c: Word<u32, u64> = 1u64;
/// # let _ = (a, b, c);
/// ```
pub type Word<K, V> = <V as TreeValue>::Word<K>;
