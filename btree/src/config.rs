//! [`BTreeConfig`]: pool sizes, bulk-build fill, query tile and retry cap.

use crate::error::{Error, Result};
use crate::node::MAX_PAIRS;

/// Configuration of a [`crate::GpuBTreeMap`].
///
/// # Examples
/// ```
/// use gpuds_btree::BTreeConfig;
/// let config = BTreeConfig { bulk_fill: 8, query_tile: 16, ..Default::default() };
/// config.validate()?;
/// assert!(BTreeConfig { query_tile: 4, ..Default::default() }.validate().is_err());
/// # Ok::<(), gpuds_btree::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BTreeConfig {
    /// Nodes (128-byte slab units) the pool holds from the start.
    pub initial_nodes: u64,
    /// Most nodes the pool may grow to; past it inserts fail with a pool-exhausted error.
    pub max_nodes: u64,
    /// Pairs per node written by the bulk build (2 to 14), counted in nodes of 14 pairs
    /// (u32 keys and values). Fewer than 14 leaves room, so that later inserts do not split
    /// at once (§3.4.1 fills 8 of 15). Nodes of another size get the same fraction
    /// ([`BTreeConfig::fill_for`]: 10 of 14 is 4 of the 6 pairs of a 128-byte node of
    /// 64-bit pairs), so one config serves every key and value type.
    pub bulk_fill: u32,
    /// Lanes per phased query (8, 16 or 32): a warp answers 32 / `query_tile` queries at
    /// a time. Deletions use at least 16 lanes; insertions and mixed batches whole warps.
    /// The default, 8, is the fastest for lookups and short ranges (H200, 2^24 keys:
    /// lookups 3.26, 2.64 and 1.88 G/s with tiles of 8, 16 and 32; H100: ranges of 8 pairs
    /// 5.10 and 3.90 G queries/s with tiles of 8 and 16); for ranges of 32 pairs 16 lanes
    /// are faster (H100: 2.04 against 1.60 G queries/s with 8).
    pub query_tile: u32,
    /// Most node visits and restarts one operation may make before it gives up and
    /// reports `RETRY_LIMIT` (bounds every loop, so that a bug cannot hang the GPU).
    pub max_steps: u32,
    /// Bytes per node when a key or value is 64 bits: 256 (two lines, 14 pairs, written
    /// under a sequence number; the default: on the H200 its lookups ran at 1.04-1.35x of
    /// the 128-byte node's, its inserts at 0.78-0.80x) or 128 (one line, 6 pairs). For
    /// measuring the two layouts against each other; `u32`/`u32` trees always use
    /// 128-byte nodes. A user kernel over a tree of 128-byte wide nodes must define
    /// `GPUDS_BTREE_WIDE_NODE_BYTES=128` before including `gpuds/btree/tree_ref.cuh`.
    #[doc(hidden)]
    pub wide_node_bytes: u32,
}

impl Default for BTreeConfig {
    fn default() -> Self {
        Self {
            initial_nodes: 1 << 16,
            max_nodes: 1 << 25,
            bulk_fill: 10,
            query_tile: 8,
            max_steps: 1 << 20,
            wide_node_bytes: 256,
        }
    }
}

impl BTreeConfig {
    /// Checks every field; the error says which is wrong and why. Pool sizes past their
    /// limits (`max_nodes` past [`gpuds_alloc::MAX_UNITS`], `initial_nodes` past
    /// `max_nodes`) are [`CapacityOverflow`](gpuds_core::Error::CapacityOverflow) errors
    /// (in [`Error::Core`]), every other bad field [`Error::InvalidConfig`].
    ///
    /// ```
    /// use gpuds_btree::BTreeConfig;
    /// let bad = BTreeConfig { bulk_fill: 15, ..Default::default() };
    /// assert!(bad.validate().unwrap_err().to_string().contains("bulk_fill"));
    /// ```
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(Error::InvalidConfig(m));
        if !(2..=MAX_PAIRS as u32).contains(&self.bulk_fill) {
            return bad(format!(
                "bulk_fill is {}, must be between 2 and {MAX_PAIRS}",
                self.bulk_fill
            ));
        }
        if ![128, 256].contains(&self.wide_node_bytes) {
            return bad(format!(
                "wide_node_bytes is {}, must be 128 or 256",
                self.wide_node_bytes
            ));
        }
        if ![8, 16, 32].contains(&self.query_tile) {
            return bad(format!(
                "query_tile is {}, must be 8, 16 or 32",
                self.query_tile
            ));
        }
        if self.max_steps < 64 {
            return bad(format!(
                "max_steps is {}, must be at least 64",
                self.max_steps
            ));
        }
        if self.max_nodes == 0 {
            return bad("max_nodes is 0, must be at least 1".into());
        }
        let overflow = |m: String| Err(Error::Core(gpuds_core::Error::CapacityOverflow(m)));
        if self.max_nodes > gpuds_alloc::MAX_UNITS {
            return overflow(format!(
                "max_nodes is {}, a node pool holds at most {}",
                self.max_nodes,
                gpuds_alloc::MAX_UNITS
            ));
        }
        if self.initial_nodes > self.max_nodes {
            return overflow(format!(
                "initial_nodes ({}) is more than max_nodes ({})",
                self.initial_nodes, self.max_nodes
            ));
        }
        Ok(())
    }

    /// The bulk build's pairs per node in nodes of `node_pairs` pairs: `bulk_fill` scaled
    /// from 14 to `node_pairs` (rounded to nearest), at least 2 and at most `node_pairs`.
    ///
    /// ```
    /// use gpuds_btree::BTreeConfig;
    /// let c = BTreeConfig::default(); // bulk_fill 10
    /// assert_eq!(c.fill_for(14), 10);
    /// assert_eq!(c.fill_for(6), 4);
    /// assert_eq!(BTreeConfig { bulk_fill: 14, ..c.clone() }.fill_for(6), 6);
    /// assert_eq!(BTreeConfig { bulk_fill: 2, ..c }.fill_for(6), 2);
    /// ```
    pub fn fill_for(&self, node_pairs: usize) -> u32 {
        let pairs = node_pairs as u32;
        let scaled = (self.bulk_fill * pairs + MAX_PAIRS as u32 / 2) / MAX_PAIRS as u32;
        scaled.clamp(2, pairs.max(2))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_sizes_validate_or_overflow() {
        let overflow = |c: &BTreeConfig| {
            matches!(
                c.validate(),
                Err(Error::Core(gpuds_core::Error::CapacityOverflow(_)))
            )
        };
        for n in gpuds_testkit::strategy::capacity_edges() {
            let max = BTreeConfig {
                initial_nodes: 0,
                max_nodes: n,
                ..Default::default()
            };
            match max.validate() {
                Ok(()) => assert!((1..=gpuds_alloc::MAX_UNITS).contains(&n)),
                Err(Error::InvalidConfig(_)) => assert_eq!(n, 0),
                Err(e) => assert!(n > gpuds_alloc::MAX_UNITS && overflow(&max), "{n}: {e}"),
            }
            let initial = BTreeConfig {
                initial_nodes: n,
                ..Default::default()
            };
            assert_eq!(initial.validate().is_ok(), n <= initial.max_nodes, "{n}");
            assert!(n <= initial.max_nodes || overflow(&initial), "{n}");
        }
    }
}
