//! Triangle counting on the tables, and the host image that `validate` and `stats`
//! read.

use super::*;

impl<W: EdgeValue> DynamicGraph<W> {
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
