//! GPU tests of SlabHashMap: batches against std oracles, unique and duplicate keys,
//! mixed concurrent batches, FLUSH, sizes from one bucket to 2^24 keys, exhaustion and
//! reserved keys. `validate()` runs after every batch.

mod common;

use std::collections::HashMap;

use gpuds_slabhash::{Error, MapOp, OpResult, SlabHashConfig, SlabHashMap};
use gpuds_testkit::check::{check_map, check_multimap};
use gpuds_testkit::model::InsertPolicy;
use gpuds_testkit::workload::{unique_keys, MixedWorkload, GAMMA_0, GAMMA_1, GAMMA_2};
use gpuds_testkit::{gpu, strategy, Op};
use proptest::prelude::*;

use common::{contents, instances, not_applied, reply, small_pool, RESERVED};

fn to_map_ops(batch: &[Op<u32, u32>]) -> Vec<MapOp<u32, u32>> {
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

#[test]
fn batch_api_round_trip() {
    let Some(gpu) = gpu() else { return };
    let mut map = SlabHashMap::<u32, u32>::new(&gpu, 10_000).unwrap();
    let keys = unique_keys::<u32>(1, 10_000, &RESERVED);
    let values: Vec<u32> = keys.iter().map(|k| k.wrapping_mul(3)).collect();
    map.insert_many(&keys, &values).unwrap();
    map.validate().unwrap();
    assert_eq!(map.len().unwrap(), 10_000);
    // Replacing keeps the count; device inputs work the same as host ones.
    let stream = gpu.stream();
    let dk = stream.clone_htod(&keys[..100]).unwrap();
    let dv = stream.clone_htod(&vec![7u32; 100]).unwrap();
    map.insert_many(&dk, &dv).unwrap();
    map.validate().unwrap();
    assert_eq!(map.len().unwrap(), 10_000);
    let got = map.get_many(&keys).unwrap();
    for (i, g) in got.iter().enumerate() {
        assert_eq!(*g, Some(if i < 100 { 7 } else { values[i] }), "key #{i}");
    }
    let misses = unique_keys::<u32>(2, 1000, &RESERVED)
        .into_iter()
        .filter(|k| !keys.contains(k))
        .collect::<Vec<_>>();
    assert!(map.get_many(&misses).unwrap().iter().all(Option::is_none));
    let mut out = stream.alloc_zeros::<u32>(2).unwrap();
    map.get_many_into(&[keys[500], misses[0]], &mut out)
        .unwrap();
    assert_eq!(
        stream.clone_dtoh(&out).unwrap(),
        vec![values[500], u32::MAX]
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
    map.clear().unwrap();
    assert!(map.is_empty().unwrap());
    map.validate().unwrap();
}

#[test]
fn reserved_keys_are_rejected_and_nothing_is_applied() {
    let Some(gpu) = gpu() else { return };
    let mut map = SlabHashMap::<u32, u32>::new(&gpu, 100).unwrap();
    map.insert_many(&[1, 2], &[1, 2]).unwrap();
    for reserved in RESERVED {
        let keys = [5, 6, reserved, 7];
        match map.insert_many(&keys, &[0; 4]) {
            Err(Error::ReservedKey { index: 2, key }) => assert_eq!(key, reserved as u64),
            other => panic!("expected a reserved-key error, got {other:?}"),
        }
        let device = gpu.stream().clone_htod(&keys).unwrap();
        let values = gpu.stream().clone_htod(&[0u32; 4]).unwrap();
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
            map.apply(&[MapOp::Get(1), MapOp::Insert(reserved, 0)]),
            Err(Error::ReservedKey { index: 1, .. })
        ));
    }
    assert_eq!(map.len().unwrap(), 2);
    assert_eq!(contents(&map), HashMap::from([(1, 1), (2, 2)]));
    map.validate().unwrap();
    assert!(matches!(
        map.insert_many(&[1, 2], &[1]),
        Err(Error::LengthMismatch { .. })
    ));
    assert!(matches!(
        map.insert_duplicates_many(&[1], &[1]),
        Err(Error::NeedsDuplicates(_))
    ));
}

fn run_unique_batches(gpu: &gpuds_core::Gpu, buckets: u32, batches: &[Vec<Op<u32, u32>>]) {
    let mut map = SlabHashMap::<u32, u32>::with_config(gpu, small(buckets, true)).unwrap();
    let mut model: HashMap<u32, u32> = HashMap::new();
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

fn run_duplicate_batches(gpu: &gpuds_core::Gpu, buckets: u32, batches: &[Vec<Op<u32, u32>>]) {
    let mut map = SlabHashMap::<u32, u32>::with_config(gpu, small(buckets, false)).unwrap();
    let mut model: HashMap<u32, Vec<u32>> = HashMap::new();
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

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn unique_batches_match_hashmap(batches in strategy::batches(
        strategy::map_op(strategy::small_keys::<u32>(40, &RESERVED), strategy::small_values::<u32>(5)),
        6, 200)) {
        let Some(gpu) = gpu() else { return Ok(()) };
        // One bucket (long lists), a few, and many.
        for buckets in [1, 3, 4096] {
            run_unique_batches(&gpu, buckets, &batches);
        }
    }

    #[test]
    fn duplicate_batches_match_the_multimap(batches in strategy::batches(
        strategy::multimap_op(strategy::small_keys::<u32>(12, &RESERVED), strategy::small_values::<u32>(6)),
        5, 120)) {
        let Some(gpu) = gpu() else { return Ok(()) };
        for buckets in [1, 64] {
            run_duplicate_batches(&gpu, buckets, &batches);
        }
    }
}

#[test]
fn multimap_search_all_and_delete_all() {
    let Some(gpu) = gpu() else { return };
    let mut mm = SlabHashMap::<u32, u32>::with_config(&gpu, small(2, false)).unwrap();
    // Three batches so the instances of key 5 have a known order: 1, 2, then 3..=40.
    mm.insert_duplicates_many(&[5], &[1]).unwrap();
    mm.insert_duplicates_many(&[5, 6], &[2, 60]).unwrap();
    let more: Vec<u32> = (3..=40).collect();
    mm.insert_duplicates_many(&vec![5; more.len()], &more)
        .unwrap();
    mm.validate().unwrap();
    let all = mm.get_all_many(&[5, 6, 7]).unwrap();
    assert_eq!(all.counts, vec![40, 1, 0]);
    assert_eq!(&all.get(0)[..2], &[1, 2]);
    let mut rest = all.get(0)[2..].to_vec();
    rest.sort_unstable();
    assert_eq!(rest, more);
    assert_eq!(all.get(1), &[60]);
    // SEARCH and DELETE see the least recent instance.
    assert_eq!(mm.get_many(&[5]).unwrap(), vec![Some(1)]);
    assert_eq!(
        mm.apply(&[MapOp::Remove(5)]).unwrap(),
        vec![OpResult::Present(1)]
    );
    assert_eq!(mm.get_many(&[5]).unwrap(), vec![Some(2)]);
    mm.remove_all_many(&[5]).unwrap();
    mm.validate().unwrap();
    assert_eq!(mm.count_many(&[5, 6]).unwrap(), vec![0, 1]);
    assert_eq!(mm.len().unwrap(), 1);
    let freed = mm.flush().unwrap();
    assert!(freed >= 1, "40 instances needed extra slabs, freed {freed}");
    mm.validate().unwrap();
    assert_eq!(mm.to_vec().unwrap(), vec![(6, 60)]);
}

#[test]
fn mixed_concurrent_batches_give_the_expected_observations() {
    let Some(gpu) = gpu() else { return };
    for (g, mix) in [GAMMA_0, GAMMA_1, GAMMA_2].into_iter().enumerate() {
        let mut w = MixedWorkload::<u32, u32>::new(g as u64, mix, &RESERVED, &[]);
        let mut map = SlabHashMap::<u32, u32>::new(&gpu, 300_000).unwrap();
        let initial = w.initial(200_000);
        let (k, v): (Vec<u32>, Vec<u32>) = initial.into_iter().unzip();
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
        let expected: HashMap<u32, u32> = w.present().iter().copied().collect();
        assert_eq!(contents(&map), expected);
    }
}

#[test]
fn flush_keeps_the_contents_and_frees_slabs() {
    let Some(gpu) = gpu() else { return };
    let mut map = SlabHashMap::<u32, u32>::with_config(&gpu, small(64, true)).unwrap();
    let keys = unique_keys::<u32>(5, 60_000, &RESERVED);
    map.insert_many(&keys, &keys).unwrap();
    let before = map.stats().unwrap();
    map.remove_many(&keys[..50_000]).unwrap();
    let freed = map.flush().unwrap();
    map.validate().unwrap();
    let after = map.stats().unwrap();
    assert_eq!(after.tombstones, 0);
    assert_eq!(before.slabs - after.slabs, freed);
    // 10,000 keys in 64 lists need about 10,000 / 15 + 64 slabs.
    assert!(
        after.slabs <= 10_000 / 15 + 2 * 64,
        "{} slabs after flush",
        after.slabs
    );
    let expected: HashMap<u32, u32> = keys[50_000..].iter().map(|&k| (k, k)).collect();
    assert_eq!(contents(&map), expected);
    // The freed slabs are reused.
    map.insert_many(&keys[..50_000], &keys[..50_000]).unwrap();
    map.validate().unwrap();
    assert_eq!(map.len().unwrap(), 60_000);
    // A flush of a table without tombstones frees nothing and changes nothing.
    assert_eq!(map.flush().unwrap(), 0);
    map.validate().unwrap();
}

#[test]
fn exhaustion_is_an_error_that_leaves_the_map_valid() {
    let Some(gpu) = gpu() else { return };
    let mut map = SlabHashMap::<u32, u32>::with_config(&gpu, small_pool(4)).unwrap();
    let keys = unique_keys::<u32>(9, 40_000, &RESERVED);
    let failed = not_applied(
        map.insert_many(&keys, &keys),
        gpuds_core::Status::POOL_EXHAUSTED,
    );
    map.validate().unwrap();
    let stored = contents(&map);
    assert_eq!(stored.len(), map.len().unwrap());
    assert!(stored.len() >= 1024 * 15 / 2 && stored.len() < 40_000);
    assert!(stored.iter().all(|(k, v)| k == v));
    // The error names exactly the keys that are missing.
    let missing: Vec<usize> = (0..keys.len())
        .filter(|&i| !stored.contains_key(&keys[i]))
        .collect();
    assert_eq!(failed, missing);
    // The map still works: remove, flush, insert what fits.
    let present: Vec<u32> = stored.keys().copied().collect();
    map.remove_many(&present).unwrap();
    map.flush().unwrap();
    map.validate().unwrap();
    map.insert_many(&keys[..1000], &keys[..1000]).unwrap();
    assert_eq!(map.len().unwrap(), 1000);
    map.validate().unwrap();
}

#[test]
fn one_bucket_long_lists_and_many_buckets() {
    let Some(gpu) = gpu() else { return };
    for (buckets, n) in [(1u32, 20_000usize), (1 << 22, 200_000)] {
        let mut map = SlabHashMap::<u32, u32>::with_config(&gpu, small(buckets, true)).unwrap();
        let keys = unique_keys::<u32>(13, n, &RESERVED);
        map.insert_many(&keys, &keys).unwrap();
        map.insert_many(&keys[..n / 2], &keys[..n / 2]).unwrap(); // replaces
        map.validate().unwrap();
        assert_eq!(map.len().unwrap(), n);
        map.remove_many(&keys[..n / 4]).unwrap();
        let got = map.get_many(&keys).unwrap();
        for (i, g) in got.iter().enumerate() {
            assert_eq!(
                *g,
                (i >= n / 4).then_some(keys[i]),
                "B = {buckets}, key #{i}"
            );
        }
        map.validate().unwrap();
        let stats = map.stats().unwrap();
        assert_eq!(stats.buckets, buckets as u64);
        assert_eq!(stats.slab_histogram.iter().sum::<u64>(), buckets as u64);
    }
}

#[test]
fn two_to_the_24_keys() {
    let Some(gpu) = gpu() else { return };
    let n = 1usize << 24;
    let (hits, misses) =
        gpuds_testkit::workload::UniqueKeys::<u32>::new(17, &RESERVED).hits_and_misses(n, 1 << 20);
    let values: Vec<u32> = hits.iter().map(|k| k ^ 0x5555_5555).collect();
    let mut map = SlabHashMap::<u32, u32>::new(&gpu, n).unwrap();
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
    let mut out = stream.alloc_zeros::<u32>(n).unwrap();
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
