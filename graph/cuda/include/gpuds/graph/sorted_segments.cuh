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

// Whether v is in u's list: one binary search, at most log2(degree) + 1 steps.
__device__ __forceinline__ bool contains(const segment* dict, const u32* pool, u32 u, u32 v) {
  const segment s = dict[u];
  const u64 end = s.offset + s.degree;
  const u64 p = lower_bound(pool, s.offset, end, v);
  return p < end && pool[p] == v;
}

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
