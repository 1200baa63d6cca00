// gpuds/btree/tree_ref.cuh: the device API of GpuBTreeMap, for user kernels.
//
// A `tree_ref<K, V>` (K, V: unsigned or unsigned long long) is trivially copyable and
// non-owning (Rust mirror: `gpuds_btree::TreeRef<K, V>`); pass it by value to a kernel.
// Its fields are the same for every K and V; the node layout (node.cuh) follows from them. Every operation is tile-cooperative: all TILE lanes of a
// tile call it with the same arguments (broadcast a lane's request first, e.g. with the
// work-sharing loop of gpuds/btree/detail/work_share.cuh) and get the same result.
// Queries take TILE 16 or 32; `insert` needs a whole converged warp (TILE 32) because
// the slab allocator hands out units warp by warp.
//
// Loads: `coherent` (default) whenever a kernel that modifies the tree may run at the
// same time; `cached` only for phased queries.
//
// ```
// using tree = gpuds::btree::tree_ref<unsigned long long, unsigned>;
// __global__ void my_lookups(tree t, const unsigned long long* keys, unsigned* out, unsigned n) {
//   // one warp per key
//   unsigned i = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
//   if (i >= n) return;
//   unsigned v;
//   bool hit = t.lookup<32>(keys[i], v);
//   if (gpuds::warp::lane_id() == 0) out[i] = hit ? v : 0;
// }
// ```
#pragma once
#include <gpuds/btree/latch.cuh>
#include <gpuds/core/status.cuh>

namespace gpuds {
namespace btree {

// What an insertion did.
enum insert_outcome : unsigned { INSERT_FAILED = 0, INSERT_ADDED = 1, INSERT_REPLACED = 2 };
// What a removal did.
enum remove_outcome : unsigned { REMOVE_FAILED = 0, REMOVE_ABSENT = 1, REMOVE_DONE = 2 };

template <class K, class V>
struct tree_ref {
  using key_type = K;
  using value_type = V;
  using layout_type = layout<K, V>;
  using slot = typename layout_type::slot;
  gpuds::alloc::slab_alloc_ref alloc;  // the node pool
  node_addr root;                      // never moves: a root split pushes its pairs down
  unsigned max_steps;                  // cap on the node visits and restarts of one operation
  unsigned* status;                    // gpuds::status flags
  unsigned long long* size;            // number of pairs (changed by insert and remove)

  __device__ __forceinline__ slot* words(node_addr a) const { return alloc.pointer_as<slot>(a); }
  // Called by every lane of a tile; one lane reports.
  template <unsigned TILE>
  __device__ __forceinline__ void report(unsigned flag) const {
    if (gpuds::warp::tile<TILE>::rank() == 0) gpuds::status::report(status, flag);
  }

  // Value of key k, if present.
  template <unsigned TILE, class Mode = coherent>
  __device__ bool lookup(K k, V& value) const;
  // The pair with the smallest key > k, if any.
  template <unsigned TILE, class Mode = coherent>
  __device__ bool successor(K k, K& key, V& value) const;
  // Number of pairs with lo <= key <= hi (0 when lo > hi).
  template <unsigned TILE, class Mode = coherent>
  __device__ unsigned range_count(K lo, K hi) const;
  // Writes the pairs with lo <= key <= hi, in key order, to keys/values (at most `cap`);
  // returns how many it found (it may be more than it wrote).
  template <unsigned TILE, class Mode = coherent>
  __device__ unsigned range_collect(K lo, K hi, K* keys, V* values, unsigned cap) const;
  // Removes key k; `value` gets the removed value. Keeps `size` up to date.
  template <unsigned TILE>
  __device__ remove_outcome remove(K k, V& value) const;
  // Inserts (k, v), replacing the value of an existing k. A full converged warp. Keeps
  // `size` up to date.
  __device__ insert_outcome insert(gpuds::alloc::warp_allocator& allocator, K k, V v) const;
};

// The same tree when its node pool has the light layout (alloc.base set: one linear range
// of units): words() is base + address * NODE_BYTES without the branch on the layout, which the
// compiler otherwise predicates both ways at every node visit (16 instructions instead of
// 3 per visit; the phased query kernels are bound by instruction issue). Kernels choose
// once per launch with `with_layout`.
template <class K, class V>
struct light_tree_ref : tree_ref<K, V> {
  using slot = typename tree_ref<K, V>::slot;
  __device__ __forceinline__ slot* words(node_addr a) const {
    return reinterpret_cast<slot*>(this->alloc.base + static_cast<unsigned long long>(a) *
                                                          layout<K, V>::NODE_BYTES);  // the pool's units are nodes
  }
};

// Calls f(tree) with t as a light_tree_ref when its pool has the light layout, else as
// the tree_ref itself (a uniform branch per launch; f is compiled for both).
template <class K, class V, class F>
__device__ __forceinline__ void with_layout(const tree_ref<K, V>& t, F&& f) {
  if (t.alloc.base != nullptr) {
    const light_tree_ref<K, V> light{t};
    f(light);
  } else {
    f(t);
  }
}

}  // namespace btree
}  // namespace gpuds

#include <gpuds/btree/detail/read.cuh>
#include <gpuds/btree/detail/write.cuh>

namespace gpuds {
namespace btree {

template <class K, class V>
template <unsigned TILE, class Mode>
__device__ bool tree_ref<K, V>::lookup(K k, V& value) const {
  return detail::lookup<TILE, Mode>(*this, k, value);
}
template <class K, class V>
template <unsigned TILE, class Mode>
__device__ bool tree_ref<K, V>::successor(K k, K& key, V& value) const {
  return detail::successor<TILE, Mode>(*this, k, key, value);
}
template <class K, class V>
template <unsigned TILE, class Mode>
__device__ unsigned tree_ref<K, V>::range_count(K lo, K hi) const {
  return detail::range<TILE, Mode, false>(*this, lo, hi, nullptr, nullptr, 0);
}
template <class K, class V>
template <unsigned TILE, class Mode>
__device__ unsigned tree_ref<K, V>::range_collect(K lo, K hi, K* keys, V* values, unsigned cap) const {
  return detail::range<TILE, Mode, true>(*this, lo, hi, keys, values, cap);
}
template <class K, class V>
template <unsigned TILE>
__device__ remove_outcome tree_ref<K, V>::remove(K k, V& value) const {
  const remove_outcome r = detail::remove<TILE>(*this, k, value);
  if (r == REMOVE_DONE && gpuds::warp::tile<TILE>::rank() == 0) {
    mem::fetch_add_relaxed(size, ~0ull);  // -1
  }
  return r;
}
template <class K, class V>
__device__ __forceinline__ insert_outcome tree_ref<K, V>::insert(gpuds::alloc::warp_allocator& allocator, K k,
                                                                 V v) const {
  const insert_outcome r = detail::insert(*this, allocator, k, v);
  if (r == INSERT_ADDED && gpuds::warp::lane_id() == 0) mem::fetch_add_relaxed(size, 1ull);
  return r;
}

}  // namespace btree
}  // namespace gpuds
