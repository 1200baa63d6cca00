//! GPU tests of GpuBTreeMap: operation sequences against `std::collections::BTreeMap`,
//! insertion orders, deep trees, bulk build, bad input and pool exhaustion, for every key
//! and value type (`typed!`: `<test>::u64_u32`, ...). Each test skips without a GPU
//! (fails with GPUDS_REQUIRE_GPU=1).

mod common;

use std::collections::BTreeMap;

use common::{key, keys, pair, run_phased, same_contents, tree, val, val_of, vals};
use gpuds_btree::{BTreeConfig, GpuBTreeMap, TreeKey, TreeValue};
use gpuds_testkit::model::OrderedMapModel;
use gpuds_testkit::strategy::{batches, ordered_op, small_keys, small_values};
use gpuds_testkit::workload::unique_keys;
use proptest::test_runner::{Config, TestRunner};

typed!(
    small_operations_match_std,
    operation_sequences_match_std,
    ascending_descending_and_random_insertion,
    splits_grow_the_tree_to_height_six,
    bulk_build_has_the_planned_shape_and_takes_later_inserts,
    two_pow_24_keys,
    pool_exhaustion_is_an_error_and_the_tree_stays_valid,
    mismatched_lengths_are_rejected,
    extreme_keys_and_values,
    operation_sequences_on_256_byte_nodes,
);

fn small_operations_match_std<K: TreeKey, V: TreeValue>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let (k, v) = (key::<K>, val::<V>);
    let top = u32::MAX;
    for tile in [8, 16, 32] {
        let mut t = tree::<K, V>(&gpu, tile);
        assert!(t.is_empty().unwrap());
        t.insert_many(&keys(&[5, 0, top, 9]), &vals(&[50, 1, 2, 90]))
            .unwrap();
        t.insert_many(&[k(9)], &[v(91)]).unwrap();
        assert_eq!(
            t.get_many(&keys(&[0, 5, 9, top, 7])).unwrap(),
            vec![Some(v(1)), Some(v(50)), Some(v(91)), Some(v(2)), None]
        );
        assert_eq!(
            t.successor_many(&keys(&[0, 5, 9, top])).unwrap(),
            vec![
                Some(pair(5, 50)),
                Some(pair(9, 91)),
                Some(pair(top, 2)),
                None
            ]
        );
        let r = t
            .range_many(&[(k(0), k(9)), (k(6), k(5)), (k(top), k(top)), (k(10), k(20))])
            .unwrap();
        assert_eq!(r.get(0), &[pair(0, 1), pair(5, 50), pair(9, 91)]);
        assert!(r.get(1).is_empty(), "an inverted range is empty");
        assert_eq!(r.get(2), &[pair(top, 2)]);
        assert!(r.get(3).is_empty());
        let (capped, counts) = t
            .range_many_capped(&[(k(0), k(9)), (k(6), k(5)), (k(top), k(top))], 2)
            .unwrap();
        assert_eq!(capped.get(0), &[pair(0, 1), pair(5, 50)]);
        assert!(capped.get(1).is_empty());
        assert_eq!(capped.get(2), &[pair(top, 2)]);
        assert_eq!(counts, vec![3, 0, 1]);
        assert_eq!(
            t.remove_many(&keys(&[5, 6])).unwrap(),
            vec![Some(v(50)), None]
        );
        t.validate().unwrap();
        assert_eq!(
            t.to_vec().unwrap(),
            vec![pair(0, 1), pair(9, 91), pair(top, 2)]
        );
        assert_eq!(t.len().unwrap(), 3);
    }
}

/// Keys at both ends of the type's range, and keys and values that differ only in their
/// high words (at 64 bits): each is its own key, none is reserved.
fn extreme_keys_and_values<K: TreeKey, V: TreeValue>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let max = K::MAX.to_u64();
    let raw: Vec<u64> = vec![
        0,
        1,
        2,
        max,
        max - 1,
        max - 2,
        max >> 1,
        (max >> 1) + 1,
        // differ from each other (and from 0, 1) only above bit 31 when K is u64
        1 << 32,
        (1 << 32) | 1,
        (1 << 33) | 1,
        u64::MAX ^ (1 << 63),
        u64::MAX << 32,
    ];
    let mut unique = raw
        .iter()
        .map(|&x| K::from_u64(x))
        .collect::<std::collections::BTreeSet<K>>()
        .into_iter()
        .collect::<Vec<K>>();
    let vmax = <V as gpuds_core::DeviceType>::from_u64(u64::MAX).to_u64();
    let values: Vec<V> = (0..unique.len() as u64)
        .map(|i| V::from_u64(if i % 2 == 0 { vmax - i } else { (i << 32) | i }))
        .collect();
    for tile in [8, 16, 32] {
        let mut t = tree::<K, V>(&gpu, tile);
        t.insert_many(&unique, &values).unwrap();
        let model: BTreeMap<K, V> = unique.iter().copied().zip(values.iter().copied()).collect();
        same_contents(&t, &model);
        let got = t.get_many(&unique).unwrap();
        assert_eq!(got, values.iter().map(|&v| Some(v)).collect::<Vec<_>>());
        let succ = t.successor_many(&unique).unwrap();
        for (i, s) in succ.iter().enumerate() {
            let want = model
                .range((
                    std::ops::Bound::Excluded(unique[i]),
                    std::ops::Bound::Unbounded,
                ))
                .next();
            assert_eq!(
                *s,
                want.map(|(&k, &v)| (k, v)),
                "successor of {:?}",
                unique[i]
            );
        }
        let all = t.range_many(&[(K::from_u64(0), K::MAX)]).unwrap();
        assert_eq!(all.get(0).len(), unique.len());
        // Keys next to the stored ones (the same high word, the low word one off) are absent.
        let near: Vec<K> = unique
            .iter()
            .map(|k| K::from_u64(k.to_u64() ^ 1))
            .filter(|k| !model.contains_key(k))
            .collect();
        assert!(t.get_many(&near).unwrap().iter().all(Option::is_none));
        t.bulk_build(&unique, &values).unwrap();
        same_contents(&t, &model);
        unique.reverse();
        assert!(t.remove_many(&unique).unwrap().iter().all(Option::is_some));
        t.validate().unwrap();
        assert!(t.is_empty().unwrap());
        unique.reverse();
    }
}

fn operation_sequences_match_std<K: TreeKey, V: TreeValue>() {
    sequences_match_std::<K, V>(BTreeConfig::default().wide_node_bytes);
}

/// The other layout of 64-bit pairs (`BTreeConfig::wide_node_bytes`: 14 pairs in 256
/// bytes); u32/u32 trees ignore the knob and run the test as above.
fn operation_sequences_on_256_byte_nodes<K: TreeKey, V: TreeValue>() {
    sequences_match_std::<K, V>(256);
}

fn sequences_match_std<K: TreeKey, V: TreeValue>(wide_node_bytes: u32) {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let ks = keys::<K>(&small_keys::<u32>(300, &[]));
    let vs = vals::<V>(&small_values::<u32>(40));
    let strategy = batches(ordered_op(ks, vs, Vec::new()), 6, 400);
    let mut runner = TestRunner::new(Config {
        cases: 6,
        ..Config::default()
    });
    for tile in [8, 16, 32] {
        runner
            .run(&strategy, |batches| {
                let mut t = common::tree_of::<K, V>(&gpu, tile, wide_node_bytes);
                let mut model = OrderedMapModel::new();
                for batch in &batches {
                    run_phased(&mut t, &mut model, batch);
                }
                Ok(())
            })
            .unwrap();
    }
}

fn insert_in_order<K: TreeKey, V: TreeValue>(gpu: &gpuds_core::Gpu, raw: &[u32], batch: usize) {
    let keys = keys::<K>(raw);
    let mut t = tree::<K, V>(gpu, 16);
    let mut model = BTreeMap::new();
    for chunk in keys.chunks(batch) {
        let values: Vec<V> = chunk.iter().map(|&k| val_of::<K, V>(k)).collect();
        t.insert_many(chunk, &values).unwrap();
        model.extend(chunk.iter().copied().zip(values));
        t.validate().unwrap();
    }
    same_contents(&t, &model);
    let got = t.get_many(&keys).unwrap();
    assert!(keys
        .iter()
        .zip(&got)
        .all(|(&k, v)| *v == Some(val_of::<K, V>(k))));
}

fn ascending_descending_and_random_insertion<K: TreeKey, V: TreeValue>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let n = 1 << 17;
    let ascending: Vec<u32> = (0..n).map(|i| i * 3).collect();
    insert_in_order::<K, V>(&gpu, &ascending, 1 << 13);
    let descending: Vec<u32> = ascending.iter().rev().copied().collect();
    insert_in_order::<K, V>(&gpu, &descending, 1 << 13);
    insert_in_order::<K, V>(&gpu, &unique_keys::<u32>(11, n as usize, &[]), 1 << 14);
}

fn splits_grow_the_tree_to_height_six<K: TreeKey, V: TreeValue>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let keys = keys::<K>(&unique_keys::<u32>(12, 3 << 19, &[]));
    let values: Vec<V> = keys.iter().map(|&k| val_of::<K, V>(k)).collect();
    let mut t = tree::<K, V>(&gpu, 32);
    t.insert_many(&keys, &values).unwrap();
    let stats = t.stats().unwrap();
    assert!(
        stats.shape.height >= 6,
        "height {} ({:?})",
        stats.shape.height,
        stats.shape.nodes_per_level
    );
    t.validate().unwrap();
    let got = t.get_many(&keys).unwrap();
    assert!(keys
        .iter()
        .zip(&got)
        .all(|(&k, v)| *v == Some(val_of::<K, V>(k))));
    // Removing half keeps the tree valid (nodes are not merged) and the rest findable.
    let (gone, kept) = keys.split_at(keys.len() / 2);
    assert!(t.remove_many(gone).unwrap().iter().all(Option::is_some));
    t.validate().unwrap();
    assert!(t.get_many(gone).unwrap().iter().all(Option::is_none));
    assert!(t.get_many(kept).unwrap().iter().all(Option::is_some));
    assert_eq!(t.len().unwrap(), kept.len());
}

fn bulk_build_has_the_planned_shape_and_takes_later_inserts<K: TreeKey, V: TreeValue>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let mut keys = keys::<K>(&unique_keys::<u32>(13, 100_000, &[]));
    let values: Vec<V> = keys.iter().map(|&k| val_of::<K, V>(k)).collect();
    keys.push(keys[5]); // a repeated key: the last pair wins
    let mut values_dup = values.clone();
    values_dup.push(val(4242));
    let mut t = tree::<K, V>(&gpu, 16);
    t.bulk_build(&keys, &values_dup).unwrap();
    let mut model: BTreeMap<K, V> = keys
        .iter()
        .copied()
        .zip(values_dup.iter().copied())
        .collect();
    assert_eq!(model[&keys[5]], val(4242));
    same_contents(&t, &model);
    let stats = t.stats().unwrap();
    let pairs = t.node_layout().pairs();
    let plan = gpuds_btree::validate::bulk_shape(
        model.len() as u64,
        t.config().fill_for(pairs),
        pairs as u32,
    );
    assert_eq!(stats.shape.nodes_per_level, plan.nodes_per_level);
    let more = common::keys::<K>(&unique_keys::<u32>(14, 50_000, &[]));
    let more_values: Vec<V> = more.iter().map(|&k| val_of::<K, V>(k)).collect();
    t.insert_many(&more, &more_values).unwrap();
    model.extend(more.iter().copied().zip(more_values));
    same_contents(&t, &model);
    // A rebuild replaces everything; an empty build leaves an empty tree.
    t.bulk_build(&common::keys(&[3, 1]), &vals(&[30, 10]))
        .unwrap();
    assert_eq!(t.to_vec().unwrap(), vec![pair(1, 10), pair(3, 30)]);
    t.bulk_build(&[], &[]).unwrap();
    assert!(t.is_empty().unwrap());
    t.validate().unwrap();
    // From sorted input: unsorted keys are rejected and nothing changes.
    let stream = gpu.stream();
    let sorted: Vec<u32> = (0..5000).map(|i| i * 3).collect();
    let (dk, dv) = (
        stream.clone_htod(&common::keys::<K>(&sorted)).unwrap(),
        stream.clone_htod(&vals::<V>(&sorted)).unwrap(),
    );
    t.bulk_build_sorted_device(&dk, &dv).unwrap();
    t.validate().unwrap();
    assert_eq!(t.len().unwrap(), sorted.len());
    let bad = stream
        .clone_htod(&common::keys::<K>(&[1, 3, 3, 7]))
        .unwrap();
    let bad_values = stream.clone_htod(&vals::<V>(&[1, 3, 3, 7])).unwrap();
    assert!(t.bulk_build_sorted_device(&bad, &bad_values).is_err());
    t.validate().unwrap();
    assert_eq!(
        t.get_many(&common::keys::<K>(&sorted[..10])).unwrap(),
        sorted[..10]
            .iter()
            .map(|&k| Some(val::<V>(k)))
            .collect::<Vec<_>>()
    );
}

fn two_pow_24_keys<K: TreeKey, V: TreeValue>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let n = 1usize << 24;
    let keys = keys::<K>(&unique_keys::<u32>(15, n, &[]));
    let values: Vec<V> = keys.iter().map(|&k| val_of::<K, V>(k)).collect();
    let mut t = GpuBTreeMap::<K, V>::with_config(
        &gpu,
        BTreeConfig {
            initial_nodes: 1 << 22,
            ..Default::default()
        },
    )
    .unwrap();
    for (ks, vs) in keys.chunks(1 << 22).zip(values.chunks(1 << 22)) {
        t.insert_many(ks, vs).unwrap();
        t.validate().unwrap();
    }
    assert_eq!(t.len().unwrap(), n);
    let got = t.get_many(&keys).unwrap();
    assert!(keys
        .iter()
        .zip(&got)
        .all(|(&k, v)| *v == Some(val_of::<K, V>(k))));
    let stats = t.stats().unwrap();
    println!(
        "2^24 inserted: {:?} fill {:?}",
        stats.shape.nodes_per_level,
        stats.shape.fill_per_level()
    );
    t.bulk_build(&keys, &values).unwrap();
    t.validate().unwrap();
    let got = t.get_many(&keys[..1 << 20]).unwrap();
    assert!(keys[..1 << 20]
        .iter()
        .zip(&got)
        .all(|(&k, v)| *v == Some(val_of::<K, V>(k))));
}

fn pool_exhaustion_is_an_error_and_the_tree_stays_valid<K: TreeKey, V: TreeValue>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let mut t = GpuBTreeMap::<K, V>::with_config(
        &gpu,
        BTreeConfig {
            initial_nodes: 1024,
            max_nodes: 2048,
            ..Default::default()
        },
    )
    .unwrap();
    let keys = keys::<K>(&unique_keys::<u32>(16, 100_000, &[]));
    let values: Vec<V> = keys.iter().map(|&k| val_of::<K, V>(k)).collect();
    let err = t.insert_many(&keys, &values).unwrap_err();
    assert!(err.is_pool_exhausted(), "{err}");
    t.validate().unwrap();
    let n = t.len().unwrap();
    assert!(n > 0 && n < keys.len());
    let got = t.get_many(&keys).unwrap();
    assert_eq!(got.iter().filter(|v| v.is_some()).count(), n);
    assert!(keys
        .iter()
        .zip(&got)
        .all(|(&k, v)| v.is_none_or(|v| v == val_of::<K, V>(k))));
    // At the limit even re-inserting removed keys may fail: insertion splits every full
    // node on its path (proactive splitting). The tree stays valid either way.
    let present: Vec<K> = keys
        .iter()
        .zip(&got)
        .filter(|(_, v)| v.is_some())
        .map(|(k, _)| *k)
        .collect();
    let some = &present[..100];
    let some_values: Vec<V> = some.iter().map(|&k| val_of::<K, V>(k)).collect();
    assert!(t.remove_many(some).unwrap().iter().all(Option::is_some));
    if let Err(e) = t.insert_many(some, &some_values) {
        assert!(e.is_pool_exhausted(), "{e}");
    }
    t.validate().unwrap();
    let after = t.get_many(some).unwrap();
    assert!(some
        .iter()
        .zip(&after)
        .all(|(&k, v)| v.is_none_or(|v| v == val_of::<K, V>(k))));
}

fn mismatched_lengths_are_rejected<K: TreeKey, V: TreeValue>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let mut t = tree::<K, V>(&gpu, 16);
    assert!(t.insert_many(&keys(&[1, 2]), &vals(&[1])).is_err());
    assert!(t.bulk_build(&keys(&[1]), &[]).is_err());
    assert!(t.is_empty().unwrap());
}

#[test]
fn sorted_array_baseline_matches_std() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let mut sa = gpuds_btree::SortedArray::new(&gpu).unwrap();
    let keys = unique_keys::<u32>(17, 10_000, &[]);
    let stream = gpu.stream();
    let (mut k, mut v) = (
        stream.clone_htod(&keys).unwrap(),
        stream.clone_htod(&keys).unwrap(),
    );
    sa.build_device(&mut k, &mut v).unwrap();
    let more = unique_keys::<u32>(18, 1000, &[]);
    let (mk, mv) = (
        stream.clone_htod(&more).unwrap(),
        stream.clone_htod(&more).unwrap(),
    );
    sa.insert_device(&mk, &mv).unwrap();
    let model: BTreeMap<u32, u32> = keys.iter().chain(&more).map(|&k| (k, k)).collect();
    assert_eq!(sa.len(), model.len());
    let probes: Vec<u32> = keys.iter().take(500).flat_map(|&k| [k, k ^ 1]).collect();
    let got = sa.get_many(&probes).unwrap();
    for (p, g) in probes.iter().zip(&got) {
        assert_eq!(*g, model.get(p).copied());
    }
    let (lo, hi): (Vec<u32>, Vec<u32>) =
        probes.iter().map(|&p| (p, p.wrapping_add(1 << 24))).unzip();
    let (dlo, dhi) = (
        stream.clone_htod(&lo).unwrap(),
        stream.clone_htod(&hi).unwrap(),
    );
    let mut counts = stream.alloc_zeros::<u32>(lo.len()).unwrap();
    sa.range_count_device(&dlo, &dhi, &mut counts).unwrap();
    let counts = stream.clone_dtoh(&counts).unwrap();
    for i in 0..lo.len() {
        let want = if lo[i] > hi[i] {
            0
        } else {
            model.range(lo[i]..=hi[i]).count()
        };
        assert_eq!(counts[i] as usize, want);
    }
}
