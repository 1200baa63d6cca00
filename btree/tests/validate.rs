//! CPU tests of the host-side node codec and validator on synthetic trees: a tree laid
//! out as the bulk build lays it out passes, and each broken invariant is caught.

use std::collections::HashMap;

use gpuds_btree::node::{Node, NODE_PAIRS, NULL_NODE};
use gpuds_btree::validate::{bulk_shape, walk};
use proptest::prelude::*;

/// A host twin of the bulk build: `pairs` sorted and unique, `fill` per node, addresses
/// handed out in build order starting at 1 (0 is the root).
fn build(pairs: &[(u32, u32)], fill: usize) -> HashMap<u32, Node> {
    let mut nodes = HashMap::new();
    let mut next = 1u32;
    // (low, address) of the current level's nodes, and their entries
    let mut entries: Vec<(u32, u32)> = pairs.to_vec();
    let mut level = 0;
    loop {
        let chunks: Vec<&[(u32, u32)]> = if entries.is_empty() {
            vec![&[]]
        } else {
            entries.chunks(fill).collect()
        };
        let top = chunks.len() == 1;
        let addrs: Vec<u32> = (0..chunks.len())
            .map(|_| {
                if top {
                    0
                } else {
                    next += 1;
                    next - 1
                }
            })
            .collect();
        let lows: Vec<u32> = chunks
            .iter()
            .enumerate()
            .map(|(j, c)| if j == 0 { 0 } else { c[0].0 })
            .collect();
        for (j, chunk) in chunks.iter().enumerate() {
            let link = (j + 1 < chunks.len()).then(|| (lows[j + 1], addrs[j + 1]));
            nodes.insert(addrs[j], Node::new(level, chunk, link));
        }
        if top {
            return nodes;
        }
        entries = lows.into_iter().zip(addrs).collect();
        level += 1;
    }
}

fn sorted_pairs(n: u32) -> Vec<(u32, u32)> {
    (0..n).map(|i| (i * 5 + 1, i)).collect()
}

#[test]
fn node_words_round_trip() {
    let node = Node::new(3, &[(0, 7), (9, 8)], Some((20, 42)));
    let words = node.encode();
    assert_eq!(words[28], 0, "latch free");
    assert_eq!(words[29], 2 | 3 << 8);
    assert_eq!((words[30], words[31]), (20, 42));
    assert_eq!(Node::decode(&words), Some(node));
    assert_eq!(Node::decode(&words[..31]), None);
    assert_eq!(Node::leaf(&[], None).link, NULL_NODE);
}

#[test]
fn a_bulk_built_tree_is_valid_and_has_the_planned_shape() {
    for n in [0u32, 1, 13, 14, 15, 100, 1000, 12_345] {
        for fill in [2usize, 8, 10, 14] {
            let pairs = sorted_pairs(n);
            let nodes = build(&pairs, fill);
            let (shape, got) = walk(0, |a| nodes.get(&a).copied(), true).unwrap();
            assert_eq!(got, pairs);
            let plan = bulk_shape(n as u64, fill as u32);
            assert_eq!(
                shape.nodes_per_level, plan.nodes_per_level,
                "n {n} fill {fill}"
            );
            assert_eq!(shape.keys(), n as u64);
            assert_eq!(shape.nodes() as usize, nodes.len());
        }
    }
}

/// A host twin of the per-node arithmetic of the one-kernel bulk build
/// (`btree_bulk_build`): node i of the run (leaves first, root last) computed on its own
/// from the sorted pairs, at the pool address of linear unit i (classic layout with 2^8
/// blocks per super block, so that addresses are not the linear indices).
fn build_arithmetic(pairs: &[(u32, u32)], fill: u64) -> (u32, HashMap<u32, Node>) {
    let m = pairs.len() as u64;
    let addr = |i: u64| gpuds_alloc::address::address((i >> 10) as u32, (i & 1023) as u32, 8);
    let low = |c: u64, span: u64| {
        if c == 0 {
            0
        } else {
            pairs[(c * span) as usize].0
        }
    };
    let total = bulk_shape(m, fill as u32).nodes();
    let mut nodes = HashMap::new();
    for i in 0..total {
        // level_of
        let (mut level, mut first, mut count_here, mut span) = (0u32, 0u64, m.div_ceil(fill), fill);
        while i >= first + count_here && count_here > 1 {
            first += count_here;
            count_here = count_here.div_ceil(fill);
            span *= fill;
            level += 1;
        }
        let j = i - first;
        let child_span = span / fill;
        let below = m.div_ceil(child_span);
        let start = j * fill;
        let count = fill.min(below - start);
        let entries: Vec<(u32, u32)> = (start..start + count)
            .map(|c| {
                if level == 0 {
                    pairs[c as usize]
                } else {
                    (low(c, child_span), addr(first - below + c))
                }
            })
            .collect();
        let link = (j + 1 < count_here).then(|| (pairs[((j + 1) * span) as usize].0, addr(i + 1)));
        nodes.insert(addr(i), Node::new(level, &entries, link));
    }
    (addr(total - 1), nodes)
}

#[test]
fn the_arithmetic_bulk_build_is_valid_and_has_the_planned_shape() {
    for n in [1u32, 2, 13, 14, 15, 100, 1000, 12_345, 70_000] {
        for fill in [2u64, 3, 8, 10, 14] {
            let pairs = sorted_pairs(n);
            let (root, nodes) = build_arithmetic(&pairs, fill);
            let (shape, got) = walk(root, |a| nodes.get(&a).copied(), true)
                .unwrap_or_else(|e| panic!("n {n} fill {fill}: {e}"));
            assert_eq!(got, pairs);
            let plan = bulk_shape(n as u64, fill as u32);
            assert_eq!(
                shape.nodes_per_level, plan.nodes_per_level,
                "n {n} fill {fill}"
            );
            assert_eq!(shape.nodes() as usize, nodes.len());
        }
    }
}

fn broken(edit: impl FnOnce(&mut HashMap<u32, Node>)) -> String {
    let mut nodes = build(&sorted_pairs(500), 8);
    edit(&mut nodes);
    walk(0, |a| nodes.get(&a).copied(), false).unwrap_err()
}

fn leaf_of(nodes: &HashMap<u32, Node>, i: usize) -> u32 {
    let mut leaves: Vec<(u32, Node)> = nodes
        .iter()
        .filter(|(_, n)| n.is_leaf())
        .map(|(a, n)| (*a, *n))
        .collect();
    leaves.sort_by_key(|(_, n)| n.pairs[0].0);
    leaves[i].0
}

#[test]
fn each_broken_invariant_is_caught() {
    let e = broken(|t| {
        let a = leaf_of(t, 3);
        t.get_mut(&a).unwrap().pairs.swap(0, 1);
    });
    assert!(e.contains("out of order"), "{e}");
    let e = broken(|t| {
        let a = leaf_of(t, 3);
        t.get_mut(&a).unwrap().pairs[0].0 = 0;
    });
    assert!(e.contains("outside its range"), "{e}");
    let e = broken(|t| {
        let a = leaf_of(t, 3);
        t.get_mut(&a).unwrap().latch = 1;
    });
    assert!(e.contains("latched"), "{e}");
    let e = broken(|t| {
        let a = leaf_of(t, 3);
        t.get_mut(&a).unwrap().high += 1;
    });
    assert!(e.contains("side link"), "{e}");
    let e = broken(|t| {
        let a = leaf_of(t, 62);
        t.get_mut(&a).unwrap().link = 0;
    });
    assert!(e.contains("last of its level"), "{e}");
    let e = broken(|t| {
        let a = leaf_of(t, 7);
        t.remove(&a);
    });
    assert!(e.contains("not allocated"), "{e}");
    let e = broken(|t| {
        let a = leaf_of(t, 7);
        t.get_mut(&a).unwrap().level = 1;
    });
    assert!(e.contains("level"), "{e}");
    let e = broken(|t| {
        let a = leaf_of(t, 7);
        t.get_mut(&a).unwrap().count = NODE_PAIRS as u32 + 1;
    });
    assert!(e.contains("holds"), "{e}");
    let e = broken(|t| {
        let root = t.get_mut(&0).unwrap();
        root.pairs[1].1 = root.pairs[0].1;
    });
    assert!(e.contains("twice") || e.contains("side link"), "{e}");
}

proptest! {
    #[test]
    fn any_sorted_input_builds_a_valid_tree(mut keys in proptest::collection::vec(any::<u32>(), 0..2000), fill in 2usize..=14) {
        keys.sort_unstable();
        keys.dedup();
        let pairs: Vec<(u32, u32)> = keys.iter().map(|&k| (k, !k)).collect();
        let nodes = build(&pairs, fill);
        let (shape, got) = walk(0, |a| nodes.get(&a).copied(), true).unwrap();
        prop_assert_eq!(got, pairs);
        prop_assert_eq!(shape.nodes_per_level, bulk_shape(keys.len() as u64, fill as u32).nodes_per_level);
    }
}
