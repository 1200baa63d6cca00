//! Epoch-based reclamation on the GPU: readers traverse cells while writers replace and
//! retire their units; reclaimed units are poisoned; no reader may see poison or another
//! cell's index, the epoch must advance and reclaim during the kernels, and after a
//! drain every retired unit is back in the pool.

use gpuds_alloc::workload::{self, Reclaimer};
use gpuds_alloc::{Collector, CollectorConfig, SlabAlloc, SlabAllocConfig};

const CELLS: u32 = 512;

#[test]
fn readers_never_see_reclaimed_units_and_everything_is_reclaimed() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let mut pool = SlabAlloc::new(&gpu, SlabAllocConfig::default()).unwrap();
    pool.reserve(1 << 22).unwrap();
    let collector = Collector::new(
        &gpu,
        CollectorConfig {
            poison: 0xDEAD_BEEF,
            bag_capacity: 4096,
            ..Default::default()
        },
    )
    .unwrap();
    let mut cells = workload::cells(&pool, CELLS).unwrap();
    let stream = gpu.stream();
    let mut violations = stream.alloc_zeros::<u64>(1).unwrap();
    let mut reclaimed_in_kernels = 0;
    for (launch, write_percent) in [(0u32, 50u32), (1, 10), (2, 90)] {
        workload::read_retire(
            &pool,
            Reclaimer::Epoch(&collector),
            &mut cells,
            2000,
            write_percent,
            launch,
            &mut violations,
        )
        .unwrap();
        pool.check_status().unwrap();
        collector.check_status().unwrap();
        let stats = collector.stats().unwrap();
        println!("after launch {launch}: {stats:?}");
        assert_eq!(stats.dropped, 0);
        assert_eq!(stats.retired, stats.reclaimed + stats.pending_total());
        reclaimed_in_kernels = stats.reclaimed;
    }
    assert_eq!(
        stream.clone_dtoh(&violations).unwrap()[0],
        0,
        "a read after free"
    );
    let stats = collector.stats().unwrap();
    assert!(stats.epoch >= 10, "the epoch hardly advanced: {stats:?}");
    assert!(
        reclaimed_in_kernels > 0,
        "nothing was reclaimed during the kernels"
    );
    let drained = collector.drain(&pool).unwrap();
    let stats = collector.stats().unwrap();
    assert_eq!(stats.pending_total(), 0);
    assert_eq!(stats.retired, stats.reclaimed);
    assert_eq!(drained + reclaimed_in_kernels, stats.reclaimed);
    pool.check_status().unwrap();
    pool.validate_in_use(CELLS as u64).unwrap();
}

#[test]
fn the_null_reclaimer_never_frees() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let mut pool = SlabAlloc::new(&gpu, SlabAllocConfig::default()).unwrap();
    pool.reserve(1 << 24).unwrap();
    let mut cells = workload::cells(&pool, CELLS).unwrap();
    let stream = gpu.stream();
    let mut violations = stream.alloc_zeros::<u64>(1).unwrap();
    let ops = workload::read_retire(
        &pool,
        Reclaimer::Null,
        &mut cells,
        200,
        50,
        3,
        &mut violations,
    )
    .unwrap();
    pool.check_status().unwrap();
    assert_eq!(stream.clone_dtoh(&violations).unwrap()[0], 0);
    let in_use = pool.units_in_use().unwrap();
    // Every write left its old unit allocated: about half the operations wrote.
    assert!(in_use > CELLS as u64 + ops / 4 && in_use < CELLS as u64 + ops * 3 / 4);
    pool.validate_in_use(in_use).unwrap();
}

#[test]
fn a_grid_larger_than_the_announce_array_is_refused() {
    use gpuds_core::cudarc::driver::PushKernelArg;
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let mut pool = SlabAlloc::new(&gpu, SlabAllocConfig::default()).unwrap();
    pool.reserve(1 << 20).unwrap();
    let collector = Collector::new(
        &gpu,
        CollectorConfig {
            slots: 4,
            ..Default::default()
        },
    )
    .unwrap();
    let cells = workload::cells(&pool, CELLS).unwrap();
    let program = gpuds_alloc::programs()
        .into_iter()
        .find(|p| p.name() == "ebr")
        .unwrap();
    let kernel = gpu.load(&program).unwrap().kernel("ebr_churn").unwrap();
    let stream = gpu.stream();
    let mut violations = stream.alloc_zeros::<u64>(1).unwrap();
    let r = collector.device_ref(&pool);
    let (n, rounds, writes, seed) = (CELLS, 500u32, 50u32, 5u32);
    let mut args = stream.launch_builder(kernel.func());
    args.arg(&r).arg(&cells).arg(&n).arg(&rounds);
    args.arg(&writes).arg(&seed).arg(&mut violations);
    // SAFETY: the arguments match ebr_churn's signature.
    unsafe { args.launch(gpuds_core::launch::shape(8, 256, 0)) }.unwrap();
    match collector.check_status() {
        Err(gpuds_alloc::Error::Core(gpuds_core::Error::Status(s))) => {
            assert!(s.contains(gpuds_core::Status::OUT_OF_BOUNDS))
        }
        other => panic!("expected OUT_OF_BOUNDS, got {other:?}"),
    }
    // Again, read as raw flags: take_status returns them and clears the word.
    let mut args = stream.launch_builder(kernel.func());
    args.arg(&r).arg(&cells).arg(&n).arg(&rounds);
    args.arg(&writes).arg(&seed).arg(&mut violations);
    // SAFETY: as above.
    unsafe { args.launch(gpuds_core::launch::shape(8, 256, 0)) }.unwrap();
    let flags = collector.take_status().unwrap();
    assert!(
        flags.contains(gpuds_core::Status::OUT_OF_BOUNDS),
        "{flags:?}"
    );
    assert!(
        collector.take_status().unwrap().is_ok(),
        "the word is cleared"
    );
    // The four blocks with a slot ran and reclaimed as usual.
    assert_eq!(stream.clone_dtoh(&violations).unwrap()[0], 0);
    collector.drain(&pool).unwrap();
    let stats = collector.stats().unwrap();
    assert!(stats.retired > 0 && stats.epoch > 3, "{stats:?}");
    assert_eq!(stats.retired, stats.reclaimed);
    pool.validate_in_use(CELLS as u64).unwrap();
}
