// gpuds/slabhash/map_ref.cuh: map_ref, the device view of a SlabHashMap.
//
// A trivially copyable, non-owning ref passed by value into kernels (Rust mirror:
// gpuds_slabhash::MapRef). Every operation is warp-cooperative: all 32 lanes of a
// converged warp call it, each with its own request (`active` false: none), and the warp
// serves the requests one at a time (slab hash paper §IV-A), so a warp may mix keys of
// any buckets. Operations that add slabs take the warp's allocator, made once per warp
// per kernel with `make_allocator()`. Counters (`len`) are kept exact with one atomic
// per operation call and warp.
//
// Keys and values are 32 or 64 bits each (layout.cuh). The paper's u32/u32 pair is one
// 64-bit word: one CAS claims, replaces or deletes it. A wider pair changes in two steps
// under its slot's busy bit (layout.cuh): a claim CASes the key from EMPTY (the bit still
// set from the fresh slab) without waiting for the CAS, like a packed claim; after the
// walk the lanes whose CAS won store their values and clear their bits with a release
// (value store, release clear: a release pattern per lane; one predicated instruction of
// the warp, so one barrier per warp and pass instead of one per claim); lost claims run
// again. A replacement or deletion takes the bit (an atomic OR that found it clear),
// then stores the value (and clears the bit) or the tombstone (and keeps it: a tombstone
// is never changed again before FLUSH). Why readers stay correct: a reader that finds its
// key in a busy slot reads the slab again (bounded by the retry cap) instead of using the
// value, so it never returns a value before the claim that wrote it is published nor one
// a holder is changing; a slot seen not busy holds its key's value of that moment (each
// value is one aligned atomic word). (The QUIET lookups of the bulk kernel, which no
// writer runs beside, skip the bits: every key they can see is published.) Only one
// holder at a time changes a slot's value, so a replacement's old value and a deletion's
// removed value are exact, and a deletion and a replacement of one key take effect in
// the order they took the bit. A holder waits for
// nothing but the end of its warp's walk (its claim) or its own accesses (a replacement
// or deletion), so readers re-read for at most one walk of 32 requests; a store that
// finds its key busy does not re-read but runs again in the next pass, so a warp never
// waits for a claim of its own that it has not published yet.
//
// Operations (the paper's §III-B, plus the dissertation's §5.4 replace result):
//   replace   REPLACE: unique keys; OP_ABSENT (added) or OP_PRESENT (old value out;
//             `old` is meaningful only then)
//   insert    INSERT: duplicates allowed, appended after the key's other instances
//   upsert    replace or insert, as the table was configured
//   erase     DELETE: the least recent instance; OP_PRESENT with its value, or OP_ABSENT
//             (unique keys: one exchange of the pair for a tombstone; duplicates: a CAS)
//   erase_all DELETEALL: every instance; returns how many
//   find      SEARCH: the least recent instance; OP_PRESENT with its value, or OP_ABSENT
//   find_all  SEARCHALL: every value, written to the lane's own buffer; returns how many
//   count     COUNT: how many instances
// A request that is not applied returns OP_FAILED, and a status flag says why: a
// reserved key (EMPTY_KEY, TOMBSTONE_KEY) RESERVED_KEY; an insert whose list is full at
// the step cap LIST_FULL (no list grows past it, see detail/table.cuh); an insert whose
// list cannot take a slab POOL_EXHAUSTED; a request past a cap RETRY_LIMIT. erase_all,
// find_all and count_of report it through their optional `outcome` pointer.
#pragma once
#include <gpuds/slabhash/detail/alone.cuh>
#include <gpuds/slabhash/detail/alone_wide.cuh>
#include <gpuds/slabhash/detail/tile_find.cuh>
#include <gpuds/slabhash/detail/table.cuh>

namespace gpuds {
namespace slabhash {

template <class K, class V>
struct map_ref : detail::table {
  using layout = entry_layout<K, V>;
  static constexpr unsigned KEY_LANES = layout::KEY_LANES;
  static constexpr unsigned SLOTS = layout::SLOTS;
  static_assert(layout::value_lanes_agree(), "value_lane_of_key is value_lane at every slot");

  // An iterator over bucket `b`'s slabs (see slab_iterator: key(lane), value(lane)).
  __device__ slab_iterator<K, V> bucket(unsigned b) const { return iterate<K, V>(b); }

  // Inserting operations take the warp's allocator (make_allocator()) or, for a kernel
  // whose warps rarely allocate, an on_demand_allocator{} (an allocator is then made at
  // each allocation).
  template <class Allocator>
  __device__ unsigned replace(Allocator& allocator, bool active, K key, V value, V& old) const {
    return store(allocator, active, home_of(active, key), key, value, old, true);
  }

  // replace with each lane's home given (see find_in).
  template <class Allocator, class Home>
  __device__ unsigned replace_in(Allocator& allocator, bool active, Home home, K key, V value,
                                 V& old) const {
    return store(allocator, active, home, key, value, old, true);
  }

  template <class Allocator>
  __device__ unsigned insert(Allocator& allocator, bool active, K key, V value) const {
    V ignored;
    return store(allocator, active, home_of(active, key), key, value, ignored, false);
  }

  template <class Allocator>
  __device__ unsigned upsert(Allocator& allocator, bool active, K key, V value, V& old) const {
    return store(allocator, active, home_of(active, key), key, value, old, unique_keys != 0);
  }

  __device__ unsigned find(bool active, K key, V& value) const {
    return find_in(active, fetched_home_of(active, key), key, value);
  }

  // find with each lane's home given (a bucket, or the base slab of a list outside this
  // table's buckets; see detail::table::home_slab), as for every `_in` operation.
  template <class Home>
  __device__ unsigned find_in(bool active, Home home, K key, V& value) const {
    unsigned outcome = OP_ABSENT;
    active = admit(active, key, outcome);
    const unsigned lane = warp::lane_id();
    if constexpr (layout::WIDE) {
      // A slab without the key costs one compare, one ballot and the next address, as at
      // u32 (the lane's word of the key is chosen once per request). On a hit the busy
      // word and the value are shuffled together, before the busy bit is tested: no
      // shuffle waits for another (testing the bit first would put the busy shuffle and
      // the value shuffles one after the other on every hit).
      walk_from(active, home, key, outcome,
           [&](int src, K, unsigned want, unsigned*& slab, unsigned word, unsigned) -> bool {
             const unsigned hits = layout::match_word(word, want);
             if (hits == 0) return !advance(slab, word);
             const unsigned busy_bits = __shfl_sync(warp::FULL_MASK, word, AUX_LANE);
             const int dest = __ffs(hits) - 1;
             const V v = layout::value_at(word, dest);
             if ((busy_bits >> layout::slot_of(dest)) & 1u) return false;  // being changed: re-read
             if (lane == static_cast<unsigned>(src)) {
               outcome = OP_PRESENT;
               value = v;
             }
             return true;
           });
    } else {
      walk_from(active, home, key, outcome,
           [&](int src, K k, unsigned, unsigned*& slab, unsigned word, unsigned) -> bool {
             const unsigned hits = __ballot_sync(warp::FULL_MASK, word == k) & KEY_LANES;
             if (hits != 0) {
               // __ffs is one-based: the lane after the key, which holds its value.
               const unsigned v = __shfl_sync(warp::FULL_MASK, word, __ffs(hits));
               if (lane == static_cast<unsigned>(src)) {
                 outcome = OP_PRESENT;
                 value = static_cast<V>(v);
               }
               return true;
             }
             return !advance(slab, word);
           });
    }
    return outcome;
  }

  // The lane-alone forms of replace_in, erase_in and find_in (see
  // set_ref::insert_alone_in): each lane first runs its own request alone, and the
  // requests it leaves run through the warp walk. Packed pairs (u32/u32) run all three
  // alone (detail/alone.cuh); wide pairs run find and erase by tiles of 8 lanes, one slab
  // per tile (detail/tile_find.cuh; the QUIET find below runs alone), and replace each
  // lane alone (detail/alone_wide.cuh, which reads half of a slab's keys first: 1.14x /
  // 1.15x the tiles' rate at u64/u64 / u64/u32 on the H200, and 1.03x reading all the
  // keys at once at u32/u64). Replace and erase need unique keys (find runs first with
  // duplicates too: the first instance in list order is the least recent one); otherwise
  // they are the `_in` forms.
  // GROUPED: as set_ref::insert_alone_in's, with the same rule on deletions beside it
  // (packed pairs; wide pairs ignore it).
  template <bool GROUPED = false, class Allocator, class Home>
  __device__ unsigned replace_alone_in(Allocator& allocator, bool active, Home home, K key, V value,
                                       V& old) const {
    unsigned outcome = OP_ABSENT;
    active = admit(active, key, outcome);
    bool settled = false, wasted = false;
    if constexpr (layout::WIDE) {
      V was{};
      settled = active && unique_keys != 0 &&
                detail::alone_wide<K, V>::replace(*this, home_slab(home), key, value, was, outcome);
      if (settled && outcome == OP_PRESENT) old = was;
    } else {
      unsigned was = 0;
      if constexpr (GROUPED) {
        settled = unique_keys != 0 &&
                  detail::alone<K, V>::template replace<true>(*this, active, active ? home_slab(home) : nullptr, key,
                                                              static_cast<unsigned>(value), was, outcome, wasted) &&
                  active;
      } else {
        settled = active && unique_keys != 0 &&
                  detail::alone<K, V>::replace(*this, true, home_slab(home), key, static_cast<unsigned>(value), was,
                                               outcome, wasted);
      }
      if (settled && outcome == OP_PRESENT) old = static_cast<V>(was);
    }
    const unsigned added = __popc(__ballot_sync(warp::FULL_MASK, settled && outcome == OP_ABSENT));
    count(added, GROUPED ? added + __popc(__ballot_sync(warp::FULL_MASK, wasted)) : added);
    const bool left = active && !settled;
    if (__any_sync(warp::FULL_MASK, left)) {
      V rest_old{};
      const unsigned rest = replace_in(allocator, left, home, key, value, rest_old);
      if (left) {
        outcome = rest;
        if (rest == OP_PRESENT) old = rest_old;
      }
    }
    return outcome;
  }

  // `want_value` false: the caller ignores `value`, and a wide pair's slot is then taken by
  // a relaxed OR with no value read (tile_find::erase; 3.6x as fast for bulk deletions).
  // STILL (only for a kernel in which nothing inserts into the table from its start to its
  // end, anywhere in the grid; detail::alone::look states the rule): a packed pair's lane
  // reads with plain loads cached in L1 (detail::alone::look says why that is exact).
  template <bool STILL = false, class Home>
  __device__ unsigned erase_alone_in(bool active, Home home, K key, V& value, bool want_value = true) const {
    unsigned outcome = OP_ABSENT;
    active = admit(active, key, outcome);
    bool settled = false;
    if constexpr (layout::WIDE) {
      V was{};
      // By every lane (the tiles' ballots): a lane takes part without a request.
      settled = detail::tile_find<K, V>::erase(*this, active && unique_keys != 0, home_slab(home), key, was,
                                                outcome, want_value);
      if (settled && outcome == OP_PRESENT) value = was;
    } else {
      unsigned was = 0;
      settled = active && unique_keys != 0 &&
                detail::alone<K, V>::template erase<STILL>(*this, home_slab(home), key, was, outcome);
      if (settled && outcome == OP_PRESENT) value = static_cast<V>(was);
    }
    const unsigned removed = __popc(__ballot_sync(warp::FULL_MASK, settled && outcome == OP_PRESENT));
    count(-static_cast<long long>(removed), 0);
    const bool left = active && !settled;
    if (__any_sync(warp::FULL_MASK, left)) {
      V rest_value{};
      const unsigned rest = erase_in(left, home, key, rest_value);
      if (left) {
        outcome = rest;
        if (rest == OP_PRESENT) value = rest_value;
      }
    }
    return outcome;
  }

  template <class Home>
  __device__ unsigned find_alone_in(bool active, Home home, K key, V& value) const {
    return find_alone_in<false>(active, home, key, value);
  }

  // find_alone_in on a table that no writer changes while the call runs (QUIET: the bulk
  // lookup kernel): wide pairs are then looked up by each lane alone, reading key lanes
  // only (detail::alone_wide::find_quiet), instead of by tiles.
  template <bool QUIET, class Home>
  __device__ unsigned find_alone_in(bool active, Home home, K key, V& value) const {
    unsigned outcome = OP_ABSENT;
    active = admit(active, key, outcome);
    bool settled = false;
    if constexpr (layout::WIDE && QUIET) {
      V was{};
      settled = active && detail::alone_wide<K, V>::find_quiet(*this, home_slab(home), key, was, outcome);
      if (settled && outcome == OP_PRESENT) value = was;
    } else if constexpr (layout::WIDE) {
      V was{};
      settled = detail::tile_find<K, V>::find(*this, active, home_slab(home), key, was, outcome);
      if (settled && outcome == OP_PRESENT) value = was;
    } else {
      unsigned was = 0;
      settled = active && detail::alone<K, V>::template find<QUIET>(*this, home_slab(home), key, was, outcome);
      if (settled && outcome == OP_PRESENT) value = static_cast<V>(was);
    }
    const bool left = active && !settled;
    if (__any_sync(warp::FULL_MASK, left)) {
      V rest_value{};
      const unsigned rest = find_in(left, home, key, rest_value);
      if (left) {
        outcome = rest;
        if (rest == OP_PRESENT) value = rest_value;
      }
    }
    return outcome;
  }

  __device__ unsigned erase(bool active, K key, V& value) const {
    return erase_in(active, fetched_home_of(active, key), key, value);
  }

  template <class Home>
  __device__ unsigned erase_in(bool active, Home home, K key, V& value) const {
    unsigned outcome = OP_ABSENT;
    active = admit(active, key, outcome);
    const unsigned lane = warp::lane_id();
    if constexpr (layout::WIDE) {
      // The least recent instance not already taken: its lane takes the slot's busy bit,
      // reads the value and tombstones the key (keeping the bit); a slot that is busy, or
      // taken first by another warp, is read again.
      walk_from(active, home, key, outcome,
           [&](int src, K, unsigned want, unsigned*& slab, unsigned word, unsigned) -> bool {
             bool finished;
             const int dest = first_settled(want, slab, word, finished);
             if (dest < 0) return finished;
             bool won = false;
             if (lane == static_cast<unsigned>(src)) {
               won = take_slot(slab, layout::slot_of(dest));
               if (won) {
                 value = mem::ld_relaxed(layout::value_ptr(slab, dest));
                 mem::st_relaxed(layout::key_ptr(slab, dest), tombstone_key<K>);
                 outcome = OP_PRESENT;
               }
             }
             return __ballot_sync(warp::FULL_MASK, won) != 0u;
           });
    } else if (unique_keys != 0) {
      // Unique keys: the request's lane exchanges the pair it found for a tombstone and
      // the walk goes straight on to the next request; the exchange's result (read after
      // the walk) says whether this request removed the key. A slot seen holding k holds
      // k (perhaps with a newer value) or a tombstone until FLUSH, so the exchange either
      // removes k with the value it had at that moment, or finds the tombstone of a
      // concurrent DELETE of the same key, which removed the only instance: k is absent.
      unsigned long long seen = pack_pair(EMPTY_KEY, EMPTY_VALUE);
      walk_from(active, home, key, outcome,
           [&](int src, K k, unsigned, unsigned*& slab, unsigned word, unsigned) -> bool {
             const unsigned hits = __ballot_sync(warp::FULL_MASK, word == k) & KEY_LANES;
             if (hits == 0) return !advance(slab, word);
             const int dest = __ffs(hits) - 1;
             exch_pair_relaxed_if(lane == static_cast<unsigned>(src), slab + dest,
                                  pack_pair(TOMBSTONE_KEY, EMPTY_VALUE), seen);
             return true;
           });
      if (active && outcome != OP_FAILED &&
          static_cast<unsigned>(seen) == static_cast<unsigned>(key)) {
        outcome = OP_PRESENT;
        value = static_cast<V>(static_cast<unsigned>(seen >> 32));
      }
    } else {
      // Duplicates: a lost race must look further (a later instance), so each CAS is
      // checked before the walk moves on.
      walk_from(active, home, key, outcome,
           [&](int src, K k, unsigned, unsigned*& slab, unsigned word, unsigned) -> bool {
             const unsigned hits = __ballot_sync(warp::FULL_MASK, word == k) & KEY_LANES;
             if (hits == 0) return !advance(slab, word);
             const int dest = __ffs(hits) - 1;
             const unsigned v = __shfl_sync(warp::FULL_MASK, word, dest + 1);
             bool won = false;
             if (lane == static_cast<unsigned>(src)) {
               const unsigned long long expected = pack_pair(k, v);
               won = mem::cas_relaxed(reinterpret_cast<unsigned long long*>(slab + dest),
                                      expected, pack_pair(TOMBSTONE_KEY, v)) == expected;
               if (won) {
                 outcome = OP_PRESENT;
                 value = static_cast<V>(v);
               }
             }
             return __ballot_sync(warp::FULL_MASK, won) != 0u;  // lost a race: re-read
           });
    }
    const unsigned removed = __popc(__ballot_sync(warp::FULL_MASK, outcome == OP_PRESENT));
    count(-static_cast<long long>(removed), 0);
    return outcome;
  }

  // `*outcome_out` (when not null) gets OP_FAILED when the request was cut off by a cap
  // (some instances may be left), else OP_PRESENT (some removed) or OP_ABSENT.
  __device__ unsigned erase_all(bool active, K key, unsigned* outcome_out = nullptr) const {
    unsigned outcome = OP_ABSENT;
    active = admit(active, key, outcome);
    const unsigned lane = warp::lane_id();
    unsigned removed = 0;
    if constexpr (layout::WIDE) {
      // Each instance's key lane takes its slot and tombstones the key; busy instances and
      // ones taken first by another warp are read again.
      walk(active, key, outcome,
           [&](int src, K, unsigned want, unsigned*& slab, unsigned word, unsigned) -> bool {
             const unsigned hits = layout::match_word(word, want);
             if (hits == 0) return !advance(slab, word);
             const unsigned free_hits = hits & ~layout::busy(word);
             bool won = false;
             if ((free_hits >> lane) & 1u) {
               won = take_slot(slab, layout::slot_of(lane));
               if (won) mem::st_relaxed(layout::key_ptr(slab, lane), tombstone_key<K>);
             }
             const unsigned wins = __ballot_sync(warp::FULL_MASK, won);
             if (lane == static_cast<unsigned>(src)) removed += __popc(wins);
             if (wins != hits) return false;
             return !advance(slab, word);
           });
    } else {
    walk(
        active, key, outcome,
        [&](int src, K k, unsigned, unsigned*& slab, unsigned word, unsigned) -> bool {
          const unsigned neighbour = __shfl_down_sync(warp::FULL_MASK, word, 1);
          const unsigned hits = __ballot_sync(warp::FULL_MASK, word == k) & KEY_LANES;
          if (hits == 0) return !advance(slab, word);
          bool won = false;
          if ((hits >> lane) & 1u) {
            const unsigned long long expected = pack_pair(k, neighbour);
            won = mem::cas_relaxed(reinterpret_cast<unsigned long long*>(slab + lane), expected,
                                   pack_pair(TOMBSTONE_KEY, neighbour)) == expected;
          }
          const unsigned wins = __ballot_sync(warp::FULL_MASK, won);
          if (lane == static_cast<unsigned>(src)) removed += __popc(wins);
          if (wins != hits) return false;  // some instance changed under us: re-read
          return !advance(slab, word);
        });
    }
    count(-static_cast<long long>(warp::sum(static_cast<unsigned long long>(removed))), 0);
    if (outcome_out != nullptr) {
      *outcome_out = outcome == OP_FAILED ? OP_FAILED : (removed != 0 ? OP_PRESENT : OP_ABSENT);
    }
    return removed;
  }

  // Writes up to `capacity` values of `key` to `out` (this lane's buffer) and returns
  // how many instances there are (possibly more than `capacity`). `*outcome_out` (when
  // not null) gets OP_FAILED when the request was cut off by a cap (the count is partial),
  // else OP_PRESENT or OP_ABSENT.
  __device__ unsigned find_all(bool active, K key, V* out, unsigned capacity,
                               unsigned* outcome_out = nullptr) const {
    unsigned outcome = OP_ABSENT;
    active = admit(active, key, outcome);
    const unsigned lane = warp::lane_id();
    unsigned found = 0;
    if constexpr (layout::WIDE) {
      walk(active, key, outcome,
           [&](int src, K, unsigned want, unsigned*& slab, unsigned word, unsigned) -> bool {
             const unsigned hits = layout::match_word(word, want);
             if (hits != 0) {
               if ((hits & layout::busy(word)) != 0u) return false;  // being changed: re-read
               const unsigned before = __shfl_sync(warp::FULL_MASK, found, src);
               V* dst = warp::broadcast(out, src);
               const unsigned cap = __shfl_sync(warp::FULL_MASK, capacity, src);
               // Key lanes write their slot's value.
               const V v = layout::own_value(word);
               if ((hits >> lane) & 1u) {
                 const unsigned rank = before + __popc(hits & lanes_below());
                 if (rank < cap) dst[rank] = v;
               }
               if (lane == static_cast<unsigned>(src)) found += __popc(hits);
             }
             return !advance(slab, word);
           });
    } else {
    walk(
        active, key, outcome,
        [&](int src, K k, unsigned, unsigned*& slab, unsigned word, unsigned) -> bool {
          const unsigned hits = __ballot_sync(warp::FULL_MASK, word == k) & KEY_LANES;
          if (hits != 0) {
            const unsigned before = __shfl_sync(warp::FULL_MASK, found, src);
            V* dst = warp::broadcast(out, src);
            const unsigned cap = __shfl_sync(warp::FULL_MASK, capacity, src);
            // Value lanes write: lane i + 1 holds the value of the key on lane i.
            if (lane > 0 && ((hits >> (lane - 1)) & 1u)) {
              const unsigned rank = before + __popc(hits & lanes_below() & ~(1u << (lane - 1)));
              if (rank < cap) dst[rank] = static_cast<V>(word);
            }
            if (lane == static_cast<unsigned>(src)) found += __popc(hits);
          }
          return !advance(slab, word);
        });
    }
    if (outcome_out != nullptr) {
      *outcome_out = outcome == OP_FAILED ? OP_FAILED : (found != 0 ? OP_PRESENT : OP_ABSENT);
    }
    return found;
  }

  __device__ unsigned count_of(bool active, K key, unsigned* outcome_out = nullptr) const {
    return find_all(active, key, nullptr, 0, outcome_out);
  }

 private:
  // Wide layouts: the first slot holding the key (`want`: this lane's word of it, see
  // lane_key_word) in the slab the lanes hold (its key lane), or
  // -1 with `finished` set to what the visit returns: no instance here (move on, finished
  // at the tail), or the first instance busy (false: read the slab again).
  __device__ int first_settled(unsigned want, unsigned*& slab, unsigned word, bool& finished) const {
    const unsigned hits = layout::match_word(word, want);
    if (hits == 0) {
      finished = !advance(slab, word);
      return -1;
    }
    const int dest = __ffs(hits) - 1;
    if (layout::is_busy(word, dest)) {
      finished = false;
      return -1;
    }
    return dest;
  }

  // An inserting request's outcome while it waits for a slab at the end of its list.
  static constexpr unsigned NEEDS_SLAB = 4;

  // REPLACE (unique) or INSERT (duplicates): the first slot holding the key (REPLACE
  // only) or the first empty slot, whichever comes first in list order; with neither,
  // the next slab, appended when the list ends. The request's own lane makes the CAS
  // (it holds the key and value).
  template <class Allocator, class Home>
  __device__ unsigned store(Allocator& allocator, bool active, Home home, K key, V value, V& old,
                            bool unique) const {
    unsigned outcome = OP_ABSENT;
    active = admit(active, key, outcome);
    const unsigned lane = warp::lane_id();
    // The walk does not wait for a request's CAS: it goes on to the next request, and
    // each lane checks its own CAS after the walk; requests whose CAS lost run again
    // (another pass over the lanes that lost), bounded by retry_cap() passes. A lane keeps
    // what it needs to check its CAS in registers it has anyway: `outcome` says whether
    // it replaces (OP_PRESENT) or claims, `old` holds the value a replacement expects,
    // and `seen` the pair the CAS returned. Later requests of the warp may read slabs
    // before an earlier CAS lands (the walk reads ahead anyway); that is safe because a
    // CAS only succeeds on exactly the pair its request saw: a claim of a slot still
    // empty is at the list's first empty slot with no earlier instance of the key (empty
    // slots are a suffix and claimed slots never change key), and a lost one changes
    // nothing.
    // A request that reaches the end of its list stops there; the slab is appended
    // after the walk, where the allocator's registers are not live together with the
    // walk's, and the request runs again.
    unsigned long long seen = 0;
    // Wide layouts: what a claim's CAS of the key found (EMPTY: the claim won), checked
    // after the walk like a packed CAS; `seen` then holds the claimed slot (slab | slot).
    // A request makes at most one claim in a pass (a claim ends its visit), so `claimed`
    // is set to the CAS's expected EMPTY once per pass, before the walk, not per claim.
    K claimed = empty_key<K>;
    bool pending = active;
    for (unsigned pass = 1;; ++pass) {
      if constexpr (layout::WIDE) claimed = empty_key<K>;
      walk_from(pending, home, key, outcome,
           [&](int src, K k, unsigned want, unsigned*& slab, unsigned word, unsigned depth) -> bool {
             unsigned hits, empties;
             if constexpr (layout::WIDE) {
               hits = unique ? layout::match_word(word, want) : 0u;
               empties = layout::empties(word);
             } else {
               hits = unique ? __ballot_sync(warp::FULL_MASK, word == k) & KEY_LANES : 0u;
               empties = __ballot_sync(warp::FULL_MASK, word == EMPTY_KEY) & KEY_LANES;
             }
             const unsigned targets = hits | empties;
             if (targets == 0) {
               if (advance(slab, word)) return false;
               // The list ends here. At the step cap the request fails (LIST_FULL);
               // otherwise it stops and keeps its tail in `seen`, a slab is appended
               // after the walk and the request runs again.
               if (!may_append(depth)) {
                 if (lane == static_cast<unsigned>(src)) outcome = OP_FAILED;
                 return true;
               }
               if (lane == static_cast<unsigned>(src)) {
                 outcome = NEEDS_SLAB;
                 seen = reinterpret_cast<unsigned long long>(slab);
               }
               return true;
             }
             const int dest = __ffs(targets) - 1;
             const bool replace_here = (hits >> dest) & 1u;
             if constexpr (layout::WIDE) {
               const bool mine = lane == static_cast<unsigned>(src);
               if (!replace_here) {
                 // A claim: CAS the key from EMPTY (the slot's busy bit is set since its
                 // slab was fresh) and go on; the CAS is checked, the value stored and the
                 // bit cleared after the walk. The request's lane CASes its own key (k
                 // there), so that the walk keeps only this lane's word of k.
                 // Selects, not a branch (as in the packed path).
                 outcome = mine ? (unique ? OP_ABSENT : OP_ADDED) : outcome;
                 seen = mine ? reinterpret_cast<unsigned long long>(slab) | layout::slot_of(dest)
                             : seen;
                 cas_relaxed_if(mine, layout::key_ptr(slab, dest), key, claimed);
                 return true;
               }
               if (layout::is_busy(word, dest)) {
                 // Being claimed or changed (perhaps by this warp, whose claims are only
                 // published after the walk): the request runs again in the next pass.
                 outcome = mine ? BUSY_SEEN : outcome;
                 return true;
               }
               return replace_wide(mine, value, slab, dest, outcome, old);
             } else {
             unsigned ev = EMPTY_VALUE;
             if (replace_here) ev = __shfl_sync(warp::FULL_MASK, word, dest + 1);
             // Selects rather than a branch, so that the CAS stays one predicated
             // instruction whose result lands in `seen` without a move.
             const bool mine = lane == static_cast<unsigned>(src);
             outcome = mine ? (replace_here ? OP_PRESENT : (unique ? OP_ABSENT : OP_ADDED))
                            : outcome;
             old = mine && replace_here ? static_cast<V>(ev) : old;
             if (mine) seen = pack_pair(replace_here ? k : EMPTY_KEY, ev);
             cas_pair_relaxed_if(mine, slab + dest, pack_pair(k, static_cast<unsigned>(value)),
                                 seen);
             return true;
             }
           });
      // A pending request that did not fail either issued its CAS, which lost when the
      // pair it returned is not the one the request saw, or stopped at the end of its
      // list: the warp appends a slab there (or finds one another warp appended) for
      // each such request, one at a time, and the request runs again.
      bool lost = false;
      if (pending && outcome == NEEDS_SLAB) {
        lost = true;
      } else if (layout::PACKED && pending && outcome != OP_FAILED) {
        const bool replacing = outcome == OP_PRESENT;
        lost = seen != (replacing ? pack_pair(static_cast<unsigned>(key), static_cast<unsigned>(old))
                                  : pack_pair(EMPTY_KEY, EMPTY_VALUE));
      }
      if constexpr (layout::WIDE) {
        if (pending && outcome == BUSY_SEEN) lost = true;
        lost |= publish_claims(pending && (outcome == OP_ABSENT || outcome == OP_ADDED),
                               claimed, seen, value);
      }
      for (unsigned ends = __ballot_sync(warp::FULL_MASK, pending && outcome == NEEDS_SLAB);
           ends != 0u; ends &= ends - 1u) {
        const int src = __ffs(ends) - 1;
        unsigned* tail = reinterpret_cast<unsigned*>(__shfl_sync(warp::FULL_MASK, seen, src));
        if (!append(allocator, tail) && lane == static_cast<unsigned>(src)) {
          outcome = OP_FAILED;  // pool exhausted
          lost = false;
        }
      }
      if (!__any_sync(warp::FULL_MASK, lost)) break;
      if (pass >= retry_cap()) {
        report(status::RETRY_LIMIT);
        if (lost) outcome = OP_FAILED;
        break;
      }
      pending = lost;
    }
    const unsigned added =
        __popc(__ballot_sync(warp::FULL_MASK, outcome == OP_ABSENT || outcome == OP_ADDED) &
               __ballot_sync(warp::FULL_MASK, active));
    count(added, added);
    return outcome;
  }

  // A wide request that saw its key in a busy slot (outcome while it waits for the next
  // pass).
  static constexpr unsigned BUSY_SEEN = 5;

  // One visit of a wide REPLACE at the slot holding its key (key lane `dest`, seen not
  // busy), by all lanes; the request's lane (`mine`) takes the slot (its busy bit),
  // replaces the value and releases the slot. True when the request is done; false (the
  // slot taken first by another warp) re-reads the slab.
  __device__ bool replace_wide(bool mine, V value, unsigned* slab, int dest, unsigned& outcome,
                               V& old) const {
    bool done = false;
    if (mine) {
      const unsigned slot = layout::slot_of(static_cast<unsigned>(dest));
      done = take_slot(slab, slot);
      if (done) {
        V* const at = layout::value_ptr(slab, dest);
        old = mem::ld_relaxed(at);
        outcome = OP_PRESENT;
        mem::st_relaxed(at, value);
        release_slot(slab, slot);
      }
    }
    return __ballot_sync(warp::FULL_MASK, done) != 0u;
  }

  // After a wide walk, by all lanes: each lane whose request issued a claim (`claiming`)
  // checks its CAS (`claimed`: what it found). A won claim stores its value in the slot
  // (`where`: slab | slot) and clears the slot's busy bit with a release, all the warp's
  // won claims with one instruction and so behind one barrier (a release pattern per lane:
  // its value store, then its release clear), so that a reader that sees the bit clear
  // sees the value. Returns whether this lane's claim lost (its request runs again).
  // `where` packs the slot into the slab address's low 7 bits: every slab is a 128-byte
  // aligned line (the base slabs' array and the pool's 128-byte units start at allocation
  // boundaries).
  __device__ bool publish_claims(bool claiming, K claimed, unsigned long long where,
                                 V value) const {
    const bool won = claiming && claimed == empty_key<K>;
    unsigned* const slab = reinterpret_cast<unsigned*>(where & ~static_cast<unsigned long long>(SLAB_WORDS * 4 - 1));
    const unsigned slot = static_cast<unsigned>(where) & (SLAB_WORDS * 4 - 1);
    st_relaxed_if(won, layout::value_ptr(slab, layout::key_lane(slot)), value);
    clear_busy_release_if(won, slab, slot);
    return claiming && !won;
  }
};

}  // namespace slabhash
}  // namespace gpuds
