//! Injected allocation faults (gpuds-core's `fault-injection` feature, through this
//! crate's): the k-th table allocation of a resize failing, and a device-memory budget
//! that makes automatic growth fail. Each time the table returns an error, changes
//! nothing the error does not name, validates, and works once the fault is lifted. Each
//! test skips without a GPU.

use std::collections::{HashMap, HashSet};

use gpuds_core::faults::AllocFaults;
use gpuds_core::Gpu;
use gpuds_hive::{HiveConfig, HiveMap, LinearConfig, LinearProbeMap};
use gpuds_testkit::workload::unique_keys;

/// A handle of its own, so that its faults touch no other test's structures.
fn own_gpu() -> Option<Gpu> {
    gpuds_testkit::gpu()?;
    Some(Gpu::new(0).expect("a second handle"))
}

fn hive_contents(map: &HiveMap) -> HashMap<u32, u32> {
    map.validate().expect("valid table");
    map.to_vec().expect("to_vec").into_iter().collect()
}

#[test]
fn a_failed_expansion_leaves_the_hive_table_as_it_was() {
    let Some(gpu) = own_gpu() else {
        return;
    };
    let keys = unique_keys::<u32>(81, 20_000, &[]);
    for k in [1, 2, 3] {
        let mut map = HiveMap::with_config(
            &gpu,
            HiveConfig {
                capacity: 1 << 15,
                ..Default::default()
            },
        )
        .unwrap();
        map.insert_many(&keys, &keys).unwrap();
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

#[test]
fn a_memory_budget_stops_automatic_growth_and_loses_nothing() {
    let Some(gpu) = own_gpu() else {
        return;
    };
    let base = unique_keys::<u32>(91, 10_000, &[]);
    let batch = unique_keys::<u32>(92, 100_000, &base);
    let mut map = HiveMap::with_config(
        &gpu,
        HiveConfig {
            capacity: 1 << 14,
            ..Default::default()
        },
    )
    .unwrap();
    map.insert_many(&base, &base).unwrap();
    let mut model = hive_contents(&map);
    gpu.inject_allocation_faults(AllocFaults {
        memory_budget: Some(0),
        ..Default::default()
    });
    let result = map.insert_many(&batch, &batch);
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
    for (i, &k) in batch.iter().enumerate() {
        if !skipped.contains(&i) {
            model.insert(k, k);
        }
    }
    assert!(
        hive_contents(&map) == model,
        "contents differ from the model: {result:?}"
    );
    map.insert_many(&batch, &batch).unwrap();
    for &k in &batch {
        model.insert(k, k);
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
