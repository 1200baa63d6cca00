//! GPU tests of size arithmetic in gpuds-slabhash (issue 23, part 3): constructors and
//! `reserve` of maps and sets over capacity-like numbers either succeed with room for
//! what was asked, or fail (`CapacityOverflow`, `PoolExhausted`, `OutOfMemory`) with the
//! table and its pool as they were. Requests that succeed are kept small. Without a GPU
//! each test prints `skipped: no CUDA device` and passes.

use gpuds_alloc::SlabAllocConfig;
use gpuds_slabhash::{Error, SlabHashConfig, SlabHashMap, SlabHashSet, MAX_BUCKETS};
use gpuds_testkit::strategy::capacity_edges;

/// The largest request a test lets succeed (elements or buckets).
const SMALL: u64 = 1 << 16;

fn is_overflow(e: &Error) -> bool {
    matches!(e, Error::Core(gpuds_core::Error::CapacityOverflow(_)))
}

fn is_out_of_memory(e: &Error) -> bool {
    matches!(e, Error::Core(gpuds_core::Error::OutOfMemory { .. }))
}

fn sorted(map: &SlabHashMap<u32, u32>) -> Vec<(u32, u32)> {
    let mut pairs = map.to_vec().unwrap();
    pairs.sort_unstable();
    pairs
}

#[test]
fn constructors_take_every_size_or_refuse_it() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    // More elements than the largest pool holds (2^32 - 2^10 slabs of 30 or 15).
    let most = gpuds_alloc::MAX_UNITS * 15;
    for n in capacity_edges() {
        if n <= SMALL || n > 2 * most {
            let Ok(len) = usize::try_from(n) else {
                continue;
            };
            match SlabHashMap::<u32, u32>::new(&gpu, len) {
                Ok(map) => {
                    assert!(n <= SMALL, "{n}");
                    map.validate().unwrap();
                }
                Err(e) => assert!(n > SMALL && is_overflow(&e), "map of {n}: {e}"),
            }
            match SlabHashSet::<u32>::new(&gpu, len) {
                Ok(set) => {
                    assert!(n <= SMALL, "{n}");
                    set.validate().unwrap();
                }
                Err(e) => assert!(n > SMALL && is_overflow(&e), "set of {n}: {e}"),
            }
        }
        // Buckets are allocated up front (128 bytes each): small, or past the limit.
        if let Ok(buckets) = u32::try_from(n) {
            if n <= SMALL || buckets > MAX_BUCKETS {
                let config = SlabHashConfig {
                    buckets,
                    ..Default::default()
                };
                match SlabHashMap::<u32, u32>::with_config(&gpu, config) {
                    Ok(map) => assert_eq!(map.config().buckets, buckets),
                    Err(Error::InvalidConfig(_)) => assert_eq!(buckets, 0),
                    Err(e) => assert!(buckets > MAX_BUCKETS && is_overflow(&e), "{n}: {e}"),
                }
            }
        }
    }
}

/// `reserve` over the capacity-like numbers on a map whose pool may hold 2^16 slabs
/// (8 MiB): room for what was asked, or an error with the pool and contents unchanged.
#[test]
fn reserve_meets_the_request_or_changes_nothing() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let config = SlabHashConfig {
        buckets: 64,
        alloc: SlabAllocConfig {
            initial_units: 1024,
            max_units: SMALL,
            ..Default::default()
        },
        ..Default::default()
    };
    let mut map = SlabHashMap::<u32, u32>::with_config(&gpu, config.clone()).unwrap();
    let mut set = SlabHashSet::<u32>::with_config(&gpu, config).unwrap();
    let keys: Vec<u32> = (0..1000).collect();
    map.insert_many(&keys, &keys).unwrap();
    set.insert_many(&keys).unwrap();
    let before = sorted(&map);
    for n in capacity_edges() {
        let Ok(additional) = usize::try_from(n) else {
            continue;
        };
        let pool = map.stats().unwrap().pool_bytes;
        // Pool slabs beyond the 64 base slabs that 1,000 + n elements fill at least.
        let slabs = (1000 + u128::from(n)).div_ceil(15).saturating_sub(64);
        match map.reserve(additional) {
            Ok(()) => {
                assert!(
                    u128::from(map.stats().unwrap().pool_bytes) >= slabs * 128,
                    "{n}"
                );
            }
            Err(Error::PoolExhausted(_)) => {
                assert!(slabs > u128::from(SMALL), "{n}");
                assert_eq!(map.stats().unwrap().pool_bytes, pool, "{n}");
            }
            Err(e) => {
                assert!(is_overflow(&e), "reserve({n}): {e}");
                assert_eq!(map.stats().unwrap().pool_bytes, pool, "{n}");
            }
        }
        assert_eq!(sorted(&map), before, "reserve({n})");
        map.validate().unwrap();
        let pool = set.stats().unwrap().pool_bytes;
        if set.reserve(additional).is_err() {
            assert_eq!(set.stats().unwrap().pool_bytes, pool, "{n}");
        }
        assert_eq!(set.len().unwrap(), 1000);
        set.validate().unwrap();
    }
    // The table still takes inserts.
    map.insert_many(&[5000], &[1]).unwrap();
    assert_eq!(map.len().unwrap(), 1001);
}

/// A map whose pool may grow past the device's memory: a `reserve` of all of it is
/// `OutOfMemory`, decided before anything is allocated; the map is unchanged.
#[test]
fn reserving_more_than_the_device_holds_is_out_of_memory() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    if !gpuds_testkit::memory_below(&gpu, gpuds_alloc::MAX_UNITS * 128) {
        return;
    }
    let config = SlabHashConfig {
        buckets: 64,
        alloc: SlabAllocConfig {
            initial_units: 1024,
            max_units: gpuds_alloc::MAX_UNITS,
            ..Default::default()
        },
        ..Default::default()
    };
    let mut map = SlabHashMap::<u32, u32>::with_config(&gpu, config).unwrap();
    map.insert_many(&[1, 2, 3], &[10, 20, 30]).unwrap();
    let pool = map.stats().unwrap().pool_bytes;
    let e = map
        .reserve((gpuds_alloc::MAX_UNITS * 14) as usize)
        .unwrap_err();
    assert!(is_out_of_memory(&e), "{e}");
    assert_eq!(map.stats().unwrap().pool_bytes, pool);
    assert_eq!(sorted(&map), vec![(1, 10), (2, 20), (3, 30)]);
    map.insert_many(&[4], &[40]).unwrap();
    map.validate().unwrap();
}
