//! RangeSkipList on the tiered placement on the GPU: a device budget of about a quarter of
//! the structure, so that every batch evicts pools and copies them in again, against a
//! `BTreeMap` oracle with `validate()` after every batch (insertions, removals, lookups,
//! successor, predecessor and range queries that cross ranges); many small pools; counts
//! with `add_many`; the configuration and capacity errors.

mod common;

use std::collections::HashMap;

use common::{insert, query, random_batches, remove, settle, Keys, Oracle};
use gpuds_oversub::{Error, Placement, RangeSkipList, RangeSkipListConfig};
use gpuds_testkit::gpu;
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};

/// A tiered range skip list of 2^12 keys per range whose pools start at 16 nodes.
fn tiered(gpu: &gpuds_core::Gpu, budget: u64) -> Result<RangeSkipList, Error> {
    RangeSkipList::with_config(
        gpu,
        RangeSkipListConfig {
            placement: Placement::Tiered {
                device_budget_bytes: budget,
            },
            keys_per_range: 1 << 12,
            initial_nodes: 16,
            ..Default::default()
        },
    )
}

#[test]
fn every_batch_evicts_and_reloads_and_matches_the_oracle() {
    let Some(gpu) = gpu() else { return };
    let budget = 384 << 10;
    let mut s = tiered(&gpu, budget).unwrap();
    let mut o = Oracle::new();
    // Every other key of 32 ranges: 2,048 keys per range, for which each pool grows to
    // at least 175 nodes (44 KiB): 1.4 MiB or more in all, over 3.6 times the budget.
    let fill: Vec<u32> = (1..1u32 << 17).step_by(2).collect();
    insert(&mut s, &mut o, &fill, |k| k.wrapping_mul(7));
    settle(&s, &o, "after the fill");
    let st = s.stats().unwrap();
    assert_eq!(st.containers, 32, "{st:?}");
    assert!(
        st.host_bytes >= 3 * budget,
        "the structure is not 3x the budget: {st:?}"
    );
    assert!(st.device_bytes <= budget, "{st:?}");
    let keys = Keys {
        dense: 1 << 17,
        anywhere: 0,
    };
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    for step in 0..10u32 {
        let what = format!("tiered step {step}");
        let before = s.stats().unwrap();
        let batch: Vec<u32> = (0..rng.random_range(1..8000usize))
            .map(|_| keys.draw(&mut rng))
            .collect();
        match step % 3 {
            0 => insert(&mut s, &mut o, &batch, |k| k ^ step),
            1 => remove(&mut s, &mut o, &batch, &what),
            _ => insert(&mut s, &mut o, &batch, |k| k.wrapping_add(step)),
        }
        settle(&s, &o, &what);
        let asks: Vec<u32> = (0..500).map(|_| keys.draw(&mut rng)).collect();
        // The queries include (0, 2^32 - 1): every range, so evicted pools come back.
        query(&mut s, &o, &asks, &what);
        let after = s.stats().unwrap();
        assert!(after.moved_in > before.moved_in, "{what}: {after:?}");
        assert!(after.device_bytes <= budget, "{what}: {after:?}");
    }
    let st = s.stats().unwrap();
    assert!(st.moved_out > 0 && st.link_bytes > 0, "{st:?}");
    let want: Vec<(u32, u32)> = o.iter().map(|(&a, &b)| (a, b)).collect();
    assert_eq!(s.to_vec().unwrap(), want, "contents in key order");
}

#[test]
fn many_small_pools_match_the_oracle() {
    let Some(gpu) = gpu() else { return };
    // Keys anywhere make a range (and a pool of 16 nodes) per key or two besides the 16
    // ranges of the dense window: runs of up to 64 pools, many per batch.
    let mut s = tiered(&gpu, 256 << 10).unwrap();
    random_batches(&mut s, 3, 8, Keys::MIXED, "tiered, small pools");
    let st = s.stats().unwrap();
    assert!(st.containers > 16 && st.moved_out > 0, "{st:?}");
}

#[test]
fn counts_add_up_across_evictions() {
    let Some(gpu) = gpu() else { return };
    let mut s = tiered(&gpu, 128 << 10).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let mut want: HashMap<u32, u32> = HashMap::new();
    for _ in 0..6 {
        let keys: Vec<u32> = (0..20_000)
            .map(|_| rng.random_range(1..1u32 << 18))
            .collect();
        let deltas: Vec<u32> = keys.iter().map(|&k| k % 3 + 1).collect();
        s.add_many(&keys, &deltas).unwrap();
        for (&k, &d) in keys.iter().zip(&deltas) {
            *want.entry(k).or_default() += d;
        }
        s.validate().unwrap();
    }
    let mut want: Vec<(u32, u32)> = want.into_iter().collect();
    want.sort_unstable();
    assert_eq!(s.to_vec().unwrap(), want);
    assert!(s.stats().unwrap().moved_out > 0);
}

#[test]
fn budgets_and_pools_beyond_them_are_errors() {
    let Some(gpu) = gpu() else { return };
    // A budget below one range's first pool.
    let err = tiered(&gpu, 16 * 256 - 1).unwrap_err();
    assert!(matches!(err, Error::Config(_)), "{err}");
    let default_pool = RangeSkipListConfig {
        placement: Placement::Tiered {
            device_budget_bytes: (4096 * 256) - 1,
        },
        ..Default::default()
    };
    assert!(matches!(
        RangeSkipList::with_config(&gpu, default_pool).unwrap_err(),
        Error::Config(_)
    ));
    // A budget of exactly one first pool: range 0 cannot grow past it.
    let mut s = tiered(&gpu, 16 * 256).unwrap();
    let keys: Vec<u32> = (1..=2000).collect();
    let err = s.insert_many(&keys, &keys).unwrap_err();
    assert!(
        matches!(&err, Error::Config(m) if m.contains("range 0")),
        "{err}"
    );
    // What applied is consistent: every pair is one of the batch's, counted exactly.
    s.validate().unwrap();
    let got = s.to_vec().unwrap();
    assert!(got.iter().all(|&(k, v)| k == v && (1..=2000).contains(&k)));
    assert_eq!(s.len().unwrap(), got.len() as u64);
    // Other ranges, one pool at a time, still work, and so do queries across them.
    let far = [5 << 12, 9 << 12];
    s.insert_many(&far, &[1, 2]).unwrap();
    assert_eq!(
        s.successor_many(&[(5 << 12) + 1]).unwrap(),
        vec![Some((9 << 12, 2))]
    );
    assert_eq!(
        s.remove_many(&keys).unwrap().iter().filter(|&&b| b).count(),
        got.len()
    );
    assert_eq!(s.to_vec().unwrap(), vec![(5 << 12, 1), (9 << 12, 2)]);
    s.validate().unwrap();
}

#[test]
fn overlapped_copies_over_many_runs_match_the_oracle_after_every_batch() {
    let Some(gpu) = gpu() else { return };
    // 64 ranges of the dense window whose pools grow to tens of KiB, a budget of 160
    // KiB (runs of at most 80 KiB of pools): every batch runs many runs, and each run's
    // successor is copied in on the copy stream while it runs.
    let budget = 160 << 10;
    let mut s = tiered(&gpu, budget).unwrap();
    let mut o = Oracle::new();
    let keys = Keys {
        dense: 1 << 18,
        anywhere: 200,
    };
    let mut rng = ChaCha8Rng::seed_from_u64(13);
    for step in 0..24u32 {
        let what = format!("overlapped step {step}");
        let batch: Vec<u32> = (0..rng.random_range(1000..12_000usize))
            .map(|_| keys.draw(&mut rng))
            .collect();
        match step % 4 {
            3 => remove(&mut s, &mut o, &batch, &what),
            _ => insert(&mut s, &mut o, &batch, |k| k ^ step),
        }
        settle(&s, &o, &what);
        let asks: Vec<u32> = (0..400).map(|_| keys.draw(&mut rng)).collect();
        query(&mut s, &o, &asks, &what);
        let st = s.stats().unwrap();
        assert!(st.device_bytes <= budget, "{what}: {st:?}");
        let want: Vec<(u32, u32)> = o.iter().map(|(&a, &b)| (a, b)).collect();
        assert_eq!(s.to_vec().unwrap(), want, "{what}: contents");
    }
    let st = s.stats().unwrap();
    assert!(st.overlapped_in > 0, "no copy overlapped a kernel: {st:?}");
    assert!(st.moved_out > 0, "{st:?}");
    eprintln!("{st:?}");
}
