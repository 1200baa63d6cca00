// HiveMap's batch kernels: thin loops over gpuds::hive::hive_ref (gpuds/hive/hive_ref.cuh).
//
// Each tile of HIVE_SLOTS lanes takes HIVE_SLOTS operations at a time (grid-stride):
// lane r loads operation r of the chunk (coalesced). Bulk lookups (and bulk inserts into
// 32-slot buckets) first let every lane carry out its own operation alone (hive_ref's
// find_alone, insert_alone: each lane reads its own bucket with 16-byte loads, so a warp
// has 32 buckets in flight), and the tile finishes the operations left over together.
// Bulk inserts into buckets of 8 or 16 slots run in two kernels of their own (per-lane
// fills, then a per-lane state machine: detail/fill_insert.cuh and detail/bulk_insert.cuh).
// Erase, the mixed batch and stash reinsertion load the metadata word of each lane's key's
// first bucket (one gather for the chunk) and run the chunk's operations one after the
// other with the operands broadcast through the tile code (detail/batch_loop.cuh). Lane r
// writes result r (coalesced).
//
// Tables of wide slots (u64 keys) with buckets of 8 or 16 slots insert in two kernels
// too: per-lane fills of key words (detail/wide_fill.cuh: a per-lane state machine,
// wide_fill::insert_states), then a per-lane state machine for the inserts the fills
// left (detail/wide_queued.cuh: the direct move of those with both buckets full, the
// lock-free claim or replace in b1 of the others; with HIVE_WIDE_QUEUED_ALONE defined,
// insert_alone per lane instead: wide_fill::queued), the rest through insert_alone and
// the tile code.
//
// Defines: HIVE_SLOTS (8, 16, 32), HIVE_HASH (0..3), KEY_T and VALUE_T (unsigned int and
// unsigned int, or unsigned long long and unsigned int or unsigned long long), and
// KERNEL_SUFFIX (u32_u32, u64_u32, u64_u64), stamped into every kernel's name.
#include <gpuds/core/kernel_name.cuh>
#include <gpuds/hive/detail/batch_loop.cuh>
#include <gpuds/hive/detail/fill_insert.cuh>
#include <gpuds/hive/detail/wide_fill.cuh>
#include <gpuds/hive/detail/wide_queued.cuh>
#include <gpuds/hive/hive_ref.cuh>

using namespace gpuds;
using namespace gpuds::hive;

using K = KEY_T;
using V = VALUE_T;
using ref_t = hive_ref<K, V>;
using S = ref_t::S;
using word = ref_t::word;
// Whether bulk inserts run the two per-lane kernels (fill, then the queued ones).
constexpr bool PER_LANE_INSERT = SLOTS <= 16;

// Every kernel runs in blocks of 256 threads (HiveMap's BLOCK). The update kernels carry
// the out-of-line slow paths (insert_locked, evict), whose registers would otherwise set
// the kernel's register count (82: three blocks per SM); the bound keeps six blocks per
// SM resident, the slow paths saving what they need around their calls.
#define HIVE_UPDATE_BOUNDS __launch_bounds__(256, 6)
// The state machine of the second insert kernel holds a whole bucket per lane (16 words
// for 16 slots) and the direct move's candidates: two blocks per SM leave it 128
// registers (it uses 116). Measured: two blocks insert faster than three (80 registers,
// with spills) or four. The wide state machine (wide_queued.cuh) fits the same bound:
// 122 registers (u64/u32) and 126 (u64/u64), no spills (NVRTC 13.0, sm_90, 16 slots).
#define HIVE_INSERT_BOUNDS __launch_bounds__(256, 2)
// The first insert kernel (per-lane fills, buckets of up to 16 slots) needs
// fewer: three blocks per SM. Otherwise it runs the tile code, bounded like the second.
#define HIVE_FILL_BOUNDS __launch_bounds__(256, PER_LANE_INSERT ? 3 : 2)

// The per-lane insert kernels' bodies (fill_insert.cuh, bulk_insert.cuh) where they
// apply; templates, so that a table of wide slots never instantiates them.
template <typename Ref>
__device__ __forceinline__ void fill_lanes(const Ref& t, const typename Ref::key_type* keys,
                                           const typename Ref::value_type* values, unsigned long long n,
                                           unsigned* queue, tally& lane) {
  if constexpr (!Ref::S::WIDE && SLOTS <= 16) fill::insert_lanes(t, keys, values, n, queue, lane);
  if constexpr (Ref::S::WIDE && SLOTS <= 16) wide_fill::insert_states(t, keys, values, n, queue, lane);
}
template <typename Ref>
__device__ __forceinline__ void queued_lanes(const Ref& t, const typename Ref::key_type* keys,
                                             const typename Ref::value_type* values, unsigned* queue,
                                             unsigned long long offset, tally& lane, tally& counts) {
  if constexpr (!Ref::S::WIDE && SLOTS <= 16) bulk::insert_lanes(t, keys, values, queue, offset, lane, counts);
#ifdef HIVE_WIDE_QUEUED_ALONE
  // Each lane runs insert_alone_full / insert_alone to its end, kept for comparison.
  if constexpr (Ref::S::WIDE && SLOTS <= 16) wide_fill::queued(t, keys, values, queue, offset, lane, counts);
#else
  // The per-lane state machine (detail/wide_queued.cuh; 1.36-1.40x the inserts of the
  // path above on the H200, docs/hive.md).
  if constexpr (Ref::S::WIDE && SLOTS <= 16) wide_queued::insert_lanes(t, keys, values, queue, offset, lane, counts);
#endif
}

// Empties slot `slot` of the table (counted over all buckets), every word of it all ones.
template <typename Ref>
__device__ __forceinline__ void empty_slot(const Ref& t, unsigned long long slot) {
  using Slot = typename Ref::S;
  if constexpr (Slot::WIDE) {
    Slot::store(slot_at<Slot>(t.bucket(static_cast<unsigned>(slot / SLOTS)), static_cast<unsigned>(slot % SLOTS)),
                Slot::EMPTY_WORD);
  } else {
    t.slots[slot] = Slot::EMPTY_WORD;
  }
}

// Slot r of the bucket that starts at `bucket`, read or written with plain accesses (the
// resize kernels, with no other writer): both words of a wide slot.
template <typename Ref>
__device__ __forceinline__ typename Ref::word slot_word(const Ref&, unsigned long long* bucket, unsigned r) {
  using Slot = typename Ref::S;
  if constexpr (Slot::WIDE) {
    return Slot::template load<false>(slot_at<Slot>(bucket, r));
  } else {
    return bucket[r];
  }
}
template <typename Ref>
__device__ __forceinline__ void set_slot(const Ref&, unsigned long long* bucket, unsigned r, typename Ref::word w) {
  using Slot = typename Ref::S;
  if constexpr (Slot::WIDE) {
    Slot::store(slot_at<Slot>(bucket, r), w);
  } else {
    bucket[r] = w;
  }
}

// The OUT flags (two-part buckets) that the tile's placements need, each lane placing
// `w` in slot `slot` where `places`; 0 for buckets of one part.
__device__ __forceinline__ unsigned long long out_flags_of(bool places, unsigned slot, word w) {
  if constexpr (parts<S>() == 2) {
    const unsigned long long out = places ? out_flag<S>(slot, S::key_of(w)) : 0ull;
    return (tile::any((out & META_OUT) != 0) ? META_OUT : 0ull) |
           (tile::any((out & (META_OUT << 1)) != 0) ? META_OUT << 1 : 0ull);
  } else {
    (void)places;
    (void)slot;
    (void)w;
    return 0ull;
  }
}

// Sets buckets [from, to) to empty, unlocked, all slots free.
extern "C" __global__ void GPUDS_KERNEL(hive_init)(ref_t t, unsigned from, unsigned to) {
  const unsigned long long total = static_cast<unsigned long long>(to - from) * SLOTS;
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
    const unsigned long long slot = static_cast<unsigned long long>(from) * SLOTS + i;
    empty_slot(t, slot);
    if (slot % SLOTS == 0) t.meta[slot / SLOTS] = ALL_FREE;
  }
}

// Writes the smallest index of a reserved key into *first (initialized to n by the host).
extern "C" __global__ void GPUDS_KERNEL(hive_first_reserved)(const K* keys, unsigned long long n, unsigned long long* first) {
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    if (ref_t::reserved(keys[i])) atomicMin(first, i);
  }
}

// Inserts or replaces (keys[i], values[i]). With buckets of up to 16 slots, the first of
// two kernels: the per-lane fills of fill::insert_lanes (packed slots) or
// wide_fill::insert_states (wide slots), which append the index
// of every insert they leave to `queue` (bulk::QUEUE_HEAD; counters zeroed by the host,
// room for n); hive_insert_queued runs those after it. Otherwise lane r takes operation r
// of its tile's chunk alone first (insert_alone: its own bucket read, one atomic, one
// store); the operations it leaves go through the tile's insert_with one after the other.
extern "C" __global__ void HIVE_FILL_BOUNDS GPUDS_KERNEL(hive_insert)(ref_t t, const K* keys, const V* values,
                                                                        unsigned long long n, unsigned* queue) {
  tally counts;
  tally lane;
  if (PER_LANE_INSERT) {
    fill_lanes(t, keys, values, n, queue, lane);
  } else {
    for_each_op(n, [&](unsigned long long base) {
      const unsigned count = ops_in_chunk(base, n);
      const unsigned r = tile::rank();
      const bool mine = r < count;
      const K my_key = mine ? keys[base + r] : S::EMPTY_KEY;
      const V my_value = mine ? values[base + r] : V(0);
      insert_ops(t, mine, my_key, my_value, base + r, lane, counts);
    });
  }
  merge_lanes(lane, counts);
  t.flush(counts);
}

// The second kernel of a bulk insert (buckets of up to 16 slots): the inserts queued by
// hive_insert, through the state machine of bulk::insert_lanes (packed slots: locks,
// direct moves, and the tile code for what it parks) or wide_queued::insert_lanes (wide
// slots: the direct move, claim and replace as a state machine, insert_alone and the
// tile code for what it parks), with no fill of the first kernel running beside it.
// (Tables without per-lane inserts never launch it.)
extern "C" __global__ void HIVE_INSERT_BOUNDS GPUDS_KERNEL(hive_insert_queued)(ref_t t, const K* keys, const V* values,
                                                                               unsigned* queue, unsigned long long offset) {
  tally counts;
  tally lane;
  queued_lanes(t, keys, values, queue, offset, lane, counts);
  merge_lanes(lane, counts);
  t.flush(counts);
}

// Reinserts drained stash words (empty words are skipped); the pairs are already
// counted in the length, so the count is not changed.
extern "C" __global__ void HIVE_UPDATE_BOUNDS GPUDS_KERNEL(hive_reinsert)(ref_t t, const word* words, unsigned long long n) {
  tally counts;
  for_each_op(n, [&](unsigned long long base) {
    const unsigned count = ops_in_chunk(base, n);
    const unsigned r = tile::rank();
    const word mine = r < count ? words[base + r] : S::EMPTY_WORD;
    const unsigned long long my_meta = t.first_meta<true>(S::key_of(mine));
    for (unsigned j = 0; j < count; ++j) {
      const word w = S::template shfl<tile>(mine, j);
      const unsigned long long m = tile::shfl(my_meta, j);
      if (S::is_empty(w)) continue;
      V old = 0;
      if (t.insert_with(S::key_of(w), S::value_of(w), m, old, counts) == STEP_FAILED) t.record_failure(base + j);
    }
  });
  counts.len = 0;
  t.flush(counts);
}

// Looks keys up: values[i] gets the value or `absent`, found[i] (when not null) 1 or 0.
// No writer runs during this kernel (HiveMap::get_many takes &self). Lane r looks up
// operation r of its tile's chunk alone (find_alone: its own bucket reads, the metadata
// word only after a miss in the first bucket); keys whose first bucket says STASHED are
// then looked for in the stash by the whole tile, one after the other (find<false, 2>: two
// loads in flight per lane). Four blocks of 256 an SM: the bound leaves every lookup its
// registers (sm_90, NVRTC 13, 16 slots: 53 at u32/u32, 56 at u64/u64 (64 when it read its
// preferred part's keys and values at once), 42 at u64/u32, no spill), where 8 blocks held the kernel to 32 and ptxas
// serialized the packed bucket's loads or spilled the wide ones (docs/hive.md, *The
// lookup's bound*).
extern "C" __global__ void __launch_bounds__(256, 4)
    GPUDS_KERNEL(hive_find)(ref_t t, const K* keys, unsigned long long n, V* values, unsigned char* found, V absent) {
  for_each_op(n, [&](unsigned long long base) {
    const unsigned count = ops_in_chunk(base, n);
    const unsigned r = tile::rank();
    const bool mine = r < count;
    const K my_key = mine ? keys[base + r] : S::EMPTY_KEY;
    V my_value = absent;
    bool my_hit = false;
    bool stash = false;
    if (mine && !ref_t::reserved(my_key)) my_hit = t.find_alone(my_key, my_value, stash);
    unsigned left = tile::ballot(stash);
    while (left != 0) {
      const unsigned j = __ffs(left) - 1;
      left &= left - 1;
      ref_t::match mt;
      if (t.stash_of().template find<false, 2>(tile::shfl(my_key, j), mt) && r == j) {
        my_hit = true;
        my_value = S::value_of(mt.word);
      }
    }
    if (mine) {
      if (values != nullptr) values[base + r] = my_hit ? my_value : absent;
      if (found != nullptr) found[base + r] = my_hit ? 1 : 0;
    }
  });
}

// Removes keys; found[i] (when not null) says whether the key was present.
extern "C" __global__ void HIVE_UPDATE_BOUNDS GPUDS_KERNEL(hive_erase)(ref_t t, const K* keys, unsigned long long n,
                                                                         unsigned char* found) {
  tally counts;
  for_each_op(n, [&](unsigned long long base) {
    const unsigned count = ops_in_chunk(base, n);
    const unsigned r = tile::rank();
    const K my_key = r < count ? keys[base + r] : S::EMPTY_KEY;
    const unsigned long long my_meta = t.first_meta<true>(my_key);
    bool my_hit = false;
    for (unsigned j = 0; j < count; ++j) {
      const K k = tile::shfl(my_key, j);
      V v = 0;
      bool gave_up = false;
      const bool hit = t.erase_with(k, tile::shfl(my_meta, j), v, counts, &gave_up);
      if (gave_up) t.record_failure(base + j);
      if (r == j) my_hit = hit;
    }
    if (r < count && found != nullptr) found[base + r] = my_hit ? 1 : 0;
  });
  t.flush(counts);
}

// A mixed batch: kinds[i] is 0 (insert keys[i] -> values[i]), 1 (remove) or 2 (get).
// What operation i observed goes to observed[i]: SEEN_PRESENT (and the value before it
// to seen_values[i]) when the key was present before it, SEEN_ABSENT, or SEEN_FAILED
// (stash full, retry cap; its failure bit is set too). A u32/u32 table may instead be
// given `packed` (the others null): packed[i] = (1 << 32) | value, 0, or 1 << 33.
constexpr unsigned char SEEN_ABSENT = 0;
constexpr unsigned char SEEN_PRESENT = 1;
constexpr unsigned char SEEN_FAILED = 2;
constexpr unsigned long long PACKED_PRESENT = 1ull << 32;
constexpr unsigned long long PACKED_FAILED = 1ull << 33;

extern "C" __global__ void HIVE_UPDATE_BOUNDS GPUDS_KERNEL(hive_apply)(ref_t t, const unsigned char* kinds, const K* keys,
                                                                         const V* values, unsigned long long n,
                                                                         unsigned char* observed, V* seen_values,
                                                                         unsigned long long* packed) {
  tally counts;
  for_each_op(n, [&](unsigned long long base) {
    const unsigned count = ops_in_chunk(base, n);
    const unsigned r = tile::rank();
    const unsigned my_kind = r < count ? kinds[base + r] : 2u;
    const K my_key = r < count ? keys[base + r] : S::EMPTY_KEY;
    const V my_value = r < count ? values[base + r] : V(0);
    const unsigned long long my_meta = t.first_meta<true>(my_key);
    unsigned char my_seen = SEEN_ABSENT;
    V my_old = 0;
    for (unsigned j = 0; j < count; ++j) {
      const unsigned kind = tile::shfl(my_kind, j);
      const K k = tile::shfl(my_key, j);
      const V v = tile::shfl(my_value, j);
      const unsigned long long m = tile::shfl(my_meta, j);
      unsigned char seen = SEEN_ABSENT;
      V value = 0;
      bool gave_up = false;
      if (kind == 0) {
        const unsigned step = t.insert_with(k, v, m, value, counts);
        gave_up = step == STEP_FAILED;
        if (step == STEP_REPLACE) seen = SEEN_PRESENT;
      } else if (kind == 1) {
        if (t.erase_with(k, m, value, counts, &gave_up)) seen = SEEN_PRESENT;
      } else {
        if (t.find_concurrent(k, m, value, &gave_up)) seen = SEEN_PRESENT;
      }
      if (gave_up) {
        seen = SEEN_FAILED;
        t.record_failure(base + j);
      }
      if (r == j) {
        my_seen = seen;
        my_old = seen == SEEN_PRESENT ? value : V(0);
      }
    }
    if (r < count) {
      if (packed != nullptr) {
        packed[base + r] = my_seen == SEEN_PRESENT  ? PACKED_PRESENT | static_cast<unsigned long long>(my_old)
                           : my_seen == SEEN_FAILED ? PACKED_FAILED
                                                    : 0ull;
      } else {
        observed[base + r] = my_seen;
        seen_values[base + r] = my_old;
      }
    }
  });
  t.flush(counts);
}

// Expansion (§IV-C1): splits buckets [first, first + count) into their partners
// b + level_mask + 1 (all below the end of the level). One tile per pair: each lane
// decides from the one extra hash bit whether its entry stays or moves; movers are
// ranked with a ballot and packed into the partner's first slots (in two-part buckets
// each into its preferred part first, the overflow after the other part's own). Keys whose first
// bucket was b may now have the partner as first bucket, so the partner inherits b's
// SPILL and STASHED flags; an entry that stays in b although its first bucket is now the
// partner (it was here by its other hash) sets the partner's SPILL.
extern "C" __global__ void GPUDS_KERNEL(hive_split)(ref_t t, unsigned first, unsigned count) {
  const unsigned tiles = (gridDim.x * blockDim.x) / SLOTS;
  const unsigned next_mask = (t.level_mask << 1) | 1u;
  for (unsigned p = (blockIdx.x * blockDim.x + threadIdx.x) / SLOTS; p < count; p += tiles) {
    const unsigned b = first + p, partner = b + t.level_mask + 1u;
    const unsigned r = tile::rank();
    const word w = slot_word(t, t.bucket(b), r);
    bool moves = false;
    bool spills = false;
    if (!S::is_empty(w)) {
      const hash_pair h = hashes(S::key_of(w));
      // Hashes that place the entry here now; it stays if one of them still does.
      const bool by1 = (h.h1 & t.level_mask) == b, by2 = (h.h2 & t.level_mask) == b;
      const bool stays = (by1 && (h.h1 & next_mask) == b) || (by2 && (h.h2 & next_mask) == b) || (!by1 && !by2);
      moves = !stays;
      spills = stays && by1 && (h.h1 & next_mask) == partner;
    }
    const unsigned movers = tile::ballot(moves);
    const bool partner_spills = tile::any(spills);
    const unsigned below = movers & ((1u << r) - 1u);
    const unsigned n_movers = __popc(movers);
    const unsigned rank = __popc(below);
    unsigned long long* dst = t.bucket(partner);
    // Where the mover goes in the partner (`to`), and the partner's slots used: the first
    // n_movers, or in two-part buckets each mover in its preferred part first (ranked
    // among the movers that prefer it), the overflow of a part after the other part's own.
    unsigned to = rank;
    unsigned used = n_movers >= 32 ? ~0u : ((1u << n_movers) - 1u);
    if constexpr (parts<S>() == 2) {
      constexpr unsigned H = SLOTS / 2;
      const unsigned pref = moves ? preferred_part<S>(S::key_of(w)) : 0u;
      const unsigned m0 = tile::ballot(moves && pref == 0), m1 = tile::ballot(moves && pref == 1);
      const unsigned c0 = __popc(m0), c1 = __popc(m1);
      const unsigned n0 = c0 < H ? c0 : H, n1 = c1 < H ? c1 : H;
      const unsigned own = __popc((pref == 0 ? m0 : m1) & ((1u << r) - 1u));
      if (pref == 0) {
        to = own < H ? own : H + n1 + (own - H);
      } else {
        to = own < H ? H + own : n0 + (own - H);
      }
      used = ((1u << (n0 + c1 - n1)) - 1u) | (((1u << (n1 + c0 - n0)) - 1u) << H);
    }
    if (moves) {
      set_slot(t, dst, to, w);
      set_slot(t, t.bucket(b), r, S::EMPTY_WORD);
    }
    if (((used >> r) & 1u) == 0) set_slot(t, dst, r, S::EMPTY_WORD);
    // Two-part buckets: the OUT flags of the movers placed outside their preferred parts
    // (the keys that stay keep their places, and b its flags).
    const unsigned long long partner_out = out_flags_of(moves, to, w);
    if (r == 0) {
      const unsigned long long mb = t.meta[b];
      t.meta[b] = mb | movers;
      const unsigned free_there = ALL_FREE & ~used;
      t.meta[partner] = free_there | (mb & (META_SPILL | META_STASHED)) | (partner_spills ? META_SPILL : 0ull) |
                        partner_out;
    }
  }
}

// Contraction check (§IV-C2): ok[p] = 1 when the partner of bucket first + p fits into
// the free slots of that bucket.
extern "C" __global__ void GPUDS_KERNEL(hive_merge_check)(ref_t t, unsigned first, unsigned count, unsigned* ok) {
  const unsigned stride = gridDim.x * blockDim.x;
  for (unsigned p = blockIdx.x * blockDim.x + threadIdx.x; p < count; p += stride) {
    const unsigned b = first + p, partner = b + t.level_mask + 1u;
    const unsigned free_here = __popc(free_of(t.meta[b]));
    const unsigned used_there = SLOTS - __popc(free_of(t.meta[partner]));
    ok[p] = used_there <= free_here ? 1u : 0u;
  }
}

// Contraction (§IV-C2): merges the partners b + level_mask + 1 of buckets
// [first, first + count) back into them. The i-th entry of the partner goes to the i-th
// free slot of the bucket (prefix ranks of both masks; in two-part buckets a part's free
// slots take the entries that prefer it first, then the other part's overflow); the host
// checked that it fits.
// The bucket keeps the flags of both (keys of either have it as first bucket now).
extern "C" __global__ void GPUDS_KERNEL(hive_merge)(ref_t t, unsigned first, unsigned count) {
  const unsigned tiles = (gridDim.x * blockDim.x) / SLOTS;
  for (unsigned p = (blockIdx.x * blockDim.x + threadIdx.x) / SLOTS; p < count; p += tiles) {
    const unsigned b = first + p, partner = b + t.level_mask + 1u;
    const unsigned r = tile::rank();
    const word w = slot_word(t, t.bucket(partner), r);
    const unsigned movers = tile::ballot(!S::is_empty(w));
    const unsigned free_bits = free_of(t.meta[b]);
    const unsigned n_movers = __popc(movers);
    // Lane r, if its slot is free and its free rank is below n_movers, takes the mover
    // of that rank.
    const bool is_free = (free_bits >> r) & 1u;
    const unsigned free_rank = __popc(free_bits & ((1u << r) - 1u));
    // Two-part buckets: a free slot of part P takes first the movers that prefer P (in
    // rank order), then the overflow of the other part's movers (those past its free
    // slots); the host checked that all fit.
    unsigned pick_from = movers, pick_rank = free_rank;
    bool takes = is_free && free_rank < n_movers;
    if constexpr (parts<S>() == 2) {
      constexpr unsigned H = SLOTS / 2;
      constexpr unsigned LO = (1u << H) - 1u;
      const bool mover = !S::is_empty(w);
      const unsigned pref = mover ? preferred_part<S>(S::key_of(w)) : 0u;
      const unsigned m0 = tile::ballot(mover && pref == 0), m1 = tile::ballot(mover && pref == 1);
      const unsigned part = r / H;
      const unsigned mine = part == 0 ? m0 : m1, other = part == 0 ? m1 : m0;
      const unsigned part_free = free_bits & (part == 0 ? LO : LO << H);
      const unsigned f_other = __popc(free_bits & (part == 0 ? LO << H : LO));
      const unsigned q = __popc(part_free & ((1u << r) - 1u));
      const unsigned c_mine = __popc(mine), f_mine = __popc(part_free);
      const unsigned own = c_mine < f_mine ? c_mine : f_mine;
      takes = false;
      if (is_free && q < own) {
        pick_from = mine;
        pick_rank = q;
        takes = true;
      } else if (is_free && f_other + (q - own) < static_cast<unsigned>(__popc(other))) {
        pick_from = other;
        pick_rank = f_other + (q - own);
        takes = true;
      }
    }
    unsigned source = 0;
    if (takes) {
      unsigned m = pick_from;
      for (unsigned i = 0; i < pick_rank; ++i) m &= m - 1u;
      source = __ffs(m) - 1;
    }
    const word moving = S::template shfl<tile>(w, source);
    if (takes) set_slot(t, t.bucket(b), r, moving);
    const unsigned taken = tile::ballot(takes);
    set_slot(t, t.bucket(partner), r, S::EMPTY_WORD);
    // Two-part buckets: b keeps its OUT flags and gains those of the keys it takes
    // outside their preferred parts.
    const unsigned long long taken_out = out_flags_of(takes, r, moving);
    if (r == 0) {
      const unsigned long long flags =
          ((t.meta[b] | t.meta[partner]) & (META_SPILL | META_STASHED)) | taken_out;
      t.meta[b] = (t.meta[b] & ~static_cast<unsigned long long>(ALL_FREE) & ~(META_SPILL | META_STASHED)) |
                  (free_bits & ~taken) | flags;
      t.meta[partner] = ALL_FREE;
    }
  }
}

// Clears every bucket's STASHED flag (the host calls it with the stash emptied, before
// reinserting the drained pairs, which set the flags of those parked again).
extern "C" __global__ void GPUDS_KERNEL(hive_clear_stashed)(ref_t t) {
  const unsigned stride = gridDim.x * blockDim.x;
  for (unsigned b = blockIdx.x * blockDim.x + threadIdx.x; b < t.buckets; b += stride) {
    t.meta[b] &= ~META_STASHED;
  }
}
