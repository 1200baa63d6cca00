//! Code shared by the GPU tests of VersionedBTreeMap: the typed test keys and values of
//! gpuds-btree's tests (reused, not copied), the oracle's answers to every query, and the
//! checks of a map and of a snapshot against a `std::collections::BTreeMap`.
#![allow(dead_code)]

use std::collections::BTreeMap;

use gpuds_core::Gpu;
use gpuds_mvbtree::{BTreeConfig, Snapshot, TreeKey, TreeValue, VersionedBTreeMap};

/// gpuds-btree's test helpers: `typed!` (every key and value type), `key` / `val` (64-bit
/// test keys that differ only in their high words), `val_of`.
#[path = "../../../btree/tests/common/mod.rs"]
mod btree_common;

#[allow(unused_imports)]
pub use btree_common::{key, keys, pair, val, val_of, vals};

/// Runs a generic test body for u32/u32 and u64/u64 only (the heavier tests):
/// `two_types!(body)` makes a module `body` with the tests `u32_u32` and `u64_u64`.
#[macro_export]
macro_rules! two_types {
    ($($body:ident),* $(,)?) => {
        $(
            mod $body {
                #[test]
                fn u32_u32() {
                    super::$body::<u32, u32>()
                }
                #[test]
                fn u64_u64() {
                    super::$body::<u64, u64>()
                }
            }
        )*
    };
}

/// The oracle: the newest state, and a copy of it for every snapshot.
pub type Model<K, V> = BTreeMap<K, V>;

/// An empty map with room for `nodes` nodes to start with.
pub fn map_with_nodes<K: TreeKey, V: TreeValue>(gpu: &Gpu, nodes: u64) -> VersionedBTreeMap<K, V> {
    VersionedBTreeMap::with_config(
        gpu,
        BTreeConfig {
            initial_nodes: nodes,
            ..Default::default()
        },
    )
    .expect("map")
}

/// The pairs of `model` with keys in `[lo, hi]`, in key order (empty when lo > hi).
pub fn model_range<K: TreeKey, V: TreeValue>(model: &Model<K, V>, lo: K, hi: K) -> Vec<(K, V)> {
    if lo > hi {
        return Vec::new();
    }
    model.range(lo..=hi).map(|(&k, &v)| (k, v)).collect()
}

/// The first pair of `model` with a key greater than `k`.
pub fn model_successor<K: TreeKey, V: TreeValue>(model: &Model<K, V>, k: K) -> Option<(K, V)> {
    use std::ops::Bound::{Excluded, Unbounded};
    model
        .range((Excluded(k), Unbounded))
        .next()
        .map(|(&k, &v)| (k, v))
}

/// Every pair of `model` in key order.
pub fn model_pairs<K: TreeKey, V: TreeValue>(model: &Model<K, V>) -> Vec<(K, V)> {
    model.iter().map(|(&k, &v)| (k, v)).collect()
}

/// The newest state equals the model (to_vec, len, get_many of `probes`), and the map is
/// valid.
pub fn same_contents<K: TreeKey, V: TreeValue>(
    map: &VersionedBTreeMap<K, V>,
    model: &Model<K, V>,
    probes: &[K],
) {
    map.validate().expect("valid map");
    let got = map.to_vec().expect("to_vec");
    let want = model_pairs(model);
    assert_eq!(got.len(), want.len(), "to_vec: number of pairs");
    if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
        panic!(
            "to_vec differs from the model at position {i}: got {:?}, want {:?}",
            got[i], want[i]
        );
    }
    assert_eq!(map.len().expect("len"), want.len(), "len");
    let values = map.get_many(probes).expect("get_many");
    for (k, v) in probes.iter().zip(&values) {
        assert_eq!(*v, model.get(k).copied(), "get_many of key {k:?}");
    }
}

/// Every query at `snap` answers as `model` (the oracle as it was when the snapshot was
/// taken): to_vec_at, get_many_at and successor_many_at of `probes`, range_many_at and
/// range_count_many_at of `ranges` (inverted ones included: empty, 0).
pub fn snapshot_matches<K: TreeKey, V: TreeValue>(
    map: &VersionedBTreeMap<K, V>,
    snap: &Snapshot,
    model: &Model<K, V>,
    probes: &[K],
    ranges: &[(K, K)],
) {
    let ts = snap.timestamp();
    let all = map.to_vec_at(snap).expect("to_vec_at");
    let want = model_pairs(model);
    assert_eq!(
        all.len(),
        want.len(),
        "to_vec_at snapshot {ts}: number of pairs"
    );
    if let Some(i) = (0..all.len()).find(|&i| all[i] != want[i]) {
        panic!(
            "to_vec_at snapshot {ts} differs at position {i}: got {:?}, want {:?}",
            all[i], want[i]
        );
    }
    let values = map.get_many_at(snap, probes).expect("get_many_at");
    for (k, v) in probes.iter().zip(&values) {
        assert_eq!(
            *v,
            model.get(k).copied(),
            "get_many_at snapshot {ts}, key {k:?}"
        );
    }
    let next = map
        .successor_many_at(snap, probes)
        .expect("successor_many_at");
    for (k, s) in probes.iter().zip(&next) {
        assert_eq!(
            *s,
            model_successor(model, *k),
            "successor_many_at snapshot {ts}, key {k:?}"
        );
    }
    let got = map.range_many_at(snap, ranges).expect("range_many_at");
    let counts = map
        .range_count_many_at(snap, ranges)
        .expect("range_count_many_at");
    assert_eq!(
        got.len(),
        ranges.len(),
        "range_many_at: one answer per range"
    );
    assert_eq!(
        counts.len(),
        ranges.len(),
        "range_count_many_at: one count per range"
    );
    for (q, &(lo, hi)) in ranges.iter().enumerate() {
        let want = model_range(model, lo, hi);
        assert_eq!(
            got[q],
            want,
            "range_many_at snapshot {ts}, range {:?}",
            (lo, hi)
        );
        assert_eq!(
            counts[q] as usize,
            want.len(),
            "range_count_many_at snapshot {ts}, range {:?}",
            (lo, hi)
        );
    }
}

/// Ranges over test keys `0 ..= top` for [`snapshot_matches`]: a few ordinary ones, one
/// of a single key, an inverted one and the whole key space.
pub fn probe_ranges<K: TreeKey>(top: u32) -> Vec<(K, K)> {
    let q = top / 4;
    vec![
        (key(0), key(q)),
        (key(q), key(3 * q)),
        (key(q + 1), key(q + 1)),
        (key(2 * q + 3), key(top)),
        (key(3 * q), key(q)),
        (K::from_u64(0), K::from_u64(u64::MAX)),
    ]
}
