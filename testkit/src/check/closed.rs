//! Closed-form per-key checks for keys with too many operations to search.
//!
//! **Maps with replacing inserts.** Every update moves the key from the state it observed
//! to a state of its own (`Insert(k, v)` to `Some(v)`, `Remove` to `None`); gets change
//! nothing. So a serial order is a walk through states that uses every update once:
//!
//! - when every update's reply names its observed state (`Value`, or `Found(false)`,
//!   which means "absent"), the updates are the edges of a directed multigraph on states,
//!   and an order exists exactly when that graph has an Eulerian trail from the initial
//!   to the final state (in-degree/out-degree balance plus connectivity);
//! - when no update reports anything (`Unknown`), any order is possible, so the final
//!   state must be one that some update writes (or the initial one, if there is none);
//! - in both cases the states visited are the initial one and every update's target, and
//!   each get must observe one of them (it can be placed right after that state appears).
//!
//! Other mixes of replies (some updates reporting, others not) fall to the bounded
//! search, then to the necessary conditions in [`relaxed_map`] and [`relaxed_multimap`],
//! which never reject a correct result but may let a wrong one through (counted as
//! `relaxed` in the [`Verdict`](super::Verdict)).

use std::collections::{HashMap, VecDeque};
use std::fmt::Debug;
use std::hash::Hash;

use super::Reply;
use crate::Op;

type Pair<K, V> = (Op<K, V>, Reply<V>);

/// The state an update moves a map key to.
fn target<K: Copy, V: Copy>(op: &Op<K, V>) -> Option<Option<V>> {
    match *op {
        Op::Insert(_, v) => Some(Some(v)),
        Op::Remove(_) => Some(None),
        Op::Get(_) => None,
    }
}

/// The exact closed form for replacing maps, or `None` when the replies are mixed.
pub(crate) fn replace_map<K, V>(
    ops: &[Pair<K, V>],
    initial: Option<V>,
    gpu_final: Option<V>,
) -> Option<Result<(), String>>
where
    K: Copy + Debug,
    V: Copy + Eq + Hash + Debug,
{
    let updates: Vec<&Pair<K, V>> = ops.iter().filter(|(op, _)| op.is_update()).collect();
    let known = |r: &Reply<V>| match *r {
        Reply::Value(v) => Some(v),
        Reply::Found(false) => Some(None),
        _ => None,
    };
    let all_known = updates.iter().all(|(_, r)| known(r).is_some());
    let all_unknown = updates.iter().all(|(_, r)| *r == Reply::Unknown);
    if !all_known && !all_unknown {
        return None;
    }
    let mut visited: Vec<Option<V>> = vec![initial];
    visited.extend(updates.iter().filter_map(|(op, _)| target(op)));
    if let Some((op, reply)) = ops
        .iter()
        .find(|(op, r)| !op.is_update() && !visited.iter().any(|&s| r.admits(s)))
    {
        return Some(Err(format!(
            "{op:?} replied {reply:?}, a state the key never takes in any order"
        )));
    }
    if updates.is_empty() {
        return Some(same_or(initial, gpu_final));
    }
    if all_unknown {
        return Some(if visited[1..].contains(&gpu_final) {
            Ok(())
        } else {
            Err(format!(
                "final state {gpu_final:?} is written by no operation"
            ))
        });
    }
    let edges: Vec<(Option<V>, Option<V>)> = updates
        .iter()
        .filter_map(|(op, r)| Some((known(r)?, target(op)?)))
        .collect();
    Some(eulerian_trail(&edges, initial, gpu_final))
}

fn same_or<V: PartialEq + Debug>(initial: V, gpu_final: V) -> Result<(), String> {
    if initial == gpu_final {
        Ok(())
    } else {
        Err(format!("no update, yet the state changed to {gpu_final:?}"))
    }
}

/// Whether a trail from `start` to `end` uses every edge exactly once.
fn eulerian_trail<N: Copy + Eq + Hash + Debug>(
    edges: &[(N, N)],
    start: N,
    end: N,
) -> Result<(), String> {
    let mut index: HashMap<N, usize> = HashMap::new();
    let mut id = |n: N| {
        let next = index.len();
        *index.entry(n).or_insert(next)
    };
    let (s, t) = (id(start), id(end));
    let pairs: Vec<(usize, usize)> = edges.iter().map(|&(a, b)| (id(a), id(b))).collect();
    let nodes: Vec<N> = {
        let mut v = vec![start; index.len()];
        for (&n, &i) in &index {
            v[i] = n;
        }
        v
    };
    let mut balance = vec![0i64; nodes.len()];
    let mut parent: Vec<usize> = (0..nodes.len()).collect();
    fn root(parent: &mut [usize], mut x: usize) -> usize {
        while parent[x] != x {
            parent[x] = parent[parent[x]];
            x = parent[x];
        }
        x
    }
    for &(a, b) in &pairs {
        balance[a] += 1;
        balance[b] -= 1;
        let (ra, rb) = (root(&mut parent, a), root(&mut parent, b));
        parent[ra] = rb;
    }
    for (i, &b) in balance.iter().enumerate() {
        let want = i64::from(i == s) - i64::from(i == t);
        if b != want {
            return Err(format!(
                "state {:?} is left {} time(s) more than it is entered (a serial order needs {want})",
                nodes[i], b
            ));
        }
    }
    let rs = root(&mut parent, s);
    if let Some(&(a, _)) = pairs.iter().find(|&&(a, _)| root(&mut parent, a) != rs) {
        return Err(format!(
            "updates observing {:?} can never follow from the initial state",
            nodes[a]
        ));
    }
    Ok(())
}

/// Necessary conditions for a map key: every reply admits a state the key can take
/// (the initial one, a value some insert writes, or absence if something removes), and
/// so does the final state.
pub(crate) fn relaxed_map<K, V>(
    ops: &[Pair<K, V>],
    initial: Option<V>,
    gpu_final: Option<V>,
) -> Result<(), String>
where
    K: Copy + Debug,
    V: Copy + Eq + Debug,
{
    let mut states = vec![initial];
    states.extend(ops.iter().filter_map(|(op, _)| target(op)));
    if let Some((op, reply)) = ops
        .iter()
        .find(|(_, r)| !states.iter().any(|&s| r.admits(s)))
    {
        return Err(format!(
            "{op:?} replied {reply:?}, a state the key never takes"
        ));
    }
    if !states.contains(&gpu_final) {
        return Err(format!(
            "final state {gpu_final:?} is written by no operation"
        ));
    }
    Ok(())
}

/// Necessary conditions for a multimap key: observed values were initial or inserted,
/// the final instances are a sub-multiset of initial plus inserted ones, and their number
/// is the initial count plus the inserts minus at most the removes (exactly the removes
/// that reported finding an instance, at least).
pub(crate) fn relaxed_multimap<K, V>(
    ops: &[Pair<K, V>],
    initial: &VecDeque<V>,
    gpu_final: &VecDeque<V>,
) -> Result<(), String>
where
    K: Copy + Debug,
    V: Copy + Eq + Hash + Debug,
{
    let mut pool: HashMap<V, i64> = HashMap::new();
    for v in initial {
        *pool.entry(*v).or_default() += 1;
    }
    let mut inserts = 0;
    for (op, _) in ops {
        if let Op::Insert(_, v) = *op {
            *pool.entry(v).or_default() += 1;
            inserts += 1;
        }
    }
    if let Some((op, reply)) = ops.iter().find(|(_, r)| match r {
        Reply::Value(Some(v)) => !pool.contains_key(v),
        _ => false,
    }) {
        return Err(format!("{op:?} replied {reply:?}, a value never present"));
    }
    for v in gpu_final {
        let c = pool.entry(*v).or_default();
        *c -= 1;
        if *c < 0 {
            return Err(format!(
                "final value {v:?} appears more often than inserted"
            ));
        }
    }
    let removes = ops
        .iter()
        .filter(|(op, _)| matches!(op, Op::Remove(_)))
        .count();
    let found_removes = ops
        .iter()
        .filter(|(op, r)| {
            matches!(op, Op::Remove(_)) && matches!(r, Reply::Found(true) | Reply::Value(Some(_)))
        })
        .count();
    let most = initial.len() + inserts - found_removes;
    let least = (initial.len() + inserts).saturating_sub(removes);
    if !(least..=most).contains(&gpu_final.len()) {
        return Err(format!(
            "{} final instances, but between {least} and {most} are possible",
            gpu_final.len()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    type P = Pair<u32, u32>;

    #[test]
    fn eulerian_chains_with_cycles() {
        // None -> 1 -> None -> 2, with a get of 1.
        let ops: Vec<P> = vec![
            (Op::Insert(0, 1), Reply::Value(None)),
            (Op::Remove(0), Reply::Value(Some(1))),
            (Op::Insert(0, 2), Reply::Found(false)),
            (Op::Get(0), Reply::Value(Some(1))),
        ];
        assert_eq!(replace_map(&ops, None, Some(2)), Some(Ok(())));
        assert!(matches!(replace_map(&ops, None, Some(1)), Some(Err(_))));
        assert!(matches!(replace_map(&ops, Some(1), Some(2)), Some(Err(_))));
    }

    #[test]
    fn disconnected_cycles_are_rejected() {
        // 5 -> 5 is balanced but unreachable from None.
        let ops: Vec<P> = vec![(Op::Insert(0, 5), Reply::Value(Some(5)))];
        let r = replace_map(&ops, None, None);
        assert!(
            matches!(r, Some(Err(ref e)) if e.contains("never follow")),
            "{r:?}"
        );
    }

    #[test]
    fn unknown_updates_only_need_a_writer_of_the_final_state() {
        let ops: Vec<P> = vec![
            (Op::Insert(0, 1), Reply::Unknown),
            (Op::Remove(0), Reply::Unknown),
            (Op::Get(0), Reply::Value(Some(1))),
        ];
        assert_eq!(replace_map(&ops, Some(9), None), Some(Ok(())));
        assert_eq!(replace_map(&ops, Some(9), Some(1)), Some(Ok(())));
        assert!(matches!(replace_map(&ops, Some(9), Some(9)), Some(Err(_))));
        let mixed: Vec<P> = vec![ops[0], (Op::Remove(0), Reply::Found(true))];
        assert_eq!(replace_map(&mixed, None, None), None);
    }

    #[test]
    fn relaxed_conditions() {
        let ops: Vec<P> = vec![
            (Op::Insert(0, 1), Reply::Unknown),
            (Op::Get(0), Reply::Value(Some(7))),
        ];
        assert!(relaxed_map(&ops, None, Some(1)).is_err());
        assert!(relaxed_map(&ops[..1], None, Some(1)).is_ok());
        let mm: Vec<P> = vec![
            (Op::Insert(0, 1), Reply::Unknown),
            (Op::Insert(0, 2), Reply::Unknown),
            (Op::Remove(0), Reply::Found(true)),
        ];
        let init = VecDeque::from(vec![3]);
        assert!(relaxed_multimap(&mm, &init, &VecDeque::from(vec![1, 2])).is_ok());
        assert!(relaxed_multimap(&mm, &init, &VecDeque::from(vec![1, 2, 3])).is_err());
        assert!(relaxed_multimap(&mm, &init, &VecDeque::from(vec![1, 1])).is_err());
    }
}
