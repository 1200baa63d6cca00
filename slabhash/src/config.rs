//! [`SlabHashConfig`]: buckets, hash seed, key uniqueness and the slab pool.

use gpuds_alloc::SlabAllocConfig;

use crate::error::{Error, Result};

/// The average slab count β = n / (M·B) that [`SlabHashConfig::for_len`] aims at: the
/// paper's best range is 0.2–0.7 (§VI-A, Fig. 4), and 0.7 gives about 60 % memory
/// utilization for maps.
pub const DEFAULT_BETA: f64 = 0.7;

/// How a table is built.
///
/// # Examples
/// ```
/// use gpuds_slabhash::SlabHashConfig;
/// let c = SlabHashConfig::for_len(1 << 20, 15);
/// assert_eq!(c.buckets, 99_865); // 2^20 / (15 * 0.7), rounded up
/// assert!(c.validate().is_ok());
/// let bad = SlabHashConfig { buckets: 0, ..c };
/// assert!(bad.validate().unwrap_err().to_string().contains("buckets"));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct SlabHashConfig {
    /// Number of buckets B (base slabs, allocated up front: 128 bytes each).
    pub buckets: u32,
    /// Seed of the universal hash's random a and b.
    pub seed: u64,
    /// Maps: `true` (the default) keeps keys unique (REPLACE); `false` allows duplicate
    /// keys (a multimap: INSERT adds instances). Sets are always unique.
    pub unique_keys: bool,
    /// The slab pool for slabs beyond the base slabs (128-byte units).
    pub alloc: SlabAllocConfig,
    /// The most slabs one bucket's list may have (the base slab included), which is also
    /// the most slabs a request visits. An insert never makes a list longer: one whose
    /// list is full at the cap fails alone ([`LIST_FULL`](crate::LIST_FULL)), so every
    /// read always walks a whole list. A request that would visit more slabs (only on a
    /// corrupted list) fails with `Status::RETRY_LIMIT`, so the cap bounds every kernel.
    /// Re-reads of one slab after lost races are bounded separately (by the cap, at
    /// least 4,096). `0` picks a bound from the pool's maximum size.
    pub step_cap: u32,
}

impl Default for SlabHashConfig {
    fn default() -> Self {
        Self {
            buckets: 1024,
            seed: 0x5eed_51ab,
            unique_keys: true,
            alloc: SlabAllocConfig::default(),
            step_cap: 0,
        }
    }
}

impl SlabHashConfig {
    /// A configuration for about `expected_len` elements at `slots_per_slab` elements
    /// per slab (15 for maps, 30 for sets) and β = [`DEFAULT_BETA`].
    pub fn for_len(expected_len: usize, slots_per_slab: u32) -> Self {
        Self {
            buckets: buckets_for(expected_len, slots_per_slab, DEFAULT_BETA),
            ..Self::default()
        }
    }

    /// Checks every field; the error says which is wrong and why (more buckets than
    /// [`MAX_BUCKETS`], or a pool past its limits, is a
    /// [`CapacityOverflow`](gpuds_core::Error::CapacityOverflow)).
    pub fn validate(&self) -> Result<()> {
        if self.buckets == 0 {
            return Err(Error::InvalidConfig(format!(
                "buckets is 0, must be 1 to {MAX_BUCKETS}"
            )));
        }
        if self.buckets > MAX_BUCKETS {
            return Err(gpuds_core::Error::CapacityOverflow(format!(
                "buckets is {}, must be 1 to {MAX_BUCKETS}",
                self.buckets
            ))
            .into());
        }
        if self.alloc.unit_bytes != 128 {
            return Err(Error::InvalidConfig(format!(
                "alloc.unit_bytes is {}, slabs are 128 bytes",
                self.alloc.unit_bytes
            )));
        }
        self.alloc.validate()?;
        Ok(())
    }

    /// The step cap kernels get: the configured one, or one more than the longest list
    /// the pool could hold, plus room for retries.
    pub(crate) fn effective_step_cap(&self) -> u32 {
        if self.step_cap != 0 {
            return self.step_cap;
        }
        self.alloc
            .max_units
            .saturating_add(1 << 16)
            .min(u32::MAX as u64) as u32
    }
}

/// The most buckets a table may have: 2^27 base slabs are 16 GiB.
pub const MAX_BUCKETS: u32 = 1 << 27;

/// Buckets for `len` elements at `slots_per_slab` elements per slab and average slab
/// count `beta`: ⌈len / (slots · β)⌉, at least 1.
///
/// # Examples
/// ```
/// assert_eq!(gpuds_slabhash::buckets_for(0, 15, 0.7), 1);
/// assert_eq!(gpuds_slabhash::buckets_for(1 << 24, 15, 0.7), 1_597_831);
/// ```
pub fn buckets_for(len: usize, slots_per_slab: u32, beta: f64) -> u32 {
    let b = (len as f64 / (slots_per_slab.max(1) as f64 * beta.max(1e-6))).ceil();
    b.clamp(1.0, MAX_BUCKETS as f64) as u32
}
