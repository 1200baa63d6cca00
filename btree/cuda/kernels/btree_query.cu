// Phased queries and deletions of GpuBTreeMap, one tile per request (TILE = QUERY_TILE,
// 8, 16 or 32; deletions use at least 16 lanes, since a node is written by one instruction
// of 16 lanes). Queries load nodes through the read-only cache: the host runs them only while
// no kernel modifies the tree. Deletions latch leaves and load coherently.
// Results: one word per request, plus one bit per request (32 per warp, written by lane 0).
// Compiled once per key type KEY_T, value type VALUE_T and tile; KERNEL_SUFFIX names the
// instantiation (`btree_get_u64_u32_t8`).
#include <gpuds/btree/tree_ref.cuh>
#include <gpuds/btree/detail/work_share.cuh>
#include <gpuds/core/kernel_name.cuh>

using namespace gpuds::btree;
using K = KEY_T;
using V = VALUE_T;
using tree = tree_ref<K, V>;
using gpuds::btree::detail::for_each_chunk;
using gpuds::btree::detail::tile_work_share;
using tile = gpuds::warp::tile<QUERY_TILE>;
constexpr unsigned TILE = QUERY_TILE;
// The query kernels are bound by instruction issue (H100, 2^24 keys, ranges of 8 with
// 8-lane tiles: 77 % of scheduler cycles issue), so each body is compiled for both pool
// layouts (with_layout, tree_ref.cuh) and the light one computes node pointers without the
// branch on the layout. Range queries with 8- and 16-lane tiles run every tile of a warp in
// step (detail::range_lockstep: whole-warp ballots and shuffles, no convergence checks;
// H100 ranges of 8 with 8 lanes 2.88 -> 5.10 G queries/s); 32-lane tiles, or
// BTREE_LOCKSTEP=0, take the per-tile walk (detail::range).
#ifndef BTREE_LOCKSTEP
#define BTREE_LOCKSTEP 1
#endif
constexpr bool LOCKSTEP = BTREE_LOCKSTEP != 0 && TILE < 32;
using gpuds::btree::detail::warp_work_share;
__device__ __forceinline__ unsigned tile_base() { return gpuds::warp::lane_id() & ~(TILE - 1); }
template <class T>
__device__ __forceinline__ T warp_shfl(T v, unsigned from) {
  return __shfl_sync(gpuds::warp::FULL_MASK, v, static_cast<int>(from));
}
// Full occupancy (2048 threads per SM: at most 32 registers); BTREE_BLOCK is the host's
// block size. (Six blocks of 256, at most 40 registers, measured for the lockstep ranges:
// not faster but for ranges of 32 with 8 lanes, see the guide.)
#ifndef QUERY_MIN_BLOCKS
#define QUERY_MIN_BLOCKS (2048 / BTREE_BLOCK)
#endif
#define QUERY_BOUNDS __launch_bounds__(BTREE_BLOCK, QUERY_MIN_BLOCKS)

extern "C" __global__ void QUERY_BOUNDS GPUDS_KERNEL(btree_get)(tree t, const K* keys, unsigned n, V* values,
                                                               unsigned* found_bits) {
  with_layout(t, [&](const auto& tr) {
    for_each_chunk(n, [&](unsigned chunk, unsigned i, bool active) {
      const K mine = active ? keys[i] : K(0);
      V value = 0;
      bool found = false;
      tile_work_share<TILE>(active, [&](unsigned src) {
        V v = 0;
        const bool hit = detail::lookup<TILE, cached>(tr, tile::shfl(mine, src), v);
        if (tile::rank() == src) {
          found = hit;
          value = v;
        }
      });
      if (active) values[i] = value;
      const unsigned bits = __ballot_sync(gpuds::warp::FULL_MASK, found);
      if (gpuds::warp::lane_id() == 0) found_bits[chunk] = bits;
    });
  });
}

extern "C" __global__ void QUERY_BOUNDS GPUDS_KERNEL(btree_successor)(tree t, const K* keys, unsigned n, K* out_keys,
                                                                     V* out_values, unsigned* found_bits) {
  with_layout(t, [&](const auto& tr) {
    for_each_chunk(n, [&](unsigned chunk, unsigned i, bool active) {
      const K mine = active ? keys[i] : K(0);
      K key = 0;
      V value = 0;
      bool found = false;
      tile_work_share<TILE>(active, [&](unsigned src) {
        K k = 0;
        V v = 0;
        const bool hit = detail::successor<TILE, cached>(tr, tile::shfl(mine, src), k, v);
        if (tile::rank() == src) {
          found = hit;
          key = k;
          value = v;
        }
      });
      if (active) {
        out_keys[i] = key;
        out_values[i] = value;
      }
      const unsigned bits = __ballot_sync(gpuds::warp::FULL_MASK, found);
      if (gpuds::warp::lane_id() == 0) found_bits[chunk] = bits;
    });
  });
}

// Count pass of a range query: counts[i] = |{k : lo[i] <= k <= hi[i]}|.
extern "C" __global__ void QUERY_BOUNDS GPUDS_KERNEL(btree_range_count)(tree t, const K* lo, const K* hi, unsigned n,
                                                                       unsigned* counts) {
  with_layout(t, [&](const auto& tr) {
    for_each_chunk(n, [&](unsigned, unsigned i, bool active) {
      const K my_lo = active ? lo[i] : K(0), my_hi = active ? hi[i] : K(0);
      unsigned count = 0;
      if constexpr (LOCKSTEP) {
        warp_work_share<TILE>(active, [&](bool live, unsigned src) {
          const unsigned from = tile_base() + src;
          const unsigned c = detail::range_lockstep<TILE, false>(tr, live, warp_shfl(my_lo, from), warp_shfl(my_hi, from),
                                                                 nullptr, nullptr, 0, 0);
          if (live && tile::rank() == src) count = c;
        });
      } else {
        tile_work_share<TILE>(active, [&](unsigned src) {
          const unsigned c = detail::range<TILE, cached, false>(tr, tile::shfl(my_lo, src), tile::shfl(my_hi, src),
                                                            nullptr, nullptr, 0);
          if (tile::rank() == src) count = c;
        });
      }
      if (active) counts[i] = count;
    });
  });
}

// Collect pass: query i writes its pairs from offsets[i], at most counts[i] of them (the
// count pass's answer, so a changed tree cannot overrun the output).
extern "C" __global__ void QUERY_BOUNDS GPUDS_KERNEL(btree_range_collect)(tree t, const K* lo, const K* hi, unsigned n,
                                                                         const unsigned* offsets, const unsigned* counts,
                                                                         K* out_keys, V* out_values, unsigned out_len) {
  with_layout(t, [&](const auto& tr) {
    for_each_chunk(n, [&](unsigned, unsigned i, bool active) {
      const K my_lo = active ? lo[i] : K(0), my_hi = active ? hi[i] : K(0);
      const unsigned my_off = active ? offsets[i] : 0u;
      // The caller's offsets and counts are input: a query never writes past the outputs
      // (out_len pairs); one whose offset and count pass them is cut and reported.
      const unsigned room = my_off < out_len ? out_len - my_off : 0u;
      const unsigned asked = active ? counts[i] : 0u;
      const unsigned my_cap = asked < room ? asked : room;
      if (asked > room) gpuds::status::report(t.status, gpuds::status::OUT_OF_BOUNDS);
      if constexpr (LOCKSTEP) {
        warp_work_share<TILE>(active, [&](bool live, unsigned src) {
          const unsigned from = tile_base() + src;
          const unsigned off = warp_shfl(my_off, from);
          detail::range_lockstep<TILE, true>(tr, live, warp_shfl(my_lo, from), warp_shfl(my_hi, from), out_keys,
                                             out_values, off, warp_shfl(my_cap, from));
        });
      } else {
        tile_work_share<TILE>(active, [&](unsigned src) {
          const unsigned off = tile::shfl(my_off, src);
          detail::range<TILE, cached, true>(tr, tile::shfl(my_lo, src), tile::shfl(my_hi, src), out_keys + off,
                                        out_values + off, tile::shfl(my_cap, src));
        });
      }
    });
  });
}

// One-pass collect with a capacity per query (for callers that know a bound, e.g. ranges
// of a fixed size): query i writes its first pairs, at most `cap`, from i * cap, and the
// number of pairs in its range to counts[i] (more than cap: only the first cap written).
extern "C" __global__ void QUERY_BOUNDS GPUDS_KERNEL(btree_range_collect_capped)(
    tree t, const K* lo, const K* hi, unsigned n, unsigned cap, K* out_keys, V* out_values, unsigned* counts) {
  with_layout(t, [&](const auto& tr) {
    for_each_chunk(n, [&](unsigned chunk, unsigned i, bool active) {
      const K my_lo = active ? lo[i] : K(0), my_hi = active ? hi[i] : K(0);
      const unsigned tile_base = gpuds::warp::lane_id() - tile::rank();
      unsigned count = 0;
      if constexpr (LOCKSTEP) {
        warp_work_share<TILE>(active, [&](bool live, unsigned src) {
          const unsigned from = tile_base + src;
          // The host checked n * cap <= 2^32 - 1.
          const unsigned off = (static_cast<unsigned>(chunk) * 32u + from) * cap;
          const unsigned c = detail::range_lockstep<TILE, true>(tr, live, warp_shfl(my_lo, from), warp_shfl(my_hi, from),
                                                                out_keys, out_values, off, cap);
          if (live && tile::rank() == src) count = c;
        });
      } else {
        tile_work_share<TILE>(active, [&](unsigned src) {
          // The host checked n * cap <= 2^32 - 1.
          const unsigned off = (static_cast<unsigned>(chunk) * 32u + tile_base + src) * cap;
          const unsigned c = detail::range<TILE, cached, true>(tr, tile::shfl(my_lo, src), tile::shfl(my_hi, src),
                                                           out_keys + off, out_values + off, cap);
          if (tile::rank() == src) count = c;
        });
      }
      if (active) counts[i] = count;
    });
  });
}

// Deletion (§3.4.4). Removed bit, failed bit (max_steps passed: nothing changed) and old
// value per request; size updated once per warp. Only leaves change in this kernel, so
// internal nodes are read through the cache.
extern "C" __global__ void QUERY_BOUNDS GPUDS_KERNEL(btree_remove)(tree t, const K* keys, unsigned n, V* old_values,
                                                                  unsigned* found_bits, unsigned* failed_bits) {
  // One lane per slot at least (a node is written by one instruction).
  constexpr unsigned RTILE = TILE < layout<K, V>::SLOTS ? layout<K, V>::SLOTS : TILE;
  using rtile = gpuds::warp::tile<RTILE>;
  unsigned long long removed = 0;
  for_each_chunk(n, [&](unsigned chunk, unsigned i, bool active) {
    const K mine = active ? keys[i] : K(0);
    V value = 0;
    bool done = false, failed = false;
    tile_work_share<RTILE>(active, [&](unsigned src) {
      V v = 0;
      const remove_outcome r = detail::remove<RTILE, cached>(t, rtile::shfl(mine, src), v);
      if (rtile::rank() == src) {
        done = r == REMOVE_DONE;
        failed = r == REMOVE_FAILED;
        value = v;
      }
    });
    if (active) old_values[i] = value;
    const unsigned bits = __ballot_sync(gpuds::warp::FULL_MASK, done);
    const unsigned failures = __ballot_sync(gpuds::warp::FULL_MASK, failed);
    removed += __popc(bits);
    if (gpuds::warp::lane_id() == 0) {
      found_bits[chunk] = bits;
      failed_bits[chunk] = failures;
    }
  });
  if (gpuds::warp::lane_id() == 0 && removed != 0) {
    gpuds::mem::fetch_add_relaxed(t.size, 0ull - removed);
  }
}
