//! Edge insertion and deletion (Algorithm 5.1 and its deletion twin).

use super::*;

impl<W: EdgeValue> DynamicGraph<W> {
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

    pub(super) fn remove_edges_filtered(
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
    pub(super) fn run_edges(
        &mut self,
        edit: Edit,
        src: &CudaSlice<u32>,
        dst: &CudaSlice<u32>,
        values: Option<&CudaSlice<W::Device>>,
    ) -> Result<EdgeTally> {
        self.run_edges_of(edit, src, dst, values, None)
    }

    /// run_edges on the edges whose bit is set in `only` (bit i of word i / 32; `None`:
    /// every edge). Insertions only take a mask.
    pub(super) fn run_edges_of(
        &mut self,
        edit: Edit,
        src: &CudaSlice<u32>,
        dst: &CudaSlice<u32>,
        values: Option<&CudaSlice<W::Device>>,
        only: Option<&CudaSlice<u32>>,
    ) -> Result<EdgeTally> {
        let n = src.len();
        if n == 0 {
            return Ok(EdgeTally::default());
        }
        let entries = self.entries_of(n);
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
            args.arg(&n64);
            if edit == Edit::Insert {
                match only {
                    Some(bits) => args.arg(bits),
                    None => args.arg(&null),
                };
            }
            args.arg(&mut tally).arg(&null).arg(&failed);
            // SAFETY: reads src/dst(/values)[..n] (every id below num_ids, checked) and
            // the mask's words of n edges, writes the tally's words and the call's failure
            // bits.
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
}
