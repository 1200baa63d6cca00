//! GPU tests of failed batches: a failure belongs to its own call, names exactly the
//! requests that were not applied, and leaves the table valid, with no list longer than
//! the step cap, and answering every later call as a `std` oracle that holds what was
//! applied. Sizes are small: these also run under compute-sanitizer.

mod common;

use std::collections::{HashMap, HashSet};

use gpuds_core::cudarc::driver::PushKernelArg;
use gpuds_core::hash::Universal;
use gpuds_core::{launch, Program, Status};
use gpuds_slabhash::{Error, MapOp, SlabHashConfig, SlabHashMap, SlabHashSet, LIST_FULL};
use gpuds_testkit::gpu;

use common::{contents, not_applied, small_pool};

const BUCKETS: u32 = 4;
const SEED: u64 = 11;

/// `count` distinct keys from `from` up that hash to `bucket` of a table of [`BUCKETS`]
/// buckets seeded with [`SEED`].
fn keys_in(bucket: u32, count: usize, from: u32) -> Vec<u32> {
    let hash = Universal::from_seed(SEED);
    (from..)
        .filter(|&k| hash.bucket(k, BUCKETS) == bucket)
        .take(count)
        .collect()
}

fn config(step_cap: u32) -> SlabHashConfig {
    SlabHashConfig {
        buckets: BUCKETS,
        seed: SEED,
        step_cap,
        ..Default::default()
    }
}

/// The oracle after an insert batch of which the requests `failed` were not applied.
fn insert_applied(oracle: &mut HashMap<u32, u32>, keys: &[u32], values: &[u32], failed: &[usize]) {
    let failed: HashSet<usize> = failed.iter().copied().collect();
    for (i, (&k, &v)) in keys.iter().zip(values).enumerate() {
        if !failed.contains(&i) {
            oracle.insert(k, v);
        }
    }
}

/// The map validates, holds exactly the oracle's pairs, and answers lookups and counts of
/// `probes` (stored, failed and never inserted keys) as the oracle does.
fn agrees(map: &SlabHashMap, oracle: &HashMap<u32, u32>, probes: &[u32]) {
    map.validate().unwrap();
    assert_eq!(&contents(map), oracle);
    assert_eq!(map.len().unwrap(), oracle.len());
    let got = map.get_many(probes).unwrap();
    let counts = map.count_many(probes).unwrap();
    for (i, &k) in probes.iter().enumerate() {
        assert_eq!(got[i], oracle.get(&k).copied(), "get of key {k}");
        assert_eq!(
            counts[i],
            u32::from(oracle.contains_key(&k)),
            "count of key {k}"
        );
    }
}

fn values_of(keys: &[u32], salt: u32) -> Vec<u32> {
    keys.iter().map(|k| k ^ salt).collect()
}

#[test]
fn an_insert_at_the_step_cap_fails_alone_and_every_later_call_answers() {
    let Some(gpu) = gpu() else { return };
    // Two slabs per list at most: 30 pairs per bucket.
    let mut map = SlabHashMap::<u32, u32>::with_config(&gpu, config(2)).unwrap();
    let mut oracle = HashMap::new();
    let full = keys_in(0, 50, 0);
    let healthy = keys_in(1, 5, 0);
    let keys: Vec<u32> = full.iter().chain(&healthy).copied().collect();
    let values = values_of(&keys, 0xabc);
    let failed = not_applied(map.insert_many(&keys, &values), LIST_FULL);
    assert_eq!(failed.len(), 20, "30 of bucket 0's 50 keys fit");
    assert!(
        failed.iter().all(|&i| i < full.len()),
        "only bucket 0 fails"
    );
    insert_applied(&mut oracle, &keys, &values, &failed);
    let absent: Vec<u32> = failed.iter().map(|&i| keys[i]).collect();
    let misses: Vec<u32> = keys_in(0, 8, 1 << 20)
        .into_iter()
        .chain(keys_in(1, 4, 1 << 20))
        .chain(keys_in(2, 4, 1 << 20))
        .collect();
    let probes: Vec<u32> = keys.iter().chain(&misses).copied().collect();
    // No list passed the cap (bucket 0 has two slabs, the others one): every read walks
    // the full bucket to its end and answers.
    assert_eq!(map.stats().unwrap().slab_histogram, vec![0, 3, 1]);
    agrees(&map, &oracle, &probes);
    assert!(map.get_many(&absent).unwrap().iter().all(Option::is_none));

    // Replacing stored keys of the full bucket needs no room.
    let stored: Vec<u32> = full
        .iter()
        .filter(|k| oracle.contains_key(k))
        .copied()
        .collect();
    let replaced = values_of(&stored, 0x5a5a);
    map.insert_many(&stored, &replaced).unwrap();
    insert_applied(&mut oracle, &stored, &replaced, &[]);
    agrees(&map, &oracle, &probes);

    // Removals of stored keys in both buckets report nothing of the failed insert.
    map.remove_many(&stored[..10]).unwrap();
    map.remove_many(&healthy[..2]).unwrap();
    for k in stored[..10].iter().chain(&healthy[..2]) {
        oracle.remove(k);
    }
    agrees(&map, &oracle, &probes);

    // Tombstones keep their slots until FLUSH: the failed keys still find no room.
    let absent_values = values_of(&absent, 0x77);
    let again = not_applied(map.insert_many(&absent, &absent_values), LIST_FULL);
    assert_eq!(again, (0..absent.len()).collect::<Vec<_>>());
    agrees(&map, &oracle, &probes);

    // After FLUSH exactly the freed slots are taken: 10 of 13 inserts apply.
    map.flush().unwrap();
    agrees(&map, &oracle, &probes);
    let some = &absent[..13];
    let some_values = &absent_values[..13];
    let failed = not_applied(map.insert_many(some, some_values), LIST_FULL);
    assert_eq!(failed.len(), 3);
    insert_applied(&mut oracle, some, some_values, &failed);
    agrees(&map, &oracle, &probes);

    // A mixed batch: inserts into the full bucket fail alone; gets, removes and an
    // insert elsewhere apply.
    let rest: Vec<u32> = absent
        .iter()
        .filter(|k| !oracle.contains_key(k))
        .copied()
        .collect();
    let elsewhere = keys_in(2, 1, 0)[0];
    let mut ops: Vec<MapOp<u32, u32>> = rest.iter().map(|&k| MapOp::Insert(k, k)).collect();
    ops.extend([
        MapOp::Get(stored[20]),
        MapOp::Remove(healthy[3]),
        MapOp::Insert(elsewhere, 9),
    ]);
    match map.apply(&ops) {
        Err(Error::Core(gpuds_core::Error::NotApplied {
            status,
            not_applied,
        })) => {
            assert!(status.contains(LIST_FULL), "{status}");
            assert_eq!(not_applied, (0..rest.len()).collect::<Vec<_>>());
        }
        other => panic!("expected the full bucket's inserts to fail, got {other:?}"),
    }
    oracle.remove(&healthy[3]);
    oracle.insert(elsewhere, 9);
    agrees(&map, &oracle, &probes);
}

#[test]
fn a_set_insert_at_the_step_cap_fails_alone() {
    let Some(gpu) = gpu() else { return };
    // The base slab only: 30 keys per bucket.
    let mut set = SlabHashSet::<u32>::with_config(&gpu, config(1)).unwrap();
    let full = keys_in(0, 45, 0);
    let healthy = keys_in(3, 3, 0);
    let keys: Vec<u32> = full.iter().chain(&healthy).copied().collect();
    let failed = not_applied(set.insert_many(&keys), LIST_FULL);
    assert_eq!(failed.len(), 15);
    let failed_keys: HashSet<u32> = failed.iter().map(|&i| keys[i]).collect();
    let mut oracle: HashSet<u32> = keys
        .iter()
        .filter(|k| !failed_keys.contains(k))
        .copied()
        .collect();
    let probes: Vec<u32> = keys
        .iter()
        .chain(&keys_in(0, 5, 1 << 20))
        .copied()
        .collect();
    let agrees = |set: &SlabHashSet, oracle: &HashSet<u32>| {
        set.validate().unwrap();
        let stored: HashSet<u32> = set.to_vec().unwrap().into_iter().collect();
        assert_eq!(&stored, oracle);
        let found = set.contains_many(&probes).unwrap();
        for (i, k) in probes.iter().enumerate() {
            assert_eq!(found[i], oracle.contains(k), "key {k}");
        }
    };
    agrees(&set, &oracle);
    // Inserting present keys again needs no room.
    let present: Vec<u32> = oracle.iter().copied().collect();
    set.insert_many(&present).unwrap();
    agrees(&set, &oracle);
    // Remove five, flush, and seven failed keys come back: five fit.
    let gone: Vec<u32> = full
        .iter()
        .filter(|k| oracle.contains(k))
        .take(5)
        .copied()
        .collect();
    set.remove_many(&gone).unwrap();
    for k in &gone {
        oracle.remove(k);
    }
    agrees(&set, &oracle);
    set.flush().unwrap();
    let back: Vec<u32> = failed_keys.iter().take(7).copied().collect();
    let failed = not_applied(set.insert_many(&back), LIST_FULL);
    assert_eq!(failed.len(), 2);
    for (i, k) in back.iter().enumerate() {
        if !failed.contains(&i) {
            oracle.insert(*k);
        }
    }
    agrees(&set, &oracle);
}

#[test]
fn pool_exhaustion_fails_the_requests_without_a_slab_alone() {
    let Some(gpu) = gpu() else { return };
    let config = SlabHashConfig {
        seed: SEED,
        ..small_pool(64)
    };
    let mut map = SlabHashMap::<u32, u32>::with_config(&gpu, config).unwrap();
    let mut oracle = HashMap::new();
    // 1,024 slabs and 64 base slabs hold at most 16,320 pairs.
    let keys: Vec<u32> = (1..=18_000).collect();
    let values = values_of(&keys, 0x1234);
    let failed = not_applied(map.insert_many(&keys, &values), Status::POOL_EXHAUSTED);
    assert!(failed.len() >= 18_000 - 16_320, "{} failed", failed.len());
    insert_applied(&mut oracle, &keys, &values, &failed);
    let probes: Vec<u32> = keys
        .iter()
        .copied()
        .chain(1 << 24..(1 << 24) + 100)
        .collect();
    agrees(&map, &oracle, &probes);
    // Lookups and removals work and report nothing of the exhaustion.
    let stored: Vec<u32> = oracle.keys().copied().collect();
    map.remove_many(&stored[..6000]).unwrap();
    for k in &stored[..6000] {
        oracle.remove(k);
    }
    agrees(&map, &oracle, &probes);
    // FLUSH frees slabs; the failed keys then fit.
    assert!(map.flush().unwrap() > 0);
    agrees(&map, &oracle, &probes);
    let retry: Vec<u32> = failed.iter().map(|&i| keys[i]).collect();
    let retry_values = values_of(&retry, 0x99);
    map.insert_many(&retry, &retry_values).unwrap();
    insert_applied(&mut oracle, &retry, &retry_values, &[]);
    agrees(&map, &oracle, &probes);
}

/// Inserts keys through a user kernel whose ref carries a larger step cap than the
/// table's, making a list longer than the table's reads may walk (what the old insert
/// path did when it failed at the cap).
fn insert_past_the_cap(gpu: &gpuds_core::Gpu, map: &mut SlabHashMap, keys: &[u32], cap: u32) {
    let program = Program::new(
        "past_the_cap",
        r#"#include <gpuds/slabhash/map_ref.cuh>
           using namespace gpuds::slabhash;
           extern "C" __global__ void past_the_cap(map_ref<unsigned, unsigned> map,
                                                   const unsigned* keys, unsigned n) {
               const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
               auto allocator = map.make_allocator();
               unsigned old;
               map.replace(allocator, i < n, i < n ? keys[i] : 0u, i, old);
           }"#,
    )
    .headers(gpuds_slabhash::cuda_headers());
    let kernel = gpu.load(&program).unwrap().kernel("past_the_cap").unwrap();
    map.reserve(keys.len()).unwrap();
    let mut r = map.device_ref();
    r.table.step_cap = cap;
    let stream = gpu.stream();
    let d = stream.clone_htod(keys).unwrap();
    let n = keys.len() as u32;
    let mut args = stream.launch_builder(kernel.func());
    args.arg(&r).arg(&d).arg(&n);
    // SAFETY: the kernel takes a map_ref<unsigned, unsigned>, n keys and n.
    unsafe { args.launch(launch::one_thread_per_item(keys.len(), 128).unwrap()) }.unwrap();
    map.refresh().unwrap();
}

#[test]
fn a_failed_read_is_reported_by_its_own_call_only() {
    let Some(gpu) = gpu() else { return };
    let mut map = SlabHashMap::<u32, u32>::with_config(&gpu, config(2)).unwrap();
    let healthy = keys_in(1, 6, 0);
    map.insert_many(&healthy, &healthy).unwrap();
    // Bucket 0 gets four slabs (60 keys) behind the table's back.
    let long = keys_in(0, 60, 0);
    insert_past_the_cap(&gpu, &mut map, &long, 8);
    assert_eq!(map.len().unwrap(), 66);
    let e = map.validate().unwrap_err().to_string();
    assert!(
        e.contains("step cap"),
        "validate must catch the long list: {e}"
    );

    // Lookups in the long bucket that must walk past its second slab fail, each named.
    let absent = keys_in(0, 5, 1 << 20);
    let probes: Vec<u32> = long
        .iter()
        .chain(&absent)
        .chain(&healthy)
        .copied()
        .collect();
    let failed = not_applied(map.get_many(&probes).map(drop), Status::RETRY_LIMIT);
    assert_eq!(
        failed.len(),
        30 + 5,
        "the last two slabs' keys and the misses"
    );
    assert!(failed.iter().all(|&i| i < long.len() + absent.len()));
    assert!((long.len()..long.len() + absent.len()).all(|i| failed.contains(&i)));

    // Calls after it report their own outcome only.
    assert_eq!(
        map.get_many(&healthy).unwrap(),
        healthy.iter().map(|&k| Some(k)).collect::<Vec<_>>()
    );
    assert_eq!(map.count_many(&healthy).unwrap(), vec![1; 6]);
    map.remove_many(&healthy[..3]).unwrap();
    map.insert_many(&keys_in(2, 4, 0), &[1, 2, 3, 4]).unwrap();
    let device = gpu.stream().clone_htod(&healthy).unwrap();
    let mut out = gpu.stream().alloc_zeros::<u32>(healthy.len()).unwrap();
    map.get_many_into(&device, &mut out).unwrap();
    let got = gpu.stream().clone_dtoh(&out).unwrap();
    assert_eq!(&got[3..], &healthy[3..]);
    assert!(got[..3].iter().all(|&v| v == u32::MAX));

    // An update on the long bucket fails alone as well.
    let failed = not_applied(map.insert_many(&absent[..2], &[7, 8]), Status::RETRY_LIMIT);
    assert_eq!(failed, vec![0, 1]);
    assert_eq!(
        map.get_many(&healthy[3..]).unwrap(),
        vec![Some(healthy[3]), Some(healthy[4]), Some(healthy[5])]
    );
}

#[test]
fn a_refused_read_does_not_poison_later_calls() {
    let Some(gpu) = gpu() else { return };
    let mut map = SlabHashMap::<u32, u32>::with_config(&gpu, config(2)).unwrap();
    let keys = keys_in(1, 10, 0);
    map.insert_many(&keys, &keys).unwrap();
    let bad = gpu.stream().clone_htod(&[keys[0], u32::MAX]).unwrap();
    assert!(matches!(
        map.get_many(&bad),
        Err(Error::ReservedKey { index: 1, .. })
    ));
    let mut out = gpu.stream().alloc_zeros::<u32>(2).unwrap();
    assert!(matches!(
        map.get_many_into(&bad, &mut out),
        Err(Error::ReservedKey { index: 1, .. })
    ));
    assert!(matches!(
        map.count_many(&bad),
        Err(Error::ReservedKey { index: 1, .. })
    ));
    assert_eq!(
        map.get_many(&keys[..2]).unwrap(),
        vec![Some(keys[0]), Some(keys[1])]
    );
    map.remove_many(&keys[..5]).unwrap();
    map.insert_many(&[keys[0]], &[1]).unwrap();
    let mut oracle: HashMap<u32, u32> = keys[5..].iter().map(|&k| (k, k)).collect();
    oracle.insert(keys[0], 1);
    agrees(&map, &oracle, &keys);
}
