//! GPU tests of size arithmetic in gpuds-alloc (issue 23, part 3): `SlabAlloc::new` and
//! `reserve` over capacity-like numbers either succeed with at least the units asked
//! for, or fail (`CapacityOverflow`, `PoolExhausted`, `OutOfMemory`) with the pool as it
//! was; a pool larger than the device is `OutOfMemory` before anything is allocated.
//! Without a GPU each test prints `skipped: no CUDA device` and passes.

use gpuds_alloc::{
    Collector, CollectorConfig, Error, Layout, SlabAlloc, SlabAllocConfig, MAX_UNITS,
};
use gpuds_testkit::strategy::capacity_edges;

/// The most units a test lets a pool hold: 8 MiB of 128-byte units.
const SMALL: u64 = 1 << 16;

fn is_overflow(e: &Error) -> bool {
    matches!(e, Error::Core(gpuds_core::Error::CapacityOverflow(_)))
}

fn is_out_of_memory(e: &Error) -> bool {
    matches!(e, Error::Core(gpuds_core::Error::OutOfMemory { .. }))
}

#[test]
fn pools_take_every_size_or_refuse_it() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    for n in capacity_edges() {
        // The initial size: small ones succeed, the rest pass max_units.
        if n <= SMALL || n > SlabAllocConfig::default().max_units {
            let config = SlabAllocConfig {
                initial_units: n,
                ..Default::default()
            };
            match SlabAlloc::new(&gpu, config) {
                Ok(pool) => {
                    assert!(pool.capacity_units() >= n, "{n}");
                    pool.validate_in_use(0).unwrap();
                }
                Err(e) => assert!(is_overflow(&e), "initial_units {n}: {e}"),
            }
        }
        // The maximum: reserved as virtual addresses (light) or a table (classic) only.
        if n <= 1 << 28 || n > MAX_UNITS {
            for layout in [Layout::Auto, Layout::Classic] {
                let config = SlabAllocConfig {
                    initial_units: 0,
                    max_units: n,
                    layout,
                    ..Default::default()
                };
                match SlabAlloc::new(&gpu, config) {
                    Ok(pool) => assert!(n >= 1 && pool.capacity_units() <= n.max(1024)),
                    Err(Error::InvalidConfig(_)) => assert_eq!(n, 0),
                    Err(e) => assert!(n > MAX_UNITS && is_overflow(&e), "max_units {n}: {e}"),
                }
            }
        }
    }
}

#[test]
fn reserve_meets_the_request_or_changes_nothing() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    for layout in [Layout::Auto, Layout::Classic] {
        let config = SlabAllocConfig {
            initial_units: 1024,
            max_units: 1 << 20,
            layout,
            ..Default::default()
        };
        let mut pool = SlabAlloc::new(&gpu, config).unwrap();
        let units = pool.allocate(500).unwrap();
        for n in capacity_edges() {
            let capacity = pool.capacity_units();
            let result = pool.reserve(n);
            match &result {
                Ok(()) => assert!(pool.capacity_units() >= 500 + n, "{n}"),
                Err(Error::PoolExhausted { .. }) => assert!(500 + n > 1 << 20, "{n}"),
                Err(e) => assert!(is_overflow(e), "reserve({n}): {e}"),
            }
            if result.is_err() {
                assert_eq!(pool.capacity_units(), capacity, "reserve({n})");
            }
            pool.validate_in_use(500).unwrap();
        }
        // The pessimistic form grows to the maximum and no further.
        pool.reserve_within_max(u64::MAX).unwrap();
        assert_eq!(pool.capacity_units(), 1 << 20);
        pool.deallocate(&units).unwrap();
        pool.check_status().unwrap();
        pool.validate_in_use(0).unwrap();
    }
}

/// A pool allowed to grow past the device's memory: reserving all of it is
/// `OutOfMemory` (decided before anything is allocated), the pool unchanged and usable.
#[test]
fn reserving_more_than_the_device_holds_is_out_of_memory() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    if !gpuds_testkit::memory_below(&gpu, MAX_UNITS * 64) {
        return;
    }
    for layout in [Layout::Auto, Layout::Classic] {
        // 64-byte units: the classic layout's super blocks are 1 GiB, the first one
        // allocated at once.
        let config = SlabAllocConfig {
            unit_bytes: 64,
            initial_units: 1024,
            max_units: MAX_UNITS,
            layout,
            ..Default::default()
        };
        let mut pool = SlabAlloc::new(&gpu, config).unwrap();
        let capacity = pool.capacity_units();
        let e = pool.reserve(MAX_UNITS - 10).unwrap_err();
        assert!(is_out_of_memory(&e), "{layout:?}: {e}");
        assert_eq!(pool.capacity_units(), capacity);
        let units = pool.allocate(100).unwrap();
        pool.check_status().unwrap();
        pool.validate_in_use(100).unwrap();
        pool.deallocate(&units).unwrap();
        pool.check_status().unwrap();
    }
}

/// A collector whose bags (slots × 3 × bag_capacity units) pass the device's memory is
/// `OutOfMemory`, decided before anything is allocated; small ones are made.
#[test]
fn collectors_past_device_memory_are_out_of_memory() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let config = CollectorConfig {
        slots: 1 << 20,
        bag_capacity: 1 << 24,
        ..Default::default()
    };
    if !gpuds_testkit::memory_below(&gpu, 3 << 46) {
        return;
    }
    let e = Collector::new(&gpu, config).unwrap_err();
    assert!(is_out_of_memory(&e), "{e}");
    for slots in [1, 64, 1 << 10] {
        let config = CollectorConfig {
            slots,
            bag_capacity: 1 << 10,
            ..Default::default()
        };
        assert_eq!(Collector::new(&gpu, config).unwrap().config().slots, slots);
    }
}
