//! Helpers shared by the skip-list GPU tests: the operations both skip lists share, a
//! `BTreeMap` oracle, batches applied to both and every query kind checked against it.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::ops::Bound::Included;

use gpuds_oversub::{Error, RangePairs, RangeSkipList, SkipList};
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};

pub mod tables;

/// The operations both skip lists share, for the oracle-driven tests.
pub trait Ordered {
    fn insert(&mut self, k: &[u32], v: &[u32]) -> Result<(), Error>;
    fn remove(&mut self, k: &[u32]) -> Result<Vec<bool>, Error>;
    fn get(&mut self, k: &[u32]) -> Result<Vec<Option<u32>>, Error>;
    fn succ(&mut self, k: &[u32]) -> Result<Vec<Option<(u32, u32)>>, Error>;
    fn pred(&mut self, k: &[u32]) -> Result<Vec<Option<(u32, u32)>>, Error>;
    fn ranges(&mut self, r: &[(u32, u32)]) -> Result<RangePairs, Error>;
    fn count(&self) -> u64;
    fn check(&self) -> Result<(), Error>;
    fn pairs(&self) -> Vec<(u32, u32)>;
}

macro_rules! ordered {
    ($t:ty) => {
        impl Ordered for $t {
            fn insert(&mut self, k: &[u32], v: &[u32]) -> Result<(), Error> {
                self.insert_many(k, v)
            }
            fn remove(&mut self, k: &[u32]) -> Result<Vec<bool>, Error> {
                self.remove_many(k)
            }
            fn get(&mut self, k: &[u32]) -> Result<Vec<Option<u32>>, Error> {
                self.get_many(k)
            }
            fn succ(&mut self, k: &[u32]) -> Result<Vec<Option<(u32, u32)>>, Error> {
                self.successor_many(k)
            }
            fn pred(&mut self, k: &[u32]) -> Result<Vec<Option<(u32, u32)>>, Error> {
                self.predecessor_many(k)
            }
            fn ranges(&mut self, r: &[(u32, u32)]) -> Result<RangePairs, Error> {
                self.range_many(r)
            }
            fn count(&self) -> u64 {
                self.len().unwrap()
            }
            fn check(&self) -> Result<(), Error> {
                self.validate()
            }
            fn pairs(&self) -> Vec<(u32, u32)> {
                self.to_vec().unwrap()
            }
        }
    };
}
ordered!(SkipList);
ordered!(RangeSkipList);

pub type Oracle = BTreeMap<u32, u32>;

pub fn successor(o: &Oracle, k: u32) -> Option<(u32, u32)> {
    o.range(k..).next().map(|(&a, &b)| (a, b))
}
pub fn predecessor(o: &Oracle, k: u32) -> Option<(u32, u32)> {
    o.range(..=k).next_back().map(|(&a, &b)| (a, b))
}

/// Applies one insertion batch to both (duplicates inside the batch carry one value, so
/// the oracle's value is exact).
pub fn insert(t: &mut dyn Ordered, o: &mut Oracle, keys: &[u32], value_of: impl Fn(u32) -> u32) {
    let values: Vec<u32> = keys.iter().map(|&k| value_of(k)).collect();
    t.insert(keys, &values).unwrap();
    for &k in keys {
        o.insert(k, value_of(k));
    }
}

pub fn remove(t: &mut dyn Ordered, o: &mut Oracle, keys: &[u32], what: &str) {
    let got = t.remove(keys).unwrap();
    let mut want = Vec::with_capacity(keys.len());
    for &k in keys {
        want.push(o.remove(&k).is_some());
    }
    // A key named twice is removed by one of its requests.
    let (g, w) = (
        got.iter().filter(|&&b| b).count(),
        want.iter().filter(|&&b| b).count(),
    );
    assert_eq!(g, w, "{what}: removed");
}

/// Every query kind on `keys` against the oracle.
pub fn query(t: &mut dyn Ordered, o: &Oracle, keys: &[u32], what: &str) {
    let got = t.get(keys).unwrap();
    for (i, &k) in keys.iter().enumerate() {
        assert_eq!(got[i], o.get(&k).copied(), "{what}: get {k}");
    }
    // Neighbour queries may ask any u32, the reserved values included.
    let mut asks: Vec<u32> = keys.to_vec();
    asks.extend([0, 1, u32::MAX - 1, u32::MAX]);
    let s = t.succ(&asks).unwrap();
    let p = t.pred(&asks).unwrap();
    for (i, &k) in asks.iter().enumerate() {
        assert_eq!(s[i], successor(o, k), "{what}: successor of {k}");
        assert_eq!(p[i], predecessor(o, k), "{what}: predecessor of {k}");
    }
    let mut ranges: Vec<(u32, u32)> = keys
        .iter()
        .take(64)
        .map(|&k| (k, k.saturating_add(k % 5000)))
        .collect();
    ranges.extend([(0, u32::MAX), (10, 5), (u32::MAX, u32::MAX)]);
    let r = t.ranges(&ranges).unwrap();
    assert_eq!(r.len(), ranges.len());
    for (i, &(lo, hi)) in ranges.iter().enumerate() {
        let want: Vec<(u32, u32)> = if lo > hi {
            Vec::new()
        } else {
            o.range((Included(lo), Included(hi)))
                .map(|(&a, &b)| (a, b))
                .collect()
        };
        assert_eq!(r.get(i), &want[..], "{what}: range {lo}..={hi}");
    }
}

pub fn settle(t: &dyn Ordered, o: &Oracle, what: &str) {
    t.check().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(t.count(), o.len() as u64, "{what}: len");
}

/// Where a test's keys come from: `[1, dense)`, and one in `anywhere` of them (0: none)
/// anywhere in the key space.
#[derive(Clone, Copy, Debug)]
pub struct Keys {
    pub dense: u32,
    pub anywhere: u32,
}

impl Keys {
    /// Mostly a dense window (so nodes fill, split and merge), a few anywhere.
    pub const MIXED: Keys = Keys {
        dense: 1 << 16,
        anywhere: 20,
    };

    pub fn draw(self, rng: &mut ChaCha8Rng) -> u32 {
        if self.anywhere != 0 && rng.random_range(0..self.anywhere) == 0 {
            rng.random_range(1..u32::MAX - 1)
        } else {
            rng.random_range(1..self.dense)
        }
    }
}

/// `steps` random batches (insertions, removals or none) from `keys`, each followed by
/// `validate()`, the count and every query kind against the oracle; the contents in key
/// order at the end.
pub fn random_batches(t: &mut dyn Ordered, seed: u64, steps: usize, keys: Keys, what: &str) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut o = Oracle::new();
    let salt = rng.random_range(0..1000u32);
    for step in 0..steps {
        let what = format!("{what} step {step}");
        let n = rng.random_range(1..6000usize);
        let batch: Vec<u32> = (0..n).map(|_| keys.draw(&mut rng)).collect();
        match rng.random_range(0..5u32) {
            0..=2 => insert(t, &mut o, &batch, |k| k ^ salt),
            3 => remove(t, &mut o, &batch, &what),
            _ => {}
        }
        settle(t, &o, &what);
        let asks: Vec<u32> = (0..500).map(|_| keys.draw(&mut rng)).collect();
        query(t, &o, &asks, &what);
    }
    let want: Vec<(u32, u32)> = o.iter().map(|(&a, &b)| (a, b)).collect();
    assert_eq!(t.pairs(), want, "{what}: contents in key order");
}
