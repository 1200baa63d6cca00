//! A seeded bijection of `[0, last]` (any `last` up to `u32::MAX`): the source of every
//! unique key, so that `n` distinct keys cost O(n) time and no memory beyond the output.
//!
//! A Feistel network over `b` bits (the fewest that cover `last`, at least 2) permutes
//! `[0, 2^b)`: each round splits the word into a high part of `⌊b/2⌋` or `⌈b/2⌉` bits
//! and a low part of the rest, and replaces it by `(low, high ^ F(low))`, which is
//! invertible whatever the two widths, so odd `b` needs no padding. An image above
//! `last` is fed through the network again until it lands in range (*cycle walking*).
//! The walk ends because the network is a permutation, so the orbit of an in-range
//! input returns to the range, and it is short (`2^b < 2·(last + 1)`, so fewer than two
//! steps are expected).

use gpuds_core::hash::{murmur3_32, murmur3_64};

/// Feistel rounds: four rounds of a good round function make a pseudorandom permutation
/// (Luby–Rackoff), which is all a workload needs.
const ROUNDS: usize = 4;

/// A seeded permutation of `[0, last]`.
#[derive(Clone, Debug)]
pub(crate) struct Permutation {
    last: u32,
    /// The widths of the high and low parts in the first round (they swap each round).
    high_bits: u32,
    low_bits: u32,
    keys: [u32; ROUNDS],
}

/// A 64-bit seed for stream `salt`, part `part` of `seed`: distinct inputs give unrelated
/// streams.
pub(crate) fn derive_seed(seed: u64, salt: u64, part: u64) -> u64 {
    murmur3_64(
        murmur3_64(seed ^ 0x243f_6a88_85a3_08d3)
            ^ salt.wrapping_mul(0x9e37_79b9_7f4a_7c15)
            ^ part.rotate_left(32),
    )
}

impl Permutation {
    /// The permutation of `[0, last]` chosen by `seed`.
    pub(crate) fn new(seed: u64, last: u32) -> Self {
        let bits = (32 - last.leading_zeros()).max(2);
        let keys = std::array::from_fn(|round| derive_seed(seed, 0x5eed, round as u64) as u32);
        Permutation {
            last,
            high_bits: bits / 2,
            low_bits: bits - bits / 2,
            keys,
        }
    }

    /// The image of `i`, for `i <= last`.
    pub(crate) fn apply(&self, i: u32) -> u32 {
        debug_assert!(i <= self.last);
        let mut x = self.network(i);
        while x > self.last {
            x = self.network(x);
        }
        x
    }

    fn network(&self, mut x: u32) -> u32 {
        let mask = |bits: u32| (1u32 << bits) - 1;
        let (mut high_bits, mut low_bits) = (self.high_bits, self.low_bits);
        for key in self.keys {
            let (high, low) = (x >> low_bits, x & mask(low_bits));
            // Both parts have at most 16 bits: no shift reaches 32.
            x = (low << high_bits) | (high ^ (murmur3_32(low ^ key) & mask(high_bits)));
            std::mem::swap(&mut high_bits, &mut low_bits);
        }
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_small_range_is_permuted() {
        for last in 0..300u32 {
            for seed in 0..3 {
                let p = Permutation::new(seed, last);
                let mut seen = vec![false; last as usize + 1];
                for i in 0..=last {
                    let y = p.apply(i) as usize;
                    assert!(!seen[y], "last {last} seed {seed}: {y} twice");
                    seen[y] = true;
                }
            }
        }
    }

    #[test]
    fn the_full_range_is_injective_on_a_sample() {
        let p = Permutation::new(5, u32::MAX);
        let mut images: Vec<u32> = (0..100_000).map(|i| p.apply(i)).collect();
        images.sort_unstable();
        images.dedup();
        assert_eq!(images.len(), 100_000);
        assert!(images.iter().any(|&y| y > u32::MAX / 2));
    }

    #[test]
    fn seeds_choose_different_orders_that_look_shuffled() {
        let a: Vec<u32> = (0..64)
            .map(|i| Permutation::new(1, 9999).apply(i))
            .collect();
        let b: Vec<u32> = (0..64)
            .map(|i| Permutation::new(2, 9999).apply(i))
            .collect();
        assert_ne!(a, b);
        let ascending = a.windows(2).filter(|w| w[1] == w[0] + 1).count();
        assert!(ascending < 3, "{ascending} consecutive images in {a:?}");
    }
}
