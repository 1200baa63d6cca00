//! [`HiveStats`]: the shape and history of a HiveMap.

/// What [`HiveMap::stats`](super::HiveMap::stats) reports.
///
/// # Examples
/// ```no_run
/// use gpuds_hive::HiveMap;
/// let gpu = gpuds_core::Gpu::new(0)?;
/// let mut map = HiveMap::<u32, u32>::new(&gpu, 1 << 16)?;
/// map.insert_many(&[1, 2, 3], &[10, 20, 30])?;
/// let stats = map.stats()?;
/// assert_eq!(stats.len, 3);
/// assert_eq!(stats.insert_steps.iter().sum::<u64>(), 3);
/// # Ok::<(), gpuds_hive::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct HiveStats {
    /// Pairs stored (buckets and stash).
    pub len: usize,
    /// Slots in use: buckets times slots per bucket.
    pub capacity: usize,
    /// Buckets in use.
    pub buckets: usize,
    /// Buckets allocated (expansion grows the arrays by doubling).
    pub allocated_buckets: usize,
    /// `len / capacity`.
    pub load_factor: f64,
    /// The linear-hashing index mask, `2^level - 1`.
    pub level_mask: u32,
    /// The split pointer.
    pub split: u32,
    /// Stash entries holding a pair.
    pub stash_used: usize,
    /// Stash capacity in pairs.
    pub stash_capacity: usize,
    /// `stash_used / stash_capacity`.
    pub stash_occupancy: f64,
    /// Inserts since the table was made (or [`reset_counters`]) that finished in each
    /// step: replace, claim-then-commit, cuckoo eviction, stash.
    ///
    /// [`reset_counters`]: super::HiveMap::reset_counters
    pub insert_steps: [u64; 4],
    /// Keys displaced by cuckoo evictions, over the same period.
    pub evictions: u64,
    /// Expansion steps (K-bucket batches) run so far.
    pub expansions: u64,
    /// Contraction steps run so far.
    pub contractions: u64,
    /// Device memory held by the table, in bytes (with the bulk insert's queue).
    pub memory_bytes: usize,
}

impl HiveStats {
    /// The fraction of inserts that finished in each step.
    ///
    /// ```
    /// # use gpuds_hive::HiveStats;
    /// # let mut s = HiveStats { len: 0, capacity: 0, buckets: 0, allocated_buckets: 0,
    /// #   load_factor: 0.0, level_mask: 0, split: 0, stash_used: 0, stash_capacity: 0,
    /// #   stash_occupancy: 0.0, insert_steps: [0; 4], evictions: 0, expansions: 0,
    /// #   contractions: 0, memory_bytes: 0 };
    /// s.insert_steps = [1, 2, 1, 0];
    /// assert_eq!(s.step_fractions(), [0.25, 0.5, 0.25, 0.0]);
    /// ```
    pub fn step_fractions(&self) -> [f64; 4] {
        let total: u64 = self.insert_steps.iter().sum();
        if total == 0 {
            return [0.0; 4];
        }
        self.insert_steps.map(|c| c as f64 / total as f64)
    }
}
