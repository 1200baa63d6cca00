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
use gpuds_mvbtree::{MvOp, MvReply, TreeKey, TreeValue, Updates};
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};

typed!(
    apply_queries_are_exact_at_their_snapshots,
    anomaly_kernel_compiles
);
two_types!(gpu_btree_ranges_are_not_linearizable_versioned_ranges_are);

/// Initial keys 4i (i < 3000); rounds of `apply` with many Range, RangeCount and Get queries
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
        (1000, 2000),
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
        let targets: Vec<K> = changed.keys().copied().collect();
        for q in 0..2400 {
            let (lo, hi) = ranges[q % ranges.len()];
            ops.push(match q % 4 {
                3 => MvOp::RangeCount(lo, hi),
                1 => MvOp::Get(targets[rng.random_range(0..targets.len())]),
                _ => MvOp::Range(lo, hi),
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
    /// Scans that missed an initial key (only checked by `add`).
    lost: usize,
}

impl Scans {
    fn new() -> Self {
        Self {
            sets: Vec::new(),
            lost: 0,
        }
    }

    /// Adds a scan's keys after checking it: in key order, every initial key (4i, i < m)
    /// present, every other key an inserted one.
    fn add<K: TreeKey>(&mut self, scan: &[K], m: u32, what: &str) {
        assert!(
            scan.windows(2).all(|w| w[0] < w[1]),
            "{what}: scan not in key order"
        );
        let (set, initial) = Self::set_of(scan, m, what);
        assert_eq!(initial, m, "{what}: a scan misses initial keys");
        self.sets.push(set);
    }

    /// Adds a scan of GpuBTreeMap without asserting its order or completeness (a scan
    /// that misses an initial key is itself not linearizable, and is counted in `lost`).
    fn add_unchecked<K: TreeKey>(&mut self, scan: &[K], m: u32, what: &str) {
        let (set, initial) = Self::set_of(scan, m, what);
        if initial != m {
            self.lost += 1;
        }
        self.sets.push(set);
    }

    /// The inserted keys of a scan as bits, and the number of initial keys in it.
    fn set_of<K: TreeKey>(scan: &[K], m: u32, what: &str) -> (Vec<u64>, u32) {
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
        (set, initial)
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

    /// A scan that saw an insertion but missed one that came before it (`pos[i]`: the
    /// position of inserted key i in the insertion order of one warp, so the earlier
    /// insertion had returned before the later one began): by itself a scan that is not
    /// linearizable. A linearizable scan sees a prefix of the order.
    fn non_prefix(&self, pos: &[u32]) -> Option<usize> {
        self.sets.iter().position(|set| {
            let mut seen = 0u32;
            let mut last = None;
            for (w, &word) in set.iter().enumerate() {
                let mut bits = word;
                while bits != 0 {
                    let i = w * 64 + bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    seen += 1;
                    last = last.max(Some(pos[i]));
                }
            }
            last.is_some_and(|l| l + 1 != seen)
        })
    }

    /// Number of distinct scans.
    fn distinct(&self) -> usize {
        self.sets.iter().collect::<BTreeSet<_>>().len()
    }
}

/// Initial keys of the anomaly workload: 4i for i < M, one range over them all; the
/// inserted keys are 4i + 1, 4i + 2 and 4i + 3.
const M: u32 = 1000;
/// Scanning warps, scans per scanner, and the delay between scanners' starts (ns).
const SCANNERS: u32 = 160;
const REPS: u32 = 8;
const STAGGER_NS: u64 = 40_000;
/// Attempts before giving up on seeing the anomaly on GpuBTreeMap.
const ATTEMPTS: usize = 20;

const USER_KERNEL: &str = r#"
#ifdef VERSIONED
#include <gpuds/mvbtree/versioned_tree_ref.cuh>
using tree_t = gpuds::mvbtree::versioned_tree_ref<KEY_T, VALUE_T>;
#else
#include <gpuds/btree/tree_ref.cuh>
using tree_t = gpuds::btree::tree_ref<KEY_T, VALUE_T>;
#endif
using K = KEY_T;
using V = VALUE_T;

__device__ __forceinline__ unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// The pairs of [lo, hi] (at snapshot ts when VERSIONED), collected by one tile.
template <unsigned TILE>
__device__ unsigned collect(const tree_t& t, K lo, K hi, unsigned ts, K* keys, V* values, unsigned cap) {
#ifdef VERSIONED
  return t.template range_collect<TILE>(lo, hi, ts, keys, values, cap);
#else
  (void)ts;
  return t.template range_collect<TILE>(lo, hi, keys, values, cap);
#endif
}

// Warp 0 inserts keys[0 .. n) one after the other (in the order given); warps 1 ..=
// scanners scan [lo, hi] reps times back to back, scanner s starting s * stagger_ns after
// the kernel began. Odd scanners collect with one tile of 8 lanes, even ones with the
// whole warp, so that scans run at different speeds. Scan j of scanner s: pairs at
// (s * reps + j) * cap, count and snapshot (VERSIONED; 0 otherwise) at s * reps + j.
// counts[scanners * reps]: an insertion failed.
extern "C" __global__ void insert_and_scan(tree_t t, const K* keys, const V* values, unsigned n, unsigned scanners,
                                           unsigned reps, unsigned long long stagger_ns, K lo, K hi, unsigned cap,
                                           K* out_keys, V* out_values, unsigned* counts, unsigned* stamps) {
  const unsigned long long start = now_ns();
  const unsigned w = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  const unsigned lane = gpuds::warp::lane_id();
  if (w == 0) {
#ifdef VERSIONED
    gpuds::alloc::warp_allocator allocator(t.tree.alloc);
#else
    gpuds::alloc::warp_allocator allocator(t.alloc);
#endif
    for (unsigned i = 0; i < n; ++i) {
      if (t.insert(allocator, keys[i], values[i]) == gpuds::btree::INSERT_FAILED && lane == 0) {
        counts[scanners * reps] = 1;
      }
    }
    return;
  }
  const unsigned s = w - 1;
  if (s >= scanners) return;
  while (now_ns() < start + s * stagger_ns) __nanosleep(2000);
  for (unsigned j = 0; j < reps; ++j) {
    const unsigned long long slot = static_cast<unsigned long long>(s) * reps + j;
    unsigned ts = 0;
#ifdef VERSIONED
    ts = t.template take_snapshot<32>();
#endif
    unsigned c = 0;
    if (s % 2 == 1) {
      if (lane < 8) c = collect<8>(t, lo, hi, ts, out_keys + slot * cap, out_values + slot * cap, cap);
      c = __shfl_sync(0xffffffffu, c, 0);
    } else {
      c = collect<32>(t, lo, hi, ts, out_keys + slot * cap, out_values + slot * cap, cap);
    }
    if (lane == 0) {
      counts[slot] = c;
      stamps[slot] = ts;
    }
  }
}
"#;

/// The anomaly kernel over `gpuds::btree::tree_ref<K, V>`, or over
/// `gpuds::mvbtree::versioned_tree_ref<K, V>` (`versioned`).
fn anomaly_program<K: TreeKey, V: TreeValue>(versioned: bool) -> Program {
    let name = if versioned { "mv" } else { "btree" };
    let program = Program::new(
        format!("mv_anomaly_{name}_{}_{}", K::SUFFIX, V::SUFFIX),
        USER_KERNEL,
    )
    .headers(gpuds_mvbtree::cuda_headers())
    .define("KEY_T", K::CUDA_TYPE)
    .define("VALUE_T", V::CUDA_TYPE);
    if versioned {
        program.define("VERSIONED", 1)
    } else {
        program
    }
}

/// Both forms of the anomaly kernel compile with NVRTC for every type (no GPU needed).
fn anomaly_kernel_compiles<K: TreeKey, V: TreeValue>() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    for versioned in [false, true] {
        let ptx = gpuds_testkit::ptx(
            &anomaly_program::<K, V>(versioned),
            gpuds_core::Arch::new(9, 0),
        );
        assert!(ptx.contains(".entry insert_and_scan("));
    }
}

/// The inserted keys (4i + 1, 4i + 2, 4i + 3) in the adversarial order: alternately from
/// the two ends of the range, so that a slow scan that passes the left end before one
/// insertion and the right end after a later one sees the later but not the earlier,
/// while a quicker scan between them sees the earlier but not the later.
fn adversarial_inserts<K: TreeKey>() -> Vec<K> {
    let sorted: Vec<u32> = (0..M)
        .flat_map(|i| [4 * i + 1, 4 * i + 2, 4 * i + 3])
        .collect();
    let n = sorted.len();
    keys(
        &(0..n)
            .map(|t| {
                if t % 2 == 0 {
                    sorted[t / 2]
                } else {
                    sorted[n - 1 - t / 2]
                }
            })
            .collect::<Vec<u32>>(),
    )
}

/// What one launch of the anomaly kernel returned: the pairs of every scan and its
/// snapshot (0 on GpuBTreeMap).
struct Launched<K, V> {
    scans: Vec<Vec<(K, V)>>,
    stamps: Vec<u32>,
}

/// Launches the anomaly kernel on a tree (`r`: its device ref) holding the initial keys.
fn launch_anomaly<K: TreeKey, V: TreeValue, R: gpuds_core::cudarc::driver::DeviceRepr>(
    gpu: &gpuds_core::Gpu,
    kernel: &gpuds_core::Kernel,
    r: &R,
    inserts: &[K],
    what: &str,
) -> Launched<K, V> {
    let stream = gpu.stream();
    let values: Vec<V> = inserts.iter().map(|&k| val_of::<K, V>(k)).collect();
    let (d_keys, d_values) = (
        stream.clone_htod(inserts).unwrap(),
        stream.clone_htod(&values).unwrap(),
    );
    let cap = 4 * M;
    let scans = (SCANNERS * REPS) as usize;
    let mut out_k = stream.alloc_zeros::<K>(scans * cap as usize).unwrap();
    let mut out_v = stream.alloc_zeros::<V>(scans * cap as usize).unwrap();
    let mut counts = stream.alloc_zeros::<u32>(scans + 1).unwrap();
    let mut stamps = stream.alloc_zeros::<u32>(scans).unwrap();
    let n = inserts.len() as u32;
    let (lo, hi) = (key::<K>(0), key::<K>(4 * M - 1));
    let mut args = stream.launch_builder(kernel.func());
    args.arg(r)
        .arg(&d_keys)
        .arg(&d_values)
        .arg(&n)
        .arg(&SCANNERS)
        .arg(&REPS)
        .arg(&STAGGER_NS)
        .arg(&lo)
        .arg(&hi)
        .arg(&cap)
        .arg(&mut out_k)
        .arg(&mut out_v)
        .arg(&mut counts)
        .arg(&mut stamps);
    // SAFETY: keys and values hold n entries; the outputs SCANNERS * REPS scans of cap
    // pairs, as many stamps and one more count; 1 + SCANNERS warps of 32 threads.
    unsafe { args.launch(launch::shape(((1 + SCANNERS) * 32).div_ceil(256), 256, 0)) }.unwrap();
    let (out_k, out_v) = (
        stream.clone_dtoh(&out_k).unwrap(),
        stream.clone_dtoh(&out_v).unwrap(),
    );
    let counts = stream.clone_dtoh(&counts).unwrap();
    assert_eq!(counts[scans], 0, "{what}: an insertion failed");
    let scans = counts[..scans]
        .iter()
        .enumerate()
        .map(|(s, &c)| {
            assert!(c <= cap, "{what}: scan {s} counted {c}");
            let at = s * cap as usize;
            (at..at + c as usize)
                .map(|i| (out_k[i], out_v[i]))
                .collect()
        })
        .collect();
    Launched {
        scans,
        stamps: stream.clone_dtoh(&stamps).unwrap(),
    }
}

/// The initial keys and the model after the inserts.
fn anomaly_models<K: TreeKey, V: TreeValue>(inserts: &[K]) -> (Model<K, V>, BTreeMap<K, V>) {
    let before = (0..M)
        .map(|i| key::<K>(4 * i))
        .map(|k| (k, val_of::<K, V>(k)))
        .collect();
    let changed = inserts.iter().map(|&k| (k, val_of::<K, V>(k))).collect();
    (before, changed)
}

/// §4.2.1: one warp inserts keys alternately at the two ends of one big range while
/// staggered scanners of two speeds collect that range. On GpuBTreeMap two scans return
/// sets of which neither holds the other (seen within ATTEMPTS launches); on
/// VersionedBTreeMap, the same kernel over its device ref with a tile snapshot per scan,
/// and the same inserts mixed with scans in `apply`, the scans always form a chain and
/// each is exact at its snapshot.
fn gpu_btree_ranges_are_not_linearizable_versioned_ranges_are<K: TreeKey, V: TreeValue>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let inserts = adversarial_inserts::<K>();
    let (before, changed) = anomaly_models::<K, V>(&inserts);
    let initial: Vec<K> = before.keys().copied().collect();
    let initial_values: Vec<V> = before.values().copied().collect();
    let mut model = before.clone();
    model.extend(changed.iter().map(|(&k, &v)| (k, v)));
    let kernel = gpu
        .load(&anomaly_program::<K, V>(false))
        .unwrap()
        .kernel("insert_and_scan")
        .unwrap();
    // The position of each inserted key (bit i of a scan) in the insertion order.
    let mut pos = vec![0u32; 3 * M as usize];
    for (at, &k) in inserts.iter().enumerate() {
        let x = raw(k);
        pos[(x / 4 * 3 + x % 4 - 1) as usize] = at as u32;
    }
    let mut seen = None;
    let mut ever_out_of_order = None;
    let mut attempts = 0;
    while seen.is_none() && attempts < ATTEMPTS {
        let mut tree = GpuBTreeMap::<K, V>::with_config(
            &gpu,
            BTreeConfig {
                initial_nodes: 1 << 14,
                ..Default::default()
            },
        )
        .unwrap();
        tree.insert_many(&initial, &initial_values).unwrap();
        let what = format!("GpuBTreeMap attempt {attempts}");
        let got = launch_anomaly::<K, V, _>(&gpu, &kernel, &tree.device_ref(), &inserts, &what);
        tree.check().unwrap();
        tree.validate().unwrap();
        assert!(
            tree.to_vec().unwrap() == model.iter().map(|(&k, &v)| (k, v)).collect::<Vec<_>>(),
            "{what}: contents after the kernel"
        );
        let mut sets = Scans::new();
        for (s, scan) in got.scans.iter().enumerate() {
            let ks: Vec<K> = scan.iter().map(|p| p.0).collect();
            sets.add_unchecked(&ks, M, &format!("{what} scan {s}"));
        }
        seen = sets.incomparable();
        let out_of_order = sets.non_prefix(&pos);
        ever_out_of_order = ever_out_of_order.or(out_of_order);
        println!(
            "{what}: {} distinct scans, {} missing initial keys, incomparable pair {seen:?}, \
             scan seeing a later insertion but not an earlier one {out_of_order:?}",
            sets.distinct(),
            sets.lost
        );
        attempts += 1;
    }
    // Incomparable scans are the anomaly as two queries see it; a scan that sees a later
    // insertion of the inserting warp and misses an earlier one is the same anomaly
    // within one query (real-time order); either proves the scans not linearizable.
    assert!(
        seen.is_some() || ever_out_of_order.is_some(),
        "GpuBTreeMap's concurrent scans formed a chain of prefixes of the insertion order in all \
         {ATTEMPTS} attempts: the anomaly of §4.2.1 was not shown"
    );
    // The same kernel on VersionedBTreeMap, each scan at a tile snapshot.
    let kernel = gpu
        .load(&anomaly_program::<K, V>(true))
        .unwrap()
        .kernel("insert_and_scan")
        .unwrap();
    let (lo, hi) = (key::<K>(0), key::<K>(4 * M - 1));
    for attempt in 0..attempts.clamp(3, 5) {
        let what = format!("VersionedBTreeMap kernel attempt {attempt}");
        let mut map = map_with_nodes::<K, V>(&gpu, 1 << 14);
        map.insert_many(&initial, &initial_values).unwrap();
        let r = map.device_ref(Updates::OutOfPlace);
        let got = launch_anomaly::<K, V, _>(&gpu, &kernel, &r, &inserts, &what);
        map.check().unwrap();
        let mut sets = Scans::new();
        let mut ops = Vec::new();
        let mut replies = Vec::new();
        for (s, scan) in got.scans.iter().enumerate() {
            let ks: Vec<K> = scan.iter().map(|p| p.0).collect();
            sets.add(&ks, M, &format!("{what} scan {s}"));
            ops.push(MvOp::Range(lo, hi));
            replies.push(MvReply {
                ts: got.stamps[s],
                found: false,
                value: None,
                successor: None,
                count: scan.len() as u32,
                pairs: scan.clone(),
            });
        }
        assert_eq!(
            sets.incomparable(),
            None,
            "{what}: two scans are incomparable"
        );
        assert_eq!(
            sets.non_prefix(&pos),
            None,
            "{what}: a scan saw an insertion but not an earlier one of the same warp"
        );
        let answers = check_replies(&ops, &replies, &before, &changed, Change::Insert, attempt);
        println!("{what}: {answers} distinct scans");
        same_contents(&map, &model, &inserts[..200]);
        map.collect_versions().unwrap();
        assert_eq!(map.stats().unwrap().versions, 0, "{what}: versions left");
    }
    // The same inserts in the same order in one apply batch, a scan after every third.
    for attempt in 0..3 {
        let what = format!("VersionedBTreeMap apply attempt {attempt}");
        let mut map = map_with_nodes::<K, V>(&gpu, 1 << 14);
        map.insert_many(&initial, &initial_values).unwrap();
        let mut ops = Vec::new();
        for (i, &k) in inserts.iter().enumerate() {
            ops.push(MvOp::Insert(k, val_of::<K, V>(k)));
            if i % 3 == 0 {
                ops.push(MvOp::Range(lo, hi));
            }
        }
        let replies = map.apply(&ops, 4 * M).unwrap();
        let mut sets = Scans::new();
        for (i, (op, r)) in ops.iter().zip(&replies).enumerate() {
            if matches!(op, MvOp::Range(..)) {
                let ks: Vec<K> = r.pairs.iter().map(|p| p.0).collect();
                sets.add(&ks, M, &format!("{what} op {i}"));
            }
        }
        assert_eq!(
            sets.incomparable(),
            None,
            "{what}: two scans are incomparable"
        );
        let answers = check_replies(&ops, &replies, &before, &changed, Change::Insert, attempt);
        assert!(
            answers > 1,
            "{what}: every scan saw the same state, so scans and inserts did not overlap"
        );
        same_contents(&map, &model, &inserts[..200]);
    }
}

/// The scan checks on the host (no GPU): chains and prefixes pass, incomparable scans and
/// a scan with a gap in the insertion order are found.
#[test]
fn scan_checks_find_incomparable_and_out_of_order_scans() {
    let m = 4u32; // inserted keys 4i + 1, 4i + 2, 4i + 3: bits 0 .. 12
    let initial: Vec<u32> = (0..m).map(|i| 4 * i).collect();
    let scan = |extra: &[u32]| {
        let mut all: Vec<u32> = initial.iter().chain(extra).copied().collect();
        all.sort_unstable();
        keys::<u64>(&all)
    };
    // Insertion order: 1, 15, 2, 14 (bits 0, 11, 1, 10), the rest after.
    let order = [1u32, 15, 2, 14, 3, 13, 5, 11, 6, 10, 7, 9];
    let mut pos = vec![0u32; 3 * m as usize];
    for (at, &x) in order.iter().enumerate() {
        pos[(x / 4 * 3 + x % 4 - 1) as usize] = at as u32;
    }
    let mut chain = Scans::new();
    chain.add(&scan(&[]), m, "empty");
    chain.add(&scan(&[1, 15]), m, "two");
    chain.add(&scan(&[1]), m, "one");
    chain.add(&scan(&[1, 15, 2]), m, "three");
    assert_eq!(chain.incomparable(), None);
    assert_eq!(chain.non_prefix(&pos), None);
    assert_eq!(chain.distinct(), 4);
    let mut crossed = Scans::new();
    crossed.add(&scan(&[1]), m, "left");
    crossed.add(&scan(&[1, 15, 2, 14]), m, "all four");
    crossed.add(&scan(&[15]), m, "right");
    assert!(
        crossed.incomparable().is_some(),
        "{{1}} and {{15}} are incomparable"
    );
    assert_eq!(
        crossed.non_prefix(&pos),
        Some(2),
        "{{15}} misses the earlier 1"
    );
    let mut lost = Scans::new();
    lost.add_unchecked(&keys::<u64>(&[0, 4, 1]), m, "short");
    assert_eq!(lost.lost, 1);
}

/// `check_replies` on the host (no GPU): exact replies pass; a larger snapshot that
/// misses an insertion a smaller one saw, or two replies at one snapshot that differ,
/// are caught.
#[test]
fn reply_checks_catch_replies_that_are_not_exact() {
    type Reply = MvReply<u32, u32>;
    let before: Model<u32, u32> = [(0, 10), (4, 14)].into_iter().collect();
    let changed: BTreeMap<u32, u32> = [(1, 11), (2, 12)].into_iter().collect();
    let range = |ts: u32, pairs: &[(u32, u32)]| Reply {
        ts,
        found: false,
        value: None,
        successor: None,
        count: pairs.len() as u32,
        pairs: pairs.to_vec(),
    };
    let get = |ts: u32, value: Option<u32>| Reply {
        ts,
        found: value.is_some(),
        value,
        successor: None,
        count: 0,
        pairs: Vec::new(),
    };
    let ops = [
        MvOp::Range(0, 4),
        MvOp::Range(0, 4),
        MvOp::Get(2),
        MvOp::Range(1, 1),
    ];
    let good = [
        range(5, &[(0, 10), (1, 11), (4, 14)]),
        range(7, &[(0, 10), (1, 11), (2, 12), (4, 14)]),
        get(6, None),
        range(5, &[(1, 11)]),
    ];
    assert_eq!(
        check_replies(&ops, &good, &before, &changed, Change::Insert, 0),
        3
    );
    let fails = |replies: [Reply; 4]| {
        std::panic::catch_unwind(|| {
            check_replies(&ops, &replies, &before, &changed, Change::Insert, 0)
        })
        .is_err()
    };
    // ts 7 misses key 1, which ts 5 saw.
    assert!(fails([
        range(5, &[(0, 10), (1, 11), (4, 14)]),
        range(7, &[(0, 10), (2, 12), (4, 14)]),
        get(6, None),
        range(5, &[(1, 11)]),
    ]));
    // Two replies at ts 5 disagree on key 1.
    assert!(fails([
        range(5, &[(0, 10), (1, 11), (4, 14)]),
        range(7, &[(0, 10), (1, 11), (2, 12), (4, 14)]),
        get(6, None),
        range(5, &[]),
    ]));
    // The Get at ts 8 misses key 2, which ts 7 saw.
    assert!(fails([
        range(5, &[(0, 10), (1, 11), (4, 14)]),
        range(7, &[(0, 10), (1, 11), (2, 12), (4, 14)]),
        get(8, None),
        range(5, &[(1, 11)]),
    ]));
    // An untouched key missing.
    assert!(fails([
        range(5, &[(1, 11), (4, 14)]),
        range(7, &[(0, 10), (1, 11), (2, 12), (4, 14)]),
        get(6, None),
        range(5, &[(1, 11)]),
    ]));
}
