//! Which key and value types a slab hash stores, and its reserved keys.

use gpuds_core::{DeviceKey, DeviceValue};

mod sealed {
    pub trait Sealed {}
    impl Sealed for u32 {}
    impl Sealed for u64 {}
}

/// A key type of a slab hash: a [`DeviceKey`] with the two reserved values of the slab
/// list (the paper's §III-B footnote): [`SlabKey::EMPTY`] marks a slot never used,
/// [`SlabKey::TOMBSTONE`] a deleted key. Batches holding either are rejected.
///
/// Implemented for `u32`, the paper's configuration (one key per lane of a slab), and
/// `u64` (two lanes per key; see the crate's layout table). The sealed trait makes any
/// other key type a compile error:
///
/// ```compile_fail
/// # let gpu = gpuds_core::Gpu::new(0).unwrap();
/// let map = gpuds_slabhash::SlabHashMap::<u16, u32>::new(&gpu, 10);
/// ```
pub trait SlabKey: DeviceKey + sealed::Sealed {
    /// The empty-slot marker (all ones).
    const EMPTY: Self;
    /// The deleted-key marker (all ones but the lowest bit).
    const TOMBSTONE: Self;
    /// Both reserved values.
    const RESERVED: [Self; 2] = [Self::EMPTY, Self::TOMBSTONE];

    /// The 32 bits the bucket hash sees: the key itself for `u32`; for `u64` the low word
    /// xor the high word times an odd constant (a bijection of each word for a fixed
    /// other, so keys that differ only in their high word fold apart). The twin of the
    /// device's `detail::table::fold`.
    ///
    /// ```
    /// use gpuds_slabhash::SlabKey;
    /// assert_eq!(7u32.fold(), 7);
    /// assert_ne!((1u64 << 32 | 7).fold(), (2u64 << 32 | 7).fold());
    /// ```
    fn fold(self) -> u32;
}

/// The odd constant of the 64-bit fold (2^32 over the golden ratio).
const KEY_FOLD: u32 = 0x9E37_79B9;

impl SlabKey for u32 {
    const EMPTY: u32 = u32::MAX;
    const TOMBSTONE: u32 = u32::MAX - 1;
    fn fold(self) -> u32 {
        self
    }
}

impl SlabKey for u64 {
    const EMPTY: u64 = u64::MAX;
    const TOMBSTONE: u64 = u64::MAX - 1;
    fn fold(self) -> u32 {
        (self as u32) ^ ((self >> 32) as u32).wrapping_mul(KEY_FOLD)
    }
}

/// The fold of a key given as its 64-bit widening and its width in words.
pub(crate) fn fold_words(key: u64, key_words: u32) -> u32 {
    if key_words == 2 {
        key.fold()
    } else {
        key as u32
    }
}

/// A value type of a [`SlabHashMap`](crate::SlabHashMap): `u32` or `u64` (every value
/// is allowed). Sealed: any other value type is a compile error:
///
/// ```compile_fail
/// # let gpu = gpuds_core::Gpu::new(0).unwrap();
/// let map = gpuds_slabhash::SlabHashMap::<u32, f32>::new(&gpu, 10);
/// ```
pub trait SlabValue: DeviceValue + PartialEq + sealed::Sealed {
    /// What [`get_many_into`](crate::SlabHashMap::get_many_into) writes for a missing
    /// key (all ones).
    const NOT_FOUND: Self;
}

impl SlabValue for u32 {
    const NOT_FOUND: u32 = u32::MAX;
}

impl SlabValue for u64 {
    const NOT_FOUND: u64 = u64::MAX;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_keys_are_all_ones_and_all_ones_minus_one() {
        assert_eq!(u32::RESERVED, [u32::MAX, u32::MAX - 1]);
        assert_eq!(u64::RESERVED, [u64::MAX, u64::MAX - 1]);
        assert_eq!(u64::NOT_FOUND, u64::MAX);
    }

    /// The fold keeps every bit of a 64-bit key: keys that differ in one word only never
    /// fold together (a fold that dropped the high word would fail here).
    #[test]
    fn the_fold_sees_both_words() {
        let low = 0x1234_5678u64;
        let folds: std::collections::HashSet<u32> =
            (0..1000u64).map(|hi| (hi << 32 | low).fold()).collect();
        assert_eq!(folds.len(), 1000);
        let folds: std::collections::HashSet<u32> =
            (0..1000u64).map(|lo| (7 << 32 | lo).fold()).collect();
        assert_eq!(folds.len(), 1000);
        assert_eq!(fold_words(5, 1), 5);
        assert_eq!(fold_words(3 << 32 | 5, 2), (3u64 << 32 | 5).fold());
    }
}
