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
// A tile of TILE lanes (8, 16 or 32) holds the node as pairs: with 16 or 32 lanes, lane r
// holds pair r % 16 (a 32-lane tile reads every pair twice from the same line, one
// transaction, and only the low 16 lanes write); with 8 lanes, lane r holds pairs r and
// r + 8, loaded with two instructions, so 8-lane tiles serve phased queries only.
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
// High key of the rightmost node of a level (ignored there: its link is null_node).
constexpr key_type NO_HIGH_KEY = 0xffffffffu;

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
// queries, while no kernel that modifies the tree is in flight. `stable`: no writer can
// change the node between two loads, so every lane may also read the metadata and link
// (words 28..31) itself with a second load instead of waiting for shuffles; a coherent
// view must come from ONE load instruction of the tile (see latch.cuh, `publish`).
// `prefetch` asks for a node that a later load of this mode will read (a hint: no value
// is read, so it is never stale): into L2 for coherent loads, which L2 serves, and into
// L1 for cached ones.
struct coherent {
  static constexpr bool stable = false;
  __device__ __forceinline__ static unsigned long long load(const unsigned long long* p) {
    return mem::ld_relaxed(p);
  }
  __device__ __forceinline__ static void prefetch(const unsigned long long* p) {
    asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
  }
};
struct cached {
  static constexpr bool stable = true;
  __device__ __forceinline__ static unsigned long long load(const unsigned long long* p) {
    return mem::ld_nc(p);
  }
  __device__ __forceinline__ static void prefetch(const unsigned long long* p) {
    asm volatile("prefetch.global.L1 [%0];" ::"l"(p));
  }
};

// One node as a tile holds it: this lane's pairs plus the broadcast metadata and link.
// The 16 pairs are spread over LANES = min(TILE, 16) lanes, PER_LANE each: lane r holds
// pairs r, r + LANES, ... (a 32-lane tile holds every pair twice, in lanes r and r + 16).
template <unsigned TILE>
struct node_view {
  static_assert(TILE == 8 || TILE == 16 || TILE == 32, "node tiles are 8, 16 or 32 lanes");
  using tile = gpuds::warp::tile<TILE>;
  static constexpr unsigned LANES = TILE < 16 ? TILE : 16;
  static constexpr unsigned PER_LANE = 16 / LANES;
  unsigned key[PER_LANE];  // this lane's keys / pivots
  unsigned val[PER_LANE];  // this lane's values / children
  unsigned meta;
  unsigned high;
  node_addr link;

  // Index of this lane's s-th pair.
  __device__ __forceinline__ static unsigned pair(unsigned s = 0) {
    return tile::rank() % LANES + s * LANES;
  }
  // True on the lanes that hold distinct pairs (the low 16 lanes of a 32-lane tile).
  __device__ __forceinline__ static bool holder() { return tile::rank() < LANES; }
  __device__ __forceinline__ unsigned count() const { return meta_count(meta); }
  __device__ __forceinline__ unsigned level() const { return meta_level(meta); }
  __device__ __forceinline__ bool is_leaf() const { return level() == 0; }
  __device__ __forceinline__ bool full() const { return count() >= NODE_PAIRS; }
  // The key belongs to a node further right on this level (B-link move right).
  __device__ __forceinline__ bool beyond(key_type k) const { return link != null_node && k >= high; }

  // A node's words as this lane loaded them, before they are unpacked: issuing the loads
  // of the next node (fetch) before working on the current one hides their latency.
  struct raw {
    unsigned long long w[PER_LANE];
    uint4 tail;  // words 28..31 (latch, meta, high, link) when the mode is stable
  };

  template <class Mode>
  __device__ __forceinline__ static raw fetch(const unsigned long long* words) {
    raw r;
#pragma unroll
    for (unsigned s = 0; s < PER_LANE; ++s) r.w[s] = Mode::load(words + pair(s));
    r.tail = Mode::stable ? __ldg(reinterpret_cast<const uint4*>(words + META_PAIR))
                          : make_uint4(0u, 0u, 0u, 0u);
    return r;
  }

  template <class Mode>
  __device__ __forceinline__ void unpack(const raw& r) {
#pragma unroll
    for (unsigned s = 0; s < PER_LANE; ++s) {
      key[s] = static_cast<unsigned>(r.w[s]);
      val[s] = static_cast<unsigned>(r.w[s] >> 32);
    }
    if (Mode::stable) {
      meta = r.tail.y;
      high = r.tail.z;
      link = r.tail.w;
    } else {
      meta = val_at(META_PAIR);
      high = key_at(LINK_PAIR);
      link = val_at(LINK_PAIR);
    }
  }

  template <class Mode>
  __device__ __forceinline__ void load(const unsigned long long* words) {
    unpack<Mode>(fetch<Mode>(words));
  }

  // Key / value of pair i (the same i on every lane), broadcast.
  __device__ __forceinline__ unsigned key_at(unsigned i) const {
    const unsigned mine = i < LANES ? key[0] : key[PER_LANE - 1];
    return tile::shfl(mine, PER_LANE == 1 ? i : i % LANES);
  }
  __device__ __forceinline__ unsigned val_at(unsigned i) const {
    const unsigned mine = i < LANES ? val[0] : val[PER_LANE - 1];
    return tile::shfl(mine, PER_LANE == 1 ? i : i % LANES);
  }

  // Bits 0..15: the meaningful pairs (index < count) for which pred(key, value) holds.
  template <class Pred>
  __device__ __forceinline__ unsigned pairs_where(Pred pred) const {
    unsigned m = 0;
#pragma unroll
    for (unsigned s = 0; s < PER_LANE; ++s) {
      const bool p = pair(s) < count() && pred(key[s], val[s]);
      m |= (tile::ballot(p) & ((1u << LANES) - 1u)) << (s * LANES);
    }
    return m;
  }

  // Index of the pair holding key k in a leaf, or -1.
  __device__ __forceinline__ int find(key_type k) const {
    return __ffs(pairs_where([k](unsigned key, unsigned) { return key == k; })) - 1;
  }
  // Number of meaningful pairs with key < k: the insertion position of k.
  __device__ __forceinline__ unsigned rank_of(key_type k) const {
    return __popc(pairs_where([k](unsigned key, unsigned) { return key < k; }));
  }
  // The child an internal node routes k to, or null_node when k is below the node's low
  // bound (impossible in a consistent tree).
  __device__ __forceinline__ node_addr child_for(key_type k) const {
    const unsigned m = pairs_where([k](unsigned key, unsigned) { return key <= k; });
    if (m == 0) return null_node;
    return val_at(31 - __clz(m));
  }
};

}  // namespace btree
}  // namespace gpuds
