//! Injected allocation faults (gpuds-core's `fault-injection` feature, through this
//! crate's): the k-th table allocation of a resize failing, and a device-memory budget
//! that makes automatic growth fail. Each time the table returns an error, changes
//! nothing the error does not name, validates, and works once the fault is lifted. Each
//! test skips without a GPU. The HiveMap tests run for each key and value type
//! (u32_u32::..., u64_u32::..., u64_u64::...).

mod common;

use std::collections::{HashMap, HashSet};

use common::{val, Key, Value};
use gpuds_core::faults::AllocFaults;
use gpuds_core::Gpu;
use gpuds_hive::{HiveConfig, HiveMap, LinearConfig, LinearProbeMap};
use gpuds_testkit::workload::unique_keys;

for_each_type!(
    a_failed_expansion_leaves_the_hive_table_as_it_was,
    a_memory_budget_stops_automatic_growth_and_loses_nothing,
);

/// Each key's number as its value.
fn values_of<K: Key, V: Value<K>>(keys: &[K]) -> Vec<V> {
    keys.iter().map(|k| val(k.to_u64())).collect()
}

/// A handle of its own, so that its faults touch no other test's structures.
fn own_gpu() -> Option<Gpu> {
    gpuds_testkit::gpu()?;
    Some(Gpu::new(0).expect("a second handle"))
}

fn hive_contents<K: Key, V: Value<K>>(map: &HiveMap<K, V>) -> HashMap<K, V> {
    map.validate().expect("valid table");
    map.to_vec().expect("to_vec").into_iter().collect()
}

fn a_failed_expansion_leaves_the_hive_table_as_it_was<K: Key, V: Value<K>>() {
    let Some(gpu) = own_gpu() else {
        return;
    };
    let keys = unique_keys::<K>(81, 20_000, K::RESERVED);
    let values = values_of::<K, V>(&keys);
    for k in [1, 2, 3] {
        let mut map = HiveMap::<K, V>::with_config(
            &gpu,
            HiveConfig {
                capacity: 1 << 15,
                ..Default::default()
            },
        )
        .unwrap();
        map.insert_many(&keys, &values).unwrap();
        let before = hive_contents(&map);
        let buckets = map.buckets();
        gpu.inject_allocation_faults(AllocFaults {
            fail_allocation: Some(k),
            ..Default::default()
        });
        let result = map.expand(buckets * 4);
        gpu.inject_allocation_faults(AllocFaults::default());
        if result.is_err() {
            assert_eq!(map.buckets(), buckets, "allocation {k}: {result:?}");
        }
        assert!(
            hive_contents(&map) == before,
            "allocation {k}: contents changed"
        );
        map.expand(buckets * 4).unwrap();
        assert!(
            hive_contents(&map) == before,
            "allocation {k}: contents after the expansion"
        );
    }
}

fn a_memory_budget_stops_automatic_growth_and_loses_nothing<K: Key, V: Value<K>>() {
    let Some(gpu) = own_gpu() else {
        return;
    };
    let base = unique_keys::<K>(91, 10_000, K::RESERVED);
    let mut avoid = base.clone();
    avoid.extend_from_slice(K::RESERVED);
    let batch = unique_keys::<K>(92, 100_000, &avoid);
    let (base_values, batch_values) = (values_of::<K, V>(&base), values_of::<K, V>(&batch));
    let mut map = HiveMap::<K, V>::with_config(
        &gpu,
        HiveConfig {
            capacity: 1 << 14,
            ..Default::default()
        },
    )
    .unwrap();
    map.insert_many(&base, &base_values).unwrap();
    let mut model = hive_contents(&map);
    gpu.inject_allocation_faults(AllocFaults {
        memory_budget: Some(0),
        ..Default::default()
    });
    let result = map.insert_many(&batch, &batch_values);
    gpu.inject_allocation_faults(AllocFaults::default());
    let skipped: HashSet<usize> = match &result {
        Ok(()) => HashSet::new(),
        Err(e) => match e.not_applied() {
            Some(named) => named.iter().copied().collect(),
            // Any other error: nothing of the batch was applied.
            None => (0..batch.len()).collect(),
        },
    };
    assert!(result.is_err(), "the batch needed no growth");
    for (i, (&k, &v)) in batch.iter().zip(&batch_values).enumerate() {
        if !skipped.contains(&i) {
            model.insert(k, v);
        }
    }
    assert!(
        hive_contents(&map) == model,
        "contents differ from the model: {result:?}"
    );
    map.insert_many(&batch, &batch_values).unwrap();
    for (&k, &v) in batch.iter().zip(&batch_values) {
        model.insert(k, v);
    }
    assert!(hive_contents(&map) == model);
}

#[test]
fn a_failed_reserve_or_rehash_leaves_the_linear_table_as_it_was() {
    let Some(gpu) = own_gpu() else {
        return;
    };
    let keys = unique_keys::<u32>(101, 20_000, &[]);
    let mut map = LinearProbeMap::<u32, u32>::with_config(
        &gpu,
        LinearConfig {
            capacity: 1 << 15,
            ..Default::default()
        },
    )
    .unwrap();
    map.insert_many(&keys, &keys).unwrap();
    let contents = |m: &LinearProbeMap<u32, u32>| -> HashMap<u32, u32> {
        m.validate().expect("valid table");
        m.to_vec().expect("to_vec").into_iter().collect()
    };
    let before = contents(&map);
    let capacity = map.capacity();
    gpu.inject_allocation_faults(AllocFaults {
        fail_allocation: Some(1),
        ..Default::default()
    });
    assert!(map.reserve(1 << 20).is_err());
    assert_eq!(map.capacity(), capacity);
    assert!(contents(&map) == before);
    gpu.inject_allocation_faults(AllocFaults {
        memory_budget: Some(0),
        ..Default::default()
    });
    assert!(map.rehash(1 << 18).is_err());
    assert_eq!(map.capacity(), capacity);
    assert!(contents(&map) == before);
    gpu.inject_allocation_faults(AllocFaults::default());
    map.reserve(1 << 20).unwrap();
    assert!(map.capacity() >= keys.len() as u64 + (1 << 20));
    assert!(contents(&map) == before);
}
