// gpuds/slabhash/slab.cuh: the slab, its reserved values, and the bucket iterator.
//
// A slab is 128 bytes read by one warp, one 32-bit word per lane (Ashkiani et al.,
// "A Dynamic Hash Table for the GPU", 2018, §IV-B). Lanes 0-29 hold data: for a map 15
// key-value pairs (keys on even lanes, each value on the lane after its key), for a set
// 30 keys. Lane 30 is auxiliary (unused, kept all ones), lane 31 holds the 32-bit
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
// - a claim, replacement or deletion is one relaxed CAS of the whole slot (a map's
//   key-value pair as one 64-bit word), or for a map with unique keys a deletion is one
//   relaxed exchange of the pair for a tombstone: the slot is all it publishes, so it
//   needs no ordering with other memory, and relaxed atomics skip the fences an acq_rel
//   one costs.
#pragma once
#include <gpuds/alloc/slab_alloc.cuh>
#include <gpuds/core/memory.cuh>
#include <gpuds/core/warp.cuh>

namespace gpuds {
namespace slabhash {

constexpr unsigned SLAB_WORDS = 32;
constexpr unsigned AUX_LANE = 30;
constexpr unsigned NEXT_LANE = 31;

// Reserved key values: a slot never claimed, and a deleted key.
constexpr unsigned EMPTY_KEY = 0xFFFFFFFFu;
constexpr unsigned TOMBSTONE_KEY = 0xFFFFFFFEu;
// The value word of an empty pair, so that a claim is one 64-bit CAS of the whole pair.
constexpr unsigned EMPTY_VALUE = 0xFFFFFFFFu;
// Every word of a fresh slab: empty slots and a NULL next address.
constexpr unsigned FRESH_WORD = 0xFFFFFFFFu;
constexpr unsigned NULL_SLAB = alloc::null_unit;
// What get_many_into writes for a missing key.
constexpr unsigned NOT_FOUND_VALUE = 0xFFFFFFFFu;

// Lanes holding keys: a map's even lanes 0-28, a set's lanes 0-29.
constexpr unsigned MAP_KEY_LANES = 0x15555555u;
constexpr unsigned SET_KEY_LANES = 0x3FFFFFFFu;

// The per-lane outcome of an operation.
constexpr unsigned OP_ABSENT = 0;   // the key was not there (REPLACE: it was added)
constexpr unsigned OP_PRESENT = 1;  // the key was there (found, replaced or deleted)
constexpr unsigned OP_FAILED = 2;   // not applied: a status flag says why
constexpr unsigned OP_ADDED = 3;    // INSERT (duplicates allowed) added an instance

__device__ __forceinline__ bool is_reserved_key(unsigned k) {
  return k == EMPTY_KEY || k == TOMBSTONE_KEY;
}

// One mov of two 32-bit registers: a shift and an or would let the compiler keep the
// value shifted into a 64-bit register pair (one register more in the update loops).
__device__ __forceinline__ unsigned long long pack_pair(unsigned key, unsigned value) {
  unsigned long long pair;
  asm("mov.b64 %0, {%1, %2};" : "=l"(pair) : "r"(key), "r"(value));
  return pair;
}

// Relaxed 64-bit exchange of a slot: like the CASes, a deletion publishes nothing but
// the slot itself.
__device__ __forceinline__ unsigned long long exch_pair_relaxed(unsigned* slot,
                                                              unsigned long long pair) {
  return mem::exch_relaxed(reinterpret_cast<unsigned long long*>(slot), pair);
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
//     const unsigned keys = it.live_key_lanes();  // lanes with a live key
//     ...                                         // it.word(): this lane's word
//   }
//
// The iterator reads with relaxed loads and follows next addresses as it goes, so it
// sees a list that is being appended to concurrently as some prefix of it.
struct slab_iterator {
  alloc::slab_alloc_ref alloc;
  unsigned* slab;
  unsigned word_;
  unsigned key_lanes;

  __device__ bool valid() const { return slab != nullptr; }
  // This lane's word of the current slab.
  __device__ unsigned word() const { return word_; }
  // The current slab (its first word).
  __device__ unsigned* address() const { return slab; }
  // The key lanes holding a live key (neither empty nor a tombstone).
  __device__ unsigned live_key_lanes() const {
    return __ballot_sync(warp::FULL_MASK, !is_reserved_key(word_)) & key_lanes;
  }
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
