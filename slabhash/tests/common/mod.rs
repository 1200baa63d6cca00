//! Helpers shared by the GPU tests.
#![allow(dead_code)]

use std::collections::HashMap;

use gpuds_alloc::SlabAllocConfig;
use gpuds_core::{DeviceType, Status};
use gpuds_slabhash::{Error, OpResult, SlabHashConfig, SlabHashMap, SlabKey, SlabValue};
use gpuds_testkit::check::Reply;

pub const RESERVED: [u32; 2] = [u32::MAX, u32::MAX - 1];

/// Runs generic test bodies `name::<K, V>()` for every map type combination: one module
/// per combination (`u32_u32`, `u32_u64`, `u64_u32`, `u64_u64`), one test per body.
#[macro_export]
macro_rules! for_every_map_type {
    ($($name:ident),* $(,)?) => {
        $crate::for_every_map_type!(@one u32_u32, u32, u32, $($name),*);
        $crate::for_every_map_type!(@one u32_u64, u32, u64, $($name),*);
        $crate::for_every_map_type!(@one u64_u32, u64, u32, $($name),*);
        $crate::for_every_map_type!(@one u64_u64, u64, u64, $($name),*);
    };
    (@one $module:ident, $k:ty, $v:ty, $($name:ident),*) => {
        mod $module {
            $(
                #[test]
                fn $name() {
                    super::$name::<$k, $v>()
                }
            )*
        }
    };
}

/// Runs generic test bodies `name::<K>()` for every set key type (modules `u32`, `u64`).
#[macro_export]
macro_rules! for_every_set_type {
    ($($name:ident),* $(,)?) => {
        $crate::for_every_set_type!(@one u32, $($name),*);
        $crate::for_every_set_type!(@one u64, $($name),*);
    };
    (@one $k:ident, $($name:ident),*) => {
        mod $k {
            $(
                #[test]
                fn $name() {
                    super::$name::<$k>()
                }
            )*
        }
    };
}

/// Runs `run(gpu, buckets, batches)` for every bucket count of `buckets` on 12 generated
/// sequences of batches (proptest: a failure is shrunk and reported). Skips without a GPU.
pub fn for_batch_sequences<T: std::fmt::Debug>(
    sequences: impl proptest::strategy::Strategy<Value = Vec<Vec<T>>>,
    buckets: &[u32],
    run: impl Fn(&gpuds_core::Gpu, u32, &[Vec<T>]),
) {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let mut runner = proptest::test_runner::TestRunner::new(proptest::test_runner::Config {
        cases: 12,
        failure_persistence: None,
        ..Default::default()
    });
    runner
        .run(&sequences, |batches| {
            for &b in buckets {
                run(&gpu, b, &batches);
            }
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
}

/// A value type the oracles can compare and hash (every SlabValue the crate has).
pub trait TestValue: SlabValue + Eq + std::hash::Hash + Ord {}
impl<V: SlabValue + Eq + std::hash::Hash + Ord> TestValue for V {}

/// A key or value from a small number.
pub fn n<T: DeviceType>(x: u64) -> T {
    T::from_u64(x)
}

/// Entries per slab of a map of K to V (a set: V of no words), as the crate's layout
/// table documents: 30 data lanes over the entry's 32-bit words.
pub fn slots<K, V>(set: bool) -> usize {
    let words = (std::mem::size_of::<K>() + if set { 0 } else { std::mem::size_of::<V>() }) / 4;
    30 / words
}

/// Keys that stress a 64-bit table where a 32-bit shortcut would fail, `count` of them
/// (count at least 8), none reserved, distinct: for u64, the 32-bit sentinels (legal
/// 64-bit keys), keys just below the 64-bit reserved values, keys that differ from EMPTY
/// only in their high word, and keys that differ from each other only in their high word;
/// for u32, the keys just below the reserved values and keys spread over the range.
pub fn edge_keys<K: SlabKey>(count: usize) -> Vec<K> {
    let quarter = (count / 4) as u64;
    let groups: Vec<u64> = if std::mem::size_of::<K>() == 8 {
        [u64::from(u32::MAX), u64::from(u32::MAX - 1)]
            .into_iter()
            .chain((0..quarter).map(|i| u64::MAX - 2 - i))
            .chain((0..quarter).map(|i| ((0xFFFF_FFFE - i) << 32) | 0xFFFF_FFFF))
            .chain((0..count as u64).map(|i| (i << 32) | 0x0123_4567))
            .collect()
    } else {
        (0..2 * quarter)
            .map(|i| u64::from(u32::MAX) - 2 - i)
            .chain((0..count as u64).map(|i| i.wrapping_mul(0x9E37_79B9) & 0xFFFF_FFF0))
            .collect()
    };
    let mut seen = std::collections::HashSet::new();
    let keys: Vec<K> = groups
        .into_iter()
        .filter(|k| seen.insert(*k))
        .take(count)
        .map(n)
        .collect();
    assert_eq!(keys.len(), count);
    assert!(keys.iter().all(|k| !K::RESERVED.contains(k)));
    keys
}

/// The map's pairs as a HashMap (unique keys).
pub fn contents<K: SlabKey, V: SlabValue>(map: &SlabHashMap<K, V>) -> HashMap<K, V> {
    let pairs = map.to_vec().expect("to_vec");
    let m: HashMap<K, V> = pairs.iter().copied().collect();
    assert_eq!(m.len(), pairs.len(), "a key is live twice");
    m
}

/// A multimap's instances per key, least recent first (SEARCHALL follows list order).
pub fn instances<K: SlabKey, V: SlabValue>(map: &SlabHashMap<K, V>) -> HashMap<K, Vec<V>> {
    let mut keys: Vec<K> = map.to_vec().expect("to_vec").iter().map(|p| p.0).collect();
    keys.sort_unstable();
    keys.dedup();
    let all = map.get_all_many(&keys).expect("get_all_many");
    keys.iter()
        .enumerate()
        .map(|(i, &k)| (k, all.get(i).to_vec()))
        .collect()
}

/// What a GPU result tells the concurrency checks.
pub fn reply<V: Copy>(r: OpResult<V>) -> Reply<V> {
    match r {
        OpResult::Added => Reply::Unknown,
        other => Reply::Value(other.value()),
    }
}

/// A table of `buckets` buckets whose slab pool is one memory block (1,024 slabs) that
/// cannot grow.
pub fn small_pool(buckets: u32) -> SlabHashConfig {
    SlabHashConfig {
        buckets,
        alloc: SlabAllocConfig {
            initial_units: 1024,
            max_units: 1024,
            ..SlabAllocConfig::default()
        },
        ..Default::default()
    }
}

/// The requests a call reports not applied, with `flag` among its flags (none when the
/// call succeeded); any other error fails the test.
pub fn not_applied(result: Result<(), Error>, flag: Status) -> Vec<usize> {
    match result {
        Ok(()) => Vec::new(),
        Err(Error::Core(e)) => gpuds_testkit::failed::not_applied(&e, flag),
        Err(e) => panic!("expected requests not applied ({flag}), got {e}"),
    }
}

/// Each of `keys` several times in one batch: in order, in reverse, then the first half
/// twice side by side (four times in all) and the second half once more (three), so that
/// a key is named by lanes of different warps and of one.
pub fn thrice<K: Copy>(keys: &[K]) -> Vec<K> {
    let half = keys.len() / 2;
    let mut batch: Vec<K> = keys.to_vec();
    batch.extend(keys.iter().rev());
    for &k in &keys[..half] {
        batch.extend([k, k]);
    }
    batch.extend(&keys[half..]);
    batch
}
