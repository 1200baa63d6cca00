// gpuds/slabhash/detail/alone_wide.cuh: REPLACE by one lane alone, for wide map entries
// (u64/u64, u64/u32, u32/u64 pairs: layout.cuh) of tables with unique keys, and SEARCH by
// one lane alone with no writer in flight (find_quiet, below); alone.cuh is
// the packed counterpart and says why a lane alone (one warp instruction serves up to 32
// requests instead of one).
//
// A lane reads half of a slab's key lanes first (lanes 0-7 at u64/u64, 0-11 at u64/u32,
// 0-7 at u32/u64: 16-byte loads issued together, the first asking L2 for the whole line)
// and stops there at its key or the first empty slot; only a slab whose first half holds
// neither costs the rest of its key lanes and its last 16 bytes (the busy word and the
// next address). All of it is the one line the warp walk reads; an insert reads no value.
// Each 16-byte load of a lane alone is a line's worth of L1 work for its warp (32 lanes,
// 32 lines), so the loads a lane does not issue are what it gains: on the H200, at 2^24
// keys, inserts ran 1.14x / 1.15x as fast as the tiles of 8 lanes (tile_find.cuh) that
// had replaced the all-keys read at 64-bit keys, and 1.03x the all-keys read at u32/u64.
// What it cannot settle alone it leaves untouched to the warp walk its caller runs next
// (map_ref::replace_alone_in): a list that ends full, the step cap, a slot whose busy bit
// is set (a claim not yet published, a replacement or deletion in flight), a claim that
// lost every remaining slot of its slab.
//
// Lookups with writers in flight (user kernels through map_ref::find_alone_in, the
// graph's tables) are not run alone here: with relaxed loads, which writers in flight
// require and which L1 does not cache, a lane alone was slower on the H200 than the
// tiles of 8 lanes that serve them (tile_find.cuh): present keys 13.3 against 17.5 G/s at
// u64/u64 (earlier, reading the key lanes and the tail and then the value: 11.0 against
// the warp walk's 11.6-11.8). The bulk lookup kernel, which no writer runs beside, runs
// alone with read-only loads (find_quiet, below): 19.2-19.4 G/s when it read every key
// chunk at once, 23.6-24.1 since it reads half of them first. REPLACE, whose claim needs
// the atomics anyway, gained 1.2-1.45x alone.
//
// The protocol is the warp walk's (map_ref.cuh), so both run on one table in any mix:
// - a claim CASes the key word from EMPTY at the list's first empty slot, after every
//   earlier slot was seen holding another key (keys stay unique, empty slots a suffix);
//   the slot's busy bit is still set from the fresh slab, so no reader uses the entry
//   until the claimer has stored the value and cleared the bit with a release
//   (release_slot: the value store and the release in one thread are a release pattern).
//   A lost CAS returns the slot's key: k (claimed meanwhile: replace it there) or another
//   key or a tombstone (try the next slot);
// - a replacement takes the slot's busy bit (take_slot: an acquire OR that found it
//   clear), reads the old value, stores the new one and releases the bit. Why the key is
//   still k once the bit is taken: a key word changes only from EMPTY to a key (a claim,
//   the bit set until it is published) or from a key to the tombstone (a deletion, which
//   keeps the bit set), so a bit found clear means a published, undeleted key;
// - a lane that finds the bit taken by another holder goes to the warp walk at once: it
//   never waits for a holder, who may be a lane of its own warp (the walk runs after the
//   whole warp's alone pass, so the claims of its own lanes are published by then).
// Every loop is bounded: at most `step_cap` slabs and each slot of a slab tried once by
// a claim.
#pragma once
#include <gpuds/core/memory.cuh>
#include <gpuds/slabhash/detail/table.cuh>

namespace gpuds {
namespace slabhash {
namespace detail {

template <class K, class V>
struct alone_wide {
  using layout = entry_layout<K, V>;
  static_assert(layout::WIDE, "a lane alone handles wide entries here (packed ones: alone.cuh)");
  static constexpr unsigned SLOTS = layout::SLOTS;
  static constexpr unsigned KW = layout::KW;
  // 16-byte chunks that hold the key lanes 0 .. SLOTS * KW - 1.
  static constexpr unsigned KEY_CHUNKS = (SLOTS * KW + 3u) / 4u;
  static_assert(KEY_CHUNKS < 7, "the keys end before the slab's last 16 bytes");
  // The key chunks a lane reads first (look, find_quiet), and the slots they hold: the
  // rest only when those slots hold neither its key nor an empty slot.
  static constexpr unsigned FIRST_CHUNKS = (KEY_CHUNKS + 1u) / 2u;
  static constexpr unsigned FIRST_SLOTS = 4u * FIRST_CHUNKS / KW < SLOTS ? 4u * FIRST_CHUNKS / KW : SLOTS;

  // Where a look at a list stopped (as alone.cuh).
  static constexpr unsigned HIT = 0;
  static constexpr unsigned FIRST_EMPTY = 1;
  static constexpr unsigned END = 2;
  static constexpr unsigned CUT = 3;

  // What a lane read of one slab: its key lanes as 8-byte words (w[i]: lanes 2i and
  // 2i + 1).
  struct seen {
    unsigned long long w[2 * KEY_CHUNKS];
  };

  __device__ static K key_in(const seen& s, unsigned slot) {
    if constexpr (KW == 2) {
      return static_cast<K>(s.w[slot]);
    } else {
      return static_cast<K>(static_cast<unsigned>(s.w[slot / 2u] >> (32u * (slot % 2u))));
    }
  }
  __device__ static K* key_ptr(unsigned* slab, unsigned slot) {
    return layout::key_ptr(slab, layout::key_lane(slot));
  }
  __device__ static V* value_ptr(unsigned* slab, unsigned slot) {
    return reinterpret_cast<V*>(slab + layout::value_lane(slot));
  }

  // A slab's key chunks FROM .. TO - 1 into `s`, 16-byte loads issued together: relaxed
  // (writers may be in flight), or QUIET read-only non-coherent loads (none is). LINE:
  // the loads ask L2 for the whole 128-byte line (`.L2::128B`), so that what the lane
  // reads or writes next in the slab (more keys, the value of the slot holding its key,
  // the busy word, the next address) waits on L2, not memory (present keys 1.12-1.29x,
  // absent 1.33x at u64/u32 on the H200; absent keys at u32/u64, whose three key chunks
  // all came in one round trip, lost: 0.91x); the reads after the first need not ask
  // again.
  template <bool QUIET, bool LINE = true, unsigned FROM = 0, unsigned TO = KEY_CHUNKS>
  __device__ static void read_keys(const unsigned* slab, seen& s) {
    const unsigned long long* p = reinterpret_cast<const unsigned long long*>(slab);
#pragma unroll
    for (unsigned c = FROM; c < TO; ++c) {
      ulonglong2 a;
      if constexpr (QUIET) {
        a = LINE ? mem::ld_nc_v2_line(p + 2u * c) : mem::ld_nc_v2(p + 2u * c);
      } else {
        a = LINE ? mem::ld_relaxed_v2_line(p + 2u * c) : mem::ld_relaxed_v2(p + 2u * c);
      }
      s.w[2u * c] = a.x;
      s.w[2u * c + 1u] = a.y;
    }
  }

  // Adds the slots FROM .. TO - 1 of `s` holding k or empty to `targets`, as bits (`hits`:
  // those holding k).
  template <unsigned FROM = 0, unsigned TO = SLOTS>
  __device__ static void match(const seen& s, K k, unsigned& targets, unsigned& hits) {
#pragma unroll
    for (unsigned j = FROM; j < TO; ++j) {
      const K key = key_in(s, j);
      hits |= (key == k ? 1u : 0u) << j;
      targets |= (key == k || key == empty_key<K> ? 1u : 0u) << j;
    }
  }

  // Looks along the list from `slab` for key k: the first slot holding k or the first
  // empty slot, whichever comes first (`slot`, `slab` moved to its slab, `s` what was
  // read of it), or the list's end (`slab` its tail) or the step cap.
  __device__ static unsigned look(const table& t, unsigned*& slab, K k, unsigned& slot, seen& s) {
    for (unsigned depth = 1;; ++depth) {
      read_keys<false, true, 0, FIRST_CHUNKS>(slab, s);
      unsigned targets = 0u, hits = 0u;
      match<0, FIRST_SLOTS>(s, k, targets, hits);
      unsigned next = NULL_SLAB;
      if (targets == 0u) {
        read_keys<false, false, FIRST_CHUNKS, KEY_CHUNKS>(slab, s);
        // Lanes 28-31: the busy word and the next address.
        const ulonglong2 tail = mem::ld_relaxed_v2(reinterpret_cast<const unsigned long long*>(slab) + 14);
        next = static_cast<unsigned>(tail.y >> 32);  // lane 31
        match<FIRST_SLOTS, SLOTS>(s, k, targets, hits);
      }
      if (targets != 0u) {
        slot = static_cast<unsigned>(__ffs(targets) - 1);
        return ((hits >> slot) & 1u) != 0u ? HIT : FIRST_EMPTY;
      }
      if (next == NULL_SLAB) return END;
      if (depth >= t.step_cap) return CUT;
      slab = t.slab_at(next);
    }
  }

  // SEARCH by a lane alone on a table that no writer changes while it runs (the bulk
  // lookup kernel: SlabHashMap's writes take the map mutably and run in stream order, so
  // none is in flight; a user kernel writing through a ref must be done before the next
  // call). With no writer, the lane reads with read-only non-coherent loads (ld.global.nc,
  // cached in L1; relaxed loads go to L2 each, and a lane alone with relaxed loads was
  // slower than the tiles, 13.3 against 17.5 G/s at u64/u64 on the H200), and every key
  // it reads is published (the kernel of its claim has ended, so its busy bit is clear
  // and need not be read). A lane reads the first half of the slab's key chunks (slots
  // 0-3 at u64/u64, 0-5 at u64/u32, 0-7 at u32/u64), asking L2 for the whole line; the
  // other half only when those slots hold neither k nor an empty slot (keys fill a list's
  // slots in order, so most hits and most first empty slots are there); then the value of
  // the slot holding k, or the next address of a slab with neither. Each load a lane does
  // not issue is a line's worth of L1 work saved for the warp (32 lanes, 32 lines): on the
  // H200 present keys went 20.8 -> 23.9 G/s at u64/u64 against reading every key chunk
  // at once, and reading the whole slab at once ran at 15.8. True where settled; false at
  // the step cap (the warp walk's).
  __device__ static bool find_quiet(const table& t, unsigned* slab, K k, V& value, unsigned& outcome) {
    for (unsigned depth = 1;; ++depth) {
      seen s;
      read_keys<true, true, 0, FIRST_CHUNKS>(slab, s);
      unsigned targets = 0u, hits = 0u;
      match<0, FIRST_SLOTS>(s, k, targets, hits);
      if (targets == 0u) {
        read_keys<true, false, FIRST_CHUNKS, KEY_CHUNKS>(slab, s);
        match<FIRST_SLOTS, SLOTS>(s, k, targets, hits);
      }
      if (targets != 0u) {
        const unsigned slot = static_cast<unsigned>(__ffs(targets) - 1);
        outcome = OP_ABSENT;
        if (((hits >> slot) & 1u) != 0u) {
          outcome = OP_PRESENT;
          value = static_cast<V>(mem::ld_nc(value_ptr(slab, slot)));
        }
        return true;
      }
      const unsigned next = mem::ld_nc(slab + NEXT_LANE);
      if (next == NULL_SLAB) {
        outcome = OP_ABSENT;
        return true;
      }
      if (depth >= t.step_cap) return false;
      slab = t.slab_at(next);
    }
  }

  // The slot holding k (a published key): the bit taken, the old value read and the new
  // one stored, the bit released. False: the slot is busy (nothing applied).
  __device__ static bool replace_at(unsigned* slab, unsigned slot, V value, V& old) {
    if (!take_slot(slab, slot)) return false;
    V* const at = value_ptr(slab, slot);
    old = mem::ld_relaxed(at);
    mem::st_relaxed(at, value);
    release_slot(slab, slot);
    return true;
  }

  // REPLACE: true when settled (OP_ABSENT: added; OP_PRESENT: replaced, `old` the value
  // it had).
  __device__ static bool replace(const table& t, unsigned* slab, K k, V value, V& old, unsigned& outcome) {
    unsigned slot = 0;
    seen s;
    const unsigned where = look(t, slab, k, slot, s);
    if (where != FIRST_EMPTY && where != HIT) return false;
    return settle(slab, where == FIRST_EMPTY, slot, k, value, old, outcome);
  }

  // REPLACE once the list was read: at `slot` of `slab`, k (`first_empty` false) or the
  // list's first empty slot, every earlier slot seen holding another key (true). Claims
  // there or at a later slot of the slab, or replaces k's value. True when settled, as
  // replace.
  __device__ static bool settle(unsigned* slab, bool first_empty, unsigned slot, K k, V value, V& old,
                                unsigned& outcome) {
    if (first_empty) {
      for (; slot < SLOTS; ++slot) {
        const K was = mem::cas_relaxed(key_ptr(slab, slot), empty_key<K>, k);
        if (was == empty_key<K>) {
          mem::st_relaxed(value_ptr(slab, slot), value);
          release_slot(slab, slot);
          outcome = OP_ABSENT;
          return true;
        }
        if (was == k) break;  // claimed meanwhile: replace it there
      }
      if (slot == SLOTS) return false;
    }
    if (!replace_at(slab, slot, value, old)) return false;
    outcome = OP_PRESENT;
    return true;
  }
};

}  // namespace detail
}  // namespace slabhash
}  // namespace gpuds
