// gpuds/hive/hive_ref.cuh: the device API of HiveMap (Hive paper, §III-§IV).
//
// `hive_ref<K, V>` (K, V: unsigned/unsigned, unsigned long long/unsigned or unsigned
// long long/unsigned long long) is trivially copyable and non-owning; gpuds_hive::HiveMap
// hands out its #[repr(C)] twin (HiveRef, one layout for all three). Compile user kernels
// with the table's defines (HIVE_SLOTS, HIVE_HASH: HiveMap::defines()). Every member
// operation is cooperative over a tile of HIVE_SLOTS lanes: all lanes of the tile call it
// with the same arguments, and the result is the same on every lane. What a slot holds
// and how it changes is the slot policy's (detail/hive_slot.cuh): one packed word for u32
// pairs; for u64 keys a key word and a value word (the key among its part's keys and the
// value among the values after them; a u64/u64 bucket of 16 slots is two parts of one
// line each, otherwise a bucket is one part), changed in two steps with the key word as
// the commit point.
//
// Addressing is linear hashing (§IV-C): a hash h names bucket h & mask, or
// h & (2 * mask + 1) when that is below the split pointer. The metadata (mask, split,
// bucket count) is fixed during a kernel: HiveMap resizes between batches.
//
// Placement: a key goes to its first bucket b1 while b1 has room; only then to its
// second bucket b2 (setting b1's SPILL flag first), to a cuckoo eviction, or to the
// stash (setting b1's STASHED flag). So a lookup reads b1 and its metadata word, and
// reads b2 or the stash only when b1's flags say that something of b1 went there; a
// miss in a bucket without flags costs one bucket read. (The bulk lookup, find_alone,
// reads the word only after a miss in b1.)
//
// Concurrency (see detail/hive_bucket.cuh for the metadata word):
// - Inserting a new key into b1 takes no lock: the key is absent from the table when it
//   is absent from b1 (with no pending slot) and b1's flags are clear, as of the
//   metadata word `m` read before the bucket; the claim is a compare-and-swap of that
//   whole word (slot bit cleared, version advanced), so it succeeds only if nothing in
//   b1 changed since: two inserts of one key cannot both claim, and the later one finds
//   the key (or its pending slot) when it reads again.
// - An insert that cannot finish that way (b1 full or flagged) locks b1 from `m`. Every
//   insert of a key passes through a claim or the lock of its first bucket, so the lock
//   makes it unique: under it the insert waits for b1's pending slots, looks in b1, b2
//   and the stash, and then places the key with plain WABC claims (b1, then b2), an
//   eviction, or the stash.
// - Evictions hold the locks of both buckets of every key they move (each victim's
//   first bucket is one of them); lookups that cannot conclude a miss while b1 is
//   locked, or whose b1 changed while they looked, look again.
// - Replacing and deleting are compare-and-swaps on the slot word (packed), or on the
//   key word through BUSY_KEY (wide; see hive_slot.cuh, and `confirm` for the hits of
//   concurrent lookups).
// - The bulk kernels first run insert_alone / find_alone on every lane (one operation
//   per lane, the same protocol; see there) and leave the rest to the tile code.
#pragma once
#include <gpuds/hive/detail/hive_locate.cuh>

namespace gpuds {
namespace hive {

// What the out-of-line insert paths return: the step, the keys displaced and, for a
// replace, the old value. For packed tables one word: the step (bits 0..7), keys
// displaced (bits 8..31) and the old value (bits 32..63); for wide ones a struct.
template <bool WIDE, typename V>
struct outcome_of {
  using type = unsigned long long;
  __device__ __forceinline__ static type make(unsigned step, unsigned moves = 0, V old = 0) {
    return step | (static_cast<unsigned long long>(moves) << 8) | (static_cast<unsigned long long>(old) << 32);
  }
  __device__ __forceinline__ static unsigned step(type o) { return static_cast<unsigned>(o) & 0xffu; }
  __device__ __forceinline__ static unsigned moves(type o) { return static_cast<unsigned>(o >> 8) & 0xffffffu; }
  __device__ __forceinline__ static V old(type o) { return static_cast<V>(o >> 32); }
};
template <typename V>
struct outcome_of<true, V> {
  struct type {
    unsigned step;
    unsigned moves;
    V old;
  };
  __device__ __forceinline__ static type make(unsigned step, unsigned moves = 0, V old = 0) {
    return type{step, moves, old};
  }
  __device__ __forceinline__ static unsigned step(type o) { return o.step; }
  __device__ __forceinline__ static unsigned moves(type o) { return o.moves; }
  __device__ __forceinline__ static V old(type o) { return o.old; }
};

// The device ref of a HiveMap<K, V>: K, V are unsigned/unsigned (packed 8-byte slots),
// unsigned long long/unsigned or unsigned long long/unsigned long long (16-byte slots;
// detail/hive_slot.cuh). The fields and the lookups are hive_locate's; this adds the
// inserts (§IV-A) and has no field of its own, so its layout is hive_locate's.
template <typename K, typename V>
struct hive_ref : hive_locate<K, V> {
  using base = hive_locate<K, V>;
  using key_type = K;
  using value_type = V;
  using S = typename base::S;
  using word = typename base::word;
  using match = typename base::match;
  using seen_at = typename base::seen_at;
  using result = outcome_of<S::WIDE, V>;
  using outcome = typename result::type;
  using base::alternate;
  using base::bucket;
  using base::bucket_of;
  using base::eviction_bound;
  using base::first_of;
  using base::meta;
  using base::meta_of;
  using base::reserved;
  using base::retry_on_buckets;
  using base::settle;
  using base::stash_of;
  using base::status;

  // Insert or replace (§IV-A), in four steps. `m` is the word of k's first bucket b1 as
  // the caller read it (acquire) before. Returns the step it finished in (STEP_REPLACE
  // with the old value in `old`, STEP_CLAIM, STEP_EVICT, STEP_STASH) or STEP_FAILED
  // (stash full or retry cap; reported in the status word).
  //
  // The fast path is one coalesced read of b1, then either a compare-and-swap of the
  // matching word (replace) or of b1's metadata word (claim, see the top of this file)
  // and one store. Everything else is out of line (insert_locked, evict), so that the
  // fast path keeps few registers.
  __device__ unsigned insert_with(K k, V v, unsigned long long m, V& old, tally& t) const {
    if (reserved(k)) {
      status::report(status, status::RESERVED_KEY);
      return STEP_FAILED;
    }
    const word wd = S::pack(k, v);
    unsigned step = STEP_FAILED;  // also after RETRY_CAP attempts (retry_on_buckets)
    retry_on_buckets(k, m, [&](unsigned b1, unsigned b2, const bucket_meta& meta1, unsigned long long m) {
      match mt;
      const word w = lane_word<S, true>(bucket(b1));
      // Step 1: replace, lock-free (b2 only where b1 says something spilled).
      if (elect<S>(bucket(b1), w, tile::ballot(S::key_of(w) == k), mt) ||
          ((m & META_SPILL) != 0 && b2 != b1 && wcme<S, true>(bucket(b2), k, mt))) {
        unsigned done = 0;
        if (tile::rank() == 0) done = S::replace(mt.at, mt.word, wd);
        if (!tile::shfl(done, 0)) return false;
        settle(mt.word);
        old = S::value_of(mt.word);
        t.steps[0] += 1;
        step = STEP_REPLACE;
        return true;
      }
      if ((m & META_LOCK) != 0) return false;
      const unsigned free_bits = free_of(m);
      if ((m & (META_SPILL | META_STASHED)) == 0 && free_bits != 0) {
        // Step 2 in b1, lock-free: k is absent if b1 is as read.
        if (pending<S>(m, w) != 0) return false;
        const unsigned slot = rotated_first<S>(free_bits, preferred_part<S>(k));
        if (!meta1.claim_from(m, slot, out_flag<S>(slot, k))) return false;
        if (tile::rank() == 0) S::publish(slot_at<S>(bucket(b1), slot), wd);
        t.steps[1] += 1;
        t.len += 1;
        step = STEP_CLAIM;
        return true;
      }
      if (!meta1.lock_from(m)) return false;
      const outcome r = insert_locked(k, wd, b1, b2);
      meta1.unlock();
      step = result::step(r);
      t.moves += result::moves(r);
      if (step == STEP_FAILED) return true;  // reported by insert_locked: done, not applied
      t.steps[step - 1] += 1;
      if (step == STEP_REPLACE) {
        old = result::old(r);
      } else {
        t.len += 1;
      }
      return true;
    });
    return step;
  }

  __device__ unsigned insert(K k, V v, V& old, tally& t) const {
    if (reserved(k)) return insert_with(k, v, 0, old, t);
    return insert_with(k, v, meta_of(first_of(k)).observe(), old, t);
  }

  // Insert by one lane alone: the fast path of the bulk insert kernel, where every lane
  // of a warp has its own first bucket in flight. The lane loads b1's metadata word `m`
  // (acquire), then the whole bucket (relaxed 16-byte loads), and then:
  // - k in b1: replace with one compare-and-swap of that slot word (step 1);
  // - else, b1 unlocked, with no pending slot (claimed in `m` but read empty), no flag
  //   and a free slot: claim it with one compare-and-swap of b1's word from `m` (slot
  //   bit cleared, version advanced) and store the pair: one bucket read, one atomic and
  //   one store for a new key. This is the tile's lock-free claim (insert_with) done by
  //   one lane, and unique for the same reason: the word changes with every claim, lock,
  //   delete or eviction in b1 and never repeats, so the swap succeeds only if b1 is
  //   still as it was when `m` was read, and then k was absent from b1 (every slot
  //   claimed in `m` held its word when the bucket was read after `m`, and none held k)
  //   and, b1 being unflagged, from the whole table. Of two inserts of one key, the
  //   later swap fails;
  // - else, b1 unlocked and without pending slot, but full or SPILL-flagged (not
  //   STASHED): take b1's lock with a compare-and-swap from `m` (which thus also proves
  //   that k is absent from b1; when b1 is full, SPILL is set in the same swap, before
  //   the key can land in b2), look for k in b2 when SPILL was set before (replace),
  //   else claim a slot with WABC in b1, else (SPILL set first) in b2 with a claim
  //   validated by b2's word after b2's pending slots, and unlock: the
  //   tile's insert_locked for the cases that need no eviction and no stash;
  // - anything else (locked, pending, flagged STASHED, a lost swap, b1 and b2 both full)
  //   returns STEP_LEFTOVER having changed nothing but perhaps set b1's SPILL flag
  //   (harmless: it only makes lookups of b1's keys read b2 too), and the tile finishes
  //   the insert with insert_with from a fresh word.
  // Counts into the lane's own tally `t` (merge_lanes adds them to the tile's).
  __device__ __forceinline__ unsigned insert_alone(K k, V v, V& old, tally& t) const {
    const word wd = S::pack(k, v);
    const hash_pair h = hashes(k);
    const unsigned b1 = bucket_of(h.h1);
    unsigned long long* const m1 = meta + b1;
    unsigned long long m = mem::ld_acquire(m1);
    for (unsigned attempt = 0; attempt < ALONE_TRIES; ++attempt) {
      alone_scan<S> s = scan_alone<S, true, false>(bucket(b1), k);
      if (s.hit != SLOTS) {
        if (S::replace(slot_at<S>(bucket(b1), s.hit), s.word, wd)) {
          old = S::value_of(s.word);
          t.steps[0] += 1;
          return STEP_REPLACE;
        }
        m = mem::ld_acquire(m1);
        continue;
      }
      const unsigned free_bits = free_of(m);
      if ((m & META_STASHED) != 0) return STEP_LEFTOVER;
      if ((m & META_LOCK) != 0 || (((s.empty & ~free_bits) | s.busy) & ALL_FREE) != 0) {
        backoff(attempt);
        m = mem::ld_acquire(m1);
        continue;
      }
      if ((m & META_SPILL) == 0 && free_bits != 0) {
        // The first free slot in k's order (its preferred part first), OUT set in the
        // same swap where that is the other part.
        const unsigned slot = rotated_first<S>(free_bits, preferred_part<S>(k));
        // A failed swap returns the fresher word (with acquire semantics): read the
        // bucket again against it.
        const unsigned long long seen =
            mem::cas_acquire(m1, m, ((m & ~(1ull << slot)) | out_flag<S>(slot, k)) + META_VERSION);
        if (seen != m) {
          m = seen;
          continue;
        }
        S::publish(slot_at<S>(bucket(b1), slot), wd);
        t.steps[1] += 1;
        t.len += 1;
        return STEP_CLAIM;
      }
      const unsigned b2 = bucket_of(h.h2);
      if (free_bits == 0 && b2 == b1) return STEP_LEFTOVER;
      const unsigned long long spill = free_bits == 0 ? META_SPILL : 0ull;
      const unsigned long long seen = mem::cas_acquire(m1, m, (m | META_LOCK | spill) + META_VERSION);
      if (seen != m) {
        m = seen;
        continue;
      }
      const unsigned step = insert_alone_locked(wd, k, b1, b2, m, free_bits, old);
      unlock_after_atomics(m1);
      if (step == STEP_REPLACE) {
        t.steps[0] += 1;
      } else if (step == STEP_CLAIM || step == STEP_EVICT) {
        t.steps[step - 1] += 1;
        t.len += 1;
        t.moves += step == STEP_EVICT ? 1u : 0u;
      }
      return step;
    }
    return STEP_LEFTOVER;
  }

  // insert_alone for an insert the first kernel queued with both buckets full
  // (bulk::BOTH_FULL; wide slots' second kernel, wide_fill::queued): straight to the
  // direct move, without the read of b1 before the lock that insert_alone makes (it
  // could only find b1 full again) nor the two reads of b2 of insert_alone_locked. The
  // lane loads b1's word `m` (acquire), then reads b2's key words; where b1 is unlocked,
  // full and not STASHED, b2 != b1, and b2 full (no empty or BUSY_KEY word) without k,
  // it locks b1 from `m` (SPILL set in the same swap), reads b1's key words under the
  // lock and, where they are SLOTS keys none of which is k (no empty or BUSY_KEY word),
  // makes evict_alone's move from them. Returns STEP_REPLACE (k found in b2), STEP_EVICT,
  // or STEP_LEFTOVER having changed nothing but perhaps set b1's SPILL flag (b1 was full:
  // harmless, as in insert_alone); the caller then runs insert_alone. The tag is only a
  // hint: every condition is checked again here.
  //
  // Why the move is the only insert of k (concurrent inserts of this kernel included):
  // - k is absent from b1: b1's key words were read under b1's lock, all of them keys
  //   (so no slot is pending) and none k or BUSY_KEY (a key in the middle of a replace,
  //   perhaps k). While the lane holds the lock, k cannot enter b1: a lock-free claim
  //   needs a free bit (b1 full as of `m`, and in a kernel that only inserts a full
  //   bucket stays full: evictions swap keys), a replace needs k there, every other
  //   placement needs b1's lock.
  // - k is absent from b2: b2 was read after the acquire load of `m`, so it shows every
  //   key placed there by a holder of b1's lock that released it before `m`; no one held
  //   the lock at `m` (unlocked), and no one took it between `m` and the lane's swap from
  //   `m` (the swap would fail: every lock advances the version). In this kernel k
  //   enters b2 only under b1's lock (insert_alone_locked, insert_locked, evict), and the
  //   first kernel's lock-free fills ended before it. From the lock on, k neither enters
  //   b2 nor leaves it. (b2 read full also makes the move the right step: no room there.)
  // - k is not stashed: b1 not STASHED in `m`, and STASHED is set under b1's lock.
  // - any other insert of k either replaces a k it found (there is none until the move
  //   publishes k in b1) or passes through b1's lock after the lane's unlock, and then
  //   finds k in b1.
  // The move itself is evict_alone's (its preconditions: b1 locked by the lane, full,
  // SPILL set; b2 read full), including the busy-bit protocol of wide slots.
  // (Counts into the lane's tally here; the rest is out of line, like evict_alone, so
  // that the queued kernel's loop keeps few registers.)
  __device__ __forceinline__ unsigned insert_alone_full(K k, V v, V& old, tally& t) const {
    const unsigned step = move_alone_full(k, v, old);
    if (step == STEP_REPLACE) {
      t.steps[0] += 1;
    } else if (step == STEP_EVICT) {
      t.steps[STEP_EVICT - 1] += 1;
      t.len += 1;
      t.moves += 1;
    }
    return step;
  }
  __device__ __noinline__ unsigned move_alone_full(K k, V v, V& old) const {
    static_assert(S::WIDE, "move_alone_full compares key words: wide slots only");
    const hash_pair h = hashes(k);
    const unsigned b1 = bucket_of(h.h1);
    const unsigned b2 = bucket_of(h.h2);
    if (b2 == b1) return STEP_LEFTOVER;
    unsigned long long* const m1 = meta + b1;
    const unsigned long long m = mem::ld_acquire(m1);
    if ((m & (META_LOCK | META_STASHED)) != 0 || free_of(m) != 0) return STEP_LEFTOVER;
    const word wd = S::pack(k, v);
    alone_scan<S> s = scan_alone<S, true, false>(bucket(b2), k);
    if (s.hit != SLOTS) {
      // k in b2 (placed by an earlier batch or a duplicate in this one): replace,
      // lock-free as every replace.
      if (!S::replace(slot_at<S>(bucket(b2), s.hit), s.word, wd)) return STEP_LEFTOVER;
      old = S::value_of(s.word);
      return STEP_REPLACE;
    }
    if (((s.empty | s.busy) & ALL_FREE) != 0) return STEP_LEFTOVER;
    if (mem::cas_acquire(m1, m, (m | META_LOCK | META_SPILL) + META_VERSION) != m) return STEP_LEFTOVER;
    unsigned long long w[SLOTS];
    load_keys<S, true>(bucket(b1), w);
    bool all_keys = true;
#pragma unroll
    for (unsigned i = 0; i < SLOTS; ++i) {
      all_keys = all_keys && w[i] != S::EMPTY_KEY && w[i] != S::BUSY_KEY && stored_key(w[i]) != k;
    }
    // Unlocked as insert_alone unlocks after evict_alone (the same writes under the lock).
    const unsigned step = all_keys ? move_alone(wd, b1, w) : STEP_LEFTOVER;
    unlock_after_atomics(m1);
    return step;
  }

  // insert_alone with b1 locked by the lane from `m` (the caller unlocks).
  __device__ __noinline__ unsigned insert_alone_locked(word wd, K k, unsigned b1, unsigned b2,
                                                       unsigned long long m, unsigned free_bits, V& old) const {
    // Wide slots, b1 full (free_bits == 0): no scan of b2 here, the scan after the
    // acquire load of b2's word below decides alone. With b1 full nothing is claimed in
    // b1 between the two scans, so the first is only an earlier look at the same bucket,
    // whose outcomes the second reaches or resolves correctly on its own: b1 is locked by
    // this lane, so k cannot leave b2 (a move of k
    // needs b1's lock) and cannot enter it (every placement of k in b2 in this kernel is
    // under b1's lock; the lock-free fills of the first kernel ended before it), a k
    // there in the middle of a concurrent replace shows BUSY_KEY, which the second scan
    // leaves to the tile as the first did, and the second scan's miss, with b2's pending
    // slots ruled out and its claim swapped from that word, is what proves k absent from
    // b2 on either path. Where b1 has room the first scan stays: it must precede the
    // claim in b1. (Packed tables keep both scans: not measured.)
    if ((m & META_SPILL) != 0 && b2 != b1 && (!S::WIDE || free_bits != 0)) {
      alone_scan<S> s = scan_alone<S, true, false>(bucket(b2), k);
      if (s.hit != SLOTS) {
        if (!S::replace(slot_at<S>(bucket(b2), s.hit), s.word, wd)) return STEP_LEFTOVER;
        old = S::value_of(s.word);
        return STEP_REPLACE;
      }
      // A BUSY_KEY slot of b2 may be k in the middle of a replace.
      if (s.busy != 0) return STEP_LEFTOVER;
    }
    if (free_bits != 0) {
      const unsigned slot = claim_alone(meta + b1, free_bits, preferred_part<S>(k));
      if (slot < SLOTS) {
        note_out<S>(meta + b1, slot, k);
        put_alone<S>(slot_at<S>(bucket(b1), slot), wd);
        return STEP_CLAIM;
      }
      if (b2 == b1) return STEP_LEFTOVER;
      if ((m & META_SPILL) == 0) {
        // SPILL is set in b1's word: make it visible before the key can be seen in b2.
        meta_or(meta + b1, META_SPILL);
        mem::fence_acq_rel();
      }
    }
    // (Otherwise the lock's swap set SPILL, or it was set before; that swap returned.)
    // The bulk insert claims in b2 without b1's lock once b1 is full (validated by b2's
    // word), so this claim is validated the same way, after b2's pending slots.
    unsigned long long* const m2 = meta + b2;
    const unsigned long long seen = mem::ld_acquire(m2);
    alone_scan<S> s = scan_alone<S, true, false>(bucket(b2), k);
    if (s.hit != SLOTS) {
      if (!S::replace(slot_at<S>(bucket(b2), s.hit), s.word, wd)) return STEP_LEFTOVER;
      old = S::value_of(s.word);
      return STEP_REPLACE;
    }
    const unsigned free2 = free_of(seen);
    if ((((s.empty & ~free2) | s.busy) & ALL_FREE) != 0) return STEP_LEFTOVER;
    if (free2 != 0) {
      const unsigned slot = rotated_first<S>(free2, preferred_part<S>(k));
      const unsigned long long next = ((seen & ~(1ull << slot)) | out_flag<S>(slot, k)) + META_VERSION;
      if (mem::cas_acquire(m2, seen, next) != seen) return STEP_LEFTOVER;
      put_alone<S>(slot_at<S>(bucket(b2), slot), wd);
      return STEP_CLAIM;
    }
    return evict_alone(wd, b1);
  }

  // Step 3 by one lane, the direct move only (evict's first round): b1 is locked by the
  // lane and full with SPILL set (so its keys stay, only their values may be replaced),
  // and b2 was full. Reads b1's words and the metadata words of their other buckets at
  // once; for a victim whose other bucket (the target) has room and no lock, locks the
  // target from the word read, claims a slot there (WABC), swaps the new word into the
  // victim's slot (a compare-and-swap, so a victim replaced meanwhile is not lost: the
  // claimed slot is given back) and stores the victim in the target. As in evict, both
  // buckets of the moved key are locked during the move, a victim moving to its second
  // bucket has b1 as first bucket (SPILL set), and the new key lands in its first
  // bucket. Returns STEP_EVICT, or STEP_LEFTOVER with nothing changed (then the tile's
  // evict with random walks and the stash takes over).
  // Wide slots: the lane holds b1's key words (load_keys: each part's key words, as
  // many registers as a packed bucket's words); a BUSY_KEY slot is no victim (its key is
  // in the middle of a replace), and the swap is S::replace (the victim's key word to
  // BUSY_KEY, its value read under that ownership and carried to the target, k's pair
  // written and released), so a value replaced after the read moves with its key; while
  // the slot is BUSY_KEY, inserts of either key see a pending slot and read again.
  __device__ __noinline__ unsigned evict_alone(word wd, unsigned b1) const {
    unsigned long long w[SLOTS];
    load_keys<S, true>(bucket(b1), w);
    return move_alone(wd, b1, w);
  }

  // evict_alone's move from b1's words `w`, read by the lane under b1's lock.
  __device__ __forceinline__ unsigned move_alone(word wd, unsigned b1, const unsigned long long (&w)[SLOTS]) const {
    unsigned alt[SLOTS];
    unsigned long long am[SLOTS];
#pragma unroll
    for (unsigned i = 0; i < SLOTS; ++i) {
      // (The empty word of a packed slot and the empty key of a wide one are both all
      // ones.)
      const bool victim = w[i] != EMPTY && !(S::WIDE && w[i] == S::BUSY_KEY);
      alt[i] = victim ? alternate(stored_key(w[i]), b1) : b1;
      am[i] = alt[i] == b1 ? 0ull : mem::ld_relaxed(meta + alt[i]);
    }
    const unsigned start = static_cast<unsigned>(S::key_of(wd)) % SLOTS;
    for (unsigned c = 0; c < SLOTS; ++c) {
      const unsigned i = (start + c) % SLOTS;
      const unsigned target = alt[i];
      const unsigned long long mt = am[i];
      if (target == b1 || free_of(mt) == 0 || (mt & META_LOCK) != 0) continue;
      unsigned long long* const tm = meta + target;
      if (mem::cas_acquire(tm, mt, (mt | META_LOCK) + META_VERSION) != mt) continue;
      const unsigned slot = claim_alone(tm, free_of(mt), preferred_part<S>(stored_key(w[i])));
      bool swapped = false;
      if (slot < SLOTS) {
        const typename S::ptr at = slot_at<S>(bucket(b1), i);
        word victim = held_word(w[i]);
        swapped = S::replace(at, victim, wd);
        if (swapped) {
          note_out<S>(meta + b1, i, S::key_of(wd));
          note_out<S>(tm, slot, stored_key(w[i]));
          put_alone<S>(slot_at<S>(bucket(target), slot), victim);
        } else {
          mem::fetch_add_relaxed(tm, (1ull << slot) + META_VERSION);
        }
      }
      unlock_after_atomics(tm);
      if (swapped) return STEP_EVICT;
    }
    return STEP_LEFTOVER;
  }

  // The key in a bucket word a lane loaded whole (load_keys): a packed slot's word, or
  // a wide slot's key word.
  __device__ __forceinline__ static K stored_key(unsigned long long w) {
    if constexpr (S::WIDE) {
      return w;
    } else {
      return key_of(w);
    }
  }
  // The slot word such a loaded word stands for (wide: its key; the value is read by
  // S::replace under the slot's ownership).
  __device__ __forceinline__ static word held_word(unsigned long long w) {
    if constexpr (S::WIDE) {
      return S::pack(w, 0);
    } else {
      return w;
    }
  }

  // The slow path of an insert, with b1 locked by the caller (who unlocks it): waits for
  // b1's pending slots, looks for k everywhere b1's flags point to (replace), then
  // claims in b1, in b2 (b1's SPILL set first), or evicts. Returns an outcome. For wide
  // slots a BUSY_KEY slot in b2 or the stash may be k in the middle of a replace, so the
  // insert looks again rather than conclude that k is absent.
  __device__ __noinline__ outcome insert_locked(K k, word wd, unsigned b1, unsigned b2) const {
    const bucket_meta meta1 = meta_of(b1);
    for (unsigned attempt = 0; attempt < RETRY_CAP; ++attempt) {
      const unsigned long long m = meta1.observe();
      const word w = lane_word<S, true>(bucket(b1));
      if (pending<S>(m, w) != 0) {
        backoff(attempt);
        continue;
      }
      match mt;
      seen_at seen;
      if (elect<S>(bucket(b1), w, tile::ballot(S::key_of(w) == k), mt) ||
          this->template locate_beyond<true>(k, b1, b2, m, mt, S::WIDE ? &seen : nullptr)) {
        unsigned done = 0;
        if (tile::rank() == 0) done = S::replace(mt.at, mt.word, wd);
        if (tile::shfl(done, 0)) {
          settle(mt.word);
          return result::make(STEP_REPLACE, 0, S::value_of(mt.word));
        }
        continue;
      }
      if (S::WIDE && seen.busy) {
        backoff(attempt);
        continue;
      }
      if (claim_commit<S>(bucket(b1), meta1, wd)) return result::make(STEP_CLAIM);
      if (b2 != b1) {
        if ((m & META_SPILL) == 0) meta1.mark(META_SPILL);
        // The bulk insert claims in b2 without b1's lock once b1 is full (validated by
        // b2's word), so this claim waits for b2's pending slots, looks for k there and
        // is validated the same way.
        const bucket_meta meta2 = meta_of(b2);
        const unsigned long long m2 = meta2.observe();
        const word w2 = lane_word<S, true>(bucket(b2));
        if (pending<S>(m2, w2) != 0) {
          backoff(attempt);
          continue;
        }
        if (elect<S>(bucket(b2), w2, tile::ballot(S::key_of(w2) == k), mt)) {
          unsigned done = 0;
          if (tile::rank() == 0) done = S::replace(mt.at, mt.word, wd);
          if (tile::shfl(done, 0)) {
            settle(mt.word);
            return result::make(STEP_REPLACE, 0, S::value_of(mt.word));
          }
          continue;
        }
        const unsigned free2 = free_of(m2);
        if (free2 != 0) {
          const unsigned slot = rotated_first<S>(free2, preferred_part<S>(k));
          if (!meta2.claim_from(m2, slot, out_flag<S>(slot, k))) continue;
          if (tile::rank() == 0) S::publish(slot_at<S>(bucket(b2), slot), wd);
          return result::make(STEP_CLAIM);
        }
      }
      return evict(b1, wd);
    }
    status::report(status, status::RETRY_LIMIT);
    return result::make(STEP_FAILED);
  }

  // Places `hand` in bucket b with a WABC claim, flagging its first bucket first when b
  // is not it. The caller holds the locks of the hand's first bucket.
  __device__ __forceinline__ bool place(unsigned b, word hand) const {
    const unsigned slot = claim(meta_of(b), preferred_part<S>(S::key_of(hand)));
    if (slot == SLOTS) return false;
    const unsigned f = first_of(S::key_of(hand));
    if (f != b) meta_of(f).mark(META_SPILL);
    if (tile::rank() == 0) {
      note_out<S>(meta + b, slot, S::key_of(hand));
      S::publish(slot_at<S>(bucket(b), slot), hand);
    }
    return true;
  }

  // Step 3, bounded cuckoo eviction under bucket locks, and step 4, the stash. Called
  // with b1 locked (and left locked: the caller releases it) and both buckets of the new
  // key full as seen; releases every other lock it takes. Returns an outcome. A wide
  // slot that is BUSY_KEY is no victim (its writer owns it); a wide victim is swapped out
  // with the value its slot holds at the swap (S::replace reads it), so a value replaced
  // after the bucket was read moves with its key.
  //
  // Each round first retries the claim in the current bucket. Then every lane looks at
  // its slot's key and the free mask of that key's other bucket, so the tile sees all
  // SLOTS possible displacements at once. A victim whose other bucket has room moves
  // there directly (a slot is claimed there with WABC first, and given back if the
  // victim changed meanwhile) and the key in hand takes its slot: done. Only when no
  // victim has room does the chain take a random-walk step, displacing a victim into the
  // hand; such a step first claims a stash entry (stash.cuh), so that a chain that runs
  // out of rounds can always park the key in hand (both of whose buckets are locked); a
  // chain that places its hand gives the claim back. With every entry claimed, nothing is
  // displaced: the round is read again after a pause while some entries are only claimed
  // (by chains in flight), and the insert fails when they are all taken or the pauses
  // run out. Whenever a key lands outside
  // its first bucket, that bucket (locked by this chain) gets its flag first. A round in
  // which every victim tried was locked by another insert (or changed, or its target
  // filled up meanwhile), or in which some slot was pending, is read again after a
  // pause (at most EVICT_WAITS times per eviction) instead of ending the chain: a batch
  // that fills the table runs thousands of evictions at once, and parking each that
  // lost a race filled the stash.
  __device__ __noinline__ outcome evict(unsigned b1, word wd) const {
    const stash_ref<S> st = stash_of();
    bool claimed = false;  // whether a stash entry is claimed for the hand
    unsigned held[MAX_EVICTION_BOUND + 1];
    unsigned nheld = 1;
    held[0] = b1;
    word hand = wd;
    unsigned cur = b1;
    unsigned moves = 0;
    bool placed = false;
    const unsigned bound = eviction_bound < MAX_EVICTION_BOUND ? eviction_bound : MAX_EVICTION_BOUND;
    unsigned waits = 0;  // rounds read again after losing every try to concurrent inserts
    for (unsigned round = 0; round < bound && !placed;) {
      if ((round > 0 || waits > 0) && place(cur, hand)) {
        placed = true;
        break;
      }
      const word w = lane_word<S, true>(bucket(cur));
      const bool keyed = !S::is_empty(w) && !S::is_busy(w);
      // A slot that is empty or owned by a writer may be free soon (a pending claim or
      // delete, a replace between its two steps).
      bool contended = tile::any(!keyed);
      unsigned alt = cur;
      unsigned alt_free = 0;
      if (keyed) {
        alt = alternate(S::key_of(w), cur);
        if (alt != cur) alt_free = free_of(mem::ld_relaxed(meta_of(alt).word));
      }
      unsigned candidates = tile::ballot(keyed && alt != cur);
      unsigned roomy = tile::ballot(alt_free != 0);
      bool moved = false;
      bool stuck = false;
      // Start at a slot that changes with the round and the key, so walks wander (the
      // key's bits: a wide key folded, since keys may share their low word).
      const unsigned start = (round * 7u + waits * 3u + key_bits(S::key_of(hand))) % SLOTS;
      for (unsigned tries = 0; tries < VICTIM_TRIES && candidates != 0 && !moved && !placed; ++tries) {
        const bool direct = roomy != 0;
        const unsigned pool = direct ? roomy : candidates;
        const unsigned rotated = SLOTS == 32 ? ((pool >> start) | (pool << ((32u - start) & 31u)))
                                             : (((pool >> start) | (pool << (SLOTS - start))) & ALL_FREE);
        const unsigned slot = ((__ffs(rotated) - 1) + start) % SLOTS;
        candidates &= ~(1u << slot);
        roomy &= ~(1u << slot);
        word victim = S::template shfl<tile>(w, slot);
        const unsigned target = tile::shfl(alt, slot);
        bool mine = false;
        for (unsigned i = 0; i < nheld; ++i) mine |= held[i] == target;
        if (!mine && !meta_of(target).try_lock()) {
          contended = true;
          continue;
        }
        const unsigned fv = first_of(S::key_of(victim));
        const unsigned fh = first_of(S::key_of(hand));
        if (direct) {
          const unsigned tslot = claim(meta_of(target), preferred_part<S>(S::key_of(victim)));
          unsigned swapped = 0;
          if (tslot < SLOTS) {
            if (fv != target) meta_of(fv).mark(META_SPILL);
            if (fh != cur) meta_of(fh).mark(META_SPILL);
            if (tile::rank() == 0) {
              swapped = S::replace(slot_at<S>(bucket(cur), slot), victim, hand);
              if (swapped) {
                note_out<S>(meta + cur, slot, S::key_of(hand));
                note_out<S>(meta + target, tslot, S::key_of(victim));
                S::publish(slot_at<S>(bucket(target), tslot), victim);
              }
            }
            swapped = tile::shfl(swapped, 0);
            if (!swapped) meta_of(target).free_slot(tslot);
          }
          if (!mine) meta_of(target).unlock();
          if (swapped) {
            moves += 1;
            placed = true;
          } else {
            contended = true;  // the target filled up, or the victim changed
          }
          continue;
        }
        // A random-walk step: the victim comes into the hand.
        if (!claimed) claimed = st.reserve();
        if (!claimed) {
          if (!mine) meta_of(target).unlock();
          // With entries left, the claims are those of chains in flight, which give them
          // back or spend them soon: read the round again after a pause, as for a
          // locked victim. Otherwise the stash is full.
          contended = true;
          stuck = st.used() >= st.capacity;
          break;
        }
        if (fh != cur) meta_of(fh).mark(META_SPILL);
        unsigned swapped = 0;
        if (tile::rank() == 0) {
          swapped = S::replace(slot_at<S>(bucket(cur), slot), victim, hand);
          if (swapped) note_out<S>(meta + cur, slot, S::key_of(hand));
        }
        if (!tile::shfl(swapped, 0)) {
          if (!mine) meta_of(target).unlock();
          contended = true;
          continue;
        }
        settle(victim);
        if (!mine) held[nheld++] = target;
        moves += 1;
        hand = victim;
        cur = target;
        moved = true;
      }
      if (stuck || placed) break;
      if (!moved) {
        // Every victim tried was locked by, or changed under, a concurrent insert: under
        // a batch that fills the table that is the common case, not a full
        // neighbourhood, so read the bucket again after a pause rather than park the key
        // in the stash (only our own locks are held, and no lock is waited for).
        if (!contended || waits >= EVICT_WAITS) break;
        backoff(waits);
        waits += 1;
        continue;
      }
      round += 1;
    }
    unsigned step = STEP_EVICT;
    if (placed) {
      if (claimed) st.unreserve();
    } else {
      // Nothing displaced yet means the new key itself is in hand and may still need a
      // slot; a displaced victim always has an entry claimed.
      if (!claimed) claimed = st.reserve();
      if (claimed) {
        meta_of(first_of(S::key_of(hand))).mark(META_STASHED);
        st.publish(hand);
        step = STEP_STASH;
      } else {
        status::report(status, status::STASH_FULL);
        step = STEP_FAILED;
      }
    }
    for (unsigned i = nheld; i-- > 1;) meta_of(held[i]).unlock();
    return result::make(step, moves);
  }

};

}  // namespace hive
}  // namespace gpuds
