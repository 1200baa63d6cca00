// gpuds/hive/detail/batch_loop.cuh: how HiveMap's batch kernels walk a batch: each tile
// of HIVE_SLOTS lanes takes HIVE_SLOTS operations at a time (grid-stride), lane r holding
// operation r of the chunk; and the insert of a chunk (each lane alone first, then the
// tile for what the lanes left).
#pragma once
#include <gpuds/hive/hive_ref.cuh>

namespace gpuds {
namespace hive {

// Runs `body(index, key, value, lane_result)` for every operation, chunk by chunk.
template <typename Body>
__device__ __forceinline__ void for_each_op(unsigned long long n, Body&& body) {
  const unsigned long long tiles = (static_cast<unsigned long long>(gridDim.x) * blockDim.x) / SLOTS;
  const unsigned long long first = (static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x) / SLOTS;
  for (unsigned long long chunk = first; chunk * SLOTS < n; chunk += tiles) {
    body(chunk * SLOTS);
  }
}

__device__ __forceinline__ unsigned ops_in_chunk(unsigned long long base, unsigned long long n) {
  const unsigned long long left = n - base;
  return left < SLOTS ? static_cast<unsigned>(left) : SLOTS;
}

// Inserts one operation per lane with `has` (operation `index` of the batch): each lane
// first alone (insert_alone), then the tile inserts what the lanes left, one after the
// other. A lane whose key is a reserved one leaves it to the tile, which reports it.
template <typename Ref>
__device__ __forceinline__ void insert_ops(const Ref& t, bool has, typename Ref::key_type k,
                                           typename Ref::value_type v, unsigned long long index, tally& lane,
                                           tally& counts) {
  unsigned step = STEP_LEFTOVER;
  typename Ref::value_type old = 0;
  if (has && !Ref::reserved(k)) step = t.insert_alone(k, v, old, lane);
  unsigned left = tile::ballot(has && step == STEP_LEFTOVER);
  while (left != 0) {
    const unsigned j = __ffs(left) - 1;
    left &= left - 1;
    const typename Ref::key_type kj = tile::shfl(k, j);
    const typename Ref::value_type vj = tile::shfl(v, j);
    const unsigned long long ij = tile::shfl(index, j);
    if (t.insert(kj, vj, old, counts) == STEP_FAILED) t.record_failure(ij);
  }
}

}  // namespace hive
}  // namespace gpuds
