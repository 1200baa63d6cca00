//! The order of SUR's blocks: a seeded shuffle that needs no sequential pass, so that
//! the block at any output slot (and the slot of any output position) is computed on
//! its own, on the host and on the device alike.
//!
//! Of the `count` blocks (in value order) only the last, `count - 1`, may be shorter than
//! the others. It goes to a seeded slot `s`; the other blocks fill the other slots in the
//! order of a seeded [`Permutation`] of `[0, count - 2]`. Every order of the blocks is
//! possible (a uniform slot for the short block, then any order of the rest), and the
//! start of slot `i` in the output is `i·block`, less the short block's shortfall when
//! `i > s`.

use super::permute::{derive_seed, Permutation};
use super::salt;

/// SUR's block order for one seed and block count.
#[derive(Clone, Debug)]
pub(crate) struct BlockOrder {
    count: u64,
    /// The output slot of the last block.
    last_slot: u64,
    /// The order of the other blocks over the other slots (none when there is one block).
    rest: Option<Permutation>,
}

impl BlockOrder {
    /// The order of `count >= 1` blocks chosen by `seed`.
    pub(crate) fn new(seed: u64, count: u64) -> Self {
        debug_assert!(count >= 1 && count - 1 <= u32::MAX as u64);
        BlockOrder {
            count,
            last_slot: derive_seed(seed, salt::ORDER, 0) % count,
            rest: (count >= 2)
                .then(|| Permutation::new(derive_seed(seed, salt::ORDER, 1), (count - 2) as u32)),
        }
    }

    /// The block (in value order) at output slot `slot < count`.
    pub(crate) fn block_at(&self, slot: u64) -> u64 {
        match &self.rest {
            Some(rest) if slot != self.last_slot => {
                let other = slot - u64::from(slot > self.last_slot);
                rest.apply(other as u32) as u64
            }
            _ => self.count - 1,
        }
    }

    /// The first output position of slot `slot`, for blocks of `block` positions of
    /// which the last (in value order) holds `last_len`.
    pub(crate) fn start(&self, slot: u64, block: u64, last_len: u64) -> u64 {
        slot * block
            - if slot > self.last_slot {
                block - last_len
            } else {
                0
            }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_order_is_a_permutation_with_contiguous_slots() {
        for count in 1..40u64 {
            for seed in 0..4 {
                let order = BlockOrder::new(seed, count);
                let mut blocks: Vec<u64> = (0..count).map(|i| order.block_at(i)).collect();
                let (block, last_len) = (10, 1 + seed % 10);
                let mut at = 0;
                for i in 0..count {
                    assert_eq!(order.start(i, block, last_len), at, "{count} {seed} {i}");
                    at += if blocks[i as usize] == count - 1 {
                        last_len
                    } else {
                        block
                    };
                }
                blocks.sort_unstable();
                assert_eq!(blocks, (0..count).collect::<Vec<_>>(), "{count} {seed}");
            }
        }
    }

    #[test]
    fn the_short_block_moves_with_the_seed() {
        let slots: std::collections::HashSet<u64> = (0..64)
            .map(|seed| BlockOrder::new(seed, 8))
            .map(|o| (0..8).find(|&i| o.block_at(i) == 7).unwrap())
            .collect();
        assert!(slots.len() >= 6, "{slots:?}");
    }
}
