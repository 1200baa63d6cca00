// benches/cuda/limits.cu: the probes behind `gpuds-bench limits`, the physical ceilings
// every other experiment is compared with, plus the fills that make fresh inputs.
//
// Random indices are computed on the device from a hash of the query number and a
// per-repetition seed instead of being read from an index array. An index array would
// add a streamed 4-byte read per query (for 2^26 queries, 256 MiB next to the 2 GiB of
// sectors the probe is about) and its own memory; the hash costs a handful of integer
// instructions, far under what the SMs issue while waiting on memory. A new seed per
// repetition gives fresh indices without an upload.
//
// Each loop keeps UNROLL independent memory operations in flight per thread (or warp)
// before it uses any result, so the probe is limited by the memory system rather than
// by the latency of one access at a time. Reads end in a comparison with a needle and a
// rare atomicAdd, so the compiler cannot drop them and almost nothing is written.
#include <gpuds/core/hash.cuh>

#define UNROLL 4

namespace {

constexpr unsigned EMPTY = 0xffffffffu;

// The query's slot: a bijective mix of query number and seed, masked to the table.
__device__ __forceinline__ unsigned slot(unsigned long long q, unsigned seed, unsigned mask) {
  return gpuds::hash::murmur3_32(static_cast<unsigned>(q) + seed * 0x9e3779b9u) & mask;
}

__device__ __forceinline__ unsigned long long thread_index() {
  return static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
}

__device__ __forceinline__ unsigned long long thread_count() {
  return static_cast<unsigned long long>(gridDim.x) * blockDim.x;
}

}  // namespace

// out[i] = a bijective hash of (i, seed): distinct values for n <= 2^32, never a run of
// zeros, different for every seed.
extern "C" __global__ void fill_random(unsigned* out, unsigned long long n, unsigned seed) {
  const unsigned long long stride = thread_count();
  for (unsigned long long i = thread_index(); i < n; i += stride) {
    out[i] = gpuds::hash::murmur3_32(static_cast<unsigned>(i) + seed * 0x9e3779b9u);
  }
}

// out[i] = one random bit of (i, seed): flags that keep about half of the items.
extern "C" __global__ void fill_flags(unsigned* out, unsigned long long n, unsigned seed) {
  const unsigned long long stride = thread_count();
  for (unsigned long long i = thread_index(); i < n; i += stride) {
    out[i] = gpuds::hash::murmur3_32(static_cast<unsigned>(i) + seed * 0x9e3779b9u) >> 31;
  }
}

// Device copy with 16-byte accesses, coalesced across the warp.
extern "C" __global__ void copy16(const uint4* __restrict__ src, uint4* __restrict__ dst,
                                  unsigned long long n16) {
  const unsigned long long stride = thread_count();
  for (unsigned long long base = thread_index(); base < n16; base += stride * UNROLL) {
    uint4 v[UNROLL];
#pragma unroll
    for (int j = 0; j < UNROLL; ++j) {
      const unsigned long long i = base + j * stride;
      if (i < n16) v[j] = src[i];
    }
#pragma unroll
    for (int j = 0; j < UNROLL; ++j) {
      const unsigned long long i = base + j * stride;
      if (i < n16) dst[i] = v[j];
    }
  }
}

// One random 4-byte read per query: one 32-byte sector moved from memory per query.
extern "C" __global__ void sector_reads(const unsigned* __restrict__ table, unsigned mask,
                                        unsigned long long queries, unsigned seed,
                                        unsigned needle, unsigned* found) {
  const unsigned long long stride = thread_count();
  for (unsigned long long base = thread_index(); base < queries; base += stride * UNROLL) {
    unsigned v[UNROLL];
#pragma unroll
    for (int j = 0; j < UNROLL; ++j) {
      const unsigned long long q = base + j * stride;
      v[j] = q < queries ? table[slot(q, seed, mask)] : ~needle;
    }
#pragma unroll
    for (int j = 0; j < UNROLL; ++j) {
      if (v[j] == needle) atomicAdd(found, 1u);
    }
  }
}

// One random 128-byte line per query, read by a whole warp (lane i reads word i), the
// access pattern of a warp-cooperative bucket or slab probe. `line_mask` masks line
// numbers; the table holds (line_mask + 1) * 32 words.
extern "C" __global__ void line_reads(const unsigned* __restrict__ table, unsigned line_mask,
                                      unsigned long long queries, unsigned seed,
                                      unsigned needle, unsigned* found) {
  const unsigned lane = threadIdx.x & 31u;
  const unsigned long long warp = thread_index() >> 5;
  const unsigned long long warps = thread_count() >> 5;
  // The loop bounds depend on the warp only, so every lane takes every ballot.
  for (unsigned long long base = warp; base < queries; base += warps * UNROLL) {
    unsigned v[UNROLL];
#pragma unroll
    for (int j = 0; j < UNROLL; ++j) {
      const unsigned long long q = base + j * warps;
      const unsigned long long line = slot(q, seed, line_mask);
      v[j] = q < queries ? table[line * 32ull + lane] : ~needle;
    }
#pragma unroll
    for (int j = 0; j < UNROLL; ++j) {
      const unsigned hits = __ballot_sync(0xffffffffu, v[j] == needle);
      if (hits != 0u && lane == 0u) atomicAdd(found, static_cast<unsigned>(__popc(hits)));
    }
  }
}

// One random atomicCAS per query, EMPTY -> a key: the insertion step of an open-addressing
// hash table. The host fills the table with EMPTY before each repetition, so nearly every
// CAS succeeds and writes (the heavier case: the sector comes back dirty).
extern "C" __global__ void random_cas(unsigned* table, unsigned mask, unsigned long long queries,
                                      unsigned seed) {
  const unsigned long long stride = thread_count();
  for (unsigned long long base = thread_index(); base < queries; base += stride * UNROLL) {
#pragma unroll
    for (int j = 0; j < UNROLL; ++j) {
      const unsigned long long q = base + j * stride;
      if (q < queries) {
        const unsigned key = gpuds::hash::murmur3_32(static_cast<unsigned>(q) ^ seed) & 0x7fffffffu;
        atomicCAS(table + slot(q, seed, mask), EMPTY, key);
      }
    }
  }
}
