//! GPU tests of LinearProbeMap batches that fail in part: an insert that finds no room
//! (the table filled behind the host's back by a user kernel) fails alone and is named,
//! the table stays valid and answers every later call as a `std` oracle; a synchronizing
//! call reports its own kernels only, and what the `_async` calls leave goes to `check`
//! alone. Small sizes (also run under compute-sanitizer).

use std::collections::HashMap;

use cudarc::driver::PushKernelArg;
use gpuds_core::{launch, Gpu, Status};
use gpuds_hive::{Error, LinearConfig, LinearProbeMap, Operation, WhenFull};

type Map = LinearProbeMap<u32, u32>;

/// 64 slots, at most 57 occupied by host batches.
fn small(when_full: WhenFull) -> LinearConfig {
    LinearConfig {
        capacity: 64,
        max_load_factor: 0.9,
        when_full,
        ..LinearConfig::default()
    }
}

/// Inserts `keys` (value = key) through a user kernel on the map's device ref: the host
/// does not count them, so its next insert batch may find the table full.
fn fill_behind_the_back(gpu: &Gpu, map: &Map, keys: &[u32]) {
    let program = gpuds_core::Program::new(
        "linear_fill",
        format!(
            r#"#include <gpuds/hive/linear_ref.cuh>
               extern "C" __global__ void fill({} t, const unsigned* keys, unsigned n) {{
                 const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
                 unsigned before;
                 if (i < n) t.template insert<false>(keys[i], keys[i], &before);
               }}"#,
            map.cuda_ref_type()
        ),
    )
    .headers(gpuds_hive::cuda_headers());
    let kernel = gpu.load(&program).unwrap().kernel("fill").unwrap();
    let stream = gpu.stream();
    let d = stream.clone_htod(keys).unwrap();
    let n = keys.len() as u32;
    let r = map.device_ref();
    let mut args = stream.launch_builder(kernel.func());
    args.arg(&r).arg(&d).arg(&n);
    // SAFETY: the kernel takes the map's ref type, n keys and n.
    unsafe { args.launch(launch::one_thread_per_item(keys.len(), 64).unwrap()) }.unwrap();
}

/// The operations a call reports not applied with `flag` (none when it succeeded).
fn not_applied(result: Result<(), Error>, flag: Status) -> Vec<usize> {
    match result {
        Ok(()) => Vec::new(),
        Err(Error::Core(e)) => gpuds_testkit::failed::not_applied(&e, flag),
        Err(e) => panic!("expected operations not applied ({flag}), got {e}"),
    }
}

/// The table validates, holds exactly the oracle's pairs and answers `probes` as it.
fn agrees(map: &mut Map, oracle: &HashMap<u32, u32>, probes: &[u32]) {
    map.validate().unwrap();
    let pairs = map.to_vec().unwrap();
    let held: HashMap<u32, u32> = pairs.iter().copied().collect();
    assert_eq!(held.len(), pairs.len(), "a key is held twice");
    assert_eq!(&held, oracle);
    assert_eq!(map.len().unwrap(), oracle.len());
    let got = map.get_many(probes).unwrap();
    for (k, g) in probes.iter().zip(got) {
        assert_eq!(g, oracle.get(k).copied(), "key {k}");
    }
}

#[test]
fn an_insert_into_a_full_table_fails_alone_and_later_calls_match_the_oracle() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let mut map = Map::with_config(&gpu, small(WhenFull::Grow)).unwrap();
    let behind: Vec<u32> = (1000..1060).collect();
    fill_behind_the_back(&gpu, &map, &behind);
    let mut oracle: HashMap<u32, u32> = behind.iter().map(|&k| (k, k)).collect();
    // Ten new keys, four free slots: six inserts find no room.
    let fresh: Vec<u32> = (1..=10).collect();
    let failed = not_applied(map.insert_many(&fresh, &fresh), Status::TABLE_FULL);
    assert_eq!(failed.len(), 6);
    for (i, &k) in fresh.iter().enumerate() {
        if !failed.contains(&i) {
            oracle.insert(k, k);
        }
    }
    // Nothing is left for check: the synchronizing call reported it all.
    map.check().unwrap();
    let misses: Vec<u32> = (5000..5020).collect();
    let probes: Vec<u32> = behind
        .iter()
        .chain(&fresh)
        .chain(&misses)
        .copied()
        .collect();
    agrees(&mut map, &oracle, &probes);

    // A full table still replaces, looks up and removes.
    map.insert_many(&behind[..5], &[7; 5]).unwrap();
    for k in &behind[..5] {
        oracle.insert(*k, 7);
    }
    map.remove_many(&behind[10..20]).unwrap();
    for k in &behind[10..20] {
        oracle.remove(k);
    }
    agrees(&mut map, &oracle, &probes);
    // Value tombstones keep their slots for their own keys: the removed keys come back,
    // the failed ones still find no room.
    map.insert_many(&behind[10..13], &behind[10..13]).unwrap();
    for k in &behind[10..13] {
        oracle.insert(*k, *k);
    }
    let lost: Vec<u32> = failed.iter().map(|&i| fresh[i]).collect();
    let again = not_applied(map.insert_many(&lost, &lost), Status::TABLE_FULL);
    assert_eq!(again, (0..lost.len()).collect::<Vec<_>>());
    agrees(&mut map, &oracle, &probes);
    // A mixed batch: the inserts that find no room are named, the rest applies.
    let ops = [
        Operation::Insert(lost[0], 1),
        Operation::Get(behind[30]),
        Operation::Remove(behind[31]),
        Operation::Insert(behind[32], 9),
    ];
    match map.apply(&ops) {
        Err(Error::Core(e)) => {
            assert_eq!(
                gpuds_testkit::failed::not_applied(&e, Status::TABLE_FULL),
                vec![0]
            )
        }
        other => panic!("expected the first insert to fail alone, got {other:?}"),
    }
    oracle.remove(&behind[31]);
    oracle.insert(behind[32], 9);
    agrees(&mut map, &oracle, &probes);

    // Growing makes room: every failed key goes in.
    map.reserve(64).unwrap();
    agrees(&mut map, &oracle, &probes);
    map.insert_many(&lost, &lost).unwrap();
    for k in &lost {
        oracle.insert(*k, *k);
    }
    agrees(&mut map, &oracle, &probes);
}

#[test]
fn a_call_reports_its_own_failures_and_check_the_async_ones() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let stream = gpu.stream();
    let mut map = Map::with_config(&gpu, small(WhenFull::Fail)).unwrap();
    let keys: Vec<u32> = (1..=20).collect();
    map.insert_many(&keys, &keys).unwrap();

    // An async lookup with a reserved key: later writes still run, synchronizing calls
    // report their own outcome, check reports the lookup's key.
    let bad = stream.clone_htod(&[1u32, u32::MAX, 2]).unwrap();
    let mut out = stream.alloc_zeros::<u32>(3).unwrap();
    map.get_many_into_async(&bad, &mut out).unwrap();
    map.insert_many(&[30u32, 31], &[30, 31]).unwrap();
    map.remove_many(&keys[..5]).unwrap();
    assert_eq!(map.get_many(&[30u32, 1]).unwrap(), vec![Some(30), None]);
    map.insert_many_async(&[32u32], &[32]).unwrap();
    match map.check() {
        Err(Error::ReservedKey { index: 1, key }) => assert_eq!(key, u64::from(u32::MAX)),
        other => panic!("expected the lookup's reserved key, got {other:?}"),
    }
    map.check().unwrap();
    let mut oracle: HashMap<u32, u32> = keys[5..].iter().map(|&k| (k, k)).collect();
    oracle.extend([(30, 30), (31, 31), (32, 32)]);
    let probes: Vec<u32> = (0..40).collect();
    agrees(&mut map, &oracle, &probes);

    // A synchronizing call's failure is its own: reads before it, and check after it,
    // see nothing of it.
    let bad_write = stream.clone_htod(&[40u32, u32::MAX - 1]).unwrap();
    assert!(matches!(
        map.insert_many(&bad_write, &bad_write),
        Err(Error::ReservedKey { index: 1, .. })
    ));
    map.check().unwrap();
    agrees(&mut map, &oracle, &probes);

    // Async inserts that find no room are named by check, counted over the async
    // batches in call order; synchronizing calls in between report nothing of them.
    let behind: Vec<u32> = (100..140).collect();
    fill_behind_the_back(&gpu, &map, &behind);
    oracle.extend(behind.iter().map(|&k| (k, k)));
    let first: Vec<u32> = (200..202).collect();
    let second: Vec<u32> = (300..304).collect();
    map.insert_many_async(&first, &first).unwrap();
    map.insert_many_async(&second, &second).unwrap();
    assert_eq!(map.get_many(&[100u32]).unwrap(), vec![Some(100)]);
    let failed = match map.check() {
        Err(Error::Core(e)) => gpuds_testkit::failed::not_applied(&e, Status::TABLE_FULL),
        other => panic!("expected inserts without room, got {other:?}"),
    };
    let all: Vec<u32> = first.iter().chain(&second).copied().collect();
    for (i, k) in all.iter().enumerate() {
        if !failed.contains(&i) {
            oracle.insert(*k, *k);
        }
    }
    assert!(!failed.is_empty());
    map.check().unwrap();
    let probes: Vec<u32> = probes.into_iter().chain(behind).chain(all).collect();
    agrees(&mut map, &oracle, &probes);
}
