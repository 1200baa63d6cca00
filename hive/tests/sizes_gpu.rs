//! GPU tests of size arithmetic from callers' numbers (issue 23, part 3): every
//! constructor and `reserve`/`rehash`/`expand` of LinearProbeMap and HiveMap over
//! capacity-like arguments (0, 1, powers of two ± 1, `u32::MAX ± 1`, `u64::MAX - k`,
//! `1 << 63`). Each call either succeeds with at least the capacity asked for, or fails
//! with `CapacityOverflow` / `OutOfMemory` and leaves the structure as it was (capacity
//! and contents). Requests that succeed are kept small; the one request past the
//! device's memory fails before anything is allocated. Without a GPU each test prints
//! `skipped: no CUDA device` and passes.

use std::collections::HashMap;

use gpuds_hive::hive::MAX_BUCKETS;
use gpuds_hive::linear::MAX_CAPACITY;
use gpuds_hive::{Error, HiveConfig, HiveMap, LinearConfig, LinearProbeMap};

mod common;

use common::{val, Key, Value};

// The HiveMap tests run for every key and value type (modules u32_u32, u64_u32, u64_u64).
for_each_type!(
    hive_constructors_take_every_capacity,
    hive_expand_meets_the_request_or_changes_nothing,
    hive_tables_past_device_memory_are_out_of_memory,
);
use gpuds_testkit::strategy::{capacities, capacity_edges, capacity_edges_up_to};
use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, TestRunner};

/// The largest request a test lets succeed (slots or keys): a few MiB on the device.
const SMALL: u64 = 1 << 16;

fn is_overflow(e: &Error) -> bool {
    matches!(e, Error::Core(gpuds_core::Error::CapacityOverflow(_)))
}

fn is_out_of_memory(e: &Error) -> bool {
    matches!(e, Error::Core(gpuds_core::Error::OutOfMemory { .. }))
}

fn state(map: &LinearProbeMap<u32, u32>) -> HashMap<u32, u32> {
    map.to_vec().unwrap().into_iter().collect()
}

/// A table of `capacity` slots holding `len` pairs (`k -> k + 1`).
fn filled(gpu: &gpuds_core::Gpu, capacity: u64, len: u32) -> LinearProbeMap<u32, u32> {
    let mut map = LinearProbeMap::<u32, u32>::new(gpu, capacity).unwrap();
    let keys: Vec<u32> = (0..len).collect();
    let values: Vec<u32> = keys.iter().map(|k| k + 1).collect();
    map.insert_many(&keys, &values).unwrap();
    map
}

/// The requests a GPU test may make: small ones (which succeed) and those past every
/// limit (which must fail before allocating); none in between, which would allocate
/// gigabytes.
fn testable(n: u64, limit: u64) -> bool {
    n <= SMALL || n > limit
}

/// The reproduction: `reserve(n)` for huge n returned `Ok(())` and could shrink
/// the table (1,024 slots to 128, or to 1 when empty). Now: an error, nothing changed,
/// and the table keeps working.
#[test]
fn linear_huge_reserve_is_refused_and_keeps_the_table() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    for len in [0u32, 500, 900] {
        let mut map = filled(&gpu, 1024, len);
        let before = state(&map);
        for n in [
            u64::MAX,
            1 << 63,
            u64::MAX - 50,
            u64::MAX - 600,
            1 << 40,
            1 << 32,
        ] {
            let e = map.reserve(n).unwrap_err();
            assert!(is_overflow(&e), "reserve({n}) with {len} pairs: {e}");
            assert_eq!(map.capacity(), 1024, "reserve({n}) with {len} pairs");
            assert_eq!(state(&map), before);
            map.validate().unwrap();
        }
        // Ordinary inserts still work (they failed with a load-factor error before).
        map.insert_many(&[100_000, 100_001], &[1, 2]).unwrap();
        assert_eq!(map.len().unwrap(), before.len() + 2);
        map.validate().unwrap();
    }
}

/// `new` over the capacity-like numbers: small ones succeed with at least that many
/// slots, those past `MAX_CAPACITY` are `CapacityOverflow`, 0 an invalid argument.
#[test]
fn linear_constructors_take_every_capacity() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    for capacity in capacity_edges() {
        if !testable(capacity, MAX_CAPACITY) {
            continue;
        }
        let config = LinearConfig {
            capacity,
            ..LinearConfig::default()
        };
        match LinearProbeMap::<u64, u64>::with_config(&gpu, config) {
            Ok(map) => {
                assert!(map.capacity() >= capacity, "{capacity}");
                assert!(map.is_empty().unwrap());
                map.validate().unwrap();
            }
            Err(e) if capacity == 0 => assert!(!is_overflow(&e), "{e}"),
            Err(e) => {
                assert!(capacity > MAX_CAPACITY, "{capacity}: {e}");
                assert!(is_overflow(&e), "{capacity}: {e}");
            }
        }
    }
}

/// `reserve` and `rehash` over the capacity-like numbers, on tables holding some pairs:
/// `Ok` with room for what was asked and a capacity never reduced by `reserve`, or an
/// overflow error with capacity and contents as before.
#[test]
fn linear_reserve_and_rehash_meet_the_request_or_change_nothing() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let strategy = (
        capacities().prop_filter("small or past every limit", |&n| testable(n, MAX_CAPACITY)),
        0u32..200,
        prop_oneof![Just(64u64), Just(1024)],
    );
    let mut runner = TestRunner::new(ProptestConfig {
        cases: 48,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    runner
        .run(&strategy, |(n, len, capacity)| {
            let mut map = filled(&gpu, capacity, len);
            let before = state(&map);
            let capacity = map.capacity();
            match map.reserve(n) {
                Ok(()) => {
                    prop_assert!(map.capacity() >= capacity);
                    let room = (map.capacity() as f64 * map.config().max_load_factor) as u64;
                    prop_assert!(room >= u64::from(len) + n, "{} slots for {}", room, n);
                }
                Err(e) => {
                    prop_assert!(is_overflow(&e), "reserve({}): {}", n, e);
                    prop_assert_eq!(map.capacity(), capacity);
                }
            }
            prop_assert_eq!(state(&map), before.clone());
            map.validate().unwrap();
            let capacity = map.capacity();
            match map.rehash(n) {
                Ok(()) => {
                    prop_assert!(map.capacity() >= n.min(MAX_CAPACITY));
                    prop_assert!(map.capacity().is_power_of_two());
                }
                Err(e) => {
                    prop_assert!(n > MAX_CAPACITY && is_overflow(&e), "rehash({}): {}", n, e);
                    prop_assert_eq!(map.capacity(), capacity);
                }
            }
            prop_assert_eq!(state(&map), before);
            map.validate().unwrap();
            Ok(())
        })
        .unwrap();
}

/// `HiveMap::new` over the capacity-like numbers, as for the linear table.
fn hive_constructors_take_every_capacity<K: Key, V: Value<K>>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let most = (MAX_BUCKETS * 16) as u64;
    for capacity in capacity_edges() {
        if !testable(capacity, most) {
            continue;
        }
        let Ok(capacity) = usize::try_from(capacity) else {
            continue;
        };
        match HiveMap::<K, V>::new(&gpu, capacity) {
            Ok(map) => {
                assert!(map.capacity() >= capacity, "{capacity}");
                assert!(map.is_empty());
                map.validate().unwrap();
            }
            Err(e) if capacity == 0 => assert!(!is_overflow(&e), "{e}"),
            Err(e) => assert!(is_overflow(&e), "{capacity}: {e}"),
        }
    }
}

/// `expand` by the capacity-like numbers: small expansions succeed, the rest are
/// `CapacityOverflow` with buckets and pairs as before.
fn hive_expand_meets_the_request_or_changes_nothing<K: Key, V: Value<K>>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let mut map = HiveMap::<K, V>::new(&gpu, 1 << 10).unwrap();
    let keys: Vec<K> = (0..300u64).map(|i| K::from_u64(i << 20 | i)).collect();
    let values: Vec<V> = (0..300u64).map(val).collect();
    map.insert_many(&keys, &values).unwrap();
    let mut before: Vec<(K, V)> = map.to_vec().unwrap();
    before.sort_unstable();
    for more in capacity_edges() {
        // Small expansions (at most 4,096 buckets, 1 MiB), or past the largest table.
        let small = more <= SMALL / 16;
        if !small && more <= MAX_BUCKETS as u64 {
            continue;
        }
        let Ok(more) = usize::try_from(more) else {
            continue;
        };
        let buckets = map.buckets();
        match map.expand(more) {
            Ok(()) => {
                assert!(small, "expand({more}) succeeded");
                assert_eq!(map.buckets(), buckets + more);
            }
            Err(e) => {
                assert!(!small && is_overflow(&e), "expand({more}): {e}");
                assert_eq!(map.buckets(), buckets);
            }
        }
        let mut now = map.to_vec().unwrap();
        now.sort_unstable();
        assert_eq!(now, before, "expand({more})");
        map.validate().unwrap();
        // Shrink back so that the next small expansion stays small.
        map.contract(map.buckets()).unwrap();
    }
}

/// A table larger than the device's memory (2^30 buckets of 32 slots: 256 GiB) is
/// `OutOfMemory`, at construction and when an expansion asks for it; the table being
/// expanded is left as it was and keeps working. Nothing is allocated by the failing
/// calls.
fn hive_tables_past_device_memory_are_out_of_memory<K: Key, V: Value<K>>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let slot_bytes = if K::WIDE { 16 } else { 8 };
    if !gpuds_testkit::memory_below(&gpu, (MAX_BUCKETS as u64) * 32 * slot_bytes) {
        return;
    }
    let config = HiveConfig {
        capacity: MAX_BUCKETS * 32,
        slots_per_bucket: 32,
        ..Default::default()
    };
    let e = HiveMap::<K, V>::with_config(&gpu, config.clone()).unwrap_err();
    assert!(is_out_of_memory(&e), "{e}");
    let mut map = HiveMap::<K, V>::with_config(
        &gpu,
        HiveConfig {
            capacity: 1 << 12,
            ..config
        },
    )
    .unwrap();
    let k = K::from_u64;
    let v = val::<V>;
    map.insert_many(&[k(1), k(2), k(3)], &[v(10), v(20), v(30)])
        .unwrap();
    let buckets = map.buckets();
    let e = map.expand(MAX_BUCKETS - buckets).unwrap_err();
    assert!(is_out_of_memory(&e), "{e}");
    assert_eq!(map.buckets(), buckets);
    assert_eq!(
        map.get_many(&[k(1), k(2), k(3), k(4)]).unwrap(),
        vec![Some(v(10)), Some(v(20)), Some(v(30)), None]
    );
    map.insert_many(&[k(4)], &[v(40)]).unwrap();
    map.validate().unwrap();
}

/// A linear table asked to hold 2^40 keys (past its largest size): an error, the table
/// unchanged; `rehash` to a capacity past `MAX_CAPACITY` alike.
#[test]
fn linear_requests_past_the_largest_table_change_nothing() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let mut map = filled(&gpu, 1 << 12, 1000);
    let before = state(&map);
    for e in [
        map.reserve(1 << 40).unwrap_err(),
        map.rehash(1 << 40).unwrap_err(),
    ] {
        assert!(is_overflow(&e) || is_out_of_memory(&e), "{e}");
    }
    assert_eq!(map.capacity(), 1 << 12);
    assert_eq!(state(&map), before);
    map.validate().unwrap();
    for n in capacity_edges_up_to(1 << 12) {
        map.reserve(n).unwrap();
        assert!(map.capacity() as f64 * 0.9 >= (1000 + n) as f64);
    }
    assert_eq!(state(&map), before);
}
