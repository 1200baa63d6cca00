// gpuds/hive/detail/hive_slot.cuh: what one slot of a HiveMap bucket holds, and the
// atomic steps that change it, for each key and value type (slot_of<K, V>).
//
// packed_slot (u32 keys, u32 values; Hive paper, §III-A): the pair is one 64-bit word,
// key in the high half; the all-ones word is empty, so key 0xffffffff is reserved. Every
// change of a slot is one 64-bit compare-and-swap or store of the whole word, so a
// reader always sees a whole pair. A slot is addressed by its word (`ptr`).
//
// wide_slot<V> (u64 keys, u32 or u64 values): a slot is a key word (8 bytes) and a value
// word (sizeof(V) bytes) in two places: a bucket is one or more parts (u64 values in
// 16-slot buckets: two parts of 8 slots, one 128-byte line each), a part its key words
// first and their value words after them (hive_bucket.cuh, bucket_words), so a probe
// reads key words and loads a value only on a hit; a stash entry is one 16-byte wide_word {key, value} (a u32 value in its low half). A
// slot is addressed by both words' addresses (`ptr`). Key words stay 8-byte aligned for
// their atomics (a bucket is a multiple of 8 bytes: 16 bytes per slot for u64 values,
// 12 for u32 values). In registers a slot is a wide_word, the value zero-extended.
// GPUs of compute capability 7.0 to 8.9 have no 16-byte compare-and-swap (and the two
// words are not even adjacent), so the key word is the commit point of a two-step
// protocol. Two keys are reserved: EMPTY_KEY (all ones: the slot is empty) and BUSY_KEY
// (all ones but the lowest bit: a writer owns the slot). The value word is written only
// by a lane that owns the slot alone:
//   - the claimer of a free slot (its free bit cleared by that lane, the key still
//     EMPTY_KEY: "pending"), which stores the value and then the key with release
//     semantics (publish, put);
//   - the lane that turned the key word from the key it read into BUSY_KEY with an
//     acquire compare-and-swap (replace, and the eviction's in-place swap): it reads the
//     current value (so an old value returned, or a victim carried on, is exact even if
//     it changed after the bucket was read), stores the new value and releases the key
//     word with the new key.
// A delete swaps the key word from the key to EMPTY_KEY and only then reads the value
// (the slot is pending until its free bit is set again, so no one writes the value).
// So a key word holding k always comes with a value word of k that was written before
// k was stored (release/acquire), and no reader ever needs both words in one access.
// Hence a coherent load (load<true>: writers may run) reads the key word alone: every
// value such a read could return would be re-read anyway, by the replace or delete that
// owns the slot, or by the validation of a concurrent lookup's hit (hive_locate's
// confirm). Plain loads (load<false>: no writer in flight) read both words.
// Inserts of new keys stay lock-free (their claim is one compare-and-swap of the
// metadata word, then the claimer's own stores); a replace or an eviction's swap holds
// the slot for one load and two stores of one lane (nothing is waited for inside), a
// per-slot lock that operations on that key wait out as they wait out a pending slot.
// What readers must handle (hive_ref.cuh does): a BUSY_KEY slot may be any key in the
// middle of a change, so an operation that would conclude "absent" from a bucket holding
// one reads again, as it does for a pending slot; and a lookup that reads the two words
// one after the other validates its hit (the key word again, and the bucket's metadata
// word unchanged: a slot is reused only after a delete frees it and a claim takes it,
// and both change that word), since the slot could have been emptied and refilled in
// between.
#pragma once
#include <gpuds/core/memory.cuh>
#include <gpuds/core/warp.cuh>

namespace gpuds {
namespace hive {

struct packed_slot {
  using key_type = unsigned;
  using value_type = unsigned;
  using word = unsigned long long;
  static constexpr bool WIDE = false;
  static constexpr word EMPTY_WORD = ~0ull;
  static constexpr key_type EMPTY_KEY = 0xffffffffu;
  // No second reserved key: a packed slot is never owned by a writer between two steps.
  static constexpr key_type BUSY_KEY = EMPTY_KEY;
  // A slot is its word; a bucket is SLOTS words, in one part (wide_slot's parts).
  __host__ __device__ __forceinline__ static constexpr unsigned part_slots(unsigned slots) { return slots; }
  using ptr = word*;
  __host__ __device__ __forceinline__ static ptr at(unsigned long long* bucket, unsigned slot, unsigned) {
    return bucket + slot;
  }
  // The slot whose word lies `offset` words into its bucket.
  __host__ __device__ __forceinline__ static unsigned slot_of_key(unsigned long long offset, unsigned) {
    return static_cast<unsigned>(offset);
  }
  __host__ __device__ __forceinline__ static ptr entry(word* e) { return e; }

  __host__ __device__ __forceinline__ static word pack(key_type k, value_type v) {
    return (static_cast<unsigned long long>(k) << 32) | v;
  }
  __host__ __device__ __forceinline__ static key_type key_of(word w) { return static_cast<unsigned>(w >> 32); }
  __host__ __device__ __forceinline__ static value_type value_of(word w) { return static_cast<unsigned>(w); }
  __host__ __device__ __forceinline__ static bool is_empty(word w) { return w == EMPTY_WORD; }
  // No slot is ever owned by a writer between two steps.
  __host__ __device__ __forceinline__ static bool is_busy(word) { return false; }
  __host__ __device__ __forceinline__ static bool same(word a, word b) { return a == b; }

  template <bool COHERENT>
  __device__ __forceinline__ static word load(const word* p) {
    return COHERENT ? mem::ld_relaxed(p) : *p;
  }
  template <typename Tile>
  __device__ __forceinline__ static word shfl(word w, unsigned lane) {
    return Tile::shfl(w, lane);
  }
  // Publishes a pair in a slot the caller claimed (its free bit).
  __device__ __forceinline__ static void publish(word* p, word w) { mem::st_relaxed(p, w); }
  // The same with release semantics (the stash, whose slots have no free bit).
  __device__ __forceinline__ static void publish_release(word* p, word w) { mem::st_release(p, w); }
  // Publishes into a claimed slot with an acquire swap the lane waits for, so that its
  // later atomics are issued after the pair was written at L2 (unlock_after_atomics).
  __device__ __forceinline__ static void put(word* p, word w) { mem::cas_acquire(p, EMPTY_WORD, w); }
  // Replaces the pair `seen` read at p by `w`; false when p no longer holds `seen`.
  // On success `seen` is the pair replaced.
  __device__ __forceinline__ static bool replace(word* p, word& seen, word w) {
    return mem::cas_relaxed(p, seen, w) == seen;
  }
  // Empties p if it still holds `seen` (which is then the pair removed).
  __device__ __forceinline__ static bool erase(word* p, word& seen) {
    return mem::cas_relaxed(p, seen, EMPTY_WORD) == seen;
  }
};

// A stash entry of a wide_slot table (and a drained stash pair), and a wide slot in
// registers: key word, then value word (in memory a u32 value is the low half of the
// entry's value word, whose high half is not used; in registers it is zero-extended).
struct alignas(16) wide_word {
  unsigned long long key;
  unsigned long long value;
};

template <typename V>
struct wide_slot {
  using key_type = unsigned long long;
  using value_type = V;
  using word = wide_word;
  static constexpr bool WIDE = true;
  static constexpr key_type EMPTY_KEY = ~0ull;
  static constexpr key_type BUSY_KEY = ~0ull - 1ull;
  static constexpr word EMPTY_WORD = {~0ull, ~0ull};
  // The value word's all-ones pattern (an empty slot's value).
  static constexpr V EMPTY_VALUE = static_cast<V>(~0ull);

  // Where one slot's two words are.
  struct ptr {
    unsigned long long* key;
    V* value;
  };
  // With u64 values a bucket of 16 slots is two parts of PART slots, one 128-byte line
  // each: the part's 8 key words (two sectors), then their 8 values (two sectors). The
  // bulk reads of a part's keys (the fill kernel's, the lookup's: load_part_keys,
  // scan_lookup_parts) ask L2 for the whole line (`.L2::128B`), so the value sectors
  // arrive in L2 with the keys: a hit's value load waits on L2, not memory, and a fill's
  // value store lands in a sector L2 holds (keys apart read without the hint left it
  // partial, for memory to merge: docs/hive.md, *Keys apart again, with the line
  // hint*). Every other bucket is one part: with u32 values parts of 8 would be 96 bytes,
  // a part's keys straddling two lines; buckets of 8 slots are one line already; buckets
  // of 32 are filled by inserts that take the lowest free slot (no fill kernel honours a
  // preferred part there), so their keys stay together.
  static constexpr unsigned PART = 8;
  __host__ __device__ __forceinline__ static constexpr unsigned part_slots(unsigned slots) {
    return sizeof(V) == 8 && slots == 16 ? PART : slots;
  }
  __host__ __device__ __forceinline__ static constexpr unsigned part_words(unsigned slots) {
    return part_slots(slots) + part_slots(slots) * static_cast<unsigned>(sizeof(V)) / 8u;
  }
  // Slot `slot` of a bucket of `slots` slots that starts at `bucket`: its key word among
  // its part's key words, its value word among the value words that follow them.
  __host__ __device__ __forceinline__ static ptr at(unsigned long long* bucket, unsigned slot, unsigned slots) {
    const unsigned ps = part_slots(slots);
    unsigned long long* const part = bucket + (slot / ps) * part_words(slots);
    return ptr{part + slot % ps, reinterpret_cast<V*>(part + ps) + slot % ps};
  }
  // The slot whose key word lies `offset` words into its bucket (at's inverse).
  __host__ __device__ __forceinline__ static unsigned slot_of_key(unsigned long long offset, unsigned slots) {
    return static_cast<unsigned>(offset / part_words(slots)) * part_slots(slots) +
           static_cast<unsigned>(offset % part_words(slots));
  }
  // A stash entry (a u32 value is the low half of the entry's value word).
  __host__ __device__ __forceinline__ static ptr entry(word* e) {
    return ptr{&e->key, reinterpret_cast<V*>(&e->value)};
  }

  __host__ __device__ __forceinline__ static word pack(key_type k, value_type v) {
    return word{k, static_cast<unsigned long long>(v)};
  }
  __host__ __device__ __forceinline__ static key_type key_of(word w) { return w.key; }
  __host__ __device__ __forceinline__ static value_type value_of(word w) { return static_cast<value_type>(w.value); }
  __host__ __device__ __forceinline__ static bool is_empty(word w) { return w.key == EMPTY_KEY; }
  __host__ __device__ __forceinline__ static bool is_busy(word w) { return w.key == BUSY_KEY; }
  __host__ __device__ __forceinline__ static bool same(word a, word b) { return a.key == b.key && a.value == b.value; }

  // COHERENT (writers may run): the key word alone, relaxed at gpu scope (see the top of
  // this file: no one uses a value read beside writers without reading it again); the
  // value is left all ones. Otherwise plain loads of both words.
  template <bool COHERENT>
  __device__ __forceinline__ static word load(ptr p) {
    if (COHERENT) return word{mem::ld_relaxed(p.key), ~0ull};
    return word{*p.key, static_cast<unsigned long long>(*p.value)};
  }
  template <typename Tile>
  __device__ __forceinline__ static word shfl(word w, unsigned lane) {
    return word{Tile::shfl(w.key, lane), Tile::shfl(w.value, lane)};
  }
  // Plain stores of both words (the resize kernels, with no other writer).
  __device__ __forceinline__ static void store(ptr p, word w) {
    *p.key = w.key;
    *p.value = static_cast<V>(w.value);
  }
  __device__ __forceinline__ static void publish(ptr p, word w) {
    mem::st_relaxed(p.value, static_cast<V>(w.value));
    mem::st_release(p.key, w.key);
  }
  __device__ __forceinline__ static void publish_release(ptr p, word w) { publish(p, w); }
  __device__ __forceinline__ static void put(ptr p, word w) {
    mem::st_relaxed(p.value, static_cast<V>(w.value));
    mem::cas_acq_rel(p.key, EMPTY_KEY, w.key);
  }
  __device__ __forceinline__ static bool replace(ptr p, word& seen, word w) {
    if (mem::cas_acquire(p.key, seen.key, BUSY_KEY) != seen.key) return false;
    seen.value = mem::ld_relaxed(p.value);
    mem::st_relaxed(p.value, static_cast<V>(w.value));
    mem::st_release(p.key, w.key);
    return true;
  }
  // The value is read after the key word was emptied, and the fence orders that read
  // before the caller's release of the slot's free bit (after which a claimer may write
  // the value word).
  __device__ __forceinline__ static bool erase(ptr p, word& seen) {
    if (mem::cas_acquire(p.key, seen.key, EMPTY_KEY) != seen.key) return false;
    seen.value = mem::ld_relaxed(p.value);
    mem::fence_acq_rel();
    return true;
  }
};

template <typename K, typename V>
struct slot_of;
template <>
struct slot_of<unsigned, unsigned> {
  using type = packed_slot;
};
template <>
struct slot_of<unsigned long long, unsigned> {
  using type = wide_slot<unsigned>;
};
template <>
struct slot_of<unsigned long long, unsigned long long> {
  using type = wide_slot<unsigned long long>;
};

}  // namespace hive
}  // namespace gpuds
