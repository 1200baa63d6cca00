//! Mixed concurrent batches (`apply`, §3.5.6) with concurrency-tolerant checks: point
//! operations must match some serial order of each key's operations; counts and
//! successors over keys the batch does not update must be exact. Every test runs for
//! every key and value type (`typed!`).

mod common;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::Bound;

use common::{key, val};
use gpuds_btree::{BTreeConfig, GpuBTreeMap, TreeKey, TreeOp, TreeReply, TreeValue};
use gpuds_testkit::check::check_map;
use gpuds_testkit::model::InsertPolicy;
use gpuds_testkit::workload::unique_keys;
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};

fn batch<K: TreeKey, V: TreeValue>(
    rng: &mut ChaCha8Rng,
    universe: &[u32],
    n: usize,
) -> Vec<TreeOp<K, V>> {
    (0..n)
        .map(|_| {
            let x = universe[rng.random_range(0..universe.len())];
            let k = key(x);
            match rng.random_range(0..100u32) {
                0..30 => TreeOp::Insert(k, val(rng.random_range(1..1000u32))),
                30..50 => TreeOp::Remove(k),
                50..70 => TreeOp::Get(k),
                70..85 => TreeOp::Successor(k),
                _ => TreeOp::Count(k, key(x.saturating_add(rng.random_range(0..50_000u32)))),
            }
        })
        .collect()
}

typed!(
    mixed_batches_are_explained_by_serial_orders,
    mixed_batches_on_256_byte_nodes,
    one_large_device_batch_on_both_node_sizes,
);

/// The benchmark's insertion: 2^22 fresh keys into an empty tree in ONE device batch (every
/// warp splits nodes that others are reading), on 128- and 256-byte nodes, after which the
/// status is clean, the tree valid and every key found with its value (a reader that
/// followed a torn two-line node looped to RETRY_LIMIT here or read an illegal address).
fn one_large_device_batch_on_both_node_sizes<K: TreeKey, V: TreeValue>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let n = 1usize << 22;
    let xs = unique_keys::<u32>(22, n, &[]);
    let ks: Vec<K> = common::keys(&xs);
    let vs: Vec<V> = common::vals_of(&ks);
    let stream = gpu.stream().clone();
    for wide_node_bytes in [128, 256] {
        for tile in [8, 16] {
            let mut t = GpuBTreeMap::<K, V>::with_config(
                &gpu,
                BTreeConfig {
                    initial_nodes: n as u64 / 2,
                    max_nodes: n as u64 * 2,
                    query_tile: tile,
                    wide_node_bytes,
                    ..Default::default()
                },
            )
            .unwrap();
            let (dk, dv) = (
                stream.clone_htod(&ks).unwrap(),
                stream.clone_htod(&vs).unwrap(),
            );
            t.insert_many_device(&dk, &dv).unwrap();
            t.check()
                .unwrap_or_else(|e| panic!("{wide_node_bytes}-byte nodes, tile {tile}: {e}"));
            t.validate().unwrap();
            assert_eq!(t.len().unwrap(), n);
            let got = t.get_many(&ks[..1 << 18]).unwrap();
            assert!(
                ks.iter()
                    .zip(&vs)
                    .zip(&got)
                    .all(|((_, v), g)| *g == Some(*v)),
                "{wide_node_bytes}-byte nodes, tile {tile}: a key was not found with its value"
            );
        }
    }
}

fn mixed_batches_are_explained_by_serial_orders<K: TreeKey, V: TreeValue>() {
    mixed_batches::<K, V>(128);
}

/// The same on nodes of 256 bytes (two lines written and read by one instruction of 16
/// lanes): a reader that saw one line of a write without the other would break a reply
/// or the validation here.
fn mixed_batches_on_256_byte_nodes<K: TreeKey, V: TreeValue>() {
    mixed_batches::<K, V>(256);
}

fn mixed_batches<K: TreeKey, V: TreeValue>(wide_node_bytes: u32) {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let mut rng = ChaCha8Rng::seed_from_u64(21);
    let universe: Vec<u32> = (0..6000u32).map(|i| i * 977 + 3).collect();
    let mut t = common::tree_of::<K, V>(&gpu, 16, wide_node_bytes);
    let initial: Vec<u32> = universe.iter().copied().step_by(2).collect();
    t.insert_many(&common::keys(&initial), &common::vals(&initial))
        .unwrap();
    for round in 0..6 {
        let before: BTreeMap<K, V> = t.to_vec().unwrap().into_iter().collect();
        let ops = batch::<K, V>(&mut rng, &universe, 8000);
        let replies = t.apply(&ops).unwrap();
        t.validate().unwrap();
        let after: HashMap<K, V> = t.to_vec().unwrap().into_iter().collect();

        let mut points = Vec::new();
        let mut point_replies = Vec::new();
        let updated: HashSet<K> = ops
            .iter()
            .filter_map(|op| match op {
                TreeOp::Insert(k, _) | TreeOp::Remove(k) => Some(*k),
                _ => None,
            })
            .collect();
        for (op, reply) in ops.iter().zip(&replies) {
            if let Some((p, r)) = common::point(*op, *reply) {
                points.push(p);
                point_replies.push(r);
                continue;
            }
            match (*op, *reply) {
                (TreeOp::Count(lo, hi), TreeReply::Count(c)) => {
                    let stable = before
                        .range(lo..=hi)
                        .filter(|(k, _)| !updated.contains(k))
                        .count();
                    let touched = updated.iter().filter(|k| (lo..=hi).contains(*k)).count();
                    assert!(
                        (stable..=stable + touched).contains(&(c as usize)),
                        "round {round}: count [{lo:?}, {hi:?}] = {c}, stable {stable}, touched {touched}"
                    );
                }
                (TreeOp::Successor(k), TreeReply::Successor(got)) => {
                    // Exact when nothing in (k, next stable key] is updated by the batch.
                    let next = before.range((Bound::Excluded(k), Bound::Unbounded)).next();
                    let hi = next.map_or(K::MAX, |(nk, _)| *nk);
                    let quiet = !updated.iter().any(|u| *u > k && *u <= hi);
                    if quiet {
                        assert_eq!(
                            got,
                            next.map(|(a, b)| (*a, *b)),
                            "round {round}: successor of {k:?}"
                        );
                    } else if let Some((sk, _)) = got {
                        assert!(sk > k, "round {round}: successor {sk:?} of {k:?}");
                    }
                }
                (op, reply) => panic!("reply {reply:?} to {op:?}"),
            }
        }
        let initial_map: HashMap<K, V> = before.into_iter().collect();
        let verdict = check_map(
            InsertPolicy::Replace,
            &points,
            &point_replies,
            &initial_map,
            &after,
        )
        .unwrap_or_else(|m| panic!("round {round}: {m}"));
        assert!(verdict.keys > 0);
    }
}
