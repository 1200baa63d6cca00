// Entry points of the device workloads: the Table 2 sequences, their values and search
// batches, and the k-mer keys of packed reads. Thin grid-stride loops over
// gpuds/oversub/workload.cuh and gpuds/oversub/kmer.cuh, one thread per element.
#include <gpuds/core/kernel_name.cuh>
#include <gpuds/oversub/kmer.cuh>
#include <gpuds/oversub/workload.cuh>

using namespace gpuds::oversub;

__device__ __forceinline__ unsigned long long thread_index() {
  return static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ unsigned long long thread_count() {
  return static_cast<unsigned long long>(gridDim.x) * blockDim.x;
}

// out[j] = key j of the sequence, for j < n.
extern "C" __global__ void GPUDS_KERNEL(sequence_keys)(unsigned kind, unsigned largest, unsigned long long n,
                                                       unsigned long long block, unsigned long long seed,
                                                       unsigned* out) {
  const workload::sequence s{kind, largest, n, block, seed};
  for (unsigned long long j = thread_index(); j < n; j += thread_count()) out[j] = s.key(j);
}

// out[i] = the value of keys[i].
extern "C" __global__ void GPUDS_KERNEL(sequence_values)(const unsigned* keys, unsigned long long n,
                                                         unsigned value_key, unsigned* out) {
  for (unsigned long long i = thread_index(); i < n; i += thread_count()) out[i] = workload::value_of(keys[i], value_key);
}

// Candidate i of the absent keys, for i < count: KEY_MIN + order(i) over the whole key
// range (the host's `absent_keys` walks the same order), flagged when it is not among
// the `present` keys (sorted ascending).
extern "C" __global__ void GPUDS_KERNEL(absent_candidates)(const unsigned* present, unsigned long long present_len,
                                                           unsigned long long seed, unsigned long long count,
                                                           unsigned* candidates, unsigned* flags) {
  const workload::permutation order = workload::permutation::make(
      workload::derive_seed(seed, workload::SALT_ABSENT, 0), workload::KEY_MAX - workload::KEY_MIN);
  for (unsigned long long i = thread_index(); i < count; i += thread_count()) {
    const unsigned k = workload::KEY_MIN + order.apply(static_cast<unsigned>(i));
    unsigned long long lo = 0, hi = present_len;  // the first present key >= k
    while (lo < hi) {
      const unsigned long long mid = lo + (hi - lo) / 2;
      if (present[mid] < k) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    candidates[i] = k;
    flags[i] = lo == present_len || present[lo] != k ? 1u : 0u;
  }
}

// The host's `search_queries`: keys in order, position every - 1 of each group of
// `every` replaced by the next miss (misses holds n / every of them).
extern "C" __global__ void GPUDS_KERNEL(search_queries)(const unsigned* keys, unsigned long long n,
                                                        unsigned long long every, const unsigned* misses,
                                                        unsigned* out) {
  for (unsigned long long j = thread_index(); j < n; j += thread_count()) {
    out[j] = every != 0 && j % every == every - 1 ? misses[j / every] : keys[j];
  }
}

// The code of the window at p, or false when it is not a k-mer (past the end or holding
// a byte that is not a nucleotide), in the orientation asked.
__device__ __forceinline__ bool window_code(const unsigned char* bases, unsigned long long len, unsigned long long p,
                                            unsigned canonical, unsigned* code) {
  if (len < kmer::K || p > len - kmer::K || !kmer::encode(bases + p, code)) return false;
  if (canonical != 0u) *code = kmer::canonical(*code);
  return true;
}

// Count pass: flags[p] = 1 where a table key starts at byte p of the packed reads;
// homopolymers[0] and [1] count the poly-A and poly-T windows left out.
extern "C" __global__ void GPUDS_KERNEL(kmer_flags)(const unsigned char* bases, unsigned long long len,
                                                    unsigned canonical, unsigned* flags,
                                                    unsigned long long* homopolymers) {
  for (unsigned long long p = thread_index(); p < len; p += thread_count()) {
    unsigned code = 0;
    const bool kmer = window_code(bases, len, p, canonical, &code);
    const bool poly_a = kmer && code == kmer::POLY_A;
    const bool poly_t = kmer && code == kmer::POLY_T;
    flags[p] = kmer && !poly_a && !poly_t ? 1u : 0u;
    if (poly_a) atomicAdd(&homopolymers[0], 1ull);
    if (poly_t) atomicAdd(&homopolymers[1], 1ull);
  }
}

// Collect pass: the key starting at byte p goes to keys[positions[p]] (positions: the
// exclusive scan of the flags); read r's keys start at read_offsets[r] =
// positions[read_starts[r]].
extern "C" __global__ void GPUDS_KERNEL(kmer_collect)(const unsigned char* bases, unsigned long long len,
                                                      unsigned canonical, const unsigned* flags,
                                                      const unsigned* positions, unsigned* keys,
                                                      const unsigned long long* read_starts, unsigned long long reads,
                                                      unsigned* read_offsets) {
  for (unsigned long long p = thread_index(); p < len; p += thread_count()) {
    unsigned code = 0;
    if (flags[p] != 0u && window_code(bases, len, p, canonical, &code)) keys[positions[p]] = code;
  }
  for (unsigned long long r = thread_index(); r < reads; r += thread_count()) {
    read_offsets[r] = positions[read_starts[r]];
  }
}
