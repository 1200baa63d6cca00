// gpuds/core/warp.cuh: warp and tile helpers, and the warp-cooperative work-sharing loop.
//
// The slab hash paper (§IV-B) and the B-Tree chapter of the dissertation (§3.3) process
// one lane's request at a time with the whole warp: every lane with work sets a bit in a
// ballot, the warp picks the first set bit, broadcasts that lane's request with shuffles,
// works on it together and clears the bit once it is done. `work_share` is that loop,
// written once; operations supply the body.
#pragma once

namespace gpuds {
namespace warp {

constexpr unsigned FULL_MASK = 0xffffffffu;
constexpr unsigned WARP_SIZE = 32;

__device__ __forceinline__ unsigned lane_id() {
  unsigned lane;
  asm("mov.u32 %0, %%laneid;" : "=r"(lane));
  return lane;
}

// Global index of the calling thread's warp in a 1-D grid.
__device__ __forceinline__ unsigned long long global_warp_id() {
  return (static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x) / WARP_SIZE;
}

// Number of warps in a 1-D grid.
__device__ __forceinline__ unsigned long long warp_count() {
  return (static_cast<unsigned long long>(gridDim.x) * blockDim.x) / WARP_SIZE;
}

// The sum of x over the warp, in every lane (all lanes calling): one reduction
// instruction from compute capability 8.0, five shuffles before it.
__device__ __forceinline__ unsigned sum(unsigned x) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  return __reduce_add_sync(FULL_MASK, x);
#else
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) x += __shfl_xor_sync(FULL_MASK, x, d);
  return x;
#endif
}

// The sum of a 64-bit x over the warp (wrapping), in every lane (all lanes calling).
__device__ __forceinline__ unsigned long long sum(unsigned long long x) {
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) x += __shfl_xor_sync(FULL_MASK, x, d);
  return x;
}

// The largest x over the warp, in every lane (all lanes calling).
__device__ __forceinline__ unsigned long long maximum(unsigned long long x) {
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) {
    const unsigned long long y = __shfl_xor_sync(FULL_MASK, x, d);
    x = y > x ? y : x;
  }
  return x;
}

// Broadcasts any trivially copyable value from lane `src` to the warp, 32 bits at a time.
template <typename T>
__device__ __forceinline__ T broadcast(const T& value, int src, unsigned mask = FULL_MASK) {
  static_assert(sizeof(T) % 4 == 0, "broadcast needs a size that is a multiple of 4 bytes");
  union Words {
    T value;
    unsigned words[sizeof(T) / 4];
  };
  Words in;
  in.value = value;
  Words out;
#pragma unroll
  for (int i = 0; i < static_cast<int>(sizeof(T) / 4); ++i) {
    out.words[i] = __shfl_sync(mask, in.words[i], src);
  }
  return out.value;
}

// The work-sharing loop. Every lane of the warp must call it (all lanes active).
// `active` says whether this lane has a request. `step(src)` is called by all lanes with
// the same `src` and must return, uniformly across the warp, true once src's request is
// finished. A step that cannot finish in bounded time must report through the status
// word and return true: the loop itself never spins on its own.
template <typename Step>
__device__ __forceinline__ void work_share(bool active, Step&& step) {
  unsigned queue = __ballot_sync(FULL_MASK, active);
  while (queue != 0) {
    const int src = __ffs(queue) - 1;
    if (step(src)) {
      queue &= queue - 1;  // src is the lowest set bit
    }
  }
}

// Tiles: groups of `TILE` consecutive lanes (TILE a power of two, 1 to 32) that work on
// one request together, as the cooperative-group probing of the hash tables does.
template <unsigned TILE>
struct tile {
  static_assert(TILE >= 1 && TILE <= 32 && (TILE & (TILE - 1)) == 0, "tile of 1,2,4,...,32");
  static constexpr unsigned size = TILE;

  // Rank of the calling lane inside its tile.
  __device__ __forceinline__ static unsigned rank() { return lane_id() & (TILE - 1); }

  // Index of the calling lane's tile inside its warp.
  __device__ __forceinline__ static unsigned index_in_warp() { return lane_id() / TILE; }

  // Mask of the lanes of the calling lane's tile.
  __device__ __forceinline__ static unsigned mask() {
    if (TILE == 32) return FULL_MASK;
    const unsigned base = (lane_id() / TILE) * TILE;
    return ((1u << TILE) - 1u) << base;
  }

  // Ballot restricted to the tile, as bits 0..TILE-1.
  __device__ __forceinline__ static unsigned ballot(bool predicate) {
    const unsigned all = __ballot_sync(mask(), predicate);
    return TILE == 32 ? all : (all >> ((lane_id() / TILE) * TILE)) & ((1u << TILE) - 1u);
  }

  // Value of `v` at tile rank `src`.
  template <typename T>
  __device__ __forceinline__ static T shfl(T v, unsigned src) {
    return __shfl_sync(mask(), v, static_cast<int>(src), static_cast<int>(TILE));
  }

  // True when any lane of the tile has `predicate`.
  __device__ __forceinline__ static bool any(bool predicate) { return ballot(predicate) != 0; }
};

}  // namespace warp
}  // namespace gpuds
