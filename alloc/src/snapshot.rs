//! [`PoolSnapshot`]: a host copy of the pool, for validators and tests.

use crate::address::{block_index, NULL_UNIT, UNITS_PER_BLOCK, WORDS_PER_BLOCK};

/// A host copy of a pool: its bitmap and the contents of every unit.
///
/// # Examples
/// ```no_run
/// use gpuds_alloc::{SlabAlloc, SlabAllocConfig};
/// let gpu = gpuds_core::Gpu::new(0)?;
/// let pool = SlabAlloc::new(&gpu, SlabAllocConfig::default())?;
/// let snapshot = pool.snapshot()?;
/// assert_eq!(snapshot.units_in_use(), 0);
/// assert!(snapshot.unit(0).is_some());
/// # Ok::<(), gpuds_alloc::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolSnapshot {
    pub(crate) unit_bytes: u32,
    pub(crate) log_blocks_per_super: u32,
    pub(crate) bitmap: Vec<u32>,
    /// Every unit's words, memory block after memory block.
    pub(crate) words: Vec<u32>,
}

impl PoolSnapshot {
    /// Memory blocks in the pool.
    pub fn blocks(&self) -> u64 {
        (self.bitmap.len() / WORDS_PER_BLOCK as usize) as u64
    }

    /// Bytes per unit.
    pub fn unit_bytes(&self) -> u32 {
        self.unit_bytes
    }

    fn index(&self, a: u32) -> Option<usize> {
        if a == NULL_UNIT {
            return None;
        }
        let g = block_index(a, self.log_blocks_per_super) as u64;
        let in_super = (a >> 10) & 0x3FFF;
        if g >= self.blocks() || (in_super >> self.log_blocks_per_super) != 0 {
            return None;
        }
        Some((g * UNITS_PER_BLOCK as u64 + (a & 0x3FF) as u64) as usize)
    }

    /// True when `a` is a unit of the pool and its bit is set.
    pub fn is_allocated(&self, a: u32) -> bool {
        self.index(a)
            .is_some_and(|i| self.bitmap[i / 32] & (1 << (i % 32)) != 0)
    }

    /// The unit's words, or `None` when `a` is not a unit of the pool.
    pub fn unit(&self, a: u32) -> Option<&[u32]> {
        let per_unit = (self.unit_bytes / 4) as usize;
        self.index(a)
            .map(|i| &self.words[i * per_unit..(i + 1) * per_unit])
    }

    /// Units whose bit is set.
    pub fn units_in_use(&self) -> u64 {
        self.bitmap.iter().map(|w| w.count_ones() as u64).sum()
    }

    /// Every allocated address, in pool order.
    pub fn allocated(&self) -> Vec<u32> {
        let mut out = Vec::new();
        for (w, &word) in self.bitmap.iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                let i = w as u32 * 32 + bits.trailing_zeros();
                bits &= bits - 1;
                let g = i / UNITS_PER_BLOCK;
                out.push(crate::address::address(
                    g,
                    i % UNITS_PER_BLOCK,
                    self.log_blocks_per_super,
                ));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::address::address;

    fn sample(log: u32) -> PoolSnapshot {
        let blocks = 3usize;
        let mut bitmap = vec![0u32; blocks * 32];
        bitmap[0] = 0b101; // block 0, units 0 and 2
        bitmap[2 * 32 + 31] = 1 << 31; // block 2, unit 1023
        let words = (0..blocks * 1024 * 16).map(|i| i as u32).collect();
        PoolSnapshot {
            unit_bytes: 64,
            log_blocks_per_super: log,
            bitmap,
            words,
        }
    }

    #[test]
    fn lookups_follow_the_layout() {
        for log in [0, 1, 14] {
            let s = sample(log);
            assert_eq!(s.units_in_use(), 3);
            let last = address(2, 1023, log);
            assert!(s.is_allocated(address(0, 0, log)));
            assert!(!s.is_allocated(address(0, 1, log)));
            assert!(s.is_allocated(last));
            assert_eq!(s.unit(last).unwrap()[0], (2 * 1024 + 1023) * 16);
            assert_eq!(
                s.allocated(),
                vec![address(0, 0, log), address(0, 2, log), last]
            );
            assert!(s.unit(address(3, 0, log)).is_none());
            assert!(s.unit(NULL_UNIT).is_none());
        }
        // With one block per super block, memory block 1 of super block 0 does not exist.
        assert!(sample(0).unit(1 << 10).is_none());
    }
}
