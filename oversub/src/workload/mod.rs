//! The input sequences of Table 2 (MI, DU, DR, SU, SR, SUR, DUL, ZZ).
//!
//! Patel et al. (§5.1) evaluate every structure on eight key streams, each with its own
//! access pattern: dense or sparse keys, unique or 20 % repeated, sorted, shuffled
//! within blocks, or zigzagging between the two ends of the key range. [`Sequence`]
//! generates any of them at any length, seeded and deterministic, on the host, in
//! O(n) time on all cores (2^26 keys in about a second in release on two cores): unique
//! keys are images of a counter under a seeded Feistel permutation, never drawn and
//! checked against a set. [`values`] gives each key its value, [`search_queries`] mixes
//! in negative queries ([`absent_keys`]).
//!
//! Every key is a function of the sequence, `n`, the block, the seed and its position
//! alone (the order of SUR's blocks too: a seeded slot for the one short block and a
//! seeded permutation of the others), so the device generates the same keys one thread
//! per key: [`Sequence::device_keys`], [`device_values`], [`device_absent_keys`] and
//! [`device_search_queries`] return exactly what their host twins return, which stay
//! the reference.
//!
//! Every key lies in [`KEY_MIN`]`..=`[`KEY_MAX`], the paper's `[1, UINT32_MAX - 1]`:
//! `0` and `u32::MAX` are reserved by the tables.
//!
//! # Blocks
//!
//! The paper shuffles DU, DR and SUR within blocks of 5×10^8 keys and DUL within blocks
//! of 10^9, sizes meant for streams of billions of keys. [`Sequence::keys`] scales them
//! to the stream: `block = max(n / 8, 1)`, so that every sequence shows its shape (about
//! eight blocks, like the paper's 32-bit key range holds about eight blocks of 5×10^8)
//! at any `n` (DUL uses the same block, not twice DU's); [`Sequence::keys_with`] takes
//! the block explicitly (pass `500_000_000` for the paper's own).
//!
//! With `n` keys in blocks of `block` positions, block `b` holds
//! `L_b = min(block, n - b·block)` keys and owns the *value window*
//! `(⌊b·block·R/n⌋, ⌊(b·block + L_b)·R/n⌋]`, where `R` is the sequence's largest key
//! (`n` for DU and DR, the rounded-up `n` for DUL, [`KEY_MAX`] for SUR). The windows
//! tile `[1, R]` in order and each is at least `L_b` wide, so a block can hold `L_b`
//! distinct keys of its own window.
//!
//! # Examples
//!
//! ```
//! use gpuds_oversub::workload::{values, Sequence};
//!
//! assert_eq!(Sequence::Mi.keys(4, 0), vec![1, 2, 3, 4]);
//! assert_eq!(Sequence::Zz.keys(4, 0), vec![1, u32::MAX - 1, 2, u32::MAX - 2]);
//!
//! // DU is a permutation of 1..=n, shuffled within blocks.
//! let mut du = Sequence::Du.keys(1000, 7);
//! assert_eq!(du, Sequence::Du.keys(1000, 7));
//! du.sort_unstable();
//! assert_eq!(du, (1..=1000).collect::<Vec<u32>>());
//!
//! // The paper's block size, and values to go with the keys.
//! let su = Sequence::Su.keys_with(1 << 10, 3, 500_000_000);
//! assert_eq!(values(&su, 3).len(), su.len());
//! assert_eq!(Sequence::from_name("sur"), Some(Sequence::Sur));
//! ```

mod device;
mod fill;
mod order;
mod permute;
mod queries;

use std::fmt;
use std::ops::RangeInclusive;

pub use device::{device_absent_keys, device_search_queries, device_values};
use fill::fill_blocks;
use gpuds_core::hash::murmur3_32;
use order::BlockOrder;
pub(crate) use permute::derive_seed;
use permute::Permutation;
pub use queries::{absent_keys, search_queries};

/// The smallest key a sequence holds (`0` is reserved by the tables).
pub const KEY_MIN: u32 = 1;
/// The largest key a sequence holds (`u32::MAX` is reserved by the tables).
pub const KEY_MAX: u32 = u32::MAX - 1;

/// One of the eight input sequences of Table 2.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Sequence {
    /// Monotonically Increasing: `1, 2, ..., n`.
    Mi,
    /// Dense Unique: every key of `[1, n]` once; block `b` holds exactly the keys of its
    /// window `(b·block, b·block + L_b]` in random order, the blocks in increasing order.
    Du,
    /// Dense Repeat: DU's blocks and windows, but `⌊n/5⌋` positions (20 %) repeat
    /// another key of their own block (spread over the blocks in proportion to their
    /// length), so each block holds a random subset of its window, some keys twice.
    Dr,
    /// Sparse Unique: `n` distinct random keys of `[1, KEY_MAX]` in random order.
    Su,
    /// Sparse Repeat: SU, but `⌊n/5⌋` positions (20 %) repeat a key that appears
    /// elsewhere in the sequence.
    Sr,
    /// Sparse Unique Random: `n` distinct random keys of `[1, KEY_MAX]`; block `b`
    /// draws its `L_b` keys from its own value window (a random subset in random order),
    /// and the blocks come in a random order.
    Sur,
    /// Dense Unique-like: `n` distinct random keys of `[1, R]`, `R` being `n` rounded up
    /// to one significant decimal digit (the paper's "nearest 10^9 to NUM_INS" for its
    /// streams of a few 10^9 keys; at most [`KEY_MAX`]); block `b` draws its keys from
    /// its own window, the blocks in increasing order. When `R == n` this is DU.
    Dul,
    /// Zigzag: `1, KEY_MAX, 2, KEY_MAX - 1, 3, ...`, the paper's
    /// `1, UINT32_MAX - 1, 2, UINT32_MAX - 2, 3, ...`; all distinct while `n <= KEY_MAX`.
    Zz,
}

/// Salts of the independent random streams of one seed.
mod salt {
    pub const WINDOW: u64 = 1;
    pub const ORDER: u64 = 2;
    pub const POSITIONS: u64 = 3;
    pub const REPEAT: u64 = 4;
    pub const SPARSE: u64 = 5;
    pub const VALUE: u64 = 6;
    pub const ABSENT: u64 = 7;
}

impl Sequence {
    /// All eight, in the paper's order.
    pub const ALL: [Sequence; 8] = [
        Sequence::Mi,
        Sequence::Du,
        Sequence::Dr,
        Sequence::Su,
        Sequence::Sr,
        Sequence::Sur,
        Sequence::Dul,
        Sequence::Zz,
    ];

    /// The paper's abbreviation: `"MI"`, `"DU"`, ..., `"ZZ"`.
    pub fn name(self) -> &'static str {
        match self {
            Sequence::Mi => "MI",
            Sequence::Du => "DU",
            Sequence::Dr => "DR",
            Sequence::Su => "SU",
            Sequence::Sr => "SR",
            Sequence::Sur => "SUR",
            Sequence::Dul => "DUL",
            Sequence::Zz => "ZZ",
        }
    }

    /// The sequence whose abbreviation is `name`, in any case.
    ///
    /// ```
    /// use gpuds_oversub::workload::Sequence;
    /// assert_eq!(Sequence::from_name("DR"), Some(Sequence::Dr));
    /// assert_eq!(Sequence::from_name("zz"), Some(Sequence::Zz));
    /// assert_eq!(Sequence::from_name("XY"), None);
    /// ```
    pub fn from_name(name: &str) -> Option<Sequence> {
        Sequence::ALL
            .into_iter()
            .find(|s| s.name().eq_ignore_ascii_case(name))
    }

    /// Whether the sequence may hold a key more than once (DR and SR).
    pub fn repeats(self) -> bool {
        matches!(self, Sequence::Dr | Sequence::Sr)
    }

    /// The range every key of an `n`-key sequence lies in (`[1, R]` in the module
    /// documentation's terms; empty for `n == 0`).
    ///
    /// ```
    /// use gpuds_oversub::workload::{Sequence, KEY_MAX};
    /// assert_eq!(Sequence::Du.key_range(1000), 1..=1000);
    /// assert_eq!(Sequence::Dul.key_range(1234), 1..=2000);
    /// assert_eq!(Sequence::Su.key_range(10), 1..=KEY_MAX);
    /// ```
    pub fn key_range(self, n: usize) -> RangeInclusive<u32> {
        let largest = if n == 0 { 0 } else { self.largest(n) };
        KEY_MIN..=largest
    }

    /// `R`, for `n >= 1` keys.
    fn largest(self, n: usize) -> u32 {
        match self {
            Sequence::Mi | Sequence::Du | Sequence::Dr => n as u32,
            Sequence::Dul => round_up_one_digit(n as u64).min(KEY_MAX as u64) as u32,
            Sequence::Su | Sequence::Sr | Sequence::Sur | Sequence::Zz => KEY_MAX,
        }
    }

    /// The `n` keys of this sequence chosen by `seed`, with blocks of `max(n / 8, 1)`
    /// keys (see the module documentation). The same `(n, seed)` always gives the same
    /// keys.
    ///
    /// # Panics
    /// If `n > KEY_MAX` (no sequence holds more keys than the key range).
    pub fn keys(self, n: usize, seed: u64) -> Vec<u32> {
        self.keys_with(n, seed, (n / 8).max(1))
    }

    /// The `n` keys of this sequence chosen by `seed`, shuffled within blocks of `block`
    /// keys (only DU, DR, SUR and DUL have blocks; the others ignore it).
    ///
    /// ```
    /// use gpuds_oversub::workload::Sequence;
    /// let keys = Sequence::Du.keys_with(10, 1, 5);
    /// assert!(keys[..5].iter().all(|&k| (1..=5).contains(&k)));
    /// assert!(keys[5..].iter().all(|&k| (6..=10).contains(&k)));
    /// ```
    ///
    /// # Panics
    /// If `n > KEY_MAX` or `block == 0`.
    pub fn keys_with(self, n: usize, seed: u64, block: usize) -> Vec<u32> {
        assert!(
            block > 0,
            "the block of a sequence must hold at least one key"
        );
        assert!(
            n as u64 <= KEY_MAX as u64,
            "a sequence holds at most {KEY_MAX} keys, {n} asked"
        );
        if n == 0 {
            return Vec::new();
        }
        match self {
            Sequence::Mi => fill_blocks(n, &[0], |_| (), |_, j| j as u32 + 1),
            Sequence::Du | Sequence::Dul => windows(n, seed, block, self.largest(n), false),
            Sequence::Sur => windows(n, seed, block, KEY_MAX, true),
            Sequence::Dr => dense_repeat(n, seed, block),
            Sequence::Su => {
                let keys = sparse(seed);
                fill_blocks(n, &[0], |_| (), |_, j| 1 + keys.apply(j as u32))
            }
            Sequence::Sr => sparse_repeat(n, seed),
            Sequence::Zz => fill_blocks(
                n,
                &[0],
                |_| (),
                |_, j| {
                    let half = (j / 2) as u32;
                    if j % 2 == 0 {
                        KEY_MIN + half
                    } else {
                        KEY_MAX - half
                    }
                },
            ),
        }
    }
}

impl fmt::Display for Sequence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A value for each key: a seeded bijective mix of the key, so repeated keys carry the
/// same value and a batch's result does not depend on which copy of a key lands last.
///
/// ```
/// use gpuds_oversub::workload::values;
/// let v = values(&[5, 9, 5], 1);
/// assert_eq!(v[0], v[2]);
/// assert_ne!(v[0], v[1]);
/// ```
pub fn values(keys: &[u32], seed: u64) -> Vec<u32> {
    let key = derive_seed(seed, salt::VALUE, 0) as u32;
    fill_blocks(keys.len(), &[0], |_| (), |_, j| murmur3_32(keys[j] ^ key))
}

/// `n` rounded up to a multiple of the power of ten just below its leading digit.
fn round_up_one_digit(n: u64) -> u64 {
    let mut unit = 1;
    while n / unit >= 10 {
        unit *= 10;
    }
    n.div_ceil(unit) * unit
}

/// The permutation behind sparse keys: `1 + p(i)` runs over `[1, KEY_MAX]`.
fn sparse(seed: u64) -> Permutation {
    Permutation::new(derive_seed(seed, salt::SPARSE, 0), KEY_MAX - 1)
}

/// The first position of every block of `block` keys, in position order.
fn block_starts(n: usize, block: usize) -> Vec<usize> {
    (0..n.div_ceil(block)).map(|b| b * block).collect()
}

/// The lower edge (exclusive, as an offset from 0) of the value window that starts at
/// position `position` of `n` keys spread over `[1, largest]`.
fn window_edge(position: usize, n: usize, largest: u32) -> u32 {
    (position as u128 * largest as u128 / n as u128) as u32
}

/// DU, DUL and SUR: block `b` (in value order) takes `L_b` distinct keys of its window
/// as a prefix of a per-block permutation of the window; the blocks come in value order
/// or, with `shuffle`, in a seeded random [`BlockOrder`].
fn windows(n: usize, seed: u64, block: usize, largest: u32, shuffle: bool) -> Vec<u32> {
    let by_value = block_starts(n, block);
    let count = by_value.len();
    let len = |b: usize| block.min(n - by_value[b]);
    let (order, starts): (Vec<usize>, Vec<usize>) = if shuffle {
        let shuffled = BlockOrder::new(seed, count as u64);
        let last_len = len(count - 1) as u64;
        (0..count as u64)
            .map(|i| {
                (
                    shuffled.block_at(i) as usize,
                    shuffled.start(i, block as u64, last_len) as usize,
                )
            })
            .unzip()
    } else {
        ((0..count).collect(), by_value.clone())
    };
    fill_blocks(
        n,
        &starts,
        |i| {
            let b = order[i];
            let lo = window_edge(by_value[b], n, largest);
            let hi = window_edge(by_value[b] + len(b), n, largest);
            (
                lo,
                Permutation::new(derive_seed(seed, salt::WINDOW, b as u64), hi - lo - 1),
            )
        },
        |(lo, window), offset| 1 + lo + window.apply(offset as u32),
    )
}

/// Which slot a position of a repeating block reads: the first `distinct` slots keep
/// their own key, every later one copies a seeded pseudo-random one of them.
fn repeat_slot(slot: u32, distinct: u32, seed: u64, part: u64) -> u32 {
    if slot < distinct {
        slot
    } else {
        (derive_seed(seed, salt::REPEAT, part ^ ((slot as u64) << 32)) % distinct as u64) as u32
    }
}

/// DR: DU's blocks; positions of block `b` are permuted into slots, the slots past the
/// block's distinct count repeat an earlier slot's key.
fn dense_repeat(n: usize, seed: u64, block: usize) -> Vec<u32> {
    let starts = block_starts(n, block);
    fill_blocks(
        n,
        &starts,
        |b| {
            let (first, len) = (starts[b], block.min(n - starts[b]));
            // ⌊n/5⌋ repeats in all, spread so that the first blocks' share never rounds
            // to more than the block minus one key of its own.
            let repeats = ((first + len) / 5 - first / 5).min(len - 1);
            let positions =
                Permutation::new(derive_seed(seed, salt::POSITIONS, b as u64), len as u32 - 1);
            let keys = Permutation::new(derive_seed(seed, salt::WINDOW, b as u64), len as u32 - 1);
            (
                first as u32,
                (len - repeats) as u32,
                positions,
                keys,
                b as u64,
            )
        },
        |(first, distinct, positions, keys, b), offset| {
            let slot = repeat_slot(positions.apply(offset as u32), *distinct, seed, *b);
            1 + first + keys.apply(slot)
        },
    )
}

/// SR: SU's keys behind a permutation of the positions; `⌊n/5⌋` of the slots repeat.
fn sparse_repeat(n: usize, seed: u64) -> Vec<u32> {
    let distinct = (n - n / 5) as u32;
    let positions = Permutation::new(derive_seed(seed, salt::POSITIONS, 0), n as u32 - 1);
    let keys = sparse(seed);
    fill_blocks(
        n,
        &[0],
        |_| (),
        |_, j| 1 + keys.apply(repeat_slot(positions.apply(j as u32), distinct, seed, 0)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_significant_digit_rounds_up() {
        let cases = [
            (1, 1),
            (9, 9),
            (10, 10),
            (11, 20),
            (95, 100),
            (1234, 2000),
            (67_108_864, 70_000_000),
        ];
        for (n, r) in cases {
            assert_eq!(round_up_one_digit(n), r, "{n}");
        }
    }

    #[test]
    fn windows_tile_the_range_and_fit_their_blocks() {
        for (n, block, largest) in [
            (10, 4, 10),
            (10, 4, 20),
            (1000, 125, KEY_MAX),
            (7, 1, 7),
            (3, 8, 9),
        ] {
            let starts = block_starts(n, block);
            let mut prev_hi = 0;
            for &s in &starts {
                let len = block.min(n - s);
                let (lo, hi) = (window_edge(s, n, largest), window_edge(s + len, n, largest));
                assert_eq!(lo, prev_hi);
                assert!(
                    (hi - lo) as usize >= len,
                    "{n} {block} {largest}: window {lo}..{hi}"
                );
                prev_hi = hi;
            }
            assert_eq!(prev_hi, largest);
        }
    }
}
