//! GPU tests of GpuBTreeMap: operation sequences against `std::collections::BTreeMap`,
//! insertion orders, deep trees, bulk build, bad input and pool exhaustion. Each test
//! skips without a GPU (fails with GPUDS_REQUIRE_GPU=1).

mod common;

use std::collections::BTreeMap;

use common::{run_phased, same_contents, tree};
use gpuds_btree::{BTreeConfig, GpuBTreeMap};
use gpuds_testkit::model::OrderedMapModel;
use gpuds_testkit::strategy::{batches, ordered_op, small_keys, small_values};
use gpuds_testkit::workload::unique_keys;
use proptest::test_runner::{Config, TestRunner};

#[test]
fn small_operations_match_std() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    for tile in [8, 16, 32] {
        let mut t = tree(&gpu, tile);
        assert!(t.is_empty().unwrap());
        t.insert_many(&[5, 0, u32::MAX, 9], &[50, 1, 2, 90])
            .unwrap();
        t.insert_many(&[9], &[91]).unwrap();
        assert_eq!(
            t.get_many(&[0, 5, 9, u32::MAX, 7]).unwrap(),
            vec![Some(1), Some(50), Some(91), Some(2), None]
        );
        assert_eq!(
            t.successor_many(&[0, 5, 9, u32::MAX]).unwrap(),
            vec![Some((5, 50)), Some((9, 91)), Some((u32::MAX, 2)), None]
        );
        let r = t
            .range_many(&[(0, 9), (6, 5), (u32::MAX, u32::MAX), (10, 20)])
            .unwrap();
        assert_eq!(r.get(0), &[(0, 1), (5, 50), (9, 91)]);
        assert!(r.get(1).is_empty(), "an inverted range is empty");
        assert_eq!(r.get(2), &[(u32::MAX, 2)]);
        assert!(r.get(3).is_empty());
        let (capped, counts) = t
            .range_many_capped(&[(0, 9), (6, 5), (u32::MAX, u32::MAX)], 2)
            .unwrap();
        assert_eq!(capped.get(0), &[(0, 1), (5, 50)]);
        assert!(capped.get(1).is_empty());
        assert_eq!(capped.get(2), &[(u32::MAX, 2)]);
        assert_eq!(counts, vec![3, 0, 1]);
        assert_eq!(t.remove_many(&[5, 6]).unwrap(), vec![Some(50), None]);
        t.validate().unwrap();
        assert_eq!(t.to_vec().unwrap(), vec![(0, 1), (9, 91), (u32::MAX, 2)]);
        assert_eq!(t.len().unwrap(), 3);
    }
}

#[test]
fn operation_sequences_match_std() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let keys = small_keys::<u32>(300, &[]);
    let strategy = batches(
        ordered_op(keys, small_values::<u32>(40), Vec::new()),
        6,
        400,
    );
    let mut runner = TestRunner::new(Config {
        cases: 6,
        ..Config::default()
    });
    for tile in [8, 16, 32] {
        runner
            .run(&strategy, |batches| {
                let mut t = tree(&gpu, tile);
                let mut model = OrderedMapModel::new();
                for batch in &batches {
                    run_phased(&mut t, &mut model, batch);
                }
                Ok(())
            })
            .unwrap();
    }
}

fn insert_in_order(gpu: &gpuds_core::Gpu, keys: &[u32], batch: usize) {
    let mut t = tree(gpu, 16);
    let mut model = BTreeMap::new();
    for chunk in keys.chunks(batch) {
        let values: Vec<u32> = chunk.iter().map(|k| k ^ 0x5555).collect();
        t.insert_many(chunk, &values).unwrap();
        model.extend(chunk.iter().copied().zip(values));
        t.validate().unwrap();
    }
    same_contents(&t, &model);
    let got = t.get_many(keys).unwrap();
    assert!(keys.iter().zip(&got).all(|(k, v)| *v == Some(k ^ 0x5555)));
}

#[test]
fn ascending_descending_and_random_insertion() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let n = 1 << 17;
    let ascending: Vec<u32> = (0..n).map(|i| i * 3).collect();
    insert_in_order(&gpu, &ascending, 1 << 13);
    let descending: Vec<u32> = ascending.iter().rev().copied().collect();
    insert_in_order(&gpu, &descending, 1 << 13);
    insert_in_order(&gpu, &unique_keys::<u32>(11, n as usize, &[]), 1 << 14);
}

#[test]
fn splits_grow_the_tree_to_height_six() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let keys = unique_keys::<u32>(12, 3 << 19, &[]);
    let mut t = tree(&gpu, 32);
    t.insert_many(&keys, &keys).unwrap();
    let stats = t.stats().unwrap();
    assert!(
        stats.shape.height >= 6,
        "height {} ({:?})",
        stats.shape.height,
        stats.shape.nodes_per_level
    );
    t.validate().unwrap();
    let got = t.get_many(&keys).unwrap();
    assert!(keys.iter().zip(&got).all(|(k, v)| *v == Some(*k)));
    // Removing half keeps the tree valid (nodes are not merged) and the rest findable.
    let (gone, kept) = keys.split_at(keys.len() / 2);
    assert!(t.remove_many(gone).unwrap().iter().all(Option::is_some));
    t.validate().unwrap();
    assert!(t.get_many(gone).unwrap().iter().all(Option::is_none));
    assert!(t.get_many(kept).unwrap().iter().all(Option::is_some));
    assert_eq!(t.len().unwrap(), kept.len());
}

#[test]
fn bulk_build_has_the_planned_shape_and_takes_later_inserts() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let mut keys = unique_keys::<u32>(13, 100_000, &[]);
    let values: Vec<u32> = keys.iter().map(|k| k.wrapping_mul(7)).collect();
    keys.push(keys[5]); // a repeated key: the last pair wins
    let mut values_dup = values.clone();
    values_dup.push(4242);
    let mut t = tree(&gpu, 16);
    t.bulk_build(&keys, &values_dup).unwrap();
    let mut model: BTreeMap<u32, u32> = keys
        .iter()
        .copied()
        .zip(values_dup.iter().copied())
        .collect();
    assert_eq!(model[&keys[5]], 4242);
    same_contents(&t, &model);
    let stats = t.stats().unwrap();
    let plan = gpuds_btree::validate::bulk_shape(model.len() as u64, t.config().bulk_fill);
    assert_eq!(stats.shape.nodes_per_level, plan.nodes_per_level);
    let more = unique_keys::<u32>(14, 50_000, &[]);
    t.insert_many(&more, &more).unwrap();
    model.extend(more.iter().map(|&k| (k, k)));
    same_contents(&t, &model);
    // A rebuild replaces everything; an empty build leaves an empty tree.
    t.bulk_build(&[3, 1], &[30, 10]).unwrap();
    assert_eq!(t.to_vec().unwrap(), vec![(1, 10), (3, 30)]);
    t.bulk_build(&[], &[]).unwrap();
    assert!(t.is_empty().unwrap());
    t.validate().unwrap();
    // From sorted input: unsorted keys are rejected and nothing changes.
    let stream = gpu.stream();
    let sorted: Vec<u32> = (0..5000).map(|i| i * 3).collect();
    let d = stream.clone_htod(&sorted).unwrap();
    t.bulk_build_sorted_device(&d, &d).unwrap();
    t.validate().unwrap();
    assert_eq!(t.len().unwrap(), sorted.len());
    let bad = stream.clone_htod(&[1u32, 3, 3, 7]).unwrap();
    assert!(t.bulk_build_sorted_device(&bad, &bad).is_err());
    t.validate().unwrap();
    assert_eq!(
        t.get_many(&sorted[..10]).unwrap(),
        sorted[..10].iter().map(|&k| Some(k)).collect::<Vec<_>>()
    );
}

#[test]
fn two_pow_24_keys() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let n = 1usize << 24;
    let keys = unique_keys::<u32>(15, n, &[]);
    let mut t = GpuBTreeMap::<u32, u32>::with_config(
        &gpu,
        BTreeConfig {
            initial_nodes: 1 << 22,
            ..Default::default()
        },
    )
    .unwrap();
    t.insert_many(&keys, &keys).unwrap();
    assert_eq!(t.len().unwrap(), n);
    let got = t.get_many(&keys).unwrap();
    assert!(keys.iter().zip(&got).all(|(k, v)| *v == Some(*k)));
    let stats = t.stats().unwrap();
    println!(
        "2^24 inserted: {:?} fill {:?}",
        stats.shape.nodes_per_level,
        stats.shape.fill_per_level()
    );
    t.bulk_build(&keys, &keys).unwrap();
    t.validate().unwrap();
    let got = t.get_many(&keys[..1 << 20]).unwrap();
    assert!(keys[..1 << 20]
        .iter()
        .zip(&got)
        .all(|(k, v)| *v == Some(*k)));
}

#[test]
fn pool_exhaustion_is_an_error_and_the_tree_stays_valid() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let mut t = GpuBTreeMap::<u32, u32>::with_config(
        &gpu,
        BTreeConfig {
            initial_nodes: 1024,
            max_nodes: 2048,
            ..Default::default()
        },
    )
    .unwrap();
    let keys = unique_keys::<u32>(16, 100_000, &[]);
    let err = t.insert_many(&keys, &keys).unwrap_err();
    assert!(err.is_pool_exhausted(), "{err}");
    t.validate().unwrap();
    let n = t.len().unwrap();
    assert!(n > 0 && n < keys.len());
    let got = t.get_many(&keys).unwrap();
    assert_eq!(got.iter().filter(|v| v.is_some()).count(), n);
    assert!(keys
        .iter()
        .zip(&got)
        .all(|(k, v)| v.is_none_or(|v| v == *k)));
    // At the limit even re-inserting removed keys may fail: insertion splits every full
    // node on its path (proactive splitting). The tree stays valid either way.
    let present: Vec<u32> = keys
        .iter()
        .zip(&got)
        .filter(|(_, v)| v.is_some())
        .map(|(k, _)| *k)
        .collect();
    let some = &present[..100];
    assert!(t.remove_many(some).unwrap().iter().all(Option::is_some));
    if let Err(e) = t.insert_many(some, some) {
        assert!(e.is_pool_exhausted(), "{e}");
    }
    t.validate().unwrap();
    let after = t.get_many(some).unwrap();
    assert!(some
        .iter()
        .zip(&after)
        .all(|(k, v)| v.is_none_or(|v| v == *k)));
}

#[test]
fn mismatched_lengths_are_rejected() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let mut t = tree(&gpu, 16);
    assert!(t.insert_many(&[1, 2], &[1]).is_err());
    assert!(t.bulk_build(&[1], &[]).is_err());
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
