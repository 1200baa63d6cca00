// Exclusive prefix sum and stream compaction, each in a single pass over the input with
// decoupled look-back (gpuds/core/scan.cuh).
//
// A tile is SCAN_BLOCK * SCAN_ITEMS elements. It is loaded with coalesced (striped)
// reads into shared memory, each thread then takes SCAN_ITEMS consecutive elements
// (SCAN_ITEMS odd keeps those shared-memory reads free of bank conflicts), the block
// scans the per-thread sums, one thread chains the tile to the tiles before it, and the
// results leave through shared memory again with coalesced writes.
//
// Defines (set by gpuds_core::primitives):
//   SCAN_T         element type of exclusive_scan (unsigned int, unsigned long long)
//   ELEM_T         element type of compact
//   KERNEL_SUFFIX  stamped into kernel names: exclusive_scan_u32, compact_u64, ...
//   SCAN_BLOCK, SCAN_ITEMS
//
// Launch with at least ceil(n / TILE) blocks: blocks take tile numbers from the counter
// in the order they start, and a block whose number is past the last tile returns at
// once. Such a block takes a number after every real tile's, so no tile ever waits on
// it. `scratch` is laid out by the host (gpuds_core::primitives::scan::Layout) and its
// counter and flags are zeroed before each launch.
#include <gpuds/core/kernel_name.cuh>
#include <gpuds/core/scan.cuh>


using namespace gpuds;

namespace {

constexpr unsigned TILE = SCAN_BLOCK * SCAN_ITEMS;

// Number of tiles that cover n elements.
__device__ __forceinline__ unsigned long long tiles_for(unsigned long long n) {
  return (n + TILE - 1) / TILE;
}

// The look-back scratch of one launch, in 32-bit words: the tile counter and a pad word,
// one flag per tile, a pad word when the tile count is odd (so the sums are 8-byte
// aligned), then the aggregates and the inclusive prefixes, `tiles` values of T each.
// Only the counter and the flags need zeroing: a sum is written before its flag.
template <typename T>
struct scratch {
  unsigned* counter;
  scan::lookback_chain<T> chain;

  __device__ __forceinline__ scratch(unsigned* words, unsigned long long tiles)
      : counter(words), chain{words + 2, nullptr, nullptr} {
    T* sums = reinterpret_cast<T*>(words + 2 + tiles + (tiles & 1));
    chain.aggregates = sums;
    chain.inclusives = sums + tiles;
  }

  // Takes the next tile number; every thread of the block gets it.
  __device__ __forceinline__ unsigned next_tile(unsigned* shared) const {
    if (threadIdx.x == 0) *shared = atomicAdd(counter, 1u);
    __syncthreads();
    return *shared;
  }
};

// Copies the tile at `base` into shared memory (zero past `n`), then hands each thread
// its SCAN_ITEMS consecutive elements.
template <typename T>
__device__ __forceinline__ void load_blocked(const T* in, unsigned long long base,
                                             unsigned long long n, T* staged,
                                             T (&items)[SCAN_ITEMS]) {
#pragma unroll
  for (unsigned i = 0; i < SCAN_ITEMS; ++i) {
    const unsigned j = i * SCAN_BLOCK + threadIdx.x;
    staged[j] = base + j < n ? in[base + j] : T(0);
  }
  __syncthreads();
#pragma unroll
  for (unsigned i = 0; i < SCAN_ITEMS; ++i) items[i] = staged[threadIdx.x * SCAN_ITEMS + i];
}

}  // namespace

#ifdef SCAN_T
// out[i] = in[0] + ... + in[i - 1] (wrapping); *total = the sum of all n inputs.
extern "C" __global__ void __launch_bounds__(SCAN_BLOCK)
    GPUDS_KERNEL(exclusive_scan)(const SCAN_T* __restrict__ in, SCAN_T* __restrict__ out,
                           unsigned long long n, unsigned* scratch_words, SCAN_T* total) {
  __shared__ SCAN_T staged[TILE];
  __shared__ SCAN_T warp_totals[33];
  __shared__ SCAN_T prefix_shared;
  __shared__ unsigned part_shared;
  const unsigned long long tiles = tiles_for(n);
  const scratch<SCAN_T> state(scratch_words, tiles);
  const unsigned part = state.next_tile(&part_shared);
  if (part >= tiles) return;  // a surplus block (uniform across the block)
  const unsigned long long base = static_cast<unsigned long long>(part) * TILE;

  SCAN_T items[SCAN_ITEMS];
  load_blocked(in, base, n, staged, items);
  SCAN_T sum = 0;
#pragma unroll
  for (unsigned i = 0; i < SCAN_ITEMS; ++i) sum += items[i];
  SCAN_T tile_sum;
  SCAN_T running = scan::block_exclusive_sum(sum, warp_totals, tile_sum);
  if (threadIdx.x == 0) prefix_shared = state.chain.exclusive_prefix(part, tile_sum);
  __syncthreads();
  running += prefix_shared;
#pragma unroll
  for (unsigned i = 0; i < SCAN_ITEMS; ++i) {
    staged[threadIdx.x * SCAN_ITEMS + i] = running;
    running += items[i];
  }
  if (part == tiles - 1 && threadIdx.x == SCAN_BLOCK - 1) *total = running;
  __syncthreads();
#pragma unroll
  for (unsigned i = 0; i < SCAN_ITEMS; ++i) {
    const unsigned j = i * SCAN_BLOCK + threadIdx.x;
    if (base + j < n) out[base + j] = staged[j];
  }
}
#endif

#ifdef ELEM_T
// Copies, in order, every in[i] whose flag_words[i] is non-zero to the front of `out`,
// and stores how many there are in *kept. Elements past out_len are counted, not written.
extern "C" __global__ void __launch_bounds__(SCAN_BLOCK)
    GPUDS_KERNEL(compact)(const ELEM_T* __restrict__ in, const unsigned* __restrict__ flag_words,
                    unsigned long long n, ELEM_T* __restrict__ out,
                    unsigned long long out_len, unsigned* scratch_words, unsigned* kept) {
  __shared__ union {
    unsigned flags[TILE];
    ELEM_T elems[TILE];
  } staged;
  __shared__ unsigned warp_totals[33];
  __shared__ unsigned prefix_shared;
  __shared__ unsigned part_shared;
  const unsigned long long tiles = tiles_for(n);
  const scratch<unsigned> state(scratch_words, tiles);
  const unsigned part = state.next_tile(&part_shared);
  if (part >= tiles) return;  // a surplus block (uniform across the block)
  const unsigned long long base = static_cast<unsigned long long>(part) * TILE;

  unsigned keep[SCAN_ITEMS];
  load_blocked(flag_words, base, n, staged.flags, keep);
  unsigned count = 0;
#pragma unroll
  for (unsigned i = 0; i < SCAN_ITEMS; ++i) {
    keep[i] = keep[i] != 0;
    count += keep[i];
  }
  unsigned tile_count;
  const unsigned start = scan::block_exclusive_sum(count, warp_totals, tile_count);
  if (threadIdx.x == 0) prefix_shared = state.chain.exclusive_prefix(part, tile_count);
  ELEM_T elems[SCAN_ITEMS];
  load_blocked(in, base, n, staged.elems, elems);
  __syncthreads();
  // Kept elements of the tile, packed to the front of shared memory in order.
  unsigned to = start;
#pragma unroll
  for (unsigned i = 0; i < SCAN_ITEMS; ++i) {
    if (keep[i]) staged.elems[to++] = elems[i];
  }
  __syncthreads();
  const unsigned prefix = prefix_shared;
  if (part == tiles - 1 && threadIdx.x == 0) *kept = prefix + tile_count;
  for (unsigned j = threadIdx.x; j < tile_count; j += SCAN_BLOCK) {
    const unsigned long long dst = static_cast<unsigned long long>(prefix) + j;
    if (dst < out_len) out[dst] = staged.elems[j];
  }
}
#endif
