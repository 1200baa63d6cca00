//! [`SlabHashStats`]: the shape and memory use of a table, as the paper measures them.

/// Shape and memory use of a slab hash.
///
/// # Examples
/// ```
/// use gpuds_slabhash::SlabHashStats;
/// // Two buckets, one with 1 slab and one with 3; 40 pairs of 8 bytes in 4 slabs.
/// let s = SlabHashStats::from_census(&[1, 3], 40, 42, 15, 8, 0);
/// assert_eq!(s.slab_histogram, vec![0, 1, 0, 1]);
/// assert_eq!(s.slabs, 4);
/// assert!((s.memory_utilization - 40.0 * 8.0 / 512.0).abs() < 1e-12);
/// assert!((s.beta - 40.0 / 30.0).abs() < 1e-12);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct SlabHashStats {
    /// Buckets B.
    pub buckets: u64,
    /// Live elements n.
    pub len: u64,
    /// Deleted elements still holding a slot (until FLUSH).
    pub tombstones: u64,
    /// Slabs in all, base slabs included.
    pub slabs: u64,
    /// `slab_histogram[s]`: buckets whose list has `s` slabs.
    pub slab_histogram: Vec<u64>,
    /// The paper's average slab count β = n / (M·B), M elements per slab (§III-C).
    pub beta: f64,
    /// Measured slabs per bucket (at least 1: the base slab).
    pub mean_slabs_per_bucket: f64,
    /// The paper's memory utilization: bytes of stored elements over bytes of slabs,
    /// x·n / (128·slabs) (§III-C); at most 15·8/128 = 0.9375 for maps.
    pub memory_utilization: f64,
    /// Bytes of slabs in use (base slabs and linked slabs).
    pub slab_bytes: u64,
    /// Bytes of device memory the slab pool holds (in use or not).
    pub pool_bytes: u64,
}

impl SlabHashStats {
    /// Statistics from the slab count of every bucket, the live and claimed element
    /// counts, M elements of `element_bytes` per slab, and the pool's bytes.
    pub fn from_census(
        slabs_per_bucket: &[u32],
        len: u64,
        claimed: u64,
        slots_per_slab: u32,
        element_bytes: u32,
        pool_bytes: u64,
    ) -> Self {
        let buckets = slabs_per_bucket.len() as u64;
        let longest = slabs_per_bucket.iter().copied().max().unwrap_or(0) as usize;
        let mut slab_histogram = vec![0u64; longest + 1];
        for &s in slabs_per_bucket {
            slab_histogram[s as usize] += 1;
        }
        let slabs: u64 = slabs_per_bucket.iter().map(|&s| s as u64).sum();
        let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
        Self {
            buckets,
            len,
            tombstones: claimed.saturating_sub(len),
            slabs,
            slab_histogram,
            beta: ratio(len as f64, slots_per_slab as f64 * buckets as f64),
            mean_slabs_per_bucket: ratio(slabs as f64, buckets as f64),
            memory_utilization: ratio(element_bytes as f64 * len as f64, 128.0 * slabs as f64),
            slab_bytes: slabs * 128,
            pool_bytes,
        }
    }
}
