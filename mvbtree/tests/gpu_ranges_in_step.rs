//! Snapshot ranges with the tiles of a warp in step (8- and 16-lane query tiles; 32-lane
//! tiles, which walk per tile, as the control): hundreds of ranges per call, so that the
//! tiles of every warp hold queries of different lengths (8 and 32 pairs, single keys,
//! empty, inverted and whole-space ranges) and some tiles of the last warp none, at every
//! live snapshot of a tree whose nodes have versions from several snapshots, against the
//! oracle as it was; the count pass, the collect pass, the capped form and the `_device`
//! forms. And heads left unstamped (as a writer whose own stamp failed leaves them), which
//! the queries stamp on their way. Every test skips without a GPU (fails with
//! GPUDS_REQUIRE_GPU=1).

mod common;

use common::{key, model_range, raw, val, Model};
use gpuds_core::cudarc::driver::PushKernelArg;
use gpuds_core::{launch, Gpu, Program};
use gpuds_mvbtree::{
    BTreeConfig, RangeOffsets, Snapshot, TreeKey, TreeValue, Updates, VersionedBTreeMap,
};
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};

typed!(
    ranges_in_step_match_the_oracle_at_every_snapshot,
    ranges_in_step_stamp_unstamped_heads,
    unstamp_kernel_compiles,
);

/// Test keys: 1 ..= TOP.
const TOP: u32 = 40_000;
/// Ranges per query call: not a multiple of 32, so the last warp has idle tiles.
const RANGES: usize = 32 * 47 + 5;

fn map<K: TreeKey, V: TreeValue>(gpu: &Gpu, tile: u32) -> VersionedBTreeMap<K, V> {
    VersionedBTreeMap::with_config(
        gpu,
        BTreeConfig {
            query_tile: tile,
            initial_nodes: 1 << 12,
            ..Default::default()
        },
    )
    .expect("map")
}

/// `RANGES` ranges over `model` in random order: from a present key to the key 7 (or 31)
/// places on (exactly 8 or 32 pairs, over one to four leaves), single keys, random bounds
/// (some inverted, some empty), and ranges reaching below the first or past the last key.
fn ranges<K: TreeKey, V: TreeValue>(model: &Model<K, V>, rng: &mut ChaCha8Rng) -> Vec<(K, K)> {
    let present: Vec<K> = model.keys().copied().collect();
    let at = |i: usize| present[i.min(present.len() - 1)];
    (0..RANGES)
        .map(|q| match q % 6 {
            0 | 1 => {
                let i = rng.random_range(0..present.len());
                (present[i], at(i + 7))
            }
            2 | 3 => {
                let i = rng.random_range(0..present.len());
                (present[i], at(i + 31))
            }
            4 => {
                let x = rng.random_range(1..=TOP);
                (key(x), key(x))
            }
            _ => match rng.random_range(0..8u32) {
                0 => (K::from_u64(0), key(rng.random_range(1..=TOP))),
                1 => (key(rng.random_range(1..=TOP)), K::from_u64(u64::MAX)),
                2 => (K::from_u64(0), K::from_u64(u64::MAX)),
                _ => {
                    let (a, b) = (rng.random_range(1..=TOP), rng.random_range(1..=TOP));
                    (key(a), key(b))
                }
            },
        })
        .collect()
}

/// Every form of range query at `snap` answers `ranges` as `model` does: range_many_at
/// (count, then collect), range_count_many_at, range_many_capped_at with 8 slots (cut
/// answers included) and the `_device` count and one-pass collect into 32 slots.
fn ranges_match<K: TreeKey, V: TreeValue>(
    gpu: &Gpu,
    map: &VersionedBTreeMap<K, V>,
    snap: &Snapshot,
    model: &Model<K, V>,
    ranges: &[(K, K)],
    what: &str,
) {
    let ts = snap.timestamp();
    let want: Vec<Vec<(K, V)>> = ranges
        .iter()
        .map(|&(lo, hi)| model_range(model, lo, hi))
        .collect();
    let got = map.range_many_at(snap, ranges).expect("range_many_at");
    let counts = map
        .range_count_many_at(snap, ranges)
        .expect("range_count_many_at");
    let (capped, capped_counts) = map
        .range_many_capped_at(snap, ranges, 8)
        .expect("range_many_capped_at");
    let stream = gpu.stream();
    let lo: Vec<K> = ranges.iter().map(|r| r.0).collect();
    let hi: Vec<K> = ranges.iter().map(|r| r.1).collect();
    let (d_lo, d_hi) = (
        stream.clone_htod(&lo).unwrap(),
        stream.clone_htod(&hi).unwrap(),
    );
    let mut d_counts = stream.alloc_zeros::<u32>(ranges.len()).unwrap();
    map.range_count_many_at_device(Some(snap), &d_lo, &d_hi, &mut d_counts)
        .expect("range_count_many_at_device");
    let offsets = RangeOffsets::capped(gpu, ranges.len(), 32).unwrap();
    let mut d_keys = stream.alloc_zeros::<K>(offsets.total() as usize).unwrap();
    let mut d_values = stream.alloc_zeros::<V>(offsets.total() as usize).unwrap();
    map.range_collect_at_device(
        Some(snap),
        &d_lo,
        &d_hi,
        &offsets,
        &mut d_keys,
        &mut d_values,
    )
    .expect("range_collect_at_device");
    let device_counts = stream.clone_dtoh(&d_counts).unwrap();
    let (device_keys, device_values) = (
        stream.clone_dtoh(&d_keys).unwrap(),
        stream.clone_dtoh(&d_values).unwrap(),
    );
    map.check().expect("no status flag after the device forms");
    for (q, &(lo, hi)) in ranges.iter().enumerate() {
        let w = &want[q];
        let at = || {
            format!(
                "{what}, snapshot {ts}, range {q} ({}, {})",
                raw(lo),
                raw(hi)
            )
        };
        assert_eq!(got[q], *w, "range_many_at: {}", at());
        assert_eq!(counts[q] as usize, w.len(), "range_count_many_at: {}", at());
        assert_eq!(capped_counts[q] as usize, w.len(), "capped count: {}", at());
        assert_eq!(capped[q], w[..w.len().min(8)], "capped pairs: {}", at());
        assert_eq!(device_counts[q] as usize, w.len(), "device count: {}", at());
        let first = q * 32;
        let n = w.len().min(32);
        let device: Vec<(K, V)> = (first..first + n)
            .map(|j| (device_keys[j], device_values[j]))
            .collect();
        assert_eq!(device, w[..n], "device one-pass collect: {}", at());
    }
}

/// One update round: `fresh` new keys, new values for a few hundred present ones, a few
/// hundred removed, all in `mode`; the model follows.
fn update_round<K: TreeKey, V: TreeValue>(
    map: &mut VersionedBTreeMap<K, V>,
    model: &mut Model<K, V>,
    mode: Updates,
    round: u32,
    fresh: usize,
    rng: &mut ChaCha8Rng,
) {
    let mut new_keys: Vec<K> = Vec::new();
    while new_keys.len() < fresh {
        let k = key(rng.random_range(1..=TOP));
        if !model.contains_key(&k) && !new_keys.contains(&k) {
            new_keys.push(k);
        }
    }
    let vs: Vec<V> = new_keys.iter().map(|&k| val(raw(k) ^ round)).collect();
    map.insert_many_with(&new_keys, &vs, mode).unwrap();
    model.extend(new_keys.iter().copied().zip(vs));
    let present: Vec<K> = model.keys().copied().collect();
    let offset = rng.random_range(0..5usize);
    let replaced: Vec<K> = present.iter().skip(offset).step_by(9).copied().collect();
    let vs: Vec<V> = replaced
        .iter()
        .map(|&k| val(raw(k).wrapping_mul(3) ^ round))
        .collect();
    map.insert_many_with(&replaced, &vs, mode).unwrap();
    model.extend(replaced.iter().copied().zip(vs));
    let gone: Vec<K> = present
        .iter()
        .skip(offset + 2)
        .step_by(13)
        .copied()
        .collect();
    let removed = map.remove_many_with(&gone, mode).unwrap();
    for (k, r) in gone.iter().zip(removed) {
        assert_eq!(r, model.remove(k), "round {round}: removal of {}", raw(*k));
    }
    map.validate().expect("valid after an update round");
}

/// Query tiles of 8, 16 (in step) and 32 (per tile), updates in place and out of place:
/// six rounds of updates, a snapshot after each (one dropped on the way), and after each
/// round every query form at every live snapshot against the oracle as it was; the tree
/// has older versions while the queries run (asserted), so queries at older snapshots walk
/// version lists, each tile of a warp its own.
fn ranges_in_step_match_the_oracle_at_every_snapshot<K: TreeKey, V: TreeValue>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    for tile in [8, 16, 32] {
        for mode in [Updates::InPlace, Updates::OutOfPlace] {
            let what = format!("tile {tile}, {mode:?}");
            let mut rng = ChaCha8Rng::seed_from_u64(0x5eed ^ tile as u64);
            let mut map = map::<K, V>(&gpu, tile);
            let mut model: Model<K, V> = Model::new();
            let mut held: Vec<(Snapshot, Model<K, V>)> = Vec::new();
            for round in 0..6u32 {
                update_round(&mut map, &mut model, mode, round, 4_000, &mut rng);
                held.push((map.snapshot().unwrap(), model.clone()));
                if round == 3 {
                    held.remove(1);
                }
                if round > 0 {
                    let stats = map.stats().unwrap();
                    assert!(
                        stats.versions > 0,
                        "{what}: no older version for the snapshots to walk"
                    );
                }
                for (snap, seen) in &held {
                    let qs = ranges(seen, &mut rng);
                    ranges_match(&gpu, &map, snap, seen, &qs, &what);
                }
            }
        }
    }
}

/// Every logged head that has an older version and a timestamp past `newest` (so that no
/// live snapshot sees it) loses its timestamp, as a version just published out of place
/// whose writer has not stamped it yet: saved[i] keeps its word (0: left alone) and
/// *unset counts them. With `restore`, the heads still unset get their saved words back.
const UNSTAMP: &str = r#"
#include <gpuds/mvbtree/versioned_tree_ref.cuh>
using K = KEY_T;
using V = VALUE_T;
using tree = gpuds::mvbtree::versioned_tree_ref<K, V>;
using S = gpuds::mvbtree::vshape<K, V>;
namespace mv = gpuds::mvbtree;
extern "C" __global__ void unstamp(tree t, unsigned newest, unsigned restore, unsigned* saved, unsigned* unset) {
  const unsigned n = *t.log_len;
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    unsigned* w = reinterpret_cast<unsigned*>(t.words(t.log[i]));
    if (restore != 0) {
      if (saved[i] != 0) atomicCAS(w + S::TS_WORD, mv::UNSET_TS, saved[i]);
      continue;
    }
    const unsigned word = w[S::TS_WORD];
    const unsigned ts = word & mv::TS_MASK;
    const bool take = (word & mv::RETIRED_OLDER) == 0 && w[S::OLDER_WORD] != mv::null_node &&
                      ts != mv::UNSET_TS && ts > newest;
    saved[i] = take ? word : 0u;
    if (take) {
      w[S::TS_WORD] = mv::UNSET_TS;
      atomicAdd(unset, 1u);
    }
  }
}
"#;

fn unstamp_program<K: TreeKey, V: TreeValue>() -> Program {
    Program::new(format!("mv_unstamp_{}_{}", K::SUFFIX, V::SUFFIX), UNSTAMP)
        .headers(gpuds_mvbtree::cuda_headers())
        .define("KEY_T", K::CUDA_TYPE)
        .define("VALUE_T", V::CUDA_TYPE)
}

/// The test's kernel compiles with NVRTC for every type (no GPU needed).
fn unstamp_kernel_compiles<K: TreeKey, V: TreeValue>() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    let ptx = gpuds_testkit::ptx(&unstamp_program::<K, V>(), gpuds_core::Arch::new(9, 0));
    assert!(ptx.contains(".entry unstamp("));
}

/// Runs UNSTAMP over the map's version log; returns the number of heads unset (0 when
/// restoring).
fn unstamp<K: TreeKey, V: TreeValue>(
    gpu: &Gpu,
    map: &VersionedBTreeMap<K, V>,
    newest: u32,
    saved: &mut gpuds_core::cudarc::driver::CudaSlice<u32>,
    restore: bool,
) -> u32 {
    let kernel = gpu
        .load(&unstamp_program::<K, V>())
        .unwrap()
        .kernel("unstamp")
        .unwrap();
    let stream = gpu.stream();
    let mut unset = stream.alloc_zeros::<u32>(1).unwrap();
    let r = map.device_ref(Updates::InPlace);
    let restore = restore as u32;
    let mut args = stream.launch_builder(kernel.func());
    args.arg(&r)
        .arg(&newest)
        .arg(&restore)
        .arg(&mut *saved)
        .arg(&mut unset);
    // SAFETY: saved holds log_cap words, at least the log's length.
    unsafe { args.launch(launch::shape(64, 256, 0)) }.unwrap();
    stream.clone_dtoh(&unset).unwrap()[0]
}

/// Heads stamped after the newest live snapshot lose their timestamps (as if their
/// out-of-place writers had not stamped them yet); ranges in step at every live snapshot
/// then meet them, stamp them (one lane of the tile, inside the round) and read them
/// again, and must still answer as the oracle did. Once the heads no query reached get
/// their words back the map validates, and a snapshot taken then sees the newest state.
fn ranges_in_step_stamp_unstamped_heads<K: TreeKey, V: TreeValue>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    for tile in [8, 16] {
        let what = format!("tile {tile}, unstamped heads");
        let mut rng = ChaCha8Rng::seed_from_u64(0xa11 ^ tile as u64);
        let mut map = map::<K, V>(&gpu, tile);
        let mut model: Model<K, V> = Model::new();
        let mut held: Vec<(Snapshot, Model<K, V>)> = Vec::new();
        for round in 0..3u32 {
            update_round(
                &mut map,
                &mut model,
                Updates::InPlace,
                round,
                6_000,
                &mut rng,
            );
            held.push((map.snapshot().unwrap(), model.clone()));
        }
        // Changes after the newest snapshot: heads stamped past it, with older versions.
        update_round(&mut map, &mut model, Updates::InPlace, 3, 2_000, &mut rng);
        let newest = held.last().unwrap().0.timestamp();
        let cap = map.device_ref(Updates::InPlace).log_cap as usize;
        let mut saved = gpu.stream().alloc_zeros::<u32>(cap.max(1)).unwrap();
        let unset = unstamp(&gpu, &map, newest, &mut saved, false);
        assert!(unset > 0, "{what}: no head to unstamp");
        for (snap, seen) in &held {
            let qs = ranges(seen, &mut rng);
            ranges_match(&gpu, &map, snap, seen, &qs, &what);
        }
        // A head still unset would be stamped past any snapshot taken now (the vCAS rule:
        // a version is seen from its stamp on), so the heads no query reached get their
        // words back first.
        unstamp(&gpu, &map, newest, &mut saved, true);
        map.validate()
            .expect("valid once every head is stamped again");
        let after = map.snapshot().unwrap();
        let qs = ranges(&model, &mut rng);
        ranges_match(&gpu, &map, &after, &model, &qs, &what);
        for (snap, seen) in &held {
            let qs = ranges(seen, &mut rng);
            ranges_match(&gpu, &map, snap, seen, &qs, &what);
        }
    }
}
