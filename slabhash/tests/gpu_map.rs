//! GPU tests of SlabHashMap: batches against std oracles, unique and duplicate keys,
//! mixed concurrent batches, FLUSH, sizes from one bucket to 2^24 keys, exhaustion,
//! reserved keys, and keys that only a full 64-bit hash and compare tell apart.
//! `validate()` runs after every batch. Every test body is generic and runs for every
//! key and value type (modules `u32_u32`, `u32_u64`, `u64_u32`, `u64_u64`).

mod common;

use std::collections::HashMap;

use gpuds_slabhash::{Error, MapOp, OpResult, SlabHashConfig, SlabHashMap, SlabKey};
use gpuds_testkit::check::{check_map, check_multimap};
use gpuds_testkit::model::InsertPolicy;
use gpuds_testkit::workload::{unique_keys, MixedWorkload, GAMMA_0, GAMMA_1, GAMMA_2};
use gpuds_testkit::{gpu, strategy, Op};

use common::{
    contents, edge_keys, for_batch_sequences, instances, n, not_applied, reply, slots, small_pool,
    thrice, TestValue,
};

for_every_map_type!(
    batch_api_round_trip,
    reserved_keys_are_rejected_and_nothing_is_applied,
    unique_batches_match_hashmap,
    duplicate_batches_match_the_multimap,
    multimap_search_all_and_delete_all,
    mixed_concurrent_batches_give_the_expected_observations,
    flush_keeps_the_contents_and_frees_slabs,
    exhaustion_is_an_error_that_leaves_the_map_valid,
    one_bucket_long_lists_and_many_buckets,
    two_to_the_24_keys,
    keys_a_32_bit_shortcut_would_confuse,
    a_key_named_often_in_one_removal_goes_once,
);

/// The value stored for key `k` in most tests: all of its bits, mixed.
fn value_of<K: SlabKey, V: TestValue>(k: K, salt: u64) -> V {
    n(k.to_u64().rotate_left(17) ^ salt)
}

fn to_map_ops<K: SlabKey, V: TestValue>(batch: &[Op<K, V>]) -> Vec<MapOp<K, V>> {
    batch
        .iter()
        .map(|op| match *op {
            Op::Insert(k, v) => MapOp::Insert(k, v),
            Op::Remove(k) => MapOp::Remove(k),
            Op::Get(k) => MapOp::Get(k),
        })
        .collect()
}

fn small(buckets: u32, unique: bool) -> SlabHashConfig {
    SlabHashConfig {
        buckets,
        unique_keys: unique,
        seed: 11,
        ..Default::default()
    }
}

fn batch_api_round_trip<K: SlabKey, V: TestValue>() {
    let Some(gpu) = gpu() else { return };
    let mut map = SlabHashMap::<K, V>::new(&gpu, 10_000).unwrap();
    let keys = unique_keys::<K>(1, 10_000, &K::RESERVED);
    let values: Vec<V> = keys.iter().map(|&k| value_of(k, 3)).collect();
    map.insert_many(&keys, &values).unwrap();
    map.validate().unwrap();
    assert_eq!(map.len().unwrap(), 10_000);
    // Replacing keeps the count; device inputs work the same as host ones.
    let stream = gpu.stream();
    let dk = stream.clone_htod(&keys[..100]).unwrap();
    let dv = stream.clone_htod(&vec![n::<V>(7); 100]).unwrap();
    map.insert_many(&dk, &dv).unwrap();
    map.validate().unwrap();
    assert_eq!(map.len().unwrap(), 10_000);
    let got = map.get_many(&keys).unwrap();
    for (i, g) in got.iter().enumerate() {
        assert_eq!(*g, Some(if i < 100 { n(7) } else { values[i] }), "key #{i}");
    }
    let misses = unique_keys::<K>(2, 1000, &K::RESERVED)
        .into_iter()
        .filter(|k| !keys.contains(k))
        .collect::<Vec<_>>();
    assert!(map.get_many(&misses).unwrap().iter().all(Option::is_none));
    let mut out = stream.alloc_zeros::<V>(2).unwrap();
    map.get_many_into(&[keys[500], misses[0]], &mut out)
        .unwrap();
    assert_eq!(
        stream.clone_dtoh(&out).unwrap(),
        vec![values[500], V::NOT_FOUND]
    );
    assert_eq!(
        map.contains_many(&[keys[0], misses[0]]).unwrap(),
        vec![true, false]
    );
    assert_eq!(map.count_many(&[keys[1], misses[1]]).unwrap(), vec![1, 0]);
    map.remove_many(&keys[..5000]).unwrap();
    map.remove_many(&misses).unwrap(); // missing keys: no error
    map.validate().unwrap();
    assert_eq!(map.len().unwrap(), 5000);
    assert_eq!(contents(&map).len(), 5000);
    let stats = map.stats().unwrap();
    assert_eq!(stats.len, 5000);
    assert_eq!(stats.tombstones, 5000);
    assert!(stats.memory_utilization > 0.0 && stats.memory_utilization < 0.94);
    assert_eq!(stats.tombstones + stats.len, 10_000);
    map.clear().unwrap();
    assert!(map.is_empty().unwrap());
    map.validate().unwrap();
}

fn reserved_keys_are_rejected_and_nothing_is_applied<K: SlabKey, V: TestValue>() {
    let Some(gpu) = gpu() else { return };
    let mut map = SlabHashMap::<K, V>::new(&gpu, 100).unwrap();
    let (one, two) = (n::<K>(1), n::<K>(2));
    map.insert_many(&[one, two], &[n(1), n(2)]).unwrap();
    for reserved in K::RESERVED {
        let keys = [n(5), n(6), reserved, n(7)];
        match map.insert_many(&keys, &[n(0); 4]) {
            Err(Error::ReservedKey { index: 2, key }) => assert_eq!(key, reserved.to_u64()),
            other => panic!("expected a reserved-key error, got {other:?}"),
        }
        let device = gpu.stream().clone_htod(&keys).unwrap();
        let values = gpu.stream().clone_htod(&[n::<V>(0); 4]).unwrap();
        assert!(matches!(
            map.insert_many(&device, &values),
            Err(Error::ReservedKey { index: 2, .. })
        ));
        assert!(matches!(
            map.remove_many(&device),
            Err(Error::ReservedKey { index: 2, .. })
        ));
        assert!(matches!(
            map.get_many(&keys),
            Err(Error::ReservedKey { index: 2, .. })
        ));
        assert!(matches!(
            map.apply(&[MapOp::Get(one), MapOp::Insert(reserved, n(0))]),
            Err(Error::ReservedKey { index: 1, .. })
        ));
    }
    assert_eq!(map.len().unwrap(), 2);
    assert_eq!(contents(&map), HashMap::from([(one, n(1)), (two, n(2))]));
    map.validate().unwrap();
    assert!(matches!(
        map.insert_many(&[one, two], &[n(1)]),
        Err(Error::LengthMismatch { .. })
    ));
    assert!(matches!(
        map.insert_duplicates_many(&[one], &[n(1)]),
        Err(Error::NeedsDuplicates(_))
    ));
}

fn run_unique_batches<K: SlabKey, V: TestValue>(
    gpu: &gpuds_core::Gpu,
    buckets: u32,
    batches: &[Vec<Op<K, V>>],
) {
    let mut map = SlabHashMap::<K, V>::with_config(gpu, small(buckets, true)).unwrap();
    let mut model: HashMap<K, V> = HashMap::new();
    for (b, batch) in batches.iter().enumerate() {
        let results = map.apply(&to_map_ops(batch)).unwrap();
        let replies: Vec<_> = results.iter().map(|&r| reply(r)).collect();
        let after = contents(&map);
        check_map(InsertPolicy::Replace, batch, &replies, &model, &after)
            .unwrap_or_else(|m| panic!("batch {b}: {m}"));
        map.validate().unwrap_or_else(|e| panic!("batch {b}: {e}"));
        assert_eq!(map.len().unwrap(), after.len());
        model = after;
        if b % 3 == 2 {
            map.flush().unwrap();
            map.validate().unwrap();
            assert_eq!(contents(&map), model, "flush changed the contents");
        }
    }
}

fn run_duplicate_batches<K: SlabKey, V: TestValue>(
    gpu: &gpuds_core::Gpu,
    buckets: u32,
    batches: &[Vec<Op<K, V>>],
) {
    let mut map = SlabHashMap::<K, V>::with_config(gpu, small(buckets, false)).unwrap();
    let mut model: HashMap<K, Vec<V>> = HashMap::new();
    for (b, batch) in batches.iter().enumerate() {
        let results = map.apply(&to_map_ops(batch)).unwrap();
        let replies: Vec<_> = results.iter().map(|&r| reply(r)).collect();
        let after = instances(&map);
        check_multimap(batch, &replies, &model, &after)
            .unwrap_or_else(|m| panic!("batch {b}: {m}"));
        map.validate().unwrap_or_else(|e| panic!("batch {b}: {e}"));
        model = after;
        if b % 2 == 1 {
            map.flush().unwrap();
            map.validate().unwrap();
            assert_eq!(
                instances(&map),
                model,
                "flush changed the instances or their order"
            );
        }
    }
}

fn unique_batches_match_hashmap<K: SlabKey, V: TestValue>() {
    let ops = strategy::map_op(
        strategy::small_keys::<K>(40, &K::RESERVED),
        strategy::small_values::<V>(5),
    );
    // One bucket (long lists), a few, and many.
    for_batch_sequences(
        strategy::batches(ops, 6, 200),
        &[1, 3, 4096],
        run_unique_batches,
    );
}

fn duplicate_batches_match_the_multimap<K: SlabKey, V: TestValue>() {
    let ops = strategy::multimap_op(
        strategy::small_keys::<K>(12, &K::RESERVED),
        strategy::small_values::<V>(6),
    );
    for_batch_sequences(
        strategy::batches(ops, 5, 120),
        &[1, 64],
        run_duplicate_batches,
    );
}

fn multimap_search_all_and_delete_all<K: SlabKey, V: TestValue>() {
    let Some(gpu) = gpu() else { return };
    let mut mm = SlabHashMap::<K, V>::with_config(&gpu, small(2, false)).unwrap();
    let (five, six, seven) = (n::<K>(5), n::<K>(6), n::<K>(7));
    // Three batches so the instances of key 5 have a known order: 1, 2, then 3..=40.
    mm.insert_duplicates_many(&[five], &[n(1)]).unwrap();
    mm.insert_duplicates_many(&[five, six], &[n(2), n(60)])
        .unwrap();
    let more: Vec<V> = (3..=40).map(n).collect();
    mm.insert_duplicates_many(&vec![five; more.len()], &more)
        .unwrap();
    mm.validate().unwrap();
    let all = mm.get_all_many(&[five, six, seven]).unwrap();
    assert_eq!(all.counts, vec![40, 1, 0]);
    assert_eq!(&all.get(0)[..2], &[n(1), n(2)]);
    let mut rest: Vec<u64> = all.get(0)[2..].iter().map(|v| v.to_u64()).collect();
    rest.sort_unstable();
    assert_eq!(rest, (3..=40).collect::<Vec<u64>>());
    assert_eq!(all.get(1), &[n(60)]);
    // SEARCH and DELETE see the least recent instance.
    assert_eq!(mm.get_many(&[five]).unwrap(), vec![Some(n(1))]);
    assert_eq!(
        mm.apply(&[MapOp::Remove(five)]).unwrap(),
        vec![OpResult::Present(n(1))]
    );
    assert_eq!(mm.get_many(&[five]).unwrap(), vec![Some(n(2))]);
    mm.remove_all_many(&[five]).unwrap();
    mm.validate().unwrap();
    assert_eq!(mm.count_many(&[five, six]).unwrap(), vec![0, 1]);
    assert_eq!(mm.len().unwrap(), 1);
    let freed = mm.flush().unwrap();
    assert!(freed >= 1, "40 instances needed extra slabs, freed {freed}");
    mm.validate().unwrap();
    assert_eq!(mm.to_vec().unwrap(), vec![(six, n(60))]);
}

fn mixed_concurrent_batches_give_the_expected_observations<K: SlabKey, V: TestValue>() {
    let Some(gpu) = gpu() else { return };
    for (g, mix) in [GAMMA_0, GAMMA_1, GAMMA_2].into_iter().enumerate() {
        let mut w = MixedWorkload::<K, V>::new(g as u64, mix, &K::RESERVED, &[]);
        let mut map = SlabHashMap::<K, V>::new(&gpu, 300_000).unwrap();
        let initial = w.initial(200_000);
        let (k, v): (Vec<K>, Vec<V>) = initial.into_iter().unzip();
        map.insert_many(&k, &v).unwrap();
        for round in 0..4 {
            let batch = w.batch(100_000);
            let results = map.apply(&to_map_ops(&batch.ops)).unwrap();
            for (i, (r, e)) in results.iter().zip(&batch.expected).enumerate() {
                assert_eq!(
                    r.value(),
                    *e,
                    "mix {g} round {round} op {i}: {:?}",
                    batch.ops[i]
                );
            }
            map.validate().unwrap();
            assert_eq!(map.len().unwrap(), w.present().len());
        }
        let expected: HashMap<K, V> = w.present().iter().copied().collect();
        assert_eq!(contents(&map), expected);
    }
}

fn flush_keeps_the_contents_and_frees_slabs<K: SlabKey, V: TestValue>() {
    let Some(gpu) = gpu() else { return };
    let mut map = SlabHashMap::<K, V>::with_config(&gpu, small(64, true)).unwrap();
    let keys = unique_keys::<K>(5, 60_000, &K::RESERVED);
    let values: Vec<V> = keys.iter().map(|&k| value_of(k, 0)).collect();
    map.insert_many(&keys, &values).unwrap();
    let before = map.stats().unwrap();
    map.remove_many(&keys[..50_000]).unwrap();
    let freed = map.flush().unwrap();
    map.validate().unwrap();
    let after = map.stats().unwrap();
    assert_eq!(after.tombstones, 0);
    assert_eq!(before.slabs - after.slabs, freed);
    // 10,000 keys in 64 lists need about 10,000 / M + 64 slabs (M entries a slab).
    let per_slab = slots::<K, V>(false) as u64;
    assert!(
        after.slabs <= 10_000 / per_slab + 2 * 64,
        "{} slabs after flush",
        after.slabs
    );
    let expected: HashMap<K, V> = (50_000..60_000).map(|i| (keys[i], values[i])).collect();
    assert_eq!(contents(&map), expected);
    // The freed slabs are reused.
    map.insert_many(&keys[..50_000], &values[..50_000]).unwrap();
    map.validate().unwrap();
    assert_eq!(map.len().unwrap(), 60_000);
    // A flush of a table without tombstones frees nothing and changes nothing.
    assert_eq!(map.flush().unwrap(), 0);
    map.validate().unwrap();
}

fn exhaustion_is_an_error_that_leaves_the_map_valid<K: SlabKey, V: TestValue>() {
    let Some(gpu) = gpu() else { return };
    let mut map = SlabHashMap::<K, V>::with_config(&gpu, small_pool(4)).unwrap();
    let keys = unique_keys::<K>(9, 40_000, &K::RESERVED);
    let values: Vec<V> = keys.iter().map(|&k| value_of(k, 9)).collect();
    let failed = not_applied(
        map.insert_many(&keys, &values),
        gpuds_core::Status::POOL_EXHAUSTED,
    );
    map.validate().unwrap();
    let stored = contents(&map);
    assert_eq!(stored.len(), map.len().unwrap());
    assert!(stored.len() >= 1024 * slots::<K, V>(false) / 2 && stored.len() < 40_000);
    assert!(stored.iter().all(|(&k, &v)| v == value_of(k, 9)));
    // The error names exactly the keys that are missing.
    let missing: Vec<usize> = (0..keys.len())
        .filter(|&i| !stored.contains_key(&keys[i]))
        .collect();
    assert_eq!(failed, missing);
    // The map still works: remove, flush, insert what fits.
    let present: Vec<K> = stored.keys().copied().collect();
    map.remove_many(&present).unwrap();
    map.flush().unwrap();
    map.validate().unwrap();
    map.insert_many(&keys[..1000], &values[..1000]).unwrap();
    assert_eq!(map.len().unwrap(), 1000);
    map.validate().unwrap();
}

fn one_bucket_long_lists_and_many_buckets<K: SlabKey, V: TestValue>() {
    let Some(gpu) = gpu() else { return };
    for (buckets, len) in [(1u32, 20_000usize), (1 << 22, 200_000)] {
        let mut map = SlabHashMap::<K, V>::with_config(&gpu, small(buckets, true)).unwrap();
        let keys = unique_keys::<K>(13, len, &K::RESERVED);
        let values: Vec<V> = keys.iter().map(|&k| value_of(k, 13)).collect();
        let replaced: Vec<V> = keys.iter().map(|&k| value_of(k, 14)).collect();
        map.insert_many(&keys, &values).unwrap();
        map.insert_many(&keys[..len / 2], &replaced[..len / 2])
            .unwrap();
        map.validate().unwrap();
        assert_eq!(map.len().unwrap(), len);
        map.remove_many(&keys[..len / 4]).unwrap();
        let got = map.get_many(&keys).unwrap();
        for (i, g) in got.iter().enumerate() {
            let expected = if i < len / 2 { replaced[i] } else { values[i] };
            assert_eq!(
                *g,
                (i >= len / 4).then_some(expected),
                "B = {buckets}, key #{i}"
            );
        }
        map.validate().unwrap();
        let stats = map.stats().unwrap();
        assert_eq!(stats.buckets, buckets as u64);
        assert_eq!(stats.slab_histogram.iter().sum::<u64>(), buckets as u64);
    }
}

fn two_to_the_24_keys<K: SlabKey, V: TestValue>() {
    let Some(gpu) = gpu() else { return };
    let n = 1usize << 24;
    let (hits, misses) =
        gpuds_testkit::workload::UniqueKeys::<K>::new(17, &K::RESERVED).hits_and_misses(n, 1 << 20);
    let values: Vec<V> = hits.iter().map(|&k| value_of(k, 0x5555_5555)).collect();
    let mut map = SlabHashMap::<K, V>::new(&gpu, n).unwrap();
    let stream = gpu.stream();
    let (dk, dv) = (
        stream.clone_htod(&hits).unwrap(),
        stream.clone_htod(&values).unwrap(),
    );
    map.insert_many(&dk, &dv).unwrap();
    assert_eq!(map.len().unwrap(), n);
    let stats = map.stats().unwrap();
    assert!(
        (0.5..0.7).contains(&stats.memory_utilization),
        "utilization {} at beta 0.7",
        stats.memory_utilization
    );
    map.validate().unwrap();
    let mut out = stream.alloc_zeros::<V>(n).unwrap();
    map.get_many_into(&dk, &mut out).unwrap();
    assert_eq!(stream.clone_dtoh(&out).unwrap(), values);
    assert!(map.get_many(&misses).unwrap().iter().all(Option::is_none));
    map.remove_many(&dk.slice(..n / 2)).unwrap();
    assert_eq!(map.len().unwrap(), n / 2);
    map.flush().unwrap();
    map.validate().unwrap();
    let got = map.get_many(&hits[n / 2 - 1000..n / 2 + 1000]).unwrap();
    for (i, g) in got.iter().enumerate() {
        assert_eq!(g.is_some(), i >= 1000);
    }
}

/// Keys that differ only in their high 32 bits, 32-bit sentinels used as 64-bit keys,
/// and keys next to the reserved values (common::edge_keys): a hash or a compare that
/// dropped the high word would merge keys (wrong length, wrong values) or pile them into
/// one list (the step cap below would then fail inserts). Values use every bit too.
fn keys_a_32_bit_shortcut_would_confuse<K: SlabKey, V: TestValue>() {
    let Some(gpu) = gpu() else { return };
    let len = 4000;
    let keys = edge_keys::<K>(len);
    let values: Vec<V> = keys.iter().map(|&k| value_of(k, u64::MAX - 0xFF)).collect();
    let config = SlabHashConfig {
        buckets: 512,
        step_cap: 16,
        ..small(512, true)
    };
    let mut map = SlabHashMap::<K, V>::with_config(&gpu, config).unwrap();
    map.insert_many(&keys, &values).unwrap();
    map.validate().unwrap();
    assert_eq!(map.len().unwrap(), len);
    let stats = map.stats().unwrap();
    assert!(
        stats.slab_histogram.len() <= 8,
        "lists of {} slabs: the bucket hash ignores part of the key",
        stats.slab_histogram.len() - 1
    );
    let got = map.get_many(&keys).unwrap();
    for (i, g) in got.iter().enumerate() {
        assert_eq!(*g, Some(values[i]), "key {:#x}", keys[i].to_u64());
    }
    let expected: HashMap<K, V> = keys.iter().copied().zip(values.iter().copied()).collect();
    assert_eq!(contents(&map), expected);
    // Remove every other key: exactly those go, their neighbours in the high word stay.
    let gone: Vec<K> = keys.iter().copied().step_by(2).collect();
    let removed = map
        .apply(&gone.iter().map(|&k| MapOp::Remove(k)).collect::<Vec<_>>())
        .unwrap();
    for (i, r) in removed.iter().enumerate() {
        assert_eq!(*r, OpResult::Present(values[2 * i]));
    }
    map.validate().unwrap();
    assert_eq!(map.len().unwrap(), len - gone.len());
    let got = map.get_many(&keys).unwrap();
    for (i, g) in got.iter().enumerate() {
        assert_eq!(
            *g,
            (i % 2 == 1).then_some(values[i]),
            "key {:#x}",
            keys[i].to_u64()
        );
    }
    map.flush().unwrap();
    map.validate().unwrap();
    let after: Vec<(K, V)> = (1..len).step_by(2).map(|i| (keys[i], values[i])).collect();
    assert_eq!(contents(&map), after.into_iter().collect::<HashMap<K, V>>());
}

/// One removal batch (`remove_many`, the bulk deletion kernel, whose lanes read the lists
/// with plain loads: a key a stale line still shows is settled by the atomic) that names
/// each of 20,000 keys three or four times, apart and side by side: each key goes once, the
/// count drops by 20,000, and every other key keeps its value.
fn a_key_named_often_in_one_removal_goes_once<K: SlabKey, V: TestValue>() {
    let Some(gpu) = gpu() else { return };
    let keys = unique_keys::<K>(9, 50_000, &K::RESERVED);
    let values: Vec<V> = keys.iter().map(|&k| value_of(k, 11)).collect();
    let mut map = SlabHashMap::<K, V>::new(&gpu, 50_000).unwrap();
    map.insert_many(&keys, &values).unwrap();
    let gone = &keys[..20_000];
    let batch = thrice(gone);
    map.remove_many(&batch).unwrap();
    map.validate().unwrap();
    assert_eq!(map.len().unwrap(), 30_000);
    let got = map.get_many(&keys).unwrap();
    for (i, g) in got.iter().enumerate() {
        assert_eq!(*g, (i >= 20_000).then_some(values[i]), "key #{i}");
    }
    map.flush().unwrap();
    map.validate().unwrap();
    let rest: HashMap<K, V> = keys[20_000..]
        .iter()
        .copied()
        .zip(values[20_000..].iter().copied())
        .collect();
    assert_eq!(contents(&map), rest);
}
