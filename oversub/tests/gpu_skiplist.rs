//! SkipList and RangeSkipList on the GPU against a `BTreeMap` oracle: random and proptest
//! batches of insertions (duplicates included), removals, lookups, successor, predecessor
//! and range queries with `validate()` after every batch, on every placement (managed at
//! small sizes only) and with the §4.2.1 options; the eight Table 2 sequences; sorted
//! input with every warp contending (bounded in time); pools that grow from 16 nodes;
//! everything removed and inserted again; reserved keys.

mod common;

use std::collections::BTreeMap;
use std::ops::Bound::{Excluded, Unbounded};

use common::{insert, query, random_batches, remove, settle, Keys, Oracle, Ordered};
use gpuds_oversub::workload::Sequence;
use gpuds_oversub::{
    Error, NodeLayout, Placement, PoolLayout, RangeSkipList, RangeSkipListConfig, SkipList,
    SkipListConfig,
};
use gpuds_testkit::gpu;
use proptest::prelude::*;
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};

fn skip(gpu: &gpuds_core::Gpu, config: SkipListConfig) -> SkipList {
    SkipList::with_config(gpu, config).unwrap()
}

fn ranged(gpu: &gpuds_core::Gpu, config: RangeSkipListConfig) -> RangeSkipList {
    RangeSkipList::with_config(gpu, config).unwrap()
}

#[test]
fn skip_lists_on_every_placement_match_the_oracle() {
    let Some(gpu) = gpu() else { return };
    for placement in Placement::ALL {
        let mut s = SkipList::new(&gpu, placement).unwrap();
        random_batches(
            &mut s,
            1,
            14,
            Keys::MIXED,
            &format!("skip list {}", placement.name()),
        );
        let config = RangeSkipListConfig {
            placement,
            keys_per_range: 1 << 12,
            ..Default::default()
        };
        let mut r = ranged(&gpu, config);
        random_batches(
            &mut r,
            2,
            14,
            Keys::MIXED,
            &format!("range skip list {}", placement.name()),
        );
        let stats = r.stats().unwrap();
        assert!(stats.containers > 10, "{stats:?}");
    }
}

#[test]
fn every_option_matches_the_oracle() {
    let Some(gpu) = gpu() else { return };
    // The last field caps the grid (0: every resident block): one block of 4 warps, or
    // 3, deal every operation of a batch round robin over few warps.
    let options = [
        (NodeLayout::Unsorted, PoolLayout::Shared, false, 1, 0),
        (NodeLayout::Sorted, PoolLayout::IndexSeparate, true, 300, 0),
        (NodeLayout::Unsorted, PoolLayout::PerLayer, true, 180, 3),
        (NodeLayout::Sorted, PoolLayout::PerLayer, false, 32, 0),
        (NodeLayout::Sorted, PoolLayout::Shared, false, 1, 1),
    ];
    for (i, &(layout, pools, pin, kpw, max_blocks)) in options.iter().enumerate() {
        let config = SkipListConfig {
            placement: Placement::HostMapped,
            layout,
            pools,
            pin_index_layers: pin,
            keys_per_warp: kpw,
            max_blocks,
            batch: 2500,
            initial_nodes: 16,
        };
        let what =
            format!("skip list {layout:?} {pools:?} pinned {pin} kpw {kpw} blocks {max_blocks}");
        random_batches(
            &mut skip(&gpu, config),
            10 + i as u64,
            10,
            Keys::MIXED,
            &what,
        );
        if pin {
            assert!(skip(&gpu, config).stats().unwrap().device_bytes > 0);
        }
    }
    let config = RangeSkipListConfig {
        layout: NodeLayout::Unsorted,
        keys_per_range: 1 << 13,
        keys_per_warp: 1,
        max_blocks: 2,
        batch: 3000,
        initial_nodes: 16,
        ..Default::default()
    };
    random_batches(
        &mut ranged(&gpu, config),
        20,
        10,
        Keys::MIXED,
        "range skip list unsorted",
    );
}

#[test]
fn the_eight_sequences() {
    let Some(gpu) = gpu() else { return };
    let n = 1 << 16;
    for seq in Sequence::ALL {
        let keys = seq.keys(n, 5);
        let structures: [Box<dyn Ordered>; 2] = [
            Box::new(SkipList::new(&gpu, Placement::Device).unwrap()),
            Box::new(ranged(&gpu, RangeSkipListConfig::default())),
        ];
        for (j, mut t) in structures.into_iter().enumerate() {
            let what = format!("{} structure {j}", seq.name());
            let mut o = Oracle::new();
            insert(t.as_mut(), &mut o, &keys, |k| k.wrapping_mul(3));
            settle(t.as_ref(), &o, &what);
            query(t.as_mut(), &o, &keys[..4096], &what);
            let half: Vec<u32> = keys.iter().step_by(2).copied().collect();
            remove(t.as_mut(), &mut o, &half, &what);
            settle(t.as_ref(), &o, &what);
            query(t.as_mut(), &o, &keys[..4096], &what);
        }
    }
}

#[test]
fn sorted_input_with_every_warp_contending_finishes() {
    let Some(gpu) = gpu() else { return };
    // MI, dealt one key per warp: every warp wants the same growing last node.
    let n = 1u32 << 20;
    let keys: Vec<u32> = (1..=n).collect();
    let config = SkipListConfig {
        keys_per_warp: 1,
        ..Default::default()
    };
    let mut s = skip(&gpu, config);
    let start = std::time::Instant::now();
    s.insert_many(&keys, &keys).unwrap();
    assert!(start.elapsed().as_secs() < 60, "took {:?}", start.elapsed());
    assert_eq!(s.len().unwrap(), u64::from(n));
    s.validate().unwrap();
    let got = s.get_many(&[1, n / 2, n, n + 1]).unwrap();
    assert_eq!(got, vec![Some(1), Some(n / 2), Some(n), None]);
}

#[test]
fn pools_grow_and_everything_can_be_removed_and_reinserted() {
    let Some(gpu) = gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let mut keys: Vec<u32> = (1..=200_000u32).map(|k| k * 7).collect();
    for i in (1..keys.len()).rev() {
        keys.swap(i, rng.random_range(0..=i));
    }
    let config = SkipListConfig {
        initial_nodes: 16,
        ..Default::default()
    };
    let mut structures: [Box<dyn Ordered>; 2] = [
        Box::new(skip(&gpu, config)),
        Box::new(ranged(
            &gpu,
            RangeSkipListConfig {
                keys_per_range: 1 << 14,
                initial_nodes: 16,
                ..Default::default()
            },
        )),
    ];
    for (j, t) in structures.iter_mut().enumerate() {
        let what = format!("structure {j}");
        let mut o = Oracle::new();
        insert(t.as_mut(), &mut o, &keys, |k| k + 1);
        settle(t.as_ref(), &o, &what);
        remove(t.as_mut(), &mut o, &keys, &what);
        settle(t.as_ref(), &o, &what);
        assert!(t.pairs().is_empty());
        assert_eq!(t.succ(&[0]).unwrap(), vec![None]);
        insert(t.as_mut(), &mut o, &keys[..50_000], |k| k + 2);
        settle(t.as_ref(), &o, &what);
        query(t.as_mut(), &o, &keys[..2000], &what);
    }
}

#[test]
fn reserved_keys_are_refused_and_change_nothing() {
    let Some(gpu) = gpu() else { return };
    let mut s = SkipList::new(&gpu, Placement::Device).unwrap();
    s.insert_many(&[5, 6], &[1, 2]).unwrap();
    for bad in [0u32, u32::MAX] {
        let e = s.insert_many(&[7, bad], &[3, 4]).unwrap_err();
        assert!(
            matches!(e, Error::ReservedKey { index: 1, key } if key == bad),
            "{e}"
        );
        assert!(s.remove_many(&[bad]).is_err());
        assert!(s.get_many(&[bad]).is_err());
    }
    assert!(matches!(
        s.insert_many(&[1, 2], &[1]).unwrap_err(),
        Error::LengthMismatch { .. }
    ));
    assert_eq!(s.to_vec().unwrap(), vec![(5, 1), (6, 2)]);
    s.validate().unwrap();
    let bad = RangeSkipListConfig {
        keys_per_range: 1000,
        ..Default::default()
    };
    assert!(matches!(
        RangeSkipList::with_config(&gpu, bad).unwrap_err(),
        Error::Config(_)
    ));
    let tiered = SkipListConfig {
        placement: Placement::Tiered {
            device_budget_bytes: 1 << 30,
        },
        ..Default::default()
    };
    assert!(matches!(
        SkipList::with_config(&gpu, tiered).unwrap_err(),
        Error::Config(_)
    ));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn proptest_sequences_match_the_oracle(
        ops in proptest::collection::vec(
            (0u8..4, proptest::collection::vec(1u32..3000, 1..400)),
            1..8,
        ),
        range_bits in 12u32..14,
    ) {
        let Some(gpu) = gpu() else { return Ok(()) };
        let config = RangeSkipListConfig { keys_per_range: 1 << range_bits, ..Default::default() };
        let mut structures: [Box<dyn Ordered>; 2] = [
            Box::new(SkipList::new(&gpu, Placement::Device).unwrap()),
            Box::new(ranged(&gpu, config)),
        ];
        for t in structures.iter_mut() {
            let mut o = Oracle::new();
            for (step, (op, keys)) in ops.iter().enumerate() {
                let what = format!("op {step}");
                match op {
                    0 | 1 => insert(t.as_mut(), &mut o, keys, |k| k * 2),
                    2 => remove(t.as_mut(), &mut o, keys, &what),
                    _ => query(t.as_mut(), &o, keys, &what),
                }
                settle(t.as_ref(), &o, &what);
            }
            let lo = o.keys().next().copied();
            let far = o.range((Excluded(1500), Unbounded)).next().map(|(&a, &b)| (a, b));
            prop_assert_eq!(t.succ(&[1501]).unwrap()[0], far);
            prop_assert_eq!(t.succ(&[0]).unwrap()[0].map(|p| p.0), lo);
        }
    }
}

#[test]
fn counts_add_up_exactly_even_when_pools_grow_mid_batch() {
    let Some(gpu) = gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(31);
    // Few distinct keys, many repeats: every warp adds to hot keys; pools start at 16
    // nodes so batches run out mid-way and only the failed additions run again.
    let skip_config = SkipListConfig {
        initial_nodes: 16,
        placement: Placement::HostMapped,
        ..Default::default()
    };
    let range_config = RangeSkipListConfig {
        keys_per_range: 1 << 12,
        initial_nodes: 16,
        ..Default::default()
    };
    let mut skip = skip(&gpu, skip_config);
    let mut ranged = ranged(&gpu, range_config);
    let mut want: BTreeMap<u32, u32> = BTreeMap::new();
    for _ in 0..4 {
        let keys: Vec<u32> = (0..100_000)
            .map(|_| rng.random_range(1..40_000u32))
            .collect();
        let deltas: Vec<u32> = keys.iter().map(|k| k % 3 + 1).collect();
        skip.add_many(&keys, &deltas).unwrap();
        ranged.add_many(&keys, &deltas).unwrap();
        for (&k, &d) in keys.iter().zip(&deltas) {
            *want.entry(k).or_default() += d;
        }
        let w: Vec<(u32, u32)> = want.iter().map(|(&a, &b)| (a, b)).collect();
        assert_eq!(skip.to_vec().unwrap(), w, "skip list counts");
        assert_eq!(ranged.to_vec().unwrap(), w, "range skip list counts");
        skip.validate().unwrap();
        ranged.validate().unwrap();
    }
    // A zero delta leaves a count as it is and inserts an absent key with 0.
    skip.add_many(&[39_999, 50_000], &[0, 0]).unwrap();
    assert_eq!(
        skip.get_many(&[50_000]).unwrap(),
        vec![Some(0)],
        "a zero delta inserts the key"
    );
}

#[test]
fn raises_and_merges_that_find_no_node_never_fail_a_call() {
    let Some(gpu) = gpu() else { return };
    // A pool per layer starting at 16 nodes: index pools run out during raises and
    // merge-splits (best effort, dropped) while the data pool grows between reruns.
    let config = SkipListConfig {
        pools: PoolLayout::PerLayer,
        initial_nodes: 16,
        batch: 2500,
        ..Default::default()
    };
    let mut s = skip(&gpu, config);
    let mut rng = ChaCha8Rng::seed_from_u64(77);
    let mut o = Oracle::new();
    let keys: Vec<u32> = (0..300_000)
        .map(|_| rng.random_range(1..1_000_000u32))
        .collect();
    insert(&mut s, &mut o, &keys, |k| k / 3);
    settle(&s, &o, "after the insertions");
    let gone: Vec<u32> = keys.iter().copied().filter(|k| k % 3 != 0).collect();
    remove(&mut s, &mut o, &gone, "removal");
    settle(&s, &o, "after the removals");
    query(&mut s, &o, &keys[..3000], "after the removals");
}
