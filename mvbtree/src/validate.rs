//! Host-side invariant checks and version statistics over a copy of the node pool.
//!
//! [`walk_versions`] checks, in this order:
//! 1. the newest tree, the heads reached from the root: every `GpuBTreeMap` invariant
//!    ([`gpuds_btree::validate::walk`]: levels, key order and ranges, side links, no node
//!    reached twice), and for each head: at most [`pairs_per_node`] pairs, latch free
//!    (not [`LATCH_COPY`]), a timestamp that is set (not [`UNSET_TS`]) and not past the
//!    clock;
//! 2. every version list, from its head along the older links: each older address is an
//!    allocated unit that decodes as a copy (latch [`LATCH_COPY`]) of at most
//!    [`pairs_per_node`] pairs; timestamps never increase along a list (each version's is
//!    at most its newer version's: equal ones are allowed, since an out-of-place update
//!    can copy a version that was stamped in the same clock tick, which leaves a copy no
//!    snapshot sees); no unit is reached twice, by two lists or by a list and the tree, so
//!    every list ends in [`NULL_NODE`];
//! 3. for every live snapshot, older than the clock, the tree as a query at that snapshot
//!    sees it ([`walk_at`]) satisfies every `GpuBTreeMap` invariant too: the older versions
//!    are consistent with the contents at their timestamps.
//!
//! Errors name the unit (hex address) and what is wrong with it. Whether the pool's units
//! in use are exactly the heads and copies found is for the caller to compare
//! ([`VersionWalk::heads`] + [`VersionWalk::copies`]).

use std::cell::RefCell;
use std::collections::HashSet;

use gpuds_btree::node::{Node, NodeLayout, NULL_NODE};
use gpuds_btree::validate::{walk, TreeShape};
use gpuds_btree::{TreeKey, TreeValue};

use crate::node::{pairs_per_node, VersionedNode, LATCH_COPY, UNSET_TS};

/// What [`walk_versions`] found: the newest tree's shape and the version lists' sizes.
#[derive(Clone, Debug, PartialEq)]
pub struct VersionWalk<K, V> {
    /// The shape of the newest versions (the heads); `pairs_per_node` is the versioned
    /// node's ([`pairs_per_node`]).
    pub shape: TreeShape,
    /// The newest pairs in key order, when asked to collect them (else empty).
    pub pairs: Vec<(K, V)>,
    /// Nodes reachable from the root (the heads of the version lists).
    pub heads: u64,
    /// Older versions reachable through the lists.
    pub copies: u64,
    /// `[i]`: the number of heads whose list has `i + 1` versions.
    pub versions_per_node: Vec<u64>,
    /// The smallest timestamp of any version (`None` only for an empty walk, which a
    /// valid tree never gives: its root is a head).
    pub oldest_ts: Option<u32>,
}

/// Reads unit `addr` as a versioned node: allocated, of the layout's words, with at most
/// [`pairs_per_node`] pairs.
fn read<K: TreeKey, V: TreeValue>(
    layout: NodeLayout,
    fetch: &dyn Fn(u32) -> Option<Vec<u32>>,
    addr: u32,
) -> Result<VersionedNode<K, V>, String> {
    let words = fetch(addr).ok_or_else(|| format!("unit {addr:#x} is not allocated"))?;
    let v = VersionedNode::<K, V>::decode(layout, &words).ok_or_else(|| {
        format!(
            "unit {addr:#x} has {} words, a node {}",
            words.len(),
            layout.node_words()
        )
    })?;
    if v.node.count as usize > pairs_per_node(layout) {
        return Err(format!(
            "unit {addr:#x} holds {} pairs, a versioned node at most {}",
            v.node.count,
            pairs_per_node(layout)
        ));
    }
    Ok(v)
}

/// [`walk`] over nodes that `fetch` reads and checks: the first error `fetch` gives is the
/// walk's error. The shape counts the versioned node's pairs per node.
fn checked_walk<K: TreeKey, V: TreeValue>(
    layout: NodeLayout,
    root: u32,
    fetch: impl Fn(u32) -> Result<Node<K, V>, String>,
    collect: bool,
) -> Result<(TreeShape, Vec<(K, V)>), String> {
    let failure = RefCell::new(None);
    let result = walk(
        root,
        |addr| {
            fetch(addr)
                .map_err(|e| {
                    failure.borrow_mut().get_or_insert(e);
                })
                .ok()
        },
        collect,
    );
    if let Some(e) = failure.into_inner() {
        return Err(e);
    }
    let (mut shape, pairs) = result?;
    shape.pairs_per_node = pairs_per_node(layout) as u32;
    Ok((shape, pairs))
}

/// Checks the newest tree under `root`, every version list and the tree at every live
/// snapshot (see the [module docs](self)), reading units through `fetch` (`None`: the
/// address is not an allocated unit). `live`: the live snapshots' timestamps; `clock`: the
/// global clock (every live snapshot is older, no head is newer). With `collect`, the
/// newest pairs in key order.
///
/// # Examples
/// ```
/// use std::collections::HashMap;
/// use gpuds_btree::node::{NodeLayout, NULL_NODE};
/// use gpuds_mvbtree::node::VersionedNode;
/// use gpuds_mvbtree::validate::walk_versions;
/// // one leaf, at 1, changed at timestamp 4 after a snapshot at 2: its copy is at 7
/// let l = NodeLayout::NARROW;
/// let head = VersionedNode::<u32, u32>::leaf(l, &[(1, 10), (2, 20)], None, 4, 7);
/// let old = VersionedNode::<u32, u32>::leaf(l, &[(1, 10)], None, 0, NULL_NODE).copy();
/// let pool = HashMap::from([(1, head.encode()), (7, old.encode())]);
/// let fetch = |a: u32| pool.get(&a).cloned();
/// let found = walk_versions::<u32, u32>(l, 1, &fetch, &[2], 4, true)?;
/// assert_eq!((found.heads, found.copies), (1, 1));
/// assert_eq!(found.versions_per_node, vec![0, 1]);
/// assert_eq!(found.oldest_ts, Some(0));
/// assert_eq!(found.pairs, vec![(1, 10), (2, 20)]);
/// // the clock is 4, so no snapshot 4 can be live
/// assert!(walk_versions::<u32, u32>(l, 1, &fetch, &[4], 4, false).is_err());
/// # Ok::<(), String>(())
/// ```
pub fn walk_versions<K: TreeKey, V: TreeValue>(
    layout: NodeLayout,
    root: u32,
    fetch: &dyn Fn(u32) -> Option<Vec<u32>>,
    live: &[u32],
    clock: u32,
    collect: bool,
) -> Result<VersionWalk<K, V>, String> {
    // (address, timestamp, older link) of every head; the walk reads the root twice
    let heads = RefCell::new(Vec::new());
    let head = |addr: u32| {
        let v = read::<K, V>(layout, fetch, addr)?;
        if v.is_copy() {
            return Err(format!(
                "head {addr:#x} is marked as an older version (latch {LATCH_COPY})"
            ));
        }
        if v.ts == UNSET_TS {
            return Err(format!("head {addr:#x} has no timestamp (unset)"));
        }
        if v.ts > clock {
            return Err(format!(
                "head {addr:#x} has timestamp {}, past the clock {clock}",
                v.ts
            ));
        }
        heads.borrow_mut().push((addr, v.ts, v.older));
        Ok(v.node)
    };
    let (shape, pairs) = checked_walk(layout, root, head, collect)?;
    let mut heads = heads.into_inner();
    heads.sort_unstable();
    heads.dedup();

    let mut seen: HashSet<u32> = heads.iter().map(|h| h.0).collect();
    let mut found = VersionWalk {
        shape,
        pairs,
        heads: heads.len() as u64,
        copies: 0,
        versions_per_node: Vec::new(),
        oldest_ts: None,
    };
    for &(addr, ts, older) in &heads {
        // the newest version checked so far: (address, timestamp, older link)
        let mut newer = (addr, ts, older);
        let mut versions = 1;
        loop {
            let (newer_addr, ts, at) = newer;
            found.oldest_ts = Some(found.oldest_ts.map_or(ts, |t| t.min(ts)));
            if at == NULL_NODE {
                break;
            }
            let list = || format!("unit {at:#x}, older version of node {addr:#x}");
            if !seen.insert(at) {
                return Err(format!(
                    "{} is reached twice (by two version lists, or by a list and the tree)",
                    list()
                ));
            }
            let older = read::<K, V>(layout, fetch, at)
                .map_err(|e| format!("node {addr:#x}'s version list: {e}"))?;
            if !older.is_copy() {
                return Err(format!(
                    "{} has latch {:#x}, not a copy's {LATCH_COPY}",
                    list(),
                    older.node.latch
                ));
            }
            if older.ts > ts {
                return Err(format!(
                    "{} has timestamp {}, newer than its newer version {newer_addr:#x}'s {ts}",
                    list(),
                    older.ts
                ));
            }
            found.copies += 1;
            versions += 1;
            newer = (at, older.ts, older.older);
        }
        if found.versions_per_node.len() < versions {
            found.versions_per_node.resize(versions, 0);
        }
        found.versions_per_node[versions - 1] += 1;
    }

    for &ts in live {
        if ts >= clock {
            return Err(format!(
                "live snapshot {ts} is not older than the clock {clock}"
            ));
        }
        walk_at::<K, V>(layout, root, fetch, ts)?;
    }
    Ok(found)
}

/// The version of node `head` that a query at snapshot `ts` uses: the first of its list
/// (head first) with a timestamp at most `ts`.
fn visible<K: TreeKey, V: TreeValue>(
    layout: NodeLayout,
    fetch: &dyn Fn(u32) -> Option<Vec<u32>>,
    head: u32,
    ts: u32,
) -> Result<VersionedNode<K, V>, String> {
    let mut at = head;
    let mut passed = HashSet::new();
    loop {
        if !passed.insert(at) {
            return Err(format!("node {head:#x}'s version list returns to {at:#x}"));
        }
        let v = read::<K, V>(layout, fetch, at)
            .map_err(|e| format!("node {head:#x}'s version list: {e}"))?;
        if v.is_copy() != (at != head) {
            return Err(format!(
                "unit {at:#x} in node {head:#x}'s version list has latch {:#x} (a head is not a copy, an older version is: {LATCH_COPY})",
                v.node.latch
            ));
        }
        if v.ts <= ts {
            return Ok(v);
        }
        if !v.has_older() {
            return Err(format!(
                "node {head:#x} has no version at or before {ts} (its oldest, {at:#x}, has timestamp {})",
                v.ts
            ));
        }
        at = v.older;
    }
}

/// The tree as a query at snapshot `ts` sees it: each node reached (from the root, by
/// child addresses and side links, which name heads) is replaced by the first version of
/// its list (head first) with a timestamp at most `ts`, an error when none has; that tree
/// is checked with [`gpuds_btree::validate::walk`] (copies with their latch read as free)
/// and returned with its pairs in key order. Walk errors name nodes by their heads'
/// addresses.
///
/// # Examples
/// ```
/// use std::collections::HashMap;
/// use gpuds_btree::node::{NodeLayout, NULL_NODE};
/// use gpuds_mvbtree::node::VersionedNode;
/// use gpuds_mvbtree::validate::walk_at;
/// let l = NodeLayout::NARROW;
/// let head = VersionedNode::<u32, u32>::leaf(l, &[(1, 10), (2, 20)], None, 4, 7);
/// let old = VersionedNode::<u32, u32>::leaf(l, &[(1, 10)], None, 1, NULL_NODE).copy();
/// let pool = HashMap::from([(1, head.encode()), (7, old.encode())]);
/// let fetch = |a: u32| pool.get(&a).cloned();
/// assert_eq!(walk_at::<u32, u32>(l, 1, &fetch, 3)?.1, vec![(1, 10)]);
/// assert_eq!(walk_at::<u32, u32>(l, 1, &fetch, 4)?.1, vec![(1, 10), (2, 20)]);
/// assert!(walk_at::<u32, u32>(l, 1, &fetch, 0).is_err()); // nothing that old
/// # Ok::<(), String>(())
/// ```
pub fn walk_at<K: TreeKey, V: TreeValue>(
    layout: NodeLayout,
    root: u32,
    fetch: &dyn Fn(u32) -> Option<Vec<u32>>,
    ts: u32,
) -> Result<(TreeShape, Vec<(K, V)>), String> {
    let version = |head: u32| visible::<K, V>(layout, fetch, head, ts).map(|v| v.as_btree());
    checked_walk(layout, root, version, true).map_err(|e| format!("at snapshot {ts}: {e}"))
}
