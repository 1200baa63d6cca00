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
// Operations (the paper's §III-B, plus the dissertation's §5.4 replace result):
//   replace   REPLACE: unique keys; OP_ABSENT (added) or OP_PRESENT (old value out)
//   insert    INSERT: duplicates allowed, appended after the key's other instances
//   upsert    replace or insert, as the table was configured
//   erase     DELETE: the least recent instance; OP_PRESENT with its value, or OP_ABSENT
//   erase_all DELETEALL: every instance; returns how many
//   find      SEARCH: the least recent instance; OP_PRESENT with its value, or OP_ABSENT
//   find_all  SEARCHALL: every value, written to the lane's own buffer; returns how many
//   count     COUNT: how many instances
// A request with a reserved key (EMPTY_KEY, TOMBSTONE_KEY) reports RESERVED_KEY and
// fails; a request whose list cannot take a slab reports POOL_EXHAUSTED and fails.
#pragma once
#include <gpuds/slabhash/detail/table.cuh>

namespace gpuds {
namespace slabhash {

template <class K, class V>
struct map_ref : detail::table {
  static_assert(sizeof(K) == 4 && sizeof(V) == 4, "map_ref stores 32-bit keys and values");
  static constexpr unsigned KEY_LANES = MAP_KEY_LANES;
  static constexpr unsigned SLOTS = 15;

  __device__ alloc::warp_allocator make_allocator() const {
    return alloc::warp_allocator(alloc);
  }

  // An iterator over bucket `b`'s slabs (see slab_iterator); a live key on lane i has its
  // value on lane i + 1.
  __device__ slab_iterator bucket(unsigned b) const { return iterate(b, KEY_LANES); }

  __device__ unsigned replace(alloc::warp_allocator& allocator, bool active, K key, V value,
                              V& old) const {
    return store(allocator, active, key, value, old, true);
  }

  __device__ unsigned insert(alloc::warp_allocator& allocator, bool active, K key,
                             V value) const {
    V ignored;
    return store(allocator, active, key, value, ignored, false);
  }

  __device__ unsigned upsert(alloc::warp_allocator& allocator, bool active, K key, V value,
                             V& old) const {
    return store(allocator, active, key, value, old, unique_keys != 0);
  }

  __device__ unsigned find(bool active, K key, V& value) const {
    unsigned outcome = OP_ABSENT;
    active = admit(active, key, outcome);
    const unsigned lane = warp::lane_id();
    walk(
        active, key, outcome,
        [&](int src, unsigned k, unsigned*& slab, unsigned word) -> bool {
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
    return outcome;
  }

  __device__ unsigned erase(bool active, K key, V& value) const {
    unsigned outcome = OP_ABSENT;
    active = admit(active, key, outcome);
    const unsigned lane = warp::lane_id();
    walk(
        active, key, outcome,
        [&](int src, unsigned k, unsigned*& slab, unsigned word) -> bool {
          const unsigned neighbour = __shfl_down_sync(warp::FULL_MASK, word, 1);
          const unsigned hits = __ballot_sync(warp::FULL_MASK, word == k) & KEY_LANES;
          if (hits == 0) return !advance(slab, word);
          const int dest = __ffs(hits) - 1;
          bool won = false;
          if (lane == static_cast<unsigned>(dest)) {
            const unsigned long long expected = pack_pair(k, neighbour);
            won = mem::cas_relaxed(reinterpret_cast<unsigned long long*>(slab + dest), expected,
                                   pack_pair(TOMBSTONE_KEY, neighbour)) == expected;
          }
          if (!__shfl_sync(warp::FULL_MASK, won, dest)) return false;  // changed: re-read
          const unsigned v = __shfl_sync(warp::FULL_MASK, neighbour, dest);
          if (lane == static_cast<unsigned>(src)) {
            outcome = OP_PRESENT;
            value = static_cast<V>(v);
          }
          return true;
        });
    const unsigned removed = __popc(__ballot_sync(warp::FULL_MASK, outcome == OP_PRESENT));
    count(-static_cast<long long>(removed), 0);
    return outcome;
  }

  __device__ unsigned erase_all(bool active, K key) const {
    unsigned outcome = OP_ABSENT;
    active = admit(active, key, outcome);
    const unsigned lane = warp::lane_id();
    unsigned removed = 0;
    walk(
        active, key, outcome,
        [&](int src, unsigned k, unsigned*& slab, unsigned word) -> bool {
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
    count(-static_cast<long long>(detail::warp_sum(removed)), 0);
    return removed;
  }

  // Writes up to `capacity` values of `key` to `out` (this lane's buffer) and returns
  // how many instances there are (possibly more than `capacity`).
  __device__ unsigned find_all(bool active, K key, V* out, unsigned capacity) const {
    unsigned outcome = OP_ABSENT;
    active = admit(active, key, outcome);
    const unsigned lane = warp::lane_id();
    unsigned found = 0;
    walk(
        active, key, outcome,
        [&](int src, unsigned k, unsigned*& slab, unsigned word) -> bool {
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
    return found;
  }

  __device__ unsigned count_of(bool active, K key) const {
    return find_all(active, key, nullptr, 0);
  }

 private:
  // REPLACE (unique) or INSERT (duplicates): the first slot holding the key (REPLACE
  // only) or the first empty slot, whichever comes first in list order; with neither,
  // the next slab, appended when the list ends.
  __device__ unsigned store(alloc::warp_allocator& allocator, bool active, K key, V value,
                            V& old, bool unique) const {
    unsigned outcome = OP_ABSENT;
    active = admit(active, key, outcome);
    const unsigned lane = warp::lane_id();
    walk(
        active, key, outcome,
        [&](int src, unsigned k, unsigned*& slab, unsigned word) -> bool {
          const unsigned neighbour = __shfl_down_sync(warp::FULL_MASK, word, 1);
          const unsigned hits =
              unique ? __ballot_sync(warp::FULL_MASK, word == k) & KEY_LANES : 0u;
          const unsigned empties = __ballot_sync(warp::FULL_MASK, word == EMPTY_KEY) & KEY_LANES;
          const unsigned targets = hits | empties;
          if (targets == 0) {
            if (advance(slab, word)) return false;
            if (append(allocator, slab)) return false;
            if (lane == static_cast<unsigned>(src)) outcome = OP_FAILED;
            return true;
          }
          const int dest = __ffs(targets) - 1;
          const bool replacing = (hits >> dest) & 1u;
          const unsigned v = __shfl_sync(warp::FULL_MASK, static_cast<unsigned>(value), src);
          bool won = false;
          if (lane == static_cast<unsigned>(dest)) {
            const unsigned long long expected =
                replacing ? pack_pair(k, neighbour) : pack_pair(EMPTY_KEY, EMPTY_VALUE);
            won = mem::cas_relaxed(reinterpret_cast<unsigned long long*>(slab + dest), expected,
                                   pack_pair(k, v)) == expected;
          }
          if (!__shfl_sync(warp::FULL_MASK, won, dest)) return false;  // lost a race: re-read
          const unsigned previous = __shfl_sync(warp::FULL_MASK, neighbour, dest);
          if (lane == static_cast<unsigned>(src)) {
            outcome = replacing ? OP_PRESENT : (unique ? OP_ABSENT : OP_ADDED);
            if (replacing) old = static_cast<V>(previous);
          }
          return true;
        });
    const unsigned added =
        __popc(__ballot_sync(warp::FULL_MASK, outcome == OP_ABSENT || outcome == OP_ADDED) &
               __ballot_sync(warp::FULL_MASK, active));
    count(added, added);
    return outcome;
  }
};

}  // namespace slabhash
}  // namespace gpuds
