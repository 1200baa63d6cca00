//! A multimap model with the slab list's duplicate-key semantics (Ashkiani et al.,
//! 2018, §III-B): INSERT adds an instance even when the key is present, DELETE removes
//! the *least recently inserted* instance, SEARCH returns the least recent instance.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;

use crate::Op;

/// The effect of `op` on one key's instances, least recent first; returns what `op`
/// observes (the least recent instance before it).
///
/// # Examples
/// ```
/// use std::collections::VecDeque;
/// use gpuds_testkit::{Op, model::multimap_step};
/// let mut vs = VecDeque::new();
/// multimap_step(&mut vs, &Op::Insert(1u32, 10u32));
/// multimap_step(&mut vs, &Op::Insert(1, 20));
/// assert_eq!(multimap_step(&mut vs, &Op::Remove(1)), Some(10));
/// assert_eq!(multimap_step(&mut vs, &Op::Get(1)), Some(20));
/// ```
pub fn multimap_step<K, V: Copy>(instances: &mut VecDeque<V>, op: &Op<K, V>) -> Option<V> {
    let least_recent = instances.front().copied();
    match *op {
        Op::Insert(_, v) => instances.push_back(v),
        Op::Remove(_) => {
            instances.pop_front();
        }
        Op::Get(_) => {}
    }
    least_recent
}

/// A multimap model over `HashMap<K, VecDeque<V>>`.
///
/// # Examples
/// ```
/// use gpuds_testkit::{Op, model::MultimapModel};
/// let mut m = MultimapModel::new();
/// let seen = m.apply(&[Op::Insert(1u32, 10u32), Op::Insert(1, 20), Op::Get(1), Op::Remove(1), Op::Get(1)]);
/// assert_eq!(seen, vec![None, Some(10), Some(10), Some(10), Some(20)]);
/// assert_eq!(m.get_all(&1), vec![20]);
/// ```
#[derive(Clone, Debug)]
pub struct MultimapModel<K, V> {
    map: HashMap<K, VecDeque<V>>,
    len: usize,
}

impl<K: Copy + Eq + Hash, V: Copy> Default for MultimapModel<K, V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Copy + Eq + Hash, V: Copy> MultimapModel<K, V> {
    /// An empty multimap.
    pub fn new() -> Self {
        MultimapModel {
            map: HashMap::new(),
            len: 0,
        }
    }

    /// Applies one operation and returns its observation.
    pub fn step(&mut self, op: &Op<K, V>) -> Option<V> {
        let key = op.key();
        let instances = self.map.entry(key).or_default();
        let before = instances.len();
        let seen = multimap_step(instances, op);
        self.len = self.len + instances.len() - before;
        if instances.is_empty() {
            self.map.remove(&key);
        }
        seen
    }

    /// Applies `ops` in order and returns each one's observation.
    pub fn apply(&mut self, ops: &[Op<K, V>]) -> Vec<Option<V>> {
        ops.iter().map(|op| self.step(op)).collect()
    }

    /// Every instance of `key`, least recent first (the slab list's SEARCHALL).
    pub fn get_all(&self, key: &K) -> Vec<V> {
        self.map
            .get(key)
            .map_or_else(Vec::new, |vs| vs.iter().copied().collect())
    }

    /// The number of instances of all keys.
    pub fn len(&self) -> usize {
        self.len
    }

    /// `true` when no instance is present.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The underlying map, instances least recent first.
    pub fn as_map(&self) -> &HashMap<K, VecDeque<V>> {
        &self.map
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn least_recent_instance_is_deleted_and_found() {
        let mut m = MultimapModel::new();
        let ops = [
            Op::Insert(5u32, 1u32),
            Op::Insert(5, 2),
            Op::Insert(5, 3),
            Op::Insert(6, 9),
            Op::Remove(5),
            Op::Get(5),
            Op::Remove(5),
            Op::Remove(5),
            Op::Remove(5),
            Op::Get(6),
        ];
        let seen = m.apply(&ops);
        assert_eq!(
            seen,
            vec![
                None,
                Some(1),
                Some(1),
                None,
                Some(1),
                Some(2),
                Some(2),
                Some(3),
                None,
                Some(9)
            ]
        );
        assert_eq!(m.len(), 1);
        assert!(m.get_all(&5).is_empty());
        assert!(!m.as_map().contains_key(&5));
        assert!(!m.is_empty());
    }
}
