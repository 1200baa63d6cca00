//! Errors that name operations name the caller's positions: faults injected on known keys
//! (the `fault-injection` feature: updates of a key window give up as a lock wait past
//! its cap does) in batches given out of key order and split into several kernel batches
//! (and, tiered, several runs), checked against exactly the keys not applied, with every
//! other operation applied (a `BTreeMap` oracle) and `validate()` after every call. The
//! range table's full inner tables likewise. Raises dropped (injected, or for want of
//! nodes in pools grown from 16) made again by the index repair: no node missing from
//! the index after it, searches as the oracle's.

mod common;

use common::{query, settle, Oracle, Ordered};
use gpuds_core::Status;
use gpuds_oversub::faults::Faults;
use gpuds_oversub::{
    Error, Placement, PoolLayout, RangeSkipList, RangeSkipListConfig, RangeTable, RangeTableConfig,
    SkipList, SkipListConfig,
};
use gpuds_testkit::gpu;
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};

/// The failed positions of a `NotApplied` error with its flags, or a panic.
fn failed(r: Result<(), Error>, what: &str) -> (Status, Vec<usize>) {
    match r {
        Err(Error::Core(gpuds_core::Error::NotApplied {
            status,
            not_applied,
        })) => (status, not_applied),
        other => panic!("{what}: expected NotApplied, got {other:?}"),
    }
}

/// Positions of `keys` inside `lo ..= hi`, ascending.
fn inside(keys: &[u32], (lo, hi): (u32, u32)) -> Vec<usize> {
    (0..keys.len())
        .filter(|&i| (lo..=hi).contains(&keys[i]))
        .collect()
}

/// Fisher-Yates.
fn shuffle(rng: &mut ChaCha8Rng, keys: &mut [u32]) {
    for i in (1..keys.len()).rev() {
        keys.swap(i, rng.random_range(0..=i));
    }
}

/// Shuffled keys from `[1, dense)` with some repeated.
fn shuffled(rng: &mut ChaCha8Rng, n: usize, dense: u32) -> Vec<u32> {
    let mut keys: Vec<u32> = (0..n).map(|_| rng.random_range(1..dense)).collect();
    let repeats: Vec<u32> = keys.iter().take(n / 10).copied().collect();
    keys.extend(repeats);
    shuffle(rng, &mut keys);
    keys
}

/// Injects a failing window into `t` and checks insertions, additions and removals
/// given out of key order: each call names exactly the positions of its keys in the
/// window (a rerun after pools grew may fail more: those are checked not applied), and
/// everything else applied.
fn window_faults(t: &mut dyn Faulty, dense: u32, seed: u64, what: &str) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut o = Oracle::new();
    let fill = shuffled(&mut rng, 6000, dense);
    let values: Vec<u32> = fill.iter().map(|&k| k ^ 0x55).collect();
    t.insert(&fill, &values).unwrap();
    for &k in &fill {
        o.insert(k, k ^ 0x55);
    }
    settle(t.ordered(), &o, &format!("{what}: fill"));
    let window = (dense / 3, dense / 3 + dense / 16);
    t.inject(Faults {
        fail_updates: Some(window),
        ..Default::default()
    })
    .unwrap();

    // Insertions: new values for old keys and new keys.
    let keys = shuffled(&mut rng, 5000, dense);
    let values: Vec<u32> = keys.iter().map(|&k| k.wrapping_mul(3)).collect();
    let (status, named) = failed(t.insert(&keys, &values), what);
    assert!(status.contains(Status::RETRY_LIMIT), "{what}: {status}");
    let want = inside(&keys, window);
    assert!(!want.is_empty(), "{what}: the batch misses the window");
    assert_eq!(named, want, "{what}: insertion failures");
    for (i, &k) in keys.iter().enumerate() {
        if named.binary_search(&i).is_err() {
            o.insert(k, k.wrapping_mul(3));
        }
    }
    settle(
        t.ordered(),
        &o,
        &format!("{what}: after the failed insertions"),
    );
    assert_eq!(t.ordered().pairs(), oracle_pairs(&o), "{what}: insertions");

    // Additions: one per key of the batch (repeats add twice).
    let keys = shuffled(&mut rng, 3000, dense);
    let ones = vec![1u32; keys.len()];
    let (_, named) = failed(t.add(&keys, &ones), what);
    assert_eq!(named, inside(&keys, window), "{what}: addition failures");
    for (i, &k) in keys.iter().enumerate() {
        if named.binary_search(&i).is_err() {
            let v = o.entry(k).or_insert(0);
            *v = v.wrapping_add(1);
        }
    }
    settle(
        t.ordered(),
        &o,
        &format!("{what}: after the failed additions"),
    );
    assert_eq!(t.ordered().pairs(), oracle_pairs(&o), "{what}: additions");

    // Removals.
    let keys = shuffled(&mut rng, 4000, dense);
    let (_, named) = failed(t.ordered().remove(&keys).map(|_| ()), what);
    assert_eq!(named, inside(&keys, window), "{what}: removal failures");
    for (i, &k) in keys.iter().enumerate() {
        if named.binary_search(&i).is_err() {
            o.remove(&k);
        }
    }
    settle(
        t.ordered(),
        &o,
        &format!("{what}: after the failed removals"),
    );
    assert_eq!(t.ordered().pairs(), oracle_pairs(&o), "{what}: removals");

    // Lifted: everything applies again.
    t.inject(Faults::default()).unwrap();
    let keys = shuffled(&mut rng, 2000, dense);
    let values: Vec<u32> = keys.iter().map(|&k| k ^ 7).collect();
    t.insert(&keys, &values).unwrap();
    for &k in &keys {
        o.insert(k, k ^ 7);
    }
    settle(t.ordered(), &o, &format!("{what}: lifted"));
    let asks: Vec<u32> = (0..500).map(|_| rng.random_range(1..dense)).collect();
    query(t.ordered(), &o, &asks, what);
}

fn oracle_pairs(o: &Oracle) -> Vec<(u32, u32)> {
    o.iter().map(|(&a, &b)| (a, b)).collect()
}

/// What the fault tests need of both skip lists.
trait Faulty {
    fn ordered(&mut self) -> &mut dyn Ordered;
    fn insert(&mut self, k: &[u32], v: &[u32]) -> Result<(), Error>;
    fn add(&mut self, k: &[u32], d: &[u32]) -> Result<(), Error>;
    fn inject(&mut self, f: Faults) -> Result<(), Error>;
    fn unindexed(&self) -> u64;
    fn dropped(&self) -> u64;
    fn repair(&mut self) -> Result<(), Error>;
}

macro_rules! faulty {
    ($t:ty) => {
        impl Faulty for $t {
            fn ordered(&mut self) -> &mut dyn Ordered {
                self
            }
            fn insert(&mut self, k: &[u32], v: &[u32]) -> Result<(), Error> {
                self.insert_many(k, v)
            }
            fn add(&mut self, k: &[u32], d: &[u32]) -> Result<(), Error> {
                self.add_many(k, d)
            }
            fn inject(&mut self, f: Faults) -> Result<(), Error> {
                self.inject_faults(f)
            }
            fn unindexed(&self) -> u64 {
                self.unindexed_nodes().unwrap()
            }
            fn dropped(&self) -> u64 {
                self.raises_dropped()
            }
            fn repair(&mut self) -> Result<(), Error> {
                self.repair_index()
            }
        }
    };
}
faulty!(SkipList);
faulty!(RangeSkipList);

#[test]
fn skip_list_failures_name_the_callers_positions() {
    let Some(gpu) = gpu() else { return };
    // Batches of 700 keys: every call runs several kernel batches.
    for (pools, initial_nodes) in [(PoolLayout::Shared, 4096), (PoolLayout::PerLayer, 16)] {
        let config = SkipListConfig {
            batch: 700,
            initial_nodes,
            pools,
            ..Default::default()
        };
        let mut s = SkipList::with_config(&gpu, config).unwrap();
        window_faults(&mut s, 1 << 16, 1, &format!("skip list, {pools:?}"));
    }
}

#[test]
fn range_skip_list_failures_name_the_callers_positions() {
    let Some(gpu) = gpu() else { return };
    for placement in [Placement::Device, Placement::HostMapped] {
        let config = RangeSkipListConfig {
            placement,
            keys_per_range: 1 << 12,
            batch: 700,
            initial_nodes: 64,
            ..Default::default()
        };
        let mut s = RangeSkipList::with_config(&gpu, config).unwrap();
        window_faults(
            &mut s,
            1 << 16,
            2,
            &format!("range skip list, {placement:?}"),
        );
    }
}

#[test]
fn tiered_failures_name_the_callers_positions_across_runs() {
    let Some(gpu) = gpu() else { return };
    // 32 ranges of pools starting at 16 nodes (4 KiB) and growing to 8 KiB or more, a
    // budget of a dozen of them: every call runs many runs, evicting and copying pools.
    let config = RangeSkipListConfig {
        placement: Placement::Tiered {
            device_budget_bytes: 96 << 10,
        },
        keys_per_range: 1 << 12,
        batch: 1500,
        initial_nodes: 16,
        ..Default::default()
    };
    let mut s = RangeSkipList::with_config(&gpu, config).unwrap();
    window_faults(&mut s, 1 << 17, 3, "tiered range skip list");
    assert!(s.stats().unwrap().moved_in > 32, "the cache never evicted");
}

#[test]
fn range_table_failures_name_the_callers_positions() {
    let Some(gpu) = gpu() else { return };
    for placement in [
        Placement::Device,
        Placement::Tiered {
            device_budget_bytes: 4 * 64 * 8,
        },
    ] {
        // Inner tables of 64 slots over ranges of 256 keys, batches of 300: the ranges
        // that get more than 64 keys fail the rest (TABLE_FULL).
        let config = RangeTableConfig {
            range_bits: 8,
            inner_keys: 64,
            load_factor: 1.0,
            batch: 300,
            placement,
        };
        let mut t = RangeTable::with_config(&gpu, config).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        let mut keys: Vec<u32> = (1..2048u32).collect();
        shuffle(&mut rng, &mut keys);
        let values: Vec<u32> = keys.iter().map(|&k| k + 1).collect();
        let (status, named) = failed(t.insert_many(&keys, &values), "range table");
        assert!(status.contains(Status::TABLE_FULL), "{status}");
        let got = t.get_many(&keys).unwrap();
        let missing: Vec<usize> = (0..keys.len()).filter(|&i| got[i].is_none()).collect();
        assert_eq!(
            named, missing,
            "{placement:?}: the named keys are the missing ones"
        );
        for (i, &k) in keys.iter().enumerate() {
            if let Some(v) = got[i] {
                assert_eq!(v, k + 1, "{placement:?}: key {k}");
            }
        }
        t.validate().unwrap();
        assert_eq!(t.len().unwrap(), (keys.len() - named.len()) as u64);
    }
}

/// Inserts `keys` (values k ^ 3) into `t` and the oracle.
fn fill(t: &mut dyn Ordered, o: &mut Oracle, keys: &[u32]) {
    let values: Vec<u32> = keys.iter().map(|&k| k ^ 3).collect();
    t.insert(keys, &values).unwrap();
    for &k in keys {
        o.insert(k, k ^ 3);
    }
}

/// Dropped raises are made again: with every raise dropped (injected), the index misses
/// nodes and searches still match the oracle; once lifted, a repair names every node,
/// and later calls keep it whole.
fn dropped_raises_are_repaired(t: &mut dyn Faulty, dense: u32, what: &str) {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let mut o = Oracle::new();
    t.inject(Faults {
        drop_raises: true,
        ..Default::default()
    })
    .unwrap();
    let keys = shuffled(&mut rng, 40_000, dense);
    fill(t.ordered(), &mut o, &keys);
    settle(t.ordered(), &o, &format!("{what}: raises dropped"));
    let missing = t.unindexed();
    assert!(missing > 0, "{what}: no node is missing from the index");
    assert!(t.dropped() > 0, "{what}: no raise was counted dropped");
    let asks: Vec<u32> = (0..2000).map(|_| rng.random_range(1..dense)).collect();
    query(t.ordered(), &o, &asks, &format!("{what}: raises dropped"));

    t.inject(Faults::default()).unwrap();
    t.repair().unwrap();
    assert_eq!(
        t.unindexed(),
        0,
        "{what}: after the repair ({missing} before)"
    );
    settle(t.ordered(), &o, &format!("{what}: repaired"));
    query(t.ordered(), &o, &asks, &format!("{what}: repaired"));

    // Later calls keep the index whole.
    let keys = shuffled(&mut rng, 20_000, dense);
    fill(t.ordered(), &mut o, &keys);
    let gone: Vec<u32> = keys.iter().step_by(2).copied().collect();
    common::remove(t.ordered(), &mut o, &gone, what);
    settle(t.ordered(), &o, &format!("{what}: later calls"));
    assert_eq!(t.unindexed(), 0, "{what}: after later calls");
    query(t.ordered(), &o, &asks, &format!("{what}: later calls"));
}

#[test]
fn skip_list_dropped_raises_are_made_later() {
    let Some(gpu) = gpu() else { return };
    for pools in [PoolLayout::Shared, PoolLayout::PerLayer] {
        let config = SkipListConfig {
            pools,
            ..Default::default()
        };
        let mut s = SkipList::with_config(&gpu, config).unwrap();
        dropped_raises_are_repaired(&mut s, 1 << 20, &format!("skip list, {pools:?}"));
    }
}

#[test]
fn range_skip_list_dropped_raises_are_made_later() {
    let Some(gpu) = gpu() else { return };
    let tiered = Placement::Tiered {
        device_budget_bytes: 1 << 20,
    };
    for placement in [Placement::Device, tiered] {
        let config = RangeSkipListConfig {
            placement,
            keys_per_range: 1 << 16,
            initial_nodes: 64,
            ..Default::default()
        };
        let mut s = RangeSkipList::with_config(&gpu, config).unwrap();
        dropped_raises_are_repaired(&mut s, 1 << 20, &format!("range skip list, {placement:?}"));
    }
}

/// Pools grown from 16 nodes (a pool per layer: the index layers' pools run out while
/// the data layer's reruns grow it): the raises dropped are made again before each call
/// returns, so the index misses no node after any call.
#[test]
fn raises_dropped_for_want_of_nodes_are_made_before_the_call_returns() {
    let Some(gpu) = gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(6);
    let config = SkipListConfig {
        pools: PoolLayout::PerLayer,
        initial_nodes: 16,
        ..Default::default()
    };
    let mut s = SkipList::with_config(&gpu, config).unwrap();
    let range = RangeSkipListConfig {
        keys_per_range: 1 << 18,
        initial_nodes: 16,
        ..Default::default()
    };
    let mut r = RangeSkipList::with_config(&gpu, range).unwrap();
    for (t, what) in [
        (&mut s as &mut dyn Faulty, "skip list"),
        (&mut r as &mut dyn Faulty, "range skip list"),
    ] {
        let mut o = Oracle::new();
        for step in 0..4 {
            let keys = shuffled(&mut rng, 100_000, 1 << 22);
            fill(t.ordered(), &mut o, &keys);
            let what = format!("{what} step {step}");
            settle(t.ordered(), &o, &what);
            assert_eq!(t.unindexed(), 0, "{what}: {} raises dropped", t.dropped());
            let asks: Vec<u32> = (0..2000).map(|_| rng.random_range(1..1 << 22)).collect();
            query(t.ordered(), &o, &asks, &what);
        }
        eprintln!("{what}: {} raises dropped and made again", t.dropped());
    }
}
