// gpuds/hive/detail/stash.cuh: HiveMap's overflow stash (Hive paper, §IV-A, step 4).
//
// A ring of `capacity` entries in global memory (hive_slot.cuh: a packed word, or a
// 16-byte wide_word {key, value} of a wide table, whose buckets keep keys and values
// apart but whose stash keeps each pair together) and two counters:
// `claims`, the entries promised, and `tail`, the entries taken. An eviction that may
// have to park a displaced key first claims an entry (reserve: a compare-and-swap that
// never takes the count past the capacity; none left means the stash is full, and the
// operation reports it; nothing spins), and either gives the claim back (unreserve: one
// atomic decrement, whatever other claims came and went meanwhile) or parks the key
// (publish: a fetch-add on the tail picks the entry, then the word is stored there).
// Every entry taken spends a claim that is never given back, so tail <= claims <=
// capacity: the entry a publish picks is always inside the ring, and the occupied
// prefix has no holes but those of deletes. (A single counter that was both, with a
// reservation given back only while it was still the last one, leaked every
// reservation of concurrent evictions that did not end in the stash: a batch of a few
// hundred random-walk evictions filled a stash that held nothing.)
// Lookups scan the occupied prefix (the tail) with the whole tile, deletes empty a slot
// with a compare-and-swap. Only operations whose first bucket has its STASHED flag look
// here at all, so the tail is not a word that every lookup or insert reads.
// Between batches the host drains the stash (after an expansion, or when half of it is
// used), resets both counters, and reinserts the drained words into the table.
#pragma once
#include <gpuds/hive/detail/hive_bucket.cuh>

namespace gpuds {
namespace hive {

template <typename S>
struct stash_ref {
  using word = typename S::word;
  word* words;
  unsigned long long* tail;    // entries taken: the occupied prefix
  unsigned long long* claims;  // entries promised (taken, or claimed to be taken)
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
  // (entries emptied by deletes stay as empty words until the next drain) costs fewer
  // dependent round trips: one tile scanning a stash of some thousand words
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
        if (i < n) w[j] = S::template load<COHERENT>(S::entry(words + i));
      }
#pragma unroll
      for (unsigned j = 0; j < SCAN; ++j) {
        if (S::WIDE && busy != nullptr && tile::any(S::is_busy(w[j]))) *busy = true;
        const unsigned hits = tile::ballot(S::key_of(w[j]) == k);
        if (hits != 0) {
          const unsigned lane = __ffs(hits) - 1;
          m.slot = base + j * SLOTS + lane;
          m.at = S::entry(words + m.slot);
          m.word = S::template shfl<tile>(w[j], lane);
          return true;
        }
      }
    }
    return false;
  }

  // Claims an entry for a key that may have to be parked (rank 0; the same answer on
  // every lane): false when `capacity` entries are claimed already (the stash is full).
  // The count never passes the capacity, so a failed claim costs no one else an entry.
  __device__ __forceinline__ bool reserve() const {
    unsigned ok = 0;
    if (tile::rank() == 0) {
      unsigned long long c = mem::ld_relaxed(claims);
      while (c < capacity) {
        const unsigned long long seen = mem::cas_relaxed(claims, c, c + 1ull);
        if (seen == c) {
          ok = 1;
          break;
        }
        c = seen;
      }
    }
    return tile::shfl(ok, 0) != 0;
  }

  // Gives a claim that was not used back (rank 0).
  __device__ __forceinline__ void unreserve() const {
    if (tile::rank() == 0) mem::fetch_add_relaxed(claims, ~0ull);
  }

  // Parks `w` with a claim the caller holds (which it spends): takes the next entry
  // (below the capacity, see the top of this file) and stores the word there.
  __device__ __forceinline__ void publish(word w) const {
    if (tile::rank() == 0) {
      const unsigned long long index = mem::fetch_add_relaxed(tail, 1ull);
      S::publish_release(S::entry(words + index), w);
    }
  }
};

}  // namespace hive
}  // namespace gpuds
