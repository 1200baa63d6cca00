// gpuds/mvbtree/detail/vread.cuh: queries at a snapshot (Awad 2022, §4.4.2, Listing 4.3).
//
// A reader loads a node's head (the address it was given), stamps it if its timestamp is
// unset (the vCAS rule: a version becomes visible atomically, at the moment it is
// stamped), and then walks the version list to the first version stamped at or before its
// snapshot. Child addresses and side links of that version name heads again. Readers never
// latch; every walk is bounded by max_steps node visits (RETRY_LIMIT), and a list that
// ends before a version old enough is reported as CORRUPTED.
#pragma once

namespace gpuds {
namespace mvbtree {
namespace detail {

template <unsigned TILE, class Tree>
using vview_of = vview<TILE, typename Tree::key_type, typename Tree::value_type>;

// Loads the version of node `head` that snapshot ts sees into n (LATEST: the head itself;
// NEWEST: ts is LATEST, known at compile time, so the version walk is not compiled in).
// `steps` counts node visits against max_steps. False (after reporting) when no version
// could be read.
template <unsigned TILE, class Mode, bool NEWEST = false, class Tree>
__device__ __forceinline__ bool load_at(const Tree& t, node_addr head, unsigned ts, vview_of<TILE, Tree>& n,
                                        unsigned& steps) {
  using S = typename vview_of<TILE, Tree>::S;
  for (;;) {
    if (++steps > t.max_steps()) {
      t.template report<TILE>(gpuds::status::RETRY_LIMIT);
      return false;
    }
    if (!n.template load<Mode>(t.words(head))) {
      t.template report<TILE>(gpuds::status::RETRY_LIMIT);
      return false;
    }
    if (NEWEST || ts == LATEST) return true;
    if (n.ts() != UNSET_TS) break;
    // Stamp it, then read it again: the node may have changed between the load and the
    // stamp (a newer version published and stamped by someone else would otherwise be
    // taken for the one read). The reload is coherent: the stamp is a fresh write.
    stamp<TILE>(t.words(head), S::TS_WORD, t.clock);
    if (++steps > t.max_steps()) {
      t.template report<TILE>(gpuds::status::RETRY_LIMIT);
      return false;
    }
    if (!n.template load<coherent>(t.words(head))) {
      t.template report<TILE>(gpuds::status::RETRY_LIMIT);
      return false;
    }
    if (n.ts() != UNSET_TS) break;
  }
  while (n.ts() > ts) {
    const node_addr older = n.older();
    if (older == null_node) {
      t.template report<TILE>(gpuds::status::CORRUPTED);
      return false;
    }
    if (++steps > t.max_steps()) {
      t.template report<TILE>(gpuds::status::RETRY_LIMIT);
      return false;
    }
    n.template load<Mode>(t.words(older));  // copies are immutable: one line or not, one read
    // An older version is a copy; anything else is a unit that was freed and reused (a
    // collector bug; in tests, reclaimed units are poisoned to show it).
    if (static_cast<unsigned>(n.key_at(btree::layout<typename Tree::key_type, typename Tree::value_type>::META_PAIR)) !=
        LATCH_COPY) {
      t.template report<TILE>(gpuds::status::CORRUPTED);
      return false;
    }
  }
  return true;
}

// From the root to the version (at ts) of the leaf whose range holds k, moving right past
// high keys.
template <unsigned TILE, class Mode, bool NEWEST = false, class Tree>
__device__ bool find_leaf_at(const Tree& t, typename Tree::key_type k, unsigned ts, vview_of<TILE, Tree>& n,
                             unsigned& steps) {
  node_addr addr = t.tree.root;
  for (;;) {
    if (!load_at<TILE, Mode, NEWEST>(t, addr, ts, n, steps)) return false;
    if (n.beyond(k)) {
      addr = n.link;
      continue;
    }
    if (n.is_leaf()) return true;
    addr = n.child_for(k);
    if (addr == null_node) {
      t.template report<TILE>(gpuds::status::CORRUPTED);
      return false;
    }
  }
}

// The value of k at ts (NEWEST: of the newest state, ts LATEST).
template <unsigned TILE, class Mode, bool NEWEST = false, class Tree>
__device__ bool find(const Tree& t, typename Tree::key_type k, unsigned ts, typename Tree::value_type& value) {
  vview_of<TILE, Tree> n;
  unsigned steps = 0;
  if (!find_leaf_at<TILE, Mode, NEWEST>(t, k, ts, n, steps)) return false;
  const int i = n.find(k);
  if (i < 0) return false;
  value = n.val_at(static_cast<unsigned>(i));
  return true;
}

// The first pair with key > k at ts: in k's leaf, else in the first non-empty leaf to its
// right (deletions leave empty leaves).
template <unsigned TILE, class Mode, class Tree>
__device__ bool successor(const Tree& t, typename Tree::key_type k, unsigned ts, typename Tree::key_type& key,
                          typename Tree::value_type& value) {
  using K = typename Tree::key_type;
  using V = typename Tree::value_type;
  vview_of<TILE, Tree> n;
  unsigned steps = 0;
  if (!find_leaf_at<TILE, Mode>(t, k, ts, n, steps)) return false;
  for (;;) {
    const unsigned m = n.pairs_where([k](K key, V) { return key > k; });
    if (m != 0) {
      const unsigned i = __ffs(m) - 1;
      key = n.key_at(i);
      value = n.val_at(i);
      return true;
    }
    if (n.link == null_node) return false;
    if (!load_at<TILE, Mode>(t, n.link, ts, n, steps)) return false;
  }
}

// Listing 4.3: the pairs with lo <= key <= hi at ts; COLLECT writes the first `cap` of
// them to keys/values (in key order). Returns how many there are.
template <unsigned TILE, class Mode, bool COLLECT, class Tree>
__device__ unsigned range(const Tree& t, typename Tree::key_type lo, typename Tree::key_type hi, unsigned ts,
                          typename Tree::key_type* keys, typename Tree::value_type* values, unsigned cap) {
  using K = typename Tree::key_type;
  using V = typename Tree::value_type;
  using view = vview_of<TILE, Tree>;
  using tile = gpuds::warp::tile<TILE>;
  if (lo > hi) return 0;
  view n;
  unsigned steps = 0;
  if (!find_leaf_at<TILE, Mode>(t, lo, ts, n, steps)) return 0;
  unsigned found = 0;
  for (;;) {
#pragma unroll
    for (unsigned s = 0; s < view::PER_LANE; ++s) {
      const bool in = view::pair(s) < n.count() && n.key[s] >= lo && n.key[s] <= hi;
      const unsigned before = __popc(tile::ballot(in) & ((1u << tile::rank()) - 1u) & ((1u << view::LANES) - 1u));
      const unsigned here = __popc(tile::ballot(in) & ((1u << view::LANES) - 1u));
      if (COLLECT && in && view::holder() && found + before < cap) {
        keys[found + before] = n.key[s];
        values[found + before] = n.val[s];
      }
      found += here;
    }
    if (n.link == null_node || hi < n.high) return found;
    if (!load_at<TILE, Mode>(t, n.link, ts, n, steps)) return found;
  }
}

}  // namespace detail
}  // namespace mvbtree
}  // namespace gpuds
