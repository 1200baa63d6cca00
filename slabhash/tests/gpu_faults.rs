//! Injected faults in the slab pool (the `fault-injection` feature): the k-th allocation
//! request of a batch failing (first, middle, last) and a growth step failing. Each time
//! the map names what it did not apply (or applies nothing), loses nothing else,
//! validates, and works once the fault is lifted. Each test skips without a GPU. Every
//! test body runs for every key and value type.

mod common;

use std::collections::{HashMap, HashSet};

use gpuds_alloc::faults::Faults;
use gpuds_core::Status;
use gpuds_slabhash::{SlabHashConfig, SlabHashMap, SlabKey};
use gpuds_testkit::failed::applied;
use gpuds_testkit::workload::unique_keys;

use common::{contents, n, not_applied, TestValue};

for_every_map_type!(
    a_failed_allocation_request_names_what_it_did_not_apply,
    a_failed_growth_applies_nothing_and_the_map_works_after,
);

/// Each key's value: every bit of the key, salted.
fn values_of<K: SlabKey, V: TestValue>(keys: &[K], salt: u64) -> Vec<V> {
    keys.iter().map(|k| n(k.to_u64() ^ salt)).collect()
}

/// Few buckets, so that a batch appends many slabs.
fn config(initial_units: u64, max_units: u64) -> SlabHashConfig {
    SlabHashConfig {
        buckets: 64,
        alloc: gpuds_alloc::SlabAllocConfig {
            initial_units,
            max_units,
            ..Default::default()
        },
        ..Default::default()
    }
}

fn start<K: SlabKey, V: TestValue>(
    gpu: &gpuds_core::Gpu,
    config: SlabHashConfig,
    base: &[K],
) -> (SlabHashMap<K, V>, HashMap<K, V>) {
    let mut map = SlabHashMap::with_config(gpu, config).unwrap();
    let values: Vec<V> = values_of(base, 0);
    map.insert_many(base, &values).unwrap();
    (map, base.iter().copied().zip(values).collect())
}

fn same<K: SlabKey, V: TestValue>(map: &SlabHashMap<K, V>, model: &HashMap<K, V>, what: &str) {
    map.validate().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        contents(map) == *model,
        "{what}: contents differ from the model"
    );
}

fn a_failed_allocation_request_names_what_it_did_not_apply<K: SlabKey, V: TestValue>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let base = unique_keys::<K>(61, 3_000, &K::RESERVED);
    let reserved_and_base: Vec<K> = K::RESERVED.iter().chain(&base).copied().collect();
    let batch = unique_keys::<K>(62, 6_000, &reserved_and_base);
    let values: Vec<V> = values_of(&batch, 0x1234);
    let (mut probe, _) = start::<K, V>(&gpu, config(4096, 4096), &base);
    probe
        .inject_faults(Faults {
            fail_request: Some(u32::MAX),
            ..Default::default()
        })
        .unwrap();
    probe.insert_many(&batch, &values).unwrap();
    let requests = probe.fault_requests().unwrap();
    assert!(
        requests > 2,
        "the batch made {requests} allocation requests"
    );
    for k in [1, requests / 2, requests] {
        let what = format!("request {k} of {requests}");
        let (mut map, mut model) = start(&gpu, config(4096, 4096), &base);
        map.inject_faults(Faults {
            fail_request: Some(k),
            ..Default::default()
        })
        .unwrap();
        let skipped: HashSet<usize> =
            not_applied(map.insert_many(&batch, &values), Status::POOL_EXHAUSTED)
                .into_iter()
                .collect();
        // Lost races change how many requests a run makes: the k-th may not come.
        assert!(
            !skipped.is_empty() || map.fault_requests().unwrap() < k,
            "{what}: nothing failed"
        );
        model.extend(applied(&batch, &values, &skipped));
        same(&map, &model, &what);
        // Lookups, removals and the failed inserts again, with the fault lifted.
        map.inject_faults(Faults::default()).unwrap();
        let got = map.get_many(&batch).unwrap();
        for (key, v) in batch.iter().zip(got) {
            assert_eq!(v, model.get(key).copied(), "{what}: get {key:?}");
        }
        let gone: Vec<K> = base.iter().copied().step_by(3).collect();
        map.remove_many(&gone).unwrap();
        for key in &gone {
            model.remove(key);
        }
        let (ks, vs): (Vec<K>, Vec<V>) = skipped.iter().map(|&i| (batch[i], values[i])).unzip();
        map.insert_many(&ks, &vs).unwrap();
        model.extend(applied(&ks, &vs, &HashSet::new()));
        same(&map, &model, &what);
    }
}

fn a_failed_growth_applies_nothing_and_the_map_works_after<K: SlabKey, V: TestValue>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let base = unique_keys::<K>(71, 1_000, &K::RESERVED);
    let reserved_and_base: Vec<K> = K::RESERVED.iter().chain(&base).copied().collect();
    let batch = unique_keys::<K>(72, 200_000, &reserved_and_base);
    let values: Vec<V> = values_of(&batch, 0x77);
    for budget in [false, true] {
        let what = if budget {
            "memory budget"
        } else {
            "first growth"
        };
        let (mut map, mut model) = start::<K, V>(&gpu, config(1024, 1 << 22), &base);
        let faults = if budget {
            Faults {
                memory_budget: Some(map.stats().unwrap().pool_bytes),
                ..Default::default()
            }
        } else {
            Faults {
                fail_growth: Some(1),
                ..Default::default()
            }
        };
        map.inject_faults(faults).unwrap();
        let skipped: HashSet<usize> = match map.insert_many(&batch, &values) {
            // A failed growth with headroom is retried without it (a second growth).
            Ok(()) if !budget => HashSet::new(),
            Ok(()) => panic!("{what}: the batch grew past the budget"),
            Err(e) if e.to_string().contains("out of device memory") => (0..batch.len()).collect(),
            Err(e) => not_applied(Err(e), Status::POOL_EXHAUSTED)
                .into_iter()
                .collect(),
        };
        model.extend(applied(&batch, &values, &skipped));
        same(&map, &model, what);
        map.inject_faults(Faults::default()).unwrap();
        map.insert_many(&batch, &values).unwrap();
        model.extend(applied(&batch, &values, &HashSet::new()));
        same(&map, &model, what);
    }
}
