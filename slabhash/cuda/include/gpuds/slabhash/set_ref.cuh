// gpuds/slabhash/set_ref.cuh: set_ref, the device view of a SlabHashSet.
//
// The dissertation's concurrent set (Awad, 2022, §5.4): the slab list of map_ref with 30
// keys per slab and no values; keys are unique. Same calling rules as map_ref: all 32
// lanes call each operation, `active` says whether a lane has a request, inserting
// operations take the warp's allocator (`make_allocator()`, once per warp per kernel).
//
//   insert  OP_ABSENT: added; OP_PRESENT: it was there already
//   erase   OP_PRESENT: removed (left as a tombstone until FLUSH); OP_ABSENT: not there
//   find    OP_PRESENT or OP_ABSENT
#pragma once
#include <gpuds/slabhash/detail/table.cuh>

namespace gpuds {
namespace slabhash {

template <class K>
struct set_ref : detail::table {
  static_assert(sizeof(K) == 4, "set_ref stores 32-bit keys");
  static constexpr unsigned KEY_LANES = SET_KEY_LANES;
  static constexpr unsigned SLOTS = 30;

  __device__ alloc::warp_allocator make_allocator() const {
    return alloc::warp_allocator(alloc);
  }

  // An iterator over bucket `b`'s slabs (see slab_iterator).
  __device__ slab_iterator bucket(unsigned b) const { return iterate(b, KEY_LANES); }

  __device__ unsigned insert(alloc::warp_allocator& allocator, bool active, K key) const {
    unsigned outcome = OP_ABSENT;
    active = admit(active, key, outcome);
    const unsigned lane = warp::lane_id();
    walk_cas(
        active, key, outcome,
        [&](int src, unsigned k, unsigned*& slab, unsigned word, cas_ticket& t) -> step {
          const unsigned hits = __ballot_sync(warp::FULL_MASK, word == k) & KEY_LANES;
          const unsigned empties = __ballot_sync(warp::FULL_MASK, word == EMPTY_KEY) & KEY_LANES;
          const unsigned targets = hits | empties;
          if (targets == 0) {
            if (advance(slab, word)) return step::again;
            if (append(allocator, slab)) return step::again;
            if (lane == static_cast<unsigned>(src)) outcome = OP_FAILED;
            return step::done;
          }
          t.dest = __ffs(targets) - 1;
          if ((hits >> t.dest) & 1u) {
            if (lane == static_cast<unsigned>(src)) outcome = OP_PRESENT;
            return step::done;
          }
          if (lane == static_cast<unsigned>(t.dest)) {
            t.expected = EMPTY_KEY;
            t.seen = mem::cas_relaxed(slab + t.dest, EMPTY_KEY, k);
          }
          return step::issued;
        },
        [&](const cas_ticket& t) {
          if (lane == static_cast<unsigned>(t.src)) outcome = OP_ABSENT;
        });
    const unsigned added = __popc(__ballot_sync(warp::FULL_MASK, active && outcome == OP_ABSENT));
    count(added, added);
    return outcome;
  }

  __device__ unsigned erase(bool active, K key) const {
    unsigned outcome = OP_ABSENT;
    active = admit(active, key, outcome);
    const unsigned lane = warp::lane_id();
    walk_cas(
        active, key, outcome,
        [&](int, unsigned k, unsigned*& slab, unsigned word, cas_ticket& t) -> step {
          const unsigned hits = __ballot_sync(warp::FULL_MASK, word == k) & KEY_LANES;
          if (hits == 0) return advance(slab, word) ? step::again : step::done;
          t.dest = __ffs(hits) - 1;
          if (lane == static_cast<unsigned>(t.dest)) {
            t.expected = k;
            t.seen = mem::cas_relaxed(slab + t.dest, k, TOMBSTONE_KEY);
          }
          return step::issued;
        },
        [&](const cas_ticket& t) {
          if (lane == static_cast<unsigned>(t.src)) outcome = OP_PRESENT;
        });
    const unsigned removed = __popc(__ballot_sync(warp::FULL_MASK, outcome == OP_PRESENT));
    count(-static_cast<long long>(removed), 0);
    return outcome;
  }

  __device__ unsigned find(bool active, K key) const {
    unsigned outcome = OP_ABSENT;
    active = admit(active, key, outcome);
    const unsigned lane = warp::lane_id();
    walk(
        active, key, outcome,
        [&](int src, unsigned k, unsigned*& slab, unsigned word) -> bool {
          if (__ballot_sync(warp::FULL_MASK, word == k) & KEY_LANES) {
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
