// HiveMap's batch kernels: thin loops over gpuds::hive::hive_ref (gpuds/hive/hive_ref.cuh).
//
// Each tile of HIVE_SLOTS lanes takes HIVE_SLOTS operations at a time (grid-stride):
// lane r loads operation r of the chunk (coalesced). Bulk lookups first let every lane
// carry out its own operation alone (hive_ref's find_alone: each lane reads its own
// bucket with 16-byte loads, so a warp has 32 buckets in flight), and the tile
// finishes the operations left over together. Bulk inserts do the same 32 operations
// per warp at a time and queue what the quick path leaves (see hive_insert). Erase, the mixed
// batch and stash reinsertion load the metadata word of each lane's key's first bucket
// (one gather for the chunk) and run the chunk's operations one after the other with
// the operands broadcast through the tile code. Lane r writes result r (coalesced).
//
// Defines: HIVE_SLOTS (8, 16, 32), HIVE_HASH (0..3).
#include <gpuds/hive/hive_ref.cuh>

using namespace gpuds;
using namespace gpuds::hive;

// Every kernel runs in blocks of 256 threads (HiveMap's BLOCK). The update kernels carry
// the out-of-line slow paths (insert_locked, evict), whose registers would otherwise set
// the kernel's register count (82: three blocks per SM); the bound keeps six blocks per
// SM resident, the slow paths saving what they need around their calls.
#define HIVE_UPDATE_BOUNDS __launch_bounds__(256, 6)
// The insert kernel's quick loop holds a whole bucket per lane (16 words for 16 slots)
// and fits into 64 registers: four blocks per SM. Its slow paths (run_queued) are out of
// line and run after the loop, so their registers do not burden it.
#define HIVE_INSERT_BOUNDS __launch_bounds__(256, 4)

namespace {

// Runs `body(index, key, value, lane_result)` for every operation, chunk by chunk.
template <typename Body>
__device__ __forceinline__ void for_each_op(unsigned long long n, Body&& body) {
  const unsigned long long tiles = (static_cast<unsigned long long>(gridDim.x) * blockDim.x) / SLOTS;
  const unsigned long long first = (static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x) / SLOTS;
  for (unsigned long long chunk = first; chunk * SLOTS < n; chunk += tiles) {
    body(chunk * SLOTS);
  }
}

__device__ __forceinline__ unsigned ops_in_chunk(unsigned long long base, unsigned long long n) {
  const unsigned long long left = n - base;
  return left < SLOTS ? static_cast<unsigned>(left) : SLOTS;
}

}  // namespace

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

// Inserts or replaces (keys[i], values[i]), 32 operations per warp at a time (grid
// stride; lane l takes operation l of its warp's chunk, and the keys and values of the
// next chunk are loaded while the current one is worked on). Each lane tries its
// operation on the quick path alone (insert_alone<true>: its own bucket read, one
// atomic, one store). An operation that needs more (its first bucket full, flagged,
// locked or pending, or a lost swap) is not worked on there: the lane appends it to
// its warp's queue, a segment of `queue` (its number within the warp's operations,
// c * 32 + l for chunk c), and goes on with its next operation, so that a slow lane
// does not hold up the other 31 of every chunk. After its last chunk the warp runs its
// queue, 32 operations at a time, one per lane, through the whole per-lane path
// (insert_alone<false>: retries, the first bucket's lock, the second bucket, the
// direct move), so that slow paths run side by side; what a lane still cannot finish
// (random-walk evictions, the stash, STASHED buckets) goes through its tile's insert
// one operation at a time. `queue` holds warps * ops_per_warp(n, warps) words (the host
// allocates it with the same formula).
constexpr unsigned WARP_OPS = warp::WARP_SIZE;

namespace {

// Operations a warp takes at most, a multiple of 32: the length of its queue segment.
__device__ __forceinline__ unsigned long long ops_per_warp(unsigned long long n, unsigned long long warps) {
  const unsigned long long stride = warps * WARP_OPS;
  return (n + stride - 1) / stride * WARP_OPS;
}

// Runs the warp's queued operations seg[0 .. queued) (warp `w`), 32 at a time, one per
// lane: the per-lane slow path, then the tile code for what is left; adds the counts
// (and `lane`, the lane's counts of the quick loop) to the table's. Called by the whole warp. Out of line and called once, after the
// quick loop, so that the loop keeps its registers.
__device__ __noinline__ void run_queue(const hive_ref& t, const unsigned* keys, const unsigned* values,
                                       const unsigned* seg, unsigned long long queued, unsigned long long w,
                                       unsigned long long stride, tally lane) {
  tally counts;
  const unsigned l = warp::lane_id();
  for (unsigned long long from = 0; from < queued; from += WARP_OPS) {
    const bool has = from + l < queued;
    unsigned long long i = 0;
    if (has) {
      const unsigned r = seg[from + l];
      i = w * WARP_OPS + static_cast<unsigned long long>(r / WARP_OPS) * stride + r % WARP_OPS;
    }
    const unsigned k = has ? keys[i] : EMPTY_KEY;
    const unsigned v = has ? values[i] : 0u;
    unsigned step = STEP_LEFTOVER;
    if (has && k != EMPTY_KEY) {
      unsigned old = 0;
      step = t.insert_alone<false>(k, v, old, lane);
    }
    unsigned left = tile::ballot(has && step == STEP_LEFTOVER);
    while (left != 0) {
      const unsigned j = __ffs(left) - 1;
      left &= left - 1;
      const unsigned kj = tile::shfl(k, j), vj = tile::shfl(v, j);
      const unsigned long long ij = tile::shfl(i, j);
      unsigned old = 0;
      if (t.insert(kj, vj, old, counts) == STEP_FAILED) t.record_failure(ij);
    }
  }
  merge_lanes(lane, counts);
  t.flush(counts);
}

}  // namespace

extern "C" __global__ void HIVE_INSERT_BOUNDS hive_insert(hive_ref t, const unsigned* keys, const unsigned* values,
                                                          unsigned long long n, unsigned* queue) {
  tally lane;  // the quick path's counts
  const unsigned l = warp::lane_id();
  const unsigned long long w = warp::global_warp_id();
  const unsigned long long stride = warp::warp_count() * WARP_OPS;
  const unsigned long long per_warp = ops_per_warp(n, warp::warp_count());
  unsigned* const seg = queue + w * per_warp;
  unsigned long long queued = 0;  // the same on every lane of the warp
  unsigned long long i = w * WARP_OPS + l;
  unsigned next_key = i < n ? keys[i] : EMPTY_KEY;
  unsigned next_value = i < n ? values[i] : 0u;
  unsigned r = l;  // the operation's number within the warp's
  for (unsigned long long base = i - l; base < n; base += stride, i += stride, r += WARP_OPS) {
    const bool mine = i < n;
    const unsigned my_key = next_key, my_value = next_value;
    if (i + stride < n) {
      next_key = keys[i + stride];
      next_value = values[i + stride];
    }
    unsigned step = STEP_LEFTOVER;
    if (mine && my_key != EMPTY_KEY) {
      unsigned old = 0;
      step = t.insert_alone<true>(my_key, my_value, old, lane);
    }
    const bool defer = mine && step == STEP_LEFTOVER;
    const unsigned deferred = __ballot_sync(warp::FULL_MASK, defer);
    if (defer) seg[queued + __popc(deferred & ((1u << l) - 1u))] = r;
    queued += __popc(deferred);
  }
  if (queued == 0) {
    tally counts;
    merge_lanes(lane, counts);
    t.flush(counts);
    return;
  }
  // The lanes' queue stores are read back by other lanes of the warp.
  __syncwarp();
  run_queue(t, keys, values, seg, queued, w, stride, lane);
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
// then looked for in the stash by the whole tile, one after the other.
extern "C" __global__ void hive_find(hive_ref t, const unsigned* keys, unsigned long long n, unsigned* values,
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
      if (t.stash_of().template find<false>(tile::shfl(my_key, j), mt) && r == j) {
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
      const bool hit = t.erase_with(k, tile::shfl(my_meta, j), v, counts);
      if (r == j) my_hit = hit;
    }
    if (r < count && found != nullptr) found[base + r] = my_hit ? 1 : 0;
  });
  t.flush(counts);
}

// A mixed batch: kinds[i] is 0 (insert keys[i] -> values[i]), 1 (remove) or 2 (get).
// out[i] is what the operation observed: (1 << 32) | value when the key was present
// before it, 0 when absent, 1 << 33 when it failed (stash full, retry cap).
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
      if (kind == 0) {
        const unsigned step = t.insert_with(k, v, m, value, counts);
        if (step == STEP_FAILED) {
          seen = FAILED;
          t.record_failure(base + j);
        } else if (step == STEP_REPLACE) {
          seen = OBSERVED | value;
        }
      } else if (kind == 1) {
        if (t.erase_with(k, m, value, counts)) seen = OBSERVED | value;
      } else {
        if (t.find_concurrent(k, m, value)) seen = OBSERVED | value;
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
