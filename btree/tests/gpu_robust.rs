//! GPU robustness tests of GpuBTreeMap: removals racing root and internal splits in mixed
//! batches (checked per key against every serial order of that key's operations), inserts
//! that split every leaf of a full tree, and failed batches that name exactly what they
//! did not apply and leave the tree healthy. Each test skips without a GPU.

mod common;

use std::collections::{BTreeMap, HashMap, HashSet};

use gpuds_btree::{BTreeConfig, GpuBTreeMap, TreeOp, TreeReply};
use gpuds_testkit::check::check_map;
use gpuds_testkit::model::InsertPolicy;
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};

fn full_tree(gpu: &gpuds_core::Gpu) -> GpuBTreeMap<u32, u32> {
    GpuBTreeMap::with_config(
        gpu,
        BTreeConfig {
            bulk_fill: 14,
            initial_nodes: 1024,
            ..Default::default()
        },
    )
    .expect("tree")
}

/// Checks the replies of a mixed batch of point operations against the tree before and
/// after: every key's replies and final state are explained by some serial order of its
/// operations, and keys the batch does not touch are unchanged.
fn check_batch(
    ops: &[TreeOp<u32, u32>],
    replies: &[TreeReply<u32, u32>],
    before: &BTreeMap<u32, u32>,
    after: &HashMap<u32, u32>,
    what: &str,
) {
    let mut points = Vec::with_capacity(ops.len());
    let mut point_replies = Vec::with_capacity(ops.len());
    for (op, reply) in ops.iter().zip(replies) {
        let (p, r) = common::point(*op, *reply)
            .unwrap_or_else(|| panic!("{what}: reply {reply:?} to {op:?}"));
        points.push(p);
        point_replies.push(r);
    }
    let touched: HashSet<u32> = ops
        .iter()
        .filter_map(|op| match op {
            TreeOp::Insert(k, _) | TreeOp::Remove(k) => Some(*k),
            _ => None,
        })
        .collect();
    for (k, v) in before {
        if !touched.contains(k) {
            assert_eq!(after.get(k), Some(v), "{what}: untouched key {k}");
        }
    }
    let initial: HashMap<u32, u32> = before.iter().map(|(&k, &v)| (k, v)).collect();
    check_map(
        InsertPolicy::Replace,
        &points,
        &point_replies,
        &initial,
        after,
    )
    .unwrap_or_else(|m| panic!("{what}: {m}"));
}

/// Removals of present keys racing inserts that split the root (and, on taller trees,
/// internal nodes), on trees of heights 0 to 3 whose nodes are all full, so that every
/// insert splits. Defect: a removal that read the root as a leaf latched it after it had
/// become internal and removed pivot 0.
#[test]
fn removals_racing_splits_lose_nothing() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let mut rng = ChaCha8Rng::seed_from_u64(23);
    let mut t = full_tree(&gpu);
    // (initial keys, repetitions): leaf root, then heights 1, 2 and 3.
    for (height, (size, reps)) in [(13usize, 300usize), (190, 200), (2_700, 60), (38_000, 12)]
        .into_iter()
        .enumerate()
    {
        for rep in 0..reps {
            let what = format!("height {height}, repetition {rep}");
            // Key 0 is pivot 0 of every internal node on the left edge: a removal of it
            // that latches a node that is no longer a leaf finds it there.
            let initial: Vec<u32> = (0..size as u32).map(|i| i * 1024).collect();
            t.bulk_build(&initial, &initial).expect("bulk build");
            assert_eq!(
                t.stats().expect("stats").shape.height as usize,
                height + 1,
                "{what}"
            );
            let before: BTreeMap<u32, u32> = initial.iter().map(|&k| (k, k)).collect();
            // Enough operations for every resident warp to start one at once (a warp runs
            // its 32 requests in turn): removals of present keys and of key 0, inserts of
            // new keys between them (rarely the same key twice, so that the per-key check
            // takes its closed form), lookups.
            let mut ops = Vec::with_capacity(4096);
            for _ in 0..4096 {
                let k = initial[rng.random_range(0..initial.len())];
                ops.push(match rng.random_range(0..20u32) {
                    0..2 => TreeOp::Remove(0),
                    2..7 => TreeOp::Remove(k),
                    7..17 => TreeOp::Insert(
                        k + 1 + rng.random_range(0..1023u32),
                        rng.random_range(0..1000),
                    ),
                    _ => TreeOp::Get(k),
                });
            }
            let replies = t.apply(&ops).unwrap_or_else(|e| panic!("{what}: {e}"));
            t.validate().unwrap_or_else(|e| panic!("{what}: {e}"));
            let after: HashMap<u32, u32> = t.to_vec().expect("to_vec").into_iter().collect();
            check_batch(&ops, &replies, &before, &after, &what);
        }
    }
}

/// One insert per leaf of a bulk-built tree whose every node is full: each insert splits
/// its leaf and the full nodes above it. Defect: the batch failed with a pool-exhausted
/// error far below `max_nodes` (its node budget was a third of the batch).
#[test]
fn one_insert_per_full_leaf_grows_the_pool() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let initial: Vec<u32> = (0..1u32 << 20).map(|i| i * 2).collect();
    let extra: Vec<u32> = initial.iter().step_by(14).map(|k| k + 1).collect();
    for device in [false, true] {
        let mut t = full_tree(&gpu);
        t.bulk_build(&initial, &initial).unwrap();
        if device {
            let stream = gpu.stream();
            let k = stream.clone_htod(&extra).unwrap();
            t.insert_many_device(&k, &k).unwrap();
            t.check().unwrap();
        } else {
            t.insert_many(&extra, &extra).unwrap();
        }
        t.validate().unwrap();
        assert_eq!(t.len().unwrap(), initial.len() + extra.len());
        let got = t.get_many(&extra).unwrap();
        assert!(extra.iter().zip(&got).all(|(k, v)| *v == Some(*k)));
        // And the same through a mixed batch.
        let more: Vec<TreeOp<u32, u32>> = extra.iter().map(|k| TreeOp::Insert(k + 2, 7)).collect();
        let replies = t.apply(&more).unwrap();
        assert!(replies
            .iter()
            .all(|r| *r == TreeReply::Inserted { replaced: false }));
        t.validate().unwrap();
    }
}

fn small_pool(gpu: &gpuds_core::Gpu) -> GpuBTreeMap<u32, u32> {
    GpuBTreeMap::with_config(
        gpu,
        BTreeConfig {
            initial_nodes: 256,
            max_nodes: 2048,
            ..Default::default()
        },
    )
    .unwrap()
}

/// At the pool's maximum a batch fails with the indices of exactly the pairs it did not
/// insert; every other pair is there, and later calls answer as the oracle does.
#[test]
fn exhaustion_names_exactly_what_was_not_inserted() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let mut t = small_pool(&gpu);
    let keys = gpuds_testkit::workload::unique_keys::<u32>(5, 60_000, &[]);
    let values: Vec<u32> = keys.iter().map(|k| k ^ 0x5555).collect();
    let err = t.insert_many(&keys, &values).unwrap_err();
    assert!(err.is_pool_exhausted(), "{err}");
    let missing: HashSet<usize> = err.not_applied().iter().copied().collect();
    assert!(!missing.is_empty() && missing.len() < keys.len());
    t.validate().unwrap();
    let mut model = BTreeMap::new();
    for (i, (&k, &v)) in keys.iter().zip(&values).enumerate() {
        if !missing.contains(&i) {
            model.insert(k, v);
        }
    }
    common::same_contents(&t, &model);

    // A later read reports no earlier failure, even one left by a device batch.
    let stream = gpu.stream();
    let k = stream.clone_htod(&keys).unwrap();
    t.insert_many_device(&k, &k).unwrap();
    let got = t.get_many(&keys[..1000]).unwrap();
    for (k, v) in keys[..1000].iter().zip(got) {
        if let Some(v) = v {
            assert!(v == *k || model.get(k) == Some(&v), "key {k}");
        }
    }
    // Removals free room in leaves; their answers and the tree follow the oracle.
    let _ = t.check();
    model = t.to_vec().unwrap().into_iter().collect();
    let gone: Vec<u32> = model.keys().copied().step_by(3).collect();
    let removed = t.remove_many(&gone).unwrap();
    for (k, r) in gone.iter().zip(removed) {
        assert_eq!(r, model.remove(k), "remove {k}");
    }
    common::same_contents(&t, &model);
    // Replacing present keys' values needs no node when their leaves are not full; the
    // call either succeeds or names what it did not apply.
    let present: Vec<u32> = model.keys().copied().take(500).collect();
    let new_values: Vec<u32> = present.iter().map(|k| k.wrapping_mul(3)).collect();
    let skipped: HashSet<usize> = match t.insert_many(&present, &new_values) {
        Ok(()) => HashSet::new(),
        Err(e) => {
            assert!(e.is_pool_exhausted(), "{e}");
            e.not_applied().iter().copied().collect()
        }
    };
    for (i, (k, v)) in present.iter().zip(&new_values).enumerate() {
        if !skipped.contains(&i) {
            model.insert(*k, *v);
        }
    }
    common::same_contents(&t, &model);
    // A mixed batch at the limit: the operations it names took no effect.
    let fresh = gpuds_testkit::workload::unique_keys::<u32>(6, 20_000, &[]);
    let ops: Vec<TreeOp<u32, u32>> = fresh
        .iter()
        .filter(|k| !model.contains_key(k))
        .map(|&k| TreeOp::Insert(k, 1))
        .collect();
    match t.apply(&ops) {
        Ok(_) => panic!("a full pool took {} new keys", ops.len()),
        Err(e) => {
            assert!(e.is_pool_exhausted(), "{e}");
            let skipped: HashSet<usize> = e.not_applied().iter().copied().collect();
            for (i, op) in ops.iter().enumerate() {
                if let (TreeOp::Insert(k, v), false) = (op, skipped.contains(&i)) {
                    model.insert(*k, *v);
                }
            }
        }
    }
    common::same_contents(&t, &model);
    // Clearing makes room again: everything works as on a new tree.
    t.clear().unwrap();
    t.insert_many(&keys[..1000], &values[..1000]).unwrap();
    let model: BTreeMap<u32, u32> = keys[..1000]
        .iter()
        .copied()
        .zip(values[..1000].iter().copied())
        .collect();
    common::same_contents(&t, &model);
}

/// The collect pass trusts no offset: a query whose offset and count pass the outputs is
/// cut to them and reported; nothing is written outside (memcheck runs this test too).
#[test]
fn collect_offsets_past_the_outputs_are_cut_and_reported() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let mut t = common::tree(&gpu, 16);
    let keys: Vec<u32> = (0..1000).collect();
    t.insert_many(&keys, &keys).unwrap();
    let stream = gpu.stream();
    let lo = stream.clone_htod(&[0u32, 100, 200]).unwrap();
    let hi = stream.clone_htod(&[9u32, 109, 209]).unwrap();
    let offsets = stream.clone_htod(&[0u32, 8, 1 << 30]).unwrap();
    let counts = stream.clone_htod(&[5u32, 5, 5]).unwrap();
    let mut out_k = stream.alloc_zeros::<u32>(10).unwrap();
    let mut out_v = stream.alloc_zeros::<u32>(10).unwrap();
    t.range_collect_device(&lo, &hi, &offsets, &counts, &mut out_k, &mut out_v)
        .unwrap();
    let err = t.check().unwrap_err();
    assert!(err.to_string().contains("out of bounds"), "{err}");
    let got = stream.clone_dtoh(&out_k).unwrap();
    assert_eq!(&got[..5], &[0, 1, 2, 3, 4]);
    assert_eq!(&got[5..8], &[0; 3]);
    assert_eq!(&got[8..], &[100, 101]);
    // The tree and later calls are unaffected.
    t.validate().unwrap();
    assert_eq!(t.range_count_many(&[(0, 9)]).unwrap(), vec![10]);
}
