//! [`DynamicGraph`]: the owner of a graph's dictionary, base slabs, slab pool and
//! counters, and the launches of its batches.

mod edges;
mod inspect;
mod queries;
mod staging;
mod vertices;

use staging::TableSizes;

use std::collections::HashMap;

use crate::ids::IdSet;
use std::marker::PhantomData;

use cudarc::driver::{CudaSlice, DevicePtr, LaunchConfig, PushKernelArg};
use gpuds_alloc::SlabAlloc;
use gpuds_core::failures::CallStatus;
use gpuds_core::hash::Universal;
use gpuds_core::{primitives, Gpu, Kernel, Module, Status};
use gpuds_slabhash::TableRef;

use crate::config::GraphConfig;
use crate::error::{Error, Result};
use crate::kernels;
use crate::refs::{GraphRef, VertexEntry, HAS_DELETED, KEEP_SELF_LOOPS, UNDIRECTED};
use crate::value::EdgeValue;
use crate::MAX_VERTEX_ID;

/// Threads per block of the per-request kernels.
const BLOCK: u32 = 128;
/// Threads per block of the one-warp-per-vertex kernels.
const WARP_BLOCK: u32 = 256;
// Kernels that ballot over whole warps (mark_deleted, the edge loops) need whole warps.
const _: () = assert!(BLOCK.is_multiple_of(32) && WARP_BLOCK.is_multiple_of(32));

/// The control buffer: the status word in word 0, then `STRIPES` counter stripes of 16
/// words (live entries in word 0, claimed slots in word 1, self-loop entries in word 2),
/// as `gpuds::slabhash::detail::table::count` and the graph's kernels update them.
const FIRST_STRIPE: usize = 16;
const STRIPES: usize = 32;
const STRIPE_WORDS: usize = 16;
const CONTROL_WORDS: usize = FIRST_STRIPE + STRIPES * STRIPE_WORDS;

/// Words of a batch's tally (graph.cu: T_ENTRIES, T_LOOPS, T_SKIPPED, T_PRESENT).
const TALLY_WORDS: usize = 4;

/// How many pool growths a batch may take before it reports exhaustion.
const GROWTH_ROUNDS: usize = 4;

/// What an edge batch did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EdgeTally {
    /// Edges added (insertions) or removed (deletions): for an undirected graph each
    /// edge {u, v} counts once, whichever direction the batch named and however often.
    pub edges: u64,
    /// Requests skipped by the graph's rules: dropped self loops, and edges with a
    /// deleted end.
    pub skipped: u64,
}

/// The adjacency of a batch of vertices: vertex `i`'s neighbours are
/// `dst[offsets[i]..offsets[i + 1]]` (and `values` alike, maps), in table order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Adjacency<W> {
    /// `ids.len() + 1` offsets.
    pub offsets: Vec<u64>,
    /// Neighbours.
    pub dst: Vec<u32>,
    /// Edge values (empty for a set graph).
    pub values: Vec<W>,
}

/// The graph's edges as COO (`src[i] -> dst[i]`, every stored direction).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EdgeList<W> {
    /// Sources.
    pub src: Vec<u32>,
    /// Destinations.
    pub dst: Vec<u32>,
    /// Values (empty for a set graph).
    pub values: Vec<W>,
}

/// The graph as CSR: row `u`'s neighbours are `cols[row_offsets[u]..row_offsets[u + 1]]`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Csr<W> {
    /// `num_vertex_ids + 1` offsets.
    pub row_offsets: Vec<u64>,
    /// Neighbours, row by row (sorted within a row when asked).
    pub cols: Vec<u32>,
    /// Edge values (empty for a set graph).
    pub values: Vec<W>,
}

/// A dynamic graph on the GPU: a vertex dictionary and one slab hash table per vertex
/// (Awad, 2022, chapter 5), all tables sharing one slab pool for their collision slabs.
///
/// `W` is what an edge carries: `()` for a set graph (destinations only, 30 per slab),
/// `u32` or `u64` for a map graph (a value per edge, e.g. a weight). Vertex ids are
/// `u32` up to [`MAX_VERTEX_ID`]. Every operation is a batch; no two edges of the graph
/// ever share a source and destination (insertion replaces an existing edge's value).
///
/// ```no_run
/// use gpuds_graph::DynamicGraph;
/// let gpu = gpuds_core::Gpu::new(0)?;
/// let mut g = DynamicGraph::<()>::new(&gpu, 4)?; // undirected, vertices 0..4
/// let tally = g.insert_edges(&[0, 1, 2, 0], &[1, 2, 0, 1], None)?;
/// assert_eq!(tally.edges, 3); // (0, 1) twice: one edge
/// assert_eq!(g.num_edges()?, 3);
/// assert_eq!(g.edge_exists_many(&[1, 3], &[0, 0])?, vec![true, false]);
/// assert_eq!(g.triangle_count()?, 1);
/// g.validate()?;
/// # Ok::<(), gpuds_graph::Error>(())
/// ```
pub struct DynamicGraph<W: EdgeValue = ()> {
    gpu: Gpu,
    module: Module,
    config: GraphConfig,
    /// The dictionary: `vertices.len()` entries allocated, the first `num_ids` in use.
    vertices: CudaSlice<VertexEntry>,
    num_ids: u32,
    /// The base slabs, in chunks (one per growth or placement).
    chunks: Vec<CudaSlice<u32>>,
    alloc: SlabAlloc,
    control: CudaSlice<u64>,
    hash: Universal,
    /// Deleted ids, reused first by `insert_vertices`.
    deleted: IdSet,
    values: PhantomData<W>,
}

impl<W: EdgeValue> std::fmt::Debug for DynamicGraph<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DynamicGraph")
            .field("values", &W::SUFFIX)
            .field("directed", &self.config.directed)
            .field("vertex_ids", &self.num_ids)
            .field("deleted", &self.deleted.len())
            .finish()
    }
}

/// Device arrays of an edge batch.
struct Staged<D: cudarc::driver::DeviceRepr> {
    src: CudaSlice<u32>,
    dst: CudaSlice<u32>,
    values: Option<CudaSlice<D>>,
}

impl<W: EdgeValue> DynamicGraph<W> {
    /// An empty graph with vertex ids `0..num_vertices`, each with a one-bucket table,
    /// and the default configuration (undirected, self loops dropped, growable).
    /// Synchronizes.
    pub fn new(gpu: &Gpu, num_vertices: u32) -> Result<Self> {
        Self::with_config(gpu, num_vertices, GraphConfig::default())
    }

    /// An empty graph with vertex ids `0..num_vertices` and the given configuration: the
    /// incremental build of a graph of known vertex capacity. Synchronizes.
    pub fn with_config(gpu: &Gpu, num_vertices: u32, config: GraphConfig) -> Result<Self> {
        check_vertex_count(num_vertices)?;
        let mut g = Self::bare(gpu, config)?;
        g.grow_ids(num_vertices)?;
        Ok(g)
    }

    /// Bulk build from COO edges (`src[i] -> dst[i]`, with `values[i]` for a map graph;
    /// `None`: every value 0): the degrees are counted on the device first, so every
    /// table gets ceil(degree / (load factor × slots)) buckets, then the edges are
    /// inserted in one batch. Vertex ids are `0..max(num_vertices, largest id + 1)`.
    /// Duplicate edges keep one (the value of one of them), self loops follow the
    /// configuration. Synchronizes.
    pub fn from_edges(
        gpu: &Gpu,
        config: GraphConfig,
        num_vertices: u32,
        src: &[u32],
        dst: &[u32],
        values: Option<&[W]>,
    ) -> Result<Self> {
        if src.is_empty() && dst.is_empty() {
            return Self::with_config(gpu, num_vertices, config);
        }
        let mut g = Self::bare(gpu, config)?;
        let staged = g.stage(src, dst, values)?;
        g.build_from_device(
            num_vertices,
            &staged.src,
            &staged.dst,
            staged.values.as_ref(),
        )?;
        Ok(g)
    }

    /// [`from_edges`](Self::from_edges) from a [`Coo`](crate::input::Coo) (a generated
    /// graph or a Matrix Market file): its `num_vertices` ids, its values for a map
    /// graph (u32, widened for `u64`). A symmetric COO (each undirected edge listed once)
    /// gives a directed graph both directions. Synchronizes.
    pub fn from_coo(gpu: &Gpu, config: GraphConfig, coo: &crate::input::Coo) -> Result<Self> {
        use gpuds_core::DeviceType;
        let edges = stored_edges(coo, config.directed);
        let values: Option<Vec<W>> = match (&edges.values, W::SET) {
            (Some(v), false) => Some(
                v.iter()
                    .map(|&x| W::from_device(W::Device::from_u64(u64::from(x))))
                    .collect(),
            ),
            _ => None,
        };
        Self::from_edges(
            gpu,
            config,
            edges.num_vertices,
            &edges.src,
            &edges.dst,
            values.as_deref(),
        )
    }

    /// [`from_edges`](Self::from_edges) with the edges already on the device.
    pub fn from_device_edges(
        gpu: &Gpu,
        config: GraphConfig,
        num_vertices: u32,
        src: &CudaSlice<u32>,
        dst: &CudaSlice<u32>,
        values: Option<&CudaSlice<W::Device>>,
    ) -> Result<Self> {
        let mut g = Self::bare(gpu, config)?;
        g.build_from_device(num_vertices, src, dst, values)?;
        Ok(g)
    }

    /// [`rebuild_from_device_edges`](Self::rebuild_from_device_edges) from host slices
    /// (as [`from_edges`](Self::from_edges)). Synchronizes.
    ///
    /// ```no_run
    /// use gpuds_graph::{DynamicGraph, GraphConfig};
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut g = DynamicGraph::<u32>::from_edges(&gpu, GraphConfig::default(), 3, &[0], &[1], Some(&[5]))?;
    /// g.rebuild_from_edges(4, &[2, 3], &[3, 1], Some(&[7, 8]))?;
    /// assert_eq!((g.num_edges()?, g.vertex_ids()), (2, 4));
    /// assert_eq!(g.edge_values_many(&[3, 0], &[2, 1])?, vec![Some(7), None]);
    /// # Ok::<(), gpuds_graph::Error>(())
    /// ```
    pub fn rebuild_from_edges(
        &mut self,
        num_vertices: u32,
        src: &[u32],
        dst: &[u32],
        values: Option<&[W]>,
    ) -> Result<()> {
        check_vertex_count(num_vertices)?;
        if src.is_empty() && dst.is_empty() && values.is_none_or(|v| v.is_empty()) {
            // No edges (and no device arrays of length zero): every id a one-bucket table.
            self.clear_contents()?;
            return self.grow_ids(num_vertices);
        }
        let staged = self.stage(src, dst, values)?;
        self.rebuild_from_device_edges(
            num_vertices,
            &staged.src,
            &staged.dst,
            staged.values.as_ref(),
        )
    }

    /// Replaces the graph's contents with a bulk build of these edges (as
    /// [`from_device_edges`](Self::from_device_edges), with the graph's configuration),
    /// reusing its dictionary and slab pool instead of making new ones: for programs that
    /// build a graph again and again (a sliding window of edges, say), where setting up
    /// a graph's memory would cost about as much as the build. Vertex ids become
    /// `0..max(num_vertices, largest id + 1)`; deleted ids are forgotten, and so are
    /// status flags user kernels left (`take_device_status`). The dictionary and the pool
    /// are reused; the tables' base slabs are allocated afresh, sized for the new
    /// degrees. Bad input (a reserved id, more than `MAX_VERTEX_ID + 1` vertices, lengths
    /// that differ) is refused before anything changes. A build that fails on the
    /// device's resources (memory, the pool's `max_units`) leaves the graph valid with
    /// part of the batch, or none of it. Synchronizes.
    ///
    /// ```no_run
    /// use gpuds_graph::{DynamicGraph, GraphConfig};
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let stream = gpu.stream();
    /// let (src, dst) = (stream.clone_htod(&[0u32, 1])?, stream.clone_htod(&[1u32, 2])?);
    /// let mut g = DynamicGraph::<()>::from_device_edges(&gpu, GraphConfig::default(), 3, &src, &dst, None)?;
    /// let (src, dst) = (stream.clone_htod(&[2u32])?, stream.clone_htod(&[0u32])?);
    /// g.rebuild_from_device_edges(3, &src, &dst, None)?;
    /// assert_eq!(g.num_edges()?, 1);
    /// # Ok::<(), gpuds_graph::Error>(())
    /// ```
    pub fn rebuild_from_device_edges(
        &mut self,
        num_vertices: u32,
        src: &CudaSlice<u32>,
        dst: &CudaSlice<u32>,
        values: Option<&CudaSlice<W::Device>>,
    ) -> Result<()> {
        self.build_device(num_vertices, src, dst, values, true)
    }

    /// Empties the graph for a rebuild: no ids, no tables, every slab of the pool free,
    /// zero counters and status (the dictionary's memory and the pool are kept).
    fn clear_contents(&mut self) -> Result<()> {
        self.chunks.clear();
        self.num_ids = 0;
        self.deleted = IdSet::new();
        self.alloc.reset()?;
        self.gpu.stream().memset_zeros(&mut self.control)?;
        Ok(())
    }

    fn bare(gpu: &Gpu, config: GraphConfig) -> Result<Self> {
        config.validate()?;
        let module = gpu.load(&kernels::program::<W>())?;
        let alloc = SlabAlloc::new(gpu, config.alloc.clone())?;
        let stream = gpu.stream();
        Ok(Self {
            gpu: gpu.clone(),
            module,
            hash: Universal::from_seed(config.seed),
            config,
            vertices: stream.alloc_zeros::<VertexEntry>(1)?,
            num_ids: 0,
            chunks: Vec::new(),
            alloc,
            control: stream.alloc_zeros::<u64>(CONTROL_WORDS)?,
            deleted: IdSet::new(),
            values: PhantomData,
        })
    }

    fn build_from_device(
        &mut self,
        num_vertices: u32,
        src: &CudaSlice<u32>,
        dst: &CudaSlice<u32>,
        values: Option<&CudaSlice<W::Device>>,
    ) -> Result<()> {
        self.build_device(num_vertices, src, dst, values, false)
    }

    /// A bulk build on the device (`clear`: a rebuild, which clears the graph once the
    /// input is known good). The id check, the degrees over ids `0..num_vertices` and
    /// the tables' sizes run together and come back in one synchronization; only when
    /// the check finds an id at or past `num_vertices` are the sizes counted again over
    /// the larger range (a second one). Bad input changes nothing.
    fn build_device(
        &mut self,
        num_vertices: u32,
        src: &CudaSlice<u32>,
        dst: &CudaSlice<u32>,
        values: Option<&CudaSlice<W::Device>>,
        clear: bool,
    ) -> Result<()> {
        if src.is_empty() || num_vertices == 0 {
            let n_ids = self.check_build(num_vertices, src, dst, values)?;
            if clear {
                self.clear_contents()?;
            }
            return self.build_checked(n_ids, src, dst, values);
        }
        check_vertex_count(num_vertices)?;
        same_len("src and dst", src.len(), dst.len())?;
        if let Some(v) = values {
            same_len("src and values", src.len(), v.len())?;
        }
        let stream = self.gpu.stream().clone();
        // The id check's two words, then the bucket total.
        let mut words = stream.alloc_zeros::<u64>(3)?;
        self.launch_check_ids(src, Some(dst), words.device_ptr(&stream).0)?;
        let degrees = self.degrees_of_batch(src, dst, num_vertices)?;
        let sizes = self.size_tables(num_vertices as usize, &degrees)?;
        stream.memcpy_dtod(&sizes.total, &mut words.slice_mut(2..3))?;
        let w = stream.clone_dtoh(&words)?;
        let top = self.checked_top(src, Some(dst), [w[0], w[1]])?;
        if clear {
            self.clear_contents()?;
        }
        if top > num_vertices {
            // The first count's arrays go before the count over the larger range.
            drop(sizes);
            drop(degrees);
            return self.build_checked(top, src, dst, values);
        }
        self.place_and_insert(num_vertices, src, dst, values, Some((&sizes, w[2])))
    }

    /// The checks of a bulk build, before anything changes: the vertex count, the
    /// arrays' lengths, every id. Returns the build's ids, `max(num_vertices, largest
    /// id + 1)`.
    fn check_build(
        &self,
        num_vertices: u32,
        src: &CudaSlice<u32>,
        dst: &CudaSlice<u32>,
        values: Option<&CudaSlice<W::Device>>,
    ) -> Result<u32> {
        check_vertex_count(num_vertices)?;
        same_len("src and dst", src.len(), dst.len())?;
        if let Some(v) = values {
            same_len("src and values", src.len(), v.len())?;
        }
        let top = self.check_ids(src, Some(dst))?;
        Ok(num_vertices.max(top))
    }

    /// build_from_device on ids already checked: ids `0..n_ids`.
    fn build_checked(
        &mut self,
        n_ids: u32,
        src: &CudaSlice<u32>,
        dst: &CudaSlice<u32>,
        values: Option<&CudaSlice<W::Device>>,
    ) -> Result<()> {
        self.place_and_insert(n_ids, src, dst, values, None)
    }

    /// Gives ids `0..n_ids` tables sized for the batch's degrees (`sized`: already
    /// counted, with their bucket total) and inserts the batch, placed directly or the
    /// ordinary way.
    fn place_and_insert(
        &mut self,
        n_ids: u32,
        src: &CudaSlice<u32>,
        dst: &CudaSlice<u32>,
        values: Option<&CudaSlice<W::Device>>,
        sized: Option<(&TableSizes, u64)>,
    ) -> Result<()> {
        if n_ids > 0 {
            let counted;
            let (sizes, buckets) = match sized {
                Some(s) => s,
                None => {
                    let degrees = self.degrees_of_batch(src, dst, n_ids)?;
                    counted = self.size_tables(n_ids as usize, &degrees)?;
                    let total = self.gpu.stream().clone_dtoh(&counted.total)?[0];
                    (&counted, total)
                }
            };
            self.ensure_dictionary(n_ids)?;
            self.place_tables(None, 0, n_ids as usize, sizes, buckets)?;
            self.num_ids = n_ids;
            // Tables sized for their degrees overflow into collision slabs rarely at load
            // factors below one (a bucket holds load factor x slots entries on average):
            // room for one bucket in eight, plus the expected overflow of fuller
            // buckets; a batch that runs short grows the pool and runs again.
            let warps = self.gpu.info().sm_count as u64 * 64;
            let over = f64::from((self.config.load_factor - 0.7).max(0.0));
            let slabs = buckets / 8 + (buckets as f64 * over).ceil() as u64;
            // The pool is empty here (a fresh graph, or cleared for a rebuild): its
            // capacity is what it needs, with no count of the units in use (a
            // synchronization).
            self.alloc
                .reserve_capacity_within_max(slabs.saturating_add(warps))?;
            let place =
                self.config
                    .bulk_placement
                    .places(self.entries_of(src.len()), n_ids, buckets);
            if W::PACKED && place {
                return self.place_batch(n_ids, src, dst, values);
            }
        }
        self.run_edges(Edit::Insert, src, dst, values)?;
        Ok(())
    }

    /// The bulk build's insertion into the tables it just placed for ids `0..n_ids`
    /// (packed entries): every arc of a one-bucket table takes the next slot of its base
    /// slab (`bulk_claim`), each of those slabs keeps one entry per destination
    /// (`bulk_settle`), and the edges with an arc of a larger table, or whose base slab
    /// was full, are inserted the ordinary way (their arcs already placed are found
    /// there).
    fn place_batch(
        &mut self,
        n_ids: u32,
        src: &CudaSlice<u32>,
        dst: &CudaSlice<u32>,
        values: Option<&CudaSlice<W::Device>>,
    ) -> Result<()> {
        let n = src.len();
        if n == 0 {
            return Ok(());
        }
        let stream = self.gpu.stream().clone();
        let mut spill = stream.alloc_zeros::<u32>(n.div_ceil(32))?;
        let r = self.graph_ref(self.control_ptr());
        let (null, n64) = (0u64, n as u64);
        // Both kernels and shapes before the first launch: once bulk_claim has run, the
        // slabs are valid lists only after bulk_settle.
        let kernel = self.kernel("bulk_claim")?;
        let shape = self.item_shape(&kernel, n)?;
        let settle = self.kernel("bulk_settle")?;
        let settle_shape = self.warp_shape(&settle, n_ids as usize)?;
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&r).arg(src).arg(dst);
        match values {
            Some(v) => args.arg(v),
            None => args.arg(&null),
        };
        args.arg(&n64).arg(&mut spill);
        // SAFETY: reads the batch (ids checked below n_ids, whose tables were just
        // placed); writes base slabs of those tables and the spill words of n edges.
        unsafe { args.launch(shape) }?;
        let (first, ids64) = (0u32, u64::from(n_ids));
        let mut args = stream.launch_builder(settle.func());
        args.arg(&r).arg(&first).arg(&ids64);
        // SAFETY: rewrites the base slabs of the one-bucket tables of ids 0..n_ids and
        // their counts.
        unsafe { args.launch(settle_shape) }?;
        // The spilled edges are inserted without first reading how many there are (a
        // synchronization): a warp whose 32 edges all found their slots costs the
        // insertion a few instructions a round.
        self.run_edges_of(Edit::Insert, src, dst, values, Some(&spill))?;
        Ok(())
    }

    // ----- accessors -----

    /// The graph's configuration.
    pub fn config(&self) -> &GraphConfig {
        &self.config
    }

    /// The GPU the graph lives on.
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// Vertex ids in the dictionary (`0..vertex_ids()`), deleted ones included.
    pub fn vertex_ids(&self) -> u32 {
        self.num_ids
    }

    /// Vertices: ids in the dictionary that are not deleted.
    pub fn num_vertices(&self) -> u64 {
        self.num_ids as u64 - self.deleted.len() as u64
    }

    /// Whether vertex `id` was deleted (and not inserted again).
    pub fn is_deleted(&self, id: u32) -> bool {
        self.deleted.contains(id)
    }

    /// The deleted ids, ascending (the ids [`insert_vertices`](Self::insert_vertices)
    /// hands out first).
    pub fn deleted_vertices(&self) -> Vec<u32> {
        self.deleted.iter().collect()
    }

    /// Edges: for an undirected graph each edge {u, v} once (a kept self loop once).
    /// Synchronizes.
    pub fn num_edges(&self) -> Result<u64> {
        let (live, _, loops) = self.counters()?;
        Ok(if self.config.directed {
            live
        } else {
            (live + loops) / 2
        })
    }

    /// Stored entries (live destinations over all tables: each undirected edge twice,
    /// a self loop once). Synchronizes.
    pub fn num_entries(&self) -> Result<u64> {
        Ok(self.counters()?.0)
    }

    /// Whether the graph has no edges. Synchronizes.
    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.num_entries()? == 0)
    }

    /// (live entries, claimed slots, self-loop entries), summed over the stripes.
    pub(crate) fn counters(&self) -> Result<(u64, u64, u64)> {
        let words = self.gpu.stream().clone_dtoh(&self.control)?;
        let mut sums = [0u64; 3];
        for stripe in words[FIRST_STRIPE..].chunks_exact(STRIPE_WORDS) {
            for (s, w) in sums.iter_mut().zip(stripe) {
                *s = s.wrapping_add(*w);
            }
        }
        Ok((sums[0], sums[1], sums[2]))
    }

    /// The device view for user kernels (see [`GraphRef`]). Its status word is the
    /// graph's own: [`take_device_status`](Self::take_device_status) reports what user
    /// kernels recorded.
    pub fn device_ref(&self) -> GraphRef<W> {
        self.graph_ref(self.control_ptr())
    }

    /// Reports and clears the flags user kernels recorded through
    /// [`device_ref`](Self::device_ref). Synchronizes.
    pub fn take_device_status(&mut self) -> Result<()> {
        let stream = self.gpu.stream().clone();
        let word = stream.clone_dtoh(&self.control.slice(..1))?[0] as u32;
        if word == 0 {
            return Ok(());
        }
        stream.memset_zeros(&mut self.control.slice_mut(..1))?;
        Err(gpuds_core::Error::Status(Status(word)).into())
    }

    /// The slab pool (read-only: its statistics).
    pub fn pool(&self) -> &SlabAlloc {
        &self.alloc
    }

    /// Makes sure the pool can take `entries` more stored entries without growing
    /// inside a batch (a bound: every entry in a fresh collision slab's share). Call it
    /// before user kernels insert. Synchronizes when the pool grows.
    pub fn reserve(&mut self, entries: u64) -> Result<()> {
        let warps = self.gpu.info().sm_count as u64 * 64;
        let slabs = entries.div_ceil(W::SLOTS as u64).saturating_add(warps);
        let in_use = self.alloc.units_in_use()?;
        if self.alloc.capacity_units() >= in_use.saturating_add(slabs) {
            return Ok(());
        }
        self.alloc.reserve_within_max(slabs)?;
        Ok(())
    }

    fn control_ptr(&self) -> u64 {
        self.control.device_ptr(self.gpu.stream()).0
    }

    fn flags(&self) -> u32 {
        let mut f = 0;
        if !self.config.directed {
            f |= UNDIRECTED;
        }
        if self.config.keep_self_loops {
            f |= KEEP_SELF_LOOPS;
        }
        if !self.deleted.is_empty() {
            f |= HAS_DELETED;
        }
        f
    }

    fn graph_ref(&self, status: u64) -> GraphRef<W> {
        let control = self.control_ptr();
        let lists = TableRef {
            buckets: 0,
            counters: control + (FIRST_STRIPE * 8) as u64,
            status,
            alloc: self.alloc.device_ref(),
            hash: self.hash,
            num_buckets: 0,
            unique_keys: 1,
            step_cap: self.config.step_cap,
        };
        GraphRef::new(
            lists,
            self.vertices.device_ptr(self.gpu.stream()).0,
            self.num_ids,
            self.flags(),
        )
    }

    fn kernel(&self, name: &str) -> Result<Kernel> {
        Ok(self.module.kernel(&format!("{name}_{}", W::SUFFIX))?)
    }

    /// Table entries a batch of `n` edges asks for: one an edge, two when undirected.
    fn entries_of(&self, n: usize) -> u64 {
        if self.config.directed {
            n as u64
        } else {
            2 * n as u64
        }
    }

    fn item_shape(&self, kernel: &Kernel, n: usize) -> Result<LaunchConfig> {
        Ok(self.gpu.grid_for(kernel, n.max(1), BLOCK)?)
    }

    fn warp_shape(&self, kernel: &Kernel, n: usize) -> Result<LaunchConfig> {
        let threads = n.max(1).checked_mul(32).ok_or_else(|| {
            gpuds_core::Error::CapacityOverflow(format!("{n} warps of 32 threads"))
        })?;
        Ok(self.gpu.grid_for(kernel, threads, WARP_BLOCK)?)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Edit {
    Insert,
    Remove,
}

impl Edit {
    fn kernel(self) -> &'static str {
        match self {
            Edit::Insert => "insert_edges",
            Edit::Remove => "erase_edges",
        }
    }
}

/// Whether a dictionary of `num_ids` ids must grow to `top` ids for a batch: false when
/// it holds them; an [`Error::VertexBeyondCapacity`] naming the first request past it
/// when it may not grow.
pub(crate) fn must_grow(
    top: u32,
    num_ids: u32,
    growable: bool,
    first_beyond: impl FnOnce() -> Result<(usize, u32)>,
) -> Result<bool> {
    if top <= num_ids {
        return Ok(false);
    }
    if !growable {
        let (index, id) = first_beyond()?;
        return Err(Error::VertexBeyondCapacity {
            index,
            id,
            num_vertices: num_ids,
            growable: false,
        });
    }
    Ok(true)
}

/// The edges a graph stores for `coo`: a symmetric COO (each undirected edge listed
/// once) gives a directed graph both directions.
pub(crate) fn stored_edges(
    coo: &crate::input::Coo,
    directed: bool,
) -> std::borrow::Cow<'_, crate::input::Coo> {
    if coo.symmetric && directed {
        std::borrow::Cow::Owned(coo.symmetrized())
    } else {
        std::borrow::Cow::Borrowed(coo)
    }
}

/// Refuses a vertex count whose ids would pass [`MAX_VERTEX_ID`] (the two values above
/// it are the tables' sentinels).
pub(crate) fn check_vertex_count(num_vertices: u32) -> Result<()> {
    if num_vertices > MAX_VERTEX_ID + 1 {
        return Err(gpuds_core::Error::InvalidArgument(format!(
            "{num_vertices} vertex ids pass the largest count, {} (ids above {MAX_VERTEX_ID} \
             are reserved); nothing was changed",
            MAX_VERTEX_ID + 1
        ))
        .into());
    }
    Ok(())
}

pub(crate) fn same_len(what: &'static str, a: usize, b: usize) -> Result<()> {
    if a == b {
        Ok(())
    } else {
        Err(Error::LengthMismatch { what, a, b })
    }
}

/// Rejects a reserved id, naming the first.
pub(crate) fn check_host_ids(src: &[u32], dst: &[u32]) -> Result<()> {
    for (index, (&u, &v)) in src.iter().zip(dst).enumerate() {
        if u > MAX_VERTEX_ID || v > MAX_VERTEX_ID {
            return Err(Error::ReservedVertex {
                index,
                id: if u > MAX_VERTEX_ID { u } else { v },
            });
        }
    }
    Ok(())
}

/// The first request naming an id at or past `limit`, and that id.
pub(crate) fn first_at_or_past(src: &[u32], dst: &[u32], limit: u32) -> (usize, u32) {
    src.iter()
        .zip(dst)
        .enumerate()
        .find(|(_, (&u, &v))| u >= limit || v >= limit)
        .map_or((0, limit), |(i, (&u, &v))| {
            (i, if u >= limit { u } else { v })
        })
}
