//! The key and value types a [`HiveMap`](super::HiveMap) stores, and how one slot holds
//! a pair (the host's twin of `gpuds/hive/detail/hive_slot.cuh`).
//!
//! | `K`, `V` | slot | reserved keys |
//! | --- | --- | --- |
//! | `u32`, `u32` | one packed 8-byte word, key in the high half | `u32::MAX` |
//! | `u64`, `u32` | 16 bytes: key word, value word (zero-extended) | `u64::MAX`, `u64::MAX - 1` |
//! | `u64`, `u64` | 16 bytes: key word, value word | `u64::MAX`, `u64::MAX - 1` |
//!
//! Other combinations do not compile: the traits are sealed and `u64` values are stored
//! beside `u64` keys only.

use gpuds_core::{DeviceKey, DeviceValue};

mod sealed {
    pub trait Sealed {}
    impl Sealed for u32 {}
    impl Sealed for u64 {}
}

/// A key type of [`HiveMap`](super::HiveMap): `u32` (pairs packed into one 8-byte word)
/// or `u64` (16-byte slots). Sealed: no other type can implement it.
pub trait HiveKey: DeviceKey + sealed::Sealed {
    /// Whether a pair takes a 16-byte slot (two 64-bit words) rather than one word.
    const WIDE: bool;
    /// The keys no pair may have: the empty slot's key, and for `u64` keys also the key
    /// that marks a slot a writer owns between the two steps of a change.
    const RESERVED: &'static [Self];
    /// The 32-bit word the hash pair is computed on: a `u32` key itself; a `u64` key
    /// folded (the low word xor the murmur3 finalizer of the high word, so that keys
    /// differing only in their high words hash apart, and a key below 2^32 hashes as
    /// the same `u32` key).
    fn fold(self) -> u32;
}

impl HiveKey for u32 {
    const WIDE: bool = false;
    const RESERVED: &'static [u32] = &[u32::MAX];
    fn fold(self) -> u32 {
        self
    }
}

impl HiveKey for u64 {
    const WIDE: bool = true;
    const RESERVED: &'static [u64] = &[u64::MAX, u64::MAX - 1];
    fn fold(self) -> u32 {
        (self as u32) ^ gpuds_core::hash::murmur3_32((self >> 32) as u32)
    }
}

/// A value type a [`HiveMap`](super::HiveMap) with keys `K` can store: `u32` beside
/// either key type, `u64` beside `u64` keys. Sealed.
///
/// A pair the table cannot store is a compile error, not a run-time one:
///
/// ```compile_fail
/// # fn f(gpu: &gpuds_core::Gpu) {
/// // u64 values need u64 keys (a packed u32 slot has room for a u32 value only).
/// let map = gpuds_hive::HiveMap::<u32, u64>::new(gpu, 1024);
/// # }
/// ```
///
/// ```compile_fail
/// # fn f(gpu: &gpuds_core::Gpu) {
/// // Keys are u32 or u64.
/// let map = gpuds_hive::HiveMap::<i64, u64>::new(gpu, 1024);
/// # }
/// ```
///
/// ```
/// # fn f(gpu: &gpuds_core::Gpu) {
/// let a = gpuds_hive::HiveMap::<u32, u32>::new(gpu, 1024);
/// let b = gpuds_hive::HiveMap::<u64, u32>::new(gpu, 1024);
/// let c = gpuds_hive::HiveMap::<u64, u64>::new(gpu, 1024);
/// # }
/// ```
pub trait HiveValue<K: HiveKey>: DeviceValue + sealed::Sealed {}

impl HiveValue<u32> for u32 {}
impl HiveValue<u64> for u32 {}
impl HiveValue<u64> for u64 {}

/// The 64-bit words one slot (or stash entry) takes on the device.
pub(crate) const fn words_per_slot<K: HiveKey>() -> usize {
    if K::WIDE {
        2
    } else {
        1
    }
}

/// The pair a slot's words hold (`None` for an empty slot), as raw key and value bits;
/// `words` is one slot (`words_per_slot` words). A wide slot is `{key, value}` in that
/// order; a packed word has the key in its high half. Every word of an empty slot is
/// all ones, for both layouts.
pub(crate) fn decode(wide: bool, words: &[u64]) -> Option<(u64, u64)> {
    if wide {
        (words[0] != u64::MAX).then_some((words[0], words[1]))
    } else {
        (words[0] != u64::MAX).then_some((words[0] >> 32, words[0] & 0xffff_ffff))
    }
}

/// The words of a slot holding `(key, value)` (the inverse of [`decode`]).
#[cfg(test)]
pub(crate) fn encode(wide: bool, key: u64, value: u64) -> Vec<u64> {
    if wide {
        vec![key, value]
    } else {
        vec![key << 32 | (value & 0xffff_ffff)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_decode_what_they_encode() {
        for (wide, key, value) in [
            (false, 7u64, 9u64),
            (false, 0xffff_fffe, 0xffff_ffff),
            (true, 7, 9),
            (true, u64::MAX - 2, u64::MAX),
            (true, 1 << 32, 0),
        ] {
            let words = encode(wide, key, value);
            assert_eq!(words.len(), if wide { 2 } else { 1 });
            assert_eq!(decode(wide, &words), Some((key, value)));
        }
        assert_eq!(decode(false, &[u64::MAX]), None);
        assert_eq!(decode(true, &[u64::MAX, u64::MAX]), None);
        assert_eq!(words_per_slot::<u32>(), 1);
        assert_eq!(words_per_slot::<u64>(), 2);
    }

    #[test]
    fn folds_keep_the_high_word() {
        assert_eq!(5u64.fold(), 5u32.fold());
        let low = 0x1234_5678u64;
        let folds: std::collections::HashSet<u32> =
            (0..1000u64).map(|hi| (hi << 32 | low).fold()).collect();
        assert_eq!(
            folds.len(),
            1000,
            "keys differing in the high word fold apart"
        );
        assert_eq!(u32::RESERVED, &[u32::MAX]);
        assert_eq!(u64::RESERVED, &[u64::MAX, u64::MAX - 1]);
    }
}
