// gpuds/graph/graph_ref.cuh: graph_ref, the device view of a DynamicGraph.
//
// The dynamic graph of Awad (2022), chapter 5: a vertex dictionary (one vertex_entry per
// vertex id) and one slab hash table per vertex holding its out-neighbours (a set) or
// its out-edges with a value each (a map, the value a weight, say). All tables share one
// SlabAlloc pool for their collision slabs; their base slabs live in a few large
// allocations (chunks), B_u consecutive base slabs for vertex u. A table is a view
// (base slab, bucket count) inside those chunks: the slab-list operations of
// gpuds-slabhash run on it through their `_alone_in` and `_in` forms, which take each
// lane's list by its base slab, so the lanes of one warp may work on the tables of
// different vertices (the `_alone_in` forms run each lane's request alone first).
//
// Trivially copyable and non-owning; Rust mirror: gpuds_graph::GraphRef. Every
// operation is warp-cooperative: all 32 lanes of a converged warp call it, each with its
// own request (`active` false: none). Edge insertions take the warp's allocator
// (`lists.make_allocator()` or a slabhash::detail::on_demand_allocator).
//
// Edge operations keep every vertex's edge count exact (Algorithm 5.1: the lanes whose
// request added or removed an edge of the same source add to its count together, one
// atomic per source and warp) and the graph's total in the tables' counter stripes.
// An undirected graph stores each edge {u, v} in both tables; its operations on (u, v)
// change both directions.
#pragma once
#include <gpuds/slabhash/map_ref.cuh>
#include <gpuds/slabhash/set_ref.cuh>

namespace gpuds {
namespace graph {

using slabhash::no_value;
using slabhash::OP_ABSENT;
using slabhash::OP_FAILED;
using slabhash::OP_PRESENT;
// An edge request that was not applied because of the graph's rules, not a failure: a
// self loop of a graph that drops them, or (graphs with deleted vertices) an edge with a
// deleted end.
constexpr unsigned OP_SKIPPED = 6;

// The largest vertex id: the slab hash reserves all ones and all ones minus one.
constexpr unsigned MAX_VERTEX_ID = 0xFFFFFFFDu;
// Bit 31 of vertex_entry::buckets: the vertex is deleted (its table is empty).
constexpr unsigned DELETED_BIT = 0x80000000u;
constexpr unsigned BUCKET_MASK = 0x7FFFFFFFu;

// graph_ref::flags.
constexpr unsigned UNDIRECTED = 1u;        // each edge is stored in both tables
constexpr unsigned KEEP_SELF_LOOPS = 2u;   // a self loop is an edge (else it is skipped)
constexpr unsigned HAS_DELETED = 4u;       // some vertex is deleted: edge updates check ends

// Status flag (the second structure bit; the first is slabhash's LIST_FULL): a request
// named a vertex id at or past num_vertices (Rust: gpuds_graph::BAD_VERTEX).
constexpr unsigned BAD_VERTEX = status::FIRST_STRUCTURE_BIT << 1;

// One vertex of the dictionary (16 bytes).
struct vertex_entry {
  unsigned long long base;  // device address of the vertex's first base slab
  unsigned buckets;         // its bucket count (bits 0-30); DELETED_BIT
  unsigned count;           // its out-edges (exact after every batch)
};

template <bool B, class T, class F>
struct pick {
  using type = T;
};
template <class T, class F>
struct pick<false, T, F> {
  using type = F;
};

// V: the edge value type (unsigned or unsigned long long) of a map graph, or no_value for
// a set graph.
template <class V>
struct graph_ref {
  static constexpr bool IS_SET = sizeof(V) == sizeof(no_value);
  using list_ref = typename pick<IS_SET, slabhash::set_ref<unsigned>, slabhash::map_ref<unsigned, V>>::type;
  using value_type = typename pick<IS_SET, unsigned, V>::type;
  using layout = typename list_ref::layout;

  // The slab lists' shared fields: counter stripes (the graph's stored entries), status
  // word, slab pool, hash, step cap. Its `buckets` is unused (every table is a view).
  list_ref lists;
  vertex_entry* vertices;
  unsigned num_vertices;  // ids below it are in the dictionary
  unsigned flags;

  __device__ bool undirected() const { return (flags & UNDIRECTED) != 0u; }

  // The base slab of the list of `u`'s table (entry `e`) that holds destination `v`.
  __device__ unsigned* home(const vertex_entry& e, unsigned v) const {
    const unsigned b = e.buckets & BUCKET_MASK;
    const unsigned bucket = b <= 1u ? 0u : lists.hash(v, b);
    return reinterpret_cast<unsigned*>(e.base) + static_cast<unsigned long long>(bucket) * slabhash::SLAB_WORDS;
  }

  __device__ vertex_entry entry(unsigned u) const { return vertices[u]; }
  __device__ bool is_deleted(unsigned u) const {
    return (mem::ld_relaxed(&vertices[u].buckets) & DELETED_BIT) != 0u;
  }

  // Out-edges of `u` (exact when no update runs).
  __device__ unsigned degree(unsigned u) const { return mem::ld_relaxed(&vertices[u].count); }

  // Whether the request (u, v) may run: both ids in the dictionary (else BAD_VERTEX and
  // OP_FAILED), not a dropped self loop, no deleted end (else OP_SKIPPED).
  __device__ bool admit(bool active, unsigned u, unsigned v, bool update, unsigned& outcome) const {
    if (!active) return false;
    if (u >= num_vertices || v >= num_vertices) {
      status::report(lists.status, BAD_VERTEX);
      outcome = OP_FAILED;
      return false;
    }
    if (update && u == v && (flags & KEEP_SELF_LOOPS) == 0u) {
      outcome = OP_SKIPPED;
      return false;
    }
    if (update && (flags & HAS_DELETED) != 0u && (is_deleted(u) || is_deleted(v))) {
      outcome = OP_SKIPPED;
      return false;
    }
    return true;
  }

  // Adds `delta` to the count of `u` for every lane with `flag`, one atomic per distinct
  // source in the warp (Algorithm 5.1's grouped count).
  __device__ void add_counts(bool flag, unsigned u, int delta) const {
    const unsigned flagged = __ballot_sync(warp::FULL_MASK, flag);
    if (flagged == 0u) return;
    const unsigned peers = __match_any_sync(warp::FULL_MASK, flag ? u : 0xFFFFFFFFu) & flagged;
    if (flag && warp::lane_id() == static_cast<unsigned>(__ffs(peers) - 1)) {
      atomicAdd(&vertices[u].count, static_cast<unsigned>(delta * __popc(peers)));
    }
  }

  // One direction of an insertion: u -> v into u's table (replace semantics: an existing
  // edge's value is replaced). OP_ABSENT: added; OP_PRESENT: it was there (`old`: its
  // value, maps); OP_FAILED: not applied (status says why).
  template <class Allocator>
  __device__ unsigned insert_arc(Allocator& allocator, bool run, unsigned u, unsigned v,
                                 value_type value, value_type& old) const {
    vertex_entry e{};
    if (run) e = entry(u);
    return insert_arc_at(allocator, run, u, e, v, value, old);
  }
  // insert_arc with u's entry `e` already read.
  template <class Allocator>
  __device__ unsigned insert_arc_at(Allocator& allocator, bool run, unsigned u, const vertex_entry& e,
                                    unsigned v, value_type value, value_type& old) const {
    unsigned* const h = run ? home(e, v) : nullptr;
    unsigned outcome;
    if constexpr (IS_SET) {
      (void)value;
      (void)old;
      outcome = lists.template insert_alone_in<true>(allocator, run, h, v);
    } else {
      outcome = lists.template replace_alone_in<true>(allocator, run, h, v, value, old);
    }
    add_counts(run && outcome == OP_ABSENT, u, 1);
    return outcome;
  }

  // One direction of a deletion: u -> v from u's table (a tombstone until flush).
  // OP_PRESENT: removed (`old`: its value, maps); OP_ABSENT: not there.
  __device__ unsigned erase_arc(bool run, unsigned u, unsigned v, value_type& old) const {
    vertex_entry e{};
    if (run) e = entry(u);
    return erase_arc_at(run, u, e, v, old);
  }
  // erase_arc with u's entry `e` already read.
  // STILL: a kernel in which nothing inserts into the graph from its start to its end
  // (the slab hash's erase_alone_in; slabhash::detail::alone::look states the rule).
  template <bool STILL = false>
  __device__ unsigned erase_arc_at(bool run, unsigned u, const vertex_entry& e, unsigned v,
                                   value_type& old) const {
    unsigned* const h = run ? home(e, v) : nullptr;
    unsigned outcome;
    if constexpr (IS_SET) {
      (void)old;
      outcome = lists.template erase_alone_in<STILL>(run, h, v);
    } else {
      outcome = lists.template erase_alone_in<STILL>(run, h, v, old);
    }
    add_counts(run && outcome == OP_PRESENT, u, -1);
    return outcome;
  }

  // The entries of an edge's ends for its arcs (`run`: u's; undirected, no self loop: v's
  // too), both loads issued before the first arc runs. (Asking L2 for the second arc's
  // base slab here as well measured 0.93-1.0x on the H200: not done.)
  __device__ void both_entries(bool run, unsigned u, unsigned v, vertex_entry& eu, vertex_entry& ev) const {
    if (run) eu = entry(u);
    if (run && undirected() && u != v) ev = entry(v);
  }

  // Inserts edge (u, v) (and (v, u) when undirected). Returns the outcome of u -> v:
  // OP_ABSENT (a new edge), OP_PRESENT (its value replaced), OP_SKIPPED, OP_FAILED;
  // `added` gets the entries this lane's request added (0-2), for the batch's tally. The
  // lanes of a warp inserting into one list claim side by side (slabhash's grouped
  // claims): in a kernel that also deletes the same edges, a lookup there can see an edge
  // come and go while its insertion settles (the final graph and counts are exact).
  template <class Allocator>
  __device__ unsigned insert_edge(Allocator& allocator, bool active, unsigned u, unsigned v,
                                  value_type value, unsigned& added) const {
    unsigned outcome = OP_ABSENT;
    const bool run = admit(active, u, v, true, outcome);
    value_type old{};
    outcome = run ? OP_ABSENT : outcome;
    vertex_entry eu{}, ev{};
    both_entries(run, u, v, eu, ev);
    const unsigned first = insert_arc_at(allocator, run, u, eu, v, value, old);
    if (run) outcome = first;
    added = run && first == OP_ABSENT ? 1u : 0u;
    if (undirected()) {
      const bool back = run && first != OP_FAILED && u != v;
      const unsigned second = insert_arc_at(allocator, back, v, ev, u, value, old);
      if (back && second == OP_ABSENT) ++added;
      if (back && second == OP_FAILED) outcome = OP_FAILED;
    }
    return outcome;
  }

  // Deletes edge (u, v) (and (v, u) when undirected). OP_PRESENT: removed; OP_ABSENT:
  // not there; `removed` gets the entries this lane's request removed (0-2).
  // STILL: nothing inserts into the graph from the start of the calling kernel to its
  // end, anywhere in the grid (the crate's deletion kernel; a user kernel that also
  // inserts must keep the default): the lanes read the lists with plain loads cached in
  // L1 (slabhash::detail::alone::look). Graphs of u64 values delete their wide pairs by
  // tiles, as before.
  template <bool STILL = false>
  __device__ unsigned erase_edge(bool active, unsigned u, unsigned v, unsigned& removed) const {
    unsigned outcome = OP_ABSENT;
    const bool run = admit(active, u, v, true, outcome);
    value_type old{};
    vertex_entry eu{}, ev{};
    both_entries(run, u, v, eu, ev);
    const unsigned first = erase_arc_at<STILL>(run, u, eu, v, old);
    if (run) outcome = first;
    removed = run && first == OP_PRESENT ? 1u : 0u;
    if (undirected()) {
      const bool back = run && first != OP_FAILED && u != v;
      const unsigned second = erase_arc_at<STILL>(back, v, ev, u, old);
      if (back && second == OP_PRESENT) ++removed;
      if (back && second == OP_FAILED) outcome = OP_FAILED;
    }
    return outcome;
  }

  // Edge-exists query (and, maps, its value): OP_PRESENT or OP_ABSENT (OP_FAILED for an
  // id past the dictionary). QUIET: no writer changes the graph while the call runs (the
  // crate's query kernels; the graph's writes take it mutably and run in stream order):
  // the slab hash's QUIET lookups, read-only loads (docs/slabhash.md).
  template <bool QUIET = false>
  __device__ unsigned find_edge(bool active, unsigned u, unsigned v, value_type& value) const {
    unsigned outcome = OP_ABSENT;
    const bool run = admit(active, u, v, false, outcome);
    vertex_entry e{};
    if (run) e = entry(u);
    unsigned* const h = run ? home(e, v) : nullptr;
    unsigned found;
    if constexpr (IS_SET) {
      (void)value;
      found = lists.template find_alone_in<QUIET>(run, h, v);
    } else {
      found = lists.template find_alone_in<QUIET>(run, h, v, value);
    }
    return run ? found : outcome;
  }

  // Whether the list at `home` (see home()) holds destination v: OP_PRESENT or
  // OP_ABSENT. The edge-exists query when the caller already has the table's entry.
  template <bool QUIET = false>
  __device__ unsigned contains_in(bool active, unsigned* home_slab, unsigned v) const {
    if constexpr (IS_SET) {
      return lists.template find_alone_in<QUIET>(active, home_slab, v);
    } else {
      value_type ignored;
      return lists.template find_alone_in<QUIET>(active, home_slab, v, ignored);
    }
  }

  // Warp-cooperative iterator over the adjacency of one vertex: every slab of every
  // bucket of its table, one slab at a time, all lanes holding their word of it (see
  // slabhash::slab_iterator). All 32 lanes call every member with the same vertex.
  //
  //   for (auto it = g.adjacency(u); it.valid(); it.next()) {
  //     for (unsigned live = it.live_key_lanes(); live != 0; live &= live - 1) {
  //       const unsigned at = __ffs(live) - 1;
  //       const unsigned v = it.key(at);        // a neighbour, broadcast to every lane
  //     }
  //   }
  //
  // The step cap bounds the slabs read per bucket, so a corrupted list cannot hang it.
  struct adjacency_iterator {
    slabhash::slab_iterator<unsigned, V> it;
    unsigned* base;
    unsigned bucket;
    unsigned buckets;
    unsigned steps;
    unsigned step_cap;

    __device__ bool valid() const { return it.valid(); }
    __device__ unsigned word() const { return it.word(); }
    __device__ unsigned* address() const { return it.address(); }
    // Whether the current slab is a base slab (the first of its bucket's list).
    __device__ bool at_base() const { return steps == 0u; }
    __device__ unsigned live_key_lanes() const { return it.live_key_lanes(); }
    __device__ unsigned key(unsigned lane) const { return it.key(lane); }
    __device__ V value(unsigned lane) const { return it.value(lane); }
    __device__ unsigned next_address() const { return it.next_address(); }
    __device__ void next() {
      ++steps;
      if (steps < step_cap) it.next();
      else it.slab = nullptr;
      while (!it.valid() && bucket + 1u < buckets) {
        ++bucket;
        steps = 0;
        it.slab = base + static_cast<unsigned long long>(bucket) * slabhash::SLAB_WORDS;
        it.word_ = slabhash::read_slab(it.slab);
      }
    }
  };

  __device__ adjacency_iterator adjacency(unsigned u) const { return adjacency_of(entry(u)); }

  // The iterator over the table of a dictionary entry the caller has read already.
  __device__ adjacency_iterator adjacency_of(const vertex_entry& e) const {
    adjacency_iterator a;
    a.it.alloc = lists.alloc;
    a.base = reinterpret_cast<unsigned*>(e.base);
    a.bucket = 0;
    a.buckets = e.buckets & BUCKET_MASK;
    a.steps = 0;
    a.step_cap = lists.step_cap;
    a.it.slab = a.buckets == 0u ? nullptr : a.base;
    if (a.it.slab != nullptr) a.it.word_ = slabhash::read_slab(a.it.slab);
    return a;
  }
};

}  // namespace graph
}  // namespace gpuds
