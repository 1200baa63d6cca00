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

// The same loop with a trip count that is uniform across the warp, for steps that use
// whole-warp intrinsics (the lockstep range query below): every lane of the warp calls
// step(live, src) as many times as the busiest tile of its warp has requests; `live` is
// false (and src 0) on a tile that has none left.
template <unsigned TILE, class Step>
__device__ __forceinline__ void warp_work_share(bool active, Step&& step) {
  const unsigned all = __ballot_sync(gpuds::warp::FULL_MASK, active);
  unsigned queue = TILE == 32 ? all : (all >> (gpuds::warp::lane_id() & ~(TILE - 1))) & ((1u << TILE) - 1u);
  while (__any_sync(gpuds::warp::FULL_MASK, queue != 0)) {
    const bool live = queue != 0;
    step(live, live ? static_cast<unsigned>(__ffs(queue) - 1) : 0u);
    queue &= queue - 1;
  }
}

// Grid-stride loop over chunks of 32 requests, one chunk per warp at a time (a warp-
// uniform loop, so whole-warp operations may run inside): body(chunk, index, active).
// In 32 bits: chunks < ceil(n / 32) <= 2^27 and fewer than 2^27 warps, so neither the
// chunk nor the index (< 2^32) overflows.
template <class Body>
__device__ __forceinline__ void for_each_chunk(unsigned n, Body&& body) {
  const unsigned warps = static_cast<unsigned>(gpuds::warp::warp_count());
  const unsigned chunks = n / 32 + (n % 32 != 0);
  for (unsigned chunk = static_cast<unsigned>(gpuds::warp::global_warp_id()); chunk < chunks; chunk += warps) {
    const unsigned i = chunk * 32 + gpuds::warp::lane_id();
    body(chunk, i, i < n);
  }
}

}  // namespace detail
}  // namespace btree
}  // namespace gpuds
