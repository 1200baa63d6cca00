//! FlatTable and RangeTable on the GPU, on every placement (managed at small sizes only),
//! against a `HashMap` oracle: random batches of insertions (with duplicates),
//! removals and lookups, `validate()` after every batch; reserved keys, the managed
//! guard, a full flat table.

use std::collections::HashMap;

use gpuds_core::Error as CoreError;
use gpuds_oversub::{Error, FlatTable, Placement, RangeTable, RangeTableConfig, Region};
use gpuds_testkit::gpu;
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};

mod common;

use common::tables::Table;

/// Keys from a small dense range and a few sparse ones (never reserved).
fn key(rng: &mut ChaCha8Rng, dense: u32) -> u32 {
    if rng.random_range(0..50u32) == 0 {
        rng.random_range(1..u32::MAX - 1)
    } else {
        rng.random_range(1..dense)
    }
}

fn random_batches(t: &mut dyn Table, seed: u64, what: &str) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut oracle: HashMap<u32, u32> = HashMap::new();
    for step in 0..12 {
        let n = rng.random_range(1..3000usize);
        match rng.random_range(0..3u32) {
            0 => {
                // Distinct keys per batch keep the expected values exact.
                let mut keys: Vec<u32> = (0..n).map(|_| key(&mut rng, 1 << 18)).collect();
                keys.sort_unstable();
                keys.dedup();
                let values: Vec<u32> = keys.iter().map(|_| rng.random_range(0..1000u32)).collect();
                t.insert(&keys, &values).unwrap();
                for (&k, &v) in keys.iter().zip(&values) {
                    oracle.insert(k, v);
                }
            }
            1 => {
                let keys: Vec<u32> = (0..n).map(|_| key(&mut rng, 1 << 18)).collect();
                let removed = t.remove(&keys).unwrap();
                // A key named twice is removed once: the oracle removes in order.
                let mut want = Vec::new();
                let mut gone = std::collections::HashSet::new();
                for &k in &keys {
                    want.push(oracle.remove(&k).is_some() && gone.insert(k));
                }
                let got_count = removed.iter().filter(|r| **r).count();
                let want_count = want.iter().filter(|r| **r).count();
                assert_eq!(got_count, want_count, "{what} step {step}: removed");
            }
            _ => {
                let keys: Vec<u32> = (0..n).map(|_| key(&mut rng, 1 << 18)).collect();
                let got = t.get(&keys).unwrap();
                for (i, &k) in keys.iter().enumerate() {
                    assert_eq!(
                        got[i],
                        oracle.get(&k).copied(),
                        "{what} step {step}: key {k}"
                    );
                }
            }
        }
        t.check()
            .unwrap_or_else(|e| panic!("{what} step {step}: {e}"));
        assert_eq!(t.len(), oracle.len() as u64, "{what} step {step}: len");
    }
    let mut pairs = t.pairs();
    pairs.sort_unstable();
    let mut want: Vec<(u32, u32)> = oracle.into_iter().collect();
    want.sort_unstable();
    assert_eq!(pairs, want, "{what}: contents");
}

#[test]
fn flat_tables_on_every_placement_match_the_oracle() {
    let Some(gpu) = gpu() else { return };
    for placement in Placement::ALL {
        let mut t = FlatTable::new(&gpu, 40_000, placement).unwrap();
        random_batches(&mut t, 1, &format!("flat {}", placement.name()));
        assert_eq!(t.stats().containers, 1);
    }
}

#[test]
fn range_tables_on_every_placement_match_the_oracle() {
    let Some(gpu) = gpu() else { return };
    for placement in Placement::ALL {
        let config = RangeTableConfig {
            range_bits: 14,
            placement,
            batch: 1000,
            ..Default::default()
        };
        let mut t = RangeTable::with_config(&gpu, config).unwrap();
        random_batches(&mut t, 2, &format!("range {}", placement.name()));
        let s = t.stats();
        assert!(s.containers > 1);
        match placement {
            Placement::HostMapped => assert!(s.host_bytes > 0),
            Placement::Managed => assert!(s.managed_bytes > 0),
            Placement::Device => assert_eq!(s.host_bytes + s.managed_bytes, 0),
            Placement::Tiered { .. } => unreachable!("not in Placement::ALL"),
        }
    }
}

#[test]
fn reserved_keys_are_refused_and_change_nothing() {
    let Some(gpu) = gpu() else { return };
    let mut f = FlatTable::new(&gpu, 100, Placement::Device).unwrap();
    let e = f.insert_many(&[5, 0, 7], &[1, 2, 3]).unwrap_err();
    assert!(matches!(e, Error::ReservedKey { index: 1, key: 0 }), "{e}");
    assert_eq!(f.len().unwrap(), 0);
    let mut r = RangeTable::new(&gpu).unwrap();
    let e = r.insert_many(&[5, 6, u32::MAX], &[1, 2, 3]).unwrap_err();
    assert!(
        matches!(
            e,
            Error::ReservedKey {
                index: 2,
                key: u32::MAX
            }
        ),
        "{e}"
    );
    assert_eq!(r.len().unwrap(), 0);
    assert!(matches!(r.get_many(&[0]), Err(Error::ReservedKey { .. })));
    // Device batches are checked on the device.
    let stream = gpu.stream();
    let (k, v) = (
        stream.clone_htod(&[3u32, u32::MAX]).unwrap(),
        stream.clone_htod(&[1u32, 2]).unwrap(),
    );
    let e = f.insert_many_device(&k, &v).unwrap_err();
    assert!(matches!(e, Error::ReservedKey { index: 1, .. }), "{e}");
    assert_eq!(f.len().unwrap(), 0);
    assert!(matches!(
        f.insert_many(&[1], &[1, 2]),
        Err(Error::LengthMismatch { .. })
    ));
}

#[test]
fn the_managed_guard_refuses_before_allocating() {
    let Some(gpu) = gpu() else { return };
    let (free, _) = gpu.memory_info().unwrap();
    let before = gpuds_oversub::managed_bytes();
    let e = Region::new(&gpu, Placement::Managed, free as u64).unwrap_err();
    assert!(matches!(e, Error::ManagedGuard { .. }), "{e}");
    assert_eq!(gpuds_oversub::managed_bytes(), before);
    // A small one is fine, and given back on drop.
    let r = Region::new(&gpu, Placement::Managed, 1 << 20).unwrap();
    assert_eq!(gpuds_oversub::managed_bytes(), before + (1 << 20));
    drop(r);
    assert_eq!(gpuds_oversub::managed_bytes(), before);
}

#[test]
fn a_full_flat_table_fails_the_keys_without_a_slot() {
    let Some(gpu) = gpu() else { return };
    let mut f = FlatTable::new(&gpu, 64, Placement::Device).unwrap();
    let slots = f.slots();
    let keys: Vec<u32> = (1..=(slots as u32 + 50)).collect();
    let e = f.insert_many(&keys, &keys).unwrap_err();
    match e {
        Error::Core(CoreError::NotApplied {
            status,
            not_applied,
        }) => {
            assert!(status.contains(gpuds_core::Status::TABLE_FULL));
            assert_eq!(not_applied.len(), 50);
        }
        other => panic!("{other}"),
    }
    f.validate().unwrap();
    assert_eq!(f.len().unwrap(), slots);
    // Lookups of absent keys in a full table end after every window: no hang.
    assert_eq!(f.get_many(&[u32::MAX - 5]).unwrap(), vec![None]);
    // Replacing keys that are in works in a full table (which 50 keys found no slot
    // depends on the order of the batch's requests).
    let present: Vec<u32> = f.to_vec().unwrap().iter().take(10).map(|p| p.0).collect();
    f.insert_many(&present, &[9; 10]).unwrap();
    assert_eq!(f.get_many(&present[..1]).unwrap(), vec![Some(9)]);
}

#[test]
fn large_batches_on_host_mapped_memory() {
    let Some(gpu) = gpu() else { return };
    let n = 1usize << 22;
    // A permutation of 1..=n (four ranges of 2^20 keys): dense, as the paper's DU.
    let keys: Vec<u32> = (0..n as u32)
        .map(|i| i.wrapping_mul(2_654_435_761) % n as u32 + 1)
        .collect();
    let mut r = RangeTable::with_config(
        &gpu,
        RangeTableConfig {
            placement: Placement::HostMapped,
            batch: 1 << 20,
            ..Default::default()
        },
    )
    .unwrap();
    r.insert_many(&keys, &keys).unwrap();
    let mut f = FlatTable::new(&gpu, n as u64, Placement::HostMapped).unwrap();
    f.insert_many(&keys, &keys).unwrap();
    let mut distinct = keys.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(r.len().unwrap(), distinct.len() as u64);
    assert_eq!(f.len().unwrap(), distinct.len() as u64);
    let probe: Vec<u32> = keys.iter().step_by(97).copied().collect();
    let want: Vec<Option<u32>> = probe.iter().map(|&k| Some(k)).collect();
    assert_eq!(r.get_many(&probe).unwrap(), want);
    assert_eq!(f.get_many(&probe).unwrap(), want);
    r.validate().unwrap();
    f.validate().unwrap();
}

/// The tiered placement with a device budget of a quarter of the inner tables a run
/// touches: every batch evicts and reloads, dirty tables are written back, and the
/// contents stay the oracle's.
#[test]
fn tiered_range_tables_evict_reload_and_lose_nothing() {
    let Some(gpu) = gpu() else { return };
    let inner_bytes = (1u64 << 15) * 8; // range_bits 14 at load factor 0.5
    let config = RangeTableConfig {
        range_bits: 14,
        placement: Placement::Tiered {
            device_budget_bytes: 4 * inner_bytes,
        },
        batch: 1000,
        ..Default::default()
    };
    let mut t = RangeTable::with_config(&gpu, config).unwrap();
    random_batches(&mut t, 3, "tiered");
    let s = t.stats();
    assert!(s.containers > 8, "{s:?}");
    assert!(s.moved_in > s.containers, "{s:?}");
    assert!(s.moved_out > 0, "{s:?}");
    assert_eq!(s.device_bytes - (1u64 << 18) * 16, 4 * inner_bytes);
    t.write_back().unwrap();
    t.validate().unwrap();
    // A budget below one inner table is a configuration error.
    let small = RangeTableConfig {
        range_bits: 14,
        placement: Placement::Tiered {
            device_budget_bytes: inner_bytes - 1,
        },
        ..Default::default()
    };
    assert!(matches!(
        RangeTable::with_config(&gpu, small),
        Err(Error::Config(_))
    ));
    // A flat table has one container: tiered is refused.
    let tiered = Placement::Tiered {
        device_budget_bytes: 1 << 30,
    };
    assert!(matches!(
        FlatTable::new(&gpu, 100, tiered),
        Err(Error::Config(_))
    ));
}

/// Counting (`add_many`): repeated keys across and inside batches add up exactly, on the
/// flat table and the range table (host-mapped and tiered).
#[test]
fn counts_add_up_on_every_table() {
    let Some(gpu) = gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    let batches: Vec<(Vec<u32>, Vec<u32>)> = (0..3)
        .map(|_| {
            let keys: Vec<u32> = (0..50_000).map(|_| key(&mut rng, 1 << 17)).collect();
            let deltas: Vec<u32> = keys.iter().map(|_| rng.random_range(1..4u32)).collect();
            (keys, deltas)
        })
        .collect();
    let mut oracle: HashMap<u32, u32> = HashMap::new();
    for (keys, deltas) in &batches {
        for (&k, &d) in keys.iter().zip(deltas) {
            *oracle.entry(k).or_default() += d;
        }
    }
    let probe: Vec<u32> = oracle.keys().copied().chain([7_777_777, 123]).collect();
    let want: Vec<Option<u32>> = probe.iter().map(|k| oracle.get(k).copied()).collect();
    let mut flat = FlatTable::new(&gpu, 200_000, Placement::HostMapped).unwrap();
    for (keys, deltas) in &batches {
        flat.add_many(keys, deltas).unwrap();
    }
    assert_eq!(flat.get_many(&probe).unwrap(), want);
    flat.validate().unwrap();
    for placement in [
        Placement::HostMapped,
        Placement::Tiered {
            device_budget_bytes: 2 * (1u64 << 15) * 8,
        },
    ] {
        let config = RangeTableConfig {
            range_bits: 14,
            placement,
            ..Default::default()
        };
        let mut range = RangeTable::with_config(&gpu, config).unwrap();
        for (keys, deltas) in &batches {
            range.add_many(keys, deltas).unwrap();
        }
        assert_eq!(
            range.get_many(&probe).unwrap(),
            want,
            "{}",
            placement.name()
        );
        assert_eq!(range.len().unwrap(), oracle.len() as u64);
        range.write_back().unwrap();
        range.validate().unwrap();
    }
}

/// Looks every key of the oracle up in one batch.
fn every_key_matches(t: &mut RangeTable, oracle: &HashMap<u32, u32>, what: &str) {
    let all: Vec<u32> = oracle.keys().copied().collect();
    let want: Vec<Option<u32>> = all.iter().map(|k| oracle.get(k).copied()).collect();
    assert_eq!(t.get_many(&all).unwrap(), want, "{what}: every key");
}

/// The tiered placement over batches that each span many runs (keys over 24 ranges and
/// a few sparse ones), with a cache of 1, 2 and 3 inner tables. One slot copies in the
/// serial order (each copy waits for the previous run's kernel); 2 and 3 copy each run's
/// tables on the copy stream while the previous run's kernel runs. Inserts, additions,
/// removals and lookups against a `HashMap`, with `validate()` and a lookup of every key
/// after every batch; after `write_back()`, `validate()`, the contents, and lookups that
/// reload every table from its home.
#[test]
fn tiered_batches_of_many_runs_overlap_copies_and_lose_nothing() {
    let Some(gpu) = gpu() else { return };
    let inner_bytes = (1u64 << 15) * 8; // range_bits 14 at load factor 0.5
    for slots in 1..=3u64 {
        let what = format!("tiered, {slots} slots");
        let config = RangeTableConfig {
            range_bits: 14,
            placement: Placement::Tiered {
                device_budget_bytes: slots * inner_bytes,
            },
            ..Default::default()
        };
        let mut t = RangeTable::with_config(&gpu, config).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(10 + slots);
        let mut oracle: HashMap<u32, u32> = HashMap::new();
        let key = |rng: &mut ChaCha8Rng| {
            if rng.random_range(0..100u32) == 0 {
                rng.random_range(1..u32::MAX - 1)
            } else {
                rng.random_range(1u32 << 14..25 << 14)
            }
        };
        let distinct = |rng: &mut ChaCha8Rng, n: usize| {
            let mut keys: Vec<u32> = (0..n).map(|_| key(rng)).collect();
            keys.sort_unstable();
            keys.dedup();
            // Unsorted, so that the table's own sort matters.
            keys.sort_unstable_by_key(|k| k.wrapping_mul(2_654_435_761));
            keys
        };
        for step in 0..16 {
            let n = rng.random_range(500..4000usize);
            match step % 4 {
                0 => {
                    let keys = distinct(&mut rng, n);
                    let values: Vec<u32> =
                        keys.iter().map(|_| rng.random_range(0..1000u32)).collect();
                    t.insert_many(&keys, &values).unwrap();
                    oracle.extend(keys.iter().copied().zip(values.iter().copied()));
                }
                1 => {
                    // Repeated keys add up.
                    let keys: Vec<u32> = (0..n).map(|_| key(&mut rng)).collect();
                    let deltas: Vec<u32> = keys.iter().map(|_| rng.random_range(1..4u32)).collect();
                    t.add_many(&keys, &deltas).unwrap();
                    for (&k, &d) in keys.iter().zip(&deltas) {
                        *oracle.entry(k).or_default() += d;
                    }
                }
                2 => {
                    let keys = distinct(&mut rng, n);
                    let removed = t.remove_many(&keys).unwrap();
                    let want: Vec<bool> = keys.iter().map(|k| oracle.remove(k).is_some()).collect();
                    assert_eq!(removed, want, "{what} step {step}: removed");
                }
                _ => {
                    let keys: Vec<u32> = (0..n).map(|_| key(&mut rng)).collect();
                    let want: Vec<Option<u32>> =
                        keys.iter().map(|k| oracle.get(k).copied()).collect();
                    assert_eq!(t.get_many(&keys).unwrap(), want, "{what} step {step}: get");
                }
            }
            t.validate()
                .unwrap_or_else(|e| panic!("{what} step {step}: {e}"));
            assert_eq!(
                t.len().unwrap(),
                oracle.len() as u64,
                "{what} step {step}: len"
            );
            every_key_matches(&mut t, &oracle, &format!("{what} step {step}"));
        }
        // A last insertion leaves dirty tables in the cache.
        let keys = distinct(&mut rng, 3000);
        t.insert_many(&keys, &keys).unwrap();
        oracle.extend(keys.iter().map(|&k| (k, k)));
        let s = t.stats();
        assert!(s.containers >= 24, "{what}: {s:?}");
        // The lookups of every key alone load at least 21 of the 24 dense ranges' tables.
        assert!(s.moved_in > 16 * 21, "{what}: {s:?}");
        assert!(s.moved_out > 0, "{what}: {s:?}");
        assert!(s.overlapped_in <= s.moved_in, "{what}: {s:?}");
        if slots == 1 {
            assert_eq!(s.overlapped_in, 0, "{what}: one slot overlaps nothing");
        } else {
            // Each batch after its first run copies in on the copy stream.
            assert!(s.overlapped_in > s.moved_in / 2, "{what}: {s:?}");
        }
        assert_eq!(
            s.device_bytes,
            (1u64 << 18) * 16 + slots * inner_bytes,
            "{what}: the outer array and the cache"
        );
        t.write_back().unwrap();
        t.validate().unwrap();
        let again = t.stats();
        assert!(
            again.moved_out > s.moved_out && again.moved_out <= s.moved_out + slots,
            "{what}: write_back writes the dirty cached tables: {s:?} then {again:?}"
        );
        let mut pairs = t.to_vec().unwrap();
        pairs.sort_unstable();
        let mut want: Vec<(u32, u32)> = oracle.iter().map(|(&k, &v)| (k, v)).collect();
        want.sort_unstable();
        assert_eq!(pairs, want, "{what}: contents");
        // Every range's table comes back from its home (the cached ones, clean now, run
        // first; the others evict them without a write-back).
        every_key_matches(&mut t, &oracle, &format!("{what}, after write-back"));
        assert!(t.stats().moved_in > again.moved_in, "{what}: reloaded");
        t.validate().unwrap();
    }
}
