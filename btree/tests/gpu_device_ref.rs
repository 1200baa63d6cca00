//! The Rust mirror of `gpuds::btree::tree_ref` has the C++ layout, and a user kernel can
//! query the tree through `gpuds/btree/tree_ref.cuh`.

use gpuds_btree::{GpuBTreeMap, TreeRef};
use gpuds_core::cudarc::driver::PushKernelArg;
use gpuds_core::{assert_layout, launch, Program};

fn prelude() -> Program {
    Program::new("btree_layout", "#include <gpuds/btree/tree_ref.cuh>")
        .headers(gpuds_btree::cuda_headers())
}

#[test]
fn tree_ref_layout_matches_cpp() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    assert_layout!(
        &gpu,
        prelude(),
        TreeRef,
        "gpuds::btree::tree_ref",
        alloc,
        root,
        max_steps,
        status,
        size
    );
}

const USER_KERNEL: &str = r#"
#include <gpuds/btree/tree_ref.cuh>
// One warp per key; lanes 0..15 and 16..31 are two tiles of 16 that look up the same key.
extern "C" __global__ void user_lookup(gpuds::btree::tree_ref tree, const unsigned* keys,
                                       unsigned n, unsigned* out) {
  const unsigned i = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  if (i >= n) return;
  unsigned v = 0;
  const bool hit = tree.lookup<16>(keys[i], v);
  const unsigned c = tree.range_count<32>(keys[i], keys[i] + 9);
  if (gpuds::warp::lane_id() == 0) { out[2 * i] = hit ? v : 0xffffffffu; out[2 * i + 1] = c; }
}
"#;

#[test]
fn a_user_kernel_reads_the_tree_through_the_ref() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let mut tree = GpuBTreeMap::<u32, u32>::new(&gpu).unwrap();
    let keys: Vec<u32> = (0..5000).map(|i| i * 2).collect();
    let values: Vec<u32> = keys.iter().map(|k| k + 1).collect();
    tree.insert_many(&keys, &values).unwrap();
    let program = Program::new("btree_user", USER_KERNEL).headers(gpuds_btree::cuda_headers());
    let kernel = gpu.load(&program).unwrap().kernel("user_lookup").unwrap();
    let probes: Vec<u32> = vec![0, 1, 2, 9998, 9999, 5000];
    let stream = gpu.stream();
    let d_probes = stream.clone_htod(&probes).unwrap();
    let mut out = stream.alloc_zeros::<u32>(2 * probes.len()).unwrap();
    let r = tree.device_ref();
    let n = probes.len() as u32;
    let mut args = stream.launch_builder(kernel.func());
    args.arg(&r).arg(&d_probes).arg(&n).arg(&mut out);
    unsafe { args.launch(launch::shape(probes.len() as u32, 32, 0)) }.unwrap();
    let out = stream.clone_dtoh(&out).unwrap();
    let want = [
        (1, 5),
        (u32::MAX, 5),
        (3, 5),
        (9999, 1),
        (u32::MAX, 0),
        (5001, 5),
    ];
    for (q, (v, c)) in want.iter().enumerate() {
        assert_eq!(
            (out[2 * q], out[2 * q + 1]),
            (*v, *c),
            "probe {}",
            probes[q]
        );
    }
    tree.check().unwrap();
}
