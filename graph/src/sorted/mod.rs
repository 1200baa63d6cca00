//! [`SortedGraph`]: a dynamic graph whose adjacency lists are kept sorted on the device
//! at all times, beside [`DynamicGraph`](crate::DynamicGraph)'s hash tables. It is the
//! adjacency variant the dissertation's §5.7 leaves as future work (sorted nodes in the
//! manner of the B-Tree), built here as sorted segments: triangle counting by sorted
//! intersection then needs no sort at count time.
//!
//! **Layout.** A vertex dictionary holds one [`Segment`] per vertex id: where its list
//! starts in the pool (one device array of destinations shared by every vertex), its
//! capacity (a power of two, at least [`MIN_CAPACITY`]; 0 before its first edge) and its
//! exact degree. The list is strictly increasing; the slack past it takes later
//! insertions in place.
//!
//! **Batches.** An edge batch (both directions of each edge in an undirected graph) is
//! packed into 64-bit keys `src << s | dst`, radix sorted and deduplicated on the device
//! with the CSR build's own code; the keys that change the graph (absent edges for an
//! insertion, present ones for a deletion: one binary search each) are kept. Every
//! touched vertex then merges its sorted run of keys with its list, element-parallel (each
//! stored element and each new key finds its output position by one binary search in
//! the other list), so a hub's list is spread over the whole GPU. A list that outgrows
//! its capacity moves to a new segment of the next power of two at the pool's top; when
//! the pool is full it grows and is repacked (the holes that moved segments left
//! behind are reclaimed). Deletions shrink lists in place. Degrees are exact and no edge
//! is ever stored twice.
//!
//! | call | synchronizes the stream? |
//! | --- | --- |
//! | construction, `insert_edges`, `remove_edges` | yes (a batch reads back its id check, its key and run counts and waits for its plan and its merge: five synchronizations or more) |
//! | queries, `to_csr`, `triangle_count`, `stats`, `validate` | yes: they return host values |
//! | `num_vertices`, `num_edges`, `num_entries` | no (host counters) |
//!
//! **Bad input** as [`DynamicGraph`](crate::DynamicGraph): an id above
//! [`MAX_VERTEX_ID`](crate::MAX_VERTEX_ID) fails the batch with
//! [`Error::ReservedVertex`] naming the first offending request, before anything is
//! applied; ids past the dictionary grow it (or, with [`SortedConfig::growable`] false,
//! fail with [`Error::VertexBeyondCapacity`]); arrays of unequal lengths fail with
//! [`Error::LengthMismatch`]. Self loops are always dropped (the host forms count them as
//! skipped; `insert_edges_device` does not count them). The
//! kernels have no failure path (every loop is a bounded binary search, and memory is
//! allocated by the host before they run), so the graph needs no device status word.
//!
//! ```no_run
//! use gpuds_graph::sorted::{SortedConfig, SortedGraph};
//! let gpu = gpuds_core::Gpu::new(0)?;
//! // Undirected, built in bulk from COO: a triangle and a pendant vertex.
//! let mut g = SortedGraph::from_edges(&gpu, SortedConfig::default(), 0, &[0, 1, 2, 2], &[1, 2, 0, 3])?;
//! assert_eq!(g.triangle_count()?, 1);
//! g.insert_edges(&[3, 3], &[0, 1])?;
//! g.remove_edges(&[2], &[0])?;
//! assert_eq!(g.adjacency_many(&[3])?.dst, vec![0, 1, 2]); // always sorted
//! assert_eq!(g.triangle_count()?, 2);
//! g.validate()?;
//! # Ok::<(), gpuds_graph::Error>(())
//! ```

mod check;
mod query;
mod update;

pub use check::SortedStats;

use cudarc::driver::{CudaSlice, DeviceRepr, LaunchConfig};
use gpuds_core::{Gpu, Kernel, Module, Program};

use crate::csr::CsrBuilder;
use crate::error::{Error, Result};

const SOURCE: &str = include_str!("../../cuda/kernels/sorted.cu");

/// Threads per block of every kernel of the sorted graph (grid-stride loops).
const BLOCK: u32 = 256;

/// The smallest capacity a vertex's segment gets when it receives edges: lists of up to
/// this many destinations never move.
pub const MIN_CAPACITY: u32 = 4;

/// The kernel module of [`SortedGraph`] (`cuda/kernels/sorted.cu`).
///
/// # Examples
/// ```no_run
/// let gpu = gpuds_core::Gpu::new(0)?;
/// let module = gpu.load(&gpuds_graph::sorted::program())?;
/// let _ = module.kernel("sorted_triangles")?;
/// # Ok::<(), gpuds_core::Error>(())
/// ```
pub fn program() -> Program {
    Program::new("graph_sorted", SOURCE)
        .headers(crate::cuda_headers())
        .define("MIN_CAPACITY", format!("{MIN_CAPACITY}ull"))
}

/// One vertex of the dictionary, as the device keeps it (`gpuds::graph::sorted::segment`):
/// its list is `pool[offset..offset + degree]`, strictly increasing, inside a segment of
/// `capacity` words.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Segment {
    /// Position of the segment's first word in the pool.
    pub offset: u64,
    /// Words of the segment (0: the vertex never had an edge).
    pub capacity: u32,
    /// The vertex's out-degree.
    pub degree: u32,
}

// SAFETY: plain data with the layout of gpuds::graph::sorted::segment.
unsafe impl DeviceRepr for Segment {}
// SAFETY: all zero bits are a valid Segment (an empty vertex).
unsafe impl cudarc::driver::ValidAsZeroBits for Segment {}

/// One update batch as its kernels see it, the mirror of `gpuds::graph::sorted::batch_runs`
/// (its `static_assert` checks the size; the fields are in the same order): the kept
/// keys and their runs.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct BatchRuns {
    /// Device address of the keys `u << shift | v`.
    keys: u64,
    /// Device address of the runs' first key positions (0 before they are known).
    heads: u64,
    /// Keys.
    m: u64,
    /// Runs (touched vertices).
    runs: u64,
    shift: u32,
    /// 1: an insertion batch; 0: a deletion batch.
    insert: u32,
}

// SAFETY: plain data with the layout of gpuds::graph::sorted::batch_runs.
unsafe impl DeviceRepr for BatchRuns {}

const _: () = assert!(
    std::mem::size_of::<Segment>() == 16
        && std::mem::offset_of!(Segment, degree) == 12
        && std::mem::size_of::<BatchRuns>() == 40
        && std::mem::offset_of!(BatchRuns, runs) == 24
        && std::mem::offset_of!(BatchRuns, insert) == 36
);

/// How a [`SortedGraph`] is built.
///
/// ```
/// use gpuds_graph::sorted::SortedConfig;
/// let config = SortedConfig { directed: true, ..Default::default() };
/// assert!(config.growable);
/// ```
#[derive(Clone, Debug)]
pub struct SortedConfig {
    /// Directed graph: edge (u, v) is in u's list only. Undirected (the default): every
    /// edge is stored in both lists and inserted and deleted in both together.
    pub directed: bool,
    /// An edge naming a vertex id past the dictionary grows it; false: such a batch
    /// fails with [`Error::VertexBeyondCapacity`]
    /// and nothing is applied.
    pub growable: bool,
}

impl Default for SortedConfig {
    fn default() -> Self {
        Self {
            directed: false,
            growable: true,
        }
    }
}

/// A dynamic graph on the GPU whose adjacency lists are always sorted (see the
/// [module documentation](self)). Vertex ids are `u32` up to
/// [`MAX_VERTEX_ID`](crate::MAX_VERTEX_ID); a set graph (destinations only).
///
/// ```no_run
/// use gpuds_graph::sorted::SortedGraph;
/// let gpu = gpuds_core::Gpu::new(0)?;
/// let mut g = SortedGraph::new(&gpu, 4)?; // undirected, vertices 0..4
/// let tally = g.insert_edges(&[0, 1, 2, 0], &[1, 2, 0, 1])?;
/// assert_eq!(tally.edges, 3); // (0, 1) twice: one edge
/// assert_eq!(g.num_edges(), 3);
/// assert_eq!(g.edge_exists_many(&[1, 3], &[0, 0])?, vec![true, false]);
/// assert_eq!(g.triangle_count()?, 1);
/// g.validate()?;
/// # Ok::<(), gpuds_graph::Error>(())
/// ```
pub struct SortedGraph {
    gpu: Gpu,
    module: Module,
    config: SortedConfig,
    /// The dictionary: `dict.len()` entries allocated (the rest zero), `num_ids` in use.
    dict: CudaSlice<Segment>,
    num_ids: u32,
    /// The destinations of every list; `pool[..pool_top]` handed out to segments (and
    /// holes left by segments that moved), the rest free.
    pool: CudaSlice<u32>,
    pool_top: u64,
    /// Stored entries: the sum of the degrees.
    entries: u64,
    /// The batch's key pipeline (pack, radix sort, run flags, compaction, scans).
    keys: CsrBuilder,
}

impl std::fmt::Debug for SortedGraph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SortedGraph")
            .field("directed", &self.config.directed)
            .field("vertex_ids", &self.num_ids)
            .field("entries", &self.entries)
            .field("pool_top", &self.pool_top)
            .finish()
    }
}

impl SortedGraph {
    /// An empty undirected graph with vertex ids `0..num_vertices`. Synchronizes.
    ///
    /// # Examples
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let g = gpuds_graph::sorted::SortedGraph::new(&gpu, 10)?;
    /// assert_eq!((g.num_vertices(), g.num_edges()), (10, 0));
    /// # Ok::<(), gpuds_graph::Error>(())
    /// ```
    pub fn new(gpu: &Gpu, num_vertices: u32) -> Result<Self> {
        Self::with_config(gpu, num_vertices, SortedConfig::default())
    }

    /// An empty graph with vertex ids `0..num_vertices` and the given configuration.
    /// Synchronizes.
    ///
    /// # Examples
    /// ```no_run
    /// use gpuds_graph::sorted::{SortedConfig, SortedGraph};
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let config = SortedConfig { directed: true, growable: false };
    /// let mut g = SortedGraph::with_config(&gpu, 2, config)?;
    /// assert!(g.insert_edges(&[0], &[2]).is_err()); // id 2 is past the dictionary
    /// # Ok::<(), gpuds_graph::Error>(())
    /// ```
    pub fn with_config(gpu: &Gpu, num_vertices: u32, config: SortedConfig) -> Result<Self> {
        if num_vertices > crate::MAX_VERTEX_ID + 1 {
            return Err(Error::ReservedVertex {
                index: 0,
                id: num_vertices - 1,
            });
        }
        let stream = gpu.stream();
        let mut g = Self {
            gpu: gpu.clone(),
            module: gpu.load(&program())?,
            config,
            dict: stream.alloc_zeros::<Segment>(1)?,
            num_ids: 0,
            pool: stream.alloc_zeros::<u32>(1)?,
            pool_top: 0,
            entries: 0,
            keys: CsrBuilder::new(gpu)?,
        };
        g.grow_ids(num_vertices)?;
        stream.synchronize()?;
        Ok(g)
    }

    /// Bulk build from COO edges (`src[i] -> dst[i]`): vertex ids
    /// `0..max(num_vertices, largest id + 1)`, the edges sorted once on the device and
    /// written as segments of power-of-two capacity. Duplicates keep one, self loops are
    /// dropped. Synchronizes.
    ///
    /// # Examples
    /// ```no_run
    /// use gpuds_graph::sorted::{SortedConfig, SortedGraph};
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let g = SortedGraph::from_edges(&gpu, SortedConfig::default(), 5, &[0, 0, 4], &[2, 1, 0])?;
    /// assert_eq!(g.adjacency_many(&[0])?.dst, vec![1, 2, 4]);
    /// # Ok::<(), gpuds_graph::Error>(())
    /// ```
    pub fn from_edges(
        gpu: &Gpu,
        config: SortedConfig,
        num_vertices: u32,
        src: &[u32],
        dst: &[u32],
    ) -> Result<Self> {
        crate::graph::same_len("src and dst", src.len(), dst.len())?;
        crate::graph::check_host_ids(src, dst)?;
        let top = src.iter().chain(dst).map(|&x| x + 1).max().unwrap_or(0);
        let mut g = Self::with_config(gpu, num_vertices.max(top), config)?;
        g.insert_edges(src, dst)?;
        Ok(g)
    }

    /// [`from_edges`](Self::from_edges) from a [`Coo`](crate::input::Coo) (a generated
    /// graph or a Matrix Market file); a symmetric COO gives a directed graph both
    /// directions. Synchronizes.
    ///
    /// # Examples
    /// ```no_run
    /// use gpuds_graph::input::Family;
    /// use gpuds_graph::sorted::{SortedConfig, SortedGraph};
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let coo = Family::Delaunay.generate(1 << 10, 7);
    /// let g = SortedGraph::from_coo(&gpu, SortedConfig::default(), &coo)?;
    /// assert!(g.num_edges() > 0);
    /// # Ok::<(), gpuds_graph::Error>(())
    /// ```
    pub fn from_coo(gpu: &Gpu, config: SortedConfig, coo: &crate::input::Coo) -> Result<Self> {
        let edges = crate::graph::stored_edges(coo, config.directed);
        Self::from_edges(gpu, config, edges.num_vertices, &edges.src, &edges.dst)
    }

    /// [`from_edges`](Self::from_edges) with the edges already on the device (every id
    /// below `num_vertices`, else [`Error::VertexBeyondCapacity`]
    /// names the first). Synchronizes.
    ///
    /// # Examples
    /// ```no_run
    /// use gpuds_graph::sorted::{SortedConfig, SortedGraph};
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let src = gpu.stream().clone_htod(&[0u32, 1])?;
    /// let dst = gpu.stream().clone_htod(&[1u32, 2])?;
    /// let g = SortedGraph::from_device_edges(&gpu, SortedConfig::default(), 3, &src, &dst)?;
    /// assert_eq!(g.num_edges(), 2);
    /// # Ok::<(), gpuds_graph::Error>(())
    /// ```
    pub fn from_device_edges(
        gpu: &Gpu,
        config: SortedConfig,
        num_vertices: u32,
        src: &CudaSlice<u32>,
        dst: &CudaSlice<u32>,
    ) -> Result<Self> {
        let mut g = Self::with_config(gpu, num_vertices, config)?;
        g.insert_edges_device(src, dst)?;
        Ok(g)
    }

    // ----- accessors -----

    /// The graph's configuration.
    pub fn config(&self) -> &SortedConfig {
        &self.config
    }

    /// The GPU the graph lives on.
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// Vertex ids in the dictionary (`0..num_vertices()`).
    pub fn num_vertices(&self) -> u32 {
        self.num_ids
    }

    /// Edges: for an undirected graph each edge {u, v} once. Exact after every batch; no
    /// synchronization (a host counter).
    ///
    /// # Examples
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut g = gpuds_graph::sorted::SortedGraph::new(&gpu, 3)?;
    /// g.insert_edges(&[0, 1, 1], &[1, 0, 2])?;
    /// assert_eq!((g.num_edges(), g.num_entries()), (2, 4));
    /// # Ok::<(), gpuds_graph::Error>(())
    /// ```
    pub fn num_edges(&self) -> u64 {
        if self.config.directed {
            self.entries
        } else {
            self.entries / 2
        }
    }

    /// Stored entries: the sum of all degrees (each undirected edge twice).
    pub fn num_entries(&self) -> u64 {
        self.entries
    }

    /// Whether the graph has no edges.
    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// The dictionary on the device (`num_vertices()` entries in use) and the pool its
    /// segments point into: a read-only view for user kernels
    /// (`gpuds/graph/sorted_segments.cuh`). Valid until the next update.
    pub fn device_parts(&self) -> (&CudaSlice<Segment>, &CudaSlice<u32>) {
        (&self.dict, &self.pool)
    }

    // ----- internals -----

    fn kernel(&self, name: &str) -> Result<Kernel> {
        Ok(self.module.kernel(name)?)
    }

    fn shape(&self, kernel: &Kernel, n: u64) -> Result<LaunchConfig> {
        let n = gpuds_core::size::to_usize(n.max(1), "kernel items")?;
        Ok(self.gpu.grid_for(kernel, n, BLOCK)?)
    }

    /// Adds ids `num_ids..top` (empty lists): the dictionary grows by doubling, the
    /// segments do not move. Does not synchronize.
    fn grow_ids(&mut self, top: u32) -> Result<()> {
        if top <= self.num_ids {
            return Ok(());
        }
        let have = self.dict.len();
        if top as usize > have {
            let want = (top as usize)
                .max(have.saturating_mul(2))
                .min(crate::MAX_VERTEX_ID as usize + 1);
            let stream = self.gpu.stream().clone();
            let mut bigger = self
                .gpu
                .alloc_zeroed::<Segment>(want, "the sorted graph's dictionary")?;
            stream.memcpy_dtod(&self.dict, &mut bigger.slice_mut(..have))?;
            self.dict = bigger;
        }
        self.num_ids = top;
        Ok(())
    }
}
