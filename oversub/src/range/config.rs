//! [`RangeTableConfig`]: how a range table is built.

use crate::error::{Error, Result};
use crate::flat::windows_for;
use crate::placement::Placement;

/// How a [`RangeTable`](super::RangeTable) is built.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RangeTableConfig {
    /// log2 of the keys per range (RNG = 2^range_bits; the paper's 2^20 by default).
    pub range_bits: u32,
    /// The load factor of a full inner table.
    pub load_factor: f64,
    /// Keys one inner table holds; 0 (the default, the paper's design) sizes it for every
    /// key of its range. A smaller number saves memory when keys are sparse (a few per
    /// range), and a range that gets more keys than that fails them with `TABLE_FULL`.
    pub inner_keys: u64,
    /// Keys per kernel launch (GBS; the paper's 10^9): larger batches are split.
    pub batch: usize,
    /// Where the inner tables live (the outer array is on the device).
    pub placement: Placement,
}

impl Default for RangeTableConfig {
    fn default() -> Self {
        Self {
            range_bits: 20,
            load_factor: 0.5,
            inner_keys: 0,
            batch: 1_000_000_000,
            placement: Placement::Device,
        }
    }
}

impl RangeTableConfig {
    /// Checks the configuration: range bits in 8 ..= 28, a load factor in (0, 1], a
    /// nonzero batch.
    pub fn validate(&self) -> Result<()> {
        if !(8..=28).contains(&self.range_bits) {
            return Err(Error::Config(format!(
                "range_bits must be in 8..=28, got {}",
                self.range_bits
            )));
        }
        if self.batch == 0 {
            return Err(Error::Config("batch must be at least 1".into()));
        }
        windows_for(self.keys_per_inner(), self.load_factor).map(|_| ())
    }

    /// Keys one inner table is sized for.
    pub fn keys_per_inner(&self) -> u64 {
        if self.inner_keys == 0 {
            1 << self.range_bits
        } else {
            self.inner_keys.min(1 << self.range_bits)
        }
    }
}
