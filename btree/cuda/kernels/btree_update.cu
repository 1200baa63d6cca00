// Updates of GpuBTreeMap: root creation, batched insertion, mixed concurrent batches and
// the bulk build. One whole warp per request (the slab allocator hands out units per warp).
#include <gpuds/btree/tree_ref.cuh>
#include <gpuds/btree/detail/work_share.cuh>

using namespace gpuds::btree;
using gpuds::alloc::warp_allocator;
using gpuds::btree::detail::for_each_chunk;
using gpuds::btree::detail::tile_work_share;
using gpuds::warp::FULL_MASK;
using gpuds::warp::lane_id;
using tile = gpuds::warp::tile<32>;

namespace {

// Writes this lane's share of a fresh node: pairs 0..count-1 from (keys, values) (one per
// lane of rank < count), the metadata pair with the latch free, and a link pair saying
// "rightmost" (a later pass links it to its sibling).
__device__ __forceinline__ void write_fresh(unsigned long long* w, unsigned count, unsigned level,
                                            unsigned key, unsigned value) {
  const unsigned lane = lane_id();
  if (lane < count) store_pair(w, lane, key, value);
  if (lane == META_PAIR) store_pair(w, META_PAIR, LATCH_FREE, make_meta(count, level));
  if (lane == LINK_PAIR) store_pair(w, LINK_PAIR, 0xffffffffu, null_node);
}

__device__ __forceinline__ void add_size(const tree_ref& t, unsigned long long delta) {
  if (lane_id() == 0 && delta != 0) gpuds::mem::fetch_add_relaxed(t.size, delta);
}

}  // namespace

// One warp: allocates the root, an empty leaf, and writes its address to *root.
extern "C" __global__ void btree_init(tree_ref t, unsigned* root) {
  if (gpuds::warp::global_warp_id() != 0) return;
  warp_allocator allocator(t.alloc);
  const node_addr a = allocator.allocate();
  if (a != null_node) write_fresh(t.words(a), 0, 0, 0, 0);
  if (lane_id() == 0) *root = a;
}

// Batched insertion (Algorithm 3.2): replaced bit per request; size updated once per warp.
extern "C" __global__ void btree_insert(tree_ref t, const unsigned* keys, const unsigned* values,
                                        unsigned n, unsigned* replaced_bits) {
  warp_allocator allocator(t.alloc);
  unsigned long long added = 0;
  for_each_chunk(n, [&](unsigned long long chunk, unsigned long long i, bool active) {
    const unsigned my_key = active ? keys[i] : 0u, my_value = active ? values[i] : 0u;
    insert_outcome outcome = INSERT_FAILED;
    tile_work_share<32>(active, [&](unsigned src) {
      const insert_outcome r =
          detail::insert(t, allocator, tile::shfl(my_key, src), tile::shfl(my_value, src));
      if (lane_id() == src) outcome = r;
    });
    added += __popc(__ballot_sync(FULL_MASK, outcome == INSERT_ADDED));
    const unsigned replaced = __ballot_sync(FULL_MASK, outcome == INSERT_REPLACED);
    if (lane_id() == 0) replaced_bits[chunk] = replaced;
  });
  add_size(t, added);
}

// Operation codes of a mixed batch (Rust: gpuds_btree::OpCode).
enum op_code : unsigned { OP_INSERT = 0, OP_REMOVE = 1, OP_GET = 2, OP_SUCCESSOR = 3, OP_COUNT = 4 };

// A mixed concurrent batch (§3.5.6): every node load is coherent. Per request: arg is the
// value of an insert or the upper bound of a count; out_a gets the value found / removed,
// the successor's key or the count, out_b the successor's value; the bit says found /
// replaced / removed.
extern "C" __global__ void btree_apply(tree_ref t, const unsigned* ops, const unsigned* keys,
                                       const unsigned* args, unsigned n, unsigned* out_a,
                                       unsigned* out_b, unsigned* found_bits) {
  warp_allocator allocator(t.alloc);
  long long delta = 0;
  for_each_chunk(n, [&](unsigned long long chunk, unsigned long long i, bool active) {
    const unsigned my_op = active ? ops[i] : 0u, my_key = active ? keys[i] : 0u,
                   my_arg = active ? args[i] : 0u;
    unsigned a = 0, b = 0;
    bool found = false;
    int change = 0;
    tile_work_share<32>(active, [&](unsigned src) {
      const unsigned op = tile::shfl(my_op, src), k = tile::shfl(my_key, src),
                     arg = tile::shfl(my_arg, src);
      unsigned ra = 0, rb = 0;
      bool hit = false;
      int d = 0;
      switch (op) {
        case OP_INSERT: {
          const insert_outcome r = detail::insert(t, allocator, k, arg);
          hit = r == INSERT_REPLACED;
          d = r == INSERT_ADDED;
          break;
        }
        case OP_REMOVE: {
          const remove_outcome r = detail::remove<32>(t, k, ra);
          hit = r == REMOVE_DONE;
          d = -static_cast<int>(hit);
          break;
        }
        case OP_GET:
          hit = t.lookup<32, coherent>(k, ra);
          break;
        case OP_SUCCESSOR:
          hit = t.successor<32, coherent>(k, ra, rb);
          break;
        case OP_COUNT:
          ra = t.range_count<32, coherent>(k, arg);
          hit = true;
          break;
        default:
          t.report<32>(gpuds::status::OUT_OF_BOUNDS);
          break;
      }
      if (lane_id() == src) {
        a = ra;
        b = rb;
        found = hit;
        change = d;
      }
    });
    if (active) {
      out_a[i] = a;
      out_b[i] = b;
    }
    const unsigned bits = __ballot_sync(FULL_MASK, found);
    if (lane_id() == 0) found_bits[chunk] = bits;
    delta += static_cast<long long>(__popc(__ballot_sync(FULL_MASK, change > 0))) -
             static_cast<long long>(__popc(__ballot_sync(FULL_MASK, change < 0)));
  });
  add_size(t, static_cast<unsigned long long>(delta));
}

// Bulk build, the last-of-each-run flags of sorted keys: the stable sort keeps equal keys
// in input order, so the last one is the latest pair of the batch.
extern "C" __global__ void btree_last_of_run(const unsigned* keys, unsigned n, unsigned* flags) {
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    flags[i] = (i + 1 == n || keys[i] != keys[i + 1]) ? 1u : 0u;
  }
}

// Status flag (structure bit 16): the keys of a sorted bulk build are not increasing.
constexpr unsigned UNSORTED_INPUT = gpuds::status::FIRST_STRUCTURE_BIT;

// Bulk build from sorted input: flags keys that are not strictly increasing.
extern "C" __global__ void btree_check_increasing(const unsigned* keys, unsigned n, unsigned* status) {
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x; i + 1 < n; i += stride) {
    if (keys[i] >= keys[i + 1]) gpuds::status::report(status, UNSORTED_INPUT);
  }
}

// Bulk build, one level (§3.4.1), a warp per node: node j of this level takes entries
// [j * fill, (j + 1) * fill) of (keys, values) — the sorted pairs for the leaves, the
// children's low keys and addresses above them. Writes each node's address and low key for
// the next level and, above the leaves, links each child to its right sibling. A level of
// one node is the top: its address goes to *root (the host then makes it the tree's root;
// the pool was reset before the build).
extern "C" __global__ void btree_bulk_level(tree_ref t, const unsigned* keys, const unsigned* values,
                                            unsigned n, unsigned fill, unsigned level,
                                            unsigned* out_addr, unsigned* out_low, unsigned* root) {
  warp_allocator allocator(t.alloc);
  const unsigned nodes = (n + fill - 1) / fill;
  const unsigned long long warps = gpuds::warp::warp_count();
  for (unsigned long long j = gpuds::warp::global_warp_id(); j < nodes; j += warps) {
    const node_addr a = allocator.allocate();
    if (nodes == 1 && lane_id() == 0) *root = a;
    const unsigned first = static_cast<unsigned>(j) * fill;
    const unsigned count = min(fill, n - first);
    if (a == null_node) {  // the allocator reported POOL_EXHAUSTED; the host resets the tree
      if (lane_id() == 0) out_addr[j] = null_node;
      continue;
    }
    const unsigned lane = lane_id();
    const unsigned key = lane < count ? keys[first + lane] : 0u;
    const unsigned value = lane < count ? values[first + lane] : 0u;
    // Pivot 0 of an internal node is its low bound: its first child's low key (0 for the
    // leftmost, see out_low below).
    write_fresh(t.words(a), count, level, key, value);
    if (level > 0 && lane < count) {
      // This lane's child: link it to the next child of the level (in any node).
      const unsigned c = first + lane;
      const bool last = c + 1 == n;
      store_pair(t.words(value), LINK_PAIR, last ? 0xffffffffu : keys[c + 1],
                 last ? null_node : values[c + 1]);
    }
    if (lane == 0) {
      out_addr[j] = a;
      out_low[j] = j == 0 ? 0u : key;
    }
  }
}
