//! Code shared by the GPU tests.
#![allow(dead_code)]

use std::collections::{BTreeMap, HashSet};

use gpuds_btree::{BTreeConfig, GpuBTreeMap, TreeOp, TreeReply};
use gpuds_core::Gpu;
use gpuds_testkit::check::Reply;
use gpuds_testkit::model::{OrderedMapModel, OrderedReply};
use gpuds_testkit::{Op, OrderedOp};

pub fn tree(gpu: &Gpu, tile: u32) -> GpuBTreeMap<u32, u32> {
    GpuBTreeMap::with_config(
        gpu,
        BTreeConfig {
            query_tile: tile,
            ..Default::default()
        },
    )
    .expect("tree")
}

/// The tree's contents equal the model's, and the tree is valid.
pub fn same_contents(tree: &GpuBTreeMap<u32, u32>, model: &BTreeMap<u32, u32>) {
    tree.validate().expect("valid tree");
    let got = tree.to_vec().expect("to_vec");
    let want: Vec<(u32, u32)> = model.iter().map(|(&k, &v)| (k, v)).collect();
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

fn kind(op: &OrderedOp<u32, u32>) -> Kind {
    match op {
        OrderedOp::Point(Op::Insert(..)) => Kind::Insert,
        OrderedOp::Point(Op::Remove(_)) => Kind::Remove,
        OrderedOp::Point(Op::Get(_)) => Kind::Get,
        OrderedOp::Range(..) => Kind::Range,
        OrderedOp::Successor(_) => Kind::Successor,
    }
}

fn point_key(op: &OrderedOp<u32, u32>) -> Option<u32> {
    match op {
        OrderedOp::Point(p) => Some(p.key()),
        _ => None,
    }
}

/// Runs `ops` in phases (runs of one kind, updates of distinct keys), checking every
/// reply against the model, then validates the tree.
pub fn run_phased(
    tree: &mut GpuBTreeMap<u32, u32>,
    model: &mut OrderedMapModel<u32, u32>,
    ops: &[OrderedOp<u32, u32>],
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
                let (ks, vs): (Vec<u32>, Vec<u32>) = run
                    .iter()
                    .map(|op| match op {
                        OrderedOp::Point(Op::Insert(k, v)) => (*k, *v),
                        _ => unreachable!(),
                    })
                    .unzip();
                tree.insert_many(&ks, &vs).expect("insert_many");
            }
            Kind::Remove | Kind::Get => {
                let ks: Vec<u32> = run.iter().filter_map(point_key).collect();
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
                let ranges: Vec<(u32, u32)> = run
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
                let ks: Vec<u32> = run
                    .iter()
                    .map(|op| match op {
                        OrderedOp::Successor(k) => *k,
                        _ => unreachable!(),
                    })
                    .collect();
                let got = tree.successor_many(&ks).expect("successor_many");
                for (q, (g, w)) in got.iter().zip(&want).enumerate() {
                    assert_eq!(&OrderedReply::Successor(*g), w, "successor of {}", ks[q]);
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
pub fn point(
    op: TreeOp<u32, u32>,
    reply: TreeReply<u32, u32>,
) -> Option<(Op<u32, u32>, Reply<u32>)> {
    match (op, reply) {
        (TreeOp::Insert(k, v), TreeReply::Inserted { replaced }) => {
            Some((Op::Insert(k, v), Reply::Found(replaced)))
        }
        (TreeOp::Remove(k), TreeReply::Removed(v)) => Some((Op::Remove(k), Reply::Value(v))),
        (TreeOp::Get(k), TreeReply::Value(v)) => Some((Op::Get(k), Reply::Value(v))),
        _ => None,
    }
}
