//! Skewed keys: a Zipf distribution over ranks `1..=n` with exponent `s`, where rank `k`
//! has probability proportional to `k^-s`, and keys drawn by rank.
//!
//! Sampling uses *rejection-inversion* (Hörmann and Derflinger, 1996), so it costs O(1)
//! per sample and no table, for any `n` up to 2^64 and any `s >= 0`. Let
//! `h(x) = x^-s` and `H(x) = ∫_1^x h`. Rank `k` owns the interval `(H(k-½), H(k+½)]`,
//! whose length is at least `h(k)` because `h` is convex; drawing `u` uniformly over the
//! intervals, mapping it back with `H⁻¹` and rounding gives a candidate `k`, accepted when
//! `u` lies in the top `h(k)` of its interval, so every rank is accepted with probability
//! proportional to `h(k)`. Rank 1's interval is cut to exactly `h(1)`, so it is never
//! rejected; the acceptance rate is high for every `s`.

use gpuds_core::DeviceKey;
use rand::rngs::ChaCha8Rng;
use rand::{Rng, RngExt, SeedableRng};

use super::keys::UniqueKeys;
use super::StreamRng;

/// The Zipf distribution over ranks `1..=n` with exponent `s`.
///
/// # Examples
/// ```
/// use gpuds_testkit::workload::Zipf;
/// use rand::SeedableRng;
/// let zipf = Zipf::new(1000, 1.2);
/// let mut rng = rand::rngs::ChaCha8Rng::seed_from_u64(1);
/// let ranks: Vec<u64> = (0..1000).map(|_| zipf.sample(&mut rng)).collect();
/// assert!(ranks.iter().all(|&k| (1..=1000).contains(&k)));
/// assert!(ranks.iter().filter(|&&k| k == 1).count() > 100);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Zipf {
    n: u64,
    s: f64,
    u_lo: f64,
    u_hi: f64,
}

impl Zipf {
    /// The distribution over `1..=n` with exponent `s`.
    ///
    /// # Panics
    /// If `n` is zero or `s` is negative or not finite.
    pub fn new(n: u64, s: f64) -> Self {
        assert!(n > 0, "Zipf needs at least one rank");
        assert!(
            s.is_finite() && s >= 0.0,
            "Zipf exponent {s} must be finite and >= 0"
        );
        let mut z = Zipf {
            n,
            s,
            u_lo: 0.0,
            u_hi: 0.0,
        };
        z.u_lo = z.big_h(1.5) - 1.0;
        z.u_hi = z.big_h(n as f64 + 0.5);
        z
    }

    /// The number of ranks.
    pub fn n(&self) -> u64 {
        self.n
    }

    /// The exponent.
    pub fn s(&self) -> f64 {
        self.s
    }

    /// One rank in `1..=n`.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        loop {
            let u = self.u_lo + rng.random::<f64>() * (self.u_hi - self.u_lo);
            let x = self.big_h_inv(u);
            let k = x.round().clamp(1.0, self.n as f64);
            if u >= self.big_h(k + 0.5) - self.h(k) {
                return k as u64;
            }
        }
    }

    fn h(&self, x: f64) -> f64 {
        (-self.s * x.ln()).exp()
    }

    // H(x) = (x^(1-s) - 1) / (1-s), written to stay exact as s approaches 1 (ln x).
    fn big_h(&self, x: f64) -> f64 {
        let ln = x.ln();
        ln * expm1_over((1.0 - self.s) * ln)
    }

    fn big_h_inv(&self, y: f64) -> f64 {
        (y * ln1p_over((1.0 - self.s) * y)).exp()
    }
}

/// (e^t - 1) / t, continuous at 0.
fn expm1_over(t: f64) -> f64 {
    if t.abs() < 1e-8 {
        1.0 + t / 2.0
    } else {
        t.exp_m1() / t
    }
}

/// ln(1 + t) / t, continuous at 0.
fn ln1p_over(t: f64) -> f64 {
    if t.abs() < 1e-8 {
        1.0 - t / 2.0
    } else {
        t.ln_1p() / t
    }
}

/// A seeded stream of Zipf-skewed keys: rank `k` of a [`Zipf`] is the `k-1`-th key of a
/// [`UniqueKeys`] stream, so the hot keys are scattered over the key range rather than
/// being the small integers.
///
/// # Examples
/// ```
/// use gpuds_testkit::workload::ZipfKeys;
/// let keys = ZipfKeys::<u32>::new(5, 1 << 20, 0.99, &[u32::MAX]).take(10_000);
/// assert_eq!(keys, ZipfKeys::<u32>::new(5, 1 << 20, 0.99, &[u32::MAX]).take(10_000));
/// let distinct: std::collections::HashSet<_> = keys.iter().collect();
/// assert!(distinct.len() < 10_000); // skewed: hot keys repeat
/// ```
#[derive(Clone, Debug)]
pub struct ZipfKeys<K> {
    zipf: Zipf,
    rng: StreamRng,
    keys: UniqueKeys<K>,
}

impl<K: DeviceKey> ZipfKeys<K> {
    /// Keys drawn from `distinct` candidate keys (none in `reserved`) with exponent `s`.
    pub fn new(seed: u64, distinct: u64, s: f64, reserved: &[K]) -> Self {
        ZipfKeys {
            zipf: Zipf::new(distinct, s),
            rng: StreamRng(ChaCha8Rng::seed_from_u64(seed)),
            keys: UniqueKeys::new(seed ^ 0x2545_f491_4f6c_dd1d, reserved),
        }
    }

    /// The key of rank `k` (1 is the hottest).
    pub fn key_of_rank(&self, k: u64) -> K {
        self.keys.key(k - 1)
    }

    /// The next key of the stream.
    pub fn next_key(&mut self) -> K {
        let rank = self.zipf.sample(&mut self.rng.0);
        self.key_of_rank(rank)
    }

    /// The next `n` keys of the stream.
    pub fn take(&mut self, n: usize) -> Vec<K> {
        (0..n).map(|_| self.next_key()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn histogram(n: u64, s: f64, samples: usize) -> Vec<f64> {
        let zipf = Zipf::new(n, s);
        let mut rng = ChaCha8Rng::seed_from_u64(17);
        let mut counts = vec![0.0; n as usize + 1];
        for _ in 0..samples {
            counts[zipf.sample(&mut rng) as usize] += 1.0;
        }
        counts
    }

    // Every rank's frequency lies within 5 standard deviations of k^-s / Σ j^-s.
    fn assert_matches_pmf(n: u64, s: f64) {
        let samples = 50_000;
        let counts = histogram(n, s, samples);
        let norm: f64 = (1..=n).map(|j| (j as f64).powf(-s)).sum();
        for k in 1..=n {
            let p = (k as f64).powf(-s) / norm;
            let mean = p * samples as f64;
            let sd = (samples as f64 * p * (1.0 - p)).sqrt();
            let seen = counts[k as usize];
            assert!(
                (seen - mean).abs() <= 5.0 * sd + 1.0,
                "s={s} rank {k}: saw {seen}, expected {mean:.1} ± {sd:.1}"
            );
        }
    }

    #[test]
    fn frequencies_follow_the_power_law() {
        for s in [0.0, 0.5, 0.99, 1.0, 1.01, 1.5, 3.0] {
            assert_matches_pmf(50, s);
        }
    }

    #[test]
    fn huge_ranges_stay_in_bounds_and_skewed() {
        let zipf = Zipf::new(u64::MAX, 1.1);
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        let ranks: Vec<u64> = (0..20_000).map(|_| zipf.sample(&mut rng)).collect();
        assert!(ranks.iter().all(|&k| k >= 1));
        let ones = ranks.iter().filter(|&&k| k == 1).count();
        let twos = ranks.iter().filter(|&&k| k == 2).count();
        // P(1)/P(2) = 2^1.1 ≈ 2.14.
        let ratio = ones as f64 / twos as f64;
        assert!((1.8..2.6).contains(&ratio), "ratio {ratio}");
    }

    #[test]
    fn one_rank_is_always_rank_one() {
        let zipf = Zipf::new(1, 0.7);
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        assert!((0..100).all(|_| zipf.sample(&mut rng) == 1));
    }

    #[test]
    fn keys_are_reproducible_and_reserved_free() {
        let mut a = ZipfKeys::<u32>::new(3, 1000, 1.0, &[u32::MAX]);
        let mut b = ZipfKeys::<u32>::new(3, 1000, 1.0, &[u32::MAX]);
        let (ka, kb) = (a.take(5000), b.take(5000));
        assert_eq!(ka, kb);
        assert!(ka.iter().all(|&k| k != u32::MAX));
        let hottest = a.key_of_rank(1);
        let hits = ka.iter().filter(|&&k| k == hottest).count();
        assert!(hits > 500, "rank 1 seen {hits} times");
    }
}
