//! [`DynamicGraph`]: the owner of a graph's dictionary, base slabs, slab pool and
//! counters, and the launches of its batches.

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
        same_len("src and dst", src.len(), dst.len())?;
        if let Some(v) = values {
            same_len("src and values", src.len(), v.len())?;
        }
        let top = self.check_ids(src, Some(dst))?;
        let n_ids = num_vertices.max(top);
        if n_ids > 0 {
            let degrees = self.degrees_of_batch(src, dst, n_ids)?;
            let ids: Option<&CudaSlice<u32>> = None;
            self.ensure_dictionary(n_ids)?;
            let buckets = self.place_sized(ids, 0, n_ids as usize, &degrees)?;
            self.num_ids = n_ids;
            // Tables sized for their degrees overflow into collision slabs rarely at load
            // factors below one (a bucket holds load factor x slots entries on average):
            // room for one bucket in eight, plus the expected overflow of fuller
            // buckets; a batch that runs short grows the pool and runs again.
            let warps = self.gpu.info().sm_count as u64 * 64;
            let over = f64::from((self.config.load_factor - 0.7).max(0.0));
            let slabs = buckets / 8 + (buckets as f64 * over).ceil() as u64;
            self.alloc.reserve_within_max(slabs.saturating_add(warps))?;
        }
        self.run_edges(Edit::Insert, src, dst, values)?;
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

    fn item_shape(&self, kernel: &Kernel, n: usize) -> Result<LaunchConfig> {
        Ok(self.gpu.grid_for(kernel, n.max(1), BLOCK)?)
    }

    fn warp_shape(&self, kernel: &Kernel, n: usize) -> Result<LaunchConfig> {
        let threads = n.max(1).checked_mul(32).ok_or_else(|| {
            gpuds_core::Error::CapacityOverflow(format!("{n} warps of 32 threads"))
        })?;
        Ok(self.gpu.grid_for(kernel, threads, WARP_BLOCK)?)
    }

    // ----- staging and checks -----

    /// The batch on the device (callers skip empty batches).
    fn stage(&self, src: &[u32], dst: &[u32], values: Option<&[W]>) -> Result<Staged<W::Device>> {
        same_len("src and dst", src.len(), dst.len())?;
        if let Some(v) = values {
            same_len("src and values", src.len(), v.len())?;
        }
        check_host_ids(src, dst)?;
        let stream = self.gpu.stream();
        let values = match values {
            Some(v) if !W::SET => {
                let dev: Vec<W::Device> = v.iter().map(|x| x.to_device()).collect();
                Some(stream.clone_htod(&dev)?)
            }
            _ => None,
        };
        Ok(Staged {
            src: stream.clone_htod(src)?,
            dst: stream.clone_htod(dst)?,
            values,
        })
    }

    /// Checks ids on the device: a reserved id fails with [`Error::ReservedVertex`];
    /// returns the largest id + 1 (0 for an empty batch). Synchronizes.
    fn check_ids(&self, a: &CudaSlice<u32>, b: Option<&CudaSlice<u32>>) -> Result<u32> {
        let n = a.len();
        if n == 0 {
            return Ok(0);
        }
        let stream = self.gpu.stream();
        let mut out = stream.alloc_zeros::<u64>(2)?;
        let kernel = self.kernel("check_ids")?;
        let shape = self.item_shape(&kernel, n)?;
        let (n64, null) = (n as u64, 0u64);
        let mut args = stream.launch_builder(kernel.func());
        args.arg(a);
        match b {
            Some(b) => args.arg(b),
            None => args.arg(&null),
        };
        args.arg(&n64).arg(&mut out);
        // SAFETY: reads a[..n] (and b[..n]), writes the two words of `out`.
        unsafe { args.launch(shape) }?;
        let words = stream.clone_dtoh(&out)?;
        if words[0] != 0 {
            let index = (n as u64 - words[0]) as usize;
            let x = stream.clone_dtoh(&a.slice(index..index + 1))?[0];
            let id = match b {
                Some(b) if x <= MAX_VERTEX_ID => stream.clone_dtoh(&b.slice(index..index + 1))?[0],
                _ => x,
            };
            return Err(Error::ReservedVertex { index, id });
        }
        Ok(words[1] as u32)
    }

    /// Grows the dictionary to `top` ids when the configuration allows (new ids get
    /// one-bucket tables), or fails naming the first request past it.
    fn admit_top(
        &mut self,
        top: u32,
        first_beyond: impl FnOnce() -> Result<(usize, u32)>,
    ) -> Result<()> {
        if must_grow(top, self.num_ids, self.config.growable, first_beyond)? {
            self.grow_ids(top)?;
        }
        Ok(())
    }

    /// Makes room for `n` entries in the dictionary (a larger array, the headers copied:
    /// the tables themselves do not move).
    fn ensure_dictionary(&mut self, n: u32) -> Result<()> {
        let have = self.vertices.len();
        if n as usize <= have {
            return Ok(());
        }
        let want = (n as usize)
            .max(have.saturating_mul(2))
            .min(MAX_VERTEX_ID as usize + 1);
        let stream = self.gpu.stream().clone();
        let mut bigger = stream.alloc_zeros::<VertexEntry>(want)?;
        stream.memcpy_dtod(&self.vertices, &mut bigger.slice_mut(..have))?;
        self.vertices = bigger;
        Ok(())
    }

    /// Adds ids `num_ids..top`, each with a one-bucket table. Synchronizes.
    fn grow_ids(&mut self, top: u32) -> Result<()> {
        if top <= self.num_ids {
            return Ok(());
        }
        self.ensure_dictionary(top)?;
        let first = self.num_ids;
        let n = (top - first) as usize;
        let chunk = self.new_chunk(n as u64)?;
        let kernel = self.kernel("place")?;
        let shape = self.item_shape(&kernel, n)?;
        let stream = self.gpu.stream().clone();
        let r = self.graph_ref(self.control_ptr());
        let (null, n64, uniform) = (0u64, n as u64, 1u32);
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&r)
            .arg(&null)
            .arg(&first)
            .arg(&n64)
            .arg(&null)
            .arg(&null)
            .arg(&uniform)
            .arg(&chunk);
        // SAFETY: writes vertices[first..top] (allocated by ensure_dictionary); the chunk
        // holds n base slabs.
        unsafe { args.launch(shape) }?;
        self.num_ids = top;
        Ok(())
    }

    /// A chunk of `slabs` fresh base slabs (all ones); returns its device address.
    fn new_chunk(&mut self, slabs: u64) -> Result<u64> {
        let words = gpuds_core::size::checked_mul(slabs, 32, "base slab words")?;
        let words = usize::try_from(words)
            .map_err(|_| gpuds_core::Error::CapacityOverflow(format!("{slabs} base slabs")))?;
        // SAFETY: filled with all ones (empty slots, NULL next) right below.
        let mut chunk = unsafe {
            self.gpu
                .alloc_uninit::<u32>(words.max(32), "the graph's base slabs")
        }?;
        primitives::fill(&self.gpu, &mut chunk, u32::MAX)?;
        let address = chunk.device_ptr(self.gpu.stream()).0;
        self.chunks.push(chunk);
        Ok(address)
    }

    /// Degrees of a batch's edges over ids `0..n_ids` (u64 per id). Does not synchronize.
    fn degrees_of_batch(
        &self,
        src: &CudaSlice<u32>,
        dst: &CudaSlice<u32>,
        n_ids: u32,
    ) -> Result<CudaSlice<u64>> {
        let stream = self.gpu.stream();
        let mut deg = stream.alloc_zeros::<u64>(n_ids.max(1) as usize)?;
        let n = src.len();
        if n > 0 {
            let kernel = self.kernel("degrees")?;
            let shape = self.item_shape(&kernel, n)?;
            let (n64, undirected, keep) = (
                n as u64,
                u32::from(!self.config.directed),
                u32::from(self.config.keep_self_loops),
            );
            let mut args = stream.launch_builder(kernel.func());
            args.arg(src)
                .arg(dst)
                .arg(&n64)
                .arg(&undirected)
                .arg(&keep)
                .arg(&mut deg);
            // SAFETY: reads src/dst[..n] (ids checked below n_ids), writes deg[id].
            unsafe { args.launch(shape) }?;
        }
        Ok(deg)
    }

    /// Gives `n` vertices (`ids`, or `first..first + n`) tables sized for `degrees[i]`
    /// in one new chunk; returns the base slabs placed. Synchronizes (the scan's total).
    fn place_sized(
        &mut self,
        ids: Option<&CudaSlice<u32>>,
        first: u32,
        n: usize,
        degrees: &CudaSlice<u64>,
    ) -> Result<u64> {
        if n == 0 {
            return Ok(0);
        }
        let stream = self.gpu.stream().clone();
        let mut buckets = stream.alloc_zeros::<u64>(n)?;
        let kernel = self.kernel("buckets_of")?;
        let shape = self.item_shape(&kernel, n)?;
        let per_bucket = self.config.load_factor * W::SLOTS as f32;
        let (n64, max_buckets) = (n as u64, u64::from(crate::MAX_BUCKETS));
        let mut args = stream.launch_builder(kernel.func());
        args.arg(degrees)
            .arg(&n64)
            .arg(&per_bucket)
            .arg(&max_buckets)
            .arg(&mut buckets);
        // SAFETY: reads degrees[..n], writes buckets[..n].
        unsafe { args.launch(shape) }?;
        let mut offsets = stream.alloc_zeros::<u64>(n)?;
        let total = primitives::exclusive_scan(&self.gpu, &buckets, &mut offsets)?;
        let chunk = self.new_chunk(total)?;
        let kernel = self.kernel("place")?;
        let shape = self.item_shape(&kernel, n)?;
        let r = self.graph_ref(self.control_ptr());
        let (null, uniform) = (0u64, 0u32);
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&r);
        match ids {
            Some(ids) => args.arg(ids),
            None => args.arg(&null),
        };
        args.arg(&first)
            .arg(&n64)
            .arg(&buckets)
            .arg(&offsets)
            .arg(&uniform)
            .arg(&chunk);
        // SAFETY: writes the entries of the n vertices (in the dictionary); offsets and
        // buckets stay inside the chunk of `total` slabs.
        unsafe { args.launch(shape) }?;
        Ok(total)
    }

    // ----- edges -----

    /// Inserts edges `src[i] -> dst[i]` (both directions in an undirected graph) with
    /// `values[i]` (a map graph; `None`: 0). An existing edge's value is replaced, never
    /// duplicated; duplicates inside the batch keep one. Dropped self loops and
    /// (graphs with deleted vertices) edges with a deleted end are skipped. Ids past
    /// the dictionary grow it (or fail, [`GraphConfig::growable`]); a reserved id fails
    /// the batch before anything is applied. Synchronizes.
    ///
    /// On [`Error::PoolExhausted`] (the pool at its maximum) the edges that found room
    /// were inserted and every count is exact.
    pub fn insert_edges(
        &mut self,
        src: &[u32],
        dst: &[u32],
        values: Option<&[W]>,
    ) -> Result<EdgeTally> {
        if src.is_empty() && dst.is_empty() {
            return Ok(EdgeTally::default());
        }
        let staged = self.stage(src, dst, values)?;
        let top = src.iter().chain(dst).map(|&x| x + 1).max().unwrap_or(0);
        let limit = self.num_ids;
        self.admit_top(top, || Ok(first_at_or_past(src, dst, limit)))?;
        self.run_edges(
            Edit::Insert,
            &staged.src,
            &staged.dst,
            staged.values.as_ref(),
        )
    }

    /// [`insert_edges`](Self::insert_edges) with the batch on the device.
    pub fn insert_edges_device(
        &mut self,
        src: &CudaSlice<u32>,
        dst: &CudaSlice<u32>,
        values: Option<&CudaSlice<W::Device>>,
    ) -> Result<EdgeTally> {
        same_len("src and dst", src.len(), dst.len())?;
        if let Some(v) = values {
            same_len("src and values", src.len(), v.len())?;
        }
        let top = self.check_ids(src, Some(dst))?;
        if top > self.num_ids && !self.config.growable {
            let (s, d) = (
                self.gpu.stream().clone_dtoh(src)?,
                self.gpu.stream().clone_dtoh(dst)?,
            );
            let limit = self.num_ids;
            self.admit_top(top, || Ok(first_at_or_past(&s, &d, limit)))?;
        } else {
            self.grow_ids(top)?;
        }
        self.run_edges(Edit::Insert, src, dst, values)
    }

    /// Deletes edges `src[i] -> dst[i]` (both directions in an undirected graph): each
    /// becomes a tombstone in its table until [`flush`](Self::flush). Edges that are
    /// not there, and ids past the dictionary, change nothing (the latter are skipped).
    /// Synchronizes.
    pub fn remove_edges(&mut self, src: &[u32], dst: &[u32]) -> Result<EdgeTally> {
        if src.is_empty() && dst.is_empty() {
            return Ok(EdgeTally::default());
        }
        let staged = self.stage(src, dst, None)?;
        self.remove_edges_device(&staged.src, &staged.dst)
    }

    /// [`remove_edges`](Self::remove_edges) with the batch on the device.
    pub fn remove_edges_device(
        &mut self,
        src: &CudaSlice<u32>,
        dst: &CudaSlice<u32>,
    ) -> Result<EdgeTally> {
        same_len("src and dst", src.len(), dst.len())?;
        let top = self.check_ids(src, Some(dst))?;
        if top > self.num_ids {
            // Ids past the dictionary name no edge: those requests are skipped here
            // (the kernel would refuse them with BAD_VERTEX).
            return self.remove_edges_filtered(src, dst);
        }
        self.run_edges(Edit::Remove, src, dst, None)
    }

    fn remove_edges_filtered(
        &mut self,
        src: &CudaSlice<u32>,
        dst: &CudaSlice<u32>,
    ) -> Result<EdgeTally> {
        let stream = self.gpu.stream().clone();
        let (s, d) = (stream.clone_dtoh(src)?, stream.clone_dtoh(dst)?);
        let limit = self.num_ids;
        let (ks, kd): (Vec<u32>, Vec<u32>) = s
            .iter()
            .zip(&d)
            .filter(|(a, b)| **a < limit && **b < limit)
            .map(|(a, b)| (*a, *b))
            .unzip();
        let skipped = (s.len() - ks.len()) as u64;
        if ks.is_empty() {
            return Ok(EdgeTally { edges: 0, skipped });
        }
        let (ds, dd) = (stream.clone_htod(&ks)?, stream.clone_htod(&kd)?);
        let mut tally = self.run_edges(Edit::Remove, &ds, &dd, None)?;
        tally.skipped += skipped;
        Ok(tally)
    }

    /// Runs an insertion or deletion batch already checked (every id in the
    /// dictionary). Insertions grow the pool and run again when it ran out (replace
    /// semantics make a second run idempotent). Synchronizes.
    fn run_edges(
        &mut self,
        edit: Edit,
        src: &CudaSlice<u32>,
        dst: &CudaSlice<u32>,
        values: Option<&CudaSlice<W::Device>>,
    ) -> Result<EdgeTally> {
        let n = src.len();
        if n == 0 {
            return Ok(EdgeTally::default());
        }
        let entries = if self.config.directed {
            n as u64
        } else {
            2 * n as u64
        };
        // The pool is not grown ahead of a batch (counting its slabs in use costs a
        // synchronization): a batch that runs out grows it and runs again.
        let stream = self.gpu.stream().clone();
        let mut total = [0u64; TALLY_WORDS];
        for round in 0..=GROWTH_ROUNDS {
            let call = CallStatus::new(&self.gpu, n)?;
            let mut tally = stream.alloc_zeros::<u64>(TALLY_WORDS)?;
            let kernel = self.kernel(edit.kernel())?;
            let shape = self.item_shape(&kernel, n)?;
            let r = self.graph_ref(call.status_ptr());
            let (n64, null, failed) = (n as u64, 0u64, call.bits_ptr());
            let mut args = stream.launch_builder(kernel.func());
            args.arg(&r).arg(src).arg(dst);
            if edit == Edit::Insert {
                match values {
                    Some(v) => args.arg(v),
                    None => args.arg(&null),
                };
            }
            args.arg(&n64).arg(&mut tally).arg(&null).arg(&failed);
            // SAFETY: reads src/dst(/values)[..n] (every id below num_ids, checked), writes
            // the tally's words and the call's failure bits.
            unsafe { args.launch(shape) }?;
            let words = stream.clone_dtoh(&tally)?;
            for (t, w) in total.iter_mut().zip(&words) {
                *t += w;
            }
            let status = call.status()?;
            if status.is_ok() {
                break;
            }
            let exhausted = status.contains(Status::POOL_EXHAUSTED);
            if !exhausted || edit != Edit::Insert {
                call.check()?;
                break;
            }
            // Out of slabs: grow the pool and run the batch again.
            let capacity = self.alloc.capacity_units();
            let max = self.alloc.config().max_units;
            if round == GROWTH_ROUNDS || capacity >= max {
                return Err(Error::PoolExhausted {
                    capacity,
                    not_applied: call.not_applied()?.len(),
                });
            }
            let warps = self.gpu.info().sm_count as u64 * 64;
            self.alloc.reserve_within_max(
                capacity.max(entries.div_ceil(W::SLOTS as u64).saturating_add(warps)),
            )?;
            // Skipped requests of this run are counted again by the next.
            total[2] = 0;
        }
        let entries = total[0];
        let loops = total[1];
        let edges = if self.config.directed {
            entries
        } else {
            (entries + loops) / 2
        };
        Ok(EdgeTally {
            edges,
            skipped: total[2],
        })
    }

    /// Edge-exists queries: whether `src[i] -> dst[i]` is an edge. Ids past the
    /// dictionary are simply absent. Synchronizes.
    pub fn edge_exists_many(&self, src: &[u32], dst: &[u32]) -> Result<Vec<bool>> {
        Ok(self.query(src, dst, false)?.0)
    }

    /// The value of each edge `src[i] -> dst[i]`, `None` where there is none (a set
    /// graph: `Some(())`). Synchronizes.
    pub fn edge_values_many(&self, src: &[u32], dst: &[u32]) -> Result<Vec<Option<W>>> {
        let (found, values) = self.query(src, dst, true)?;
        Ok(found
            .iter()
            .enumerate()
            .map(|(i, &f)| {
                f.then(|| {
                    values
                        .get(i)
                        .map_or_else(W::default, |&d| W::from_device(d))
                })
            })
            .collect())
    }

    fn query(
        &self,
        src: &[u32],
        dst: &[u32],
        want_values: bool,
    ) -> Result<(Vec<bool>, Vec<W::Device>)> {
        same_len("src and dst", src.len(), dst.len())?;
        let n = src.len();
        if n == 0 {
            return Ok((Vec::new(), Vec::new()));
        }
        // Ids past the dictionary (reserved ones included) name no edge: they are answered
        // here and left out of the device batch.
        let limit = self.num_ids;
        let keep: Vec<usize> = (0..n)
            .filter(|&i| src[i] < limit && dst[i] < limit)
            .collect();
        let mut found = vec![false; n];
        let mut values = vec![W::Device::default(); if want_values && !W::SET { n } else { 0 }];
        if keep.is_empty() {
            return Ok((found, values));
        }
        let (ks, kd): (Vec<u32>, Vec<u32>) = keep.iter().map(|&i| (src[i], dst[i])).unzip();
        let m = ks.len();
        let stream = self.gpu.stream().clone();
        let (ds, dd) = (stream.clone_htod(&ks)?, stream.clone_htod(&kd)?);
        let mut bits = stream.alloc_zeros::<u32>(m.div_ceil(32))?;
        let mut vals = if want_values && !W::SET {
            Some(stream.alloc_zeros::<W::Device>(m)?)
        } else {
            None
        };
        let call = CallStatus::new(&self.gpu, m)?;
        let kernel = self.kernel("find_edges")?;
        let shape = self.item_shape(&kernel, m)?;
        let r = self.graph_ref(call.status_ptr());
        let (m64, null, failed) = (m as u64, 0u64, call.bits_ptr());
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&r).arg(&ds).arg(&dd).arg(&m64);
        match &mut vals {
            Some(v) => args.arg(v),
            None => args.arg(&null),
        };
        args.arg(&mut bits).arg(&failed);
        // SAFETY: reads the m requests, writes bits[..m/32], values[..m], failure bits.
        unsafe { args.launch(shape) }?;
        call.check()?;
        let bits = stream.clone_dtoh(&bits)?;
        let got = match &vals {
            Some(v) => stream.clone_dtoh(v)?,
            None => Vec::new(),
        };
        for (j, &i) in keep.iter().enumerate() {
            found[i] = bits[j / 32] >> (j % 32) & 1 == 1;
            if let Some(&v) = got.get(j) {
                values[i] = v;
            }
        }
        Ok((found, values))
    }

    /// Out-degrees of `ids` (0 past the dictionary and for deleted vertices; exact).
    /// Synchronizes.
    pub fn degree_many(&self, ids: &[u32]) -> Result<Vec<u32>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let stream = self.gpu.stream();
        let d = stream.clone_htod(ids)?;
        let mut out = stream.alloc_zeros::<u32>(ids.len())?;
        let kernel = self.kernel("degree_of")?;
        let shape = self.item_shape(&kernel, ids.len())?;
        let r = self.device_ref();
        let n64 = ids.len() as u64;
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&r).arg(&d).arg(&n64).arg(&mut out);
        // SAFETY: reads ids[..n], writes out[..n].
        unsafe { args.launch(shape) }?;
        Ok(stream.clone_dtoh(&out)?)
    }

    /// The adjacency of each of `ids` (count pass: the exact degrees; scan; collect
    /// pass: one warp per vertex). Ids past the dictionary have none. Synchronizes.
    pub fn adjacency_many(&self, ids: &[u32]) -> Result<Adjacency<W>> {
        let stream = self.gpu.stream().clone();
        let degrees = self.degree_many(ids)?;
        let mut offsets = Vec::with_capacity(ids.len() + 1);
        let mut at = 0u64;
        offsets.push(0);
        for &d in &degrees {
            at += d as u64;
            offsets.push(at);
        }
        if at == 0 {
            return Ok(Adjacency {
                offsets,
                dst: Vec::new(),
                values: Vec::new(),
            });
        }
        let d_ids = stream.clone_htod(ids)?;
        let d_offsets = stream.clone_htod(&offsets)?;
        let (dst, values) =
            self.collect(Some(&d_ids), 0, ids.len(), &d_offsets, at as usize, false)?;
        Ok(Adjacency {
            offsets,
            dst: stream.clone_dtoh(&dst.1)?,
            values: self.host_values(values.as_ref())?,
        })
    }

    fn host_values(&self, values: Option<&CudaSlice<W::Device>>) -> Result<Vec<W>> {
        Ok(match values {
            Some(v) if !W::SET => self
                .gpu
                .stream()
                .clone_dtoh(v)?
                .into_iter()
                .map(W::from_device)
                .collect(),
            _ => Vec::new(),
        })
    }

    /// The collect pass: live entries of vertices (ids, or first..first + n) at
    /// offsets (`total` > 0 entries). Returns ((src?, dst), values?) on the device.
    #[allow(clippy::type_complexity)]
    fn collect(
        &self,
        ids: Option<&CudaSlice<u32>>,
        first: u32,
        n: usize,
        offsets: &CudaSlice<u64>,
        total: usize,
        with_src: bool,
    ) -> Result<(
        (Option<CudaSlice<u32>>, CudaSlice<u32>),
        Option<CudaSlice<W::Device>>,
    )> {
        let stream = self.gpu.stream().clone();
        let mut dst = stream.alloc_zeros::<u32>(total)?;
        let mut src = if with_src {
            Some(stream.alloc_zeros::<u32>(total)?)
        } else {
            None
        };
        let mut values = if W::SET {
            None
        } else {
            Some(stream.alloc_zeros::<W::Device>(total)?)
        };
        let mut overflow = stream.alloc_zeros::<u32>(1)?;
        let kernel = self.kernel("collect")?;
        let shape = self.warp_shape(&kernel, n)?;
        let r = self.device_ref();
        let (null, n64) = (0u64, n as u64);
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&r);
        match ids {
            Some(i) => args.arg(i),
            None => args.arg(&null),
        };
        args.arg(&first).arg(&n64).arg(offsets);
        match &mut src {
            Some(s) => args.arg(s),
            None => args.arg(&null),
        };
        args.arg(&mut dst);
        match &mut values {
            Some(v) => args.arg(v),
            None => args.arg(&null),
        };
        args.arg(&mut overflow);
        // SAFETY: each vertex writes at most offsets[i + 1] - offsets[i] entries from
        // offsets[i] (< total), reading its own table.
        unsafe { args.launch(shape) }?;
        if stream.clone_dtoh(&overflow)?[0] != 0 {
            return Err(Error::Invalid(
                "a table holds more live entries than its vertex's count".into(),
            ));
        }
        Ok(((src, dst), values))
    }

    /// Exclusive scan of all degrees, `num_ids + 1` entries, on the device; and the
    /// total.
    fn all_offsets(&self) -> Result<(CudaSlice<u64>, u64)> {
        self.offsets_of(None, self.num_ids as usize)
    }

    /// Exclusive scan of the degrees of `ids` (or of `0..n`), `n + 1` entries, on the
    /// device; and the total.
    fn offsets_of(&self, ids: Option<&CudaSlice<u32>>, n: usize) -> Result<(CudaSlice<u64>, u64)> {
        let stream = self.gpu.stream().clone();
        let mut d = stream.alloc_zeros::<u64>(n + 1)?;
        let kernel = self.kernel("degrees_wide")?;
        let shape = self.item_shape(&kernel, n + 1)?;
        let r = self.device_ref();
        let n64 = n as u64;
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&r);
        let null = 0u64;
        match ids {
            Some(ids) => args.arg(ids),
            None => args.arg(&null),
        };
        args.arg(&n64).arg(&mut d);
        // SAFETY: writes d[..=n]; reads the counts of ids[..n] (or of ids below n).
        unsafe { args.launch(shape) }?;
        let mut offsets = stream.alloc_zeros::<u64>(n + 1)?;
        let total = primitives::exclusive_scan(&self.gpu, &d, &mut offsets)?;
        Ok((offsets, total))
    }

    /// Every stored edge as COO on the device: (src, dst, values).
    #[allow(clippy::type_complexity)]
    pub(crate) fn device_coo(
        &self,
    ) -> Result<Option<(CudaSlice<u32>, CudaSlice<u32>, Option<CudaSlice<W::Device>>)>> {
        let (offsets, total) = self.all_offsets()?;
        if total == 0 {
            return Ok(None);
        }
        let ((src, dst), values) = self.collect(
            None,
            0,
            self.num_ids as usize,
            &offsets,
            total as usize,
            true,
        )?;
        let src = src.ok_or_else(|| Error::Invalid("collect returned no sources".into()))?;
        Ok(Some((src, dst, values)))
    }

    /// Every stored edge (each direction of an undirected edge), vertex by vertex.
    /// Synchronizes.
    pub fn to_coo(&self) -> Result<EdgeList<W>> {
        let stream = self.gpu.stream().clone();
        let Some((src, dst, values)) = self.device_coo()? else {
            return Ok(EdgeList::default());
        };
        Ok(EdgeList {
            src: stream.clone_dtoh(&src)?,
            dst: stream.clone_dtoh(&dst)?,
            values: self.host_values(values.as_ref())?,
        })
    }

    /// The graph as CSR over ids `0..vertex_ids()`, each row sorted by destination when
    /// `sorted` (on the host), else in table order. Synchronizes.
    pub fn to_csr(&self, sorted: bool) -> Result<Csr<W>> {
        let stream = self.gpu.stream().clone();
        let (offsets, total) = self.all_offsets()?;
        let row_offsets = stream.clone_dtoh(&offsets)?;
        if total == 0 {
            return Ok(Csr {
                row_offsets,
                cols: Vec::new(),
                values: Vec::new(),
            });
        }
        let ((_, dst), values) = self.collect(
            None,
            0,
            self.num_ids as usize,
            &offsets,
            total as usize,
            false,
        )?;
        let mut cols = stream.clone_dtoh(&dst)?;
        let mut vals = self.host_values(values.as_ref())?;
        if sorted {
            for w in row_offsets.windows(2) {
                let (a, b) = (w[0] as usize, w[1] as usize);
                if vals.is_empty() {
                    cols[a..b].sort_unstable();
                } else {
                    let mut row: Vec<(u32, W)> = cols[a..b]
                        .iter()
                        .copied()
                        .zip(vals[a..b].iter().copied())
                        .collect();
                    row.sort_unstable_by_key(|p| p.0);
                    for (k, (c, v)) in row.into_iter().enumerate() {
                        cols[a + k] = c;
                        vals[a + k] = v;
                    }
                }
            }
        }
        Ok(Csr {
            row_offsets,
            cols,
            values: vals,
        })
    }

    // ----- vertices -----

    /// Inserts `count` vertices with empty one-bucket tables (or their old tables,
    /// emptied): deleted ids first, ascending (reuse, as faimGraph does), then new ids
    /// past the dictionary. Returns the ids. Synchronizes.
    pub fn insert_vertices(&mut self, count: u32) -> Result<Vec<u32>> {
        let mut ids: Vec<u32> = self.deleted.iter().take(count as usize).collect();
        let fresh = count - ids.len() as u32;
        let first = self.num_ids;
        if fresh > 0 {
            let top = first
                .checked_add(fresh)
                .filter(|&t| t <= MAX_VERTEX_ID + 1)
                .ok_or_else(|| {
                    gpuds_core::Error::CapacityOverflow(format!(
                        "{fresh} new vertices past {first} ids pass the largest id {MAX_VERTEX_ID}"
                    ))
                })?;
            if !self.config.growable {
                return Err(Error::VertexBeyondCapacity {
                    index: ids.len(),
                    id: first,
                    num_vertices: first,
                    growable: false,
                });
            }
            self.grow_ids(top)?;
        }
        self.revive(&ids)?;
        ids.extend(first..first + fresh);
        Ok(ids)
    }

    /// Clears the deleted bit of `ids` (their tables are empty).
    fn revive(&mut self, ids: &[u32]) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        let stream = self.gpu.stream().clone();
        let d = stream.clone_htod(ids)?;
        let kernel = self.kernel("revive")?;
        let shape = self.item_shape(&kernel, ids.len())?;
        let r = self.device_ref();
        let n64 = ids.len() as u64;
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&r).arg(&d).arg(&n64);
        // SAFETY: reads ids[..n] (in the dictionary), clears a bit of their entries.
        unsafe { args.launch(shape) }?;
        stream.synchronize()?;
        for id in ids {
            self.deleted.remove(*id);
        }
        Ok(())
    }

    /// Vertex insertion (§5.4.4): vertices `ids` (new ids, deleted ones, or ones with no
    /// edges) get tables sized for their degrees in the batch, then the batch's edges
    /// are inserted (Algorithm 5.1). A vertex in `ids` that has edges fails the call
    /// with [`Error::Config`] before anything changes. Synchronizes.
    pub fn insert_vertices_with_edges(
        &mut self,
        ids: &[u32],
        src: &[u32],
        dst: &[u32],
        values: Option<&[W]>,
    ) -> Result<EdgeTally> {
        check_host_ids(ids, ids)?;
        same_len("src and dst", src.len(), dst.len())?;
        check_host_ids(src, dst)?;
        let mut unique: Vec<u32> = ids.to_vec();
        unique.sort_unstable();
        unique.dedup();
        let existing: Vec<u32> = unique
            .iter()
            .copied()
            .filter(|&u| u < self.num_ids)
            .collect();
        let degrees_now = self.degree_many(&existing)?;
        if let Some(k) = degrees_now.iter().position(|&d| d != 0) {
            return Err(Error::Config(format!(
                "vertex {} has {} edges: only vertices with none can be inserted",
                existing[k], degrees_now[k]
            )));
        }
        let top = unique
            .last()
            .map_or(0, |&u| u + 1)
            .max(src.iter().chain(dst).map(|&x| x + 1).max().unwrap_or(0));
        let limit = self.num_ids;
        self.admit_top(top, || Ok(first_at_or_past(src, dst, limit)))?;
        let revived: Vec<u32> = unique
            .iter()
            .copied()
            .filter(|&u| self.deleted.contains(u))
            .collect();
        self.revive(&revived)?;
        // Degrees of the inserted vertices in this batch, counted on the host.
        let pos: HashMap<u32, usize> = unique.iter().enumerate().map(|(i, &u)| (u, i)).collect();
        let mut deg = vec![0u64; unique.len()];
        for (&u, &v) in src.iter().zip(dst) {
            if u == v && !self.config.keep_self_loops {
                continue;
            }
            if let Some(&i) = pos.get(&u) {
                deg[i] += 1;
            }
            if !self.config.directed && u != v {
                if let Some(&i) = pos.get(&v) {
                    deg[i] += 1;
                }
            }
        }
        let stream = self.gpu.stream().clone();
        if !unique.is_empty() {
            let d_ids = stream.clone_htod(&unique)?;
            let d_deg = stream.clone_htod(&deg)?;
            self.place_sized(Some(&d_ids), 0, unique.len(), &d_deg)?;
        }
        if src.is_empty() {
            return Ok(EdgeTally::default());
        }
        let staged = self.stage(src, dst, values)?;
        self.run_edges(
            Edit::Insert,
            &staged.src,
            &staged.dst,
            staged.values.as_ref(),
        )
    }

    /// Vertex deletion (Algorithm 5.2): every edge of `ids` goes (undirected: each arc
    /// of a deleted vertex, collected first, is removed from its neighbour's table by
    /// one thread, so a hub's neighbours spread over the whole GPU instead of Algorithm
    /// 5.2's one warp per vertex; directed: a sweep of all
    /// tables removes the edges into them), their collision slabs go back to the pool,
    /// their base slabs are emptied and kept for reuse, their counts become 0. Their ids
    /// are reused first by [`insert_vertices`](Self::insert_vertices). Ids already
    /// deleted or past the dictionary are ignored; returns how many vertices were
    /// deleted. Synchronizes.
    ///
    /// An error after the ids were marked leaves them deleted (the host's set follows
    /// the device's marks) but their arcs may not all be gone: [`validate`](Self::validate)
    /// then names the edges into deleted vertices, and the graph is best rebuilt.
    pub fn remove_vertices(&mut self, ids: &[u32]) -> Result<u64> {
        if ids.is_empty() {
            return Ok(0);
        }
        let d = self.gpu.stream().clone_htod(ids)?;
        self.remove_vertices_device(&d)
    }

    /// [`remove_vertices`](Self::remove_vertices) with the ids on the device. The host
    /// does no work per id: the device drops duplicates, deleted ids and ids past the
    /// dictionary, and the host's set of deleted ids is brought up to date from a bitmap
    /// (or, for a batch smaller than the dictionary's bitmap, from the list of ids).
    /// Synchronizes.
    pub fn remove_vertices_device(&mut self, ids: &CudaSlice<u32>) -> Result<u64> {
        let len = ids.len();
        if len == 0 || self.num_ids == 0 {
            return Ok(0);
        }
        let stream = self.gpu.stream().clone();
        self.alloc.clear_status()?;
        let call = CallStatus::new(&self.gpu, 0)?;
        // Step 1: mark; the winners (each live id once) come back as a list and a bitmap.
        let mut list = stream.alloc_zeros::<u32>(len)?;
        let mut count = stream.alloc_zeros::<u64>(1)?;
        let mut bits = stream.alloc_zeros::<u32>((self.num_ids as usize).div_ceil(32))?;
        let kernel = self.kernel("mark_deleted")?;
        let r = self.graph_ref(call.status_ptr());
        let len64 = len as u64;
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&r)
            .arg(ids)
            .arg(&len64)
            .arg(&mut list)
            .arg(&mut count)
            .arg(&mut bits);
        // SAFETY: reads ids[..len]; sets a bit of the entries of ids in the dictionary;
        // appends at most len winners to list; sets bits of ids below num_ids only.
        unsafe { args.launch(self.item_shape(&kernel, len)?) }?;
        let n = match stream.clone_dtoh(&count) {
            Ok(c) => c[0] as usize,
            Err(e) => {
                // The marks may have landed: the host's set follows the bitmap as far as
                // the device still answers.
                let _ = self.learn_deleted(None, &bits);
                return Err(e.into());
            }
        };
        if n == 0 {
            call.check()?;
            return Ok(0);
        }
        let emptied = self.unlink_and_empty(&call, &list, n);
        // The host's set, whatever the steps returned (the dictionary's bits are set).
        let learned = self.learn_deleted(Some((&list, n)), &bits);
        emptied?;
        learned?;
        call.check()?;
        self.alloc.check_status()?;
        Ok(n as u64)
    }

    /// Adds the ids the mark step deleted to the host's set: from the list of the `n`
    /// winners when there are fewer of them than words in the bitmap, else (or without
    /// a list) from the bitmap, per word.
    fn learn_deleted(
        &mut self,
        list: Option<(&CudaSlice<u32>, usize)>,
        bits: &CudaSlice<u32>,
    ) -> Result<()> {
        let stream = self.gpu.stream().clone();
        match list {
            Some((list, n)) if n < bits.len() => {
                for u in stream.clone_dtoh(&list.slice(..n))? {
                    self.deleted.insert(u);
                }
            }
            _ => {
                self.deleted.merge_bits(&stream.clone_dtoh(bits)?);
            }
        }
        Ok(())
    }

    /// Vertex deletion, steps 2 and 3, for the `n` vertices of `list` (marked deleted).
    fn unlink_and_empty(&self, call: &CallStatus, list: &CudaSlice<u32>, n: usize) -> Result<()> {
        let stream = self.gpu.stream().clone();
        // Edge updates from here on check their ends: the graph has deleted vertices.
        let mut r = self.graph_ref(call.status_ptr());
        r.flags |= HAS_DELETED;
        // Step 2: unlink (undirected: arc by arc) or sweep (directed).
        if self.config.directed {
            let kernel = self.kernel("sweep_deleted")?;
            let shape = self.warp_shape(&kernel, self.num_ids as usize)?;
            let mut args = stream.launch_builder(kernel.func());
            args.arg(&r);
            // SAFETY: walks and edits the tables of live vertices only.
            unsafe { args.launch(shape) }?;
        } else {
            // The deleted vertices' arcs (count, scan, collect), then one thread per
            // arc removes the reverse arc from the neighbour's table.
            let (offsets, total) = self.offsets_of(Some(list), n)?;
            if total > 0 {
                let ((src, dst), _) =
                    self.collect(Some(list), 0, n, &offsets, total as usize, true)?;
                let src =
                    src.ok_or_else(|| Error::Invalid("collect returned no sources".into()))?;
                let kernel = self.kernel("unlink_arcs")?;
                let shape = self.item_shape(&kernel, total as usize)?;
                let mut args = stream.launch_builder(kernel.func());
                args.arg(&r).arg(&src).arg(&dst).arg(&total);
                // SAFETY: reads the collected arcs; edits the tables of live neighbours.
                unsafe { args.launch(shape) }?;
            }
        }
        // Step 3: empty the deleted vertices' tables.
        let mut freed = stream.alloc_zeros::<u64>(1)?;
        let kernel = self.kernel("empty_tables")?;
        let shape = self.warp_shape(&kernel, n)?;
        let n64 = n as u64;
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&r).arg(list).arg(&n64).arg(&mut freed);
        // SAFETY: one warp per deleted vertex rewrites its own table only.
        unsafe { args.launch(shape) }?;
        Ok(())
    }

    /// FLUSH of every table: tombstones dropped, each list packed, emptied collision
    /// slabs returned to the pool. Returns how many slabs were freed. Synchronizes.
    pub fn flush(&mut self) -> Result<u64> {
        self.flush_inner(None)
    }

    /// FLUSH of the tables of `ids` only (ids past the dictionary are ignored).
    /// Synchronizes.
    pub fn flush_vertices(&mut self, ids: &[u32]) -> Result<u64> {
        self.flush_inner(Some(ids))
    }

    fn flush_inner(&mut self, ids: Option<&[u32]>) -> Result<u64> {
        let stream = self.gpu.stream().clone();
        let list = ids.map(|i| {
            let mut v: Vec<u32> = i.iter().copied().filter(|&u| u < self.num_ids).collect();
            v.sort_unstable();
            v.dedup();
            v
        });
        let n = list.as_ref().map_or(self.num_ids as usize, Vec::len);
        if n == 0 {
            return Ok(0);
        }
        let d = match &list {
            Some(v) => Some(stream.clone_htod(v)?),
            None => None,
        };
        self.alloc.clear_status()?;
        let mut freed = stream.alloc_zeros::<u64>(1)?;
        let kernel = self.kernel("flush")?;
        let shape = self.warp_shape(&kernel, n)?;
        let r = self.device_ref();
        let (null, first, n64) = (0u64, 0u32, n as u64);
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&r);
        match &d {
            Some(d) => args.arg(d),
            None => args.arg(&null),
        };
        args.arg(&first).arg(&n64).arg(&mut freed);
        // SAFETY: one warp per vertex rewrites its own table only.
        unsafe { args.launch(shape) }?;
        let freed = stream.clone_dtoh(&freed)?[0];
        self.alloc.check_status()?;
        Ok(freed)
    }

    // ----- applications -----

    /// Static triangle counting on the tables (§5.6.3): each triangle once, by an
    /// edge-exists query per wedge (for every edge (u, v), u < v, the smaller table is
    /// walked and the other asked for each neighbour w > v). Undirected graphs only.
    /// Synchronizes.
    pub fn triangle_count(&self) -> Result<u64> {
        if self.config.directed {
            return Err(Error::Config(
                "triangle counting needs an undirected graph".into(),
            ));
        }
        match self.device_coo()? {
            Some((src, dst, _)) => self.triangles_over(&src, &dst),
            None => Ok(0),
        }
    }

    /// Triangle count over a device edge list of the graph (each edge (u, v) with u < v
    /// is one task).
    pub(crate) fn triangles_over(&self, src: &CudaSlice<u32>, dst: &CudaSlice<u32>) -> Result<u64> {
        let n = src.len();
        let stream = self.gpu.stream().clone();
        let mut total = stream.alloc_zeros::<u64>(1)?;
        if n > 0 {
            let kernel = self.kernel("triangles")?;
            let shape = self.warp_shape(&kernel, n)?;
            let r = self.device_ref();
            let n64 = n as u64;
            let mut args = stream.launch_builder(kernel.func());
            args.arg(&r).arg(src).arg(dst).arg(&n64).arg(&mut total);
            // SAFETY: reads the edge list and the tables; writes one word.
            unsafe { args.launch(shape) }?;
        }
        Ok(stream.clone_dtoh(&total)?[0])
    }

    // ----- inspection -----

    pub(crate) fn parts(&self) -> crate::image::Parts<'_> {
        crate::image::Parts {
            gpu: &self.gpu,
            vertices: &self.vertices,
            num_ids: self.num_ids,
            chunks: &self.chunks,
            alloc: &self.alloc,
            hash: self.hash,
            config: &self.config,
            deleted: &self.deleted,
        }
    }

    /// Checks every invariant on a host copy of the graph: each vertex's count equals
    /// its live entries; no destination twice in a table; every destination in the
    /// dictionary, not deleted, in the bucket its hash names; empty slots only at the
    /// end of each list; every collision slab allocated in the pool and reachable from
    /// exactly one list (and no other slab in use); deleted vertices have empty tables;
    /// an undirected graph holds each edge in both directions; the counters equal the
    /// totals. Synchronizes; copies the whole graph.
    pub fn validate(&self) -> Result<()> {
        let image = crate::image::Image::read(&self.parts())?;
        let (live, claimed, loops) = self.counters()?;
        image.check::<W>(live, claimed, loops)
    }

    /// Memory, slabs, chain lengths and load factors (see [`GraphStats`](crate::GraphStats)).
    /// Synchronizes; copies the whole graph.
    pub fn stats(&self) -> Result<crate::GraphStats> {
        let image = crate::image::Image::read(&self.parts())?;
        Ok(image.stats::<W>(self.vertices.len()))
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
