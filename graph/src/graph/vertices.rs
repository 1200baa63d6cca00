//! Vertex insertion and deletion (Algorithm 5.2, with id reuse) and FLUSH.

use super::*;

impl<W: EdgeValue> DynamicGraph<W> {
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
    pub(super) fn revive(&mut self, ids: &[u32]) -> Result<()> {
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
    pub(super) fn learn_deleted(
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
    pub(super) fn unlink_and_empty(
        &self,
        call: &CallStatus,
        list: &CudaSlice<u32>,
        n: usize,
    ) -> Result<()> {
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

    pub(super) fn flush_inner(&mut self, ids: Option<&[u32]>) -> Result<u64> {
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
}
