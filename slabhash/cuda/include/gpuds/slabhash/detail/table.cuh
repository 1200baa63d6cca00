// gpuds/slabhash/detail/table.cuh: what map_ref and set_ref share: the fields of a slab
// hash (B base slabs, a SlabAlloc for the rest, the universal hash, counters and status
// word) and the warp-cooperative walk along one request's list.
//
// The walk is the slab hash paper's work-sharing loop (§IV-A, Fig. 2), core's
// work_queue: lanes with a request vote, the warp takes the lowest voter's key and bucket
// and reads one slab per round, all lanes together (reading the next request's base slab
// ahead, see walk); the operation's body looks at the slab with ballots and decides to
// finish, re-read the same slab (a CAS lost a race) or move on.
//
// The step cap is the most slabs a list may have, and so the most slabs a request
// visits: an insert never appends a slab to a list that already has `step_cap` slabs
// (it fails alone with LIST_FULL instead), so every read walks every list to its end
// within the cap, before and after any failed insert. A request that would visit more
// slabs (only a corrupted list, a cycle, has them) or re-read one slab more often than
// `retry_cap()` (CASes lost to other warps) reports RETRY_LIMIT and fails alone, so no
// kernel can hang.
#pragma once
#include <gpuds/core/hash.cuh>
#include <gpuds/core/status.cuh>
#include <gpuds/core/work_queue.cuh>
#include <gpuds/slabhash/slab.cuh>

namespace gpuds {
namespace slabhash {
namespace detail {

// Status flag (the first structure bit): an insert found its key's list full at the step
// cap and was not applied (Rust: gpuds_slabhash::LIST_FULL).
constexpr unsigned LIST_FULL = status::FIRST_STRUCTURE_BIT;

// The least number of re-reads of one slab and of store passes a request may take,
// whatever the step cap: losing a CAS is contention, not a long list.
constexpr unsigned RETRY_FLOOR = 1u << 12;

// The counters' stripes: lines of 16 words (128 bytes), live keys in word 0, claimed
// slots (live + tombstones) in word 1. The host sums them.
constexpr unsigned COUNTER_STRIPES = 32;
constexpr unsigned COUNTER_STRIPE_WORDS = 16;

// The odd constant of the 64-bit key fold (2^32 over the golden ratio).
constexpr unsigned KEY_FOLD = 0x9E3779B9u;

// What an inserting operation may take instead of a warp_allocator: a tag that makes a
// warp_allocator at each allocation. Most warps of a batch at the paper's utilizations
// never allocate, so they skip the allocator's set-up (two hashes, a remainder and a
// bitmap read) and keep no allocator state in registers while they walk.
struct on_demand_allocator {};

struct table {
  unsigned* buckets;                // num_buckets base slabs, 32 words each
  unsigned long long* counters;     // COUNTER_STRIPES lines: [0] live keys, [1] claimed slots
  unsigned* status;                 // the table's status word
  alloc::slab_alloc_ref alloc;      // where slabs beyond the base slabs live
  hash::universal hash;             // bucket = ((a*k + b) mod p) mod num_buckets
  unsigned num_buckets;
  unsigned unique_keys;             // 1: keys are unique (REPLACE); 0: duplicates allowed
  unsigned step_cap;                // slabs a list may have and a request may visit

  // A 64-bit key is folded to 32 bits first: the low word xor the high word times an odd
  // constant, a bijection of either word for a fixed other, so keys that differ in one
  // word only never fold together (host twin: gpuds_slabhash::SlabKey::fold).
  __device__ static unsigned fold(unsigned key) { return key; }
  __device__ static unsigned fold(unsigned long long key) {
    return static_cast<unsigned>(key) ^ (static_cast<unsigned>(key >> 32) * KEY_FOLD);
  }
  template <class K>
  __device__ unsigned bucket_of(K key) const {
    return hash(fold(key), num_buckets);
  }
  // Re-reads of one slab (lost CASes) and store passes one request may take.
  __device__ unsigned retry_cap() const { return step_cap > RETRY_FLOOR ? step_cap : RETRY_FLOOR; }
  __device__ unsigned* base_slab(unsigned bucket) const {
    return buckets + static_cast<unsigned long long>(bucket) * SLAB_WORDS;
  }
  __device__ unsigned* slab_at(unsigned address) const {
    return alloc.pointer_as<unsigned>(address);
  }

  // The warp's allocator for inserting operations (once per warp per kernel).
  __device__ alloc::warp_allocator make_allocator() const {
    return alloc::warp_allocator(alloc);
  }

  // Lane `dest` swaps the word (32 or 64 bits, as T) at lane `dest` of `slab` from
  // `expected` to `desired`; every lane (`lane`: its own id) learns whether the swap won.
  template <class T>
  __device__ __forceinline__ static bool elected_cas(unsigned* slab, unsigned lane, int dest, T expected,
                                                     T desired) {
    bool won = false;
    if (lane == static_cast<unsigned>(dest)) {
      won = mem::cas_relaxed(reinterpret_cast<T*>(slab + dest), expected, desired) == expected;
    }
    return __shfl_sync(warp::FULL_MASK, won, dest);
  }

  template <class K, class V>
  __device__ slab_iterator<K, V> iterate(unsigned bucket) const {
    slab_iterator<K, V> it;
    it.alloc = alloc;
    it.slab = base_slab(bucket);
    it.word_ = read_slab(it.slab);
    return it;
  }

  // Adds this warp's changes to the counters with one atomic per counter (warp-uniform
  // arguments), in the stripe of the warp: atomics on one address serialize in L2, and
  // a batch makes one per warp, so a single counter would cost more than the batch.
  // The counts are the sums over the stripes (wrapping: a stripe may go "negative").
  __device__ void count(long long live, long long claimed) const {
    if (warp::lane_id() == 0) {
      unsigned long long* stripe =
          counters + (warp::global_warp_id() % COUNTER_STRIPES) * COUNTER_STRIPE_WORDS;
      if (live != 0) mem::fetch_add_relaxed(&stripe[0], static_cast<unsigned long long>(live));
      if (claimed != 0) {
        mem::fetch_add_relaxed(&stripe[1], static_cast<unsigned long long>(claimed));
      }
    }
  }

  __device__ void report(unsigned flag) const { status::report(status, flag); }

  // Requests with a reserved key are refused (RESERVED_KEY) and marked failed.
  template <class K>
  __device__ bool admit(bool active, K key, unsigned& outcome) const {
    if (active && is_reserved_key(key)) {
      report(status::RESERVED_KEY);
      outcome = OP_FAILED;
      return false;
    }
    return active;
  }

  // Runs the work-sharing loop (gpuds/core/work_queue.cuh) over the lanes with `active`.
  // `visit(src, key, want, slab, word, depth)` is called by all lanes with src's key, this
  // lane's word of it (lane_key_word: the key for 32-bit keys, its low or high word for
  // 64-bit ones, computed once per request so that a visit matches a slab with one
  // compare and one ballot), the slab it is at (the `depth`-th of its list, the base slab
  // being the first) and this lane's word of it; it returns true when src's request is
  // finished, and may move `slab` (to the next slab, or to one it appended); returning
  // false with `slab` unchanged re-reads it. A request that would visit more than `step_cap` slabs or re-read more than
  // `retry_cap()` times reports RETRY_LIMIT and gets OP_FAILED in its lane's `outcome`.
  //
  // Two choices make the loop cheap here. Each lane hashes its own key before the loop,
  // all lanes at once, so a request costs two shuffles instead of a hash (the hash's
  // 64-bit remainders would otherwise be the most expensive part of a round). And the
  // work queue reads the next request's base slab while this one runs, keeping only its
  // bucket and this lane's word of it (two registers, not three for a slab address) across
  // the visits; a request settled in its base slab (most of them at the paper's
  // utilizations) exposes little latency of its own. A base slab read ahead may be stale
  // by the time its request runs; operations only ever change a slab through a CAS that
  // checks what they saw (a lost CAS re-reads or runs its request again), or, deleting a
  // unique key, through an exchange whose result says what it replaced.
  template <class K, class Visit>
  __device__ void walk(bool active, K key, unsigned& outcome, Visit&& visit) const {
    walk_from(active, home_of(active, key), key, outcome, visit);
  }

  // A request's home bucket in this table (0 for a lane with no request).
  template <class K>
  __device__ unsigned home_of(bool active, K key) const {
    return active ? bucket_of(key) : 0u;
  }

  // home_of, with the bucket's base slab (a valid address) asked of L2 (no value returned)
  // by each lane for its own request: the walk takes the requests one at a time,
  // reading one base slab ahead, so without it each base slab would wait for DRAM in
  // turn. The warp walk's lookups and deletions of a table's own buckets use it (H200,
  // 2^24 keys: u32 finds and deletions 1.11-1.12x, 64-bit finds 1.07-1.19x;
  // docs/slabhash.md); inserts do not (u32 1.03x, u64/u64 0.98x), nor do the graph's
  // tables, whose lists are views (their insertions and deletions were 5-7 % slower with
  // it). The bulk kernels now run each lane alone or tiles first (map_ref's `_alone_in`
  // forms): the tiles ask L2 for each lane's base slab themselves, a lane alone reads its
  // own at once.
  template <class K>
  __device__ unsigned fetched_home_of(bool active, K key) const {
    const unsigned bucket = home_of(active, key);
    if (active) mem::prefetch_l2(base_slab(bucket));
    return bucket;
  }

  // The base slab of a request's list: a home is a bucket of this table (unsigned), or
  // the base slab itself (unsigned*) for a list that lives outside `buckets`: a table
  // that is a view of (base, buckets) inside a larger allocation, as each vertex's table
  // of gpuds-graph, whose lanes' requests go to different tables.
  __device__ unsigned* home_slab(unsigned bucket) const { return base_slab(bucket); }
  __device__ static unsigned* home_slab(unsigned* slab) { return slab; }

  // walk with each lane's home given (a bucket of this table, or a base slab; see
  // home_slab) instead of hashed from its key here.
  template <class Home, class K, class Visit>
  __device__ void walk_from(bool active, Home home, K key, unsigned& outcome, Visit&& visit) const {
    const unsigned lane = warp::lane_id();
    work_queue::queue q(active);
    if (q.empty()) return;
    int src = q.front();
    unsigned* slab = home_slab(warp::broadcast(home, src));
    unsigned word = read_slab(slab);
    for (;;) {
      const int next_src = q.pop();
      // The next request's home, not its slab address, is kept across the visit (one
      // register instead of two for a bucket).
      Home next_home = Home();
      unsigned next_word = 0u;
      if (next_src >= 0) {
        next_home = warp::broadcast(home, next_src);
        next_word = read_slab(home_slab(next_home));
      }
      const K k = warp::broadcast(key, src);
      const unsigned want = lane_key_word(k);
      for (work_queue::budget b(step_cap, retry_cap());;) {
        const unsigned* const at = slab;
        if (visit(src, k, want, slab, word, b.depth)) break;
        if (!b.spend(slab != at ? work_queue::MOVED : work_queue::AGAIN)) {
          report(status::RETRY_LIMIT);
          if (lane == static_cast<unsigned>(src)) outcome = OP_FAILED;
          break;
        }
        word = read_slab(slab);
      }
      if (next_src < 0) return;
      src = next_src;
      slab = home_slab(next_home);
      word = next_word;
    }
  }

  // Follows the next address of the slab whose words the lanes hold; false at the tail.
  __device__ bool advance(unsigned*& slab, unsigned word) const {
    const unsigned next = __shfl_sync(warp::FULL_MASK, word, NEXT_LANE);
    if (next == NULL_SLAB) return false;
    slab = slab_at(next);
    return true;
  }

  // Whether a slab may be appended after the `depth`-th slab of a list: only below the
  // step cap (else LIST_FULL is reported), so that no list ever has more than `step_cap`
  // slabs.
  __device__ bool may_append(unsigned depth) const {
    if (depth < step_cap) return true;
    report(LIST_FULL);
    return false;
  }

  // For an inserting request with no slot in this slab (the `depth`-th of its list):
  // moves `slab` to the next slab of the list, appending one at its end. False when the
  // list is at the step cap (LIST_FULL) or the pool is exhausted (POOL_EXHAUSTED).
  template <class Allocator>
  __device__ bool move_on(Allocator& allocator, unsigned*& slab, unsigned word, unsigned depth) const {
    return advance(slab, word) || (may_append(depth) && append(allocator, slab));
  }

  // One slab from the warp's allocator, or from one made for this allocation only when
  // the operation was given an on_demand_allocator.
  __device__ unsigned take_slab(alloc::warp_allocator& allocator) const {
    return allocator.allocate();
  }
  __device__ unsigned take_slab(on_demand_allocator&) const {
    alloc::warp_allocator allocator(alloc);
    return allocator.allocate();
  }

  // Appends a fresh slab after `tail` (whose next address was seen NULL) or, if another
  // warp got there first, moves to that warp's slab. False when the pool is exhausted.
  template <class Allocator>
  __device__ bool append(Allocator& allocator, unsigned*& tail) const {
    const unsigned lane = warp::lane_id();
    const unsigned fresh = take_slab(allocator);
    if (fresh == NULL_SLAB) {
      report(status::POOL_EXHAUSTED);
      return false;
    }
    unsigned* slab = slab_at(fresh);
    mem::st_relaxed(slab + lane, FRESH_WORD);
    // bar.warp.sync orders the other lanes' stores before lane 31's release CAS.
    __syncwarp();
    unsigned seen = NULL_SLAB;
    if (lane == NEXT_LANE) {
      seen = mem::cas_acq_rel(tail + NEXT_LANE, NULL_SLAB, fresh);
      if (seen != NULL_SLAB) alloc.deallocate(fresh);
    }
    seen = __shfl_sync(warp::FULL_MASK, seen, NEXT_LANE);
    tail = slab_at(seen == NULL_SLAB ? fresh : seen);
    return true;
  }
};

}  // namespace detail
}  // namespace slabhash
}  // namespace gpuds
