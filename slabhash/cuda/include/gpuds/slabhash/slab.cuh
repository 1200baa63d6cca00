// gpuds/slabhash/slab.cuh: the slab, its reserved values, and the bucket iterator.
//
// A slab is 128 bytes read by one warp, one 32-bit word per lane (Ashkiani et al.,
// "A Dynamic Hash Table for the GPU", 2018, §IV-B). Lanes 0-29 hold data, laid out per
// key and value type as layout.cuh says (the paper's map: 15 key-value pairs, keys on
// even lanes, each value on the lane after its key; a set: 30 keys). Lane 30 is
// auxiliary (kept all ones, or the busy bits of a wide layout), lane 31 holds the 32-bit
// SlabAlloc address of the next slab, or NULL_SLAB at the tail.
//
// Invariants every operation keeps (the dissertation's §5.4.3 design):
// - a data slot goes EMPTY -> key (a claim) -> TOMBSTONE (a deletion), and back to EMPTY
//   only in FLUSH, a separate kernel; a map's value may change while its key stays;
// - a slot is claimed only after every earlier slot of its list was seen non-empty, so
//   the empty slots of a list are a suffix of it and list order is insertion order
//   (this is what makes SEARCH and DELETE find the least recent instance);
// - a slab is linked at the tail only after the tail was seen full, and its words are
//   all ones (empty pairs, NULL next) before it is published (a release CAS on the
//   tail's next word);
// - a packed entry's claim, replacement or deletion is one relaxed CAS of the whole slot
//   (a map's key-value pair as one 64-bit word), or for a map with unique keys a deletion
//   is one relaxed exchange of the pair for a tombstone: the slot is all it publishes, so
//   it needs no ordering with other memory, and relaxed atomics skip the fences an
//   acq_rel one costs. A wide entry (a pair over 8 bytes) changes under its busy bit
//   (layout.cuh, map_ref.cuh).
#pragma once
#include <gpuds/alloc/slab_alloc.cuh>
#include <gpuds/core/memory.cuh>
#include <gpuds/core/warp.cuh>
#include <gpuds/slabhash/layout.cuh>

namespace gpuds {
namespace slabhash {

// Reserved key values of 32-bit keys (the words of a slot never claimed, and of a
// deleted key); a 64-bit key's are all ones and all ones minus one (empty_key<K>).
constexpr unsigned EMPTY_KEY = 0xFFFFFFFFu;
constexpr unsigned TOMBSTONE_KEY = 0xFFFFFFFEu;
template <class K>
constexpr K empty_key = static_cast<K>(~static_cast<K>(0));
template <class K>
constexpr K tombstone_key = static_cast<K>(~static_cast<K>(0) - 1);
// The value word of an empty pair, so that a claim is one 64-bit CAS of the whole pair.
constexpr unsigned EMPTY_VALUE = 0xFFFFFFFFu;
// Every word of a fresh slab: empty slots and a NULL next address.
constexpr unsigned FRESH_WORD = 0xFFFFFFFFu;
constexpr unsigned NULL_SLAB = alloc::null_unit;
// What get_many_into writes for a missing key (all ones, of the value type).
template <class V>
constexpr V not_found_value = static_cast<V>(~static_cast<V>(0));

// The per-lane outcome of an operation.
constexpr unsigned OP_ABSENT = 0;   // the key was not there (REPLACE: it was added)
constexpr unsigned OP_PRESENT = 1;  // the key was there (found, replaced or deleted)
constexpr unsigned OP_FAILED = 2;   // not applied: a status flag says why
constexpr unsigned OP_ADDED = 3;    // INSERT (duplicates allowed) added an instance

template <class K>
__device__ __forceinline__ bool is_reserved_key(K k) {
  return k == empty_key<K> || k == tombstone_key<K>;
}

// One mov of two 32-bit registers: a shift and an or would let the compiler keep the
// value shifted into a 64-bit register pair (one register more in the update loops).
__device__ __forceinline__ unsigned long long pack_pair(unsigned key, unsigned value) {
  unsigned long long pair;
  asm("mov.b64 %0, {%1, %2};" : "=l"(pair) : "r"(key), "r"(value));
  return pair;
}

// Relaxed 64-bit exchange of a slot, made only where `mine` holds, into `pair` (unchanged
// elsewhere): like the CASes, a deletion publishes nothing but the slot itself. One
// predicated instruction, so that the walk around it has no divergent branch (a branch
// there makes the compiler guard every later shuffle and ballot of the loop with a
// divergence check).
__device__ __forceinline__ void exch_pair_relaxed_if(bool mine, unsigned* slot,
                                                     unsigned long long desired,
                                                     unsigned long long& pair) {
  asm volatile(
      "{\n\t.reg .pred p;\n\tsetp.ne.u32 p, %1, 0;\n\t"
      "@p atom.relaxed.gpu.global.exch.b64 %0, [%2], %3;\n\t}"
      : "+l"(pair)
      : "r"(static_cast<unsigned>(mine)), "l"(slot), "l"(desired)
      : "memory");
}

// Relaxed 64-bit CAS of a slot, made only where `mine` holds: `pair` holds the expected
// pair before and what the CAS found after (unchanged where `mine` is false). One
// predicated instruction whose compare operand and destination are `pair`'s registers:
// a CAS in a branch writing another variable leaves its result to be moved into that
// variable's registers, and that move waits for the CAS.
__device__ __forceinline__ void cas_pair_relaxed_if(bool mine, unsigned* slot,
                                                    unsigned long long desired,
                                                    unsigned long long& pair) {
  asm volatile(
      "{\n\t.reg .pred p;\n\tsetp.ne.u32 p, %1, 0;\n\t"
      "@p atom.relaxed.gpu.global.cas.b64 %0, [%2], %0, %3;\n\t}"
      : "+l"(pair)
      : "r"(static_cast<unsigned>(mine)), "l"(slot), "l"(desired)
      : "memory");
}

// Relaxed CAS of a 32- or 64-bit word, made only where `mine` holds, with `seen` as the
// expected word before and what the CAS found after, in place (see cas_pair_relaxed_if:
// nothing waits for the result until it is read).
__device__ __forceinline__ void cas_relaxed_if(bool mine, unsigned* at, unsigned desired,
                                               unsigned& seen) {
  asm volatile(
      "{\n\t.reg .pred p;\n\tsetp.ne.u32 p, %1, 0;\n\t"
      "@p atom.relaxed.gpu.global.cas.b32 %0, [%2], %0, %3;\n\t}"
      : "+r"(seen)
      : "r"(static_cast<unsigned>(mine)), "l"(at), "r"(desired)
      : "memory");
}
__device__ __forceinline__ void cas_relaxed_if(bool mine, unsigned long long* at,
                                               unsigned long long desired,
                                               unsigned long long& seen) {
  cas_pair_relaxed_if(mine, reinterpret_cast<unsigned*>(at), desired, seen);
}

// The busy bit of slot `slot` of a wide layout (layout.cuh). take_slot sets it with an
// acquire (what the last holder wrote before its release is visible after) and says
// whether it was clear, so that the caller now holds the slot; release_slot clears it
// with a release (the value stored before it is visible to whoever sees it clear).
__device__ __forceinline__ bool take_slot(unsigned* slab, unsigned slot) {
  unsigned was;
  asm volatile("atom.acquire.gpu.global.or.b32 %0, [%1], %2;"
               : "=r"(was)
               : "l"(slab + AUX_LANE), "r"(1u << slot)
               : "memory");
  return ((was >> slot) & 1u) == 0u;
}
// take_slot without the acquire, for a holder that reads nothing the last holder wrote (a
// deletion that returns no value: it only tombstones the key, and the OR's atomicity alone
// decides which of two takers holds the slot).
__device__ __forceinline__ bool take_slot_relaxed(unsigned* slab, unsigned slot) {
  unsigned was;
  asm volatile("atom.relaxed.gpu.global.or.b32 %0, [%1], %2;"
               : "=r"(was)
               : "l"(slab + AUX_LANE), "r"(1u << slot)
               : "memory");
  return ((was >> slot) & 1u) == 0u;
}
__device__ __forceinline__ void release_slot(unsigned* slab, unsigned slot) {
  asm volatile("red.release.gpu.global.and.b32 [%0], %1;" ::"l"(slab + AUX_LANE), "r"(~(1u << slot))
               : "memory");
}

// Publishing a wide claim, each step made only where `mine` holds, as predicated
// instructions (a branch after the walk made the compiler guard the walk's shuffles with
// divergence checks): the value's relaxed store, then the release clear of slot `slot`'s
// busy bit. The store and the release in one thread are a release pattern, so that a
// reader that sees the bit clear sees the value; a warp's lanes clear their bits with one
// instruction, so a warp publishes all its claims of a pass behind one memory barrier.
// (A release is a barrier and the clear; a fence.acq_rel before a relaxed clear compiled
// to the same barrier plus an L1 invalidation that only an acquire needs.)
__device__ __forceinline__ void st_relaxed_if(bool mine, unsigned* at, unsigned v) {
  asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.u32 p, %0, 0;\n\t"
               "@p st.relaxed.gpu.global.b32 [%1], %2;\n\t}" ::"r"(static_cast<unsigned>(mine)),
               "l"(at), "r"(v)
               : "memory");
}
__device__ __forceinline__ void st_relaxed_if(bool mine, unsigned long long* at,
                                              unsigned long long v) {
  asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.u32 p, %0, 0;\n\t"
               "@p st.relaxed.gpu.global.b64 [%1], %2;\n\t}" ::"r"(static_cast<unsigned>(mine)),
               "l"(at), "l"(v)
               : "memory");
}
__device__ __forceinline__ void clear_busy_release_if(bool mine, unsigned* slab, unsigned slot) {
  asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.u32 p, %0, 0;\n\t"
               "@p red.release.gpu.global.and.b32 [%1], %2;\n\t}" ::"r"(static_cast<unsigned>(mine)),
               "l"(slab + AUX_LANE), "r"(~(1u << slot))
               : "memory");
}

// One lane's word of a slab. Relaxed loads at GPU scope are served from L2, the point of
// coherence, so a warp sees every claim that completed before its read; the 32 lanes'
// loads coalesce into one 128-byte request.
__device__ __forceinline__ unsigned read_slab(const unsigned* slab) {
  return mem::ld_relaxed(slab + warp::lane_id());
}

// Lanes below the calling lane.
__device__ __forceinline__ unsigned lanes_below() {
  unsigned m;
  asm("mov.u32 %0, %%lanemask_lt;" : "=r"(m));
  return m;
}

// Warp-cooperative iterator over the slabs of one bucket: every lane holds its word of
// the current slab. All 32 lanes must call every member (converged, same bucket).
//
//   for (auto it = ref.bucket(b); it.valid(); it.next()) {
//     for (unsigned live = it.live_key_lanes(); live != 0; live &= live - 1) {
//       const unsigned at = __ffs(live) - 1;        // a live slot's first key lane
//       const auto key = it.key(at);                // broadcast to every lane
//       ...
//     }
//   }
//
// The iterator reads with relaxed loads and follows next addresses as it goes, so it
// sees a list that is being appended to concurrently as some prefix of it.
template <class K, class V>
struct slab_iterator {
  using layout = entry_layout<K, V>;
  alloc::slab_alloc_ref alloc;
  unsigned* slab;
  unsigned word_;

  __device__ bool valid() const { return slab != nullptr; }
  // This lane's word of the current slab.
  __device__ unsigned word() const { return word_; }
  // The current slab (its first word).
  __device__ unsigned* address() const { return slab; }
  // The slots holding a live key (neither empty nor a tombstone), one bit at each one's
  // first key lane.
  __device__ unsigned live_key_lanes() const { return layout::live(word_); }
  // The key and (maps) the value of the slot whose first key lane is `lane`.
  __device__ K key(unsigned lane) const { return layout::key_at(word_, lane); }
  __device__ V value(unsigned lane) const { return layout::value_at(word_, lane); }
  // The SlabAlloc address of the next slab, NULL_SLAB at the tail.
  __device__ unsigned next_address() const {
    return __shfl_sync(warp::FULL_MASK, word_, NEXT_LANE);
  }
  __device__ void next() {
    const unsigned n = next_address();
    slab = n == NULL_SLAB ? nullptr : alloc.pointer_as<unsigned>(n);
    if (slab != nullptr) word_ = read_slab(slab);
  }
};

}  // namespace slabhash
}  // namespace gpuds
