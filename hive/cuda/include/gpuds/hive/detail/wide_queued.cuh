// gpuds/hive/detail/wide_queued.cuh: the second kernel of the bulk insert of HiveMap
// tables of wide slots (u64 keys; buckets of 8 or 16 slots) as a per-lane state machine:
// the wide counterpart of bulk::insert_lanes (detail/bulk_insert.cuh), for the direct
// move of the inserts the first kernel found both buckets full for (bulk::BOTH_FULL),
// and the lock-free claim and the replace in b1 of the others.
// Measured on the H200: 1.36-1.40x the inserts of wide_fill::queued (docs/hive.md).
//
// Each lane advances its own insert by one step per iteration, as in bulk::insert_lanes:
// an iteration first consumes what the lane's previous step returned (every lane,
// whatever its phase), then issues the lane's next memory operations, so a lane waiting
// for a lock or in the middle of an eviction holds up no other lane of its warp; a lane
// whose insert is done takes its next queue entry from the warp's ring (queue_ring, one
// chunk of 32 entries and their pairs staged ahead). Before, every lane ran
// insert_alone_full / insert_alone to its end (about 11-14 dependent round trips) and the
// warp waited for its slowest lane (wide_fill::queued, still chosen by defining
// HIVE_WIDE_QUEUED_ALONE).
//
// The direct move, one phase per round trip (a wide slot is a key word and a value word
// in two places: detail/hive_slot.cuh):
//   W_READ    b1's metadata word `m` loaded (relaxed).
//   W_LOCK    lock swap of b1's word from `m` issued (LOCK and SPILL set, version
//             advanced), where `m` is unlocked, not STASHED and full, with b1's key
//             words loaded (coherent) before it; a won swap goes on to W_B1 in the
//             same iteration (the keys are those under the lock: see W_LOCK's check in
//             insert_lanes).
//   W_B1      under b1's lock: b1's key words in hand (from W_LOCK; read again under
//             the lock for a later round, and for b2 in the move out of b2).
//   W_PICK    the metadata words of CANDIDATES victims' other buckets loaded, and (the
//             first round under the lock) b2's key words.
//   W_TLOCK   lock swap of the chosen target's word from the word read (relaxed),
//             which also clears the target's first free bit in the victim's order (the
//             slot is claimed in the lock's own swap, with the OUT flag it needs,
//             hive_bucket.cuh), and in the same round trip the swap of the victim's key
//             word (in b1, or b2) from its key to BUSY_KEY (an acquire); a lost lock
//             swap whose returned word is unlocked with room swaps again from it (a
//             try), the victims' bucket still locked and the victim's slot still held;
//             any other lost lock swap puts the victim's key back; a lost victim swap
//             gives a won target slot back.
//   W_M2      (no victim of b1 has a target with room, after every round) b2's word
//             loaded, b1 still locked: b2 full and unlocked goes on to
//   W_LOCK2   lock swap of b2's word (LOCK and SPILL set); then W_B1 to W_TPUT with b2
//             as the victims' bucket (b2's key words read under both locks; k takes the
//             victim's slot in b2), as the packed machine moves out of b2.
//   W_XCHG    exchange of the victim's value word with k's value (returns the victim's
//             value: read under the slot's ownership).
//   W_RELEASE swap of the victim's key word from BUSY_KEY to k (k published in b1, or
//             in b2 when moving out of b2), and
//             exchange of the target's claimed value word with the victim's value.
//   W_TPUT    swap of the target's claimed key word from EMPTY_KEY to the victim's key;
//             then the locks are released.
// About 7 dependent round trips (9 before b1's keys came with the lock swap and the
// victim's swap with the target's), none of which makes the other lanes wait.
//
// The plain path, for entries not tagged BOTH_FULL (the first kernel's lost races):
//   P_READ    b1's word `m` and b1's key words loaded at once (relaxed, at L2).
//   P_CLAIM   swap of b1's word from `m` (its first free bit in k's order cleared, with
//             the OUT flag it needs, version advanced), where k is not among the keys read, and `m` is unlocked, has a
//             free slot, no SPILL or STASHED, and no pending slot (claimed in `m` but
//             read EMPTY_KEY, or BUSY_KEY); on success the slot's value word is
//             exchanged with k's value and its key word stored as k (a release): done.
//   R_BUSY    k was read in b1: swap of its key word from k to BUSY_KEY; on success its
//             value word is exchanged with k's value and its key word stored back as
//             k (a release): done (S::replace, in phases).
// A locked b1 or a pending slot is read again (a try); b1 full, SPILL-flagged or
// STASHED is parked (insert_alone's lock paths).
//
// What the machine does not do it parks (in the warp's queue in shared memory) and runs
// later through insert_alone and the tile code, as bulk::insert_lanes does: reserved
// keys; plain entries whose b1 is full, SPILL-flagged or STASHED; BOTH_FULL entries
// with b1 == b2, b1 with room or STASHED, k found in b1 or b2 (a replace), b2 with an
// empty or BUSY_KEY slot, b2 with room in its word (W_M2), or no candidate of b1 or b2
// with room among SLOTS each; and an insert still not done after TRIES tries. When 32 are parked the warp stops taking entries, lets its
// lanes finish (so that no lane of the warp holds a lock) and runs them one per lane.
//
// No wait is unbounded: a lock is only ever taken by one compare-and-swap from a word
// read unlocked; a lost swap releases what the lane holds and counts a try (at most
// TRIES, then the insert is parked), except a target's lock swap that lost to a word
// still unlocked with room, which swaps again from that word (also a try); no phase
// loops on memory.
//
// Why k ends up in the table exactly once (with the concurrent inserts of this kernel:
// other lanes of this machine, insert_alone and the tile code of parked inserts; the
// first kernel's lock-free fills ended before this kernel began, and nothing deletes):
// - k is not in b1 at the move: b1's key words were read after `m` was read and the
//   lock's swap from `m` won (so they are b1's keys under the lock: W_LOCK's check in
//   insert_lanes), all of them keys (no EMPTY_KEY slot, so none pending; no
//   BUSY_KEY, which could be k in the middle of a replace) and none k. While the lane
//   holds b1's lock, k cannot enter b1: a lock-free claim in b1 needs a free bit (b1 is
//   full as of `m`, and in a kernel that only inserts a bucket full and unlocked stays
//   full: moves swap keys, nothing empties a slot, and a claimed bit is given back only
//   by a move's holder of the bucket's lock, its target) and an unlocked word; a replace
//   needs k there; every other placement needs b1's lock.
// - k is not in b2: b2's key words were read after the lock was taken (W_PICK), full and
//   none k or BUSY_KEY. In this kernel k enters or leaves b2 only under b1's lock
//   (insert_alone_locked, insert_locked, evict: every placement of a key in its second
//   bucket is made by a holder of its first bucket's lock, and every move of it holds
//   both its buckets' locks), so from the lock on, k neither enters b2 nor leaves it.
// - k is not in the stash: STASHED is clear in `m`, and it is set only under b1's lock.
// - Any other insert of k either replaces a k it finds (there is none until W_RELEASE
//   publishes k in b1; then it finds it, and its replace goes through BUSY_KEY like any
//   replace) or passes through b1's lock after this lane releases it, and finds k in b1.
// - The victim leaves b1 only under the locks of both its buckets (b1 and the target),
//   lands in its other bucket, and b1 carries SPILL (set in the lock's swap) for a victim
//   whose first bucket is b1; from the victim's swap to BUSY_KEY (W_TLOCK) to W_TPUT an
//   insert of the victim sees a BUSY_KEY slot in b1 (pending: it reads again) or must
//   take a lock this lane holds (both its buckets), so it never concludes the victim
//   absent, and it finds it in the target after the unlock (or in its slot again, its
//   key put back, where the target's lock swap lost). The target's slot is the lane's
//   own: its free bit was cleared by the lane's lock swap, from a word in which it was
//   set, so its key word was EMPTY_KEY (a slot is written only by the claimer of its
//   bit) and stays so; that swap is relaxed, since the lane reads nothing of the target
//   after it and no one else writes the claimed slot's words.
// - The move out of b2 (from2): b1 stays locked throughout, so the arguments for b1 and
//   the stash stand; b2 is locked from a word read unlocked and full, and its key words
//   are read after that swap (full, none k or BUSY_KEY): k is not in b2, and cannot
//   enter it (every placement of k in b2 needs b1's lock). k lands in b2, its second
//   bucket, after SPILL was set in b1's lock swap; the victim leaves b2 under the locks
//   of both its buckets (b2 and the target), and b2's lock swap set SPILL for a victim
//   whose first bucket is b2. The rest is the move out of b1 with b2 in its place.
//
// Why the plain path's claim is the only insert of k: it is insert_alone's lock-free
// claim with the word and the bucket read at once, not the word first (the packed
// machine's argument, bulk_insert.cuh). The swap from `m` succeeds only if b1's word did
// not change from its read to the swap (every claim, lock, flag and given-back slot
// changes it, and versions do not repeat), so nothing was claimed or locked in b1 and no
// flag set meanwhile. A slot free in `m` held EMPTY_KEY throughout (it is written only
// by a claimer, and a claim is given back only unwritten). A slot claimed in `m` that the
// read showed holding k' != k holds k' at the swap: a key word changes from one key to
// another only by a move's swap into a bucket its swapper holds locked and found full,
// and such a bucket stays full (above); b1 had a free slot in `m`, so no such swap came
// before `m`, and none after (the word would have changed). A slot claimed in `m` and
// read EMPTY_KEY or BUSY_KEY is pending (perhaps k): read again. So k was absent from b1
// from the read to the swap, and with SPILL and STASHED clear in `m` (each is set before
// a key of b1 is placed in b2 or the stash, and setting it changes the word) from the
// table; any other insert of k later finds the claimed slot pending or k in it. The
// replace (R_BUSY) adds no key: it changes the value of a k it owns at BUSY_KEY.
//
// Why no value is lost or torn: the victim's value word is written only by the lane that
// holds the slot's key word at BUSY_KEY (this lane, from its swap in W_TLOCK to
// W_RELEASE), which reads the victim's value with the same exchange that stores k's
// (so a replace of the victim that landed before that swap is carried to the target,
// and none can land after: it would need to swap the key word from the victim's key); a
// replace of the victim in flight makes the swap fail (it returns BUSY_KEY), and the
// lane gives the target's claimed slot back where its lock swap won (its bit set again:
// its key word was never written), releases the locks and tries again. Where the
// target's lock swap lost for good, the lane stores the victim's key back into its slot
// (the value word untouched): the victim was at BUSY_KEY, pending, meanwhile. The target's value word is written by this lane only, in its
// claimed slot, before the slot's key word. On the plain path the claimer writes the
// value of the slot it claimed (its free bit), and a replace the value of the slot it
// holds at BUSY_KEY, each before the key word. Values are whole words (4 or 8 bytes, one
// atomic each), so no reader sees half of one.
//
// Why no reader uses a value before it is stored: every value is written before the key
// word that publishes it, and every write that publishes a key word is a release (k's
// swap into the victim's slot after k's value, the W_XCHG exchange; the victim's swap
// into the target's slot after its value, the W_RELEASE exchange; the plain path's key
// store after its value's exchange). A reader that acquires the key word (the slot
// protocol's replace, delete and the lookups' confirm) therefore sees the value, as the
// wide protocol requires (hive_slot.cuh). The value exchanges are relaxed: a release
// orders them before the key word (and drains them before its swap), and the victim's
// value is read after the acquire that made its slot the lane's (W_TLOCK). The publishing
// swaps are releases alone (no acquire: the lane reads nothing they must order, and an
// acquire would invalidate L1 after each). The locks' writes are atomics the lane waits
// for before its release (unlock_after_atomics), as in bulk::insert_lanes: the last of a
// move's, W_TPUT's swap, comes after its exchanges were drained by its release (and a
// victim's key put back where the target was lost is a release swap waited for). The
// kernel boundary makes everything visible to later kernels.
#pragma once
#include <gpuds/hive/detail/batch_loop.cuh>
#include <gpuds/hive/detail/bulk_insert.cuh>

namespace gpuds {
namespace hive {
namespace wide_queued {

// The constants are enumerators, not constexpr variables, so that a module of packed
// slots, which includes this file but never instantiates it, compiles to the same PTX
// as without it (a namespace-scope constexpr variable is emitted as a global).
enum : unsigned {
  TRIES = bulk::TRIES,            // tries (lock swaps, lost races) before an insert is parked
  CANDIDATES = bulk::CANDIDATES,  // victims looked at per round of the move
  // What a ring slot holds past the end of the queue (an entry is an index below 2^31
  // and the BOTH_FULL bit, never all ones).
  NO_ENTRY = 0xffffffffu,
};

// Phases: what the lane's last issued step was (see the top of this file).
enum : unsigned {
  IDLE,
  W_READ,
  W_LOCK,
  W_B1,
  W_PICK,
  W_TLOCK,
  W_XCHG,
  W_RELEASE,
  W_TPUT,
  P_READ,
  P_CLAIM,
  R_BUSY,
  W_M2,
  W_LOCK2
};

// The compare-and-swap a lane issues (one call site for every lane that has one).
enum : unsigned {
  C_NONE,
  C_LOCK,     // b1's word from m: locked, SPILL set
  C_TLOCK,    // the target's word from mt: locked, slot `slot` claimed
  C_BUSY,     // vb()'s key word vslot from the victim's key to BUSY_KEY
  C_RELEASE,  // vb()'s key word vslot from BUSY_KEY to k (a release)
  C_TPUT,     // the target's key word `slot` from EMPTY_KEY to the victim's key (a release)
  C_CLAIM,    // b1's word from m: slot `slot`'s free bit cleared, version advanced
  C_LOCK2,    // b2's word from mt: locked, SPILL set (the move out of b2)
};

// The exchange of a value word a lane issues (relaxed; a release after it publishes it).
enum : unsigned {
  X_NONE,
  X_VICTIM,   // vb()'s value word vslot to k's value (the victim's value returned)
  X_TARGET,   // the target's value word `slot` to the victim's value
  X_CLAIM,    // b1's value word `slot` to k's value, then its key word stored as k
  X_REPLACE,  // b1's value word vslot to k's value, then its key word (BUSY_KEY) stored as k
};

// A warp's queue entries and their pairs, taken by its idle lanes in order: the warps
// take chunks of 32 entries in turn (one atomic on `next` per chunk, so that a warp whose
// inserts take long takes fewer, as bulk::op_ring does for packed tables), each loaded
// coalesced one chunk ahead and staged in the warp's ring (bulk::ring_staging).
// An entry past the end of the queue is staged as NO_ENTRY.
template <typename K, typename V>
struct queue_ring : bulk::ring_staging<K, V> {
  const K* keys;
  const V* values;
  const unsigned* entries;  // the queue's entries (queue + bulk::QUEUE_HEAD)
  unsigned long long n;     // how many
  unsigned* next;           // the chunk counter (queue[1], zeroed by the host)
  unsigned long long base = 0;  // the first entry of the chunk in flight
  K pk = 0;
  V pv = 0;
  unsigned pe = NO_ENTRY;

  __device__ unsigned long long next_chunk() const {
    unsigned chunk = 0;
    if (this->lid == 0) chunk = atomicAdd(next, 1u);
    return static_cast<unsigned long long>(__shfl_sync(warp::FULL_MASK, chunk, 0)) * 32;
  }
  __device__ void load() {
    const unsigned long long at = base + this->lid;
    pe = NO_ENTRY;
    if (at < n) {
      pe = entries[at];
      const unsigned e = pe & ~bulk::BOTH_FULL;
      pk = keys[e];
      pv = values[e];
    }
  }
  __device__ void start() {
    base = next_chunk();
    load();
  }
  // Stages the chunk in flight when the ring has room for it, and loads the next.
  __device__ void stage() {
    if (this->room() && base < n) {
      this->push(pk, pv, pe);
      base = next_chunk();
      load();
      __syncwarp();
    }
  }
};

// The second kernel for wide slots: the queue's entries (bulk::QUEUE_HEAD; operation
// offset + index of the batch) through the state machine above, and what it parks
// through bulk::run_parked (bulk::park_lanes and the runs after it, shared with the
// packed state machine).
template <typename Ref>
__device__ void insert_lanes(const Ref& t, const typename Ref::key_type* keys, const typename Ref::value_type* values,
                             unsigned* queue, unsigned long long offset, tally& lane, tally& counts) {
  using S = typename Ref::S;
  using K = typename Ref::key_type;
  using V = typename Ref::value_type;
  static_assert(S::WIDE, "wide slots only");
  const unsigned long long n = queue[0];
  // The lane's inserts done here: direct moves, claims and replaces of the plain path.
  unsigned evictions = 0, claims = 0, replaces = 0;
  __shared__ bulk::parked_ops<K, V> park;
  __shared__ K ring_k[bulk::WARPS][bulk::RING];
  __shared__ V ring_v[bulk::WARPS][bulk::RING];
  __shared__ unsigned ring_e[bulk::WARPS][bulk::RING];
  const unsigned wid = threadIdx.x / 32;
  const unsigned lid = threadIdx.x % 32;
  queue_ring<K, V> ops{{ring_k[wid], ring_v[wid], ring_e[wid]}, keys, values, queue + bulk::QUEUE_HEAD, n, queue + 1};
  ops.start();
  unsigned parked = 0;  // the warp's parked inserts (the same on every lane)
  // Rounds of the state machine, each until 32 inserts are parked and every lane is idle
  // (then they run, outside the loop) or until the entries run out.
  for (;;) {
    unsigned long long index = 0;
    K k = S::EMPTY_KEY, vkey = S::EMPTY_KEY;
    V v = 0, vval = 0;
    unsigned b1 = 0, b2 = 0, target = 0;
    unsigned phase = IDLE, tries = 0, slot = 0, vslot = 0, round = 0;
    bool locked = false, tlocked = false, w_b2 = false, plain = false;
    // from2: the move is out of b2 (b1's keys had no victim with room): b2 is locked too,
    // and the victim, and k's slot, are in b2. vb(): the bucket the victim leaves.
    bool from2 = false;
    const auto vb = [&]() { return from2 ? b2 : b1; };
    // m: b1's word as read (then locked from); mt: the target's word as read; r: the
    // last compare-and-swap's old word.
    // r2: the victim's ownership swap's old word (W_TLOCK); held: the lane holds the
    // victim's key word at BUSY_KEY while it swaps the target's word again.
    unsigned long long m = 0, mt = 0, r = 0, r2 = 0;
    bool held = false;
    unsigned long long am[CANDIDATES];
    unsigned alt[CANDIDATES];
    K ck[CANDIDATES];
#pragma unroll
    for (unsigned c = 0; c < CANDIDATES; ++c) {
      am[c] = 0;
      alt[c] = 0;
      ck[c] = S::EMPTY_KEY;
    }
    // The key words of the bucket the lane read last (b1, or b2 where w_b2).
    unsigned long long w[SLOTS];
#pragma unroll
    for (unsigned i = 0; i < SLOTS; ++i) w[i] = S::EMPTY_KEY;
    for (;;) {
      // --- Convergence point: leave to run the parked inserts, or stop. -------------
      const bool busy = phase != IDLE;
      if (parked >= 32 && !__any_sync(warp::FULL_MASK, busy)) break;
      ops.stage();
      if (!__any_sync(warp::FULL_MASK, busy) && !ops.more()) break;
      K tk = S::EMPTY_KEY;
      V tv = 0;
      unsigned entry = NO_ENTRY;
      const bool take = ops.take(!busy && parked < 32, tk, tv, entry);

      // --- Consume the last step's results; decide the next step. -------------------
      // The bucket the lane read last, scanned once for every phase (only P_READ, W_B1
      // and W_PICK use it, each right after the step that loaded it).
      unsigned seen_hit = SLOTS, seen_odd = 0;  // k's slot; slots EMPTY_KEY or BUSY_KEY
#pragma unroll
      for (unsigned i = SLOTS; i-- > 0;) {
        if (w[i] == S::EMPTY_KEY || w[i] == S::BUSY_KEY) seen_odd |= 1u << i;
        if (w[i] == k) seen_hit = i;
      }
      bool load_meta = false, load_m2 = false, load_b1 = false, load_cand = false, park_it = false, grab = false;
      unsigned cas = C_NONE, xchg = X_NONE;
      // Releases the locks the lane holds (every write under them was an atomic the lane
      // waited for, or one a release swap it waited for drained first: W_TPUT's drains
      // the target's value exchange, and a victim's key put back is such a swap;
      // unlock_after_atomics).
      auto unlock = [&]() {
        if (tlocked) unlock_after_atomics(t.meta + target);
        if (from2) unlock_after_atomics(t.meta + b2);
        if (locked) unlock_after_atomics(t.meta + b1);
        locked = false;
        tlocked = false;
        from2 = false;
      };
      // Reads b1's word again (and b1's key words on the plain path), or parks the
      // insert after TRIES tries.
      auto retry = [&]() {
        if (++tries >= TRIES) {
          park_it = true;
        } else {
          phase = plain ? P_READ : W_READ;
          load_meta = true;
          load_b1 = plain;
        }
      };

      // W_LOCK won: b1 is the lane's, and w holds its key words, loaded with the swap
      // (after `m` was read, before the swap): the keys of b1 under the lock. b1's word
      // was `m` from that read to the swap (the swap succeeded from it, and every lock,
      // unlock, claim, given-back slot and flag changes the word, versions never
      // repeating), so no lock of b1 was taken or released in between, and the last
      // unlock came before `m`. Its holder's writes of key words were either atomics it
      // waited for before that unlock (this machine's moves; the lock-handover argument
      // of unlock_after_atomics) or writes from BUSY_KEY or EMPTY_KEY to a key (the
      // parked inserts' tile code and replaces, which unlock without waiting): a load
      // that still sees such a slot's old word sees a pending slot, which W_B1 reads
      // again. Without the lock a full bucket's key words change only to BUSY_KEY and
      // back (a replace), which W_B1 reads again too. So the loads, issued after `m`
      // returned, read what the lock then holds, and W_B1 goes on in this iteration:
      // one round trip fewer per move. (As for unlock_after_atomics, this leans on the
      // hardware: `m` is a relaxed load and the key loads follow it by issue order, at
      // L2, not by an acquire.)
      if (phase == W_LOCK && r == m) {
        locked = true;
        round = 0;
        phase = W_B1;
      }
      if (phase == IDLE) {
        if (take && entry != NO_ENTRY) {
          index = offset + (entry & ~bulk::BOTH_FULL);
          k = tk;
          v = tv;
          tries = 0;
          from2 = false;
          plain = (entry & bulk::BOTH_FULL) == 0;
          if (Ref::reserved(k)) {
            park_it = true;  // the tile reports it
          } else {
            const hash_pair h = hashes(k);
            b1 = t.bucket_of(h.h1);
            b2 = t.bucket_of(h.h2);
            if (plain) {
              // Not left for both buckets full: b1 and its word (the plain path).
              phase = P_READ;
              load_meta = true;
              load_b1 = true;
            } else if (b2 == b1) {
              park_it = true;
            } else {
              phase = W_READ;
              load_meta = true;
            }
          }
        }
      } else if (phase == P_READ) {
        // b1's word and key words, read at once (see the top of this file).
        m = r;
        const unsigned free_bits = free_of(m);
        if (seen_hit != SLOTS) {
          // k in b1: replace it through BUSY_KEY (S::replace in phases).
          vslot = seen_hit;
          vkey = k;
          phase = R_BUSY;
          cas = C_BUSY;
        } else if ((m & (META_STASHED | META_SPILL)) != 0 || free_bits == 0) {
          park_it = true;  // k may be in b2 or the stash, or b1 is full: the lock paths
        } else if ((m & META_LOCK) != 0 || (seen_odd & ~free_bits & ALL_FREE) != 0) {
          retry();  // locked, or a slot pending (claimed but empty, or BUSY_KEY)
        } else {
          slot = rotated_first<S>(free_bits, preferred_part<S>(k));
          phase = P_CLAIM;
          cas = C_CLAIM;
        }
      } else if (phase == P_CLAIM) {
        if (r == m) {
          // The slot is the lane's: its value, then its key word.
          xchg = X_CLAIM;
          claims += 1;
          phase = IDLE;
        } else {
          retry();
        }
      } else if (phase == R_BUSY) {
        if (r == k) {
          // The lane owns k's slot: its new value, then the key word back to k.
          xchg = X_REPLACE;
          replaces += 1;
          phase = IDLE;
        } else {
          retry();  // another replace of k in flight
        }
      } else if (phase == W_READ) {
        m = r;  // b1's word (loaded into r, or returned by a lost lock swap)
        if ((m & META_STASHED) != 0 || free_of(m) != 0) {
          park_it = true;  // k may be stashed, or b1 has room: insert_alone's paths
        } else if ((m & META_LOCK) != 0) {
          retry();
        } else {
          // The lock swap, with b1's key words loaded before it (W_LOCK says why they
          // are b1's keys under the lock when the swap succeeds).
          phase = W_LOCK;
          cas = C_LOCK;
          load_b1 = true;
        }
      } else if (phase == W_LOCK) {
        // (A won swap went on to W_B1 above.) The swap returned b1's fresher word:
        // decide from it (no new read).
        if (++tries >= TRIES) {
          park_it = true;
        } else {
          phase = W_READ;
        }
      } else if (phase == W_B1) {
        // w holds b1's key words, read under the lock.
        if (seen_hit != SLOTS) {
          unlock();
          park_it = true;  // k in b1: a replace (insert_alone)
        } else if (seen_odd != 0) {
          // A slot of a full bucket read empty is pending, a BUSY_KEY one is a replace
          // in flight (perhaps of k): later.
          unlock();
          retry();
        } else {
          phase = W_PICK;
          load_cand = true;
        }
      } else if (phase == W_PICK) {
        if (w_b2 && (seen_hit != SLOTS || seen_odd != 0)) {
          // k in b2 (a replace), or b2 not full or in the middle of a change: the plain
          // paths of insert_alone.
          unlock();
          park_it = true;
        } else {
          // Take the candidate whose other bucket has the most room and no lock, and
          // lock that bucket from the word read.
          const unsigned pick = bulk::pick_target(am, alt, b1, b2);
          if (pick == CANDIDATES) {
            if (++round < SLOTS / CANDIDATES) {
              // The next candidates of b1: from w where it still holds b1, else read
              // b1 again (under the lock it holds the same keys).
              if (w_b2) {
                phase = W_B1;
                load_b1 = true;
              } else {
                load_cand = true;
              }
            } else if (!from2) {
              // None of b1's keys can move: move one of b2's and put k there, as the
              // packed machine does (b1 stays locked, so k can enter neither bucket
              // meanwhile; SPILL is set in b1). b2's word first.
              phase = W_M2;
              load_m2 = true;
            } else {
              unlock();
              park_it = true;  // no victim with room in either bucket: the tile's random walks
            }
          } else {
#pragma unroll
            for (unsigned c = 0; c < CANDIDATES; ++c) {
              if (c == pick) {
                target = alt[c];
                mt = am[c];
                vkey = ck[c];
              }
            }
            vslot = bulk::candidate_group(key_bits(k), round) * CANDIDATES + pick;
            slot = rotated_first<S>(free_of(mt), preferred_part<S>(vkey));
            phase = W_TLOCK;
            cas = C_TLOCK;
            grab = true;  // the victim's slot in the same round trip (W_TLOCK)
          }
        }
      } else if (phase == W_M2) {
        mt = r;  // b2's word
        if (free_of(mt) != 0) {
          unlock();
          park_it = true;  // b2 has room: insert_alone's claim
        } else if ((mt & META_LOCK) != 0) {
          unlock();
          retry();
        } else {
          phase = W_LOCK2;
          cas = C_LOCK2;
        }
      } else if (phase == W_LOCK2) {
        if (r != mt) {
          unlock();
          retry();
        } else {
          // b2 is locked (and SPILL set): read its key words under both locks, then its
          // victims' other buckets, as for b1.
          from2 = true;
          round = 0;
          phase = W_B1;
          load_b1 = true;
        }
      } else if (phase == W_TLOCK) {
        // r: the target's lock swap's old word; r2: the victim's ownership swap's, where
        // it was issued with it (not after a retried lock swap: the lane holds the slot).
        held = held || r2 == vkey;
        if (!held) {
          // The victim is in the middle of a replace: give the target's claimed slot
          // back where the lock swap won (its key word was never written), unlock, try
          // again.
          if (r == mt) {
            tlocked = true;
            mem::fetch_add_relaxed(t.meta + target, (1ull << slot) + META_VERSION);
          }
          unlock();
          retry();
        } else if (r == mt) {
          // Both are the lane's: the victim's value, exchanged with k's.
          tlocked = true;
          held = false;
          phase = W_XCHG;
          xchg = X_VICTIM;
        } else if ((r & META_LOCK) == 0 && free_of(r) != 0 && ++tries < TRIES) {
          // The swap returned the target's fresher word, unlocked and with room: swap
          // again from it, the victims' bucket (or buckets) still locked and the
          // victim's slot still held (the victim and its target are the same; the claim
          // is that word's first free slot).
          mt = r;
          slot = rotated_first<S>(free_of(mt), preferred_part<S>(vkey));
          cas = C_TLOCK;
        } else {
          // The target is lost: the victim's key word back (its value was not touched)
          // by a release swap the lane waits for (its old word is read here, as
          // W_TPUT's is), so that the unlocks below come after it; then try again.
          const unsigned long long back = mem::cas_release(slot_at<S>(t.bucket(vb()), vslot).key, S::BUSY_KEY, vkey);
          if (back != S::BUSY_KEY) status::report(t.status, status::RETRY_LIMIT);  // not reached: the slot is the lane's
          held = false;
          unlock();
          retry();
        }
      } else if (phase == W_XCHG) {
        vval = static_cast<V>(r);  // the victim's value, read under the slot's ownership
        phase = W_RELEASE;
        cas = C_RELEASE;
        xchg = X_TARGET;
      } else if (phase == W_RELEASE) {
        // r: the release swap's old word, BUSY_KEY (the lane owned the slot). Reading it
        // waits for that swap; W_TPUT's release drains the exchange of the target's value.
        if (r != S::BUSY_KEY) status::report(t.status, status::RETRY_LIMIT);  // not reached
        phase = W_TPUT;
        cas = C_TPUT;
      } else {  // W_TPUT: the victim's key word is in the target
        // Not reached otherwise: a claimed slot's key word stays EMPTY_KEY until its
        // claimer writes it. Were it not, the victim would be lost: say so. This use of
        // r is also what makes the lane wait for W_TPUT's swap (a release alone) before
        // the relaxed unlocks below: keep it.
        if (r != S::EMPTY_KEY) status::report(t.status, status::RETRY_LIMIT);
        unlock();
        evictions += 1;
        phase = IDLE;
      }

      // --- Issue: the publishing swaps first, then loads, then the other swaps, then
      // the exchange. The swaps that publish a key word (k into the victim's slot, the
      // victim into the target's) are releases: the value the key word publishes was
      // written before them (an exchange of an earlier step), and a release orders that
      // write before the key word for every reader that acquires it, as the wide
      // protocol requires (hive_slot.cuh). Releases alone: nothing the lane reads after
      // them depends on them (it checks the old word, then unlocks or goes on to
      // W_TPUT). Issued before this step's loads, their fence waits for none of them
      // (only for what the warp still has in flight from earlier steps).
      if (cas == C_RELEASE || cas == C_TPUT) {
        const bool into_victim = cas == C_RELEASE;
        unsigned long long* const p =
            into_victim ? slot_at<S>(t.bucket(vb()), vslot).key : slot_at<S>(t.bucket(target), slot).key;
        // k takes the victim's slot in vb() (locked by the lane): its OUT flag, if any.
        if (into_victim) note_out<S>(t.meta + vb(), vslot, k);
        r = mem::cas_release(p, into_victim ? S::BUSY_KEY : S::EMPTY_KEY, into_victim ? k : vkey);
      }
      if (load_meta) r = mem::ld_relaxed(t.meta + b1);
      if (load_m2) r = mem::ld_relaxed(t.meta + b2);
      if (load_cand) {
        // The candidates of a round are one group of CANDIDATES slots of b1 (w), the
        // groups taken in turn from one that depends on k (bulk::candidate_group).
        const unsigned g = bulk::candidate_group(key_bits(k), round);
#pragma unroll
        for (unsigned c = 0; c < CANDIDATES; ++c) {
          K key = S::EMPTY_KEY;
#pragma unroll
          for (unsigned i = 0; i < SLOTS / CANDIDATES; ++i) {
            if (i == g) key = w[i * CANDIDATES + c];
          }
          ck[c] = key;
          alt[c] = t.alternate(key, vb());
          am[c] = alt[c] == vb() ? 0ull : mem::ld_relaxed(t.meta + alt[c]);
        }
      }
      if (load_b1 || (load_cand && round == 0 && !from2)) {
        // b2's key words with the first candidates under b1's lock (W_PICK checks them),
        // the victims' bucket's otherwise (b1, or b2 under its lock too); every read here
        // is at L2, under b1's lock or (W_LOCK's) issued with the swap that takes it.
        w_b2 = !load_b1;
        load_keys<S, true>(t.bucket(w_b2 ? b2 : vb()), w);
      }
      // The target's lock swap is relaxed: the lane reads nothing of the target after it
      // (its claimed slot's key word is EMPTY_KEY by the free bit the swap clears, and
      // no one else writes that slot's words), so nothing needs ordering after it, and
      // it is issued before the victim's ownership swap (an acquire, which the warp
      // waits for) so that the two take one round trip.
      if (cas == C_TLOCK) {
        r = mem::cas_relaxed(t.meta + target, mt,
                             (((mt | META_LOCK) + META_VERSION) & ~(1ull << slot)) | out_flag<S>(slot, vkey));
      }
      // The acquire swaps, at one call site: the lock swaps, the claim, and the swap of
      // a key word to BUSY_KEY (a replace's, or the victim's with the target's lock:
      // `grab`, whose old word goes to r2).
      const unsigned acquire = grab ? static_cast<unsigned>(C_BUSY) : cas;
      if (acquire == C_LOCK || acquire == C_LOCK2 || acquire == C_BUSY || acquire == C_CLAIM) {
        unsigned long long* p = t.meta + b1;
        unsigned long long expected = m, desired = (m | META_LOCK | META_SPILL) + META_VERSION;
        if (acquire == C_LOCK2) {
          p = t.meta + b2;
          expected = mt;
          desired = (mt | META_LOCK | META_SPILL) + META_VERSION;
        } else if (acquire == C_BUSY) {
          p = slot_at<S>(t.bucket(vb()), vslot).key;
          expected = vkey;
          desired = S::BUSY_KEY;
        } else if (acquire == C_CLAIM) {
          desired = ((m & ~(1ull << slot)) | out_flag<S>(slot, k)) + META_VERSION;
        }
        const unsigned long long old = mem::cas_acquire(p, expected, desired);
        if (grab) {
          r2 = old;
        } else {
          r = old;
        }
      }

      if (xchg != X_NONE) {
        // Relaxed: the key word that publishes the value is written by a release (the
        // store below, or a later swap), which orders the exchange before it.
        const bool in_target = xchg == X_TARGET;
        const typename S::ptr p =
            slot_at<S>(t.bucket(in_target ? target : vb()), in_target || xchg == X_CLAIM ? slot : vslot);
        const V old = mem::exch_relaxed(p.value, in_target ? vval : v);
        if (xchg == X_VICTIM) r = old;
        // The plain path publishes k in its claimed slot, or releases k's slot after a
        // replace, with a release store (after the value's exchange; see the swaps above).
        if (xchg == X_CLAIM || xchg == X_REPLACE) mem::st_release(p.key, k);
      }
      // --- Park what cannot finish here (convergent). --------------------------------
      parked = bulk::park_lanes(park, wid, lid, parked, park_it, k, v, index);
      if (park_it) phase = IDLE;
    }
    if (parked < 32) break;
    parked = bulk::run_32_parked(t, park, wid, lid, parked, lane, counts);
  }
  // The rest of the parked inserts, up to 32 at a time.
  bulk::run_all_parked(t, park, wid, lid, parked, lane, counts);
  lane.steps[STEP_REPLACE - 1] += replaces;
  lane.steps[STEP_CLAIM - 1] += claims;
  lane.steps[STEP_EVICT - 1] += evictions;
  lane.moves += evictions;
  lane.len += static_cast<int>(claims + evictions);
}

}  // namespace wide_queued
}  // namespace hive
}  // namespace gpuds
