// LSD radix sort, onesweep style (Adinets and Merrill, "Onesweep: A Faster Least
// Significant Digit Radix Sort for GPUs", 2022).
//
// One histogram kernel counts the 8-bit digits of every pass in a single read of the
// keys. Then one kernel per pass moves every key (and value) once: each block takes the
// next tile number from an atomic counter, ranks its keys by digit (warp ballots, then
// per-warp counters), publishes its per-digit counts, finds the counts of all earlier
// tiles by decoupled look-back, stages the keys in shared memory in digit order and
// writes them out, so that runs of equal digits leave in coalesced stores. Ranks keep the
// input order of equal digits, so every pass is stable and the whole sort is an LSD sort.
//
// Defines (set by gpuds_core::primitives::sort):
//   KEY_T, VALUE_T     key and value types (VALUE_T only with HAS_VALUES=1)
//   HAS_VALUES         0 for keys only, 1 for (key, value) pairs
//   KERNEL_SUFFIX      stamped into kernel names: radix_onesweep_u32, ..._u32_u64
//   SORT_BLOCK         threads per block of the pass kernel (a multiple of 32, >= 256)
//   SORT_ITEMS         keys per thread of the pass kernel
//   HIST_BLOCK         threads per block of the histogram kernel
//   SORT_WIDE          0: at most 2^30 - 1 keys, 32-bit counts and look-back words (a
//                      2-bit state beside a 30-bit count); 1: any length, 64-bit counts,
//                      look-back words (2-bit state, 62-bit count) and indices. The host
//                      takes the wide module only for inputs past 2^30 - 1 keys, so the
//                      common sort moves no more look-back bytes than before.
//
// Sizes: fewer than 2^32 tiles (tile numbers are 32-bit).
#include <gpuds/core/kernel_name.cuh>
#include <gpuds/core/memory.cuh>
#include <gpuds/core/scan.cuh>
#include <gpuds/core/warp.cuh>


using namespace gpuds;

using Key = KEY_T;
#if HAS_VALUES
using Value = VALUE_T;
#endif
#ifndef SORT_WIDE
#define SORT_WIDE 0
#endif
// Element counts, global indices and look-back words.
#if SORT_WIDE
using count_t = unsigned long long;
#else
using count_t = unsigned;
#endif

namespace {

constexpr unsigned RADIX_BITS = 8;
constexpr unsigned RADIX = 1u << RADIX_BITS;
constexpr unsigned MAX_PASSES = sizeof(Key) * 8 / RADIX_BITS;
constexpr unsigned WARPS = SORT_BLOCK / 32;
constexpr unsigned TILE = SORT_BLOCK * SORT_ITEMS;

// A look-back word: state in the top two bits, a count below.
constexpr unsigned COUNT_BITS = sizeof(count_t) * 8 - 2;
constexpr count_t STATE_AGGREGATE = count_t(1) << COUNT_BITS;  // count of this tile alone
constexpr count_t STATE_PREFIX = count_t(2) << COUNT_BITS;     // global start of this digit after this tile
constexpr count_t COUNT_MASK = STATE_AGGREGATE - 1;

static_assert(SORT_BLOCK % 32 == 0 && SORT_BLOCK >= RADIX, "one thread per digit");
static_assert(WARPS <= 32, "block scans use one warp for the warp totals");

// The digit of `key` that starts at `shift` and is `bits` wide (bits in 1..=8).
__device__ __forceinline__ unsigned digit_of(Key key, unsigned shift, unsigned mask) {
  return static_cast<unsigned>(key >> shift) & mask;
}

// Mask of the digit starting at `shift` when the sort stops at `end_bit`.
__device__ __forceinline__ unsigned digit_mask(unsigned shift, unsigned end_bit) {
  const unsigned bits = min(RADIX_BITS, end_bit - shift);
  return (1u << bits) - 1u;
}

}  // namespace

// Counts the digits of every pass: hist[p * 256 + d] += number of keys whose pass-p
// digit is d. `hist` must be zeroed before; any grid size works.
extern "C" __global__ void __launch_bounds__(HIST_BLOCK)
    GPUDS_KERNEL(radix_histogram)(const Key* __restrict__ keys, count_t n, unsigned begin_bit,
                            unsigned end_bit, count_t* __restrict__ hist) {
  __shared__ unsigned counts[MAX_PASSES * RADIX];
  const unsigned passes = (end_bit - begin_bit + RADIX_BITS - 1) / RADIX_BITS;
  for (unsigned i = threadIdx.x; i < MAX_PASSES * RADIX; i += blockDim.x) counts[i] = 0;
  __syncthreads();
  // A block counts fewer than 2^32 keys in shared memory: the grid is the resident blocks,
  // at least a few hundred of them, and device memory holds far fewer than 2^40 keys.
  const count_t stride = static_cast<count_t>(gridDim.x) * blockDim.x;
  for (count_t i = static_cast<count_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const Key key = keys[i];
#pragma unroll
    for (unsigned p = 0; p < MAX_PASSES; ++p) {
      if (p < passes) {
        const unsigned shift = begin_bit + p * RADIX_BITS;
        atomicAdd(&counts[p * RADIX + digit_of(key, shift, digit_mask(shift, end_bit))], 1u);
      }
    }
  }
  __syncthreads();
  for (unsigned i = threadIdx.x; i < passes * RADIX; i += blockDim.x) {
    const unsigned c = counts[i];
    if (c != 0) atomicAdd(&hist[i], static_cast<count_t>(c));
  }
}

// One stable counting pass on the digit (key >> shift) & mask.
//
// `hist` is this pass's 256 digit counts from radix_histogram, `counter` a zeroed word
// handing out tile numbers, `lookback` a zeroed array of 256 words per tile. Launch with
// at least ceil(n / TILE) blocks of SORT_BLOCK threads; a block whose tile number is past
// the last tile returns at once (it took its number after every real tile, so no tile
// waits on it). Two blocks per SM: SORT_ITEMS is chosen so that this costs no register
// spills.
extern "C" __global__ void __launch_bounds__(SORT_BLOCK, 2) GPUDS_KERNEL(radix_onesweep)(
    const Key* __restrict__ keys_in, Key* __restrict__ keys_out,
#if HAS_VALUES
    const Value* __restrict__ values_in, Value* __restrict__ values_out,
#endif
    count_t n, unsigned shift, unsigned mask, const count_t* __restrict__ hist,
    unsigned* counter, count_t* lookback) {
  // Per-warp digit counters while ranking; afterwards the keys (then values) of the tile
  // in digit order.
  __shared__ union {
    unsigned warp_counts[WARPS][RADIX];
    Key keys[TILE];
#if HAS_VALUES
    Value values[TILE];
#endif
  } tile;
  __shared__ unsigned digit_start[RADIX];  // first position of each digit in the tile
  __shared__ count_t digit_shift[RADIX];  // global index = tile position + digit_shift (mod 2^bits)
#if HAS_VALUES
  __shared__ unsigned char digit_at[TILE];  // digit of the key at each tile position
#endif
  __shared__ unsigned warp_totals[33];
#if SORT_WIDE
  __shared__ count_t count_totals[33];  // the histogram's scan, in 64 bits
#else
  unsigned* const count_totals = warp_totals;
#endif
  __shared__ unsigned part_shared;

  const unsigned tid = threadIdx.x;
  const unsigned lane = warp::lane_id();
  const unsigned warp_index = tid / 32;

  if (tid == 0) part_shared = atomicAdd(counter, 1u);
  for (unsigned i = tid; i < WARPS * RADIX; i += SORT_BLOCK) (&tile.warp_counts[0][0])[i] = 0;
  __syncthreads();
  const unsigned part = part_shared;
  if (part >= (n + TILE - 1) / TILE) return;  // a surplus block (uniform across the block)
  const count_t tile_base = static_cast<count_t>(part) * TILE;
  const unsigned valid = static_cast<unsigned>(min(static_cast<count_t>(TILE), n - tile_base));

  // Each warp owns SORT_ITEMS * 32 consecutive keys, item i of lane l being key
  // i * 32 + l: loads are coalesced and (warp, item, lane) is the input order. Missing
  // keys of the last tile are all ones: they rank after every real key of the top digit,
  // which is the last digit, so they land in tile positions >= valid and are never
  // written.
  const count_t warp_base = tile_base + warp_index * SORT_ITEMS * 32;
  Key keys[SORT_ITEMS];
#pragma unroll
  for (unsigned i = 0; i < SORT_ITEMS; ++i) {
    const count_t idx = warp_base + i * 32 + lane;
    keys[i] = idx < n ? keys_in[idx] : ~Key(0);
  }

  // Rank within the warp: the lanes holding the same digit find each other with one
  // ballot per digit bit; the highest of them bumps the warp's counter for the digit.
  unsigned rank[SORT_ITEMS];
  unsigned* counts = tile.warp_counts[warp_index];
  const unsigned lanes_below = (1u << lane) - 1u;
#pragma unroll
  for (unsigned i = 0; i < SORT_ITEMS; ++i) {
    const unsigned d = digit_of(keys[i], shift, mask);
    unsigned peers = warp::FULL_MASK;
#pragma unroll
    for (unsigned b = 0; b < RADIX_BITS; ++b) {
      const bool bit = (d >> b) & 1u;
      const unsigned vote = __ballot_sync(warp::FULL_MASK, bit);
      peers &= bit ? vote : ~vote;
    }
    const int leader = 31 - __clz(peers);
    unsigned before = 0;
    if (static_cast<int>(lane) == leader) {
      before = counts[d];
      counts[d] = before + __popc(peers);
    }
    before = __shfl_sync(warp::FULL_MASK, before, leader);
    __syncwarp();
    rank[i] = before + __popc(peers & lanes_below);
  }
  __syncthreads();

  // Per digit: turn the warp counters into warp starts and total the tile.
  unsigned count = 0;
  if (tid < RADIX) {
#pragma unroll
    for (unsigned w = 0; w < WARPS; ++w) {
      const unsigned c = tile.warp_counts[w][tid];
      tile.warp_counts[w][tid] = count;
      count += c;
    }
    // Publish early: later tiles may be waiting for this count.
    if (part != 0) {
      mem::st_relaxed(&lookback[static_cast<count_t>(part) * RADIX + tid], STATE_AGGREGATE | count);
    }
  }
  count_t global_start = 0;
  if (part == 0) {
    // The first tile turns the histogram into global digit starts and publishes them
    // (plus its own counts) as prefixes, so no tile looks back past it.
    count_t ignored;
    global_start = scan::block_exclusive_sum(tid < RADIX ? hist[tid] : count_t(0), count_totals, ignored);
    if (tid < RADIX) mem::st_relaxed(&lookback[tid], STATE_PREFIX | (global_start + count));
  }
  unsigned tile_total;
  const unsigned start = scan::block_exclusive_sum(tid < RADIX ? count : 0u, warp_totals, tile_total);
  if (tid < RADIX) digit_start[tid] = start;
  __syncthreads();

  // Tile position of every key: digit start + warp start + rank in warp.
#pragma unroll
  for (unsigned i = 0; i < SORT_ITEMS; ++i) {
    const unsigned d = digit_of(keys[i], shift, mask);
    rank[i] += digit_start[d] + tile.warp_counts[warp_index][d];
  }
  __syncthreads();
#pragma unroll
  for (unsigned i = 0; i < SORT_ITEMS; ++i) tile.keys[rank[i]] = keys[i];

  // Look back for the global start of each digit in this tile.
  if (tid < RADIX) {
    if (part != 0) {
      count_t sum = 0;
      unsigned j = part - 1;
      for (;;) {
        // Cannot hang: tile j took its number before this tile did, so its block is
        // resident and running, and it waits only on tiles before it (tile 0 on none):
        // its word turns non-zero in bounded time. The one uncapped wait in gpuds; why
        // it has no retry cap is at the top of gpuds/core/scan.cuh.
        const count_t word = mem::ld_relaxed(&lookback[static_cast<count_t>(j) * RADIX + tid]);
        if (word == 0) continue;
        sum += word & COUNT_MASK;
        if (word & STATE_PREFIX) break;
        --j;  // tile 0 always publishes a prefix, so j never passes below 0
      }
      global_start = sum;
      mem::st_relaxed(&lookback[static_cast<count_t>(part) * RADIX + tid], STATE_PREFIX | (sum + count));
    }
    digit_shift[tid] = global_start - start;
  }
  __syncthreads();

  // Write out in tile order: consecutive threads, consecutive positions of one digit.
#pragma unroll
  for (unsigned i = 0; i < SORT_ITEMS; ++i) {
    const unsigned p = i * SORT_BLOCK + tid;
    if (p < valid) {
      const Key key = tile.keys[p];
      const unsigned d = digit_of(key, shift, mask);
      keys_out[p + digit_shift[d]] = key;
#if HAS_VALUES
      digit_at[p] = static_cast<unsigned char>(d);
#endif
    }
  }

#if HAS_VALUES
  Value values[SORT_ITEMS];
#pragma unroll
  for (unsigned i = 0; i < SORT_ITEMS; ++i) {
    const count_t idx = warp_base + i * 32 + lane;
    if (idx < n) values[i] = values_in[idx];
  }
  __syncthreads();
#pragma unroll
  for (unsigned i = 0; i < SORT_ITEMS; ++i) {
    if (warp_base + i * 32 + lane < n) tile.values[rank[i]] = values[i];
  }
  __syncthreads();
#pragma unroll
  for (unsigned i = 0; i < SORT_ITEMS; ++i) {
    const unsigned p = i * SORT_BLOCK + tid;
    if (p < valid) values_out[p + digit_shift[digit_at[p]]] = tile.values[p];
  }
#endif
}
