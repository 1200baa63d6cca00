//! SlabAlloc calls that fail in part: an exhausted pool names exactly the entries that got
//! no unit and loses none of the units it gave; synchronizing calls report their own
//! kernels only, and what the non-synchronizing calls record waits for `check_status`
//! alone. A `std` set is the oracle of the units in use. Small pools (these also run
//! under compute-sanitizer).

use std::collections::HashSet;

use gpuds_alloc::{Error, SlabAlloc, SlabAllocConfig, NULL_UNIT};
use gpuds_core::{Gpu, Status};

/// One memory block (1,024 units) that cannot grow.
fn one_block(gpu: &Gpu) -> SlabAlloc {
    let config = SlabAllocConfig {
        initial_units: 1024,
        max_units: 1024,
        max_resident_changes: 16,
        ..Default::default()
    };
    SlabAlloc::new(gpu, config).unwrap()
}

/// The pool holds exactly the oracle's units: distinct, as many as it counts in use.
fn agrees(pool: &SlabAlloc, oracle: &HashSet<u32>) {
    assert!(!oracle.contains(&NULL_UNIT));
    pool.validate_in_use(oracle.len() as u64).unwrap();
}

fn host(gpu: &Gpu, units: &gpuds_core::cudarc::driver::CudaSlice<u32>) -> Vec<u32> {
    gpu.stream().clone_dtoh(units).unwrap()
}

#[test]
fn an_exhausted_pool_names_the_entries_without_a_unit_and_loses_nothing() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let pool = one_block(&gpu);
    let stream = gpu.stream();
    let mut oracle = HashSet::new();
    let mut out = stream.alloc_zeros::<u32>(1500).unwrap();
    let failed = match pool.try_allocate_into(&mut out.slice_mut(..)) {
        Err(Error::Core(e)) => gpuds_testkit::failed::not_applied(&e, Status::POOL_EXHAUSTED),
        other => panic!("expected exhaustion, got {other:?}"),
    };
    let got = host(&gpu, &out);
    let nulls: Vec<usize> = (0..got.len()).filter(|&i| got[i] == NULL_UNIT).collect();
    assert_eq!(
        failed, nulls,
        "the error names exactly the entries without a unit"
    );
    for (i, &a) in got.iter().enumerate() {
        if failed.binary_search(&i).is_err() {
            assert!(oracle.insert(a), "unit {a:#x} handed out twice");
        }
    }
    assert!(oracle.len() <= 1024 && failed.len() >= 1500 - 1024);
    agrees(&pool, &oracle);
    // The call reported its own exhaustion: nothing waits in the pool's word.
    pool.check_status().unwrap();

    // All or nothing: a request past the room left allocates nothing.
    assert!(matches!(
        pool.allocate(1500),
        Err(Error::PoolExhausted { .. })
    ));
    agrees(&pool, &oracle);
    pool.check_status().unwrap();

    // Give back half of what was given; the room serves a later request.
    let given: Vec<u32> = oracle.iter().copied().collect();
    let half = stream.clone_htod(&given[..given.len() / 2]).unwrap();
    pool.deallocate(&half).unwrap();
    pool.check_status().unwrap();
    for a in &given[..given.len() / 2] {
        oracle.remove(a);
    }
    agrees(&pool, &oracle);
    let fresh = pool.allocate(200).unwrap();
    for a in host(&gpu, &fresh) {
        assert!(oracle.insert(a), "unit {a:#x} handed out twice");
    }
    agrees(&pool, &oracle);
    // Everything back: the pool is empty and whole.
    let all: Vec<u32> = oracle.drain().collect();
    pool.deallocate(&stream.clone_htod(&all).unwrap()).unwrap();
    pool.check_status().unwrap();
    agrees(&pool, &oracle);
    let again = pool.allocate(1000).unwrap();
    oracle.extend(host(&gpu, &again));
    assert_eq!(oracle.len(), 1000);
    agrees(&pool, &oracle);
}

#[test]
fn a_synchronizing_call_reports_its_own_kernels_only() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let pool = one_block(&gpu);
    let stream = gpu.stream();
    // A non-synchronizing allocation runs out; its flag waits for check_status.
    let mut out = stream.alloc_zeros::<u32>(1100).unwrap();
    pool.allocate_into(&mut out.slice_mut(..)).unwrap();
    pool.deallocate_view(&out.slice(..300)).unwrap();
    let mut oracle: HashSet<u32> = host(&gpu, &out)[300..]
        .iter()
        .copied()
        .filter(|&a| a != NULL_UNIT)
        .collect();
    // A synchronizing allocation in between succeeds and reports nothing of it.
    let fresh = pool.allocate(50).unwrap();
    for a in host(&gpu, &fresh) {
        assert!(oracle.insert(a), "unit {a:#x} handed out twice");
    }
    agrees(&pool, &oracle);
    // The pool's word holds the non-synchronizing call's exhaustion, once.
    assert!(matches!(
        pool.check_status(),
        Err(Error::PoolExhausted { .. })
    ));
    pool.check_status().unwrap();
    agrees(&pool, &oracle);
}
