//! Construction from edges: bulk builds and rebuilds in place (the id check, the degrees
//! and the tables' sizes in one synchronization, then direct placement or the ordinary
//! insertion).

use super::*;

impl<W: EdgeValue> DynamicGraph<W> {
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
        g.build_device(
            num_vertices,
            &staged.src,
            &staged.dst,
            staged.values.as_ref(),
            false,
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
        g.build_device(num_vertices, src, dst, values, false)?;
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
        check_vertex_count(num_vertices)?;
        same_lens(src.len(), dst.len(), values.map(|v| v.len()))?;
        if src.is_empty() || num_vertices == 0 {
            // The ids first (a synchronization), then the sizes over all of them.
            let n_ids = num_vertices.max(self.check_ids(src, Some(dst))?);
            if clear {
                self.clear_contents()?;
            }
            return self.place_and_insert(n_ids, src, dst, values, None);
        }
        let stream = self.gpu.stream().clone();
        // The id check's two words (the degree count makes the check in its pass over the
        // batch), then the bucket total.
        let mut words = stream.alloc_zeros::<u64>(3)?;
        let degrees =
            self.degrees_of_batch(src, dst, num_vertices, Some(words.device_ptr(&stream).0))?;
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
            return self.place_and_insert(top, src, dst, values, None);
        }
        self.place_and_insert(num_vertices, src, dst, values, Some((&sizes, w[2])))
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
                    let degrees = self.degrees_of_batch(src, dst, n_ids, None)?;
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
}
