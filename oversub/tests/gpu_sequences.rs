//! FlatTable and RangeTable on the GPU against a `HashMap` oracle: each of the paper's
//! eight input sequences on the device, host-mapped and tiered placements (tiered with a
//! budget of a quarter of the inner tables, so that every batch evicts and reloads);
//! proptest sequences of insertions, removals and lookups; pinned allocations that fail.

use std::collections::HashMap;

use gpuds_oversub::workload::{search_queries, values, Sequence};
use gpuds_oversub::{Error, FlatTable, Placement, RangeTable, RangeTableConfig};
use gpuds_testkit::gpu;
use proptest::prelude::*;

mod common;

use common::tables::Table;

/// Range bits of the range tables here: dense sequences of 2^13 keys open 8 ranges.
const RANGE_BITS: u32 = 10;

/// A range table over `keys`: inner tables sized for twice the most keys one range gets
/// (every key of the range where that passes it), batches of 3,000 keys.
fn range_config(keys: &[u32], placement: Placement) -> RangeTableConfig {
    let mut per_range: HashMap<u32, u64> = HashMap::new();
    for &k in keys {
        *per_range.entry(k >> RANGE_BITS).or_default() += 1;
    }
    let most = per_range.values().copied().max().unwrap_or(1);
    let inner_keys = 2 * most;
    RangeTableConfig {
        range_bits: RANGE_BITS,
        inner_keys: if inner_keys >= 1 << RANGE_BITS {
            0
        } else {
            inner_keys
        },
        batch: 3000,
        placement,
        ..Default::default()
    }
}

/// Inserts `keys` (with `vals`), looks up a third of them replaced by absent keys,
/// removes every other key and looks all of them up again, against the oracle, with
/// `validate()` and the count after every call and the contents at the end.
fn run_sequence(t: &mut dyn Table, keys: &[u32], vals: &[u32], what: &str) {
    let mut oracle: HashMap<u32, u32> = keys.iter().copied().zip(vals.iter().copied()).collect();
    let settle = |t: &dyn Table, oracle: &HashMap<u32, u32>, step: &str| {
        t.check().unwrap_or_else(|e| panic!("{what} {step}: {e}"));
        assert_eq!(t.len(), oracle.len() as u64, "{what} {step}: len");
    };
    let lookups = |t: &mut dyn Table, oracle: &HashMap<u32, u32>, queries: &[u32], step: &str| {
        let got = t.get(queries).unwrap();
        for (&q, g) in queries.iter().zip(&got) {
            assert_eq!(*g, oracle.get(&q).copied(), "{what} {step}: key {q}");
        }
    };
    t.insert(keys, vals).unwrap();
    settle(t, &oracle, "insert");
    lookups(t, &oracle, &search_queries(keys, 3, 5), "search");
    let half: Vec<u32> = keys.iter().step_by(2).copied().collect();
    let removed = t.remove(&half).unwrap();
    let mut want = 0;
    for &k in &half {
        want += usize::from(oracle.remove(&k).is_some());
    }
    assert_eq!(
        removed.iter().filter(|&&r| r).count(),
        want,
        "{what}: removed"
    );
    settle(t, &oracle, "remove");
    lookups(t, &oracle, keys, "search after remove");
    let mut pairs = t.pairs();
    pairs.sort_unstable();
    let mut expected: Vec<(u32, u32)> = oracle.into_iter().collect();
    expected.sort_unstable();
    assert_eq!(pairs, expected, "{what}: contents");
}

#[test]
fn the_eight_sequences_on_every_table() {
    let Some(gpu) = gpu() else { return };
    let n = 1 << 13;
    for seq in Sequence::ALL {
        let keys = seq.keys(n, 3);
        let vals = values(&keys, 3);
        for placement in [Placement::Device, Placement::HostMapped] {
            let what = format!("{} flat {}", seq.name(), placement.name());
            let mut flat = FlatTable::new(&gpu, 2 * n as u64, placement).unwrap();
            run_sequence(&mut flat, &keys, &vals, &what);
        }
        // The host-mapped range table sizes the tiered one: a quarter of its inner tables.
        let mut mapped =
            RangeTable::with_config(&gpu, range_config(&keys, Placement::HostMapped)).unwrap();
        let what = format!("{} range host-mapped", seq.name());
        run_sequence(&mut mapped, &keys, &vals, &what);
        let s = mapped.stats();
        let inner = s.host_bytes / s.containers;
        let budget = inner * (s.containers / 4).max(1);
        let mut device =
            RangeTable::with_config(&gpu, range_config(&keys, Placement::Device)).unwrap();
        run_sequence(
            &mut device,
            &keys,
            &vals,
            &format!("{} range device", seq.name()),
        );
        let tiered = Placement::Tiered {
            device_budget_bytes: budget,
        };
        let mut t = RangeTable::with_config(&gpu, range_config(&keys, tiered)).unwrap();
        run_sequence(
            &mut t,
            &keys,
            &vals,
            &format!("{} range tiered", seq.name()),
        );
        if s.containers >= 4 {
            let st = t.stats();
            assert!(
                st.moved_in > 0 && st.moved_out > 0,
                "{}: {st:?}",
                seq.name()
            );
        }
        t.write_back().unwrap();
        t.validate().unwrap();
    }
}

/// One proptest step: insert (0), remove (1) or look up (2) `keys`.
fn apply(t: &mut dyn Table, oracle: &mut HashMap<u32, u32>, op: u8, keys: &[u32], what: &str) {
    match op {
        0 => {
            // A key's value is a function of the key, so repeats in a batch agree.
            let vals: Vec<u32> = keys.iter().map(|&k| k.wrapping_mul(7)).collect();
            t.insert(keys, &vals).unwrap();
            for (&k, &v) in keys.iter().zip(&vals) {
                oracle.insert(k, v);
            }
        }
        1 => {
            let removed = t.remove(keys).unwrap();
            let mut want = 0;
            for &k in keys {
                want += usize::from(oracle.remove(&k).is_some());
            }
            assert_eq!(
                removed.iter().filter(|&&r| r).count(),
                want,
                "{what}: removed"
            );
        }
        _ => {
            let got = t.get(keys).unwrap();
            for (&k, g) in keys.iter().zip(&got) {
                assert_eq!(*g, oracle.get(&k).copied(), "{what}: key {k}");
            }
        }
    }
    t.check().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(t.len(), oracle.len() as u64, "{what}: len");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]
    #[test]
    fn proptest_sequences_match_the_oracle(
        ops in proptest::collection::vec(
            (0u8..3, proptest::collection::vec(1u32..20_000, 1..600)),
            1..10,
        )
    ) {
        let Some(gpu) = gpu() else { return Ok(()) };
        let config = RangeTableConfig {
            range_bits: RANGE_BITS,
            batch: 500,
            ..Default::default()
        };
        let inner = (2u64 << RANGE_BITS) * 8; // load factor 0.5
        let tiered = RangeTableConfig {
            placement: Placement::Tiered { device_budget_bytes: 3 * inner },
            ..config
        };
        let mut tables: Vec<(Box<dyn Table>, &str)> = vec![
            (Box::new(FlatTable::new(&gpu, 40_000, Placement::Device).unwrap()), "flat"),
            (Box::new(RangeTable::with_config(&gpu, config).unwrap()), "range"),
            (Box::new(RangeTable::with_config(&gpu, tiered).unwrap()), "range tiered"),
        ];
        for (t, name) in &mut tables {
            let mut oracle = HashMap::new();
            for (step, (op, keys)) in ops.iter().enumerate() {
                apply(t.as_mut(), &mut oracle, *op, keys, &format!("{name} step {step}"));
            }
        }
    }
}

/// A pinned allocation the host cannot give (petabytes) is an error naming it, before
/// anything is applied: the table stays empty, valid and answering.
#[test]
fn pinned_allocations_that_fail_are_errors_and_change_nothing() {
    let Some(gpu) = gpu() else { return };
    // 2^28 keys per inner table at load factor 2^-20: 2^48 slots, 2 PiB.
    let config = RangeTableConfig {
        range_bits: 28,
        load_factor: 1.0 / (1u64 << 20) as f64,
        placement: Placement::HostMapped,
        ..Default::default()
    };
    let mut t = RangeTable::with_config(&gpu, config).unwrap();
    assert!(matches!(
        t.insert_many(&[5, 6], &[50, 60]),
        Err(Error::HostAlloc { .. })
    ));
    assert!(matches!(t.reserve(1..=7), Err(Error::HostAlloc { .. })));
    assert_eq!(t.len().unwrap(), 0);
    assert_eq!(t.stats().containers, 0);
    t.validate().unwrap();
    assert_eq!(t.get_many(&[5, 6]).unwrap(), vec![None, None]);
    // A flat table of 2^47 slots (1 PiB) host-mapped fails at its construction.
    assert!(matches!(
        FlatTable::new(&gpu, 1 << 46, Placement::HostMapped),
        Err(Error::HostAlloc { .. })
    ));
}
