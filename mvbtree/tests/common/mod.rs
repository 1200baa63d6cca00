//! Code shared by the GPU tests of VersionedBTreeMap: the typed test keys and values of
//! gpuds-btree's tests (reused, not copied), the oracle's answers to every query, and the
//! checks of a map and of a snapshot against a `std::collections::BTreeMap`.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};

use gpuds_core::Gpu;
use gpuds_mvbtree::node::UNSET_TS;
use gpuds_mvbtree::{BTreeConfig, MvOp, MvReply, Snapshot, TreeKey, TreeValue, VersionedBTreeMap};
use rand::rngs::ChaCha8Rng;
use rand::RngExt;

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

/// The test number x of a test key (the inverse of `common::key`).
pub fn raw<K: TreeKey>(k: K) -> u32 {
    let x = k.to_u64();
    (if std::mem::size_of::<K>() == 8 {
        x >> 32
    } else {
        x
    }) as u32
}

/// Shuffles in place (Fisher-Yates).
pub fn shuffle<T>(v: &mut [T], rng: &mut ChaCha8Rng) {
    for i in (1..v.len()).rev() {
        v.swap(i, rng.random_range(0..=i));
    }
}

/// How a changed key becomes visible: from its first snapshot on (insert) or until it
/// (erase).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Change {
    Insert,
    Erase,
}

/// What one Range or Get reply saw (a Get of k is the range [k, k]).
struct View<K, V> {
    i: usize,
    ts: u32,
    lo: K,
    hi: K,
    got: BTreeMap<K, V>,
}

/// Checks the query replies (Range, RangeCount, Get) of one `apply` batch whose updates
/// all `change` the keys in `changed`, against `before` (the contents when the batch
/// started): every reply is exact at its snapshot, i.e. for every changed key there is
/// one timestamp from which on (insert) or before which (erase) every query whose range
/// holds the key sees it; so two queries with the same timestamp agree on their overlap
/// and a larger timestamp sees a superset (inserts) or a subset (erases) of a smaller
/// one's pairs. Returns the number of distinct Range answers.
pub fn check_replies<K: TreeKey, V: TreeValue>(
    ops: &[MvOp<K, V>],
    replies: &[MvReply<K, V>],
    before: &Model<K, V>,
    changed: &BTreeMap<K, V>,
    change: Change,
    round: usize,
) -> usize {
    // The state a reply at ts implies for a changed key: present or not.
    let seen = |present: bool| match change {
        Change::Insert => present,
        Change::Erase => !present,
    };
    // What each Range and Get reply saw: (index, snapshot, range, pairs); a Get of k is
    // the range [k, k].
    let mut views: Vec<View<K, V>> = Vec::new();
    let mut answers = BTreeSet::new();
    for (i, (op, r)) in ops.iter().zip(replies).enumerate() {
        let (lo, hi, got) = match *op {
            MvOp::Range(lo, hi) => {
                assert_eq!(
                    r.count as usize,
                    r.pairs.len(),
                    "round {round}: query {i} count"
                );
                assert!(
                    r.pairs.windows(2).all(|w| w[0].0 < w[1].0),
                    "round {round}: query {i} not in key order"
                );
                answers.insert(r.pairs.iter().map(|p| raw(p.0)).collect::<Vec<u32>>());
                (lo, hi, r.pairs.iter().copied().collect::<BTreeMap<K, V>>())
            }
            MvOp::Get(k) => {
                assert_eq!(
                    r.found,
                    r.value.is_some(),
                    "round {round}: query {i} found bit"
                );
                (k, k, r.value.map(|v| (k, v)).into_iter().collect())
            }
            _ => continue,
        };
        assert_ne!(
            r.ts, UNSET_TS,
            "round {round}: query {i} reports no snapshot"
        );
        for (&k, &v) in &got {
            assert!(
                lo <= k && k <= hi,
                "round {round}: query {i} key {k:?} outside its range"
            );
            let want = before.get(&k).or(changed.get(&k));
            assert_eq!(Some(&v), want, "round {round}: query {i} pair of key {k:?}");
        }
        for (&k, _) in before.range(lo..=hi) {
            if !changed.contains_key(&k) {
                assert!(
                    got.contains_key(&k),
                    "round {round}: query {i} misses untouched {k:?}"
                );
            }
        }
        views.push(View {
            i,
            ts: r.ts,
            lo,
            hi,
            got,
        });
    }
    // First (insert) or first missing (erase) timestamp of every changed key that some
    // reply saw changed.
    let mut first: BTreeMap<K, u32> = BTreeMap::new();
    for v in &views {
        for (&k, _) in changed.range(v.lo..=v.hi) {
            if seen(v.got.contains_key(&k)) {
                let t = first.entry(k).or_insert(v.ts);
                *t = (*t).min(v.ts);
            }
        }
    }
    for View { i, ts, lo, hi, got } in &views {
        for (&k, _) in changed.range(*lo..=*hi) {
            let changed_at = first.get(&k).is_some_and(|t| t <= ts);
            assert_eq!(
                seen(got.contains_key(&k)),
                changed_at,
                "round {round}: query {i} at snapshot {ts} {} key {k:?}, which a query at snapshot {:?} saw {}",
                if got.contains_key(&k) { "sees" } else { "misses" },
                first.get(&k),
                if change == Change::Insert { "inserted" } else { "erased" },
            );
        }
    }
    // Counts: equal at one snapshot and range, monotone in the snapshot.
    let mut counts: BTreeMap<(K, K), BTreeMap<u32, u32>> = BTreeMap::new();
    for (i, (op, r)) in ops.iter().zip(replies).enumerate() {
        let (MvOp::Range(lo, hi) | MvOp::RangeCount(lo, hi)) = *op else {
            continue;
        };
        let at = counts.entry((lo, hi)).or_default();
        let c = *at.entry(r.ts).or_insert(r.count);
        assert_eq!(
            c, r.count,
            "round {round}: query {i}: two counts at snapshot {}",
            r.ts
        );
        let base = before.range(lo..=hi).count() as u32;
        let delta = changed.range(lo..=hi).count() as u32;
        let (least, most) = match change {
            Change::Insert => (base, base + delta),
            Change::Erase => (base - delta, base),
        };
        assert!(
            (least..=most).contains(&r.count),
            "round {round}: query {i} count {} outside {least} ..= {most}",
            r.count
        );
    }
    for ((lo, hi), by_ts) in &counts {
        let c: Vec<u32> = by_ts.values().copied().collect();
        let ordered = match change {
            Change::Insert => c.windows(2).all(|w| w[0] <= w[1]),
            Change::Erase => c.windows(2).all(|w| w[0] >= w[1]),
        };
        assert!(
            ordered,
            "round {round}: counts of {:?} by snapshot: {by_ts:?}",
            (lo, hi)
        );
    }
    answers.len()
}
