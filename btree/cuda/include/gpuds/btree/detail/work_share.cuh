// gpuds/btree/detail/work_share.cuh: the B-Tree's kernels' loop over requests.
//
// Awad (2022), §3.3.6 and Algorithm 3.1: requests come one per thread, work is done per
// tile. A warp takes 32 consecutive requests (lane i holds request 32 * chunk + i); each
// of its tiles serialises its own lanes' requests: ballot of the lanes with work, find
// first set, shuffle that lane's request to the tile, do it together. With TILE 32 this is
// gpuds::warp::work_share; with TILE 16 a warp works on two requests at a time.
#pragma once
#include <gpuds/core/warp.cuh>

namespace gpuds {
namespace btree {
namespace detail {

// Calls step(src) for every lane src of the caller's tile whose `active` is set, lowest
// first; every lane of the tile calls it with the same src. Steps are bounded operations.
template <unsigned TILE, class Step>
__device__ __forceinline__ void tile_work_share(bool active, Step&& step) {
  unsigned queue = gpuds::warp::tile<TILE>::ballot(active);
  while (queue != 0) {
    step(static_cast<unsigned>(__ffs(queue) - 1));
    queue &= queue - 1;
  }
}

// Grid-stride loop over chunks of 32 requests, one chunk per warp at a time (a warp-
// uniform loop, so whole-warp operations may run inside): body(chunk, index, active).
template <class Body>
__device__ __forceinline__ void for_each_chunk(unsigned n, Body&& body) {
  const unsigned long long warps = gpuds::warp::warp_count();
  for (unsigned long long chunk = gpuds::warp::global_warp_id(); chunk * 32 < n; chunk += warps) {
    const unsigned long long i = chunk * 32 + gpuds::warp::lane_id();
    body(chunk, i, i < n);
  }
}

}  // namespace detail
}  // namespace btree
}  // namespace gpuds
