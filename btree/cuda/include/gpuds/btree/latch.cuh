// gpuds/btree/latch.cuh: the per-node write latch and how a tile publishes a node.
//
// Awad (2022), §3.3.3 and §3.4.2: only writers latch, and only the node they modify;
// readers never do. The latch is the low 32 bits of the metadata slot's key part (outside
// the key slots). It is taken by one lane with an acquire CAS, so the tile's re-read after
// latching sees everything the previous holder wrote, and dropped by a release store of
// the metadata slot, after the tile has stored the node's other slots, so that the next
// holder sees the whole node.
#pragma once
#include <gpuds/btree/node.cuh>

namespace gpuds {
namespace btree {

template <class Slot>
__device__ __forceinline__ unsigned* latch_word(Slot* words) {
  return reinterpret_cast<unsigned*>(words + node_shape<Slot>::META_PAIR);  // low half, little-endian
}

// One attempt; the result is the same on every lane of the tile.
template <unsigned TILE, class Slot>
__device__ __forceinline__ bool try_latch(Slot* words) {
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
template <unsigned TILE, class Slot>
__device__ __forceinline__ bool latch_spin(Slot* words, unsigned cap) {
  for (unsigned i = 0; i < cap; ++i) {
    if (try_latch<TILE>(words)) return true;
    __nanosleep(32 + (i & 255));
  }
  return false;
}

// Drops a latch without changing the node.
template <unsigned TILE, class Slot>
__device__ __forceinline__ void unlatch(Slot* words) {
  using tile = gpuds::warp::tile<TILE>;
  __syncwarp(tile::mask());
  if (tile::rank() == 0) mem::st_release(latch_word(words), LATCH_FREE);
}

// Stores this lane's pair of a node no reader can reach yet (a fresh node before it is
// linked, or any node during the bulk build).
template <class K, class V>
__device__ __forceinline__ void store_pair(typename layout<K, V>::slot* words, unsigned pair, K key, V val) {
  layout<K, V>::store_relaxed(words + pair, layout<K, V>::make(key, val));
}

// Writes a latched node's new contents and releases the latch. A one-line node is
// written with ONE store instruction of the tile (lanes of rank < SLOTS, one slot each).
// Lanes give their pair (key, val) for the pair slots; the metadata slot becomes (latch
// free, meta) and the link slot (high, link). A reader loads a node with one instruction
// too, so, as in the original, it sees the node before or after the write, never a mix of
// the two, as long as the hardware serves each coalesced access of one line as one
// transaction; writing the node in several instructions would let a reader see, e.g., a
// new count with old pairs. A 256-byte node spans two lines, which one instruction does
// NOT write or read together (H200: readers saw a new count with stale slots and followed
// garbage child addresses); it is written under its sequence number instead (SEQ_ONE,
// node.cuh), which coherent readers check. The release orders the tile's earlier writes
// (a fresh sibling) before the node's. `meta`'s sequence bits are ignored.
template <unsigned TILE, class K, class V>
__device__ __forceinline__ void publish_slot(typename layout<K, V>::slot* words, typename layout<K, V>::slot mine,
                                             unsigned meta, K high, node_addr link);

template <unsigned TILE, class K, class V>
__device__ __forceinline__ void publish(typename layout<K, V>::slot* words, K key, V val, unsigned meta, K high,
                                        node_addr link) {
  publish_slot<TILE, K, V>(words, layout<K, V>::make(key, val), meta, high, link);
}

// `publish` with this lane's slot given whole (a structure that keeps something other than
// a (key, value) pair in a slot writes it this way); the metadata and link slots are made
// from `meta`, `high` and `link` as in `publish`.
template <unsigned TILE, class K, class V>
__device__ __forceinline__ void publish_slot(typename layout<K, V>::slot* words, typename layout<K, V>::slot mine,
                                             unsigned meta, K high, node_addr link) {
  using L = layout<K, V>;
  static_assert(TILE >= L::SLOTS, "a node is written by one instruction of one lane per slot");
  using tile = gpuds::warp::tile<TILE>;
  const unsigned pair = tile::rank() & (L::SLOTS - 1);
  if (pair == L::META_PAIR) {
    mine = L::make(static_cast<K>(LATCH_FREE), static_cast<V>(meta));
  } else if (pair == L::LINK_PAIR) {
    mine = L::make(high, static_cast<V>(link));
  }
  __syncwarp(tile::mask());
  if constexpr (!L::TWO_LINES) {
    if (tile::rank() < L::SLOTS) L::store_release(words + pair, mine);
  } else {
    // Two lines are two transactions (see SEQ_ONE in node.cuh): the sequence number goes
    // odd, the other slots are written, then the metadata word with the next even number
    // (a release: a reader that sees it sees the slots), and last the latch, freed by a
    // release of its own so that the next holder reads the final number.
    unsigned* mw = reinterpret_cast<unsigned*>(words) + L::META_WORD;
    unsigned seq = 0;
    if (tile::rank() == 0) {
      seq = (mem::ld_relaxed(mw) & ~META_FIELDS) + SEQ_ONE;  // even under the latch: now odd
      mem::st_relaxed(mw, (meta & META_FIELDS) | seq);
      mem::fence_acq_rel();
    }
    seq = tile::shfl(seq, 0);
    __syncwarp(tile::mask());
    const bool writer = tile::rank() < L::SLOTS;
    if (writer && pair != L::META_PAIR) L::store_release(words + pair, mine);
    if (writer) mem::fence_acq_rel();
    __syncwarp(tile::mask());
    if (writer && pair == L::META_PAIR) {
      mem::st_release(mw, (meta & META_FIELDS) | (seq + SEQ_ONE));
      mem::st_release(latch_word(words), LATCH_FREE);
    }
  }
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
