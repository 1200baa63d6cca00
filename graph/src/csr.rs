//! The sorted-CSR baseline: a static graph in compressed sparse rows built on the device
//! from COO edges, and the sorted-list triangle count that the dissertation's §5.6.3
//! (Tables 5.7 and 5.8) sets beside the dynamic graph.
//!
//! The build is the "CSR sort" of Table 5.8, with gpuds-core's primitives in place of
//! CUB: each edge becomes one 64-bit key `src << s | dst` (`s` = the bits of the largest
//! vertex id, so a graph of 2^20 vertices sorts 40-bit keys in five 8-bit passes), the
//! keys are radix sorted, the first key of each run of equal keys is kept (stream
//! compaction), and a binary search per row finds where each row starts. With
//! `symmetrize` both directions of every edge go in. Self loops are dropped, duplicate
//! edges kept once, and every row comes out sorted ascending.
//!
//! ```text
//! DeviceCsr::from_host_coo(gpu, num_vertices, src: &[u32], dst: &[u32], symmetrize) -> Result<DeviceCsr>
//! DeviceCsr::from_device_coo(gpu, num_vertices, src: &CudaSlice<u32>, dst: &CudaSlice<u32>,
//!                            symmetrize) -> Result<DeviceCsr>
//! CsrBuilder::new(gpu) -> Result<CsrBuilder>      (keeps the sort and scan scratch between builds)
//! CsrBuilder::build(&mut self, num_vertices, src, dst, symmetrize) -> Result<DeviceCsr>
//! DeviceCsr::triangle_count(&self, gpu) -> Result<u64>
//! DeviceCsr::to_host(&self) -> Result<(Vec<u64>, Vec<u32>)>
//! DeviceCsr::{num_vertices, num_edges, row_offsets, cols}
//! ```
//!
//! | call | synchronizes the stream? |
//! | --- | --- |
//! | builds | yes, once: to read the edge count and the id check before `cols` is allocated |
//! | `triangle_count`, `to_host` | yes: they return host values |
//!
//! An edge with an id `>= num_vertices` is found on the device (the least such index,
//! by one `atomicMin`) and the build fails with [`CsrError::VertexOutOfRange`] naming
//! the index and the id; nothing is built.
//!
//! # Examples
//! ```no_run
//! use gpuds_graph::csr::DeviceCsr;
//! let gpu = gpuds_core::Gpu::new(0)?;
//! // K4 given once per edge, with a duplicate and a self loop.
//! let src = [0, 0, 0, 1, 1, 2, 2, 3];
//! let dst = [1, 2, 3, 2, 3, 3, 3, 3];
//! let csr = DeviceCsr::from_host_coo(&gpu, 4, &src, &dst, true)?;
//! let (rows, cols) = csr.to_host()?;
//! assert_eq!(rows, vec![0, 3, 6, 9, 12]);
//! assert_eq!(&cols[..3], &[1, 2, 3]);
//! assert_eq!(csr.triangle_count(&gpu)?, 4);
//! # Ok::<(), gpuds_graph::csr::CsrError>(())
//! ```

mod error;

pub use error::CsrError;

use cudarc::driver::{CudaSlice, CudaView, PushKernelArg};
use gpuds_core::primitives::{RadixSorter, Scanner};
use gpuds_core::size::{checked_mul, to_usize, u32_len};
use gpuds_core::{Gpu, Kernel, Program};

type Result<T, E = CsrError> = std::result::Result<T, E>;

const SOURCE: &str = include_str!("../cuda/kernels/csr.cu");
/// Threads per block of every CSR kernel (all grid-stride loops).
const BLOCK: u32 = 256;
/// The key of a dropped edge (a self loop or an id out of range), as `DROPPED` in
/// `csr.cu`.
const DROPPED: u64 = u64::MAX;

/// The kernel module of the CSR build and triangle count (one instantiation: u32 ids,
/// u64 offsets).
///
/// # Examples
/// ```no_run
/// let gpu = gpuds_core::Gpu::new(0)?;
/// let module = gpu.load(&gpuds_graph::csr::program())?;
/// let _ = module.kernel("csr_triangles")?;
/// # Ok::<(), gpuds_core::Error>(())
/// ```
pub fn program() -> Program {
    Program::new("graph_csr", SOURCE).headers(crate::cuda_headers())
}

/// The bits `s` of the key layout `src << s | dst` for `num_vertices` vertices: enough for
/// the largest id `num_vertices - 1`, and at least 1. Keys then use the bits
/// `[0, 2 s)`, which is all the radix sort looks at.
///
/// # Examples
/// ```
/// use gpuds_graph::csr::key_shift;
/// assert_eq!(key_shift(0), 1);
/// assert_eq!(key_shift(2), 1);
/// assert_eq!(key_shift(1 << 20), 20);
/// assert_eq!(key_shift((1 << 20) + 1), 21);
/// assert_eq!(key_shift(u32::MAX), 32);
/// ```
pub fn key_shift(num_vertices: u32) -> u32 {
    (u32::BITS - num_vertices.saturating_sub(1).leading_zeros()).max(1)
}

/// The kernels of the build, loaded once per builder.
#[derive(Clone)]
struct BuildKernels {
    pack: Kernel,
    unique: Kernel,
    finish: Kernel,
}

fn kernel(gpu: &Gpu, name: &str) -> Result<Kernel> {
    Ok(gpu.load(&program())?.kernel(name)?)
}

/// Builds [`DeviceCsr`]s, keeping the radix sorter's and the compaction's scratch memory
/// between builds: use one in loops and timed code ([`DeviceCsr::from_device_coo`] makes
/// a fresh one per call).
///
/// # Examples
/// ```no_run
/// use gpuds_graph::csr::CsrBuilder;
/// let gpu = gpuds_core::Gpu::new(0)?;
/// let mut builder = CsrBuilder::new(&gpu)?;
/// let src = gpu.stream().clone_htod(&[0u32, 1, 2])?;
/// let dst = gpu.stream().clone_htod(&[1u32, 2, 0])?;
/// for _ in 0..3 {
///     let csr = builder.build(3, &src, &dst, true)?;
///     assert_eq!(csr.triangle_count(&gpu)?, 1);
/// }
/// # Ok::<(), gpuds_graph::csr::CsrError>(())
/// ```
pub struct CsrBuilder {
    gpu: Gpu,
    sorter: RadixSorter,
    scanner: Scanner,
    kernels: Option<BuildKernels>,
}

impl std::fmt::Debug for CsrBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CsrBuilder")
            .field("sorter", &self.sorter)
            .field("scanner", &self.scanner)
            .finish()
    }
}

impl CsrBuilder {
    /// A builder for `gpu`. Allocates a few KiB; compiles nothing yet.
    ///
    /// # Examples
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let builder = gpuds_graph::csr::CsrBuilder::new(&gpu)?;
    /// # let _ = builder;
    /// # Ok::<(), gpuds_graph::csr::CsrError>(())
    /// ```
    pub fn new(gpu: &Gpu) -> Result<Self> {
        Ok(Self {
            gpu: gpu.clone(),
            sorter: RadixSorter::new(gpu)?,
            scanner: Scanner::new(gpu)?,
            kernels: None,
        })
    }

    fn kernels(&mut self) -> Result<BuildKernels> {
        if let Some(kernels) = &self.kernels {
            return Ok(kernels.clone());
        }
        let module = self.gpu.load(&program())?;
        let kernels = BuildKernels {
            pack: module.kernel("csr_pack")?,
            unique: module.kernel("csr_unique")?,
            finish: module.kernel("csr_finish")?,
        };
        self.kernels = Some(kernels.clone());
        Ok(kernels)
    }

    /// The CSR of the `src.len()` edges `(src[i], dst[i])` over vertices
    /// `0..num_vertices`; with `symmetrize` each edge also goes in reversed. Self loops
    /// are dropped, duplicates kept once, rows sorted ascending.
    ///
    /// Synchronizes the stream once (to read the edge count and the id check). Fails
    /// with [`CsrError::LengthMismatch`] when the arrays differ in length,
    /// [`CsrError::VertexOutOfRange`] for an id `>= num_vertices` (the least such edge
    /// index; nothing is built), [`CapacityOverflow`](gpuds_core::Error::CapacityOverflow)
    /// when the keys (twice the edges with `symmetrize`) pass `u32::MAX`, and
    /// [`OutOfMemory`](gpuds_core::Error::OutOfMemory) when the device has no room for
    /// them (about 28 bytes per key beside the result).
    ///
    /// # Examples
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut builder = gpuds_graph::csr::CsrBuilder::new(&gpu)?;
    /// let src = gpu.stream().clone_htod(&[2u32, 0, 2])?;
    /// let dst = gpu.stream().clone_htod(&[0u32, 1, 0])?;
    /// let csr = builder.build(3, &src, &dst, false)?;
    /// assert_eq!(csr.to_host()?, (vec![0, 1, 1, 2], vec![1, 0]));
    /// # Ok::<(), gpuds_graph::csr::CsrError>(())
    /// ```
    pub fn build(
        &mut self,
        num_vertices: u32,
        src: &CudaSlice<u32>,
        dst: &CudaSlice<u32>,
        symmetrize: bool,
    ) -> Result<DeviceCsr> {
        let rows_len = rows_len(num_vertices)?;
        let Some(flagged) = self.flagged_keys(num_vertices, src, dst, symmetrize)? else {
            return DeviceCsr::empty(&self.gpu, num_vertices);
        };
        let kernels = self.kernels()?;
        let gpu = self.gpu.clone();
        let stream = gpu.stream().clone();
        let (unique, count) = self.compact_keys(&flagged.keys, &flagged.flags)?;
        let FlaggedKeys {
            keys,
            flags,
            first_bad,
            shift,
        } = flagged;
        drop((keys, flags));

        let mut bad = [DROPPED];
        let mut kept = [0u32];
        stream.memcpy_dtoh(&first_bad, &mut bad)?;
        stream.memcpy_dtoh(&count, &mut kept)?;
        stream.synchronize()?;
        if bad[0] != DROPPED {
            return Err(bad_edge(&gpu, num_vertices, src, dst, bad[0])?);
        }
        let kept = kept[0] as usize;
        if kept == 0 {
            return DeviceCsr::empty(&gpu, num_vertices);
        }

        // SAFETY: csr_finish writes row_offsets[..rows_len] and cols[..kept].
        let mut row_offsets =
            unsafe { gpu.alloc_uninit::<u64>(rows_len, "the CSR's row offsets") }?;
        // SAFETY: as above.
        let mut cols = unsafe { gpu.alloc_uninit::<u32>(kept, "the CSR's columns") }?;
        let m = kept as u64;
        let mut args = stream.launch_builder(kernels.finish.func());
        args.arg(&unique)
            .arg(&m)
            .arg(&num_vertices)
            .arg(&shift)
            .arg(&mut row_offsets)
            .arg(&mut cols);
        let threads = kept.max(rows_len);
        // SAFETY: the arguments match csr_finish's signature; it reads unique[..m] (the
        // compacted keys) and writes row_offsets[..=num_vertices] and cols[..m].
        unsafe { args.launch(gpu.grid_for(&kernels.finish, threads, BLOCK)?) }?;
        Ok(DeviceCsr {
            gpu,
            num_vertices,
            row_offsets,
            cols,
            num_edges: kept,
        })
    }

    /// The edges' keys `src << s | dst` (with `symmetrize` also reversed) radix sorted,
    /// each flagged 1 when it is the first of its run of equal keys and not dropped (a
    /// self loop or an id `>= num_vertices`, whose least index goes to `first_bad`).
    /// `None` for an empty batch. Does not synchronize. Shared with
    /// [`SortedGraph`](crate::sorted::SortedGraph)'s batches.
    pub(crate) fn flagged_keys(
        &mut self,
        num_vertices: u32,
        src: &CudaSlice<u32>,
        dst: &CudaSlice<u32>,
        symmetrize: bool,
    ) -> Result<Option<FlaggedKeys>> {
        same_lengths(src.len(), dst.len())?;
        let edges = src.len() as u64;
        let keys_len = checked_mul(edges, if symmetrize { 2 } else { 1 }, "edge keys")?;
        // The compaction counts its output in 32 bits.
        let keys_len = u32_len(to_usize(keys_len, "edge keys")?, "edge keys")? as usize;
        if keys_len == 0 {
            return Ok(None);
        }
        let kernels = self.kernels()?;
        let gpu = self.gpu.clone();
        let stream = gpu.stream().clone();
        let shift = key_shift(num_vertices);

        // SAFETY: csr_pack writes every key (keys[..edges], and keys[edges..] with
        // symmetrize) before anything reads them.
        let mut keys = unsafe { gpu.alloc_uninit::<u64>(keys_len, "the CSR build's edge keys") }?;
        let mut first_bad = stream.clone_htod(&[DROPPED])?;
        let symmetric = u32::from(symmetrize);
        let mut args = stream.launch_builder(kernels.pack.func());
        args.arg(src)
            .arg(dst)
            .arg(&edges)
            .arg(&num_vertices)
            .arg(&shift)
            .arg(&symmetric)
            .arg(&mut keys)
            .arg(&mut first_bad);
        // SAFETY: the arguments match csr_pack's signature; it reads src[..edges] and
        // dst[..edges] and writes keys[..keys_len] (keys_len = edges, or 2 edges with
        // symmetrize) and first_bad[0].
        unsafe { args.launch(gpu.grid_for(&kernels.pack, src.len(), BLOCK)?) }?;

        self.sorter.sort_keys_bits(&mut keys, 0, 2 * shift)?;

        // SAFETY: csr_unique writes every flag.
        let mut flags = unsafe { gpu.alloc_uninit::<u32>(keys_len, "the CSR build's flags") }?;
        let n = keys_len as u64;
        let mut args = stream.launch_builder(kernels.unique.func());
        args.arg(&keys).arg(&n).arg(&mut flags);
        // SAFETY: the arguments match csr_unique's signature; it reads keys[..n] and
        // writes flags[..n].
        unsafe { args.launch(gpu.grid_for(&kernels.unique, keys_len, BLOCK)?) }?;
        Ok(Some(FlaggedKeys {
            keys,
            flags,
            first_bad,
            shift,
        }))
    }

    /// The flagged keys, in order, and their number (on the device). Does not
    /// synchronize.
    pub(crate) fn compact_keys(
        &mut self,
        keys: &CudaSlice<u64>,
        flags: &CudaSlice<u32>,
    ) -> Result<(CudaSlice<u64>, CudaSlice<u32>)> {
        // SAFETY: the compaction writes kept[..count]; only those are read.
        let mut kept = unsafe { self.gpu.alloc_uninit::<u64>(keys.len(), "the kept keys") }?;
        let mut count = self.gpu.alloc_zeroed::<u32>(1, "the kept key count")?;
        self.scanner.compact(keys, flags, &mut kept, &mut count)?;
        Ok((kept, count))
    }

    /// The builder's scanner (its scratch kept between calls).
    pub(crate) fn scanner(&mut self) -> &mut Scanner {
        &mut self.scanner
    }
}

/// A batch's sorted edge keys and their run flags ([`CsrBuilder::flagged_keys`]).
pub(crate) struct FlaggedKeys {
    /// Keys `src << shift | dst`, sorted; dropped edges are all ones, at the end.
    pub keys: CudaSlice<u64>,
    /// 1 for the first key of each run of equal keys that is not dropped.
    pub flags: CudaSlice<u32>,
    /// The least index of an edge with an id past the vertex count (all ones: none).
    pub first_bad: CudaSlice<u64>,
    /// The key layout's shift ([`key_shift`]).
    pub shift: u32,
}

/// The length of the row offsets of `num_vertices` rows.
fn rows_len(num_vertices: u32) -> Result<usize> {
    Ok(to_usize(u64::from(num_vertices) + 1, "row offsets")?)
}

/// [`CsrError::LengthMismatch`] unless the source and destination arrays are as long.
fn same_lengths(sources: usize, destinations: usize) -> Result<()> {
    if sources != destinations {
        return Err(CsrError::LengthMismatch {
            sources,
            destinations,
        });
    }
    Ok(())
}

/// The error for the edge at `index`, which has an id `>= num_vertices`: reads its two
/// ids back (synchronizes).
fn bad_edge(
    gpu: &Gpu,
    num_vertices: u32,
    src: &CudaSlice<u32>,
    dst: &CudaSlice<u32>,
    index: u64,
) -> Result<CsrError> {
    let i = to_usize(index, "edge index")?;
    let stream = gpu.stream();
    let mut ids = [0u32; 2];
    stream.memcpy_dtoh(&src.slice(i..i + 1), &mut ids[..1])?;
    stream.memcpy_dtoh(&dst.slice(i..i + 1), &mut ids[1..])?;
    stream.synchronize()?;
    let id = if ids[0] >= num_vertices {
        ids[0]
    } else {
        ids[1]
    };
    Ok(CsrError::VertexOutOfRange {
        index: i,
        id,
        num_vertices,
    })
}

/// A static graph in compressed sparse rows on the device: the neighbours of vertex `v`
/// are `cols[row_offsets[v]..row_offsets[v + 1]]`, sorted ascending, without duplicates
/// or self loops.
///
/// # Examples
/// ```no_run
/// use gpuds_graph::csr::DeviceCsr;
/// let gpu = gpuds_core::Gpu::new(0)?;
/// let csr = DeviceCsr::from_host_coo(&gpu, 3, &[0, 1], &[1, 2], true)?;
/// assert_eq!((csr.num_vertices(), csr.num_edges()), (3, 4));
/// assert_eq!(csr.row_offsets().len(), 4);
/// # Ok::<(), gpuds_graph::csr::CsrError>(())
/// ```
pub struct DeviceCsr {
    gpu: Gpu,
    num_vertices: u32,
    row_offsets: CudaSlice<u64>,
    /// The columns, in `cols[..num_edges]`; one unused element when there are none (the
    /// driver refuses empty allocations).
    cols: CudaSlice<u32>,
    num_edges: usize,
}

impl std::fmt::Debug for DeviceCsr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceCsr")
            .field("num_vertices", &self.num_vertices)
            .field("num_edges", &self.num_edges())
            .finish()
    }
}

impl DeviceCsr {
    /// A CSR with `num_vertices` empty rows.
    fn empty(gpu: &Gpu, num_vertices: u32) -> Result<Self> {
        Ok(Self {
            gpu: gpu.clone(),
            num_vertices,
            row_offsets: gpu
                .alloc_zeroed::<u64>(rows_len(num_vertices)?, "the CSR's row offsets")?,
            cols: gpu.alloc_zeroed::<u32>(1, "the CSR's columns")?,
            num_edges: 0,
        })
    }

    /// The CSR of the device edges `(src[i], dst[i])`: [`CsrBuilder::build`] with a fresh
    /// builder (use a [`CsrBuilder`] to keep its scratch memory between builds).
    /// Synchronizes once; errors as [`CsrBuilder::build`].
    ///
    /// # Examples
    /// ```no_run
    /// use gpuds_graph::csr::{CsrError, DeviceCsr};
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let src = gpu.stream().clone_htod(&[0u32, 1, 7])?;
    /// let dst = gpu.stream().clone_htod(&[1u32, 2, 0])?;
    /// let csr = DeviceCsr::from_device_coo(&gpu, 8, &src, &dst, true)?;
    /// assert_eq!(csr.num_edges(), 6);
    /// assert!(matches!(
    ///     DeviceCsr::from_device_coo(&gpu, 4, &src, &dst, true),
    ///     Err(CsrError::VertexOutOfRange { index: 2, id: 7, .. })
    /// ));
    /// # Ok::<(), CsrError>(())
    /// ```
    pub fn from_device_coo(
        gpu: &Gpu,
        num_vertices: u32,
        src: &CudaSlice<u32>,
        dst: &CudaSlice<u32>,
        symmetrize: bool,
    ) -> Result<Self> {
        CsrBuilder::new(gpu)?.build(num_vertices, src, dst, symmetrize)
    }

    /// The CSR of the host edges `(src[i], dst[i])`: copies them to the device and
    /// builds there ([`from_device_coo`](Self::from_device_coo)). Synchronizes.
    ///
    /// # Examples
    /// ```no_run
    /// use gpuds_graph::csr::DeviceCsr;
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let csr = DeviceCsr::from_host_coo(&gpu, 3, &[1, 1, 2], &[0, 0, 2], false)?;
    /// assert_eq!(csr.to_host()?, (vec![0, 0, 1, 1], vec![0]));
    /// # Ok::<(), gpuds_graph::csr::CsrError>(())
    /// ```
    pub fn from_host_coo(
        gpu: &Gpu,
        num_vertices: u32,
        src: &[u32],
        dst: &[u32],
        symmetrize: bool,
    ) -> Result<Self> {
        same_lengths(src.len(), dst.len())?;
        if src.is_empty() {
            return Self::empty(gpu, num_vertices);
        }
        let stream = gpu.stream();
        let (src, dst) = (stream.clone_htod(src)?, stream.clone_htod(dst)?);
        Self::from_device_coo(gpu, num_vertices, &src, &dst, symmetrize)
    }

    /// The number of vertices (rows), as given to the build.
    ///
    /// # Examples
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// let csr = gpuds_graph::csr::DeviceCsr::from_host_coo(&gpu, 10, &[0], &[1], true)?;
    /// assert_eq!(csr.num_vertices(), 10);
    /// # Ok::<(), gpuds_graph::csr::CsrError>(())
    /// ```
    pub fn num_vertices(&self) -> u32 {
        self.num_vertices
    }

    /// The number of stored edges (`cols.len()`; twice the undirected edges of a
    /// symmetrized build).
    ///
    /// # Examples
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// // A repeat and a self loop are not stored.
    /// let csr = gpuds_graph::csr::DeviceCsr::from_host_coo(&gpu, 3, &[0, 0, 2], &[1, 1, 2], true)?;
    /// assert_eq!(csr.num_edges(), 2);
    /// # Ok::<(), gpuds_graph::csr::CsrError>(())
    /// ```
    pub fn num_edges(&self) -> usize {
        self.num_edges
    }

    /// The `num_vertices + 1` row offsets: row `v` is `cols[row_offsets[v]..row_offsets[v + 1]]`.
    ///
    /// # Examples
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// let csr = gpuds_graph::csr::DeviceCsr::from_host_coo(&gpu, 3, &[0, 0], &[1, 2], false)?;
    /// assert_eq!(gpu.stream().clone_dtoh(csr.row_offsets())?, vec![0, 2, 2, 2]);
    /// # Ok::<(), gpuds_graph::csr::CsrError>(())
    /// ```
    pub fn row_offsets(&self) -> &CudaSlice<u64> {
        &self.row_offsets
    }

    /// The destinations of all rows, each row sorted ascending (an empty slice when the
    /// graph has no edges).
    ///
    /// # Examples
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// let csr = gpuds_graph::csr::DeviceCsr::from_host_coo(&gpu, 3, &[0, 0], &[2, 1], false)?;
    /// assert_eq!(gpu.stream().clone_dtoh(&csr.cols())?, vec![1, 2]);
    /// # Ok::<(), gpuds_graph::csr::CsrError>(())
    /// ```
    pub fn cols(&self) -> CudaView<'_, u32> {
        self.cols.slice(..self.num_edges)
    }

    /// The number of triangles: for each edge `(u, v)` with `u < v`, the `w > v` that are
    /// neighbours of both, so that each triangle `u < v < w` of a symmetric CSR (a
    /// symmetrized build, or one whose input had both directions) counts once. On a CSR
    /// that is not symmetric it counts the `u < v < w` with edges `u→v`, `u→w` and `v→w`.
    ///
    /// One thread per edge; the two neighbour lists are merged when of similar length,
    /// otherwise the shorter one is binary searched in the longer. Synchronizes.
    ///
    /// # Examples
    /// ```no_run
    /// use gpuds_graph::csr::DeviceCsr;
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// // Two triangles sharing the edge (1, 2).
    /// let csr = DeviceCsr::from_host_coo(&gpu, 4, &[0, 0, 1, 1, 2], &[1, 2, 2, 3, 3], true)?;
    /// assert_eq!(csr.triangle_count(&gpu)?, 2);
    /// # Ok::<(), gpuds_graph::csr::CsrError>(())
    /// ```
    pub fn triangle_count(&self, gpu: &Gpu) -> Result<u64> {
        if self.num_edges == 0 {
            return Ok(0);
        }
        let kernel = kernel(gpu, "csr_triangles")?;
        let stream = gpu.stream();
        let mut total = gpu.alloc_zeroed::<u64>(1, "the triangle count")?;
        let m = self.num_edges as u64;
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&self.row_offsets)
            .arg(&self.cols)
            .arg(&self.num_vertices)
            .arg(&m)
            .arg(&mut total);
        // SAFETY: the arguments match csr_triangles' signature; it reads the CSR (row
        // offsets of num_vertices + 1 entries ending at m, columns below num_vertices)
        // and adds to total[0].
        unsafe { args.launch(gpu.grid_for(&kernel, self.num_edges, BLOCK)?) }?;
        let mut count = [0u64];
        stream.memcpy_dtoh(&total, &mut count)?;
        stream.synchronize()?;
        Ok(count[0])
    }

    /// Copies the CSR to the host: `(row_offsets, cols)`. Synchronizes.
    ///
    /// # Examples
    /// ```no_run
    /// use gpuds_graph::csr::DeviceCsr;
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let csr = DeviceCsr::from_host_coo(&gpu, 2, &[], &[], true)?;
    /// assert_eq!(csr.to_host()?, (vec![0, 0, 0], vec![]));
    /// # Ok::<(), gpuds_graph::csr::CsrError>(())
    /// ```
    pub fn to_host(&self) -> Result<(Vec<u64>, Vec<u32>)> {
        let stream = self.gpu.stream();
        let mut rows = vec![0u64; self.row_offsets.len()];
        let mut cols = vec![0u32; self.num_edges];
        stream.memcpy_dtoh(&self.row_offsets, &mut rows[..])?;
        if !cols.is_empty() {
            stream.memcpy_dtoh(&self.cols(), &mut cols[..])?;
        }
        stream.synchronize()?;
        Ok((rows, cols))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The radix sort looks only at bits [0, 2 s): every valid key (no self loop, ids
    /// below num_vertices) is below 2^(2 s) and below DROPPED cut to those bits, so the
    /// dropped keys sort after all valid ones.
    #[test]
    fn valid_keys_fit_their_bits_and_sort_before_dropped_ones() {
        for n in [
            2u32,
            3,
            4,
            5,
            1000,
            1 << 20,
            (1 << 20) + 1,
            u32::MAX - 1,
            u32::MAX,
        ] {
            let s = key_shift(n);
            assert!(s <= 32, "{n}");
            let bits = 2 * s;
            let cut = if bits == 64 {
                u64::MAX
            } else {
                (1u64 << bits) - 1
            };
            let key = |a: u32, b: u32| (u64::from(a) << s) | u64::from(b);
            let top = n - 1;
            // The largest keys without a self loop.
            for (a, b) in [(top, top - 1), (top - 1, top)] {
                assert!(key(a, b) < cut, "{n}: ({a}, {b})");
                assert_eq!(key(a, b) >> s, u64::from(a), "{n}");
                assert_eq!(key(a, b) & ((1u64 << s) - 1), u64::from(b), "{n}");
            }
            // A smaller shift would not hold the largest id.
            assert!(s == 1 || u64::from(top) >= 1u64 << (s - 1), "{n}");
        }
    }

    #[test]
    fn shifts_grow_with_the_largest_id() {
        assert_eq!(key_shift(1), 1);
        assert_eq!(key_shift(3), 2);
        assert_eq!(key_shift(4), 2);
        assert_eq!(key_shift(5), 3);
        assert_eq!(key_shift(1 << 31), 31);
        assert_eq!(key_shift((1 << 31) + 1), 32);
    }
}
