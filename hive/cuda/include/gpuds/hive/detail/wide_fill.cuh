// gpuds/hive/detail/wide_fill.cuh: the bulk insert of HiveMap tables of wide slots (u64
// keys; buckets of 8 or 16 slots), in two kernels like the packed one
// (detail/bulk_insert.cuh says why fills are safe): per-lane fills first, then the tile
// code for what the fills left.
//
// The first kernel (hive_insert, insert_states below) runs one insert per lane at a time,
// each lane taking its next pair from its warp's ring as soon as its insert is done. The
// lane reads b1's key words (through L1 the first time: a stale line shows slots empty that are not, whose
// fill then fails, never a wrong key) and b1's metadata word (for its flags only), then:
// - k in b1 (or, where b1 has SPILL, in b2): one store of the value into k's slot;
// - else an empty slot in b1: a compare-and-swap of the first empty slot's key word (in
//   k's order: from k's preferred part on, hive_bucket.cuh's rotated_first) from
//   EMPTY_KEY to k, then a store of the value and an atomic and of the slot's free bit
//   (no one in this kernel waits for either);
// - else (b1 full) the same in b2, b1's SPILL set first;
// - a lost swap uses the key word it returned (see the FILL phase): k itself finishes as a
//   replace, another key sends the lane to the next empty slot of the mask it read; only
//   when the mask is used up does it read again (relaxed, at L2); what is left after
//   TRIES reads, or finds b1 locked or STASHED, b1 and b2 full (tagged bulk::BOTH_FULL),
//   or a reserved key, is gathered per warp and goes to the queue (bulk::QUEUE_HEAD), 32
//   entries per atomic, whose inserts the second kernel (hive_insert_queued) runs through
//   insert_alone (a BOTH_FULL entry through insert_alone_full first: straight to the
//   direct move) and the tile code (locks, evictions, the stash) once the first has
//   ended.
// The common case, a new key with room in b1, is one bucket read, one compare-and-swap
// and two stores, with no fence, as the packed fill (one compare-and-swap of the whole
// pair there).
//
// Why the two-step protocol of detail/hive_slot.cuh is not needed here: in this kernel
// every write of a key word is such a fill (EMPTY_KEY to its final key), nothing empties
// a slot and nothing moves a key, so the packed fill's argument holds for key words (two
// fills of one key into a bucket cannot both succeed: the later one chose the first
// slot, in k's order, that it read empty and no lost swap returned full, so it saw the
// other's slot full, with k; every fill of k takes slots in the same order (from k's
// preferred part on), which is all the argument needs of "first"; the FILL phase's
// argument below has the details; a fill into b2 follows a
// read of b1 full without k, and b1 stays full). No one in this kernel reads a value
// word, so a key published before its value is seen by no reader: a replace of k (a
// second pair of k in the batch) stores its value without looking at the old one, and
// whichever store lands last wins, as for any two pairs of one key in a batch. The
// kernel boundary makes every key, value and free bit visible before anything reads
// them (the second kernel, later lookups).
//
// Two-part buckets (u64 values, 16 slots; hive_slot.cuh): READ loads only k's preferred
// part of b1 (its 8 key words, asking L2 for the part's line) and the word. Where the part holds
// k, or has room and the word's OUT flag of that part is clear, that decides: no key
// preferring the part sits in the other one (every placement outside its preferred part
// sets OUT, and the placements before this kernel are visible; in this kernel a fill
// leaves the part only after reading it full, and a full part stays full, so a fill of k
// into the part's room that raced with one into the other part fails its swap and reads
// again). Otherwise the lane loads the other part too (one more round trip, for about
// one insert in ten at load 0.8) and goes on as with the whole bucket. A fill outside
// its preferred part sets OUT after its swap (the readers that use it run in later
// kernels). w holds the key words in k's order (w[i] is slot i ^ 8 * part), so the
// masks are in k's order as well.
#pragma once
#include <gpuds/hive/detail/batch_loop.cuh>
#include <gpuds/hive/detail/bulk_insert.cuh>

namespace gpuds {
namespace hive {
namespace wide_fill {

constexpr unsigned TRIES = 8;  // reads of b1 before an insert is left to the second kernel

// A warp's batch pairs of the state machine below (insert_states), as bulk::op_ring for
// packed tables but with wide keys and values: chunk c holds operations
// (gw + c * nw) * 32 + lane, each chunk loaded coalesced one chunk ahead and staged in
// the warp's ring (bulk::ring_staging); idle lanes take them in order (k is all ones past the
// end of the batch).
template <typename K, typename V>
struct wide_ring : bulk::ring_staging<K, V> {
  const K* keys;
  const V* values;
  unsigned long long n;
  unsigned gw = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  unsigned nw = gridDim.x * blockDim.x / 32;
  unsigned long long base = 0;  // the first operation of the chunk in flight
  K pk = ~K(0);
  V pv = 0;

  __device__ void load() {
    const unsigned long long at = base + this->lid;
    pk = ~K(0);
    if (at < n) {
      pk = keys[at];
      pv = values[at];
    }
  }
  __device__ void start() {
    base = static_cast<unsigned long long>(gw) * 32;
    load();
  }
  // Stages the chunk in flight when the ring has room for it, and loads the next.
  __device__ void stage() {
    if (this->room() && base < n) {
      this->push(pk, pv, static_cast<unsigned>(base + this->lid));
      base = (static_cast<unsigned long long>(this->fetched) * nw + gw) * 32;
      load();
      __syncwarp();
    }
  }
};

// Phases of insert_states: what the lane's last issued step was.
constexpr unsigned IDLE = 0;    // no key
constexpr unsigned READ = 1;    // b1's key words and metadata word loaded
constexpr unsigned CHECK2 = 2;  // b1 SPILL-flagged with room: b2's key words loaded (k may be there)
constexpr unsigned READ2 = 3;   // b1 full without k: b2's key words loaded
constexpr unsigned FILL = 4;    // compare-and-swap of slot `slot` of `cb`'s key words from EMPTY_KEY to k issued

// The first kernel as a per-lane state machine (the wide form of fill::insert_lanes):
// each lane takes keys from its warp's ring (wide_ring) and advances its own insert one
// step per iteration, so a warp no longer waits for its slowest lane before taking new
// keys. An iteration consumes what the lane's last step returned (the bucket's key words
// it loaded, or its compare-and-swap's old key word), decides the next step and issues
// it. The steps and their correctness (top of this file, and the lost swap's argument
// above):
// - READ: k in b1 -> store the value into k's slot (a replace, done); b1 locked or
//   STASHED -> queue; two parts, only the preferred part read, and k may be in the
//   other one (OUT) or the part is full -> READ again with the other part loaded; room
//   in b1 -> FILL at its first empty slot (in k's order), after CHECK2 (b2 read for k)
//   where b1 has SPILL; b1 full -> READ2 (b2 read), SPILL set on b1 first.
// - CHECK2: k in b2 -> store the value there; else FILL in b1 (the mask read in READ).
// - READ2: k in b2 -> store the value; room -> FILL in b2; else queue (BOTH_FULL).
// - FILL: the swap returned EMPTY_KEY -> store the value, clear the free bit (done); it
//   returned k -> store the value (a replace, done); another key -> FILL at the next
//   empty slot of the mask (that slot holds that key for good: the argument above);
//   mask used up -> READ again (a try; TRIES reads, then queue).
// Nothing else changes: every key word written here goes from EMPTY_KEY to its final key
// by one compare-and-swap, values are stored (relaxed) only by the lane whose swap put k
// there or that saw k there, and no one in this kernel reads a value word; so the
// argument at the top of this file holds step by step, whatever the interleaving of the
// lanes' steps (it never assumed one insert ran to its end before another began).
// Queue entries are gathered per warp and appended 32 per atomic, as in
// fill::insert_lanes.
template <typename Ref>
__device__ void insert_states(const Ref& t, const typename Ref::key_type* keys,
                              const typename Ref::value_type* values, unsigned long long n, unsigned* queue,
                              tally& lane) {
  using S = typename Ref::S;
  using K = typename Ref::key_type;
  using V = typename Ref::value_type;
  unsigned fills = 0, replaces = 0;
  __shared__ K ring_k[bulk::WARPS][bulk::RING];
  __shared__ V ring_v[bulk::WARPS][bulk::RING];
  __shared__ unsigned ring_e[bulk::WARPS][bulk::RING];
  __shared__ unsigned left_rows[bulk::WARPS][64];
  const unsigned wid = threadIdx.x / 32;
  bulk::leftovers left{left_rows[wid], queue};
  wide_ring<K, V> ops{{ring_k[wid], ring_v[wid], ring_e[wid]}, keys, values, n};
  ops.start();
  unsigned index = 0;
  K k = S::EMPTY_KEY;
  V v = 0;
  unsigned b1 = 0, b2 = 0, cb = 0;
  unsigned phase = IDLE, tries = 0, slot = 0, mask = 0, mask1 = 0, pref = 0;
  // Two-part buckets: w[i] is the key word of slot i ^ flip (flip: 8 times k's preferred
  // part), so masks over w are in k's order; `half`: only k's preferred part was read
  // (w[0..7]). One part: flip is 0 and half false.
  constexpr bool TWO = parts<S>() == 2;
  const auto flip = [&]() { return TWO ? pref * (SLOTS / 2) : 0u; };
  bool half = false;
  unsigned long long mread = 0;
  K r = S::EMPTY_KEY;
  unsigned long long w[SLOTS];  // the key words of the bucket read last
#pragma unroll
  for (unsigned i = 0; i < SLOTS; ++i) w[i] = S::EMPTY_KEY;
  for (;;) {
    const bool busy = phase != IDLE;
    ops.stage();
    if (!__any_sync(warp::FULL_MASK, busy) && !ops.more()) break;
    K tk = S::EMPTY_KEY;
    V tv = 0;
    unsigned entry = 0;
    const bool take = ops.take(!busy, tk, tv, entry);

    // --- Consume the last step's results; decide the next step. ---------------------
    // The bucket a lane read last, scanned once for every phase (only READ, CHECK2 and
    // READ2 use it, and each follows a step that loaded the bucket).
    unsigned seen_empty = 0, seen_hit = SLOTS;
#pragma unroll
    for (unsigned i = SLOTS; i-- > 0;) {
      if (w[i] == S::EMPTY_KEY) seen_empty |= 1u << i;
      if (w[i] == k) seen_hit = i;
    }
    if (TWO && half) {
      seen_empty &= (1u << (SLOTS / 2)) - 1u;
      if (seen_hit >= SLOTS / 2) seen_hit = SLOTS;
    }
    bool load1 = false, load2 = false, load_other = false, cas = false, park = false, set_spill = false,
         both = false;
    // A store of the value into slot `at` of bucket `in` (k is there: done).
    bool put = false;
    unsigned put_b = 0, put_slot = 0;
    auto done_at = [&](unsigned in, unsigned at) {
      put = true;
      put_b = in;
      put_slot = at;
      phase = IDLE;
    };
    // (`at`, `empty` and `slot` count in k's order: slot i of the bucket is i ^ flip.)
    auto fill = [&](unsigned in, unsigned empty) {
      phase = FILL;
      cb = in;
      mask = empty;
      slot = __ffs(empty) - 1;
      cas = true;
    };
    auto retry = [&]() {
      if (++tries >= TRIES) {
        park = true;
      } else {
        phase = READ;
        load1 = true;
      }
    };

    if (phase == IDLE) {
      // Entries past the end of the batch are staged with their index (>= n, below
      // n + 32): skipped by it, not by the key, so a reserved key (which the host rejects
      // before the launch) still reaches the tile code, which reports it.
      if (take && entry < n) {
        index = entry;
        k = tk;
        v = tv;
        if (Ref::reserved(k)) {
          park = true;  // the tile code reports it
        } else {
          const hash_pair h = hashes(k);
          b1 = t.bucket_of(h.h1);
          b2 = t.bucket_of(h.h2);
          pref = preferred_part<S>(k);
          tries = 0;
          phase = READ;
          load1 = true;
        }
      }
    } else if (phase == READ) {
      const unsigned long long m = mread;
      if (seen_hit != SLOTS) {
        replaces += 1;
        done_at(b1, seen_hit);
      } else if ((m & (META_STASHED | META_LOCK)) != 0) {
        park = true;
      } else if (TWO && half && ((m & (META_OUT << pref)) != 0 || seen_empty == 0)) {
        // Only k's preferred part was read, and it does not settle the insert: k may be
        // in the other part (OUT set), or the room is there (the part is full).
        load_other = true;
      } else if (seen_empty != 0) {
        // (Read half: the preferred part has room and OUT is clear, so no key that
        // prefers it, k included, sits in the other part: the part alone decides.)
        if ((m & META_SPILL) != 0 && b2 != b1) {
          mask1 = seen_empty;
          phase = CHECK2;  // k may have spilled to b2 in an earlier batch
          load2 = true;
        } else {
          fill(b1, seen_empty);
        }
      } else if (b2 == b1) {
        park = true;
      } else {
        // b1 holds SLOTS keys, none k, and keeps them in this kernel: k goes to b2.
        set_spill = (m & META_SPILL) == 0;
        phase = READ2;
        load2 = true;
      }
    } else if (phase == CHECK2) {
      if (seen_hit != SLOTS) {
        replaces += 1;
        done_at(b2, seen_hit);
      } else {
        fill(b1, mask1);  // the slots read empty in b1
      }
    } else if (phase == READ2) {
      if (seen_hit != SLOTS) {
        replaces += 1;
        done_at(b2, seen_hit);
      } else if (seen_empty != 0) {
        fill(b2, seen_empty);
      } else {
        park = true;  // both full: an eviction, in the second kernel
        both = true;
      }
    } else {  // FILL
      if (r == S::EMPTY_KEY) {
        // k is in; its value and the slot's free bit follow (no one here reads either),
        // and outside its preferred part the OUT flag (read by later kernels only).
        meta_and(t.meta + cb, ~(1ull << (slot ^ flip())));
        if (TWO && slot >= SLOTS / 2) meta_or(t.meta + cb, META_OUT << pref);
        fills += 1;
        done_at(cb, slot);
      } else if (r == k) {
        replaces += 1;  // a pair of k filled it first (the lost swap's argument)
        done_at(cb, slot);
      } else {
        mask &= ~(1u << slot);  // slot holds another key for good
        if (mask != 0) {
          fill(cb, mask);
        } else {
          retry();
        }
      }
    }

    // --- Issue: the value store, loads, the flag, then the compare-and-swap. --------
    if (put) mem::st_relaxed(slot_at<S>(t.bucket(put_b), put_slot ^ flip()).value, v);
    if (load1) mread = mem::ld_relaxed(t.meta + b1);
    if (load1 || load2 || load_other) {
      const unsigned long long* const base = t.bucket(load2 ? b2 : b1);
      // A key's first read of b1 goes through L1 (see the top of this file: a stale line
      // only shows filled slots empty); every later read bypasses it.
      const bool through_l1 = load1 && tries == 0;
      if constexpr (TWO) {
        // b1: k's preferred part first (half), the other part where that does not
        // settle it; b2: both.
        if (!load_other) {
          if (through_l1) {
            load_part_keys<S, false, 0>(base, w, flip());
          } else {
            load_part_keys<S, true, 0>(base, w, flip());
          }
        }
        if (!load1) load_part_keys<S, true, SLOTS / 2>(base, w, flip());
        half = load1;
      } else if (through_l1) {
        load_keys<S, false>(base, w);
      } else {
        load_keys<S, true>(base, w);
      }
    }
    if (set_spill) meta_or(t.meta + b1, META_SPILL);
    if (cas) r = mem::cas_relaxed(slot_at<S>(t.bucket(cb), slot ^ flip()).key, S::EMPTY_KEY, k);

    // --- Leave what cannot finish here to the second kernel (convergent). ------------
    left.add(park, index | (both ? bulk::BOTH_FULL : 0u));
    if (park) phase = IDLE;
  }
  left.flush();
  lane.steps[0] += replaces;
  lane.steps[1] += fills;
  lane.len += static_cast<int>(fills);
}

// The second kernel: the queued inserts (entries: the operation's index in the part, and
// bulk::BOTH_FULL; operation offset + entry of the batch), a tile's chunk at a time: each
// lane alone first (an entry tagged BOTH_FULL through insert_alone_full, straight to the
// direct move, and through insert_alone where that leaves it; the others through
// insert_alone), then the tile code (insert_with) for what the lanes left, as insert_ops.
template <typename Ref>
__device__ void queued(const Ref& t, const typename Ref::key_type* keys, const typename Ref::value_type* values,
                       const unsigned* queue, unsigned long long offset, tally& lane, tally& counts) {
  using S = typename Ref::S;
  const unsigned long long n = queue[0];
  for_each_op(n, [&](unsigned long long base) {
    const unsigned count = ops_in_chunk(base, n);
    const unsigned r = tile::rank();
    const bool mine = r < count;
    const unsigned entry = mine ? queue[bulk::QUEUE_HEAD + base + r] : 0u;
    const unsigned e = entry & ~bulk::BOTH_FULL;
    const typename Ref::key_type k = mine ? keys[e] : S::EMPTY_KEY;
    const typename Ref::value_type v = mine ? values[e] : typename Ref::value_type(0);
    const unsigned long long index = offset + e;
    typename Ref::value_type old = 0;
    unsigned step = STEP_LEFTOVER;
    if (mine && !Ref::reserved(k) && (entry & bulk::BOTH_FULL) != 0) step = t.insert_alone_full(k, v, old, lane);
    // What the direct move left, and every other entry: insert_alone, then the tile code.
    insert_ops(t, mine && step == STEP_LEFTOVER, k, v, index, lane, counts);
  });
}

}  // namespace wide_fill
}  // namespace hive
}  // namespace gpuds
