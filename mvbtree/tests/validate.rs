//! CPU tests of the version validator on pools built by hand, for every key and value
//! type and node layout: version lists and the trees at older timestamps read as a query
//! at that timestamp reads them, and each broken invariant is caught.

use std::collections::HashMap;

use gpuds_btree::node::{NodeLayout, NULL_NODE};
use gpuds_btree::{TreeKey, TreeValue};
use gpuds_mvbtree::node::{pairs_per_node, VersionedNode, LATCH_COPY, UNSET_TS};
use gpuds_mvbtree::validate::{walk_at, walk_versions, VersionWalk};

/// Runs `$body::<K, V>(layout)` for every key and value type with each of its layouts.
macro_rules! for_each_layout {
    ($body:ident) => {
        $body::<u32, u32>(NodeLayout::NARROW);
        for bytes in [128, 256] {
            $body::<u64, u32>(NodeLayout::wide(bytes));
            $body::<u32, u64>(NodeLayout::wide(bytes));
            $body::<u64, u64>(NodeLayout::wide(bytes));
        }
    };
}

/// Test key x: x for u32; for u64, x in the high word above a fixed low word, so that a
/// lost high word shows.
fn key<K: TreeKey>(x: u32) -> K {
    if std::mem::size_of::<K>() == 8 {
        K::from_u64((x as u64) << 32 | 0x9e37_79b9)
    } else {
        K::from_u64(x as u64)
    }
}

/// The pairs of keys `xs`, each with a value derived from its key.
fn pairs<K: TreeKey, V: TreeValue>(xs: impl IntoIterator<Item = u32>) -> Vec<(K, V)> {
    xs.into_iter()
        .map(|x| (key(x), V::from_u64((x as u64 * 10 + 1) << 16 | 7)))
        .collect()
}

/// An internal node's entries: pivot 0 (the lowest key) to `first`, then `(key(x), child)`.
fn children<K: TreeKey>(first: u32, rest: &[(u32, u32)]) -> Vec<(K, u32)> {
    std::iter::once((K::from_u64(0), first))
        .chain(rest.iter().map(|&(x, child)| (key(x), child)))
        .collect()
}

/// A pool of encoded units by address.
struct Pool<K, V> {
    layout: NodeLayout,
    units: HashMap<u32, Vec<u32>>,
    nodes: HashMap<u32, VersionedNode<K, V>>,
}

impl<K: TreeKey, V: TreeValue> Pool<K, V> {
    fn new(layout: NodeLayout) -> Self {
        Pool {
            layout,
            units: HashMap::new(),
            nodes: HashMap::new(),
        }
    }

    fn put(&mut self, addr: u32, v: VersionedNode<K, V>) {
        self.units.insert(addr, v.encode());
        self.nodes.insert(addr, v);
    }

    /// Changes the node at `addr` and stores it again.
    fn edit(&mut self, addr: u32, change: impl FnOnce(&mut VersionedNode<K, V>)) {
        let mut v = self.nodes[&addr];
        change(&mut v);
        self.put(addr, v);
    }

    fn leaf(
        &mut self,
        addr: u32,
        xs: impl IntoIterator<Item = u32>,
        link: Option<(u32, u32)>,
        ts: u32,
        older: u32,
    ) {
        let link = link.map(|(x, sibling)| (key(x), sibling));
        let v = VersionedNode::leaf(self.layout, &pairs(xs), link, ts, older);
        self.put(addr, v);
    }

    fn internal(&mut self, addr: u32, level: u32, entries: &[(K, u32)], ts: u32, older: u32) {
        let v = VersionedNode::internal(self.layout, level, entries, None, ts, older);
        self.put(addr, v);
    }

    fn versions(&self, root: u32, live: &[u32], clock: u32) -> Result<VersionWalk<K, V>, String> {
        let fetch = |a: u32| self.units.get(&a).cloned();
        walk_versions::<K, V>(self.layout, root, &fetch, live, clock, true)
    }

    fn at(&self, root: u32, ts: u32) -> Result<Vec<(K, V)>, String> {
        let fetch = |a: u32| self.units.get(&a).cloned();
        Ok(walk_at::<K, V>(self.layout, root, &fetch, ts)?.1)
    }

    /// Heights and nodes per level of the tree at `ts`.
    fn shape_at(&self, root: u32, ts: u32) -> Vec<u64> {
        let fetch = |a: u32| self.units.get(&a).cloned();
        walk_at::<K, V>(self.layout, root, &fetch, ts)
            .unwrap()
            .0
            .nodes_per_level
    }
}

/// A change to one unit.
type Change<K, V> = fn(&mut VersionedNode<K, V>);

/// Asserts that `result` is an error whose message holds `needle`.
fn fails<T: std::fmt::Debug>(result: Result<T, String>, needle: &str, case: NodeLayout) {
    match result {
        Ok(v) => panic!("{case:?}: expected an error with {needle:?}, got {v:?}"),
        Err(e) => assert!(
            e.contains(needle),
            "{case:?}: {e:?} does not say {needle:?}"
        ),
    }
}

/// One leaf at 1 changed at timestamps 3 and 5 after snapshots at 1 and 3 (clock 6):
/// head {1, 2, 3} (ts 5) -> copy at 2: {1, 2} (ts 3) -> copy at 3: {1} (ts 1).
fn one_leaf<K: TreeKey, V: TreeValue>(layout: NodeLayout) -> Pool<K, V> {
    let mut pool = Pool::new(layout);
    pool.leaf(1, 1..=3, None, 5, 2);
    pool.leaf(2, 1..=2, None, 3, 3);
    pool.edit(2, |v| *v = v.copy());
    pool.leaf(3, [1], None, 1, NULL_NODE);
    pool.edit(3, |v| *v = v.copy());
    pool
}

/// A tree split after a snapshot at 0 (the clock is now 1), by an insert of key n + 1
/// into a full leaf of n pairs at timestamp 1; the split's new heads: the root (1) over the
/// lower half (2, linked to 3) and the upper half with the new key (3).
/// - `of_root` false: the full leaf was 2 under the root 1, both at timestamp 0; the
///   leaf's copy (4) holds every old pair, the root's copy (5) lists one child.
/// - `of_root` true: the full leaf was the root 1 at timestamp 0; its copy (4) is that
///   leaf, so the root's list changes level.
fn split<K: TreeKey, V: TreeValue>(layout: NodeLayout, of_root: bool) -> Pool<K, V> {
    let n = pairs_per_node(layout) as u32;
    let h = n.div_ceil(2);
    let (root_older, leaf_older) = if of_root { (4, NULL_NODE) } else { (5, 4) };
    let mut pool = Pool::new(layout);
    pool.internal(1, 1, &children(2, &[(h + 1, 3)]), 1, root_older);
    pool.leaf(2, 1..=h, Some((h + 1, 3)), 1, leaf_older);
    pool.leaf(3, h + 1..=n + 1, None, 1, NULL_NODE);
    pool.leaf(4, 1..=n, None, 0, NULL_NODE);
    pool.edit(4, |v| *v = v.copy());
    if !of_root {
        pool.internal(5, 1, &children(2, &[]), 0, NULL_NODE);
        pool.edit(5, |v| *v = v.copy());
    }
    pool
}

#[test]
fn one_leaf_reads_each_version_at_its_timestamps() {
    fn case<K: TreeKey, V: TreeValue>(l: NodeLayout) {
        let pool = one_leaf::<K, V>(l);
        fails(pool.at(1, 0), "node 0x1 has no version at or before 0", l);
        for (ts, keys) in [(1, 1), (2, 1), (3, 2), (4, 2), (5, 3), (9, 3)] {
            assert_eq!(pool.at(1, ts).unwrap(), pairs(1..=keys), "{l:?} at {ts}");
        }
        let found = pool.versions(1, &[1, 3, 4], 6).unwrap();
        assert_eq!((found.heads, found.copies), (1, 2), "{l:?}");
        assert_eq!(found.versions_per_node, vec![0, 0, 1], "{l:?}");
        assert_eq!(found.oldest_ts, Some(1), "{l:?}");
        assert_eq!(found.pairs, pairs(1..=3), "{l:?}");
        assert_eq!(found.shape.keys(), 3, "{l:?}");
        assert_eq!(
            found.shape.pairs_per_node as usize,
            pairs_per_node(l),
            "{l:?}"
        );
    }
    for_each_layout!(case);
}

#[test]
fn a_split_tree_reads_the_old_nodes_before_the_split() {
    fn case<K: TreeKey, V: TreeValue>(l: NodeLayout) {
        let n = pairs_per_node(l) as u32;
        // (of the root, shape at 0, copies, versions per node)
        for (of_root, before, copies, versions) in [
            (false, vec![1, 1], 2, vec![1, 2]),
            (true, vec![1], 1, vec![2, 1]),
        ] {
            let pool = split::<K, V>(l, of_root);
            let case = format!("{l:?}, of the root: {of_root}");
            assert_eq!(pool.at(1, 0).unwrap(), pairs(1..=n), "{case}");
            assert_eq!(pool.shape_at(1, 0), before, "{case}");
            assert_eq!(pool.at(1, 1).unwrap(), pairs(1..=n + 1), "{case}");
            assert_eq!(pool.shape_at(1, 1), vec![2, 1], "{case}");
            let found = pool.versions(1, &[0], 1).unwrap();
            assert_eq!((found.heads, found.copies), (3, copies), "{case}");
            assert_eq!(found.versions_per_node, versions, "{case}");
            assert_eq!(found.oldest_ts, Some(0), "{case}");
            assert_eq!(found.shape.nodes_per_level, vec![2, 1], "{case}");
            assert_eq!(found.pairs, pairs(1..=n + 1), "{case}");
        }
    }
    for_each_layout!(case);
}

#[test]
fn a_copy_with_its_newer_versions_timestamp_is_allowed_and_shadowed() {
    fn case<K: TreeKey, V: TreeValue>(l: NodeLayout) {
        let mut pool = one_leaf::<K, V>(l);
        // an out-of-place update copied the head {1, 2, 3} stamped 5 in the same tick
        pool.leaf(7, 1..=3, None, 5, 2);
        pool.edit(7, |v| *v = v.copy());
        pool.leaf(1, 1..=4, None, 5, 7);
        assert_eq!(pool.at(1, 5).unwrap(), pairs(1..=4), "{l:?}");
        assert_eq!(pool.at(1, 4).unwrap(), pairs(1..=2), "{l:?}");
        let found = pool.versions(1, &[3, 4], 6).unwrap();
        assert_eq!(found.versions_per_node, vec![0, 0, 0, 1], "{l:?}");
    }
    for_each_layout!(case);
}

#[test]
fn increasing_timestamps_along_a_list_are_caught() {
    fn case<K: TreeKey, V: TreeValue>(l: NodeLayout) {
        let mut pool = one_leaf::<K, V>(l);
        pool.edit(2, |v| v.ts = 6);
        fails(
            pool.versions(1, &[], 7),
            "unit 0x2, older version of node 0x1 has timestamp 6, newer than its newer version 0x1's 5",
            l,
        );
        let mut pool = one_leaf::<K, V>(l);
        pool.edit(3, |v| v.ts = 4);
        fails(
            pool.versions(1, &[], 6),
            "newer than its newer version 0x2's 3",
            l,
        );
        // a copy never stamped reads as the newest of all
        let mut pool = one_leaf::<K, V>(l);
        pool.edit(3, |v| v.ts = UNSET_TS);
        fails(
            pool.versions(1, &[], 6),
            "unit 0x3, older version of node 0x1 has timestamp",
            l,
        );
    }
    for_each_layout!(case);
}

#[test]
fn a_copy_without_the_copy_latch_is_caught() {
    fn case<K: TreeKey, V: TreeValue>(l: NodeLayout) {
        for latch in [0, 1] {
            let mut pool = one_leaf::<K, V>(l);
            pool.edit(2, |v| v.node.latch = latch);
            fails(
                pool.versions(1, &[], 6),
                &format!("has latch {latch:#x}, not a copy's {LATCH_COPY}"),
                l,
            );
            fails(
                pool.at(1, 3),
                "unit 0x2 in node 0x1's version list has latch",
                l,
            );
            // the head itself is still read at its own timestamp
            assert_eq!(pool.at(1, 5).unwrap(), pairs(1..=3), "{l:?}");
        }
    }
    for_each_layout!(case);
}

#[test]
fn a_unit_in_two_lists_is_caught() {
    fn case<K: TreeKey, V: TreeValue>(l: NodeLayout) {
        // the new sibling's list reaches the old leaf's copy
        let mut pool = split::<K, V>(l, false);
        pool.edit(3, |v| v.older = 4);
        fails(
            pool.versions(1, &[], 1),
            "unit 0x4, older version of node 0x3 is reached twice",
            l,
        );
        // a list reaches a head of the tree
        let mut pool = split::<K, V>(l, false);
        pool.edit(4, |v| v.older = 3);
        fails(
            pool.versions(1, &[], 1),
            "unit 0x3, older version of node 0x2 is reached twice",
            l,
        );
        // a list returns to itself: an error, not a walk without end
        let mut pool = one_leaf::<K, V>(l);
        pool.edit(3, |v| {
            v.older = 2;
            v.ts = 3;
        });
        fails(
            pool.versions(1, &[], 6),
            "unit 0x2, older version of node 0x1 is reached twice",
            l,
        );
        fails(pool.at(1, 0), "node 0x1's version list returns to 0x2", l);
    }
    for_each_layout!(case);
}

#[test]
fn a_dangling_older_address_is_caught() {
    fn case<K: TreeKey, V: TreeValue>(l: NodeLayout) {
        let mut pool = split::<K, V>(l, false);
        pool.edit(4, |v| v.older = 0x99);
        fails(
            pool.versions(1, &[], 1),
            "node 0x2's version list: unit 0x99 is not allocated",
            l,
        );
        // a query at 0 stops at the copy, before the dangling link
        assert_eq!(
            pool.at(1, 0).unwrap(),
            pairs(1..=pairs_per_node(l) as u32),
            "{l:?}"
        );
        let mut pool = one_leaf::<K, V>(l);
        pool.edit(1, |v| v.older = 0x99);
        fails(
            pool.at(1, 3),
            "node 0x1's version list: unit 0x99 is not allocated",
            l,
        );
        let mut pool = one_leaf::<K, V>(l);
        pool.units.get_mut(&3).unwrap().pop();
        fails(
            pool.versions(1, &[], 6),
            &format!("unit 0x3 has {} words", l.node_words() - 1),
            l,
        );
    }
    for_each_layout!(case);
}

#[test]
fn a_live_snapshot_older_than_a_reachable_node_is_caught() {
    fn case<K: TreeKey, V: TreeValue>(l: NodeLayout) {
        // the root and the old leaf changed in place although snapshot 0 still sees
        // them: the root's version at 0 lists the new leaf 3, which has no version that old
        let mut pool = split::<K, V>(l, false);
        for old in [1, 2] {
            pool.edit(old, |v| {
                v.ts = 0;
                v.older = NULL_NODE;
            });
        }
        pool.units.retain(|&a, _| a < 4);
        assert!(pool.versions(1, &[], 1).is_ok(), "{l:?}");
        fails(
            pool.versions(1, &[0], 1),
            "at snapshot 0: node 0x3 has no version at or before 0 (its oldest, 0x3, has timestamp 1)",
            l,
        );
        // a snapshot before every version of the root
        let pool = one_leaf::<K, V>(l);
        fails(
            pool.versions(1, &[0], 6),
            "at snapshot 0: node 0x1 has no version",
            l,
        );
        // a snapshot is always older than the clock
        fails(
            pool.versions(1, &[6], 6),
            "live snapshot 6 is not older than the clock 6",
            l,
        );
    }
    for_each_layout!(case);
}

#[test]
fn an_older_version_inconsistent_at_its_timestamp_is_caught() {
    fn case<K: TreeKey, V: TreeValue>(l: NodeLayout) {
        // the old leaf's copy links to the new sibling, which snapshot 0's root does not list
        let mut pool = split::<K, V>(l, false);
        let h = (pairs_per_node(l) as u32).div_ceil(2);
        pool.edit(4, |v| {
            v.node.high = key(h + 1);
            v.node.link = 3;
        });
        assert!(pool.versions(1, &[], 1).is_ok(), "{l:?}");
        fails(
            pool.versions(1, &[0], 1),
            "at snapshot 0: node 0x2 (level 0, position 0): last of its level but links to 0x3",
            l,
        );
        // keys out of order in a copy
        let mut pool = split::<K, V>(l, false);
        pool.edit(4, |v| v.node.pairs.swap(0, 1));
        fails(pool.versions(1, &[0], 1), "out of order", l);
    }
    for_each_layout!(case);
}

#[test]
fn more_pairs_than_a_versioned_node_holds_are_caught() {
    fn case<K: TreeKey, V: TreeValue>(l: NodeLayout) {
        let too_many = format!(
            "holds {} pairs, a versioned node at most {}",
            pairs_per_node(l) + 1,
            pairs_per_node(l)
        );
        let mut pool = one_leaf::<K, V>(l);
        pool.edit(1, |v| v.node.count = pairs_per_node(l) as u32 + 1);
        fails(pool.versions(1, &[], 6), &format!("unit 0x1 {too_many}"), l);
        fails(pool.at(1, 5), &format!("unit 0x1 {too_many}"), l);
        let mut pool = one_leaf::<K, V>(l);
        pool.edit(3, |v| v.node.count = pairs_per_node(l) as u32 + 1);
        fails(
            pool.versions(1, &[], 6),
            &format!("node 0x1's version list: unit 0x3 {too_many}"),
            l,
        );
        // as many as it holds is fine
        let n = pairs_per_node(l) as u32;
        let mut pool = Pool::<K, V>::new(l);
        pool.leaf(1, 1..=n, None, 0, NULL_NODE);
        assert_eq!(
            pool.versions(1, &[], 1).unwrap().pairs,
            pairs(1..=n),
            "{l:?}"
        );
    }
    for_each_layout!(case);
}

#[test]
fn count_14_in_a_u32_node_is_caught() {
    let l = NodeLayout::NARROW;
    let mut pool = Pool::<u32, u32>::new(l);
    pool.leaf(1, 1..=13, None, 0, NULL_NODE);
    // the device would have written a 14th pair over the version slot
    pool.units.get_mut(&1).unwrap()[29] = 14;
    fails(
        pool.versions(1, &[], 1),
        "unit 0x1 holds 14 pairs, a versioned node at most 13",
        l,
    );
}

#[test]
fn bad_heads_are_caught() {
    fn case<K: TreeKey, V: TreeValue>(l: NodeLayout) {
        let bad: [(Change<K, V>, &str); 4] = [
            (
                |v| *v = v.copy(),
                "head 0x3 is marked as an older version (latch 2)",
            ),
            (|v| v.ts = UNSET_TS, "head 0x3 has no timestamp (unset)"),
            (|v| v.ts = 2, "head 0x3 has timestamp 2, past the clock 1"),
            (
                |v| v.node.latch = 1,
                "node 0x3 (level 0, position 1) is still latched (0x1)",
            ),
        ];
        for (change, message) in bad {
            let mut pool = split::<K, V>(l, false);
            pool.edit(3, change);
            fails(pool.versions(1, &[0], 1), message, l);
        }
        // a head read at a snapshot must not be a copy either
        let mut pool = one_leaf::<K, V>(l);
        pool.edit(1, |v| *v = v.copy());
        fails(
            pool.at(1, 5),
            "unit 0x1 in node 0x1's version list has latch 0x2",
            l,
        );
    }
    for_each_layout!(case);
}
