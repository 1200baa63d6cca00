//! A keyed permutation of an integer range: the source of every unique key stream.
//!
//! Drawing `n` unique keys with a hash set costs memory and time (2^26 keys would take
//! seconds and a gigabyte); a bijection of the range does not: the `i`-th key is the
//! image of `i`, so any prefix of the images is duplicate-free, two disjoint index ranges
//! give disjoint keys, and any key can be computed alone, in O(1).
//!
//! The bijection is a balanced Feistel network over the smallest even number of bits that
//! covers the range, with *cycle walking* for ranges that are not a power of four: an
//! image outside the range is permuted again until it lands inside (at most four steps
//! on average, because the network's domain is less than four times the range).

/// A seeded bijection of `[0, last]` onto itself.
///
/// # Examples
/// ```
/// use gpuds_testkit::workload::Permutation;
/// let p = Permutation::new(42, 9);
/// let mut images: Vec<u64> = (0..10).map(|i| p.apply(i)).collect();
/// images.sort();
/// assert_eq!(images, (0..10).collect::<Vec<u64>>());
/// assert_eq!(p.apply(3), Permutation::new(42, 9).apply(3));
/// ```
#[derive(Clone, Debug)]
pub struct Permutation {
    last: u64,
    half_bits: u32,
    keys: [u64; ROUNDS],
}

const ROUNDS: usize = 6;

/// The splitmix64 finalizer: a strong 64-bit mixer, used as the Feistel round function
/// and to derive round keys from the seed.
pub(crate) fn mix64(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

impl Permutation {
    /// A permutation of `[0, last]` chosen by `seed`.
    pub fn new(seed: u64, last: u64) -> Self {
        let bits = (64 - last.leading_zeros()).max(2);
        let half_bits = bits.div_ceil(2);
        let mut keys = [0; ROUNDS];
        let mut state = mix64(seed ^ 0x6a09_e667_f3bc_c908);
        for key in &mut keys {
            state = mix64(state.wrapping_add(0x9e37_79b9_7f4a_7c15));
            *key = state;
        }
        Permutation {
            last,
            half_bits,
            keys,
        }
    }

    /// The largest element of the permuted range.
    pub fn last(&self) -> u64 {
        self.last
    }

    /// The image of `i`. `i` must be at most [`last`](Self::last); larger values are
    /// reduced modulo the network's domain first, so the result is always in range.
    pub fn apply(&self, i: u64) -> u64 {
        let mut x = self.network(i & self.domain_mask());
        while x > self.last {
            x = self.network(x);
        }
        x
    }

    fn domain_mask(&self) -> u64 {
        if self.half_bits >= 32 {
            u64::MAX
        } else {
            (1u64 << (2 * self.half_bits)) - 1
        }
    }

    fn network(&self, x: u64) -> u64 {
        let h = self.half_bits;
        let mask = if h >= 64 { u64::MAX } else { (1u64 << h) - 1 };
        let mut left = (x >> h) & mask;
        let mut right = x & mask;
        for key in &self.keys {
            let next = left ^ (mix64(right ^ key) & mask);
            left = right;
            right = next;
        }
        (left << h) | right
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_ranges_are_permuted() {
        for last in 0..70u64 {
            for seed in 0..4 {
                let p = Permutation::new(seed, last);
                let mut seen = vec![false; last as usize + 1];
                for i in 0..=last {
                    let y = p.apply(i);
                    assert!(y <= last);
                    assert!(!seen[y as usize], "duplicate image {y} for last {last}");
                    seen[y as usize] = true;
                }
            }
        }
    }

    #[test]
    fn full_64_bit_range_is_injective_on_a_sample() {
        let p = Permutation::new(7, u64::MAX);
        let mut images: Vec<u64> = (0..10_000).map(|i| p.apply(i)).collect();
        images.sort_unstable();
        images.dedup();
        assert_eq!(images.len(), 10_000);
        assert_eq!(p.apply(u64::MAX), p.apply(u64::MAX));
    }

    #[test]
    fn seeds_give_different_orders() {
        let a: Vec<u64> = (0..32)
            .map(|i| Permutation::new(1, 1000).apply(i))
            .collect();
        let b: Vec<u64> = (0..32)
            .map(|i| Permutation::new(2, 1000).apply(i))
            .collect();
        assert_ne!(a, b);
    }

    #[test]
    fn images_look_shuffled() {
        // Consecutive inputs should not map to consecutive outputs.
        let p = Permutation::new(3, (1 << 20) - 1);
        let ascending = (0..1000)
            .filter(|&i| p.apply(i + 1) == p.apply(i) + 1)
            .count();
        assert!(ascending < 10, "{ascending} ascending neighbours");
    }
}
