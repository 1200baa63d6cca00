//! Edge batches of [`SortedGraph`]: the sorted keys, the runs of touched vertices, the
//! merge, and the pool's growth (see `cuda/kernels/sorted.cu`).

use cudarc::driver::{CudaSlice, DevicePtr, PushKernelArg};
use gpuds_core::primitives;
use gpuds_core::size::{checked_add, to_usize};

use super::{BatchRuns, SortedGraph};
use crate::error::{Error, Result};
use crate::graph::{check_host_ids, first_at_or_past, must_grow, same_len};
use crate::EdgeTally;

/// An insertion or a deletion batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Edit {
    Insert,
    Remove,
}

/// What a batch's plan found: per run (touched vertex) its degrees and moves, scanned.
struct Plan {
    new_first: CudaSlice<u64>,
    new_total: u64,
    old_first: CudaSlice<u64>,
    old_total: u64,
    new_degree: CudaSlice<u64>,
    moved: CudaSlice<u64>,
    moved_first: CudaSlice<u64>,
    moved_total: u64,
}

/// The size of a pool that must hold `need` words: half again as many, so that lists
/// that outgrow their segments find room at the top for a while before the next repack.
pub(super) fn pool_len_for(need: u64) -> Result<u64> {
    Ok(checked_add(need, need / 2, "the sorted graph's pool")?.max(1024))
}

impl SortedGraph {
    /// Inserts edges `src[i] -> dst[i]` (both directions in an undirected graph). Edges
    /// already stored and repeats inside the batch change nothing; self loops are
    /// skipped. Ids past the dictionary grow it (or fail, [`super::SortedConfig::growable`]);
    /// a reserved id fails the batch before anything is applied. Returns the edges added
    /// (each undirected edge once) and the requests skipped. Synchronizes.
    ///
    /// # Examples
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut g = gpuds_graph::sorted::SortedGraph::new(&gpu, 2)?;
    /// let tally = g.insert_edges(&[0, 1, 5, 3], &[1, 0, 2, 3])?;
    /// assert_eq!((tally.edges, tally.skipped), (2, 1)); // {0, 1}, {5, 2}; a self loop
    /// assert_eq!(g.num_vertices(), 6);
    /// # Ok::<(), gpuds_graph::Error>(())
    /// ```
    pub fn insert_edges(&mut self, src: &[u32], dst: &[u32]) -> Result<EdgeTally> {
        same_len("src and dst", src.len(), dst.len())?;
        check_host_ids(src, dst)?;
        if src.is_empty() {
            return Ok(EdgeTally::default());
        }
        let top = src.iter().chain(dst).map(|&x| x + 1).max().unwrap_or(0);
        let limit = self.num_ids;
        self.admit(top, || first_at_or_past(src, dst, limit))?;
        let stream = self.gpu.stream().clone();
        let (s, d) = (stream.clone_htod(src)?, stream.clone_htod(dst)?);
        let changed = self.run(Edit::Insert, &s, &d)?;
        Ok(self.tally(changed, loops(src, dst)))
    }

    /// [`insert_edges`](Self::insert_edges) with the batch on the device: every id must
    /// be in the dictionary (else [`Error::VertexBeyondCapacity`] names the first
    /// request past it; nothing is applied), and self loops are dropped without being
    /// counted (the tally's `skipped` is 0). Synchronizes.
    ///
    /// # Examples
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut g = gpuds_graph::sorted::SortedGraph::new(&gpu, 3)?;
    /// let src = gpu.stream().clone_htod(&[0u32, 1])?;
    /// let dst = gpu.stream().clone_htod(&[1u32, 2])?;
    /// assert_eq!(g.insert_edges_device(&src, &dst)?.edges, 2);
    /// # Ok::<(), gpuds_graph::Error>(())
    /// ```
    pub fn insert_edges_device(
        &mut self,
        src: &CudaSlice<u32>,
        dst: &CudaSlice<u32>,
    ) -> Result<EdgeTally> {
        same_len("src and dst", src.len(), dst.len())?;
        if src.is_empty() {
            return Ok(EdgeTally::default());
        }
        let changed = self.run(Edit::Insert, src, dst)?;
        Ok(self.tally(changed, 0))
    }

    /// Deletes edges `src[i] -> dst[i]` (both directions in an undirected graph). Edges
    /// that are not there change nothing; ids past the dictionary change nothing and are
    /// counted as skipped. Lists
    /// shrink in place. Returns the edges removed (each undirected edge once).
    /// Synchronizes.
    ///
    /// # Examples
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut g = gpuds_graph::sorted::SortedGraph::new(&gpu, 3)?;
    /// g.insert_edges(&[0, 1], &[1, 2])?;
    /// assert_eq!(g.remove_edges(&[1, 2, 9], &[0, 0, 0])?.edges, 1);
    /// assert_eq!(g.degree_many(&[0, 1, 2])?, vec![0, 1, 1]);
    /// # Ok::<(), gpuds_graph::Error>(())
    /// ```
    pub fn remove_edges(&mut self, src: &[u32], dst: &[u32]) -> Result<EdgeTally> {
        same_len("src and dst", src.len(), dst.len())?;
        check_host_ids(src, dst)?;
        let limit = self.num_ids;
        let (ks, kd): (Vec<u32>, Vec<u32>) = src
            .iter()
            .zip(dst)
            .filter(|(&u, &v)| u < limit && v < limit)
            .map(|(&u, &v)| (u, v))
            .unzip();
        let beyond = (src.len() - ks.len()) as u64;
        let mut tally = EdgeTally {
            edges: 0,
            skipped: beyond + loops(&ks, &kd),
        };
        if !ks.is_empty() {
            let stream = self.gpu.stream().clone();
            let (s, d) = (stream.clone_htod(&ks)?, stream.clone_htod(&kd)?);
            let changed = self.run(Edit::Remove, &s, &d)?;
            tally.edges = self.tally(changed, 0).edges;
        }
        Ok(tally)
    }

    fn tally(&self, changed: u64, skipped: u64) -> EdgeTally {
        EdgeTally {
            edges: if self.config.directed {
                changed
            } else {
                changed / 2
            },
            skipped,
        }
    }

    /// Grows the dictionary to `top` ids when allowed, or names the first request past it.
    fn admit(&mut self, top: u32, first_beyond: impl FnOnce() -> (usize, u32)) -> Result<()> {
        if must_grow(top, self.num_ids, self.config.growable, || {
            Ok(first_beyond())
        })? {
            self.grow_ids(top)?;
        }
        Ok(())
    }

    /// One batch: returns how many entries it added or removed. Ids past the dictionary
    /// fail with [`Error::VertexBeyondCapacity`] before anything changes. Synchronizes.
    fn run(&mut self, edit: Edit, src: &CudaSlice<u32>, dst: &CudaSlice<u32>) -> Result<u64> {
        let undirected = !self.config.directed;
        let Some(flagged) = self.keys.flagged_keys(self.num_ids, src, dst, undirected)? else {
            return Ok(0);
        };
        let stream = self.gpu.stream().clone();
        let mut batch = BatchRuns {
            keys: flagged.keys.device_ptr(&stream).0,
            heads: 0,
            m: flagged.keys.len() as u64,
            runs: 0,
            shift: flagged.shift,
            insert: u32::from(edit == Edit::Insert),
        };
        let mut flags = flagged.flags;
        // Keep the keys that change the graph.
        let kernel = self.kernel("sorted_filter")?;
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&self.dict)
            .arg(&self.pool)
            .arg(&batch)
            .arg(&mut flags);
        // SAFETY: reads the batch's keys and the lists their flagged keys name (ids below
        // num_ids: out-of-range edges are dropped, unflagged); writes flags[..m].
        unsafe { args.launch(self.shape(&kernel, batch.m)?) }?;
        let (keys, count) = self.keys.compact_keys(&flagged.keys, &flags)?;
        drop((flagged.keys, flags));
        let mut bad = [0u64];
        stream.memcpy_dtoh(&flagged.first_bad, &mut bad)?;
        let m = u64::from(stream.clone_dtoh(&count)?[0]);
        if bad[0] != u64::MAX {
            return Err(self.beyond(src, dst, bad[0])?);
        }
        if m == 0 {
            return Ok(0);
        }
        batch.keys = keys.device_ptr(&stream).0;
        batch.m = m;
        let heads = self.heads(&mut batch)?;
        let plan = self.plan(&batch)?;
        let base = if plan.moved_total > 0 {
            self.claim(plan.moved_total)?
        } else {
            self.pool_top
        };
        // SAFETY: the merges write every word of scratch[..new_total] (each run's output
        // is a permutation of its kept old elements and new keys) before sorted_copy reads.
        let mut scratch = unsafe {
            self.gpu.alloc_uninit::<u32>(
                to_usize(plan.new_total.max(1), "merged entries")?,
                "the sorted graph's merge scratch",
            )
        }?;
        let kernel = self.kernel("sorted_merge_old")?;
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&self.dict)
            .arg(&self.pool)
            .arg(&batch)
            .arg(&plan.old_first)
            .arg(&plan.old_total)
            .arg(&plan.new_first)
            .arg(&mut scratch);
        // SAFETY: reads the touched lists (old_total elements over the runs) and the
        // runs' keys; writes scratch below new_total.
        unsafe { args.launch(self.shape(&kernel, plan.old_total)?) }?;
        if edit == Edit::Insert {
            let kernel = self.kernel("sorted_merge_new")?;
            let mut args = stream.launch_builder(kernel.func());
            args.arg(&self.dict)
                .arg(&self.pool)
                .arg(&batch)
                .arg(&plan.new_first)
                .arg(&mut scratch);
            // SAFETY: reads the m keys, the runs' heads and the touched lists; writes
            // scratch below new_total.
            unsafe { args.launch(self.shape(&kernel, m)?) }?;
        }
        let kernel = self.kernel("sorted_commit")?;
        let shape = self.shape(&kernel, batch.runs)?;
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&mut self.dict)
            .arg(&batch)
            .arg(&plan.new_degree)
            .arg(&plan.moved)
            .arg(&plan.moved_first)
            .arg(&base);
        // SAFETY: one run per touched vertex (distinct sources) rewrites its entry; moved
        // segments lie in pool[base, base + moved_total), claimed above.
        unsafe { args.launch(shape) }?;
        let kernel = self.kernel("sorted_copy")?;
        let shape = self.shape(&kernel, plan.new_total)?;
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&self.dict)
            .arg(&mut self.pool)
            .arg(&batch)
            .arg(&plan.new_first)
            .arg(&plan.new_total)
            .arg(&scratch);
        // SAFETY: each run writes its new degree's words from its segment's offset, inside
        // its capacity (sorted_plan moved every run whose degree outgrew it).
        unsafe { args.launch(shape) }?;
        // The batch's keys and heads must outlive the kernels that read them.
        stream.synchronize()?;
        drop((keys, heads));
        if edit == Edit::Insert {
            self.entries += m;
        } else {
            self.entries -= m;
        }
        Ok(m)
    }

    /// The error for edge `index` of a device batch, which names an id past the
    /// dictionary.
    fn beyond(&self, src: &CudaSlice<u32>, dst: &CudaSlice<u32>, index: u64) -> Result<Error> {
        let i = to_usize(index, "edge index")?;
        let stream = self.gpu.stream();
        let u = stream.clone_dtoh(&src.slice(i..i + 1))?[0];
        let v = stream.clone_dtoh(&dst.slice(i..i + 1))?[0];
        let (index, id) = first_at_or_past(&[u], &[v], self.num_ids);
        Ok(Error::VertexBeyondCapacity {
            index: i + index,
            id,
            num_vertices: self.num_ids,
            growable: false,
        })
    }

    /// Where each touched vertex's run of the batch's keys starts: sets the batch's
    /// heads and runs and returns the heads (which must outlive its kernels).
    /// Synchronizes.
    fn heads(&mut self, batch: &mut BatchRuns) -> Result<CudaSlice<u32>> {
        let stream = self.gpu.stream().clone();
        let len = to_usize(batch.m, "batch keys")?;
        // SAFETY: sorted_heads writes flags[..m].
        let mut flags = unsafe { self.gpu.alloc_uninit::<u32>(len, "the run flags") }?;
        let kernel = self.kernel("sorted_heads")?;
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&*batch).arg(&mut flags);
        // SAFETY: reads the batch's m keys, writes flags[..m].
        unsafe { args.launch(self.shape(&kernel, batch.m)?) }?;
        // SAFETY: iota writes every position.
        let mut positions = unsafe { self.gpu.alloc_uninit::<u32>(len, "the key positions") }?;
        primitives::iota(&self.gpu, &mut positions, 0u32)?;
        // SAFETY: the compaction writes heads[..runs]; only those are read.
        let mut heads = unsafe { self.gpu.alloc_uninit::<u32>(len, "the run heads") }?;
        let mut count = self.gpu.alloc_zeroed::<u32>(1, "the run count")?;
        self.keys
            .scanner()
            .compact(&positions, &flags, &mut heads, &mut count)?;
        batch.runs = u64::from(stream.clone_dtoh(&count)?[0]);
        batch.heads = heads.device_ptr(&stream).0;
        Ok(heads)
    }

    /// Degrees before and after the batch and the moves of every run, scanned.
    /// Synchronizes.
    fn plan(&mut self, batch: &BatchRuns) -> Result<Plan> {
        let stream = self.gpu.stream().clone();
        let len = to_usize(batch.runs, "touched vertices")?;
        let zeros = |what: &str| self.gpu.alloc_zeroed::<u64>(len, what);
        let mut new_degree = zeros("the new degrees")?;
        let mut old_degree = zeros("the old degrees")?;
        let mut moved = zeros("the moved capacities")?;
        let kernel = self.kernel("sorted_plan")?;
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&self.dict)
            .arg(batch)
            .arg(&mut new_degree)
            .arg(&mut old_degree)
            .arg(&mut moved);
        // SAFETY: reads the batch's keys and heads and the runs' entries; writes the three
        // arrays' runs elements.
        unsafe { args.launch(self.shape(&kernel, batch.runs)?) }?;
        let mut scan = |input: &CudaSlice<u64>| -> Result<(CudaSlice<u64>, CudaSlice<u64>)> {
            let mut first = self.gpu.alloc_zeroed::<u64>(len, "a scan of the runs")?;
            let mut total = self.gpu.alloc_zeroed::<u64>(1, "a scan's total")?;
            self.keys
                .scanner()
                .exclusive_scan(input, &mut first, &mut total)?;
            Ok((first, total))
        };
        let (new_first, new_total) = scan(&new_degree)?;
        let (old_first, old_total) = scan(&old_degree)?;
        let (moved_first, moved_total) = scan(&moved)?;
        let mut totals = [0u64; 3];
        stream.memcpy_dtoh(&new_total, &mut totals[..1])?;
        stream.memcpy_dtoh(&old_total, &mut totals[1..2])?;
        stream.memcpy_dtoh(&moved_total, &mut totals[2..])?;
        stream.synchronize()?;
        Ok(Plan {
            new_first,
            new_total: totals[0],
            old_first,
            old_total: totals[1],
            new_degree,
            moved,
            moved_first,
            moved_total: totals[2],
        })
    }

    /// `words` fresh pool words at the top; returns where they start. When the pool is
    /// full it grows to [`pool_len_for`] the live segments and `words`, and every list is
    /// repacked into it (the holes of moved segments disappear). Synchronizes when it
    /// grows.
    fn claim(&mut self, words: u64) -> Result<u64> {
        let end = checked_add(self.pool_top, words, "the sorted graph's pool")?;
        if end <= self.pool.len() as u64 {
            self.pool_top = end;
            return Ok(end - words);
        }
        let n = u64::from(self.num_ids);
        let (cap_first, caps) = self.scan_sizes(1)?;
        let (degree_first, degrees) = self.scan_sizes(0)?;
        let need = checked_add(caps, words, "the sorted graph's pool")?;
        let len = to_usize(pool_len_for(need)?, "the sorted graph's pool")?;
        let mut pool = self
            .gpu
            .alloc_zeroed::<u32>(len, "the sorted graph's pool")?;
        let stream = self.gpu.stream().clone();
        if degrees > 0 {
            let kernel = self.kernel("sorted_repack")?;
            let mut args = stream.launch_builder(kernel.func());
            args.arg(&self.dict)
                .arg(&self.pool)
                .arg(&self.num_ids)
                .arg(&degree_first)
                .arg(&cap_first)
                .arg(&degrees)
                .arg(&mut pool);
            // SAFETY: reads every list; writes each to its repacked segment, inside the
            // new pool of at least `caps` words.
            unsafe { args.launch(self.shape(&kernel, degrees)?) }?;
        }
        if n > 0 {
            let kernel = self.kernel("sorted_move")?;
            let shape = self.shape(&kernel, n)?;
            let mut args = stream.launch_builder(kernel.func());
            args.arg(&mut self.dict).arg(&self.num_ids).arg(&cap_first);
            // SAFETY: rewrites the offsets of the num_ids entries, after the repack read them.
            unsafe { args.launch(shape) }?;
        }
        stream.synchronize()?;
        self.pool = pool;
        self.pool_top = need;
        Ok(caps)
    }

    /// The exclusive scan of every vertex's degree (field 0) or capacity (field 1), with
    /// `num_ids + 1` entries (the last the total), and the total. Synchronizes.
    pub(super) fn scan_sizes(&self, field: u32) -> Result<(CudaSlice<u64>, u64)> {
        self.scan_sizes_of(None, u64::from(self.num_ids), field)
    }

    /// [`scan_sizes`](Self::scan_sizes) of the vertices `ids` (`n` of them; `None`: `0..n`).
    pub(super) fn scan_sizes_of(
        &self,
        ids: Option<&CudaSlice<u32>>,
        n: u64,
        field: u32,
    ) -> Result<(CudaSlice<u64>, u64)> {
        let stream = self.gpu.stream().clone();
        let len = to_usize(checked_add(n, 1, "vertex sizes")?, "vertex sizes")?;
        let mut sizes = self.gpu.alloc_zeroed::<u64>(len, "the vertex sizes")?;
        if n > 0 {
            let kernel = self.kernel("sorted_sizes")?;
            let null = 0u64;
            let mut args = stream.launch_builder(kernel.func());
            args.arg(&self.dict).arg(&self.num_ids);
            match ids {
                Some(ids) => args.arg(ids),
                None => args.arg(&null),
            };
            args.arg(&n).arg(&field).arg(&mut sizes);
            // SAFETY: reads the entries of ids[..n] (or of 0..n, below num_ids); writes
            // sizes[..n].
            unsafe { args.launch(self.shape(&kernel, n)?) }?;
        }
        let mut first = self.gpu.alloc_zeroed::<u64>(len, "the vertex size scan")?;
        let total = primitives::exclusive_scan(&self.gpu, &sizes, &mut first)?;
        Ok((first, total))
    }
}

/// The self loops of a batch (requests the graph skips).
fn loops(src: &[u32], dst: &[u32]) -> u64 {
    src.iter().zip(dst).filter(|(u, v)| u == v).count() as u64
}
