//! What the HiveMap test files share: the key and value types they run for, and a macro
//! that turns generic test bodies into one test per type pair.
#![allow(dead_code)]

use std::fmt::{Debug, LowerHex};

use gpuds_hive::{HiveKey, HiveValue};

/// A HiveMap key type with what the tests print and compare.
pub trait Key: HiveKey + Debug + LowerHex {}
impl<T: HiveKey + Debug + LowerHex> Key for T {}

/// A HiveMap value type (beside keys `K`) with what the tests print and compare.
pub trait Value<K: HiveKey>: HiveValue<K> + Debug + LowerHex + Ord + std::hash::Hash {}
impl<K: HiveKey, T: HiveValue<K> + Debug + LowerHex + Ord + std::hash::Hash> Value<K> for T {}

/// A value of type `V` from a number (truncated to `V`).
pub fn val<V: gpuds_core::DeviceValue>(x: u64) -> V {
    V::from_u64(x)
}

/// Keys that differ from each other only in their high 32 bits where `K` has them
/// (`n` keys with one low word), else plain distinct keys: a hash or comparison that
/// dropped a key's high word would merge them.
pub fn high_word_keys<K: HiveKey>(low: u32, n: usize) -> Vec<K> {
    if K::WIDE {
        (0..n as u64)
            .map(|hi| K::from_u64(hi << 32 | low as u64))
            .collect()
    } else {
        (0..n as u64).map(|i| K::from_u64(low as u64 + i)).collect()
    }
}

/// The `n` largest keys that are not reserved (next to the reserved ones at the top of
/// the key range), and the `n` smallest.
pub fn keys_near_the_reserved<K: HiveKey>(n: usize) -> Vec<K> {
    let top = K::MAX.to_u64() - K::RESERVED.len() as u64;
    (0..n as u64)
        .map(|i| K::from_u64(top - i))
        .chain((0..n as u64).map(K::from_u64))
        .collect()
}

/// One `#[test]` per HiveMap key and value type for each generic test body named, in
/// modules `u32_u32`, `u64_u32` and `u64_u64` (filter by those names).
#[macro_export]
macro_rules! for_each_type {
    ($($body:ident),* $(,)?) => {
        mod u32_u32 {
            $( #[test] fn $body() { super::$body::<u32, u32>(); } )*
        }
        mod u64_u32 {
            $( #[test] fn $body() { super::$body::<u64, u32>(); } )*
        }
        mod u64_u64 {
            $( #[test] fn $body() { super::$body::<u64, u64>(); } )*
        }
    };
}
