//! First GPU checks of VersionedBTreeMap: the newest state, snapshots held across later
//! batches in both update modes, version collection and a mixed batch, each against
//! `std::collections::BTreeMap`, with `validate()` after every batch. Skips without a GPU.

use std::collections::BTreeMap;

use gpuds_mvbtree::{MvOp, Updates, VersionedBTreeMap};

fn pairs(m: &BTreeMap<u32, u32>) -> Vec<(u32, u32)> {
    m.iter().map(|(&k, &v)| (k, v)).collect()
}

/// A deterministic scramble of 0..n (distinct keys, random order).
fn scrambled(n: u32, salt: u32) -> Vec<u32> {
    (0..n)
        .map(|i| i.wrapping_mul(0x9e37_79b1).rotate_left(7) ^ salt)
        .collect()
}

#[test]
fn newest_state_matches_std() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let mut map = VersionedBTreeMap::<u32, u32>::new(&gpu).unwrap();
    let mut oracle = BTreeMap::new();
    let keys = scrambled(20_000, 0x55);
    for chunk in keys.chunks(4_000) {
        let vals: Vec<u32> = chunk.iter().map(|k| k ^ 0xabc).collect();
        map.insert_many(chunk, &vals).unwrap();
        for (&k, &v) in chunk.iter().zip(&vals) {
            oracle.insert(k, v);
        }
        map.validate().unwrap();
    }
    assert_eq!(map.len().unwrap(), oracle.len());
    assert_eq!(map.to_vec().unwrap(), pairs(&oracle));
    let gone: Vec<u32> = keys.iter().step_by(3).copied().collect();
    let removed = map.remove_many(&gone).unwrap();
    for (k, r) in gone.iter().zip(removed) {
        assert_eq!(r, oracle.remove(k), "removal of {k}");
    }
    map.validate().unwrap();
    let probe: Vec<u32> = keys.iter().take(1000).copied().collect();
    let got = map.get_many(&probe).unwrap();
    for (k, g) in probe.iter().zip(got) {
        assert_eq!(g, oracle.get(k).copied(), "get of {k}");
    }
    assert_eq!(map.to_vec().unwrap(), pairs(&oracle));
}

fn snapshots_survive_later_batches(mode: Updates) {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let mut map = VersionedBTreeMap::<u32, u32>::new(&gpu).unwrap();
    let mut oracle = BTreeMap::new();
    let mut held = Vec::new();
    let keys = scrambled(30_000, 0x1234);
    for (round, chunk) in keys.chunks(3_000).enumerate() {
        let vals: Vec<u32> = chunk
            .iter()
            .map(|&k| k.wrapping_add(round as u32))
            .collect();
        map.insert_many_with(chunk, &vals, mode).unwrap();
        for (&k, &v) in chunk.iter().zip(&vals) {
            oracle.insert(k, v);
        }
        // replace some old values and remove some keys
        let old: Vec<u32> = oracle.keys().step_by(7).copied().take(500).collect();
        let new_vals: Vec<u32> = old.iter().map(|k| k ^ round as u32).collect();
        map.insert_many_with(&old, &new_vals, mode).unwrap();
        for (&k, &v) in old.iter().zip(&new_vals) {
            oracle.insert(k, v);
        }
        let gone: Vec<u32> = oracle
            .keys()
            .skip(round)
            .step_by(11)
            .copied()
            .take(300)
            .collect();
        let removed = map.remove_many_with(&gone, mode).unwrap();
        for (k, r) in gone.iter().zip(removed) {
            assert_eq!(r, oracle.remove(k));
        }
        map.validate().unwrap();
        if round % 2 == 0 {
            held.push((map.snapshot().unwrap(), oracle.clone()));
        }
        if round == 5 {
            held.remove(1); // drop one in the middle
        }
        for (s, seen) in &held {
            assert_eq!(
                map.to_vec_at(s).unwrap(),
                pairs(seen),
                "snapshot {}",
                s.timestamp()
            );
            let lo = 1u32 << 30;
            let hi = 3u32 << 30;
            let want: Vec<(u32, u32)> = seen.range(lo..=hi).map(|(&k, &v)| (k, v)).collect();
            assert_eq!(map.range_many_at(s, &[(lo, hi)]).unwrap()[0], want);
            assert_eq!(
                map.range_count_many_at(s, &[(lo, hi), (hi, lo)]).unwrap(),
                vec![want.len() as u32, 0]
            );
            let probe: Vec<u32> = keys.iter().take(2000).copied().collect();
            let got = map.get_many_at(s, &probe).unwrap();
            for (k, g) in probe.iter().zip(got) {
                assert_eq!(g, seen.get(k).copied(), "get of {k} at {}", s.timestamp());
            }
            let succ = map.successor_many_at(s, &probe[..200]).unwrap();
            for (k, g) in probe.iter().zip(succ) {
                let want = seen.range(k + 1..).next().map(|(&a, &b)| (a, b));
                assert_eq!(g, want, "successor of {k}");
            }
        }
        assert_eq!(map.to_vec().unwrap(), pairs(&oracle));
    }
    let stats = map.stats().unwrap();
    assert!(stats.versions > 0, "snapshots are held: {stats:?}");
    held.clear();
    map.collect_versions().unwrap();
    let stats = map.stats().unwrap();
    assert_eq!(stats.versions, 0, "{stats:?}");
    assert_eq!(stats.units_in_use, stats.heads);
    assert!(stats.reclaimed_units > 0);
    map.validate().unwrap();
}

#[test]
fn snapshots_survive_later_in_place_batches() {
    snapshots_survive_later_batches(Updates::InPlace);
}

#[test]
fn snapshots_survive_later_out_of_place_batches() {
    snapshots_survive_later_batches(Updates::OutOfPlace);
}

#[test]
fn mixed_batch_queries_are_exact_at_their_snapshots() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let mut map = VersionedBTreeMap::<u32, u32>::new(&gpu).unwrap();
    // even keys present; the batch inserts odd keys while ranges run
    let initial: Vec<u32> = (0..50_000).map(|i| i * 2).collect();
    map.insert_many(&initial, &initial).unwrap();
    let mut ops = Vec::new();
    for i in 0..20_000u32 {
        ops.push(MvOp::Insert(2 * (i * 7919 % 50_000) + 1, i));
        ops.push(MvOp::Range(1000, 1063));
        ops.push(MvOp::RangeCount(0, 99_999));
    }
    let replies = map.apply(&ops, 64).unwrap();
    let mut by_ts: BTreeMap<u32, Vec<(u32, u32)>> = BTreeMap::new();
    let mut counts: BTreeMap<u32, u32> = BTreeMap::new();
    for (op, r) in ops.iter().zip(&replies) {
        match op {
            MvOp::Range(..) => {
                assert!(r.count <= 64);
                for k in (1000..=1063).step_by(2) {
                    assert!(
                        r.pairs.iter().any(|p| p.0 == k),
                        "initial key {k} missing at {}",
                        r.ts
                    );
                }
                if let Some(prev) = by_ts.insert(r.ts, r.pairs.clone()) {
                    assert_eq!(prev, r.pairs, "two ranges at ts {} differ", r.ts);
                }
            }
            MvOp::RangeCount(..) => {
                if let Some(prev) = counts.insert(r.ts, r.count) {
                    assert_eq!(prev, r.count, "two counts at ts {} differ", r.ts);
                }
            }
            _ => assert!(!r.found),
        }
    }
    let mut last: Option<&Vec<(u32, u32)>> = None;
    for pairs in by_ts.values() {
        if let Some(prev) = last {
            assert!(
                prev.iter().all(|p| pairs.contains(p)),
                "a later snapshot lost a pair"
            );
        }
        last = Some(pairs);
    }
    let mut last = 0;
    for &c in counts.values() {
        assert!(c >= last);
        last = c;
    }
    assert_eq!(map.len().unwrap(), 70_000);
    map.validate().unwrap();
    let stats = map.stats().unwrap();
    assert_eq!(
        stats.versions, 0,
        "no snapshot is held after the batch: {stats:?}"
    );
}

/// On-stream snapshots taken on a second stream while an out-of-place insertion kernel
/// runs on the map's stream: each sees the initial pairs and a subset of the inserted
/// ones, each later one a superset of the earlier, and after the kernel the newest state
/// holds everything.
#[test]
fn on_stream_snapshots_during_an_out_of_place_batch() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let mut map = VersionedBTreeMap::<u32, u32>::new(&gpu).unwrap();
    let initial: Vec<u32> = (0..100_000).map(|i| i * 2).collect();
    map.insert_many(&initial, &initial).unwrap();
    let inserted: Vec<u32> = scrambled(1 << 20, 0).iter().map(|k| k | 1).collect();
    let keys = gpu.stream().clone_htod(&inserted).unwrap();
    let side = gpu.new_stream().unwrap();
    map.insert_many_device(&keys, &keys, Updates::OutOfPlace)
        .unwrap();
    let snaps: Vec<_> = (0..8).map(|_| map.snapshot_on(&side).unwrap()).collect();
    map.check().unwrap();
    let all: std::collections::HashSet<u32> = inserted.iter().copied().collect();
    let mut previous: Option<Vec<(u32, u32)>> = None;
    for s in &snaps {
        let seen = map.to_vec_at(s).unwrap();
        let evens = seen.iter().filter(|p| p.0 % 2 == 0).count();
        assert_eq!(
            evens,
            initial.len(),
            "snapshot {} lost initial pairs",
            s.timestamp()
        );
        assert!(seen
            .iter()
            .all(|p| p.0 % 2 == 0 || (all.contains(&p.0) && p.1 == p.0)));
        if let Some(prev) = &previous {
            let now: std::collections::HashSet<_> = seen.iter().copied().collect();
            assert!(
                prev.iter().all(|p| now.contains(p)),
                "a later snapshot lost pairs"
            );
        }
        previous = Some(seen);
    }
    map.validate().unwrap();
    assert_eq!(map.len().unwrap(), initial.len() + all.len());
    drop(snaps);
    map.collect_versions().unwrap();
    assert_eq!(map.stats().unwrap().versions, 0);
}

/// Long mixed batches with no host snapshot live: the versions the kernel makes go to its
/// epoch-based reclaimer (with reclaimed units poisoned, so that a query reading one
/// reports CORRUPTED), every retired unit is reclaimed, nothing is left in version lists,
/// and memory ends within 5 % of a map built fresh with the same contents. With a snapshot
/// held, versions go to the log instead and the snapshot reads its state exactly.
#[test]
fn mixed_batches_reclaim_inside_the_kernel() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let poison = gpuds_alloc::CollectorConfig {
        poison: 0xdead_beef,
        ..Default::default()
    };
    let mut map = VersionedBTreeMap::<u32, u32>::with_reclaimer(
        &gpu,
        gpuds_mvbtree::BTreeConfig::default(),
        poison,
    )
    .unwrap();
    let initial: Vec<u32> = (0..200_000).map(|i| i * 4).collect();
    map.insert_many(&initial, &initial).unwrap();
    let mut oracle: BTreeMap<u32, u32> = initial.iter().map(|&k| (k, k)).collect();
    let fresh = scrambled(300_000, 0x77);
    // The same contents built fresh: the same batches, through host (in-place) calls.
    let mut rebuilt = VersionedBTreeMap::<u32, u32>::new(&gpu).unwrap();
    rebuilt.insert_many(&initial, &initial).unwrap();
    for round in 0..6u32 {
        let mut ops = Vec::new();
        let mut batch = Vec::new();
        for (j, &k) in fresh
            .iter()
            .enumerate()
            .skip(round as usize * 50_000)
            .take(50_000)
        {
            let k = k | 1;
            ops.push(MvOp::Insert(k, round));
            oracle.insert(k, round);
            batch.push(k);
            let lo = initial[j % initial.len()];
            ops.push(MvOp::Range(lo, lo + 40));
        }
        rebuilt
            .insert_many(&batch, &vec![round; batch.len()])
            .unwrap();
        let replies = map.apply(&ops, 48).unwrap();
        for (op, r) in ops.iter().zip(&replies) {
            if let MvOp::Range(lo, hi) = op {
                for k in (*lo..=(*hi).min(799_996)).step_by(4) {
                    assert!(r.pairs.iter().any(|p| p.0 == k), "initial key {k} missing");
                }
            }
        }
        map.validate().unwrap();
        let stats = map.stats().unwrap();
        assert_eq!(stats.versions, 0, "round {round}: {stats:?}");
        assert!(stats.retired_in_kernels > 0, "round {round}: {stats:?}");
        assert_eq!(
            stats.retired_in_kernels, stats.reclaimed_in_kernels,
            "{stats:?}"
        );
    }
    assert_eq!(map.to_vec().unwrap(), pairs(&oracle));
    assert_eq!(rebuilt.to_vec().unwrap(), pairs(&oracle));
    let (used, fresh_used) = (
        map.stats().unwrap().units_in_use,
        rebuilt.stats().unwrap().units_in_use,
    );
    assert!(
        used as f64 <= fresh_used as f64 * 1.05,
        "{used} units in use against {fresh_used} for the same contents built fresh"
    );

    // With a snapshot held: no reclamation in the kernel; the snapshot reads its state.
    let before = map.stats().unwrap().retired_in_kernels;
    let s = map.snapshot().unwrap();
    let seen = pairs(&oracle);
    let ops: Vec<_> = (0..20_000u32).map(|i| MvOp::Insert(i * 4 + 2, i)).collect();
    map.apply(&ops, 0).unwrap();
    assert_eq!(map.stats().unwrap().retired_in_kernels, before);
    assert!(map.stats().unwrap().versions > 0);
    assert_eq!(map.to_vec_at(&s).unwrap(), seen);
    map.validate().unwrap();
    drop(s);
    map.collect_versions().unwrap();
    assert_eq!(map.stats().unwrap().versions, 0);
    map.validate().unwrap();
}

/// Capped ranges at a snapshot: the first `cap` pairs of each range in key order and the
/// full counts, after later batches changed the ranges.
#[test]
fn capped_ranges_at_a_snapshot() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let mut map = VersionedBTreeMap::<u32, u32>::new(&gpu).unwrap();
    let keys: Vec<u32> = (0..50_000).map(|i| i * 3).collect();
    map.insert_many(&keys, &keys).unwrap();
    let seen: BTreeMap<u32, u32> = keys.iter().map(|&k| (k, k)).collect();
    let s = map.snapshot().unwrap();
    let more: Vec<u32> = (0..50_000).map(|i| i * 3 + 1).collect();
    map.insert_many(&more, &more).unwrap();
    map.remove_many(&keys[..10_000]).unwrap();
    let ranges = [
        (0, 299),
        (1000, 1000),
        (7, 3),
        (30_000, 149_999),
        (u32::MAX - 5, u32::MAX),
    ];
    for cap in [0u32, 1, 16, 100, 1000] {
        let (pairs, counts) = map.range_many_capped_at(&s, &ranges, cap).unwrap();
        for (i, &(lo, hi)) in ranges.iter().enumerate() {
            let want: Vec<(u32, u32)> = if lo > hi {
                Vec::new()
            } else {
                seen.range(lo..=hi).map(|(&k, &v)| (k, v)).collect()
            };
            assert_eq!(
                counts[i] as usize,
                want.len(),
                "count of range {i}, cap {cap}"
            );
            let cut = want.len().min(cap as usize);
            assert_eq!(pairs[i], want[..cut], "pairs of range {i}, cap {cap}");
        }
    }
}
