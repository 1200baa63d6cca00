// gpuds/slabhash/detail/tile_find.cuh: SEARCH and DELETE of wide map entries (u64/u64,
// u64/u32, u32/u64 pairs: layout.cuh) by tiles of 8 lanes, one slab per tile, where
// writers may be in flight (the bulk lookup kernel, which runs with none, reads alone:
// alone_wide::find_quiet).
//
// The warp walk (map_ref.cuh) reads a slab with one warp instruction, one word per lane,
// and serves one request at a time: some 60 warp instructions per request. A lane alone
// (alone.cuh) serves up to 32 requests per instruction but reads a slab in several
// 16-byte loads of its own, which for wide entries (keys, then the busy word, the next
// address and the value in other sectors) measured slower than the warp walk. Here each
// tile of 8 lanes serves its 8 lanes' requests one after the other: lane t of the tile
// reads the slab's t-th 16 bytes, so one warp instruction reads four whole slabs (one line
// each), and the key's slot, the busy word, the next address and the value come from the
// tile's registers by ballots and shuffles. Each lane asks L2 for its own request's base
// slab first, as the warp walk's lookups do.
//
// `look` finds, for each lane's request, the first slot holding the key in list order
// (keys fill a slab from its first slot, so a slab with an empty slot ends the search),
// with the busy bit and the value of the same read, or its absence; the step cap is left
// to the warp walk. SEARCH uses a hit only if its
// busy bit is clear (as the warp walk's find); a busy hit goes to the warp walk, which
// reads again. DELETE then runs in the request's own lane, as the warp walk's wide
// deletion does in the key's lane: it takes the slot's busy bit (an OR that found it
// clear: the key is still k, since a key word changes only from EMPTY, bit set until
// published, or to the tombstone, bit kept set) and tombstones the key, keeping the bit;
// the OR is an acquire followed by a read of the value when the caller wants the value,
// relaxed with no read when it does not (bulk deletions: nothing the last holder wrote
// is read). A bit found set goes to the warp walk, with nothing applied. (REPLACE of wide
// pairs ran by these tiles at 64-bit keys until a lane alone that reads half a slab's keys
// first measured 1.14x / 1.15x as fast at u64/u64 / u64/u32: alone_wide.cuh.)
#pragma once
#include <gpuds/core/memory.cuh>
#include <gpuds/slabhash/detail/table.cuh>

namespace gpuds {
namespace slabhash {
namespace detail {

template <class K, class V>
struct tile_find {
  using layout = entry_layout<K, V>;
  static_assert(layout::WIDE, "tiles serve wide entries (packed ones: alone.cuh)");
  static constexpr unsigned TILE = 8;
  static constexpr unsigned SLOTS = layout::SLOTS;
  // Key slots in one lane's 16 bytes.
  static constexpr unsigned PER_LANE = 4u / layout::KW;

  __device__ static unsigned pick(const unsigned (&w)[4], unsigned i) {
    return i == 0u ? w[0] : i == 1u ? w[1] : i == 2u ? w[2] : w[3];
  }

  // Where `look` left a request.
  static constexpr unsigned ABSENT = 0;
  static constexpr unsigned HIT = 1;   // `slab`, `slot`, `busy` and `value` of the read
  static constexpr unsigned LEFT = 2;  // the step cap: the warp walk's

  // By all 32 lanes: each lane's request (`active`: has one; `home`: its list's base
  // slab). Returns where it stopped (ABSENT for a lane without a request).
  __device__ static unsigned look(const table& tb, bool active, unsigned* home, K key, unsigned*& hit_slab,
                                  unsigned& hit_slot, bool& hit_busy, V& value) {
    const unsigned lane = warp::lane_id();
    const unsigned t = lane & (TILE - 1u);
    const unsigned base = lane - t;
    if (active) mem::prefetch_l2(home);
    bool waiting = active;  // this lane's request not taken by its tile yet
    unsigned where = ABSENT;
    // The request the tile serves now (the same in its 8 lanes).
    bool serving = false;
    unsigned owner = 0, depth = 0;
    unsigned* slab = home;
    K k = key;
    for (;;) {
      // A tile without a request takes its lowest waiting lane's.
      const unsigned waiting_lanes = (__ballot_sync(warp::FULL_MASK, waiting) >> base) & 0xFFu;
      const unsigned next_owner = waiting_lanes != 0u ? static_cast<unsigned>(__ffs(waiting_lanes) - 1) : 0u;
      const K next_key = __shfl_sync(warp::FULL_MASK, key, base + next_owner);
      unsigned* const next_home = reinterpret_cast<unsigned*>(
          __shfl_sync(warp::FULL_MASK, reinterpret_cast<unsigned long long>(home), base + next_owner));
      if (!serving && waiting_lanes != 0u) {
        serving = true;
        owner = next_owner;
        k = next_key;
        slab = next_home;
        depth = 1;
        if (t == owner) waiting = false;
      }
      if (!__any_sync(warp::FULL_MASK, serving)) break;
      // Lane t's 16 bytes of the slab: lanes 4t .. 4t + 3.
      ulonglong2 c = make_ulonglong2(0ull, 0ull);
      if (serving) c = mem::ld_relaxed_v2(reinterpret_cast<const unsigned long long*>(slab) + 2u * t);
      const unsigned w[4] = {static_cast<unsigned>(c.x), static_cast<unsigned>(c.x >> 32),
                             static_cast<unsigned>(c.y), static_cast<unsigned>(c.y >> 32)};
      // This lane's first slot holding k (PER_LANE: none), and whether it has an empty one.
      unsigned hit = PER_LANE;
      bool empty = false;
#pragma unroll
      for (int i = static_cast<int>(PER_LANE) - 1; i >= 0; --i) {
        const unsigned slot = t * PER_LANE + static_cast<unsigned>(i);
        K x;
        if constexpr (layout::KW == 2) {
          x = static_cast<K>(i == 0 ? c.x : c.y);
        } else {
          x = static_cast<K>(w[i]);
        }
        if (slot < SLOTS && x == k) hit = static_cast<unsigned>(i);
        if (slot < SLOTS && x == empty_key<K>) empty = true;
      }
      const unsigned hits = (__ballot_sync(warp::FULL_MASK, serving && hit < PER_LANE) >> base) & 0xFFu;
      const unsigned empties = (__ballot_sync(warp::FULL_MASK, serving && empty) >> base) & 0xFFu;
      const unsigned first = hits != 0u ? static_cast<unsigned>(__ffs(hits) - 1) : 0u;
      const unsigned slot = first * PER_LANE + __shfl_sync(warp::FULL_MASK, hit, base + first) % PER_LANE;
      // Lanes 28-31 are tile lane 7's: the busy word (lane 30) and the next address (31).
      const unsigned busy = __shfl_sync(warp::FULL_MASK, w[2], base + TILE - 1u);
      const unsigned next = __shfl_sync(warp::FULL_MASK, w[3], base + TILE - 1u);
      // The value of `slot` (a 64-bit value's two lanes are in one lane's 16 bytes).
      const unsigned at = layout::value_lane(slot < SLOTS ? slot : 0u);
      const unsigned lo = __shfl_sync(warp::FULL_MASK, pick(w, at % 4u), base + at / 4u);
      const unsigned hi = layout::VW == 2 ? __shfl_sync(warp::FULL_MASK, pick(w, at % 4u + 1u), base + at / 4u) : 0u;
      if (serving) {
        unsigned stop = ABSENT;
        bool done = true;
        if (hits != 0u) {
          stop = HIT;
        } else if (empties == 0u && next != NULL_SLAB) {
          if (depth >= tb.step_cap) {
            stop = LEFT;  // the warp walk reports the step cap
          } else {
            done = false;
            slab = tb.slab_at(next);
            ++depth;
          }
        }
        if (done) {
          if (t == owner) {
            where = stop;
            hit_slab = slab;
            hit_slot = slot;
            hit_busy = ((busy >> slot) & 1u) != 0u;
            value = from_words<V>(lo, hi);
          }
          serving = false;
        }
      }
    }
    return where;
  }

  // `look` for each lane's request (by all 32 lanes), and whether the request's own lane
  // may settle it: false for a lane without a request, at the step cap and at a busy hit
  // (the warp walk's).
  __device__ static bool look_settled(const table& tb, bool active, unsigned* home, K key, unsigned& where,
                                      unsigned*& slab, unsigned& slot, V& seen) {
    bool busy = false;
    where = look(tb, active, home, key, slab, slot, busy, seen);
    if (!active || where == LEFT || (where == HIT && busy)) return false;
    return true;
  }

  // SEARCH: true where settled (`outcome` OP_PRESENT with `value`, or OP_ABSENT); false
  // where the warp walk must take it (a busy hit, the step cap).
  __device__ static bool find(const table& tb, bool active, unsigned* home, K key, V& value, unsigned& outcome) {
    unsigned* slab = home;
    unsigned slot = 0, where = ABSENT;
    V seen{};
    if (!look_settled(tb, active, home, key, where, slab, slot, seen)) return false;
    outcome = where == HIT ? OP_PRESENT : OP_ABSENT;
    if (where == HIT) value = seen;
    return true;
  }

  // DELETE (unique keys): true where settled (OP_PRESENT with the removed `value`, read
  // only if `want_value`, or OP_ABSENT); false where the warp walk must take it (a busy
  // slot, the step cap). Without the value the slot is taken by a relaxed OR.
  __device__ static bool erase(const table& tb, bool active, unsigned* home, K key, V& value, unsigned& outcome,
                               bool want_value = true) {
    unsigned* slab = home;
    unsigned slot = 0, where = ABSENT;
    V seen{};
    if (!look_settled(tb, active, home, key, where, slab, slot, seen)) return false;
    outcome = OP_ABSENT;
    if (where == ABSENT) return true;
    if (!(want_value ? take_slot(slab, slot) : take_slot_relaxed(slab, slot))) return false;
    if (want_value) value = mem::ld_relaxed(reinterpret_cast<V*>(slab + layout::value_lane(slot)));
    mem::st_relaxed(layout::key_ptr(slab, layout::key_lane(slot)), tombstone_key<K>);  // the bit stays set
    outcome = OP_PRESENT;
    return true;
  }
};

}  // namespace detail
}  // namespace slabhash
}  // namespace gpuds
