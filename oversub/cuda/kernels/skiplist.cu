// Entry points of SkipList and RangeSkipList: one warp per operation, the operations
// of a sorted batch dealt to warps in blocks of `keys_per_warp` consecutive keys,
// round robin (1: the cyclic deal; the paper's block-cyclic deal uses 180 or 300).
// A RangeSkipList is an array of lists, key >> shift picking one, plus an auxiliary
// list of its non-empty ranges (key r + 1 for range r) for successor, predecessor and
// ranges that cross ranges; a SkipList is one list (shift 32, no auxiliary list).
#include <gpuds/core/kernel_name.cuh>
#include <gpuds/oversub/skiplist.cuh>

using namespace gpuds;
using namespace gpuds::oversub;
using namespace gpuds::oversub::sl;

struct skiplist_ref {
  list* lists;
  pool* pools;
  unsigned* status;
  unsigned shift;
  unsigned keys_per_warp;
  list* aux;
  pool* aux_pools;
  unsigned long long num_lists;

  __device__ unsigned long long list_of(unsigned k) const { return shift >= 32 ? 0ull : k >> shift; }
  __device__ list_ref at(unsigned long long i) const { return list_ref{lists + i, pools, status}; }
  __device__ list_ref of(unsigned k) const { return at(list_of(k)); }
  __device__ list_ref aux_ref() const { return list_ref{aux, aux_pools, status}; }
  __device__ bool has(unsigned long long i) const {
    return lists[i].heads[0] != NIL && mem::ld_relaxed(&lists[i].count) != 0ull;
  }
  // The first non-empty list at or after i (num_lists: none).
  __device__ unsigned long long next_nonempty(unsigned long long i) const {
    if (i >= num_lists) return num_lists;
    if (has(i)) return i;
    if (aux == nullptr) return num_lists;
    unsigned k = 0, v = 0;
    if (successor(aux_ref(), static_cast<unsigned>(i + 1), k, v) != PRESENT) return num_lists;
    return k - 1ull;
  }
  // The last non-empty list at or before i (num_lists: none).
  __device__ unsigned long long prev_nonempty(unsigned long long i) const {
    if (has(i)) return i;
    if (aux == nullptr) return num_lists;
    unsigned k = 0, v = 0;
    if (predecessor(aux_ref(), static_cast<unsigned>(i + 1), k, v) != PRESENT) return num_lists;
    return k - 1ull;
  }
};

// The warp's operations: blocks of keys_per_warp, round robin over the warps. All lanes
// call `op(i)` together.
template <class Op>
__device__ __forceinline__ void for_ops(unsigned long long n, unsigned keys_per_warp, Op&& op) {
  const unsigned long long per = keys_per_warp == 0 ? 1ull : keys_per_warp;
  const unsigned long long warps = warp::warp_count();
  for (unsigned long long b = warp::global_warp_id(); b * per < n; b += warps) {
    const unsigned long long end = (b + 1) * per < n ? (b + 1) * per : n;
    for (unsigned long long i = b * per; i < end; ++i) op(i);
  }
}

__device__ __forceinline__ unsigned long long at_of(const unsigned long long* index, unsigned long long i) {
  return index != nullptr ? index[i] : i;
}
__device__ __forceinline__ void set_bit(unsigned* bits, unsigned long long at) {
  if (bits != nullptr && warp::lane_id() == 0) atomicOr(&bits[at / 32], 1u << (at % 32));
}

// Makes head 0 of lists[ids[j]] (ids null: lists[j]), j < m, from the pools (the host
// made room). A list that has one is left alone.
extern "C" __global__ void GPUDS_KERNEL(sl_init_lists)(skiplist_ref t, const unsigned* ids, unsigned long long m) {
  for (unsigned long long j = warp::global_warp_id(); j < m; j += warp::warp_count()) {
    const list_ref r = t.at(ids != nullptr ? ids[j] : j);
    if (r.l->heads[0] != NIL) continue;
    unsigned n = warp::lane_id() == 0 ? r.alloc(0) : NIL;
    n = __shfl_sync(warp::FULL_MASK, n, 0);
    if (n == NIL) {
      status::report(t.status, status::POOL_EXHAUSTED);
      continue;
    }
    write_node(r.node(n), EMPTY_SLOT, KEY_TOP, NIL, HEAD);
    __threadfence();
    if (warp::lane_id() == 0) {
      r.l->heads[0] = n;
      r.l->height = 0;
    }
  }
}

// need[r] = 1 for each list a key of the batch falls in that has no head yet.
extern "C" __global__ void GPUDS_KERNEL(sl_need)(skiplist_ref t, const unsigned* keys, unsigned long long n,
                                                 unsigned* need) {
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const unsigned long long r = t.list_of(keys[i]);
    if (t.lists[r].heads[0] == NIL && need[r] == 0u) need[r] = 1u;
  }
}

// Insertions (replace) or, with `add`, additions (values null: add 1 per key). Key i
// is the batch's operation index[i] (index null: i): its value is values[index[i]] and
// its failure bit that position, so errors name the caller's operations.
extern "C" __global__ void GPUDS_KERNEL(sl_insert)(skiplist_ref t, const unsigned* keys,
                                                   const unsigned long long* index, const unsigned* values,
                                                   unsigned long long n, unsigned add, unsigned* failed) {
  for_ops(n, t.keys_per_warp, [&](unsigned long long i) {
    const unsigned k = keys[i];
    const list_ref r = t.of(k);
    const unsigned long long at = at_of(index, i);
    const unsigned x = values != nullptr ? values[at] : (add != 0u ? 1u : 0u);
    const unsigned outcome = insert(r, k, x, add != 0u);
    if (warp::lane_id() == 0 && outcome == ABSENT) {
      atomicAdd(&r.l->count, 1ull);
      atomicMin(&r.l->min_key, k);
      atomicMax(&r.l->max_key, k);
    }
    if (outcome == FAILED) set_bit(failed, at);
  });
}

extern "C" __global__ void GPUDS_KERNEL(sl_erase)(skiplist_ref t, const unsigned* keys,
                                                  const unsigned long long* index, unsigned long long n,
                                                  unsigned* removed, unsigned* failed) {
  for_ops(n, t.keys_per_warp, [&](unsigned long long i) {
    const unsigned k = keys[i];
    const list_ref r = t.of(k);
    unsigned old = 0;
    const unsigned outcome = r.l->heads[0] == NIL ? ABSENT : erase(r, k, old);
    if (warp::lane_id() == 0 && outcome == PRESENT) {
      atomicAdd(&r.l->count, ~0ull);
      if (k == mem::ld_relaxed(&r.l->min_key) || k == mem::ld_relaxed(&r.l->max_key)) r.l->bounds_dirty = 1u;
    }
    if (outcome == PRESENT) set_bit(removed, at_of(index, i));
    if (outcome == FAILED) set_bit(failed, at_of(index, i));
  });
}

extern "C" __global__ void GPUDS_KERNEL(sl_find)(skiplist_ref t, const unsigned* keys,
                                                 const unsigned long long* index, unsigned long long n,
                                                 unsigned* values, unsigned* found, unsigned* failed) {
  for_ops(n, t.keys_per_warp, [&](unsigned long long i) {
    const unsigned k = keys[i];
    const unsigned long long r = t.list_of(k);
    unsigned v = 0;
    const unsigned outcome = t.lists[r].heads[0] == NIL ? ABSENT : find(t.at(r), k, v);
    const unsigned long long at = at_of(index, i);
    if (warp::lane_id() == 0 && values != nullptr) values[at] = outcome == PRESENT ? v : 0xFFFFFFFFu;
    if (outcome == PRESENT) set_bit(found, at);
    if (outcome == FAILED) set_bit(failed, at);
  });
}

// Successor (smallest key >= k) or, with `down`, predecessor (largest key <= k), across
// the lists in key order.
__device__ unsigned neighbour(const skiplist_ref& t, unsigned k, bool down, unsigned& key, unsigned& value) {
  const unsigned long long r = t.list_of(k);
  if (!down) {
    // The bounds only skip a range; a miss inside it still falls through to the next.
    if (t.has(r) && k <= mem::ld_relaxed(&t.lists[r].max_key) && successor(t.at(r), k, key, value) == PRESENT)
      return PRESENT;
    const unsigned long long s = t.next_nonempty(r + 1);
    if (s >= t.num_lists) return ABSENT;
    return successor(t.at(s), 0u, key, value);
  }
  if (t.has(r) && k >= mem::ld_relaxed(&t.lists[r].min_key) && predecessor(t.at(r), k, key, value) == PRESENT)
    return PRESENT;
  if (r == 0) return ABSENT;
  const unsigned long long p = t.prev_nonempty(r - 1);
  if (p >= t.num_lists) return ABSENT;
  return predecessor(t.at(p), 0xFFFFFFFFu, key, value);
}

extern "C" __global__ void GPUDS_KERNEL(sl_neighbour)(skiplist_ref t, const unsigned* keys,
                                                      const unsigned long long* index, unsigned long long n,
                                                      unsigned down, unsigned* out_keys, unsigned* out_values,
                                                      unsigned* found) {
  for_ops(n, t.keys_per_warp, [&](unsigned long long i) {
    unsigned key = 0, value = 0;
    const unsigned outcome = neighbour(t, keys[i], down != 0u, key, value);
    const unsigned long long at = at_of(index, i);
    if (warp::lane_id() == 0 && outcome == PRESENT) {
      out_keys[at] = key;
      out_values[at] = value;
    }
    if (outcome == PRESENT) set_bit(found, at);
  });
}

// Every pair with lo[i] <= key <= hi[i], in key order across the lists: emit(s, ok, rank).
template <class Emit>
__device__ unsigned long long range_walk(const skiplist_ref& t, unsigned lo, unsigned hi, Emit&& emit) {
  if (lo > hi) return 0;
  unsigned long long total = 0;
  const unsigned long long last = t.list_of(hi);
  for (unsigned long long r = t.next_nonempty(t.list_of(lo)); r <= last && r < t.num_lists;
       r = t.next_nonempty(r + 1)) {
    const unsigned long long base = total;
    total += walk_range(t.at(r), lo, hi,
                        [&](unsigned long long s, bool ok, unsigned long long rank) { emit(s, ok, base + rank); });
  }
  return total;
}

extern "C" __global__ void GPUDS_KERNEL(sl_range_count)(skiplist_ref t, const unsigned* lo, const unsigned* hi,
                                                        unsigned long long n, unsigned long long* counts) {
  for_ops(n, 1, [&](unsigned long long i) {
    const unsigned long long c = range_walk(t, lo[i], hi[i], [](unsigned long long, bool, unsigned long long) {});
    if (warp::lane_id() == 0) counts[i] = c;
  });
}

extern "C" __global__ void GPUDS_KERNEL(sl_range_collect)(skiplist_ref t, const unsigned* lo, const unsigned* hi,
                                                          const unsigned long long* offsets, unsigned long long n,
                                                          unsigned* out_keys, unsigned* out_values) {
  for_ops(n, 1, [&](unsigned long long i) {
    const unsigned long long base = offsets[i];
    range_walk(t, lo[i], hi[i], [&](unsigned long long s, bool ok, unsigned long long rank) {
      if (ok) {
        out_keys[base + rank] = key_of(s);
        out_values[base + rank] = val_of(s);
      }
    });
  });
}

// Between batches: for every node of pool `p` of list `owner` (nodes [0, count)): a live
// data node's next skips dead nodes; a layer-1 entry naming a dead node names its first
// live successor instead, and of consecutive entries naming one node only the first
// stays; a dead node is marked freed and pushed on its pool's free list. The pools are
// the owner's (every list of a shared pool names the same ones).
extern "C" __global__ void GPUDS_KERNEL(sl_compact)(skiplist_ref t, unsigned long long owner, unsigned p,
                                                    unsigned long long count) {
  const list_ref r = t.at(owner);
  pool& own = t.pools[t.lists[owner].first_pool + p];
  const unsigned lane = warp::lane_id();
  auto dead = [&](unsigned ref) {
    return (val_of(mem::ld_relaxed(r.node(ref) + META_SLOT)) & DEAD) != 0;
  };
  auto live_from = [&](unsigned ref) {
    for (unsigned steps = 0; ref != NIL && dead(ref) && steps < WALK_CAP; ++steps)
      ref = val_of(mem::ld_relaxed(r.node(ref) + HIGH_SLOT));
    return ref;
  };
  for (unsigned long long i = warp::global_warp_id(); i < count; i += warp::warp_count()) {
    const unsigned ref = (p << POOL_SHIFT) | static_cast<unsigned>(i);
    unsigned long long* node = r.node(ref);
    const view v = read(node);
    if (v.meta & FREED) continue;
    if (v.meta & DEAD) {
      if (lane == 0) {
        mem::st_relaxed(reinterpret_cast<unsigned*>(node + META_SLOT) + 1, v.meta | FREED);
        const int at = atomicAdd(&own.free_top, 1);
        reinterpret_cast<unsigned*>(own.free_list)[at] = static_cast<unsigned>(i);
      }
      continue;
    }
    const unsigned level = v.meta & LEVEL_MASK;
    if (level == 0) {
      if (lane == 0) {
        const unsigned next = live_from(v.next);
        if (next != v.next) mem::st_relaxed(node + HIGH_SLOT, pack(v.high, next));
      }
    } else if (level == 1) {
      const bool valid = v.valid();
      const unsigned down = valid ? live_from(val_of(v.s)) : NIL;
      const unsigned before = __shfl_up_sync(warp::FULL_MASK, down, 1);
      const bool keep = valid && (lane == 0 || before != down);
      const unsigned kept = __ballot_sync(warp::FULL_MASK, keep);
      const unsigned pos = __popc(kept & ((1u << lane) - 1u));
      const unsigned long long mine = pack(v.key(), down);
      if (lane < NODE_KEYS) {
        // Entries only move left, so write them in two steps: the kept ones, then empties.
        if (keep) mem::st_relaxed(node + pos, mine);
      }
      __syncwarp();
      if (lane < NODE_KEYS && lane >= static_cast<unsigned>(__popc(kept))) mem::st_relaxed(node + lane, EMPTY_SLOT);
    }
  }
}

// After a removal batch: every list lists[ids[j]] (ids null: lists[j]), j < m, whose
// removal took its min or max key gets them again (the tiered placement names the lists
// whose pools are resident).
extern "C" __global__ void GPUDS_KERNEL(sl_bounds)(skiplist_ref t, const unsigned* ids, unsigned long long m) {
  for (unsigned long long i = warp::global_warp_id(); i < m; i += warp::warp_count()) {
    const unsigned long long j = ids != nullptr ? ids[i] : i;
    list* l = t.lists + j;
    if (l->bounds_dirty == 0u || l->heads[0] == NIL) continue;
    unsigned lo = 0xFFFFFFFFu, hi = 0, k = 0, v = 0;
    if (successor(t.at(j), 0u, k, v) == PRESENT) lo = k;
    if (predecessor(t.at(j), 0xFFFFFFFFu, k, v) == PRESENT) hi = k;
    if (warp::lane_id() == 0) {
      l->min_key = lo;
      l->max_key = hi;
      l->bounds_dirty = 0u;
    }
  }
}

// The lists whose emptiness differs from what the auxiliary list was last told: r + 1
// into add[] (now non-empty) or drop[] (now empty); counts in counts[0], counts[1]. The
// host marks them told (sl_aux_commit) only once the auxiliary list has them.
extern "C" __global__ void GPUDS_KERNEL(sl_aux_changes)(skiplist_ref t, unsigned* add, unsigned* drop,
                                                        unsigned* counts) {
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long j = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
       j < t.num_lists; j += stride) {
    list* l = t.lists + j;
    const unsigned now = (l->heads[0] != NIL && l->count != 0ull) ? 1u : 0u;
    if (now == l->in_aux) continue;
    if (now) add[atomicAdd(&counts[0], 1u)] = static_cast<unsigned>(j + 1);
    else drop[atomicAdd(&counts[1], 1u)] = static_cast<unsigned>(j + 1);
  }
}

// lists[keys[j] - 1].in_aux = value for j < m (after the auxiliary list took the change).
extern "C" __global__ void GPUDS_KERNEL(sl_aux_commit)(skiplist_ref t, const unsigned* keys, unsigned long long m,
                                                       unsigned value) {
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long j = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x; j < m;
       j += stride)
    t.lists[keys[j] - 1u].in_aux = value;
}

// Repair of dropped raises, between batches (no other kernel runs). A node is indexed
// when an entry of a live index node of the layer above names it (a head: the head
// above). sl_named sets, for every entry of the live index nodes of pool p of list
// `owner` (nodes [0, count)), the bit of the node it names: bit i % 32 of word
// marks[at[q] + i / 32] for node i of the owner's pool q, below at[16 + q] words.
extern "C" __global__ void GPUDS_KERNEL(sl_named)(skiplist_ref t, unsigned long long owner, unsigned p,
                                                  unsigned long long count, unsigned* marks,
                                                  const unsigned long long* at) {
  const list_ref r = t.at(owner);
  for (unsigned long long i = warp::global_warp_id(); i < count; i += warp::warp_count()) {
    const view v = read(r.node((p << POOL_SHIFT) | static_cast<unsigned>(i)));
    if ((v.meta & (FREED | DEAD)) != 0u || (v.meta & LEVEL_MASK) == 0u || !v.valid()) continue;
    const unsigned down = val_of(v.s);
    const unsigned q = down >> POOL_SHIFT;
    const unsigned long long word = (down & INDEX_MASK) / 32u;
    if (word < at[MAX_LEVELS + q]) atomicOr(&marks[at[q] + word], 1u << (down % 32u));
  }
}

// After sl_named over every pool of `owner`: the live nodes of pool p (nodes [0, count))
// that are not heads, hold a key, lie below the top layer and are named by no entry.
// Each is counted in *found and, while fewer than `cap`, written to jobs as (list,
// level, smallest key, node): a raise of that key into the layer above names the node
// (its range starts at or below its smallest key, so the entry is valid).
extern "C" __global__ void GPUDS_KERNEL(sl_unindexed)(skiplist_ref t, unsigned long long owner, unsigned p,
                                                      unsigned long long count, const unsigned* marks,
                                                      const unsigned long long* at, unsigned* jobs,
                                                      unsigned long long* found, unsigned long long cap) {
  const list_ref r = t.at(owner);
  for (unsigned long long i = warp::global_warp_id(); i < count; i += warp::warp_count()) {
    const unsigned ref = (p << POOL_SHIFT) | static_cast<unsigned>(i);
    const view v = read(r.node(ref));
    const unsigned level = v.meta & LEVEL_MASK;
    if ((v.meta & (FREED | DEAD | HEAD)) != 0u || level + 1u >= MAX_LEVELS) continue;
    if (i / 32u < at[MAX_LEVELS + p] && (marks[at[p] + i / 32u] >> (i % 32u) & 1u) != 0u) continue;
    const int lane = ceil_lane(v, 0u);
    if (lane < 0) continue;  // empty: nothing to raise (searches walk past it)
    const unsigned k = key_of(__shfl_sync(warp::FULL_MASK, v.s, lane));
    if (warp::lane_id() == 0) {
      const unsigned long long j = atomicAdd(found, 1ull);
      if (j < cap) {
        jobs[4 * j] = static_cast<unsigned>(t.list_of(k));
        jobs[4 * j + 1] = level;
        jobs[4 * j + 2] = k;
        jobs[4 * j + 3] = ref;
      }
    }
  }
}

// Raises each job of sl_unindexed (m of them) into the layer above its node, best effort
// as every raise (a dropped one is counted again).
extern "C" __global__ void GPUDS_KERNEL(sl_raise_jobs)(skiplist_ref t, const unsigned* jobs, unsigned long long m) {
  for (unsigned long long j = warp::global_warp_id(); j < m; j += warp::warp_count()) {
    const unsigned* job = jobs + 4 * j;
    raise(t.at(job[0]), job[2], job[3], job[1]);
  }
}
