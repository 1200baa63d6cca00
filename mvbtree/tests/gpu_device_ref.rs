//! The Rust mirror of `gpuds::mvbtree::versioned_tree_ref` has the C++ layout, and user
//! kernels work through `gpuds/mvbtree/versioned_tree_ref.cuh`: warps that insert beside
//! warps that take tile-wide snapshots and query at them (out of place), and in-place
//! insertions under a live host snapshot. Every test skips without a GPU (fails with
//! GPUDS_REQUIRE_GPU=1).

mod common;

use std::collections::BTreeMap;

use common::{
    check_replies, key, keys, map_with_nodes, probe_ranges, raw, same_contents, snapshot_matches,
    val_of, Change, Model,
};
use gpuds_core::cudarc::driver::PushKernelArg;
use gpuds_core::{assert_layout, launch, Gpu, Kernel, Program};
use gpuds_mvbtree::{
    MvOp, MvReply, TreeKey, TreeValue, Updates, VersionedBTreeMap, VersionedTreeRef,
};

typed!(
    versioned_tree_ref_layout_matches_cpp,
    tile_snapshots_in_a_user_kernel_are_exact,
    in_place_user_kernel_updates_keep_a_host_snapshot,
    user_kernel_compiles,
);

fn versioned_tree_ref_layout_matches_cpp<K: TreeKey, V: TreeValue>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let prelude = Program::new(
        format!("mv_layout_{}_{}", K::SUFFIX, V::SUFFIX),
        "#include <gpuds/mvbtree/versioned_tree_ref.cuh>",
    )
    .headers(gpuds_mvbtree::cuda_headers());
    let cpp = format!(
        "gpuds::mvbtree::versioned_tree_ref<{}, {}>",
        K::CUDA_TYPE,
        V::CUDA_TYPE
    );
    assert_layout!(
        &gpu,
        prelude,
        VersionedTreeRef<K, V>,
        &cpp,
        tree,
        clock,
        copy_below,
        mode,
        log,
        log_len,
        log_cap,
        now
    );
}

const USER_KERNEL: &str = r#"
#include <gpuds/mvbtree/versioned_tree_ref.cuh>
using K = KEY_T;
using V = VALUE_T;
using tree = gpuds::mvbtree::versioned_tree_ref<K, V>;
// Warps 3j insert keys[j * per .. (j + 1) * per] (j < inserters); the other warps are
// scanners 0, 1, 2, ... (s < scanners): scanner s takes a snapshot s1, counts range
// s % nranges at s1, collects it at s1 (at s * cap), counts it again at s1, looks up
// probes[s] at s1 (a 16-lane tile), takes a later snapshot s2 and counts again. Per
// scanner, out[8s ..]: s1, count, collected count, second count, s2, count at s2, hit,
// and the low word of the value found. failed[0]: an insertion failed.
extern "C" __global__ void insert_and_query(tree t, const K* keys, const V* values, unsigned inserters, unsigned per,
                                            unsigned scanners, const K* lo, const K* hi, unsigned nranges,
                                            const K* probes, unsigned cap, K* out_keys, V* out_values,
                                            unsigned* out, unsigned* failed) {
  const unsigned w = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  const bool lane0 = gpuds::warp::lane_id() == 0;
  if (w % 3 == 0) {
    const unsigned j = w / 3;
    if (j >= inserters) return;
    gpuds::alloc::warp_allocator allocator(t.tree.alloc);
    for (unsigned i = 0; i < per; ++i) {
      if (t.insert(allocator, keys[j * per + i], values[j * per + i]) == gpuds::btree::INSERT_FAILED && lane0) {
        failed[0] = 1;
      }
    }
    return;
  }
  const unsigned s = w / 3 * 2 + w % 3 - 1;
  if (s >= scanners) return;
  const unsigned r = s % nranges;
  const unsigned s1 = t.take_snapshot<32>();
  const unsigned c1 = t.range_count<32>(lo[r], hi[r], s1);
  const unsigned long long at = static_cast<unsigned long long>(s) * cap;
  const unsigned n1 = t.range_collect<32>(lo[r], hi[r], s1, out_keys + at, out_values + at, cap);
  const unsigned c2 = t.range_count<32>(lo[r], hi[r], s1);
  V v = V(0);
  const bool hit = t.find<16>(probes[s], s1, v);
  const unsigned s2 = t.take_snapshot<32>();
  const unsigned c3 = t.range_count<32>(lo[r], hi[r], s2);
  if (lane0) {
    unsigned* o = out + 8ull * s;
    o[0] = s1;
    o[1] = c1;
    o[2] = n1;
    o[3] = c2;
    o[4] = s2;
    o[5] = c3;
    o[6] = hit;
    o[7] = static_cast<unsigned>(v);
  }
}
"#;

fn user_program<K: TreeKey, V: TreeValue>() -> Program {
    Program::new(format!("mv_user_{}_{}", K::SUFFIX, V::SUFFIX), USER_KERNEL)
        .headers(gpuds_mvbtree::cuda_headers())
        .define("KEY_T", K::CUDA_TYPE)
        .define("VALUE_T", V::CUDA_TYPE)
}

fn user_kernel<K: TreeKey, V: TreeValue>(gpu: &Gpu) -> Kernel {
    gpu.load(&user_program::<K, V>())
        .unwrap()
        .kernel("insert_and_query")
        .unwrap()
}

/// The user kernel compiles with NVRTC for every type (no GPU needed).
fn user_kernel_compiles<K: TreeKey, V: TreeValue>() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    let ptx = gpuds_testkit::ptx(&user_program::<K, V>(), gpuds_core::Arch::new(9, 0));
    assert!(ptx.contains(".entry insert_and_query("));
}

/// What the scanners of one launch returned.
struct Scanned<K, V> {
    out: Vec<u32>,
    keys: Vec<K>,
    values: Vec<V>,
}

/// Launches the user kernel: `inserts` split over `inserters` warps, `scanners` scanners
/// over `ranges` with `probes` (one per scanner), collecting at most `cap` pairs each.
#[allow(clippy::too_many_arguments)]
fn launch_user<K: TreeKey, V: TreeValue>(
    gpu: &Gpu,
    kernel: &Kernel,
    map: &VersionedBTreeMap<K, V>,
    mode: Updates,
    inserts: &[K],
    inserters: u32,
    ranges: &[(K, K)],
    probes: &[K],
    cap: u32,
) -> Scanned<K, V> {
    let stream = gpu.stream();
    let scanners = probes.len() as u32;
    let slots = (scanners.max(1) * cap.max(1)) as usize;
    let per = inserts.len() as u32 / inserters;
    assert_eq!(per * inserters, inserts.len() as u32);
    let values: Vec<V> = inserts.iter().map(|&k| val_of::<K, V>(k)).collect();
    let (d_keys, d_values) = (
        stream.clone_htod(inserts).unwrap(),
        stream.clone_htod(&values).unwrap(),
    );
    let lo: Vec<K> = ranges.iter().map(|r| r.0).collect();
    let hi: Vec<K> = ranges.iter().map(|r| r.1).collect();
    let (d_lo, d_hi) = (
        stream.clone_htod(&lo).unwrap(),
        stream.clone_htod(&hi).unwrap(),
    );
    // One unused probe when there is no scanner (no zero-length buffer).
    let probes = if probes.is_empty() {
        &[K::from_u64(0)][..]
    } else {
        probes
    };
    let d_probes = stream.clone_htod(probes).unwrap();
    let mut out_k = stream.alloc_zeros::<K>(slots).unwrap();
    let mut out_v = stream.alloc_zeros::<V>(slots).unwrap();
    let mut out = stream
        .alloc_zeros::<u32>(8 * scanners.max(1) as usize)
        .unwrap();
    let mut failed = stream.alloc_zeros::<u32>(1).unwrap();
    let nranges = ranges.len() as u32;
    // Warps 3j insert; the others scan: enough warps for both roles.
    let warps = (3 * inserters).max(scanners.div_ceil(2) * 3);
    let r = map.device_ref(mode);
    let mut args = stream.launch_builder(kernel.func());
    args.arg(&r)
        .arg(&d_keys)
        .arg(&d_values)
        .arg(&inserters)
        .arg(&per)
        .arg(&scanners)
        .arg(&d_lo)
        .arg(&d_hi)
        .arg(&nranges)
        .arg(&d_probes)
        .arg(&cap)
        .arg(&mut out_k)
        .arg(&mut out_v)
        .arg(&mut out)
        .arg(&mut failed);
    // SAFETY: keys and values hold inserters * per entries, lo and hi nranges, probes one
    // per scanner; out 8 words, out_keys and out_values cap pairs per scanner.
    unsafe { args.launch(launch::shape((warps * 32).div_ceil(256), 256, 0)) }.unwrap();
    let scanned = Scanned {
        out: stream.clone_dtoh(&out).unwrap(),
        keys: stream.clone_dtoh(&out_k).unwrap(),
        values: stream.clone_dtoh(&out_v).unwrap(),
    };
    assert_eq!(
        stream.clone_dtoh(&failed).unwrap()[0],
        0,
        "an insertion failed"
    );
    scanned
}

/// Initial keys 4i (i < 2000); 100 warps insert 4i + 1 and 4i + 3 out of place while 600
/// scanners take tile snapshots and query five ranges: the counts at one snapshot agree
/// (three times), a later snapshot counts at least as many, a lookup at the snapshot
/// agrees with the collected range, and all collected ranges are exact at their
/// snapshots. Afterwards the map is valid, holds every pair, and the collector frees
/// every older version.
fn tile_snapshots_in_a_user_kernel_are_exact<K: TreeKey, V: TreeValue>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let kernel = user_kernel::<K, V>(&gpu);
    let m = 2000u32;
    let initial = keys::<K>(&(0..m).map(|i| 4 * i).collect::<Vec<u32>>());
    let mut map = map_with_nodes::<K, V>(&gpu, 1 << 14);
    let iv: Vec<V> = initial.iter().map(|&k| val_of::<K, V>(k)).collect();
    map.insert_many(&initial, &iv).unwrap();
    let before: Model<K, V> = initial.iter().copied().zip(iv).collect();
    let mut inserts: Vec<K> = (0..m)
        .flat_map(|i| [4 * i + 1, 4 * i + 3])
        .map(key)
        .collect();
    common::shuffle(&mut inserts, &mut rand::SeedableRng::seed_from_u64(50));
    let changed: BTreeMap<K, V> = inserts.iter().map(|&k| (k, val_of::<K, V>(k))).collect();
    let ranges: Vec<(K, K)> = [
        (0, 1000),
        (500, 2900),
        (2400, 2403),
        (6000, 7999),
        (7000, 100_000),
    ]
    .iter()
    .map(|&(lo, hi)| (key(lo), key(hi)))
    .collect();
    let scanners = 600usize;
    let probes: Vec<K> = (0..scanners)
        .map(|s| {
            // An inserted or initial key inside the scanner's range.
            let (lo, _) = ranges[s % ranges.len()];
            key(raw(lo) + (s as u32 % 4))
        })
        .collect();
    let cap = 2048;
    let got = launch_user(
        &gpu,
        &kernel,
        &map,
        Updates::OutOfPlace,
        &inserts,
        100,
        &ranges,
        &probes,
        cap,
    );
    map.check().unwrap();
    // Each scanner as Range (at s1) and RangeCount (at s2) replies for check_replies.
    let mut ops = Vec::new();
    let mut replies = Vec::new();
    for s in 0..scanners {
        let o = &got.out[8 * s..8 * s + 8];
        let (s1, c1, n1, c2, s2, c3, hit) = (o[0], o[1], o[2], o[3], o[4], o[5], o[6] != 0);
        let (lo, hi) = ranges[s % ranges.len()];
        assert_eq!(
            (n1, c2),
            (c1, c1),
            "scanner {s}: three counts at snapshot {s1}"
        );
        assert!(n1 <= cap, "scanner {s}: {n1} pairs");
        assert!(
            s2 > s1,
            "scanner {s}: the later snapshot {s2} is not after {s1}"
        );
        assert!(
            c3 >= c1,
            "scanner {s}: {c3} at snapshot {s2} but {c1} at {s1}"
        );
        let at = s * cap as usize;
        let pairs: Vec<(K, V)> = (at..at + n1 as usize)
            .map(|i| (got.keys[i], got.values[i]))
            .collect();
        let probe = probes[s];
        let listed = pairs.iter().find(|p| p.0 == probe);
        assert_eq!(
            hit,
            listed.is_some(),
            "scanner {s}: find of {probe:?} at snapshot {s1} against its range"
        );
        if let Some(&(_, v)) = listed {
            assert_eq!(o[7], v.to_u64() as u32, "scanner {s}: value of {probe:?}");
        }
        let reply = |ts, count, pairs| MvReply {
            ts,
            found: false,
            value: None,
            successor: None,
            count,
            pairs,
        };
        ops.push(MvOp::Range(lo, hi));
        replies.push(reply(s1, n1, pairs));
        ops.push(MvOp::RangeCount(lo, hi));
        replies.push(reply(s2, c3, Vec::new()));
    }
    let answers = check_replies(&ops, &replies, &before, &changed, Change::Insert, 0);
    println!("{answers} distinct range answers");
    let mut model = before;
    model.extend(changed);
    same_contents(&map, &model, &inserts[..500]);
    map.collect_versions().unwrap();
    let stats = map.stats().unwrap();
    assert_eq!(
        stats.versions, 0,
        "older versions after the kernel: {stats:?}"
    );
    assert_eq!(stats.units_in_use, stats.heads);
}

/// A host snapshot, then a user kernel that inserts in place (device_ref(InPlace), no
/// scanner): the snapshot still reads the old contents, the newest state has the new
/// pairs; after the snapshot is dropped the collector frees every older version.
fn in_place_user_kernel_updates_keep_a_host_snapshot<K: TreeKey, V: TreeValue>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let kernel = user_kernel::<K, V>(&gpu);
    let m = 3000u32;
    let initial = keys::<K>(&(0..m).map(|i| 2 * i).collect::<Vec<u32>>());
    let mut map = map_with_nodes::<K, V>(&gpu, 1 << 14);
    let iv: Vec<V> = initial.iter().map(|&k| val_of::<K, V>(k)).collect();
    map.insert_many(&initial, &iv).unwrap();
    let mut model: Model<K, V> = initial.iter().copied().zip(iv).collect();
    let snap = map.snapshot().unwrap();
    let at = model.clone();
    let inserts = keys::<K>(&(0..m).map(|i| 2 * i + 1).collect::<Vec<u32>>());
    launch_user(
        &gpu,
        &kernel,
        &map,
        Updates::InPlace,
        &inserts,
        100,
        &[(key(0), key(1))],
        &[],
        0,
    );
    map.check().unwrap();
    model.extend(inserts.iter().map(|&k| (k, val_of::<K, V>(k))));
    same_contents(&map, &model, &inserts[..500]);
    snapshot_matches(&map, &snap, &at, &inserts[..500], &probe_ranges::<K>(2 * m));
    assert!(
        map.stats().unwrap().versions > 0,
        "no version kept for the snapshot"
    );
    drop(snap);
    map.collect_versions().unwrap();
    let stats = map.stats().unwrap();
    assert_eq!(stats.versions, 0, "{stats:?}");
    same_contents(&map, &model, &inserts[..500]);
}
