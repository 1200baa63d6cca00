//! The device hash functions and their Rust twins agree on random inputs.

use gpuds_core::cudarc::driver::PushKernelArg;
use gpuds_core::hash::{self, Universal};
use gpuds_core::{launch, Program};
use rand::{RngExt, SeedableRng};

#[test]
fn device_and_host_hashes_agree() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let program = Program::new(
        "hash_twins",
        r#"#include <gpuds/core/hash.cuh>
extern "C" __global__ void hashes(const unsigned* k32, const unsigned long long* k64, unsigned n,
                                  gpuds::hash::universal h, unsigned buckets,
                                  unsigned* out32, unsigned long long* out64) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const unsigned k = k32[i];
  out32[4 * i + 0] = gpuds::hash::murmur3_32(k);
  out32[4 * i + 1] = h(k, buckets);
  out32[4 * i + 2] = gpuds::hash::bit_mix1(k);
  out32[4 * i + 3] = gpuds::hash::bit_mix2(k);
  out64[i] = gpuds::hash::murmur3_64(k64[i]);
}
"#,
    );
    let kernel = gpu
        .load(&program)
        .expect("load")
        .kernel("hashes")
        .expect("kernel");
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let n = 1usize << 20;
    let mut k32: Vec<u32> = (0..n).map(|_| rng.random()).collect();
    k32[..4].copy_from_slice(&[0, 1, u32::MAX, u32::MAX - 1]);
    let k64: Vec<u64> = (0..n).map(|_| rng.random()).collect();
    let h = Universal::from_seed(99);
    let buckets = 1_000_003u32;
    let stream = gpu.stream();
    let d32 = stream.clone_htod(&k32).expect("htod");
    let d64 = stream.clone_htod(&k64).expect("htod");
    let mut out32 = stream.alloc_zeros::<u32>(4 * n).expect("alloc");
    let mut out64 = stream.alloc_zeros::<u64>(n).expect("alloc");
    let n32 = n as u32;
    let mut args = stream.launch_builder(kernel.func());
    args.arg(&d32)
        .arg(&d64)
        .arg(&n32)
        .arg(&h)
        .arg(&buckets)
        .arg(&mut out32)
        .arg(&mut out64);
    unsafe { args.launch(launch::one_thread_per_item(n, 256).expect("shape")) }.expect("launch");
    let out32 = stream.clone_dtoh(&out32).expect("dtoh");
    let out64 = stream.clone_dtoh(&out64).expect("dtoh");
    for i in 0..n {
        let k = k32[i];
        assert_eq!(out32[4 * i], hash::murmur3_32(k), "murmur3_32({k})");
        assert_eq!(out32[4 * i + 1], h.bucket(k, buckets), "universal({k})");
        assert_eq!(out32[4 * i + 2], hash::bit_mix1(k), "bit_mix1({k})");
        assert_eq!(out32[4 * i + 3], hash::bit_mix2(k), "bit_mix2({k})");
        assert_eq!(out64[i], hash::murmur3_64(k64[i]), "murmur3_64({})", k64[i]);
    }
}
