// Inputs of the `linear` experiment: distinct u32 keys that avoid LinearProbeMap's
// reserved keys, with their values, generated on the device.
//
// keys[i] = P(first + i) with P the murmur3 finalizer of (x ^ seed), a bijection of the
// 32-bit words, cycle-walked to stay below 0xfffffffe: distinct indices give distinct
// keys, and disjoint index ranges give disjoint key sets (hits and misses). values[i] is
// first + i + 1, never the reserved value.
#include <gpuds/core/hash.cuh>

extern "C" __global__ void linear_bench_keys(unsigned* __restrict__ keys, unsigned* __restrict__ values,
                                             unsigned long long n, unsigned long long first,
                                             unsigned seed) {
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < n; i += stride) {
    unsigned k = gpuds::hash::murmur3_32(static_cast<unsigned>(first + i) ^ seed);
    // At most two of the 2^32 images are reserved, so the walk ends within three steps.
    for (int step = 0; step < 4 && k >= 0xfffffffeu; ++step) {
      k = gpuds::hash::murmur3_32(k ^ seed);
    }
    keys[i] = k;
    if (values != nullptr) values[i] = static_cast<unsigned>(first + i + 1);
  }
}
