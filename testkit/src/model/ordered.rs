//! An ordered map model over `BTreeMap`, with the B-Tree paper's range and successor
//! queries (Awad, 2022, §3.4).

use std::collections::BTreeMap;

use super::map::{map_step, InsertPolicy};
use crate::{Op, OrderedOp};

/// What an [`OrderedOp`] observes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OrderedReply<K, V> {
    /// A point operation's observation (the key's value before it).
    Value(Option<V>),
    /// A range query's pairs, in key order.
    Range(Vec<(K, V)>),
    /// A successor query's pair.
    Successor(Option<(K, V)>),
}

/// An ordered map model over `BTreeMap`; inserts replace.
///
/// # Examples
/// ```
/// use gpuds_testkit::{Op, OrderedOp, model::{OrderedMapModel, OrderedReply}};
/// let mut m = OrderedMapModel::new();
/// let seen = m.apply(&[
///     Op::Insert(10u32, 1u32).into(), Op::Insert(20, 2).into(), Op::Insert(30, 3).into(),
///     OrderedOp::Range(10, 25), OrderedOp::Successor(20), OrderedOp::Successor(30),
/// ]);
/// assert_eq!(seen[3], OrderedReply::Range(vec![(10, 1), (20, 2)]));
/// assert_eq!(seen[4], OrderedReply::Successor(Some((30, 3))));
/// assert_eq!(seen[5], OrderedReply::Successor(None));
/// ```
#[derive(Clone, Debug)]
pub struct OrderedMapModel<K, V> {
    map: BTreeMap<K, V>,
}

impl<K: Copy + Ord, V: Copy> Default for OrderedMapModel<K, V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Copy + Ord, V: Copy> OrderedMapModel<K, V> {
    /// An empty map.
    pub fn new() -> Self {
        OrderedMapModel {
            map: BTreeMap::new(),
        }
    }

    /// Applies one operation and returns its observation.
    pub fn step(&mut self, op: &OrderedOp<K, V>) -> OrderedReply<K, V> {
        match *op {
            OrderedOp::Point(ref point) => OrderedReply::Value(self.point(point)),
            OrderedOp::Range(lo, hi) => OrderedReply::Range(self.range(lo, hi)),
            OrderedOp::Successor(k) => OrderedReply::Successor(self.successor(k)),
        }
    }

    fn point(&mut self, op: &Op<K, V>) -> Option<V> {
        let key = op.key();
        let mut state = self.map.get(&key).copied();
        let seen = map_step(InsertPolicy::Replace, &mut state, op);
        match state {
            Some(v) => self.map.insert(key, v),
            None => self.map.remove(&key),
        };
        seen
    }

    /// Applies `ops` in order and returns each one's observation.
    pub fn apply(&mut self, ops: &[OrderedOp<K, V>]) -> Vec<OrderedReply<K, V>> {
        ops.iter().map(|op| self.step(op)).collect()
    }

    /// Every pair with `lo <= key <= hi`, in key order (empty when `lo > hi`).
    pub fn range(&self, lo: K, hi: K) -> Vec<(K, V)> {
        if lo > hi {
            return Vec::new();
        }
        self.map.range(lo..=hi).map(|(&k, &v)| (k, v)).collect()
    }

    /// The pair with the smallest key strictly greater than `key`.
    pub fn successor(&self, key: K) -> Option<(K, V)> {
        use std::ops::Bound::{Excluded, Unbounded};
        self.map
            .range((Excluded(key), Unbounded))
            .next()
            .map(|(&k, &v)| (k, v))
    }

    /// The value of `key`.
    pub fn get(&self, key: &K) -> Option<V> {
        self.map.get(key).copied()
    }

    /// The number of keys.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// `true` when no key is present.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The underlying map.
    pub fn as_map(&self) -> &BTreeMap<K, V> {
        &self.map
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_and_successors_follow_updates() {
        let mut m = OrderedMapModel::new();
        let ops: Vec<OrderedOp<u32, u32>> = vec![
            Op::Insert(5, 50).into(),
            Op::Insert(1, 10).into(),
            Op::Insert(9, 90).into(),
            OrderedOp::Range(0, u32::MAX),
            OrderedOp::Range(6, 2),
            OrderedOp::Successor(0),
            Op::Remove(5).into(),
            OrderedOp::Successor(1),
            OrderedOp::Range(5, 5),
            Op::Insert(9, 91).into(),
            OrderedOp::Range(9, 9),
        ];
        let seen = m.apply(&ops);
        assert_eq!(
            seen[3],
            OrderedReply::Range(vec![(1, 10), (5, 50), (9, 90)])
        );
        assert_eq!(seen[4], OrderedReply::Range(vec![]));
        assert_eq!(seen[5], OrderedReply::Successor(Some((1, 10))));
        assert_eq!(seen[6], OrderedReply::Value(Some(50)));
        assert_eq!(seen[7], OrderedReply::Successor(Some((9, 90))));
        assert_eq!(seen[8], OrderedReply::Range(vec![]));
        assert_eq!(seen[9], OrderedReply::Value(Some(90)));
        assert_eq!(seen[10], OrderedReply::Range(vec![(9, 91)]));
        assert_eq!(m.len(), 2);
        assert_eq!(m.get(&9), Some(91));
        assert!(!m.is_empty());
        assert_eq!(m.as_map().len(), 2);
    }
}
