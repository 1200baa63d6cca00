// VersionedBTreeMap's kernels: root creation, batched insertion and removal (whole warps;
// the update mode is in the tree ref; a batch that can make no version, in place with no
// live snapshot, runs mv_insert_plain, without the copy code, or mv_erase_plain, on
// 16-lane tiles), snapshots, queries at a snapshot (tiles of QUERY_TILE lanes,
// non-coherent loads: no kernel changes the tree while a host-side query runs; the newest
// state's finds without the version walk, mv_find_newest), the mixed batch (whole warps,
// coherent loads, a tile-wide snapshot per query) and the version collector. Compiled
// once per key type KEY_T and value type VALUE_T; KERNEL_SUFFIX names the instantiation
// (`mv_insert_u32_u32`).
// Range queries with 8- and 16-lane tiles run every tile of a warp in step
// (detail::range_in_step: whole-warp ballots and shuffles, one node per tile and round);
// 32-lane tiles, or MVBTREE_LOCKSTEP=0, take the per-tile walk (detail::range).
#include <gpuds/mvbtree/versioned_tree_ref.cuh>
#include <gpuds/mvbtree/detail/vlockstep.cuh>
#include <gpuds/btree/detail/work_share.cuh>
#include <gpuds/core/kernel_name.cuh>

#ifndef MVBTREE_LOCKSTEP
#define MVBTREE_LOCKSTEP 1
#endif

using namespace gpuds::mvbtree;
using K = KEY_T;
using V = VALUE_T;
using S = vshape<K, V>;
using tree = versioned_tree_ref<K, V>;
using gpuds::alloc::warp_allocator;
using gpuds::btree::detail::for_each_chunk;
using gpuds::btree::detail::tile_work_share;
using gpuds::btree::detail::warp_work_share;
using gpuds::warp::FULL_MASK;
using gpuds::warp::lane_id;
using warp = gpuds::warp::tile<32>;
using qtile = gpuds::warp::tile<QUERY_TILE>;
constexpr bool IN_STEP = MVBTREE_LOCKSTEP != 0 && QUERY_TILE < 32;

// Occupancy of the update kernels: blocks of 256 threads (the host's) per SM each is
// compiled for. The insertion walks are latency-bound, so more warps in flight pay more
// than the few registers spilled to fit them. On the H200, 2^24 random u32 keys into an
// empty tree: the versioned insertion at 3 blocks (68 registers, no bounds) inserted 0.61
// G keys/s in place and 0.42 out of place, at 5 blocks (48 registers, 24 bytes spilled)
// 0.83 and 0.61 (4, 6 and 8 blocks: slower in place); the insertion without versions
// (mv_insert_plain) at 5 blocks 0.86-0.87, at 6 (40 registers, 32 bytes spilled)
// 0.90-0.91. Wider pairs need more registers: 4 blocks spill nothing or little. The
// removal without versions (16-lane tiles) fits 8 blocks (32 registers) with u32 pairs.
// MV_INSERT_MIN_BLOCKS, MV_INSERT_PLAIN_MIN_BLOCKS, MV_ERASE_MIN_BLOCKS override them.
#ifdef MV_INSERT_MIN_BLOCKS
constexpr unsigned INSERT_MIN_BLOCKS = MV_INSERT_MIN_BLOCKS;
#else
constexpr unsigned INSERT_MIN_BLOCKS = sizeof(K) + sizeof(V) > 8 ? 4 : 5;
#endif
#ifdef MV_INSERT_PLAIN_MIN_BLOCKS
constexpr unsigned INSERT_PLAIN_MIN_BLOCKS = MV_INSERT_PLAIN_MIN_BLOCKS;
#else
constexpr unsigned INSERT_PLAIN_MIN_BLOCKS = sizeof(K) + sizeof(V) > 8 ? 4 : 6;
#endif
#ifdef MV_ERASE_MIN_BLOCKS
constexpr unsigned ERASE_MIN_BLOCKS = MV_ERASE_MIN_BLOCKS;
#else
constexpr unsigned ERASE_MIN_BLOCKS = sizeof(K) + sizeof(V) > 8 ? 5 : 8;
#endif

namespace {

__device__ __forceinline__ void add_size(const tree& t, long long delta) {
  if (lane_id() == 0 && delta != 0) {
    gpuds::mem::fetch_add_relaxed(t.tree.size, static_cast<unsigned long long>(delta));
  }
}

// The tree ref with the batch's time read once (IN_PLACE: the clock cannot move while the
// batch runs, so a change need not read it again).
__device__ __forceinline__ tree batch_time(tree t) {
  if (t.mode == IN_PLACE) t.now = gpuds::mem::ld_relaxed(t.clock);
  return t;
}

// Bits of a chunk of 32 requests, written by lane 0.
__device__ __forceinline__ void put_bits(unsigned* out, unsigned chunk, bool bit) {
  const unsigned b = __ballot_sync(FULL_MASK, bit);
  if (lane_id() == 0 && out != nullptr) out[chunk] = b;
}

// The query loop: one request per thread, one at a time per tile; f(index, src) runs on
// the whole tile for the request of tile lane src and returns its result word, which
// lane src keeps.
template <class F>
__device__ __forceinline__ void for_each_query(unsigned n, F&& f) {
  const unsigned long long threads = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  const unsigned long long first = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  // A warp-uniform loop: every lane runs the same number of rounds.
  const unsigned long long base0 = first - lane_id();
  for (unsigned long long base = base0; base < n; base += threads) {
    const unsigned long long i = base + lane_id();
    const bool active = i < n;
    tile_work_share<QUERY_TILE>(active, [&](unsigned src) {
      const unsigned at = static_cast<unsigned>(qtile::shfl(static_cast<unsigned>(i), src));
      f(at, src);
    });
  }
}

// The query loop with the tiles of a warp in step (for detail::range_in_step): every
// lane of the warp calls f(live, index, src) the same number of times; on a tile with a
// request, live is set and index is the request of its lane src; on a tile without one
// (its lanes' requests are done), live is false and index must not be read.
template <class F>
__device__ __forceinline__ void for_each_query_in_step(unsigned n, F&& f) {
  for_each_chunk(n, [&](unsigned, unsigned i, bool active) {
    warp_work_share<QUERY_TILE>(active, [&](bool live, unsigned src) {
      const unsigned from = (lane_id() & ~(QUERY_TILE - 1u)) + src;
      f(live, static_cast<unsigned>(__shfl_sync(FULL_MASK, i, static_cast<int>(from))), src);
    });
  });
}

}  // namespace

// One warp: allocates the root, an empty leaf stamped with the current time.
extern "C" __global__ void GPUDS_KERNEL(mv_init)(tree t, unsigned* root) {
  if (gpuds::warp::global_warp_id() != 0) return;
  warp_allocator allocator(t.tree.alloc);
  const node_addr a = allocator.allocate();
  if (a != null_node) {
    const unsigned now = gpuds::mem::ld_acquire(t.clock);
    detail::store_fresh<K, V>(t.words(a), K(0), V(0), now, null_node, gpuds::btree::LATCH_FREE,
                              gpuds::btree::make_meta(0, 0), gpuds::btree::no_high_key<K>(), null_node);
  }
  if (lane_id() == 0) *root = a;
}

// Takes one snapshot; *out gets its timestamp (UNSET_TS, CLOCK_FULL reported, when none
// is left).
extern "C" __global__ void GPUDS_KERNEL(mv_snapshot)(tree t, unsigned* out) {
  if (gpuds::warp::global_warp_id() != 0) return;
  const unsigned s = t.take_snapshot<32>();
  if (lane_id() == 0) *out = s;
}

// Batched insertion: replaced and failed bits per request. PLAIN: no version can be made
// (IN_PLACE, no live snapshot), so the copy code is left out.
template <bool PLAIN>
__device__ __forceinline__ void insert_each(const tree& tree_arg, const K* keys, const V* values, unsigned n,
                                            unsigned* replaced_bits, unsigned* failed_bits) {
  const tree t = batch_time(tree_arg);
  warp_allocator allocator(t.tree.alloc);
  gpuds::alloc::null_block none;
  long long added = 0;
  for_each_chunk(n, [&](unsigned chunk, unsigned i, bool active) {
    const K my_key = active ? keys[i] : K(0);
    const V my_value = active ? values[i] : V(0);
    gpuds::btree::insert_outcome outcome = gpuds::btree::INSERT_FAILED;
    tile_work_share<32>(active, [&](unsigned src) {
      const auto r = detail::insert<gpuds::alloc::null_block, PLAIN>(t, allocator, &none, warp::shfl(my_key, src),
                                                                      warp::shfl(my_value, src));
      if (lane_id() == src) outcome = r;
    });
    added += __popc(__ballot_sync(FULL_MASK, outcome == gpuds::btree::INSERT_ADDED));
    put_bits(replaced_bits, chunk, outcome == gpuds::btree::INSERT_REPLACED);
    put_bits(failed_bits, chunk, active && outcome == gpuds::btree::INSERT_FAILED);
  });
  add_size(t, added);
}

// Batched insertion in either mode, versions made as the copy rule says.
extern "C" __global__ void __launch_bounds__(256, INSERT_MIN_BLOCKS)
    GPUDS_KERNEL(mv_insert)(tree t, const K* keys, const V* values, unsigned n, unsigned* replaced_bits,
                            unsigned* failed_bits) {
  insert_each<false>(t, keys, values, n, replaced_bits, failed_bits);
}

// Batched insertion that can make no version (IN_PLACE, no live snapshot: the host
// launches this kernel only then).
extern "C" __global__ void __launch_bounds__(256, INSERT_PLAIN_MIN_BLOCKS)
    GPUDS_KERNEL(mv_insert_plain)(tree t, const K* keys, const V* values, unsigned n, unsigned* replaced_bits,
                                  unsigned* failed_bits) {
  insert_each<true>(t, keys, values, n, replaced_bits, failed_bits);
}

// Batched removal, one request at a time per tile of TILE lanes: erase_one(key, value)
// runs on the whole tile and returns the outcome (value: the removed value). Removed
// values, removed and failed bits per request; the size updated once per warp.
template <unsigned TILE, class Erase>
__device__ __forceinline__ void erase_each(const tree& t, const K* keys, unsigned n, V* old_values,
                                           unsigned* removed_bits, unsigned* failed_bits, Erase&& erase_one) {
  using tile = gpuds::warp::tile<TILE>;
  long long removed = 0;
  for_each_chunk(n, [&](unsigned chunk, unsigned i, bool active) {
    const K my_key = active ? keys[i] : K(0);
    gpuds::btree::remove_outcome outcome = gpuds::btree::REMOVE_FAILED;
    V mine = V(0);
    tile_work_share<TILE>(active, [&](unsigned src) {
      V v = V(0);
      const auto r = erase_one(tile::shfl(my_key, src), v);
      if (tile::rank() == src) {
        outcome = r;
        mine = v;
      }
    });
    const bool done = outcome == gpuds::btree::REMOVE_DONE;
    if (active) old_values[i] = done ? mine : V(0);
    removed += __popc(__ballot_sync(FULL_MASK, done));
    put_bits(removed_bits, chunk, done);
    put_bits(failed_bits, chunk, active && outcome == gpuds::btree::REMOVE_FAILED);
  });
  add_size(t, -removed);
}

// Batched removal that can make no version (IN_PLACE, no live snapshot: the host launches
// this kernel only then): tiles of 16 lanes, two removals at a time per warp, as
// GpuBTreeMap's removal. Its own kernel, so that the registers of the versioned removal
// (allocator, copies) do not lower its occupancy.
extern "C" __global__ void __launch_bounds__(256, ERASE_MIN_BLOCKS)
    GPUDS_KERNEL(mv_erase_plain)(tree tree_arg, const K* keys, unsigned n, V* old_values, unsigned* removed_bits,
                                 unsigned* failed_bits) {
  const tree t = batch_time(tree_arg);
  erase_each<16>(t, keys, n, old_values, removed_bits, failed_bits,
                 [&](K k, V& v) { return detail::erase_unversioned<16, cached>(t, k, v); });
}

// Batched removal, whole warps (a removal may copy its leaf as an older version). A batch
// of removals splits nothing: internal nodes are read through the cache.
extern "C" __global__ void GPUDS_KERNEL(mv_erase)(tree tree_arg, const K* keys, unsigned n, V* old_values,
                                                  unsigned* removed_bits, unsigned* failed_bits) {
  const tree t = batch_time(tree_arg);
  warp_allocator allocator(t.tree.alloc);
  gpuds::alloc::null_block none;
  erase_each<32>(t, keys, n, old_values, removed_bits, failed_bits, [&](K k, V& v) {
    return detail::erase<gpuds::alloc::null_block, cached>(t, allocator, &none, k, v);
  });
}

// Values of keys at snapshot ts (LATEST: now; NEWEST: ts is LATEST); found words per
// request (0 on absent keys).
template <bool NEWEST>
__device__ __forceinline__ void find_many(const tree& t, unsigned ts, const K* keys, unsigned n, V* values,
                                          unsigned* found) {
  for_each_query(n, [&](unsigned i, unsigned src) {
    with_layout(t, [&](const auto& tl) {
      V v = V(0);
      const bool hit = detail::find<QUERY_TILE, cached, NEWEST>(tl, keys[i], ts, v);
      if (qtile::rank() == src) {
        values[i] = hit ? v : V(0);
        found[i] = hit;
      }
    });
  });
}

// Values of keys at snapshot ts (LATEST: now).
extern "C" __global__ void GPUDS_KERNEL(mv_find)(tree t, unsigned ts, const K* keys, unsigned n, V* values,
                                                 unsigned* found) {
  find_many<false>(t, ts, keys, n, values, found);
}

// Values of keys in the newest state: mv_find at LATEST without the version walk, which
// it cannot take (fewer registers, so more warps in flight).
extern "C" __global__ void GPUDS_KERNEL(mv_find_newest)(tree t, const K* keys, unsigned n, V* values,
                                                        unsigned* found) {
  find_many<true>(t, LATEST, keys, n, values, found);
}

// Successors at ts: (key, value) and found per request.
extern "C" __global__ void GPUDS_KERNEL(mv_successor)(tree t, unsigned ts, const K* keys, unsigned n, K* out_keys,
                                                      V* out_values, unsigned* found) {
  for_each_query(n, [&](unsigned i, unsigned src) {
    with_layout(t, [&](const auto& tl) {
      K k = K(0);
      V v = V(0);
      const bool hit = detail::successor<QUERY_TILE, cached>(tl, keys[i], ts, k, v);
      if (qtile::rank() == src) {
        out_keys[i] = hit ? k : K(0);
        out_values[i] = hit ? v : V(0);
        found[i] = hit;
      }
    });
  });
}

// Range counts at ts.
extern "C" __global__ void GPUDS_KERNEL(mv_range_count)(tree t, unsigned ts, const K* lo, const K* hi, unsigned n,
                                                        unsigned* counts) {
  if constexpr (IN_STEP) {
    with_layout(t, [&](const auto& tl) {
      for_each_query_in_step(n, [&](bool live, unsigned i, unsigned src) {
        const unsigned c = detail::range_in_step<QUERY_TILE, false>(tl, live, live ? lo[i] : K(0),
                                                                    live ? hi[i] : K(0), ts, nullptr, nullptr, 0, 0);
        if (live && qtile::rank() == src) counts[i] = c;
      });
    });
  } else {
    for_each_query(n, [&](unsigned i, unsigned src) {
      with_layout(t, [&](const auto& tl) {
        const unsigned c = detail::range<QUERY_TILE, cached, false>(tl, lo[i], hi[i], ts, nullptr, nullptr, 0);
        if (qtile::rank() == src) counts[i] = c;
      });
    });
  }
}

// Range contents at ts: range i writes its pairs at offsets[i] .. offsets[i + 1] (the
// exclusive scan of the counts, n + 1 entries) of out_keys / out_values.
extern "C" __global__ void GPUDS_KERNEL(mv_range_collect)(tree t, unsigned ts, const K* lo, const K* hi,
                                                          unsigned n, const unsigned long long* offsets, K* out_keys,
                                                          V* out_values) {
  if constexpr (IN_STEP) {
    with_layout(t, [&](const auto& tl) {
      for_each_query_in_step(n, [&](bool live, unsigned i, unsigned) {
        const unsigned long long at = live ? offsets[i] : 0ull;
        const unsigned cap = live ? static_cast<unsigned>(offsets[i + 1] - at) : 0u;
        detail::range_in_step<QUERY_TILE, true>(tl, live, live ? lo[i] : K(0), live ? hi[i] : K(0), ts, out_keys,
                                                out_values, at, cap);
      });
    });
  } else {
    for_each_query(n, [&](unsigned i, unsigned src) {
      const unsigned long long at = offsets[i];
      const unsigned cap = static_cast<unsigned>(offsets[i + 1] - at);
      with_layout(t, [&](const auto& tl) {
        detail::range<QUERY_TILE, cached, true>(tl, lo[i], hi[i], ts, out_keys + at, out_values + at, cap);
      });
      (void)src;
    });
  }
}

// The offsets of n ranges of cap slots each for mv_range_collect: offsets[i] = i * cap for
// every i <= n (range_many_capped_at_device, without a copy from the host).
extern "C" __global__ void GPUDS_KERNEL(mv_capped_offsets)(unsigned n, unsigned cap, unsigned long long* offsets) {
  const unsigned long long threads = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x; i <= n;
       i += threads) {
    offsets[i] = i * cap;
  }
}

// Operation codes of a mixed batch (Rust: MvOp).
enum op_code : unsigned { OP_INSERT = 0, OP_REMOVE = 1, OP_GET = 2, OP_SUCCESSOR = 3, OP_COUNT = 4, OP_RANGE = 5 };

// A mixed batch in one kernel (§4.5.2): updates with the tree's mode, each query at a
// tile-wide snapshot it takes when it starts (ts[i]; UNSET_TS for updates). Per request:
// key, and arg_key (a range's upper bound), arg_value (an insertion's value); out_key (a
// successor's key), out_value (a found, removed or successor value), count (a range's);
// a range writes its first range_cap pairs at i * range_cap. Found bit: replaced / removed
// / found; failed bit: an update that failed and changed nothing.
// A persistent grid of at most the reclaimer's slots blocks: each block takes MV_BLOCK
// requests per round, between enter() and leave() of its epoch-based reclaimer, which the
// older versions the round makes are handed to (when no host snapshot is live).
constexpr unsigned MV_BLOCK = 256;
constexpr unsigned SHARED_BAG = 128;  // units per epoch bag in shared memory (§4.5: 128)
extern "C" __global__ void __launch_bounds__(MV_BLOCK, 4)
    GPUDS_KERNEL(mv_apply)(tree t, gpuds::alloc::ebr_ref reclaimer, const unsigned* ops, const K* keys,
                           const K* arg_keys, const V* arg_values, unsigned n, unsigned range_cap, unsigned* ts_out,
                           K* out_keys, V* out_values, unsigned* counts, unsigned* found_bits, unsigned* failed_bits,
                           K* range_keys, V* range_values) {
  __shared__ gpuds::alloc::ebr_block<SHARED_BAG> ebr;
  if (!ebr.begin(reclaimer)) return;
  warp_allocator allocator(t.tree.alloc);
  long long delta = 0;
  const unsigned warp_in_block = threadIdx.x / 32;
  // Block-uniform rounds: every warp of the block runs the same number of them.
  for (unsigned long long base = static_cast<unsigned long long>(blockIdx.x) * MV_BLOCK; base < n;
       base += static_cast<unsigned long long>(gridDim.x) * MV_BLOCK) {
    ebr.enter();
    const unsigned chunk = static_cast<unsigned>(base / 32) + warp_in_block;
    const unsigned long long i64 = base + threadIdx.x;
    const bool active = i64 < n;
    const unsigned i = static_cast<unsigned>(active ? i64 : 0);
    bool found = false, failed = false;
    int change = 0;
    // One tile-wide snapshot per warp and round, taken by the round's first query and
    // shared by the warp's other queries of the round (one CAS of the clock per 32
    // requests instead of one per query).
    unsigned round_ts = UNSET_TS;
    const auto snapshot = [&]() {
      if (round_ts == UNSET_TS) round_ts = t.take_snapshot<32>();
      return round_ts;
    };
    tile_work_share<32>(active, [&](unsigned src) {
      const unsigned at = warp::shfl(i, src);
      const unsigned op = ops[at];
      const K k = keys[at];
      unsigned ts = UNSET_TS, count = 0;
      K rk = K(0);
      V rv = V(0);
      bool hit = false, fail = false;
      int d = 0;
      switch (op) {
        case OP_INSERT: {
          const auto r = detail::insert(t, allocator, &ebr, k, arg_values[at]);
          hit = r == gpuds::btree::INSERT_REPLACED;
          fail = r == gpuds::btree::INSERT_FAILED;
          d = r == gpuds::btree::INSERT_ADDED;
          break;
        }
        case OP_REMOVE: {
          const auto r = detail::erase(t, allocator, &ebr, k, rv);
          hit = r == gpuds::btree::REMOVE_DONE;
          fail = r == gpuds::btree::REMOVE_FAILED;
          d = -static_cast<int>(hit);
          break;
        }
        case OP_GET:
          ts = snapshot();
          hit = t.find<32, coherent>(k, ts, rv);
          break;
        case OP_SUCCESSOR:
          ts = snapshot();
          hit = t.successor<32, coherent>(k, ts, rk, rv);
          break;
        case OP_COUNT:
          ts = snapshot();
          count = t.range_count<32, coherent>(k, arg_keys[at], ts);
          break;
        case OP_RANGE: {
          ts = snapshot();
          const unsigned long long out = static_cast<unsigned long long>(at) * range_cap;
          count = t.range_collect<32, coherent>(k, arg_keys[at], ts, range_keys + out, range_values + out, range_cap);
          break;
        }
        default:
          t.report<32>(gpuds::status::OUT_OF_BOUNDS);
          fail = true;
          break;
      }
      if (lane_id() == src) {
        ts_out[at] = ts;
        out_keys[at] = rk;
        out_values[at] = rv;
        counts[at] = count;
        found = hit;
        failed = fail;
        change = d;
      }
    });
    delta += __popc(__ballot_sync(FULL_MASK, change > 0)) - __popc(__ballot_sync(FULL_MASK, change < 0));
    if (base + warp_in_block * 32 < n) {
      put_bits(found_bits, chunk, found);
      put_bits(failed_bits, chunk, active && failed);
    }
    ebr.leave();
  }
  add_size(t, delta);
  ebr.end();
}

__device__ void collect_one(const tree& t, node_addr head, unsigned keep, unsigned* log_out, unsigned* log_out_len,
                            unsigned long long* freed);

// The version collector, between batches (nothing else changes the tree): for each head
// in the log, keeps its list up to the first version stamped at or before `keep` (the
// oldest live snapshot; UNSET_TS: none is live, keep the head only) and frees every older
// version; heads that still have older versions are written to log_out. One thread per
// head (a grid-stride loop). *freed counts the units freed.
extern "C" __global__ void GPUDS_KERNEL(mv_collect)(tree t, const unsigned* log_in, unsigned n, unsigned keep,
                                                    unsigned* log_out, unsigned* log_out_len,
                                                    unsigned long long* freed) {
  const unsigned long long threads = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += threads) {
    collect_one(t, log_in[i], keep, log_out, log_out_len, freed);
  }
}

// The collector's work on one logged head (see mv_collect).
__device__ void collect_one(const tree& t, node_addr head, unsigned keep, unsigned* log_out, unsigned* log_out_len,
                            unsigned long long* freed) {
  const auto word = [&](node_addr a, unsigned w) { return reinterpret_cast<unsigned*>(t.words(a)) + w; };
  // The older link of a version, or null where the list ends for the host (RETIRED_OLDER:
  // the link names a unit a kernel handed to its reclaimer).
  const auto older_of = [&](node_addr a) {
    const unsigned ts = gpuds::mem::ld_relaxed(word(a, S::TS_WORD));
    return (ts & RETIRED_OLDER) != 0 ? null_node : gpuds::mem::ld_relaxed(word(a, S::OLDER_WORD));
  };
  node_addr cut = head;
  bool found = keep == UNSET_TS;
  for (unsigned step = 0; step < t.max_steps() && !found; ++step) {
    if ((gpuds::mem::ld_relaxed(word(cut, S::TS_WORD)) & TS_MASK) <= keep) {
      found = true;
      break;
    }
    const node_addr older = older_of(cut);
    if (older == null_node) {  // no version old enough: keep them all
      found = true;
      break;
    }
    cut = older;
  }
  if (!found) {  // a list longer than max_steps: keep it whole, and say so
    gpuds::status::report(t.tree.status, gpuds::status::RETRY_LIMIT);
    const unsigned at = gpuds::mem::fetch_add_relaxed(log_out_len, 1u);
    log_out[at] = head;
    return;
  }
  node_addr x = older_of(cut);
  // Cut: no older link (and no mark) left on the last version kept.
  const unsigned cut_ts = gpuds::mem::ld_relaxed(word(cut, S::TS_WORD));
  if (x != null_node || (cut_ts & RETIRED_OLDER) != 0) {
    gpuds::mem::st_relaxed(word(cut, S::OLDER_WORD), null_node);
    gpuds::mem::st_relaxed(word(cut, S::TS_WORD), cut_ts & TS_MASK);
  }
  unsigned long long count = 0;
  for (unsigned step = 0; x != null_node && step < t.max_steps(); ++step) {
    const node_addr next = older_of(x);
    t.tree.alloc.deallocate(x);
    ++count;
    x = next;
  }
  if (x != null_node) gpuds::status::report(t.tree.status, gpuds::status::RETRY_LIMIT);
  if (count != 0) gpuds::mem::fetch_add_relaxed(freed, count);
  if (cut != head) {
    const unsigned at = gpuds::mem::fetch_add_relaxed(log_out_len, 1u);
    log_out[at] = head;
  }
}
