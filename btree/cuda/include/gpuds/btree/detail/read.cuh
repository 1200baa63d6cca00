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

// The node view of a tree type's nodes, and its key and value types.
template <unsigned TILE, class Tree>
using view_of = node_view<TILE, typename Tree::key_type, typename Tree::value_type>;
template <class Tree>
using key_of = typename Tree::key_type;
template <class Tree>
using value_of = typename Tree::value_type;

// The descent every operation shares: from the root towards the leaf whose range holds
// k, moving right past high keys. At each internal node, after choosing child i (its
// address is then in `addr`), `visit(n, i)` may end the descent early by returning true.
// True when it ended at a leaf (read as `n`) or by `visit`.
template <unsigned TILE, class Mode, class Tree, class Visit>
__device__ __forceinline__ bool descend(const Tree& t, key_of<Tree> k, node_addr& addr, view_of<TILE, Tree>& n,
                                        Visit&& visit) {
  using K = key_of<Tree>;
  using V = value_of<Tree>;
  addr = t.root;
  for (unsigned step = 0; step < t.max_steps; ++step) {
    if (!n.template load<Mode>(t.words(addr))) break;
    if (n.beyond(k)) {
      addr = n.link;
      continue;
    }
    if (n.is_leaf()) return true;
    const unsigned m = n.pairs_where([k](K key, V) { return key <= k; });
    const unsigned i = 31 - __clz(m);
    addr = m == 0 ? null_node : static_cast<node_addr>(n.val_at(i));
    if (addr == null_node) {  // k below the node's low bound, or a null child: corrupted
      t.template report<TILE>(gpuds::status::CORRUPTED);
      return false;
    }
    if (visit(n, i)) return true;
  }
  t.template report<TILE>(gpuds::status::RETRY_LIMIT);
  return false;
}

// Descends from the root to the leaf whose range holds k; `n` is that leaf as read.
template <unsigned TILE, class Mode, class Tree>
__device__ bool find_leaf(const Tree& t, key_of<Tree> k, node_addr& addr, view_of<TILE, Tree>& n) {
  return descend<TILE, Mode>(t, k, addr, n, [](const view_of<TILE, Tree>&, unsigned) { return false; });
}

// The address of the leaf whose range may hold k, for an update that latches the leaf and
// reads it again anyway: internal nodes are loaded with Mode, and the leaf itself is not
// loaded when a level-1 node names it (only a root that is a leaf is read, for its level,
// which never changes while a tree has one node). The caller moves right after latching
// when the leaf was split meanwhile.
template <unsigned TILE, class Mode, class Tree>
__device__ bool find_leaf_address(const Tree& t, key_of<Tree> k, node_addr& addr) {
  view_of<TILE, Tree> n;
  return descend<TILE, Mode>(t, k, addr, n, [](const view_of<TILE, Tree>& p, unsigned) { return p.level() == 1; });
}

template <unsigned TILE, class Mode, class Tree>
__device__ bool lookup(const Tree& t, key_of<Tree> k, value_of<Tree>& value) {
  node_addr addr;
  view_of<TILE, Tree> n;
  if (!find_leaf<TILE, Mode>(t, k, addr, n)) return false;
  const int i = n.find(k);
  if (i < 0) return false;
  value = n.val_at(static_cast<unsigned>(i));
  return true;
}

// The first pair with key > k: in k's leaf, else in the first non-empty leaf to its right
// (deletions leave empty leaves, since nodes are never merged).
template <unsigned TILE, class Mode, class Tree>
__device__ bool successor(const Tree& t, key_of<Tree> k, key_of<Tree>& key, value_of<Tree>& value) {
  node_addr addr;
  view_of<TILE, Tree> n;
  if (!find_leaf<TILE, Mode>(t, k, addr, n)) return false;
  for (unsigned step = 0; step < t.max_steps; ++step) {
    const unsigned m = n.pairs_where([k](key_of<Tree> key, value_of<Tree>) { return key > k; });
    if (m != 0) {
      const unsigned i = __ffs(m) - 1;
      key = n.key_at(i);
      value = n.val_at(i);
      return true;
    }
    if (n.link == null_node) return false;
    addr = n.link;
    if (!n.template load<Mode>(t.words(addr))) break;
  }
  t.template report<TILE>(gpuds::status::RETRY_LIMIT);
  return false;
}

// find_leaf for a range query [lo, hi]: at the level-1 node on the way down, the lanes
// also prefetch the leaves right of lo's leaf that the range reaches within that node
// (children whose low bound is <= hi), so that the walk along the side links finds them
// on chip instead of waiting for memory once per leaf. Only where it was measured not to
// cost more than it saves (H200, 2^24 keys): 8-lane phased queries (ranges of 32: 1.93 ->
// 2.00 G/s, of 8: unchanged) and coherent ones (mixed batches); with 16-lane tiles the
// phased range count of 8 fell from 2.40 to 2.19 G/s with it, so wider phased tiles skip it.
// The phased range kernels with 8 and 16 lanes now take range_lockstep (below), without it.
template <unsigned TILE, class Mode, class Tree>
__device__ bool find_leaf_for_range(const Tree& t, key_of<Tree> lo, key_of<Tree> hi, node_addr& addr,
                                    view_of<TILE, Tree>& n) {
  using view = view_of<TILE, Tree>;
  constexpr bool PREFETCH = TILE == 8 || !Mode::stable;
  return descend<TILE, Mode>(t, lo, addr, n, [&t, hi](const view& p, unsigned i) {
    if (PREFETCH && p.level() == 1) {
#pragma unroll
      for (unsigned s = 0; s < view::PER_LANE; ++s) {
        const unsigned pair = view::pair(s);
        if (view::holder() && pair > i && pair < p.count() && p.key[s] <= hi) {
          Mode::prefetch(t.words(static_cast<node_addr>(p.val[s])));
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
__device__ unsigned range(const Tree& t, key_of<Tree> lo, key_of<Tree> hi, key_of<Tree>* keys,
                          value_of<Tree>* values, unsigned cap) {
  using K = key_of<Tree>;
  using V = value_of<Tree>;
  if (lo > hi) return 0;
  node_addr addr;
  view_of<TILE, Tree> n;
  if (!find_leaf_for_range<TILE, Mode>(t, lo, hi, addr, n)) return 0;
  using view = view_of<TILE, Tree>;
  unsigned found = 0;
  for (unsigned step = 0; step < t.max_steps; ++step) {
    const bool more = n.link != null_node && hi >= n.high;
    typename view::raw next;
    if (more) next = view::template fetch<Mode>(t.words(n.link));
    const unsigned m =
        n.pairs_where([lo, hi](K key, V) { return key >= lo && key <= hi; });
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
    if (!next.ok) break;
    n.template unpack<Mode>(next);
  }
  t.template report<TILE>(gpuds::status::RETRY_LIMIT);
  return found;
}

// `range` for phased queries (cached loads) with 8- or 16-lane tiles, every tile of the
// warp in step: all 32 lanes call it the same number of times (warp_work_share), each tile
// with its own query, and `live` false on a tile without one. The descent and then the walk
// along the leaves are loops whose passes visit one node per tile, ending when every tile
// of the warp is through, so their ballots and shuffles are uniform across the warp: they
// take the full-warp mask, and each tile picks its bits out of the warp's ballot, without
// the convergence checks that a tile-masked ballot or shuffle in tile-divergent code costs
// at every node. A tile that is through waits for the others of its warp (the tiles of a
// warp are issued together anyway).
// The lanes of the warp below the calling one.
__device__ __forceinline__ unsigned lanes_below() {
  unsigned m;
  asm("mov.u32 %0, %%lanemask_lt;" : "=r"(m));
  return m;
}

template <unsigned TILE, bool COLLECT, class Tree>
__device__ __forceinline__ unsigned range_lockstep(const Tree& t, bool live, key_of<Tree> lo, key_of<Tree> hi,
                                                   key_of<Tree>* keys, value_of<Tree>* values, unsigned first,
                                                   unsigned cap) {
  static_assert(TILE == 8 || TILE == 16, "lockstep queries take 8- or 16-lane tiles");
  using view = view_of<TILE, Tree>;
  using L = typename view::L;
  constexpr unsigned PER = view::PER_LANE;
  constexpr unsigned LANES = view::LANES;
  constexpr unsigned FULL = gpuds::warp::FULL_MASK;
  const unsigned lane = gpuds::warp::lane_id();
  const unsigned rank = lane & (TILE - 1);
  // This lane's first slot, and whether it holds distinct slots (a 16-lane tile over a
  // node of 8 slots holds each twice; only the low 8 lanes count).
  const unsigned slot0 = rank % LANES;
  const bool holds = LANES == TILE || rank < LANES;
  // This tile's bits of a warp's ballot.
  const unsigned tile_mask = ((1u << TILE) - 1u) << (lane & ~(TILE - 1));
  // Reads node a: this lane's pairs (slot0, slot0 + LANES) and the metadata and link.
  view n;
  const auto load = [&](node_addr a) {
    const auto* w = t.words(a);
#pragma unroll
    for (unsigned s = 0; s < PER; ++s) {
      const auto pair = cached::load(w + slot0 + s * LANES);
      n.key[s] = L::key(pair);
      n.val[s] = L::value(pair);
    }
    const auto tail = L::load_tail(w);
    n.meta = L::tail_meta(tail);
    n.high = L::tail_high(tail);
    n.link = L::tail_link(tail);
  };
  // The descent: every tile, with or without a query, goes down to a leaf (a tile without
  // one descends for whatever lo it was handed), so the loop ends when every node just
  // read is a leaf. A tile at a leaf stays there; one whose node has no pivot <= lo (only
  // in a corrupted tree) stays too and runs into the step bound (RETRY_LIMIT).
  node_addr addr = t.root;
  unsigned step = 0;
  for (; step < t.max_steps; ++step) {
    load(addr);
    const bool leaf = n.is_leaf();
    if (__all_sync(FULL, leaf)) break;
    const unsigned count = n.count();
    // below[s]: this tile's pairs of slot s whose pivot is <= lo. Pivots are sorted, so
    // the child is pair below[0] + below[1] - 1, in slot 1 when any of slot 1's is below.
    unsigned below[PER];
#pragma unroll
    for (unsigned s = 0; s < PER; ++s) {
      below[s] = __popc(__ballot_sync(FULL, holds && slot0 + s * LANES < count && n.key[s] <= lo) & tile_mask);
    }
    const node_addr offer = static_cast<node_addr>((PER == 2 && below[PER - 1] != 0) ? n.val[PER - 1] : n.val[0]);
    const unsigned i = below[0] + below[PER - 1] * (PER - 1) - 1;  // PER 1: below[0] - 1
    const node_addr child = __shfl_sync(FULL, offer, static_cast<int>(i), TILE);
    if (!leaf && below[0] != 0) addr = n.beyond(lo) ? n.link : child;
  }
  const bool stuck = step == t.max_steps;
  if (stuck && live) t.template report<TILE>(gpuds::status::RETRY_LIMIT);
  // The walk: n is lo's leaf, or a leaf left of it (a split moved pairs right and the
  // descent ran out of steps: the scan finds nothing there and the walk moves right, since
  // hi >= lo >= high).
  bool done = !live || lo > hi || stuck;
  unsigned found = 0;
  for (; step < t.max_steps; ++step) {
    const unsigned count = n.count();
    unsigned bits[PER];
#pragma unroll
    for (unsigned s = 0; s < PER; ++s) {
      bits[s] =
          __ballot_sync(FULL, holds && slot0 + s * LANES < count && n.key[s] >= lo && n.key[s] <= hi) & tile_mask;
    }
    if (!done) {
      if (COLLECT) {
        // Pairs of slot 0 come before those of slot 1; the lanes that hold a pair in
        // [lo, hi] write it, at its rank among them.
        const unsigned lower = lanes_below();
#pragma unroll
        for (unsigned s = 0; s < PER; ++s) {
          const unsigned at = found + (s == 1 ? __popc(bits[0]) : 0u) + __popc(bits[s] & lower);
          if (((bits[s] >> lane) & 1u) != 0 && at < cap) {
            keys[first + at] = n.key[s];
            values[first + at] = n.val[s];
          }
        }
      }
      found += __popc(bits[0]) + (PER == 2 ? __popc(bits[PER - 1]) : 0u);
    }
    const bool more = !done && n.link != null_node && hi >= n.high;
    done = !more;
    if (__all_sync(FULL, done)) return found;
    if (more) load(n.link);
  }
  if (!done) t.template report<TILE>(gpuds::status::RETRY_LIMIT);
  return found;
}

}  // namespace detail
}  // namespace btree
}  // namespace gpuds
