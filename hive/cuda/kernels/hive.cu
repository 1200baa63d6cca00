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
// Defines: HIVE_SLOTS (8, 16, 32), HIVE_HASH (0..3).
#include <gpuds/hive/detail/batch_loop.cuh>
#include <gpuds/hive/detail/fill_insert.cuh>
#include <gpuds/hive/hive_ref.cuh>

using namespace gpuds;
using namespace gpuds::hive;

// Every kernel runs in blocks of 256 threads (HiveMap's BLOCK). The update kernels carry
// the out-of-line slow paths (insert_locked, evict), whose registers would otherwise set
// the kernel's register count (82: three blocks per SM); the bound keeps six blocks per
// SM resident, the slow paths saving what they need around their calls.
#define HIVE_UPDATE_BOUNDS __launch_bounds__(256, 6)
// The state machine of the second insert kernel holds a whole bucket per lane (16 words
// for 16 slots) and the direct move's candidates: two blocks per SM leave it 128
// registers (it uses 116). Measured: two blocks insert faster than three (80 registers,
// with spills) or four.
#define HIVE_INSERT_BOUNDS __launch_bounds__(256, 2)
// The first insert kernel (per-lane fills, buckets of up to 16 slots) needs fewer: three
// blocks per SM. With 32-slot buckets it runs the tile code, bounded like the second.
#if HIVE_SLOTS <= 16
#define HIVE_FILL_BOUNDS __launch_bounds__(256, 3)
#else
#define HIVE_FILL_BOUNDS __launch_bounds__(256, 2)
#endif

// Sets buckets [from, to) to empty, unlocked, all slots free.
extern "C" __global__ void hive_init(hive_ref t, unsigned from, unsigned to) {
  const unsigned long long total = static_cast<unsigned long long>(to - from) * SLOTS;
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
    const unsigned long long slot = static_cast<unsigned long long>(from) * SLOTS + i;
    t.slots[slot] = EMPTY;
    if (slot % SLOTS == 0) t.meta[slot / SLOTS] = ALL_FREE;
  }
}

// Writes the smallest index of a reserved key into *first (initialized to n by the host).
extern "C" __global__ void hive_first_reserved(const unsigned* keys, unsigned long long n, unsigned long long* first) {
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    if (keys[i] == EMPTY_KEY) atomicMin(first, i);
  }
}

// Inserts or replaces (keys[i], values[i]). With buckets of up to 16 slots, the first of
// two kernels: the per-lane fills of fill::insert_lanes, which append the index of every
// insert they leave to `queue` (bulk::QUEUE_HEAD; counters zeroed by the host, room for n);
// hive_insert_queued runs those after it. With 32 slots, lane r takes operation r of its
// tile's chunk alone first (insert_alone: its own bucket read, one atomic, one store);
// the operations it leaves go through the tile's insert_with one after the other.
extern "C" __global__ void HIVE_FILL_BOUNDS hive_insert(hive_ref t, const unsigned* keys, const unsigned* values,
                                                          unsigned long long n, unsigned* queue) {
  tally counts;
  tally lane;
  if (SLOTS <= 16) {
    fill::insert_lanes(t, keys, values, n, queue, lane);
  } else {
    for_each_op(n, [&](unsigned long long base) {
      const unsigned count = ops_in_chunk(base, n);
      const unsigned r = tile::rank();
      const bool mine = r < count;
      const unsigned my_key = mine ? keys[base + r] : EMPTY_KEY;
      const unsigned my_value = mine ? values[base + r] : 0u;
      insert_ops(t, mine, my_key, my_value, base + r, lane, counts);
    });
  }
  merge_lanes(lane, counts);
  t.flush(counts);
}

// The second kernel of a bulk insert (buckets of up to 16 slots): the inserts queued by
// hive_insert, through the state machine of bulk::insert_lanes (locks, direct moves, and
// the tile code for what it parks), with no fill of the first kernel running beside it.
extern "C" __global__ void HIVE_INSERT_BOUNDS hive_insert_queued(hive_ref t, const unsigned* keys, const unsigned* values,
                                                                 unsigned* queue, unsigned long long offset) {
  tally counts;
  tally lane;
  if (SLOTS <= 16) bulk::insert_lanes(t, keys, values, queue, offset, lane, counts);
  merge_lanes(lane, counts);
  t.flush(counts);
}

// Reinserts drained stash words (empty words are skipped); the pairs are already
// counted in the length, so the count is not changed.
extern "C" __global__ void HIVE_UPDATE_BOUNDS hive_reinsert(hive_ref t, const unsigned long long* words, unsigned long long n) {
  tally counts;
  for_each_op(n, [&](unsigned long long base) {
    const unsigned count = ops_in_chunk(base, n);
    const unsigned r = tile::rank();
    const unsigned long long mine = r < count ? words[base + r] : EMPTY;
    const unsigned long long my_meta = t.first_meta<true>(key_of(mine));
    for (unsigned j = 0; j < count; ++j) {
      const unsigned long long w = tile::shfl(mine, j);
      const unsigned long long m = tile::shfl(my_meta, j);
      if (w == EMPTY) continue;
      unsigned old = 0;
      if (t.insert_with(key_of(w), value_of(w), m, old, counts) == STEP_FAILED) t.record_failure(base + j);
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
// loads in flight per lane; the bounds keep the kernel at 32 registers).
extern "C" __global__ void __launch_bounds__(256, 8) hive_find(hive_ref t, const unsigned* keys, unsigned long long n, unsigned* values,
                                     unsigned char* found, unsigned absent) {
  for_each_op(n, [&](unsigned long long base) {
    const unsigned count = ops_in_chunk(base, n);
    const unsigned r = tile::rank();
    const bool mine = r < count;
    const unsigned my_key = mine ? keys[base + r] : EMPTY_KEY;
    unsigned my_value = absent;
    bool my_hit = false;
    bool stash = false;
    if (mine && my_key != EMPTY_KEY) my_hit = t.find_alone(my_key, my_value, stash);
    unsigned left = tile::ballot(stash);
    while (left != 0) {
      const unsigned j = __ffs(left) - 1;
      left &= left - 1;
      match mt;
      if (t.stash_of().template find<false, 2>(tile::shfl(my_key, j), mt) && r == j) {
        my_hit = true;
        my_value = value_of(mt.word);
      }
    }
    if (mine) {
      if (values != nullptr) values[base + r] = my_hit ? my_value : absent;
      if (found != nullptr) found[base + r] = my_hit ? 1 : 0;
    }
  });
}

// Removes keys; found[i] (when not null) says whether the key was present.
extern "C" __global__ void HIVE_UPDATE_BOUNDS hive_erase(hive_ref t, const unsigned* keys, unsigned long long n, unsigned char* found) {
  tally counts;
  for_each_op(n, [&](unsigned long long base) {
    const unsigned count = ops_in_chunk(base, n);
    const unsigned r = tile::rank();
    const unsigned my_key = r < count ? keys[base + r] : EMPTY_KEY;
    const unsigned long long my_meta = t.first_meta<true>(my_key);
    bool my_hit = false;
    for (unsigned j = 0; j < count; ++j) {
      const unsigned k = tile::shfl(my_key, j);
      unsigned v = 0;
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
// out[i] is what the operation observed: (1 << 32) | value when the key was present
// before it, 0 when absent, 1 << 33 when it failed (stash full, retry cap; its failure
// bit is set too).
constexpr unsigned long long OBSERVED = 1ull << 32;
constexpr unsigned long long FAILED = 1ull << 33;

extern "C" __global__ void HIVE_UPDATE_BOUNDS hive_apply(hive_ref t, const unsigned char* kinds, const unsigned* keys, const unsigned* values,
                                      unsigned long long n, unsigned long long* out) {
  tally counts;
  for_each_op(n, [&](unsigned long long base) {
    const unsigned count = ops_in_chunk(base, n);
    const unsigned r = tile::rank();
    const unsigned my_kind = r < count ? kinds[base + r] : 2u;
    const unsigned my_key = r < count ? keys[base + r] : EMPTY_KEY;
    const unsigned my_value = r < count ? values[base + r] : 0u;
    const unsigned long long my_meta = t.first_meta<true>(my_key);
    unsigned long long my_out = 0;
    for (unsigned j = 0; j < count; ++j) {
      const unsigned kind = tile::shfl(my_kind, j), k = tile::shfl(my_key, j), v = tile::shfl(my_value, j);
      const unsigned long long m = tile::shfl(my_meta, j);
      unsigned long long seen = 0;
      unsigned value = 0;
      bool gave_up = false;
      if (kind == 0) {
        const unsigned step = t.insert_with(k, v, m, value, counts);
        gave_up = step == STEP_FAILED;
        if (step == STEP_REPLACE) seen = OBSERVED | value;
      } else if (kind == 1) {
        if (t.erase_with(k, m, value, counts, &gave_up)) seen = OBSERVED | value;
      } else {
        if (t.find_concurrent(k, m, value, &gave_up)) seen = OBSERVED | value;
      }
      if (gave_up) {
        seen = FAILED;
        t.record_failure(base + j);
      }
      if (r == j) my_out = seen;
    }
    if (r < count) out[base + r] = my_out;
  });
  t.flush(counts);
}

// Expansion (§IV-C1): splits buckets [first, first + count) into their partners
// b + level_mask + 1 (all below the end of the level). One tile per pair: each lane
// decides from the one extra hash bit whether its entry stays or moves; movers are
// ranked with a ballot and packed into the partner's first slots. Keys whose first
// bucket was b may now have the partner as first bucket, so the partner inherits b's
// SPILL and STASHED flags; an entry that stays in b although its first bucket is now the
// partner (it was here by its other hash) sets the partner's SPILL.
extern "C" __global__ void hive_split(hive_ref t, unsigned first, unsigned count) {
  const unsigned tiles = (gridDim.x * blockDim.x) / SLOTS;
  const unsigned next_mask = (t.level_mask << 1) | 1u;
  for (unsigned p = (blockIdx.x * blockDim.x + threadIdx.x) / SLOTS; p < count; p += tiles) {
    const unsigned b = first + p, partner = b + t.level_mask + 1u;
    const unsigned r = tile::rank();
    const unsigned long long w = t.bucket(b)[r];
    bool moves = false;
    bool spills = false;
    if (w != EMPTY) {
      const hash_pair h = hashes(key_of(w));
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
    if (moves) {
      dst[rank] = w;
      t.bucket(b)[r] = EMPTY;
    }
    if (r >= n_movers) dst[r] = EMPTY;
    if (r == 0) {
      const unsigned long long mb = t.meta[b];
      t.meta[b] = mb | movers;
      const unsigned free_there = n_movers >= 32 ? 0u : (ALL_FREE & ~((1u << n_movers) - 1u));
      t.meta[partner] = free_there | (mb & (META_SPILL | META_STASHED)) | (partner_spills ? META_SPILL : 0ull);
    }
  }
}

// Contraction check (§IV-C2): ok[p] = 1 when the partner of bucket first + p fits into
// the free slots of that bucket.
extern "C" __global__ void hive_merge_check(hive_ref t, unsigned first, unsigned count, unsigned* ok) {
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
// free slot of the bucket (prefix ranks of both masks); the host checked that it fits.
// The bucket keeps the flags of both (keys of either have it as first bucket now).
extern "C" __global__ void hive_merge(hive_ref t, unsigned first, unsigned count) {
  const unsigned tiles = (gridDim.x * blockDim.x) / SLOTS;
  for (unsigned p = (blockIdx.x * blockDim.x + threadIdx.x) / SLOTS; p < count; p += tiles) {
    const unsigned b = first + p, partner = b + t.level_mask + 1u;
    const unsigned r = tile::rank();
    const unsigned long long w = t.bucket(partner)[r];
    const unsigned movers = tile::ballot(w != EMPTY);
    const unsigned free_bits = free_of(t.meta[b]);
    const unsigned n_movers = __popc(movers);
    // Lane r, if its slot is free and its free rank is below n_movers, takes the mover
    // of that rank.
    const bool is_free = (free_bits >> r) & 1u;
    const unsigned free_rank = __popc(free_bits & ((1u << r) - 1u));
    unsigned source = 0;
    if (is_free && free_rank < n_movers) {
      unsigned m = movers;
      for (unsigned i = 0; i < free_rank; ++i) m &= m - 1u;
      source = __ffs(m) - 1;
    }
    const unsigned long long moving = tile::shfl(w, source);
    const bool takes = is_free && free_rank < n_movers;
    if (takes) t.bucket(b)[r] = moving;
    const unsigned taken = tile::ballot(takes);
    t.bucket(partner)[r] = EMPTY;
    if (r == 0) {
      const unsigned long long flags = (t.meta[b] | t.meta[partner]) & (META_SPILL | META_STASHED);
      t.meta[b] = (t.meta[b] & ~static_cast<unsigned long long>(ALL_FREE) & ~(META_SPILL | META_STASHED)) |
                  (free_bits & ~taken) | flags;
      t.meta[partner] = ALL_FREE;
    }
  }
}

// Clears every bucket's STASHED flag (the host calls it with the stash emptied, before
// reinserting the drained pairs, which set the flags of those parked again).
extern "C" __global__ void hive_clear_stashed(hive_ref t) {
  const unsigned stride = gridDim.x * blockDim.x;
  for (unsigned b = blockIdx.x * blockDim.x + threadIdx.x; b < t.buckets; b += stride) {
    t.meta[b] &= ~META_STASHED;
  }
}
