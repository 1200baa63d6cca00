// gpuds/core/scan.cuh: prefix sums inside a warp and a block, and the decoupled
// look-back that chains tiles of a single-pass scan.
//
// Decoupled look-back (Merrill and Garland, "Single-pass Parallel Prefix Scan with
// Decoupled Look-back", 2016): tile `p` publishes its own sum (an *aggregate*) as soon as
// it has it, then walks back over tiles p-1, p-2, ... adding aggregates until it meets a
// tile that has published its *inclusive prefix*, and publishes its own. Tiles take their
// numbers from an atomic counter in the order they start, so every tile a tile waits on
// has already started and depends only on tiles before it: the wait always ends.
//
// The look-back wait is the one loop in gpuds without a retry cap (DESIGN.md asks for
// one on every retry loop). It is not a retry: it waits for a tile that is resident and
// running and that publishes after a bounded amount of its own work, so a cap could only
// fire on a broken launch (a counter or flags not zeroed), and checking one would cost
// the hottest loop of every scan and sort. Kernels keep the precondition instead: the
// host zeroes the counter and the flags in the same stream right before each launch, and
// a block whose number is past the last tile returns before it publishes or waits (it
// took its number after every real tile, so nobody waits on it).
#pragma once
#include <gpuds/core/memory.cuh>
#include <gpuds/core/warp.cuh>

namespace gpuds {
namespace scan {

// Inclusive prefix sum over the 32 lanes of a warp (all lanes must call it).
template <typename T>
__device__ __forceinline__ T warp_inclusive_sum(T x) {
  const unsigned lane = warp::lane_id();
#pragma unroll
  for (unsigned d = 1; d < warp::WARP_SIZE; d <<= 1) {
    const T y = __shfl_up_sync(warp::FULL_MASK, x, d);
    if (lane >= d) x += y;
  }
  return x;
}

// Exclusive prefix sum over the threads of a 1-D block, in thread order. Every thread of
// the block must call it. `warp_totals` is shared memory for 33 values of T; `total`
// receives the sum over the block. Starts and ends with a barrier, so the caller may
// reuse `warp_totals` and anything it wrote before the call is visible to the block.
template <typename T>
__device__ __forceinline__ T block_exclusive_sum(T x, T* warp_totals, T& total) {
  const unsigned lane = warp::lane_id();
  const unsigned warp_index = threadIdx.x / warp::WARP_SIZE;
  const unsigned warps = blockDim.x / warp::WARP_SIZE;
  const T inclusive = warp_inclusive_sum(x);
  __syncthreads();
  if (lane == warp::WARP_SIZE - 1) warp_totals[warp_index] = inclusive;
  __syncthreads();
  if (warp_index == 0) {
    const T t = lane < warps ? warp_totals[lane] : T(0);
    const T before = warp_inclusive_sum(t);
    if (lane < warps) warp_totals[lane] = before - t;
    if (lane == warp::WARP_SIZE - 1) warp_totals[warp::WARP_SIZE] = before;
  }
  __syncthreads();
  const T result = warp_totals[warp_index] + inclusive - x;
  total = warp_totals[warp::WARP_SIZE];
  __syncthreads();
  return result;
}

// Tile states of a look-back chain: `flags[p]` is 0 while tile p has published nothing,
// AGGREGATE once `aggregates[p]` holds its own sum, INCLUSIVE once `inclusives[p]` holds
// the sum of tiles 0..=p. Values are written before their flag (release) and read after
// it (acquire). All three arrays start zeroed, one entry per tile.
constexpr unsigned AGGREGATE = 1;
constexpr unsigned INCLUSIVE = 2;

template <typename T>
struct lookback_chain {
  unsigned* flags;
  T* aggregates;
  T* inclusives;

  // Called by one thread of tile `part` with the tile's sum; returns the sum of all
  // earlier tiles. Tile numbers must come from an atomic counter (see above).
  __device__ T exclusive_prefix(unsigned part, T aggregate) const {
    if (part == 0) {
      mem::st_relaxed(&inclusives[0], aggregate);
      mem::st_release(&flags[0], INCLUSIVE);
      return T(0);
    }
    mem::st_relaxed(&aggregates[part], aggregate);
    mem::st_release(&flags[part], AGGREGATE);
    T sum = T(0);
    unsigned j = part - 1;
    for (;;) {
      // Cannot hang: tile j took its number before this tile did, so its block is
      // resident and running, and it waits only on tiles before it (tile 0 waits on
      // none): its flag turns non-zero in bounded time. No cap, see the top of the file.
      const unsigned flag = mem::ld_acquire(&flags[j]);
      if (flag == INCLUSIVE) {
        sum += mem::ld_relaxed(&inclusives[j]);
        break;
      }
      if (flag == AGGREGATE) {
        sum += mem::ld_relaxed(&aggregates[j]);
        --j;  // tile 0 always publishes INCLUSIVE, so j never passes below 0
      }
    }
    mem::st_relaxed(&inclusives[part], sum + aggregate);
    mem::st_release(&flags[part], INCLUSIVE);
    return sum;
  }
};

}  // namespace scan
}  // namespace gpuds
