//! GPU robustness tests of GpuBTreeMap: removals racing root and internal splits in mixed
//! batches (checked per key against every serial order of that key's operations), inserts
//! that split every leaf of a full tree, and failed batches that name exactly what they
//! did not apply and leave the tree healthy, for every key and value type (`typed!`).
//! Each test skips without a GPU.

mod common;

use std::collections::{BTreeMap, HashMap, HashSet};

use common::{key, keys, val, vals};
use gpuds_btree::{BTreeConfig, GpuBTreeMap, TreeKey, TreeOp, TreeReply, TreeValue};
use gpuds_testkit::check::check_map;
use gpuds_testkit::model::InsertPolicy;
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};

typed!(
    removals_racing_splits_lose_nothing,
    one_insert_per_full_leaf_grows_the_pool,
    exhaustion_names_exactly_what_was_not_inserted,
    collect_offsets_past_the_outputs_are_cut_and_reported,
);

fn full_tree<K: TreeKey, V: TreeValue>(gpu: &gpuds_core::Gpu) -> GpuBTreeMap<K, V> {
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
fn check_batch<K: TreeKey, V: TreeValue>(
    ops: &[TreeOp<K, V>],
    replies: &[TreeReply<K, V>],
    before: &BTreeMap<K, V>,
    after: &HashMap<K, V>,
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
    let touched: HashSet<K> = ops
        .iter()
        .filter_map(|op| match op {
            TreeOp::Insert(k, _) | TreeOp::Remove(k) => Some(*k),
            _ => None,
        })
        .collect();
    for (k, v) in before {
        if !touched.contains(k) {
            assert_eq!(after.get(k), Some(v), "{what}: untouched key {k:?}");
        }
    }
    let initial: HashMap<K, V> = before.iter().map(|(&k, &v)| (k, v)).collect();
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
fn removals_racing_splits_lose_nothing<K: TreeKey, V: TreeValue>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let mut rng = ChaCha8Rng::seed_from_u64(23);
    let mut t = full_tree::<K, V>(&gpu);
    // (initial keys, repetitions): leaf root, then heights 1, 2 and 3, every node full
    // (P pairs per node: P^(h+1) keys less a few give height h + 1).
    let p = t.node_layout().pairs();
    let size = |h: u32| match h {
        0 => p - 1,
        _ => p.pow(h + 1) - p.pow(h) / 4,
    };
    for (height, (size, reps)) in [
        (size(0), 300usize),
        (size(1), 200),
        (size(2), 60),
        (size(3), 12),
    ]
    .into_iter()
    .enumerate()
    {
        for rep in 0..reps {
            let what = format!("height {height}, repetition {rep}");
            // Key 0 is pivot 0 of every internal node on the left edge: a removal of it
            // that latches a node that is no longer a leaf finds it there.
            let initial: Vec<u32> = (0..size as u32).map(|i| i * 1024).collect();
            t.bulk_build(&keys::<K>(&initial), &vals::<V>(&initial))
                .expect("bulk build");
            assert_eq!(
                t.stats().expect("stats").shape.height as usize,
                height + 1,
                "{what}"
            );
            let before: BTreeMap<K, V> = initial.iter().map(|&k| (key(k), val(k))).collect();
            // Enough operations for every resident warp to start one at once (a warp runs
            // its 32 requests in turn): removals of present keys and of key 0, inserts of
            // new keys between them (rarely the same key twice, so that the per-key check
            // takes its closed form), lookups.
            let mut ops = Vec::with_capacity(4096);
            for _ in 0..4096 {
                let k = initial[rng.random_range(0..initial.len())];
                ops.push(match rng.random_range(0..20u32) {
                    0..2 => TreeOp::Remove(key::<K>(0)),
                    2..7 => TreeOp::Remove(key(k)),
                    7..17 => TreeOp::Insert(
                        key(k + 1 + rng.random_range(0..1023u32)),
                        val(rng.random_range(0..1000)),
                    ),
                    _ => TreeOp::Get(key(k)),
                });
            }
            let replies = t.apply(&ops).unwrap_or_else(|e| panic!("{what}: {e}"));
            t.validate().unwrap_or_else(|e| panic!("{what}: {e}"));
            let after: HashMap<K, V> = t.to_vec().expect("to_vec").into_iter().collect();
            check_batch(&ops, &replies, &before, &after, &what);
        }
    }
}

/// One insert per leaf of a bulk-built tree whose every node is full: each insert splits
/// its leaf and the full nodes above it. Defect: the batch failed with a pool-exhausted
/// error far below `max_nodes` (its node budget was a third of the batch).
fn one_insert_per_full_leaf_grows_the_pool<K: TreeKey, V: TreeValue>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let initial: Vec<u32> = (0..1u32 << 20).map(|i| i * 2).collect();
    for device in [false, true] {
        let mut t = full_tree::<K, V>(&gpu);
        let extra: Vec<u32> = initial
            .iter()
            .step_by(t.node_layout().pairs())
            .map(|k| k + 1)
            .collect();
        let (extra_keys, extra_values) = (keys::<K>(&extra), vals::<V>(&extra));
        t.bulk_build(&keys::<K>(&initial), &vals::<V>(&initial))
            .unwrap();
        if device {
            let stream = gpu.stream();
            let k = stream.clone_htod(&extra_keys).unwrap();
            let v = stream.clone_htod(&extra_values).unwrap();
            t.insert_many_device(&k, &v).unwrap();
            t.check().unwrap();
        } else {
            t.insert_many(&extra_keys, &extra_values).unwrap();
        }
        t.validate().unwrap();
        assert_eq!(t.len().unwrap(), initial.len() + extra.len());
        let got = t.get_many(&extra_keys).unwrap();
        assert!(extra_values.iter().zip(&got).all(|(v, g)| *g == Some(*v)));
        // And the same through a mixed batch.
        let more: Vec<TreeOp<K, V>> = extra
            .iter()
            .map(|k| TreeOp::Insert(key(k + 2), val(7)))
            .collect();
        let replies = t.apply(&more).unwrap();
        assert!(replies
            .iter()
            .all(|r| *r == TreeReply::Inserted { replaced: false }));
        t.validate().unwrap();
    }
}

fn small_pool<K: TreeKey, V: TreeValue>(gpu: &gpuds_core::Gpu) -> GpuBTreeMap<K, V> {
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
fn exhaustion_names_exactly_what_was_not_inserted<K: TreeKey, V: TreeValue>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let mut t = small_pool::<K, V>(&gpu);
    let raw = gpuds_testkit::workload::unique_keys::<u32>(5, 60_000, &[]);
    let keys = keys::<K>(&raw);
    let values: Vec<V> = raw.iter().map(|k| val(k ^ 0x5555)).collect();
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
    let same = vals::<V>(&raw);
    let v = stream.clone_htod(&same).unwrap();
    t.insert_many_device(&k, &v).unwrap();
    let got = t.get_many(&keys[..1000]).unwrap();
    for (i, (k, v)) in keys[..1000].iter().zip(got).enumerate() {
        if let Some(v) = v {
            assert!(v == same[i] || model.get(k) == Some(&v), "key {k:?}");
        }
    }
    // Removals free room in leaves; their answers and the tree follow the oracle.
    let _ = t.check();
    model = t.to_vec().unwrap().into_iter().collect();
    let gone: Vec<K> = model.keys().copied().step_by(3).collect();
    let removed = t.remove_many(&gone).unwrap();
    for (k, r) in gone.iter().zip(removed) {
        assert_eq!(r, model.remove(k), "remove {k:?}");
    }
    common::same_contents(&t, &model);
    // Replacing present keys' values needs no node when their leaves are not full; the
    // call either succeeds or names what it did not apply.
    let present: Vec<K> = model.keys().copied().take(500).collect();
    let new_values: Vec<V> = (0..present.len() as u32).map(|i| val(i * 3 + 1)).collect();
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
    let fresh = common::keys::<K>(&gpuds_testkit::workload::unique_keys::<u32>(6, 20_000, &[]));
    let ops: Vec<TreeOp<K, V>> = fresh
        .iter()
        .filter(|k| !model.contains_key(k))
        .map(|&k| TreeOp::Insert(k, val(1)))
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
    let model: BTreeMap<K, V> = keys[..1000]
        .iter()
        .copied()
        .zip(values[..1000].iter().copied())
        .collect();
    common::same_contents(&t, &model);
}

/// The collect pass trusts no offset: a query whose offset and count pass the outputs is
/// cut to them and reported; nothing is written outside (memcheck runs this test too).
fn collect_offsets_past_the_outputs_are_cut_and_reported<K: TreeKey, V: TreeValue>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let mut t = common::tree::<K, V>(&gpu, 16);
    let raw: Vec<u32> = (0..1000).collect();
    t.insert_many(&keys::<K>(&raw), &vals::<V>(&raw)).unwrap();
    let stream = gpu.stream();
    let lo = stream.clone_htod(&keys::<K>(&[0, 100, 200])).unwrap();
    let hi = stream.clone_htod(&keys::<K>(&[9, 109, 209])).unwrap();
    let offsets = stream.clone_htod(&[0u32, 8, 1 << 30]).unwrap();
    let counts = stream.clone_htod(&[5u32, 5, 5]).unwrap();
    let mut out_k = stream.alloc_zeros::<K>(10).unwrap();
    let mut out_v = stream.alloc_zeros::<V>(10).unwrap();
    t.range_collect_device(&lo, &hi, &offsets, &counts, &mut out_k, &mut out_v)
        .unwrap();
    let err = t.check().unwrap_err();
    assert!(err.to_string().contains("out of bounds"), "{err}");
    let got = stream.clone_dtoh(&out_k).unwrap();
    assert_eq!(&got[..5], keys::<K>(&[0, 1, 2, 3, 4]).as_slice());
    assert_eq!(&got[5..8], &[K::from_u64(0); 3]);
    assert_eq!(&got[8..], keys::<K>(&[100, 101]).as_slice());
    assert_eq!(
        &stream.clone_dtoh(&out_v).unwrap()[8..],
        vals::<V>(&[100, 101]).as_slice()
    );
    // The tree and later calls are unaffected.
    t.validate().unwrap();
    assert_eq!(t.range_count_many(&[(key(0), key(9))]).unwrap(), vec![10]);
}
