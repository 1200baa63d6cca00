// Entry points of SortedGraph (gpuds/graph/sorted_segments.cuh): batched edge updates
// that keep every adjacency list sorted, queries, export and the triangle count.
//
// An update batch arrives as sorted, duplicate-free keys u << SHIFT | v (the CSR build's
// pack, radix sort and run flags). sorted_filter keeps the keys that change the graph
// (insertions: absent edges; deletions: present ones), the host compacts them, and
// sorted_heads marks where each source's run starts. From then on a run is one touched
// vertex with its sorted list B of new (or removed) destinations beside its stored list
// A. sorted_plan gives each run its new degree and, for an insertion that outgrows its
// segment, a new power-of-two capacity; the host scans those and moves the segments that
// must move to the pool's top. The merge is element-parallel, so a hub's list is spread
// over the whole GPU: each stored element a of A goes to position i + |{b in B : b < a}|
// of the run's output (deletions: i - |{b in B : b < a}|, or nowhere when a is in B), and
// each new b to position j + |{a in A : a < b}| (sorted_merge_old / _new, binary searches
// into the other list). The output goes to a scratch array first (a list that grows in
// place would overwrite elements other threads still read); sorted_commit then updates
// the dictionary and sorted_copy writes each run's output to its segment.
//
// Every kernel is a grid-stride loop, every inner loop a binary search bounded by a
// list length; no kernel traps.
#include <gpuds/graph/sorted_segments.cuh>

using namespace gpuds::graph::sorted;

// MIN_CAPACITY: the smallest capacity a segment gets (from the host's constant).

__device__ __forceinline__ u64 first_item() {
  return static_cast<u64>(blockIdx.x) * blockDim.x + threadIdx.x;
}

__device__ __forceinline__ u64 item_stride() {
  return static_cast<u64>(gridDim.x) * blockDim.x;
}

// The capacity of a segment that must hold `degree` destinations: the next power of two,
// at least MIN_CAPACITY, at most 2^32 - 1 (degrees stay below 2^32 - 2).
__device__ __forceinline__ u32 capacity_for(u64 degree) {
  u64 cap = MIN_CAPACITY;
  while (cap < degree) cap <<= 1;  // at most 32 doublings
  return cap > 0xFFFFFFFFull ? 0xFFFFFFFFu : static_cast<u32>(cap);
}

// flags[k] stays 1 for a flagged key of b.keys[0, b.m) that changes the graph: in an
// insertion batch, an edge not yet stored; in a deletion batch, a stored one. Unflagged
// keys (repeats, dropped edges) stay 0. (b has no runs yet.)
extern "C" __global__ void sorted_filter(const segment* dict, const u32* pool, batch_runs b,
                                         u32* flags) {
  for (u64 k = first_item(); k < b.m; k += item_stride()) {
    if (flags[k] == 0) continue;
    const u64 key = b.keys[k];
    const bool present = contains(dict, pool, b.source_of(key), b.destination_of(key));
    flags[k] = present != (b.insert != 0) ? 1u : 0u;
  }
}

// flags[k] = 1 where kept key k starts the run of its source. (b has no runs yet.)
extern "C" __global__ void sorted_heads(batch_runs b, u32* flags) {
  for (u64 k = first_item(); k < b.m; k += item_stride()) {
    flags[k] = k == 0 || b.source_of(b.keys[k - 1]) != b.source_of(b.keys[k]) ? 1u : 0u;
  }
}

// Per run: the source's degree before and after the batch, and the capacity of a new
// segment when the new degree does not fit (0: it stays where it is).
extern "C" __global__ void sorted_plan(const segment* dict, batch_runs b, u64* new_degree,
                                       u64* old_degree, u64* moved) {
  for (u64 i = first_item(); i < b.runs; i += item_stride()) {
    const u64 len = b.end(i) - b.begin(i);
    const segment s = dict[b.vertex(i)];
    const u64 d = b.insert != 0 ? s.degree + len : s.degree - len;
    new_degree[i] = d;
    old_degree[i] = s.degree;
    moved[i] = b.insert != 0 && d > s.capacity ? capacity_for(d) : 0;
  }
}

// Each stored element of every touched list to its place in the run's output
// (old_first / new_first: exclusive scans of the runs' old and new degrees).
extern "C" __global__ void sorted_merge_old(const segment* dict, const u32* pool, batch_runs b,
                                            const u64* old_first, u64 old_total,
                                            const u64* new_first, u32* scratch) {
  for (u64 t = first_item(); t < old_total; t += item_stride()) {
    const u64 i = row_of(old_first, b.runs, t);
    const u64 h = b.begin(i);
    const u64 e = b.end(i);
    const u32 u = b.vertex(i);
    const u64 k = t - old_first[i];
    const u32 a = pool[dict[u].offset + k];
    const u64 key = (static_cast<u64>(u) << b.shift) | a;
    const u64 p = lower_bound(b.keys, h, e, key);
    const u64 below = p - h;
    if (b.insert != 0) {
      scratch[new_first[i] + k + below] = a;
    } else if (p == e || b.keys[p] != key) {
      scratch[new_first[i] + k - below] = a;
    }
  }
}

// Each new destination of an insertion batch to its place in its run's output.
extern "C" __global__ void sorted_merge_new(const segment* dict, const u32* pool, batch_runs b,
                                            const u64* new_first, u32* scratch) {
  for (u64 j = first_item(); j < b.m; j += item_stride()) {
    const u64 i = row_of(b.heads, b.runs, j);
    const u64 key = b.keys[j];
    const u32 v = b.destination_of(key);
    const segment s = dict[b.source_of(key)];
    const u64 below = lower_bound(pool, s.offset, s.offset + s.degree, v) - s.offset;
    scratch[new_first[i] + (j - b.begin(i)) + below] = v;
  }
}

// The dictionary after the batch: new degrees, and new segments at base + moved_first[i]
// for the runs that moved. Runs after both merges (they read the old entries).
extern "C" __global__ void sorted_commit(segment* dict, batch_runs b, const u64* new_degree,
                                         const u64* moved, const u64* moved_first, u64 base) {
  for (u64 i = first_item(); i < b.runs; i += item_stride()) {
    segment& s = dict[b.vertex(i)];
    if (moved[i] != 0) {
      s.offset = base + moved_first[i];
      s.capacity = static_cast<u32>(moved[i]);
    }
    s.degree = static_cast<u32>(new_degree[i]);
  }
}

// Each run's output from the scratch array to its segment.
extern "C" __global__ void sorted_copy(const segment* dict, u32* pool, batch_runs b,
                                       const u64* new_first, u64 new_total, const u32* scratch) {
  for (u64 t = first_item(); t < new_total; t += item_stride()) {
    const u64 i = row_of(new_first, b.runs, t);
    pool[dict[b.vertex(i)].offset + (t - new_first[i])] = scratch[t];
  }
}

// out[i] = the degree (field 0) or capacity (field 1) of vertex ids[i] (ids null: of
// vertex i), 0 for ids at or past num_ids.
extern "C" __global__ void sorted_sizes(const segment* dict, u32 num_ids, const u32* ids, u64 n,
                                        u32 field, u64* out) {
  for (u64 i = first_item(); i < n; i += item_stride()) {
    const u64 u = ids != nullptr ? ids[i] : i;
    u64 size = 0;
    if (u < num_ids) size = field == 0 ? dict[u].degree : dict[u].capacity;
    out[i] = size;
  }
}

// The repack of a growing pool: every list to new_pool[cap_first[u], ...) (cap_first: the
// exclusive scan of the capacities; degree_first: of the degrees, `total` in all).
extern "C" __global__ void sorted_repack(const segment* dict, const u32* pool, u32 num_ids,
                                         const u64* degree_first, const u64* cap_first, u64 total,
                                         u32* new_pool) {
  for (u64 t = first_item(); t < total; t += item_stride()) {
    const u64 u = row_of(degree_first, num_ids, t);
    const u64 k = t - degree_first[u];
    new_pool[cap_first[u] + k] = pool[dict[u].offset + k];
  }
}

// The offsets of the repacked pool.
extern "C" __global__ void sorted_move(segment* dict, u32 num_ids, const u64* cap_first) {
  for (u64 u = first_item(); u < num_ids; u += item_stride()) dict[u].offset = cap_first[u];
}

// found[i] = whether src[i] -> dst[i] is an edge (ids at or past num_ids: none).
extern "C" __global__ void sorted_contains(const segment* dict, const u32* pool, u32 num_ids,
                                           const u32* src, const u32* dst, u64 n, u32* found) {
  for (u64 i = first_item(); i < n; i += item_stride()) {
    const u32 u = src[i];
    const u32 v = dst[i];
    found[i] = u < num_ids && v < num_ids && contains(dict, pool, u, v) ? 1u : 0u;
  }
}

// The lists of vertices ids[0, n) (ids null: 0..n) one after another: `first` is the
// exclusive scan of their degrees, `total` their sum. With `src`, each element's source too.
extern "C" __global__ void sorted_gather(const segment* dict, const u32* pool, u32 num_ids,
                                         const u32* ids, const u64* first, u64 n, u64 total,
                                         u32* src, u32* out) {
  for (u64 t = first_item(); t < total; t += item_stride()) {
    const u64 r = row_of(first, n, t);
    const u32 u = ids != nullptr ? ids[r] : static_cast<u32>(r);
    if (u >= num_ids) continue;  // degree 0: never the row of a position
    out[t] = pool[dict[u].offset + (t - first[r])];
    if (src != nullptr) src[t] = u;
  }
}

// Adds the triangles u < v < w to *total, by sorted intersection of the stored lists
// (no sort: they are kept sorted). `first`: the exclusive scan of all degrees, m their sum.
extern "C" __global__ void sorted_triangles(const segment* dict, const u64* first, const u32* pool,
                                            u32 num_ids, u64 m, u64* total) {
  const segment_lists lists{dict, first, pool, num_ids};
  count_triangles(lists, m, total);
}
