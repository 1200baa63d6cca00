// gpuds/slabhash/layout.cuh: where a slab keeps its entries, for every key and value
// type, and the ballots that read them.
//
// Every slab is 128 bytes read by one warp, one 32-bit word per lane (one line per
// visit, whatever the types); lanes 0-29 hold entries, lane 30 is auxiliary, lane 31
// holds the next slab's address. A key takes KW lanes and a value VW lanes (1 for 32
// bits, 2 for 64 bits, the low word first; 0 for a set's values):
//
//   entry              slots  lanes of slot j                    claim
//   set u32              30   key j                              32-bit CAS of the key
//   map u32/u32          15   key 2j, value 2j+1 (one 8-byte pair) 64-bit CAS of the pair
//   set u64              15   key 2j..2j+1                       64-bit CAS of the key
//   map u64/u64           7   keys 0-13, values 14-27            key CAS, then value
//   map u64/u32          10   keys 0-19, values 20-29            key CAS, then value
//   map u32/u64          10   keys 0-9, values 10-29             key CAS, then value
//
// An entry of at most 8 bytes is PACKED: it is one aligned word that one CAS claims,
// replaces or deletes, as in the paper. A wider map entry (WIDE) keeps its keys in the
// first lanes and its values after them, every key and value naturally aligned (a u64
// key or value at a multiple of 8 bytes), so that each is one atomic access; the
// auxiliary lane's word then holds one BUSY bit per slot (bit j: slot j), set in a
// fresh slab. A wide entry changes in two steps under its busy bit (see map_ref): a
// claim CASes the key from EMPTY while the bit is still set from the fresh slab, stores
// the value and clears the bit with a release (after its warp's walk, one barrier for all
// the warp's claims); a replacement or deletion sets the bit
// (taking the slot, if it was clear), changes the value or tombstones the key, and a
// replacement clears it again. Readers ignore nothing and wait for nothing but a busy
// slot holding their key, which they read again (bounded by the retry cap); the bulk
// lookup kernel, which no writer runs beside, does not read the bits (every key it can
// see is published: alone_wide::find_quiet).
//
// Masks of slots are lane masks with one bit per slot, at the slot's first key lane (so
// a packed layout's masks are exactly the key-lane ballots of the paper).
#pragma once
#include <gpuds/core/warp.cuh>

namespace gpuds {
namespace slabhash {

constexpr unsigned SLAB_WORDS = 32;
constexpr unsigned DATA_LANES = 30;
constexpr unsigned AUX_LANE = 30;
constexpr unsigned NEXT_LANE = 31;

// The value type of a set: no value lanes.
struct no_value {};

template <class T>
struct words_of {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "slab entries hold 32- or 64-bit words");
  static constexpr unsigned value = sizeof(T) / 4;
};
template <>
struct words_of<no_value> {
  static constexpr unsigned value = 0;
};

// The 32-bit word `part` (0: low, 1: high) of a key or value.
template <class T>
__device__ __forceinline__ unsigned word_of(T x, unsigned part) {
  if constexpr (sizeof(T) == 4) {
    return static_cast<unsigned>(x);
  } else {
    return part == 0 ? static_cast<unsigned>(x) : static_cast<unsigned>(static_cast<unsigned long long>(x) >> 32);
  }
}

// A key or value from its words.
template <class T>
__device__ __forceinline__ T from_words(unsigned lo, unsigned hi) {
  if constexpr (sizeof(T) == 4) {
    return static_cast<T>(lo);
  } else {
    unsigned long long w;
    asm("mov.b64 %0, {%1, %2};" : "=l"(w) : "r"(lo), "r"(hi));
    return static_cast<T>(w);
  }
}

// The word of key `k` that this lane compares with its word of a slab: the key itself for
// a 32-bit key; for a 64-bit key (two lanes, low word on the even one) its low word on even
// lanes and its high word on odd ones. A walk computes it once per request, so that a slab
// is matched with one compare and one ballot per lane (entry_layout::match_word).
template <class K>
__device__ __forceinline__ unsigned lane_key_word(K k) {
  if constexpr (sizeof(K) == 4) {
    return static_cast<unsigned>(k);
  } else {
    return (warp::lane_id() & 1u) != 0u ? word_of(k, 1) : word_of(k, 0);
  }
}

// Mask of the lanes base, base + step, ... below `end`.
constexpr unsigned every(unsigned base, unsigned step, unsigned end) {
  return base >= end ? 0u : (1u << base) | every(base + step, step, end);
}

template <class K, class V>
struct entry_layout {
  static constexpr unsigned KW = words_of<K>::value;
  static constexpr unsigned VW = words_of<V>::value;
  static constexpr bool PACKED = KW + VW <= 2;
  static constexpr bool WIDE = !PACKED;
  static constexpr unsigned SLOTS = DATA_LANES / (KW + VW);
  // A slot's first key lane, and its first value lane.
  static constexpr unsigned STRIDE = PACKED ? KW + VW : KW;
  static constexpr unsigned VALUE_BASE = PACKED ? KW : SLOTS * KW;
  static constexpr unsigned VALUE_STRIDE = PACKED ? KW + VW : VW;
  // One bit per slot, at its first key lane.
  static constexpr unsigned KEY_LANES = every(0, STRIDE, SLOTS * STRIDE);
  // All bits of the busy word that name a slot.
  static constexpr unsigned ALL_SLOTS = SLOTS == 32 ? 0xFFFFFFFFu : (1u << SLOTS) - 1u;

  static_assert(SLOTS * (KW + VW) <= DATA_LANES, "entries fit lanes 0-29");
  static_assert(WIDE || KW + VW <= 2, "a packed entry is one word");
  static_assert(!WIDE || SLOTS <= 30, "one busy bit per slot");

  __device__ __forceinline__ static constexpr unsigned slot_of(unsigned key_lane) { return key_lane / STRIDE; }
  __device__ __forceinline__ static constexpr unsigned key_lane(unsigned slot) { return slot * STRIDE; }
  __device__ __forceinline__ static constexpr unsigned value_lane(unsigned slot) {
    return VALUE_BASE + slot * VALUE_STRIDE;
  }
  // value_lane(slot_of(lane)) for a first key lane `lane` (a multiple of STRIDE), without
  // the division: slot j's key lane is j * KW and its value lane VALUE_BASE + j * VW.
  __device__ __forceinline__ static constexpr unsigned value_lane_of_key(unsigned lane) {
    if (PACKED) return lane + KW;
    return VALUE_BASE + (KW == VW ? lane : KW > VW ? lane >> 1 : lane << 1);
  }

  // Whether value_lane_of_key agrees with value_lane at every slot (checked by map_ref).
  __device__ __forceinline__ static constexpr bool value_lanes_agree() {
    for (unsigned j = 0; j < SLOTS; ++j) {
      if (value_lane_of_key(key_lane(j)) != value_lane(j)) return false;
    }
    return true;
  }

  // The slots (mask at first key lanes) whose key has the words this lane compares:
  // `lo`/`hi` are the words of the key looked for. Lanes outside keys compare too; the
  // mask drops them.
  __device__ __forceinline__ static unsigned match(unsigned word, unsigned lo, unsigned hi) {
    if constexpr (KW == 1) {
      return __ballot_sync(warp::FULL_MASK, word == lo) & KEY_LANES;
    } else {
      const unsigned part = warp::lane_id() & 1u;  // every key starts on an even lane
      const unsigned eq = __ballot_sync(warp::FULL_MASK, word == (part == 0 ? lo : hi));
      return eq & (eq >> 1) & KEY_LANES;
    }
  }

  template <class Key>
  __device__ __forceinline__ static unsigned match_key(unsigned word, Key k) {
    return match(word, word_of(k, 0), word_of(k, KW - 1));
  }

  // match_key with this lane's word of the key given (lane_key_word): one compare and one
  // ballot; a 64-bit key matches where both of its lanes do (`eq & eq >> 1` at its even
  // first lane).
  __device__ __forceinline__ static unsigned match_word(unsigned word, unsigned want) {
    const unsigned eq = __ballot_sync(warp::FULL_MASK, word == want);
    if constexpr (KW == 1) {
      return eq & KEY_LANES;
    } else {
      return eq & (eq >> 1) & KEY_LANES;
    }
  }

  // Slots whose key is EMPTY (all ones).
  __device__ __forceinline__ static unsigned empties(unsigned word) {
    return match(word, 0xFFFFFFFFu, 0xFFFFFFFFu);
  }

  // Slots holding a live key (neither EMPTY nor TOMBSTONE: for a 64-bit key, the high
  // word all ones and the low word all ones or all ones minus one).
  __device__ __forceinline__ static unsigned live(unsigned word) {
    if constexpr (KW == 1) {
      return __ballot_sync(warp::FULL_MASK, word < 0xFFFFFFFEu) & KEY_LANES;
    } else {
      const unsigned part = warp::lane_id() & 1u;
      const unsigned reserved_word = __ballot_sync(
          warp::FULL_MASK, part == 0 ? word >= 0xFFFFFFFEu : word == 0xFFFFFFFFu);
      return ~(reserved_word & (reserved_word >> 1)) & KEY_LANES;
    }
  }

  // The key and value of the slot whose first key lane is `lane`, broadcast from the
  // words the lanes hold.
  __device__ __forceinline__ static K key_at(unsigned word, unsigned lane) {
    const unsigned lo = __shfl_sync(warp::FULL_MASK, word, lane);
    const unsigned hi = KW == 2 ? __shfl_sync(warp::FULL_MASK, word, lane + 1) : 0u;
    return from_words<K>(lo, hi);
  }
  __device__ __forceinline__ static V value_at(unsigned word, unsigned lane) {
    const unsigned at = WIDE ? value_lane_of_key(lane) : value_lane(slot_of(lane));
    const unsigned lo = __shfl_sync(warp::FULL_MASK, word, at);
    const unsigned hi = VW == 2 ? __shfl_sync(warp::FULL_MASK, word, at + 1) : 0u;
    return from_words<V>(lo, hi);
  }

  // At every slot's first key lane, that slot's key and value (elsewhere meaningless):
  // each lane gathers the words of its own slot, all lanes at once.
  __device__ __forceinline__ static K own_key(unsigned word) {
    const unsigned hi = KW == 2 ? __shfl_down_sync(warp::FULL_MASK, word, 1) : 0u;
    return from_words<K>(word, hi);
  }
  __device__ __forceinline__ static V own_value(unsigned word) {
    unsigned at = value_lane(slot_of(warp::lane_id()));
    at = at < NEXT_LANE ? at : 0u;  // lanes past the slots: any lane will do
    const unsigned lo = __shfl_sync(warp::FULL_MASK, word, at);
    const unsigned hi = VW == 2 ? __shfl_sync(warp::FULL_MASK, word, at + 1) : 0u;
    return from_words<V>(lo, hi);
  }

  // Which slot data lane `lane` belongs to (its key or its value), SLOTS for the lanes
  // that hold none.
  __device__ __forceinline__ static constexpr unsigned slot_of_lane(unsigned lane) {
    if (PACKED) return lane < SLOTS * STRIDE ? lane / STRIDE : SLOTS;
    if (lane < SLOTS * KW) return lane / KW;
    if (lane >= VALUE_BASE && lane < VALUE_BASE + SLOTS * VW) return (lane - VALUE_BASE) / VW;
    return SLOTS;
  }

  // Where the key and the value of the slot at key lane `lane` live in `slab`.
  __device__ __forceinline__ static K* key_ptr(unsigned* slab, unsigned lane) {
    return reinterpret_cast<K*>(slab + lane);
  }
  __device__ __forceinline__ static V* value_ptr(unsigned* slab, unsigned lane) {
    return reinterpret_cast<V*>(slab + value_lane(slot_of(lane)));
  }

  // Wide layouts: whether the slot at key lane `lane` is busy (its bit in the auxiliary
  // lane's word).
  __device__ __forceinline__ static bool is_busy(unsigned word, unsigned lane) {
    return (__shfl_sync(warp::FULL_MASK, word, AUX_LANE) >> slot_of(lane)) & 1u;
  }

  // Wide layouts: the busy bits (the auxiliary lane's word) as a mask at key lanes.
  __device__ __forceinline__ static unsigned busy(unsigned word) {
    const unsigned bits = __shfl_sync(warp::FULL_MASK, word, AUX_LANE);
    unsigned lanes = 0;
#pragma unroll
    for (unsigned j = 0; j < SLOTS; ++j) {
      if ((bits >> j) & 1u) lanes |= 1u << key_lane(j);
    }
    return lanes;
  }
};

}  // namespace slabhash
}  // namespace gpuds
