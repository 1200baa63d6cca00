//! The Rust mirror of `gpuds::btree::tree_ref` has the C++ layout, and a user kernel can
//! query the tree through `gpuds/btree/tree_ref.cuh`.

mod common;

use common::{key, keys, val, vals};
use gpuds_btree::{GpuBTreeMap, TreeKey, TreeRef, TreeValue};
use gpuds_core::cudarc::driver::PushKernelArg;
use gpuds_core::{assert_layout, launch, Program};

typed!(
    tree_ref_layout_matches_cpp,
    a_user_kernel_reads_the_tree_through_the_ref
);

/// The C++ twin of `TreeRef<K, V>`.
fn cpp_ref<K: TreeKey, V: TreeValue>() -> String {
    format!("gpuds::btree::tree_ref<{}, {}>", K::CUDA_TYPE, V::CUDA_TYPE)
}

fn tree_ref_layout_matches_cpp<K: TreeKey, V: TreeValue>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let prelude = Program::new(
        format!("btree_layout_{}_{}", K::SUFFIX, V::SUFFIX),
        "#include <gpuds/btree/tree_ref.cuh>",
    )
    .headers(gpuds_btree::cuda_headers());
    assert_layout!(
        &gpu,
        prelude,
        TreeRef<K, V>,
        &cpp_ref::<K, V>(),
        alloc,
        root,
        max_steps,
        status,
        size
    );
}

const USER_KERNEL: &str = r#"
#include <gpuds/btree/tree_ref.cuh>
using K = KEY_T;
using V = VALUE_T;
extern "C" __global__ void user_lookup(gpuds::btree::tree_ref<K, V> tree, const K* lo, const K* hi,
                                       unsigned n, V* values, unsigned* counts) {
  const unsigned i = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  if (i >= n) return;
  V v = 0;
  const bool hit = tree.lookup<16>(lo[i], v);
  const unsigned c = tree.range_count<32>(lo[i], hi[i]);
  if (gpuds::warp::lane_id() == 0) {
    values[i] = hit ? v : V(~0ull);
    counts[i] = c;
  }
}
"#;

fn a_user_kernel_reads_the_tree_through_the_ref<K: TreeKey, V: TreeValue>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let mut tree = GpuBTreeMap::<K, V>::new(&gpu).unwrap();
    let raw: Vec<u32> = (0..5000).map(|i| i * 2).collect();
    let values: Vec<u32> = raw.iter().map(|k| k + 1).collect();
    tree.insert_many(&keys::<K>(&raw), &vals::<V>(&values))
        .unwrap();
    let program = Program::new(
        format!("btree_user_{}_{}", K::SUFFIX, V::SUFFIX),
        USER_KERNEL,
    )
    .headers(gpuds_btree::cuda_headers())
    .define("KEY_T", K::CUDA_TYPE)
    .define("VALUE_T", V::CUDA_TYPE);
    let kernel = gpu.load(&program).unwrap().kernel("user_lookup").unwrap();
    let probes: Vec<u32> = vec![0, 1, 2, 9998, 9999, 5000];
    let ends: Vec<u32> = probes.iter().map(|p| p + 9).collect();
    let stream = gpu.stream();
    let d_lo = stream.clone_htod(&keys::<K>(&probes)).unwrap();
    let d_hi = stream.clone_htod(&keys::<K>(&ends)).unwrap();
    let mut out = stream.alloc_zeros::<V>(probes.len()).unwrap();
    let mut counts = stream.alloc_zeros::<u32>(probes.len()).unwrap();
    let r = tree.device_ref();
    let n = probes.len() as u32;
    let mut args = stream.launch_builder(kernel.func());
    args.arg(&r)
        .arg(&d_lo)
        .arg(&d_hi)
        .arg(&n)
        .arg(&mut out)
        .arg(&mut counts);
    // SAFETY: the kernel reads n keys from each of lo and hi and writes n values and counts.
    unsafe { args.launch(launch::shape(probes.len() as u32, 32, 0)) }.unwrap();
    let (out, counts) = (
        stream.clone_dtoh(&out).unwrap(),
        stream.clone_dtoh(&counts).unwrap(),
    );
    let miss = V::from_u64(u64::MAX);
    let want = [
        (val::<V>(1), 5),
        (miss, 5),
        (val(3), 5),
        (val(9999), 1),
        (miss, 0),
        (val(5001), 5),
    ];
    for (q, (v, c)) in want.iter().enumerate() {
        assert_eq!((out[q], counts[q]), (*v, *c), "probe {}", probes[q]);
    }
    assert_eq!(key::<K>(probes[0]), K::from_u64(0));
    tree.check().unwrap();
}
