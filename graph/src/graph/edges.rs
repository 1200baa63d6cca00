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
        same_lens(src.len(), dst.len(), values.map(|v| v.len()))?;
        // The ids are checked on the device in the call (one synchronization): the
        // insertion runs only when every id is in the dictionary and none is reserved.
        let top = match self.run_edges_checked(Edit::Insert, src, dst, values)? {
            Checked::Ran(tally) => return Ok(tally),
            Checked::Beyond(top) => top,
        };
        // Nothing ran: ids past the dictionary grow it (or fail), then the batch runs.
        if !self.config.growable {
            let (s, d) = (
                self.gpu.stream().clone_dtoh(src)?,
                self.gpu.stream().clone_dtoh(dst)?,
            );
            let limit = self.num_ids;
            self.admit_top(top, || Ok(first_at_or_past(&s, &d, limit)))?;
        }
        self.grow_ids(top)?;
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
        // The ids are checked on the device in the call (one synchronization); ids past
        // the dictionary name no edge, and the kernel skips those requests.
        Ok(self.run_edges_checked(Edit::Remove, src, dst, None)?.ran())
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
        Ok(self
            .run_edges_inner(edit, src, dst, values, only, false)?
            .ran())
    }

    /// run_edges on a batch whose ids are not checked yet: the check runs on the device
    /// in the same call, ahead of the kernel, which runs only when no id is reserved
    /// (else [`Error::ReservedVertex`], nothing applied) and, for an insertion, every
    /// id is in the dictionary (else `Beyond(largest id + 1)`, nothing applied). A
    /// deletion skips the requests with an id past the dictionary. One synchronization
    /// (the id check's words come back with the status and the tally).
    pub(super) fn run_edges_checked(
        &mut self,
        edit: Edit,
        src: &CudaSlice<u32>,
        dst: &CudaSlice<u32>,
        values: Option<&CudaSlice<W::Device>>,
    ) -> Result<Checked> {
        self.run_edges_inner(edit, src, dst, values, None, true)
    }

    fn run_edges_inner(
        &mut self,
        edit: Edit,
        src: &CudaSlice<u32>,
        dst: &CudaSlice<u32>,
        values: Option<&CudaSlice<W::Device>>,
        only: Option<&CudaSlice<u32>>,
        check: bool,
    ) -> Result<Checked> {
        let n = src.len();
        if n == 0 {
            return Ok(Checked::Ran(EdgeTally::default()));
        }
        let entries = self.entries_of(n);
        // The pool is not grown ahead of a batch (counting its slabs in use costs a
        // synchronization): a batch that runs out grows it and runs again.
        let stream = self.gpu.stream().clone();
        let mut total = [0u64; TALLY_WORDS];
        for round in 0..=GROWTH_ROUNDS {
            // The tally (and the id check's two words) beside the call's status word:
            // one copy reads them all.
            let check = check && round == 0;
            let words = TALLY_WORDS + if check { 2 } else { 0 };
            let call = CallStatus::with_tally(&self.gpu, n, words)?;
            let (tally, mut gate) = (call.tally_ptr(), 0u64);
            if check {
                gate = tally + 8 * TALLY_WORDS as u64;
                self.launch_check_ids(src, Some(dst), gate)?;
            }
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
            args.arg(&tally).arg(&null).arg(&failed).arg(&gate);
            // SAFETY: reads src/dst(/values)[..n] and the mask's words of n edges, writes
            // the tally's words and the call's failure bits. Its ids were checked below
            // num_ids, or are checked by the kernel launched before it (`gate`: it runs
            // only on a clean check, and a deletion skips ids past the dictionary).
            unsafe { args.launch(shape) }?;
            let (status, words) = call.status_and_tally()?;
            if check {
                let top =
                    self.checked_top(src, Some(dst), [words[TALLY_WORDS], words[TALLY_WORDS + 1]])?;
                if edit == Edit::Insert && top > self.num_ids {
                    return Ok(Checked::Beyond(top));
                }
            }
            for (t, w) in total.iter_mut().zip(&words[..TALLY_WORDS]) {
                *t += w;
            }
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
        Ok(Checked::Ran(EdgeTally {
            edges,
            skipped: total[2],
        }))
    }
}

/// What a batch with the id check in its call did.
pub(super) enum Checked {
    /// It ran: its tally.
    Ran(EdgeTally),
    /// Nothing ran: an insertion with ids past the dictionary (the largest id + 1).
    Beyond(u32),
}

impl Checked {
    /// The tally of a batch that always runs: a deletion, or a batch without the check.
    fn ran(self) -> EdgeTally {
        match self {
            Checked::Ran(tally) => tally,
            Checked::Beyond(_) => {
                unreachable!("only a checked insertion stops at ids past the dictionary")
            }
        }
    }
}
