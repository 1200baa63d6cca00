//! GPU tests of failed batches: a failure belongs to its own call, names exactly the
//! requests that were not applied, and leaves the table valid, with no list longer than
//! the step cap, and answering every later call as a `std` oracle that holds what was
//! applied. Sizes are small: these also run under compute-sanitizer. Every test body
//! runs for every key and value type (sets: every key type); slot counts follow the
//! type's layout.

mod common;

use std::collections::{HashMap, HashSet};

use gpuds_core::cudarc::driver::PushKernelArg;
use gpuds_core::hash::Universal;
use gpuds_core::{launch, Program, Status};
use gpuds_slabhash::{Error, MapOp, SlabHashConfig, SlabHashMap, SlabHashSet, SlabKey, LIST_FULL};
use gpuds_testkit::gpu;

use common::{contents, n, not_applied, slots, small_pool, TestValue};

for_every_map_type!(
    an_insert_at_the_step_cap_fails_alone_and_every_later_call_answers,
    pool_exhaustion_fails_the_requests_without_a_slab_alone,
    a_failed_read_is_reported_by_its_own_call_only,
    a_refused_read_does_not_poison_later_calls,
);

for_every_set_type!(a_set_insert_at_the_step_cap_fails_alone);

const BUCKETS: u32 = 4;
const SEED: u64 = 11;

/// `count` distinct keys from index `from` up that hash to `bucket` of a table of
/// [`BUCKETS`] buckets seeded with [`SEED`]; 64-bit keys differ only in their high word.
fn keys_in<K: SlabKey>(bucket: u32, count: usize, from: u64) -> Vec<K> {
    let hash = Universal::from_seed(SEED);
    let wide = std::mem::size_of::<K>() == 8;
    (from..)
        .map(|i| n::<K>(if wide { (i << 32) | 0x77 } else { i }))
        .filter(|&k| hash.bucket(k.fold(), BUCKETS) == bucket)
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
fn insert_applied<K: SlabKey, V: TestValue>(
    oracle: &mut HashMap<K, V>,
    keys: &[K],
    values: &[V],
    failed: &[usize],
) {
    let failed: HashSet<usize> = failed.iter().copied().collect();
    for (i, (&k, &v)) in keys.iter().zip(values).enumerate() {
        if !failed.contains(&i) {
            oracle.insert(k, v);
        }
    }
}

/// The map validates, holds exactly the oracle's pairs, and answers lookups and counts of
/// `probes` (stored, failed and never inserted keys) as the oracle does.
fn agrees<K: SlabKey, V: TestValue>(map: &SlabHashMap<K, V>, oracle: &HashMap<K, V>, probes: &[K]) {
    map.validate().unwrap();
    assert_eq!(&contents(map), oracle);
    assert_eq!(map.len().unwrap(), oracle.len());
    let got = map.get_many(probes).unwrap();
    let counts = map.count_many(probes).unwrap();
    for (i, &k) in probes.iter().enumerate() {
        assert_eq!(got[i], oracle.get(&k).copied(), "get of key {k:?}");
        assert_eq!(
            counts[i],
            u32::from(oracle.contains_key(&k)),
            "count of key {k:?}"
        );
    }
}

/// Each key's value: every bit of the key, salted.
fn values_of<K: SlabKey, V: TestValue>(keys: &[K], salt: u64) -> Vec<V> {
    keys.iter().map(|k| n(k.to_u64() ^ salt)).collect()
}

fn an_insert_at_the_step_cap_fails_alone_and_every_later_call_answers<K: SlabKey, V: TestValue>() {
    let Some(gpu) = gpu() else { return };
    // Two slabs per list at most: 2 M pairs per bucket (M pairs a slab: 15, 10 or 7).
    let fit = 2 * slots::<K, V>(false);
    let mut map = SlabHashMap::<K, V>::with_config(&gpu, config(2)).unwrap();
    let mut oracle = HashMap::new();
    let full = keys_in::<K>(0, 50, 0);
    let healthy = keys_in::<K>(1, 5, 0);
    let keys: Vec<K> = full.iter().chain(&healthy).copied().collect();
    let values: Vec<V> = values_of(&keys, 0xabc);
    let failed = not_applied(map.insert_many(&keys, &values), LIST_FULL);
    assert_eq!(failed.len(), 50 - fit, "{fit} of bucket 0's 50 keys fit");
    assert!(
        failed.iter().all(|&i| i < full.len()),
        "only bucket 0 fails"
    );
    insert_applied(&mut oracle, &keys, &values, &failed);
    let absent: Vec<K> = failed.iter().map(|&i| keys[i]).collect();
    let misses: Vec<K> = keys_in(0, 8, 1 << 20)
        .into_iter()
        .chain(keys_in(1, 4, 1 << 20))
        .chain(keys_in(2, 4, 1 << 20))
        .collect();
    let probes: Vec<K> = keys.iter().chain(&misses).copied().collect();
    // No list passed the cap (bucket 0 has two slabs, the others one): every read walks
    // the full bucket to its end and answers.
    assert_eq!(map.stats().unwrap().slab_histogram, vec![0, 3, 1]);
    agrees(&map, &oracle, &probes);
    assert!(map.get_many(&absent).unwrap().iter().all(Option::is_none));

    // Replacing stored keys of the full bucket needs no room.
    let stored: Vec<K> = full
        .iter()
        .filter(|k| oracle.contains_key(k))
        .copied()
        .collect();
    let replaced: Vec<V> = values_of(&stored, 0x5a5a);
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
    let absent_values: Vec<V> = values_of(&absent, 0x77);
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
    let rest: Vec<K> = absent
        .iter()
        .filter(|k| !oracle.contains_key(k))
        .copied()
        .collect();
    let elsewhere = keys_in::<K>(2, 1, 0)[0];
    let mut ops: Vec<MapOp<K, V>> = rest
        .iter()
        .map(|&k| MapOp::Insert(k, n(k.to_u64())))
        .collect();
    ops.extend([
        MapOp::Get(stored[stored.len() - 1]),
        MapOp::Remove(healthy[3]),
        MapOp::Insert(elsewhere, n(9)),
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
    oracle.insert(elsewhere, n(9));
    agrees(&map, &oracle, &probes);
}

fn a_set_insert_at_the_step_cap_fails_alone<K: SlabKey>() {
    let Some(gpu) = gpu() else { return };
    // The base slab only: 30 u32 or 15 u64 keys per bucket.
    let fit = slots::<K, ()>(true);
    let mut set = SlabHashSet::<K>::with_config(&gpu, config(1)).unwrap();
    let full = keys_in::<K>(0, 45, 0);
    let healthy = keys_in::<K>(3, 3, 0);
    let keys: Vec<K> = full.iter().chain(&healthy).copied().collect();
    let failed = not_applied(set.insert_many(&keys), LIST_FULL);
    assert_eq!(failed.len(), 45 - fit);
    let failed_keys: HashSet<K> = failed.iter().map(|&i| keys[i]).collect();
    let mut oracle: HashSet<K> = keys
        .iter()
        .filter(|k| !failed_keys.contains(k))
        .copied()
        .collect();
    let probes: Vec<K> = keys
        .iter()
        .chain(&keys_in(0, 5, 1 << 20))
        .copied()
        .collect();
    let agrees = |set: &SlabHashSet<K>, oracle: &HashSet<K>| {
        set.validate().unwrap();
        let stored: HashSet<K> = set.to_vec().unwrap().into_iter().collect();
        assert_eq!(&stored, oracle);
        let found = set.contains_many(&probes).unwrap();
        for (i, k) in probes.iter().enumerate() {
            assert_eq!(found[i], oracle.contains(k), "key {k:?}");
        }
    };
    agrees(&set, &oracle);
    // Inserting present keys again needs no room.
    let present: Vec<K> = oracle.iter().copied().collect();
    set.insert_many(&present).unwrap();
    agrees(&set, &oracle);
    // Remove five, flush, and seven failed keys come back: five fit.
    let gone: Vec<K> = full
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
    let back: Vec<K> = failed_keys.iter().take(7).copied().collect();
    let failed = not_applied(set.insert_many(&back), LIST_FULL);
    assert_eq!(failed.len(), 2);
    for (i, k) in back.iter().enumerate() {
        if !failed.contains(&i) {
            oracle.insert(*k);
        }
    }
    agrees(&set, &oracle);
}

fn pool_exhaustion_fails_the_requests_without_a_slab_alone<K: SlabKey, V: TestValue>() {
    let Some(gpu) = gpu() else { return };
    let config = SlabHashConfig {
        seed: SEED,
        ..small_pool(64)
    };
    let mut map = SlabHashMap::<K, V>::with_config(&gpu, config).unwrap();
    let mut oracle = HashMap::new();
    // 1,024 slabs and 64 base slabs hold at most 1,088 M pairs (16,320 for M = 15); the
    // batch is about 10 % more.
    let capacity = 1088 * slots::<K, V>(false);
    let len = 1200 * slots::<K, V>(false);
    let keys: Vec<K> = (1..=len as u64).map(|i| n((i << 32) | i)).collect();
    let values: Vec<V> = values_of(&keys, 0x1234);
    let failed = not_applied(map.insert_many(&keys, &values), Status::POOL_EXHAUSTED);
    assert!(failed.len() >= len - capacity, "{} failed", failed.len());
    insert_applied(&mut oracle, &keys, &values, &failed);
    let probes: Vec<K> = keys
        .iter()
        .copied()
        .chain((1 << 24..(1 << 24) + 100).map(n))
        .collect();
    agrees(&map, &oracle, &probes);
    // Lookups and removals work and report nothing of the exhaustion.
    let stored: Vec<K> = oracle.keys().copied().collect();
    let removed = stored.len() * 3 / 8;
    map.remove_many(&stored[..removed]).unwrap();
    for k in &stored[..removed] {
        oracle.remove(k);
    }
    agrees(&map, &oracle, &probes);
    // FLUSH frees slabs; the failed keys then fit.
    assert!(map.flush().unwrap() > 0);
    agrees(&map, &oracle, &probes);
    let retry: Vec<K> = failed.iter().map(|&i| keys[i]).collect();
    let retry_values: Vec<V> = values_of(&retry, 0x99);
    map.insert_many(&retry, &retry_values).unwrap();
    insert_applied(&mut oracle, &retry, &retry_values, &[]);
    agrees(&map, &oracle, &probes);
}

/// Inserts keys through a user kernel whose ref carries a larger step cap than the
/// table's, making a list longer than the table's reads may walk (what the old insert
/// path did when it failed at the cap).
fn insert_past_the_cap<K: SlabKey, V: TestValue>(
    gpu: &gpuds_core::Gpu,
    map: &mut SlabHashMap<K, V>,
    keys: &[K],
    cap: u32,
) {
    let program = Program::new(
        "past_the_cap",
        r#"#include <gpuds/slabhash/map_ref.cuh>
           using namespace gpuds::slabhash;
           extern "C" __global__ void past_the_cap(map_ref<KEY_T, VALUE_T> map,
                                                   const KEY_T* keys, unsigned n) {
               const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
               auto allocator = map.make_allocator();
               VALUE_T old;
               map.replace(allocator, i < n, i < n ? keys[i] : static_cast<KEY_T>(0), static_cast<VALUE_T>(i), old);
           }"#,
    )
    .define("KEY_T", K::CUDA_TYPE)
    .define("VALUE_T", V::CUDA_TYPE)
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
    // SAFETY: the kernel takes a map_ref<K, V>, n keys and n.
    unsafe { args.launch(launch::one_thread_per_item(keys.len(), 128).unwrap()) }.unwrap();
    map.refresh().unwrap();
}

fn a_failed_read_is_reported_by_its_own_call_only<K: SlabKey, V: TestValue>() {
    let Some(gpu) = gpu() else { return };
    let per_slab = slots::<K, V>(false);
    let mut map = SlabHashMap::<K, V>::with_config(&gpu, config(2)).unwrap();
    let healthy = keys_in::<K>(1, 6, 0);
    let healthy_values: Vec<V> = values_of(&healthy, 0);
    map.insert_many(&healthy, &healthy_values).unwrap();
    // Bucket 0 gets four slabs (4 M keys) behind the table's back.
    let long = keys_in::<K>(0, 4 * per_slab, 0);
    insert_past_the_cap(&gpu, &mut map, &long, 8);
    assert_eq!(map.len().unwrap(), 4 * per_slab + 6);
    let e = map.validate().unwrap_err().to_string();
    assert!(
        e.contains("step cap"),
        "validate must catch the long list: {e}"
    );

    // Lookups in the long bucket that must walk past its second slab fail, each named.
    let absent = keys_in::<K>(0, 5, 1 << 20);
    let probes: Vec<K> = long
        .iter()
        .chain(&absent)
        .chain(&healthy)
        .copied()
        .collect();
    let failed = not_applied(map.get_many(&probes).map(drop), Status::RETRY_LIMIT);
    assert_eq!(
        failed.len(),
        2 * per_slab + 5,
        "the last two slabs' keys and the misses"
    );
    assert!(failed.iter().all(|&i| i < long.len() + absent.len()));
    assert!((long.len()..long.len() + absent.len()).all(|i| failed.contains(&i)));

    // Calls after it report their own outcome only.
    assert_eq!(
        map.get_many(&healthy).unwrap(),
        healthy_values.iter().map(|&v| Some(v)).collect::<Vec<_>>()
    );
    assert_eq!(map.count_many(&healthy).unwrap(), vec![1; 6]);
    map.remove_many(&healthy[..3]).unwrap();
    map.insert_many(&keys_in::<K>(2, 4, 0), &[n(1), n(2), n(3), n(4)])
        .unwrap();
    let device = gpu.stream().clone_htod(&healthy).unwrap();
    let mut out = gpu.stream().alloc_zeros::<V>(healthy.len()).unwrap();
    map.get_many_into(&device, &mut out).unwrap();
    let got = gpu.stream().clone_dtoh(&out).unwrap();
    assert_eq!(&got[3..], &healthy_values[3..]);
    assert!(got[..3].iter().all(|&v| v == V::NOT_FOUND));

    // An update on the long bucket fails alone as well.
    let failed = not_applied(
        map.insert_many(&absent[..2], &[n(7), n(8)]),
        Status::RETRY_LIMIT,
    );
    assert_eq!(failed, vec![0, 1]);
    assert_eq!(
        map.get_many(&healthy[3..]).unwrap(),
        healthy_values[3..]
            .iter()
            .map(|&v| Some(v))
            .collect::<Vec<_>>()
    );
}

fn a_refused_read_does_not_poison_later_calls<K: SlabKey, V: TestValue>() {
    let Some(gpu) = gpu() else { return };
    let mut map = SlabHashMap::<K, V>::with_config(&gpu, config(2)).unwrap();
    let keys = keys_in::<K>(1, 10, 0);
    let values: Vec<V> = values_of(&keys, 0);
    map.insert_many(&keys, &values).unwrap();
    let bad = gpu.stream().clone_htod(&[keys[0], K::EMPTY]).unwrap();
    assert!(matches!(
        map.get_many(&bad),
        Err(Error::ReservedKey { index: 1, .. })
    ));
    let mut out = gpu.stream().alloc_zeros::<V>(2).unwrap();
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
        vec![Some(values[0]), Some(values[1])]
    );
    map.remove_many(&keys[..5]).unwrap();
    map.insert_many(&[keys[0]], &[n(1)]).unwrap();
    let mut oracle: HashMap<K, V> = (5..10).map(|i| (keys[i], values[i])).collect();
    oracle.insert(keys[0], n(1));
    agrees(&map, &oracle, &keys);
}
