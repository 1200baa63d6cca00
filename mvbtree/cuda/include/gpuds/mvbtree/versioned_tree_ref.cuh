// gpuds/mvbtree/versioned_tree_ref.cuh: the device API of VersionedBTreeMap, for user
// kernels (Rust mirror: gpuds_mvbtree::VersionedTreeRef).
//
// A versioned_tree_ref<K, V> is trivially copyable and non-owning; pass it by value. As
// in gpuds-btree every operation is tile-cooperative (all lanes of the tile call it with
// the same arguments and get the same result); queries take tiles of 16 or 32 lanes
// (8 for one-line nodes of 8 slots), updates a whole converged warp (the slab allocator
// hands out units per warp).
//
// Tile-wide snapshots (§4.3.2): `take_snapshot<TILE>()` returns a timestamp; queries at it
// (`find`, `successor`, `range_count`, `range_collect`) see exactly the pairs present when
// it was taken, while other warps insert and erase (with mode OUT_OF_PLACE, which the
// host's `device_ref(Updates::OutOfPlace)` sets). A timestamp taken in a kernel is valid
// until that kernel ends: the host collects versions no live host snapshot needs between
// batches. Pass LATEST for the newest state.
//
// ```
// using tree = gpuds::mvbtree::versioned_tree_ref<unsigned, unsigned>;
// __global__ void scan_while_inserting(tree t, const unsigned* keys, unsigned n, unsigned* counts) {
//   gpuds::alloc::warp_allocator allocator(t.tree.alloc);
//   unsigned w = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
//   if (w >= n) return;                                   // whole warps
//   if (w % 2 == 0) { t.insert(allocator, keys[w], w); return; }
//   const unsigned s = t.take_snapshot<32>();
//   const unsigned c = t.range_count<32>(0, 1000, s);     // exact at s
//   if (gpuds::warp::lane_id() == 0) counts[w] = c;
// }
// ```
#pragma once
#include <gpuds/alloc/ebr.cuh>
#include <gpuds/mvbtree/version.cuh>

namespace gpuds {
namespace mvbtree {

template <class K, class V>
struct versioned_tree_ref {
  using key_type = K;
  using value_type = V;
  using slot = typename btree::layout<K, V>::slot;
  btree::tree_ref<K, V> tree;  // node pool, root (a head), step cap, status word, pair count
  unsigned* clock;             // the global timestamp
  unsigned copy_below;         // IN_PLACE: a head stamped below this is copied before a change
  unsigned mode;               // update_mode
  unsigned* log;               // heads that have older versions (the collector's work list)
  unsigned* log_len;
  unsigned log_cap;
  unsigned now;                // IN_PLACE: the clock during the batch, or UNSET_TS: read it

  __device__ __forceinline__ slot* words(node_addr a) const { return tree.words(a); }
  __device__ __forceinline__ unsigned max_steps() const { return tree.max_steps; }
  template <unsigned TILE>
  __device__ __forceinline__ void report(unsigned flag) const {
    tree.template report<TILE>(flag);
  }

  // A tile-wide snapshot (see the header comment).
  template <unsigned TILE>
  __device__ __forceinline__ unsigned take_snapshot() const {
    return mvbtree::take_snapshot<TILE>(clock, tree.status);
  }
  // Value of key k at snapshot ts (LATEST: now), if present.
  template <unsigned TILE, class Mode = coherent>
  __device__ bool find(K k, unsigned ts, V& value) const;
  // The pair with the smallest key > k at ts, if any.
  template <unsigned TILE, class Mode = coherent>
  __device__ bool successor(K k, unsigned ts, K& key, V& value) const;
  // Number of pairs with lo <= key <= hi at ts (0 when lo > hi).
  template <unsigned TILE, class Mode = coherent>
  __device__ unsigned range_count(K lo, K hi, unsigned ts) const;
  // Writes the pairs with lo <= key <= hi at ts, in key order, to keys/values (at most
  // cap); returns how many there are (it may be more than it wrote).
  template <unsigned TILE, class Mode = coherent>
  __device__ unsigned range_collect(K lo, K hi, unsigned ts, K* keys, V* values, unsigned cap) const;
  // Inserts (k, v), replacing the value of an existing k. A full converged warp.
  __device__ btree::insert_outcome insert(gpuds::alloc::warp_allocator& allocator, K k, V v) const {
    gpuds::alloc::null_block none;
    return insert(allocator, k, v, none);
  }
  // The same, handing the older versions it makes to an epoch-based reclaimer (the alloc
  // crate's `ebr_block`, entered by the block: gpuds/alloc/ebr.cuh) when no host snapshot
  // is live, so that a long-running kernel keeps its memory bounded (§4.4.4).
  template <class R>
  __device__ btree::insert_outcome insert(gpuds::alloc::warp_allocator& allocator, K k, V v, R& reclaim) const;
  // Removes k; `value` gets the removed value. A full converged warp.
  __device__ btree::remove_outcome erase(gpuds::alloc::warp_allocator& allocator, K k, V& value) const {
    // (coherent descent: other warps may split nodes meanwhile)
    gpuds::alloc::null_block none;
    return erase(allocator, k, value, none);
  }
  // The same with an epoch-based reclaimer (see insert).
  template <class R>
  __device__ btree::remove_outcome erase(gpuds::alloc::warp_allocator& allocator, K k, V& value, R& reclaim) const;
};

// The same tree when its node pool has the light layout (one linear range of units):
// words() without the branch on the pool's layout (see btree::light_tree_ref). Kernels
// choose once per launch with `with_layout`; the detail:: functions take either.
template <class K, class V>
struct light_versioned_ref : versioned_tree_ref<K, V> {
  using slot = typename versioned_tree_ref<K, V>::slot;
  __device__ __forceinline__ slot* words(node_addr a) const {
    return reinterpret_cast<slot*>(this->tree.alloc.base +
                                   static_cast<unsigned long long>(a) * btree::layout<K, V>::NODE_BYTES);
  }
};

// Calls f(tree) with t as a light_versioned_ref when its pool has the light layout, else
// as t itself (a uniform branch per launch).
template <class K, class V, class F>
__device__ __forceinline__ void with_layout(const versioned_tree_ref<K, V>& t, F&& f) {
  if (t.tree.alloc.base != nullptr) {
    const light_versioned_ref<K, V> light{t};
    f(light);
  } else {
    f(t);
  }
}

}  // namespace mvbtree
}  // namespace gpuds

#include <gpuds/mvbtree/detail/vread.cuh>
#include <gpuds/mvbtree/detail/vwrite.cuh>

namespace gpuds {
namespace mvbtree {

template <class K, class V>
template <unsigned TILE, class Mode>
__device__ bool versioned_tree_ref<K, V>::find(K k, unsigned ts, V& value) const {
  return detail::find<TILE, Mode>(*this, k, ts, value);
}
template <class K, class V>
template <unsigned TILE, class Mode>
__device__ bool versioned_tree_ref<K, V>::successor(K k, unsigned ts, K& key, V& value) const {
  return detail::successor<TILE, Mode>(*this, k, ts, key, value);
}
template <class K, class V>
template <unsigned TILE, class Mode>
__device__ unsigned versioned_tree_ref<K, V>::range_count(K lo, K hi, unsigned ts) const {
  return detail::range<TILE, Mode, false>(*this, lo, hi, ts, nullptr, nullptr, 0);
}
template <class K, class V>
template <unsigned TILE, class Mode>
__device__ unsigned versioned_tree_ref<K, V>::range_collect(K lo, K hi, unsigned ts, K* keys, V* values,
                                                            unsigned cap) const {
  return detail::range<TILE, Mode, true>(*this, lo, hi, ts, keys, values, cap);
}
template <class K, class V>
template <class R>
__device__ btree::insert_outcome versioned_tree_ref<K, V>::insert(gpuds::alloc::warp_allocator& allocator, K k, V v,
                                                                   R& reclaim) const {
  const btree::insert_outcome r = detail::insert(*this, allocator, &reclaim, k, v);
  if (r == btree::INSERT_ADDED && gpuds::warp::lane_id() == 0) mem::fetch_add_relaxed(tree.size, 1ull);
  return r;
}
template <class K, class V>
template <class R>
__device__ btree::remove_outcome versioned_tree_ref<K, V>::erase(gpuds::alloc::warp_allocator& allocator, K k,
                                                                  V& value, R& reclaim) const {
  const btree::remove_outcome r = detail::erase(*this, allocator, &reclaim, k, value);
  if (r == btree::REMOVE_DONE && gpuds::warp::lane_id() == 0) mem::fetch_add_relaxed(tree.size, ~0ull);
  return r;
}

}  // namespace mvbtree
}  // namespace gpuds
