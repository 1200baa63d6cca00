// gpuds/btree/latch.cuh: the per-node write latch and how a tile publishes a node.
//
// Awad (2022), §3.3.3 and §3.4.2: only writers latch, and only the node they modify;
// readers never do. The latch is word 28 of the node (the low word of the metadata pair,
// outside the key bits). It is taken by one lane with an acquire CAS, so the tile's
// re-read after latching sees everything the previous holder wrote, and dropped by a
// release store of the metadata pair, after the tile has stored the node's other pairs,
// so that the next holder sees the whole node.
#pragma once
#include <gpuds/btree/node.cuh>

namespace gpuds {
namespace btree {

__device__ __forceinline__ unsigned* latch_word(unsigned long long* words) {
  return reinterpret_cast<unsigned*>(words + META_PAIR);  // low half, little-endian
}

// One attempt; the result is the same on every lane of the tile.
template <unsigned TILE>
__device__ __forceinline__ bool try_latch(unsigned long long* words) {
  using tile = gpuds::warp::tile<TILE>;
  unsigned got = 0;
  if (tile::rank() == 0) {
    got = mem::cas_acquire(latch_word(words), LATCH_FREE, LATCH_HELD) == LATCH_FREE;
  }
  got = tile::shfl(got, 0);
  __syncwarp(tile::mask());  // the other lanes' reads come after the acquire
  return got != 0;
}

// A bounded spin, allowed only where §3.3.5 allows spinning: latching a parent during
// the second stage of a split, and latching a leaf for a deletion. False after `cap`
// failed attempts; the caller then restarts or reports RETRY_LIMIT.
template <unsigned TILE>
__device__ __forceinline__ bool latch_spin(unsigned long long* words, unsigned cap) {
  for (unsigned i = 0; i < cap; ++i) {
    if (try_latch<TILE>(words)) return true;
    __nanosleep(32 + (i & 255));
  }
  return false;
}

// Drops a latch without changing the node.
template <unsigned TILE>
__device__ __forceinline__ void unlatch(unsigned long long* words) {
  using tile = gpuds::warp::tile<TILE>;
  __syncwarp(tile::mask());
  if (tile::rank() == 0) mem::st_release(latch_word(words), LATCH_FREE);
}

// Stores this lane's pair of a node no reader can reach yet (a fresh node before it is
// linked, or any node during the bulk build).
__device__ __forceinline__ void store_pair(unsigned long long* words, unsigned pair, unsigned key,
                                           unsigned val) {
  mem::st_relaxed(words + pair, pack(key, val));
}

// Writes a latched node's new contents and releases the latch, with ONE store instruction
// of the tile (lanes of rank < 16, one pair each: a single 128-byte line). Lanes give their
// pair (key, val) for pairs 0..13; pair 14 becomes (latch free, meta) and pair 15
// (high, link). A reader loads a node with one instruction too, so, as in the original,
// it sees the node before or after the write, never a mix of the two, as long as the
// hardware serves each coalesced line access as one transaction; writing the node in
// several instructions would let a reader see, e.g., a new count with old pairs. The
// release orders the tile's earlier writes (a fresh sibling) before the node's.
template <unsigned TILE>
__device__ __forceinline__ void publish(unsigned long long* words, unsigned key, unsigned val,
                                        unsigned meta, unsigned high, node_addr link) {
  static_assert(TILE >= 16, "a node is written by one instruction of 16 lanes or more");
  using tile = gpuds::warp::tile<TILE>;
  const unsigned pair = tile::rank() & 15u;
  unsigned a = key, b = val;
  if (pair == META_PAIR) {
    a = LATCH_FREE;
    b = meta;
  } else if (pair == LINK_PAIR) {
    a = high;
    b = link;
  }
  __syncwarp(tile::mask());
  if (tile::rank() < 16) mem::st_release(words + pair, pack(a, b));
}

// Makes a freshly written node (not yet linked anywhere) visible before the stores that
// link it into the tree: every lane that stored fences, then the tile regroups.
template <unsigned TILE>
__device__ __forceinline__ void fence_new_node() {
  using tile = gpuds::warp::tile<TILE>;
  mem::fence_acq_rel();
  __syncwarp(tile::mask());
}

}  // namespace btree
}  // namespace gpuds
