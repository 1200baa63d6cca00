//! GPU tests of SlabHashSet against HashSet, with validate() after every batch. Every
//! test body is generic and runs for u32 and u64 keys (modules `u32`, `u64`).

mod common;

use std::collections::HashSet;

use gpuds_slabhash::{Error, SetOp, SlabHashConfig, SlabHashSet, SlabKey};
use gpuds_testkit::check::{check_set, Reply};
use gpuds_testkit::workload::unique_keys;
use gpuds_testkit::{gpu, strategy, Op};

use common::{edge_keys, for_batch_sequences, n, thrice};

for_every_set_type!(
    batches_match_hashset,
    set_batches_flush_and_bad_input,
    keys_a_32_bit_shortcut_would_confuse,
    a_key_named_often_in_one_removal_goes_once,
);

fn contents<K: SlabKey>(set: &SlabHashSet<K>) -> HashSet<K> {
    let keys = set.to_vec().expect("to_vec");
    let s: HashSet<K> = keys.iter().copied().collect();
    assert_eq!(s.len(), keys.len(), "a key is live twice");
    s
}

fn run_set_batches<K: SlabKey>(gpu: &gpuds_core::Gpu, buckets: u32, batches: &[Vec<Op<K, ()>>]) {
    let config = SlabHashConfig {
        buckets,
        ..Default::default()
    };
    let mut set = SlabHashSet::<K>::with_config(gpu, config).unwrap();
    let mut model: HashSet<K> = HashSet::new();
    for (b, batch) in batches.iter().enumerate() {
        let ops: Vec<SetOp<K>> = batch
            .iter()
            .map(|op| match *op {
                Op::Insert(k, ()) => SetOp::Insert(k),
                Op::Remove(k) => SetOp::Remove(k),
                Op::Get(k) => SetOp::Contains(k),
            })
            .collect();
        let seen = set.apply(&ops).unwrap();
        let replies: Vec<Reply<()>> = seen.into_iter().map(Reply::Found).collect();
        let after = contents(&set);
        check_set(batch, &replies, &model, &after)
            .unwrap_or_else(|m| panic!("B = {buckets}, batch {b}: {m}"));
        set.validate()
            .unwrap_or_else(|e| panic!("B = {buckets}, batch {b}: {e}"));
        assert_eq!(set.len().unwrap(), after.len());
        model = after;
        if b % 3 == 1 {
            set.flush().unwrap();
            set.validate().unwrap();
            assert_eq!(contents(&set), model);
        }
    }
}

fn batches_match_hashset<K: SlabKey>() {
    let ops = strategy::set_op(strategy::small_keys::<K>(70, &K::RESERVED));
    for_batch_sequences(
        strategy::batches(ops, 6, 200),
        &[1, 5, 2048],
        run_set_batches,
    );
}

fn set_batches_flush_and_bad_input<K: SlabKey>() {
    let Some(gpu) = gpu() else { return };
    let mut set = SlabHashSet::<K>::new(&gpu, 100_000).unwrap();
    let keys = unique_keys::<K>(3, 100_000, &K::RESERVED);
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
    for reserved in K::RESERVED {
        match set.insert_many(&[n(1), reserved]) {
            Err(Error::ReservedKey { index: 1, key }) => assert_eq!(key, reserved.to_u64()),
            other => panic!("expected a reserved-key error, got {other:?}"),
        }
    }
    assert_eq!(set.len().unwrap(), 40_000);
    set.clear().unwrap();
    set.validate().unwrap();
    assert!(set.is_empty().unwrap());
}

/// As the map test of the same name: keys that differ only in their high word, 32-bit
/// sentinels as 64-bit keys and keys next to the reserved values stay distinct, spread
/// over the buckets (short lists under a small step cap), and are found and removed
/// exactly.
fn keys_a_32_bit_shortcut_would_confuse<K: SlabKey>() {
    let Some(gpu) = gpu() else { return };
    let len = 4000;
    let keys = edge_keys::<K>(len);
    let config = SlabHashConfig {
        buckets: 256,
        step_cap: 16,
        ..Default::default()
    };
    let mut set = SlabHashSet::<K>::with_config(&gpu, config).unwrap();
    set.insert_many(&keys).unwrap();
    set.validate().unwrap();
    assert_eq!(set.len().unwrap(), len);
    assert!(set.stats().unwrap().slab_histogram.len() <= 8);
    assert!(set.contains_many(&keys).unwrap().iter().all(|&f| f));
    let gone: Vec<K> = keys.iter().copied().step_by(2).collect();
    set.remove_many(&gone).unwrap();
    set.validate().unwrap();
    let found = set.contains_many(&keys).unwrap();
    assert!(found.iter().enumerate().all(|(i, &f)| f == (i % 2 == 1)));
    set.flush().unwrap();
    set.validate().unwrap();
    assert_eq!(
        contents(&set),
        keys.iter().copied().skip(1).step_by(2).collect()
    );
}

/// As the map test of the same name: one `remove_many` batch naming each of 20,000 keys
/// three or four times removes each once.
fn a_key_named_often_in_one_removal_goes_once<K: SlabKey>() {
    let Some(gpu) = gpu() else { return };
    let keys = unique_keys::<K>(9, 50_000, &K::RESERVED);
    let mut set = SlabHashSet::<K>::new(&gpu, 50_000).unwrap();
    set.insert_many(&keys).unwrap();
    let gone = &keys[..20_000];
    let batch = thrice(gone);
    set.remove_many(&batch).unwrap();
    set.validate().unwrap();
    assert_eq!(set.len().unwrap(), 30_000);
    let found = set.contains_many(&keys).unwrap();
    assert!(found.iter().enumerate().all(|(i, &f)| f == (i >= 20_000)));
    assert_eq!(set.stats().unwrap().tombstones, 20_000);
    set.flush().unwrap();
    set.validate().unwrap();
    assert_eq!(contents(&set), keys[20_000..].iter().copied().collect());
}
