//! GPU tests of linearizability under concurrency: `apply` batches where range queries,
//! each at its own tile-wide snapshot, run in one kernel with inserts and erases of keys
//! inside their ranges; and the anomaly of §4.2.1, shown on `GpuBTreeMap` (a user kernel
//! whose concurrent scans of one range return incomparable sets) and never seen on
//! `VersionedBTreeMap` under the same workload. Every test skips without a GPU (fails
//! with GPUDS_REQUIRE_GPU=1).

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::{
    check_replies, key, keys, map_with_nodes, raw, same_contents, shuffle, val_of, Change, Model,
};
use gpuds_btree::{BTreeConfig, GpuBTreeMap};
use gpuds_core::cudarc::driver::PushKernelArg;
use gpuds_core::{launch, Program};
use gpuds_mvbtree::node::UNSET_TS;
use gpuds_mvbtree::{MvOp, TreeKey, TreeValue};
use rand::rngs::ChaCha8Rng;
use rand::SeedableRng;

typed!(
    apply_queries_are_exact_at_their_snapshots,
    anomaly_kernel_compiles
);
two_types!(gpu_btree_ranges_are_not_linearizable_versioned_ranges_are);

/// Initial keys 4i (i < 3000); rounds of `apply` with many Range and RangeCount queries
/// over a few overlapping ranges mixed with inserts of new keys (4i + 1, then 4i + 2),
/// then erases of initial keys, then inserts of 4i + 3: every reply is exact at its
/// snapshot; the map is valid and equals the oracle after each batch, with no older
/// version left.
fn apply_queries_are_exact_at_their_snapshots<K: TreeKey, V: TreeValue>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let mut rng = ChaCha8Rng::seed_from_u64(40);
    let m = 3000u32;
    let initial = keys::<K>(&(0..m).map(|i| 4 * i).collect::<Vec<u32>>());
    let mut map = map_with_nodes::<K, V>(&gpu, 1 << 13);
    let values: Vec<V> = initial.iter().map(|&k| val_of::<K, V>(k)).collect();
    map.insert_many(&initial, &values).unwrap();
    let mut model: Model<K, V> = initial.iter().copied().zip(values).collect();
    // Overlapping ranges of at most 1001 keys (range_cap 1024).
    let ranges: Vec<(K, K)> = [
        (400, 1400),
        (1000, 2201),
        (2000, 2399),
        (7996, 8999),
        (1200, 1200),
    ]
    .iter()
    .map(|&(lo, hi)| (key(lo), key(hi)))
    .collect();
    let rounds = [
        (Change::Insert, 1),
        (Change::Insert, 2),
        (Change::Erase, 0),
        (Change::Insert, 3),
    ];
    for (round, &(change, offset)) in rounds.iter().enumerate() {
        let changed: BTreeMap<K, V> = match change {
            Change::Insert => (0..m)
                .map(|i| key::<K>(4 * i + offset))
                .map(|k| (k, val_of::<K, V>(k)))
                .collect(),
            // Every third initial key.
            Change::Erase => (0..m)
                .step_by(3)
                .map(|i| key::<K>(4 * i))
                .map(|k| (k, model[&k]))
                .collect(),
        };
        let mut ops: Vec<MvOp<K, V>> = changed
            .iter()
            .map(|(&k, &v)| match change {
                Change::Insert => MvOp::Insert(k, v),
                Change::Erase => MvOp::Remove(k),
            })
            .collect();
        for q in 0..2400 {
            let (lo, hi) = ranges[q % ranges.len()];
            ops.push(if q % 4 == 3 {
                MvOp::RangeCount(lo, hi)
            } else {
                MvOp::Range(lo, hi)
            });
        }
        shuffle(&mut ops, &mut rng);
        let cap = 1024;
        let replies = map.apply(&ops, cap).unwrap();
        assert_eq!(replies.len(), ops.len());
        for (i, (op, r)) in ops.iter().zip(&replies).enumerate() {
            match *op {
                MvOp::Insert(k, _) => {
                    assert!(
                        !r.found,
                        "round {round}: insert {i} of new key {k:?} replaced"
                    );
                    assert_eq!(
                        r.ts, UNSET_TS,
                        "round {round}: update {i} reports a snapshot"
                    );
                }
                MvOp::Remove(k) => {
                    assert!(
                        r.found,
                        "round {round}: remove {i} of present key {k:?} not found"
                    );
                    assert_eq!(
                        r.value,
                        Some(changed[&k]),
                        "round {round}: remove {i} of {k:?}"
                    );
                }
                _ => {}
            }
        }
        let answers = check_replies(&ops, &replies, &model, &changed, change, round);
        println!("round {round}: {answers} distinct range answers");
        match change {
            Change::Insert => model.extend(changed),
            Change::Erase => {
                for k in changed.keys() {
                    model.remove(k);
                }
            }
        }
        let probes: Vec<K> = (0..4 * m + 4).step_by(3).map(key).collect();
        same_contents(&map, &model, &probes);
        let stats = map.stats().unwrap();
        assert_eq!(
            stats.versions, 0,
            "round {round}: versions left after the batch: {stats:?}"
        );
    }
}

/// Scans of one range, as sets over the inserted keys (bit i: inserted key i seen).
struct Scans {
    sets: Vec<Vec<u64>>,
}

impl Scans {
    fn new() -> Self {
        Self { sets: Vec::new() }
    }

    /// Adds a scan's keys after checking it: in key order, every initial key (4i, i < m)
    /// present, every other key an inserted one.
    fn add<K: TreeKey>(&mut self, scan: &[K], m: u32, what: &str) {
        assert!(
            scan.windows(2).all(|w| w[0] < w[1]),
            "{what}: scan not in key order"
        );
        let mut set = vec![0u64; (3 * m as usize).div_ceil(64)];
        let mut initial = 0;
        for &k in scan {
            let x = raw(k);
            assert!(x < 4 * m, "{what}: key {x} outside the range");
            if x % 4 == 0 {
                initial += 1;
            } else {
                let i = (x / 4 * 3 + x % 4 - 1) as usize;
                set[i / 64] |= 1 << (i % 64);
            }
        }
        assert_eq!(initial, m, "{what}: a scan misses initial keys");
        self.sets.push(set);
    }

    /// Two scans of which neither holds the other, if any (sorted by size, a family is a
    /// chain exactly when each set holds the one before).
    fn incomparable(&self) -> Option<(usize, usize)> {
        let size = |s: &Vec<u64>| s.iter().map(|w| w.count_ones()).sum::<u32>();
        let mut order: Vec<usize> = (0..self.sets.len()).collect();
        order.sort_by_key(|&i| size(&self.sets[i]));
        order.windows(2).find_map(|w| {
            let (a, b) = (&self.sets[w[0]], &self.sets[w[1]]);
            a.iter()
                .zip(b)
                .any(|(x, y)| x & !y != 0)
                .then_some((w[0], w[1]))
        })
    }

    /// Number of distinct scans.
    fn distinct(&self) -> usize {
        self.sets.iter().collect::<BTreeSet<_>>().len()
    }
}

/// Initial keys of the anomaly workload: 4i for i < M, one range over them all.
const M: u32 = 1000;
/// Warps that insert, and warps that scan (each REPS times).
const WARPS: u32 = 200;
const REPS: u32 = 6;
/// Attempts before giving up on seeing the anomaly on GpuBTreeMap.
const ATTEMPTS: usize = 20;

const USER_KERNEL: &str = r#"
#include <gpuds/btree/tree_ref.cuh>
using K = KEY_T;
using V = VALUE_T;
// Even warps insert their keys (keys[w * per .. (w + 1) * per]) in order; odd warps
// collect [lo, hi] reps times, scan j of scanner s at (s * reps + j) * cap.
extern "C" __global__ void insert_and_scan(gpuds::btree::tree_ref<K, V> t, const K* keys, const V* values,
                                           unsigned warps, unsigned per, unsigned reps, K lo, K hi, unsigned cap,
                                           K* out_keys, V* out_values, unsigned* counts) {
  const unsigned w = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  const unsigned role = w / 2;
  if (role >= warps) return;
  if (w % 2 == 0) {
    gpuds::alloc::warp_allocator allocator(t.alloc);
    for (unsigned j = 0; j < per; ++j) {
      const unsigned at = role * per + j;
      if (t.insert(allocator, keys[at], values[at]) == gpuds::btree::INSERT_FAILED) {
        if (gpuds::warp::lane_id() == 0) counts[warps * reps] = 1;
      }
    }
    return;
  }
  for (unsigned j = 0; j < reps; ++j) {
    const unsigned long long slot = static_cast<unsigned long long>(role) * reps + j;
    const unsigned c = t.range_collect<32>(lo, hi, out_keys + slot * cap, out_values + slot * cap, cap);
    if (gpuds::warp::lane_id() == 0) counts[slot] = c;
  }
}
"#;

/// The user kernel of the anomaly test over `gpuds::btree::tree_ref<K, V>`.
fn anomaly_program<K: TreeKey, V: TreeValue>() -> Program {
    Program::new(
        format!("mv_anomaly_{}_{}", K::SUFFIX, V::SUFFIX),
        USER_KERNEL,
    )
    .headers(gpuds_btree::cuda_headers())
    .define("KEY_T", K::CUDA_TYPE)
    .define("VALUE_T", V::CUDA_TYPE)
}

/// The anomaly kernel compiles with NVRTC for every type (no GPU needed).
fn anomaly_kernel_compiles<K: TreeKey, V: TreeValue>() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    let ptx = gpuds_testkit::ptx(&anomaly_program::<K, V>(), gpuds_core::Arch::new(9, 0));
    assert!(ptx.contains(".entry insert_and_scan("));
}

/// The inserted keys (4i + 1, 4i + 2, 4i + 3) in the adversarial order: alternately from
/// the two ends of the range, so that a scan that passes the left end before one
/// insertion and the right end after a later one sees the later but not the earlier,
/// while a quicker scan between them sees the earlier but not the later. Laid out per
/// inserting warp (`WARPS` rows): at step j, warp w takes the entry j * WARPS +
/// (w + j) % WARPS of that order, so every warp also alternates between the ends.
fn adversarial_inserts<K: TreeKey>() -> Vec<K> {
    let sorted: Vec<u32> = (0..M)
        .flat_map(|i| [4 * i + 1, 4 * i + 2, 4 * i + 3])
        .collect();
    let n = sorted.len();
    let order: Vec<u32> = (0..n)
        .map(|t| {
            if t % 2 == 0 {
                sorted[t / 2]
            } else {
                sorted[n - 1 - t / 2]
            }
        })
        .collect();
    let per = n / WARPS as usize;
    assert_eq!(
        per * WARPS as usize,
        n,
        "inserted keys split evenly over the warps"
    );
    let mut rows = vec![0u32; n];
    for w in 0..WARPS as usize {
        for j in 0..per {
            rows[w * per + j] = order[j * WARPS as usize + (w + j) % WARPS as usize];
        }
    }
    keys(&rows)
}

/// One attempt on GpuBTreeMap: a fresh tree of the initial keys, the user kernel; the
/// scans (checked) and whether two are incomparable.
fn gpu_btree_attempt<K: TreeKey, V: TreeValue>(
    gpu: &gpuds_core::Gpu,
    kernel: &gpuds_core::Kernel,
    inserts: &[K],
    attempt: usize,
) -> Scans {
    let mut tree = GpuBTreeMap::<K, V>::with_config(
        gpu,
        BTreeConfig {
            initial_nodes: 1 << 14,
            ..Default::default()
        },
    )
    .unwrap();
    let initial = keys::<K>(&(0..M).map(|i| 4 * i).collect::<Vec<u32>>());
    tree.insert_many(
        &initial,
        &initial
            .iter()
            .map(|&k| val_of::<K, V>(k))
            .collect::<Vec<V>>(),
    )
    .unwrap();
    let stream = gpu.stream();
    let values: Vec<V> = inserts.iter().map(|&k| val_of::<K, V>(k)).collect();
    let (d_keys, d_values) = (
        stream.clone_htod(inserts).unwrap(),
        stream.clone_htod(&values).unwrap(),
    );
    let cap = 4 * M;
    let scans = (WARPS * REPS) as usize;
    let mut out_k = stream.alloc_zeros::<K>(scans * cap as usize).unwrap();
    let mut out_v = stream.alloc_zeros::<V>(scans * cap as usize).unwrap();
    let mut counts = stream.alloc_zeros::<u32>(scans + 1).unwrap();
    let per = inserts.len() as u32 / WARPS;
    let (lo, hi) = (key::<K>(0), key::<K>(4 * M - 1));
    let r = tree.device_ref();
    let mut args = stream.launch_builder(kernel.func());
    args.arg(&r)
        .arg(&d_keys)
        .arg(&d_values)
        .arg(&WARPS)
        .arg(&per)
        .arg(&REPS)
        .arg(&lo)
        .arg(&hi)
        .arg(&cap)
        .arg(&mut out_k)
        .arg(&mut out_v)
        .arg(&mut counts);
    // SAFETY: keys and values hold WARPS * per entries; the outputs WARPS * REPS scans of
    // cap pairs and WARPS * REPS + 1 counts; 2 * WARPS warps of 32 threads.
    unsafe { args.launch(launch::shape((2 * WARPS * 32).div_ceil(256), 256, 0)) }.unwrap();
    let (out_k, counts) = (
        stream.clone_dtoh(&out_k).unwrap(),
        stream.clone_dtoh(&counts).unwrap(),
    );
    tree.check().unwrap();
    assert_eq!(counts[scans], 0, "attempt {attempt}: an insertion failed");
    tree.validate().unwrap();
    let mut model: BTreeMap<K, V> = initial.iter().map(|&k| (k, val_of::<K, V>(k))).collect();
    model.extend(inserts.iter().map(|&k| (k, val_of::<K, V>(k))));
    assert!(
        tree.to_vec().unwrap() == model.iter().map(|(&k, &v)| (k, v)).collect::<Vec<_>>(),
        "attempt {attempt}: GpuBTreeMap contents after the kernel"
    );
    let mut sets = Scans::new();
    for (s, &c) in counts[..scans].iter().enumerate() {
        let c = c as usize;
        assert!(c <= cap as usize, "attempt {attempt}: scan {s} counted {c}");
        let at = s * cap as usize;
        sets.add(
            &out_k[at..at + c],
            M,
            &format!("GpuBTreeMap attempt {attempt} scan {s}"),
        );
    }
    sets
}

/// §4.2.1: under concurrent inserts spread over one big range, GpuBTreeMap's scans of
/// that range return two sets of which neither holds the other (seen within ATTEMPTS
/// attempts); VersionedBTreeMap's scans under the same workload (`apply`) always form a
/// chain, and are exact at their snapshots.
fn gpu_btree_ranges_are_not_linearizable_versioned_ranges_are<K: TreeKey, V: TreeValue>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let kernel = gpu
        .load(&anomaly_program::<K, V>())
        .unwrap()
        .kernel("insert_and_scan")
        .unwrap();
    let inserts = adversarial_inserts::<K>();
    let mut seen = None;
    let mut attempts = 0;
    while seen.is_none() && attempts < ATTEMPTS {
        let scans = gpu_btree_attempt::<K, V>(&gpu, &kernel, &inserts, attempts);
        seen = scans.incomparable();
        println!(
            "GpuBTreeMap attempt {attempts}: {} distinct scans, incomparable pair {seen:?}",
            scans.distinct()
        );
        attempts += 1;
    }
    assert!(
        seen.is_some(),
        "GpuBTreeMap's concurrent scans formed a chain in all {ATTEMPTS} attempts: the anomaly of §4.2.1 was not shown"
    );
    // The same workload on VersionedBTreeMap through apply: the same inserts in the same
    // order, each followed by a scan of the whole range (ops alternate within each warp).
    let initial = keys::<K>(&(0..M).map(|i| 4 * i).collect::<Vec<u32>>());
    let (lo, hi) = (key::<K>(0), key::<K>(4 * M - 1));
    let order: Vec<K> = (0..inserts.len() / WARPS as usize)
        .flat_map(|j| (0..WARPS as usize).map(move |w| (w, j)))
        .map(|(w, j)| inserts[w * (inserts.len() / WARPS as usize) + j])
        .collect();
    for attempt in 0..attempts.max(3) {
        let mut map = map_with_nodes::<K, V>(&gpu, 1 << 14);
        let iv: Vec<V> = initial.iter().map(|&k| val_of::<K, V>(k)).collect();
        map.insert_many(&initial, &iv).unwrap();
        let before: Model<K, V> = initial.iter().copied().zip(iv).collect();
        let changed: BTreeMap<K, V> = inserts.iter().map(|&k| (k, val_of::<K, V>(k))).collect();
        let mut ops = Vec::new();
        for (i, &k) in order.iter().enumerate() {
            ops.push(MvOp::Insert(k, val_of::<K, V>(k)));
            if i % 3 == 0 {
                ops.push(MvOp::Range(lo, hi));
            }
        }
        let replies = map.apply(&ops, 4 * M).unwrap();
        let mut sets = Scans::new();
        for (i, (op, r)) in ops.iter().zip(&replies).enumerate() {
            if matches!(op, MvOp::Range(..)) {
                sets.add(
                    &r.pairs.iter().map(|p| p.0).collect::<Vec<K>>(),
                    M,
                    &format!("VersionedBTreeMap attempt {attempt} op {i}"),
                );
            }
        }
        assert_eq!(
            sets.incomparable(),
            None,
            "attempt {attempt}: two VersionedBTreeMap scans of one range are incomparable"
        );
        let answers = check_replies(&ops, &replies, &before, &changed, Change::Insert, attempt);
        assert!(
            answers > 1,
            "attempt {attempt}: every scan saw the same state, so the batch did not overlap scans and inserts"
        );
        let mut model = before;
        model.extend(changed);
        same_contents(&map, &model, &initial[..200]);
    }
}
