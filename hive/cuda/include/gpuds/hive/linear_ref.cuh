// gpuds/hive/linear_ref.cuh: the device API of LinearProbeMap.
//
// `linear_ref<K, V, G, Probing, KEY_TOMBSTONES>` is a trivially copyable, non-owning view
// of a table (the host's `LinearRef` mirrors its layout). Every operation is called by
// all G lanes of a tile (G consecutive lanes of a warp, `gpuds::warp::tile<G>`) with the
// same arguments, and returns the same result on every lane.
//
// The table is the simple lock-free table of Farrell (2020) on the probing core of
// probing.cuh: open addressing, a key is claimed by compare-and-swap on an empty slot and
// never moves; a lookup stops at the first window holding an empty slot. Deletion:
//  - value tombstones (KEY_TOMBSTONES == false, the default): erase writes the empty
//    value and the key stays, so an erased key's slot is reused only by the same key.
//    Safe with any mix of concurrent inserts, erases and lookups.
//  - key tombstones (KEY_TOMBSTONES == true): erase writes the erased key and inserts
//    reuse erased slots. An insert scans its sequence to the first empty window (the key
//    may sit behind an erased slot) and claims the first erased slot it passed, retrying
//    from the start if that claim loses. Correct only while no erase runs concurrently
//    with an insert; lookups may run with either.
// Bounds: a probe visits at most `windows` windows (every slot, see probing.cuh); an
// insert that finds no room reports TABLE_FULL, and key-tombstone retries are capped
// (RETRY_LIMIT). Both end the operation.
#pragma once
#include <gpuds/core/status.cuh>
#include <gpuds/core/warp.cuh>
#include <gpuds/hive/detail/linear_slot.cuh>
#include <gpuds/hive/probing.cuh>

namespace gpuds {
namespace hive {

template <class K, class V, unsigned G, class Probing, bool KEY_TOMBSTONES>
struct linear_ref {
  using ops = detail::slot_ops<K, V>;
  using slot_type = detail::slot<K, V>;
  using tile = warp::tile<G>;
  static constexpr K EMPTY_KEY = ops::EMPTY_KEY;
  static constexpr K ERASED_KEY = ops::ERASED_KEY;
  static constexpr V EMPTY_VALUE = ops::EMPTY_VALUE;
  // Restarts of a key-tombstone insert whose claim lost to another insert.
  static constexpr unsigned MAX_RESTARTS = 1024;

  slot_type* slots;
  probing::geometry geometry;
  unsigned* status;

  __device__ __forceinline__ slot_type* lane_slot(unsigned window) const {
    return slots + static_cast<unsigned long long>(window) * G + tile::rank();
  }

  // Tile vote as bits 0..G-1 (a plain predicate when G == 1).
  __device__ __forceinline__ static unsigned vote(bool p) {
    if constexpr (G == 1) {
      return p ? 1u : 0u;
    } else {
      return tile::ballot(p);
    }
  }

  template <class T>
  __device__ __forceinline__ static T from(T v, unsigned src) {
    if constexpr (G == 1) {
      return v;
    } else {
      return tile::shfl(v, src);
    }
  }

  // Runs `write` (which returns a value) on tile rank `src` only and hands its result
  // to every lane: how one lane acts on the slot the tile voted for.
  template <class Write>
  __device__ __forceinline__ static V on_lane(unsigned src, Write&& write) {
    V v = EMPTY_VALUE;
    if (G == 1 || tile::rank() == src) v = write();
    return from(v, src);
  }

  // Replaces the value where the tile found `key` (bit set in `hits`); `*before` gets
  // the value replaced when OBSERVE.
  template <bool OBSERVE>
  __device__ __forceinline__ static void replace_at(unsigned hits, slot_type* mine, K key, V value, V* before) {
    *before = on_lane(__ffs(hits) - 1, [&] { return ops::template put<OBSERVE>(mine, key, value); });
  }

  // Looks `key` up; true and `*value` when present. PHASED: no kernel in flight writes
  // the table (bulk queries: reads take the read-only path); false inside mixed batches.
  template <bool PHASED>
  __device__ bool find(K key, V* value) const {
    constexpr auto mode = PHASED ? detail::read_mode::nc : detail::read_mode::relaxed;
    probing::sequence<Probing> seq(probing::hash_key(key), geometry);
    for (unsigned i = 0; i < geometry.windows; ++i) {
      const auto seen = ops::template load<mode>(lane_slot(seq.window));
      const unsigned hits = vote(seen.key == key);
      if (hits != 0u) {
        const V v = from(seen.value, __ffs(hits) - 1);
        *value = v;
        return v != EMPTY_VALUE;
      }
      if (vote(seen.key == EMPTY_KEY) != 0u) return false;
      seq.next();
    }
    return false;
  }

  // Inserts or replaces (key, value); false when the table had no room (TABLE_FULL) or
  // the retry cap passed (RETRY_LIMIT), both reported in the status word. OBSERVE:
  // `*before` gets the value replaced (the empty value when the key was absent), read
  // atomically with the write, and probes use relaxed loads; without it probes use weak
  // loads (every decision they lead to is confirmed by a compare-and-swap or holds in a
  // state the slot had since the batch began), writes are plain stores, and `*before`
  // stays the empty value.
  template <bool OBSERVE>
  __device__ bool insert(K key, V value, V* before) const {
    *before = EMPTY_VALUE;
    if constexpr (KEY_TOMBSTONES) {
      return insert_reusing<OBSERVE>(key, value, before);
    } else {
      probing::sequence<Probing> seq(probing::hash_key(key), geometry);
      for (unsigned i = 0; i < geometry.windows; ++i) {
        slot_type* mine = lane_slot(seq.window);
        // One lane per key tries its start slot at once, as the Farrell table does (a
        // failed compare-and-swap returns the key that is there); later slots are read
        // first, so that occupied slots cost a read instead of an atomic.
        const K seen = (G == 1 && i == 0) ? EMPTY_KEY : ops::template load<mode<OBSERVE>()>(mine).key;
        if (claim_in_window<OBSERVE>(mine, seen, key, value, before)) {
          return true;
        }
        seq.next();
      }
      status::report(status, status::TABLE_FULL);
      return false;
    }
  }

  // Erases `key`; true when it was present. OBSERVE: `*before` gets the value erased,
  // taken atomically with the erase; probes read as in `insert`.
  template <bool OBSERVE>
  __device__ bool erase(K key, V* before) const {
    *before = EMPTY_VALUE;
    probing::sequence<Probing> seq(probing::hash_key(key), geometry);
    for (unsigned i = 0; i < geometry.windows; ++i) {
      slot_type* mine = lane_slot(seq.window);
      const auto seen = ops::template load<mode<OBSERVE>()>(mine);
      const unsigned hits = vote(seen.key == key);
      if (hits != 0u) {
        const V old = on_lane(__ffs(hits) - 1, [&] {
          if constexpr (KEY_TOMBSTONES) {
            if (OBSERVE) return ops::take_key(mine, key, seen.value);
            ops::erase_key(mine);
            return seen.value;
          } else {
            if (OBSERVE) return ops::template put<true>(mine, key, EMPTY_VALUE);
            ops::template put<false>(mine, key, EMPTY_VALUE);
            return seen.value;
          }
        });
        *before = old;
        return old != EMPTY_VALUE;
      }
      if (vote(seen.key == EMPTY_KEY) != 0u) return false;
      seq.next();
    }
    return false;
  }

 private:
  template <bool OBSERVE>
  __device__ __forceinline__ static constexpr detail::read_mode mode() {
    return OBSERVE ? detail::read_mode::relaxed : detail::read_mode::weak;
  }

  // One window of a value-tombstone insert: replace where the key is, else claim the
  // first empty lane, retrying the window's next empty lane when a claim loses (at
  // most G claims). `seen` is this lane's slot key. True when the insert is done.
  template <bool OBSERVE>
  __device__ bool claim_in_window(slot_type* mine, K seen, K key, V value, V* before) const {
    const K expected = EMPTY_KEY;
    for (unsigned attempt = 0; attempt <= G; ++attempt) {
      const unsigned hits = vote(seen == key);
      if (hits != 0u) {
        replace_at<OBSERVE>(hits, mine, key, value, before);
        return true;
      }
      const unsigned open = vote(seen == expected);
      if (open == 0u) return false;
      const unsigned src = __ffs(open) - 1;
      V old = EMPTY_VALUE;
      if (tile::rank() == src || G == 1) seen = ops::template claim<OBSERVE>(mine, expected, key, value, &old);
      const bool won = from(static_cast<unsigned>(seen == expected), src) != 0u;
      if (won) {
        *before = from(old, src);
        return true;
      }
      // The lost lane now sees the key that won; vote again.
    }
    return false;
  }

  // Key-tombstone insert: scan to the first window with an empty slot (the key may sit
  // behind erased slots), then claim the first erased slot passed, or the empty one.
  template <bool OBSERVE>
  __device__ bool insert_reusing(K key, V value, V* before) const {
    const probing::hashes h = probing::hash_key(key);
    for (unsigned restart = 0; restart < MAX_RESTARTS; ++restart) {
      probing::sequence<Probing> seq(h, geometry);
      unsigned target_window = 0, target_lane = G;  // G: no target yet
      bool target_erased = false;
      for (unsigned i = 0; i < geometry.windows; ++i) {
        slot_type* mine = lane_slot(seq.window);
        const auto seen = ops::template load<mode<OBSERVE>()>(mine);
        const unsigned hits = vote(seen.key == key);
        if (hits != 0u) {
          replace_at<OBSERVE>(hits, mine, key, value, before);
          return true;
        }
        const unsigned erased = vote(seen.key == ERASED_KEY);
        if (target_lane == G && erased != 0u) {
          target_window = seq.window;
          target_lane = __ffs(erased) - 1;
          target_erased = true;
        }
        const unsigned empty = vote(seen.key == EMPTY_KEY);
        if (empty != 0u) {
          if (target_lane == G) {
            target_window = seq.window;
            target_lane = __ffs(empty) - 1;
          }
          break;
        }
        seq.next();
      }
      if (target_lane == G) {
        status::report(status, status::TABLE_FULL);
        return false;
      }
      // The target is the first erased slot passed, else the first empty one.
      const K expected = target_erased ? ERASED_KEY : EMPTY_KEY;
      K got = expected;
      V old = EMPTY_VALUE;
      if (tile::rank() == 0u) {
        slot_type* target = slots + static_cast<unsigned long long>(target_window) * G + target_lane;
        got = ops::template claim<OBSERVE>(target, expected, key, value, &old);
        if (got == key) old = ops::template put<OBSERVE>(target, key, value);
      }
      got = from(got, 0);
      if (got == expected || got == key) {
        *before = from(old, 0);
        return true;
      }
    }
    status::report(status, status::RETRY_LIMIT);
    return false;
  }
};

}  // namespace hive
}  // namespace gpuds
