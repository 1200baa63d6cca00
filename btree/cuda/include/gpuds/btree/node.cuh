// gpuds/btree/node.cuh: the B-link node and how a tile reads and writes it, for keys and
// values of 32 or 64 bits.
//
// Awad (2022), §3.3 and §3.3.1: one node is one cache line, read by a tile with one
// coalesced load. The original stores 15 pairs of 32-bit words and steals the most
// significant bit of the key words for the leaf and latch flags, which limits keys to 31
// bits. Here the flags live in a metadata slot of their own, so every key of the type is
// allowed (no key is reserved, at 32 bits as at 64).
//
// A node is an array of SLOTS slots; a slot holds one (key, value) pair:
//
//   u32 keys and u32 values ("narrow"): an 8-byte slot, key in the low word, value in the
//   high word; a node is 128 bytes, 16 slots, 14 pairs (the fanout of chapter 4's tree).
//   Any 64-bit key or value ("wide"): a 16-byte slot, the key zero-extended to the first
//   8 bytes, the value zero-extended to the last 8 (u64/u32 pairs take 16 bytes too: a
//   12-byte slot would straddle the 16-byte lane loads). A node is WIDE_NODE_BYTES:
//     128 (the default, one line, read by 8 lanes): 8 slots, 6 pairs;
//     256 (two lines, read by 16 lanes in one instruction): 16 slots, 14 pairs.
//   Define GPUDS_BTREE_WIDE_NODE_BYTES to 256 for the other layout (the host's hidden
//   BTreeConfig::wide_node_bytes does it for the crate's kernels; a user kernel that
//   includes this header for such a tree must define it too).
//
//   slot 0 .. SLOTS-3  (key, value) in a leaf, (pivot, child address) in an internal node,
//                      sorted by key; only the first `count` pairs are meaningful
//   slot SLOTS-2       (latch, meta): the low 32 bits of the key part are the write latch
//                      (0 free, 1 held), the value part holds count (bits 0-7) and level
//                      (bits 8-15; 0 is a leaf)
//   slot SLOTS-1       (high key, right sibling): the B-link (Lehman and Yao) link with the
//                      sibling's minimum key; sibling = null_unit on the rightmost node
//
// Invariants: the keys of a node lie in [low, high), where `low` is the pivot its parent
// holds for it (0 along the leftmost spine) and `high` its high key (unbounded on the
// rightmost node, whose high key is ignored: no key is reserved for it); pivot 0 of an
// internal node equals its own low bound; a node's right sibling starts at its high key.
// Nodes are never merged (§3.4.4), so pivots never change.
//
// A tile of TILE lanes (8, 16 or 32) holds the node as slots: LANES = min(TILE, SLOTS)
// lanes hold distinct slots, PER_LANE = SLOTS / LANES each (lane r holds slots r,
// r + LANES, ...); the other lanes of a wider tile hold copies (lane r holds slot
// r % LANES, read from the same line: no extra transaction) and never write.
#pragma once
#include <gpuds/alloc/slab_alloc.cuh>
#include <gpuds/core/memory.cuh>
#include <gpuds/core/warp.cuh>

#ifndef GPUDS_BTREE_WIDE_NODE_BYTES
#define GPUDS_BTREE_WIDE_NODE_BYTES 256
#endif

namespace gpuds {
namespace btree {

using node_addr = gpuds::alloc::unit_addr;
constexpr node_addr null_node = gpuds::alloc::null_unit;

constexpr unsigned COUNT_MASK = 0xffu;
constexpr unsigned LEVEL_SHIFT = 8;
constexpr unsigned LATCH_FREE = 0u;
constexpr unsigned LATCH_HELD = 1u;
constexpr unsigned WIDE_NODE_BYTES = GPUDS_BTREE_WIDE_NODE_BYTES;
static_assert(WIDE_NODE_BYTES == 128 || WIDE_NODE_BYTES == 256, "wide nodes are 128 or 256 bytes");

// High key of the rightmost node of a level (ignored there: its link is null_node).
template <class K>
__device__ __forceinline__ constexpr K no_high_key() {
  return static_cast<K>(~0ull);
}

__device__ __forceinline__ unsigned make_meta(unsigned count, unsigned level) {
  return (count & COUNT_MASK) | (level << LEVEL_SHIFT);
}
// Nodes of two lines (256 bytes) are read and written by one instruction of 16 lanes, but
// the hardware serves the two lines as two transactions: a coherent reader may see one line
// of a write and not the other (a new count in line 1 with the old slots of line 0, whose
// pairs and child addresses may be anything). Their writers therefore bracket every write
// of a reachable node with a sequence number, bits 16-31 of the metadata word (a seqlock):
// odd while the node is being written, two more after each write. A coherent reader keeps
// a view only when every lane read the same even number before and after its slot (see
// node_view::fetch); count and level (bits 0-15) are unchanged. One-line nodes never
// change the sequence bits (always 0).
constexpr unsigned SEQ_ONE = 1u << 16;          // the writing flag; each write adds 2
constexpr unsigned META_FIELDS = SEQ_ONE - 1u;  // count and level
// Attempts of a coherent two-line read before it gives up (a writer holds the odd number
// for the time of three stores, so a reader that fails this often reports RETRY_LIMIT).
constexpr unsigned SEQ_TRIES = 1u << 12;

__device__ __forceinline__ unsigned meta_count(unsigned meta) { return meta & COUNT_MASK; }
__device__ __forceinline__ unsigned meta_level(unsigned meta) { return (meta >> LEVEL_SHIFT) & 0xffu; }

__device__ __forceinline__ unsigned long long pack(unsigned lo, unsigned hi) {
  return static_cast<unsigned long long>(lo) | (static_cast<unsigned long long>(hi) << 32);
}

// The 16-byte slot's memory accesses: one vector instruction per lane, so that a tile's
// access of a node is still one instruction (see latch.cuh, `publish`).
namespace wide_mem {
__device__ __forceinline__ ulonglong2 ld_relaxed(const ulonglong2* p) {
  ulonglong2 v;
  asm volatile("ld.relaxed.gpu.global.v2.u64 {%0, %1}, [%2];" : "=l"(v.x), "=l"(v.y) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ ulonglong2 ld_acquire(const ulonglong2* p) {
  ulonglong2 v;
  asm volatile("ld.acquire.gpu.global.v2.u64 {%0, %1}, [%2];" : "=l"(v.x), "=l"(v.y) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ ulonglong2 ld_nc(const ulonglong2* p) {
  ulonglong2 v;
  asm("ld.global.nc.v2.u64 {%0, %1}, [%2];" : "=l"(v.x), "=l"(v.y) : "l"(p));
  return v;
}
__device__ __forceinline__ void st_relaxed(ulonglong2* p, ulonglong2 v) {
  asm volatile("st.relaxed.gpu.global.v2.u64 [%0], {%1, %2};" ::"l"(p), "l"(v.x), "l"(v.y) : "memory");
}
__device__ __forceinline__ void st_release(ulonglong2* p, ulonglong2 v) {
  asm volatile("st.release.gpu.global.v2.u64 [%0], {%1, %2};" ::"l"(p), "l"(v.x), "l"(v.y) : "memory");
}
}  // namespace wide_mem

// The shape of a node of slots of type Slot (8-byte narrow, 16-byte wide).
template <class Slot>
struct node_shape {
  static constexpr unsigned SLOT_BYTES = sizeof(Slot);
  static_assert(SLOT_BYTES == 8 || SLOT_BYTES == 16, "slots are 8 or 16 bytes");
  static constexpr unsigned NODE_BYTES = SLOT_BYTES == 8 ? 128u : WIDE_NODE_BYTES;
  static constexpr unsigned SLOTS = NODE_BYTES / SLOT_BYTES;  // 16, 8 or 16
  static constexpr unsigned NODE_PAIRS = SLOTS - 2;          // key/value or pivot/child pairs
  static constexpr unsigned META_PAIR = SLOTS - 2;           // (latch, meta)
  static constexpr unsigned LINK_PAIR = SLOTS - 1;           // (high key, right sibling)
  static constexpr unsigned SPLIT_AT = NODE_PAIRS / 2;       // a split moves [SPLIT_AT, NODE_PAIRS) right
  static constexpr bool TWO_LINES = NODE_BYTES > 128;        // written under a sequence number
  // The 32-bit word of the metadata (the low half of the metadata slot's value part).
  static constexpr unsigned META_WORD = (META_PAIR * SLOT_BYTES + SLOT_BYTES / 2) / 4;
};

// How pairs of K and V sit in a slot (see the header comment).
template <class K, class V>
struct layout : node_shape<ulonglong2> {
  static_assert(sizeof(K) == 8 || sizeof(V) == 8, "the narrow layout is the u32/u32 specialization");
  static_assert((sizeof(K) == 4 || sizeof(K) == 8) && (sizeof(V) == 4 || sizeof(V) == 8),
                "keys and values are 32 or 64 bits");
  using slot = ulonglong2;
  __device__ __forceinline__ static slot make(K k, V v) {
    return make_ulonglong2(static_cast<unsigned long long>(k), static_cast<unsigned long long>(v));
  }
  __device__ __forceinline__ static K key(const slot& s) { return static_cast<K>(s.x); }
  __device__ __forceinline__ static V value(const slot& s) { return static_cast<V>(s.y); }
  __device__ __forceinline__ static void store_relaxed(slot* p, const slot& s) { wide_mem::st_relaxed(p, s); }
  __device__ __forceinline__ static void store_release(slot* p, const slot& s) { wide_mem::st_release(p, s); }
  // The metadata and link slots, read by one lane (stable modes only).
  struct tail {
    ulonglong2 meta, link;
  };
  __device__ __forceinline__ static tail load_tail(const slot* words) {
    return tail{__ldg(words + META_PAIR), __ldg(words + LINK_PAIR)};
  }
  __device__ __forceinline__ static unsigned tail_meta(const tail& t) { return static_cast<unsigned>(t.meta.y); }
  __device__ __forceinline__ static K tail_high(const tail& t) { return static_cast<K>(t.link.x); }
  __device__ __forceinline__ static node_addr tail_link(const tail& t) { return static_cast<node_addr>(t.link.y); }
};

template <>
struct layout<unsigned, unsigned> : node_shape<unsigned long long> {
  using slot = unsigned long long;
  __device__ __forceinline__ static slot make(unsigned k, unsigned v) { return pack(k, v); }
  __device__ __forceinline__ static unsigned key(slot s) { return static_cast<unsigned>(s); }
  __device__ __forceinline__ static unsigned value(slot s) { return static_cast<unsigned>(s >> 32); }
  __device__ __forceinline__ static void store_relaxed(slot* p, slot s) { mem::st_relaxed(p, s); }
  __device__ __forceinline__ static void store_release(slot* p, slot s) { mem::st_release(p, s); }
  using tail = uint4;  // words 28..31: latch, meta, high, link
  __device__ __forceinline__ static tail load_tail(const slot* words) {
    return __ldg(reinterpret_cast<const uint4*>(words + META_PAIR));
  }
  __device__ __forceinline__ static unsigned tail_meta(const tail& t) { return t.y; }
  __device__ __forceinline__ static unsigned tail_high(const tail& t) { return t.z; }
  __device__ __forceinline__ static node_addr tail_link(const tail& t) { return t.w; }
};

// How nodes are loaded. `coherent` (relaxed, GPU scope, served by L2) is for any load
// that may race with a writer; `cached` (the non-coherent read-only path) only for phased
// queries, while no kernel that modifies the tree is in flight. `stable`: no writer can
// change the node between two loads, so every lane may also read the metadata and link
// itself with a second load instead of waiting for shuffles; a coherent view must come
// from ONE load instruction of the tile (see latch.cuh, `publish`), and of a two-line node
// from a read checked by its sequence number (node_view::fetch).
// `prefetch` asks for a node that a later load of this mode will read (a hint: no value
// is read, so it is never stale): into L2 for coherent loads, which L2 serves, and into
// L1 for cached ones.
struct coherent {
  static constexpr bool stable = false;
  static constexpr bool owned = false;
  __device__ __forceinline__ static unsigned long long load(const unsigned long long* p) {
    return mem::ld_relaxed(p);
  }
  __device__ __forceinline__ static ulonglong2 load(const ulonglong2* p) { return wide_mem::ld_relaxed(p); }
  __device__ __forceinline__ static void prefetch(const void* p) {
    asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
  }
};
struct cached {
  static constexpr bool stable = true;
  static constexpr bool owned = false;
  __device__ __forceinline__ static unsigned long long load(const unsigned long long* p) {
    return mem::ld_nc(p);
  }
  __device__ __forceinline__ static ulonglong2 load(const ulonglong2* p) { return wide_mem::ld_nc(p); }
  __device__ __forceinline__ static void prefetch(const void* p) {
    asm volatile("prefetch.global.L1 [%0];" ::"l"(p));
  }
};
// `coherent` for a node whose latch the tile holds: only a latch holder writes a node, and
// the acquire that took the latch follows the last write's release, so even a two-line
// node is read without the sequence check (one load instruction, as for one line).
struct latched : coherent {
  static constexpr bool owned = true;
};

// One node as a tile holds it: this lane's pairs plus the broadcast metadata and link.
template <unsigned TILE, class K, class V>
struct node_view {
  static_assert(TILE == 8 || TILE == 16 || TILE == 32, "node tiles are 8, 16 or 32 lanes");
  using tile = gpuds::warp::tile<TILE>;
  using L = layout<K, V>;
  using slot = typename L::slot;
  static constexpr unsigned SLOTS = L::SLOTS;
  static constexpr unsigned LANES = TILE < SLOTS ? TILE : SLOTS;
  static constexpr unsigned PER_LANE = SLOTS / LANES;
  K key[PER_LANE];  // this lane's keys / pivots
  V val[PER_LANE];  // this lane's values / children
  unsigned meta;
  K high;
  node_addr link;

  // Index of this lane's s-th pair.
  __device__ __forceinline__ static unsigned pair(unsigned s = 0) {
    return tile::rank() % LANES + s * LANES;
  }
  // True on the lanes that hold distinct pairs (the low LANES lanes of the tile).
  __device__ __forceinline__ static bool holder() { return tile::rank() < LANES; }
  __device__ __forceinline__ unsigned count() const { return meta_count(meta); }
  __device__ __forceinline__ unsigned level() const { return meta_level(meta); }
  __device__ __forceinline__ bool is_leaf() const { return level() == 0; }
  __device__ __forceinline__ bool full() const { return count() >= L::NODE_PAIRS; }
  // The key belongs to a node further right on this level (B-link move right).
  __device__ __forceinline__ bool beyond(K k) const { return link != null_node && k >= high; }

  // A node's slots as this lane loaded them, before they are unpacked: issuing the loads
  // of the next node (fetch) before working on the current one hides their latency.
  struct raw {
    slot w[PER_LANE];
    typename L::tail tail;  // the metadata and link slots when the mode is stable
    unsigned meta;          // the metadata word of a checked read
    bool ok;                // false: a checked read found no consistent view (SEQ_TRIES)
  };

  // A coherent read of a two-line node, checked by its sequence number (see SEQ_ONE).
  template <class Mode>
  __device__ __forceinline__ static constexpr bool checked() {
    return !Mode::stable && !Mode::owned && L::TWO_LINES;
  }

  template <class Mode>
  __device__ __forceinline__ static raw fetch(const slot* words) {
    raw r;
    r.ok = true;
    if constexpr (checked<Mode>()) {
      // Per lane: the sequence number (acquire), the slot (acquire: the second read of the
      // number comes after it), the number again. A write that began before the slot was
      // read shows as a changed or odd number; one that ended before the first read is
      // seen whole (its last store, the number, is a release). Equal numbers on every lane
      // put every lane's slot in the same write.
      const unsigned* mw = reinterpret_cast<const unsigned*>(words) + L::META_WORD;
      constexpr unsigned ALL = TILE == 32 ? ~0u : (1u << TILE) - 1u;
      r.ok = false;
      for (unsigned a = 0; a < SEQ_TRIES && !r.ok; ++a) {
        const unsigned before = mem::ld_acquire(mw);
#pragma unroll
        for (unsigned s = 0; s < PER_LANE; ++s) r.w[s] = wide_mem::ld_acquire(words + pair(s));
        const unsigned after = mem::ld_relaxed(mw);
        const bool same = before == after && (before & SEQ_ONE) == 0 && before == tile::shfl(before, 0);
        r.meta = before;
        r.ok = tile::ballot(same) == ALL;
        if (!r.ok) __nanosleep(64);
      }
    } else {
#pragma unroll
      for (unsigned s = 0; s < PER_LANE; ++s) r.w[s] = Mode::load(words + pair(s));
      if (Mode::stable) r.tail = L::load_tail(words);
    }
    return r;
  }

  template <class Mode>
  __device__ __forceinline__ void unpack(const raw& r) {
#pragma unroll
    for (unsigned s = 0; s < PER_LANE; ++s) {
      key[s] = L::key(r.w[s]);
      val[s] = L::value(r.w[s]);
    }
    if (Mode::stable) {
      meta = L::tail_meta(r.tail);
      high = L::tail_high(r.tail);
      link = L::tail_link(r.tail);
    } else {
      meta = checked<Mode>() ? r.meta : static_cast<unsigned>(val_at(L::META_PAIR));
      high = key_at(L::LINK_PAIR);
      link = static_cast<node_addr>(val_at(L::LINK_PAIR));
    }
  }

  // False when a checked read found no consistent view (the view is then meaningless:
  // the caller reports RETRY_LIMIT); always true for other reads (`latched`, `cached`,
  // one-line nodes), whose callers ignore it.
  template <class Mode>
  __device__ __forceinline__ bool load(const slot* words) {
    const raw r = fetch<Mode>(words);
    unpack<Mode>(r);
    return r.ok;
  }

  // Key / value of pair i (the same i on every lane), broadcast.
  __device__ __forceinline__ K key_at(unsigned i) const {
    const K mine = i < LANES ? key[0] : key[PER_LANE - 1];
    return tile::shfl(mine, PER_LANE == 1 ? i : i % LANES);
  }
  __device__ __forceinline__ V val_at(unsigned i) const {
    const V mine = i < LANES ? val[0] : val[PER_LANE - 1];
    return tile::shfl(mine, PER_LANE == 1 ? i : i % LANES);
  }

  // Bits 0..SLOTS-1: the meaningful pairs (index < count) for which pred(key, value) holds.
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
  __device__ __forceinline__ int find(K k) const {
    return __ffs(pairs_where([k](K key, V) { return key == k; })) - 1;
  }
  // Number of meaningful pairs with key < k: the insertion position of k.
  __device__ __forceinline__ unsigned rank_of(K k) const {
    return __popc(pairs_where([k](K key, V) { return key < k; }));
  }
  // The child an internal node routes k to, or null_node when k is below the node's low
  // bound (impossible in a consistent tree).
  __device__ __forceinline__ node_addr child_for(K k) const {
    const unsigned m = pairs_where([k](K key, V) { return key <= k; });
    if (m == 0) return null_node;
    return static_cast<node_addr>(val_at(31 - __clz(m)));
  }
};

}  // namespace btree
}  // namespace gpuds
