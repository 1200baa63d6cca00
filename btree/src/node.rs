//! The node layout, host side: the twin of `gpuds/btree/node.cuh`.
//!
//! A node is an array of slots, one (key, value) pair each ([`NodeLayout`]):
//!
//! | keys, values | slot | node | slots | pairs |
//! | --- | --- | --- | --- | --- |
//! | u32, u32 | 8 bytes: key word, value word | 128 bytes | 16 | 14 |
//! | any u64 (`wide_node_bytes` 128) | 16 bytes: key zero-extended to 8 bytes, then the value | 128 bytes | 8 | 6 |
//! | any u64 (default, `wide_node_bytes` 256) | 16 bytes | 256 bytes | 16 | 14 |
//!
//! | slots | leaf | internal node |
//! | --- | --- | --- |
//! | 0 .. slots-3 | (key, value), sorted | (pivot, child address), sorted; pivot 0 is the node's low bound |
//! | slots-2 | (latch, meta) | (latch, meta) |
//! | slots-1 | (high key, right sibling) | (high key, right sibling) |
//!
//! `meta` holds the number of meaningful pairs (bits 0-7) and the level (bits 8-15; leaves
//! are level 0) and, in 256-byte nodes, a sequence number (bits 16-31: odd while a writer
//! stores the node's two lines, which one instruction does not write or read together;
//! coherent readers check it, see `node.cuh`); the latch is the low 32 bits of the
//! metadata slot's key part. Flags and
//! latch stay out of the keys, so every key of the type is valid; the price is one pair
//! of the node: 14 pairs per node where the original stores 15 (at u32).

use gpuds_core::DeviceType;

/// The most pairs a node of any layout holds.
pub const MAX_PAIRS: usize = 14;
/// The address of no node (the slab allocator's null unit).
pub const NULL_NODE: u32 = gpuds_alloc::NULL_UNIT;
/// The high key written on the rightmost node of a level (all ones; ignored there: its
/// sibling is [`NULL_NODE`]).
pub const NO_HIGH_KEY: u64 = u64::MAX;

/// Where pairs sit in a node: slot size and node size (see the [module docs](self)).
///
/// ```
/// use gpuds_btree::node::NodeLayout;
/// assert_eq!(NodeLayout::NARROW.pairs(), 14);
/// assert_eq!(NodeLayout::wide(128).pairs(), 6);
/// assert_eq!(NodeLayout::wide(256).slots(), 16);
/// assert_eq!(NodeLayout::of::<u64, u32>(128), NodeLayout::wide(128));
/// assert_eq!(NodeLayout::of::<u32, u32>(256), NodeLayout::NARROW);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NodeLayout {
    /// 32-bit words per slot: 2 (u32 keys and values) or 4.
    pub slot_words: usize,
    /// Bytes per node (one slab unit): 128 or 256.
    pub node_bytes: u32,
}

impl NodeLayout {
    /// u32 keys and u32 values: 8-byte slots, 128-byte nodes, 14 pairs.
    pub const NARROW: NodeLayout = NodeLayout {
        slot_words: 2,
        node_bytes: 128,
    };

    /// A 64-bit key or value: 16-byte slots in a node of `node_bytes` (128: 6 pairs,
    /// 256: 14 pairs).
    pub const fn wide(node_bytes: u32) -> Self {
        NodeLayout {
            slot_words: 4,
            node_bytes,
        }
    }

    /// The layout of `K` keys and `V` values, wide nodes of `wide_node_bytes`.
    pub fn of<K: DeviceType, V: DeviceType>(wide_node_bytes: u32) -> Self {
        if std::mem::size_of::<K>() == 4 && std::mem::size_of::<V>() == 4 {
            Self::NARROW
        } else {
            Self::wide(wide_node_bytes)
        }
    }

    /// 32-bit words per node.
    pub fn node_words(&self) -> usize {
        self.node_bytes as usize / 4
    }

    /// Slots per node.
    pub fn slots(&self) -> usize {
        self.node_words() / self.slot_words
    }

    /// Key/value (or pivot/child) pairs per node.
    pub fn pairs(&self) -> usize {
        self.slots() - 2
    }

    /// The slot holding (latch, meta).
    pub fn meta_slot(&self) -> usize {
        self.slots() - 2
    }

    /// The slot holding (high key, right sibling).
    pub fn link_slot(&self) -> usize {
        self.slots() - 1
    }

    /// Slot `i` of a node's words as (key part, value part): in 8-byte slots the words
    /// `2i` and `2i + 1`; in 16-byte slots the key part is words `4i`, `4i + 1` (low word
    /// first) and the value part words `4i + 2`, `4i + 3`.
    ///
    /// # Panics
    /// When `w` holds fewer than `(i + 1) * slot_words` words.
    ///
    /// # Examples
    /// ```
    /// use gpuds_btree::node::NodeLayout;
    /// let mut words = vec![0u32; 64];
    /// NodeLayout::wide(256).set_slot(&mut words, 13, (1 << 32 | 5, 7));
    /// assert_eq!(&words[52..56], &[5, 1, 7, 0]);
    /// assert_eq!(NodeLayout::wide(256).slot(&words, 13), (1 << 32 | 5, 7));
    /// assert_eq!(NodeLayout::NARROW.slot(&words, 13), (0, 0)); // words 26 and 27
    /// ```
    pub fn slot(&self, w: &[u32], i: usize) -> (u64, u64) {
        let at = i * self.slot_words;
        if self.slot_words == 2 {
            (w[at] as u64, w[at + 1] as u64)
        } else {
            let word = |j: usize| w[at + j] as u64 | (w[at + j + 1] as u64) << 32;
            (word(0), word(2))
        }
    }

    /// Writes slot `i` of a node's words (the words [`NodeLayout::slot`] reads; in 8-byte
    /// slots only the low 32 bits of each part are kept).
    ///
    /// # Panics
    /// When `w` holds fewer than `(i + 1) * slot_words` words.
    pub fn set_slot(&self, w: &mut [u32], i: usize, (a, b): (u64, u64)) {
        let at = i * self.slot_words;
        if self.slot_words == 2 {
            w[at] = a as u32;
            w[at + 1] = b as u32;
        } else {
            w[at..at + 4].copy_from_slice(&[
                a as u32,
                (a >> 32) as u32,
                b as u32,
                (b >> 32) as u32,
            ]);
        }
    }
}

/// One node, decoded.
///
/// # Examples
/// ```
/// use gpuds_btree::node::{Node, NodeLayout, NULL_NODE};
/// let leaf = Node::<u32, u32>::leaf(NodeLayout::NARROW, &[(1, 10), (5, 50)], None);
/// let words = leaf.encode();
/// assert_eq!(words[29], 2); // count 2, level 0
/// assert_eq!(Node::decode(NodeLayout::NARROW, &words), Some(leaf));
/// assert_eq!(leaf.entries(), &[(1, 10), (5, 50)]);
/// assert_eq!(leaf.link, NULL_NODE);
///
/// let wide = Node::<u64, u32>::leaf(NodeLayout::wide(128), &[(1 << 40, 7)], None);
/// let words = wide.encode();
/// assert_eq!(words.len(), 32);
/// assert_eq!(&words[..4], &[0, 1 << 8, 7, 0]); // key low, key high, value, padding
/// assert_eq!(Node::decode(NodeLayout::wide(128), &words), Some(wide));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Node<K = u32, V = u32> {
    /// Where the node's pairs sit.
    pub layout: NodeLayout,
    /// The latch word: 0 when free.
    pub latch: u32,
    /// Meaningful pairs (at most `layout.pairs()` in a valid node).
    pub count: u32,
    /// 0 for a leaf, the height above the leaves otherwise.
    pub level: u32,
    /// The right sibling's low bound (meaningless when `link` is [`NULL_NODE`]).
    pub high: K,
    /// The right sibling's address, or [`NULL_NODE`].
    pub link: u32,
    /// The pairs; only the first `count` (at most `layout.pairs()`) are meaningful.
    pub pairs: [(K, V); MAX_PAIRS],
}

impl<K: DeviceType, V: DeviceType> Node<K, V> {
    /// A leaf (`level` 0) or internal node with these entries and this link
    /// (`Some((high, sibling))`), latch free. Entries past the layout's pairs are dropped.
    pub fn new(layout: NodeLayout, level: u32, entries: &[(K, V)], link: Option<(K, u32)>) -> Self {
        let mut pairs = [(K::from_u64(0), V::from_u64(0)); MAX_PAIRS];
        let count = entries.len().min(layout.pairs()).min(MAX_PAIRS);
        pairs[..count].copy_from_slice(&entries[..count]);
        let (high, link) = link.unwrap_or((K::from_u64(NO_HIGH_KEY), NULL_NODE));
        Node {
            layout,
            latch: 0,
            count: count as u32,
            level,
            high,
            link,
            pairs,
        }
    }

    /// A leaf; see [`Node::new`].
    pub fn leaf(layout: NodeLayout, entries: &[(K, V)], link: Option<(K, u32)>) -> Self {
        Self::new(layout, 0, entries, link)
    }

    /// Decodes a node's words; `None` when fewer than the layout's words are given.
    pub fn decode(layout: NodeLayout, words: &[u32]) -> Option<Self> {
        let w = words.get(..layout.node_words())?;
        let mut pairs = [(K::from_u64(0), V::from_u64(0)); MAX_PAIRS];
        for (i, p) in pairs.iter_mut().take(layout.pairs()).enumerate() {
            let (a, b) = layout.slot(w, i);
            *p = (K::from_u64(a), V::from_u64(b));
        }
        let (latch, meta) = layout.slot(w, layout.meta_slot());
        let (high, link) = layout.slot(w, layout.link_slot());
        Some(Node {
            layout,
            latch: latch as u32,
            count: meta as u32 & 0xff,
            level: (meta as u32 >> 8) & 0xff,
            high: K::from_u64(high),
            link: link as u32,
            pairs,
        })
    }

    /// The node's words, as the device stores them.
    pub fn encode(&self) -> Vec<u32> {
        let l = self.layout;
        let mut w = vec![0u32; l.node_words()];
        for (i, &(a, b)) in self.pairs.iter().take(l.pairs()).enumerate() {
            l.set_slot(&mut w, i, (a.to_u64(), b.to_u64()));
        }
        let meta = (self.count & 0xff) | ((self.level & 0xff) << 8);
        l.set_slot(&mut w, l.meta_slot(), (self.latch as u64, meta as u64));
        l.set_slot(
            &mut w,
            l.link_slot(),
            (self.high.to_u64(), self.link as u64),
        );
        w
    }

    /// The meaningful pairs.
    pub fn entries(&self) -> &[(K, V)] {
        &self.pairs[..(self.count as usize)
            .min(self.layout.pairs())
            .min(MAX_PAIRS)]
    }

    /// True for a leaf.
    pub fn is_leaf(&self) -> bool {
        self.level == 0
    }
}
