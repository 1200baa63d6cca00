//! Code shared by the GPU tests.
#![allow(dead_code)]

use std::collections::{BTreeMap, HashSet};

use gpuds_btree::{BTreeConfig, GpuBTreeMap, TreeKey, TreeOp, TreeReply, TreeValue};
use gpuds_core::Gpu;
use gpuds_testkit::check::Reply;
use gpuds_testkit::model::{OrderedMapModel, OrderedReply};
use gpuds_testkit::{Op, OrderedOp};

/// Runs a generic test body for every key and value type: `typed!(body)` makes a module
/// `body` with the tests `u32_u32`, `u64_u32`, `u32_u64` and `u64_u64` (filter with
/// `body::u64_u64`, or `u64_u64` for every test of that type).
#[macro_export]
macro_rules! typed {
    ($($body:ident),* $(,)?) => {
        $(
            mod $body {
                #[test]
                fn u32_u32() {
                    super::$body::<u32, u32>()
                }
                #[test]
                fn u64_u32() {
                    super::$body::<u64, u32>()
                }
                #[test]
                fn u32_u64() {
                    super::$body::<u32, u64>()
                }
                #[test]
                fn u64_u64() {
                    super::$body::<u64, u64>()
                }
            }
        )*
    };
}

/// The low word of every 64-bit test key made by [`key`]: 64-bit keys differ only in
/// their high words, so a comparison or copy that drops the high word finds them all
/// equal and fails the test.
pub const LOW_WORD: u64 = 0x9e37_79b9;

/// Test key x of type K: x itself for u32; for u64, x in the high word above
/// [`LOW_WORD`] (order-preserving, so ranges and successors keep their meaning), and 0
/// for 0 (the low bound of the leftmost nodes, which some tests aim at).
pub fn key<K: TreeKey>(x: u32) -> K {
    if std::mem::size_of::<K>() == 8 && x != 0 {
        K::from_u64((x as u64) << 32 | LOW_WORD)
    } else {
        K::from_u64(x as u64)
    }
}

/// Test value x of type V: x itself for u32; for u64, x in both words, the low one
/// flipped (a value cut to 32 bits differs from it).
pub fn val<V: TreeValue>(x: u32) -> V {
    if std::mem::size_of::<V>() == 8 {
        V::from_u64((x as u64) << 32 | (x ^ 0xa5a5_a5a5) as u64)
    } else {
        V::from_u64(x as u64)
    }
}

/// [`key`] of each.
pub fn keys<K: TreeKey>(xs: &[u32]) -> Vec<K> {
    xs.iter().map(|&x| key(x)).collect()
}

/// [`val`] of each.
pub fn vals<V: TreeValue>(xs: &[u32]) -> Vec<V> {
    xs.iter().map(|&x| val(x)).collect()
}

/// The pair (key(k), val(v)).
pub fn pair<K: TreeKey, V: TreeValue>(k: u32, v: u32) -> (K, V) {
    (key(k), val(v))
}

/// The value a test stores under key k: val(k), so that a lookup's answer names its key.
pub fn val_of<K: TreeKey, V: TreeValue>(k: K) -> V {
    let x = k.to_u64();
    val((if std::mem::size_of::<K>() == 8 {
        x >> 32
    } else {
        x
    }) as u32)
}

pub fn tree<K: TreeKey, V: TreeValue>(gpu: &Gpu, tile: u32) -> GpuBTreeMap<K, V> {
    tree_of(gpu, tile, BTreeConfig::default().wide_node_bytes)
}

/// A tree whose 64-bit pairs sit in nodes of `wide_node_bytes` (128 or 256).
pub fn tree_of<K: TreeKey, V: TreeValue>(
    gpu: &Gpu,
    tile: u32,
    wide_node_bytes: u32,
) -> GpuBTreeMap<K, V> {
    GpuBTreeMap::with_config(
        gpu,
        BTreeConfig {
            query_tile: tile,
            wide_node_bytes,
            ..Default::default()
        },
    )
    .expect("tree")
}

/// The tree's contents equal the model's, and the tree is valid.
pub fn same_contents<K: TreeKey, V: TreeValue>(tree: &GpuBTreeMap<K, V>, model: &BTreeMap<K, V>) {
    tree.validate().expect("valid tree");
    let got = tree.to_vec().expect("to_vec");
    let want: Vec<(K, V)> = model.iter().map(|(&k, &v)| (k, v)).collect();
    assert_eq!(got.len(), want.len(), "number of pairs");
    assert!(got == want, "contents differ from the model");
    assert_eq!(tree.len().expect("len"), want.len());
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Insert,
    Remove,
    Get,
    Range,
    Successor,
}

fn kind<K, V>(op: &OrderedOp<K, V>) -> Kind {
    match op {
        OrderedOp::Point(Op::Insert(..)) => Kind::Insert,
        OrderedOp::Point(Op::Remove(_)) => Kind::Remove,
        OrderedOp::Point(Op::Get(_)) => Kind::Get,
        OrderedOp::Range(..) => Kind::Range,
        OrderedOp::Successor(_) => Kind::Successor,
    }
}

fn point_key<K: Copy, V: Copy>(op: &OrderedOp<K, V>) -> Option<K> {
    match op {
        OrderedOp::Point(p) => Some(p.key()),
        _ => None,
    }
}

/// Runs `ops` in phases (runs of one kind, updates of distinct keys), checking every
/// reply against the model, then validates the tree.
pub fn run_phased<K: TreeKey, V: TreeValue>(
    tree: &mut GpuBTreeMap<K, V>,
    model: &mut OrderedMapModel<K, V>,
    ops: &[OrderedOp<K, V>],
) {
    let mut i = 0;
    while i < ops.len() {
        let k = kind(&ops[i]);
        let mut keys = HashSet::new();
        let mut j = i;
        while j < ops.len()
            && kind(&ops[j]) == k
            && point_key(&ops[j]).is_none_or(|key| keys.insert(key))
        {
            j += 1;
        }
        let run = &ops[i..j];
        let want = model.apply(run);
        match k {
            Kind::Insert => {
                let (ks, vs): (Vec<K>, Vec<V>) = run
                    .iter()
                    .map(|op| match op {
                        OrderedOp::Point(Op::Insert(k, v)) => (*k, *v),
                        _ => unreachable!(),
                    })
                    .unzip();
                tree.insert_many(&ks, &vs).expect("insert_many");
            }
            Kind::Remove | Kind::Get => {
                let ks: Vec<K> = run.iter().filter_map(point_key).collect();
                let got = if k == Kind::Remove {
                    tree.remove_many(&ks).expect("remove_many")
                } else {
                    tree.get_many(&ks).expect("get_many")
                };
                for (g, w) in got.iter().zip(&want) {
                    assert_eq!(&OrderedReply::Value(*g), w);
                }
            }
            Kind::Range => {
                let ranges: Vec<(K, K)> = run
                    .iter()
                    .map(|op| match op {
                        OrderedOp::Range(lo, hi) => (*lo, *hi),
                        _ => unreachable!(),
                    })
                    .collect();
                let got = tree.range_many(&ranges).expect("range_many");
                let counts = tree.range_count_many(&ranges).expect("range_count_many");
                // The one-pass form with a capacity that cuts some ranges.
                let cap = 3;
                let (capped, full) = tree
                    .range_many_capped(&ranges, cap)
                    .expect("range_many_capped");
                for (q, w) in want.iter().enumerate() {
                    let OrderedReply::Range(pairs) = w else {
                        unreachable!()
                    };
                    assert_eq!(got.get(q), pairs.as_slice(), "range {:?}", ranges[q]);
                    assert_eq!(counts[q] as usize, pairs.len(), "count {:?}", ranges[q]);
                    let first = &pairs[..pairs.len().min(cap as usize)];
                    assert_eq!(capped.get(q), first, "capped range {:?}", ranges[q]);
                    assert_eq!(
                        full[q] as usize,
                        pairs.len(),
                        "capped count {:?}",
                        ranges[q]
                    );
                }
            }
            Kind::Successor => {
                let ks: Vec<K> = run
                    .iter()
                    .map(|op| match op {
                        OrderedOp::Successor(k) => *k,
                        _ => unreachable!(),
                    })
                    .collect();
                let got = tree.successor_many(&ks).expect("successor_many");
                for (q, (g, w)) in got.iter().zip(&want).enumerate() {
                    assert_eq!(&OrderedReply::Successor(*g), w, "successor of {:?}", ks[q]);
                }
            }
        }
        i = j;
    }
    tree.validate().expect("valid after batch");
    assert_eq!(tree.len().expect("len"), model.len());
}

/// A point operation of a mixed batch and its reply as the per-key checker takes them
/// (`check_map`); `None` for ranges and successors.
pub fn point<K, V>(op: TreeOp<K, V>, reply: TreeReply<K, V>) -> Option<(Op<K, V>, Reply<V>)> {
    match (op, reply) {
        (TreeOp::Insert(k, v), TreeReply::Inserted { replaced }) => {
            Some((Op::Insert(k, v), Reply::Found(replaced)))
        }
        (TreeOp::Remove(k), TreeReply::Removed(v)) => Some((Op::Remove(k), Reply::Value(v))),
        (TreeOp::Get(k), TreeReply::Value(v)) => Some((Op::Get(k), Reply::Value(v))),
        _ => None,
    }
}

/// [`val_of`] of each key.
pub fn vals_of<K: TreeKey, V: TreeValue>(ks: &[K]) -> Vec<V> {
    ks.iter().map(|&k| val_of(k)).collect()
}
