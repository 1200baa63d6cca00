// gpuds/oversub/skiplist.cuh: the GPU-friendly skip list (GFSL, Moscovici et al. 2017, as
// Patel et al. 2026 §2.2, §3.2 and §4.2 use it), device side. One warp serves one
// operation at a time.
//
// Super-node: 256 bytes, 32 slots of 8 bytes, one per lane (one coalesced read):
//   slots 0..29  (key, value) pairs; index layers: (key, down node). Unused: key NIL.
//   slot 30      (high, next): every key of the node is <= high; next node of the layer.
//   slot 31      (0, meta): meta = level | DEAD | HEAD | FREED (node locks are in device
//                memory, a word per node of its pool).
// Keys are 1 ..= 2^32 - 2. Index nodes are always sorted; data nodes are sorted, or (the
// §4.2.1 option) unsorted: appended, sorted only when split or merged.
//
// Node references are 32 bits: pool (4 bits, relative to the list's first pool) and index.
// A list's pools: one for all levels, data + index, or one per level (§4.2.1 options).
//
// Ranges and the move-right rule (B-link style). Each live node of a layer covers the
// keys (high of the previous live node, high]; the last node's high is 2^32 - 1. An index
// entry (k, p) says p's range starts below k, so a search for K >= k that goes down to p
// lands at or left of the node covering K and moves right (K > high, or the node is dead)
// until it covers K. Keys only ever move right: a split moves a node's upper half into a
// new node linked after it (high = the new node's first key - 1); a merge moves an
// underfull node's keys into its right neighbour and marks it DEAD (it stays linked, its
// range joins the neighbour's). So a stale index entry is never wrong, only slower, and
// raising a key into the layer above is a separate later step that may even be skipped.
// (An entry's key may end up above its node's high: a node that absorbed a merged
// neighbour and is then split keeps its entry; a search coming down there moves right.)
//
// Concurrency. Updates (insertion or removal kernels, never both at once) lock data nodes
// and read them only under their lock; index nodes are read without locks while other
// warps insert entries into them or split them under their lock. Every slot is written
// with one 8-byte store, so a torn read of an index node shows only pairs that are or
// were entries (each valid in the sense above); a search takes the largest key <= K of
// what it read. The first entry of an index node never changes (inserted keys are >=
// it, a split keeps it), so a search that comes down to a node always finds an entry.
// Locks are taken left to right within a layer (a merge holds a node and its right
// neighbour), never across layers while held, so there is no cycle; every wait is
// bounded (RETRY_LIMIT). Queries run alone (their kernels are separate) and take no locks.
//
// Dead data nodes are unlinked, and the index entries that name them redirected, by a
// compaction kernel between batches, which also returns them to their pool's free list.
#pragma once
#include <gpuds/core/memory.cuh>
#include <gpuds/core/status.cuh>
#include <gpuds/core/warp.cuh>

namespace gpuds {
namespace oversub {
namespace sl {

constexpr unsigned NODE_KEYS = 30;
constexpr unsigned HIGH_SLOT = 30;
constexpr unsigned META_SLOT = 31;
constexpr unsigned NIL = 0xFFFFFFFFu;      // empty slot key; no node
constexpr unsigned BUSY = 0xFFFFFFFEu;     // a head being made
constexpr unsigned KEY_TOP = 0xFFFFFFFFu;  // high of a layer's last node
constexpr unsigned MAX_LEVELS = 16;
constexpr unsigned MERGE_AT = NODE_KEYS / 3;
constexpr unsigned LEVEL_MASK = 0xFFu;
constexpr unsigned DEAD = 1u << 8;
constexpr unsigned HEAD = 1u << 9;
constexpr unsigned FREED = 1u << 10;
constexpr unsigned POOL_SHIFT = 28;
constexpr unsigned INDEX_MASK = (1u << POOL_SHIFT) - 1u;
constexpr unsigned LOCK_CAP = 1u << 20;
constexpr unsigned WALK_CAP = 1u << 26;
// list.faults (test-only, GPUDS_OVERSUB_FAULTS)
constexpr unsigned FAULT_DROP_RAISES = 1u;
// list.flags
constexpr unsigned POOLS_SHARED = 0, POOLS_INDEX = 1, POOLS_PER_LEVEL = 2;
constexpr unsigned POOL_MODE_MASK = 3u;
constexpr unsigned UNSORTED = 4u;
// Outcomes (as the tables').
constexpr unsigned ABSENT = 0, PRESENT = 1, FAILED = 2;

// A node pool: `capacity` nodes at `base`; `bump` nodes handed out from the start; a free
// list of `free_top` node indices (filled between batches; allocation pops it first).
struct pool {
  unsigned long long base;
  unsigned long long free_list;
  unsigned long long locks;  // one word per node, device memory
  unsigned capacity;
  unsigned bump;
  int free_top;
  unsigned exhausted;
  unsigned dropped;  // raises dropped by the lists whose first pool this is (repaired later)
  unsigned pad;
};

// One skip list (a range of a RangeSkipList, or a whole SkipList). 128 bytes.
struct list {
  unsigned heads[MAX_LEVELS];  // head node of each layer (NIL: none yet)
  unsigned height;             // highest layer with a head; searches start there
  unsigned flags;              // pool mode | UNSORTED
  unsigned first_pool;         // its pools: pools[first_pool ..]
  unsigned min_key;            // smallest live key (KEY_TOP when empty; range lists)
  unsigned max_key;            // largest live key (0 when empty)
  unsigned bounds_dirty;       // a removal took the min or max key
  unsigned long long count;    // live keys
  unsigned long long dead;     // data nodes merged away since the last compaction
  unsigned in_aux;             // listed in the auxiliary list (range lists)
  unsigned faults;             // test-only faults (GPUDS_OVERSUB_FAULTS): FAULT_* bits
  unsigned fail_lo, fail_hi;   // test-only: updates of keys in [fail_lo, fail_hi] fail
  unsigned pad[2];
};

__device__ __forceinline__ unsigned long long pack(unsigned k, unsigned v) {
  return static_cast<unsigned long long>(k) | (static_cast<unsigned long long>(v) << 32);
}
__device__ __forceinline__ unsigned key_of(unsigned long long s) { return static_cast<unsigned>(s); }
__device__ __forceinline__ unsigned val_of(unsigned long long s) { return static_cast<unsigned>(s >> 32); }
constexpr unsigned long long EMPTY_SLOT = 0xFFFFFFFFull;

// A list and where its nodes are.
struct list_ref {
  list* l;
  pool* pools;
  unsigned* status;

  __device__ unsigned long long* node(unsigned ref) const {
    const pool& p = pools[l->first_pool + (ref >> POOL_SHIFT)];
    return reinterpret_cast<unsigned long long*>(p.base) + static_cast<unsigned long long>(ref & INDEX_MASK) * 32ull;
  }
  __device__ unsigned* lock_of(unsigned ref) const {
    const pool& p = pools[l->first_pool + (ref >> POOL_SHIFT)];
    return reinterpret_cast<unsigned*>(p.locks) + (ref & INDEX_MASK);
  }
  __device__ unsigned pool_of(unsigned level) const {
    const unsigned mode = l->flags & POOL_MODE_MASK;
    return mode == POOLS_SHARED ? 0u : mode == POOLS_INDEX ? (level > 0 ? 1u : 0u) : level;
  }
  __device__ bool unsorted(unsigned level) const { return level == 0 && (l->flags & UNSORTED) != 0; }

  // A fresh node of `level` (lane 0 only): NIL when the pool is out of nodes.
  __device__ unsigned alloc(unsigned level) const {
    const unsigned local = pool_of(level);
    pool& p = pools[l->first_pool + local];
    const int t = atomicSub(&p.free_top, 1);
    if (t > 0) return (local << POOL_SHIFT) | reinterpret_cast<const unsigned*>(p.free_list)[t - 1];
    const unsigned i = atomicAdd(&p.bump, 1u);
    if (i >= p.capacity) {
      atomicExch(&p.exhausted, 1u);
      return NIL;
    }
    return (local << POOL_SHIFT) | i;
  }
};

// One warp's read of a node: each lane its slot, plus the header broadcast.
struct view {
  unsigned long long s;
  unsigned high, next, meta;
  __device__ unsigned key() const { return key_of(s); }
  __device__ bool valid() const { return warp::lane_id() < NODE_KEYS && key_of(s) != NIL; }
  __device__ bool dead() const { return (meta & DEAD) != 0; }
};

__device__ __forceinline__ view read(const unsigned long long* n) {
  view v;
  v.s = mem::ld_relaxed(n + warp::lane_id());
  const unsigned long long h = __shfl_sync(warp::FULL_MASK, v.s, HIGH_SLOT);
  v.high = key_of(h);
  v.next = val_of(h);
  v.meta = val_of(__shfl_sync(warp::FULL_MASK, v.s, META_SLOT));
  return v;
}

// Node locks live in device memory (one word per node of a pool, zero between kernels),
// whatever the placement of the nodes: waiting warps spin in the device's L2, never over
// the host link. Test and test-and-set with exponential backoff.
__device__ __forceinline__ bool lock(unsigned* w, unsigned* status) {
  unsigned ok = 0;
  if (warp::lane_id() == 0) {
    for (unsigned t = 0; t < LOCK_CAP; ++t) {
      if (mem::ld_relaxed(w) == 0u && mem::cas_acquire(w, 0u, 1u) == 0u) {
        ok = 1;
        break;
      }
      __nanosleep(32u << (t < 6u ? t : 6u));
    }
    if (!ok) status::report(status, status::RETRY_LIMIT);
  }
  ok = __shfl_sync(warp::FULL_MASK, ok, 0);
  __threadfence();
  __syncwarp();
  return ok != 0;
}

__device__ __forceinline__ void unlock(unsigned* w) {
  __threadfence();
  __syncwarp();
  if (warp::lane_id() == 0) mem::st_release(w, 0u);
  __syncwarp();
}

__device__ __forceinline__ void set_meta(unsigned long long* n, unsigned meta) {
  if (warp::lane_id() == 0) mem::st_relaxed(reinterpret_cast<unsigned*>(n + META_SLOT) + 1, meta);
}

// The lane holding the largest valid key <= k (-1: none), by a max-reduction (a torn read
// of an index node may be out of order).
__device__ __forceinline__ int floor_lane(const view& v, unsigned k) {
  const bool ok = v.valid() && v.key() <= k;
  unsigned best = ok ? v.key() : 0u;
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) best = max(best, __shfl_xor_sync(warp::FULL_MASK, best, d));
  const unsigned b = __ballot_sync(warp::FULL_MASK, ok && v.key() == best);
  return b == 0 ? -1 : 31 - __clz(b);
}

// The lane holding the smallest valid key >= k (-1: none).
__device__ __forceinline__ int ceil_lane(const view& v, unsigned k) {
  const bool ok = v.valid() && v.key() >= k;
  unsigned best = ok ? v.key() : 0xFFFFFFFFu;
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) best = min(best, __shfl_xor_sync(warp::FULL_MASK, best, d));
  const unsigned b = __ballot_sync(warp::FULL_MASK, ok && v.key() == best);
  return b == 0 ? -1 : __ffs(b) - 1;
}

// Lane i gets the i-th smallest of the warp's valid elements (`ok`), invalid lanes after;
// keys distinct. For unsorted data nodes before a split or merge.
__device__ __forceinline__ unsigned long long sort_warp(unsigned long long s, bool ok) {
  const unsigned k = key_of(s);
  unsigned rank = 0;
  for (int j = 0; j < 32; ++j) {
    const unsigned kj = __shfl_sync(warp::FULL_MASK, k, j);
    const bool okj = __shfl_sync(warp::FULL_MASK, ok ? 1u : 0u, j) != 0u;
    rank += (okj && kj < k) ? 1u : 0u;
  }
  const unsigned ranked = __ballot_sync(warp::FULL_MASK, ok);
  unsigned long long out = EMPTY_SLOT;
  for (int j = 0; j < 32; ++j) {
    const unsigned rj = __shfl_sync(warp::FULL_MASK, rank, j);
    const unsigned long long sj = __shfl_sync(warp::FULL_MASK, s, j);
    if ((ranked >> j & 1u) && rj == warp::lane_id()) out = sj;
  }
  return out;
}

// Start of a search: the top layer's head, or `to`'s when the list is lower than `to`.
// Lane 0 reads and broadcasts, so every lane follows the same path.
__device__ __forceinline__ unsigned top(const list_ref& r, unsigned& level, unsigned to) {
  unsigned h = 0;
  if (warp::lane_id() == 0) {
    level = mem::ld_acquire(&r.l->height);
    if (level < to) level = to;
    h = mem::ld_acquire(&r.l->heads[level]);
  }
  level = __shfl_sync(warp::FULL_MASK, level, 0);
  return __shfl_sync(warp::FULL_MASK, h, 0);
}

// Descends from the top to layer `to` (lock-free): the node of layer `to` that a search
// for k lands on (at or left of the node covering k). `fence` gets the key of the layer-1
// entry taken (0: the head's). NIL on a corrupted list (reported).
__device__ unsigned descend(const list_ref& r, unsigned k, unsigned to, unsigned& fence) {
  unsigned level = 0;
  unsigned n = top(r, level, to);
  fence = 0;
  unsigned steps = 0;
  while (level > to && n != NIL) {
    view v = read(r.node(n));
    while (k > v.high && v.next != NIL && ++steps < WALK_CAP) {
      n = v.next;
      v = read(r.node(n));
    }
    const int at = floor_lane(v, k);
    if (at < 0) {
      status::report(r.status, status::CORRUPTED);
      return NIL;
    }
    const unsigned long long e = __shfl_sync(warp::FULL_MASK, v.s, at);
    if (level == 1) fence = key_of(e);
    n = val_of(e);
    --level;
  }
  return n;
}

// From node n of a layer, walks right without locks to the live node covering k.
__device__ unsigned covering(const list_ref& r, unsigned n, unsigned k, view& v) {
  for (unsigned steps = 0; n != NIL && steps < WALK_CAP; ++steps) {
    v = read(r.node(n));
    if (!v.dead() && k <= v.high) return n;
    n = v.next;
  }
  status::report(r.status, status::CORRUPTED);
  return NIL;
}

// From node n, locks the live node covering k (moving right), its view in v. NIL: failed.
__device__ unsigned lock_covering(const list_ref& r, unsigned n, unsigned k, view& v) {
  for (unsigned steps = 0; n != NIL && steps < WALK_CAP; ++steps) {
    unsigned long long* p = r.node(n);
    if (!lock(r.lock_of(n), r.status)) return NIL;
    v = read(p);
    if (!v.dead() && k <= v.high) return n;
    const unsigned next = v.next;
    unlock(r.lock_of(n));
    n = next;
  }
  if (n != NIL) status::report(r.status, status::CORRUPTED);
  return NIL;
}

// Writes a fresh node: slots from `s` (lanes < NODE_KEYS), header (high, next), meta.
__device__ __forceinline__ void write_node(unsigned long long* p, unsigned long long s, unsigned high, unsigned next,
                                           unsigned meta) {
  const unsigned lane = warp::lane_id();
  const unsigned long long w = lane < NODE_KEYS ? s : lane == HIGH_SLOT ? pack(high, next) : pack(0u, meta);
  mem::st_relaxed(p + lane, w);
}

// The head of layer `level`, made if missing (one entry: (0, head below)). While another
// warp makes it (BUSY: it holds no lock and only allocates and writes one node), wait for
// it, bounded as a lock wait. NIL when it cannot be had now (the wait given up, or no
// node free): the caller drops the raise, which costs speed, never correctness.
__device__ unsigned head_for(const list_ref& r, unsigned level) {
  unsigned* slot = &r.l->heads[level];
  unsigned h = BUSY;
  bool mine = false;
  if (warp::lane_id() == 0) {
    for (unsigned t = 0; t < LOCK_CAP; ++t) {
      h = mem::ld_acquire(slot);
      if (h == NIL && mem::cas_acq_rel(slot, NIL, BUSY) == NIL) {
        mine = true;
        break;
      }
      if (h != NIL && h != BUSY) break;
      __nanosleep(32u << (t < 6u ? t : 6u));
    }
  }
  mine = __shfl_sync(warp::FULL_MASK, mine ? 1u : 0u, 0) != 0u;
  h = __shfl_sync(warp::FULL_MASK, h, 0);
  if (!mine) return h == BUSY || h == NIL ? NIL : h;
  unsigned n = warp::lane_id() == 0 ? r.alloc(level) : NIL;
  n = __shfl_sync(warp::FULL_MASK, n, 0);
  if (n == NIL) {
    if (warp::lane_id() == 0) mem::st_release(slot, NIL);
    return NIL;
  }
  unsigned below = warp::lane_id() == 0 ? mem::ld_acquire(&r.l->heads[level - 1]) : 0u;
  below = __shfl_sync(warp::FULL_MASK, below, 0);
  const unsigned long long s = warp::lane_id() == 0 ? pack(0u, below) : EMPTY_SLOT;
  write_node(r.node(n), s, KEY_TOP, NIL, level | HEAD);
  __threadfence();
  __syncwarp();
  if (warp::lane_id() == 0) {
    mem::st_release(slot, n);
    atomicMax(&r.l->height, level);
  }
  __syncwarp();
  return n;
}

// Splits the locked, full node n (view v) with the new element `add` into n and a new
// node m; n keeps the lower 16 of the 31, m the upper 15. Returns m (fence: m's first
// key), NIL when no node was free (nothing changed). n stays locked.
__device__ unsigned split(const list_ref& r, unsigned n, const view& v, unsigned long long add, unsigned level,
                          unsigned& fence) {
  unsigned m = warp::lane_id() == 0 ? r.alloc(level) : NIL;
  m = __shfl_sync(warp::FULL_MASK, m, 0);
  if (m == NIL) return NIL;
  const unsigned lane = warp::lane_id();
  const unsigned long long sorted = r.unsorted(level) ? sort_warp(v.s, v.valid()) : v.s;
  // Insert `add` at its rank: 31 elements in lanes 0..30 of `all`.
  const unsigned k = key_of(add);
  const unsigned pos = __popc(__ballot_sync(warp::FULL_MASK, lane < NODE_KEYS && key_of(sorted) < k));
  const unsigned long long up = __shfl_up_sync(warp::FULL_MASK, sorted, 1);
  const unsigned long long all = lane < pos ? sorted : lane == pos ? add : up;
  constexpr unsigned LOW = (NODE_KEYS + 2) / 2;  // 16
  const unsigned long long upper = __shfl_sync(warp::FULL_MASK, all, (lane + LOW) & 31u);
  fence = key_of(__shfl_sync(warp::FULL_MASK, all, LOW));
  unsigned long long* pm = r.node(m);
  write_node(pm, lane + LOW <= NODE_KEYS ? upper : EMPTY_SLOT, v.high, v.next, level);
  __threadfence();
  __syncwarp();
  unsigned long long* pn = r.node(n);
  if (lane == HIGH_SLOT) mem::st_relaxed(pn + lane, pack(fence - 1u, m));
  __threadfence();
  __syncwarp();
  if (lane < NODE_KEYS) mem::st_relaxed(pn + lane, lane < LOW ? all : EMPTY_SLOT);
  return m;
}

// Puts (k, x) into the locked node n (view v) of `level`: replaces the value (or down
// pointer) of an equal key, or with `add` adds x to it, else inserts, splitting a full
// node. Unlocks n. A split leaves (raise_key, raise_ref) for the layer above (raise_ref
// NIL: none). FAILED (no node free for a split) applies nothing.
__device__ unsigned put_locked(const list_ref& r, unsigned n, const view& v, unsigned k, unsigned x, unsigned level,
                               unsigned& raise_key, unsigned& raise_ref, bool add = false) {
  raise_ref = NIL;
  const unsigned lane = warp::lane_id();
  unsigned long long* p = r.node(n);
  const unsigned hit = __ballot_sync(warp::FULL_MASK, v.valid() && v.key() == k);
  if (hit != 0) {
    if (lane == static_cast<unsigned>(__ffs(hit) - 1)) mem::st_relaxed(p + lane, pack(k, add ? val_of(v.s) + x : x));
    unlock(r.lock_of(n));
    return PRESENT;
  }
  const unsigned count = __popc(__ballot_sync(warp::FULL_MASK, v.valid()));
  unsigned outcome = ABSENT;
  if (count < NODE_KEYS) {
    if (r.unsorted(level)) {
      if (lane == count) mem::st_relaxed(p + lane, pack(k, x));
    } else {
      const unsigned pos = __popc(__ballot_sync(warp::FULL_MASK, v.valid() && v.key() < k));
      const unsigned long long up = __shfl_up_sync(warp::FULL_MASK, v.s, 1);
      if (lane >= pos && lane <= count) mem::st_relaxed(p + lane, lane == pos ? pack(k, x) : up);
    }
  } else {
    unsigned fence = 0;
    const unsigned m = split(r, n, v, pack(k, x), level, fence);
    if (m == NIL) {
      // Only the operation's own split fails it; a raise that finds no node is dropped
      // (the pool's exhausted flag still tells the host to grow it).
      if (level == 0) status::report(r.status, status::POOL_EXHAUSTED);
      outcome = FAILED;
    } else {
      raise_key = fence;
      raise_ref = m;
    }
  }
  unlock(r.lock_of(n));
  return outcome;
}

// Counts a dropped raise in the list's first pool: the host repairs the index between
// batches (sl_named, sl_unindexed, sl_raise_jobs) when the count is not zero.
__device__ __forceinline__ void dropped_raise(const list_ref& r) {
  if (warp::lane_id() == 0) atomicAdd(&r.pools[r.l->first_pool].dropped, 1u);
}

// Enters (k, m) into the layers above `level`, splitting and raising further as needed.
// Best effort: a raise that cannot be made (no free node, a head being made by another
// warp, a lock wait given up) is dropped, which is correct (see the header), and counted
// so that the host raises the node later. (The layer cap, MAX_LEVELS, is never counted:
// no list is that tall.)
__device__ void raise(const list_ref& whole, unsigned k, unsigned m, unsigned level) {
  // Best effort: nothing here reports to the call's status (a lock wait given up or a
  // corrupted-looking read drops the raise; the operation itself has applied).
  list_ref r = whole;
  r.status = nullptr;
#ifdef GPUDS_OVERSUB_FAULTS
  if (m != NIL && (r.l->faults & FAULT_DROP_RAISES) != 0u) {
    dropped_raise(r);
    return;
  }
#endif
  while (m != NIL && level + 1 < MAX_LEVELS) {
    ++level;
    if (head_for(r, level) == NIL) {
      dropped_raise(r);
      return;
    }
    unsigned fence = 0;
    unsigned n = descend(r, k, level, fence);
    view v;
    n = lock_covering(r, n, k, v);
    if (n == NIL) {
      dropped_raise(r);
      return;
    }
    unsigned next_key = 0, next_ref = NIL;
    if (put_locked(r, n, v, k, m, level, next_key, next_ref) == FAILED) {
      dropped_raise(r);
      return;
    }
    k = next_key;
    m = next_ref;
  }
}

// Test-only (the host's `fault-injection` feature defines GPUDS_OVERSUB_FAULTS): an
// update of a key in the list's [fail_lo, fail_hi] gives up as a lock wait past its cap
// does (RETRY_LIMIT, nothing applied), so tests can fail known keys.
__device__ __forceinline__ bool update_fails(const list_ref& r, unsigned k) {
#ifdef GPUDS_OVERSUB_FAULTS
  if (r.l->fail_lo <= k && k <= r.l->fail_hi) {
    status::report(r.status, status::RETRY_LIMIT);
    return true;
  }
#endif
  (void)r;
  (void)k;
  return false;
}

// Inserts or replaces k -> value (with `add`: adds value to k's, inserting it when
// absent). ABSENT (added), PRESENT (replaced) or FAILED (nothing applied).
__device__ unsigned insert(const list_ref& r, unsigned k, unsigned value, bool add = false) {
  if (update_fails(r, k)) return FAILED;
  unsigned fence = 0;
  unsigned n = descend(r, k, 0, fence);
  view v;
  n = lock_covering(r, n, k, v);
  if (n == NIL) return FAILED;
  unsigned rk = 0, rm = NIL;
  const unsigned outcome = put_locked(r, n, v, k, value, 0, rk, rm, add);
  if (rm != NIL) raise(r, rk, rm, 0);
  return outcome;
}

// Merges the locked, underfull data node c (its elements `cs`, `count` of them, in
// lanes 0..count-1, sorted unless the layout is unsorted) into its right neighbour: the
// neighbour takes them all, or (too full) is split first and takes its share. c becomes
// DEAD. Skipped when no node is free for that split or a lock wait is given up. c stays
// locked. A split leaves (raise_key, raise_ref).
__device__ void merge_right(const list_ref& whole, unsigned c, const view& cv, unsigned long long cs, unsigned count,
                            unsigned& raise_key, unsigned& raise_ref) {
  // Best effort as raise(): the removal has applied, a merge that cannot be made now
  // reports nothing.
  list_ref r = whole;
  r.status = nullptr;
  raise_ref = NIL;
  const unsigned lane = warp::lane_id();
  unsigned q = cv.next;
  view qv;
  for (unsigned steps = 0;; ++steps) {
    if (q == NIL || steps >= WALK_CAP) return;
    if (!lock(r.lock_of(q), r.status)) return;
    qv = read(r.node(q));
    if (!qv.dead()) break;
    const unsigned next = qv.next;
    unlock(r.lock_of(q));
    q = next;
  }
  unsigned long long* pq = r.node(q);
  const unsigned qcount = __popc(__ballot_sync(warp::FULL_MASK, qv.valid()));
  const unsigned total = count + qcount;
  const bool unsorted = r.unsorted(0);
  // The concatenation c ++ q (c's keys are all below q's): element j of it.
  const unsigned long long a = unsorted ? sort_warp(cs, lane < count) : cs;
  const unsigned long long b = unsorted ? sort_warp(qv.s, qv.valid()) : qv.s;
  auto element = [&](unsigned j) {
    const unsigned long long x = __shfl_sync(warp::FULL_MASK, a, j & 31u);
    const unsigned long long y = __shfl_sync(warp::FULL_MASK, b, (j - count) & 31u);
    return j < count ? x : y;
  };
  if (total <= NODE_KEYS) {
    const unsigned long long s = element(lane);
    if (lane < NODE_KEYS) mem::st_relaxed(pq + lane, lane < total ? s : EMPTY_SLOT);
  } else {
    unsigned m = lane == 0 ? r.alloc(0) : NIL;
    m = __shfl_sync(warp::FULL_MASK, m, 0);
    if (m == NIL) {
      unlock(r.lock_of(q));
      return;
    }
    const unsigned low = (total + 1) / 2;
    const unsigned long long hi_part = element(lane + low);
    const unsigned long long lo_part = element(lane);
    const unsigned fence = key_of(element(low));
    write_node(r.node(m), lane + low < total ? hi_part : EMPTY_SLOT, qv.high, qv.next, 0u);
    __threadfence();
    __syncwarp();
    if (lane == HIGH_SLOT) mem::st_relaxed(pq + lane, pack(fence - 1u, m));
    if (lane < NODE_KEYS) mem::st_relaxed(pq + lane, lane < low ? lo_part : EMPTY_SLOT);
    raise_key = fence;
    raise_ref = m;
  }
  set_meta(r.node(c), cv.meta | DEAD);
  if (lane == 0) atomicAdd(&r.l->dead, 1ull);
  unlock(r.lock_of(q));
}

// Removes k. PRESENT (removed; its value in `old`), ABSENT or FAILED.
__device__ unsigned erase(const list_ref& r, unsigned k, unsigned& old) {
  if (update_fails(r, k)) return FAILED;
  unsigned fence = 0;
  unsigned n = descend(r, k, 0, fence);
  view v;
  n = lock_covering(r, n, k, v);
  if (n == NIL) return FAILED;
  unsigned long long* p = r.node(n);
  const unsigned lane = warp::lane_id();
  const unsigned hit = __ballot_sync(warp::FULL_MASK, v.valid() && v.key() == k);
  if (hit == 0) {
    unlock(r.lock_of(n));
    return ABSENT;
  }
  const unsigned pos = __ffs(hit) - 1;
  old = val_of(__shfl_sync(warp::FULL_MASK, v.s, pos));
  const unsigned count = __popc(__ballot_sync(warp::FULL_MASK, v.valid()));
  // The node's elements after the removal, compact in lanes 0..count-2.
  unsigned long long now;
  if (r.unsorted(0)) {
    const unsigned long long last = __shfl_sync(warp::FULL_MASK, v.s, count - 1);
    now = lane == pos ? last : v.s;
  } else {
    const unsigned long long down = __shfl_down_sync(warp::FULL_MASK, v.s, 1);
    now = lane >= pos ? down : v.s;
  }
  if (lane + 1 == count) now = EMPTY_SLOT;
  if (lane >= pos && lane < count) mem::st_relaxed(p + lane, now);
  unsigned rk = 0, rm = NIL;
  if (count - 1 <= MERGE_AT && (v.meta & HEAD) == 0 && v.next != NIL) merge_right(r, n, v, now, count - 1, rk, rm);
  unlock(r.lock_of(n));
  if (rm != NIL) raise(r, rk, rm, 0);
  return PRESENT;
}

// Lookup without locks. PRESENT with the value, or ABSENT (FAILED: corrupted list).
__device__ unsigned find(const list_ref& r, unsigned k, unsigned& value) {
  unsigned fence = 0;
  view v;
  const unsigned n = covering(r, descend(r, k, 0, fence), k, v);
  if (n == NIL) return FAILED;
  const unsigned hit = __ballot_sync(warp::FULL_MASK, v.valid() && v.key() == k);
  if (hit == 0) return ABSENT;
  value = val_of(__shfl_sync(warp::FULL_MASK, v.s, __ffs(hit) - 1));
  return PRESENT;
}

// The pair with the smallest key >= k: PRESENT and (key, value), or ABSENT.
__device__ unsigned successor(const list_ref& r, unsigned k, unsigned& key, unsigned& value) {
  unsigned fence = 0;
  view v;
  unsigned n = covering(r, descend(r, k, 0, fence), k, v);
  for (unsigned steps = 0; n != NIL && steps < WALK_CAP; ++steps) {
    if (!v.dead()) {
      const int at = ceil_lane(v, k);
      if (at >= 0) {
        const unsigned long long e = __shfl_sync(warp::FULL_MASK, v.s, at);
        key = key_of(e);
        value = val_of(e);
        return PRESENT;
      }
    }
    n = v.next;
    if (n != NIL) v = read(r.node(n));
  }
  return ABSENT;
}

// The pair with the largest key <= k: PRESENT and (key, value), or ABSENT. Walks from
// the landing node to the node covering k; when none of those holds a key <= k, the
// answer lies left of the landing node, below the fence of the index entry that led
// there: search again below it (the fence strictly falls, so this ends).
__device__ unsigned predecessor(const list_ref& r, unsigned k, unsigned& key, unsigned& value) {
  for (unsigned tries = 0; tries < WALK_CAP; ++tries) {
    unsigned fence = 0;
    unsigned n = descend(r, k, 0, fence);
    bool found = false;
    for (unsigned steps = 0; n != NIL && steps < WALK_CAP; ++steps) {
      const view v = read(r.node(n));
      if (!v.dead()) {
        const int at = floor_lane(v, k);
        if (at >= 0) {
          const unsigned long long e = __shfl_sync(warp::FULL_MASK, v.s, at);
          key = key_of(e);
          value = val_of(e);
          found = true;
        }
        if (k <= v.high) break;
      }
      n = v.next;
    }
    if (found) return PRESENT;
    if (fence == 0) return ABSENT;
    k = fence - 1u;
  }
  return ABSENT;
}

// Visits the pairs with lo <= key <= hi in key order: `emit(s, ok, rank)` on every lane,
// with ok on the lanes holding such a pair and rank its place among them in this node
// (nodes in order); returns the number of pairs.
template <class Emit>
__device__ unsigned long long walk_range(const list_ref& r, unsigned lo, unsigned hi, Emit&& emit) {
  unsigned long long total = 0;
  if (lo > hi) return 0;
  unsigned fence = 0;
  view v;
  unsigned n = covering(r, descend(r, lo, 0, fence), lo, v);
  const unsigned lane = warp::lane_id();
  for (unsigned steps = 0; n != NIL && steps < WALK_CAP; ++steps) {
    if (!v.dead()) {
      const bool ok = v.valid() && v.key() >= lo && v.key() <= hi;
      const unsigned b = __ballot_sync(warp::FULL_MASK, ok);
      unsigned rank = __popc(b & ((1u << lane) - 1u));
      if (r.unsorted(0)) {
        rank = 0;
        for (int j = 0; j < 32; ++j) {
          const unsigned kj = __shfl_sync(warp::FULL_MASK, v.key(), j);
          rank += ((b >> j & 1u) && kj < v.key()) ? 1u : 0u;
        }
      }
      emit(v.s, ok, total + rank);
      total += __popc(b);
      if (hi <= v.high) break;
    }
    n = v.next;
    if (n != NIL) v = read(r.node(n));
  }
  return total;
}

}  // namespace sl
}  // namespace oversub
}  // namespace gpuds
