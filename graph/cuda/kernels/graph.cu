// Entry points of DynamicGraph: thin loops over graph_ref (one thread per request, lanes
// past the end take part with no request), plus the whole-graph kernels (placement of
// tables, vertex deletion, flush, export, triangle counting).
//
// Compiled once per variant: GRAPH_SET (1: a set of destinations, 0: a map with values of
// VALUE_T) and KERNEL_SUFFIX (`set`, `map_u32`, `map_u64`).
//
// Every kernel is grid-stride (grids are capped to the resident blocks), and every loop
// is bounded (a slab list by the step cap).
#include <gpuds/core/kernel_name.cuh>
#include <gpuds/graph/graph_ref.cuh>
#include <gpuds/slabhash/detail/flush.cuh>

using namespace gpuds;
using namespace gpuds::graph;

#if GRAPH_SET
using V = no_value;
using W = unsigned;  // value arrays are null
#else
using V = VALUE_T;
using W = VALUE_T;
#endif
using ref_t = graph_ref<V>;
using layout = ref_t::layout;

// Words of a tally (per batch): entries added or removed, self-loop entries added or
// removed, requests skipped (OP_SKIPPED), requests present (replaced, or found).
constexpr unsigned T_ENTRIES = 0;
constexpr unsigned T_LOOPS = 1;
constexpr unsigned T_SKIPPED = 2;
constexpr unsigned T_PRESENT = 3;
constexpr unsigned TALLY_WORDS = 4;
// Word of a counter stripe holding self-loop entries (0: live entries, 1: claimed slots).
constexpr unsigned STRIPE_LOOPS = 2;

__device__ __forceinline__ unsigned long long thread_index() {
  return static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ unsigned long long thread_count() {
  return static_cast<unsigned long long>(gridDim.x) * blockDim.x;
}

// Self-loop entries of the graph, kept in word STRIPE_LOOPS of the counter stripes; one
// lane of the warp calls it with the warp's change.
__device__ __forceinline__ void add_loops(const ref_t& g, long long x) {
  unsigned long long* stripe = g.lists.counters + (warp::global_warp_id() % slabhash::detail::COUNTER_STRIPES) *
                                                      slabhash::detail::COUNTER_STRIPE_WORDS;
  mem::fetch_add_relaxed(&stripe[STRIPE_LOOPS], static_cast<unsigned long long>(x));
}

// add_loops with every lane of the warp calling with its own change: the warp's sum is
// added once, by lane 0, and only when it is not zero.
__device__ __forceinline__ void add_warp_loops(const ref_t& g, long long x) {
  x = static_cast<long long>(warp::sum(static_cast<unsigned long long>(x)));
  if (warp::lane_id() == 0 && x != 0) add_loops(g, x);
}

// The tally of an edge kernel's block, in shared memory: each lane keeps its requests'
// counts in a register (lane_tally), each warp adds its lanes' sums there once every
// LATE_ROUNDS rounds and at its end (shared atomics), and the block adds them to the
// batch's tally once at its end. One global atomic per warp and round on the same few
// words would serialize in L2: 2^17 of them for a batch of 2^22 edges. (A reduction and
// its shared atomics every round, as before, cost the undirected deletion on the
// hollywood shape 1-7 %: 1.01-1.07x without them, H200, docs/graph.md.)
struct block_tally {
  unsigned long long* words;  // TALLY_WORDS words of shared memory

  // Zeroes the words; every thread of the block calls it before its first add.
  __device__ void open() const {
    if (threadIdx.x < TALLY_WORDS) words[threadIdx.x] = 0ull;
    __syncthreads();
  }

  // Adds a warp's packed counts (lane_tally), all lanes calling; a self-loop entry counts
  // `sign` (+1 added, -1 removed). One reduction of the four packed words.
  __device__ void add(const ref_t& g, unsigned long long packed, int sign) const {
    const unsigned long long sums = warp::sum(packed);
    if (warp::lane_id() != 0 || sums == 0ull) return;
#pragma unroll
    for (unsigned w = 0; w < TALLY_WORDS; ++w) {
      const unsigned long long x = (sums >> (16u * field_of(w))) & 0xFFFFull;
      if (x != 0ull) atomicAdd(&words[w], x);
    }
    const unsigned long long loops = sums >> 48;
    if (loops != 0ull) add_loops(g, sign * static_cast<long long>(loops));
  }

  // Adds the block's words to the batch's tally (null: dropped); every thread calls it
  // after its last add.
  __device__ void close(unsigned long long* tally) const {
    __syncthreads();
    if (threadIdx.x < TALLY_WORDS && tally != nullptr && words[threadIdx.x] != 0ull) {
      mem::fetch_add_relaxed(&tally[threadIdx.x], words[threadIdx.x]);
    }
  }

  // The 16-bit field of the packed counts that holds tally word w.
  __device__ static constexpr unsigned field_of(unsigned w) {
    return w == T_ENTRIES ? 0u : w == T_SKIPPED ? 1u : w == T_PRESENT ? 2u : 3u;
  }
};

// One lane's counts over the rounds of an edge kernel, 16 bits a tally word: entries
// added or removed (0-2 a round), requests skipped, present, and self-loop entries
// changed. A warp's sum must stay below 2^16 a field, so the warp adds them to the
// block's words every LATE_ROUNDS rounds (32 lanes x 2 x 512 = 2^15) and at its end.
struct lane_tally {
  static constexpr unsigned long long LATE_ROUNDS = 512;
  unsigned long long packed = 0;

  __device__ void note(unsigned entries, bool skipped, bool present, bool loop) {
    packed += static_cast<unsigned long long>(entries) | (skipped ? 1ull << 16 : 0ull) |
              (present ? 1ull << 32 : 0ull) | (loop ? 1ull << 48 : 0ull);
  }

  // After round r of `rounds` (the same on every lane of the warp), all lanes calling.
  __device__ void after_round(const block_tally& counts, const ref_t& g, unsigned long long r,
                              unsigned long long rounds, int sign) {
    if (r % LATE_ROUNDS == LATE_ROUNDS - 1 || r + 1 == rounds) {
      counts.add(g, packed, sign);
      packed = 0;
    }
  }
};

__device__ __forceinline__ void note(unsigned* failed, bool active, unsigned long long i, unsigned outcome) {
  if (failed != nullptr && active && outcome == OP_FAILED) status::mark_not_applied(failed, i);
}

// The id check of a batch, a thread's part: the first index i whose id is reserved (past
// MAX_VERTEX_ID), kept as n - i, and the largest id + 1; `flush` adds them to out[0] and
// out[1] (both preset to zero) by atomicMax, one atomic per warp and word (every
// thread's atomic on the same two words would serialize in L2, a quarter of a million of
// them on a full grid, and cost more than the scan). All lanes call flush.
struct id_check {
  unsigned long long bad = 0, top = 0;

  __device__ void add(unsigned long long i, unsigned long long n, unsigned x, unsigned y) {
    if (x > MAX_VERTEX_ID || y > MAX_VERTEX_ID) {
      bad = bad > n - i ? bad : n - i;
    } else {
      const unsigned long long m = (x > y ? x : y) + 1ull;
      top = top > m ? top : m;
    }
  }

  __device__ void flush(unsigned long long* out) {
    bad = warp::maximum(bad);
    top = warp::maximum(top);
    if (warp::lane_id() == 0) {
      if (bad != 0ull) atomicMax(&out[0], bad);
      if (top != 0ull) atomicMax(&out[1], top);
    }
  }
};

// The id check (id_check) of a batch `a` (and `b`, which may be null) into out[0..2].
extern "C" __global__ void GPUDS_KERNEL(check_ids)(const unsigned* a, const unsigned* b,
                                                   unsigned long long n, unsigned long long* out) {
  id_check check;
  for (unsigned long long i = thread_index(); i < n; i += thread_count()) {
    check.add(i, n, a[i], b != nullptr ? b[i] : 0u);
  }
  check.flush(out);
}

// deg[id] += the lanes of the warp offering `id` (ids at or past `bound` are not counted;
// no id: all ones), one atomic for each id the warp offers: input grouped by source
// (files and the generators list edges sorted) gives a warp few sources, whose lanes'
// atomics on one word would serialize.
__device__ __forceinline__ void add_degree(unsigned long long* deg, unsigned id, unsigned bound) {
  const unsigned peers = __match_any_sync(warp::FULL_MASK, id);
  if (id < bound && (peers & slabhash::lanes_below()) == 0u) {
    atomicAdd(&deg[id], static_cast<unsigned long long>(__popc(peers)));
  }
}

// Degrees of a COO batch: deg[src] += 1 (and deg[dst] when undirected), self loops
// counted once when kept, skipped otherwise; ids at or past `bound` (the length of deg)
// are not counted. `check` (not null): the batch's id check as well (check_ids' words),
// which a bulk build would otherwise read the batch for in a kernel of its own.
extern "C" __global__ void GPUDS_KERNEL(degrees)(const unsigned* src, const unsigned* dst,
                                                 unsigned long long n, unsigned undirected,
                                                 unsigned keep_loops, unsigned bound, unsigned long long* deg,
                                                 unsigned long long* check) {
  const unsigned long long stride = thread_count();
  const unsigned long long rounds = (n + stride - 1) / stride;
  id_check ids;
  for (unsigned long long r = 0; r < rounds; ++r) {
    const unsigned long long i = r * stride + thread_index();
    const bool active = i < n;
    const unsigned u = active ? src[i] : slabhash::EMPTY_KEY;
    const unsigned v = active ? dst[i] : slabhash::EMPTY_KEY;
    if (active) ids.add(i, n, u, v);
    const bool loop = u == v;
    add_degree(deg, !loop || keep_loops != 0u ? u : slabhash::EMPTY_KEY, bound);
    if (undirected != 0u) add_degree(deg, loop ? slabhash::EMPTY_KEY : v, bound);
  }
  if (check != nullptr) ids.flush(check);
}

// Bucket counts for degrees: ceil(deg / (lf * slots)), at least 1, at most `max_buckets`.
extern "C" __global__ void GPUDS_KERNEL(buckets_of)(const unsigned long long* deg, unsigned long long n,
                                                    float per_bucket, unsigned long long max_buckets,
                                                    unsigned long long* buckets) {
  for (unsigned long long i = thread_index(); i < n; i += thread_count()) {
    const double b = ceil(static_cast<double>(deg[i]) / static_cast<double>(per_bucket));
    unsigned long long x = b < 1.0 ? 1ull : static_cast<unsigned long long>(b);
    buckets[i] = x > max_buckets ? max_buckets : x;
  }
}

// Gives n vertices their tables in a fresh chunk of base slabs (filled with all ones):
// vertex ids[i] (or first + i when ids is null) gets buckets[i] (or `uniform` when null)
// base slabs at chunk + offsets[i] (or i * uniform) slabs, and a zero count; its deleted
// bit is cleared.
extern "C" __global__ void GPUDS_KERNEL(place)(ref_t g, const unsigned* ids, unsigned first,
                                               unsigned long long n, const unsigned long long* buckets,
                                               const unsigned long long* offsets, unsigned uniform,
                                               unsigned long long chunk) {
  for (unsigned long long i = thread_index(); i < n; i += thread_count()) {
    const unsigned u = ids != nullptr ? ids[i] : first + static_cast<unsigned>(i);
    const unsigned long long b = buckets != nullptr ? buckets[i] : uniform;
    const unsigned long long at = offsets != nullptr ? offsets[i] : i * uniform;
    vertex_entry e;
    e.base = chunk + at * slabhash::SLAB_WORDS * sizeof(unsigned);
    e.buckets = static_cast<unsigned>(b);
    e.count = 0;
    g.vertices[u] = e;
  }
}

// Bulk build, step 1 (packed entries; the host runs it only on tables this build just
// placed, with nothing else running on them). Each arc of the batch (both of an
// undirected edge; a self loop once, or none when loops are dropped) whose source has a
// one-bucket table takes the next slot of that base slab and stores its entry there
// without looking at the slab: the lanes of a warp with arcs for one slab take their
// slots with one atomic add on the slab's auxiliary word (all ones in a fresh slab, so
// the add that returns all ones plus k hands out slots k + 1 on), one slot each in lane
// order. An edge with an arc whose source has more buckets, or whose base slab had no
// slot left, gets its bit in `spill` (bit i of word i / 32): the host inserts those edges the
// ordinary way after step 2 (every warp's round, without first counting them), and an
// arc of theirs already placed is found present. Duplicate arcs may take two slots here; step 2
// keeps one.
extern "C" __global__ void GPUDS_KERNEL(bulk_claim)(ref_t g, const unsigned* src, const unsigned* dst,
                                                    const W* values, unsigned long long n,
                                                    unsigned* spill) {
  if constexpr (layout::PACKED) {
    const bool keep_loops = (g.flags & KEEP_SELF_LOOPS) != 0u;
    const unsigned lane = warp::lane_id();
    const unsigned long long stride = thread_count();
    const unsigned long long rounds = (n + stride - 1) / stride;
    for (unsigned long long r = 0; r < rounds; ++r) {
      // Lane 0's edge index is a multiple of 32: the warp's edges are the 32 bits of one
      // spill word.
      const unsigned long long i = r * stride + thread_index();
      const bool active = i < n;
      const unsigned u = active ? src[i] : 0u, v = active ? dst[i] : 0u;
      const bool loop = u == v;
      const bool wanted = active && (!loop || keep_loops);
      const W value = wanted && values != nullptr ? values[i] : W(0);
      bool spill_edge = false;
      for (unsigned side = 0; side < 2u; ++side) {
        const unsigned a = side == 0u ? u : v, b = side == 0u ? v : u;
        const bool arc = wanted && (side == 0u || (g.undirected() && !loop));
        unsigned* slab = nullptr;
        if (arc) {
          const vertex_entry e = g.entry(a);
          if ((e.buckets & BUCKET_MASK) == 1u) {
            slab = g.home(e, b);
          } else {
            spill_edge = true;
          }
        }
        const unsigned peers = __match_any_sync(warp::FULL_MASK, reinterpret_cast<unsigned long long>(slab));
        const unsigned leader = static_cast<unsigned>(__ffs(peers) - 1);
        unsigned before = 0;
        if (slab != nullptr && lane == leader) before = atomicAdd(slab + slabhash::AUX_LANE, __popc(peers));
        before = __shfl_sync(warp::FULL_MASK, before, leader);
        if (slab != nullptr) {
          const unsigned slot = before + 1u + __popc(peers & slabhash::lanes_below());
          if (slot < layout::SLOTS) {
#if GRAPH_SET
            slab[slot] = b;
#else
            *reinterpret_cast<unsigned long long*>(slab + 2u * slot) =
                slabhash::pack_pair(b, static_cast<unsigned>(value));
#endif
          } else {
            spill_edge = true;
          }
        }
      }
      const unsigned bits = __ballot_sync(warp::FULL_MASK, spill_edge);
      if (lane == 0u && bits != 0u) spill[i / 32u] = bits;
    }
  }
}

// Bulk build, step 2: one warp per vertex `first + w` (w < n) with a one-bucket table
// makes its base slab a valid slab list again: the entries step 1 stored (the first
// min(taken, SLOTS) slots) keep one instance of each destination (the lowest slot;
// __match_any_sync finds the others), packed to the front in slot order, the slots after
// them empty and the auxiliary word all ones again. The vertex's count is set to the
// entries kept, and the graph's counters get them (and the self-loop entries among
// them) once per warp. Tables of more buckets were left alone by step 1.
extern "C" __global__ void GPUDS_KERNEL(bulk_settle)(ref_t g, unsigned first, unsigned long long n) {
  if constexpr (layout::PACKED) {
    const unsigned lane = warp::lane_id();
    const unsigned long long warps = thread_count() / 32u;
    unsigned long long entries = 0, loops = 0;
    for (unsigned long long w = thread_index() / 32u; w < n; w += warps) {
      const unsigned u = first + static_cast<unsigned>(w);
      const vertex_entry e = g.entry(u);
      if ((e.buckets & BUCKET_MASK) != 1u) continue;
      unsigned* const slab = reinterpret_cast<unsigned*>(e.base);
      const unsigned word = slab[lane];
      const unsigned taken = __shfl_sync(warp::FULL_MASK, word, slabhash::AUX_LANE) + 1u;
      if (taken == 0u) continue;  // no arc took a slot: the slab is as placed
      const unsigned held = taken < layout::SLOTS ? taken : layout::SLOTS;
      const unsigned value = __shfl_down_sync(warp::FULL_MASK, word, 1);
      const bool is_key = (layout::KEY_LANES >> lane & 1u) != 0u && layout::slot_of(lane) < held;
      // Lanes without a key offer all ones, which no key equals (a reserved id).
      const unsigned peers = __match_any_sync(warp::FULL_MASK, is_key ? word : slabhash::EMPTY_KEY);
      const bool keep = is_key && (peers & slabhash::lanes_below()) == 0u;
      const unsigned kept = __ballot_sync(warp::FULL_MASK, keep);
      const unsigned count = __popc(kept);
      const unsigned rank = __popc(kept & slabhash::lanes_below());
      const unsigned self = __popc(__ballot_sync(warp::FULL_MASK, keep && word == u));
      __syncwarp();
#if GRAPH_SET
      if (keep) slab[rank] = word;
      if (lane >= count && lane < held) slab[lane] = slabhash::EMPTY_KEY;
#else
      if (keep) *reinterpret_cast<unsigned long long*>(slab + 2u * rank) = slabhash::pack_pair(word, value);
      if (lane % 2u == 0u && lane / 2u >= count && lane / 2u < held) {
        *reinterpret_cast<unsigned long long*>(slab + lane) =
            slabhash::pack_pair(slabhash::EMPTY_KEY, slabhash::EMPTY_VALUE);
      }
#endif
      if (lane == slabhash::AUX_LANE) slab[lane] = slabhash::FRESH_WORD;
      if (lane == 0u) g.vertices[u].count = count;
      entries += count;
      loops += self;
    }
    g.lists.count(static_cast<long long>(entries), static_cast<long long>(entries));
    if (lane == 0u && loops != 0ull) add_loops(g, static_cast<long long>(loops));
  }
}

// Blocks of 128 threads an SM keeps of the edge kernels (insert, erase, find). Their
// lanes walk their lists alone first (slabhash's `_alone_in` forms), half a slab of
// 16-byte loads in flight per lane: at 8 blocks (32 warps an SM, up to 64 registers)
// no kernel spills, where 16 blocks (32 registers) spill 48-72 bytes a thread.
#ifndef EDGE_BLOCKS
#define EDGE_BLOCKS 8
#endif

// The words check_ids wrote for a batch (`gate`, null: ids checked by the host): whether
// it may run, no id reserved and (`inside`) the largest id in the dictionary. The host
// launches the check and the batch together and reads the check's words with the batch's
// status: one synchronization a batch.
__device__ __forceinline__ bool gate_open(const ref_t& g, const unsigned long long* gate, bool inside) {
  return gate == nullptr || (gate[0] == 0ull && (!inside || gate[1] <= g.num_vertices));
}

// Edge insertion (Algorithm 5.1), one thread per edge. `values` null: every value 0 (or
// a set). `only` null: every edge; else the edges whose bit is set (bit i of word i / 32).
// `outcomes` may be null. Runs only where gate_open (every id inside the dictionary).
extern "C" __global__ void __launch_bounds__(128, EDGE_BLOCKS) GPUDS_KERNEL(insert_edges)(
    ref_t g, const unsigned* src, const unsigned* dst, const W* values, unsigned long long n,
    const unsigned* only, unsigned long long* tally, unsigned* outcomes, unsigned* failed,
    const unsigned long long* gate) {
  if (!gate_open(g, gate, true)) return;
  slabhash::detail::on_demand_allocator allocator;
  __shared__ unsigned long long block_words[TALLY_WORDS];
  const block_tally counts{block_words};
  counts.open();
  const unsigned long long stride = thread_count();
  const unsigned long long rounds = (n + stride - 1) / stride;
  lane_tally lane;
  for (unsigned long long r = 0; r < rounds; ++r) {
    const unsigned long long i = r * stride + thread_index();
    const bool active = i < n && (only == nullptr || ((only[i / 32u] >> (i % 32u)) & 1u) != 0u);
    const unsigned u = active ? src[i] : 0u;
    const unsigned v = active ? dst[i] : 0u;
    const W value = active && values != nullptr ? values[i] : W(0);
    unsigned added = 0;
    const unsigned outcome = g.insert_edge(allocator, active, u, v, value, added);
    lane.note(added, active && outcome == OP_SKIPPED, active && outcome == OP_PRESENT, active && u == v && added != 0);
    lane.after_round(counts, g, r, rounds, 1);
    if (active && outcomes != nullptr) outcomes[i] = outcome;
    note(failed, active, i, outcome);
  }
  counts.close(tally);
}

// Edge deletion, one thread per edge. Runs only where gate_open (no id reserved); with a
// gate, a request with an id past the dictionary names no edge and is skipped.
extern "C" __global__ void __launch_bounds__(128, EDGE_BLOCKS) GPUDS_KERNEL(erase_edges)(
    ref_t g, const unsigned* src, const unsigned* dst, unsigned long long n,
    unsigned long long* tally, unsigned* outcomes, unsigned* failed, const unsigned long long* gate) {
  if (!gate_open(g, gate, false)) return;
  __shared__ unsigned long long block_words[TALLY_WORDS];
  const block_tally counts{block_words};
  counts.open();
  const unsigned long long stride = thread_count();
  const unsigned long long rounds = (n + stride - 1) / stride;
  lane_tally lane;
  for (unsigned long long r = 0; r < rounds; ++r) {
    const unsigned long long i = r * stride + thread_index();
    const bool listed = i < n;
    const unsigned u = listed ? src[i] : 0u;
    const unsigned v = listed ? dst[i] : 0u;
    const bool active = listed && (gate == nullptr || (u < g.num_vertices && v < g.num_vertices));
    unsigned removed = 0;
    unsigned outcome = g.template erase_edge<true>(active, u, v, removed);
    if (listed && !active) outcome = OP_SKIPPED;
    lane.note(removed, listed && outcome == OP_SKIPPED, active && outcome == OP_PRESENT,
              active && u == v && removed != 0);
    lane.after_round(counts, g, r, rounds, -1);
    if (listed && outcomes != nullptr) outcomes[i] = outcome;
    note(failed, active, i, outcome);
  }
  counts.close(tally);
}

// Edge-exists queries: found bit i (32 per word) and, maps, the value (all ones when
// absent) when `values` is not null.
extern "C" __global__ void __launch_bounds__(128, EDGE_BLOCKS) GPUDS_KERNEL(find_edges)(
    ref_t g, const unsigned* src, const unsigned* dst, unsigned long long n, W* values,
    unsigned* found, unsigned* failed) {
  const unsigned long long stride = thread_count();
  const unsigned long long rounds = (n + stride - 1) / stride;
  for (unsigned long long r = 0; r < rounds; ++r) {
    const unsigned long long i = r * stride + thread_index();
    const bool active = i < n;
    const unsigned u = active ? src[i] : 0u;
    const unsigned v = active ? dst[i] : 0u;
    typename ref_t::value_type value = slabhash::not_found_value<W>;
    const unsigned outcome = g.template find_edge<true>(active, u, v, value);
    if (active && values != nullptr) values[i] = outcome == OP_PRESENT ? value : slabhash::not_found_value<W>;
    const unsigned bits = __ballot_sync(warp::FULL_MASK, active && outcome == OP_PRESENT);
    // stride and rounds keep each warp's 32 requests in one word.
    if (found != nullptr && active && warp::lane_id() == 0) found[i / 32] = bits;
    note(failed, active, i, outcome);
  }
}

// Out-degrees of ids[i] (past the dictionary: 0).
extern "C" __global__ void GPUDS_KERNEL(degree_of)(ref_t g, const unsigned* ids, unsigned long long n,
                                                   unsigned* out) {
  for (unsigned long long i = thread_index(); i < n; i += thread_count()) {
    const unsigned u = ids[i];
    out[i] = u < g.num_vertices ? g.degree(u) : 0u;
  }
}

// One warp per vertex (ids[i], or first + i when ids is null): writes its live entries at
// offsets[i] .. offsets[i + 1] of dst (and src: the vertex; values: the edge values), at
// most that many (more live entries than its count set `overflow`).
extern "C" __global__ void GPUDS_KERNEL(collect)(ref_t g, const unsigned* ids, unsigned first,
                                                 unsigned long long n, const unsigned long long* offsets,
                                                 unsigned* src_out, unsigned* dst_out, W* values_out,
                                                 unsigned* overflow) {
  const unsigned lane = warp::lane_id();
  for (unsigned long long i = warp::global_warp_id(); i < n; i += warp::warp_count()) {
    const unsigned u = ids != nullptr ? ids[i] : first + static_cast<unsigned>(i);
    if (u >= g.num_vertices) continue;
    const unsigned long long begin = offsets[i];
    const unsigned long long capacity = offsets[i + 1] - begin;
    unsigned long long written = 0;
    for (auto it = g.adjacency(u); it.valid(); it.next()) {
      const unsigned live = it.live_key_lanes();
      const unsigned key = layout::own_key(it.word());
#if !GRAPH_SET
      const V value = layout::own_value(it.word());
#endif
      if ((live >> lane) & 1u) {
        const unsigned long long at = written + __popc(live & slabhash::lanes_below());
        if (at < capacity) {
          dst_out[begin + at] = key;
          if (src_out != nullptr) src_out[begin + at] = u;
#if !GRAPH_SET
          if (values_out != nullptr) values_out[begin + at] = value;
#endif
        }
      }
      written += __popc(live);
    }
    if (written > capacity && lane == 0) atomicOr(overflow, 1u);
  }
#if GRAPH_SET
  (void)values_out;
#endif
}

// Vertex deletion, step 1: marks ids[i] deleted. The request that sets the bit of a
// live id in the dictionary wins; duplicates, ids already deleted and ids past the
// dictionary change nothing. The winners are appended to `list` (count in *count, in no
// particular order; one atomic per warp) and set their bit in `bits` (a zeroed bitmap of
// the dictionary's ids), so the host learns the batch without reading it per id.
extern "C" __global__ void GPUDS_KERNEL(mark_deleted)(ref_t g, const unsigned* ids, unsigned long long n,
                                                      unsigned* list, unsigned long long* count,
                                                      unsigned* bits) {
  const unsigned lane = warp::lane_id();
  const unsigned long long stride = thread_count();
  const unsigned long long rounds = (n + stride - 1) / stride;
  for (unsigned long long r = 0; r < rounds; ++r) {
    const unsigned long long i = r * stride + thread_index();
    const unsigned u = i < n ? ids[i] : g.num_vertices;
    const bool won = u < g.num_vertices && (atomicOr(&g.vertices[u].buckets, DELETED_BIT) & DELETED_BIT) == 0u;
    if (won) atomicOr(&bits[u >> 5], 1u << (u & 31u));
    const unsigned winners = __ballot_sync(warp::FULL_MASK, won);
    unsigned long long base = 0;
    if (lane == 0 && winners != 0u) base = atomicAdd(count, static_cast<unsigned long long>(__popc(winners)));
    base = __shfl_sync(warp::FULL_MASK, base, 0);
    if (won) list[base + __popc(winners & slabhash::lanes_below())] = u;
  }
}

// Vertex deletion, step 2 (undirected graphs): every arc (u, v) of a deleted vertex u,
// collected first (count, scan, collect), removes u from the table of v when v is not
// being deleted itself (those tables are emptied whole in step 3), keeping v's count
// exact. One thread per arc: a vertex of high degree spreads over many warps, where
// Algorithm 5.2's one warp per vertex would walk all its neighbours alone.
extern "C" __global__ void __launch_bounds__(128, 16) GPUDS_KERNEL(unlink_arcs)(
    ref_t g, const unsigned* src, const unsigned* dst, unsigned long long n) {
  const unsigned long long stride = thread_count();
  const unsigned long long rounds = (n + stride - 1) / stride;
  for (unsigned long long r = 0; r < rounds; ++r) {
    const unsigned long long i = r * stride + thread_index();
    const bool active = i < n;
    const unsigned u = active ? src[i] : 0u;
    const unsigned v = active ? dst[i] : 0u;
    const bool run = active && v != u && v < g.num_vertices && !g.is_deleted(v);
    typename ref_t::value_type old{};
    g.erase_arc(run, v, u, old);
  }
}

// Vertex deletion, directed graphs: every table of a live vertex loses its edges to
// deleted vertices (one warp per vertex, grid-stride).
extern "C" __global__ void GPUDS_KERNEL(sweep_deleted)(ref_t g) {
  const unsigned lane = warp::lane_id();
  for (unsigned long long w = warp::global_warp_id(); w < g.num_vertices; w += warp::warp_count()) {
    const unsigned u = static_cast<unsigned>(w);
    if (g.is_deleted(u)) continue;
    for (auto it = g.adjacency(u); it.valid(); it.next()) {
      const unsigned live = it.live_key_lanes();
      const unsigned v = layout::own_key(it.word());
      const bool mine = ((live >> lane) & 1u) && v < g.num_vertices && g.is_deleted(v);
      typename ref_t::value_type old{};
      g.erase_arc(mine, u, v, old);
    }
  }
}

// Vertex deletion, step 3: one warp per deleted vertex empties its table: gives its
// collision slabs back to the pool, resets its base slabs to empty, takes its entries off
// the graph's counters (live, claimed, self loops) and zeroes its count. Its base slabs
// stay its own, so a later insertion of the id reuses them.
extern "C" __global__ void GPUDS_KERNEL(empty_tables)(ref_t g, const unsigned* ids, unsigned long long n,
                                                      unsigned long long* freed) {
  const unsigned lane = warp::lane_id();
  unsigned long long released = 0;
  for (unsigned long long i = warp::global_warp_id(); i < n; i += warp::warp_count()) {
    const unsigned u = ids[i];
    const vertex_entry e = g.entry(u);
    const unsigned buckets = e.buckets & BUCKET_MASK;
    long long live = 0, claimed = 0, loops = 0;
    for (unsigned b = 0; b < buckets; ++b) {
      unsigned* const head = reinterpret_cast<unsigned*>(e.base) + static_cast<unsigned long long>(b) * slabhash::SLAB_WORDS;
      unsigned* slab = head;
      unsigned unit = slabhash::NULL_SLAB;  // the pool unit of `slab` (NULL: the base slab)
      for (unsigned steps = 0; slab != nullptr && steps < g.lists.step_cap; ++steps) {
        const unsigned word = slabhash::read_slab(slab);
        const unsigned next = __shfl_sync(warp::FULL_MASK, word, slabhash::NEXT_LANE);
        const unsigned lv = layout::live(word);
        live += __popc(lv);
        claimed += __popc(layout::KEY_LANES & ~layout::empties(word));
        if (((lv >> lane) & 1u) && layout::own_key(word) == u) ++loops;
        __syncwarp();
        if (unit != slabhash::NULL_SLAB) {
          if (lane == 0) g.lists.alloc.deallocate(unit);
          ++released;
        }
        unit = next;
        slab = next == slabhash::NULL_SLAB ? nullptr : g.lists.slab_at(next);
      }
      __syncwarp();
      mem::st_relaxed(head + lane, slabhash::FRESH_WORD);
    }
    if (lane == 0) g.vertices[u].count = 0u;
    g.lists.count(-live, -claimed);
    add_warp_loops(g, -loops);
  }
  if (lane == 0 && released != 0ull) mem::fetch_add_relaxed(freed, released);
}

// FLUSH of the tables of ids[i] (or first + i when ids is null), one warp per vertex:
// every bucket's list is packed (slabhash::detail::flush_list), tombstones dropped, the
// freed collision slabs given back; the claimed-slot counters drop by the tombstones.
extern "C" __global__ void GPUDS_KERNEL(flush)(ref_t g, const unsigned* ids, unsigned first,
                                               unsigned long long n, unsigned long long* freed) {
  unsigned long long released = 0;
  for (unsigned long long i = warp::global_warp_id(); i < n; i += warp::warp_count()) {
    const unsigned u = ids != nullptr ? ids[i] : first + static_cast<unsigned>(i);
    if (u >= g.num_vertices) continue;
    const vertex_entry e = g.entry(u);
    const unsigned buckets = e.buckets & BUCKET_MASK;
    long long tombstones = 0;
    for (unsigned b = 0; b < buckets; ++b) {
      unsigned* const head = reinterpret_cast<unsigned*>(e.base) + static_cast<unsigned long long>(b) * slabhash::SLAB_WORDS;
      // Tombstones first (claimed but not live), then the pack.
      unsigned* slab = head;
      for (unsigned steps = 0; slab != nullptr && steps < g.lists.step_cap; ++steps) {
        const unsigned word = slabhash::read_slab(slab);
        tombstones += __popc(layout::KEY_LANES & ~layout::empties(word) & ~layout::live(word));
        const unsigned next = __shfl_sync(warp::FULL_MASK, word, slabhash::NEXT_LANE);
        slab = next == slabhash::NULL_SLAB ? nullptr : g.lists.slab_at(next);
      }
      released += slabhash::detail::flush_list<unsigned, V>(g.lists, head);
    }
    g.lists.count(0, -tombstones);
  }
  if (warp::lane_id() == 0 && released != 0ull) mem::fetch_add_relaxed(freed, released);
}

// Slabs and live entries of vertex first + i, one warp per vertex (stats()).
extern "C" __global__ void GPUDS_KERNEL(census)(ref_t g, unsigned first, unsigned long long n,
                                                unsigned* slabs, unsigned* longest) {
  for (unsigned long long i = warp::global_warp_id(); i < n; i += warp::warp_count()) {
    const unsigned u = first + static_cast<unsigned>(i);
    unsigned total = 0, chain = 0, top = 0;
    for (auto it = g.adjacency(u); it.valid(); it.next()) {
      if (it.at_base()) chain = 0;
      ++total;
      ++chain;
      top = chain > top ? chain : top;
    }
    if (warp::lane_id() == 0) {
      slabs[i] = total;
      longest[i] = top;
    }
  }
}

// Static triangle counting on the hash tables (§5.6.3): for each listed edge (u, v) with
// u < v, one warp walks the smaller of the two tables and, for every neighbour w > v,
// asks whether the other table holds w; each triangle u < v < w is counted once. Both
// dictionary entries are read at once. When the other table is one short list (one
// bucket, at most SHUFFLE_INTERSECT entries: the low-degree graphs' usual case), its
// slabs are compared with the walked slab in registers, one broadcast per entry, instead
// of one hash lookup (a dependent slab read each) per candidate; else each candidate is
// an edge-exists query in the other table (the dissertation's way). Adds the count to
// *total.
constexpr unsigned SHUFFLE_INTERSECT = 4u * layout::SLOTS;

extern "C" __global__ void GPUDS_KERNEL(triangles)(ref_t g, const unsigned* src, const unsigned* dst,
                                                   unsigned long long n, unsigned long long* total) {
  const unsigned lane = warp::lane_id();
  unsigned long long found = 0;
  for (unsigned long long i = warp::global_warp_id(); i < n; i += warp::warp_count()) {
    const unsigned u = src[i], v = dst[i];
    if (u >= v || v >= g.num_vertices) continue;
    const vertex_entry eu = g.entry(u);
    const vertex_entry ev = g.entry(v);
    const bool u_smaller = eu.count <= ev.count;
    const vertex_entry we = u_smaller ? eu : ev;
    const vertex_entry oe = u_smaller ? ev : eu;
    const bool by_slabs = (oe.buckets & BUCKET_MASK) == 1u && oe.count <= SHUFFLE_INTERSECT;
    for (auto it = g.adjacency_of(we); it.valid(); it.next()) {
      const unsigned live = it.live_key_lanes();
      const unsigned w = layout::own_key(it.word());
      const bool ask = ((live >> lane) & 1u) && w > v;
      if (!__any_sync(warp::FULL_MASK, ask)) continue;
      if (by_slabs) {
        bool hit = false;
        for (auto ot = g.adjacency_of(oe); ot.valid(); ot.next()) {
          const unsigned other_key = layout::own_key(ot.word());
          for (unsigned olive = ot.live_key_lanes(); olive != 0u; olive &= olive - 1u) {
            hit |= w == __shfl_sync(warp::FULL_MASK, other_key, __ffs(olive) - 1);
          }
        }
        found += __popc(__ballot_sync(warp::FULL_MASK, ask && hit));
      } else {
        const unsigned outcome = g.template contains_in<true>(ask, ask ? g.home(oe, w) : nullptr, w);
        found += __popc(__ballot_sync(warp::FULL_MASK, ask && outcome == OP_PRESENT));
      }
    }
  }
  if (lane == 0 && found != 0ull) mem::fetch_add_relaxed(total, found);
}

// Clears the deleted bit of ids[i] (their tables were emptied when they were deleted).
extern "C" __global__ void GPUDS_KERNEL(revive)(ref_t g, const unsigned* ids, unsigned long long n) {
  for (unsigned long long i = thread_index(); i < n; i += thread_count()) {
    atomicAnd(&g.vertices[ids[i]].buckets, ~DELETED_BIT);
  }
}

// Out-degrees of ids[i] (or of i when ids is null) for i < n as 64-bit words, and
// out[n] = 0: the input of the scan that places each vertex's entries in an export.
extern "C" __global__ void GPUDS_KERNEL(degrees_wide)(ref_t g, const unsigned* ids, unsigned long long n,
                                                      unsigned long long* out) {
  for (unsigned long long i = thread_index(); i <= n; i += thread_count()) {
    out[i] = i < n ? g.degree(ids != nullptr ? ids[i] : static_cast<unsigned>(i)) : 0ull;
  }
}
