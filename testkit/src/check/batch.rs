//! Whole-batch checks: split the batch by key and decide each key on its own.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt::Debug;
use std::hash::Hash;

use super::closed::{relaxed_map, relaxed_multimap, replace_map};
use super::search::{search, MapSemantics, MultimapSemantics, Search, Semantics};
use super::{Mismatch, Reply, Verdict};
use crate::model::InsertPolicy;
use crate::Op;

/// Search expansions allowed per key before falling back to necessary conditions.
pub const SEARCH_BUDGET: usize = 20_000;

type Pair<K, V> = (Op<K, V>, Reply<V>);
/// A per-key decision from the key's operations, initial and final state.
type Decide<'a, K, V, S, R> = &'a dyn Fn(&[Pair<K, V>], &S, &S) -> R;

/// How one structure family decides a key: its semantics, an optional closed form and
/// the necessary conditions used past the search budget.
struct Family<'a, K, V, S: Semantics<K, V>> {
    sem: S,
    closed: Decide<'a, K, V, S::State, Option<Result<(), String>>>,
    relaxed: Decide<'a, K, V, S::State, Result<(), String>>,
}

fn check_keys<K, V, S>(
    family: &Family<'_, K, V, S>,
    ops: &[Op<K, V>],
    replies: &[Reply<V>],
    state_before: &dyn Fn(&K) -> S::State,
    state_after: &dyn Fn(&K) -> S::State,
    other_keys: &mut dyn Iterator<Item = K>,
) -> Result<Verdict, Mismatch<K>>
where
    K: Copy + Eq + Hash + Debug,
    V: Copy + Eq + Hash + Debug,
    S: Semantics<K, V>,
{
    assert_eq!(ops.len(), replies.len(), "one reply per operation");
    let mut order: Vec<K> = Vec::new();
    let mut by_key: HashMap<K, Vec<usize>> = HashMap::new();
    for (i, op) in ops.iter().enumerate() {
        by_key
            .entry(op.key())
            .or_insert_with(|| {
                order.push(op.key());
                Vec::new()
            })
            .push(i);
    }
    let mut verdict = Verdict::default();
    for key in &order {
        let indices = &by_key[key];
        let pairs: Vec<Pair<K, V>> = indices.iter().map(|&i| (ops[i], replies[i])).collect();
        let (before, after) = (state_before(key), state_after(key));
        let mismatch = |reason: String| Mismatch {
            key: *key,
            ops: indices
                .iter()
                .map(|&i| format!("#{i} {:?} -> {:?}", ops[i], replies[i]))
                .collect(),
            initial: format!("{before:?}"),
            final_state: format!("{after:?}"),
            reason,
        };
        verdict.keys += 1;
        if let Some(result) = (family.closed)(&pairs, &before, &after) {
            result.map_err(mismatch)?;
            verdict.exact += 1;
            continue;
        }
        match search(&family.sem, &pairs, before.clone(), &after, SEARCH_BUDGET) {
            Search::Explained => verdict.exact += 1,
            Search::Impossible => return Err(mismatch(
                "no serial order of these operations explains their replies and the final state"
                    .into(),
            )),
            Search::Exhausted => {
                (family.relaxed)(&pairs, &before, &after).map_err(mismatch)?;
                verdict.relaxed += 1;
            }
        }
    }
    for key in other_keys {
        if by_key.contains_key(&key) {
            continue;
        }
        let (before, after) = (state_before(&key), state_after(&key));
        if !family.sem.matches_final(&before, &after) {
            return Err(Mismatch {
                key,
                ops: Vec::new(),
                initial: format!("{before:?}"),
                final_state: format!("{after:?}"),
                reason: "no operation touched this key, yet its state changed".into(),
            });
        }
        verdict.keys += 1;
        verdict.exact += 1;
    }
    Ok(verdict)
}

/// Checks a batch that ran concurrently on a map: accepted when some serial order of
/// `ops`, starting from `initial`, gives every reply in `replies` (one per operation) and
/// ends in `gpu_final`. Keys are independent (operations on different keys commute), so
/// each key is decided alone: by a closed form for replacing maps where one applies, by
/// an exhaustive search otherwise, and past [`SEARCH_BUDGET`] by necessary conditions
/// (counted in [`Verdict::relaxed`]). Keys outside the batch must be unchanged.
///
/// # Examples
/// ```
/// use std::collections::HashMap;
/// use gpuds_testkit::{Op, check::{check_map, Reply}, model::InsertPolicy};
/// let ops = [Op::Insert(1u32, 10u32), Op::Get(1), Op::Remove(2)];
/// let initial = HashMap::from([(2, 20)]);
/// let gpu_final = HashMap::from([(1, 10)]);
/// // The get ran before the insert: fine.
/// let replies = [Reply::Unknown, Reply::Value(None), Reply::Found(true)];
/// assert!(check_map(InsertPolicy::Replace, &ops, &replies, &initial, &gpu_final).is_ok());
/// // A get can never see 11.
/// let wrong = [Reply::Unknown, Reply::Value(Some(11)), Reply::Found(true)];
/// let err = check_map(InsertPolicy::Replace, &ops, &wrong, &initial, &gpu_final).unwrap_err();
/// assert_eq!(err.key, 1);
/// ```
pub fn check_map<K, V>(
    policy: InsertPolicy,
    ops: &[Op<K, V>],
    replies: &[Reply<V>],
    initial: &HashMap<K, V>,
    gpu_final: &HashMap<K, V>,
) -> Result<Verdict, Mismatch<K>>
where
    K: Copy + Eq + Hash + Debug,
    V: Copy + Eq + Hash + Debug,
{
    let closed = |pairs: &[Pair<K, V>], a: &Option<V>, b: &Option<V>| match policy {
        InsertPolicy::Replace => replace_map(pairs, *a, *b),
        InsertPolicy::KeepExisting => None,
    };
    let relaxed = |pairs: &[Pair<K, V>], a: &Option<V>, b: &Option<V>| relaxed_map(pairs, *a, *b);
    let family = Family {
        sem: MapSemantics(policy),
        closed: &closed,
        relaxed: &relaxed,
    };
    check_keys(
        &family,
        ops,
        replies,
        &|k| initial.get(k).copied(),
        &|k| gpu_final.get(k).copied(),
        &mut initial.keys().chain(gpu_final.keys()).copied(),
    )
}

/// [`check_map`] for sets: replies are usually `Found(bool)` (`Reply<()>`).
///
/// # Examples
/// ```
/// use std::collections::HashSet;
/// use gpuds_testkit::{Op, check::{check_set, Reply}};
/// let ops = [Op::Insert(1u32, ()), Op::Insert(1, ())];
/// let fin = HashSet::from([1]);
/// // Exactly one of two concurrent inserts of a new key finds it present.
/// assert!(check_set(&ops, &[Reply::Found(false), Reply::Found(true)], &HashSet::new(), &fin).is_ok());
/// assert!(check_set(&ops, &[Reply::Found(false), Reply::Found(false)], &HashSet::new(), &fin).is_err());
/// ```
pub fn check_set<K>(
    ops: &[Op<K, ()>],
    replies: &[Reply<()>],
    initial: &HashSet<K>,
    gpu_final: &HashSet<K>,
) -> Result<Verdict, Mismatch<K>>
where
    K: Copy + Eq + Hash + Debug,
{
    let as_map = |s: &HashSet<K>| s.iter().map(|&k| (k, ())).collect::<HashMap<K, ()>>();
    check_map(
        InsertPolicy::Replace,
        ops,
        replies,
        &as_map(initial),
        &as_map(gpu_final),
    )
}

/// Checks a batch that ran concurrently on a multimap with the slab list's semantics
/// (see [`MultimapModel`](crate::model::MultimapModel)). `initial` lists each key's
/// instances least recent first; `gpu_final` lists them in any order (compared as
/// multisets). Otherwise as [`check_map`]; there is no closed form, so keys past the
/// search budget are judged by necessary conditions.
///
/// # Examples
/// ```
/// use std::collections::HashMap;
/// use gpuds_testkit::{Op, check::{check_multimap, Reply}};
/// let ops = [Op::Insert(1u32, 10u32), Op::Insert(1, 20), Op::Remove(1)];
/// let initial = HashMap::new();
/// // The remove ran between the inserts (it removed 10) or after both (also 10).
/// let replies = [Reply::Unknown, Reply::Unknown, Reply::Value(Some(10))];
/// assert!(check_multimap(&ops, &replies, &initial, &HashMap::from([(1, vec![20])])).is_ok());
/// assert!(check_multimap(&ops, &replies, &initial, &HashMap::from([(1, vec![10])])).is_err());
/// ```
pub fn check_multimap<K, V>(
    ops: &[Op<K, V>],
    replies: &[Reply<V>],
    initial: &HashMap<K, Vec<V>>,
    gpu_final: &HashMap<K, Vec<V>>,
) -> Result<Verdict, Mismatch<K>>
where
    K: Copy + Eq + Hash + Debug,
    V: Copy + Eq + Hash + Debug,
{
    let closed = |_: &[Pair<K, V>], _: &VecDeque<V>, _: &VecDeque<V>| None;
    let relaxed =
        |pairs: &[Pair<K, V>], a: &VecDeque<V>, b: &VecDeque<V>| relaxed_multimap(pairs, a, b);
    let family = Family {
        sem: MultimapSemantics,
        closed: &closed,
        relaxed: &relaxed,
    };
    let state = |m: &HashMap<K, Vec<V>>, k: &K| {
        m.get(k)
            .map_or_else(VecDeque::new, |v| v.iter().copied().collect())
    };
    check_keys(
        &family,
        ops,
        replies,
        &|k| state(initial, k),
        &|k| state(gpu_final, k),
        &mut initial.keys().chain(gpu_final.keys()).copied(),
    )
}
