//! The node layout, host side: the twin of `gpuds/btree/node.cuh`.
//!
//! A node is one 128-byte line of 32 words, read as 16 (u32, u32) pairs:
//!
//! | pairs | leaf | internal node |
//! | --- | --- | --- |
//! | 0..13 | (key, value), sorted | (pivot, child address), sorted; pivot 0 is the node's low bound |
//! | 14 | (latch, meta) | (latch, meta) |
//! | 15 | (high key, right sibling) | (high key, right sibling) |
//!
//! `meta` holds the number of meaningful pairs (bits 0-7) and the level (bits 8-15; leaves
//! are level 0). Flags and latch stay out of the keys, so every `u32` is a valid key; the
//! price is one pair of the 16: 14 pairs per node where the original stores 15.

/// Words per node.
pub const NODE_WORDS: usize = 32;
/// Bytes per node: one cache line, one slab unit.
pub const NODE_BYTES: u32 = 128;
/// Key/value (or pivot/child) pairs per node.
pub const NODE_PAIRS: usize = 14;
/// The pair holding (latch, meta).
pub const META_PAIR: usize = 14;
/// The pair holding (high key, right sibling).
pub const LINK_PAIR: usize = 15;
/// The address of no node (the slab allocator's null unit).
pub const NULL_NODE: u32 = gpuds_alloc::NULL_UNIT;
/// The high key written on the rightmost node of a level (ignored there: its sibling is
/// [`NULL_NODE`]).
pub const NO_HIGH_KEY: u32 = u32::MAX;

/// One node, decoded.
///
/// # Examples
/// ```
/// use gpuds_btree::node::{Node, NULL_NODE};
/// let leaf = Node::leaf(&[(1, 10), (5, 50)], None);
/// let words = leaf.encode();
/// assert_eq!(words[29], 2); // count 2, level 0
/// assert_eq!(Node::decode(&words), Some(leaf));
/// assert_eq!(leaf.entries(), &[(1, 10), (5, 50)]);
/// assert_eq!(leaf.link, NULL_NODE);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Node {
    /// The latch word: 0 when free.
    pub latch: u32,
    /// Meaningful pairs (at most [`NODE_PAIRS`] in a valid node).
    pub count: u32,
    /// 0 for a leaf, the height above the leaves otherwise.
    pub level: u32,
    /// The right sibling's low bound (meaningless when `link` is [`NULL_NODE`]).
    pub high: u32,
    /// The right sibling's address, or [`NULL_NODE`].
    pub link: u32,
    /// The pairs; only the first `count` are meaningful.
    pub pairs: [(u32, u32); NODE_PAIRS],
}

impl Node {
    /// A leaf (`level` 0) or internal node with these entries and this link
    /// (`Some((high, sibling))`), latch free. Entries past [`NODE_PAIRS`] are dropped.
    pub fn new(level: u32, entries: &[(u32, u32)], link: Option<(u32, u32)>) -> Self {
        let mut pairs = [(0, 0); NODE_PAIRS];
        let count = entries.len().min(NODE_PAIRS);
        pairs[..count].copy_from_slice(&entries[..count]);
        let (high, link) = link.unwrap_or((NO_HIGH_KEY, NULL_NODE));
        Node {
            latch: 0,
            count: count as u32,
            level,
            high,
            link,
            pairs,
        }
    }

    /// A leaf; see [`Node::new`].
    pub fn leaf(entries: &[(u32, u32)], link: Option<(u32, u32)>) -> Self {
        Self::new(0, entries, link)
    }

    /// Decodes a node's words; `None` when fewer than [`NODE_WORDS`] are given.
    pub fn decode(words: &[u32]) -> Option<Self> {
        let w = words.get(..NODE_WORDS)?;
        let mut pairs = [(0, 0); NODE_PAIRS];
        for (i, p) in pairs.iter_mut().enumerate() {
            *p = (w[2 * i], w[2 * i + 1]);
        }
        let meta = w[2 * META_PAIR + 1];
        Some(Node {
            latch: w[2 * META_PAIR],
            count: meta & 0xff,
            level: (meta >> 8) & 0xff,
            high: w[2 * LINK_PAIR],
            link: w[2 * LINK_PAIR + 1],
            pairs,
        })
    }

    /// The node's words, as the device stores them.
    pub fn encode(&self) -> [u32; NODE_WORDS] {
        let mut w = [0u32; NODE_WORDS];
        for (i, &(a, b)) in self.pairs.iter().enumerate() {
            w[2 * i] = a;
            w[2 * i + 1] = b;
        }
        w[2 * META_PAIR] = self.latch;
        w[2 * META_PAIR + 1] = (self.count & 0xff) | ((self.level & 0xff) << 8);
        w[2 * LINK_PAIR] = self.high;
        w[2 * LINK_PAIR + 1] = self.link;
        w
    }

    /// The meaningful pairs.
    pub fn entries(&self) -> &[(u32, u32)] {
        &self.pairs[..(self.count as usize).min(NODE_PAIRS)]
    }

    /// True for a leaf.
    pub fn is_leaf(&self) -> bool {
        self.level == 0
    }
}
