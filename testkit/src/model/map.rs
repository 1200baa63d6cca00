//! Map and set models: one value per key.

use std::collections::HashMap;
use std::hash::Hash;

use crate::Op;

/// What an insert does when its key is already present.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum InsertPolicy {
    /// Replace the value (the slab hash's REPLACE, the B-Tree's insert).
    #[default]
    Replace,
    /// Keep the present value (insert-if-absent).
    KeepExisting,
}

/// The effect of `op` on one key's value `state`; returns what `op` observes (the value
/// before it).
///
/// # Examples
/// ```
/// use gpuds_testkit::{Op, model::{map_step, InsertPolicy}};
/// let mut v = Some(1u32);
/// assert_eq!(map_step(InsertPolicy::KeepExisting, &mut v, &Op::Insert(7u32, 2)), Some(1));
/// assert_eq!(v, Some(1));
/// assert_eq!(map_step(InsertPolicy::Replace, &mut v, &Op::Insert(7, 2)), Some(1));
/// assert_eq!(v, Some(2));
/// assert_eq!(map_step(InsertPolicy::Replace, &mut v, &Op::Remove(7)), Some(2));
/// assert_eq!(v, None);
/// ```
pub fn map_step<K, V: Copy>(
    policy: InsertPolicy,
    state: &mut Option<V>,
    op: &Op<K, V>,
) -> Option<V> {
    let before = *state;
    match *op {
        Op::Insert(_, v) => {
            if policy == InsertPolicy::Replace || before.is_none() {
                *state = Some(v);
            }
        }
        Op::Remove(_) => *state = None,
        Op::Get(_) => {}
    }
    before
}

/// A map model over `HashMap`.
///
/// # Examples
/// ```
/// use gpuds_testkit::{Op, model::MapModel};
/// let mut m = MapModel::new();
/// let seen = m.apply(&[Op::Insert(1u32, 10u32), Op::Get(1), Op::Insert(1, 11), Op::Remove(1), Op::Get(1)]);
/// assert_eq!(seen, vec![None, Some(10), Some(10), Some(11), None]);
/// assert!(m.is_empty());
/// ```
#[derive(Clone, Debug)]
pub struct MapModel<K, V> {
    policy: InsertPolicy,
    map: HashMap<K, V>,
}

impl<K: Copy + Eq + Hash, V: Copy> Default for MapModel<K, V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Copy + Eq + Hash, V: Copy> MapModel<K, V> {
    /// An empty map whose inserts replace.
    pub fn new() -> Self {
        Self::with_policy(InsertPolicy::Replace)
    }

    /// An empty map with the given insert policy.
    pub fn with_policy(policy: InsertPolicy) -> Self {
        MapModel {
            policy,
            map: HashMap::new(),
        }
    }

    /// A map holding `pairs` (later pairs win under [`InsertPolicy::Replace`]).
    pub fn from_pairs(policy: InsertPolicy, pairs: impl IntoIterator<Item = (K, V)>) -> Self {
        let mut m = Self::with_policy(policy);
        for (k, v) in pairs {
            m.step(&Op::Insert(k, v));
        }
        m
    }

    /// Applies one operation and returns its observation.
    pub fn step(&mut self, op: &Op<K, V>) -> Option<V> {
        let key = op.key();
        let mut state = self.map.get(&key).copied();
        let seen = map_step(self.policy, &mut state, op);
        match state {
            Some(v) => self.map.insert(key, v),
            None => self.map.remove(&key),
        };
        seen
    }

    /// Applies `ops` in order and returns each one's observation.
    pub fn apply(&mut self, ops: &[Op<K, V>]) -> Vec<Option<V>> {
        ops.iter().map(|op| self.step(op)).collect()
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
    pub fn as_map(&self) -> &HashMap<K, V> {
        &self.map
    }
}

/// A set model: a [`MapModel`] with `()` values whose operations observe whether the key
/// was present.
///
/// # Examples
/// ```
/// use gpuds_testkit::{Op, model::SetModel};
/// let mut s = SetModel::new();
/// assert_eq!(s.apply(&[Op::Insert(3u64, ()), Op::Insert(3, ()), Op::Get(4), Op::Remove(3)]),
///            vec![false, true, false, true]);
/// assert!(!s.contains(&3));
/// ```
#[derive(Clone, Debug)]
pub struct SetModel<K> {
    map: MapModel<K, ()>,
}

impl<K: Copy + Eq + Hash> Default for SetModel<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Copy + Eq + Hash> SetModel<K> {
    /// An empty set.
    pub fn new() -> Self {
        SetModel {
            map: MapModel::new(),
        }
    }

    /// Applies `ops` in order; each observes whether its key was present before it.
    pub fn apply(&mut self, ops: &[Op<K, ()>]) -> Vec<bool> {
        ops.iter().map(|op| self.map.step(op).is_some()).collect()
    }

    /// `true` when `key` is present.
    pub fn contains(&self, key: &K) -> bool {
        self.map.get(key).is_some()
    }

    /// The number of keys.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// `true` when no key is present.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keep_existing_ignores_second_insert() {
        let mut m = MapModel::with_policy(InsertPolicy::KeepExisting);
        let seen = m.apply(&[Op::Insert(1u32, 1u32), Op::Insert(1, 2), Op::Get(1)]);
        assert_eq!(seen, vec![None, Some(1), Some(1)]);
        assert_eq!(m.get(&1), Some(1));
    }

    #[test]
    fn keys_are_independent() {
        let mut m = MapModel::from_pairs(InsertPolicy::Replace, [(1u32, 1u32), (2, 2), (1, 3)]);
        assert_eq!(m.len(), 2);
        assert_eq!(
            m.apply(&[Op::Remove(2), Op::Get(1), Op::Get(2), Op::Remove(2)]),
            vec![Some(2), Some(3), None, None]
        );
        assert_eq!(m.as_map().len(), 1);
    }

    #[test]
    fn set_tracks_presence() {
        let mut s = SetModel::new();
        assert!(s.is_empty());
        assert_eq!(
            s.apply(&[Op::Insert(1u32, ()), Op::Get(1), Op::Remove(1), Op::Get(1)]),
            vec![false, true, true, false]
        );
        assert_eq!(s.len(), 0);
    }
}
