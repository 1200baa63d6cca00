// Updates of GpuBTreeMap: root creation, batched insertion, mixed concurrent batches and
// the bulk build. One whole warp per request (the slab allocator hands out units per warp).
// Compiled once per key type KEY_T and value type VALUE_T; KERNEL_SUFFIX names the
// instantiation (`btree_insert_u64_u32`).
#include <gpuds/btree/tree_ref.cuh>
#include <gpuds/btree/detail/work_share.cuh>
#include <gpuds/core/kernel_name.cuh>

using namespace gpuds::btree;
using K = KEY_T;
using V = VALUE_T;
using L = layout<K, V>;
using slot = L::slot;
using tree = tree_ref<K, V>;
// A mixed batch's argument and first result: a value, a key (a count's upper bound, a
// successor's key) or a count, so the wider of K and V.
using word = WORD_T;
static_assert(sizeof(word) >= sizeof(K) && sizeof(word) >= sizeof(V), "WORD_T holds a key and a value");
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
__device__ __forceinline__ void write_empty(slot* w) {
  const unsigned lane = lane_id();
  if (lane == L::META_PAIR) store_pair<K, V>(w, L::META_PAIR, K(LATCH_FREE), V(make_meta(0, 0)));
  if (lane == L::LINK_PAIR) store_pair<K, V>(w, L::LINK_PAIR, no_high_key<K>(), V(null_node));
}

__device__ __forceinline__ void add_size(const tree& t, unsigned long long delta) {
  if (lane_id() == 0 && delta != 0) gpuds::mem::fetch_add_relaxed(t.size, delta);
}

}  // namespace

// One warp: allocates the root, an empty leaf, and writes its address to *root.
extern "C" __global__ void GPUDS_KERNEL(btree_init)(tree t, unsigned* root) {
  if (gpuds::warp::global_warp_id() != 0) return;
  warp_allocator allocator(t.alloc);
  const node_addr a = allocator.allocate();
  if (a != null_node) write_empty(t.words(a));
  if (lane_id() == 0) *root = a;
}

// Batched insertion (Algorithm 3.2): replaced and failed bits per request (an insert fails
// when the pool is exhausted or it passes max_steps, and then changes no pair); size
// updated once per warp.
// Blocks of BTREE_BLOCK threads per SM the insertion is compiled for. The walk is
// latency-bound, so more warps in flight pay more than the registers spilled to fit them:
// on the H200 (2^24 random u32 keys into an empty tree) 4 blocks (60 registers, no
// bounds) inserted 0.79 G keys/s, 5 blocks (48, no spill) 0.90, 6 blocks (40, 32 bytes
// spilled) 0.93, 7 and 8 blocks 0.84 and 0.83. Wider pairs need more registers: 4 blocks
// spill nothing. BTREE_INSERT_MIN_BLOCKS overrides it.
#ifdef BTREE_INSERT_MIN_BLOCKS
constexpr unsigned INSERT_MIN_BLOCKS = BTREE_INSERT_MIN_BLOCKS;
#else
constexpr unsigned INSERT_MIN_BLOCKS = sizeof(K) + sizeof(V) > 8 ? 4 : 6;
#endif
extern "C" __global__ void __launch_bounds__(BTREE_BLOCK, INSERT_MIN_BLOCKS) GPUDS_KERNEL(btree_insert)(tree t, const K* keys, const V* values, unsigned n,
                                                      unsigned* replaced_bits, unsigned* failed_bits) {
  warp_allocator allocator(t.alloc);
  unsigned long long added = 0;
  for_each_chunk(n, [&](unsigned chunk, unsigned i, bool active) {
    const K my_key = active ? keys[i] : K(0);
    const V my_value = active ? values[i] : V(0);
    insert_outcome outcome = INSERT_FAILED;
    tile_work_share<32>(active, [&](unsigned src) {
      const insert_outcome r =
          detail::insert(t, allocator, tile::shfl(my_key, src), tile::shfl(my_value, src));
      if (lane_id() == src) outcome = r;
    });
    added += __popc(__ballot_sync(FULL_MASK, outcome == INSERT_ADDED));
    const unsigned replaced = __ballot_sync(FULL_MASK, outcome == INSERT_REPLACED);
    const unsigned failed = __ballot_sync(FULL_MASK, active && outcome == INSERT_FAILED);
    if (lane_id() == 0) {
      replaced_bits[chunk] = replaced;
      failed_bits[chunk] = failed;
    }
  });
  add_size(t, added);
}

// Operation codes of a mixed batch (Rust: TreeOp::encode).
enum op_code : unsigned { OP_INSERT = 0, OP_REMOVE = 1, OP_GET = 2, OP_SUCCESSOR = 3, OP_COUNT = 4 };

// A mixed concurrent batch (§3.5.6): every node load is coherent. Per request: arg is the
// value of an insert or the upper bound of a count; out_a gets the value found / removed,
// the successor's key or the count, out_b the successor's value; the found bit says found /
// replaced / removed, the failed bit that an insert or removal failed (pool exhausted,
// max_steps passed) and changed nothing.
// At most 64 registers: half occupancy instead of the 72 registers' three blocks per SM.
extern "C" __global__ void __launch_bounds__(BTREE_BLOCK, 1024 / BTREE_BLOCK)
    GPUDS_KERNEL(btree_apply)(tree t, const unsigned* ops, const K* keys, const word* args, unsigned n, word* out_a,
                              V* out_b, unsigned* found_bits, unsigned* failed_bits) {
  warp_allocator allocator(t.alloc);
  long long delta = 0;
  for_each_chunk(n, [&](unsigned chunk, unsigned i, bool active) {
    const unsigned my_op = active ? ops[i] : 0u;
    const K my_key = active ? keys[i] : K(0);
    const word my_arg = active ? args[i] : word(0);
    word a = 0;
    V b = 0;
    bool found = false, failed = false;
    int change = 0;
    tile_work_share<32>(active, [&](unsigned src) {
      const unsigned op = tile::shfl(my_op, src);
      const K k = tile::shfl(my_key, src);
      const word arg = tile::shfl(my_arg, src);
      word ra = 0;
      V rv = 0, rb = 0;
      K rk = 0;
      bool hit = false, fail = false;
      int d = 0;
      switch (op) {
        case OP_INSERT: {
          const insert_outcome r = detail::insert(t, allocator, k, static_cast<V>(arg));
          hit = r == INSERT_REPLACED;
          fail = r == INSERT_FAILED;
          d = r == INSERT_ADDED;
          break;
        }
        case OP_REMOVE: {
          const remove_outcome r = detail::remove<32>(t, k, rv);
          ra = rv;
          hit = r == REMOVE_DONE;
          fail = r == REMOVE_FAILED;
          d = -static_cast<int>(hit);
          break;
        }
        case OP_GET:
          hit = t.template lookup<32, coherent>(k, rv);
          ra = rv;
          break;
        case OP_SUCCESSOR:
          hit = t.template successor<32, coherent>(k, rk, rb);
          ra = rk;
          break;
        case OP_COUNT:
          ra = t.template range_count<32, coherent>(k, static_cast<K>(arg));
          hit = true;
          break;
        default:
          t.template report<32>(gpuds::status::OUT_OF_BOUNDS);
          break;
      }
      if (lane_id() == src) {
        a = ra;
        b = rb;
        found = hit;
        failed = fail;
        change = d;
      }
    });
    if (active) {
      out_a[i] = a;
      out_b[i] = b;
    }
    const unsigned bits = __ballot_sync(FULL_MASK, found);
    const unsigned failures = __ballot_sync(FULL_MASK, failed);
    if (lane_id() == 0) {
      found_bits[chunk] = bits;
      failed_bits[chunk] = failures;
    }
    delta += static_cast<long long>(__popc(__ballot_sync(FULL_MASK, change > 0))) -
             static_cast<long long>(__popc(__ballot_sync(FULL_MASK, change < 0)));
  });
  add_size(t, static_cast<unsigned long long>(delta));
}

// Bulk build, the last-of-each-run flags of sorted keys: the stable sort keeps equal keys
// in input order, so the last one is the latest pair of the batch.
extern "C" __global__ void GPUDS_KERNEL(btree_last_of_run)(const K* keys, unsigned n, unsigned* flags) {
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    flags[i] = (i + 1 == n || keys[i] != keys[i + 1]) ? 1u : 0u;
  }
}

// Bulk build: adds to *repeats the number of i with keys[i] == keys[i + 1] (sorted keys):
// the repeated keys the compaction must drop. A sum per block, one atomic per block (the
// grid is at most the resident blocks).
extern "C" __global__ void GPUDS_KERNEL(btree_count_repeats)(const K* keys, unsigned n, unsigned* repeats) {
  __shared__ unsigned block_sum;
  if (threadIdx.x == 0) block_sum = 0u;
  __syncthreads();
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  unsigned mine = 0u;
  for (unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x; i + 1 < n; i += stride) {
    mine += keys[i] == keys[i + 1] ? 1u : 0u;
  }
#pragma unroll
  for (unsigned off = 16; off > 0; off /= 2) mine += __shfl_down_sync(FULL_MASK, mine, off);
  if (lane_id() == 0 && mine != 0u) atomicAdd(&block_sum, mine);
  __syncthreads();
  if (threadIdx.x == 0 && block_sum != 0u) gpuds::mem::fetch_add_relaxed(repeats, block_sum);
}

// Status flag (structure bit 16): the keys of a sorted bulk build are not increasing.
constexpr unsigned UNSORTED_INPUT = gpuds::status::FIRST_STRUCTURE_BIT;

// Bulk build from sorted input: flags keys that are not strictly increasing.
extern "C" __global__ void GPUDS_KERNEL(btree_check_increasing)(const K* keys, unsigned n, unsigned* status) {
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x; i + 1 < n; i += stride) {
    if (keys[i] >= keys[i + 1]) gpuds::status::report(status, UNSORTED_INPUT);
  }
}

// Bulk build (§3.4.1) of the whole tree in one kernel, from m sorted, unique pairs.
//
// The nodes are one contiguous run of the freshly claimed pool, level by level: linear
// index i (leaves first, the root last) is unit i & 1023 of memory block i >> 10, so every
// address, child pointer, pivot and side link is arithmetic. Level l has
// nodes_l = ceil(m / fill^(l+1)) nodes; node j of level l starts at key j * fill^(l+1)
// (its low bound, 0 for j = 0), its children are nodes [j * fill, (j + 1) * fill) of level
// l - 1, and its high key is the next node's low bound. NODE_BYTES / 16 lanes write one
// node with one 16-byte store each (two 8-byte slots or one 16-byte slot), so a warp
// writes whole consecutive lines per instruction. The same kernel claims the units: it
// writes EVERY bitmap word of the pool (units [0, total) in use, the rest free), which only
// a bulk build may do (no other kernel touches the pool meanwhile; the host checked that
// the pool holds `total` units). Plain stores: no reader runs until the next kernel.
//
// `gate` (may be null): the status word of btree_check_increasing; when it carries
// UNSORTED_INPUT the kernel writes nothing, so an unsorted input leaves the tree as it was.
namespace {

// Lanes per node (one 16-byte store each) and slots per lane.
constexpr unsigned BUILD_LANES = L::NODE_BYTES / 16;
constexpr unsigned BUILD_SLOTS = 16 / L::SLOT_BYTES;

// Number of nodes of level `level`, its first linear index and keys per node.
struct bulk_level {
  unsigned level;
  unsigned long long first;  // linear index of its node 0
  unsigned long long nodes;
  unsigned long long span;   // keys under one node: fill^(level + 1)
};

__device__ __forceinline__ bulk_level level_of(unsigned long long i, unsigned m, unsigned fill) {
  // 32-bit arithmetic for the leaves (most nodes); 64-bit only above them.
  const unsigned leaves = m / fill + (m % fill != 0u ? 1u : 0u);
  bulk_level l{0u, 0ull, leaves, fill};
  while (i >= l.first + l.nodes && l.nodes > 1 && l.level < 64) {
    l.first += l.nodes;
    l.nodes = (l.nodes + fill - 1) / fill;
    l.span *= fill;
    ++l.level;
  }
  return l;
}

__device__ __forceinline__ node_addr linear_address(const tree& t, unsigned long long i) {
  return t.alloc.address(static_cast<unsigned>(i >> gpuds::alloc::UNIT_BITS),
                         static_cast<unsigned>(i) & (gpuds::alloc::UNITS_PER_BLOCK - 1u));
}

// Low bound of node c of a level whose nodes hold `span` keys each.
__device__ __forceinline__ K low_key(const K* keys, unsigned long long c, unsigned long long span) {
  return c == 0 ? K(0) : keys[c * span];
}

}  // namespace

extern "C" __global__ void GPUDS_KERNEL(btree_bulk_build)(tree t, const K* keys, const V* values, unsigned m,
                                                          unsigned fill, unsigned long long total,
                                                          const unsigned* gate) {
  if (gate != nullptr && (*gate & UNSORTED_INPUT) != 0u) return;
  const unsigned long long tid = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const unsigned long long threads = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  // The claim: bitmap word w covers linear units [32 w, 32 w + 32).
  const unsigned long long words = static_cast<unsigned long long>(t.alloc.num_blocks) *
                                   gpuds::alloc::WORDS_PER_BLOCK;
  for (unsigned long long w = tid; w < words; w += threads) {
    const unsigned long long from = w * 32;
    unsigned bits = 0u;
    if (from + 32 <= total) {
      bits = 0xffffffffu;
    } else if (from < total) {
      bits = (1u << (total - from)) - 1u;
    }
    t.alloc.bitmap[w] = bits;
  }
  if (tid == 0) *t.size = m;
  const unsigned r = threadIdx.x % BUILD_LANES;  // this lane's slots: BUILD_SLOTS * r + h
  for (unsigned long long i = tid / BUILD_LANES; i < total; i += threads / BUILD_LANES) {
    const bulk_level l = level_of(i, m, fill);
    const unsigned long long j = i - l.first;
    // Entries: nodes [j * fill, ...) of the level below, which has `below` of them, each
    // over child_span keys (for leaves: the pairs themselves, child_span 1).
    const unsigned long long child_span = l.level == 0 ? 1ull : l.span / fill;
    const unsigned long long below = l.level == 0 ? m : (m + child_span - 1) / child_span;
    const unsigned long long first = j * fill;
    const unsigned count = static_cast<unsigned>(min(static_cast<unsigned long long>(fill), below - first));
    union {
      slot s[BUILD_SLOTS];
      uint4 line;
    } out;
#pragma unroll
    for (unsigned h = 0; h < BUILD_SLOTS; ++h) {
      const unsigned p = BUILD_SLOTS * r + h;
      K a = 0;
      V b = 0;
      if (p < count) {
        const unsigned long long c = first + p;
        if (l.level == 0) {
          a = keys[c];
          b = values[c];
        } else {
          a = low_key(keys, c, child_span);
          b = static_cast<V>(linear_address(t, l.first - below + c));
        }
      } else if (p == L::META_PAIR) {
        a = static_cast<K>(LATCH_FREE);
        b = static_cast<V>(make_meta(count, l.level));
      } else if (p == L::LINK_PAIR) {
        const bool last = j + 1 == l.nodes;
        a = last ? no_high_key<K>() : keys[(j + 1) * l.span];
        b = static_cast<V>(last ? null_node : linear_address(t, i + 1));
      }
      out.s[h] = L::make(a, b);
    }
    reinterpret_cast<uint4*>(t.words(linear_address(t, i)))[r] = out.line;
  }
}
