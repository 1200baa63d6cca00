//! The versioned node, host side: a `gpuds-btree` node ([`gpuds_btree::node`]) of the same
//! size and slots with one slot taken for the version, so it holds one pair fewer.
//!
//! | slots | leaf | internal node |
//! | --- | --- | --- |
//! | 0 .. slots-4 | (key, value), sorted | (pivot, child address), sorted |
//! | slots-3 ([`version_slot`]) | (timestamp, older version) | (timestamp, older version) |
//! | slots-2 | (latch, meta) | (latch, meta) |
//! | slots-1 | (high key, right sibling) | (high key, right sibling) |
//!
//! | keys, values | node | slots | pairs ([`pairs_per_node`]) | version slot's words |
//! | --- | --- | --- | --- | --- |
//! | u32, u32 | 128 bytes | 16 | 13 | 26 (timestamp), 27 (older) |
//! | any u64 (128-byte nodes) | 128 bytes | 8 | 5 | 20, 21 (timestamp), 22, 23 (older) |
//! | any u64 (256-byte nodes) | 256 bytes | 16 | 13 | 52, 53 (timestamp), 54, 55 (older) |
//!
//! The timestamp is [`UNSET_TS`] on a version that is published but not yet stamped (the
//! first tile to meet it stamps it with the clock); the older link is the address of the
//! node's next older version or [`NULL_NODE`]. Every address in the tree (the root, child
//! addresses and side links) names the HEAD of a list; the older versions are immutable
//! copies whose latch word is [`LATCH_COPY`] (heads have 0, free, or 1, held). In wide
//! slots both parts are zero-extended 32-bit numbers; only their low words are read.
//!
//! The cost against `GpuBTreeMap`: one pair per node (13 against 14 at u32: about 8 % more
//! leaves for the same keys), plus the older versions that live snapshots keep.

use gpuds_btree::node::{Node, NodeLayout, NULL_NODE};
use gpuds_core::DeviceType;

/// The timestamp of a version not stamped yet (also never visible to a snapshot).
/// Timestamps are 31 bits: bit 31 of the timestamp word is [`RETIRED_OLDER`].
pub const UNSET_TS: u32 = 0x7fff_ffff;
/// Bit 31 of a version's timestamp word: its older link names a unit that a kernel
/// handed to epoch-based reclamation (it may be reused): for the host the list ends here.
pub const RETIRED_OLDER: u32 = 1 << 31;
/// The latch word of an older version (a copy): immutable, never latched.
pub const LATCH_COPY: u32 = 2;

/// Pairs a versioned node of `layout` holds: one fewer than a `GpuBTreeMap` node.
///
/// ```
/// use gpuds_btree::node::NodeLayout;
/// use gpuds_mvbtree::node::pairs_per_node;
/// assert_eq!(pairs_per_node(NodeLayout::NARROW), 13);
/// assert_eq!(pairs_per_node(NodeLayout::wide(128)), 5);
/// assert_eq!(pairs_per_node(NodeLayout::wide(256)), 13);
/// ```
pub fn pairs_per_node(layout: NodeLayout) -> usize {
    layout.pairs() - 1
}

/// The slot holding (timestamp, older version): the one after the pairs.
///
/// ```
/// use gpuds_btree::node::NodeLayout;
/// use gpuds_mvbtree::node::version_slot;
/// assert_eq!(version_slot(NodeLayout::NARROW), 13);
/// assert_eq!(version_slot(NodeLayout::wide(128)), 5);
/// ```
pub fn version_slot(layout: NodeLayout) -> usize {
    layout.slots() - 3
}

/// One version of a node, decoded: the B-link node and its version slot.
///
/// # Examples
/// ```
/// use gpuds_btree::node::{NodeLayout, NULL_NODE};
/// use gpuds_mvbtree::node::{VersionedNode, LATCH_COPY};
/// let l = NodeLayout::NARROW;
/// let old = VersionedNode::<u32, u32>::leaf(l, &[(1, 10)], None, 3, NULL_NODE).copy();
/// let head = VersionedNode::<u32, u32>::leaf(l, &[(1, 10), (5, 50)], None, 7, 0x40);
/// let words = head.encode();
/// assert_eq!((words[26], words[27]), (7, 0x40)); // timestamp, older version
/// assert_eq!(VersionedNode::decode(l, &words), Some(head));
/// assert_eq!(old.encode()[28], LATCH_COPY);
/// assert!(old.is_copy() && !head.is_copy());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VersionedNode<K = u32, V = u32> {
    /// The B-link node; its pairs past [`pairs_per_node`] are unused (zero when decoded).
    pub node: Node<K, V>,
    /// The version's timestamp, [`UNSET_TS`] when not stamped yet.
    pub ts: u32,
    /// The address of the next older version, or [`NULL_NODE`].
    pub older: u32,
}

impl<K: DeviceType, V: DeviceType> VersionedNode<K, V> {
    /// A head (latch free) at `level` with these entries (those past [`pairs_per_node`]
    /// are dropped), side link `Some((high, sibling))` or none, timestamp and older link.
    pub fn new(
        layout: NodeLayout,
        level: u32,
        entries: &[(K, V)],
        link: Option<(K, u32)>,
        ts: u32,
        older: u32,
    ) -> Self {
        let kept = entries.len().min(pairs_per_node(layout));
        VersionedNode {
            node: Node::new(layout, level, &entries[..kept], link),
            ts,
            older,
        }
    }

    /// A leaf head; see [`VersionedNode::new`].
    pub fn leaf(
        layout: NodeLayout,
        entries: &[(K, V)],
        link: Option<(K, u32)>,
        ts: u32,
        older: u32,
    ) -> Self {
        Self::new(layout, 0, entries, link, ts, older)
    }

    /// An internal head at `level` (1 above the leaves) over `(pivot, child)` entries; see
    /// [`VersionedNode::new`].
    ///
    /// ```
    /// use gpuds_btree::node::{NodeLayout, NULL_NODE};
    /// use gpuds_mvbtree::node::VersionedNode;
    /// let root = VersionedNode::<u64, u64>::internal(NodeLayout::wide(256), 1, &[(0, 4), (9, 5)], None, 0, NULL_NODE);
    /// assert_eq!(root.node.level, 1);
    /// assert_eq!(root.node.entries(), &[(0, 4), (9, 5)]);
    /// ```
    pub fn internal(
        layout: NodeLayout,
        level: u32,
        entries: &[(K, u32)],
        link: Option<(K, u32)>,
        ts: u32,
        older: u32,
    ) -> Self {
        let entries: Vec<(K, V)> = entries
            .iter()
            .map(|&(k, child)| (k, V::from_u64(child as u64)))
            .collect();
        Self::new(layout, level, &entries, link, ts, older)
    }

    /// This version as an older version of its list: the same contents, timestamp and
    /// older link, latch [`LATCH_COPY`].
    pub fn copy(self) -> Self {
        let mut copy = self;
        copy.node.latch = LATCH_COPY;
        copy
    }

    /// True for an older version (latch word [`LATCH_COPY`]).
    pub fn is_copy(&self) -> bool {
        self.node.latch == LATCH_COPY
    }

    /// Decodes a node's words; `None` when fewer than the layout's words are given.
    pub fn decode(layout: NodeLayout, words: &[u32]) -> Option<Self> {
        let mut node = Node::decode(layout, words)?;
        // `Node::decode` reads the version slot as one more pair
        let zero = (K::from_u64(0), V::from_u64(0));
        for p in node.pairs.iter_mut().skip(pairs_per_node(layout)) {
            *p = zero;
        }
        let (ts, older) = layout.slot(words, version_slot(layout));
        let retired = ts as u32 & RETIRED_OLDER != 0;
        Some(VersionedNode {
            node,
            ts: ts as u32 & !RETIRED_OLDER,
            older: if retired { NULL_NODE } else { older as u32 },
        })
    }

    /// The node's words, as the device stores them.
    pub fn encode(&self) -> Vec<u32> {
        let layout = self.node.layout;
        let mut words = self.node.encode();
        // after the pairs: `Node::encode` writes pair slot `version_slot` too
        layout.set_slot(
            &mut words,
            version_slot(layout),
            (self.ts as u64, self.older as u64),
        );
        words
    }

    /// The B-link node as a `GpuBTreeMap` validator expects it: a copy's latch reads free.
    pub fn as_btree(&self) -> Node<K, V> {
        let mut node = self.node;
        if self.is_copy() {
            node.latch = 0;
        }
        node
    }
}

impl<K, V> VersionedNode<K, V> {
    /// True when the list goes on past this version.
    pub fn has_older(&self) -> bool {
        self.older != NULL_NODE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrow_version_slot_is_words_26_and_27() {
        let l = NodeLayout::NARROW;
        let entries: Vec<(u32, u32)> = (1..=13).map(|k| (k, 100 + k)).collect();
        let v = VersionedNode::<u32, u32>::leaf(l, &entries, Some((50, 9)), 0xabcd, 0x77);
        let w = v.encode();
        assert_eq!(w.len(), 32);
        assert_eq!((w[24], w[25]), (13, 113)); // the last pair, slot 12
        assert_eq!((w[26], w[27]), (0xabcd, 0x77));
        assert_eq!((w[28], w[29]), (0, 13)); // latch, count 13 at level 0
        assert_eq!((w[30], w[31]), (50, 9));
        assert_eq!(VersionedNode::decode(l, &w), Some(v));
        assert_eq!(VersionedNode::<u32, u32>::decode(l, &w[..31]), None);
    }

    #[test]
    fn wide_version_slot_is_words_52_to_56() {
        let l = NodeLayout::wide(256);
        let k = |x: u64| x << 32 | 3;
        let entries: Vec<(u64, u64)> = (1..=13).map(|x| (k(x), k(x + 100))).collect();
        let v = VersionedNode::<u64, u64>::leaf(l, &entries, None, 5, NULL_NODE).copy();
        let w = v.encode();
        assert_eq!(w.len(), 64);
        assert_eq!(&w[48..52], &[3, 13, 3, 113]);
        assert_eq!(&w[52..56], &[5, 0, NULL_NODE, 0]);
        assert_eq!(&w[56..58], &[LATCH_COPY, 0]);
        assert_eq!(VersionedNode::decode(l, &w), Some(v));
    }

    #[test]
    fn wide_128_byte_version_slot_is_slot_5() {
        let l = NodeLayout::wide(128);
        let entries: Vec<(u32, u64)> = (1..=7).map(|x| (x, 1 << 40 | x as u64)).collect();
        let v = VersionedNode::<u32, u64>::internal(l, 2, &[(0, 8), (4, 9)], None, 1, 6);
        assert_eq!(v.node.count, 2);
        let leaf = VersionedNode::<u32, u64>::leaf(l, &entries, None, UNSET_TS, 6);
        assert_eq!(leaf.node.count, 5); // the sixth and seventh entries are dropped
        let w = leaf.encode();
        assert_eq!(&w[20..24], &[UNSET_TS, 0, 6, 0]);
        assert_eq!(w[26], 5); // meta: the value part of slot 6 (words 24..28)
        let decoded = VersionedNode::<u32, u64>::decode(l, &w).unwrap();
        assert_eq!(decoded.node.pairs[5], (0, 0));
        assert_eq!(decoded, leaf);
        assert_eq!(v.encode()[26], 2 | 2 << 8);
    }

    #[test]
    fn a_copy_reads_as_a_free_btree_node() {
        let l = NodeLayout::NARROW;
        let head = VersionedNode::<u32, u32>::leaf(l, &[(1, 1)], None, 2, 8);
        assert!(head.has_older());
        assert_eq!(head.copy().as_btree(), head.node);
        assert_eq!(head.copy().node.latch, LATCH_COPY);
        let mut latched = head;
        latched.node.latch = 1;
        assert_eq!(latched.as_btree().latch, 1);
    }
}
