// HiveMap's batch kernels: thin loops over gpuds::hive::hive_ref (gpuds/hive/hive_ref.cuh).
//
// Each tile of HIVE_SLOTS lanes takes HIVE_SLOTS operations at a time (grid-stride):
// lane r loads operation r of the chunk (coalesced) and the metadata word of its key's
// first bucket (one gather for the whole chunk), the tile runs the operations one after
// the other with the operands broadcast, and lane r writes result r (coalesced).
//
// Defines: HIVE_SLOTS (8, 16, 32), HIVE_HASH (0..3).
#include <gpuds/hive/hive_ref.cuh>

using namespace gpuds;
using namespace gpuds::hive;

// Every kernel runs in blocks of 256 threads (HiveMap's BLOCK). The update kernels carry
// the out-of-line slow paths (insert_locked, evict), whose registers would otherwise set
// the kernel's register count (82: three blocks per SM); the bounds keep five or six
// blocks per SM resident, the slow paths saving what they need around their calls.
#define HIVE_UPDATE_BOUNDS __launch_bounds__(256, 6)
// Inserts keep ILP bucket reads in flight per tile: five blocks (48 registers).
// Lookups: six blocks (40 registers), ILP bucket reads in flight per tile.
#define HIVE_FIND_BOUNDS __launch_bounds__(256, 6)
#define HIVE_INSERT_BOUNDS __launch_bounds__(256, 5)

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

// First-bucket reads kept in flight at once by a tile working through a chunk.
constexpr unsigned ILP = 4;

// The operations of a chunk as a lane mask.
__device__ __forceinline__ unsigned chunk_ops(unsigned count) {
  return count >= 32 ? 0xffffffffu : (1u << count) - 1u;
}

// Reads one bucket of each operation in `ops` (a lane mask), ILP at a time (each read is
// one coalesced access of the tile), and hands each operation's words to
// `decide(j, key, b, w)`, which runs on every lane with lane r holding slot r of bucket b.
// `choose(key)` names the bucket of a key.
template <typename Choose, typename Decide>
__device__ __forceinline__ void scan_buckets(const hive_ref& t, unsigned ops, unsigned my_key, Choose&& choose,
                                             Decide&& decide) {
  while (ops != 0) {
    unsigned js[ILP];
    unsigned keys[ILP];
    unsigned b[ILP];
    unsigned long long w[ILP];
#pragma unroll
    for (unsigned i = 0; i < ILP; ++i) {
      js[i] = ops != 0 ? __ffs(ops) - 1 : 32u;
      ops &= ops - 1;
      keys[i] = tile::shfl(my_key, js[i] < 32 ? js[i] : 0);
      b[i] = choose(keys[i]);
      w[i] = js[i] < 32 && keys[i] != EMPTY_KEY ? mem::ld_relaxed(t.bucket(b[i]) + tile::rank()) : EMPTY;
    }
#pragma unroll
    for (unsigned i = 0; i < ILP; ++i) {
      if (js[i] < 32) decide(js[i], keys[i], b[i], w[i]);
    }
  }
}

// hive_ref::insert_with out of line: the operations a chunk could not finish at once.
__device__ __noinline__ unsigned insert_one(const hive_ref& t, unsigned k, unsigned v, unsigned long long m,
                                            tally& counts) {
  unsigned old = 0;
  return t.insert_with(k, v, m, old, counts);
}

// A chunk of inserts (§IV-A) in three phases. (1) Each lane loads the metadata word of its
// operation's first bucket (acquire: before any bucket read below), then the tile reads
// the first buckets, ILP at a time, and decides for each operation what hive_ref::insert
// would do first: replace a matching word, or claim the lowest free slot of an unflagged,
// unlocked bucket without pending slots. (2) Every lane with such a plan issues its own
// compare-and-swap (all of the chunk's at once) and, for a won claim, stores its word.
// (3) Operations without a plan, or whose compare-and-swap lost (to another operation on
// the same bucket), go through hive_ref::insert one at a time. The claims are exactly
// hive_ref::insert's lock-free claim (the word compared is the one read before the
// bucket), so the same argument keeps keys unique. EMPTY_KEY operations are skipped when
// `skip_empty` (drained stash words), else left to phase 3 (which reports them).
__device__ __forceinline__ void insert_chunk(const hive_ref& t, unsigned long long base, unsigned count, unsigned my_key,
                                             unsigned my_value, bool skip_empty, tally& counts) {
  const unsigned r = tile::rank();
  const unsigned long long my_meta = r < count ? t.first_meta<true>(my_key) : 0;
  constexpr unsigned PLAN_NONE = 0, PLAN_REPLACE = 1, PLAN_CLAIM = 2, PLAN_SKIP = 3;
  unsigned plan = PLAN_NONE;
  unsigned long long* at = nullptr;
  unsigned long long expect = 0;
  const auto first = [&](unsigned k) { return t.first_of(k); };
  scan_buckets(t, chunk_ops(count), my_key, first, [&](unsigned j, unsigned k, unsigned b1, unsigned long long w) {
    const unsigned long long m = tile::shfl(my_meta, j);
    unsigned p = PLAN_NONE;
    unsigned long long* a = nullptr;
    unsigned long long e = 0;
    const unsigned hits = tile::ballot(key_of(w) == k);
    if (k == EMPTY_KEY) {
      p = skip_empty ? PLAN_SKIP : PLAN_NONE;
    } else if (hits != 0) {
      const unsigned slot = __ffs(hits) - 1;
      p = PLAN_REPLACE;
      a = t.bucket(b1) + slot;
      e = tile::shfl(w, slot);
    } else if ((m & (META_LOCK | META_SPILL | META_STASHED)) == 0 && free_of(m) != 0 && pending(m, w) == 0) {
      const unsigned slot = __ffs(free_of(m)) - 1;
      p = PLAN_CLAIM;
      a = t.bucket(b1) + slot;
      e = (m & ~(1ull << slot)) + META_VERSION;
    }
    if (r == j) {
      plan = p;
      at = a;
      expect = e;
    }
  });
  const unsigned long long word = pack(my_key, my_value);
  bool done = false;
  if (plan == PLAN_REPLACE) {
    done = mem::cas_relaxed(at, expect, word) == expect;
  } else if (plan == PLAN_CLAIM) {
    // The claim compares the whole metadata word read (acquire) before the bucket; it is
    // issued only after the bucket's words came back (its operands depend on them).
    done = mem::cas_relaxed(t.meta + t.first_of(my_key), my_meta, expect) == my_meta;
    if (done) mem::st_relaxed(at, word);
  }
  const unsigned replaced = tile::ballot(done && plan == PLAN_REPLACE);
  const unsigned claimed = tile::ballot(done && plan == PLAN_CLAIM);
  counts.steps[0] += __popc(replaced);
  counts.steps[1] += __popc(claimed);
  counts.len += __popc(claimed);
  unsigned rest = tile::ballot(r < count && !done && plan != PLAN_SKIP);
  // An operation without a plan starts from the word it read (still current unless
  // something changed b1 since); one whose compare-and-swap lost reads a fresh one.
  const unsigned planless = tile::ballot(plan == PLAN_NONE);
  while (rest != 0) {
    const unsigned j = __ffs(rest) - 1;
    rest &= rest - 1;
    const unsigned k = tile::shfl(my_key, j), v = tile::shfl(my_value, j);
    const unsigned long long seen = tile::shfl(my_meta, j);
    const unsigned long long m = (planless >> j) & 1u ? seen : t.meta_of(t.first_of(k)).observe();
    if (insert_one(t, k, v, m, counts) == STEP_FAILED) t.record_failure(base + j);
  }
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

// Inserts or replaces (keys[i], values[i]).
extern "C" __global__ void HIVE_INSERT_BOUNDS hive_insert(hive_ref t, const unsigned* keys, const unsigned* values, unsigned long long n) {
  tally counts;
  for_each_op(n, [&](unsigned long long base) {
    const unsigned count = ops_in_chunk(base, n);
    const unsigned r = tile::rank();
    const unsigned my_key = r < count ? keys[base + r] : EMPTY_KEY;
    const unsigned my_value = r < count ? values[base + r] : 0u;
    insert_chunk(t, base, count, my_key, my_value, false, counts);
  });
  t.flush(counts);
}

// Reinserts drained stash words (empty words are skipped); the pairs are already
// counted in the length, so the count is not changed.
extern "C" __global__ void HIVE_INSERT_BOUNDS hive_reinsert(hive_ref t, const unsigned long long* words, unsigned long long n) {
  tally counts;
  for_each_op(n, [&](unsigned long long base) {
    const unsigned count = ops_in_chunk(base, n);
    const unsigned r = tile::rank();
    const unsigned long long mine = r < count ? words[base + r] : EMPTY;
    insert_chunk(t, base, count, key_of(mine), value_of(mine), true, counts);
  });
  counts.len = 0;
  t.flush(counts);
}

// Looks keys up: values[i] gets the value or `absent`, found[i] (when not null) 1 or 0.
// No writer runs during this kernel (HiveMap::get_many takes &self).
extern "C" __global__ void HIVE_FIND_BOUNDS hive_find(hive_ref t, const unsigned* keys, unsigned long long n, unsigned* values,
                                     unsigned char* found, unsigned absent) {
  for_each_op(n, [&](unsigned long long base) {
    const unsigned count = ops_in_chunk(base, n);
    const unsigned r = tile::rank();
    const unsigned my_key = r < count ? keys[base + r] : EMPTY_KEY;
    unsigned my_value = absent;
    bool my_hit = false;
    // First buckets, ILP at a time; only the misses then read their metadata word (one
    // gather); the second buckets of those whose first bucket has SPILL, ILP at a time;
    // the stash for those still missing whose first bucket has STASHED, one at a time.
    const auto take = [&](unsigned j, unsigned k, unsigned, unsigned long long w) {
      const unsigned hits = tile::ballot(key_of(w) == k && k != EMPTY_KEY);
      const unsigned long long found = hits != 0 ? tile::shfl(w, __ffs(hits) - 1) : EMPTY;
      if (r == j && hits != 0) {
        my_value = value_of(found);
        my_hit = true;
      }
    };
    scan_buckets(t, chunk_ops(count), my_key, [&](unsigned k) { return t.first_of(k); }, take);
    const unsigned long long my_meta = r < count && !my_hit ? t.first_meta<false>(my_key) : 0;
    const hash_pair my_h = hashes(my_key);
    const bool other = t.bucket_of(my_h.h2) != t.bucket_of(my_h.h1);
    scan_buckets(t, tile::ballot((my_meta & META_SPILL) != 0 && other), my_key,
                 [&](unsigned k) { return t.bucket_of(hashes(k).h2); }, take);
    unsigned stashed = tile::ballot((my_meta & META_STASHED) != 0 && !my_hit);
    while (stashed != 0) {
      const unsigned j = __ffs(stashed) - 1;
      stashed &= stashed - 1;
      match mt;
      const bool hit = t.stash_of().find<false>(tile::shfl(my_key, j), mt);
      if (r == j && hit) {
        my_value = value_of(mt.word);
        my_hit = true;
      }
    }
    if (r < count) {
      if (values != nullptr) values[base + r] = my_value;
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
