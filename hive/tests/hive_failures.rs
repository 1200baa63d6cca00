//! GPU tests of HiveMap batches that fail in part: the error names exactly the operations
//! not applied, the table stays valid, and every later call answers as a `std` oracle
//! holding what was applied; flags a user kernel leaves in the table's own status word
//! never show up in host calls, only in `refresh`. Small sizes (also run under
//! compute-sanitizer). Every test runs for each key and value type (u32_u32::...,
//! u64_u32::..., u64_u64::...).

mod common;

use std::collections::HashMap;

use common::{val, Key, Value};
use cudarc::driver::PushKernelArg;
use gpuds_core::{launch, Program, Status};
use gpuds_hive::{Error, HashPair, HiveConfig, HiveMap, Operation};
use gpuds_testkit::workload::unique_keys;

for_each_type!(
    a_full_stash_fails_inserts_alone_and_later_calls_match_the_oracle,
    flags_of_a_user_kernel_reach_refresh_only,
);

/// 1,024 slots in buckets of 16, a stash of 64 entries, no resizing.
fn small() -> HiveConfig {
    HiveConfig {
        capacity: 1024,
        slots_per_bucket: 16,
        hash: HashPair::BitHash,
        auto_resize: false,
        ..Default::default()
    }
}

/// The operations a call reports not applied with `flag` among its flags (none when it
/// succeeded); any other error fails the test.
fn not_applied(result: Result<(), Error>, flag: Status) -> Vec<usize> {
    match result {
        Ok(()) => Vec::new(),
        Err(Error::Core(e)) => gpuds_testkit::failed::not_applied(&e, flag),
        Err(e) => panic!("expected operations not applied ({flag}), got {e}"),
    }
}

/// The oracle after inserting `keys` (value = key ^ `salt`) but for the `failed` ones.
fn insert_applied<K: Key, V: Value<K>>(
    oracle: &mut HashMap<K, V>,
    keys: &[K],
    salt: u64,
    failed: &[usize],
) {
    for (i, &k) in keys.iter().enumerate() {
        if failed.binary_search(&i).is_err() {
            oracle.insert(k, val(k.to_u64() ^ salt));
        }
    }
}

fn values<K: Key, V: Value<K>>(keys: &[K], salt: u64) -> Vec<V> {
    keys.iter().map(|k| val(k.to_u64() ^ salt)).collect()
}

/// The table validates, holds exactly the oracle's pairs, and answers `probes` as it.
fn agrees<K: Key, V: Value<K>>(map: &HiveMap<K, V>, oracle: &HashMap<K, V>, probes: &[K]) {
    map.validate().unwrap();
    let pairs = map.to_vec().unwrap();
    let held: HashMap<K, V> = pairs.iter().copied().collect();
    assert_eq!(held.len(), pairs.len(), "a key is held twice");
    assert_eq!(&held, oracle);
    assert_eq!(map.len(), oracle.len());
    let got = map.get_many(probes).unwrap();
    let found = map.contains_many(probes).unwrap();
    for (i, k) in probes.iter().enumerate() {
        assert_eq!(got[i], oracle.get(k).copied(), "get of key {k:#x}");
        assert_eq!(found[i], oracle.contains_key(k), "contains of key {k:#x}");
    }
}

fn a_full_stash_fails_inserts_alone_and_later_calls_match_the_oracle<K: Key, V: Value<K>>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let mut map = HiveMap::<K, V>::with_config(&gpu, small()).unwrap();
    let mut oracle = HashMap::new();
    let keys = unique_keys::<K>(3, 1400, K::RESERVED);
    let failed = not_applied(
        map.insert_many(&keys, &values::<K, V>(&keys, 1)),
        Status::STASH_FULL,
    );
    assert!(!failed.is_empty());
    insert_applied(&mut oracle, &keys, 1, &failed);
    let misses: Vec<K> = unique_keys::<K>(4, 1600, K::RESERVED)
        .into_iter()
        .filter(|k| !keys.contains(k))
        .take(100)
        .collect();
    let probes: Vec<K> = keys.iter().chain(&misses).copied().collect();
    agrees(&map, &oracle, &probes);

    // Replacing stored keys needs no room.
    let stored: Vec<K> = oracle.keys().copied().collect();
    map.insert_many(&stored[..200], &values::<K, V>(&stored[..200], 2))
        .unwrap();
    insert_applied(&mut oracle, &stored[..200], 2, &[]);
    agrees(&map, &oracle, &probes);

    // Removals report what they removed and nothing of the failed inserts.
    let gone = &stored[..300];
    let mut with_misses = gone.to_vec();
    with_misses.extend(&misses[..10]);
    assert_eq!(map.remove_many(&with_misses).unwrap(), 300);
    for k in gone {
        oracle.remove(k);
    }
    agrees(&map, &oracle, &probes);

    // The failed keys come back into the room made; whatever still fails is named.
    let retry: Vec<K> = failed.iter().map(|&i| keys[i]).collect();
    let again = not_applied(
        map.insert_many(&retry, &values::<K, V>(&retry, 3)),
        Status::STASH_FULL,
    );
    insert_applied(&mut oracle, &retry, 3, &again);
    agrees(&map, &oracle, &probes);

    // A mixed batch on a nearly full table: whatever fails is an insert, and is named.
    let fresh: Vec<K> = misses[10..].to_vec();
    let mut ops: Vec<Operation<K, V>> = fresh
        .iter()
        .map(|&k| Operation::Insert(k, val(k.to_u64())))
        .collect();
    ops.extend(stored[300..400].iter().map(|&k| Operation::Get(k)));
    ops.extend(stored[400..450].iter().map(|&k| Operation::Remove(k)));
    let failed = match map.apply(&ops) {
        Ok(seen) => {
            for (op, s) in ops.iter().zip(seen) {
                if let Operation::Get(k) = op {
                    assert_eq!(s, oracle.get(k).copied());
                }
            }
            Vec::new()
        }
        Err(e) => not_applied(Err(e), Status::STASH_FULL),
    };
    assert!(failed.iter().all(|&i| i < fresh.len()), "only inserts fail");
    insert_applied(&mut oracle, &fresh, 0, &failed);
    for k in &stored[400..450] {
        oracle.remove(k);
    }
    agrees(&map, &oracle, &probes);

    // Room for everything: the failed keys all go in.
    map.expand(64).unwrap();
    agrees(&map, &oracle, &probes);
    let rest: Vec<K> = keys
        .iter()
        .filter(|k| !oracle.contains_key(k))
        .copied()
        .collect();
    map.insert_many(&rest, &values::<K, V>(&rest, 4)).unwrap();
    insert_applied(&mut oracle, &rest, 4, &[]);
    agrees(&map, &oracle, &probes);
}

fn flags_of_a_user_kernel_reach_refresh_only<K: Key, V: Value<K>>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let mut map = HiveMap::<K, V>::with_config(&gpu, small()).unwrap();
    let keys = unique_keys::<K>(5, 200, K::RESERVED);
    map.insert_many(&keys, &values::<K, V>(&keys, 0)).unwrap();
    // A user kernel reports a full stash and marks its operation 3 failed, in the
    // table's own word and bits.
    let mut program = Program::new(
        format!("hive_user_flags_{}_{}", K::SUFFIX, V::SUFFIX),
        format!(
            r#"#include <gpuds/hive/hive_ref.cuh>
           extern "C" __global__ void flag({} t) {{
             gpuds::status::report(t.status, gpuds::status::STASH_FULL);
             t.record_failure(3);
           }}"#,
            map.cuda_ref_type()
        ),
    )
    .headers(gpuds_hive::cuda_headers());
    for (name, value) in map.defines() {
        program = program.define(name, value);
    }
    let kernel = gpu.load(&program).unwrap().kernel("flag").unwrap();
    let r = map.device_ref();
    let mut args = gpu.stream().launch_builder(kernel.func());
    args.arg(&r);
    // SAFETY: the kernel takes a hive_ref and writes its status word and failure bits.
    unsafe { args.launch(launch::shape(1, 16, 0)) }.unwrap();
    // Host calls report their own outcome only.
    let v = |k: K| val::<V>(k.to_u64());
    assert_eq!(
        map.get_many(&keys[..3]).unwrap(),
        vec![Some(v(keys[0])), Some(v(keys[1])), Some(v(keys[2]))]
    );
    assert_eq!(map.remove_many(&keys[..10]).unwrap(), 10);
    map.insert_many(&[keys[0]], &[val(7)]).unwrap();
    // refresh reports what the kernel recorded, once.
    match map.refresh() {
        Err(Error::Core(gpuds_core::Error::NotApplied {
            status,
            not_applied,
        })) => {
            assert!(status.contains(Status::STASH_FULL));
            assert_eq!(not_applied, vec![3]);
        }
        other => panic!("expected the user kernel's failure, got {other:?}"),
    }
    map.refresh().unwrap();
    let mut oracle: HashMap<K, V> = keys[10..].iter().map(|&k| (k, v(k))).collect();
    oracle.insert(keys[0], val(7));
    agrees(&map, &oracle, &keys);
}
