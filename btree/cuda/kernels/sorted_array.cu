// The GPU sorted array (GPU SA) the dissertation compares the B-Tree with (§3.5): keys
// sorted and unique with their values beside them; one thread per query, binary search.
#include <gpuds/core/warp.cuh>

namespace {

// First index i with keys[i] >= k (n when none).
__device__ __forceinline__ unsigned lower_bound(const unsigned* keys, unsigned n, unsigned k) {
  unsigned lo = 0, hi = n;
  while (lo < hi) {
    const unsigned mid = lo + (hi - lo) / 2;
    if (__ldg(keys + mid) < k) lo = mid + 1; else hi = mid;
  }
  return lo;
}

__device__ __forceinline__ unsigned long long thread_index() {
  return static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ unsigned long long thread_count() {
  return static_cast<unsigned long long>(gridDim.x) * blockDim.x;
}

}  // namespace

// Lookups: values and one found bit per query (a whole warp's bits per word).
extern "C" __global__ void sa_get(const unsigned* keys, const unsigned* values, unsigned n,
                                  const unsigned* queries, unsigned q, unsigned* out,
                                  unsigned* found_bits) {
  for (unsigned long long base = thread_index() & ~31ull; base < q; base += thread_count()) {
    const unsigned long long i = base + gpuds::warp::lane_id();
    bool hit = false;
    if (i < q) {
      const unsigned k = queries[i];
      const unsigned at = lower_bound(keys, n, k);
      hit = at < n && keys[at] == k;
      out[i] = hit ? values[at] : 0u;
    }
    const unsigned bits = __ballot_sync(gpuds::warp::FULL_MASK, hit);
    if (gpuds::warp::lane_id() == 0) found_bits[base / 32] = bits;
  }
}

// Count form of a range query: upper_bound(hi) - lower_bound(lo), 0 when lo > hi.
extern "C" __global__ void sa_range_count(const unsigned* keys, unsigned n, const unsigned* lo,
                                          const unsigned* hi, unsigned q, unsigned* counts) {
  for (unsigned long long i = thread_index(); i < q; i += thread_count()) {
    const unsigned a = lo[i], b = hi[i];
    if (a > b) {
      counts[i] = 0;
      continue;
    }
    const unsigned first = lower_bound(keys, n, a);
    const unsigned end = b == 0xffffffffu ? n : lower_bound(keys, n, b + 1);
    counts[i] = end - first;
  }
}

// Successor: the first key > k.
extern "C" __global__ void sa_successor(const unsigned* keys, const unsigned* values, unsigned n,
                                        const unsigned* queries, unsigned q, unsigned* out_keys,
                                        unsigned* out_values, unsigned* found_bits) {
  for (unsigned long long base = thread_index() & ~31ull; base < q; base += thread_count()) {
    const unsigned long long i = base + gpuds::warp::lane_id();
    bool hit = false;
    if (i < q) {
      const unsigned k = queries[i];
      const unsigned at = k == 0xffffffffu ? n : lower_bound(keys, n, k + 1);
      hit = at < n;
      out_keys[i] = hit ? keys[at] : 0u;
      out_values[i] = hit ? values[at] : 0u;
    }
    const unsigned bits = __ballot_sync(gpuds::warp::FULL_MASK, hit);
    if (gpuds::warp::lane_id() == 0) found_bits[base / 32] = bits;
  }
}
