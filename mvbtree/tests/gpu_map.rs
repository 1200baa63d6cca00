//! GPU tests of VersionedBTreeMap's newest state against `std::collections::BTreeMap`:
//! operation batches, insertion orders down to height >= 4, bulk build, bad input, pool
//! exhaustion, and 2^24 keys (also with a snapshot held). Every test skips without a GPU
//! (fails with GPUDS_REQUIRE_GPU=1); `typed!` tests are `<test>::u64_u64` and so on.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::{
    key, keys, map_with_nodes, pair, probe_ranges, same_contents, snapshot_matches, val, val_of,
    vals, Model,
};
use gpuds_mvbtree::{BTreeConfig, Error, MvOp, TreeKey, TreeValue, Updates, VersionedBTreeMap};
use gpuds_testkit::workload::unique_keys;
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};

typed!(
    operation_batches_match_std,
    ascending_descending_and_random_insertion_reach_height_four,
    bulk_build_replaces_the_contents,
    bad_input_is_rejected_or_empty,
    pool_exhaustion_names_exactly_the_pairs_not_inserted,
);

/// Keys of the random batches: 0 ..= KEY_SPACE.
const KEY_SPACE: u32 = 6000;

/// Random batches of inserts (new keys and replacements), removes (present and absent
/// keys) and gets, in both update modes, each checked against the model, with the whole
/// newest state compared and the map validated after every batch.
fn operation_batches_match_std<K: TreeKey, V: TreeValue>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let mut rng = ChaCha8Rng::seed_from_u64(20);
    let mut map = map_with_nodes::<K, V>(&gpu, 1 << 10);
    assert!(map.is_empty().unwrap());
    let mut model = Model::new();
    let all: Vec<K> = (0..=KEY_SPACE).map(key).collect();
    for batch in 0..24 {
        let mode = if batch % 3 == 2 {
            Updates::OutOfPlace
        } else {
            Updates::InPlace
        };
        // Distinct keys per batch: a key repeated in one batch has no defined winner.
        let picked: BTreeSet<u32> = (0..1500).map(|_| rng.random_range(0..=KEY_SPACE)).collect();
        let mut picked: Vec<u32> = picked.into_iter().collect();
        // Shuffle so that each batch runs in random key order.
        for i in (1..picked.len()).rev() {
            picked.swap(i, rng.random_range(0..=i));
        }
        let ks = keys::<K>(&picked);
        if batch % 4 == 3 {
            let got = map.remove_many_with(&ks, mode).unwrap();
            for (k, g) in ks.iter().zip(&got) {
                assert_eq!(*g, model.remove(k), "remove of {k:?} in batch {batch}");
            }
        } else {
            let stamp = rng.random_range(0..1000u32);
            let vs: Vec<V> = picked.iter().map(|&x| val(x ^ stamp)).collect();
            map.insert_many_with(&ks, &vs, mode).unwrap();
            model.extend(ks.iter().copied().zip(vs));
        }
        same_contents(&map, &model, &all);
    }
    assert!(model.len() > 1000, "the batches left {} pairs", model.len());
}

/// Inserts `raw` in batches of `batch` and validates after each; the map ends with
/// every pair and a height of at least 4.
fn insert_in_order<K: TreeKey, V: TreeValue>(gpu: &gpuds_core::Gpu, raw: &[u32], batch: usize) {
    let keys = keys::<K>(raw);
    let mut map = VersionedBTreeMap::<K, V>::new(gpu).unwrap();
    let mut model = BTreeMap::new();
    for chunk in keys.chunks(batch) {
        let values: Vec<V> = chunk.iter().map(|&k| val_of::<K, V>(k)).collect();
        map.insert_many(chunk, &values).unwrap();
        model.extend(chunk.iter().copied().zip(values));
        map.validate().unwrap();
    }
    same_contents(&map, &model, &keys[..keys.len().min(4096)]);
    let got = map.get_many(&keys).unwrap();
    for (k, v) in keys.iter().zip(&got) {
        assert_eq!(*v, Some(val_of::<K, V>(*k)), "get_many of {k:?}");
    }
    let stats = map.stats().unwrap();
    assert!(
        stats.shape.height >= 4,
        "height {} ({:?})",
        stats.shape.height,
        stats.shape.nodes_per_level
    );
    assert_eq!(
        stats.versions, 0,
        "no snapshot was taken, so no version is kept"
    );
}

fn ascending_descending_and_random_insertion_reach_height_four<K: TreeKey, V: TreeValue>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let n = 1u32 << 16;
    let ascending: Vec<u32> = (0..n).map(|i| i * 3 + 1).collect();
    insert_in_order::<K, V>(&gpu, &ascending, 1 << 12);
    let descending: Vec<u32> = ascending.iter().rev().copied().collect();
    insert_in_order::<K, V>(&gpu, &descending, 1 << 12);
    insert_in_order::<K, V>(&gpu, &unique_keys::<u32>(21, n as usize, &[]), 1 << 13);
}

fn bulk_build_replaces_the_contents<K: TreeKey, V: TreeValue>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let mut raw = unique_keys::<u32>(22, 50_000, &[]);
    let mut values: Vec<V> = raw.iter().map(|&x| val(x)).collect();
    raw.push(raw[7]); // a repeated key: the last pair wins
    values.push(val(4242));
    let ks = keys::<K>(&raw);
    let mut map = VersionedBTreeMap::<K, V>::new(&gpu).unwrap();
    map.insert_many(&keys(&[1, 2]), &vals(&[1, 2])).unwrap();
    map.bulk_build(&ks, &values).unwrap();
    let mut model: Model<K, V> = ks.iter().copied().zip(values.iter().copied()).collect();
    assert_eq!(model[&ks[7]], val(4242));
    same_contents(&map, &model, &ks[..2000]);
    // Later updates work on the built tree.
    let more = keys::<K>(&unique_keys::<u32>(23, 20_000, &[]));
    let more_values: Vec<V> = more.iter().map(|&k| val_of::<K, V>(k)).collect();
    map.insert_many(&more, &more_values).unwrap();
    model.extend(more.iter().copied().zip(more_values));
    same_contents(&map, &model, &more[..2000]);
    // A rebuild is refused while a snapshot is live (it still reads the old contents),
    // and changes nothing.
    let snap = map.snapshot().unwrap();
    let err = map.bulk_build(&keys(&[3]), &vals(&[3])).unwrap_err();
    assert!(
        matches!(err, Error::Core(gpuds_core::Error::InvalidArgument(_))),
        "bulk_build with a live snapshot: {err}"
    );
    same_contents(&map, &model, &more[..100]);
    snapshot_matches(
        &map,
        &snap,
        &model,
        &more[..100],
        &probe_ranges::<K>(u32::MAX),
    );
    drop(snap);
    map.bulk_build(&keys(&[3, 1]), &vals(&[30, 10])).unwrap();
    assert_eq!(map.to_vec().unwrap(), vec![pair(1, 10), pair(3, 30)]);
    map.validate().unwrap();
    let stats = map.stats().unwrap();
    assert_eq!(
        (stats.heads, stats.versions),
        (1, 0),
        "a rebuilt two-pair map is one leaf: {stats:?}"
    );
    map.bulk_build(&[], &[]).unwrap();
    assert!(map.is_empty().unwrap());
    map.validate().unwrap();
}

fn bad_input_is_rejected_or_empty<K: TreeKey, V: TreeValue>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let mut map = VersionedBTreeMap::<K, V>::new(&gpu).unwrap();
    let invalid = |e: Error| matches!(e, Error::Core(gpuds_core::Error::InvalidArgument(_)));
    for mode in [Updates::InPlace, Updates::OutOfPlace] {
        let e = map
            .insert_many_with(&keys(&[1, 2]), &vals(&[1]), mode)
            .unwrap_err();
        assert!(invalid(e), "two keys, one value ({mode:?})");
    }
    let e = map.bulk_build(&keys(&[1]), &[]).unwrap_err();
    assert!(invalid(e), "bulk_build of one key and no value");
    assert!(map.is_empty().unwrap(), "a rejected call changed the map");
    // Empty batches are fine and change nothing.
    map.insert_many(&[], &[]).unwrap();
    assert_eq!(map.remove_many(&[]).unwrap(), Vec::new());
    assert_eq!(map.get_many(&[]).unwrap(), Vec::new());
    let top = u32::MAX;
    map.insert_many(&keys(&[0, 5, 9, top]), &vals(&[1, 50, 90, 7]))
        .unwrap();
    let snap = map.snapshot().unwrap();
    // lo > hi: empty, count 0, at a snapshot and in a mixed batch.
    let ranges = [
        (key::<K>(9), key::<K>(5)),
        (key(top), key(0)),
        (key(5), key(9)),
    ];
    let got = map.range_many_at(&snap, &ranges).unwrap();
    assert_eq!(got, vec![vec![], vec![], vec![pair(5, 50), pair(9, 90)]]);
    assert_eq!(
        map.range_count_many_at(&snap, &ranges).unwrap(),
        vec![0, 0, 2]
    );
    assert_eq!(
        map.range_many_at(&snap, &[]).unwrap(),
        Vec::<Vec<(K, V)>>::new()
    );
    assert_eq!(
        map.range_count_many_at(&snap, &[]).unwrap(),
        Vec::<u32>::new()
    );
    assert_eq!(
        map.successor_many_at(&snap, &[key(top)]).unwrap(),
        vec![None]
    );
    let replies = map
        .apply(
            &[
                MvOp::Range(key(9), key(5)),
                MvOp::RangeCount(key(top), key(0)),
                MvOp::Range(key(0), key(top)),
            ],
            8,
        )
        .unwrap();
    assert_eq!(
        (replies[0].count, replies[0].pairs.len()),
        (0, 0),
        "inverted Range"
    );
    assert_eq!(replies[1].count, 0, "inverted RangeCount");
    assert_eq!(replies[2].count, 4);
    assert_eq!(
        replies[2].pairs,
        vec![pair(0, 1), pair(5, 50), pair(9, 90), pair(top, 7)]
    );
    assert!(map.apply(&[], 8).unwrap().is_empty());
    map.validate().unwrap();
}

/// A small `max_nodes`: the insertion fails with a pool-exhausted error whose NotApplied
/// list names exactly the pairs that are not in the map; every other pair is in; the map
/// and a snapshot taken before stay valid and unchanged. Then removals that need copies
/// (a snapshot is live) on a full pool: the keys the error names are still present, the
/// others gone.
fn pool_exhaustion_names_exactly_the_pairs_not_inserted<K: TreeKey, V: TreeValue>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let mut map = VersionedBTreeMap::<K, V>::with_config(
        &gpu,
        BTreeConfig {
            initial_nodes: 1024,
            max_nodes: 2048,
            ..Default::default()
        },
    )
    .unwrap();
    let first = keys::<K>(&(0..200).map(|i| i * 7 + 3).collect::<Vec<u32>>());
    let first_values: Vec<V> = first.iter().map(|&k| val_of::<K, V>(k)).collect();
    map.insert_many(&first, &first_values).unwrap();
    let mut model: Model<K, V> = first.iter().copied().zip(first_values).collect();
    let before = map.snapshot().unwrap();
    let at_before = model.clone();
    let ks = keys::<K>(&unique_keys::<u32>(24, 40_000, &[]));
    let ks: Vec<K> = ks.into_iter().filter(|k| !model.contains_key(k)).collect();
    let vs: Vec<V> = ks.iter().map(|&k| val_of::<K, V>(k)).collect();
    let err = map.insert_many(&ks, &vs).unwrap_err();
    assert!(err.is_pool_exhausted(), "not a pool exhaustion: {err}");
    let missing: BTreeSet<usize> = err.not_applied().iter().copied().collect();
    assert!(!missing.is_empty(), "the error names no pair");
    assert!(missing.len() < ks.len(), "no pair was inserted");
    map.validate().unwrap();
    let got = map.get_many(&ks).unwrap();
    for (i, (k, g)) in ks.iter().zip(&got).enumerate() {
        if missing.contains(&i) {
            assert_eq!(
                *g, None,
                "pair {i} ({k:?}) is named not inserted but is present"
            );
        } else {
            assert_eq!(
                *g,
                Some(vs[i]),
                "pair {i} ({k:?}) is not named but is absent"
            );
            model.insert(*k, vs[i]);
        }
    }
    same_contents(&map, &model, &first);
    snapshot_matches(&map, &before, &at_before, &first, &probe_ranges::<K>(1400));
    // Removals on a full pool while a snapshot is live need copies: those that fail are
    // named and change nothing.
    let present: Vec<K> = model.keys().copied().step_by(3).collect();
    match map.remove_many(&present) {
        Ok(removed) => {
            for (k, r) in present.iter().zip(&removed) {
                assert_eq!(*r, model.remove(k), "remove of {k:?}");
            }
        }
        Err(e) => {
            assert!(e.is_pool_exhausted(), "remove on a full pool: {e}");
            let kept: BTreeSet<usize> = e.not_applied().iter().copied().collect();
            let now = map.get_many(&present).unwrap();
            for (i, k) in present.iter().enumerate() {
                if kept.contains(&i) {
                    assert_eq!(
                        now[i],
                        model.get(k).copied(),
                        "named removal {i} changed {k:?}"
                    );
                } else {
                    assert_eq!(now[i], None, "removal {i} of {k:?} not named, not done");
                    model.remove(k);
                }
            }
        }
    }
    same_contents(&map, &model, &present);
    snapshot_matches(&map, &before, &at_before, &first, &probe_ranges::<K>(1400));
    drop(before);
    map.collect_versions().unwrap();
    let stats = map.stats().unwrap();
    assert_eq!(
        stats.versions, 0,
        "versions left after the last snapshot: {stats:?}"
    );
    assert!(
        stats.capacity_units <= 2048,
        "a pool beyond max_nodes: {stats:?}"
    );
}

#[test]
fn two_pow_24_random_u32_keys() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let n = 1usize << 24;
    let ks = unique_keys::<u32>(25, n, &[]);
    let vs: Vec<u32> = ks.iter().map(|k| k ^ 0x5a5a_5a5a).collect();
    let mut map = map_with_nodes::<u32, u32>(&gpu, 1 << 21);
    for (c, (k, v)) in ks.chunks(1 << 22).zip(vs.chunks(1 << 22)).enumerate() {
        map.insert_many(k, v).unwrap();
        map.validate()
            .unwrap_or_else(|e| panic!("after batch {c} of 2^22: {e}"));
    }
    assert_eq!(map.len().unwrap(), n);
    let got = map.get_many(&ks).unwrap();
    let wrong = (0..n).filter(|&i| got[i] != Some(vs[i])).count();
    assert_eq!(wrong, 0, "{wrong} of 2^24 keys have a wrong value");
    let all = map.to_vec().unwrap();
    assert_eq!(all.len(), n);
    assert!(
        all.windows(2).all(|w| w[0].0 < w[1].0),
        "to_vec not in key order"
    );
    assert!(
        all.iter().all(|&(k, v)| v == k ^ 0x5a5a_5a5a),
        "to_vec: a wrong value"
    );
    let stats = map.stats().unwrap();
    println!(
        "2^24: {:?}, {} units",
        stats.shape.nodes_per_level, stats.units_in_use
    );
    assert_eq!(stats.versions, 0);
}

/// 2^23 keys, a snapshot, then 2^23 more keys in two batches and a removal of a quarter
/// of the first ones, in place: after every later batch the snapshot still reads exactly
/// the first 2^23 pairs, and the map (every version) is valid.
#[test]
fn two_pow_24_random_u32_keys_with_a_snapshot_held() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let n = 1usize << 24;
    let ks = unique_keys::<u32>(26, n, &[]);
    let vs: Vec<u32> = ks.iter().map(|k| k.rotate_left(7)).collect();
    let (old, new) = ks.split_at(n / 2);
    let mut map = map_with_nodes::<u32, u32>(&gpu, 1 << 21);
    for (k, v) in old.chunks(1 << 22).zip(vs.chunks(1 << 22)) {
        map.insert_many(k, v).unwrap();
    }
    map.validate().unwrap();
    let snap = map.snapshot().unwrap();
    let mut want: Vec<(u32, u32)> = old.iter().map(|&k| (k, k.rotate_left(7))).collect();
    want.sort_unstable();
    let probes = &old[..1 << 16];
    // Validation (a host walk of every version) only after the last batch and the
    // removal, to keep the test short; the snapshot's contents after every batch.
    let check = |map: &VersionedBTreeMap<u32, u32>, after: &str, validate: bool| {
        if validate {
            map.validate()
                .unwrap_or_else(|e| panic!("after {after}: {e}"));
        }
        let got = map.to_vec_at(&snap).unwrap();
        assert_eq!(got.len(), want.len(), "snapshot size after {after}");
        if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
            panic!(
                "after {after}: snapshot pair {i} is {:?}, want {:?}",
                got[i], want[i]
            );
        }
        let found = map.get_many_at(&snap, probes).unwrap();
        assert!(
            probes
                .iter()
                .zip(&found)
                .all(|(k, v)| *v == Some(k.rotate_left(7))),
            "get_many_at after {after}"
        );
    };
    for (c, chunk) in new.chunks(1 << 22).enumerate() {
        let v: Vec<u32> = chunk.iter().map(|k| k.rotate_left(7)).collect();
        map.insert_many(chunk, &v).unwrap();
        check(&map, &format!("later batch {c}"), c == 1);
    }
    let gone = &old[..n / 8];
    let removed = map.remove_many(gone).unwrap();
    assert!(
        removed.iter().all(Option::is_some),
        "a first key was missing"
    );
    check(&map, "the removal", true);
    assert_eq!(map.len().unwrap(), n - n / 8);
    assert!(
        map.stats().unwrap().versions > 0,
        "the snapshot keeps no version"
    );
    drop(snap);
    map.collect_versions().unwrap();
    let stats = map.stats().unwrap();
    assert_eq!(stats.versions, 0, "versions after the snapshot was dropped");
    assert_eq!(stats.units_in_use, stats.heads);
}
