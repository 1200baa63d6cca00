//! The exact per-key check: a bounded search for a serial order of one key's operations.
//!
//! Operations that are identical (same operation, same reply) are interchangeable, so the
//! search walks over how many of each class remain rather than over permutations. Gets
//! never change the state, so a get is placed as soon as the state matches its reply
//! (never a wrong choice); only updates branch. Failed (remaining, state) pairs are
//! remembered. The search gives up after a budget of expansions.

use std::collections::{HashSet, VecDeque};
use std::fmt::Debug;
use std::hash::Hash;

use super::Reply;
use crate::model::{map_step, multimap_step, InsertPolicy};
use crate::Op;

/// The per-key meaning of a structure's operations.
pub(crate) trait Semantics<K, V> {
    /// One key's state.
    type State: Clone + Eq + Hash + Debug;
    /// Applies `op`, returning its observation.
    fn step(&self, state: &mut Self::State, op: &Op<K, V>) -> Option<V>;
    /// Whether the search's final state equals the GPU's.
    fn matches_final(&self, state: &Self::State, gpu_final: &Self::State) -> bool;
}

/// One value per key.
pub(crate) struct MapSemantics(pub InsertPolicy);

impl<K, V: Copy + Eq + Hash + Debug> Semantics<K, V> for MapSemantics {
    type State = Option<V>;
    fn step(&self, state: &mut Option<V>, op: &Op<K, V>) -> Option<V> {
        map_step(self.0, state, op)
    }
    fn matches_final(&self, state: &Option<V>, gpu_final: &Option<V>) -> bool {
        state == gpu_final
    }
}

/// Instances per key, least recent first; the GPU's final instances are compared as a
/// multiset (their physical order says nothing about insertion order).
pub(crate) struct MultimapSemantics;

impl<K, V: Copy + Eq + Hash + Debug> Semantics<K, V> for MultimapSemantics {
    type State = VecDeque<V>;
    fn step(&self, state: &mut VecDeque<V>, op: &Op<K, V>) -> Option<V> {
        multimap_step(state, op)
    }
    fn matches_final(&self, state: &VecDeque<V>, gpu_final: &VecDeque<V>) -> bool {
        same_multiset(state.iter(), gpu_final.iter())
    }
}

pub(crate) fn same_multiset<'a, V: Eq + Hash + 'a>(
    a: impl Iterator<Item = &'a V>,
    b: impl Iterator<Item = &'a V>,
) -> bool {
    let mut counts = std::collections::HashMap::new();
    for v in a {
        *counts.entry(v).or_insert(0i64) += 1;
    }
    for v in b {
        *counts.entry(v).or_insert(0i64) -= 1;
    }
    counts.values().all(|&c| c == 0)
}

/// The search's answer.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Search {
    /// Some serial order explains every reply and the final state.
    Explained,
    /// No serial order does.
    Impossible,
    /// The budget ran out first.
    Exhausted,
}

/// Keys with more operations than this are not searched (the recursion is that deep).
pub(crate) const MAX_SEARCH_OPS: usize = 2048;

struct Class<K, V> {
    op: Op<K, V>,
    reply: Reply<V>,
}

struct Walk<'a, K, V, S: Semantics<K, V>> {
    sem: &'a S,
    classes: Vec<Class<K, V>>,
    remaining: Vec<u32>,
    failed: HashSet<(Vec<u32>, S::State)>,
    gpu_final: &'a S::State,
    budget: usize,
}

/// Searches for a serial order of `ops` (with their replies) that starts from `initial`
/// and ends in `gpu_final`.
pub(crate) fn search<K, V, S>(
    sem: &S,
    ops: &[(Op<K, V>, Reply<V>)],
    initial: S::State,
    gpu_final: &S::State,
    budget: usize,
) -> Search
where
    K: Copy + Eq,
    V: Copy + Eq,
    S: Semantics<K, V>,
{
    if ops.len() > MAX_SEARCH_OPS {
        return Search::Exhausted;
    }
    let mut classes: Vec<Class<K, V>> = Vec::new();
    let mut remaining: Vec<u32> = Vec::new();
    for &(op, reply) in ops {
        match classes.iter().position(|c| c.op == op && c.reply == reply) {
            Some(i) => remaining[i] += 1,
            None => {
                classes.push(Class { op, reply });
                remaining.push(1);
            }
        }
    }
    let mut walk = Walk {
        sem,
        classes,
        remaining,
        failed: HashSet::new(),
        gpu_final,
        budget,
    };
    match walk.dfs(initial, ops.len()) {
        Some(true) => Search::Explained,
        Some(false) => Search::Impossible,
        None => Search::Exhausted,
    }
}

impl<K: Copy, V: Copy + PartialEq, S: Semantics<K, V>> Walk<'_, K, V, S> {
    /// `Some(found)`, or `None` when the budget ran out.
    fn dfs(&mut self, state: S::State, mut left: usize) -> Option<bool> {
        // Place every get that the current state satisfies.
        let mut placed = Vec::new();
        for i in 0..self.classes.len() {
            let class = &self.classes[i];
            if self.remaining[i] > 0 && matches!(class.op, Op::Get(_)) {
                let seen = self.sem.step(&mut state.clone(), &class.op);
                if class.reply.admits(seen) {
                    placed.push((i, self.remaining[i]));
                    left -= self.remaining[i] as usize;
                    self.remaining[i] = 0;
                }
            }
        }
        let found = self.branch(state, left);
        for (i, n) in placed {
            self.remaining[i] = n;
        }
        found
    }

    fn branch(&mut self, state: S::State, left: usize) -> Option<bool> {
        if left == 0 {
            return Some(self.sem.matches_final(&state, self.gpu_final));
        }
        let memo = (self.remaining.clone(), state);
        if self.failed.contains(&memo) {
            return Some(false);
        }
        if self.budget == 0 {
            return None;
        }
        self.budget -= 1;
        let state = &memo.1;
        for i in 0..self.classes.len() {
            let class = &self.classes[i];
            if self.remaining[i] == 0 || matches!(class.op, Op::Get(_)) {
                continue;
            }
            let mut next = state.clone();
            let seen = self.sem.step(&mut next, &class.op);
            if !class.reply.admits(seen) {
                continue;
            }
            self.remaining[i] -= 1;
            let found = self.dfs(next, left - 1);
            self.remaining[i] += 1;
            if found != Some(false) {
                return found;
            }
        }
        self.failed.insert(memo);
        Some(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(ops: &[(Op<u32, u32>, Reply<u32>)], initial: Option<u32>, fin: Option<u32>) -> Search {
        search(
            &MapSemantics(InsertPolicy::Replace),
            ops,
            initial,
            &fin,
            10_000,
        )
    }

    #[test]
    fn finds_the_order_behind_a_chain_of_replaces() {
        let ops = [
            (Op::Insert(1, 3), Reply::Value(Some(2))),
            (Op::Get(1), Reply::Value(Some(2))),
            (Op::Insert(1, 2), Reply::Value(None)),
            (Op::Remove(1), Reply::Value(Some(3))),
        ];
        assert_eq!(map(&ops, None, None), Search::Explained);
        assert_eq!(map(&ops, None, Some(3)), Search::Impossible);
        assert_eq!(map(&ops, Some(2), None), Search::Impossible);
    }

    #[test]
    fn many_identical_ops_are_cheap() {
        let mut ops = vec![(Op::Remove(1), Reply::Found(false)); 1000];
        ops.push((Op::Remove(1), Reply::Found(true)));
        ops.extend(vec![(Op::Get(1), Reply::Value(Some(5))); 1000]);
        assert_eq!(map(&ops, Some(5), None), Search::Explained);
        assert_eq!(map(&ops, None, None), Search::Impossible);
    }

    #[test]
    fn budget_runs_out_on_hard_cases() {
        let ops: Vec<_> = (0..40)
            .map(|v| (Op::Insert(1, v), Reply::Unknown))
            .collect();
        let r = search(
            &MapSemantics(InsertPolicy::Replace),
            &ops,
            None,
            &Some(1000),
            100,
        );
        assert_eq!(r, Search::Exhausted);
    }
}
