// gpuds/hive/hive_ref.cuh: the device API of HiveMap (Hive paper, §III-§IV).
//
// `hive_ref` is trivially copyable and non-owning; gpuds_hive::HiveMap hands out its
// #[repr(C)] twin (HiveRef). Compile user kernels with the table's defines (HIVE_SLOTS,
// HIVE_HASH: HiveMap::defines()). Every member operation is cooperative over a tile of
// HIVE_SLOTS lanes: all lanes of the tile call it with the same arguments, and the
// result is the same on every lane.
//
// Addressing is linear hashing (§IV-C): a hash h names bucket h & mask, or
// h & (2 * mask + 1) when that is below the split pointer. The metadata (mask, split,
// bucket count) is fixed during a kernel: HiveMap resizes between batches.
//
// Concurrency: lookups are lock-free; a miss re-checks the version of the key's first
// bucket so that it never misses a key that an eviction was moving. Replacing and
// deleting are lock-free compare-and-swaps. Inserting a new key takes the lock of its
// first bucket, only by advancing the version it read before its lock-free search, so
// two inserts of one key can never both add it; the claim of a slot stays the lock-free
// WABC, because other keys claim slots of the same bucket without that lock. Evictions
// hold the locks of both buckets of every key they move, so a moving key is always
// covered by a held lock of its first bucket.
#pragma once
#include <gpuds/core/status.cuh>
#include <gpuds/hive/detail/hive_bucket.cuh>
#include <gpuds/hive/detail/stash.cuh>
#include <gpuds/hive/hashers.cuh>

namespace gpuds {
namespace hive {

// Control block words (unsigned long long each).
constexpr unsigned CTRL_LEN = 0;          // pairs stored (table and stash), two's complement deltas
constexpr unsigned CTRL_STASH_TAIL = 1;   // stash reservations so far
constexpr unsigned CTRL_FAILED = 2;       // operations that failed (stash full, retry cap)
constexpr unsigned CTRL_STEPS = 3;        // inserts finished in step 1..4 (four words)
constexpr unsigned CTRL_MOVES = 7;        // keys displaced by evictions
constexpr unsigned CTRL_WORDS = 8;

// How an insert finished.
constexpr unsigned STEP_FAILED = 0;
constexpr unsigned STEP_REPLACE = 1;
constexpr unsigned STEP_CLAIM = 2;
constexpr unsigned STEP_EVICT = 3;
constexpr unsigned STEP_STASH = 4;

constexpr unsigned RETRY_CAP = 1u << 14;
constexpr unsigned MAX_EVICTION_BOUND = 16;
constexpr unsigned VICTIM_TRIES = 4;

// Per-tile counts, flushed once per kernel by rank 0.
struct tally {
  long long len = 0;
  unsigned long long steps[4] = {0, 0, 0, 0};
  unsigned long long moves = 0;
};

struct hive_ref {
  unsigned long long* slots;  // buckets * SLOTS packed words
  unsigned* meta;             // two words per bucket: free mask, version (lock)
  unsigned long long* stash;  // stash_capacity words
  unsigned long long* ctrl;   // CTRL_WORDS counters
  unsigned* status;           // the table's status word
  unsigned* failed;           // indices of failed operations (failed_capacity)
  unsigned level_mask;        // 2^level - 1
  unsigned split;             // buckets below this are split
  unsigned buckets;           // level_mask + 1 + split
  unsigned stash_capacity;
  unsigned failed_capacity;
  unsigned eviction_bound;

  __device__ __forceinline__ unsigned bucket_of(unsigned h) const {
    const unsigned b = h & level_mask;
    return b < split ? h & ((level_mask << 1) | 1u) : b;
  }
  __device__ __forceinline__ unsigned long long* bucket(unsigned b) const {
    return slots + static_cast<unsigned long long>(b) * SLOTS;
  }
  __device__ __forceinline__ bucket_meta meta_of(unsigned b) const {
    return bucket_meta{meta + 2ull * b};
  }
  __device__ __forceinline__ stash_ref stash_of() const {
    return stash_ref{stash, ctrl + CTRL_STASH_TAIL, stash_capacity};
  }
  // The other candidate bucket of a key stored in bucket b (b itself when both agree).
  __device__ __forceinline__ unsigned alternate(unsigned k, unsigned b) const {
    const hash_pair h = hashes(k);
    const unsigned b1 = bucket_of(h.h1);
    return b1 == b ? bucket_of(h.h2) : b1;
  }

  // WCME over the candidate buckets, then the stash.
  template <bool COHERENT>
  __device__ __forceinline__ bool locate(unsigned k, unsigned b1, unsigned b2, match& m) const {
    if (wcme<COHERENT>(bucket(b1), k, m)) return true;
    if (b2 != b1 && wcme<COHERENT>(bucket(b2), k, m)) return true;
    return stash_of().template find<COHERENT>(k, m);
  }

  // Lookup (§IV-B). CONCURRENT: writers may run in the same kernel (mixed batches);
  // a miss is then confirmed by the first bucket's version. Returns whether k is present
  // and its value in `value`.
  template <bool CONCURRENT>
  __device__ bool find(unsigned k, unsigned& value) const {
    if (k == EMPTY_KEY) return false;  // the empty word's key: never stored
    const hash_pair h = hashes(k);
    const unsigned b1 = bucket_of(h.h1), b2 = bucket_of(h.h2);
    match m;
    if (!CONCURRENT) {
      if (!locate<false>(k, b1, b2, m)) return false;
      value = value_of(m.word);
      return true;
    }
    const bucket_meta meta = meta_of(b1);
    for (unsigned attempt = 0; attempt < RETRY_CAP; ++attempt) {
      unsigned seen;
      if (!meta.observe_unlocked(attempt, seen)) continue;
      if (locate<true>(k, b1, b2, m)) {
        value = value_of(m.word);
        return true;
      }
      if (meta.unchanged(seen)) return false;
    }
    status::report(status, status::RETRY_LIMIT);
    return false;
  }

  // Delete (§IV-B): WCME, then one compare-and-swap to the empty word by the elected
  // lane, which then frees the slot's bit. Returns whether k was present (and its value).
  __device__ bool erase(unsigned k, unsigned& value, tally& t) const {
    if (k == EMPTY_KEY) return false;
    const hash_pair h = hashes(k);
    const unsigned b1 = bucket_of(h.h1), b2 = bucket_of(h.h2);
    const bucket_meta meta = meta_of(b1);
    match m;
    for (unsigned attempt = 0; attempt < RETRY_CAP; ++attempt) {
      unsigned seen;
      if (!meta.observe_unlocked(attempt, seen)) continue;
      if (!locate<true>(k, b1, b2, m)) {
        if (meta.unchanged(seen)) return false;
        continue;
      }
      unsigned done = 0;
      if (tile::rank() == 0 && mem::cas_relaxed(m.at, m.word, EMPTY) == m.word) {
        done = 1;
        const bool in_table = m.at >= slots && m.at < slots + static_cast<unsigned long long>(buckets) * SLOTS;
        if (in_table) {
          const unsigned long long index = static_cast<unsigned long long>(m.at - slots);
          mem::fetch_or_relaxed(meta_of(static_cast<unsigned>(index / SLOTS)).mask(), 1u << (index % SLOTS));
        }
      }
      if (tile::shfl(done, 0)) {
        value = value_of(m.word);
        t.len -= 1;
        return true;
      }
    }
    status::report(status, status::RETRY_LIMIT);
    return false;
  }

  // Insert or replace (§IV-A), in four steps. Returns the step it finished in
  // (STEP_REPLACE with the old value in `old`, STEP_CLAIM, STEP_EVICT, STEP_STASH) or
  // STEP_FAILED (stash full or retry cap; reported in the status word).
  __device__ unsigned insert(unsigned k, unsigned v, unsigned& old, tally& t) const {
    if (k == EMPTY_KEY) {
      status::report(status, status::RESERVED_KEY);
      return STEP_FAILED;
    }
    const unsigned long long word = pack(k, v);
    const hash_pair h = hashes(k);
    const unsigned b1 = bucket_of(h.h1), b2 = bucket_of(h.h2);
    const bucket_meta meta = meta_of(b1);
    match m;
    for (unsigned attempt = 0; attempt < RETRY_CAP; ++attempt) {
      unsigned seen;
      if (!meta.observe_unlocked(attempt, seen)) continue;
      // Step 1: replace, lock-free.
      if (locate<true>(k, b1, b2, m)) {
        unsigned done = 0;
        if (tile::rank() == 0) done = mem::cas_relaxed(m.at, m.word, word) == m.word;
        if (tile::shfl(done, 0)) {
          old = value_of(m.word);
          t.steps[0] += 1;
          return STEP_REPLACE;
        }
        continue;
      }
      // k was absent while b1's version stayed `seen`; keep it absent by locking b1 from
      // that very version (any insert of k, or eviction moving it, changes it).
      if (!meta.lock_from(seen)) continue;
      // Step 2: claim-then-commit in the first bucket, then the second.
      if (claim_commit(bucket(b1), meta, word) || claim_commit(bucket(b2), meta_of(b2), word)) {
        meta.unlock(seen);
        t.steps[1] += 1;
        t.len += 1;
        return STEP_CLAIM;
      }
      // Steps 3 and 4.
      const unsigned step = evict(b1, seen, word, t);
      if (step != STEP_FAILED) {
        t.steps[step - 1] += 1;
        t.len += 1;
      }
      return step;
    }
    status::report(status, status::RETRY_LIMIT);
    return STEP_FAILED;
  }

  // Step 3, bounded cuckoo eviction under bucket locks, and step 4, the stash. Called
  // with b1 locked from version `seen`; releases every lock it holds.
  //
  // Each round first retries the claim in the current bucket. Then every lane looks at
  // its slot's key and the free mask of that key's other bucket, so the tile sees all
  // SLOTS possible displacements at once. A victim whose other bucket has room moves
  // there directly (a slot is claimed there with WABC first, and given back if the
  // victim changed meanwhile) and the key in hand takes its slot: done. Only when no
  // victim has room does the chain take a random-walk step, displacing a victim into the
  // hand; such a step first reserves a stash slot, so that a chain that runs out of
  // rounds can always park the key in hand (both of whose buckets are locked). With the
  // stash full, nothing is displaced and the insert fails.
  __device__ unsigned evict(unsigned b1, unsigned seen, unsigned long long word, tally& t) const {
    const stash_ref st = stash_of();
    unsigned reserved = st.capacity;
    unsigned held[MAX_EVICTION_BOUND + 1];
    unsigned held_seen[MAX_EVICTION_BOUND + 1];
    unsigned nheld = 1;
    held[0] = b1;
    held_seen[0] = seen;
    unsigned long long hand = word;
    unsigned cur = b1;
    bool placed = false;
    bool stuck = false;
    const unsigned bound = eviction_bound < MAX_EVICTION_BOUND ? eviction_bound : MAX_EVICTION_BOUND;
    for (unsigned round = 0; round < bound && !placed && !stuck; ++round) {
      if (claim_commit(bucket(cur), meta_of(cur), hand)) {
        placed = true;
        break;
      }
      const unsigned long long w = mem::ld_relaxed(bucket(cur) + tile::rank());
      unsigned alt = cur;
      unsigned alt_free = 0;
      if (w != EMPTY) {
        alt = alternate(key_of(w), cur);
        if (alt != cur) alt_free = mem::ld_relaxed(meta_of(alt).mask()) & ALL_FREE;
      }
      unsigned candidates = tile::ballot(w != EMPTY && alt != cur);
      unsigned roomy = tile::ballot(alt_free != 0);
      bool moved = false;
      // Start at a slot that changes with the round and the key, so walks wander.
      const unsigned start = (round * 7u + key_of(hand)) % SLOTS;
      for (unsigned tries = 0; tries < VICTIM_TRIES && candidates != 0 && !moved && !placed; ++tries) {
        const bool direct = roomy != 0;
        const unsigned pool = direct ? roomy : candidates;
        const unsigned rotated = SLOTS == 32 ? ((pool >> start) | (pool << ((32u - start) & 31u)))
                                             : (((pool >> start) | (pool << (SLOTS - start))) & ALL_FREE);
        const unsigned slot = ((__ffs(rotated) - 1) + start) % SLOTS;
        candidates &= ~(1u << slot);
        roomy &= ~(1u << slot);
        const unsigned long long victim = tile::shfl(w, slot);
        const unsigned target = tile::shfl(alt, slot);
        bool mine = false;
        for (unsigned i = 0; i < nheld; ++i) mine |= held[i] == target;
        unsigned locked_from = 0;
        if (!mine) {
          locked_from = meta_of(target).try_lock();
          if (locked_from & 1u) continue;
        }
        if (direct) {
          const unsigned tslot = claim(meta_of(target));
          unsigned swapped = 0;
          if (tslot < SLOTS && tile::rank() == 0) {
            swapped = mem::cas_relaxed(bucket(cur) + slot, victim, hand) == victim;
            if (swapped) mem::st_relaxed(bucket(target) + tslot, victim);
          }
          swapped = tile::shfl(swapped, 0);
          if (tslot < SLOTS && !swapped) release(meta_of(target), tslot);
          if (!mine) meta_of(target).unlock(locked_from);
          if (swapped) {
            t.moves += 1;
            placed = true;
          }
          continue;
        }
        // A random-walk step: the victim comes into the hand.
        if (reserved >= st.capacity) reserved = st.reserve();
        if (reserved >= st.capacity) {
          if (!mine) meta_of(target).unlock(locked_from);
          stuck = true;
          break;
        }
        unsigned swapped = 0;
        if (tile::rank() == 0) swapped = mem::cas_relaxed(bucket(cur) + slot, victim, hand) == victim;
        if (!tile::shfl(swapped, 0)) {
          if (!mine) meta_of(target).unlock(locked_from);
          continue;
        }
        if (!mine) {
          held[nheld] = target;
          held_seen[nheld] = locked_from;
          ++nheld;
        }
        t.moves += 1;
        hand = victim;
        cur = target;
        moved = true;
      }
      if (!moved) break;
    }
    unsigned step = STEP_EVICT;
    if (placed) {
      if (reserved < st.capacity) st.unreserve(reserved);
    } else {
      // Nothing displaced yet means the new key itself is in hand and may still need a
      // slot; a displaced victim always has one reserved.
      if (reserved >= st.capacity) reserved = st.reserve();
      if (reserved < st.capacity) {
        st.publish(reserved, hand);
        step = STEP_STASH;
      } else {
        status::report(status, status::STASH_FULL);
        step = STEP_FAILED;
      }
    }
    for (unsigned i = nheld; i-- > 0;) meta_of(held[i]).unlock(held_seen[i]);
    return step;
  }

  // Records a failed operation for the host (index list and count).
  __device__ void record_failure(unsigned long long index) const {
    if (tile::rank() == 0) {
      const unsigned long long slot = mem::fetch_add_relaxed(ctrl + CTRL_FAILED, 1ull);
      if (slot < failed_capacity) failed[slot] = static_cast<unsigned>(index);
    }
  }

  // Adds a tile's counts to the control block (rank 0, once per kernel).
  __device__ void flush(const tally& t) const {
    if (tile::rank() != 0) return;
    if (t.len != 0) mem::fetch_add_relaxed(ctrl + CTRL_LEN, static_cast<unsigned long long>(t.len));
    for (int i = 0; i < 4; ++i) {
      if (t.steps[i] != 0) mem::fetch_add_relaxed(ctrl + CTRL_STEPS + i, t.steps[i]);
    }
    if (t.moves != 0) mem::fetch_add_relaxed(ctrl + CTRL_MOVES, t.moves);
  }
};

}  // namespace hive
}  // namespace gpuds
