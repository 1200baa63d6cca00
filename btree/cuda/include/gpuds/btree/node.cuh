// gpuds/btree/node.cuh: the 128-byte B-link node and how a tile reads and writes it.
//
// Awad (2022), §3.3 and §3.3.1: one node is one 128-byte cache line, read by a tile with
// one coalesced load. The original stores 15 pairs and steals the most significant bit of
// the key words for the leaf and latch flags, which limits keys to 31 bits. Here the
// flags live in a metadata pair of their own, so every 32-bit key is allowed and a node
// keeps 14 pairs (the fanout of the versioned tree of chapter 4):
//
//   pair  0..13  (key, value) in a leaf, (pivot, child address) in an internal node,
//                sorted by key; only the first `count` pairs are meaningful
//   pair 14      (latch, meta): word 28 is the write latch (0 free, 1 held), word 29
//                holds count (bits 0-7) and level (bits 8-15; 0 is a leaf)
//   pair 15      (high key, right sibling): the B-link (Lehman and Yao) link with the
//                sibling's minimum key; sibling = null_unit on the rightmost node
//
// Invariants: the keys of a node lie in [low, high), where `low` is the pivot its parent
// holds for it (0 along the leftmost spine) and `high` its high key (unbounded on the
// rightmost node); pivot 0 of an internal node equals its own low bound; a node's right
// sibling starts at its high key. Nodes are never merged (§3.4.4), so pivots never change.
//
// A tile of TILE lanes (16 or 32) holds the node as pairs: lane r holds pair r % 16, so a
// 32-lane tile reads every pair twice from the same line (one transaction) and only the
// low 16 lanes write.
#pragma once
#include <gpuds/alloc/slab_alloc.cuh>
#include <gpuds/core/memory.cuh>
#include <gpuds/core/warp.cuh>

namespace gpuds {
namespace btree {

using key_type = unsigned;
using value_type = unsigned;
using node_addr = gpuds::alloc::unit_addr;
constexpr node_addr null_node = gpuds::alloc::null_unit;

constexpr unsigned NODE_BYTES = 128;
constexpr unsigned NODE_PAIRS = 14;   // key/value or pivot/child pairs per node
constexpr unsigned META_PAIR = 14;    // (latch, meta)
constexpr unsigned LINK_PAIR = 15;    // (high key, right sibling)
constexpr unsigned SPLIT_AT = NODE_PAIRS / 2;  // a split moves pairs [7, 14) right
constexpr unsigned COUNT_MASK = 0xffu;
constexpr unsigned LEVEL_SHIFT = 8;
constexpr unsigned LATCH_FREE = 0u;
constexpr unsigned LATCH_HELD = 1u;

__device__ __forceinline__ unsigned make_meta(unsigned count, unsigned level) {
  return (count & COUNT_MASK) | (level << LEVEL_SHIFT);
}
__device__ __forceinline__ unsigned meta_count(unsigned meta) { return meta & COUNT_MASK; }
__device__ __forceinline__ unsigned meta_level(unsigned meta) { return (meta >> LEVEL_SHIFT) & 0xffu; }

__device__ __forceinline__ unsigned long long pack(unsigned lo, unsigned hi) {
  return static_cast<unsigned long long>(lo) | (static_cast<unsigned long long>(hi) << 32);
}

// How nodes are loaded. `coherent` (relaxed, GPU scope, served by L2) is for any load
// that may race with a writer; `cached` (the non-coherent read-only path) only for phased
// queries, while no kernel that modifies the tree is in flight.
struct coherent {
  __device__ __forceinline__ static unsigned long long load(const unsigned long long* p) {
    return mem::ld_relaxed(p);
  }
};
struct cached {
  __device__ __forceinline__ static unsigned long long load(const unsigned long long* p) {
    return mem::ld_nc(p);
  }
};

// One node as a tile holds it: this lane's pair plus the broadcast metadata and link.
template <unsigned TILE>
struct node_view {
  using tile = gpuds::warp::tile<TILE>;
  unsigned key;   // this lane's key / pivot (pair rank % 16)
  unsigned val;   // this lane's value / child
  unsigned meta;
  unsigned high;
  node_addr link;

  __device__ __forceinline__ static unsigned pair() { return tile::rank() & 15u; }
  __device__ __forceinline__ unsigned count() const { return meta_count(meta); }
  __device__ __forceinline__ unsigned level() const { return meta_level(meta); }
  __device__ __forceinline__ bool is_leaf() const { return level() == 0; }
  __device__ __forceinline__ bool full() const { return count() >= NODE_PAIRS; }
  // This lane holds one of the node's meaningful pairs.
  __device__ __forceinline__ bool valid() const { return pair() < count(); }
  // The key belongs to a node further right on this level (B-link move right).
  __device__ __forceinline__ bool beyond(key_type k) const { return link != null_node && k >= high; }

  // Bits 0..15: pairs whose lane satisfies `p` (a 32-lane tile's upper half mirrors).
  __device__ __forceinline__ static unsigned pairs(bool p) { return tile::ballot(p) & 0xffffu; }

  template <class Mode>
  __device__ __forceinline__ void load(const unsigned long long* words) {
    const unsigned long long w = Mode::load(words + pair());
    key = static_cast<unsigned>(w);
    val = static_cast<unsigned>(w >> 32);
    meta = tile::shfl(val, META_PAIR);
    high = tile::shfl(key, LINK_PAIR);
    link = tile::shfl(val, LINK_PAIR);
  }

  // Index of the pair holding key k in a leaf, or -1.
  __device__ __forceinline__ int find(key_type k) const {
    return __ffs(pairs(valid() && key == k)) - 1;
  }
  // Number of meaningful pairs with key < k: the insertion position of k.
  __device__ __forceinline__ unsigned rank_of(key_type k) const {
    return __popc(pairs(valid() && key < k));
  }
  // The child an internal node routes k to, or null_node when k is below the node's low
  // bound (impossible in a consistent tree).
  __device__ __forceinline__ node_addr child_for(key_type k) const {
    const unsigned m = pairs(valid() && key <= k);
    if (m == 0) return null_node;
    return tile::shfl(val, 31 - __clz(m));
  }
  // Value (key, value) of pair i, broadcast.
  __device__ __forceinline__ unsigned key_at(unsigned i) const { return tile::shfl(key, i); }
  __device__ __forceinline__ unsigned val_at(unsigned i) const { return tile::shfl(val, i); }
};

}  // namespace btree
}  // namespace gpuds
