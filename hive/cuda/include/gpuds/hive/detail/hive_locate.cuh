// gpuds/hive/detail/hive_locate.cuh: the part of HiveMap's device ref that finds keys
// (Hive paper, §III-F, §IV-B): the ref's fields and addressing, lookups with and
// without writers in flight, deletes, and the per-call counts and failure bits.
// hive_ref (gpuds/hive/hive_ref.cuh) adds the inserts; see there for the protocols.
#pragma once
#include <gpuds/core/status.cuh>
#include <gpuds/hive/detail/hive_bucket.cuh>
#include <gpuds/hive/detail/stash.cuh>
#include <gpuds/hive/hashers.cuh>

namespace gpuds {
namespace hive {

// Control block words (unsigned long long each). The counters that every tile adds to
// are striped over CTRL_STRIPES lines of 128 bytes (the host sums them), so that no
// single word takes an atomic from every tile.
constexpr unsigned CTRL_STASH_TAIL = 0;     // stash entries taken since the last drain
constexpr unsigned CTRL_STASH_CLAIMS = 1;   // stash entries claimed (taken or promised)
constexpr unsigned CTRL_STRIPE_BASE = 16;   // first word of stripe 0
constexpr unsigned CTRL_STRIPE_WORDS = 16;  // one 128-byte line per stripe
constexpr unsigned CTRL_STRIPES = 32;
constexpr unsigned STRIPE_LEN = 0;    // pairs stored (table and stash), two's complement deltas
constexpr unsigned STRIPE_STEPS = 1;  // inserts finished in step 1..4 (four words)
constexpr unsigned STRIPE_MOVES = 5;  // keys displaced by evictions
constexpr unsigned CTRL_WORDS = CTRL_STRIPE_BASE + CTRL_STRIPES * CTRL_STRIPE_WORDS;

// How an insert finished.
constexpr unsigned STEP_FAILED = 0;
constexpr unsigned STEP_REPLACE = 1;
constexpr unsigned STEP_CLAIM = 2;
constexpr unsigned STEP_EVICT = 3;
constexpr unsigned STEP_STASH = 4;
// A lane's fast path (insert_alone) left the operation to its tile (see there).
constexpr unsigned STEP_LEFTOVER = 0xffu;
// Attempts of a lane's fast path (a lost swap, a locked or pending first bucket) before
// it leaves the operation to its tile.
constexpr unsigned ALONE_TRIES = 4;

constexpr unsigned RETRY_CAP = 1u << 14;
constexpr unsigned MAX_EVICTION_BOUND = 16;
constexpr unsigned VICTIM_TRIES = 4;
// Times an eviction reads its current bucket again when every victim it tried was
// locked by or changed under a concurrent insert (hive_ref::evict), before the key in
// hand goes to the stash.
constexpr unsigned EVICT_WAITS = 32;

// Per-tile counts, flushed once per kernel by rank 0.
struct tally {
  int len = 0;
  unsigned steps[4] = {0, 0, 0, 0};
  unsigned moves = 0;
};

// Sum of `x` over the calling lane's tile, on every lane.
__device__ __forceinline__ unsigned tile_sum(unsigned x) {
#pragma unroll
  for (unsigned o = SLOTS / 2; o > 0; o >>= 1) x += __shfl_xor_sync(tile::mask(), x, o, SLOTS);
  return x;
}

// Adds the per-lane counts of the fast paths (`lane`, different on every lane) to the
// tile's counts `t` (the same on every lane).
__device__ __forceinline__ void merge_lanes(const tally& lane, tally& t) {
  t.len += static_cast<int>(tile_sum(static_cast<unsigned>(lane.len)));
#pragma unroll
  for (int i = 0; i < 4; ++i) t.steps[i] += tile_sum(lane.steps[i]);
  t.moves += tile_sum(lane.moves);
}

// The fields of hive_ref<K, V> and the operations that find keys (hive_ref adds the
// inserts). K, V as for hive_ref.
template <typename K, typename V>
struct hive_locate {
  using key_type = K;
  using value_type = V;
  using S = typename slot_of<K, V>::type;
  using word = typename S::word;
  using match = slot_match<S>;
  static constexpr K EMPTY_KEY = S::EMPTY_KEY;

  unsigned long long* slots;  // buckets * bucket_words<S>() words (hive_bucket.cuh)
  unsigned long long* meta;   // one metadata word per bucket
  word* stash;                // stash_capacity slots
  unsigned long long* ctrl;   // CTRL_WORDS counters
  unsigned* status;           // the status word of the call (or of the table, for user kernels)
  unsigned* failed;           // failure bits: bit i for operation i < failed_capacity
  unsigned level_mask;        // 2^level - 1
  unsigned split;             // buckets below this are split
  unsigned buckets;           // level_mask + 1 + split
  unsigned stash_capacity;
  unsigned failed_capacity;   // operations with a failure bit
  unsigned eviction_bound;

  __device__ __forceinline__ unsigned bucket_of(unsigned h) const {
    const unsigned b = h & level_mask;
    return b < split ? h & ((level_mask << 1) | 1u) : b;
  }
  // Where bucket b starts (its slots: slot_at; packed, its words; wide, its key words
  // and then its value words).
  __device__ __forceinline__ unsigned long long* bucket(unsigned b) const {
    return slots + static_cast<unsigned long long>(b) * bucket_words<S>();
  }
  __device__ __forceinline__ bucket_meta meta_of(unsigned b) const { return bucket_meta{meta + b}; }
  __device__ __forceinline__ stash_ref<S> stash_of() const {
    return stash_ref<S>{stash, ctrl + CTRL_STASH_TAIL, ctrl + CTRL_STASH_CLAIMS, stash_capacity};
  }
  __device__ __forceinline__ unsigned first_of(K k) const { return bucket_of(hashes(k).h1); }
  // The other candidate bucket of a key stored in bucket b (b itself when both agree).
  __device__ __forceinline__ unsigned alternate(K k, unsigned b) const {
    const hash_pair h = hashes(k);
    const unsigned b1 = bucket_of(h.h1);
    return b1 == b ? bucket_of(h.h2) : b1;
  }

  // The metadata word of k's first bucket, loaded by the calling lane alone: a batch
  // kernel has each lane load the word of its own operation, so that a tile's chunk of
  // operations issues those loads at once. ACQUIRE where writers may run.
  template <bool ACQUIRE>
  __device__ __forceinline__ unsigned long long first_meta(K k) const {
    if (reserved(k)) return 0;
    const unsigned long long* p = meta + first_of(k);
    return ACQUIRE ? mem::ld_acquire(p) : *p;
  }

  // The word that holds a slot's key (packed: the slot's word).
  __device__ __forceinline__ static unsigned long long* key_address(unsigned long long* p) { return p; }
  template <typename P>
  __device__ __forceinline__ static unsigned long long* key_address(const P& p) {
    return p.key;
  }

  // The keys no pair may have: the empty slot's key, and for wide slots the busy one.
  __device__ __forceinline__ static bool reserved(K k) { return k == S::EMPTY_KEY || k == S::BUSY_KEY; }

  // Where a concurrent lookup saw its match: the metadata word of the bucket holding it
  // and that word as read before the bucket (`at` null for a match in the stash), and
  // whether a slot it read was BUSY_KEY (wide slots). Packed tables never use it.
  struct seen_at {
    const unsigned long long* at = nullptr;
    unsigned long long before = 0;
    bool busy = false;
  };

  // Looks for k beyond its first bucket, where that bucket's word `m` says to look.
  // `seen` (wide slots, COHERENT) gets b2's word, read before b2, and BUSY_KEY sightings.
  template <bool COHERENT>
  __device__ __forceinline__ bool locate_beyond(K k, unsigned b1, unsigned b2, unsigned long long m, match& mt,
                                                seen_at* seen = nullptr) const {
    if ((m & META_SPILL) != 0 && b2 != b1) {
      bool* busy = nullptr;
      if constexpr (S::WIDE && COHERENT) {
        if (seen != nullptr) {
          seen->at = meta + b2;
          seen->before = meta_of(b2).observe();
          busy = &seen->busy;
        }
      }
      if (wcme<S, COHERENT>(bucket(b2), k, mt, busy)) return true;
    }
    if constexpr (S::WIDE && COHERENT) {
      if (seen != nullptr) seen->at = nullptr;
      return (m & META_STASHED) != 0 && stash_of().template find<COHERENT>(k, mt, seen != nullptr ? &seen->busy : nullptr);
    }
    return (m & META_STASHED) != 0 && stash_of().template find<COHERENT>(k, mt);
  }

  // Lookup without writers in flight (§IV-B); `m` is the word of k's first bucket.
  __device__ __forceinline__ bool find_quiet(K k, unsigned long long m, V& value) const {
    if (reserved(k)) return false;  // never stored
    const hash_pair h = hashes(k);
    const unsigned b1 = bucket_of(h.h1);
    match mt;
    if (!wcme<S, false>(bucket(b1), k, mt)) {
      if ((m & (META_SPILL | META_STASHED)) == 0) return false;
      if (!locate_beyond<false>(k, b1, bucket_of(h.h2), m, mt)) return false;
    }
    value = S::value_of(mt.word);
    return true;
  }

  // The retry loop of every operation on k with writers in flight (locate_concurrent
  // for lookups and deletes, hive_ref::insert_with for inserts): hashes k to its buckets
  // b1 and b2 and calls `attempt(b1, b2, meta1, m)`, meta1 being b1's metadata word and
  // m its value: the caller's `m` (read with acquire semantics before) at the first
  // attempt, read again after a back-off at every later one. An attempt returns whether
  // the operation is done (true is returned). After RETRY_CAP attempts that were not,
  // the status says RETRY_LIMIT, `*gave_up` (when not null) is set and false is returned.
  template <typename Attempt>
  __device__ __forceinline__ bool retry_on_buckets(K k, unsigned long long m, Attempt&& attempt,
                                                   bool* gave_up = nullptr) const {
    const hash_pair h = hashes(k);
    const unsigned b1 = bucket_of(h.h1), b2 = bucket_of(h.h2);
    const bucket_meta meta1 = meta_of(b1);
    for (unsigned tries = 0; tries < RETRY_CAP; ++tries) {
      if (tries > 0) {
        backoff(tries - 1);
        m = meta1.observe();
      }
      if (attempt(b1, b2, meta1, m)) return true;
    }
    status::report(status, status::RETRY_LIMIT);
    if (gave_up != nullptr) *gave_up = true;
    return false;
  }

  // Looks for k with writers in flight and hands each place it is found at to `found`
  // (with where it was seen, seen_at), which returns whether the operation is done there
  // (true is returned) or must look again. A miss (false) is concluded only from an
  // unlocked first bucket whose word did not change while the lookup looked (and, for
  // wide slots, where no slot looked at was BUSY_KEY: that may be k in the middle of a
  // replace or a move); `m` is that word as the caller read it (with acquire semantics)
  // before. Every look after the first backs off and reads the word again
  // (retry_on_buckets); after RETRY_CAP looks the status says RETRY_LIMIT, `*gave_up`
  // (when not null) is set and false is returned: the operation was not done.
  template <typename Found>
  __device__ __forceinline__ bool locate_concurrent(K k, unsigned long long m, Found&& found,
                                                    bool* gave_up = nullptr) const {
    if (reserved(k)) return false;
    bool hit = false;
    retry_on_buckets(
        k, m,
        [&](unsigned b1, unsigned b2, const bucket_meta& meta1, unsigned long long m) {
          match mt;
          seen_at seen;
          seen.at = meta + b1;
          seen.before = m;
          if (wcme<S, true>(bucket(b1), k, mt, &seen.busy) || locate_beyond<true>(k, b1, b2, m, mt, &seen)) {
            hit = found(mt, seen);
            return hit;
          }
          if (S::WIDE && seen.busy) return false;
          // A miss, done, where b1 was unlocked and has not changed.
          return (m & META_LOCK) == 0 && meta1.unchanged(m);
        },
        gave_up);
    return hit;
  }

  // Makes a word that rank 0 updated (a replace or delete of a wide slot reads the value
  // it replaced) the same on every lane. Packed words are not changed by those steps.
  __device__ __forceinline__ static void settle(word& w) {
    if constexpr (S::WIDE) w = S::template shfl<tile>(w, 0);
  }

  // Whether a match of a lookup of k seen in a wide slot was k's pair: rank 0 reads the
  // key word (acquire), the value word, then the key word and the bucket's metadata word
  // again. If the key was k both times and the metadata word is still the one read
  // before the bucket, unlocked, the value read was k's: no delete freed the slot and no
  // claim reused it in between (both change that word), no eviction moved a key through
  // it (that needs the bucket's lock), and a replace of k changes the value only while
  // k's slot is BUSY_KEY. In the stash (`seen.at` null) slots are never refilled during
  // a kernel, so the key alone is checked. The value is stored in `w` on every lane.
  __device__ __forceinline__ bool confirm(K k, match& mt, const seen_at& seen) const {
    if constexpr (!S::WIDE) {
      return true;
    } else {
      unsigned ok = 0;
      unsigned long long v = 0;
      if (tile::rank() == 0 && (seen.at == nullptr || (seen.before & META_LOCK) == 0) &&
          mem::ld_acquire(mt.at.key) == k) {
        v = mem::ld_relaxed(mt.at.value);
        mem::fence_acq_rel();
        ok = mem::ld_relaxed(mt.at.key) == k && (seen.at == nullptr || mem::ld_relaxed(seen.at) == seen.before);
      }
      mt.word.value = tile::shfl(v, 0);
      return tile::shfl(ok, 0) != 0;
    }
  }

  // Lookup with writers in flight (see locate_concurrent, also for `gave_up`).
  __device__ bool find_concurrent(K k, unsigned long long m, V& value, bool* gave_up = nullptr) const {
    return locate_concurrent(
        k, m,
        [&](match& mt, const seen_at& seen) {
          if (!confirm(k, mt, seen)) return false;
          value = S::value_of(mt.word);
          return true;
        },
        gave_up);
  }

  // Lookup (§IV-B). CONCURRENT: writers may run in the same kernel (mixed batches).
  // Returns whether k is present and its value in `value`.
  template <bool CONCURRENT>
  __device__ bool find(K k, V& value) const {
    if (reserved(k)) return false;
    if (CONCURRENT) return find_concurrent(k, meta_of(first_of(k)).observe(), value);
    return find_quiet(k, meta[first_of(k)], value);
  }

  // Lookup by one lane alone, with no writer in flight (the bulk lookup kernel: every
  // lane of a warp has its own bucket read in flight). Reads k's first bucket b1, and
  // only after a miss there b1's metadata word: a key found in b1 costs one 128-byte
  // line (16 packed slots; or the key words of k's preferred part of a two-part bucket
  // and then its value from the part's value sectors, which the key loads asked into L2,
  // scan_lookup_parts), or for other wide buckets the 64 bytes of the 8 key words that
  // hold it and one sector of values (scan_lookup_wide, which loads b1's word with b1's
  // second group of key words). Reads b2 alone where b1 has SPILL; sets `stash` where
  // b1 has STASHED and k was not found, so that the tile scans the stash for it
  // (stash_of().find).
  __device__ __forceinline__ bool find_alone(K k, V& value, bool& stash) const {
    const hash_pair h = hashes(k);
    const unsigned b1 = bucket_of(h.h1);
    unsigned long long m = 0;
    bool have_m = false;
    alone_scan<S> s;
    if constexpr (parts<S>() == 2) {
      s = scan_lookup_parts<S>(bucket(b1), k, meta + b1, m);
      have_m = true;  // loaded on every miss
    } else if constexpr (S::WIDE) {
      s = scan_lookup_wide<S>(bucket(b1), k, meta + b1, m, have_m);
    } else {
      s = scan_alone<S, false, true>(bucket(b1), k);
    }
    if (s.hit == SLOTS) {
      if (!have_m) m = meta[b1];
      const unsigned b2 = bucket_of(h.h2);
      if ((m & META_SPILL) != 0 && b2 != b1) {
        if constexpr (parts<S>() == 2) {
          unsigned long long m2 = 0;  // b2's word (m stays b1's, for STASHED)
          s = scan_lookup_parts<S>(bucket(b2), k, meta + b2, m2);
        } else if constexpr (S::WIDE) {
          s = scan_lookup_wide<S>(bucket(b2), k, nullptr, m, have_m);
        } else {
          s = scan_alone<S, false, true>(bucket(b2), k);
        }
      }
      if (s.hit == SLOTS) {
        stash = (m & META_STASHED) != 0;
        return false;
      }
    }
    value = S::value_of(s.word);
    return true;
  }

  // Delete (§IV-B): the lookup, then one compare-and-swap to the empty word (the key
  // word, for wide slots) by rank 0, which then frees the slot's bit. `m` and `gave_up`
  // as for locate_concurrent. Returns whether k was present (and its value).
  __device__ bool erase_with(K k, unsigned long long m, V& value, tally& t, bool* gave_up = nullptr) const {
    return locate_concurrent(k, m, [&](match& mt, const seen_at&) {
      unsigned done = 0;
      if (tile::rank() == 0 && S::erase(mt.at, mt.word)) {
        done = 1;
        // A match in the table (not the stash, a separate array): its bucket and slot
        // follow from the place of the word that holds its key (S::slot_of_key: a wide
        // bucket's parts, each its key words first).
        unsigned long long* const at = key_address(mt.at);
        const bool in_table = at >= slots && at < slots + static_cast<unsigned long long>(buckets) * bucket_words<S>();
        if (in_table) {
          const unsigned long long index = static_cast<unsigned long long>(at - slots);
          const unsigned slot = S::slot_of_key(index % bucket_words<S>(), SLOTS);
          mem::fetch_add_relaxed(meta + index / bucket_words<S>(), (1ull << slot) + META_VERSION);
        }
      }
      if (!tile::shfl(done, 0)) return false;
      settle(mt.word);
      value = S::value_of(mt.word);
      t.len -= 1;
      return true;
    }, gave_up);
  }

  __device__ bool erase(K k, V& value, tally& t) const {
    if (reserved(k)) return false;
    return erase_with(k, meta_of(first_of(k)).observe(), value, t);
  }

  // Records that operation `index` of the batch was not applied: its failure bit, when
  // below failed_capacity (a host batch gives every operation one, so the host names
  // exactly the operations not applied).
  __device__ void record_failure(unsigned long long index) const {
    if (tile::rank() == 0 && index < failed_capacity) status::mark_not_applied(failed, index);
  }

  // Adds a tile's counts to its stripe of the control block (rank 0, once per kernel).
  __device__ void flush(const tally& t) const {
    if (tile::rank() != 0) return;
    const unsigned long long tile_id = (static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x) / SLOTS;
    unsigned long long* stripe = ctrl + CTRL_STRIPE_BASE + (tile_id % CTRL_STRIPES) * CTRL_STRIPE_WORDS;
    if (t.len != 0) {
      mem::fetch_add_relaxed(stripe + STRIPE_LEN, static_cast<unsigned long long>(static_cast<long long>(t.len)));
    }
    for (int i = 0; i < 4; ++i) {
      if (t.steps[i] != 0) mem::fetch_add_relaxed(stripe + STRIPE_STEPS + i, static_cast<unsigned long long>(t.steps[i]));
    }
    if (t.moves != 0) mem::fetch_add_relaxed(stripe + STRIPE_MOVES, static_cast<unsigned long long>(t.moves));
  }
};

}  // namespace hive
}  // namespace gpuds
