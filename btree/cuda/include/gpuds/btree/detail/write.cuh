// gpuds/btree/detail/write.cuh: insertion with proactive splitting, and deletion
// (Awad 2022, §3.3.4, §3.3.5, §3.4.2 and Algorithm 3.2, §3.4.4).
//
// Insertion descends in read mode. A node it must modify (the target leaf, or any full
// node on the way down: proactive splitting) is latched with one attempt; when the latch
// is taken the operation restarts from the last known parent instead of spinning. After
// latching it re-reads the node and moves right if a split got there first. A full node
// is split under its latch and its parent's latch (the one spin of §3.3.5 case 1, bounded):
// the parent is checked to still be the true parent (else restart from it and move right)
// and to have room (else restart from the root, whose descent splits it first). The root
// never moves: a full root pushes its two halves into two new nodes and becomes their
// parent. Deletion latches the leaf with a bounded spin (case 3) and never merges nodes.
//
// Every change of a reachable node is one store instruction of the whole line, or a
// write under the node's sequence number for two-line nodes (see `publish`). Write order of a split: the new right node, a fence, then the parent (new
// pivot, latch released), then the left node (count halved, link to the right node, latch
// released). A reader that still sees the old left node finds every pair there; one that
// sees the new one follows the link.
#pragma once

namespace gpuds {
namespace btree {
namespace detail {

// Updates use whole warps: every slot is held by one lane (PER_LANE 1), lane r holding
// slot r % SLOTS.
template <class K, class V>
using warp_view = node_view<32, K, V>;

// Inserts (key, value) at the sorted position of a latched, non-full node read as `n`, and
// publishes it (releasing the latch). Shifts the pairs at and after the position right.
template <class K, class V>
__device__ __forceinline__ void insert_pair(typename layout<K, V>::slot* w, const warp_view<K, V>& n, K key,
                                            V value) {
  const unsigned pair = warp_view<K, V>::pair();
  const unsigned pos = n.rank_of(key);
  const unsigned src = pair > 0 ? pair - 1 : 0;
  K k = gpuds::warp::tile<32>::shfl(n.key[0], src);
  V v = gpuds::warp::tile<32>::shfl(n.val[0], src);
  if (pair < pos || pair > n.count()) {
    k = n.key[0];
    v = n.val[0];
  } else if (pair == pos) {
    k = key;
    v = value;
  }
  publish<32>(w, k, v, make_meta(n.count() + 1, n.level()), n.high, n.link);
}

// Writes pairs [from, from + SPLIT_AT) of `n` as pairs 0..SPLIT_AT-1 of the fresh node at
// `w`, with the given link pair.
template <class K, class V>
__device__ __forceinline__ void write_half(typename layout<K, V>::slot* w, const warp_view<K, V>& n, unsigned from,
                                          K high, node_addr link) {
  using L = layout<K, V>;
  const unsigned pair = warp_view<K, V>::pair();
  const unsigned src = pair + from < L::SLOTS ? pair + from : L::SLOTS - 1;
  const K k = gpuds::warp::tile<32>::shfl(n.key[0], src);
  const V v = gpuds::warp::tile<32>::shfl(n.val[0], src);
  if (gpuds::warp::lane_id() < L::SLOTS) {
    if (pair < L::SPLIT_AT) {
      store_pair<K, V>(w, pair, k, v);
    } else if (pair == L::META_PAIR) {
      store_pair<K, V>(w, pair, static_cast<K>(LATCH_FREE), static_cast<V>(make_meta(L::SPLIT_AT, n.level())));
    } else if (pair == L::LINK_PAIR) {
      store_pair<K, V>(w, pair, high, static_cast<V>(link));
    }
  }
}

// Splits the latched full node `cur` (read as `n`) under its latched parent (read as `p`,
// known to be its true parent and not full) into itself and the fresh node `right`;
// publishes the parent and then `cur`, releasing both latches.
template <class K, class V>
__device__ __forceinline__ void split(const tree_ref<K, V>& t, node_addr cur, const warp_view<K, V>& n,
                                      node_addr parent, const warp_view<K, V>& p, node_addr right, K split_key) {
  using L = layout<K, V>;
  write_half(t.words(right), n, L::SPLIT_AT, n.high, n.link);
  fence_new_node<32>();
  insert_pair(t.words(parent), p, split_key, static_cast<V>(right));
  publish<32>(t.words(cur), n.key[0], n.val[0], make_meta(L::SPLIT_AT, n.level()), split_key, right);
}

// Splits the latched full root (read as `n`) into two fresh nodes and makes the root
// their parent, one level up; publishes the root. False (root unchanged, still latched)
// when the pool has no units.
template <class K, class V>
__device__ __forceinline__ bool split_root(const tree_ref<K, V>& t, gpuds::alloc::warp_allocator& allocator,
                                           const warp_view<K, V>& n) {
  using L = layout<K, V>;
  const node_addr left = allocator.allocate();
  if (left == null_node) return false;
  const node_addr right = allocator.allocate();
  if (right == null_node) {
    if (gpuds::warp::lane_id() == 0) t.alloc.deallocate(left);
    return false;
  }
  const K split_key = n.key_at(L::SPLIT_AT);
  write_half(t.words(left), n, 0, split_key, right);
  write_half(t.words(right), n, L::SPLIT_AT, n.high, n.link);
  fence_new_node<32>();
  const unsigned pair = warp_view<K, V>::pair();
  // pivot 0 is the root's low bound, 0
  const K k = pair == 0 ? K(0) : (pair == 1 ? split_key : n.key[0]);
  const V v = pair == 0 ? static_cast<V>(left) : (pair == 1 ? static_cast<V>(right) : n.val[0]);
  publish<32>(t.words(t.root), k, v, make_meta(2, n.level() + 1), n.high, n.link);
  return true;
}

// Algorithm 3.2. A full converged warp; the outcome is uniform. A leaf is always latched
// (to insert into it or to split it), so a leaf named by a level-1 node (`leaf_known`) is
// latched without reading it first: the read after latching is its first.
template <class K, class V>
__device__ insert_outcome insert(const tree_ref<K, V>& t, gpuds::alloc::warp_allocator& allocator, K k, V v) {
  using L = layout<K, V>;
  using view = warp_view<K, V>;
  node_addr cur = t.root;
  node_addr parent = null_node;  // last known parent of cur
  bool leaf_known = false;       // cur is a leaf (a level-1 node named it, or its sibling)
  view n;
  // To the child of the internal node read as n that routes k; false when none does (a
  // corrupted node).
  const auto down = [&]() {
    const node_addr next = n.child_for(k);
    if (next == null_node) return false;
    leaf_known = n.level() == 1;
    parent = cur;
    cur = next;
    return true;
  };
  for (unsigned step = 0; step < t.max_steps; ++step) {
    auto* w = t.words(cur);
    if (!leaf_known) {
      if (!n.template load<coherent>(w)) break;
      if (n.beyond(k)) {
        cur = n.link;
        continue;
      }
      if (!n.is_leaf() && !n.full()) {
        if (!down()) break;
        continue;
      }
    }
    // Write mode: a leaf to insert into, or a full node to split on the way down.
    if (!try_latch<32>(w)) {
      cur = parent != null_node ? parent : t.root;  // restart instead of spinning
      parent = null_node;
      leaf_known = false;
      continue;
    }
    n.template load<latched>(w);  // the node may have changed before we latched it
    if (n.beyond(k)) {
      unlatch<32>(w);
      cur = n.link;  // a sibling: the same level
      continue;
    }
    if (n.full()) {
      if (cur == t.root) {
        if (!split_root(t, allocator, n)) {
          unlatch<32>(w);
          return INSERT_FAILED;  // the allocator reported POOL_EXHAUSTED
        }
        parent = null_node;
        leaf_known = false;
        continue;
      }
      if (parent == null_node) {  // the parent is unknown: from the root
        unlatch<32>(w);
        cur = t.root;
        leaf_known = false;
        continue;
      }
      auto* pw = t.words(parent);
      if (!latch_spin<32>(pw, t.max_steps)) {
        unlatch<32>(w);
        cur = t.root;
        parent = null_node;
        leaf_known = false;
        continue;
      }
      view p;
      p.template load<latched>(pw);
      const K split_key = n.key_at(L::SPLIT_AT);
      if (p.beyond(split_key) || p.is_leaf() || p.child_for(split_key) != cur) {
        // The parent split meanwhile: the true parent is to its right.
        unlatch<32>(pw);
        unlatch<32>(w);
        cur = parent;
        parent = null_node;
        leaf_known = false;
        continue;
      }
      if (p.full()) {  // the grandparent is unknown: from the root
        unlatch<32>(pw);
        unlatch<32>(w);
        cur = t.root;
        parent = null_node;
        leaf_known = false;
        continue;
      }
      const node_addr right = allocator.allocate();
      if (right == null_node) {
        unlatch<32>(pw);
        unlatch<32>(w);
        return INSERT_FAILED;  // the allocator reported POOL_EXHAUSTED
      }
      split(t, cur, n, parent, p, right, split_key);
      if (k >= split_key) cur = right;
      continue;
    }
    if (!n.is_leaf()) {  // split by someone else meanwhile: no longer full
      unlatch<32>(w);
      if (!down()) break;
      continue;
    }
    const int i = n.find(k);
    if (i >= 0) {
      const bool here = view::pair() == static_cast<unsigned>(i);
      publish<32>(w, n.key[0], here ? v : n.val[0], n.meta, n.high, n.link);
      return INSERT_REPLACED;
    }
    insert_pair(w, n, k, v);
    return INSERT_ADDED;
  }
  // Out of steps, or a pivot range that cannot hold k (a corrupted node).
  t.template report<32>(gpuds::status::RETRY_LIMIT);
  return INSERT_FAILED;
}

// §3.4.4: find the leaf (its address: the first read of the leaf is the one after
// latching), latch it (bounded spin), read it, then check what the descent decided before
// the latch: that the node is still a leaf (a root that was a leaf may have split into an
// internal node; descend again) and that k is still below its high key (else it was split:
// move right). Then shift the following pairs left over the removed one. `Descent` loads the internal
// nodes: `cached` is allowed when no kernel in flight changes internal nodes (a batch of
// deletions only), `coherent` otherwise. Leaves are always loaded coherently.
template <unsigned TILE, class Descent = coherent, class K, class V>
__device__ remove_outcome remove(const tree_ref<K, V>& t, K k, V& value) {
  using L = layout<K, V>;
  static_assert(TILE >= L::SLOTS, "a node is written by one instruction of one lane per slot");
  using tile = gpuds::warp::tile<TILE>;
  using view = node_view<TILE, K, V>;
  node_addr addr;
  if (!find_leaf_address<TILE, Descent>(t, k, addr)) return REMOVE_FAILED;
  view n;
  for (unsigned step = 0; step < t.max_steps; ++step) {
    auto* w = t.words(addr);
    if (!latch_spin<TILE>(w, t.max_steps)) break;
    n.template load<latched>(w);
    if (!n.is_leaf()) {
      // Only the root changes level: it was a leaf when the descent read it and has been
      // split since (its pairs pushed down into two new leaves). Nothing here may be
      // removed (pivot 0 would match key 0): descend again, from the root.
      unlatch<TILE>(w);
      if (!find_leaf_address<TILE, coherent>(t, k, addr)) return REMOVE_FAILED;
      continue;
    }
    if (n.beyond(k)) {
      unlatch<TILE>(w);
      addr = n.link;
      continue;
    }
    const int i = n.find(k);
    if (i < 0) {
      unlatch<TILE>(w);
      return REMOVE_ABSENT;
    }
    value = n.val_at(static_cast<unsigned>(i));
    const unsigned pair = view::pair();
    const unsigned src = pair < L::SLOTS - 1 ? pair + 1 : L::SLOTS - 1;
    const K nk = tile::shfl(n.key[0], src);
    const V nv = tile::shfl(n.val[0], src);
    const bool shift = pair >= static_cast<unsigned>(i) && pair + 1 < n.count();
    publish<TILE>(w, shift ? nk : n.key[0], shift ? nv : n.val[0], make_meta(n.count() - 1, n.level()),
                  n.high, n.link);
    return REMOVE_DONE;
  }
  t.template report<TILE>(gpuds::status::RETRY_LIMIT);
  return REMOVE_FAILED;
}

}  // namespace detail
}  // namespace btree
}  // namespace gpuds
