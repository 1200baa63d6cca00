//! GPU tests of SlabHashSet against HashSet, with validate() after every batch.

mod common;

use std::collections::HashSet;

use gpuds_slabhash::{Error, SetOp, SlabHashConfig, SlabHashSet};
use gpuds_testkit::check::{check_set, Reply};
use gpuds_testkit::workload::unique_keys;
use gpuds_testkit::{gpu, strategy, Op};
use proptest::prelude::*;

use common::RESERVED;

fn contents(set: &SlabHashSet) -> HashSet<u32> {
    let keys = set.to_vec().expect("to_vec");
    let s: HashSet<u32> = keys.iter().copied().collect();
    assert_eq!(s.len(), keys.len(), "a key is live twice");
    s
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn batches_match_hashset(batches in strategy::batches(
        strategy::set_op(strategy::small_keys::<u32>(70, &RESERVED)), 6, 200)) {
        let Some(gpu) = gpu() else { return Ok(()) };
        for buckets in [1, 5, 2048] {
            let config = SlabHashConfig { buckets, ..Default::default() };
            let mut set = SlabHashSet::<u32>::with_config(&gpu, config).unwrap();
            let mut model: HashSet<u32> = HashSet::new();
            for (b, batch) in batches.iter().enumerate() {
                let ops: Vec<SetOp<u32>> = batch.iter().map(|op| match *op {
                    Op::Insert(k, ()) => SetOp::Insert(k),
                    Op::Remove(k) => SetOp::Remove(k),
                    Op::Get(k) => SetOp::Contains(k),
                }).collect();
                let seen = set.apply(&ops).unwrap();
                let replies: Vec<Reply<()>> = seen.into_iter().map(Reply::Found).collect();
                let after = contents(&set);
                check_set(batch, &replies, &model, &after)
                    .unwrap_or_else(|m| panic!("B = {buckets}, batch {b}: {m}"));
                set.validate().unwrap_or_else(|e| panic!("B = {buckets}, batch {b}: {e}"));
                prop_assert_eq!(set.len().unwrap(), after.len());
                model = after;
                if b % 3 == 1 {
                    set.flush().unwrap();
                    set.validate().unwrap();
                    prop_assert_eq!(&contents(&set), &model);
                }
            }
        }
    }
}

#[test]
fn set_batches_flush_and_bad_input() {
    let Some(gpu) = gpu() else { return };
    let mut set = SlabHashSet::<u32>::new(&gpu, 100_000).unwrap();
    let keys = unique_keys::<u32>(3, 100_000, &RESERVED);
    set.insert_many(&keys).unwrap();
    set.insert_many(&keys[..50_000]).unwrap();
    set.validate().unwrap();
    assert_eq!(set.len().unwrap(), 100_000);
    let dk = gpu.stream().clone_htod(&keys[..60_000]).unwrap();
    set.remove_many(&dk).unwrap();
    assert_eq!(set.len().unwrap(), 40_000);
    let found = set.contains_many(&keys).unwrap();
    assert!(found.iter().enumerate().all(|(i, &f)| f == (i >= 60_000)));
    let before = set.stats().unwrap();
    assert_eq!(before.tombstones, 60_000);
    let freed = set.flush().unwrap();
    set.validate().unwrap();
    assert_eq!(set.stats().unwrap().slabs, before.slabs - freed);
    assert_eq!(contents(&set), keys[60_000..].iter().copied().collect());
    match set.insert_many(&[1, u32::MAX - 1]) {
        Err(Error::ReservedKey { index: 1, key }) => assert_eq!(key, (u32::MAX - 1) as u64),
        other => panic!("expected a reserved-key error, got {other:?}"),
    }
    assert_eq!(set.len().unwrap(), 40_000);
    set.clear().unwrap();
    set.validate().unwrap();
    assert!(set.is_empty().unwrap());
}
