//! GPU tests of HiveMap, each for every key and value type (u32/u32, u64/u32, u64/u64;
//! test names `u32_u32::...` and so on): layout and hash twins, the host API against
//! `std` models, proptest sequences, mixed concurrent batches with concurrency-tolerant
//! checks, loads up to 0.95, resizing under load, a full stash, reserved keys, keys that
//! differ only in their high words, keys next to the reserved ones, and 2^24 keys.
//! `validate()` runs after every batch. Without a GPU each test prints
//! `skipped: no CUDA device` and passes (fails with GPUDS_REQUIRE_GPU=1).

mod common;

use std::collections::HashMap;

use common::{high_word_keys, keys_near_the_reserved, val, Key, Value};
use cudarc::driver::PushKernelArg;
use gpuds_core::{assert_layout, Program};
use gpuds_hive::{Error, HashPair, HiveConfig, HiveMap, HiveRef, Operation};
use gpuds_testkit::check::{check_map, Reply};
use gpuds_testkit::model::{InsertPolicy, MapModel};
use gpuds_testkit::workload::{random_values, unique_keys};
use gpuds_testkit::{strategy, Op};
use proptest::test_runner::{Config as ProptestConfig, TestRunner};
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};

for_each_type!(
    device_ref_layout_matches,
    device_hashes_match_their_host_twins,
    every_shape_and_hash_matches_the_model,
    proptest_sequences_match_hashmap,
    mixed_concurrent_batches_up_to_load_0_95,
    resize_under_load_keeps_every_key,
    a_full_stash_fails_single_operations_and_the_table_stays_valid,
    reserved_keys_are_rejected_and_nothing_applied,
    keys_differing_only_in_high_words_are_distinct,
    keys_next_to_the_reserved_ones_are_stored,
    two_to_the_24_keys_at_load_0_9,
    concurrent_inserts_of_one_key_store_it_once,
);

/// The values of `keys` as values (each key's number, truncated to `V`).
fn values_of<K: Key, V: Value<K>>(keys: &[K]) -> Vec<V> {
    keys.iter().map(|k| val::<V>(k.to_u64())).collect()
}

fn cfg(capacity: usize, slots: u32, hash: HashPair, auto_resize: bool) -> HiveConfig {
    HiveConfig {
        capacity,
        slots_per_bucket: slots,
        hash,
        auto_resize,
        ..Default::default()
    }
}

fn state<K: Key, V: Value<K>>(map: &HiveMap<K, V>) -> HashMap<K, V> {
    let pairs = map.to_vec().unwrap();
    let state: HashMap<K, V> = pairs.iter().copied().collect();
    assert_eq!(state.len(), pairs.len(), "a key is held twice");
    state
}

fn op_of<K: Key, V: Value<K>>(op: &Op<K, V>) -> Operation<K, V> {
    match *op {
        Op::Insert(k, v) => Operation::Insert(k, v),
        Op::Remove(k) => Operation::Remove(k),
        Op::Get(k) => Operation::Get(k),
    }
}

/// Runs `ops` as one concurrent batch and checks it against some serial order.
fn apply_checked<K: Key, V: Value<K>>(map: &mut HiveMap<K, V>, ops: &[Op<K, V>]) {
    let initial = state(map);
    let operations: Vec<Operation<K, V>> = ops.iter().map(op_of).collect();
    let seen = map.apply(&operations).unwrap();
    map.validate().unwrap();
    let replies: Vec<Reply<V>> = seen.into_iter().map(Reply::Value).collect();
    let after = state(map);
    if let Err(m) = check_map(InsertPolicy::Replace, ops, &replies, &initial, &after) {
        panic!("batch not linearizable: {m}");
    }
}

fn device_ref_layout_matches<K: Key, V: Value<K>>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let map = HiveMap::<K, V>::new(&gpu, 1024).unwrap();
    let prelude = Program::new(
        format!("hive_layout_{}_{}", K::SUFFIX, V::SUFFIX),
        "#include <gpuds/hive/hive_ref.cuh>\n",
    )
    .headers(gpuds_hive::cuda_headers());
    assert_layout!(
        &gpu,
        prelude,
        HiveRef,
        map.cuda_ref_type().as_str(),
        slots,
        meta,
        stash,
        ctrl,
        status,
        failed,
        level_mask,
        split,
        buckets,
        stash_capacity,
        failed_capacity,
        eviction_bound
    );
}

fn device_hashes_match_their_host_twins<K: Key, V: Value<K>>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let mut keys: Vec<K> = (0..4096u64)
        .map(|i| K::from_u64(i.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ i))
        .collect();
    keys.extend(high_word_keys::<K>(0x1234, 512));
    for pair in HashPair::ALL {
        let program = Program::new(
            format!("hive_hash_twin_{}_{}", pair.name(), K::SUFFIX),
            r#"#include <gpuds/hive/hashers.cuh>
extern "C" __global__ void twin(const KEY_T* keys, unsigned n, unsigned* out) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const gpuds::hive::hash_pair h = gpuds::hive::hashes(keys[i]);
  out[2 * i] = h.h1;
  out[2 * i + 1] = h.h2;
}
"#,
        )
        .headers(gpuds_hive::cuda_headers())
        .define("HIVE_HASH", pair.define())
        .define("KEY_T", K::CUDA_TYPE);
        let kernel = gpu.load(&program).unwrap().kernel("twin").unwrap();
        let stream = gpu.stream();
        let d_keys = stream.clone_htod(&keys).unwrap();
        let mut out = stream.alloc_zeros::<u32>(2 * keys.len()).unwrap();
        let n = keys.len() as u32;
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&d_keys).arg(&n).arg(&mut out);
        unsafe { args.launch(gpuds_core::launch::one_thread_per_item(keys.len(), 128).unwrap()) }
            .unwrap();
        let out = stream.clone_dtoh(&out).unwrap();
        for (i, &k) in keys.iter().enumerate() {
            assert_eq!(
                (out[2 * i], out[2 * i + 1]),
                pair.key_hashes(k),
                "{pair:?} key {k:#x}"
            );
        }
    }
}

fn every_shape_and_hash_matches_the_model<K: Key, V: Value<K>>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let shapes = [
        (16, HashPair::BitHash),
        (32, HashPair::BitHash),
        (8, HashPair::BitHash),
        (16, HashPair::Murmur),
        (16, HashPair::City),
        (16, HashPair::Crc32),
    ];
    for (slots, hash) in shapes {
        let mut map = HiveMap::<K, V>::with_config(&gpu, cfg(1 << 14, slots, hash, true)).unwrap();
        let keys = unique_keys::<K>(
            slots as u64 * 31 + hash.define() as u64,
            12_000,
            K::RESERVED,
        );
        let values = random_values::<V>(7, keys.len(), &[]);
        let mut model = MapModel::new();
        map.insert_many(&keys, &values).unwrap();
        for (&k, &v) in keys.iter().zip(&values) {
            model.step(&Op::Insert(k, v));
        }
        map.validate().unwrap();
        assert_eq!(map.len(), model.len());
        // Replace half, remove a quarter, look everything up (and misses).
        let replaced: Vec<V> = values[..6000]
            .iter()
            .map(|v| val::<V>(v.to_u64() ^ 0x5555))
            .collect();
        map.insert_many(&keys[..6000], &replaced).unwrap();
        for (&k, &v) in keys[..6000].iter().zip(&replaced) {
            model.step(&Op::Insert(k, v));
        }
        map.validate().unwrap();
        assert_eq!(map.remove_many(&keys[9000..]).unwrap(), 3000);
        for &k in &keys[9000..] {
            model.step(&Op::Remove(k));
        }
        map.validate().unwrap();
        let misses = unique_keys::<K>(999, 20_000, K::RESERVED);
        let probe: Vec<K> = keys.iter().chain(&misses[..2000]).copied().collect();
        let got = map.get_many(&probe).unwrap();
        for (k, g) in probe.iter().zip(&got) {
            let want = if keys.contains(k) { model.get(k) } else { None };
            assert_eq!(*g, want, "slots {slots} {hash:?} key {k:#x}");
        }
        let has = map.contains_many(&probe).unwrap();
        assert_eq!(has, got.iter().map(Option::is_some).collect::<Vec<_>>());
        assert_eq!(state(&map), *model.as_map());
        map.clear().unwrap();
        assert!(map.is_empty() && map.to_vec().unwrap().is_empty());
        map.validate().unwrap();
    }
}

fn proptest_sequences_match_hashmap<K: Key, V: Value<K>>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let keys = strategy::small_keys::<K>(24, K::RESERVED);
    let ops = strategy::batches(
        strategy::map_op(keys, strategy::small_values::<V>(5)),
        6,
        40,
    );
    let mut runner = TestRunner::new(ProptestConfig::with_cases(24));
    runner
        .run(&ops, |batches| {
            // Small buckets and a tiny table: evictions, the stash and resizes all happen.
            let mut map = HiveMap::<K, V>::with_config(
                &gpu,
                HiveConfig {
                    capacity: 16,
                    slots_per_bucket: 8,
                    resize_batch: 1,
                    ..Default::default()
                },
            )
            .unwrap();
            let mut model = MapModel::new();
            for batch in &batches {
                // Serial semantics need one operation per key per batch: run the batch
                // in chunks that never repeat a key, through the bulk calls and apply.
                for chunk in distinct_key_chunks(batch) {
                    let want = model.apply(&chunk);
                    let seen = map
                        .apply(&chunk.iter().map(op_of).collect::<Vec<_>>())
                        .unwrap();
                    assert_eq!(seen, want, "chunk {chunk:?}");
                    map.validate().unwrap();
                }
                let keys: Vec<K> = model.as_map().keys().copied().collect();
                let got = map.get_many(&keys).unwrap();
                for (k, g) in keys.iter().zip(got) {
                    assert_eq!(g, model.get(k));
                }
                assert_eq!(state(&map), *model.as_map());
            }
            Ok(())
        })
        .unwrap();
}

fn distinct_key_chunks<K: Key, V: Value<K>>(batch: &[Op<K, V>]) -> Vec<Vec<Op<K, V>>> {
    let mut chunks: Vec<Vec<Op<K, V>>> = Vec::new();
    let mut current: Vec<Op<K, V>> = Vec::new();
    for op in batch {
        if current.iter().any(|o| o.key() == op.key()) {
            chunks.push(std::mem::take(&mut current));
        }
        current.push(*op);
    }
    chunks.push(current);
    chunks
}

fn mixed_concurrent_batches_up_to_load_0_95<K: Key, V: Value<K>>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    for slots in [16u32, 32] {
        // A fixed table of 2^16 slots, filled to 0.95 by mixed batches on a pool of keys
        // that collide within batches (same-key inserts, removes and gets race).
        let capacity = 1 << 16;
        let mut map =
            HiveMap::<K, V>::with_config(&gpu, cfg(capacity, slots, HashPair::BitHash, false))
                .unwrap();
        let pool = unique_keys::<K>(slots as u64, capacity, K::RESERVED);
        let in_pool: std::collections::HashSet<K> = pool.iter().copied().collect();
        let mut rng = ChaCha8Rng::seed_from_u64(slots as u64);
        let target = (capacity as f64 * 0.95) as usize;
        let mut filled = 0;
        while map.len() < target {
            // Grow the live key range as the table fills, so most inserts are new keys.
            filled = (filled + 4096).min(target + 2048);
            let ops: Vec<Op<K, V>> = (0..8192)
                .map(|_| {
                    let k = pool[rng.random_range(0..filled)];
                    match rng.random_range(0..10) {
                        0..=6 => Op::Insert(k, val(rng.random_range(0..4u64))),
                        7 => Op::Remove(k),
                        _ => Op::Get(k),
                    }
                })
                .collect();
            apply_checked(&mut map, &ops);
            if filled >= target + 2048 {
                // Top up with plain inserts of fresh keys.
                let need = target.saturating_sub(map.len());
                let fresh = unique_keys::<K>(77 + slots as u64, need + 100_000, K::RESERVED);
                let fresh: Vec<K> = fresh
                    .into_iter()
                    .filter(|k| !in_pool.contains(k))
                    .take(need)
                    .collect();
                map.insert_many(&fresh, &values_of::<K, V>(&fresh)).unwrap();
                map.validate().unwrap();
            }
        }
        let stats = map.stats().unwrap();
        assert!(stats.len >= target, "{stats:?}");
        println!("slots {slots}: {stats:?}");
        // Concurrent gets of untouched keys never miss while evictions run.
        let present: Vec<K> = state(&map).keys().copied().take(4000).collect();
        let newcomers = unique_keys::<K>(4242 + slots as u64, 3000, K::RESERVED);
        let mut ops: Vec<Op<K, V>> = present.iter().map(|&k| Op::Get(k)).collect();
        ops.extend(
            newcomers
                .iter()
                .filter(|k| !present.contains(k))
                .take(1500)
                .map(|&k| Op::Insert(k, val(1))),
        );
        let cap_room = map.capacity() - map.len();
        if cap_room > 0 {
            let before = state(&map);
            let operations: Vec<Operation<K, V>> = ops.iter().map(op_of).collect();
            // The table is nearly full: some inserts may find even the stash full.
            match map.apply(&operations) {
                Ok(seen) => {
                    for (op, s) in ops.iter().zip(seen) {
                        if let Op::Get(k) = op {
                            assert_eq!(s, before.get(k).copied(), "get of an untouched key");
                        }
                    }
                }
                Err(e) => {
                    let indices = e.not_applied().unwrap_or_else(|| panic!("{e}"));
                    assert!(indices.iter().all(|&i| matches!(ops[i], Op::Insert(..))));
                }
            }
            map.validate().unwrap();
        }
    }
}

fn resize_under_load_keeps_every_key<K: Key, V: Value<K>>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let mut map = HiveMap::<K, V>::with_config(
        &gpu,
        HiveConfig {
            capacity: 4096,
            resize_batch: 64,
            ..Default::default()
        },
    )
    .unwrap();
    let keys = unique_keys::<K>(11, 200_000, K::RESERVED);
    let mut model = MapModel::new();
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    // Grow by mixed batches (inserts dominate), then shrink by removals.
    for round in 0..40 {
        let hi = ((round + 1) * 5000).min(keys.len());
        let batch: Vec<Op<K, V>> = (0..6000)
            .map(|_| {
                let k = keys[rng.random_range(0..hi)];
                match rng.random_range(0..10) {
                    0..=6 => Op::Insert(k, val(rng.random_range(0..1000u64))),
                    7..=8 => Op::Remove(k),
                    _ => Op::Get(k),
                }
            })
            .collect();
        for chunk in distinct_key_chunks(&batch) {
            let want = model.apply(&chunk);
            let seen = map
                .apply(&chunk.iter().map(op_of).collect::<Vec<_>>())
                .unwrap();
            assert_eq!(seen, want);
        }
        map.validate().unwrap();
        assert!(
            map.load_factor() <= 0.9 + 1e-9,
            "load {}",
            map.load_factor()
        );
    }
    let grown = map.stats().unwrap();
    assert!(grown.expansions > 0 && grown.buckets > 256, "{grown:?}");
    assert_eq!(state(&map), *model.as_map());
    let present: Vec<K> = model.as_map().keys().copied().collect();
    for chunk in present.chunks(present.len() / 10 + 1) {
        map.remove_many(chunk).unwrap();
        for &k in chunk {
            model.step(&Op::Remove(k));
        }
        map.validate().unwrap();
        assert_eq!(state(&map), *model.as_map());
    }
    let shrunk = map.stats().unwrap();
    assert!(
        shrunk.contractions > 0 && shrunk.buckets < grown.buckets,
        "{shrunk:?}"
    );
    // Explicit resizes keep every key too.
    let keys2 = unique_keys::<K>(12, 20_000, K::RESERVED);
    let values2 = values_of::<K, V>(&keys2);
    map.insert_many(&keys2, &values2).unwrap();
    map.expand(1000).unwrap();
    map.validate().unwrap();
    map.contract(700).unwrap();
    map.validate().unwrap();
    assert_eq!(
        map.get_many(&keys2).unwrap(),
        values2.iter().map(|&v| Some(v)).collect::<Vec<_>>()
    );
}

fn a_full_stash_fails_single_operations_and_the_table_stays_valid<K: Key, V: Value<K>>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let mut map =
        HiveMap::<K, V>::with_config(&gpu, cfg(1024, 16, HashPair::BitHash, false)).unwrap();
    let keys = unique_keys::<K>(3, 1400, K::RESERVED);
    let values = values_of::<K, V>(&keys);
    let err = map.insert_many(&keys, &values).unwrap_err();
    let Error::Core(gpuds_core::Error::NotApplied {
        status,
        not_applied: indices,
    }) = err
    else {
        panic!("expected NotApplied, got {err}");
    };
    assert!(status.contains(gpuds_core::Status::STASH_FULL), "{status}");
    map.validate().unwrap();
    let stats = map.stats().unwrap();
    assert_eq!(map.len() + indices.len(), keys.len(), "{stats:?}");
    assert!(stats.stash_used > 0 && !indices.is_empty());
    // Exactly the named inserts are missing.
    let got = map.get_many(&keys).unwrap();
    for (i, g) in got.iter().enumerate() {
        assert_eq!(g.is_none(), indices.contains(&i), "insert {i}");
    }
    assert_eq!(got.iter().filter(|g| g.is_some()).count(), map.len());
    // Expanding makes room; the stash drains back into the table.
    map.expand(64).unwrap();
    map.validate().unwrap();
    map.insert_many(&keys, &values).unwrap();
    map.validate().unwrap();
    assert_eq!(map.len(), keys.len());
}

fn reserved_keys_are_rejected_and_nothing_applied<K: Key, V: Value<K>>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let mut map = HiveMap::<K, V>::new(&gpu, 4096).unwrap();
    let k = K::from_u64;
    let v = val::<V>;
    for &reserved in K::RESERVED {
        let err = map
            .insert_many(&[k(1), k(2), reserved, k(4)], &[v(1), v(2), v(3), v(4)])
            .unwrap_err();
        assert!(
            matches!(err, Error::ReservedKey { index: 2, key } if key == reserved.to_u64()),
            "{err}"
        );
        assert!(map.is_empty());
        let keys = gpu.stream().clone_htod(&[k(5), reserved]).unwrap();
        let values = gpu.stream().clone_htod(&[v(5), v(6)]).unwrap();
        let err = map.insert_many(&keys, &values).unwrap_err();
        assert!(
            matches!(err, Error::ReservedKey { index: 1, key } if key == reserved.to_u64()),
            "{err}"
        );
        assert!(map.is_empty());
        map.insert_many(&[k(7)], &[v(70)]).unwrap();
        assert!(matches!(
            map.remove_many(&[reserved]),
            Err(Error::ReservedKey { index: 0, .. })
        ));
        assert!(matches!(
            map.apply(&[Operation::Remove(k(7)), Operation::Get(reserved)]),
            Err(Error::ReservedKey { index: 1, .. })
        ));
        assert_eq!(map.get_many(&[k(7)]).unwrap(), vec![Some(v(70))]);
        // Device queries simply never find a reserved key.
        let mut out = gpu.stream().alloc_zeros::<V>(2).unwrap();
        map.get_many_into(&keys, &mut out, v(9)).unwrap();
        assert_eq!(gpu.stream().clone_dtoh(&out).unwrap(), vec![v(9), v(9)]);
        map.remove_many(&[k(7)]).unwrap();
    }
    assert!(matches!(
        map.insert_many(&[k(1), k(2)], &[v(1)]),
        Err(Error::Core(_))
    ));
    map.validate().unwrap();
}

/// Keys with one low word and different high words (u64 keys; distinct plain keys for
/// u32): a hash or a comparison that dropped the high word would place them alike or
/// find one for another.
fn keys_differing_only_in_high_words_are_distinct<K: Key, V: Value<K>>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    for slots in [8u32, 16, 32] {
        let mut map =
            HiveMap::<K, V>::with_config(&gpu, cfg(1 << 14, slots, HashPair::BitHash, true))
                .unwrap();
        let keys = high_word_keys::<K>(0x5eed, 20_000);
        let values: Vec<V> = (0..keys.len() as u64).map(|i| val(i + 1)).collect();
        if let Err(e) = map.insert_many(&keys, &values) {
            panic!("{slots} slots: {e}; {:?}", map.stats().unwrap());
        }
        map.validate().unwrap();
        assert_eq!(map.len(), keys.len(), "{slots} slots");
        let got = map.get_many(&keys).unwrap();
        assert_eq!(got, values.iter().map(|&v| Some(v)).collect::<Vec<_>>());
        // Remove every other key; the others keep their own values.
        let odd: Vec<K> = keys.iter().copied().step_by(2).collect();
        assert_eq!(map.remove_many(&odd).unwrap(), odd.len());
        map.validate().unwrap();
        let got = map.get_many(&keys).unwrap();
        for (i, g) in got.iter().enumerate() {
            let want = (i % 2 == 1).then_some(values[i]);
            assert_eq!(*g, want, "{slots} slots, key {:#x}", keys[i]);
        }
        // A mixed batch on such keys, checked against a serial order.
        let ops: Vec<Op<K, V>> = keys[..4000]
            .iter()
            .enumerate()
            .map(|(i, &k)| match i % 3 {
                0 => Op::Insert(k, val(7)),
                1 => Op::Get(k),
                _ => Op::Remove(k),
            })
            .collect();
        apply_checked(&mut map, &ops);
    }
}

/// The largest and smallest keys that are not reserved, with the largest values.
fn keys_next_to_the_reserved_ones_are_stored<K: Key, V: Value<K>>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let mut map = HiveMap::<K, V>::new(&gpu, 1 << 12).unwrap();
    let keys = keys_near_the_reserved::<K>(1000);
    let values: Vec<V> = (0..keys.len() as u64).map(|i| val(u64::MAX - i)).collect();
    map.insert_many(&keys, &values).unwrap();
    map.validate().unwrap();
    assert_eq!(map.len(), keys.len());
    assert_eq!(
        map.get_many(&keys).unwrap(),
        values.iter().map(|&v| Some(v)).collect::<Vec<_>>()
    );
    assert_eq!(map.remove_many(&keys[..500]).unwrap(), 500);
    map.validate().unwrap();
    assert_eq!(map.contains_many(&keys[..500]).unwrap(), vec![false; 500]);
    assert_eq!(
        map.contains_many(&keys[500..]).unwrap(),
        vec![true; keys.len() - 500]
    );
}

fn two_to_the_24_keys_at_load_0_9<K: Key, V: Value<K>>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let n = 1usize << 24;
    let capacity = (n as f64 / 0.9) as usize;
    let mut map =
        HiveMap::<K, V>::with_config(&gpu, cfg(capacity, 16, HashPair::BitHash, false)).unwrap();
    let keys = unique_keys::<K>(24, n, K::RESERVED);
    let values = random_values::<V>(25, n, &[]);
    let d_keys = gpu.stream().clone_htod(&keys).unwrap();
    let d_values = gpu.stream().clone_htod(&values).unwrap();
    map.insert_many(&d_keys, &d_values).unwrap();
    assert_eq!(map.len(), n);
    map.validate().unwrap();
    let mut out = gpu.stream().alloc_zeros::<V>(n).unwrap();
    map.get_many_into(&d_keys, &mut out, val(u64::MAX)).unwrap();
    assert_eq!(gpu.stream().clone_dtoh(&out).unwrap(), values);
    let stats = map.stats().unwrap();
    println!("2^24 at {:.3}: {stats:?}", stats.load_factor);
    assert_eq!(map.remove_many(&d_keys.slice(..n / 2)).unwrap(), n / 2);
    map.validate().unwrap();
    let hits = map
        .contains_many(&keys[n / 2 - 1000..n / 2 + 1000])
        .unwrap();
    assert!(hits[..1000].iter().all(|&h| !h) && hits[1000..].iter().all(|&h| h));
}

/// Bulk inserts of many copies of each key in one batch (the copies land in the same
/// warp, in other warps and on other SMs) store every key once, also where first
/// buckets are full and inserts go through the lock, a second bucket or an eviction.
fn concurrent_inserts_of_one_key_store_it_once<K: Key, V: Value<K>>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    for slots in [8u32, 16, 32] {
        let capacity = 1usize << 16;
        let mut map =
            HiveMap::<K, V>::with_config(&gpu, cfg(capacity, slots, HashPair::BitHash, false))
                .unwrap();
        let distinct = unique_keys::<K>(41 + slots as u64, capacity * 9 / 10, K::RESERVED);
        let mut rng = ChaCha8Rng::seed_from_u64(slots as u64);
        let mut expected: HashMap<K, Vec<V>> = HashMap::new();
        // Two batches: to load 0.5, then to 0.9; each key 1 to 8 times, shuffled, and
        // the second batch also repeats keys of the first (replaces racing with claims).
        let half = distinct.len() * 5 / 9;
        let mut failed = 0u64;
        for (round, range) in [(0u32, 0..half), (1, half / 2..distinct.len())] {
            let mut keys = Vec::new();
            let mut values = Vec::new();
            for (i, &k) in distinct[range].iter().enumerate() {
                let copies = 1 + rng.random_range(0..8u32);
                for c in 0..copies {
                    let v = val::<V>((i as u64) << 8 | (round as u64) << 4 | c as u64);
                    keys.push(k);
                    values.push(v);
                    expected.entry(k).or_default().push(v);
                }
            }
            for i in (1..keys.len()).rev() {
                let j = rng.random_range(0..=i);
                keys.swap(i, j);
                values.swap(i, j);
            }
            match map.insert_many(&keys, &values) {
                Ok(()) => {}
                Err(e) => match e.not_applied() {
                    Some(indices) => failed += indices.len() as u64,
                    None => panic!("{slots} slots, round {round}: {e}"),
                },
            }
            map.validate().unwrap();
        }
        let stored = state(&map);
        assert_eq!(stored.len(), map.len());
        for (k, v) in &stored {
            assert!(
                expected[k].contains(v),
                "{slots} slots: key {k:#x} holds {v:#x}, never inserted"
            );
        }
        // Every key is present unless an insert of it failed (stash full, reported).
        let stats = map.stats().unwrap();
        if failed == 0 {
            assert_eq!(map.len(), expected.len(), "{slots} slots: {stats:?}");
        } else {
            assert!(
                map.len() <= expected.len(),
                "{slots} slots: {failed} failed"
            );
        }
    }
}
