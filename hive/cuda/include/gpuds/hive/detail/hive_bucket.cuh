// gpuds/hive/detail/hive_bucket.cuh: one bucket of HiveMap and the warp-cooperative
// protocols on it (Hive paper, §III-A, §III-E, §III-F).
//
// A bucket is HIVE_SLOTS packed 64-bit words (key in the high half, value in the low
// half; all ones is the empty word, so key 0xffffffff is reserved), read by a tile of
// HIVE_SLOTS lanes, one slot per lane: 16 slots are one 128-byte line, 32 slots two.
// Beside the slots each bucket has two 32-bit metadata words, kept together so that one
// sector holds both: the free mask (bit s set = slot s free) and a version that doubles
// as the bucket lock (odd = locked; a seqlock, so that lock-free readers can tell that a
// lock was taken and released while they looked).
//
// Invariants: a slot's word is written only by the owner of its free bit just after
// claiming it, or by a compare-and-swap from a word that was read there (replace,
// eviction, delete). A free bit is set again only after the slot was emptied.
#pragma once
#include <gpuds/core/memory.cuh>
#include <gpuds/core/warp.cuh>

#ifndef HIVE_SLOTS
#define HIVE_SLOTS 16
#endif
#ifndef HIVE_HASH
#define HIVE_HASH 0
#endif

namespace gpuds {
namespace hive {

constexpr unsigned SLOTS = HIVE_SLOTS;
static_assert(SLOTS == 8 || SLOTS == 16 || SLOTS == 32, "HIVE_SLOTS must be 8, 16 or 32");
using tile = warp::tile<SLOTS>;

constexpr unsigned long long EMPTY = ~0ull;
constexpr unsigned EMPTY_KEY = 0xffffffffu;
constexpr unsigned ALL_FREE = SLOTS == 32 ? 0xffffffffu : ((1u << SLOTS) - 1u);

__host__ __device__ __forceinline__ unsigned long long pack(unsigned k, unsigned v) {
  return (static_cast<unsigned long long>(k) << 32) | v;
}
__host__ __device__ __forceinline__ unsigned key_of(unsigned long long w) {
  return static_cast<unsigned>(w >> 32);
}
__host__ __device__ __forceinline__ unsigned value_of(unsigned long long w) {
  return static_cast<unsigned>(w);
}

// A match in a bucket or the stash: the slot's address and the word seen there.
struct match {
  unsigned long long* at;
  unsigned long long word;
  unsigned slot;
};

// WCME (§III-F): every lane loads its own slot (one coalesced access), the lanes whose
// key matches form a ballot, and the first of them is elected. Returns whether k is in
// the bucket; `m` gets the elected slot. COHERENT loads go to L2 (other SMs may be
// writing); otherwise plain loads suffice (no writer in flight).
template <bool COHERENT>
__device__ __forceinline__ bool wcme(unsigned long long* bucket, unsigned k, match& m) {
  unsigned long long* p = bucket + tile::rank();
  const unsigned long long w = COHERENT ? mem::ld_relaxed(p) : *p;
  const unsigned hits = tile::ballot(key_of(w) == k);
  if (hits == 0) return false;
  const unsigned slot = __ffs(hits) - 1;
  m.slot = slot;
  m.at = bucket + slot;
  m.word = tile::shfl(w, slot);
  return true;
}

__device__ __forceinline__ void backoff(unsigned attempt) {
  const unsigned shift = attempt < 6 ? attempt : 6;
  __nanosleep(16u << shift);
}

// The bucket's metadata words.
struct bucket_meta {
  unsigned* words;  // [free mask, version]
  __device__ __forceinline__ unsigned* mask() const { return words; }
  __device__ __forceinline__ unsigned* version() const { return words + 1; }

  // Every lane reads the version with acquire semantics (each lane's later loads are
  // then ordered after it; the hardware merges the identical requests). False, after a
  // backoff, while the bucket is locked or the lanes saw different versions; otherwise
  // `seen` is the version every lane saw.
  __device__ __forceinline__ bool observe_unlocked(unsigned attempt, unsigned& seen) const {
    const unsigned mine = mem::ld_acquire(version());
    seen = tile::shfl(mine, 0);
    if ((seen & 1u) == 0 && !tile::any(mine != seen)) return true;
    backoff(attempt);
    return false;
  }

  // True (on every lane) when the version still equals `seen` after the lane's loads.
  __device__ __forceinline__ bool unchanged(unsigned seen) const {
    mem::fence_acq_rel();
    return !tile::any(mem::ld_relaxed(version()) != seen);
  }

  // Rank 0 takes the lock if the version is still the even `seen`; broadcast result.
  __device__ __forceinline__ bool lock_from(unsigned seen) const {
    unsigned ok = 0;
    if (tile::rank() == 0) ok = mem::cas_acq_rel(version(), seen, seen + 1u) == seen;
    return tile::shfl(ok, 0) != 0;
  }

  // Rank 0 tries once to take the lock; returns the even version it locked from, or an
  // odd number when the lock is held.
  __device__ __forceinline__ unsigned try_lock() const {
    unsigned got = 1u;
    if (tile::rank() == 0) {
      const unsigned v = mem::ld_relaxed(version());
      if ((v & 1u) == 0 && mem::cas_acq_rel(version(), v, v + 1u) == v) got = v;
    }
    return tile::shfl(got, 0);
  }

  // Rank 0 releases a lock taken from `seen`: the next even version.
  __device__ __forceinline__ void unlock(unsigned seen) const {
    if (tile::rank() == 0) mem::st_release(version(), seen + 2u);
  }
};

// WABC (§III-E): rank 0 reads the free mask (relaxed) and broadcasts it, the lowest
// free slot is elected, and rank 0 clears that one bit with a fetch-and. The old mask
// says whether the bit was still free: if so the slot is ours; if another warp took it
// first, the fetch-and changed nothing, and the next free bit of the fresher mask is
// tried. Returns the claimed slot (the same on every lane), or SLOTS when the bucket is
// full. A claimed slot that cannot be used after all is given back with `release`.
__device__ __forceinline__ unsigned claim(bucket_meta meta) {
  unsigned free_bits = 0;
  if (tile::rank() == 0) free_bits = mem::ld_relaxed(meta.mask()) & ALL_FREE;
  free_bits = tile::shfl(free_bits, 0);
  for (unsigned tries = 0; tries <= SLOTS && free_bits != 0; ++tries) {
    const unsigned slot = __ffs(free_bits) - 1;
    const unsigned bit = 1u << slot;
    unsigned old = 0;
    if (tile::rank() == 0) old = mem::fetch_and_relaxed(meta.mask(), ~bit);
    old = tile::shfl(old, 0);
    if (old & bit) return slot;
    free_bits = old & ALL_FREE & ~bit;
  }
  return SLOTS;
}

// The restore of WABC: sets a claimed slot's bit again (rank 0).
__device__ __forceinline__ void release(bucket_meta meta, unsigned slot) {
  if (tile::rank() == 0) mem::fetch_or_relaxed(meta.mask(), 1u << slot);
}

// Step 2 of the insert (§IV-A), claim-then-commit: WABC, then rank 0 (the lane that
// claimed) publishes the word at once. Returns whether the word was placed.
__device__ __forceinline__ bool claim_commit(unsigned long long* bucket, bucket_meta meta,
                                             unsigned long long word) {
  const unsigned slot = claim(meta);
  if (slot == SLOTS) return false;
  if (tile::rank() == 0) mem::st_relaxed(bucket + slot, word);
  return true;
}

}  // namespace hive
}  // namespace gpuds
