// gpuds/slabhash/detail/flush.cuh: FLUSH of one slab list, for every key and value type:
// what SlabHashMap::flush runs on each bucket and gpuds-graph on each bucket of a
// vertex's table.
//
// flush_list packs the live entries of the list at `head`, in list order, into its first
// slabs, empties the rest of the last one, cuts the list there and returns the slabs
// after it to SlabAlloc. Entries move only towards the head (the write position never
// passes the read position), so each slab is read before it is written. A wide layout's
// busy bits are rewritten with the slots: clear for the packed entries, set for the
// rest. The list must be quiescent: no other warp may use it meanwhile.
#pragma once
#include <gpuds/slabhash/detail/table.cuh>

namespace gpuds {
namespace slabhash {
namespace detail {

// Moves the entry whose first key lane this is (`mine`: a live one) to slot `at` of
// `dst`. All lanes call it: they gather the entries' words with shuffles.
template <class K, class V>
__device__ __forceinline__ void move_entry(bool mine, unsigned* dst, unsigned at, unsigned word) {
  using layout = entry_layout<K, V>;
  if constexpr (layout::WIDE) {
    const K key = layout::own_key(word);
    const V value = layout::own_value(word);
    if (mine) {
      mem::st_relaxed(layout::key_ptr(dst, layout::key_lane(at)), key);
      mem::st_relaxed(layout::value_ptr(dst, layout::key_lane(at)), value);
    }
  } else if constexpr (layout::KW + layout::VW == 2) {
    const unsigned neighbour = __shfl_down_sync(warp::FULL_MASK, word, 1);
    if (mine) {
      mem::st_relaxed(reinterpret_cast<unsigned long long*>(dst + layout::STRIDE * at),
                      pack_pair(word, neighbour));
    }
  } else {
    if (mine) mem::st_relaxed(dst + at, word);
  }
}

// A wide layout's busy word for a slab whose first `filled` slots hold live entries.
template <class K, class V>
__device__ __forceinline__ void set_busy(unsigned* slab, unsigned filled) {
  if constexpr (entry_layout<K, V>::WIDE) {
    if (warp::lane_id() == AUX_LANE) mem::st_relaxed(slab + AUX_LANE, FRESH_WORD << filled);
  }
}

// Packs the list at `head` (a base slab) and returns how many slabs it gave back. All 32
// lanes call it, converged; at most `t.step_cap` slabs are read.
template <class K, class V>
__device__ unsigned long long flush_list(const table& t, unsigned* head) {
  using layout = entry_layout<K, V>;
  constexpr unsigned SLOTS = layout::SLOTS;
  const unsigned lane = warp::lane_id();
  unsigned long long released = 0;
  unsigned* write = head;
  unsigned filled = 0;  // slots of `write` already packed
  unsigned* read = write;
  for (unsigned steps = 0; steps < t.step_cap; ++steps) {
    const unsigned word = read_slab(read);
    const unsigned next = __shfl_sync(warp::FULL_MASK, word, NEXT_LANE);
    const unsigned live = layout::live(word);
    const unsigned count = __popc(live);
    unsigned* spill = write;
    if (filled + count > SLOTS) spill = t.slab_at(mem::ld_relaxed(write + NEXT_LANE));
    const bool mine = (live >> lane) & 1u;
    const unsigned rank = filled + __popc(live & lanes_below());
    unsigned* const dst = rank < SLOTS ? write : spill;
    const unsigned at = rank < SLOTS ? rank : rank - SLOTS;
    move_entry<K, V>(mine, dst, at, word);
    __syncwarp();
    if (filled + count > SLOTS) {
      set_busy<K, V>(write, SLOTS);
      write = spill;
      filled = filled + count - SLOTS;
    } else {
      filled += count;
    }
    if (next == NULL_SLAB) break;
    read = t.slab_at(next);
  }
  // Empty the unused slots of the last packed slab, cut the list after it, free the rest.
  unsigned tail = mem::ld_relaxed(write + NEXT_LANE);
  __syncwarp();
  const unsigned slot = layout::slot_of_lane(lane);
  if (slot < SLOTS && slot >= filled) mem::st_relaxed(write + lane, FRESH_WORD);
  set_busy<K, V>(write, filled);
  if (lane == NEXT_LANE) mem::st_relaxed(write + NEXT_LANE, NULL_SLAB);
  for (unsigned steps = 0; tail != NULL_SLAB && steps < t.step_cap; ++steps) {
    const unsigned after = mem::ld_relaxed(t.slab_at(tail) + NEXT_LANE);
    __syncwarp();
    if (lane == 0) t.alloc.deallocate(tail);
    ++released;
    tail = after;
  }
  return released;
}

}  // namespace detail
}  // namespace slabhash
}  // namespace gpuds
