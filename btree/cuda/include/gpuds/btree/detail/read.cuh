// gpuds/btree/detail/read.cuh: read-mode traversal and the queries (Awad 2022, §3.4.3,
// §3.4.5, §3.4.6, Algorithm 3.3).
//
// Every function here takes the tree as `Tree`: a tree_ref, or a light_tree_ref when the
// node pool is one linear range (see tree_ref.cuh), whose node pointers need no branch on
// the pool's layout.
//
// Readers never latch (§3.3.3): a tile descends by pivots and, whenever the key is at or
// past a node's high key, follows the side link to the right sibling (§3.3.2), which is
// how it stays correct while a split has moved pairs right but not yet told the parent.
// Every walk is bounded by `max_steps` node visits; passing it reports RETRY_LIMIT.
#pragma once

namespace gpuds {
namespace btree {
namespace detail {

// The descent every operation shares: from the root towards the leaf whose range holds
// k, moving right past high keys. At each internal node, after choosing child i (its
// address is then in `addr`), `visit(n, i)` may end the descent early by returning true.
// True when it ended at a leaf (read as `n`) or by `visit`.
template <unsigned TILE, class Mode, class Tree, class Visit>
__device__ __forceinline__ bool descend(const Tree& t, key_type k, node_addr& addr,
                                        node_view<TILE>& n, Visit&& visit) {
  addr = t.root;
  for (unsigned step = 0; step < t.max_steps; ++step) {
    n.template load<Mode>(t.words(addr));
    if (n.beyond(k)) {
      addr = n.link;
      continue;
    }
    if (n.is_leaf()) return true;
    const unsigned m = n.pairs_where([k](unsigned key, unsigned) { return key <= k; });
    const unsigned i = 31 - __clz(m);
    addr = m == 0 ? null_node : n.val_at(i);
    if (addr == null_node) {  // k below the node's low bound, or a null child: corrupted
      t.report<TILE>(gpuds::status::CORRUPTED);
      return false;
    }
    if (visit(n, i)) return true;
  }
  t.report<TILE>(gpuds::status::RETRY_LIMIT);
  return false;
}

// Descends from the root to the leaf whose range holds k; `n` is that leaf as read.
template <unsigned TILE, class Mode, class Tree>
__device__ bool find_leaf(const Tree& t, key_type k, node_addr& addr, node_view<TILE>& n) {
  return descend<TILE, Mode>(t, k, addr, n, [](const node_view<TILE>&, unsigned) { return false; });
}

// The address of the leaf whose range may hold k, for an update that latches the leaf and
// reads it again anyway: internal nodes are loaded with Mode, and the leaf itself is not
// loaded when a level-1 node names it (only a root that is a leaf is read, for its level,
// which never changes while a tree has one node). The caller moves right after latching
// when the leaf was split meanwhile.
template <unsigned TILE, class Mode, class Tree>
__device__ bool find_leaf_address(const Tree& t, key_type k, node_addr& addr) {
  node_view<TILE> n;
  return descend<TILE, Mode>(t, k, addr, n,
                             [](const node_view<TILE>& p, unsigned) { return p.level() == 1; });
}

template <unsigned TILE, class Mode, class Tree>
__device__ bool lookup(const Tree& t, key_type k, value_type& value) {
  node_addr addr;
  node_view<TILE> n;
  if (!find_leaf<TILE, Mode>(t, k, addr, n)) return false;
  const int i = n.find(k);
  if (i < 0) return false;
  value = n.val_at(static_cast<unsigned>(i));
  return true;
}

// The first pair with key > k: in k's leaf, else in the first non-empty leaf to its right
// (deletions leave empty leaves, since nodes are never merged).
template <unsigned TILE, class Mode, class Tree>
__device__ bool successor(const Tree& t, key_type k, key_type& key, value_type& value) {
  node_addr addr;
  node_view<TILE> n;
  if (!find_leaf<TILE, Mode>(t, k, addr, n)) return false;
  for (unsigned step = 0; step < t.max_steps; ++step) {
    const unsigned m = n.pairs_where([k](unsigned key, unsigned) { return key > k; });
    if (m != 0) {
      const unsigned i = __ffs(m) - 1;
      key = n.key_at(i);
      value = n.val_at(i);
      return true;
    }
    if (n.link == null_node) return false;
    addr = n.link;
    n.template load<Mode>(t.words(addr));
  }
  t.report<TILE>(gpuds::status::RETRY_LIMIT);
  return false;
}

// find_leaf for a range query [lo, hi]: at the level-1 node on the way down, the lanes
// also prefetch the leaves right of lo's leaf that the range reaches within that node
// (children whose low bound is <= hi), so that the walk along the side links finds them
// on chip instead of waiting for memory once per leaf. Only where it was measured not to
// cost more than it saves (H200, 2^24 keys): 8-lane phased queries (ranges of 32: 1.93 ->
// 2.00 G/s, of 8: unchanged) and coherent ones (mixed batches); with 16-lane tiles the
// phased range count of 8 fell from 2.40 to 2.19 G/s with it, so wider phased tiles skip it.
template <unsigned TILE, class Mode, class Tree>
__device__ bool find_leaf_for_range(const Tree& t, key_type lo, key_type hi, node_addr& addr,
                                    node_view<TILE>& n) {
  using view = node_view<TILE>;
  constexpr bool PREFETCH = TILE == 8 || !Mode::stable;
  return descend<TILE, Mode>(t, lo, addr, n, [&t, hi](const view& p, unsigned i) {
    if (PREFETCH && p.level() == 1) {
#pragma unroll
      for (unsigned s = 0; s < view::PER_LANE; ++s) {
        const unsigned pair = view::pair(s);
        if (view::holder() && pair > i && pair < p.count() && p.key[s] <= hi) {
          Mode::prefetch(t.words(p.val[s]));
        }
      }
    }
    return false;
  });
}

// Counts (and with COLLECT writes, at most `cap`) the pairs with lo <= key <= hi,
// walking the leaf level by side links from lo's leaf until a high key passes hi. The next
// leaf's loads are issued before the current leaf is scanned.
template <unsigned TILE, class Mode, bool COLLECT, class Tree>
__device__ unsigned range(const Tree& t, key_type lo, key_type hi, key_type* keys,
                          value_type* values, unsigned cap) {
  if (lo > hi) return 0;
  node_addr addr;
  node_view<TILE> n;
  if (!find_leaf_for_range<TILE, Mode>(t, lo, hi, addr, n)) return 0;
  using view = node_view<TILE>;
  unsigned found = 0;
  for (unsigned step = 0; step < t.max_steps; ++step) {
    const bool more = n.link != null_node && hi >= n.high;
    typename view::raw next;
    if (more) next = view::template fetch<Mode>(t.words(n.link));
    const unsigned m =
        n.pairs_where([lo, hi](unsigned key, unsigned) { return key >= lo && key <= hi; });
    if (COLLECT && view::holder()) {
#pragma unroll
      for (unsigned s = 0; s < view::PER_LANE; ++s) {
        const unsigned pair = view::pair(s);
        if ((m >> pair) & 1u) {
          const unsigned at = found + __popc(m & ((1u << pair) - 1u));
          if (at < cap) {
            keys[at] = n.key[s];
            values[at] = n.val[s];
          }
        }
      }
    }
    found += __popc(m);
    if (!more) return found;
    n.template unpack<Mode>(next);
  }
  t.report<TILE>(gpuds::status::RETRY_LIMIT);
  return found;
}

}  // namespace detail
}  // namespace btree
}  // namespace gpuds
