// gpuds/graph/sorted_lists.cuh: sorted adjacency lists in one array, and the triangle
// count by sorted intersection (Awad 2022, §5.6.3) that DeviceCsr and SortedGraph share.
//
// A `Lists` view names, for vertex u, the physical range [begin(u), end(u)) of its
// neighbours in `cols` (sorted ascending, no duplicates), and numbers all edges 0..m
// logically so that a thread per edge can find its row: row_of(e) and at(u, e), the
// physical position of logical edge e. A CSR's rows are contiguous (at(u, e) = e); a
// SortedGraph's segments have slack and gaps between them, so its view adds the
// exclusive scan of the degrees as the logical numbering. Neither needs a sort at count
// time: the lists are kept sorted.
//
// Every loop is bounded by a list length or a search depth; nothing traps.
#pragma once
#include <gpuds/core/warp.cuh>

namespace gpuds {
namespace graph {
namespace sorted {

using u32 = unsigned;
using u64 = unsigned long long;

// The least position p in [lo, hi) with list[p] >= x, or hi.
template <typename T>
__device__ __forceinline__ u64 lower_bound(const T* list, u64 lo, u64 hi, T x) {
  while (lo < hi) {
    const u64 mid = lo + (hi - lo) / 2;
    if (list[mid] < x) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

// The largest i in [0, n) with prefix[i] <= x, for a nondecreasing prefix with
// prefix[0] <= x and n >= 1: the row (or run) that holds position x of a scan.
template <typename T>
__device__ __forceinline__ u64 row_of(const T* prefix, u64 n, u64 x) {
  u64 lo = 0;
  u64 hi = n;
  while (hi - lo > 1) {
    const u64 mid = lo + (hi - lo) / 2;
    if (static_cast<u64>(prefix[mid]) <= x) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return lo;
}

// How many values the sorted, duplicate-free lists cols[a, a_end) and cols[b, b_end)
// have in common, for one thread; [a, a_end) is the shorter list.
__device__ __forceinline__ u64 intersect(const u32* cols, u64 a, u64 a_end, u64 b, u64 b_end) {
  u64 found = 0;
  if (b_end - b <= 4 * (a_end - a)) {
    // Similar lengths: one merge, at most |A| + |B| steps.
    while (a < a_end && b < b_end) {
      const u32 x = cols[a];
      const u32 y = cols[b];
      found += x == y ? 1 : 0;
      a += x <= y ? 1 : 0;
      b += y <= x ? 1 : 0;
    }
    return found;
  }
  // A much longer B: one binary search per element of A, each starting where the last
  // one ended (A is sorted).
  for (; a < a_end && b < b_end; ++a) {
    const u32 x = cols[a];
    b = lower_bound(cols, b, b_end, x);
    if (b < b_end && cols[b] == x) {
      ++found;
      ++b;
    }
  }
  return found;
}

// The same count with the whole warp: each lane binary searches every 32nd element of
// the shorter list [a, a_end) in the longer one. Called by all lanes with the same lists;
// returns the lane's share.
__device__ __forceinline__ u64 intersect_warp(const u32* cols, u64 a, u64 a_end, u64 b,
                                              u64 b_end) {
  u64 found = 0;
  for (u64 i = a + gpuds::warp::lane_id(); i < a_end; i += gpuds::warp::WARP_SIZE) {
    const u32 x = cols[i];
    const u64 p = lower_bound(cols, b, b_end, x);
    found += p < b_end && cols[p] == x ? 1 : 0;
  }
  return found;
}

// The shorter list length from which an edge's intersection is shared by its warp: a
// thread alone would take that many steps or more while its warp's other lanes wait.
constexpr u64 WARP_LIST = 64;

// The rows of a CSR: row u is cols[row_offsets[u], row_offsets[u + 1]).
struct csr_lists {
  const u64* row_offsets;
  const u32* cols;
  u32 num_vertices;

  __device__ __forceinline__ u32 row_of_edge(u64 e) const {
    return static_cast<u32>(row_of(row_offsets, num_vertices, e));
  }
  __device__ __forceinline__ u64 at(u32, u64 e) const { return e; }
  __device__ __forceinline__ u64 begin(u32 u) const { return row_offsets[u]; }
  __device__ __forceinline__ u64 end(u32 u) const { return row_offsets[static_cast<u64>(u) + 1]; }
};

// Adds the triangles u < v < w of the lists to *total: for each edge (u, v) with u < v,
// |{w > v : w in N(u) and w in N(v)}|. N(u)'s part above v starts right after the edge
// (lists are sorted and duplicate-free). A lane takes one edge per round; edges whose
// shorter list is longer than WARP_LIST are intersected by the whole warp, one after
// another (the work-sharing loop), so a few heavy edges of high-degree vertices do not
// hold up their warp. The rounds are warp-uniform: every lane of a warp runs the same
// number of them, as the shuffles need. Counts are summed over the warp and added with
// one atomic per warp. A grid-stride loop over the m logical edges.
template <typename Lists>
__device__ __forceinline__ void count_triangles(const Lists& lists, u64 m, u64* total) {
  const u32* cols = lists.cols;
  u64 count = 0;
  const u64 stride = static_cast<u64>(gridDim.x) * blockDim.x;
  const u64 warp_first =
      static_cast<u64>(blockIdx.x) * blockDim.x + threadIdx.x - gpuds::warp::lane_id();
  for (u64 round = warp_first; round < m; round += stride) {
    const u64 e = round + gpuds::warp::lane_id();
    // The two lists of the lane's edge, the shorter one in [a, a_end); empty when the
    // lane has no edge or its edge is (u, v) with v < u.
    u64 a = 0, a_end = 0, b = 0, b_end = 0;
    if (e < m) {
      const u32 u = lists.row_of_edge(e);
      const u64 p = lists.at(u, e);
      const u32 v = cols[p];
      if (v > u) {
        a = p + 1;
        a_end = lists.end(u);
        b_end = lists.end(v);
        b = lower_bound(cols, lists.begin(v), b_end, v + 1);
        if (a_end - a > b_end - b) {
          const u64 t = a;
          const u64 t_end = a_end;
          a = b;
          a_end = b_end;
          b = t;
          b_end = t_end;
        }
      }
    }
    const bool heavy = a_end - a > WARP_LIST;
    if (!heavy) count += intersect(cols, a, a_end, b, b_end);
    gpuds::warp::work_share(heavy, [&](int src) {
      count += intersect_warp(cols, gpuds::warp::broadcast(a, src),
                              gpuds::warp::broadcast(a_end, src), gpuds::warp::broadcast(b, src),
                              gpuds::warp::broadcast(b_end, src));
      return true;
    });
  }
#pragma unroll
  for (u32 offset = gpuds::warp::WARP_SIZE / 2; offset > 0; offset /= 2) {
    count += __shfl_down_sync(gpuds::warp::FULL_MASK, count, offset);
  }
  if (gpuds::warp::lane_id() == 0 && count != 0) atomicAdd(total, count);
}

}  // namespace sorted
}  // namespace graph
}  // namespace gpuds
