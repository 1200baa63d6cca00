// gpuds/graph/sorted_segments.cuh: the device side of SortedGraph, a dynamic graph whose
// adjacency lists are kept sorted at all times (the dissertation's §5.7 future work:
// sorted nodes in place of hash tables, so that sorted-intersection triangle counting
// needs no sort).
//
// The vertex dictionary holds one `segment` per vertex id: where its list starts in the
// pool (one device array of destinations shared by all vertices), its capacity (a power
// of two, or 0 for a vertex that never had an edge) and its exact degree. The list is
// pool[offset, offset + degree), strictly increasing; pool[offset + degree, offset +
// capacity) is slack that later batches fill in place. Segments never overlap.
// Rust mirror: gpuds_graph::sorted::Segment.
#pragma once
#include <gpuds/graph/sorted_lists.cuh>

namespace gpuds {
namespace graph {
namespace sorted {

struct segment {
  u64 offset;
  u32 capacity;
  u32 degree;
};
// The fields in the order and sizes of the Rust mirror, naturally aligned: the sizes pin
// the offsets (NVRTC has no offsetof without the toolkit's headers).
static_assert(sizeof(segment) == 16, "segment: the layout of gpuds_graph::sorted::Segment");

// Whether v is in u's list: one binary search, at most log2(degree) + 1 steps.
__device__ __forceinline__ bool contains(const segment* dict, const u32* pool, u32 u, u32 v) {
  const segment s = dict[u];
  const u64 end = s.offset + s.degree;
  const u64 p = lower_bound(pool, s.offset, end, v);
  return p < end && pool[p] == v;
}

// One update batch as its kernels see it: the kept keys u << shift | v (sorted, no
// repeats; m of them) and where each source's run of keys starts (heads[0, runs)).
// Rust mirror: the sorted graph's BatchRuns.
struct batch_runs {
  const u64* keys;
  const u32* heads;
  u64 m;
  u64 runs;
  u32 shift;
  u32 insert;  // 1: an insertion batch; 0: a deletion batch

  __device__ __forceinline__ u32 source_of(u64 key) const { return static_cast<u32>(key >> shift); }
  __device__ __forceinline__ u32 destination_of(u64 key) const {
    return static_cast<u32>(key & ((1ull << shift) - 1));
  }
  __device__ __forceinline__ u64 begin(u64 i) const { return heads[i]; }
  __device__ __forceinline__ u64 end(u64 i) const { return i + 1 < runs ? heads[i + 1] : m; }
  // The vertex of run i.
  __device__ __forceinline__ u32 vertex(u64 i) const { return source_of(keys[heads[i]]); }
};
static_assert(sizeof(batch_runs) == 40, "batch_runs: the layout of the sorted graph's BatchRuns");

// A SortedGraph's lists for count_triangles: `first` is the exclusive scan of the degrees
// of vertices 0..num_vertices, the logical numbering of the edges.
struct segment_lists {
  const segment* dict;
  const u64* first;
  const u32* cols;
  u32 num_vertices;

  __device__ __forceinline__ u32 row_of_edge(u64 e) const {
    return static_cast<u32>(row_of(first, num_vertices, e));
  }
  __device__ __forceinline__ u64 at(u32 u, u64 e) const { return dict[u].offset + (e - first[u]); }
  __device__ __forceinline__ u64 begin(u32 u) const { return dict[u].offset; }
  __device__ __forceinline__ u64 end(u32 u) const { return dict[u].offset + dict[u].degree; }
};

}  // namespace sorted
}  // namespace graph
}  // namespace gpuds
