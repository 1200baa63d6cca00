// gpuds/mvbtree/detail/vlockstep.cuh: range queries at a snapshot with the tiles of a warp
// in step, for the host's phased queries (cached loads) with 8- or 16-lane tiles (Awad
// 2022, §4.4.2 and Listing 4.3, walked the way gpuds-btree's range_lockstep walks §3.4.6).
//
// detail::range (vread.cuh) runs one tile's query on its own: where the tiles of a warp
// diverge (one walks a version list, another is at its next leaf), every tile-masked
// ballot or shuffle pays for the compiler's convergence handling. Here a query is a state
// machine that reads ONE node per round: a head (the address a parent or a side link
// names), an older version of it, or the next leaf. All 32 lanes run the same rounds until
// every tile of the warp is through, so the ballots and the shuffle of a round take the
// full warp's mask and each tile picks its bits out of the warp's ballot. Per round and
// tile, with the node just read:
//
//   - a copy (reached by an older link) whose latch word is not LATCH_COPY: a freed and
//     reused unit, CORRUPTED (as load_at);
//   - a head whose timestamp is unset (phased queries meet one only where a writer's own
//     stamp failed): one lane stamps it (the vCAS rule, as load_at), and the next round
//     reads it again, coherently (the stamp is a fresh write the cache may not have);
//   - a version stamped after the snapshot: the next round reads its older version (a list
//     walk is one round per version, in step with the other tiles);
//   - the version the snapshot sees: while descending, past its high key, move right;
//     an internal node routes lo to a child; a leaf is scanned for [lo, hi] and the walk
//     moves to its right sibling unless its high key is past hi.
//
// The answers, the status flags and the step bound (max_steps node reads per query,
// RETRY_LIMIT) are those of detail::range, which user kernels and 32-lane tiles keep.
#pragma once
#include <gpuds/mvbtree/versioned_tree_ref.cuh>

namespace gpuds {
namespace mvbtree {
namespace detail {

// The latch word of a node from its metadata and link slots as layout::load_tail reads
// them: words (latch, meta, high, link) of a narrow node; a wide node's metadata slot,
// whose key part holds the latch.
__device__ __forceinline__ unsigned tail_latch(const uint4& tail) { return tail.x; }
template <class Tail>
__device__ __forceinline__ unsigned tail_latch(const Tail& tail) {
  return static_cast<unsigned>(tail.meta.x);
}

// Counts (COLLECT: and writes the first `cap` of, in key order, to keys / values from
// index `first`) the pairs with lo <= key <= hi at snapshot ts (LATEST: the heads). Every lane of the warp calls it
// the same number of times (btree::detail::warp_work_share), each tile with its own query;
// `live` is false on a tile without one. Cached loads (but for the read after a stamp):
// no kernel changes the tree while it runs, so every lane reads the metadata, link and
// version slot itself, as node_view's cached reads do.
template <unsigned TILE, bool COLLECT, class Tree>
__device__ __forceinline__ unsigned range_in_step(const Tree& t, bool live, typename Tree::key_type lo,
                                                  typename Tree::key_type hi, unsigned ts,
                                                  typename Tree::key_type* keys, typename Tree::value_type* values,
                                                  unsigned long long first, unsigned cap) {
  static_assert(TILE == 8 || TILE == 16, "queries in step take 8- or 16-lane tiles");
  using K = typename Tree::key_type;
  using view = vview_of<TILE, Tree>;
  using L = typename view::L;
  using S = typename view::S;
  constexpr unsigned PER = view::PER_LANE;
  constexpr unsigned LANES = view::LANES;
  static_assert(PER == 1 || PER == 2, "a lane holds one or two slots of a node");
  constexpr unsigned FULL = gpuds::warp::FULL_MASK;
  const unsigned lane = gpuds::warp::lane_id();
  // This lane's first slot (slots slot0, slot0 + LANES), as node_view holds a node, and
  // whether it holds distinct slots (a 16-lane tile over 8 slots holds each twice).
  const unsigned slot0 = view::pair(0);
  const bool holds = view::holder();
  const unsigned tile_mask = ((1u << TILE) - 1u) << (lane & ~(TILE - 1));

  view n;
  unsigned ts_word = 0, latch = 0;
  node_addr older = null_node;
  // Every value below but the pair registers is the same on all lanes of a tile.
  bool busy = live && lo <= hi;  // the query still reads nodes
  bool descending = true;        // lo's leaf not reached yet
  bool copy = false;             // addr names an older version, not a head
  bool fresh = false;            // addr names a head this tile just stamped
  node_addr addr = t.tree.root;
  unsigned steps = 0, found = 0;
  // Each round a busy tile takes at least one step, so after max_steps + 1 rounds every
  // tile has finished or passed the bound.
  for (unsigned round = 0; round <= t.max_steps(); ++round) {
    if (!__any_sync(FULL, busy)) break;
    bool seen = false;  // n is the version the snapshot sees
    if (busy) {
      if (++steps > t.max_steps()) {
        t.template report<TILE>(gpuds::status::RETRY_LIMIT);
        busy = false;
      } else {
        bool read = true;
        if (fresh) {
          // The tile's coherent read (checked for two-line nodes) of the head it stamped.
          read = n.template load<coherent>(t.words(addr));
          ts_word = n.ts_word();
          older = n.older();
          fresh = false;
        } else {
          // Every lane reads the metadata, link, latch word and version slot itself, from
          // the line the tile just asked for.
          const auto* w = t.words(addr);
          const auto raw = view::template fetch<cached>(w);
          n.template unpack<cached>(raw);
          latch = tail_latch(raw.tail);
          const auto version = cached::load(w + S::VERSION_PAIR);
          ts_word = static_cast<unsigned>(L::key(version));
          older = static_cast<node_addr>(L::value(version));
        }
        const unsigned at = ts_word & TS_MASK;
        if (!read) {
          t.template report<TILE>(gpuds::status::RETRY_LIMIT);
          busy = false;
        } else if (copy && latch != LATCH_COPY) {
          t.template report<TILE>(gpuds::status::CORRUPTED);
          busy = false;
        } else if (ts == LATEST) {
          seen = true;
        } else if (!copy && at == UNSET_TS) {
          // The next round reads the head again: it may have changed between the load and
          // the stamp. The tile's lanes sync so that all of them read after the stamp.
          if (view::tile::rank() == 0) stamp_lane(t.words(addr), S::TS_WORD, t.clock);
          __syncwarp(tile_mask);
          fresh = true;
        } else if (at > ts) {
          if (older == null_node) {
            t.template report<TILE>(gpuds::status::CORRUPTED);
            busy = false;
          } else {
            addr = older;
            copy = true;
          }
        } else {
          seen = true;
        }
      }
    }
    const bool right = seen && descending && n.beyond(lo);
    const bool route = seen && descending && !right && !n.is_leaf();  // to lo's child
    const bool scan = seen && !right && !route;                       // a leaf of the range
    // One ballot per slot serves both: a routing tile's bits are its pivots <= lo (sorted,
    // so the child is pair popc - 1), a scanning tile's its keys in [lo, hi].
    const unsigned count = n.count();
    unsigned bits[PER];
#pragma unroll
    for (unsigned s = 0; s < PER; ++s) {
      const K k = n.key[s];
      const bool in = holds && slot0 + s * LANES < count && (route ? k <= lo : scan && k >= lo && k <= hi);
      bits[s] = __ballot_sync(FULL, in) & tile_mask;
    }
    const unsigned below1 = PER == 2 ? __popc(bits[PER - 1]) : 0u;
    const unsigned i = __popc(bits[0]) + below1 - 1u;  // the child's pair (when bits[0] != 0)
    const node_addr offer = static_cast<node_addr>(below1 != 0 ? n.val[PER - 1] : n.val[0]);
    const node_addr child = __shfl_sync(FULL, offer, static_cast<int>(i % TILE), TILE);
    if (right) {
      addr = n.link;
      copy = false;
    } else if (route) {
      if (bits[0] == 0 || child == null_node) {  // lo below the node's low bound
        t.template report<TILE>(gpuds::status::CORRUPTED);
        busy = false;
      } else {
        addr = child;
        copy = false;
      }
    } else if (scan) {
      descending = false;
      if (COLLECT) {
        // Pairs of slot 0 come before those of slot 1; a lane whose pair is in the range
        // writes it at its rank among them.
        const unsigned lower = btree::detail::lanes_below();
#pragma unroll
        for (unsigned s = 0; s < PER; ++s) {
          const unsigned rank = found + (s == 1 ? __popc(bits[0]) : 0u) + __popc(bits[s] & lower);
          if (((bits[s] >> lane) & 1u) != 0 && rank < cap) {
            keys[first + rank] = n.key[s];
            values[first + rank] = n.val[s];
          }
        }
      }
      found += __popc(bits[0]) + below1;
      if (n.link == null_node || hi < n.high) {
        busy = false;
      } else {
        addr = n.link;
        copy = false;
      }
    }
  }
  return found;
}

}  // namespace detail
}  // namespace mvbtree
}  // namespace gpuds
