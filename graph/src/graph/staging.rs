//! Staging and checks of a batch: uploads, id checks, the dictionary's growth and the
//! placement of tables sized for known degrees.

use super::*;

impl<W: EdgeValue> DynamicGraph<W> {
    /// The batch on the device (callers skip empty batches).
    pub(super) fn stage(
        &self,
        src: &[u32],
        dst: &[u32],
        values: Option<&[W]>,
    ) -> Result<Staged<W::Device>> {
        same_lens(src.len(), dst.len(), values.map(<[W]>::len))?;
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
    pub(super) fn check_ids(&self, a: &CudaSlice<u32>, b: Option<&CudaSlice<u32>>) -> Result<u32> {
        let n = a.len();
        if n == 0 {
            return Ok(0);
        }
        let stream = self.gpu.stream();
        let out = stream.alloc_zeros::<u64>(2)?;
        self.launch_check_ids(a, b, out.device_ptr(stream).0)?;
        let words = stream.clone_dtoh(&out)?;
        self.checked_top(a, b, [words[0], words[1]])
    }

    /// Launches the id check of `a` (and `b`) into the two zeroed words at device
    /// address `out`: word 0 gets n - i for the first index i holding a reserved id (0:
    /// none), word 1 the largest id + 1. Does not synchronize; `a` is not empty.
    pub(super) fn launch_check_ids(
        &self,
        a: &CudaSlice<u32>,
        b: Option<&CudaSlice<u32>>,
        out: u64,
    ) -> Result<()> {
        let n = a.len();
        let stream = self.gpu.stream();
        let kernel = self.kernel("check_ids")?;
        let shape = self.item_shape(&kernel, n)?;
        let (n64, null) = (n as u64, 0u64);
        let mut args = stream.launch_builder(kernel.func());
        args.arg(a);
        match b {
            Some(b) => args.arg(b),
            None => args.arg(&null),
        };
        args.arg(&n64).arg(&out);
        // SAFETY: reads a[..n] (and b[..n]), writes the two words at `out`.
        unsafe { args.launch(shape) }?;
        Ok(())
    }

    /// The largest id + 1 from the id check's two words, or [`Error::ReservedVertex`]
    /// naming the first reserved id (read from `a` / `b`).
    pub(super) fn checked_top(
        &self,
        a: &CudaSlice<u32>,
        b: Option<&CudaSlice<u32>>,
        words: [u64; 2],
    ) -> Result<u32> {
        if words[0] != 0 {
            let stream = self.gpu.stream();
            let index = (a.len() as u64 - words[0]) as usize;
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
    pub(super) fn admit_top(
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
    pub(super) fn ensure_dictionary(&mut self, n: u32) -> Result<()> {
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
    pub(super) fn grow_ids(&mut self, top: u32) -> Result<()> {
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
    pub(super) fn new_chunk(&mut self, slabs: u64) -> Result<u64> {
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

    /// Degrees of a batch's edges over ids `0..n_ids` (u64 per id; ids past them are not
    /// counted), and with `check` (the device address of two zeroed words) the batch's
    /// id check as [`launch_check_ids`](Self::launch_check_ids) makes it, in the same
    /// pass over the batch. Does not synchronize.
    pub(super) fn degrees_of_batch(
        &self,
        src: &CudaSlice<u32>,
        dst: &CudaSlice<u32>,
        n_ids: u32,
        check: Option<u64>,
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
                .arg(&n_ids)
                .arg(&mut deg)
                .arg(check.as_ref().unwrap_or(&0));
            // SAFETY: reads src/dst[..n], writes deg[id] for the ids below n_ids (those
            // past it are not counted) and, with `check`, the two zeroed words there.
            unsafe { args.launch(shape) }?;
        }
        Ok(deg)
    }

    /// Gives `n` vertices (`ids`, or `first..first + n`) tables sized for `degrees[i]`
    /// in one new chunk; returns the base slabs placed. Synchronizes (the scan's total).
    pub(super) fn place_sized(
        &mut self,
        ids: Option<&CudaSlice<u32>>,
        first: u32,
        n: usize,
        degrees: &CudaSlice<u64>,
    ) -> Result<u64> {
        if n == 0 {
            return Ok(0);
        }
        let sizes = self.size_tables(n, degrees)?;
        let total = self.gpu.stream().clone_dtoh(&sizes.total)?[0];
        self.place_tables(ids, first, n, &sizes, total)?;
        Ok(total)
    }

    /// The bucket counts of `n` tables sized for `degrees[i]` (n > 0), their exclusive
    /// prefix sums and their total, on the device. Does not synchronize.
    pub(super) fn size_tables(&self, n: usize, degrees: &CudaSlice<u64>) -> Result<TableSizes> {
        let stream = self.gpu.stream().clone();
        // SAFETY: buckets_of writes every one of the n counts.
        let mut buckets = unsafe { self.gpu.alloc_uninit::<u64>(n, "the tables' bucket counts") }?;
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
        // SAFETY: the scan writes every one of the n offsets.
        let mut offsets = unsafe { self.gpu.alloc_uninit::<u64>(n, "the tables' offsets") }?;
        let mut total = stream.alloc_zeros::<u64>(1)?;
        primitives::Scanner::new(&self.gpu)?.exclusive_scan(&buckets, &mut offsets, &mut total)?;
        Ok(TableSizes {
            buckets,
            offsets,
            total,
        })
    }

    /// Places the tables of [`size_tables`](Self::size_tables) (`total`: their bucket
    /// total, read back) in one new chunk: vertex `ids[i]` (or `first + i`) gets its
    /// buckets there and a zero count. Does not synchronize.
    pub(super) fn place_tables(
        &mut self,
        ids: Option<&CudaSlice<u32>>,
        first: u32,
        n: usize,
        sizes: &TableSizes,
        total: u64,
    ) -> Result<()> {
        let chunk = self.new_chunk(total)?;
        let stream = self.gpu.stream().clone();
        let kernel = self.kernel("place")?;
        let shape = self.item_shape(&kernel, n)?;
        let r = self.graph_ref(self.control_ptr());
        let (null, uniform, n64) = (0u64, 0u32, n as u64);
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&r);
        match ids {
            Some(ids) => args.arg(ids),
            None => args.arg(&null),
        };
        args.arg(&first)
            .arg(&n64)
            .arg(&sizes.buckets)
            .arg(&sizes.offsets)
            .arg(&uniform)
            .arg(&chunk);
        // SAFETY: writes the entries of the n vertices (in the dictionary); offsets and
        // buckets stay inside the chunk of `total` slabs.
        unsafe { args.launch(shape) }?;
        Ok(())
    }
}

/// Tables sized for known degrees, on the device: bucket counts, their exclusive prefix
/// sums (each table's first base slab in its chunk), and the total (one word).
pub(super) struct TableSizes {
    pub(super) buckets: CudaSlice<u64>,
    pub(super) offsets: CudaSlice<u64>,
    pub(super) total: CudaSlice<u64>,
}
