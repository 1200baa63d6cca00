// Entry points of FlatTable and RangeTable: thin grid-stride loops over flat_table /
// range_table, one thread per request (lanes past the end take part with no request).
// Query and removal kernels may take `index`: request i is the batch's request index[i]
// (a batch sorted by key for locality writes its results back in the caller's order).
#include <gpuds/core/kernel_name.cuh>
#include <gpuds/oversub/flat.cuh>

using namespace gpuds;
using namespace gpuds::oversub;

__device__ __forceinline__ unsigned long long thread_index() {
  return static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ unsigned long long thread_count() {
  return static_cast<unsigned long long>(gridDim.x) * blockDim.x;
}

// Adds the warp's sum of `delta` to *count once (lane 0), all lanes calling.
__device__ __forceinline__ void add_count(unsigned long long* count, long long delta) {
  const unsigned long long x = warp::sum(static_cast<unsigned long long>(delta));
  if (warp::lane_id() == 0 && x != 0ull && count != nullptr) atomicAdd(count, x);
}

__device__ __forceinline__ void note(unsigned* failed, bool active, unsigned long long i, unsigned outcome) {
  if (failed != nullptr && active && outcome == OP_FAILED) status::mark_not_applied(failed, i);
}

// The lowest index i of a reserved key (0 or all ones), as n - i by atomicMax into *first.
extern "C" __global__ void GPUDS_KERNEL(first_reserved)(const unsigned* keys, unsigned long long n,
                                                        unsigned long long* first) {
  unsigned long long bad = 0;
  for (unsigned long long i = thread_index(); i < n; i += thread_count()) {
    const unsigned k = keys[i];
    if ((k == EMPTY_KEY || k == TOMBSTONE_KEY) && n - i > bad) bad = n - i;
  }
  if (bad != 0ull) atomicMax(first, bad);
}

// The per-request loop: `op(active, i, key)` for each request, all lanes calling.
template <class Op>
__device__ __forceinline__ void for_requests(unsigned long long n, Op&& op) {
  const unsigned long long stride = thread_count();
  const unsigned long long rounds = (n + stride - 1) / stride;
  for (unsigned long long r = 0; r < rounds; ++r) {
    const unsigned long long i = r * stride + thread_index();
    op(i < n, i);
  }
}

// Insertions (replace) or, with `accumulate`, additions (values null: add 1 per key).
// With `index` (a batch sorted by key), key i's value is values[index[i]] and its failure
// bit that position: errors name the caller's requests.
template <class Table>
__device__ __forceinline__ void insert_all(const Table& t, unsigned long long* count, const unsigned* keys,
                                           const unsigned long long* index, const unsigned* values,
                                           unsigned long long n, unsigned* failed, bool accumulate = false) {
  for_requests(n, [&](bool active, unsigned long long i) {
    const unsigned k = active ? keys[i] : 1u;
    const unsigned long long at = active && index != nullptr ? index[i] : i;
    const unsigned v = active && values != nullptr ? values[at] : (accumulate ? 1u : 0u);
    const unsigned outcome = accumulate ? t.add(active, k, v) : t.insert(active, k, v);
    add_count(count, active && outcome == OP_ABSENT ? 1 : 0);
    note(failed, active, at, outcome);
  });
}

template <class Table>
__device__ __forceinline__ void erase_all(const Table& t, unsigned long long* count, const unsigned* keys,
                                          const unsigned long long* index, unsigned long long n,
                                          unsigned* removed, unsigned* failed) {
  for_requests(n, [&](bool active, unsigned long long i) {
    const unsigned k = active ? keys[i] : 1u;
    unsigned old = 0;
    const unsigned outcome = t.erase(active, k, old);
    add_count(count, active && outcome == OP_PRESENT ? -1 : 0);
    const unsigned long long at = active && index != nullptr ? index[i] : i;
    if (active && removed != nullptr && outcome == OP_PRESENT) atomicOr(&removed[at / 32], 1u << (at % 32));
    note(failed, active, at, outcome);
  });
}

template <class Table>
__device__ __forceinline__ void find_all(const Table& t, const unsigned* keys, const unsigned long long* index,
                                         unsigned long long n, unsigned* values, unsigned* found,
                                         unsigned* failed) {
  for_requests(n, [&](bool active, unsigned long long i) {
    const unsigned k = active ? keys[i] : 1u;
    unsigned v = 0;
    const unsigned outcome = t.find(active, k, v);
    const unsigned long long at = active && index != nullptr ? index[i] : i;
    if (active && values != nullptr) values[at] = outcome == OP_PRESENT ? v : 0xFFFFFFFFu;
    if (active && found != nullptr && outcome == OP_PRESENT) atomicOr(&found[at / 32], 1u << (at % 32));
    note(failed, active, at, outcome);
  });
}

extern "C" __global__ void GPUDS_KERNEL(flat_insert)(flat_table t, const unsigned* keys, const unsigned* values,
                                                     unsigned long long n, unsigned* failed) {
  insert_all(t, t.count, keys, nullptr, values, n, failed);
}
extern "C" __global__ void GPUDS_KERNEL(flat_erase)(flat_table t, const unsigned* keys,
                                                    const unsigned long long* index, unsigned long long n,
                                                    unsigned* removed, unsigned* failed) {
  erase_all(t, t.count, keys, index, n, removed, failed);
}
extern "C" __global__ void GPUDS_KERNEL(flat_find)(flat_table t, const unsigned* keys,
                                                   const unsigned long long* index, unsigned long long n,
                                                   unsigned* values, unsigned* found, unsigned* failed) {
  find_all(t, keys, index, n, values, found, failed);
}

extern "C" __global__ void GPUDS_KERNEL(range_insert)(range_table t, const unsigned* keys,
                                                      const unsigned long long* index, const unsigned* values,
                                                      unsigned long long n, unsigned* failed) {
  insert_all(t, t.count, keys, index, values, n, failed);
}
extern "C" __global__ void GPUDS_KERNEL(range_erase)(range_table t, const unsigned* keys,
                                                     const unsigned long long* index, unsigned long long n,
                                                     unsigned* removed, unsigned* failed) {
  erase_all(t, t.count, keys, index, n, removed, failed);
}
extern "C" __global__ void GPUDS_KERNEL(range_find)(range_table t, const unsigned* keys,
                                                    const unsigned long long* index, unsigned long long n,
                                                    unsigned* values, unsigned* found, unsigned* failed) {
  find_all(t, keys, index, n, values, found, failed);
}

// need[r] = 1 for every range r that a key of the batch falls in and that has no inner
// table yet (the host allocates those before the batch runs).
extern "C" __global__ void GPUDS_KERNEL(range_need)(range_table t, const unsigned* keys, unsigned long long n,
                                                    unsigned* need) {
  for (unsigned long long i = thread_index(); i < n; i += thread_count()) {
    const unsigned long long r = t.range_of(keys[i]);
    if (t.outer[r].inner == 0ull && need[r] == 0u) need[r] = 1u;
  }
}

// outer[ranges[j]].inner = inners[j].
extern "C" __global__ void GPUDS_KERNEL(range_set_inner)(range_table t, const unsigned* ranges,
                                                         const unsigned long long* inners, unsigned long long m) {
  for (unsigned long long j = thread_index(); j < m; j += thread_count()) t.outer[ranges[j]].inner = inners[j];
}

// counts[r] = keys of the batch in range r (the tiered placement splits a sorted batch
// into runs of ranges that fit its device cache).
extern "C" __global__ void GPUDS_KERNEL(range_histogram)(range_table t, const unsigned* keys, unsigned long long n,
                                                         unsigned* counts) {
  for (unsigned long long i = thread_index(); i < n; i += thread_count()) atomicAdd(&counts[t.range_of(keys[i])], 1u);
}

extern "C" __global__ void GPUDS_KERNEL(flat_add)(flat_table t, const unsigned* keys, const unsigned* deltas,
                                                  unsigned long long n, unsigned* failed) {
  insert_all(t, t.count, keys, nullptr, deltas, n, failed, true);
}
extern "C" __global__ void GPUDS_KERNEL(range_add)(range_table t, const unsigned* keys,
                                                   const unsigned long long* index, const unsigned* deltas,
                                                   unsigned long long n, unsigned* failed) {
  insert_all(t, t.count, keys, index, deltas, n, failed, true);
}
