// gpuds/slabhash/detail/alone.cuh: slab-list operations by one lane alone, for packed
// entries (a set's 32- or 64-bit keys, a map's u32/u32 pairs) of tables with unique keys.
//
// The warp walk of table.cuh serves a warp's requests one at a time, all 32 lanes
// reading one slab per step: some 80-90 warp instructions per request in the graph's
// edge kernels, which ncu finds issue-bound. Here each lane walks its own request's
// list: it reads a slab with 16-byte loads, half a slab (64 bytes) at a time, and so one
// warp instruction serves up to 32 requests. A lane settles alone what most requests
// need: the key found, or absent at the list's first empty slot; a claim of that slot;
// a replacement; a deletion. What it cannot settle alone it leaves untouched, with
// nothing applied, to the warp walk that its caller (the `_alone_in` operations of
// set_ref and map_ref) runs next for the lanes left: a list that ends full (a slab must
// be appended, which takes the warp's allocator), a list longer than the step cap, a
// claim that lost every remaining slot of its slab, a replacement that keeps losing its
// CAS or whose key was deleted meanwhile.
//
// The protocol is the warp walk's, word for word, so both run side by side on one table
// (and on one list) in any mix:
// - a slot is claimed only by a CAS from EMPTY, at the list's first empty slot, after
//   every earlier slot was seen holding another key (claimed slots never become empty
//   again before FLUSH, so a slot seen non-empty stays non-empty); keys stay unique and
//   empty slots a suffix;
// - a claim that loses learns the slot's word from the CAS: that word is the key (it is
//   present: a set is done; a map replaces it there) or another key or a tombstone, and
//   the lane tries the next slot the same way, each CAS telling it the word of the slot
//   it tried, so a lost claim costs one atomic, not a second read of the slab;
// - a replacement is a CAS of the whole pair from the pair it saw; a deletion a CAS of the
//   key to a tombstone (sets) or an exchange of the pair for one (maps), as in the warp
//   walk's deletion of a unique key: a slot seen holding k holds k (perhaps with a newer
//   value) or a tombstone until FLUSH.
// Every loop is bounded: at most `step_cap` slabs, each slot tried at most twice by a
// claim (claim_grouped, then claim), and REPLACE_TRIES CASes of one pair, after which the
// request goes to the warp walk.
#pragma once
#include <gpuds/core/memory.cuh>
#include <gpuds/slabhash/detail/table.cuh>

namespace gpuds {
namespace slabhash {
namespace detail {

// The word of one slot: 8 bytes (WIDE64) or 4.
template <bool WIDE64>
struct slot_word {
  using type = unsigned long long;
};
template <>
struct slot_word<false> {
  using type = unsigned;
};

template <class K, class V>
struct alone {
  using layout = entry_layout<K, V>;
  static_assert(layout::PACKED, "a lane alone handles packed entries only");
  // One 8-byte word a slot (a map's u32/u32 pair, a set's u64 key) or one 4-byte word
  // (a set's u32 key).
  static constexpr bool WORD64 = layout::KW + layout::VW == 2;
  static constexpr bool IS_MAP = layout::VW != 0;
  using word_t = typename slot_word<WORD64>::type;
  static constexpr unsigned SLOTS = layout::SLOTS;
  // Slots in half a slab (eight 8-byte words).
  static constexpr unsigned HALF = WORD64 ? 8u : 16u;
  // CASes a replacement makes on one pair before it goes to the warp walk.
  static constexpr unsigned REPLACE_TRIES = 32;

  // Where a look at a list stopped.
  static constexpr unsigned HIT = 0;    // a slot holding the key
  static constexpr unsigned FIRST_EMPTY = 1;  // the first empty slot (the key is not before it)
  static constexpr unsigned END = 2;    // the list ends full (`slab` is its tail)
  static constexpr unsigned CUT = 3;    // the step cap was reached

  __device__ static K key_of(word_t w) {
    if constexpr (IS_MAP) {
      return static_cast<K>(static_cast<unsigned>(w));
    } else {
      return static_cast<K>(w);
    }
  }
  __device__ static word_t* slot_ptr(unsigned* slab, unsigned slot) {
    return reinterpret_cast<word_t*>(slab) + slot;
  }
  __device__ static word_t empty_word() {
    if constexpr (IS_MAP) {
      return pack_pair(EMPTY_KEY, EMPTY_VALUE);
    } else {
      return static_cast<word_t>(empty_key<K>);
    }
  }

  // One 16-byte read of a slab by look().
  template <bool QUIET, bool STILL>
  __device__ static ulonglong2 read(const unsigned long long* p) {
    if constexpr (QUIET) {
      return mem::ld_nc_v2_line(p);
    } else if constexpr (STILL) {
      return mem::ld_weak_v2_line(p);
    } else {
      return mem::ld_relaxed_v2(p);
    }
  }

  // Looks along the list from `slab` for key k: the first slot holding k or the first
  // empty slot, whichever comes first, in `slot` (and `slab` moved to its slab; maps:
  // `word` its pair), or the list's end (`slab` its tail) or the step cap. Each slab is
  // read half at a time (four 16-byte relaxed loads issued together), its second half
  // only when the first has neither. QUIET (a lookup on a table no writer changes while
  // it runs, alone_wide::find_quiet says when): read-only non-coherent loads instead,
  // cached in L1 (u32/u32 lookups 1.20-1.21x on the H200: docs/slabhash.md), that ask L2
  // for the whole line (`.L2::128B`), so that a second half or a slab's next address,
  // read after the first half, waits on L2 rather than memory (absent keys 1.27x).
  //
  // STILL (a deletion in a kernel in which nothing inserts, appends or flushes from its
  // start to its end, anywhere in the grid, so that a slab's words only go from a key to
  // its tombstone while it runs): plain loads cached in L1 that ask L2 for the whole line
  // (mem::ld_weak_v2_line; the graph's undirected deletion on the hollywood shape
  // 1.16-1.21x on the H200, docs/graph.md). L1 is not coherent: a line it holds may be
  // as old as the kernel. A key they show absent was absent when the kernel began and
  // stays so; a key they show present is taken by the atomic that settles the request,
  // which tells a lane whose key another request took first (a duplicate in the batch)
  // that it is gone; no slab is appended. A kernel that also inserts, even before its
  // deletions, must not use it: a stale line could hide a key inserted since.
  template <bool QUIET = false, bool STILL = false>
  __device__ static unsigned look(const table& t, unsigned*& slab, K k, unsigned& slot, word_t& word) {
    for (unsigned depth = 1;; ++depth) {
      unsigned next = NULL_SLAB;
#pragma unroll
      for (unsigned half = 0; half < 2; ++half) {
        const unsigned long long* p = reinterpret_cast<const unsigned long long*>(slab) + 8u * half;
        const ulonglong2 a = read<QUIET, STILL>(p);
        const ulonglong2 b = read<QUIET, STILL>(p + 2);
        const ulonglong2 c = read<QUIET, STILL>(p + 4);
        const ulonglong2 d = read<QUIET, STILL>(p + 6);
        const unsigned long long u[8] = {a.x, a.y, b.x, b.y, c.x, c.y, d.x, d.y};
        unsigned hits = 0u, empties = 0u;
        // From the last slot down, so that `word` ends as the first target's (maps).
#pragma unroll
        for (int j = static_cast<int>(HALF) - 1; j >= 0; --j) {
          if (half * HALF + static_cast<unsigned>(j) < SLOTS) {
            word_t w;
            if constexpr (WORD64) {
              w = u[j];
            } else {
              w = static_cast<unsigned>(u[j / 2] >> (32 * (j % 2)));
            }
            const K key = key_of(w);
            const bool hit = key == k, empty = key == empty_key<K>;
            hits |= (hit ? 1u : 0u) << j;
            empties |= (empty ? 1u : 0u) << j;
            if constexpr (IS_MAP) word = hit || empty ? w : word;
          }
        }
        const unsigned targets = hits | empties;
        if (targets != 0u) {
          const unsigned at = static_cast<unsigned>(__ffs(targets) - 1);
          slot = half * HALF + at;
          return ((hits >> at) & 1u) != 0u ? HIT : FIRST_EMPTY;
        }
        if (half == 1u) next = static_cast<unsigned>(u[7] >> 32);  // lane 31's word
      }
      if (next == NULL_SLAB) return END;
      if (depth >= t.step_cap) return CUT;
      slab = t.slab_at(next);
    }
  }

  // Claims an empty slot for k from `slot` on (slot `slot` seen empty): CAS from EMPTY;
  // a lost CAS tells the slot's word and the lane tries the next slot. OP_ABSENT: claimed
  // (`slot` is where); OP_PRESENT: k was found there first (`seen`: its word); 0xFFFFFFFF:
  // the slab ran out of slots (nothing applied).
  __device__ static unsigned claim(unsigned* slab, unsigned& slot, word_t desired, K k, word_t& seen) {
    for (; slot < SLOTS; ++slot) {
      seen = mem::cas_relaxed(slot_ptr(slab, slot), empty_word(), desired);
      if (seen == empty_word()) return OP_ABSENT;
      if (key_of(seen) == k) return OP_PRESENT;
    }
    return 0xFFFFFFFFu;
  }

  // The word a claim that turned out to duplicate its key leaves in its slot.
  __device__ static word_t tombstone_word() {
    if constexpr (IS_MAP) {
      return pack_pair(TOMBSTONE_KEY, EMPTY_VALUE);
    } else {
      return static_cast<word_t>(tombstone_key<K>);
    }
  }

  // claim for the lanes that `want` (a look that stopped at the first empty slot `slot` of
  // `slab`), all 32 lanes calling. Lanes that saw the same first empty slot of one slab
  // (sorted input: a vertex's arcs, keys of one bucket) would each CAS that slot, one
  // winning a round, so the warp waited one round trip per lane of the largest group.
  // Here the group's distinct keys take slots `slot + rank` at once (rank: among the
  // group's first lanes of each key; a lane whose key a lower lane of its group carries
  // claims the usual way, after them, and finds it). A slot taken that way skipped the
  // group's lower slots without seeing them full, which is sound as long as none of
  // them came to hold the lane's own key: each lower slot holds a key of the group (all
  // distinct) or, where its CAS lost, the word that CAS returned, which the lanes
  // compare. If another writer's k is there, the lane gives its slot back as a tombstone
  // (`wasted`: a slot claimed, no entry; a CAS from its own word, so that a slot some
  // other request changed meanwhile, which needs k's lower copy deleted first, stays as
  // that request left it and counts as added) and claims the usual way from `slot`,
  // which finds k. A lane whose CAS lost, and lanes past the slab's end, claim the usual
  // way too (rank 0 from the slot after, having its word). Same results as claim in a
  // kernel that deletes none of the keys it inserts. Beside deletions of the same keys
  // the give-back can be seen: once the lower copy is deleted, a lookup may have found
  // the lane's copy (present), the next one none (absent), and the lane's claim from
  // `slot` then adds k again (present); the final state and the counts are exact.
  __device__ static unsigned claim_grouped(bool want, unsigned* slab, unsigned& slot, word_t desired, K k,
                                           word_t& seen, bool& wasted) {
    const unsigned below = lanes_below();
    const unsigned long long tag = want ? reinterpret_cast<unsigned long long>(slab) + slot : 0ull;
    const unsigned peers = __match_any_sync(warp::FULL_MASK, tag);
    bool lead = want;
    unsigned rank = 0;
    if (__any_sync(warp::FULL_MASK, want && (peers & (peers - 1u)) != 0u)) {
      const unsigned long long key = want ? static_cast<unsigned long long>(k) : ~0ull;
      const unsigned twins = __match_any_sync(warp::FULL_MASK, key) & peers;
      lead = want && (twins & below) == 0u;
      rank = __popc(__ballot_sync(warp::FULL_MASK, lead) & peers & below);
    }
    bool tried = false, won = false;
    if (lead && slot + rank < SLOTS) {
      tried = true;
      seen = mem::cas_relaxed(slot_ptr(slab, slot + rank), empty_word(), desired);
      won = seen == empty_word();
    }
    const unsigned lost = __ballot_sync(warp::FULL_MASK, tried && !won);
    if (lost != 0u) {
      const K shown = won ? k : tried ? key_of(seen) : empty_key<K>;
      const unsigned same = __match_any_sync(warp::FULL_MASK, static_cast<unsigned long long>(shown));
      if (won && (same & lost & peers & below) != 0u &&
          mem::cas_relaxed(slot_ptr(slab, slot + rank), desired, tombstone_word()) == desired) {
        won = false;
        wasted = true;
      }
    }
    if (!want) return 0xFFFFFFFFu;
    if (won) {
      slot += rank;
      return OP_ABSENT;
    }
    if (tried && rank == 0u) {
      if (key_of(seen) == k) return OP_PRESENT;
      ++slot;
    }
    return claim(slab, slot, desired, k, seen);
  }

  // A set's insert: true when settled (`outcome` OP_ABSENT: added, OP_PRESENT: there).
  // GROUPED: all 32 lanes call (`active`: this lane has a request) and claim through
  // claim_grouped (`wasted`: see there); otherwise an active lane calls alone and claims
  // slot by slot (claim).
  template <bool GROUPED = false>
  __device__ static bool insert(const table& t, bool active, unsigned* slab, K k, unsigned& outcome,
                                bool& wasted) {
    unsigned slot = 0;
    word_t word = 0;
    const unsigned where = !GROUPED || active ? look(t, slab, k, slot, word) : CUT;
    word_t seen;
    unsigned r = 0xFFFFFFFFu;
    if constexpr (GROUPED) {
      r = claim_grouped(where == FIRST_EMPTY, slab, slot, static_cast<word_t>(k), k, seen, wasted);
    } else {
      (void)wasted;
    }
    if (where == HIT) {
      outcome = OP_PRESENT;
      return true;
    }
    if (where != FIRST_EMPTY) return false;
    if constexpr (!GROUPED) r = claim(slab, slot, static_cast<word_t>(k), k, seen);
    if (r == 0xFFFFFFFFu) return false;
    outcome = r;
    return true;
  }

  // A map's REPLACE (unique keys): true when settled (OP_ABSENT: added; OP_PRESENT: the
  // value replaced, `old` the value it had). GROUPED, `active`, `wasted`: as insert's.
  template <bool GROUPED = false>
  __device__ static bool replace(const table& t, bool active, unsigned* slab, K k, unsigned value, unsigned& old,
                                 unsigned& outcome, bool& wasted) {
    static_assert(IS_MAP, "maps only");
    const word_t desired = pack_pair(static_cast<unsigned>(k), value);
    unsigned slot = 0;
    word_t seen = 0;
    const unsigned where = !GROUPED || active ? look(t, slab, k, slot, seen) : CUT;
    unsigned r = 0xFFFFFFFFu;
    if constexpr (GROUPED) {
      r = claim_grouped(where == FIRST_EMPTY, slab, slot, desired, k, seen, wasted);
    } else {
      (void)wasted;
    }
    if (where == FIRST_EMPTY) {
      if constexpr (!GROUPED) r = claim(slab, slot, desired, k, seen);
      if (r == OP_ABSENT) {
        outcome = OP_ABSENT;
        return true;
      }
      if (r != OP_PRESENT) return false;
      // k was claimed there meanwhile: replace its value (`seen` is its pair).
    } else if (where != HIT) {
      return false;
    }
    for (unsigned tries = 0; tries < REPLACE_TRIES; ++tries) {
      if (key_of(seen) != k) return false;  // deleted meanwhile: the warp walk inserts it anew
      const word_t expected = seen;
      seen = mem::cas_relaxed(slot_ptr(slab, slot), expected, desired);
      if (seen == expected) {
        old = static_cast<unsigned>(expected >> 32);
        outcome = OP_PRESENT;
        return true;
      }
    }
    return false;
  }

  // DELETE (unique keys), always settled: OP_PRESENT (removed; maps: `old` its value) or
  // OP_ABSENT; false only at the step cap (the warp walk reports it).
  // STILL: look's plain loads, for a kernel that inserts nothing (see look for the rule).
  template <bool STILL = false>
  __device__ static bool erase(const table& t, unsigned* slab, K k, unsigned& old, unsigned& outcome) {
    unsigned slot = 0;
    word_t word = 0;
    const unsigned where = look<false, STILL>(t, slab, k, slot, word);
    if (where == CUT) return false;
    outcome = OP_ABSENT;
    if (where != HIT) return true;
    if constexpr (IS_MAP) {
      const word_t seen = mem::exch_relaxed(slot_ptr(slab, slot), pack_pair(TOMBSTONE_KEY, EMPTY_VALUE));
      if (key_of(seen) == k) {
        outcome = OP_PRESENT;
        old = static_cast<unsigned>(seen >> 32);
      }
    } else {
      (void)old;
      if (mem::cas_relaxed(slot_ptr(slab, slot), static_cast<word_t>(k), static_cast<word_t>(tombstone_key<K>)) ==
          static_cast<word_t>(k)) {
        outcome = OP_PRESENT;
      }
    }
    return true;
  }

  // SEARCH, always settled but at the step cap: OP_PRESENT (maps: `value`) or OP_ABSENT.
  template <bool QUIET = false>
  __device__ static bool find(const table& t, unsigned* slab, K k, unsigned& value, unsigned& outcome) {
    unsigned slot = 0;
    word_t word = 0;
    const unsigned where = look<QUIET>(t, slab, k, slot, word);
    if (where == CUT) return false;
    outcome = where == HIT ? OP_PRESENT : OP_ABSENT;
    if constexpr (IS_MAP) {
      if (where == HIT) value = static_cast<unsigned>(word >> 32);
    } else {
      (void)value;
    }
    return true;
  }
};

}  // namespace detail
}  // namespace slabhash
}  // namespace gpuds
