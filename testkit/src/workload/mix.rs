//! The slab hash paper's concurrent benchmark: batches of mixed operations drawn from an
//! operation distribution Γ = (a, b, c, d) (Ashkiani et al., 2018, §VI-B).
//!
//! The paper builds the table with some initial elements and then runs batches in which
//! each operation is one of: (a) inserting a new element, (b) deleting a previously
//! inserted element, (c) searching for an existing element, (d) searching for a
//! non-existing element; the fractions sum to one and the operations are randomly
//! assigned to threads, so all four kinds may meet in one warp.
//!
//! [`MixedWorkload`] reproduces that: it tracks which keys are present, draws each batch
//! with exactly the mix's counts (largest-remainder rounding) and shuffles it. Within one
//! batch a key appears at most once, so every operation's result is the same in every
//! serial order and the batch carries its expected observations.

use gpuds_core::{DeviceKey, DeviceValue};
use rand::rngs::ChaCha8Rng;
use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};

use super::keys::UniqueKeys;
use super::StreamRng;
use crate::Op;

/// An operation distribution Γ = (insert, delete, search-hit, search-miss): fractions that
/// are non-negative and sum to one.
///
/// # Examples
/// ```
/// use gpuds_testkit::workload::{Mix, GAMMA_1};
/// assert_eq!(GAMMA_1.counts(10), [2, 2, 3, 3]);
/// assert_eq!(Mix::new(1.0, 0.0, 0.0, 0.0).counts(3), [3, 0, 0, 0]);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Mix {
    /// Fraction of insertions of new keys.
    pub insert: f64,
    /// Fraction of deletions of present keys.
    pub delete: f64,
    /// Fraction of searches for present keys.
    pub search_hit: f64,
    /// Fraction of searches for absent keys.
    pub search_miss: f64,
}

/// Γ0 = (0.5, 0.5, 0, 0): all operations are updates.
pub const GAMMA_0: Mix = Mix::new(0.5, 0.5, 0.0, 0.0);
/// Γ1 = (0.2, 0.2, 0.3, 0.3): 40% updates, 60% searches.
pub const GAMMA_1: Mix = Mix::new(0.2, 0.2, 0.3, 0.3);
/// Γ2 = (0.1, 0.1, 0.4, 0.4): 20% updates, 80% searches.
pub const GAMMA_2: Mix = Mix::new(0.1, 0.1, 0.4, 0.4);

impl Mix {
    /// The mix (insert, delete, search-hit, search-miss).
    pub const fn new(insert: f64, delete: f64, search_hit: f64, search_miss: f64) -> Self {
        Mix {
            insert,
            delete,
            search_hit,
            search_miss,
        }
    }

    /// The number of operations of each kind in a batch of `n`, in the order
    /// (insert, delete, search-hit, search-miss): the fractions times `n`, rounded so
    /// that they sum to `n` (largest remainder first, ties to the earlier kind).
    ///
    /// # Panics
    /// If a fraction is negative or not finite, or they do not sum to one (±1e-9).
    pub fn counts(&self, n: usize) -> [usize; 4] {
        let f = [self.insert, self.delete, self.search_hit, self.search_miss];
        assert!(
            f.iter().all(|x| x.is_finite() && *x >= 0.0),
            "bad mix {self:?}"
        );
        assert!(
            (f.iter().sum::<f64>() - 1.0).abs() < 1e-9,
            "mix {self:?} does not sum to 1"
        );
        let exact = f.map(|x| x * n as f64);
        let mut counts = exact.map(|x| x.floor() as usize);
        let mut order = [0, 1, 2, 3];
        order.sort_by(|&a, &b| {
            let (ra, rb) = (exact[a] - exact[a].floor(), exact[b] - exact[b].floor());
            rb.total_cmp(&ra).then(a.cmp(&b))
        });
        let short = n - counts.iter().sum::<usize>();
        for &i in order.iter().take(short) {
            counts[i] += 1;
        }
        counts
    }
}

/// One batch of a [`MixedWorkload`]: the shuffled operations and what each must observe
/// (see [`Op`]): `None` for inserts of new keys and for misses, the stored value for
/// deletes and hits.
#[derive(Clone, Debug)]
pub struct Batch<K, V> {
    /// The operations, in random order.
    pub ops: Vec<Op<K, V>>,
    /// The observation each operation must make, in any serial order.
    pub expected: Vec<Option<V>>,
}

/// A seeded generator of the slab hash paper's mixed batches for one [`Mix`].
///
/// # Examples
/// ```
/// use gpuds_testkit::workload::{MixedWorkload, GAMMA_1};
/// use gpuds_testkit::model::MapModel;
/// let mut w = MixedWorkload::<u32, u32>::new(1, GAMMA_1, &[u32::MAX], &[]);
/// let mut model = MapModel::new();
/// model.apply(&w.initial(1000).iter().map(|&(k, v)| gpuds_testkit::Op::Insert(k, v)).collect::<Vec<_>>());
/// let batch = w.batch(100);
/// assert_eq!(model.apply(&batch.ops), batch.expected);
/// assert_eq!(model.len(), w.present().len());
/// ```
#[derive(Clone, Debug)]
pub struct MixedWorkload<K, V> {
    mix: Mix,
    rng: StreamRng,
    keys: UniqueKeys<K>,
    fresh: u64,
    misses: u64,
    present: Vec<(K, V)>,
    value_reserved: Vec<V>,
}

impl<K: DeviceKey, V: DeviceValue + PartialEq> MixedWorkload<K, V> {
    /// A workload whose keys avoid `key_reserved` and whose values avoid `value_reserved`.
    pub fn new(seed: u64, mix: Mix, key_reserved: &[K], value_reserved: &[V]) -> Self {
        MixedWorkload {
            mix,
            rng: StreamRng(ChaCha8Rng::seed_from_u64(seed)),
            keys: UniqueKeys::new(seed ^ 0x5851_f42d_4c95_7f2d, key_reserved),
            fresh: 0,
            misses: 0,
            present: Vec::new(),
            value_reserved: value_reserved.to_vec(),
        }
    }

    /// The pairs present after every batch so far, in no particular order.
    pub fn present(&self) -> &[(K, V)] {
        &self.present
    }

    /// `n` new pairs, now counted as present: the paper's initial build.
    pub fn initial(&mut self, n: usize) -> Vec<(K, V)> {
        let pairs: Vec<(K, V)> = (0..n).map(|_| self.fresh_pair()).collect();
        self.present.extend_from_slice(&pairs);
        pairs
    }

    /// The next batch of `size` operations. Deletes and hits need present keys: when
    /// fewer are present than the mix asks for, the batch takes all there are and makes
    /// up the difference with inserts.
    pub fn batch(&mut self, size: usize) -> Batch<K, V> {
        let [mut inserts, mut deletes, mut hits, misses] = self.mix.counts(size);
        let len = self.present.len();
        if deletes + hits > len {
            let (d, h) = (deletes.min(len), hits.min(len - deletes.min(len)));
            inserts += deletes + hits - d - h;
            (deletes, hits) = (d, h);
        }
        // Partial Fisher-Yates: the chosen keys gather at the tail, deletes last.
        for j in 0..deletes + hits {
            let i = self.rng.0.random_range(0..len - j);
            self.present.swap(i, len - 1 - j);
        }
        let mut ops = Vec::with_capacity(size);
        let mut expected = Vec::with_capacity(size);
        for &(k, v) in &self.present[len - deletes - hits..len - deletes] {
            ops.push(Op::Get(k));
            expected.push(Some(v));
        }
        for (k, v) in self.present.drain(len - deletes..) {
            ops.push(Op::Remove(k));
            expected.push(Some(v));
        }
        for _ in 0..misses {
            ops.push(Op::Get(self.miss_key()));
            expected.push(None);
        }
        for _ in 0..inserts {
            let (k, v) = self.fresh_pair();
            self.present.push((k, v));
            ops.push(Op::Insert(k, v));
            expected.push(None);
        }
        let mut order: Vec<usize> = (0..ops.len()).collect();
        order.shuffle(&mut self.rng.0);
        Batch {
            ops: order.iter().map(|&i| ops[i]).collect(),
            expected: order.iter().map(|&i| expected[i]).collect(),
        }
    }

    fn fresh_pair(&mut self) -> (K, V) {
        let key = self.keys.key(self.fresh);
        self.fresh += 1;
        assert!(
            self.fresh + self.misses <= self.keys.max_index(),
            "key range exhausted"
        );
        loop {
            let v = V::from_u64(self.rng.0.random());
            if !self.value_reserved.contains(&v) {
                return (key, v);
            }
        }
    }

    // Misses count down from the top of the key stream, so they are never inserted.
    fn miss_key(&mut self) -> K {
        let key = self.keys.key(self.keys.max_index() - self.misses);
        self.misses += 1;
        assert!(
            self.fresh + self.misses <= self.keys.max_index(),
            "key range exhausted"
        );
        key
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{HashMap, HashSet};

    #[test]
    fn named_mixes_round_exactly() {
        assert_eq!(GAMMA_0.counts(1000), [500, 500, 0, 0]);
        assert_eq!(GAMMA_1.counts(1000), [200, 200, 300, 300]);
        assert_eq!(GAMMA_2.counts(1000), [100, 100, 400, 400]);
        assert_eq!(GAMMA_2.counts(7).iter().sum::<usize>(), 7);
        assert_eq!(Mix::new(0.25, 0.25, 0.25, 0.25).counts(2), [1, 1, 0, 0]);
    }

    #[test]
    #[should_panic(expected = "does not sum to 1")]
    fn mixes_must_sum_to_one() {
        Mix::new(0.5, 0.5, 0.5, 0.0).counts(4);
    }

    #[test]
    fn batches_follow_the_mix_and_their_expectations() {
        for mix in [GAMMA_0, GAMMA_1, GAMMA_2] {
            let mut w = MixedWorkload::<u32, u32>::new(4, mix, &[u32::MAX], &[u32::MAX]);
            let mut state: HashMap<u32, u32> = w.initial(500).into_iter().collect();
            let mut ever: HashSet<u32> = state.keys().copied().collect();
            for _ in 0..5 {
                let batch = w.batch(200);
                let [ins, del, hit, miss] = mix.counts(200);
                type Pick = dyn Fn(&Op<u32, u32>, &Option<u32>) -> bool;
                let count = |f: &Pick| {
                    batch
                        .ops
                        .iter()
                        .zip(&batch.expected)
                        .filter(|(o, e)| f(o, e))
                        .count()
                };
                assert_eq!(count(&|o, _| matches!(o, Op::Insert(..))), ins);
                assert_eq!(count(&|o, _| matches!(o, Op::Remove(_))), del);
                assert_eq!(count(&|o, e| matches!(o, Op::Get(_)) && e.is_some()), hit);
                assert_eq!(count(&|o, e| matches!(o, Op::Get(_)) && e.is_none()), miss);
                let keys: HashSet<u32> = batch.ops.iter().map(|o| o.key()).collect();
                assert_eq!(keys.len(), batch.ops.len(), "a key twice in one batch");
                for (op, want) in batch.ops.iter().zip(&batch.expected) {
                    assert_eq!(state.get(&op.key()).copied(), *want, "{op:?}");
                    if let Op::Get(k) = op {
                        assert!(want.is_some() || !ever.contains(k), "miss on a used key");
                    }
                }
                for op in &batch.ops {
                    match *op {
                        Op::Insert(k, v) => {
                            state.insert(k, v);
                            ever.insert(k);
                        }
                        Op::Remove(k) => {
                            state.remove(&k);
                        }
                        Op::Get(_) => {}
                    }
                }
                let present: HashMap<u32, u32> = w.present().iter().copied().collect();
                assert_eq!(present, state);
            }
        }
    }

    #[test]
    fn shortage_of_present_keys_becomes_inserts() {
        let mut w = MixedWorkload::<u64, u64>::new(1, GAMMA_0, &[], &[]);
        let batch = w.batch(10);
        assert!(batch.ops.iter().all(|o| matches!(o, Op::Insert(..))));
        let again = MixedWorkload::<u64, u64>::new(1, GAMMA_0, &[], &[]).batch(10);
        assert_eq!(batch.ops, again.ops);
    }
}
