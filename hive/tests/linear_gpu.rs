//! GPU tests of LinearProbeMap: every configuration against `std::collections` models,
//! proptest sequences, concurrent mixed batches with concurrency-tolerant checks, loads
//! up to 0.9, 2^24 keys, reserved input, growth, key tombstones, device-ref layout.
//! `validate()` runs after every batch. Without a GPU each test prints
//! `skipped: no CUDA device` and passes (fails with GPUDS_REQUIRE_GPU=1).

use std::collections::HashMap;

use gpuds_core::{assert_layout, DeviceKey, DeviceValue, Gpu, Program};
use gpuds_hive::probe::{Geometry, GroupWidth, Probing};
use gpuds_hive::{Deletion, Error, LinearConfig, LinearProbeMap, LinearRef, Operation, WhenFull};
use gpuds_testkit::check::{check_map, Reply};
use gpuds_testkit::model::{InsertPolicy, MapModel};
use gpuds_testkit::workload::{unique_keys, MixedWorkload, GAMMA_0, GAMMA_1, GAMMA_2};
use gpuds_testkit::Op;
use proptest::test_runner::{Config as ProptestConfig, TestRunner};

/// Every configuration the tests sweep: (width, probing, deletion).
fn configs() -> Vec<(u32, Probing, Deletion)> {
    vec![
        (1, Probing::Linear, Deletion::ValueTombstones),
        (4, Probing::DoubleHashing, Deletion::ValueTombstones),
        (32, Probing::Linear, Deletion::ValueTombstones),
        (1, Probing::Linear, Deletion::KeyTombstones),
        (8, Probing::DoubleHashing, Deletion::KeyTombstones),
    ]
}

fn config(capacity: u64, (width, probing, deletion): (u32, Probing, Deletion)) -> LinearConfig {
    LinearConfig {
        capacity,
        probing,
        group_width: GroupWidth::new(width).unwrap(),
        deletion,
        ..LinearConfig::default()
    }
}

fn op_of<K: Copy, V: Copy>(op: &Op<K, V>) -> Operation<K, V> {
    match *op {
        Op::Insert(k, v) => Operation::Insert(k, v),
        Op::Remove(k) => Operation::Remove(k),
        Op::Get(k) => Operation::Get(k),
    }
}

fn state<K: DeviceKey, V: DeviceValue>(map: &LinearProbeMap<K, V>) -> HashMap<K, V> {
    let pairs = map.to_vec().unwrap();
    let state: HashMap<K, V> = pairs.iter().copied().collect();
    assert_eq!(state.len(), pairs.len(), "a key is held twice");
    state
}

/// Runs `ops` as one concurrent batch and checks it against some serial order.
fn apply_checked<K, V>(map: &mut LinearProbeMap<K, V>, ops: &[Op<K, V>], initial: &HashMap<K, V>)
where
    K: DeviceKey,
    V: DeviceValue + Eq + std::hash::Hash,
{
    let operations: Vec<Operation<K, V>> = ops.iter().map(op_of).collect();
    let seen = map.apply(&operations).unwrap();
    map.validate().unwrap();
    let replies: Vec<Reply<V>> = seen.into_iter().map(Reply::Value).collect();
    let after = state(map);
    if let Err(m) = check_map(InsertPolicy::Replace, ops, &replies, initial, &after) {
        panic!("{m}");
    }
    assert_eq!(map.len().unwrap(), after.len());
}

/// Key tombstones may not mix inserts and removes in one batch: split such a batch.
fn phases<K: Copy, V: Copy>(deletion: Deletion, ops: &[Op<K, V>]) -> Vec<Vec<Op<K, V>>> {
    if deletion == Deletion::ValueTombstones {
        return vec![ops.to_vec()];
    }
    let writes: Vec<_> = ops
        .iter()
        .copied()
        .filter(|o| !matches!(o, Op::Remove(_)))
        .collect();
    let removes: Vec<_> = ops
        .iter()
        .copied()
        .filter(|o| matches!(o, Op::Remove(_)))
        .collect();
    vec![writes, removes]
}

#[test]
fn device_ref_layout_matches() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let prelude = || {
        Program::new("linear_layout", "#include <gpuds/hive/linear_ref.cuh>")
            .headers(gpuds_hive::cuda_headers())
    };
    assert_layout!(
        &gpu,
        prelude(),
        Geometry,
        "gpuds::probing::geometry",
        windows,
        mask
    );
    for cfg in configs() {
        let map = LinearProbeMap::<u32, u32>::with_config(&gpu, config(64, cfg)).unwrap();
        let cpp = map.cuda_ref_type();
        assert_layout!(&gpu, prelude(), LinearRef, &cpp, slots, geometry, status);
    }
    let map = LinearProbeMap::<u64, u32>::new(&gpu, 64).unwrap();
    assert_layout!(
        &gpu,
        prelude(),
        LinearRef,
        &map.cuda_ref_type(),
        slots,
        geometry,
        status
    );
}

fn bulk_against_model<K, V>(gpu: &Gpu, cfg: (u32, Probing, Deletion), n: usize)
where
    K: DeviceKey,
    V: DeviceValue + Eq + std::hash::Hash,
{
    let reserved = LinearProbeMap::<K, V>::reserved_keys();
    let mut map = LinearProbeMap::<K, V>::with_config(gpu, config(2 * n as u64, cfg)).unwrap();
    let keys: Vec<K> = unique_keys(7, 2 * n, &reserved);
    let (present, absent) = keys.split_at(n);
    let values: Vec<V> = (0..n as u64).map(|i| V::from_u64(i * 3 + 1)).collect();
    map.insert_many(present, &values).unwrap();
    map.validate().unwrap();
    let mut model = MapModel::new();
    for (&k, &v) in present.iter().zip(&values) {
        model.step(&Op::Insert(k, v));
    }
    assert_eq!(map.len().unwrap(), n);
    let got = map.get_many(present).unwrap();
    assert!(got.iter().zip(&values).all(|(g, v)| *g == Some(*v)));
    assert!(map.get_many(absent).unwrap().iter().all(Option::is_none));
    // Replace half, remove a quarter, reinsert some removed ones with new values.
    let half = &present[..n / 2];
    let new_values: Vec<V> = (0..half.len() as u64).map(|i| V::from_u64(i + 7)).collect();
    map.insert_many(half, &new_values).unwrap();
    map.validate().unwrap();
    let quarter = &present[n / 4..n / 2];
    map.remove_many(quarter).unwrap();
    map.validate().unwrap();
    let back = &quarter[..quarter.len() / 2];
    let back_values: Vec<V> = (0..back.len() as u64)
        .map(|i| V::from_u64(i + 100))
        .collect();
    map.insert_many(back, &back_values).unwrap();
    map.validate().unwrap();
    for (&k, &v) in half.iter().zip(&new_values) {
        model.step(&Op::Insert(k, v));
    }
    for &k in quarter {
        model.step(&Op::Remove(k));
    }
    for (&k, &v) in back.iter().zip(&back_values) {
        model.step(&Op::Insert(k, v));
    }
    assert_eq!(&state(&map), model.as_map(), "{cfg:?}");
    let contains = map.contains_many(&keys).unwrap();
    for (k, c) in keys.iter().zip(contains) {
        assert_eq!(c, model.get(k).is_some());
    }
    let stats = map.stats().unwrap();
    assert_eq!(stats.len as usize, model.len());
    map.rehash(8 * n as u64).unwrap();
    map.validate().unwrap();
    assert_eq!(&state(&map), model.as_map());
    assert_eq!(map.stats().unwrap().tombstones, 0);
    map.clear().unwrap();
    assert!(map.is_empty().unwrap());
    map.validate().unwrap();
}

#[test]
fn bulk_operations_match_the_model_in_every_configuration() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    for cfg in configs() {
        bulk_against_model::<u32, u32>(&gpu, cfg, 5000);
        bulk_against_model::<u64, u64>(&gpu, cfg, 3000);
    }
    bulk_against_model::<u64, u32>(&gpu, (2, Probing::Linear, Deletion::ValueTombstones), 3000);
    bulk_against_model::<u32, u64>(
        &gpu,
        (1, Probing::DoubleHashing, Deletion::KeyTombstones),
        3000,
    );
}

#[test]
fn proptest_sequences_match_hashmap() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let reserved = LinearProbeMap::<u32, u32>::reserved_keys();
    let keys = gpuds_testkit::strategy::small_keys::<u32>(24, &reserved);
    let values = gpuds_testkit::strategy::small_values::<u32>(5);
    let strategy =
        gpuds_testkit::strategy::batches(gpuds_testkit::strategy::map_op(keys, values), 6, 40);
    for cfg in configs() {
        let mut runner = TestRunner::new(ProptestConfig {
            cases: 12,
            failure_persistence: None,
            ..ProptestConfig::default()
        });
        runner
            .run(&strategy, |batches| {
                // A small table so that probes wrap and windows fill.
                let mut map =
                    LinearProbeMap::<u32, u32>::with_config(&gpu, config(64, cfg)).unwrap();
                let mut before: HashMap<u32, u32> = HashMap::new();
                for batch in &batches {
                    for phase in phases(cfg.2, batch) {
                        apply_checked(&mut map, &phase, &before);
                        before = state(&map);
                    }
                }
                Ok(())
            })
            .unwrap_or_else(|e| panic!("{cfg:?}: {e}"));
    }
}

#[test]
fn mixed_concurrent_batches_up_to_load_0_9() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let capacity = 1u64 << 16;
    for cfg in configs() {
        for (seed, mix) in [GAMMA_0, GAMMA_1, GAMMA_2].into_iter().enumerate() {
            let reserved = LinearProbeMap::<u32, u32>::reserved_keys();
            let mut w = MixedWorkload::<u32, u32>::new(seed as u64, mix, &reserved, &[u32::MAX]);
            let mut map = LinearProbeMap::<u32, u32>::with_config(
                &gpu,
                LinearConfig {
                    max_load_factor: 0.95,
                    when_full: WhenFull::Fail,
                    ..config(capacity, cfg)
                },
            )
            .unwrap();
            let initial = w.initial((capacity as f64 * 0.72) as usize);
            let (k, v): (Vec<u32>, Vec<u32>) = initial.into_iter().unzip();
            map.insert_many(&k, &v).unwrap();
            map.validate().unwrap();
            let mut before = state(&map);
            // Batches push the load to about 0.9 (value tombstones count in the load).
            for _ in 0..6 {
                let batch = w.batch(4000);
                for phase in phases(cfg.2, &batch.ops) {
                    apply_checked(&mut map, &phase, &before);
                    before = state(&map);
                }
                let expect: HashMap<u32, u32> = w.present().iter().copied().collect();
                assert_eq!(before, expect, "{cfg:?}");
            }
            let stats = map.stats().unwrap();
            assert!(
                stats.load_factor > 0.6 && stats.load_factor <= 0.95,
                "{stats:?}"
            );
        }
    }
}

#[test]
fn concurrent_duplicate_inserts_leave_one_copy() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    for cfg in configs() {
        // Room for the whole batch counted as new keys, so that no rebuild drops the
        // tombstones the test is about.
        let cfg = LinearConfig {
            max_load_factor: 1.0,
            when_full: WhenFull::Fail,
            ..config(1 << 15, cfg)
        };
        let mut map = LinearProbeMap::<u32, u32>::with_config(&gpu, cfg).unwrap();
        let keys: Vec<u32> = (0..2000).collect();
        map.insert_many(&keys, &vec![1; keys.len()]).unwrap();
        map.remove_many(&keys).unwrap();
        // Every key 8 times in one batch, over the tombstones the removes left.
        let dup: Vec<u32> = (0..8).flat_map(|_| 0..2000u32).collect();
        let values: Vec<u32> = (0..dup.len() as u32).collect();
        map.insert_many(&dup, &values).unwrap();
        map.validate().unwrap();
        let got = state(&map);
        assert_eq!(got.len(), 2000, "{:?}", map.config());
        for (k, v) in got {
            assert_eq!(v % 2000, k, "value {v} was inserted with another key");
        }
    }
}

#[test]
fn two_to_the_24_keys_at_load_one_half() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let n = 1usize << 24;
    let reserved = LinearProbeMap::<u32, u32>::reserved_keys();
    let keys: Vec<u32> = unique_keys(24, 2 * n, &reserved);
    let values: Vec<u32> = keys[..n]
        .iter()
        .map(|k| k ^ 0x5555_5555)
        .map(|v| v % (u32::MAX - 1))
        .collect();
    let stream = gpu.stream();
    let present = stream.clone_htod(&keys[..n]).unwrap();
    let absent = stream.clone_htod(&keys[n..]).unwrap();
    let vals = stream.clone_htod(&values).unwrap();
    for width in [1u32, 8] {
        let cfg = config(
            (2 * n) as u64,
            (width, Probing::Linear, Deletion::ValueTombstones),
        );
        let mut map = LinearProbeMap::<u32, u32>::with_config(&gpu, cfg).unwrap();
        map.insert_many(&present, &vals).unwrap();
        let stats = map.stats().unwrap();
        assert_eq!((stats.len as usize, stats.load_factor), (n, 0.5));
        assert!(stats.mean_probe < 1.0, "{stats:?}");
        let mut out = stream.alloc_zeros::<u32>(n).unwrap();
        map.get_many_into(&present, &mut out).unwrap();
        assert_eq!(stream.clone_dtoh(&out).unwrap(), values);
        map.get_many_into(&absent, &mut out).unwrap();
        assert!(stream
            .clone_dtoh(&out)
            .unwrap()
            .iter()
            .all(|&v| v == u32::MAX));
        map.remove_many(&present.slice(..n / 2)).unwrap();
        map.validate().unwrap();
        let got = map.get_many(&keys[..n]).unwrap();
        assert!(got[..n / 2].iter().all(Option::is_none));
        assert!(got[n / 2..]
            .iter()
            .zip(&values[n / 2..])
            .all(|(g, v)| *g == Some(*v)));
    }
}

#[test]
fn reserved_keys_and_values_are_rejected_and_nothing_applied() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let mut map = LinearProbeMap::<u32, u32>::new(&gpu, 1 << 10).unwrap();
    map.insert_many(&[1u32], &[1u32]).unwrap();
    let err = map
        .insert_many(&[5u32, 6, u32::MAX - 1], &[1u32, 2, 3])
        .unwrap_err();
    assert!(
        matches!(err, Error::ReservedKey { index: 2, key } if key == u64::from(u32::MAX - 1)),
        "{err}"
    );
    let err = map.insert_many(&[5u32, 6], &[1u32, u32::MAX]).unwrap_err();
    assert!(
        matches!(err, Error::ReservedValue { index: 1, .. }),
        "{err}"
    );
    // Device inputs are checked on the device, and the batch is skipped as a whole.
    let stream = gpu.stream();
    let keys = stream.clone_htod(&[7u32, 8, 9, u32::MAX, 10]).unwrap();
    let values = stream.clone_htod(&[1u32, 2, 3, 4, 5]).unwrap();
    let err = map.insert_many(&keys, &values).unwrap_err();
    assert!(
        matches!(err, Error::ReservedKey { index: 3, key } if key == u64::from(u32::MAX)),
        "{err}"
    );
    let keys = stream.clone_htod(&[7u32, 8]).unwrap();
    let values = stream.clone_htod(&[u32::MAX, 2]).unwrap();
    let err = map.insert_many(&keys, &values).unwrap_err();
    assert!(
        matches!(err, Error::ReservedValue { index: 0, .. }),
        "{err}"
    );
    let err = map
        .remove_many(&stream.clone_htod(&[1u32, u32::MAX]).unwrap())
        .unwrap_err();
    assert!(matches!(err, Error::ReservedKey { index: 1, .. }), "{err}");
    assert!(map
        .apply(&[Operation::Get(1), Operation::Remove(u32::MAX)])
        .is_err());
    // Lookups answer absent for reserved keys and report the first.
    let err = map.get_many(&[1u32, u32::MAX - 1, u32::MAX]).unwrap_err();
    assert!(
        matches!(err, Error::ReservedKey { index: 1, key } if key == u64::from(u32::MAX - 1)),
        "{err}"
    );
    assert_eq!(map.get_many(&[1u32]).unwrap(), vec![Some(1)]);
    assert_eq!(state(&map), HashMap::from([(1, 1)]));
    map.validate().unwrap();
    // The table works normally afterwards.
    map.insert_many(&keys, &stream.clone_htod(&[3u32, 4]).unwrap())
        .unwrap();
    assert_eq!(map.len().unwrap(), 3);
}

#[test]
fn the_load_limit_fails_clearly_or_grows() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let keys: Vec<u32> = (0..1000).collect();
    let fail = LinearConfig {
        capacity: 1024,
        max_load_factor: 0.9,
        when_full: WhenFull::Fail,
        ..LinearConfig::default()
    };
    let mut map = LinearProbeMap::<u32, u32>::with_config(&gpu, fail).unwrap();
    map.insert_many(&keys[..900], &keys[..900]).unwrap();
    let err = map.insert_many(&keys[900..], &keys[900..]).unwrap_err();
    assert!(
        matches!(
            err,
            Error::LoadFactor {
                incoming: 100,
                occupied: 900,
                limit: 921,
                capacity: 1024
            }
        ),
        "{err}"
    );
    assert_eq!(map.len().unwrap(), 900);
    map.reserve(100).unwrap();
    map.insert_many(&keys[900..], &keys[900..]).unwrap();
    assert_eq!(map.len().unwrap(), 1000);
    map.validate().unwrap();
    let mut map = LinearProbeMap::<u32, u32>::with_config(
        &gpu,
        LinearConfig {
            when_full: WhenFull::Grow,
            ..fail
        },
    )
    .unwrap();
    for chunk in keys.chunks(300) {
        map.insert_many(chunk, chunk).unwrap();
        map.validate().unwrap();
    }
    assert!(map.capacity() >= 2048);
    assert_eq!(state(&map), keys.iter().map(|&k| (k, k)).collect());
    // A full table with the whole capacity allowed: every slot used, lookups still end.
    let full = LinearConfig {
        capacity: 256,
        max_load_factor: 1.0,
        ..fail
    };
    let mut map = LinearProbeMap::<u32, u32>::with_config(&gpu, full).unwrap();
    map.insert_many(&keys[..256], &keys[..256]).unwrap();
    map.validate().unwrap();
    assert!(map
        .get_many(&keys[256..300])
        .unwrap()
        .iter()
        .all(Option::is_none));
    assert!(matches!(
        map.insert_many(&[999u32], &[1u32]),
        Err(Error::LoadFactor { .. })
    ));
}

#[test]
fn key_tombstones_refuse_mixed_batches_and_reuse_slots() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let cfg = LinearConfig {
        max_load_factor: 1.0,
        when_full: WhenFull::Fail,
        ..config(1 << 13, (1, Probing::Linear, Deletion::KeyTombstones))
    };
    let mut map = LinearProbeMap::<u32, u32>::with_config(&gpu, cfg).unwrap();
    assert!(map
        .apply(&[Operation::Insert(1, 1), Operation::Remove(2)])
        .is_err());
    let keys: Vec<u32> = (0..3000).collect();
    for round in 0..5u32 {
        map.insert_many(&keys, &vec![round + 1; keys.len()])
            .unwrap();
        map.remove_many(&keys[..2500]).unwrap();
        map.validate().unwrap();
    }
    let stats = map.stats().unwrap();
    // Slots were reused: the churn did not pile up tombstones past the keys touched.
    assert!(stats.len + stats.tombstones <= 3000, "{stats:?}");
    assert_eq!(state(&map), keys[2500..].iter().map(|&k| (k, 5)).collect());
}

#[test]
fn async_batches_report_at_check_and_a_rejected_batch_blocks_later_writes() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let stream = gpu.stream();
    let mut map = LinearProbeMap::<u64, u64>::new(&gpu, 1 << 12).unwrap();
    let good = stream.clone_htod(&[1u64, 2, 3]).unwrap();
    map.insert_many_async(&good, &good).unwrap();
    map.check().unwrap();
    let bad = stream.clone_htod(&[4u64, u64::MAX - 1, 5]).unwrap();
    let later = stream.clone_htod(&[6u64]).unwrap();
    map.insert_many_async(&bad, &good).unwrap();
    map.insert_many_async(&later, &later).unwrap();
    map.remove_many_async(&good).unwrap();
    let err = map.check().unwrap_err();
    assert!(
        matches!(err, Error::ReservedKey { index: 1, key } if key == u64::MAX - 1),
        "{err}"
    );
    // Nothing after the rejected batch was applied; the table works again.
    assert_eq!(state(&map), HashMap::from([(1, 1), (2, 2), (3, 3)]));
    map.insert_many_async(&later, &later).unwrap();
    let mut out = stream.alloc_zeros::<u64>(4).unwrap();
    map.get_many_into_async(&stream.clone_htod(&[1u64, 6, 7, 3]).unwrap(), &mut out)
        .unwrap();
    map.check().unwrap();
    assert_eq!(stream.clone_dtoh(&out).unwrap(), vec![1, 6, u64::MAX, 3]);
    map.validate().unwrap();
}
