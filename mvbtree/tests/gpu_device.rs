//! GPU checks of the `_device` forms of VersionedBTreeMap: queries at a snapshot and of the
//! newest state on device buffers (lookups, successors, counts, ranges collected and
//! capped) give what the host forms give (and what `std::collections::BTreeMap` gives),
//! range offsets from counts and capped, bad buffer
//! lengths are refused, and a mixed batch on device buffers leaves the oracle's contents
//! with every range exact at some state between the batch's start and end. Skips without
//! a GPU.

use std::collections::BTreeMap;

use gpuds_mvbtree::node::UNSET_TS;
use gpuds_mvbtree::{MvReplyBuffers, RangeOffsets, Updates, VersionedBTreeMap};

/// Distinct keys in a scrambled order (never two equal for i < 2^32).
fn scrambled(n: u32, salt: u32) -> Vec<u32> {
    (0..n)
        .map(|i| i.wrapping_mul(0x9e37_79b1).rotate_left(11) ^ salt)
        .collect()
}

fn range_of(m: &BTreeMap<u32, u32>, lo: u32, hi: u32) -> Vec<(u32, u32)> {
    if lo > hi {
        return Vec::new();
    }
    m.range(lo..=hi).map(|(&k, &v)| (k, v)).collect()
}

/// A map with a snapshot and later changes, and the oracles of both states.
struct TwoStates {
    map: VersionedBTreeMap<u32, u32>,
    snap: gpuds_mvbtree::Snapshot,
    keys: Vec<u32>,
    fresh: Vec<u32>,
    old: BTreeMap<u32, u32>,
    now: BTreeMap<u32, u32>,
}

/// 40,000 keys, a snapshot, then new keys, replaced values and removals that the
/// snapshot must not see, all updates in `mode`; validated.
fn two_states(gpu: &gpuds_core::Gpu, mode: Updates) -> TwoStates {
    let mut map = VersionedBTreeMap::<u32, u32>::new(gpu).unwrap();
    let keys = scrambled(40_000, 0x77);
    let vals: Vec<u32> = keys.iter().map(|k| k ^ 0x5a5a).collect();
    map.insert_many_with(&keys, &vals, mode).unwrap();
    let old: BTreeMap<u32, u32> = keys.iter().copied().zip(vals.iter().copied()).collect();
    let snap = map.snapshot().unwrap();
    let mut now = old.clone();
    let fresh = scrambled(10_000, 0x1234_5678);
    map.insert_many_with(&fresh, &fresh, mode).unwrap();
    for &k in &fresh {
        now.insert(k, k);
    }
    let gone: Vec<u32> = keys.iter().step_by(5).copied().collect();
    map.remove_many_with(&gone, mode).unwrap();
    for k in &gone {
        now.remove(k);
    }
    map.validate().unwrap();
    TwoStates {
        map,
        snap,
        keys,
        fresh,
        old,
        now,
    }
}

#[test]
fn device_queries_match_the_host_forms_and_the_oracle() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let stream = gpu.stream();
    for mode in [Updates::InPlace, Updates::OutOfPlace] {
        let TwoStates {
            map,
            snap,
            keys,
            fresh,
            old,
            now,
        } = two_states(&gpu, mode);

        let probe: Vec<u32> = keys.iter().chain(&fresh).step_by(3).copied().collect();
        let d_probe = stream.clone_htod(&probe).unwrap();
        let mut values = stream.alloc_zeros::<u32>(probe.len()).unwrap();
        let mut found = stream.alloc_zeros::<u32>(probe.len()).unwrap();
        for (at, oracle) in [(Some(&snap), &old), (None, &now)] {
            map.get_many_at_device(at, &d_probe, &mut values, &mut found)
                .unwrap();
            map.check().unwrap();
            let (v, f) = (
                stream.clone_dtoh(&values).unwrap(),
                stream.clone_dtoh(&found).unwrap(),
            );
            for (i, k) in probe.iter().enumerate() {
                let got = (f[i] == 1).then_some(v[i]);
                assert!(f[i] <= 1, "found is one word per key, 0 or 1");
                assert_eq!(
                    got,
                    oracle.get(k).copied(),
                    "key {k} (snapshot: {})",
                    at.is_some()
                );
            }
        }
        assert_eq!(
            map.get_many_at(&snap, &probe).unwrap(),
            probe
                .iter()
                .map(|k| old.get(k).copied())
                .collect::<Vec<_>>()
        );

        // Ranges: wide, narrow, empty, inverted and the whole key space.
        let mut ranges: Vec<(u32, u32)> = keys
            .iter()
            .take(500)
            .map(|&k| (k, k.saturating_add(1 << 20)))
            .collect();
        ranges.extend([(0, u32::MAX), (9, 3), (5, 5)]);
        let (lo, hi): (Vec<u32>, Vec<u32>) = ranges.iter().copied().unzip();
        let (d_lo, d_hi) = (
            stream.clone_htod(&lo).unwrap(),
            stream.clone_htod(&hi).unwrap(),
        );
        let mut counts = stream.alloc_zeros::<u32>(ranges.len()).unwrap();
        for (at, oracle) in [(Some(&snap), &old), (None, &now)] {
            map.range_count_many_at_device(at, &d_lo, &d_hi, &mut counts)
                .unwrap();
            let c = stream.clone_dtoh(&counts).unwrap();
            let expected: Vec<Vec<(u32, u32)>> = ranges
                .iter()
                .map(|&(l, h)| range_of(oracle, l, h))
                .collect();
            for (i, e) in expected.iter().enumerate() {
                assert_eq!(c[i] as usize, e.len(), "count of range {i}");
            }
            // Every pair: offsets from the counts.
            let offsets = RangeOffsets::from_counts(&gpu, &c).unwrap();
            assert_eq!(offsets.len(), ranges.len());
            let total = offsets.total() as usize;
            let mut rk = stream.alloc_zeros::<u32>(total).unwrap();
            let mut rv = stream.alloc_zeros::<u32>(total).unwrap();
            map.range_collect_at_device(at, &d_lo, &d_hi, &offsets, &mut rk, &mut rv)
                .unwrap();
            map.check().unwrap();
            let (k, v) = (
                stream.clone_dtoh(&rk).unwrap(),
                stream.clone_dtoh(&rv).unwrap(),
            );
            let got: Vec<(u32, u32)> = k.into_iter().zip(v).collect();
            assert_eq!(
                got,
                expected.concat(),
                "collected pairs, snapshot: {}",
                at.is_some()
            );
            // Capped at 3 per range: the first three of each.
            let capped = RangeOffsets::capped(&gpu, ranges.len(), 3).unwrap();
            assert_eq!(capped.total() as usize, 3 * ranges.len());
            let mut ck = stream.alloc_zeros::<u32>(3 * ranges.len()).unwrap();
            let mut cv = stream.alloc_zeros::<u32>(3 * ranges.len()).unwrap();
            map.range_collect_at_device(at, &d_lo, &d_hi, &capped, &mut ck, &mut cv)
                .unwrap();
            let (k, v) = (
                stream.clone_dtoh(&ck).unwrap(),
                stream.clone_dtoh(&cv).unwrap(),
            );
            for (i, e) in expected.iter().enumerate() {
                let n = e.len().min(3);
                let got: Vec<(u32, u32)> = (0..n).map(|j| (k[3 * i + j], v[3 * i + j])).collect();
                assert_eq!(got, e[..n], "first pairs of range {i}");
            }
        }
        assert_eq!(
            map.range_count_many_at(&snap, &ranges).unwrap(),
            ranges
                .iter()
                .map(|&(l, h)| range_of(&old, l, h).len() as u32)
                .collect::<Vec<_>>()
        );
    }
}

fn successor_of(m: &BTreeMap<u32, u32>, k: u32) -> Option<(u32, u32)> {
    use std::ops::Bound::{Excluded, Unbounded};
    m.range((Excluded(k), Unbounded))
        .next()
        .map(|(&k, &v)| (k, v))
}

/// `successor_many_at_device` and `range_many_capped_at_device` at a snapshot and at the
/// newest state give the oracle's answers, and at the snapshot what the host forms give;
/// their buffers are checked like the other device forms'.
#[test]
fn device_successors_and_capped_ranges_match_the_host_forms_and_the_oracle() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let stream = gpu.stream();
    for mode in [Updates::InPlace, Updates::OutOfPlace] {
        let TwoStates {
            map,
            snap,
            keys,
            fresh,
            old,
            now,
        } = two_states(&gpu, mode);

        // Successors of present keys, removed keys, new keys, the ends of the key space.
        let mut probe: Vec<u32> = keys.iter().chain(&fresh).step_by(7).copied().collect();
        probe.extend([0, u32::MAX, u32::MAX - 1]);
        let d_probe = stream.clone_htod(&probe).unwrap();
        let n = probe.len();
        let mut sk = stream.alloc_zeros::<u32>(n).unwrap();
        let mut sv = stream.alloc_zeros::<u32>(n).unwrap();
        let mut found = stream.alloc_zeros::<u32>(n).unwrap();
        for (at, oracle) in [(Some(&snap), &old), (None, &now)] {
            map.successor_many_at_device(at, &d_probe, &mut sk, &mut sv, &mut found)
                .unwrap();
            map.check().unwrap();
            let (k, v, f) = (
                stream.clone_dtoh(&sk).unwrap(),
                stream.clone_dtoh(&sv).unwrap(),
                stream.clone_dtoh(&found).unwrap(),
            );
            let got: Vec<Option<(u32, u32)>> = (0..n)
                .map(|i| {
                    assert!(f[i] <= 1, "found is one word per key, 0 or 1");
                    (f[i] == 1).then_some((k[i], v[i]))
                })
                .collect();
            let expected: Vec<Option<(u32, u32)>> =
                probe.iter().map(|&p| successor_of(oracle, p)).collect();
            assert_eq!(got, expected, "successors (snapshot: {})", at.is_some());
            if at.is_some() {
                assert_eq!(map.successor_many_at(&snap, &probe).unwrap(), got);
            }
        }

        // Capped ranges: wide (cut), narrow, empty, inverted and the whole key space.
        let mut ranges: Vec<(u32, u32)> = keys
            .iter()
            .take(400)
            .map(|&k| (k, k.saturating_add(1 << 19)))
            .collect();
        ranges.extend([(0, u32::MAX), (9, 3), (5, 5)]);
        let (lo, hi): (Vec<u32>, Vec<u32>) = ranges.iter().copied().unzip();
        let (d_lo, d_hi) = (
            stream.clone_htod(&lo).unwrap(),
            stream.clone_htod(&hi).unwrap(),
        );
        for cap in [0u32, 1, 4, 64] {
            let slots = (cap as usize * ranges.len()).max(1);
            let mut rk = stream.alloc_zeros::<u32>(slots).unwrap();
            let mut rv = stream.alloc_zeros::<u32>(slots).unwrap();
            let mut counts = stream.alloc_zeros::<u32>(ranges.len()).unwrap();
            for (at, oracle) in [(Some(&snap), &old), (None, &now)] {
                map.range_many_capped_at_device(
                    at,
                    &d_lo,
                    &d_hi,
                    cap,
                    &mut rk,
                    &mut rv,
                    &mut counts,
                )
                .unwrap();
                map.check().unwrap();
                let (k, v, c) = (
                    stream.clone_dtoh(&rk).unwrap(),
                    stream.clone_dtoh(&rv).unwrap(),
                    stream.clone_dtoh(&counts).unwrap(),
                );
                let mut pairs = Vec::new();
                for (i, &(l, h)) in ranges.iter().enumerate() {
                    let e = range_of(oracle, l, h);
                    assert_eq!(c[i] as usize, e.len(), "count of range {i}, cap {cap}");
                    let m = e.len().min(cap as usize);
                    let from = i * cap as usize;
                    let got: Vec<(u32, u32)> = (from..from + m).map(|j| (k[j], v[j])).collect();
                    assert_eq!(got, e[..m], "first pairs of range {i}, cap {cap}");
                    pairs.push(got);
                }
                if at.is_some() {
                    assert_eq!(
                        map.range_many_capped_at(&snap, &ranges, cap).unwrap(),
                        (pairs, c),
                        "host form, cap {cap}"
                    );
                }
            }
        }
        map.validate().unwrap();
    }

    // Short buffers and foreign snapshots are refused before anything runs.
    let map = VersionedBTreeMap::<u32, u32>::new(&gpu).unwrap();
    let mut other = VersionedBTreeMap::<u32, u32>::new(&gpu).unwrap();
    let foreign = other.snapshot().unwrap();
    let keys = stream.clone_htod(&[1u32, 2, 3]).unwrap();
    let mut three = stream.alloc_zeros::<u32>(3).unwrap();
    let mut three_v = stream.alloc_zeros::<u32>(3).unwrap();
    let mut two = stream.alloc_zeros::<u32>(2).unwrap();
    assert!(map
        .successor_many_at_device(None, &keys, &mut three, &mut three_v, &mut two)
        .is_err());
    assert!(matches!(
        map.successor_many_at_device(Some(&foreign), &keys, &mut three, &mut three_v, &mut two),
        Err(gpuds_mvbtree::Error::ForeignSnapshot)
    ));
    let mut five = stream.alloc_zeros::<u32>(5).unwrap();
    let mut six = stream.alloc_zeros::<u32>(6).unwrap();
    let mut six_v = stream.alloc_zeros::<u32>(6).unwrap();
    let e = map
        .range_many_capped_at_device(None, &keys, &keys, 2, &mut five, &mut six, &mut three)
        .unwrap_err();
    assert!(e.to_string().contains('6'), "{e}");
    assert!(
        map.range_many_capped_at_device(None, &keys, &keys, 1, &mut six, &mut six_v, &mut two)
            .is_err(),
        "three ranges, two counts"
    );
    assert!(map
        .range_many_capped_at_device(
            None,
            &keys,
            &keys,
            u32::MAX,
            &mut six,
            &mut five,
            &mut three
        )
        .is_err());
    map.validate().unwrap();
}

#[test]
fn device_forms_refuse_short_buffers_and_foreign_snapshots() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let stream = gpu.stream();
    let mut map = VersionedBTreeMap::<u32, u32>::new(&gpu).unwrap();
    map.insert_many(&[1, 2, 3], &[10, 20, 30]).unwrap();
    let mut other = VersionedBTreeMap::<u32, u32>::new(&gpu).unwrap();
    let foreign = other.snapshot().unwrap();
    let keys = stream.clone_htod(&[1u32, 2, 3]).unwrap();
    let mut short = stream.alloc_zeros::<u32>(2).unwrap();
    let mut found = stream.alloc_zeros::<u32>(3).unwrap();
    let mut values = stream.alloc_zeros::<u32>(3).unwrap();
    assert!(map
        .get_many_at_device(None, &keys, &mut short, &mut found)
        .is_err());
    assert!(map
        .get_many_at_device(None, &keys, &mut values, &mut short)
        .is_err());
    assert!(matches!(
        map.get_many_at_device(Some(&foreign), &keys, &mut values, &mut found),
        Err(gpuds_mvbtree::Error::ForeignSnapshot)
    ));
    let offsets = RangeOffsets::capped(&gpu, 3, 4).unwrap();
    let mut out = stream.alloc_zeros::<u32>(11).unwrap();
    let mut out_v = stream.alloc_zeros::<u32>(12).unwrap();
    let e = map
        .range_collect_at_device(None, &keys, &keys, &offsets, &mut out, &mut out_v)
        .unwrap_err();
    assert!(e.to_string().contains("12"), "{e}");
    let two = RangeOffsets::capped(&gpu, 4, 1).unwrap();
    let mut four = stream.alloc_zeros::<u32>(4).unwrap();
    assert!(
        map.range_collect_at_device(None, &keys, &keys, &two, &mut four, &mut out_v)
            .is_err(),
        "four ranges but three bounds"
    );
    let mut counts = stream.alloc_zeros::<u32>(2).unwrap();
    assert!(map
        .range_count_many_at_device(None, &keys, &keys, &mut counts)
        .is_err());
    assert!(MvReplyBuffers::<u32, u32>::new(&gpu, 1 << 28, 32).is_err());
    let codes = stream.clone_htod(&[2u32, 2, 2]).unwrap();
    let mut replies = MvReplyBuffers::<u32, u32>::new(&gpu, 2, 1).unwrap();
    assert!(
        map.apply_device(&codes, &keys, &keys, &keys, &mut replies)
            .is_err(),
        "three operations, results for two"
    );
    map.validate().unwrap();
    assert_eq!(map.to_vec().unwrap(), vec![(1, 10), (2, 20), (3, 30)]);
}

#[test]
fn apply_device_leaves_the_oracle_contents_and_exact_ranges() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let stream = gpu.stream();
    let mut map = VersionedBTreeMap::<u32, u32>::new(&gpu).unwrap();
    let initial = scrambled(50_000, 0x3c3c);
    map.insert_many(&initial, &initial).unwrap();
    let before: BTreeMap<u32, u32> = initial.iter().map(|&k| (k, k)).collect();
    // New keys (the odd multiples of 2^31 + ... never in `initial`: a different salt of the
    // same bijection lands elsewhere; checked below), ranges of about 30 keys, lookups.
    let fresh: Vec<u32> = scrambled(100_000, 0x0f0f_0f0f)
        .into_iter()
        .filter(|k| !before.contains_key(k))
        .take(20_000)
        .collect();
    let width = (u32::MAX / 50_000) * 30;
    let (mut codes, mut ks, mut aks, mut avs) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (i, &f) in fresh.iter().enumerate() {
        let probe = initial[(i * 7) % initial.len()];
        for (c, k, ak, av) in [
            (0u32, f, 0, f ^ 1),
            (5, probe, probe.saturating_add(width), 0),
            (2, probe, 0, 0),
        ] {
            codes.push(c);
            ks.push(k);
            aks.push(ak);
            avs.push(av);
        }
    }
    let n = codes.len();
    let cap = 64u32;
    let mut out = MvReplyBuffers::<u32, u32>::new(&gpu, n, cap).unwrap();
    let d = |v: &Vec<u32>| stream.clone_htod(v).unwrap();
    map.apply_device(&d(&codes), &d(&ks), &d(&aks), &d(&avs), &mut out)
        .unwrap();
    map.check().unwrap();
    map.collect_versions().unwrap();
    map.validate().unwrap();
    let mut after = before.clone();
    for &f in &fresh {
        after.insert(f, f ^ 1);
    }
    assert_eq!(map.len().unwrap(), after.len());
    assert_eq!(
        map.to_vec().unwrap(),
        after.iter().map(|(&k, &v)| (k, v)).collect::<Vec<_>>()
    );

    let ts = stream.clone_dtoh(out.ts()).unwrap();
    let counts = stream.clone_dtoh(out.counts()).unwrap();
    let values = stream.clone_dtoh(out.values()).unwrap();
    let found = stream.clone_dtoh(out.found()).unwrap();
    let failed = stream.clone_dtoh(out.failed()).unwrap();
    let rk = stream.clone_dtoh(out.range_keys()).unwrap();
    let rv = stream.clone_dtoh(out.range_values()).unwrap();
    assert!(failed.iter().all(|&w| w == 0), "no update failed");
    let bit = |i: usize| found[i / 32] >> (i % 32) & 1 == 1;
    for i in 0..n {
        match codes[i] {
            0 => {
                assert_eq!(ts[i], UNSET_TS, "updates report no snapshot");
                assert!(!bit(i), "a new key replaces nothing");
            }
            2 => {
                assert!(ts[i] < UNSET_TS);
                assert!(
                    bit(i) && values[i] == ks[i],
                    "an initial key is found with its value"
                );
            }
            _ => {
                assert!(ts[i] < UNSET_TS);
                let (lo, hi) = (ks[i], aks[i]);
                let old = range_of(&before, lo, hi);
                let new = range_of(&after, lo, hi);
                let c = counts[i] as usize;
                assert!(
                    old.len() <= c && c <= new.len(),
                    "range {i}: {c} not between"
                );
                let got: Vec<(u32, u32)> = (0..c.min(cap as usize))
                    .map(|j| (rk[i * cap as usize + j], rv[i * cap as usize + j]))
                    .collect();
                // A state between the two: every initial pair, some inserted ones, in order.
                assert!(got.windows(2).all(|w| w[0].0 < w[1].0), "range {i} sorted");
                assert!(
                    got.iter().all(|p| new.contains(p)),
                    "range {i}: pairs of the range"
                );
                if c <= cap as usize {
                    assert!(
                        old.iter().all(|p| got.contains(p)),
                        "range {i}: initial pairs kept"
                    );
                }
            }
        }
    }
}
