//! The checker against brute force: for random small batches, a result is accepted
//! exactly when some permutation of the whole batch produces it.

use std::collections::{HashMap, HashSet, VecDeque};

use proptest::prelude::*;
use rand::rngs::ChaCha8Rng;
use rand::seq::{IndexedRandom, SliceRandom};
use rand::{RngExt, SeedableRng};

use super::*;
use crate::model::{map_step, multimap_step, InsertPolicy, MapModel, MultimapModel};
use crate::strategy::{map_op, multimap_op, small_keys, small_values};
use crate::Op;

type M = HashMap<u32, u32>;

/// Replies as the GPU would report them: full values, presence flags, or nothing for
/// updates (gets always report), chosen by `style`.
fn project(ops: &[Op<u32, u32>], seen: &[Option<u32>], style: u8) -> Vec<Reply<u32>> {
    ops.iter()
        .zip(seen)
        .map(|(op, &s)| match (style, op.is_update()) {
            (0, _) => Reply::Value(s),
            (1, _) => Reply::Found(s.is_some()),
            (_, true) => Reply::Unknown,
            (_, false) => Reply::Value(s),
        })
        .collect()
}

/// Runs `ops` serially in the order `perm`, giving per-op observations (in batch order)
/// and the final map.
fn run_map(
    policy: InsertPolicy,
    ops: &[Op<u32, u32>],
    perm: &[usize],
    initial: &M,
) -> (Vec<Option<u32>>, M) {
    let mut model = MapModel::from_pairs(policy, initial.iter().map(|(&k, &v)| (k, v)));
    let mut seen = vec![None; ops.len()];
    for &i in perm {
        seen[i] = model.step(&ops[i]);
    }
    (seen, model.as_map().clone())
}

fn permutations(n: usize) -> Vec<Vec<usize>> {
    if n == 0 {
        return vec![vec![]];
    }
    let mut out = Vec::new();
    for p in permutations(n - 1) {
        for at in 0..=p.len() {
            let mut q = p.clone();
            q.insert(at, n - 1);
            out.push(q);
        }
    }
    out
}

/// Whether some serial order explains `replies` and `fin`, by trying them all.
fn brute_force_map(
    policy: InsertPolicy,
    ops: &[Op<u32, u32>],
    replies: &[Reply<u32>],
    initial: &M,
    fin: &M,
) -> bool {
    permutations(ops.len()).iter().any(|perm| {
        let (seen, end) = run_map(policy, ops, perm, initial);
        &end == fin && replies.iter().zip(&seen).all(|(r, &s)| r.admits(s))
    })
}

fn initial_map(keys: &[u32], seed: u64) -> M {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out = M::new();
    for &k in keys {
        if rng.random_bool(0.5) {
            out.insert(k, rng.random_range(1..4));
        }
    }
    out
}

/// A plausible but possibly wrong result: one reply or the final value of one key
/// changed to another small value.
fn plant(replies: &mut [Reply<u32>], fin: &mut M, keys: &[u32], seed: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let value = [None, Some(1), Some(2), Some(3)][rng.random_range(0..4)];
    if replies.is_empty() || rng.random_bool(0.3) {
        let k = *keys.choose(&mut rng).unwrap_or(&0);
        match value {
            Some(v) => fin.insert(k, v),
            None => fin.remove(&k),
        };
    } else {
        let i = rng.random_range(0..replies.len());
        replies[i] = match replies[i] {
            Reply::Found(f) => Reply::Found(!f),
            _ => Reply::Value(value),
        };
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn every_serial_order_is_accepted(
        ops in proptest::collection::vec(map_op(small_keys::<u32>(3, &[]), small_values::<u32>(3)), 0..24),
        seed in any::<u64>(), style in 0u8..3, keep in any::<bool>(),
    ) {
        let policy = if keep { InsertPolicy::KeepExisting } else { InsertPolicy::Replace };
        let keys = small_keys::<u32>(3, &[]);
        let initial = initial_map(&keys, seed);
        let mut perm: Vec<usize> = (0..ops.len()).collect();
        perm.shuffle(&mut ChaCha8Rng::seed_from_u64(seed));
        let (seen, fin) = run_map(policy, &ops, &perm, &initial);
        let replies = project(&ops, &seen, style);
        let verdict = check_map(policy, &ops, &replies, &initial, &fin);
        prop_assert!(verdict.is_ok(), "{}", verdict.unwrap_err());
    }

    #[test]
    fn decisions_match_brute_force(
        ops in proptest::collection::vec(map_op(small_keys::<u32>(2, &[]), small_values::<u32>(2)), 0..7),
        seed in any::<u64>(), style in 0u8..3, keep in any::<bool>(),
    ) {
        let policy = if keep { InsertPolicy::KeepExisting } else { InsertPolicy::Replace };
        let keys = small_keys::<u32>(2, &[]);
        let initial = initial_map(&keys, seed);
        let perm: Vec<usize> = (0..ops.len()).rev().collect();
        let (seen, mut fin) = run_map(policy, &ops, &perm, &initial);
        let mut replies = project(&ops, &seen, style);
        plant(&mut replies, &mut fin, &keys, seed);
        let want = brute_force_map(policy, &ops, &replies, &initial, &fin);
        let got = check_map(policy, &ops, &replies, &initial, &fin);
        if let Ok(v) = got { prop_assert_eq!(v.relaxed, 0); }
        prop_assert_eq!(got.is_ok(), want, "{:?} {:?} {:?} {:?}", ops, replies, initial, fin);
    }

    #[test]
    fn multimap_serial_orders_are_accepted_and_plants_judged_exactly(
        ops in proptest::collection::vec(multimap_op(small_keys::<u32>(2, &[]), small_values::<u32>(3)), 0..7),
        seed in any::<u64>(), unknown_updates in any::<bool>(),
    ) {
        let keys = small_keys::<u32>(2, &[]);
        let initial: HashMap<u32, Vec<u32>> = keys.iter().map(|&k| (k, vec![1, 2][..(seed % 3) as usize].to_vec())).collect();
        let run = |perm: &[usize]| {
            let mut model = MultimapModel::new();
            for (&k, vs) in &initial { for &v in vs { model.step(&Op::Insert(k, v)); } }
            let mut seen = vec![None; ops.len()];
            for &i in perm { seen[i] = model.step(&ops[i]); }
            let fin: HashMap<u32, Vec<u32>> = model.as_map().iter().map(|(&k, vs)| (k, vs.iter().rev().copied().collect())).collect();
            (seen, fin)
        };
        let mut perm: Vec<usize> = (0..ops.len()).collect();
        perm.shuffle(&mut ChaCha8Rng::seed_from_u64(seed));
        let (seen, fin) = run(&perm);
        let replies = project(&ops, &seen, if unknown_updates { 2 } else { 0 });
        let verdict = check_multimap(&ops, &replies, &initial, &fin);
        prop_assert!(verdict.is_ok(), "{}", verdict.unwrap_err());
        // Plant: drop one final instance, or change one reply.
        let mut bad_fin = fin.clone();
        let mut bad_replies = replies.clone();
        if let Some(vs) = bad_fin.values_mut().find(|vs| !vs.is_empty()).filter(|_| seed % 2 == 0) {
            vs.pop();
        } else if !ops.is_empty() {
            let i = (seed as usize / 2) % ops.len();
            bad_replies[i] = Reply::Value(if seen[i].is_some() { None } else { Some(3) });
        }
        let same_multiset = |a: &HashMap<u32, Vec<u32>>, b: &HashMap<u32, Vec<u32>>| keys.iter().all(|k| {
            let mut x = a.get(k).cloned().unwrap_or_default(); x.sort();
            let mut y = b.get(k).cloned().unwrap_or_default(); y.sort();
            x == y
        });
        let want = permutations(ops.len()).iter().any(|p| {
            let (s, f) = run(p);
            same_multiset(&f, &bad_fin) && bad_replies.iter().zip(&s).all(|(r, &x)| r.admits(x))
        });
        prop_assert_eq!(check_multimap(&ops, &bad_replies, &initial, &bad_fin).is_ok(), want);
    }
}

#[test]
fn planted_wrong_results_are_named() {
    let ops = [Op::Insert(1u32, 5u32), Op::Get(1), Op::Get(2)];
    let initial = M::from([(2, 7)]);
    let fin = M::from([(1, 5), (2, 7)]);
    let ok = check_map(
        InsertPolicy::Replace,
        &ops,
        &[Reply::Unknown, Reply::Value(Some(5)), Reply::Value(Some(7))],
        &initial,
        &fin,
    );
    assert_eq!(
        ok,
        Ok(Verdict {
            keys: 2,
            exact: 2,
            relaxed: 0
        })
    );
    let err = check_map(
        InsertPolicy::Replace,
        &ops,
        &[Reply::Unknown, Reply::Value(None), Reply::Value(None)],
        &initial,
        &fin,
    )
    .unwrap_err();
    assert_eq!(err.key, 2);
    let text = err.to_string();
    assert!(
        text.contains("#2 Get(2) -> Value(None)") && text.contains("Some(7)"),
        "{text}"
    );
    // A key outside the batch must not change.
    let err = check_map(
        InsertPolicy::Replace,
        &ops[..2],
        &[Reply::Unknown, Reply::Unknown],
        &initial,
        &fin.clone().into_iter().chain([(9, 9)]).collect(),
    )
    .unwrap_err();
    assert_eq!(err.key, 9);
    assert!(err.reason.contains("no operation"));
}

#[test]
fn hot_keys_with_thousands_of_ops_are_decided_in_closed_form() {
    // 3000 replacing inserts of one key, linearized in a random order.
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let ops: Vec<Op<u32, u32>> = (0..3000)
        .map(|v| {
            if v % 10 == 9 {
                Op::Remove(7)
            } else {
                Op::Insert(7, v)
            }
        })
        .collect();
    let mut perm: Vec<usize> = (0..ops.len()).collect();
    perm.shuffle(&mut rng);
    let (seen, fin) = run_map(InsertPolicy::Replace, &ops, &perm, &M::new());
    for style in 0..3 {
        let replies = project(&ops, &seen, style);
        let v = check_map(InsertPolicy::Replace, &ops, &replies, &M::new(), &fin).unwrap();
        assert_eq!((v.keys, v.exact + v.relaxed), (1, 1));
        if style != 1 {
            assert_eq!(v.exact, 1, "style {style}");
        }
    }
    // A duplicated observation breaks the chain.
    let mut replies = project(&ops, &seen, 0);
    let i = replies
        .iter()
        .position(|r| *r == Reply::Value(None))
        .unwrap();
    let j = replies
        .iter()
        .rposition(|r| matches!(r, Reply::Value(Some(_))))
        .unwrap();
    replies[i] = replies[j];
    assert!(check_map(InsertPolicy::Replace, &ops, &replies, &M::new(), &fin).is_err());
}

#[test]
fn sets_accept_one_winner_among_concurrent_inserts() {
    let ops = vec![Op::Insert(4u64, ()); 50];
    let mut replies = vec![Reply::Found(true); 50];
    replies[17] = Reply::Found(false);
    let fin = HashSet::from([4]);
    assert!(check_set(&ops, &replies, &HashSet::new(), &fin).is_ok());
    replies[18] = Reply::Found(false);
    assert!(check_set(&ops, &replies, &HashSet::new(), &fin).is_err());
}

#[test]
fn multimap_steps_agree_with_map_steps_on_unique_keys() {
    let ops = [
        Op::Insert(1u32, 3u32),
        Op::Get(1),
        Op::Remove(1),
        Op::Get(1),
    ];
    let (mut a, mut b) = (None, VecDeque::new());
    for op in &ops {
        assert_eq!(
            map_step(InsertPolicy::Replace, &mut a, op),
            multimap_step(&mut b, op)
        );
    }
}
