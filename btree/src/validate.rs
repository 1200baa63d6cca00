//! Host-side invariant checks and shape statistics over a copy of the tree.
//!
//! [`walk`] starts at the root and checks, level by level: every node is present and
//! decodes, has the level its parent implies, a free latch and at most its layout's pairs; keys are
//! strictly increasing within a node and lie in the node's range `[low, high)` given by
//! its parent's pivots; an internal node's pivot 0 is its low bound and it has children;
//! the side links of each level visit exactly the nodes the parents list, in order, each
//! high key equal to the sibling's low bound, and the last link is null; no node is
//! reached twice. Then every stored key was reached from the root, and the leaves read in
//! link order are the sorted contents.

use std::collections::HashSet;

use gpuds_core::DeviceType;

use crate::node::{Node, NULL_NODE};

/// Shape of a tree: what [`crate::GpuBTreeMap::stats`] reports.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TreeShape {
    /// Levels, leaves included (1 for a tree that is one leaf).
    pub height: u32,
    /// Nodes per level, leaves first.
    pub nodes_per_level: Vec<u64>,
    /// Meaningful pairs per level, leaves first (at level 0, the number of keys).
    pub pairs_per_level: Vec<u64>,
    /// Pairs a node holds (its layout's, see [`crate::node::NodeLayout`]).
    pub pairs_per_node: u32,
}

impl TreeShape {
    /// Nodes in all.
    pub fn nodes(&self) -> u64 {
        self.nodes_per_level.iter().sum()
    }

    /// Keys stored (pairs in the leaves).
    pub fn keys(&self) -> u64 {
        self.pairs_per_level.first().copied().unwrap_or(0)
    }

    /// Fill of each level: meaningful pairs over the pair slots of its nodes.
    pub fn fill_per_level(&self) -> Vec<f64> {
        self.nodes_per_level
            .iter()
            .zip(&self.pairs_per_level)
            .map(|(&n, &p)| {
                if n == 0 || self.pairs_per_node == 0 {
                    0.0
                } else {
                    p as f64 / (n * self.pairs_per_node as u64) as f64
                }
            })
            .collect()
    }
}

/// A node the parent level expects: address and key range (`high` None: unbounded).
#[derive(Clone, Copy)]
struct Expected<K> {
    addr: u32,
    low: K,
    high: Option<K>,
}

/// Checks the tree under `root` (see the module docs), reading nodes through `fetch`
/// (`None`: the address is not an allocated node). Returns the shape and, when `collect`,
/// every pair in key order. The error says which invariant broke where.
///
/// # Examples
/// ```
/// use std::collections::HashMap;
/// use gpuds_btree::node::{Node, NodeLayout};
/// use gpuds_btree::validate::walk;
/// // root 0 over leaves 1 and 2, split at key 10
/// let l = NodeLayout::NARROW;
/// let nodes = HashMap::from([
///     (0, Node::<u32, u32>::new(l, 1, &[(0, 1), (10, 2)], None)),
///     (1, Node::leaf(l, &[(3, 30), (7, 70)], Some((10, 2)))),
///     (2, Node::leaf(l, &[(10, 100)], None)),
/// ]);
/// let (shape, pairs) = walk(0, |a| nodes.get(&a).copied(), true)?;
/// assert_eq!(shape.height, 2);
/// assert_eq!(shape.nodes_per_level, vec![2, 1]);
/// assert_eq!(pairs, vec![(3, 30), (7, 70), (10, 100)]);
/// # Ok::<(), String>(())
/// ```
pub fn walk<K: DeviceType + Ord + std::fmt::Debug + std::fmt::LowerHex, V: DeviceType>(
    root: u32,
    fetch: impl Fn(u32) -> Option<Node<K, V>>,
    collect: bool,
) -> Result<(TreeShape, Vec<(K, V)>), String> {
    let top = fetch(root).ok_or_else(|| format!("root {root:#x} is not an allocated node"))?;
    let node_pairs = top.layout.pairs();
    let mut shape = TreeShape {
        height: top.level + 1,
        nodes_per_level: vec![0; top.level as usize + 1],
        pairs_per_level: vec![0; top.level as usize + 1],
        pairs_per_node: node_pairs as u32,
    };
    let mut pairs = Vec::new();
    let mut seen = HashSet::new();
    let mut level_nodes = vec![Expected {
        addr: root,
        low: K::from_u64(0),
        high: None,
    }];
    for level in (0..=top.level).rev() {
        let mut children = Vec::new();
        for (i, e) in level_nodes.iter().enumerate() {
            let at = || format!("node {:#x} (level {level}, position {i})", e.addr);
            if !seen.insert(e.addr) {
                return Err(format!("{} is reached twice", at()));
            }
            let node = fetch(e.addr).ok_or_else(|| format!("{} is not allocated", at()))?;
            if node.level != level {
                return Err(format!("{} says it is at level {}", at(), node.level));
            }
            if node.latch != 0 {
                return Err(format!("{} is still latched ({:#x})", at(), node.latch));
            }
            if node.layout != top.layout {
                return Err(format!(
                    "{} has layout {:?}, the root {:?}",
                    at(),
                    node.layout,
                    top.layout
                ));
            }
            if node.count as usize > node_pairs {
                return Err(format!("{} holds {} pairs", at(), node.count));
            }
            let entries = node.entries();
            if let Some(w) = entries.windows(2).find(|w| w[0].0 >= w[1].0) {
                return Err(format!(
                    "{}: keys {:#x}, {:#x} out of order",
                    at(),
                    w[0].0,
                    w[1].0
                ));
            }
            for &(k, _) in entries {
                if k < e.low || e.high.is_some_and(|h| k >= h) {
                    return Err(format!(
                        "{}: key {k:#x} outside its range [{:#x}, {:?})",
                        at(),
                        e.low,
                        e.high
                    ));
                }
            }
            match level_nodes.get(i + 1) {
                Some(next) => {
                    if node.link != next.addr || node.high != next.low {
                        return Err(format!(
                            "{}: side link ({:#x}, {:#x}) but the next node is ({:#x}, {:#x})",
                            at(),
                            node.high,
                            node.link,
                            next.low,
                            next.addr
                        ));
                    }
                }
                None => {
                    if node.link != NULL_NODE {
                        return Err(format!(
                            "{}: last of its level but links to {:#x}",
                            at(),
                            node.link
                        ));
                    }
                }
            }
            shape.nodes_per_level[level as usize] += 1;
            shape.pairs_per_level[level as usize] += entries.len() as u64;
            if level == 0 {
                if collect {
                    pairs.extend_from_slice(entries);
                }
                continue;
            }
            if entries.first().map(|p| p.0) != Some(e.low) {
                return Err(format!(
                    "{}: pivot 0 is {:?}, not its low bound {:#x}",
                    at(),
                    entries.first().map(|p| p.0),
                    e.low
                ));
            }
            for (j, &(pivot, child)) in entries.iter().enumerate() {
                let high = entries.get(j + 1).map(|p| p.0).or(e.high);
                children.push(Expected {
                    addr: child.to_u64() as u32,
                    low: pivot,
                    high,
                });
            }
        }
        level_nodes = children;
    }
    Ok((shape, pairs))
}

/// The shape a bulk build of `n` unique pairs gives with `fill` pairs per node
/// (every level `ceil(previous / fill)` nodes, up to one root; an empty tree is one
/// empty leaf), in nodes of `pairs_per_node` pairs.
///
/// ```
/// let shape = gpuds_btree::validate::bulk_shape(100, 10, 14);
/// assert_eq!(shape.nodes_per_level, vec![10, 1]);
/// assert_eq!(shape.pairs_per_level, vec![100, 10]);
/// assert_eq!(gpuds_btree::validate::bulk_shape(0, 10, 14).nodes_per_level, vec![1]);
/// ```
pub fn bulk_shape(n: u64, fill: u32, pairs_per_node: u32) -> TreeShape {
    let fill = fill.max(2) as u64;
    let mut shape = TreeShape {
        pairs_per_node,
        ..TreeShape::default()
    };
    let mut entries = n;
    loop {
        let nodes = entries.div_ceil(fill).max(1);
        shape.nodes_per_level.push(nodes);
        shape.pairs_per_level.push(entries);
        if nodes == 1 {
            break;
        }
        entries = nodes;
    }
    shape.height = shape.nodes_per_level.len() as u32;
    shape
}
