//! Injected faults in the node pool (the `fault-injection` feature): the k-th allocation
//! request of a batch failing (first, middle, last), a growth step failing, a device
//! memory budget. Each time the tree returns an error that names what it did not apply
//! (or recovers by itself), loses nothing else, validates, and works once the fault is
//! lifted. Every test runs for every key and value type (`typed!`) and skips without a
//! GPU.

mod common;

use std::collections::{BTreeMap, HashSet};

use common::{keys, vals_of};
use gpuds_alloc::faults::Faults;
use gpuds_btree::node::NodeLayout;
use gpuds_btree::{BTreeConfig, GpuBTreeMap, TreeKey, TreeOp, TreeValue};
use gpuds_testkit::failed::applied;
use gpuds_testkit::workload::unique_keys;

typed!(
    a_failed_allocation_request_names_what_it_did_not_apply,
    a_failed_growth_applies_nothing_or_names_the_rest,
    a_memory_budget_stops_growth_and_loses_nothing,
);

/// `n` unique test keys of seed `seed`, none of `not`.
fn unique<K: TreeKey>(seed: u64, n: usize, not: &[u32]) -> (Vec<u32>, Vec<K>) {
    let raw = unique_keys::<u32>(seed, n, not);
    let ks = keys::<K>(&raw);
    (raw, ks)
}

fn tree<K: TreeKey, V: TreeValue>(
    gpu: &gpuds_core::Gpu,
    initial: u64,
    max: u64,
) -> GpuBTreeMap<K, V> {
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
fn start<K: TreeKey, V: TreeValue>(
    gpu: &gpuds_core::Gpu,
    initial: u64,
    max: u64,
    base: &[K],
) -> (GpuBTreeMap<K, V>, BTreeMap<K, V>) {
    let mut t = tree(gpu, initial, max);
    let values = vals_of::<K, V>(base);
    t.insert_many(base, &values).unwrap();
    (t, base.iter().copied().zip(values).collect())
}

fn a_failed_allocation_request_names_what_it_did_not_apply<K: TreeKey, V: TreeValue>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let (raw_base, base) = unique::<K>(31, 20_000, &[]);
    let (raw, batch) = unique::<K>(32, 30_000, &raw_base);
    let values: Vec<V> = raw.iter().map(|k| common::val(k ^ 0xabcd)).collect();
    // How many requests the batch makes (nothing fails at u32::MAX).
    // A pool that holds base and batch with room to spare (8192 nodes of 14 pairs),
    // scaled to the layout's pairs per node.
    let pairs = NodeLayout::of::<K, V>(BTreeConfig::default().wide_node_bytes).pairs() as u64;
    let room = 8192 * 14 / pairs;
    let (mut probe, _) = start::<K, V>(&gpu, room, room, &base);
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
        let (mut t, mut model) = start(&gpu, room, room, &base);
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
        let (ks, vs): (Vec<K>, Vec<V>) = again.iter().map(|&i| (batch[i], values[i])).unzip();
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
        let (mut t, mut model) = start(&gpu, room, room, &base);
        t.inject_faults(Faults {
            fail_request: Some(k),
            ..Default::default()
        })
        .unwrap();
        let ops: Vec<TreeOp<K, V>> = batch
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

fn a_failed_growth_applies_nothing_or_names_the_rest<K: TreeKey, V: TreeValue>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let (raw_base, base) = unique::<K>(41, 2_000, &[]);
    let (_, batch) = unique::<K>(42, 200_000, &raw_base);
    let values = vals_of::<K, V>(&batch);
    for growth in [1, 2, 3] {
        let (mut t, mut model) = start::<K, V>(&gpu, 1024, 1 << 22, &base);
        t.inject_faults(Faults {
            fail_growth: Some(growth),
            ..Default::default()
        })
        .unwrap();
        let skipped: HashSet<usize> = match t.insert_many(&batch, &values) {
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
        model.extend(applied(&batch, &values, &skipped));
        common::same_contents(&t, &model);
        t.inject_faults(Faults::default()).unwrap();
        t.insert_many(&batch, &values).unwrap();
        model.extend(applied(&batch, &values, &HashSet::new()));
        common::same_contents(&t, &model);
    }
}

fn a_memory_budget_stops_growth_and_loses_nothing<K: TreeKey, V: TreeValue>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let (raw_base, base) = unique::<K>(51, 2_000, &[]);
    let (mut t, mut model) = start::<K, V>(&gpu, 1024, 1 << 22, &base);
    let stats = t.stats().unwrap();
    t.inject_faults(Faults {
        memory_budget: Some(stats.capacity_units * stats.bytes_per_node as u64),
        ..Default::default()
    })
    .unwrap();
    let (_, batch) = unique::<K>(52, 100_000, &raw_base);
    let values = vals_of::<K, V>(&batch);
    let err = t.insert_many(&batch, &values).unwrap_err();
    let skipped: HashSet<usize> = if err.not_applied().is_empty() {
        (0..batch.len()).collect()
    } else {
        err.not_applied().iter().copied().collect()
    };
    model.extend(applied(&batch, &values, &skipped));
    common::same_contents(&t, &model);
    // Reads and removals still work within the budget.
    let gone: Vec<K> = base.iter().copied().step_by(2).collect();
    let removed = t.remove_many(&gone).unwrap();
    for (k, r) in gone.iter().zip(removed) {
        assert_eq!(r, model.remove(k));
    }
    common::same_contents(&t, &model);
    t.inject_faults(Faults::default()).unwrap();
    t.insert_many(&batch, &values).unwrap();
    model.extend(applied(&batch, &values, &HashSet::new()));
    common::same_contents(&t, &model);
}
