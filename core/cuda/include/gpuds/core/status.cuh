// gpuds/core/status.cuh: the status-word protocol.
//
// Every structure owns one device word. A kernel that meets a problem it cannot solve
// (pool exhausted, retry cap reached, reserved key) sets a flag with an atomic OR and
// ends that one operation; it never traps, asserts or spins. The host reads and clears
// the word where it synchronizes anyway and turns the flags into errors. Bits 0-15 are
// common to all structures (mirrored by `gpuds_core::Status`); bits 16-31 belong to
// the structure that owns the word.
#pragma once
#include <gpuds/core/memory.cuh>

namespace gpuds {
namespace status {

constexpr unsigned POOL_EXHAUSTED = 1u << 0;  // an allocator had no free unit
constexpr unsigned RETRY_LIMIT = 1u << 1;     // a bounded retry loop gave up
constexpr unsigned RESERVED_KEY = 1u << 2;    // a sentinel key reached a kernel
constexpr unsigned STASH_FULL = 1u << 3;      // an overflow area had no room
constexpr unsigned TABLE_FULL = 1u << 4;      // a probe visited every slot
constexpr unsigned OUT_OF_BOUNDS = 1u << 5;   // an index or address outside its range
constexpr unsigned CORRUPTED = 1u << 6;       // an invariant check failed on the device
constexpr unsigned FIRST_STRUCTURE_BIT = 1u << 16;

// Records `flag`; a relaxed load first keeps a storm of failures from hammering one word.
__device__ __forceinline__ void report(unsigned* word, unsigned flag) {
  if (word != nullptr && (mem::ld_relaxed(word) & flag) != flag) {
    mem::fetch_or_relaxed(word, flag);
  }
}

// Marks operation `i` of a batch as not applied: bit i % 32 of word i / 32 of `bits`, a
// call's failure bits (gpuds_core::failures::CallStatus; null: the call keeps none), which
// start zeroed. The host reads them when the call's status word is not clear.
__device__ __forceinline__ void mark_not_applied(unsigned* bits, unsigned long long i) {
  if (bits != nullptr) atomicOr(bits + (i >> 5), 1u << (i & 31u));
}

}  // namespace status
}  // namespace gpuds
