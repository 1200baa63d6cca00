// gpuds/hive/detail/fill_insert.cuh: the first kernel of HiveMap's bulk insert (buckets
// of 8 or 16 slots): per-lane fills of empty slots, without locks; what they cannot do is
// queued for the second kernel (detail/bulk_insert.cuh, whose comment says why fills are
// safe).
#pragma once
#include <gpuds/hive/detail/bulk_insert.cuh>

namespace gpuds {
namespace hive {
namespace fill {

using bulk::L_BUCKET1;
using bulk::packed_ref;
using bulk::L_BUCKET2;
using bulk::L_META1;
using bulk::RING;
using bulk::scan_words;
using bulk::WARPS;

constexpr unsigned TRIES = 8;  // reads of b1 before an insert is left to the second kernel

// Phases: what the lane's last issued step was.
constexpr unsigned IDLE = 0;     // no key
constexpr unsigned READ = 1;     // b1 and its word loaded
constexpr unsigned CHECK2 = 2;   // b1 SPILL-flagged with room: b2 loaded (k may be there)
constexpr unsigned READ2 = 3;    // b1 full without k: b2 loaded
constexpr unsigned FILL = 4;     // compare-and-swap of the empty slot `slot` of `cb` issued
constexpr unsigned REPLACE = 5;  // compare-and-swap of k's slot `slot` of `cb` from hit_word issued

// The first kernel's loop: each lane takes keys from its warp's ring (staged as in
// bulk::insert_lanes) and advances one insert a step per iteration (see the top of the
// bulk insert's comment), appending what it leaves to `queue` (see QUEUE_HEAD; the
// entries after it: the operation's index, with BOTH_FULL where b1 and b2 were full).
__device__ void insert_lanes(const packed_ref& t, const unsigned* keys, const unsigned* values, unsigned long long n,
                             unsigned* queue, tally& lane) {
  unsigned fills = 0, replaces = 0;  // the lane's inserts done here (steps 2 and 1)
  __shared__ unsigned ring_k[WARPS][RING], ring_v[WARPS][RING], ring_e[WARPS][RING];
  // The inserts left to the second kernel.
  __shared__ unsigned left_rows[WARPS][64];
  const unsigned wid = threadIdx.x / 32;
  bulk::leftovers left{left_rows[wid], queue};
  bulk::op_ring ops{{ring_k[wid], ring_v[wid], ring_e[wid]}, n, nullptr};
  // An entry is the operation's index (a part holds fewer than 2^31 operations).
  auto load = [&](unsigned long long at, unsigned& k, unsigned& v, unsigned& e) {
    k = keys[at];
    v = values[at];
    e = static_cast<unsigned>(at);
  };
  ops.start(load);
  unsigned index = 0;
  unsigned k = EMPTY_KEY, v = 0, b1 = 0, b2 = 0, cb = 0;
  unsigned phase = IDLE, tries = 0, slot = 0;
  unsigned long long mread = 0, r = 0, hit_word = 0;
  unsigned long long w[SLOTS];
#pragma unroll
  for (unsigned i = 0; i < SLOTS; ++i) w[i] = EMPTY;
  for (;;) {
    const bool busy = phase != IDLE;
    ops.stage(load);
    if (!__any_sync(warp::FULL_MASK, busy) && !ops.more()) break;
    unsigned tk = EMPTY_KEY, tv = 0, entry = 0;
    const bool take = ops.take(!busy, tk, tv, entry);

    // --- Consume the last step's results; decide the next step. ---------------------
    // The bucket a lane read last (if any), scanned once for every phase that reads one.
    unsigned seen_hit = SLOTS;
    const unsigned seen_empty = scan_words(w, k, seen_hit, hit_word);
    unsigned loads = 0;  // what to load this iteration (bulk's L_ flags)
    bool cas = false, park = false, set_spill = false, both = false;
    // The next step: a compare-and-swap of slot `at` of bucket `in`.
    auto step = [&](unsigned next, unsigned in, unsigned at) {
      phase = next;
      cb = in;
      slot = at;
      cas = true;
    };
    // Read b1 and its word again, or leave the insert to the second kernel.
    auto retry = [&]() {
      if (++tries >= TRIES) {
        park = true;
      } else {
        phase = READ;
        loads = L_META1 | L_BUCKET1;
      }
    };

    if (phase == IDLE) {
      if (take) {
        index = entry;
        k = tk;
        v = tv;
        if (k != EMPTY_KEY) {
          const hash_pair h = hashes(k);
          b1 = t.bucket_of(h.h1);
          b2 = t.bucket_of(h.h2);
          tries = 0;
          phase = READ;
          loads = L_META1 | L_BUCKET1;
        }
      }
    } else if (phase == READ) {
      const unsigned long long m = mread;
      if (seen_hit != SLOTS) {
        step(REPLACE, b1, seen_hit);
      } else if ((m & (META_STASHED | META_LOCK)) != 0) {
        park = true;
      } else if (seen_empty != 0) {
        slot = __ffs(seen_empty) - 1;
        if ((m & META_SPILL) != 0 && b2 != b1) {
          phase = CHECK2;  // k may have spilled to b2 in an earlier batch
          loads = L_BUCKET2;
        } else {
          step(FILL, b1, slot);
        }
      } else if (b2 == b1) {
        park = true;
      } else {
        // b1 holds SLOTS keys, none k, and in this kernel keeps them: k goes to b2,
        // b1 flagged first (the flag matters only to later kernels).
        set_spill = (m & META_SPILL) == 0;
        phase = READ2;
        loads = L_BUCKET2;
      }
    } else if (phase == CHECK2) {
      if (seen_hit != SLOTS) {
        step(REPLACE, b2, seen_hit);
      } else {
        step(FILL, b1, slot);  // the lowest slot read empty in b1
      }
    } else if (phase == READ2) {
      if (seen_hit != SLOTS) {
        step(REPLACE, b2, seen_hit);
      } else if (seen_empty != 0) {
        step(FILL, b2, __ffs(seen_empty) - 1);
      } else {
        park = true;  // both full: an eviction, in the second kernel
        both = true;
      }
    } else if (phase == FILL) {
      if (r == EMPTY) {
        // The pair is in; the slot's free bit follows (no one in this kernel reads it).
        meta_and(t.meta + cb, ~(1ull << slot));
        fills += 1;
        phase = IDLE;
      } else {
        retry();
      }
    } else {  // REPLACE
      if (r == hit_word) {
        replaces += 1;
        phase = IDLE;
      } else {
        retry();
      }
    }

    // --- Issue: loads, then the flag, then the compare-and-swap. ---------------------
    if (loads & L_META1) mread = mem::ld_relaxed(t.meta + b1);
    if (loads & (L_BUCKET1 | L_BUCKET2)) {
      const unsigned long long* const base = t.bucket((loads & L_BUCKET2) ? b2 : b1);
      // A key's first read of b1 is a plain load, through L1: the lane's eight 16-byte
      // loads then fetch each sector of the line from L2 once instead of twice. A stale
      // line is safe (see above: it shows slots empty that are not, whose fill then
      // fails, never a wrong key), but would fail again the same way, so every later
      // read bypasses L1.
      if (phase == READ && tries == 0) {
        load_bucket<false>(base, w);
      } else {
        load_bucket<true>(base, w);
      }
    }
    if (set_spill) meta_or(t.meta + b1, META_SPILL);
    if (cas) {
      r = mem::cas_relaxed(t.bucket(cb) + slot, phase == FILL ? EMPTY : hit_word, pack(k, v));
    }
    // --- Leave what cannot finish here to the second kernel (convergent). ------------
    left.add(park, index | (both ? bulk::BOTH_FULL : 0u));
    if (park) phase = IDLE;
  }
  left.flush();
  lane.steps[0] += replaces;
  lane.steps[1] += fills;
  lane.len += static_cast<int>(fills);
}

}  // namespace fill
}  // namespace hive
}  // namespace gpuds
