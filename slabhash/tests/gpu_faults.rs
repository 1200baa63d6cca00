//! Injected faults in the slab pool (the `fault-injection` feature): the k-th allocation
//! request of a batch failing (first, middle, last) and a growth step failing. Each time
//! the map names what it did not apply (or applies nothing), loses nothing else,
//! validates, and works once the fault is lifted. Each test skips without a GPU.

mod common;

use std::collections::{HashMap, HashSet};

use gpuds_alloc::faults::Faults;
use gpuds_core::Status;
use gpuds_slabhash::{SlabHashConfig, SlabHashMap};
use gpuds_testkit::failed::applied;
use gpuds_testkit::workload::unique_keys;

use common::{contents, not_applied};

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

fn start(
    gpu: &gpuds_core::Gpu,
    config: SlabHashConfig,
    base: &[u32],
) -> (SlabHashMap, HashMap<u32, u32>) {
    let mut map = SlabHashMap::with_config(gpu, config).unwrap();
    map.insert_many(base, base).unwrap();
    (map, base.iter().map(|&k| (k, k)).collect())
}

fn same(map: &SlabHashMap, model: &HashMap<u32, u32>, what: &str) {
    map.validate().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        contents(map) == *model,
        "{what}: contents differ from the model"
    );
}

#[test]
fn a_failed_allocation_request_names_what_it_did_not_apply() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let base = unique_keys::<u32>(61, 3_000, &[]);
    let batch = unique_keys::<u32>(62, 6_000, &base);
    let values: Vec<u32> = batch.iter().map(|k| k ^ 0x1234).collect();
    let (mut probe, _) = start(&gpu, config(4096, 4096), &base);
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
            assert_eq!(v, model.get(key).copied(), "{what}: get {key}");
        }
        let gone: Vec<u32> = base.iter().copied().step_by(3).collect();
        map.remove_many(&gone).unwrap();
        for key in &gone {
            model.remove(key);
        }
        let (ks, vs): (Vec<u32>, Vec<u32>) = skipped.iter().map(|&i| (batch[i], values[i])).unzip();
        map.insert_many(&ks, &vs).unwrap();
        model.extend(applied(&ks, &vs, &HashSet::new()));
        same(&map, &model, &what);
    }
}

#[test]
fn a_failed_growth_applies_nothing_and_the_map_works_after() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let base = unique_keys::<u32>(71, 1_000, &[]);
    let batch = unique_keys::<u32>(72, 200_000, &base);
    for budget in [false, true] {
        let what = if budget {
            "memory budget"
        } else {
            "first growth"
        };
        let (mut map, mut model) = start(&gpu, config(1024, 1 << 22), &base);
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
        let skipped: HashSet<usize> = match map.insert_many(&batch, &batch) {
            // A failed growth with headroom is retried without it (a second growth).
            Ok(()) if !budget => HashSet::new(),
            Ok(()) => panic!("{what}: the batch grew past the budget"),
            Err(e) if e.to_string().contains("out of device memory") => (0..batch.len()).collect(),
            Err(e) => not_applied(Err(e), Status::POOL_EXHAUSTED)
                .into_iter()
                .collect(),
        };
        model.extend(applied(&batch, &batch, &skipped));
        same(&map, &model, what);
        map.inject_faults(Faults::default()).unwrap();
        map.insert_many(&batch, &batch).unwrap();
        model.extend(applied(&batch, &batch, &HashSet::new()));
        same(&map, &model, what);
    }
}
