//! [`GraphConfig`]: how a [`DynamicGraph`](crate::DynamicGraph) is built.

use gpuds_alloc::SlabAllocConfig;

use crate::error::{Error, Result};

/// The configuration of a graph. Every field has a default; build one with
/// `GraphConfig { directed: true, ..Default::default() }`.
///
/// ```
/// use gpuds_graph::GraphConfig;
/// let config = GraphConfig { load_factor: 0.5, ..Default::default() };
/// assert!(config.validate().is_ok());
/// assert!(GraphConfig { load_factor: 0.0, ..Default::default() }.validate().is_err());
/// ```
#[derive(Clone, Debug)]
pub struct GraphConfig {
    /// Directed graph: edge (u, v) lives in u's table only. Undirected (the default):
    /// every edge is stored in both tables and inserted and deleted in both together.
    pub directed: bool,
    /// Keep self loops (u, u) as edges; by default they are dropped (counted as
    /// skipped in a batch's [`EdgeTally`](crate::EdgeTally)).
    pub keep_self_loops: bool,
    /// The load factor that sizes a vertex's table from its degree when the degree is
    /// known (bulk build, vertex insertion): ceil(degree / (load factor × slots per
    /// slab)) buckets. The dissertation uses 0.7.
    pub load_factor: f32,
    /// An edge naming a vertex id past the dictionary grows it (new ids get one-bucket
    /// tables; the dictionary's headers are copied to a larger array); false: such a
    /// batch fails with [`Error::VertexBeyondCapacity`] and nothing is applied.
    pub growable: bool,
    /// The most slabs one bucket's list may have and a request may visit. A list that
    /// reaches it refuses more edges (`gpuds_slabhash::LIST_FULL`); `flush` or a rebuild
    /// with known degrees makes room.
    pub step_cap: u32,
    /// Seed of the destination hash.
    pub seed: u64,
    /// The slab pool of the collision slabs (its initial and maximum size).
    pub alloc: SlabAllocConfig,
    /// How a bulk build inserts its edges (see [`BulkPlacement`]).
    pub bulk_placement: BulkPlacement,
}

/// How a bulk build (`from_edges`, `from_device_edges`, `from_coo`, the rebuilds) puts
/// its edges into the tables it has just sized.
///
/// Either way the graph has the same edges (duplicates of an edge in the batch keep one
/// of their values, not necessarily the same one); only the speed differs. Direct
/// placement applies to packed entries (sets and `u32` values); graphs with `u64` values
/// always take the ordinary insertion.
///
/// ```
/// use gpuds_graph::{BulkPlacement, GraphConfig};
/// let config = GraphConfig { bulk_placement: BulkPlacement::Never, ..Default::default() };
/// assert!(config.validate().is_ok());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BulkPlacement {
    /// Direct placement when the batch has at least
    /// [`PLACE_MIN_ARCS`](crate::PLACE_MIN_ARCS) arcs (table entries) per vertex and its
    /// tables are mostly of one bucket (fewer buckets than twice the vertex count), the
    /// ordinary insertion otherwise: only one-bucket tables take arcs directly, and a
    /// graph whose hubs' tables of many buckets hold most arcs (the hollywood shape)
    /// built 1.15x as fast on the ordinary insertion (H200).
    #[default]
    Auto,
    /// Direct placement whatever the density: every arc of a one-bucket table takes the
    /// next slot of its base slab, a second step removes duplicates, and the other
    /// edges go through the ordinary insertion.
    Always,
    /// The ordinary insertion (the batch path of `insert_edges`).
    Never,
}

impl BulkPlacement {
    /// Whether a bulk build of `arcs` table entries (one an edge, two for an undirected
    /// edge) over `vertices` ids, whose tables were sized to `buckets` buckets in all,
    /// places them directly (for packed entries; see the variants).
    ///
    /// ```
    /// use gpuds_graph::BulkPlacement;
    /// let n = 1u32 << 20;
    /// assert!(BulkPlacement::Auto.places(8 << 20, n, 1 << 20));
    /// assert!(!BulkPlacement::Auto.places((8 << 20) - 1, n, 1 << 20));
    /// assert!(!BulkPlacement::Auto.places(64 << 20, n, 2 << 20)); // many large tables
    /// assert!(BulkPlacement::Always.places(0, n, 2 << 20));
    /// assert!(!BulkPlacement::Never.places(u64::MAX, 1, 1));
    /// ```
    pub fn places(self, arcs: u64, vertices: u32, buckets: u64) -> bool {
        match self {
            BulkPlacement::Auto => {
                arcs >= crate::PLACE_MIN_ARCS * u64::from(vertices)
                    && buckets < 2 * u64::from(vertices)
            }
            BulkPlacement::Always => true,
            BulkPlacement::Never => false,
        }
    }
}

impl Default for GraphConfig {
    fn default() -> Self {
        Self {
            directed: false,
            keep_self_loops: false,
            load_factor: 0.7,
            growable: true,
            step_cap: 1 << 22,
            seed: 0x6770_7564_735f_6772,
            alloc: SlabAllocConfig {
                initial_units: 1 << 16,
                ..SlabAllocConfig::default()
            },
            bulk_placement: BulkPlacement::Auto,
        }
    }
}

impl GraphConfig {
    /// Checks the configuration: a load factor in (0, 8], a nonzero step cap, a valid
    /// pool configuration.
    pub fn validate(&self) -> Result<()> {
        if !(self.load_factor > 0.0 && self.load_factor <= 8.0) {
            return Err(Error::Config(format!(
                "load_factor must be in (0, 8], got {}",
                self.load_factor
            )));
        }
        if self.step_cap == 0 {
            return Err(Error::Config("step_cap must be at least 1".into()));
        }
        self.alloc.validate()?;
        Ok(())
    }
}
