//! Injected faults in the node pool (the `fault-injection` feature): the k-th allocation
//! request of a batch failing (first, middle, last), a growth step failing, a device
//! memory budget. Each time the tree returns an error that names what it did not apply
//! (or recovers by itself), loses nothing else, validates, and works once the fault is
//! lifted. Each test skips without a GPU.

mod common;

use std::collections::{BTreeMap, HashSet};

use gpuds_alloc::faults::Faults;
use gpuds_btree::{BTreeConfig, GpuBTreeMap, TreeOp};
use gpuds_testkit::failed::applied;
use gpuds_testkit::workload::unique_keys;

fn tree(gpu: &gpuds_core::Gpu, initial: u64, max: u64) -> GpuBTreeMap<u32, u32> {
    GpuBTreeMap::with_config(
        gpu,
        BTreeConfig {
            initial_nodes: initial,
            max_nodes: max,
            ..Default::default()
        },
    )
    .unwrap()
}

/// A tree holding `base` with faults lifted, and its model.
fn start(
    gpu: &gpuds_core::Gpu,
    initial: u64,
    max: u64,
    base: &[u32],
) -> (GpuBTreeMap<u32, u32>, BTreeMap<u32, u32>) {
    let mut t = tree(gpu, initial, max);
    t.insert_many(base, base).unwrap();
    (t, base.iter().map(|&k| (k, k)).collect())
}

#[test]
fn a_failed_allocation_request_names_what_it_did_not_apply() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let base = unique_keys::<u32>(31, 20_000, &[]);
    let batch = unique_keys::<u32>(32, 30_000, &base);
    let values: Vec<u32> = batch.iter().map(|k| k ^ 0xabcd).collect();
    // How many requests the batch makes (nothing fails at u32::MAX).
    let (mut probe, _) = start(&gpu, 8192, 8192, &base);
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
        // A pool that cannot grow: the failed insert is named, the rest applied.
        let (mut t, mut model) = start(&gpu, 8192, 8192, &base);
        t.inject_faults(Faults {
            fail_request: Some(k),
            ..Default::default()
        })
        .unwrap();
        let skipped: HashSet<usize> = match t.insert_many(&batch, &values) {
            Ok(()) => HashSet::new(),
            Err(e) => {
                assert!(e.is_pool_exhausted(), "request {k}: {e}");
                e.not_applied().iter().copied().collect()
            }
        };
        // The k-th request fails unless a racing retry-free run made fewer requests.
        assert!(
            !skipped.is_empty() || t.fault_requests().unwrap() < k,
            "request {k}"
        );
        model.extend(applied(&batch, &values, &skipped));
        common::same_contents(&t, &model);
        t.inject_faults(Faults::default()).unwrap();
        let again: Vec<usize> = skipped.iter().copied().collect();
        let (ks, vs): (Vec<u32>, Vec<u32>) = again.iter().map(|&i| (batch[i], values[i])).unzip();
        t.insert_many(&ks, &vs).unwrap();
        model.extend(applied(&ks, &vs, &HashSet::new()));
        common::same_contents(&t, &model);

        // A pool that may grow: the host form grows it and inserts the failed pairs again.
        let (mut t, mut model) = start(&gpu, 1024, 1 << 20, &base);
        t.inject_faults(Faults {
            fail_request: Some(k),
            ..Default::default()
        })
        .unwrap();
        t.insert_many(&batch, &values).unwrap();
        model.extend(applied(&batch, &values, &HashSet::new()));
        common::same_contents(&t, &model);
        // The same in a mixed batch.
        let (mut t, mut model) = start(&gpu, 8192, 8192, &base);
        t.inject_faults(Faults {
            fail_request: Some(k),
            ..Default::default()
        })
        .unwrap();
        let ops: Vec<TreeOp<u32, u32>> = batch
            .iter()
            .zip(&values)
            .map(|(&k, &v)| TreeOp::Insert(k, v))
            .collect();
        let skipped: HashSet<usize> = match t.apply(&ops) {
            Ok(_) => HashSet::new(),
            Err(e) => {
                assert!(e.is_pool_exhausted(), "request {k}: {e}");
                e.not_applied().iter().copied().collect()
            }
        };
        model.extend(applied(&batch, &values, &skipped));
        common::same_contents(&t, &model);
    }
}

#[test]
fn a_failed_growth_applies_nothing_or_names_the_rest() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let base = unique_keys::<u32>(41, 2_000, &[]);
    let batch = unique_keys::<u32>(42, 200_000, &base);
    for growth in [1, 2, 3] {
        let (mut t, mut model) = start(&gpu, 1024, 1 << 22, &base);
        t.inject_faults(Faults {
            fail_growth: Some(growth),
            ..Default::default()
        })
        .unwrap();
        let skipped: HashSet<usize> = match t.insert_many(&batch, &batch) {
            Ok(()) => HashSet::new(),
            // The growth before the batch failed: nothing was applied.
            Err(e) if e.not_applied().is_empty() => {
                assert!(
                    e.to_string().contains("out of device memory"),
                    "growth {growth}: {e}"
                );
                (0..batch.len()).collect()
            }
            // A growth between retries failed: the rest is named.
            Err(e) => {
                assert!(e.is_pool_exhausted(), "growth {growth}: {e}");
                e.not_applied().iter().copied().collect()
            }
        };
        model.extend(applied(&batch, &batch, &skipped));
        common::same_contents(&t, &model);
        t.inject_faults(Faults::default()).unwrap();
        t.insert_many(&batch, &batch).unwrap();
        model.extend(applied(&batch, &batch, &HashSet::new()));
        common::same_contents(&t, &model);
    }
}

#[test]
fn a_memory_budget_stops_growth_and_loses_nothing() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let base = unique_keys::<u32>(51, 2_000, &[]);
    let (mut t, mut model) = start(&gpu, 1024, 1 << 22, &base);
    t.inject_faults(Faults {
        memory_budget: Some(t.stats().unwrap().capacity_units * 128),
        ..Default::default()
    })
    .unwrap();
    let batch = unique_keys::<u32>(52, 100_000, &base);
    let err = t.insert_many(&batch, &batch).unwrap_err();
    let skipped: HashSet<usize> = if err.not_applied().is_empty() {
        (0..batch.len()).collect()
    } else {
        err.not_applied().iter().copied().collect()
    };
    model.extend(applied(&batch, &batch, &skipped));
    common::same_contents(&t, &model);
    // Reads and removals still work within the budget.
    let gone: Vec<u32> = base.iter().copied().step_by(2).collect();
    let removed = t.remove_many(&gone).unwrap();
    for (k, r) in gone.iter().zip(removed) {
        assert_eq!(r, model.remove(k));
    }
    common::same_contents(&t, &model);
    t.inject_faults(Faults::default()).unwrap();
    t.insert_many(&batch, &batch).unwrap();
    model.extend(applied(&batch, &batch, &HashSet::new()));
    common::same_contents(&t, &model);
}
