//! [`DynamicGraph`]: the owner of a graph's dictionary, base slabs, slab pool and
//! counters, and the launches of its batches.

mod build;
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

/// A batch's arrays have one length: `src` and `dst`, and `values` (its length) if any.
pub(crate) fn same_lens(src: usize, dst: usize, values: Option<usize>) -> Result<()> {
    same_len("src and dst", src, dst)?;
    match values {
        Some(v) => same_len("src and values", src, v),
        None => Ok(()),
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
