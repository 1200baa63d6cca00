// gpuds/slabhash/set_ref.cuh: set_ref, the device view of a SlabHashSet.
//
// The dissertation's concurrent set (Awad, 2022, §5.4): the slab list of map_ref with no
// values, 30 32-bit keys or 15 64-bit keys per slab (layout.cuh), each claimed and
// deleted by one CAS of its 32 or 64 bits; keys are unique. Same calling rules as map_ref: all 32
// lanes call each operation, `active` says whether a lane has a request, inserting
// operations take the warp's allocator (`make_allocator()`, once per warp per kernel).
//
//   insert  OP_ABSENT: added; OP_PRESENT: it was there already
//   erase   OP_PRESENT: removed (left as a tombstone until FLUSH); OP_ABSENT: not there
//   find    OP_PRESENT or OP_ABSENT
// Each returns OP_FAILED for a request that was not applied (a status flag says why:
// LIST_FULL, POOL_EXHAUSTED, RETRY_LIMIT, RESERVED_KEY).
#pragma once
#include <gpuds/slabhash/detail/alone.cuh>
#include <gpuds/slabhash/detail/table.cuh>

namespace gpuds {
namespace slabhash {

template <class K>
struct set_ref : detail::table {
  using layout = entry_layout<K, no_value>;
  static_assert(layout::PACKED, "a set's key is one word");
  static constexpr unsigned KEY_LANES = layout::KEY_LANES;
  static constexpr unsigned SLOTS = layout::SLOTS;

  // An iterator over bucket `b`'s slabs (see slab_iterator).
  __device__ slab_iterator<K, no_value> bucket(unsigned b) const { return iterate<K, no_value>(b); }

  // `allocator`: the warp's (make_allocator()) or a detail::on_demand_allocator, as for
  // map_ref.
  template <class Allocator>
  __device__ unsigned insert(Allocator& allocator, bool active, K key) const {
    return insert_in(allocator, active, home_of(active, key), key);
  }

  // Each operation with each lane's home given: a bucket, or the base slab of a list
  // outside this table's buckets (see detail::table::home_slab).
  template <class Allocator, class Home>
  __device__ unsigned insert_in(Allocator& allocator, bool active, Home home, K key) const {
    unsigned outcome = OP_ABSENT;
    active = admit(active, key, outcome);
    const unsigned lane = warp::lane_id();
    walk_from(
        active, home, key, outcome,
        [&](int src, K k, unsigned want, unsigned*& slab, unsigned word, unsigned depth) -> bool {
          const unsigned hits = layout::match_word(word, want);
          const unsigned empties = layout::empties(word);
          const unsigned targets = hits | empties;
          if (targets == 0) {
            if (move_on(allocator, slab, word, depth)) return false;
            if (lane == static_cast<unsigned>(src)) outcome = OP_FAILED;  // list full, pool exhausted
            return true;
          }
          const int dest = __ffs(targets) - 1;
          if ((hits >> dest) & 1u) {
            if (lane == static_cast<unsigned>(src)) outcome = OP_PRESENT;
            return true;
          }
          if (!elected_cas(slab, lane, dest, empty_key<K>, k)) return false;  // lost a race: re-read
          if (lane == static_cast<unsigned>(src)) outcome = OP_ABSENT;
          return true;
        });
    const unsigned added = __popc(__ballot_sync(warp::FULL_MASK, active && outcome == OP_ABSENT));
    count(added, added);
    return outcome;
  }

  // The lane-alone forms of insert_in, erase_in and find_in (detail/alone.cuh): each
  // lane first runs its own request alone, reading its list with 16-byte loads, which
  // settles most requests in a few warp instructions for the whole warp; the requests
  // it leaves (a list that ends full and needs a slab, a list longer than the step cap,
  // a claim that lost every remaining slot of its slab) then run
  // through the warp walk as in the `_in` forms. Same calls, results and counters as
  // those; for tables whose lanes' lists are mostly one or two slabs (a graph's
  // adjacency tables), where the warp walk's instructions per request are the cost.
  //
  // GROUPED: the lanes of the warp that stop at one slab's first empty slot claim slots
  // side by side (detail::alone::claim_grouped), where each would otherwise CAS the
  // same slot in turn: for input grouped by list (a graph's arcs, sorted by source);
  // with random keys under contention it measured 0.88-0.95x (docs/slabhash.md). Not
  // beside deletions of the same keys, where a lookup can see a key come and go while an
  // insertion of it settles (detail::alone::claim_grouped; final state and counts exact).
  template <bool GROUPED = false, class Allocator, class Home>
  __device__ unsigned insert_alone_in(Allocator& allocator, bool active, Home home, K key) const {
    unsigned outcome = OP_ABSENT;
    active = admit(active, key, outcome);
    bool wasted = false;
    bool settled;
    if constexpr (GROUPED) {
      settled = detail::alone<K, no_value>::template insert<true>(*this, active, active ? home_slab(home) : nullptr,
                                                                  key, outcome, wasted) &&
                active;
    } else {
      settled =
          active && detail::alone<K, no_value>::insert(*this, true, home_slab(home), key, outcome, wasted);
    }
    const unsigned added = __popc(__ballot_sync(warp::FULL_MASK, settled && outcome == OP_ABSENT));
    count(added, GROUPED ? added + __popc(__ballot_sync(warp::FULL_MASK, wasted)) : added);
    const bool left = active && !settled;
    if (__any_sync(warp::FULL_MASK, left)) {
      const unsigned rest = insert_in(allocator, left, home, key);
      if (left) outcome = rest;
    }
    return outcome;
  }

  // STILL (only for a kernel in which nothing inserts into the table from its start to its
  // end, anywhere in the grid; detail::alone::look states the rule): the lane's reads are
  // plain loads cached in L1 (detail::alone::look says why that is exact).
  template <bool STILL = false, class Home>
  __device__ unsigned erase_alone_in(bool active, Home home, K key) const {
    unsigned outcome = OP_ABSENT;
    active = admit(active, key, outcome);
    unsigned unused = 0;
    const bool settled =
        active && detail::alone<K, no_value>::template erase<STILL>(*this, home_slab(home), key, unused, outcome);
    const unsigned removed = __popc(__ballot_sync(warp::FULL_MASK, settled && outcome == OP_PRESENT));
    count(-static_cast<long long>(removed), 0);
    const bool left = active && !settled;
    if (__any_sync(warp::FULL_MASK, left)) {
      const unsigned rest = erase_in(left, home, key);
      if (left) outcome = rest;
    }
    return outcome;
  }

  template <class Home>
  __device__ unsigned find_alone_in(bool active, Home home, K key) const {
    return find_alone_in<false>(active, home, key);
  }

  // find_alone_in on a table that no writer changes while the call runs (QUIET: the bulk
  // lookup kernel), with read-only non-coherent loads (map_ref::find_alone_in).
  template <bool QUIET, class Home>
  __device__ unsigned find_alone_in(bool active, Home home, K key) const {
    unsigned outcome = OP_ABSENT;
    active = admit(active, key, outcome);
    unsigned unused = 0;
    const bool settled =
        active && detail::alone<K, no_value>::template find<QUIET>(*this, home_slab(home), key, unused, outcome);
    const bool left = active && !settled;
    if (__any_sync(warp::FULL_MASK, left)) {
      const unsigned rest = find_in(left, home, key);
      if (left) outcome = rest;
    }
    return outcome;
  }

  __device__ unsigned erase(bool active, K key) const {
    return erase_in(active, fetched_home_of(active, key), key);
  }

  template <class Home>
  __device__ unsigned erase_in(bool active, Home home, K key) const {
    unsigned outcome = OP_ABSENT;
    active = admit(active, key, outcome);
    const unsigned lane = warp::lane_id();
    walk_from(
        active, home, key, outcome,
        [&](int src, K k, unsigned want, unsigned*& slab, unsigned word, unsigned) -> bool {
          const unsigned hits = layout::match_word(word, want);
          if (hits == 0) return !advance(slab, word);
          const int dest = __ffs(hits) - 1;
          if (!elected_cas(slab, lane, dest, k, tombstone_key<K>)) return false;
          if (lane == static_cast<unsigned>(src)) outcome = OP_PRESENT;
          return true;
        });
    const unsigned removed = __popc(__ballot_sync(warp::FULL_MASK, outcome == OP_PRESENT));
    count(-static_cast<long long>(removed), 0);
    return outcome;
  }

  __device__ unsigned find(bool active, K key) const {
    return find_in(active, fetched_home_of(active, key), key);
  }

  template <class Home>
  __device__ unsigned find_in(bool active, Home home, K key) const {
    unsigned outcome = OP_ABSENT;
    active = admit(active, key, outcome);
    const unsigned lane = warp::lane_id();
    walk_from(
        active, home, key, outcome,
        [&](int src, K, unsigned want, unsigned*& slab, unsigned word, unsigned) -> bool {
          if (layout::match_word(word, want) != 0u) {
            if (lane == static_cast<unsigned>(src)) outcome = OP_PRESENT;
            return true;
          }
          return !advance(slab, word);
        });
    return outcome;
  }
};

}  // namespace slabhash
}  // namespace gpuds
