// Fill and iota: grid-stride loops over one output array.
//
// Defines (set by gpuds_core::primitives):
//   ELEM_T         element type (unsigned int, unsigned long long)
//   KERNEL_SUFFIX  stamped into kernel names: fill_u32, iota_u64, ...
#include <gpuds/core/kernel_name.cuh>


// out[i] = value for every i < n.
extern "C" __global__ void GPUDS_KERNEL(fill)(ELEM_T* __restrict__ out, unsigned long long n,
                                        ELEM_T value) {
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < n; i += stride) {
    out[i] = value;
  }
}

// out[i] = start + i (wrapping) for every i < n.
extern "C" __global__ void GPUDS_KERNEL(iota)(ELEM_T* __restrict__ out, unsigned long long n,
                                        ELEM_T start) {
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < n; i += stride) {
    out[i] = start + static_cast<ELEM_T>(i);
  }
}
