//! GPU tests of size arithmetic in gpuds-btree (issue 23, part 3): the constructor over
//! capacity-like pool sizes either succeeds with at least the nodes asked for, or fails
//! (`CapacityOverflow`, `OutOfMemory`) before anything is allocated; capped range
//! queries whose output (`ranges × cap`) passes the 32-bit limit are refused with the
//! tree unchanged. Without a GPU each test prints `skipped: no CUDA device` and passes.

mod common;

use common::{key, keys, vals};
use gpuds_btree::node::NodeLayout;
use gpuds_btree::{BTreeConfig, Error, GpuBTreeMap, TreeKey, TreeValue};
use gpuds_testkit::strategy::capacity_edges;

/// The largest pool a test lets a constructor allocate (nodes of 128 bytes: 8 MiB).
const SMALL: u64 = 1 << 16;

fn is_overflow(e: &Error) -> bool {
    matches!(e, Error::Core(gpuds_core::Error::CapacityOverflow(_)))
}

typed!(
    constructors_take_every_pool_size_or_refuse_it,
    a_pool_past_device_memory_is_out_of_memory,
    capped_ranges_past_32_bits_are_refused,
);

fn constructors_take_every_pool_size_or_refuse_it<K: TreeKey, V: TreeValue>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let default_max = BTreeConfig::default().max_nodes;
    for n in capacity_edges() {
        if n <= SMALL || n > default_max {
            let config = BTreeConfig {
                initial_nodes: n,
                ..Default::default()
            };
            match GpuBTreeMap::<K, V>::with_config(&gpu, config) {
                Ok(mut t) => {
                    assert!(t.stats().unwrap().capacity_units >= n, "{n}");
                    t.insert_many(&keys(&[1, 2]), &vals(&[10, 20])).unwrap();
                    t.validate().unwrap();
                }
                Err(e) => assert!(n > default_max && is_overflow(&e), "initial {n}: {e}"),
            }
        }
        // The maximum reserves virtual addresses only (or a table of super blocks).
        if n <= default_max || n > gpuds_alloc::MAX_UNITS {
            let config = BTreeConfig {
                initial_nodes: n.min(1024),
                max_nodes: n,
                ..Default::default()
            };
            match GpuBTreeMap::<K, V>::with_config(&gpu, config) {
                Ok(t) => {
                    assert!(n >= 1);
                    t.validate().unwrap();
                }
                Err(Error::InvalidConfig(_)) => assert_eq!(n, 0),
                Err(e) => assert!(
                    n > gpuds_alloc::MAX_UNITS && is_overflow(&e),
                    "max {n}: {e}"
                ),
            }
        }
    }
}

/// A pool that would start larger than the device: `OutOfMemory`, decided before
/// anything is allocated.
fn a_pool_past_device_memory_is_out_of_memory<K: TreeKey, V: TreeValue>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let node_bytes = NodeLayout::of::<K, V>(BTreeConfig::default().wide_node_bytes).node_bytes;
    if !gpuds_testkit::memory_below(&gpu, gpuds_alloc::MAX_UNITS * node_bytes as u64) {
        return;
    }
    let config = BTreeConfig {
        initial_nodes: gpuds_alloc::MAX_UNITS,
        max_nodes: gpuds_alloc::MAX_UNITS,
        ..Default::default()
    };
    let e = GpuBTreeMap::<K, V>::with_config(&gpu, config).unwrap_err();
    assert!(
        matches!(e, Error::Core(gpuds_core::Error::OutOfMemory { .. })),
        "{e}"
    );
}

/// `ranges × cap` output pairs past `u32::MAX` are refused before anything is
/// allocated; smaller ones run.
fn capped_ranges_past_32_bits_are_refused<K: TreeKey, V: TreeValue>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let mut t = GpuBTreeMap::<K, V>::new(&gpu).unwrap();
    let raw: Vec<u32> = (0..1000).collect();
    t.insert_many(&keys::<K>(&raw), &vals::<V>(&raw)).unwrap();
    let ranges = vec![(key::<K>(0), key::<K>(10)); 1 << 16];
    for cap in [u32::MAX, 1 << 31, (1 << 16) + 1] {
        let e = t.range_many_capped(&ranges, cap).unwrap_err();
        assert!(is_overflow(&e), "cap {cap}: {e}");
    }
    let (found, counts) = t.range_many_capped(&ranges[..4], 1 << 16).unwrap();
    assert_eq!(counts, vec![11; 4]);
    assert_eq!(found.get(3).len(), 11);
    let stream = gpu.stream();
    let lo = stream.clone_htod(&keys::<K>(&[0, 5])).unwrap();
    let hi = stream.clone_htod(&keys::<K>(&[9, 9])).unwrap();
    let mut out_k = stream.alloc_zeros::<K>(4).unwrap();
    let mut out_v = stream.alloc_zeros::<V>(4).unwrap();
    let mut counts = stream.alloc_zeros::<u32>(2).unwrap();
    let e = t
        .range_collect_capped_device(&lo, &hi, u32::MAX, &mut out_k, &mut out_v, &mut counts)
        .unwrap_err();
    assert!(is_overflow(&e), "{e}");
    assert_eq!(t.len().unwrap(), 1000);
    t.validate().unwrap();
}
