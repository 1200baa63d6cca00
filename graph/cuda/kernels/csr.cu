// Entry points of DeviceCsr: the sorted-CSR build from COO edges and the sorted-list
// triangle count that the dissertation's §5.6.3 compares the dynamic graph with.
//
// Build: csr_pack turns each edge into one 64-bit key (src << SHIFT | dst; with
// symmetrize also dst << SHIFT | src), a self loop or an edge with an id past the vertex
// count into DROPPED, and records the first bad edge index by atomicMin. The host radix
// sorts the keys on bits [0, 2 * SHIFT), csr_unique flags the first key of each run of
// equal keys, the core compaction keeps those, and csr_finish splits the unique keys
// into cols (the low SHIFT bits) and row_offsets (a binary search per row for its first
// key). A valid key is below 2^(2 * SHIFT) and never all ones in those bits (that would
// be the self loop (2^SHIFT - 1, 2^SHIFT - 1)), so DROPPED sorts after every valid key.
//
// Count: csr_triangles runs the sorted-list count of gpuds/graph/sorted_lists.cuh
// (shared with SortedGraph) on the CSR's rows: one edge (u, v) per thread; for u < v it
// counts the w > v found in both N(u) and N(v) (each triangle u < v < w once).
//
// Every kernel is a grid-stride loop over its items (the grid is capped at the resident
// blocks), every inner loop is bounded by a list length or a search depth, and no kernel
// traps.
#include <gpuds/graph/sorted_lists.cuh>

using gpuds::graph::sorted::lower_bound;
using u32 = unsigned;
using u64 = unsigned long long;

constexpr u64 DROPPED = ~0ull;

__device__ __forceinline__ u64 first_item() {
  return static_cast<u64>(blockIdx.x) * blockDim.x + threadIdx.x;
}

__device__ __forceinline__ u64 item_stride() {
  return static_cast<u64>(gridDim.x) * blockDim.x;
}

// Keys of edges [0, m) in keys[0, m), and with `symmetrize` their reverses in
// keys[m, 2m). `first_bad` (preset to DROPPED) gets the least index of an edge with an
// id >= num_vertices.
extern "C" __global__ void csr_pack(const u32* src, const u32* dst, u64 m, u32 num_vertices,
                                    u32 shift, u32 symmetrize, u64* keys, u64* first_bad) {
  for (u64 i = first_item(); i < m; i += item_stride()) {
    const u32 s = src[i];
    const u32 d = dst[i];
    const bool bad = s >= num_vertices || d >= num_vertices;
    if (bad) atomicMin(first_bad, i);
    const bool dropped = bad || s == d;
    keys[i] = dropped ? DROPPED : (static_cast<u64>(s) << shift) | d;
    if (symmetrize != 0) keys[m + i] = dropped ? DROPPED : (static_cast<u64>(d) << shift) | s;
  }
}

// flags[i] = 1 for the first of each run of equal sorted keys, 0 for DROPPED keys and
// repeats.
extern "C" __global__ void csr_unique(const u64* keys, u64 n, u32* flags) {
  for (u64 i = first_item(); i < n; i += item_stride()) {
    const u64 key = keys[i];
    flags[i] = key != DROPPED && (i == 0 || keys[i - 1] != key) ? 1u : 0u;
  }
}

// cols[e] = the destination of unique key e (e < m), and row_offsets[v] = the position of
// row v's first key (v <= num_vertices; row_offsets[num_vertices] = m).
extern "C" __global__ void csr_finish(const u64* keys, u64 m, u32 num_vertices, u32 shift,
                                      u64* row_offsets, u32* cols) {
  const u64 mask = (1ull << shift) - 1;
  const u64 rows = static_cast<u64>(num_vertices) + 1;
  const u64 n = m > rows ? m : rows;
  for (u64 i = first_item(); i < n; i += item_stride()) {
    if (i < m) cols[i] = static_cast<u32>(keys[i] & mask);
    if (i < num_vertices) {
      row_offsets[i] = lower_bound(keys, 0, m, i << shift);
    } else if (i == num_vertices) {
      row_offsets[i] = m;
    }
  }
}

// Adds the triangles u < v < w of the CSR to *total (see sorted_lists.cuh).
extern "C" __global__ void csr_triangles(const u64* row_offsets, const u32* cols, u32 num_vertices,
                                         u64 m, u64* total) {
  const gpuds::graph::sorted::csr_lists lists{row_offsets, cols, num_vertices};
  gpuds::graph::sorted::count_triangles(lists, m, total);
}
