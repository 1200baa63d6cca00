// gpuds/hive/detail/stash.cuh: HiveMap's overflow stash (Hive paper, §IV-A, step 4).
//
// A ring of `capacity` slot words (hive_slot.cuh) in global memory. Producers reserve a slot with one
// fetch-add on the tail and publish the word there; a reservation past the capacity
// means the stash is full (the operation reports it; nothing spins). Lookups scan the
// occupied prefix with the whole tile, deletes empty a slot with a compare-and-swap.
// Only operations whose first bucket has its STASHED flag look here at all, so the tail
// is not a word that every lookup or insert reads.
// Between batches the host drains the stash (after an expansion, or when half of it is
// used), resets the tail to the head, and reinserts the drained words into the table.
#pragma once
#include <gpuds/hive/detail/hive_bucket.cuh>

namespace gpuds {
namespace hive {

template <typename S>
struct stash_ref {
  using word = typename S::word;
  word* words;
  unsigned long long* tail;
  unsigned capacity;

  // Words in use, the same on every lane of the tile (rank 0 reads the tail). A stash
  // of capacity 0 is one the host knows to be empty for a kernel without writers: its
  // tail is not read at all (every lookup would read that one word).
  __device__ __forceinline__ unsigned used() const {
    if (capacity == 0) return 0;
    unsigned n = 0;
    if (tile::rank() == 0) {
      const unsigned long long t = mem::ld_relaxed(tail);
      n = t < capacity ? static_cast<unsigned>(t) : capacity;
    }
    return tile::shfl(n, 0);
  }

  // WCME over the stash, SCAN * SLOTS words at a time: each lane loads SCAN words before
  // the tile ballots over them. The bulk lookup scans with SCAN 2, so that a long stash
  // (reservations that were never given back stay as empty words until the next drain)
  // costs fewer dependent round trips: one tile scanning a stash of some thousand words
  // one line at a time made the whole lookup kernel wait for it.
  // `busy` (when not null) is set where a scanned slot was BUSY_KEY (wide slots).
  template <bool COHERENT, unsigned SCAN = 1>
  __device__ __forceinline__ bool find(typename S::key_type k, slot_match<S>& m, bool* busy = nullptr) const {
    const unsigned n = used();
    for (unsigned base = 0; base < n; base += SCAN * SLOTS) {
      word w[SCAN];
#pragma unroll
      for (unsigned j = 0; j < SCAN; ++j) {
        const unsigned i = base + j * SLOTS + tile::rank();
        w[j] = S::EMPTY_WORD;
        if (i < n) w[j] = S::template load<COHERENT>(words + i);
      }
#pragma unroll
      for (unsigned j = 0; j < SCAN; ++j) {
        if (S::WIDE && busy != nullptr && tile::any(S::is_busy(w[j]))) *busy = true;
        const unsigned hits = tile::ballot(S::key_of(w[j]) == k);
        if (hits != 0) {
          const unsigned lane = __ffs(hits) - 1;
          m.slot = base + j * SLOTS + lane;
          m.at = words + m.slot;
          m.word = S::template shfl<tile>(w[j], lane);
          return true;
        }
      }
    }
    return false;
  }

  // Rank 0 reserves a slot; returns its index, or `capacity` when the stash is full.
  __device__ __forceinline__ unsigned reserve() const {
    unsigned index = 0;
    if (tile::rank() == 0) {
      const unsigned long long t = mem::fetch_add_relaxed(tail, 1ull);
      index = t < capacity ? static_cast<unsigned>(t) : capacity;
    }
    return tile::shfl(index, 0);
  }

  // Gives an unused reservation back when it is still the last one; otherwise the slot
  // stays empty until the next drain.
  __device__ __forceinline__ void unreserve(unsigned index) const {
    if (tile::rank() == 0) {
      mem::cas_relaxed(tail, static_cast<unsigned long long>(index) + 1ull,
                       static_cast<unsigned long long>(index));
    }
  }

  __device__ __forceinline__ void publish(unsigned index, word w) const {
    if (tile::rank() == 0) S::publish_release(words + index, w);
  }
};

}  // namespace hive
}  // namespace gpuds
