// gpuds/hive/detail/bulk_insert.cuh: the bulk insert of HiveMap (buckets of 8 or 16
// slots), the second of its two kernels: a per-lane state machine over the inserts the
// first kernel (detail/fill_insert.cuh) queued.
//
// The bulk insert (buckets of 8 or 16 slots), in two kernels.
//
// The first (hive_insert, namespace fill) does what most inserts need: it reads b1 and
// its word, and replaces k's pair, or fills b1's lowest empty slot with one
// compare-and-swap of that slot from the empty word (then clears the slot's free bit
// with an atomic and that no one waits for); a key whose b1 is full goes to b2 the same
// way (b1's SPILL set first), and one whose b1 carries SPILL from an earlier batch reads
// b2 too before it fills b1. What it cannot do with fills alone (b1 and b2 full: an
// eviction; b1 STASHED; eight failed fills) it appends to a queue, and the second kernel
// (hive_insert_queued, namespace bulk) runs those through the state machine below, with
// its locks, claims and direct moves, after the first kernel has ended.
//
// Why fills need no lock and no swap of the word: in the first kernel every write of a
// pair into a slot is such a fill, nothing empties a slot and nothing moves a key, so a
// slot's key, once there, stays for the rest of the kernel. Two fills of one key k into
// one bucket at slots i < j cannot both succeed: the one at j chose j as the lowest slot
// it read empty, so it read slot i full, holding the key of i's first fill, which is k
// (then it would have replaced) or a key that k can no longer fill i over. A fill of k
// into b2 follows a read of b1 with every slot full and none k, so k never enters b1
// afterwards; and a fill of k into b1 at slot i before that read would have been seen
// there. A read may be stale (the first read of b1 goes through L1): it then shows slots
// empty that are not, whose fills fail, never a wrong key. A key placed in b2 by an
// earlier batch has SPILL in b1's word (set before it moved there), so a fill into b1
// looks in b2 first. The free bits lag their fills by one atomic, which no one in this
// kernel reads (the word is read only for its flags).
//
// The second kernel runs the queued inserts as a per-lane state machine. A lane's insert
// is a short chain of dependent memory round trips: read b1 and its metadata word, then
// one compare-and-swap (replace or claim), then a store; an insert whose b1 is full
// claims in b2 the same way (read b2 and its word, one compare-and-swap, a store), and one
// whose b1 is SPILL-flagged with room takes b1's lock and claims in b1 or b2 (lock,
// claim, put, unlock). When every lane of a warp runs its insert to the end before the
// warp takes new keys, the warp waits for its slowest lane. Here each lane advances its
// own insert by one step per iteration instead: an iteration first consumes what the
// lane's previous step loaded (every lane, whatever its phase), then issues the lane's
// next memory operations, so an iteration costs about one round trip and a lane on the
// lock path holds up no one; a lane whose insert is done takes its next key from the
// warp's ring of staged keys (each chunk of 32 queue entries loaded coalesced, one chunk
// ahead).
//
// The uniqueness argument of the claim (see insert_alone) needs b1's contents as of the
// word `m` it swaps from. Here the word and the bucket are read at once (relaxed), not
// the word first: in a kernel that only inserts, a slot once written is never emptied
// and changes its key only by an eviction into it, which needs b1 full (and then SPILL,
// or full for good) or b1's lock; so with `m` unlocked, unflagged and not full, every slot
// that holds a word in the read held a key other than k at the time of `m` too, and a
// slot claimed in `m` but read empty is pending (read again). So k was absent from b1
// at `m`, and the swap from `m` succeeds only if b1 did not change since. An insert that
// must lock b1 (full or SPILL-flagged) reads b1 again, and b2 where SPILL says so, once
// its lock swap from `m` returned (an acquire), so it sees every key that an eviction or
// a spill placed there under b1's lock before `m`; the lock covers the rest.
//
// No step needs a fence, which would stall the whole warp until all its memory
// operations drained: under the lock the lane writes only with atomics it waits for
// (the slot's claim, then the pair swapped into the claimed slot), so by the time it
// issues the unlock those writes were performed at L2, where every later reader at gpu
// scope reads (unlock_after_atomics).
//
// When b1 and b2 are both full (without k), the lane makes the direct move of step 3:
// it locks b1 from the word it read (SPILL set) and reads b1 again under the lock (b2,
// read full and without k, stays so: k cannot enter it, and k moves into b1 only under
// b1's lock; a slot of b1 read empty is pending, so the lane unlocks and retries), loads
// the words of the other buckets of four of b1's keys at once (up to four rounds of
// four), locks the one of those buckets with the most room from the word read, claiming its
// lowest free slot in the same swap, swaps k's pair into the victim's slot of b1 (a
// compare-and-swap from the victim's word, so a victim whose value was replaced
// meanwhile is not lost: the claimed slot is given back) and swaps the victim into the
// claimed slot, then unlocks both. As in evict_alone, both buckets of the moved key are
// locked, a victim moving to its second bucket has b1 as first bucket (SPILL set), and k
// lands in its first bucket. When none of b1's keys has room in its other bucket, the
// lane keeps b1 locked, reads b2 and its word, locks b2 from that word (SPILL set: its
// victim may move to its second bucket) and makes the same move from b2: a key of b2 to
// its other bucket, k into b2 (b1 has SPILL). Both buckets of that victim are locked (b2
// and the target), and k enters b2 under b1's lock, as every placement of k outside b1's
// lock-free claim does. (At load 0.95 this takes the 7 % of queued inserts that found no
// room among b1's keys off the tile code.) An insert the first kernel queued with both
// buckets full (BOTH_FULL) starts at the move: it reads b1's word and b2, and locks b1 at
// once.
//
// Each iteration scans the bucket a lane read once, for every phase, and issues at most
// one compare-and-swap per lane from one call site: lanes in different phases would
// otherwise run a scan each, and a second acquire swap would wait for the first one's
// round trip.
//
// What a lane cannot finish in a few steps (b1 STASHED, b1 and b2 the same full bucket,
// no candidate of b1 or b2 with room among 32, TRIES retries) is parked in the warp's
// queue in shared memory; when 32 are parked, the warp stops taking keys, lets its lanes
// finish (so no lane of the warp holds a lock), and runs the parked inserts one per lane
// through insert_alone and the tile code (random walks, the stash).
#pragma once
#include <gpuds/hive/detail/batch_loop.cuh>
#include <gpuds/hive/detail/op_ring.cuh>

namespace gpuds {
namespace hive {
namespace bulk {

// The per-lane insert kernels serve tables of packed slots (u32 keys and values) only.
using packed_ref = hive_ref<unsigned, unsigned>;

constexpr unsigned PARK = 64;         // parked inserts per warp (at most 31 + 32 at once)
// Reads of b1 before an insert is parked. The queued inserts are mostly evictions in full
// buckets, several to a bucket, so a lane waits for the lock rather than park: 8 tries
// measured 4-5 % slower (the whole insert, loads 0.8 and 0.95) than 32 or 64.
constexpr unsigned TRIES = 64;

// Phases: what the lane's last issued step was.
constexpr unsigned IDLE = 0;        // no key
constexpr unsigned READ = 1;        // b1 and its word loaded
constexpr unsigned CLAIM = 2;       // swap of b1's word issued (claim slot `slot`)
constexpr unsigned REPLACE = 3;     // swap of the matching slot word issued (`hit_word`)
constexpr unsigned LOCK = 4;        // lock swap of b1's word issued
constexpr unsigned CLAIM1 = 5;      // WABC in b1 under the lock
constexpr unsigned CLAIM2 = 6;      // WABC in b2 under the lock
constexpr unsigned UNLOCK = 7;      // the pair's swap into its claimed slot issued: unlock
constexpr unsigned LOCK_B2 = 8;     // under b1's lock, b2 loaded (k may have spilled there)
constexpr unsigned LOCKED = 9;      // under b1's lock, b1 and b2's word loaded
constexpr unsigned READ2 = 10;      // b1 was full: b2 and its word loaded (no lock)
constexpr unsigned CLAIM2F = 11;    // swap of b2's word issued (claim slot `slot` there)
// The direct move (step 3) when b1 and b2 are both full, without k:
constexpr unsigned EV_LOCK = 12;    // lock swap of b1's word issued (from `mb1`)
constexpr unsigned EV_B1 = 14;      // under b1's lock, b1 loaded
constexpr unsigned EV_PICK = 15;    // the words of the candidate victims' other buckets loaded
constexpr unsigned EV_TLOCK = 16;   // lock swap of the target's word issued (from `mt`), claiming slot `slot`
constexpr unsigned EV_SWAP = 18;    // swap of k's pair into the victim's slot `vslot` of b1 issued
constexpr unsigned EV_TPUT = 19;    // swap of the victim into the target's slot issued
constexpr unsigned EV_READ = 20;    // b1's word and b2 loaded (an insert the first kernel found both full for)
// No candidate of b1 had room: the victim comes from b2 instead (`from2`), under b1's lock.
constexpr unsigned EV_M2 = 21;      // b2 and its word loaded
constexpr unsigned EV_LOCK2 = 22;   // lock swap of b2's word issued (from `m`)

// What to issue this iteration: loads (into mread and w), a store of the lane's pair at
// slot `slot`, and one atomic (into r).
constexpr unsigned L_META1 = 1;    // b1's word
constexpr unsigned L_META2 = 2;    // b2's word
constexpr unsigned L_BUCKET1 = 4;  // b1's slots
constexpr unsigned L_BUCKET2 = 8;  // b2's slots
constexpr unsigned L_STORE1 = 16;  // store in b1
constexpr unsigned L_STORE2 = 32;  // store in b2
constexpr unsigned A_NONE = 0;
constexpr unsigned A_CLAIM = 1;  // CAS of b1's word from m: slot bit cleared, version advanced
constexpr unsigned A_LOCK = 2;   // CAS of b1's word from m: locked (and SPILL when full)
constexpr unsigned A_REPL1 = 3;  // CAS of b1's slot from hit_word to the lane's pair
constexpr unsigned A_REPL2 = 4;  // the same in b2
constexpr unsigned A_AND1 = 5;   // WABC: clear the slot's bit in b1's word
constexpr unsigned A_AND2 = 6;   // the same in b2
constexpr unsigned A_PUT1 = 7;   // under the lock: swap the lane's pair into b1's claimed (empty) slot
constexpr unsigned A_PUT2 = 8;   // the same in b2
constexpr unsigned A_CLAIM2 = 9; // CAS of b2's word from m (b2's): slot bit cleared, version advanced
constexpr unsigned A_EVLOCK = 10;  // CAS of b1's word from mb1: locked
constexpr unsigned A_TLOCK = 11;   // CAS of the target's word from mt: locked, slot's bit cleared
constexpr unsigned A_SWAP = 13;    // CAS of b1's slot vslot from the victim to the lane's pair
constexpr unsigned A_TPUT = 14;    // CAS of the target's claimed (empty) slot to the victim
constexpr unsigned A_LOCK2 = 15;   // CAS of b2's word from m: locked, SPILL set
constexpr unsigned L_CAND = 64;    // the words of the candidate victims' other buckets
constexpr unsigned CANDIDATES = 4; // victims looked at per round of the direct move

// Set in a queue entry (beside the operation's index) when the first kernel found both
// of the key's buckets full.
constexpr unsigned BOTH_FULL = 1u << 31;
// The queue between the two kernels: queue[0] counts its entries, queue[1] counts the
// chunks of 32 entries the second kernel's warps took, the entries follow.
constexpr unsigned QUEUE_HEAD = 2;

// The inserts a warp of a first (fill) kernel leaves to the second kernel, gathered in the
// warp's row of shared memory (at most 31 wait between appends, plus up to 32 from one
// iteration) and appended to the queue (see QUEUE_HEAD) 32 at a time: one L2 atomic on its
// count per 32 entries, not per entry. Every member is called by all lanes of the warp.
struct leftovers {
  unsigned (&row)[64];
  unsigned* queue;
  unsigned count = 0;  // the same on every lane
  // The lanes with `leaves` add their `entry`.
  __device__ __forceinline__ void add(bool leaves, unsigned entry) {
    const unsigned lid = threadIdx.x % 32;
    const unsigned leaving = __ballot_sync(warp::FULL_MASK, leaves);
    if (leaves) row[count + __popc(leaving & ((1u << lid) - 1u))] = entry;
    count += __popc(leaving);
    if (count >= 32) {
      __syncwarp();
      unsigned at = 0;
      if (lid == 0) at = atomicAdd(queue, 32u);
      at = __shfl_sync(warp::FULL_MASK, at, 0);
      queue[QUEUE_HEAD + at + lid] = row[count - 32 + lid];
      count -= 32;
      __syncwarp();
    }
  }
  // Appends what is left (at the end of the kernel).
  __device__ __forceinline__ void flush() {
    const unsigned lid = threadIdx.x % 32;
    __syncwarp();
    if (count > 0) {
      unsigned at = 0;
      if (lid == 0) at = atomicAdd(queue, count);
      at = __shfl_sync(warp::FULL_MASK, at, 0);
      if (lid < count) queue[QUEUE_HEAD + at + lid] = row[lid];
    }
  }
};


// Looks for k among a lane's bucket words: sets `hit` to the first slot holding k and
// `hit_word` to its word where found (else leaves them), and returns the mask of the
// empty slots. Only the keys are compared (two compares and two predicated ors a slot):
// the empty word is the only one whose key is EMPTY_KEY, which no pair may have.
__device__ __forceinline__ unsigned scan_words(const unsigned long long (&w)[SLOTS], unsigned k, unsigned& hit,
                                               unsigned long long& hit_word) {
  unsigned empty = 0, hits = 0;
#pragma unroll
  for (unsigned i = 0; i < SLOTS; ++i) {
    const unsigned key = key_of(w[i]);
    if (key == EMPTY_KEY) empty |= 1u << i;
    if (key == k) hits |= 1u << i;
  }
  hits &= ~empty;
  if (hits != 0) {
    hit = __ffs(hits) - 1;
#pragma unroll
    for (unsigned i = 0; i < SLOTS; ++i) {
      if (i == hit) hit_word = w[i];
    }
  }
  return empty;
}

// The direct move's target among the candidates (their other buckets `alt`, with those
// buckets' words `am`): the one with the most free slots whose bucket is unlocked and
// neither b1 nor b2 (fewer evictions meet on one target); CANDIDATES when none has room.
__device__ __forceinline__ unsigned pick_target(const unsigned long long (&am)[CANDIDATES],
                                                const unsigned (&alt)[CANDIDATES], unsigned b1, unsigned b2) {
  unsigned pick = CANDIDATES, most = 0;
#pragma unroll
  for (unsigned c = 0; c < CANDIDATES; ++c) {
    const unsigned room = __popc(free_of(am[c]));
    if (alt[c] != b1 && alt[c] != b2 && room > most && (am[c] & META_LOCK) == 0) {
      most = room;
      pick = c;
    }
  }
  return pick;
}

// The group of b1's slots whose keys are the direct move's candidates in round `round`.
__device__ __forceinline__ unsigned candidate_group(unsigned k, unsigned round) {
  return (k + round) % (SLOTS / CANDIDATES);
}

// The inserts each warp of a state machine (this one, and wide_queued's) parks: a row of
// PARK per warp in shared memory.
template <typename K, typename V>
struct parked_ops {
  K k[WARPS][PARK];
  V v[WARPS][PARK];
  unsigned long long i[WARPS][PARK];
};

// Runs the parked inserts (one per lane with `has`) as the per-lane fast path, and what
// that leaves through the tile code (insert_ops). Called by all lanes of the warp, none
// holding a lock; out of line, so that the state machine's loop saves few registers.
template <typename Ref>
__device__ __noinline__ void run_parked(const Ref& t, bool has, typename Ref::key_type k, typename Ref::value_type v,
                                        unsigned long long index, tally& lane, tally& counts) {
  insert_ops(t, has, k, v, index, lane, counts);
}

// Appends the inserts of the lanes with `park_it` to the warp's row of `park` after its
// `parked` (convergent: every lane of the warp calls it); returns the row's new count.
template <typename K, typename V>
__device__ __forceinline__ unsigned park_lanes(parked_ops<K, V>& park, unsigned wid, unsigned lid, unsigned parked,
                                               bool park_it, K k, V v, unsigned long long index) {
  const unsigned parking = __ballot_sync(warp::FULL_MASK, park_it);
  if (park_it) {
    const unsigned at = parked + __popc(parking & ((1u << lid) - 1u));
    park.k[wid][at] = k;
    park.v[wid][at] = v;
    park.i[wid][at] = index;
  }
  return parked + __popc(parking);
}

// Runs the last 32 of the warp's `parked` (at least 32) inserts, one per lane, with no
// lane holding a lock; returns the count left.
template <typename Ref, typename K, typename V>
__device__ __forceinline__ unsigned run_32_parked(const Ref& t, parked_ops<K, V>& park, unsigned wid, unsigned lid,
                                                  unsigned parked, tally& lane, tally& counts) {
  __syncwarp();
  const unsigned at = parked - 32 + lid;
  run_parked(t, true, park.k[wid][at], park.v[wid][at], park.i[wid][at], lane, counts);
  __syncwarp();
  return parked - 32;
}

// Runs the rest of the warp's `parked` inserts, up to 32 at a time.
template <typename Ref, typename K, typename V>
__device__ __forceinline__ void run_all_parked(const Ref& t, parked_ops<K, V>& park, unsigned wid, unsigned lid,
                                               unsigned parked, tally& lane, tally& counts) {
  __syncwarp();
  while (parked > 0) {
    const unsigned count = parked < 32 ? parked : 32;
    const bool has = lid < count;
    const unsigned at = parked - count + (has ? lid : 0);
    run_parked(t, has, park.k[wid][at], park.v[wid][at], park.i[wid][at], lane, counts);
    parked -= count;
    __syncwarp();
  }
}

__device__ void insert_lanes(const packed_ref& t, const unsigned* keys, const unsigned* values, unsigned* queue,
                             unsigned long long offset, tally& lane, tally& counts) {
  // The operations: keys[e], values[e] for the queue's entries e (see QUEUE_HEAD),
  // operation offset + e of the batch.
  const unsigned long long n = queue[0];
  unsigned claims = 0, replaces = 0, evictions = 0;  // the lane's inserts done here (steps 2, 1, 3)
  __shared__ parked_ops<unsigned, unsigned> park;
  __shared__ unsigned ring_k[WARPS][RING], ring_v[WARPS][RING], ring_e[WARPS][RING];
  const unsigned wid = threadIdx.x / 32;
  const unsigned lid = threadIdx.x % 32;
  op_ring ops{{ring_k[wid], ring_v[wid], ring_e[wid]}, n, queue + 1};
  // An entry is the operation's index in the part, and BOTH_FULL.
  auto load = [&](unsigned long long at, unsigned& k, unsigned& v, unsigned& e) {
    e = queue[QUEUE_HEAD + at];
    k = keys[e & ~BOTH_FULL];
    v = values[e & ~BOTH_FULL];
  };
  ops.start(load);
  unsigned parked = 0;  // the warp's parked inserts (the same on every lane)
  // Rounds of the state machine, each until 32 inserts are parked and every lane is idle
  // (then they run, outside the loop, so that the call saves few registers) or until the
  // keys run out.
  for (;;) {
    unsigned long long index = 0;
    unsigned k = EMPTY_KEY, v = 0, b1 = 0, b2 = 0;
    unsigned phase = IDLE, tries = 0, slot = 0;
    bool spill_before = false, locked = false;
    // The direct move's victim comes from b2 (locked too), and k lands in b2.
    bool from2 = false;
    unsigned long long m = 0, mread = 0, r = 0, hit_word = 0;
    // The direct move: b1's word before its lock, the candidates' other buckets and
    // their words, the chosen victim (slot vslot of b1, word victim) and its target.
    unsigned long long mb1 = 0, victim = 0;
    unsigned long long am[CANDIDATES];
    unsigned alt[CANDIDATES];
    unsigned target = 0, vslot = 0, round = 0;
#pragma unroll
    for (unsigned c = 0; c < CANDIDATES; ++c) {
      am[c] = 0;
      alt[c] = 0;
    }
    unsigned long long w[SLOTS];
#pragma unroll
    for (unsigned i = 0; i < SLOTS; ++i) w[i] = EMPTY;
    for (;;) {
      // --- Convergence point: leave to run the parked inserts, or stop. -------------
      const bool busy = phase != IDLE;
      if (parked >= 32 && !__any_sync(warp::FULL_MASK, busy)) break;
      ops.stage(load);
      if (!__any_sync(warp::FULL_MASK, busy) && !ops.more()) break;
      unsigned tk = EMPTY_KEY, tv = 0, entry = 0;
      const bool take = ops.take(!busy && parked < 32, tk, tv, entry);

      // --- Consume the last step's results; decide the next step. -------------------
      // The bucket a lane read last (if any), scanned once for every phase that reads
      // one: lanes in different phases would otherwise each run their own copy. A hit
      // sets hit_word, which only REPLACE uses: it follows the scan that found the hit
      // with no new read, so the next iteration's scan sets the same word again.
      unsigned seen_hit = SLOTS;
      const unsigned seen_empty = scan_words(w, k, seen_hit, hit_word);
      unsigned loads = 0, atomic = A_NONE;
      bool park_it = false, set_spill = false;
      unsigned long long* const m1 = t.meta + b1;
      // Releases the locks the lane holds: b1's, and the direct move's target's when
      // `target_too` (every write under them was an atomic the lane waited for).
      auto unlock = [&](bool target_too) {
        if (target_too) unlock_after_atomics(t.meta + target);
        if (from2) unlock_after_atomics(t.meta + b2);
        unlock_after_atomics(m1);
        locked = false;
        from2 = false;
      };
      // The next step: phase `next` on slot `at`, issuing atomic `what`.
      auto step = [&](unsigned next, unsigned at, unsigned what) {
        phase = next;
        slot = at;
        atomic = what;
      };
      // Read b1 and its word again, or park the insert after TRIES reads.
      auto retry = [&]() {
        if (++tries >= TRIES) {
          park_it = true;
        } else {
          phase = READ;
          loads |= L_META1 | L_BUCKET1;
        }
      };

      if (phase == IDLE) {
        if (take) {
          index = offset + (entry & ~BOTH_FULL);
          k = tk;
          v = tv;
          if (k != EMPTY_KEY) {
            const hash_pair h = hashes(k);
            b1 = t.bucket_of(h.h1);
            b2 = t.bucket_of(h.h2);
            tries = 0;
            if (entry & BOTH_FULL) {
              phase = EV_READ;
              loads |= L_META1 | L_BUCKET2;
            } else {
              phase = READ;
              loads |= L_META1 | L_BUCKET1;
            }
          }
        }
      } else if (phase == READ) {
        m = mread;
        const unsigned hit = seen_hit, empty = seen_empty;
        const unsigned free_bits = free_of(m);
        if (hit != SLOTS) {
          step(REPLACE, hit, A_REPL1);
        } else if ((m & META_STASHED) != 0 || (free_bits == 0 && b2 == b1)) {
          park_it = true;
        } else if ((m & META_LOCK) != 0 || (empty & ~free_bits & ALL_FREE) != 0) {
          retry();
        } else if ((m & META_SPILL) == 0 && free_bits != 0) {
          step(CLAIM, __ffs(free_bits) - 1, A_CLAIM);
        } else if (free_bits == 0) {
          // b1 holds 16 words, none k: in a kernel that only inserts it stays so (its
          // words change only by evictions, which swap), so k goes to b2, claimed there
          // without b1's lock like a claim in b1 (validated by b2's word). SPILL first.
          set_spill = (m & META_SPILL) == 0;
          mb1 = m | META_SPILL;
          phase = READ2;
          loads |= L_META2 | L_BUCKET2;
        } else {
          // b1 full or SPILL-flagged: lock it from `m` (SPILL set in the same swap when
          // full). An eviction may have moved a key into a full b1 after the read above,
          // so once the lock is taken (an acquire), b1 is read again with b2's word; b2
          // itself next.
          spill_before = (m & META_SPILL) != 0 && b2 != b1;
          phase = LOCK;
          atomic = A_LOCK;
        }
      } else if (phase == READ2) {
        m = mread;  // b2's word from here on
        const unsigned hit = seen_hit, empty = seen_empty;
        const unsigned free2 = free_of(m);
        if (hit != SLOTS) {
          step(REPLACE, hit, A_REPL2);
        } else if ((empty & ~free2 & ALL_FREE) != 0) {
          retry();
        } else if (free2 != 0) {
          step(CLAIM2F, __ffs(free2) - 1, A_CLAIM2);
        } else {
          // Both full: move a key of b1 to its other bucket and put k in its place,
          // under the locks of b1 and of that bucket (as evict_alone does). b1 is locked
          // from its word as read (with SPILL) first; then b2 and b1 are read again
          // under the lock: k can enter neither while b1 is locked (b2 is full, and k
          // moves between them only under b1's lock).
          phase = EV_LOCK;
          atomic = A_EVLOCK;
          round = 0;
        }
      } else if (phase == EV_READ) {
        // b1 and b2 held SLOTS keys each, none k, when the first kernel read them, and in
        // a kernel that only inserts they stay full: straight to the direct move, from
        // b1's word as read now. w holds b2: full and without k, so k cannot enter it.
        m = mread;
        if (seen_hit != SLOTS) {
          step(REPLACE, seen_hit, A_REPL2);
        } else if ((m & META_STASHED) != 0 || b2 == b1) {
          park_it = true;
        } else if ((m & META_LOCK) != 0 || free_of(m) != 0 || seen_empty != 0) {
          retry();
        } else {
          mb1 = m | META_SPILL;
          phase = EV_LOCK;
          atomic = A_EVLOCK;
          round = 0;
        }
      } else if (phase == EV_LOCK) {
        if (r != mb1) {
          retry();
        } else {
          locked = true;
          phase = EV_B1;
          loads |= L_BUCKET1;
        }
      } else if (phase == EV_B1) {
        const unsigned hit = seen_hit, empty = seen_empty;
        if (hit != SLOTS) {
          step(REPLACE, hit, A_REPL1);
        } else if (empty != 0) {
          // A slot of a full bucket read empty is pending (perhaps k): later.
          unlock(false);
          retry();
        } else {
          phase = EV_PICK;
          loads |= L_CAND;
        }
      } else if (phase == EV_PICK) {
        // w still holds b1 (read under the lock): take the candidate whose other bucket
        // has the most room and no lock (fewer evictions meet on one target), and lock
        // that bucket from the word read.
        const unsigned pick = pick_target(am, alt, b1, b2);
        if (pick == CANDIDATES) {
          if (++round < SLOTS / CANDIDATES) {
            loads |= L_CAND;  // the next candidates of b1 (or b2)
          } else if (!from2 && b2 != b1) {
            // None of b1's keys can move: move one of b2's and put k there (b1 stays
            // locked, so k can enter neither bucket meanwhile; SPILL is set in b1).
            phase = EV_M2;
            loads |= L_META2 | L_BUCKET2;
          } else {
            unlock(false);
            park_it = true;
          }
        } else {
          const unsigned first = candidate_group(k, round) * CANDIDATES + pick;
#pragma unroll
          for (unsigned c = 0; c < CANDIDATES; ++c) {
            if (c == pick) {
              target = alt[c];
              mread = am[c];
            }
          }
#pragma unroll
          for (unsigned i = 0; i < SLOTS; ++i) {
            if (i == first) victim = w[i];
          }
          vslot = first;
          // The target's lowest free slot is claimed in the lock's swap itself.
          step(EV_TLOCK, __ffs(free_of(mread)) - 1, A_TLOCK);
        }
      } else if (phase == EV_M2) {
        m = mread;  // b2's word; w holds b2 (read with it: a victim that changed fails its swap)
        if ((m & META_LOCK) != 0 || seen_hit != SLOTS || seen_empty != 0) {
          unlock(false);
          retry();
        } else {
          phase = EV_LOCK2;
          atomic = A_LOCK2;
        }
      } else if (phase == EV_LOCK2) {
        if (r != m) {
          unlock(false);
          retry();
        } else {
          from2 = true;
          round = 0;
          phase = EV_PICK;
          loads |= L_CAND;
        }
      } else if (phase == EV_TLOCK) {
        if (r != mread) {
          unlock(false);
          retry();
        } else {
          phase = EV_SWAP;
          atomic = A_SWAP;
        }
      } else if (phase == EV_SWAP) {
        if (r == victim) {
          phase = EV_TPUT;
          atomic = A_TPUT;
        } else {
          // The victim's value was replaced meanwhile: give the claimed slot back.
          mem::fetch_add_relaxed(t.meta + target, (1ull << slot) + META_VERSION);
          unlock(true);
          retry();
        }
      } else if (phase == EV_TPUT) {
        unlock(true);
        evictions += 1;
        phase = IDLE;
      } else if (phase == CLAIM || phase == CLAIM2F) {
        if (r == m) {
          loads |= phase == CLAIM2F ? L_STORE2 : L_STORE1;
          claims += 1;
          phase = IDLE;
        } else {
          retry();
        }
      } else if (phase == REPLACE) {
        if (locked) unlock(false);
        if (r == hit_word) {
          replaces += 1;
          phase = IDLE;
        } else {
          retry();
        }
      } else if (phase == LOCK) {
        if (r != m) {
          retry();
        } else {
          locked = true;
          phase = LOCKED;
          loads |= L_META2 | L_BUCKET1;
        }
      } else if (phase == LOCKED || phase == LOCK_B2) {
        {
          // b1 is locked: w holds b1 (LOCKED) or b2 (LOCK_B2), read under the lock.
          const unsigned hit = seen_hit;
          const unsigned free1 = free_of(m), free2 = free_of(mread);
          if (hit != SLOTS) {
            step(REPLACE, hit, phase == LOCKED ? A_REPL1 : A_REPL2);
          } else if (phase == LOCKED && spill_before) {
            phase = LOCK_B2;
            loads |= L_BUCKET2;
          } else if (free1 != 0) {
            step(CLAIM1, __ffs(free1) - 1, A_AND1);
          } else if (free2 != 0) {
            step(CLAIM2, __ffs(free2) - 1, A_AND2);
          } else {
            unlock(false);
            park_it = true;
          }
        }
      } else if (phase == CLAIM1 || phase == CLAIM2) {
        const unsigned old = static_cast<unsigned>(r);
        const unsigned bit = 1u << slot;
        bool second = phase == CLAIM2;
        if ((old & bit) != 0) {
          atomic = second ? A_PUT2 : A_PUT1;
          phase = UNLOCK;
        } else {
          unsigned fresh = old & ALL_FREE & ~bit;
          if (fresh == 0 && !second) {
            // b1 filled up under the lock: SPILL before anything lands in b2.
            meta_or(m1, META_SPILL);
            mem::fence_acq_rel();
            second = true;
            fresh = free_of(mread);
          }
          if (fresh != 0 && ++tries < TRIES + 2 * SLOTS) {
            step(second ? CLAIM2 : CLAIM1, __ffs(fresh) - 1, second ? A_AND2 : A_AND1);
          } else {
            unlock(false);
            park_it = true;
          }
        }
      } else {  // UNLOCK: the pair's swap into the claimed slot returned
        unlock(false);
        if (r == EMPTY) {
          claims += 1;
          phase = IDLE;
        } else {
          // Not reached: a slot claimed under the lock is empty until its claimer
          // writes it. Were it not, the pair went nowhere: start the insert again.
          retry();
        }
      }

      // --- Issue: loads first, then the store, then the atomic (acquire). ------------
      if (loads & (L_META1 | L_META2)) mread = mem::ld_relaxed(t.meta + ((loads & L_META2) ? b2 : b1));
      if (loads & L_CAND) {
        // The candidates of a round are one group of CANDIDATES slots, the groups taken
        // in turn from one that depends on k (candidate_group).
        const unsigned g = candidate_group(k, round);
#pragma unroll
        for (unsigned c = 0; c < CANDIDATES; ++c) {
          unsigned key = EMPTY_KEY;
#pragma unroll
          for (unsigned i = 0; i < SLOTS / CANDIDATES; ++i) {
            if (i == g) key = key_of(w[i * CANDIDATES + c]);
          }
          const unsigned from = from2 ? b2 : b1;
          alt[c] = t.alternate(key, from);
          am[c] = alt[c] == from ? 0ull : mem::ld_relaxed(t.meta + alt[c]);
        }
      }
      if (loads & (L_BUCKET1 | L_BUCKET2)) {
        const unsigned long long* const base = t.bucket((loads & L_BUCKET2) ? b2 : b1);
        // A key's first read of b1 is a plain load, through L1: the lane's eight 16-byte
        // loads then fetch each sector of the line from L2 once instead of twice. L1 may
        // hold an older copy of the line; that is safe (a slot that held a word then
        // holds one now, and one read empty but claimed in `m` is taken for pending),
        // but a stale line would fail again the same way, so every later read (a retry,
        // b1 and b2 under the lock) bypasses L1.
        if ((phase == READ && tries == 0) || phase == EV_READ) {
          load_bucket<false>(base, w);
        } else {
          load_bucket<true>(base, w);
        }
      }
      if (loads & (L_STORE1 | L_STORE2)) mem::st_relaxed(t.bucket((loads & L_STORE2) ? b2 : b1) + slot, pack(k, v));
      if (set_spill) meta_or(m1, META_SPILL);
      if (atomic == A_AND1 || atomic == A_AND2) {
        r = atomicAnd(t.meta + (atomic == A_AND2 ? b2 : b1), ~(1ull << slot));
      } else if (atomic != A_NONE) {
        // One compare-and-swap for every lane that has one (a second call site would
        // wait for the first one's round trip: the acquire waits for its result).
        unsigned long long* p = m1;
        unsigned long long expected = m, desired = pack(k, v);
        if (atomic == A_CLAIM || atomic == A_CLAIM2) {
          if (atomic == A_CLAIM2) p = t.meta + b2;
          desired = (m & ~(1ull << slot)) + META_VERSION;
        } else if (atomic == A_LOCK) {
          desired = (m | META_LOCK | (free_of(m) == 0 ? META_SPILL : 0ull)) + META_VERSION;
        } else if (atomic == A_EVLOCK || atomic == A_TLOCK) {
          if (atomic == A_TLOCK) p = t.meta + target;
          expected = atomic == A_TLOCK ? mread : mb1;
          desired = (expected | META_LOCK) + META_VERSION;
          if (atomic == A_TLOCK) desired &= ~(1ull << slot);
        } else if (atomic == A_LOCK2) {
          p = t.meta + b2;
          desired = (m | META_LOCK | META_SPILL) + META_VERSION;
        } else if (atomic == A_SWAP) {
          p = t.bucket(from2 ? b2 : b1) + vslot;
          expected = victim;
        } else if (atomic == A_PUT1 || atomic == A_PUT2 || atomic == A_TPUT) {
          p = t.bucket(atomic == A_TPUT ? target : atomic == A_PUT2 ? b2 : b1) + slot;
          expected = EMPTY;
          if (atomic == A_TPUT) desired = victim;
        } else {
          p = t.bucket(atomic == A_REPL2 ? b2 : b1) + slot;
          expected = hit_word;
        }
        r = mem::cas_acquire(p, expected, desired);
      }

      // --- Park what cannot finish here (convergent). --------------------------------
      parked = park_lanes(park, wid, lid, parked, park_it, k, v, index);
      if (park_it) phase = IDLE;
    }
    if (parked < 32) break;
    parked = run_32_parked(t, park, wid, lid, parked, lane, counts);
  }
  // The rest of the parked inserts, up to 32 at a time.
  run_all_parked(t, park, wid, lid, parked, lane, counts);
  lane.steps[0] += replaces;
  lane.steps[1] += claims;
  lane.steps[2] += evictions;
  lane.moves += evictions;
  lane.len += static_cast<int>(claims + evictions);
}

}  // namespace bulk
}  // namespace hive
}  // namespace gpuds
