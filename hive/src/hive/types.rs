//! The key and value types a [`HiveMap`](super::HiveMap) stores, and how one slot holds
//! a pair (the host's twin of `gpuds/hive/detail/hive_slot.cuh`).
//!
//! | `K`, `V` | slot | reserved keys |
//! | --- | --- | --- |
//! | `u32`, `u32` | one packed 8-byte word, key in the high half | `u32::MAX` |
//! | `u64`, `u32` | 12 bytes: a key word among the bucket's keys, a 4-byte value among its values | `u64::MAX`, `u64::MAX - 1` |
//! | `u64`, `u64` | 16 bytes: a key word among the bucket's keys, a value word among its values | `u64::MAX`, `u64::MAX - 1` |
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
/// or `u64` (a bucket's key words, then its values). Sealed: no other type can
/// implement it.
pub trait HiveKey: DeviceKey + sealed::Sealed {
    /// Whether a pair takes a key word and a value word apart rather than one word.
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

/// The 64-bit words one stash entry takes on the device (a wide entry is `{key, value}`,
/// a `u32` value in the low half of its word).
pub(crate) const fn words_per_entry<K: HiveKey>() -> usize {
    if K::WIDE {
        2
    } else {
        1
    }
}

/// How a table's buckets lie in its slot array (the host twin of `bucket_words` and
/// `slot_at` in `gpuds/hive/detail/hive_bucket.cuh` and `hive_slot.cuh`): packed, a
/// bucket is `slots` words, one pair each; wide, a bucket is parts (`u64` values in
/// buckets of 16 slots: two parts of 8; otherwise one part), each its key words, then
/// their value words of `value_bytes` bytes (8, or 4: two values to a word, the lower
/// slot in the low half).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    /// Whether keys and values are apart (u64 keys).
    pub wide: bool,
    /// Bytes per value word (wide tables).
    pub value_bytes: usize,
    /// Slots per bucket.
    pub slots: usize,
}

impl Layout {
    /// The layout of a `HiveMap<K, V>` with `slots` slots per bucket.
    pub fn of<K: HiveKey, V: HiveValue<K>>(slots: usize) -> Self {
        Layout {
            wide: K::WIDE,
            value_bytes: std::mem::size_of::<V>(),
            slots,
        }
    }

    /// The 64-bit words of one bucket (every bucket of 8, 16 or 32 slots is a whole
    /// number of words: 16 bytes per slot for `u64` values, 12 for `u32`, 8 packed).
    pub fn bucket_words(&self) -> usize {
        if self.wide {
            self.slots + self.slots * self.value_bytes / 8
        } else {
            self.slots
        }
    }

    /// Whether a bucket is two parts of 8 slots, one 128-byte line each (`u64` values,
    /// 16 slots; `wide_slot::part_slots` on the device).
    pub fn two_parts(&self) -> bool {
        self.wide && self.value_bytes == 8 && self.slots == 16
    }

    /// The part of a two-part bucket that `key` fills first and a lookup of `key` reads
    /// first (the device's `preferred_part`): the top bit of its two words' xor times
    /// 0x9E3779B1; 0 for buckets of one part.
    pub fn preferred_part(&self, key: u64) -> usize {
        if !self.two_parts() {
            return 0;
        }
        let x = ((key >> 32) as u32 ^ key as u32).wrapping_mul(0x9E37_79B1);
        (x >> 31) as usize
    }

    /// Where slot `s` of a bucket's words is: the word of its key, and the word and bit
    /// offset of its value.
    fn places(&self, s: usize) -> (usize, usize, u32) {
        if !self.wide {
            return (s, s, 0);
        }
        let part_slots = if self.two_parts() { 8 } else { self.slots };
        let part = s / part_slots * (part_slots + part_slots * self.value_bytes / 8);
        let (j, values) = (s % part_slots, part + part_slots);
        if self.value_bytes == 8 {
            (part + j, values + j, 0)
        } else {
            (part + j, values + j / 2, 32 * (j % 2) as u32)
        }
    }

    /// The pair in slot `s` of `bucket` (one bucket's words), `None` when it is empty
    /// (its key word, or packed its word, all ones).
    pub fn pair(&self, bucket: &[u64], s: usize) -> Option<(u64, u64)> {
        if !self.wide {
            return decode(false, &bucket[s..s + 1]);
        }
        let (k, v, shift) = self.places(s);
        let mask = if self.value_bytes == 8 {
            u64::MAX
        } else {
            0xffff_ffff
        };
        (bucket[k] != u64::MAX).then_some((bucket[k], bucket[v] >> shift & mask))
    }

    /// Writes `(key, value)` into slot `s` of `bucket`, or empties it (`None`: every word
    /// or half word of the slot all ones).
    #[cfg(test)]
    pub fn set(&self, bucket: &mut [u64], s: usize, pair: Option<(u64, u64)>) {
        let (key, value) = pair.unwrap_or((u64::MAX, u64::MAX));
        if !self.wide {
            bucket[s] = if pair.is_some() {
                encode(false, key, value)[0]
            } else {
                u64::MAX
            };
            return;
        }
        let (k, v, shift) = self.places(s);
        bucket[k] = key;
        let mask = if self.value_bytes == 8 {
            u64::MAX
        } else {
            0xffff_ffff
        };
        bucket[v] = bucket[v] & !(mask << shift) | (value & mask) << shift;
    }
}

/// The pair a stash entry's words hold (`None` for an empty entry), as raw key and value
/// bits; `words` is one entry (`words_per_entry` words). A wide entry is `{key, value}`
/// in that order (the value word whole: a `u32` value is its low half); a packed word
/// has the key in its high half. Every word of an empty entry is all ones.
pub(crate) fn decode(wide: bool, words: &[u64]) -> Option<(u64, u64)> {
    if wide {
        (words[0] != u64::MAX).then_some((words[0], words[1]))
    } else {
        (words[0] != u64::MAX).then_some((words[0] >> 32, words[0] & 0xffff_ffff))
    }
}

/// The words of a stash entry holding `(key, value)` (the inverse of [`decode`]).
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
        assert_eq!(words_per_entry::<u32>(), 1);
        assert_eq!(words_per_entry::<u64>(), 2);
    }

    #[test]
    fn buckets_have_their_words_where_the_device_puts_them() {
        // Words per bucket: 8 bytes a slot packed, 16 for u64/u64, 12 for u64/u32.
        for (slots, packed, wide64, wide32) in [(8, 8, 16, 12), (16, 16, 32, 24), (32, 32, 64, 48)]
        {
            assert_eq!(Layout::of::<u32, u32>(slots).bucket_words(), packed);
            assert_eq!(Layout::of::<u64, u64>(slots).bucket_words(), wide64);
            assert_eq!(Layout::of::<u64, u32>(slots).bucket_words(), wide32);
        }
        // A 16-slot wide bucket: with u64 values two parts of 8 slots (one 128-byte line
        // a part), each its 8 key words, then their 8 values; with u32 values one part,
        // the 16 key words, then the values two to a word, the lower slot in the low
        // half.
        let l64 = Layout::of::<u64, u64>(16);
        assert!(l64.two_parts() && !Layout::of::<u64, u64>(8).two_parts());
        let mut b = vec![u64::MAX; l64.bucket_words()];
        l64.set(&mut b, 3, Some((7, 70)));
        assert_eq!((b[3], b[8 + 3]), (7, 70));
        l64.set(&mut b, 9, Some((8, 80)));
        assert_eq!((b[16 + 1], b[16 + 8 + 1]), (8, 80));
        l64.set(&mut b, 14, Some((6, 60)));
        assert_eq!((b[16 + 6], b[16 + 8 + 6]), (6, 60));
        assert_eq!(l64.pair(&b, 3), Some((7, 70)));
        assert_eq!(l64.pair(&b, 9), Some((8, 80)));
        assert_eq!(l64.pair(&b, 4), None);
        let l32 = Layout::of::<u64, u32>(16);
        let mut b = vec![u64::MAX; l32.bucket_words()];
        l32.set(&mut b, 4, Some((1 << 40, 0x1234)));
        l32.set(&mut b, 5, Some((9, 0xffff_ffff)));
        l32.set(&mut b, 14, Some((3, 33)));
        assert_eq!(b[4], 1 << 40);
        assert_eq!(b[16 + 2], 0xffff_ffff_0000_1234);
        assert_eq!((b[14], b[16 + 7]), (3, 0xffff_ffff_0000_0021));
        assert_eq!(l32.pair(&b, 14), Some((3, 33)));
        l32.set(&mut b, 14, None);
        assert_eq!(l32.pair(&b, 4), Some((1 << 40, 0x1234)));
        assert_eq!(l32.pair(&b, 5), Some((9, 0xffff_ffff)));
        l32.set(&mut b, 4, None);
        assert_eq!(l32.pair(&b, 4), None);
        assert_eq!(l32.pair(&b, 5), Some((9, 0xffff_ffff)));
        assert!(b.iter().enumerate().all(|(i, &w)| i == 5 || w == u64::MAX));
        let packed = Layout::of::<u32, u32>(8);
        let mut b = vec![u64::MAX; 8];
        packed.set(&mut b, 2, Some((5, 6)));
        assert_eq!(b[2], 5 << 32 | 6);
        assert_eq!(packed.pair(&b, 2), Some((5, 6)));
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
