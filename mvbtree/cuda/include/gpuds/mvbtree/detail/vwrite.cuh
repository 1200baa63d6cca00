// gpuds/mvbtree/detail/vwrite.cuh: insertion and deletion on versioned nodes (Awad 2022,
// §4.4.1, Listing 4.2, and §4.4.3), on top of the B-link write protocol of gpuds-btree
// (gpuds/btree/detail/write.cuh: proactive splitting, try-latch and restart, the bounded
// spins, the write order of a split; read that file first).
//
// Before a latched head is changed, `prepare` decides whether its contents must be kept
// as an older version:
//   IN_PLACE (no snapshot is taken while the batch runs): only when a live snapshot may
//     see the head, i.e. its timestamp is below copy_below (the newest live host
//     snapshot + 1). The head is then stamped with the current time G.
//   OUT_OF_PLACE (snapshots may be taken at any moment): a change of pairs always copies
//     the head; the new head is published UNSET and stamped after publication by the
//     writer or by the first reader to meet it (vCAS), so every snapshot sees the change
//     entirely or not at all. A split changes no pair: the (up to three) heads it writes
//     get one explicit timestamp G, read under the latches after the old heads were
//     stamped, and a head is copied unless it is already stamped G (no snapshot older than
//     G can have seen it).
// A copy is written to a fresh unit (latch word LATCH_COPY, the old timestamp and older
// link) and fenced before the head that links it is published. The first copy of a head
// adds the head to the version log, the host collector's work list.
//
// Reclamation inside kernels (§4.4.4): a writer given an epoch-based reclaimer (the alloc
// crate's ebr_block) hands its copy to it instead of the log when no host snapshot is live
// (copy_below == 0) and the head had no logged versions: after the new head is published
// AND stamped, so that every snapshot taken after the retirement reads the new head or a
// newer one; only tiles that took their snapshot before it may still walk to the copy, and
// the reclaimer waits for them. The head's timestamp word then carries RETIRED_OLDER: the
// host collector and validation end the list there. (On-stream snapshots must not be taken
// while such a kernel runs: they would outlive it.)
#pragma once

namespace gpuds {
namespace mvbtree {
namespace detail {

template <class K, class V>
using wview = vview<32, K, V>;

// Whether a reclaimer type hands units back (the alloc crate's null_block does not).
template <class R>
struct reclaims {
  static constexpr bool value = true;
};
template <>
struct reclaims<gpuds::alloc::null_block> {
  static constexpr bool value = false;
};

// Whether the copy of head n goes to the reclaimer (see the header comment).
template <class R, class K, class V>
__device__ __forceinline__ bool retire_copy(const versioned_tree_ref<K, V>& t, const wview<K, V>& n) {
  return reclaims<R>::value && t.copy_below == 0 && (n.older() == null_node || n.retired_older());
}

// Hands a copy to the reclaimer (one lane).
template <class R>
__device__ __forceinline__ void retire(R* reclaim, node_addr c) {
  if constexpr (reclaims<R>::value) {
    if (gpuds::warp::lane_id() == 0) reclaim->retire(c);
  }
}

// The time a change stamps its heads with: the batch's (`now`, read once per warp) when
// the clock cannot move (IN_PLACE), else the clock's value now.
template <class K, class V>
__device__ __forceinline__ unsigned time_now(const versioned_tree_ref<K, V>& t) {
  if (t.mode == IN_PLACE && t.now != UNSET_TS) return t.now;
  return mem::ld_acquire(t.clock);
}

// Copy rule: a head stamped `ts` is copied before a change when ts < threshold.
template <class K, class V>
__device__ __forceinline__ unsigned copy_threshold(const versioned_tree_ref<K, V>& t, bool split, unsigned now) {
  if (t.mode == IN_PLACE) return t.copy_below;
  return split ? now : UNSET_TS;
}

// Stores this lane's slot of a version: pairs from (key, val), the version slot (ts,
// older), the metadata slot (latch word, meta), the link slot (high, link). Lanes of rank
// >= SLOTS store nothing. For fresh units only (copies, split halves), never reachable yet.
template <class K, class V>
__device__ __forceinline__ void store_fresh(typename btree::layout<K, V>::slot* w, K key, V val, unsigned ts,
                                            node_addr older, unsigned latch, unsigned meta, K high, node_addr link) {
  using L = btree::layout<K, V>;
  using S = vshape<K, V>;
  const unsigned lane = gpuds::warp::lane_id();
  if (lane >= L::SLOTS) return;
  if (lane == S::VERSION_PAIR) {
    L::store_relaxed(w + lane, S::make_version(ts, older));
    return;
  } else if (lane == L::META_PAIR) {
    key = static_cast<K>(latch);
    val = static_cast<V>(meta & btree::META_FIELDS);
  } else if (lane == L::LINK_PAIR) {
    key = high;
    val = static_cast<V>(link);
  }
  btree::store_pair<K, V>(w, lane, key, val);
}

// Publishes a latched head (releasing the latch) with this lane's pair (key, val) and the
// version slot (ts, older).
template <unsigned TILE = 32, class K, class V>
__device__ __forceinline__ void vpublish(typename btree::layout<K, V>::slot* w, K key, V val, unsigned meta, K high,
                                         node_addr link, unsigned ts, node_addr older) {
  using S = vshape<K, V>;
  const bool version = vview<TILE, K, V>::pair() == S::VERSION_PAIR;
  btree::publish_slot<TILE, K, V>(w, version ? S::make_version(ts, older) : btree::layout<K, V>::make(key, val), meta,
                                  high, link);
}

// Adds a head to the version log (one lane).
template <class K, class V>
__device__ __forceinline__ void log_head(const versioned_tree_ref<K, V>& t, node_addr head) {
  if (gpuds::warp::lane_id() != 0) return;
  const unsigned i = mem::fetch_add_relaxed(t.log_len, 1u);
  if (i < t.log_cap) {
    t.log[i] = head;
  } else {
    gpuds::status::report(t.tree.status, LOG_FULL);
  }
}

// The stamped timestamp of the latched head `a` read as n (stamps it when unset: only a
// latch holder publishes, so the stamp cannot meet a newer version).
template <class K, class V>
__device__ __forceinline__ unsigned stamped(const versioned_tree_ref<K, V>& t, node_addr a, const wview<K, V>& n) {
  const unsigned ts = n.ts();
  return ts != UNSET_TS ? ts : stamp<32>(t.words(a), vshape<K, V>::TS_WORD, t.clock);
}

// Writes the copy of head n (stamped ts) to the fresh unit c and fences: the caller then
// publishes the head with older = c. Unless the copy is to be retired, logs the head when
// it had no logged older version.
template <class K, class V>
__device__ __forceinline__ void write_copy(const versioned_tree_ref<K, V>& t, node_addr head, node_addr c,
                                           const wview<K, V>& n, unsigned ts, bool retiring) {
  const node_addr older = n.older();
  const unsigned flag = n.retired_older() ? RETIRED_OLDER : 0u;
  store_fresh<K, V>(t.words(c), n.key[0], n.val[0], ts | flag, older, LATCH_COPY, n.meta, n.high, n.link);
  btree::fence_new_node<32>();
  if (!retiring && (older == null_node || flag != 0u)) log_head(t, head);
}

// The timestamp word and older link of a head after a change: with a copy, the copy (marked
// RETIRED_OLDER when it goes to the reclaimer); without, the head's own older link and mark.
template <class K, class V>
__device__ __forceinline__ void next_version(const wview<K, V>& n, bool copy, bool retiring, node_addr c,
                                             unsigned ts, unsigned& word, node_addr& older) {
  if (copy) {
    word = ts | (retiring ? RETIRED_OLDER : 0u);
    older = c;
  } else {
    word = ts | (n.retired_older() ? RETIRED_OLDER : 0u);
    older = n.older();
  }
}

// Writes pairs [from, from + count) of n as pairs 0..count-1 of the fresh unit w: a split
// half, stamped ts, no older version, with the given level and link.
template <class K, class V>
__device__ __forceinline__ void write_half(typename btree::layout<K, V>::slot* w, const wview<K, V>& n,
                                          unsigned from, unsigned count, unsigned ts, K high, node_addr link) {
  using L = btree::layout<K, V>;
  const unsigned pair = wview<K, V>::pair();
  const unsigned src = pair + from < L::SLOTS ? pair + from : L::SLOTS - 1;
  K k = gpuds::warp::tile<32>::shfl(n.key[0], src);
  V v = gpuds::warp::tile<32>::shfl(n.val[0], src);
  if (pair >= count) {
    k = K(0);
    v = V(0);
  }
  store_fresh<K, V>(w, k, v, ts, null_node, btree::LATCH_FREE, btree::make_meta(count, n.level()), high, link);
}

// This lane's pair after inserting (key, value) at its sorted position in n (not full).
template <class K, class V>
__device__ __forceinline__ void with_inserted(const wview<K, V>& n, K key, V value, K& k, V& v) {
  const unsigned pair = wview<K, V>::pair();
  const unsigned pos = n.rank_of(key);
  const unsigned src = pair > 0 ? pair - 1 : 0;
  k = gpuds::warp::tile<32>::shfl(n.key[0], src);
  v = gpuds::warp::tile<32>::shfl(n.val[0], src);
  if (pair < pos || pair > n.count()) {
    k = n.key[0];
    v = n.val[0];
  } else if (pair == pos) {
    k = key;
    v = value;
  }
}

// Units a change needs, allocated up front so that a failure changes nothing.
struct units {
  node_addr a = null_node, b = null_node, c = null_node;
};

// Frees what `u` holds (after a failed allocation).
template <class K, class V>
__device__ __forceinline__ void give_back(const versioned_tree_ref<K, V>& t, const units& u) {
  if (gpuds::warp::lane_id() == 0) {
    t.tree.alloc.deallocate(u.a);
    t.tree.alloc.deallocate(u.b);
    t.tree.alloc.deallocate(u.c);
  }
}

// Allocates the units flagged; false (nothing held) when the pool has too few.
__device__ __forceinline__ bool take(gpuds::alloc::warp_allocator& allocator, bool a, bool b, bool c, units& u) {
  if (a && (u.a = allocator.allocate()) == null_node) return false;
  if (b && (u.b = allocator.allocate()) == null_node) return false;
  if (c && (u.c = allocator.allocate()) == null_node) return false;
  return true;
}

// Changes the latched leaf `a` (read as n): replaces value i (i >= 0) or inserts (k, v)
// (i < 0, insert) or removes pair i (remove). Publishes, releasing the latch; false (latch
// still held, nothing changed) when the pool has no unit for a copy. PLAIN: the caller
// knows that no version can be made (IN_PLACE, no live snapshot: copy_below == 0), so the
// copy code is not compiled in.
template <class R, bool PLAIN = false, class K, class V>
__device__ bool change_leaf(const versioned_tree_ref<K, V>& t, gpuds::alloc::warp_allocator& allocator, R* reclaim,
                            node_addr a, const wview<K, V>& n, int i, bool remove, K key, V value) {
  using L = btree::layout<K, V>;
  using tile = gpuds::warp::tile<32>;
  const unsigned ts = stamped(t, a, n);
  const unsigned now = time_now(t);
  const bool copy = !PLAIN && ts < copy_threshold(t, false, now);
  const bool retiring = copy && retire_copy<R>(t, n);
  units u;
  if (!take(allocator, copy, false, false, u)) {
    give_back(t, u);
    return false;
  }
  if (copy) write_copy(t, a, u.a, n, ts, retiring);
  const unsigned new_ts = !PLAIN && t.mode == OUT_OF_PLACE ? UNSET_TS : now;
  unsigned word;
  node_addr older;
  next_version(n, copy, retiring, u.a, new_ts, word, older);
  const unsigned pair = wview<K, V>::pair();
  K k = n.key[0];
  V v = n.val[0];
  unsigned count = n.count();
  if (remove) {
    const unsigned src = pair < L::SLOTS - 1 ? pair + 1 : L::SLOTS - 1;
    const K nk = tile::shfl(n.key[0], src);
    const V nv = tile::shfl(n.val[0], src);
    if (pair >= static_cast<unsigned>(i) && pair + 1 < count) {
      k = nk;
      v = nv;
    }
    count -= 1;
  } else if (i >= 0) {
    if (pair == static_cast<unsigned>(i)) v = value;
  } else {
    with_inserted(n, key, value, k, v);
    count += 1;
  }
  vpublish<32, K, V>(t.words(a), k, v, btree::make_meta(count, n.level()), n.high, n.link, word, older);
  if (new_ts == UNSET_TS) stamp<32>(t.words(a), vshape<K, V>::TS_WORD, t.clock);  // the writer's own vCAS
  if (retiring) retire(reclaim, u.a);  // after the stamp
  return true;
}

// Splits the latched full node `cur` (read as n) under its latched parent (read as p,
// its true parent, not full) into itself and a fresh right node; publishes the parent and
// then cur, releasing both latches. False (both still latched, nothing changed) when the
// pool has too few units. PLAIN: as change_leaf.
template <class R, bool PLAIN = false, class K, class V>
__device__ bool split(const versioned_tree_ref<K, V>& t, gpuds::alloc::warp_allocator& allocator, R* reclaim,
                      node_addr cur, const wview<K, V>& n, node_addr parent, const wview<K, V>& p, K split_key,
                      node_addr& right) {
  using S = vshape<K, V>;
  const unsigned nts = stamped(t, cur, n);
  const unsigned pts = stamped(t, parent, p);
  const unsigned now = time_now(t);
  const unsigned limit = copy_threshold(t, true, now);
  const bool copy_n = !PLAIN && nts < limit, copy_p = !PLAIN && pts < limit;
  const bool retire_n = copy_n && retire_copy<R>(t, n), retire_p = copy_p && retire_copy<R>(t, p);
  units u;
  if (!take(allocator, true, copy_n, copy_p, u)) {
    give_back(t, u);
    return false;
  }
  right = u.a;
  if (copy_n) write_copy(t, cur, u.b, n, nts, retire_n);
  if (copy_p) write_copy(t, parent, u.c, p, pts, retire_p);
  write_half(t.words(right), n, S::SPLIT_AT, S::NODE_PAIRS - S::SPLIT_AT, now, n.high, n.link);
  btree::fence_new_node<32>();
  K k;
  V v;
  unsigned word;
  node_addr older;
  with_inserted(p, split_key, static_cast<V>(right), k, v);
  next_version(p, copy_p, retire_p, u.c, now, word, older);
  vpublish<32, K, V>(t.words(parent), k, v, btree::make_meta(p.count() + 1, p.level()), p.high, p.link, word, older);
  const bool keep = wview<K, V>::pair() < S::SPLIT_AT;
  next_version(n, copy_n, retire_n, u.b, now, word, older);
  vpublish<32, K, V>(t.words(cur), keep ? n.key[0] : K(0), keep ? n.val[0] : V(0),
                 btree::make_meta(S::SPLIT_AT, n.level()), split_key, right, word, older);
  // Both heads are stamped (explicitly) by their publication.
  if (retire_n) retire(reclaim, u.b);
  if (retire_p) retire(reclaim, u.c);
  return true;
}

// Splits the latched full root (read as n) into two fresh nodes one level down and makes
// the root their parent; publishes the root. False (root unchanged, still latched) when
// the pool has too few units. PLAIN: as change_leaf.
template <class R, bool PLAIN = false, class K, class V>
__device__ bool split_root(const versioned_tree_ref<K, V>& t, gpuds::alloc::warp_allocator& allocator, R* reclaim,
                           const wview<K, V>& n) {
  using S = vshape<K, V>;
  const node_addr root = t.tree.root;
  const unsigned ts = stamped(t, root, n);
  const unsigned now = time_now(t);
  const bool copy = !PLAIN && ts < copy_threshold(t, true, now);
  const bool retiring = copy && retire_copy<R>(t, n);
  units u;
  if (!take(allocator, true, true, copy, u)) {
    give_back(t, u);
    return false;
  }
  const K split_key = n.key_at(S::SPLIT_AT);
  if (copy) write_copy(t, root, u.c, n, ts, retiring);
  write_half(t.words(u.a), n, 0, S::SPLIT_AT, now, split_key, u.b);
  write_half(t.words(u.b), n, S::SPLIT_AT, S::NODE_PAIRS - S::SPLIT_AT, now, n.high, n.link);
  btree::fence_new_node<32>();
  const unsigned pair = wview<K, V>::pair();
  // pivot 0 is the root's low bound, 0
  const K k = pair == 0 ? K(0) : (pair == 1 ? split_key : K(0));
  const V v = pair == 0 ? static_cast<V>(u.a) : (pair == 1 ? static_cast<V>(u.b) : V(0));
  unsigned word;
  node_addr older;
  next_version(n, copy, retiring, u.c, now, word, older);
  vpublish<32, K, V>(t.words(root), k, v, btree::make_meta(2, n.level() + 1), n.high, n.link, word, older);
  if (retiring) retire(reclaim, u.c);
  return true;
}

// Listing 4.2 on the B-link insertion of gpuds-btree (Algorithm 3.2). A full converged
// warp; the outcome is uniform. PLAIN: as change_leaf.
template <class R, bool PLAIN = false, class K, class V>
__device__ btree::insert_outcome insert(const versioned_tree_ref<K, V>& t, gpuds::alloc::warp_allocator& allocator,
                                        R* reclaim, K k, V v) {
  using S = vshape<K, V>;
  using view = wview<K, V>;
  const node_addr root = t.tree.root;
  node_addr cur = root;
  node_addr parent = null_node;  // last known parent of cur
  bool leaf_known = false;       // cur is a leaf (a level-1 node named it, or its sibling)
  view n;
  const auto down = [&]() {
    const node_addr next = n.child_for(k);
    if (next == null_node) return false;
    leaf_known = n.level() == 1;
    parent = cur;
    cur = next;
    return true;
  };
  const auto restart = [&](node_addr from) {
    cur = from;
    parent = null_node;
    leaf_known = false;
  };
  for (unsigned step = 0; step < t.max_steps(); ++step) {
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
    if (!btree::try_latch<32>(w)) {
      restart(parent != null_node ? parent : root);
      continue;
    }
    n.template load<latched>(w);
    if (n.beyond(k)) {
      btree::unlatch<32>(w);
      cur = n.link;
      continue;
    }
    if (n.full()) {
      if (cur == root) {
        if (!split_root<R, PLAIN>(t, allocator, reclaim, n)) {
          btree::unlatch<32>(w);
          return btree::INSERT_FAILED;
        }
        restart(root);
        continue;
      }
      if (parent == null_node) {
        btree::unlatch<32>(w);
        restart(root);
        continue;
      }
      auto* pw = t.words(parent);
      if (!btree::latch_spin<32>(pw, t.max_steps())) {
        btree::unlatch<32>(w);
        restart(root);
        continue;
      }
      view p;
      p.template load<latched>(pw);
      const K split_key = n.key_at(S::SPLIT_AT);
      if (p.beyond(split_key) || p.is_leaf() || p.child_for(split_key) != cur) {
        btree::unlatch<32>(pw);
        btree::unlatch<32>(w);
        restart(parent);
        continue;
      }
      if (p.full()) {
        btree::unlatch<32>(pw);
        btree::unlatch<32>(w);
        restart(root);
        continue;
      }
      node_addr right = null_node;
      if (!split<R, PLAIN>(t, allocator, reclaim, cur, n, parent, p, split_key, right)) {
        btree::unlatch<32>(pw);
        btree::unlatch<32>(w);
        return btree::INSERT_FAILED;
      }
      if (k >= split_key) cur = right;
      continue;
    }
    if (!n.is_leaf()) {
      btree::unlatch<32>(w);
      if (!down()) break;
      continue;
    }
    const int i = n.find(k);
    if (!change_leaf<R, PLAIN>(t, allocator, reclaim, cur, n, i, false, k, v)) {
      btree::unlatch<32>(w);
      return btree::INSERT_FAILED;
    }
    return i >= 0 ? btree::INSERT_REPLACED : btree::INSERT_ADDED;
  }
  t.template report<32>(gpuds::status::RETRY_LIMIT);
  return btree::INSERT_FAILED;
}

// §4.4.3: descend by the newest versions to k's leaf, latch it (bounded spin), check it is
// still a leaf holding k's range (a root that was a leaf may have split; a leaf may have
// been split: move right), then change it as insertion does. A full converged warp.
template <class R, class Descent = coherent, class K, class V>
__device__ btree::remove_outcome erase(const versioned_tree_ref<K, V>& t, gpuds::alloc::warp_allocator& allocator,
                                       R* reclaim, K k, V& value) {
  using view = wview<K, V>;
  view n;
  node_addr addr = t.tree.root;
  // Descent: internal nodes loaded with Descent (`cached` when no kernel in flight splits,
  // e.g. a batch of removals only); a leaf named by a level-1 node is not loaded before
  // it is latched (the read after latching is its first).
  bool leaf_known = false;
  for (unsigned step = 0; step < t.max_steps(); ++step) {
    auto* w = t.words(addr);
    if (!leaf_known) {
      if (!n.template load<Descent>(w)) break;
      if (n.beyond(k)) {
        addr = n.link;
        continue;
      }
      if (!n.is_leaf()) {
        leaf_known = n.level() == 1;
        addr = n.child_for(k);
        if (addr == null_node) break;
        continue;
      }
    }
    if (!btree::latch_spin<32>(w, t.max_steps())) break;
    n.template load<latched>(w);
    if (!n.is_leaf()) {  // the root was split since: descend again, coherently
      btree::unlatch<32>(w);
      return erase<R, coherent>(t, allocator, reclaim, k, value);
    }
    if (n.beyond(k)) {
      btree::unlatch<32>(w);
      addr = n.link;
      leaf_known = true;  // a sibling: a leaf too
      continue;
    }
    const int i = n.find(k);
    if (i < 0) {
      btree::unlatch<32>(w);
      return btree::REMOVE_ABSENT;
    }
    value = n.val_at(static_cast<unsigned>(i));
    if (!change_leaf(t, allocator, reclaim, addr, n, i, true, k, value)) {
      btree::unlatch<32>(w);
      return btree::REMOVE_FAILED;
    }
    return btree::REMOVE_DONE;
  }
  t.template report<32>(gpuds::status::RETRY_LIMIT);
  return btree::REMOVE_FAILED;
}


// A removal that can make no version: IN_PLACE with no live snapshot (copy_below == 0),
// so no unit is ever needed and a tile of TILE >= SLOTS lanes does it, as
// GpuBTreeMap's removal does (two per warp with 16 lanes). The head keeps its older link
// and mark and is stamped with the batch's time.
template <unsigned TILE, class Descent, class K, class V>
__device__ btree::remove_outcome erase_unversioned(const versioned_tree_ref<K, V>& t, K k, V& value) {
  using L = btree::layout<K, V>;
  using S = vshape<K, V>;
  static_assert(TILE >= L::SLOTS, "a node is written by one instruction of one lane per slot");
  using tile = gpuds::warp::tile<TILE>;
  using view = vview<TILE, K, V>;
  view n;
  node_addr addr = t.tree.root;
  bool leaf_known = false;
  for (unsigned step = 0; step < t.max_steps(); ++step) {
    auto* w = t.words(addr);
    if (!leaf_known) {
      if (!n.template load<Descent>(w)) break;
      if (n.beyond(k)) {
        addr = n.link;
        continue;
      }
      if (!n.is_leaf()) {
        leaf_known = n.level() == 1;
        addr = n.child_for(k);
        if (addr == null_node) break;
        continue;
      }
    }
    if (!btree::latch_spin<TILE>(w, t.max_steps())) break;
    n.template load<latched>(w);
    if (!n.is_leaf()) {  // the root was split since: descend again, coherently
      btree::unlatch<TILE>(w);
      return erase_unversioned<TILE, coherent>(t, k, value);
    }
    if (n.beyond(k)) {
      btree::unlatch<TILE>(w);
      addr = n.link;
      leaf_known = true;
      continue;
    }
    const int i = n.find(k);
    if (i < 0) {
      btree::unlatch<TILE>(w);
      return btree::REMOVE_ABSENT;
    }
    value = n.val_at(static_cast<unsigned>(i));
    const unsigned pair = view::pair();
    const unsigned src = pair < L::SLOTS - 1 ? pair + 1 : L::SLOTS - 1;
    const K nk = tile::shfl(n.key[0], src);
    const V nv = tile::shfl(n.val[0], src);
    const bool shift = pair >= static_cast<unsigned>(i) && pair + 1 < n.count();
    const K key = shift ? nk : n.key[0];
    const V val = shift ? nv : n.val[0];
    const unsigned word = time_now(t) | (n.retired_older() ? RETIRED_OLDER : 0u);
    vpublish<TILE, K, V>(w, key, val, btree::make_meta(n.count() - 1, n.level()), n.high, n.link, word, n.older());
    return btree::REMOVE_DONE;
  }
  t.template report<TILE>(gpuds::status::RETRY_LIMIT);
  return btree::REMOVE_FAILED;
}

}  // namespace detail
}  // namespace mvbtree
}  // namespace gpuds
