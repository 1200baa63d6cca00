//! The input sequences of the oversubscription paper (Patel et al., 2026, §5.1, Table 2).
//!
//! Each is a stream of 32-bit keys of a given length `NUM_INS` with a distinct access
//! pattern. "Dense" sequences draw their keys from `[1, NUM_INS]`, "sparse" ones from the
//! whole 32-bit range; the paper randomizes within blocks of 5×10^8 (10^9 for DUL), which
//! [`SequenceSpec`] keeps as defaults and lets tests shrink.
//!
//! Where the paper's text and its table differ we follow the text and say so:
//! sparse keys lie in `[1, u32::MAX - 1]` (the table writes `UINT32_MAX`; the text's
//! bound also keeps clear of the all-ones sentinel most tables reserve). Keys are
//! returned as any [`DeviceKey`] type holding these 32-bit values.

use gpuds_core::DeviceKey;
use rand::rngs::ChaCha8Rng;
use rand::seq::SliceRandom;
use rand::SeedableRng;

use super::keys::{par_map, UniqueKeys};
use super::permute::{mix64, Permutation};

/// The largest sparse key: the text's `UINT32_MAX - 1`.
pub const SPARSE_MAX: u64 = u32::MAX as u64 - 1;

/// One of the paper's eight input sequences.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Sequence {
    /// Monotonically Increasing: `1, 2, ..., NUM_INS`.
    MI,
    /// Dense Unique: every key of `[1, NUM_INS]` once; positions are cut into blocks of
    /// `block` keys, block `i` holds exactly the keys `(i·block, (i+1)·block]` in random
    /// order, and the blocks follow each other in increasing order.
    DU,
    /// Dense Repeat: DU's blocks, but in every block a fraction `repeat` (20%) of the
    /// positions repeat another key of the same block, so each block holds that many
    /// fewer distinct keys (a random subset of the block's range).
    DR,
    /// Sparse Unique: `NUM_INS` distinct random keys of `[1, SPARSE_MAX]`, random order.
    SU,
    /// Sparse Repeat: SU, but a fraction `repeat` (20%) of the positions repeat a key
    /// that also appears elsewhere in the sequence.
    SR,
    /// Sparse Unique Random: distinct random keys of `[1, SPARSE_MAX]`, grouped by value
    /// into blocks of `block` consecutive key values (block `i` covers
    /// `(i·block, (i+1)·block]`); random order within a block, the blocks in random order.
    /// Each block gets a share of the keys proportional to its width.
    SUR,
    /// Dense Unique-like: distinct random keys of `[1, R]`, where `R` is `NUM_INS` rounded
    /// up to a multiple of `dul_block` (10^9; the paper's "nearest 10^9", rounded up so
    /// that `NUM_INS` distinct keys fit), shuffled within value blocks of `dul_block`
    /// that follow each other in increasing order. When `NUM_INS` is a multiple of
    /// `dul_block` this is DU with blocks of `dul_block`.
    DUL,
    /// Zigzag: `1, SPARSE_MAX, 2, SPARSE_MAX - 1, 3, ...`, i.e. the paper's
    /// `1, UINT32_MAX - 1, 2, UINT32_MAX - 2, 3, ...`.
    ZZ,
}

impl Sequence {
    /// All eight, in the paper's order.
    pub const ALL: [Sequence; 8] = [
        Sequence::MI,
        Sequence::DU,
        Sequence::DR,
        Sequence::SU,
        Sequence::SR,
        Sequence::SUR,
        Sequence::DUL,
        Sequence::ZZ,
    ];

    /// The paper's abbreviation.
    pub fn name(self) -> &'static str {
        match self {
            Sequence::MI => "MI",
            Sequence::DU => "DU",
            Sequence::DR => "DR",
            Sequence::SU => "SU",
            Sequence::SR => "SR",
            Sequence::SUR => "SUR",
            Sequence::DUL => "DUL",
            Sequence::ZZ => "ZZ",
        }
    }

    /// `len` keys of this sequence with the paper's block sizes.
    ///
    /// # Examples
    /// ```
    /// use gpuds_testkit::workload::Sequence;
    /// assert_eq!(Sequence::MI.generate::<u32>(4, 0), vec![1, 2, 3, 4]);
    /// assert_eq!(Sequence::ZZ.generate::<u32>(4, 0), vec![1, u32::MAX - 1, 2, u32::MAX - 2]);
    /// let mut du = Sequence::DU.generate::<u64>(1000, 7);
    /// du.sort();
    /// assert_eq!(du, (1..=1000).collect::<Vec<u64>>());
    /// ```
    pub fn generate<K: DeviceKey>(self, len: u64, seed: u64) -> Vec<K> {
        SequenceSpec::new(self, len, seed).generate()
    }
}

/// A sequence with all its parameters.
///
/// # Examples
/// ```
/// use gpuds_testkit::workload::{Sequence, SequenceSpec};
/// let spec = SequenceSpec { block: 100, ..SequenceSpec::new(Sequence::DR, 1000, 3) };
/// let keys: Vec<u32> = spec.generate();
/// let distinct: std::collections::HashSet<_> = keys.iter().collect();
/// assert_eq!(distinct.len(), 800);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SequenceSpec {
    /// Which sequence.
    pub sequence: Sequence,
    /// `NUM_INS`, the number of keys.
    pub len: u64,
    /// The seed of every random choice.
    pub seed: u64,
    /// The randomization block of DU, DR and SUR (the paper: 5×10^8).
    pub block: u64,
    /// The randomization block of DUL (the paper: 10^9).
    pub dul_block: u64,
    /// The fraction of repeated positions of DR and SR (the paper: 0.2).
    pub repeat: f64,
}

impl SequenceSpec {
    /// The paper's parameters for `sequence` of `len` keys.
    pub fn new(sequence: Sequence, len: u64, seed: u64) -> Self {
        SequenceSpec {
            sequence,
            len,
            seed,
            block: 500_000_000,
            dul_block: 1_000_000_000,
            repeat: 0.2,
        }
    }

    /// The keys, computed on all cores (2^26 keys take well under a second in release).
    ///
    /// # Panics
    /// If `len` exceeds the sequence's key range, a block size is zero, or `repeat` is
    /// outside `[0, 1)`.
    pub fn generate<K: DeviceKey>(&self) -> Vec<K> {
        let n = self.len;
        assert!(self.block > 0 && self.dul_block > 0, "zero block size");
        assert!(
            (0.0..1.0).contains(&self.repeat),
            "repeat must be in [0, 1)"
        );
        let out = |v: u64| K::from_u64(v);
        match self.sequence {
            Sequence::MI => par_map(0..n, K::from_u64(0), |j| out(j + 1)),
            Sequence::DU => self.value_blocks(n, n, self.block, false),
            Sequence::DR => self.dense_repeat(),
            Sequence::SU => {
                assert!(n <= SPARSE_MAX, "SU holds at most {SPARSE_MAX} keys");
                let keys = UniqueKeys::<u64>::in_range(self.seed, 1, SPARSE_MAX, &[]);
                par_map(0..n, K::from_u64(0), |j| out(keys.key(j)))
            }
            Sequence::SR => self.sparse_repeat(),
            Sequence::SUR => self.value_blocks(n, SPARSE_MAX, self.block, true),
            Sequence::DUL => {
                let range = n.div_ceil(self.dul_block).max(1) * self.dul_block;
                self.value_blocks(n, range, self.dul_block, false)
            }
            Sequence::ZZ => {
                assert!(n <= SPARSE_MAX, "ZZ holds at most {SPARSE_MAX} keys");
                par_map(0..n, K::from_u64(0), |j| {
                    out(if j % 2 == 0 {
                        j / 2 + 1
                    } else {
                        SPARSE_MAX + 1 - j.div_ceil(2)
                    })
                })
            }
        }
    }

    fn block_seed(&self, salt: u64, block: u64) -> u64 {
        mix64(self.seed ^ mix64(salt.wrapping_mul(0x1000_0000_01b3) ^ block))
    }

    /// `n` distinct keys of `[1, range]`: value blocks of `width` keys each get a share
    /// of `n` proportional to their width, drawn as a prefix of a per-block permutation
    /// (a random subset in random order); blocks in increasing or shuffled order.
    fn value_blocks<K: DeviceKey>(&self, n: u64, range: u64, width: u64, shuffle: bool) -> Vec<K> {
        assert!(n <= range, "{n} distinct keys do not fit in [1, {range}]");
        let blocks = range.div_ceil(width);
        let widths: Vec<u64> = (0..blocks).map(|b| width.min(range - b * width)).collect();
        let mut counts: Vec<u64> = widths
            .iter()
            .map(|&w| (n as u128 * w as u128 / range as u128) as u64)
            .collect();
        let mut short = n - counts.iter().sum::<u64>();
        for (c, &w) in counts.iter_mut().zip(&widths) {
            let extra = short.min(w - *c);
            *c += extra;
            short -= extra;
        }
        let mut order: Vec<u64> = (0..blocks).collect();
        if shuffle {
            order.shuffle(&mut ChaCha8Rng::seed_from_u64(self.seed));
        }
        let perms: Vec<Permutation> = (0..blocks)
            .map(|b| Permutation::new(self.block_seed(1, b), widths[b as usize] - 1))
            .collect();
        // starts[i]: the first position of the i-th block in output order.
        let mut starts = Vec::with_capacity(order.len());
        let mut at = 0;
        for &b in &order {
            starts.push(at);
            at += counts[b as usize];
        }
        par_map(0..n, K::from_u64(0), |j| {
            let i = starts.partition_point(|&s| s <= j) - 1;
            let b = order[i];
            K::from_u64(1 + b * width + perms[b as usize].apply(j - starts[i]))
        })
    }

    /// DU's position blocks, with `repeat` of each block's positions copying another
    /// position's key of the same block.
    fn dense_repeat<K: DeviceKey>(&self) -> Vec<K> {
        let (n, width) = (self.len, self.block);
        let blocks = n.div_ceil(width);
        let plan: Vec<(Permutation, Permutation, u64)> = (0..blocks)
            .map(|b| {
                let len = width.min(n - b * width);
                let distinct = len - (len as f64 * self.repeat) as u64;
                let positions = Permutation::new(self.block_seed(2, b), len - 1);
                let values = Permutation::new(self.block_seed(3, b), len - 1);
                (positions, values, distinct)
            })
            .collect();
        par_map(0..n, K::from_u64(0), |j| {
            let b = j / width;
            let (positions, values, distinct) = &plan[b as usize];
            let slot = repeat_slot(positions.apply(j - b * width), *distinct, self.seed);
            K::from_u64(1 + b * width + values.apply(slot))
        })
    }

    /// SU, with `repeat` of the positions copying another position's key.
    fn sparse_repeat<K: DeviceKey>(&self) -> Vec<K> {
        let n = self.len;
        assert!(n <= SPARSE_MAX, "SR holds at most {SPARSE_MAX} keys");
        if n == 0 {
            return Vec::new();
        }
        let distinct = n - (n as f64 * self.repeat) as u64;
        let positions = Permutation::new(self.block_seed(4, 0), n - 1);
        let keys = UniqueKeys::<u64>::in_range(self.seed, 1, SPARSE_MAX, &[]);
        par_map(0..n, K::from_u64(0), |j| {
            K::from_u64(keys.key(repeat_slot(positions.apply(j), distinct, self.seed)))
        })
    }
}

/// Slots below `distinct` keep their own key; the others copy a pseudo-random one of
/// them, so exactly `distinct` different keys appear.
fn repeat_slot(slot: u64, distinct: u64, seed: u64) -> u64 {
    if slot < distinct {
        slot
    } else {
        mix64(slot ^ mix64(seed)) % distinct
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn spec(sequence: Sequence, len: u64) -> SequenceSpec {
        SequenceSpec {
            block: 1000,
            dul_block: 3000,
            ..SequenceSpec::new(sequence, len, 99)
        }
    }

    fn distinct(keys: &[u32]) -> usize {
        keys.iter().collect::<HashSet<_>>().len()
    }

    /// The value blocks of `width` met in output order, one entry per run.
    fn runs(keys: &[u32], width: u64) -> Vec<u64> {
        let mut runs: Vec<u64> = keys.iter().map(|&k| (k as u64 - 1) / width).collect();
        runs.dedup();
        runs
    }

    #[test]
    fn monotone_and_zigzag_are_exact() {
        assert_eq!(spec(Sequence::MI, 5).generate::<u32>(), vec![1, 2, 3, 4, 5]);
        let zz = spec(Sequence::ZZ, 6).generate::<u64>();
        let m = u32::MAX as u64;
        assert_eq!(zz, vec![1, m - 1, 2, m - 2, 3, m - 3]);
    }

    #[test]
    fn dense_unique_shuffles_within_position_blocks() {
        let keys: Vec<u32> = spec(Sequence::DU, 4500).generate();
        for (b, block) in keys.chunks(1000).enumerate() {
            let mut sorted = block.to_vec();
            sorted.sort_unstable();
            let lo = b as u32 * 1000 + 1;
            assert_eq!(sorted, (lo..lo + block.len() as u32).collect::<Vec<_>>());
            assert_ne!(sorted, block, "block {b} not shuffled");
        }
    }

    #[test]
    fn dense_repeat_repeats_a_fifth_within_blocks() {
        let keys: Vec<u32> = spec(Sequence::DR, 4500).generate();
        for (b, block) in keys.chunks(1000).enumerate() {
            let lo = b as u32 * 1000 + 1;
            assert!(block.iter().all(|k| (lo..lo + 1000).contains(k)));
            assert_eq!(distinct(block), block.len() - block.len() / 5);
        }
    }

    #[test]
    fn sparse_unique_and_repeat() {
        let su: Vec<u32> = spec(Sequence::SU, 20_000).generate();
        assert_eq!(distinct(&su), 20_000);
        assert!(su.iter().all(|&k| (1..u32::MAX).contains(&k)));
        assert!(su.iter().any(|&k| k > u32::MAX / 2));
        let sr: Vec<u32> = spec(Sequence::SR, 20_000).generate();
        assert_eq!(distinct(&sr), 16_000);
        assert!(sr.iter().all(|&k| (1..u32::MAX).contains(&k)));
    }

    #[test]
    fn sparse_unique_random_groups_value_blocks_in_random_order() {
        let width = 1 << 29;
        let s = SequenceSpec {
            block: width,
            ..SequenceSpec::new(Sequence::SUR, 10_000, 5)
        };
        let keys: Vec<u32> = s.generate();
        assert_eq!(distinct(&keys), 10_000);
        let order = runs(&keys, width);
        assert_eq!(order.len(), 8, "each value block is one run: {order:?}");
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..8).collect::<Vec<_>>());
        assert_ne!(order, sorted, "blocks not shuffled");
    }

    #[test]
    fn dense_unique_like_rounds_the_range_up() {
        let keys: Vec<u32> = spec(Sequence::DUL, 4000).generate();
        assert_eq!(distinct(&keys), 4000);
        assert!(keys.iter().all(|&k| (1..=6000).contains(&k)));
        assert!(keys.iter().any(|&k| k > 4000));
        assert_eq!(runs(&keys, 3000), vec![0, 1]);
        // A multiple of the block is exactly DU with that block.
        let mut full: Vec<u32> = spec(Sequence::DUL, 6000).generate();
        full.sort_unstable();
        assert_eq!(full, (1..=6000).collect::<Vec<_>>());
    }

    #[test]
    fn sequences_are_reproducible_and_seeded() {
        for seq in Sequence::ALL {
            let a: Vec<u32> = spec(seq, 3000).generate();
            assert_eq!(a.len(), 3000, "{}", seq.name());
            assert_eq!(a, spec(seq, 3000).generate::<u32>(), "{}", seq.name());
            let other = SequenceSpec {
                seed: 1,
                ..spec(seq, 3000)
            };
            let differs = a != other.generate::<u32>();
            assert_eq!(
                differs,
                !matches!(seq, Sequence::MI | Sequence::ZZ),
                "{}",
                seq.name()
            );
            assert!(spec(seq, 0).generate::<u32>().is_empty());
        }
    }

    #[test]
    fn paper_block_sizes_work_at_test_scale() {
        for seq in Sequence::ALL {
            let keys = seq.generate::<u32>(1 << 12, 3);
            assert_eq!(keys.len(), 1 << 12, "{}", seq.name());
        }
    }
}

#[cfg(test)]
mod large {
    use super::*;

    // Run with `cargo test --release -p gpuds-testkit -- --ignored` (2^26 keys each).
    #[test]
    #[ignore = "large: run in release"]
    fn every_sequence_at_two_to_the_26() {
        for seq in Sequence::ALL {
            let start = std::time::Instant::now();
            let keys = seq.generate::<u32>(1 << 26, 1);
            println!("{}: {:?}", seq.name(), start.elapsed());
            assert_eq!(keys.len(), 1 << 26);
        }
    }
}
