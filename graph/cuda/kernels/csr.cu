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
// Count: csr_triangles takes one edge (u, v) per thread; for u < v it counts the w > v
// found in both N(u) and N(v) (each triangle u < v < w once), by a merge when the two
// lists are of similar length and by binary searches of the shorter one into the longer
// otherwise; an edge whose shorter list is long is intersected by its whole warp (each
// lane binary searches a share of the shorter list). Counts are summed over the warp and
// added with one atomic per warp.
//
// Every kernel is a grid-stride loop over its items (the grid is capped at the resident
// blocks), every inner loop is bounded by a list length or a search depth, and no kernel
// traps.
#include <gpuds/core/warp.cuh>

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

// The row u of edge position e: row_offsets[u] <= e < row_offsets[u + 1] (e < m, so
// row_offsets[0] = 0 <= e < m = row_offsets[num_vertices]).
__device__ __forceinline__ u32 row_of(const u64* row_offsets, u32 num_vertices, u64 e) {
  u64 lo = 0;
  u64 hi = num_vertices;
  while (hi - lo > 1) {
    const u64 mid = lo + (hi - lo) / 2;
    if (row_offsets[mid] <= e) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return static_cast<u32>(lo);
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

// Adds the triangles u < v < w of the CSR to *total: for each position e of an edge
// (u, v) with u < v, |{w > v : w in N(u) and w in N(v)}|. N(u)'s part above v starts
// right after e (rows are sorted and duplicate-free). A lane takes one edge per round;
// edges whose shorter list is longer than WARP_LIST are intersected by the whole warp,
// one after another (the work-sharing loop), so a few heavy edges of high-degree
// vertices do not hold up their warp. The rounds are warp-uniform: every lane of a warp
// runs the same number of them, as the shuffles need.
extern "C" __global__ void csr_triangles(const u64* row_offsets, const u32* cols, u32 num_vertices,
                                         u64 m, u64* total) {
  u64 count = 0;
  const u64 warp_first = first_item() - gpuds::warp::lane_id();
  for (u64 round = warp_first; round < m; round += item_stride()) {
    const u64 e = round + gpuds::warp::lane_id();
    // The two lists of the lane's edge, the shorter one in [a, a_end); empty when the
    // lane has no edge or its edge is (u, v) with v < u.
    u64 a = 0, a_end = 0, b = 0, b_end = 0;
    if (e < m) {
      const u32 u = row_of(row_offsets, num_vertices, e);
      const u32 v = cols[e];
      if (v > u) {
        a = e + 1;
        a_end = row_offsets[static_cast<u64>(u) + 1];
        b_end = row_offsets[static_cast<u64>(v) + 1];
        b = lower_bound(cols, row_offsets[v], b_end, v + 1);
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
