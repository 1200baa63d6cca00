//! Seeded unique keys that avoid reserved values, misses disjoint from hits, and values.
//!
//! [`UniqueKeys`] numbers the allowed keys of a range (the range minus the reserved
//! values) and permutes those numbers with a [`Permutation`]: key `i` is the image of
//! `i`. Every index range therefore gives distinct keys, disjoint index ranges give
//! disjoint keys (this is how misses are kept apart from hits), and generation is a
//! parallel map with no memory beyond the output.

use std::marker::PhantomData;
use std::ops::Range;

use gpuds_core::{DeviceKey, DeviceValue};
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};

use super::permute::Permutation;

/// A seeded stream of distinct keys of type `K`, none of them reserved.
///
/// # Examples
/// ```
/// use gpuds_testkit::workload::UniqueKeys;
/// let gen = UniqueKeys::<u32>::new(7, &[u32::MAX, u32::MAX - 1]);
/// let keys = gen.keys(0..1000);
/// assert!(keys.iter().all(|&k| k < u32::MAX - 1));
/// let (hits, misses) = gen.hits_and_misses(100, 100);
/// assert!(hits.iter().all(|k| !misses.contains(k)));
/// assert_eq!(hits, UniqueKeys::<u32>::new(7, &[u32::MAX, u32::MAX - 1]).keys(0..100));
/// ```
#[derive(Clone, Debug)]
pub struct UniqueKeys<K> {
    permutation: Permutation,
    lo: u64,
    reserved: Vec<u64>,
    key: PhantomData<K>,
}

impl<K: DeviceKey> UniqueKeys<K> {
    /// Keys anywhere in `K`'s range except `reserved`.
    pub fn new(seed: u64, reserved: &[K]) -> Self {
        Self::in_range(seed, K::from_u64(0), K::MAX, reserved)
    }

    /// Keys in `lo..=hi` except `reserved`.
    ///
    /// # Panics
    /// If `lo > hi` or the reserved values cover the whole range (a test-setup error).
    pub fn in_range(seed: u64, lo: K, hi: K, reserved: &[K]) -> Self {
        let (lo, hi) = (lo.to_u64(), hi.to_u64());
        assert!(lo <= hi, "empty key range {lo}..={hi}");
        let mut reserved: Vec<u64> = reserved
            .iter()
            .map(|r| r.to_u64())
            .filter(|r| (lo..=hi).contains(r))
            .collect();
        reserved.sort_unstable();
        reserved.dedup();
        let span = hi - lo;
        assert!(
            (reserved.len() as u64) <= span,
            "every key of {lo}..={hi} is reserved"
        );
        let last = span - reserved.len() as u64;
        UniqueKeys {
            permutation: Permutation::new(seed, last),
            lo,
            reserved,
            key: PhantomData,
        }
    }

    /// The largest valid index: the stream holds `max_index() + 1` distinct keys.
    pub fn max_index(&self) -> u64 {
        self.permutation.last()
    }

    /// The `i`-th key of the stream (`i <= max_index()`).
    pub fn key(&self, i: u64) -> K {
        self.nth_allowed(self.permutation.apply(i))
    }

    /// The `n`-th allowed key of the range in increasing order.
    pub(crate) fn nth_allowed(&self, n: u64) -> K {
        let mut v = self.lo + n;
        // Step over the reserved values at or below v.
        for &r in &self.reserved {
            if r <= v {
                v += 1;
            }
        }
        K::from_u64(v)
    }

    /// The keys with indices in `range`, computed on all cores for long ranges.
    pub fn keys(&self, range: Range<u64>) -> Vec<K> {
        par_map(range, K::from_u64(0), |i| self.key(i))
    }

    /// `hits` keys followed by `misses` other keys, disjoint from the hits: the hits are
    /// indices `0..hits`, the misses the indices after them.
    pub fn hits_and_misses(&self, hits: usize, misses: usize) -> (Vec<K>, Vec<K>) {
        let h = hits as u64;
        (self.keys(0..h), self.keys(h..h + misses as u64))
    }
}

/// `n` distinct seeded keys of `K`, none in `reserved`: the first `n` of
/// [`UniqueKeys::new`].
///
/// # Examples
/// ```
/// let keys = gpuds_testkit::workload::unique_keys::<u64>(1, 5, &[u64::MAX]);
/// assert_eq!(keys.len(), 5);
/// assert_eq!(keys, gpuds_testkit::workload::unique_keys::<u64>(1, 5, &[u64::MAX]));
/// ```
pub fn unique_keys<K: DeviceKey>(seed: u64, n: usize, reserved: &[K]) -> Vec<K> {
    UniqueKeys::new(seed, reserved).keys(0..n as u64)
}

/// `n` seeded random values of `V` (repeats allowed), none in `reserved`.
///
/// # Examples
/// ```
/// let values = gpuds_testkit::workload::random_values::<u32>(3, 100, &[0]);
/// assert!(values.iter().all(|&v| v != 0));
/// ```
pub fn random_values<V: DeviceValue + PartialEq>(seed: u64, n: usize, reserved: &[V]) -> Vec<V> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let v = V::from_u64(rng.random());
        if !reserved.contains(&v) {
            out.push(v);
        }
    }
    out
}

/// Maps `f` over `range` in order, splitting long ranges across the machine's cores.
pub(crate) fn par_map<T: Send + Copy>(
    range: Range<u64>,
    fill: T,
    f: impl Fn(u64) -> T + Sync,
) -> Vec<T> {
    let n = (range.end - range.start) as usize;
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
    if n < 1 << 16 || threads == 1 {
        return range.map(f).collect();
    }
    let mut out = vec![fill; n];
    let chunk = n.div_ceil(threads);
    std::thread::scope(|scope| {
        for (c, part) in out.chunks_mut(chunk).enumerate() {
            let f = &f;
            let start = range.start + (c * chunk) as u64;
            scope.spawn(move || {
                for (j, slot) in part.iter_mut().enumerate() {
                    *slot = f(start + j as u64);
                }
            });
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn reserved_values_never_appear_in_a_small_range() {
        let reserved = [3u32, 5, 9, 100];
        let gen = UniqueKeys::<u32>::in_range(11, 0, 9, &reserved);
        assert_eq!(gen.max_index(), 6);
        let mut keys = gen.keys(0..7);
        keys.sort_unstable();
        assert_eq!(keys, vec![0, 1, 2, 4, 6, 7, 8]);
    }

    #[test]
    fn full_range_keys_are_unique_reserved_free_and_reproducible() {
        let reserved = [u64::MAX, u64::MAX - 1, 0];
        let a = unique_keys::<u64>(5, 200_000, &reserved);
        let b = unique_keys::<u64>(5, 200_000, &reserved);
        assert_eq!(a, b);
        let set: HashSet<u64> = a.iter().copied().collect();
        assert_eq!(set.len(), a.len());
        assert!(a.iter().all(|k| !reserved.contains(k)));
        assert_ne!(a, unique_keys::<u64>(6, 200_000, &reserved));
    }

    #[test]
    fn u32_keys_near_a_dense_range_stay_unique() {
        let gen = UniqueKeys::<u32>::in_range(2, 1, 70_000, &[u32::MAX]);
        let keys = gen.keys(0..70_000);
        let set: HashSet<u32> = keys.iter().copied().collect();
        assert_eq!(set.len(), 70_000);
        assert!(keys.iter().all(|&k| (1..=70_000).contains(&k)));
    }

    #[test]
    fn misses_are_disjoint_from_hits() {
        let gen = UniqueKeys::<u32>::new(9, &[u32::MAX]);
        let (hits, misses) = gen.hits_and_misses(50_000, 50_000);
        let hits: HashSet<u32> = hits.into_iter().collect();
        assert!(misses.iter().all(|k| !hits.contains(k)));
    }

    #[test]
    fn values_are_reproducible_and_reserved_free() {
        let a = random_values::<u64>(1, 1000, &[0, u64::MAX]);
        assert_eq!(a, random_values::<u64>(1, 1000, &[0, u64::MAX]));
        assert!(a.iter().all(|&v| v != 0 && v != u64::MAX));
        let narrow = random_values::<u32>(1, 1000, &[]);
        assert!(narrow.iter().any(|&v| v > u32::MAX / 2));
    }
}

#[cfg(test)]
mod large {
    use super::*;

    // Run with `cargo test --release -p gpuds-testkit -- --ignored` (2^26 keys).
    #[test]
    #[ignore = "large: run in release"]
    fn two_to_the_26_keys_are_unique() {
        let mut keys = unique_keys::<u32>(1, 1 << 26, &[u32::MAX, u32::MAX - 1]);
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), 1 << 26);
        assert!(keys[keys.len() - 1] < u32::MAX - 1);
    }
}
