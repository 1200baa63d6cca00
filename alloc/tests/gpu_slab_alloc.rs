//! SlabAlloc on the GPU: layouts of the refs, 2^24 concurrent allocations without
//! duplicates in both layouts and every unit size, free and reallocate, storms of
//! allocations and frees, exhaustion and growth, snapshots, double frees.

use gpuds_alloc::address::block_index;
use gpuds_alloc::{
    workload, EbrRef, Error, Layout, SlabAlloc, SlabAllocConfig, SlabAllocRef, NULL_UNIT,
};
use gpuds_core::{assert_layout, Gpu, Program, Status};

fn prelude(header: &'static str) -> Program {
    Program::new("layout", format!("#include <{header}>")).headers(gpuds_alloc::cuda_headers())
}

#[test]
fn refs_match_their_cpp_twins() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    assert_layout!(
        &gpu,
        prelude("gpuds/alloc/slab_alloc.cuh"),
        SlabAllocRef,
        "gpuds::alloc::slab_alloc_ref",
        bitmap,
        base,
        super_bases,
        status,
        num_blocks,
        log_blocks_per_super,
        unit_shift,
        max_changes,
        seed,
        fail_at,
        faults,
    );
    assert_layout!(
        &gpu,
        prelude("gpuds/alloc/ebr.cuh"),
        EbrRef,
        "gpuds::alloc::ebr_ref",
        pool,
        epoch,
        announce,
        slot_epoch,
        slot_counts,
        slot_bags,
        counters,
        status,
        slots,
        bag_capacity,
        poison,
        reserved,
    );
}

/// Copies `units` back and checks: none null, all distinct, all inside the pool.
fn assert_distinct_in_pool(pool: &SlabAlloc, units: &[u32]) {
    let log = pool.device_ref().log_blocks_per_super;
    let blocks = pool.device_ref().num_blocks;
    let mut sorted = units.to_vec();
    sorted.sort_unstable();
    assert!(sorted.last().is_none_or(|&a| a != NULL_UNIT), "a null unit");
    for pair in sorted.windows(2) {
        assert_ne!(pair[0], pair[1], "unit {:#x} handed out twice", pair[0]);
    }
    for &a in &sorted {
        let in_super = (a >> 10) & 0x3FFF;
        assert!(
            block_index(a, log) < blocks && in_super >> log == 0,
            "unit {a:#x} outside the pool"
        );
    }
}

fn allocate_free_reallocate(gpu: &Gpu, config: SlabAllocConfig, n: usize) {
    let mut pool = SlabAlloc::new(gpu, config.clone()).unwrap();
    pool.reserve(n as u64).unwrap();
    let stream = gpu.stream();
    let units = pool.allocate(n).unwrap();
    assert_distinct_in_pool(&pool, &stream.clone_dtoh(&units).unwrap());
    pool.validate_in_use(n as u64).unwrap();
    pool.deallocate(&units).unwrap();
    pool.check_status().unwrap();
    pool.validate_in_use(0).unwrap();
    // Again with the paper's warp-cooperative allocation, one lane after another.
    let mut again = stream.alloc_zeros::<u32>(n).unwrap();
    pool.allocate_each_into(&mut again.slice_mut(..)).unwrap();
    pool.check_status().unwrap();
    assert_distinct_in_pool(&pool, &stream.clone_dtoh(&again).unwrap());
    pool.validate_in_use(n as u64).unwrap();
    let stats = pool.stats().unwrap();
    assert_eq!(stats.units_in_use, n as u64);
    assert_eq!(
        stats
            .super_blocks
            .iter()
            .map(|s| s.units_in_use)
            .sum::<u64>(),
        n as u64
    );
    assert!(stats.bytes_reserved >= stats.capacity_units * config.unit_bytes as u64);
    pool.reset().unwrap();
    pool.validate_in_use(0).unwrap();
}

#[test]
fn two_to_the_24_allocations_are_distinct_light() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let config = SlabAllocConfig {
        layout: Layout::Light,
        ..Default::default()
    };
    allocate_free_reallocate(&gpu, config, 1 << 24);
}

#[test]
fn two_to_the_24_allocations_are_distinct_classic() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let config = SlabAllocConfig {
        layout: Layout::Classic,
        blocks_per_super_block: 1024,
        ..Default::default()
    };
    allocate_free_reallocate(&gpu, config, 1 << 24);
}

#[test]
fn every_unit_size_in_both_layouts() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    for layout in [Layout::Light, Layout::Classic] {
        for unit_bytes in [64, 128, 256] {
            let config = SlabAllocConfig {
                unit_bytes,
                layout,
                ..Default::default()
            };
            allocate_free_reallocate(&gpu, config, 1 << 20);
        }
    }
}

#[test]
fn storms_of_allocations_and_frees_never_share_a_unit() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    for layout in [Layout::Light, Layout::Classic] {
        let mut pool = SlabAlloc::new(
            &gpu,
            SlabAllocConfig {
                layout,
                ..Default::default()
            },
        )
        .unwrap();
        let n = 1usize << 22;
        pool.reserve(n as u64).unwrap();
        let stream = gpu.stream();
        let mut slots = stream.clone_htod(&vec![NULL_UNIT; n]).unwrap();
        workload::churn(&pool, &mut slots, 16, 11).unwrap();
        pool.check_status().unwrap();
        assert_eq!(workload::stamp_errors(&pool, &slots).unwrap(), 0);
        let held = stream.clone_dtoh(&slots).unwrap();
        assert_distinct_in_pool(&pool, &held);
        pool.validate_in_use(n as u64).unwrap();
        // The snapshot agrees with the slots: allocated, stamped with their index.
        let snapshot = pool.snapshot().unwrap();
        assert_eq!(snapshot.units_in_use(), n as u64);
        for (i, &a) in held.iter().enumerate().step_by(4099) {
            assert!(snapshot.is_allocated(a));
            assert_eq!(snapshot.unit(a).unwrap()[0], i as u32);
        }
        pool.deallocate(&slots).unwrap();
        pool.check_status().unwrap();
        pool.validate_in_use(0).unwrap();
    }
}

#[test]
fn exhaustion_is_reported_then_growth_lets_the_batch_succeed() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let config = SlabAllocConfig {
        initial_units: 1 << 16,
        max_units: 1 << 20,
        max_resident_changes: 64,
        ..Default::default()
    };
    let mut pool = SlabAlloc::new(&gpu, config).unwrap();
    let stream = gpu.stream();
    let n = 1usize << 18;
    let mut out = stream.alloc_zeros::<u32>(n).unwrap();
    pool.allocate_into(&mut out.slice_mut(..)).unwrap();
    assert!(matches!(
        pool.check_status(),
        Err(Error::PoolExhausted { .. })
    ));
    pool.validate().unwrap();
    let got: Vec<u32> = stream
        .clone_dtoh(&out)
        .unwrap()
        .into_iter()
        .filter(|&a| a != NULL_UNIT)
        .collect();
    assert!(got.len() < n && got.len() as u64 <= pool.capacity_units());
    assert_distinct_in_pool(&pool, &got);
    pool.validate_in_use(got.len() as u64).unwrap();
    // Give the partial batch back, grow, and run the same batch again.
    pool.deallocate(&out).unwrap();
    pool.check_status().unwrap();
    pool.validate_in_use(0).unwrap();
    pool.reserve(n as u64).unwrap();
    pool.allocate_into(&mut out.slice_mut(..)).unwrap();
    pool.check_status().unwrap();
    assert_distinct_in_pool(&pool, &stream.clone_dtoh(&out).unwrap());
    pool.validate_in_use(n as u64).unwrap();
    // Past the maximum, reserve says so and leaves the pool usable.
    assert!(matches!(
        pool.reserve(1 << 21),
        Err(Error::PoolExhausted { .. })
    ));
    pool.validate_in_use(n as u64).unwrap();
}

#[test]
fn double_frees_and_foreign_addresses_are_reported() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let pool = SlabAlloc::new(&gpu, SlabAllocConfig::default()).unwrap();
    let units = pool.allocate(1000).unwrap();
    pool.deallocate(&units).unwrap();
    pool.deallocate(&units).unwrap();
    assert!(matches!(pool.validate(), Err(Error::Corrupted(_))));
    match pool.check_status() {
        Err(Error::Core(gpuds_core::Error::Status(s))) => {
            assert!(s.contains(gpuds_alloc::DOUBLE_FREE))
        }
        other => panic!("expected a double-free flag, got {other:?}"),
    }
    let foreign = gpu.stream().clone_htod(&[0xFEFE_0000u32]).unwrap();
    pool.deallocate(&foreign).unwrap();
    match pool.check_status() {
        Err(Error::Core(gpuds_core::Error::Status(s))) => {
            assert!(s.contains(Status::OUT_OF_BOUNDS))
        }
        other => panic!("expected an out-of-bounds flag, got {other:?}"),
    }
    pool.validate_in_use(0).unwrap();
}
