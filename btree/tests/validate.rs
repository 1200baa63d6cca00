//! CPU tests of the host-side node codec and validator on synthetic trees, for every
//! key and value type and node layout: a tree laid out as the bulk build lays it out
//! passes, and each broken invariant is caught.

use std::collections::HashMap;

use gpuds_btree::node::{Node, NodeLayout, NULL_NODE};
use gpuds_btree::validate::{bulk_shape, walk};
use gpuds_btree::{TreeKey, TreeValue};
use proptest::prelude::*;

/// Every key and value type with each of its layouts.
macro_rules! for_each_layout {
    ($body:ident $(, $arg:expr)*) => {
        $body::<u32, u32>(NodeLayout::NARROW $(, $arg)*);
        for bytes in [128, 256] {
            $body::<u64, u32>(NodeLayout::wide(bytes) $(, $arg)*);
            $body::<u32, u64>(NodeLayout::wide(bytes) $(, $arg)*);
            $body::<u64, u64>(NodeLayout::wide(bytes) $(, $arg)*);
        }
    };
}

/// Test key x: x for u32; x in the high word (above a fixed low word) for u64, so that
/// keys differ only in their high words.
fn key<K: TreeKey>(x: u32) -> K {
    if std::mem::size_of::<K>() == 8 {
        K::from_u64((x as u64) << 32 | 0x9e37_79b9)
    } else {
        K::from_u64(x as u64)
    }
}

/// A host twin of the bulk build: `pairs` sorted and unique, `fill` per node, addresses
/// handed out in build order starting at 1 (0 is the root).
fn build<K: TreeKey, V: TreeValue>(
    layout: NodeLayout,
    pairs: &[(K, V)],
    fill: usize,
) -> HashMap<u32, Node<K, V>> {
    let mut nodes = HashMap::new();
    let mut next = 1u32;
    // (low, address) of the current level's nodes, and their entries
    let mut entries: Vec<(K, V)> = pairs.to_vec();
    let mut level = 0;
    loop {
        let chunks: Vec<&[(K, V)]> = if entries.is_empty() {
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
        let lows: Vec<K> = chunks
            .iter()
            .enumerate()
            .map(|(j, c)| if j == 0 { K::from_u64(0) } else { c[0].0 })
            .collect();
        for (j, chunk) in chunks.iter().enumerate() {
            let link = (j + 1 < chunks.len()).then(|| (lows[j + 1], addrs[j + 1]));
            nodes.insert(addrs[j], Node::new(layout, level, chunk, link));
        }
        if top {
            return nodes;
        }
        entries = lows
            .into_iter()
            .zip(addrs.into_iter().map(|a| V::from_u64(a as u64)))
            .collect();
        level += 1;
    }
}

fn sorted_pairs<K: TreeKey, V: TreeValue>(n: u32) -> Vec<(K, V)> {
    (0..n)
        .map(|i| (key(i * 5 + 1), V::from_u64(i as u64 | (i as u64) << 32)))
        .collect()
}

#[test]
fn node_words_round_trip() {
    let node = Node::<u32, u32>::new(NodeLayout::NARROW, 3, &[(0, 7), (9, 8)], Some((20, 42)));
    let words = node.encode();
    assert_eq!(words.len(), 32);
    assert_eq!(words[28], 0, "latch free");
    assert_eq!(words[29], 2 | 3 << 8);
    assert_eq!((words[30], words[31]), (20, 42));
    assert_eq!(Node::decode(NodeLayout::NARROW, &words), Some(node));
    assert_eq!(
        Node::<u32, u32>::decode(NodeLayout::NARROW, &words[..31]),
        None
    );
    assert_eq!(
        Node::<u32, u32>::leaf(NodeLayout::NARROW, &[], None).link,
        NULL_NODE
    );
}

#[test]
fn wide_node_words_round_trip() {
    // 128-byte node of 16-byte slots: 6 pairs, metadata slot 6 (words 24..27), link slot 7
    // (words 28..31).
    let l = NodeLayout::wide(128);
    let k = 0x0123_4567_89ab_cdef_u64;
    let node = Node::<u64, u32>::new(l, 2, &[(0, 7), (k, 8)], Some((u64::MAX - 1, 42)));
    let words = node.encode();
    assert_eq!(words.len(), 32);
    assert_eq!(&words[4..8], &[0x89ab_cdef, 0x0123_4567, 8, 0]);
    assert_eq!(
        &words[24..28],
        &[0, 0, 2 | 2 << 8, 0],
        "latch free, count 2, level 2"
    );
    assert_eq!(&words[28..32], &[u32::MAX - 1, u32::MAX, 42, 0]);
    assert_eq!(Node::decode(l, &words), Some(node));
    assert_eq!(Node::<u64, u32>::decode(l, &words[..31]), None);
    // 256-byte node: 14 pairs, metadata slot 14 (words 56..59), link slot 15 (60..63).
    let l = NodeLayout::wide(256);
    let entries: Vec<(u32, u64)> = (0..14).map(|i| (i, u64::MAX - i as u64)).collect();
    let node = Node::<u32, u64>::leaf(l, &entries, None);
    let words = node.encode();
    assert_eq!(words.len(), 64);
    assert_eq!(&words[52..56], &[13, 0, u32::MAX - 13, u32::MAX]);
    assert_eq!(words[58], 14, "count 14, level 0");
    assert_eq!(
        &words[60..64],
        &[u32::MAX, 0, NULL_NODE, 0],
        "a u32 key zero-extended"
    );
    assert_eq!(Node::decode(l, &words), Some(node));
    assert_eq!(node.entries(), entries.as_slice());
    // A 256-byte node's writers keep a sequence number in bits 16-31 of the metadata
    // word (word 58: the value half of slot 14); decoding reads count and level only.
    let mut stamped = words;
    stamped[58] |= 0x2a_0000;
    assert_eq!(Node::decode(l, &stamped), Some(node));
}

fn bulk_built_shape<K: TreeKey, V: TreeValue>(layout: NodeLayout) {
    for n in [0u32, 1, 5, 6, 7, 13, 14, 15, 100, 1000, 12_345] {
        for fill in [2usize, 4, 6, 8, 10, 14]
            .into_iter()
            .filter(|&f| f <= layout.pairs())
        {
            let pairs = sorted_pairs::<K, V>(n);
            let nodes = build(layout, &pairs, fill);
            let (shape, got) = walk(0, |a| nodes.get(&a).copied(), true).unwrap();
            assert_eq!(got, pairs);
            assert_eq!(shape.pairs_per_node as usize, layout.pairs());
            let plan = bulk_shape(n as u64, fill as u32, layout.pairs() as u32);
            assert_eq!(
                shape.nodes_per_level, plan.nodes_per_level,
                "n {n} fill {fill}"
            );
            assert_eq!(shape.keys(), n as u64);
            assert_eq!(shape.nodes() as usize, nodes.len());
        }
    }
}

#[test]
fn a_bulk_built_tree_is_valid_and_has_the_planned_shape() {
    for_each_layout!(bulk_built_shape);
}

/// A host twin of the per-node arithmetic of the one-kernel bulk build
/// (`btree_bulk_build`): node i of the run (leaves first, root last) computed on its own
/// from the sorted pairs, at the pool address of linear unit i (classic layout with 2^8
/// blocks per super block, so that addresses are not the linear indices).
fn build_arithmetic<K: TreeKey, V: TreeValue>(
    layout: NodeLayout,
    pairs: &[(K, V)],
    fill: u64,
) -> (u32, HashMap<u32, Node<K, V>>) {
    let m = pairs.len() as u64;
    let addr = |i: u64| gpuds_alloc::address::address((i >> 10) as u32, (i & 1023) as u32, 8);
    let low = |c: u64, span: u64| {
        if c == 0 {
            K::from_u64(0)
        } else {
            pairs[(c * span) as usize].0
        }
    };
    let total = bulk_shape(m, fill as u32, layout.pairs() as u32).nodes();
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
        let entries: Vec<(K, V)> = (start..start + count)
            .map(|c| {
                if level == 0 {
                    pairs[c as usize]
                } else {
                    (
                        low(c, child_span),
                        V::from_u64(addr(first - below + c) as u64),
                    )
                }
            })
            .collect();
        let link = (j + 1 < count_here).then(|| (pairs[((j + 1) * span) as usize].0, addr(i + 1)));
        nodes.insert(addr(i), Node::new(layout, level, &entries, link));
    }
    (addr(total - 1), nodes)
}

fn arithmetic_shape<K: TreeKey, V: TreeValue>(layout: NodeLayout) {
    for n in [1u32, 2, 13, 14, 15, 100, 1000, 12_345, 70_000] {
        for fill in [2u64, 3, 6, 8, 10, 14]
            .into_iter()
            .filter(|&f| f <= layout.pairs() as u64)
        {
            let pairs = sorted_pairs::<K, V>(n);
            let (root, nodes) = build_arithmetic(layout, &pairs, fill);
            let (shape, got) = walk(root, |a| nodes.get(&a).copied(), true)
                .unwrap_or_else(|e| panic!("n {n} fill {fill}: {e}"));
            assert_eq!(got, pairs);
            let plan = bulk_shape(n as u64, fill as u32, layout.pairs() as u32);
            assert_eq!(
                shape.nodes_per_level, plan.nodes_per_level,
                "n {n} fill {fill}"
            );
            assert_eq!(shape.nodes() as usize, nodes.len());
        }
    }
}

#[test]
fn the_arithmetic_bulk_build_is_valid_and_has_the_planned_shape() {
    for_each_layout!(arithmetic_shape);
}

fn broken<K: TreeKey, V: TreeValue>(
    layout: NodeLayout,
    edit: impl FnOnce(&mut HashMap<u32, Node<K, V>>),
) -> String {
    let fill = layout.pairs().min(8);
    let mut nodes = build(layout, &sorted_pairs::<K, V>(500), fill);
    edit(&mut nodes);
    walk(0, |a| nodes.get(&a).copied(), false).unwrap_err()
}

fn leaf_of<K: TreeKey, V: TreeValue>(nodes: &HashMap<u32, Node<K, V>>, i: usize) -> u32 {
    let mut leaves: Vec<(u32, Node<K, V>)> = nodes
        .iter()
        .filter(|(_, n)| n.is_leaf())
        .map(|(a, n)| (*a, *n))
        .collect();
    leaves.sort_by_key(|(_, n)| n.pairs[0].0);
    leaves[i].0
}

fn broken_invariants<K: TreeKey, V: TreeValue>(l: NodeLayout) {
    let e = broken::<K, V>(l, |t| {
        let a = leaf_of(t, 3);
        t.get_mut(&a).unwrap().pairs.swap(0, 1);
    });
    assert!(e.contains("out of order"), "{e}");
    let e = broken::<K, V>(l, |t| {
        let a = leaf_of(t, 3);
        t.get_mut(&a).unwrap().pairs[0].0 = K::from_u64(0);
    });
    assert!(e.contains("outside its range"), "{e}");
    let e = broken::<K, V>(l, |t| {
        let a = leaf_of(t, 3);
        t.get_mut(&a).unwrap().latch = 1;
    });
    assert!(e.contains("latched"), "{e}");
    let e = broken::<K, V>(l, |t| {
        let a = leaf_of(t, 3);
        let n = t.get_mut(&a).unwrap();
        n.high = K::from_u64(n.high.to_u64() + 1);
    });
    assert!(e.contains("side link"), "{e}");
    let e = broken::<K, V>(l, |t| {
        let last = t.values().filter(|n| n.is_leaf()).count() - 1;
        let a = leaf_of(t, last);
        t.get_mut(&a).unwrap().link = 0;
    });
    assert!(e.contains("last of its level"), "{e}");
    let e = broken::<K, V>(l, |t| {
        let a = leaf_of(t, 7);
        t.remove(&a);
    });
    assert!(e.contains("not allocated"), "{e}");
    let e = broken::<K, V>(l, |t| {
        let a = leaf_of(t, 7);
        t.get_mut(&a).unwrap().level = 1;
    });
    assert!(e.contains("level"), "{e}");
    let e = broken::<K, V>(l, |t| {
        let a = leaf_of(t, 7);
        t.get_mut(&a).unwrap().count = l.pairs() as u32 + 1;
    });
    assert!(e.contains("holds"), "{e}");
    let e = broken::<K, V>(l, |t| {
        let root = t.get_mut(&0).unwrap();
        root.pairs[1].1 = root.pairs[0].1;
    });
    assert!(e.contains("twice") || e.contains("side link"), "{e}");
    // A high word dropped from one key of a leaf (64-bit keys): out of its range.
    if std::mem::size_of::<K>() == 8 {
        let e = broken::<K, V>(l, |t| {
            let a = leaf_of(t, 3);
            let p = &mut t.get_mut(&a).unwrap().pairs[1].0;
            *p = K::from_u64(p.to_u64() & 0xffff_ffff);
        });
        assert!(e.contains("out of order") || e.contains("outside"), "{e}");
    }
}

#[test]
fn each_broken_invariant_is_caught() {
    for_each_layout!(broken_invariants);
}

proptest! {
    #[test]
    fn any_sorted_input_builds_a_valid_tree(mut keys in proptest::collection::vec(any::<u32>(), 0..2000), fill in 2usize..=14) {
        keys.sort_unstable();
        keys.dedup();
        let pairs: Vec<(u32, u32)> = keys.iter().map(|&k| (k, !k)).collect();
        let nodes = build(NodeLayout::NARROW, &pairs, fill);
        let (shape, got) = walk(0, |a| nodes.get(&a).copied(), true).unwrap();
        prop_assert_eq!(got, pairs);
        prop_assert_eq!(shape.nodes_per_level, bulk_shape(keys.len() as u64, fill as u32, 14).nodes_per_level);
    }

    #[test]
    fn any_sorted_wide_input_builds_a_valid_tree(mut keys in proptest::collection::vec(any::<u64>(), 0..2000), fill in 2usize..=6) {
        keys.sort_unstable();
        keys.dedup();
        let pairs: Vec<(u64, u64)> = keys.iter().map(|&k| (k, !k)).collect();
        let nodes = build(NodeLayout::wide(128), &pairs, fill);
        let (shape, got) = walk(0, |a| nodes.get(&a).copied(), true).unwrap();
        prop_assert_eq!(got, pairs);
        prop_assert_eq!(shape.nodes_per_level, bulk_shape(keys.len() as u64, fill as u32, 6).nodes_per_level);
    }
}
