// gpuds/mvbtree/version.cuh: the versioned node and how a tile finds the version of a
// node that a snapshot sees (Awad 2022, §4.4, after the vCAS of Wei et al.).
//
// A versioned node is a gpuds-btree node (gpuds/btree/node.cuh: same size, slots, latch,
// metadata and B-link slot) with slot SLOTS-3 taken for the version, so it holds one
// pair fewer (u32/u32: 13 pairs):
//
//   slot SLOTS-3  (timestamp, older): the key part's low 32 bits are the version's
//                 timestamp (UNSET_TS until set), the value part the address of the next
//                 older version of the node (null_node when none).
//
// Every address in the tree (child, side link, root) names the HEAD of a version list;
// heads never move (§4.4.1, "Copying a tree node"): a change that must keep the old
// contents copies the head to a fresh unit first (the copy keeps the old timestamp and
// the old older link) and then changes the head in place, linking the copy as its older
// version. Copies are immutable and never latched: their latch word is LATCH_COPY.
// Timestamps never increase along a list. A query at snapshot s uses, for every node it
// reaches, the first version of the list with timestamp <= s.
#pragma once
#include <gpuds/btree/tree_ref.cuh>

namespace gpuds {
namespace mvbtree {

using btree::cached;
using btree::coherent;
using btree::latched;
using btree::node_addr;
using btree::null_node;

// Timestamps are 31 bits; bit 31 of the timestamp word is RETIRED_OLDER: the version's
// older link names a unit handed to epoch-based reclamation by the kernel that made it
// (it may be reused once that kernel's readers are gone). Only readers whose snapshot was
// taken in a running kernel may still need it; for the host, the list ends there.
constexpr unsigned TS_MASK = 0x7fffffffu;
constexpr unsigned RETIRED_OLDER = 0x80000000u;
constexpr unsigned UNSET_TS = 0x7fffffffu;  // a version not yet stamped (vCAS)
constexpr unsigned LATEST = 0xffffffffu;    // a query of the newest versions (the heads)
constexpr unsigned LATCH_COPY = 2u;         // the latch word of an older version
// Status flags of this crate (structure bits).
constexpr unsigned LOG_FULL = gpuds::status::FIRST_STRUCTURE_BIT << 2;  // version log full
constexpr unsigned CLOCK_FULL = gpuds::status::FIRST_STRUCTURE_BIT << 3;  // no timestamp left

// How updates treat nodes a snapshot may see (§4.3.1); Rust: Updates.
enum update_mode : unsigned { IN_PLACE = 0, OUT_OF_PLACE = 1 };

// Slot positions of the versioned node of K and V.
template <class K, class V>
struct vshape {
  using L = btree::layout<K, V>;
  static constexpr unsigned VERSION_PAIR = L::SLOTS - 3;
  static constexpr unsigned NODE_PAIRS = L::SLOTS - 3;  // key/value or pivot/child pairs
  static constexpr unsigned SPLIT_AT = NODE_PAIRS / 2;  // a split moves [SPLIT_AT, NODE_PAIRS) right
  // The 32-bit word of the timestamp (the low half of the version slot's key part).
  static constexpr unsigned TS_WORD = VERSION_PAIR * L::SLOT_BYTES / 4;
  // The 32-bit word of the older address (the low half of the value part).
  static constexpr unsigned OLDER_WORD = TS_WORD + L::SLOT_BYTES / 8;
  // The version slot as stored. Its first 8 bytes hold the timestamp word and the older
  // address (in a 16-byte slot the older address is repeated in the key part's high half),
  // so that a stamp is one 64-bit CAS that also checks which version it stamps: a head
  // whose version was replaced meanwhile has another older address (every unstamped
  // version links a fresh copy), so a stale stamp fails instead of stamping the new one.
  __device__ __forceinline__ static typename L::slot make_version(unsigned ts_word, node_addr older) {
    if constexpr (L::SLOT_BYTES == 8) {
      return btree::pack(ts_word, older);
    } else {
      return make_ulonglong2(static_cast<unsigned long long>(ts_word) | (static_cast<unsigned long long>(older) << 32),
                             static_cast<unsigned long long>(older));
    }
  }
};

// A versioned node as a tile holds it (see btree::node_view).
template <unsigned TILE, class K, class V>
struct vview : btree::node_view<TILE, K, V> {
  using S = vshape<K, V>;
  // The timestamp word: the timestamp and the RETIRED_OLDER bit.
  __device__ __forceinline__ unsigned ts_word() const {
    return static_cast<unsigned>(this->key_at(S::VERSION_PAIR));
  }
  __device__ __forceinline__ unsigned ts() const { return ts_word() & TS_MASK; }
  __device__ __forceinline__ bool retired_older() const { return (ts_word() & RETIRED_OLDER) != 0; }
  __device__ __forceinline__ node_addr older() const {
    return static_cast<node_addr>(this->val_at(S::VERSION_PAIR));
  }
  __device__ __forceinline__ bool full() const { return this->count() >= S::NODE_PAIRS; }
};

// Sets the unset timestamp of the version at `words` to the global time (one CAS, the
// vCAS rule), on the calling lane alone. Returns the timestamp the version has now (set
// here or by whoever did first). The CAS covers the timestamp word and the older address
// (see vshape::make_version): it succeeds only on the version whose word was read before
// the clock, never on a newer version published meanwhile (the timestamp word alone
// returns to UNSET at every publication: ABA). The RETIRED_OLDER bit is kept. A few
// attempts: the word changes only when a version is stamped or a latch holder publishes a
// new one (then the caller reads the node again).
template <class Slot>
__device__ __forceinline__ unsigned stamp_lane(Slot* words, unsigned ts_word, unsigned* clock) {
  auto* p = reinterpret_cast<unsigned long long*>(reinterpret_cast<unsigned*>(words) + ts_word);
  unsigned long long w = mem::ld_relaxed(p);
  for (unsigned attempt = 0; attempt < 8 && (static_cast<unsigned>(w) & TS_MASK) == UNSET_TS; ++attempt) {
    const unsigned now = mem::ld_acquire(clock);
    const unsigned long long desired =
        (w & ~0xffffffffull) | (static_cast<unsigned>(w) & RETIRED_OLDER) | static_cast<unsigned long long>(now);
    const unsigned long long old = mem::cas_acq_rel(p, w, desired);
    w = old == w ? desired : old;
  }
  return static_cast<unsigned>(w) & TS_MASK;
}

// stamp_lane by one lane of the tile; every lane gets the timestamp.
template <unsigned TILE, class Slot>
__device__ __forceinline__ unsigned stamp(Slot* words, unsigned ts_word, unsigned* clock) {
  using tile = gpuds::warp::tile<TILE>;
  unsigned r = 0;
  if (tile::rank() == 0) r = stamp_lane(words, ts_word, clock);
  return tile::shfl(r, 0);
}

// Takes a snapshot (§4.4.2): reads the time t and moves it to t + 1 with one CAS. When
// another tile moved it first, t is still a valid snapshot (its increment came after
// the read). Every lane gets t; UNSET_TS (and CLOCK_FULL reported) when the clock is full
// (2^31 - 2 snapshots: timestamps are 31 bits).
template <unsigned TILE>
__device__ __forceinline__ unsigned take_snapshot(unsigned* clock, unsigned* status) {
  using tile = gpuds::warp::tile<TILE>;
  unsigned t = 0;
  if (tile::rank() == 0) {
    t = mem::ld_acquire(clock);
    if (t >= UNSET_TS - 1u) {
      gpuds::status::report(status, CLOCK_FULL);
      t = UNSET_TS;
    } else {
      mem::cas_acq_rel(clock, t, t + 1u);
    }
  }
  return tile::shfl(t, 0);
}

}  // namespace mvbtree
}  // namespace gpuds
