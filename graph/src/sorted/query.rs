//! Queries, export and the triangle count of [`SortedGraph`]: every list is already
//! sorted, so none of them sorts.

use cudarc::driver::{CudaSlice, PushKernelArg};
use gpuds_core::size::to_usize;

use super::SortedGraph;
use crate::error::{Error, Result};
use crate::graph::same_len;
use crate::{Adjacency, Csr};

impl SortedGraph {
    /// Whether each `src[i] -> dst[i]` is an edge: one binary search each. Ids past the
    /// dictionary (reserved ones included) are simply absent. Synchronizes.
    ///
    /// # Examples
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut g = gpuds_graph::sorted::SortedGraph::new(&gpu, 3)?;
    /// g.insert_edges(&[0], &[2])?;
    /// assert_eq!(g.edge_exists_many(&[2, 0, 7], &[0, 1, 0])?, vec![true, false, false]);
    /// # Ok::<(), gpuds_graph::Error>(())
    /// ```
    pub fn edge_exists_many(&self, src: &[u32], dst: &[u32]) -> Result<Vec<bool>> {
        same_len("src and dst", src.len(), dst.len())?;
        if src.is_empty() {
            return Ok(Vec::new());
        }
        let stream = self.gpu.stream().clone();
        let (s, d) = (stream.clone_htod(src)?, stream.clone_htod(dst)?);
        let n = src.len() as u64;
        let mut found = self
            .gpu
            .alloc_zeroed::<u32>(src.len(), "the query results")?;
        let kernel = self.kernel("sorted_contains")?;
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&self.dict)
            .arg(&self.pool)
            .arg(&self.num_ids)
            .arg(&s)
            .arg(&d)
            .arg(&n)
            .arg(&mut found);
        // SAFETY: reads src/dst[..n] and the lists of ids below num_ids; writes found[..n].
        unsafe { args.launch(self.shape(&kernel, n)?) }?;
        Ok(stream
            .clone_dtoh(&found)?
            .into_iter()
            .map(|f| f != 0)
            .collect())
    }

    /// Out-degrees of `ids` (0 past the dictionary); exact. Synchronizes.
    ///
    /// # Examples
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut g = gpuds_graph::sorted::SortedGraph::new(&gpu, 3)?;
    /// g.insert_edges(&[0, 0], &[1, 2])?;
    /// assert_eq!(g.degree_many(&[0, 1, 99])?, vec![2, 1, 0]);
    /// # Ok::<(), gpuds_graph::Error>(())
    /// ```
    pub fn degree_many(&self, ids: &[u32]) -> Result<Vec<u32>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let stream = self.gpu.stream().clone();
        let d = stream.clone_htod(ids)?;
        let (first, _) = self.scan_sizes_of(Some(&d), ids.len() as u64, 0)?;
        let first = stream.clone_dtoh(&first)?;
        Ok(first.windows(2).map(|w| (w[1] - w[0]) as u32).collect())
    }

    /// The adjacency of each of `ids`, each list sorted ascending: vertex `i`'s
    /// neighbours are `dst[offsets[i]..offsets[i + 1]]` (count, scan, collect; no sort).
    /// Ids past the dictionary have none. Synchronizes.
    ///
    /// # Examples
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut g = gpuds_graph::sorted::SortedGraph::new(&gpu, 4)?;
    /// g.insert_edges(&[0, 0, 0], &[3, 1, 2])?;
    /// let adj = g.adjacency_many(&[0, 3])?;
    /// assert_eq!((adj.offsets, adj.dst), (vec![0, 3, 4], vec![1, 2, 3, 0]));
    /// # Ok::<(), gpuds_graph::Error>(())
    /// ```
    pub fn adjacency_many(&self, ids: &[u32]) -> Result<Adjacency<()>> {
        if ids.is_empty() {
            return Ok(Adjacency {
                offsets: vec![0],
                ..Default::default()
            });
        }
        let stream = self.gpu.stream().clone();
        let d = stream.clone_htod(ids)?;
        let n = ids.len() as u64;
        let (first, total) = self.scan_sizes_of(Some(&d), n, 0)?;
        let dst = self.gather(Some(&d), &first, n, total)?;
        Ok(Adjacency {
            offsets: stream.clone_dtoh(&first)?,
            dst,
            values: Vec::new(),
        })
    }

    /// The graph as CSR over ids `0..num_vertices()`: a copy of the lists, already
    /// sorted. Synchronizes.
    ///
    /// # Examples
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut g = gpuds_graph::sorted::SortedGraph::new(&gpu, 3)?;
    /// g.insert_edges(&[2, 0], &[0, 1])?;
    /// let csr = g.to_csr()?;
    /// assert_eq!((csr.row_offsets, csr.cols), (vec![0, 2, 3, 4], vec![1, 2, 0, 0]));
    /// # Ok::<(), gpuds_graph::Error>(())
    /// ```
    pub fn to_csr(&self) -> Result<Csr<()>> {
        let n = u64::from(self.num_ids);
        let (first, total) = self.scan_sizes(0)?;
        let cols = self.gather(None, &first, n, total)?;
        Ok(Csr {
            row_offsets: self.gpu.stream().clone_dtoh(&first)?,
            cols,
            values: Vec::new(),
        })
    }

    /// The lists of `ids` (or `0..n`) one after another, `total` entries, on the host.
    fn gather(
        &self,
        ids: Option<&CudaSlice<u32>>,
        first: &CudaSlice<u64>,
        n: u64,
        total: u64,
    ) -> Result<Vec<u32>> {
        if total == 0 {
            return Ok(Vec::new());
        }
        let stream = self.gpu.stream().clone();
        let len = to_usize(total, "adjacency entries")?;
        let mut out = self.gpu.alloc_zeroed::<u32>(len, "the adjacency")?;
        let kernel = self.kernel("sorted_gather")?;
        let null = 0u64;
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&self.dict).arg(&self.pool).arg(&self.num_ids);
        match ids {
            Some(ids) => args.arg(ids),
            None => args.arg(&null),
        };
        args.arg(first).arg(&n).arg(&total).arg(&null).arg(&mut out);
        // SAFETY: reads the lists of ids[..n] (or 0..n) and first[..n]; writes out[..total].
        unsafe { args.launch(self.shape(&kernel, total)?) }?;
        Ok(stream.clone_dtoh(&out)?)
    }

    /// The number of triangles, each once: for every edge (u, v) with u < v, the common
    /// neighbours w > v of u and v, by sorted intersection of the stored lists (the
    /// device code of [`DeviceCsr::triangle_count`](crate::csr::DeviceCsr::triangle_count),
    /// on the segments). No sort: one scan of the degrees numbers the edges. Undirected
    /// graphs only. Synchronizes.
    ///
    /// # Examples
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut g = gpuds_graph::sorted::SortedGraph::new(&gpu, 4)?;
    /// g.insert_edges(&[0, 0, 0, 1, 1, 2], &[1, 2, 3, 2, 3, 3])?; // K4
    /// assert_eq!(g.triangle_count()?, 4);
    /// # Ok::<(), gpuds_graph::Error>(())
    /// ```
    pub fn triangle_count(&self) -> Result<u64> {
        if self.config.directed {
            return Err(Error::Config(
                "triangle counting needs an undirected graph".into(),
            ));
        }
        if self.entries == 0 {
            return Ok(0);
        }
        let (first, m) = self.scan_sizes(0)?;
        let stream = self.gpu.stream().clone();
        let mut total = self.gpu.alloc_zeroed::<u64>(1, "the triangle count")?;
        let kernel = self.kernel("sorted_triangles")?;
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&self.dict)
            .arg(&first)
            .arg(&self.pool)
            .arg(&self.num_ids)
            .arg(&m)
            .arg(&mut total);
        // SAFETY: reads the dictionary, the degree scan (num_ids + 1 entries ending at m)
        // and the lists; adds to total[0].
        unsafe { args.launch(self.shape(&kernel, m)?) }?;
        Ok(stream.clone_dtoh(&total)?[0])
    }
}
