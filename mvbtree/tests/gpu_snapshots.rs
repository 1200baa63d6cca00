//! GPU tests of long-lived snapshots: proptest sequences of update batches (in place, out
//! of place, and both mixed) with snapshots taken and dropped at random points, every
//! live snapshot checked against the oracle as it was when taken after every batch; the
//! version collector; foreign snapshots; the memory bound after a long run. Every test
//! skips without a GPU (fails with GPUDS_REQUIRE_GPU=1).

mod common;

use std::collections::BTreeSet;

use common::{
    key, keys, map_with_nodes, model_pairs, probe_ranges, same_contents, snapshot_matches, val,
    val_of, vals, Model,
};
use gpuds_mvbtree::{Error, Snapshot, TreeKey, TreeValue, Updates, VersionedBTreeMap};
use gpuds_testkit::workload::unique_keys;
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};

two_types!(
    snapshot_sequences_in_place,
    snapshot_sequences_out_of_place,
    snapshot_sequences_mixed_modes,
    memory_after_a_long_run_is_within_five_percent_of_a_fresh_map,
);

typed!(
    version_collection_frees_what_no_snapshot_reads,
    a_snapshot_of_another_map_is_refused,
);

/// Test keys of the sequences: 0 ..= KEYS.
const KEYS: u32 = 500;

/// One step of a sequence.
#[derive(Clone, Debug)]
enum Step {
    /// Insert or replace (key, value seed); out of place when true (mixed runs only).
    Insert(Vec<(u32, u32)>, bool),
    /// Remove (present or absent keys).
    Remove(Vec<u32>, bool),
    /// Take a snapshot and hold it.
    Take,
    /// Drop the live snapshot at this index (modulo the number held).
    Drop(usize),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (vec((0..=KEYS, any::<u32>()), 1..60), any::<bool>())
            .prop_map(|(p, m)| Step::Insert(p, m)),
        2 => (vec(0..=KEYS, 1..40), any::<bool>()).prop_map(|(k, m)| Step::Remove(k, m)),
        2 => Just(Step::Take),
        1 => any::<usize>().prop_map(Step::Drop),
    ]
}

fn snapshot_sequences_in_place<K: TreeKey, V: TreeValue>() {
    snapshot_sequences::<K, V>(Some(Updates::InPlace));
}

fn snapshot_sequences_out_of_place<K: TreeKey, V: TreeValue>() {
    snapshot_sequences::<K, V>(Some(Updates::OutOfPlace));
}

fn snapshot_sequences_mixed_modes<K: TreeKey, V: TreeValue>() {
    snapshot_sequences::<K, V>(None);
}

/// The mode of a step: the fixed one, or the step's own.
fn mode_of(fixed: Option<Updates>, out_of_place: bool) -> Updates {
    fixed.unwrap_or(if out_of_place {
        Updates::OutOfPlace
    } else {
        Updates::InPlace
    })
}

/// Runs proptest sequences (16 cases, a few hundred operations each) on a map that
/// starts with every other key; after every step the map is valid, its newest state is
/// the model's, and every live snapshot answers every query as the model did when the
/// snapshot was taken. At the end every snapshot is dropped and the collector leaves no
/// older version.
fn snapshot_sequences<K: TreeKey, V: TreeValue>(fixed: Option<Updates>) {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let probes: Vec<K> = (0..=KEYS + 1).map(key).collect();
    let ranges = probe_ranges::<K>(KEYS);
    let mut runner = TestRunner::new(Config {
        cases: 16,
        max_shrink_iters: 64,
        ..Config::default()
    });
    runner
        .run(&vec(step(), 12..28), |steps| {
            // A small pool, grown by the batches (and copied whole by every validate).
            let mut map = map_with_nodes::<K, V>(&gpu, 1 << 10);
            let base: Vec<u32> = (0..=KEYS).step_by(2).collect();
            map.insert_many(&keys(&base), &vals(&base)).unwrap();
            let mut model: Model<K, V> = keys(&base).into_iter().zip(vals(&base)).collect();
            let mut live: Vec<(Snapshot, Model<K, V>)> = Vec::new();
            let mut last_ts: Option<u32> = None;
            for (i, s) in steps.iter().enumerate() {
                match s {
                    Step::Insert(pairs, m) => {
                        // Distinct keys per batch (a repeated key has no defined winner).
                        let mut seen = BTreeSet::new();
                        let pairs: Vec<(u32, u32)> =
                            pairs.iter().copied().filter(|p| seen.insert(p.0)).collect();
                        let ks: Vec<K> = pairs.iter().map(|p| key(p.0)).collect();
                        let vs: Vec<V> = pairs.iter().map(|p| val(p.1)).collect();
                        map.insert_many_with(&ks, &vs, mode_of(fixed, *m)).unwrap();
                        model.extend(ks.into_iter().zip(vs));
                    }
                    Step::Remove(raw, m) => {
                        let raw: BTreeSet<u32> = raw.iter().copied().collect();
                        let ks: Vec<K> = raw.iter().map(|&x| key(x)).collect();
                        let got = map.remove_many_with(&ks, mode_of(fixed, *m)).unwrap();
                        for (k, g) in ks.iter().zip(&got) {
                            assert_eq!(*g, model.remove(k), "step {i}: remove of {k:?}");
                        }
                    }
                    Step::Take => {
                        let snap = map.snapshot().unwrap();
                        let ts = snap.timestamp();
                        assert!(
                            last_ts.is_none_or(|t| ts > t),
                            "step {i}: snapshot {ts} after snapshot {last_ts:?}"
                        );
                        last_ts = Some(ts);
                        live.push((snap, model.clone()));
                    }
                    Step::Drop(at) => {
                        if !live.is_empty() {
                            let n = live.len();
                            live.remove(at % n);
                        }
                    }
                }
                let want: Vec<u32> = live.iter().map(|(s, _)| s.timestamp()).collect();
                assert_eq!(map.live_snapshots(), want, "step {i}: live snapshots");
                same_contents(&map, &model, &probes);
                for (snap, at) in &live {
                    snapshot_matches(&map, snap, at, &probes, &ranges);
                }
            }
            live.clear();
            map.collect_versions().unwrap();
            let stats = map.stats().unwrap();
            assert_eq!(
                stats.versions, 0,
                "older versions after all snapshots dropped: {stats:?}"
            );
            assert_eq!(stats.units_in_use, stats.heads, "{stats:?}");
            assert_eq!(stats.live_snapshots, 0);
            same_contents(&map, &model, &probes);
            Ok(())
        })
        .unwrap();
}

/// Versions exist exactly while a snapshot needs them: none without a snapshot (in place),
/// some after a change while one is held (in both modes), none after it is dropped and
/// collected (and `reclaimed_units` grows); a clone keeps them until both handles drop;
/// out-of-place batches with no snapshot leave nothing behind either.
fn version_collection_frees_what_no_snapshot_reads<K: TreeKey, V: TreeValue>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let raw: Vec<u32> = (0..3000).map(|i| i * 5).collect();
    let ks = keys::<K>(&raw);
    let mut map = VersionedBTreeMap::<K, V>::new(&gpu).unwrap();
    map.insert_many(&ks, &vals(&raw)).unwrap();
    let mut model: Model<K, V> = ks.iter().copied().zip(vals(&raw)).collect();
    let stats = map.stats().unwrap();
    assert_eq!(
        (stats.versions, stats.units_in_use),
        (0, stats.heads),
        "{stats:?}"
    );
    for mode in [Updates::InPlace, Updates::OutOfPlace] {
        let reclaimed = map.stats().unwrap().reclaimed_units;
        let snap = map.snapshot().unwrap();
        let at = model.clone();
        assert_eq!(
            map.stats().unwrap().oldest_live_snapshot,
            Some(snap.timestamp())
        );
        // Change every leaf: replace a value in each and remove some keys.
        let changed: Vec<K> = ks.iter().copied().step_by(4).collect();
        let new_values: Vec<V> = changed.iter().map(|_| val(7)).collect();
        map.insert_many_with(&changed, &new_values, mode).unwrap();
        model.extend(changed.iter().copied().zip(new_values));
        let gone: Vec<K> = ks.iter().copied().skip(1).step_by(9).collect();
        map.remove_many_with(&gone, mode).unwrap();
        for k in &gone {
            model.remove(k);
        }
        let held = map.stats().unwrap();
        assert!(
            held.versions > 0,
            "{mode:?}: no version kept for a live snapshot: {held:?}"
        );
        snapshot_matches(&map, &snap, &at, &ks[..500], &probe_ranges::<K>(15_000));
        let twin = snap.clone();
        drop(snap);
        map.collect_versions().unwrap();
        assert_eq!(
            map.stats().unwrap().versions,
            held.versions,
            "{mode:?}: versions freed while a clone of the snapshot is live"
        );
        snapshot_matches(&map, &twin, &at, &ks[..500], &probe_ranges::<K>(15_000));
        drop(twin);
        let freed = map.collect_versions().unwrap();
        let after = map.stats().unwrap();
        assert_eq!(
            after.versions, 0,
            "{mode:?}: versions after the drop: {after:?}"
        );
        assert_eq!(after.units_in_use, after.heads, "{mode:?}: {after:?}");
        assert_eq!(
            freed, held.versions,
            "{mode:?}: units freed against versions held"
        );
        assert!(
            after.reclaimed_units >= reclaimed + held.versions,
            "{mode:?}: reclaimed_units {} did not grow by {} from {reclaimed}",
            after.reclaimed_units,
            held.versions
        );
        assert_eq!(after.oldest_live_snapshot, None);
        same_contents(&map, &model, &ks[..500]);
    }
    // Out of place with no snapshot: the batch's own collection frees its versions.
    let reclaimed = map.stats().unwrap().reclaimed_units;
    let changed: Vec<K> = ks.iter().copied().step_by(3).collect();
    let new_values: Vec<V> = changed.iter().map(|_| val(9)).collect();
    map.insert_many_with(&changed, &new_values, Updates::OutOfPlace)
        .unwrap();
    model.extend(changed.iter().copied().zip(new_values));
    let after = map.stats().unwrap();
    assert_eq!(
        after.versions, 0,
        "an out-of-place batch with no snapshot left versions"
    );
    assert!(
        after.reclaimed_units > reclaimed,
        "an out-of-place batch reclaimed nothing ({reclaimed} -> {})",
        after.reclaimed_units
    );
    same_contents(&map, &model, &ks[..500]);
}

fn a_snapshot_of_another_map_is_refused<K: TreeKey, V: TreeValue>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let mut a = VersionedBTreeMap::<K, V>::new(&gpu).unwrap();
    let mut b = VersionedBTreeMap::<K, V>::new(&gpu).unwrap();
    a.insert_many(&keys(&[1, 2]), &vals(&[1, 2])).unwrap();
    b.insert_many(&keys(&[1, 2]), &vals(&[1, 2])).unwrap();
    let s = a.snapshot().unwrap();
    let foreign = |r: Result<(), Error>, what: &str| {
        assert!(
            matches!(r, Err(Error::ForeignSnapshot)),
            "{what} at another map's snapshot: {r:?}"
        );
    };
    let k = keys::<K>(&[1]);
    foreign(b.get_many_at(&s, &k).map(drop), "get_many_at");
    foreign(b.successor_many_at(&s, &k).map(drop), "successor_many_at");
    foreign(
        b.range_many_at(&s, &[(k[0], k[0])]).map(drop),
        "range_many_at",
    );
    foreign(
        b.range_count_many_at(&s, &[(k[0], k[0])]).map(drop),
        "range_count_many_at",
    );
    foreign(b.to_vec_at(&s).map(drop), "to_vec_at");
    assert!(b.live_snapshots().is_empty(), "b registered a's snapshot");
    // Its own map still answers at it.
    b.remove_many(&k).unwrap();
    a.remove_many(&k).unwrap();
    assert_eq!(a.get_many_at(&s, &k).unwrap(), vec![Some(val(1))]);
    assert_eq!(a.to_vec_at(&s).unwrap().len(), 2);
}

/// A long run of batches (new keys, removals and their reinsertion, both modes) with
/// snapshots taken and dropped at random: once all are dropped and collected, the units
/// in use are within 5 % of a fresh map given the same keys by insert_many in the same
/// order, and of a twin map that ran the same batches without snapshots.
fn memory_after_a_long_run_is_within_five_percent_of_a_fresh_map<K: TreeKey, V: TreeValue>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let mut rng = ChaCha8Rng::seed_from_u64(31);
    let all = keys::<K>(&unique_keys::<u32>(32, 40_000, &[]));
    let batches: Vec<&[K]> = all.chunks(5000).collect();
    let mut map = map_with_nodes::<K, V>(&gpu, 1 << 14);
    let mut twin = map_with_nodes::<K, V>(&gpu, 1 << 14);
    let mut model = Model::new();
    let mut live: Vec<(Snapshot, Model<K, V>)> = Vec::new();
    let mut removed: Vec<K> = Vec::new();
    let mut max_versions = 0;
    for round in 0..24 {
        let mode = if rng.random_range(0..2) == 0 {
            Updates::InPlace
        } else {
            Updates::OutOfPlace
        };
        let mut insert: Vec<K> = std::mem::take(&mut removed);
        if round % 3 == 0 {
            if let Some(b) = batches.get(round / 3) {
                insert.extend_from_slice(b);
            }
        }
        if !insert.is_empty() {
            let vs: Vec<V> = insert.iter().map(|&k| val_of::<K, V>(k)).collect();
            map.insert_many_with(&insert, &vs, mode).unwrap();
            twin.insert_many(&insert, &vs).unwrap();
            model.extend(insert.iter().copied().zip(vs));
        }
        let present: Vec<K> = model.keys().copied().collect();
        if round < 23 && !present.is_empty() {
            let start = rng.random_range(0..present.len());
            removed = present
                .iter()
                .cycle()
                .skip(start)
                .step_by(7)
                .take(present.len() / 20)
                .copied()
                .collect::<BTreeSet<K>>()
                .into_iter()
                .collect();
            let got = map.remove_many_with(&removed, mode).unwrap();
            assert!(
                got.iter().all(Option::is_some),
                "round {round}: a present key was absent"
            );
            twin.remove_many(&removed).unwrap();
            for k in &removed {
                model.remove(k);
            }
        }
        if rng.random_range(0..3) == 0 && !live.is_empty() {
            let n = live.len();
            live.remove(rng.random_range(0..n));
        }
        if rng.random_range(0..2) == 0 && live.len() < 4 {
            live.push((map.snapshot().unwrap(), model.clone()));
        }
        map.validate()
            .unwrap_or_else(|e| panic!("round {round}: {e}"));
        max_versions = max_versions.max(map.stats().unwrap().versions);
        if round % 6 == 5 {
            for (snap, at) in &live {
                let got = map.to_vec_at(snap).unwrap();
                assert!(
                    got == model_pairs(at),
                    "round {round}: snapshot {} changed",
                    snap.timestamp()
                );
            }
        }
    }
    assert!(removed.is_empty());
    let sample: Vec<K> = all.iter().copied().step_by(37).collect();
    same_contents(&map, &model, &sample);
    same_contents(&twin, &model, &sample);
    live.clear();
    map.collect_versions().unwrap();
    let stats = map.stats().unwrap();
    assert_eq!(stats.versions, 0, "{stats:?}");
    let mut fresh = map_with_nodes::<K, V>(&gpu, 1 << 14);
    for b in &batches {
        let vs: Vec<V> = b.iter().map(|&k| val_of::<K, V>(k)).collect();
        fresh.insert_many(b, &vs).unwrap();
    }
    same_contents(&fresh, &model, &sample);
    let (fresh_units, twin_units) = (
        fresh.stats().unwrap().units_in_use,
        twin.stats().unwrap().units_in_use,
    );
    let units = stats.units_in_use;
    println!(
        "after the run: {units} units (up to {max_versions} older versions during it); twin {twin_units}; fresh {fresh_units}"
    );
    assert!(
        units * 100 <= twin_units * 105,
        "{units} units in use against {twin_units} in the twin run without snapshots"
    );
    assert!(
        units * 100 <= fresh_units * 105,
        "{units} units in use against {fresh_units} in a fresh map of the same contents \
         (the twin run without snapshots has {twin_units})"
    );
    assert!(max_versions > 0, "the run never kept a version");
}
