//! The updates of [`Lists`]: heads for new range lists, insertion (sorted batches whose
//! failed operations run again after their pools grow), removal with compaction of dead
//! nodes, the bounds of range lists and the auxiliary list of non-empty ranges.

use cudarc::driver::{CudaSlice, CudaView, PushKernelArg};
use gpuds_core::failures::CallStatus;
use gpuds_core::primitives;
use gpuds_core::Status;

use super::{Lists, BLOCK, RERUNS};
use crate::batch::{bits, without_positions};
use crate::error::{Error, Result};
use crate::skiplist::layout::SkipRef;

impl Lists {
    /// Range lists: heads for every list a sorted batch touches that has none.
    fn prepare(&mut self, keys: &CudaSlice<u32>) -> Result<()> {
        if self.num_lists == 1 {
            return Ok(());
        }
        let stream = self.gpu.stream().clone();
        let mut need = stream.alloc_zeros::<u32>(self.num_lists as usize)?;
        let kernel = self.kernel("sl_need_u32")?;
        let r = self.skip_ref(0);
        let n = keys.len() as u64;
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&r).arg(keys).arg(&n).arg(&mut need);
        // SAFETY: reads the keys and the lists' heads; writes need[list].
        unsafe { args.launch(self.gpu.grid_for(&kernel, keys.len().max(1), BLOCK)?) }?;
        let ids: Vec<u32> = stream
            .clone_dtoh(&need)?
            .iter()
            .enumerate()
            .filter(|(_, &f)| f != 0)
            .map(|(i, _)| i as u32)
            .collect();
        if ids.is_empty() {
            return Ok(());
        }
        self.init_lists(Some(&ids), ids.len() as u64)
    }

    /// Inserts or replaces a batch (sorted here with each key's position, the values
    /// left in the caller's order), or with `add` adds each value to its key's (inserting
    /// absent keys with it). An operation that found no free node for a split applied
    /// nothing and is marked failed: its pools grow and only the failed operations run
    /// again, so every operation applies exactly once. Errors name the caller's
    /// positions in the batch.
    pub fn insert(
        &mut self,
        mut keys: CudaSlice<u32>,
        values: CudaSlice<u32>,
        add: bool,
    ) -> Result<()> {
        let n = keys.len();
        if n == 0 {
            return Ok(());
        }
        let mut index = self.gpu.stream().alloc_zeros::<u64>(n)?;
        primitives::iota(&self.gpu, &mut index, 0u64)?;
        self.sorter.sort_pairs(&mut keys, &mut index)?;
        if self.tier.is_some() {
            return self.insert_tiered(&keys, &index, &values, add);
        }
        self.prepare(&keys)?;
        // About one new data node per 15 keys, one index node per 15 data nodes.
        let data_guess = n as u64 / 12 + 64;
        self.reserve(0, data_guess)?;
        if self.pools.len() > 1 {
            self.reserve(1, data_guess / 10 + 16)?;
        }
        let out = self.insert_run(&keys, &index, 0..n, &values, add);
        let repaired = self.repair(false);
        self.sync_aux()?;
        out?;
        repaired
    }

    /// Runs the insertion kernel over `span` of the sorted `keys` (with their positions
    /// `index` into `values`) whose lists have heads (and, tiered, pools in the cache),
    /// then reruns the operations that found no node after their pools grew. Failures
    /// name positions into `values` (the caller's batch).
    pub(in crate::skiplist) fn insert_run(
        &mut self,
        keys: &CudaSlice<u32>,
        index: &CudaSlice<u64>,
        span: std::ops::Range<usize>,
        values: &CudaSlice<u32>,
        add: bool,
    ) -> Result<()> {
        let kernel = self.kernel("sl_insert_u32")?;
        let stream = self.gpu.stream().clone();
        // The operations to run again, once some failed for want of a node.
        let mut again_ops: Option<(CudaSlice<u32>, CudaSlice<u64>)> = None;
        for _ in 0..RERUNS {
            let call = CallStatus::new(&self.gpu, values.len())?;
            let r = self.skip_ref(call.status_ptr());
            let (k, ix) = match &again_ops {
                Some((k, ix)) => (k.slice(..), ix.slice(..)),
                None => (keys.slice(span.clone()), index.slice(span.clone())),
            };
            let (m64, add32, failed) = (k.len() as u64, u32::from(add), call.bits_ptr());
            let mut args = stream.launch_builder(kernel.func());
            args.arg(&r)
                .arg(&k)
                .arg(&ix)
                .arg(values)
                .arg(&m64)
                .arg(&add32)
                .arg(&failed);
            // SAFETY: reads keys/index[..m] and values at those positions (below the
            // batch's length); writes the lists, their pools and failure bits at the
            // positions.
            unsafe { args.launch(self.warps_shape(&kernel, m64, self.keys_per_warp)?) }?;
            let out = self.refresh_pools()?;
            let status = call.status()?;
            if status.is_ok() {
                // A raise dropped for want of a node applied nothing to lose: grow that
                // pool for next time, best effort.
                for i in out {
                    let cap = u64::from(self.host_pools[i].capacity);
                    self.grow_best_effort(i, cap * 2)?;
                }
                return Ok(());
            }
            let again = call.not_applied()?;
            if out.is_empty() || again.is_empty() || !status.contains(Status::POOL_EXHAUSTED) {
                // Only a shortage of nodes is retried; anything else is the call's error.
                call.check()?;
                return Ok(());
            }
            // Every failed operation runs again (those that gave up a lock wait too: the
            // bits do not say which failed why); what fails in the last run is the error.
            let (hk, hi) = (stream.clone_dtoh(&k)?, stream.clone_dtoh(&ix)?);
            for i in out {
                let cap = u64::from(self.host_pools[i].capacity);
                self.grow(i, cap * 2)?;
            }
            let (pk, pi) = pick_failed(&hk, &hi, &again);
            again_ops = Some((stream.clone_htod(&pk)?, stream.clone_htod(&pi)?));
        }
        Err(Error::Invalid(
            "an insertion batch kept running out of nodes after the pools grew".into(),
        ))
    }

    /// Keys sorted with their positions in the batch.
    pub fn sorted_with_index(&mut self, keys: &[u32]) -> Result<(CudaSlice<u32>, CudaSlice<u64>)> {
        let stream = self.gpu.stream().clone();
        let mut k = stream.clone_htod(keys)?;
        let mut index = stream.alloc_zeros::<u64>(keys.len())?;
        primitives::iota(&self.gpu, &mut index, 0u64)?;
        self.sorter.sort_pairs(&mut k, &mut index)?;
        Ok((k, index))
    }

    /// Removes a batch; `true` where this batch removed the key. Then compacts dead
    /// nodes, refreshes range bounds and the auxiliary list.
    pub fn erase(&mut self, keys: &[u32]) -> Result<Vec<bool>> {
        let n = keys.len();
        if n == 0 {
            return Ok(Vec::new());
        }
        let (k, index) = self.sorted_with_index(keys)?;
        let stream = self.gpu.stream().clone();
        let mut removed = stream.alloc_zeros::<u32>(n.div_ceil(32))?;
        let call = CallStatus::new(&self.gpu, n)?;
        let kernel = self.kernel("sl_erase_u32")?;
        let ran = self.over_runs(&k, true, &mut |lists, span| {
            let (r, ks, is, m) = lists.span_args(&call, &k, &index, span);
            let failed = call.bits_ptr();
            let mut args = stream.launch_builder(kernel.func());
            args.arg(&r)
                .arg(&ks)
                .arg(&is)
                .arg(&m)
                .arg(&mut removed)
                .arg(&failed);
            // SAFETY: reads keys/index[..m]; writes the lists, their pools, the removed
            // bits (at positions below n).
            unsafe { args.launch(lists.warps_shape(&kernel, m, lists.keys_per_warp)?) }?;
            // A merge or raise skipped for want of a node is not an error: grow for next
            // time, best effort.
            for i in lists.refresh_pools()? {
                let cap = u64::from(lists.host_pools[i].capacity);
                lists.grow_best_effort(i, cap * 2)?;
            }
            Ok(())
        });
        let removed = bits(&stream.clone_dtoh(&removed)?, n);
        // The removals that ran have applied: compaction, bounds and the auxiliary list
        // are brought up to date before any error of the call is returned.
        self.after_erase()?;
        self.repair(false)?;
        ran?;
        call.check()?;
        Ok(removed)
    }

    /// The first arguments of a kernel over `span` of a sorted batch (keys with their
    /// positions): the lists' ref with the call's status, the span's keys and positions,
    /// its length.
    pub(super) fn span_args<'a>(
        &self,
        call: &CallStatus,
        keys: &'a CudaSlice<u32>,
        index: &'a CudaSlice<u64>,
        span: std::ops::Range<usize>,
    ) -> (SkipRef, CudaView<'a, u32>, CudaView<'a, u64>, u64) {
        let m = span.len() as u64;
        let r = self.skip_ref(call.status_ptr());
        (r, keys.slice(span.clone()), index.slice(span), m)
    }

    /// Calls `launch` with the span of the sorted batch `keys` each kernel runs over: the
    /// whole batch, or (tiered) one span per run, after the run's pools are in the cache
    /// (`write`: marked dirty).
    pub(in crate::skiplist) fn over_runs(
        &mut self,
        keys: &CudaSlice<u32>,
        write: bool,
        launch: &mut dyn FnMut(&mut Self, std::ops::Range<usize>) -> Result<()>,
    ) -> Result<()> {
        if self.tier.is_none() {
            return launch(self, 0..keys.len());
        }
        let shift = self.shift;
        let targets: Vec<usize> = self
            .gpu
            .stream()
            .clone_dtoh(keys)?
            .iter()
            .map(|&k| (k >> shift) as usize)
            .collect();
        self.tiered_runs(&targets, write, launch)
    }

    /// Compaction (when a merge left dead nodes), bounds, auxiliary list.
    fn after_erase(&mut self) -> Result<()> {
        let descs = self.list_descs()?;
        let dead: Vec<u32> = (0..descs.len() as u32)
            .filter(|&l| descs[l as usize].dead != 0)
            .collect();
        let dirty: Vec<u32> = (0..descs.len() as u32)
            .filter(|&l| descs[l as usize].bounds_dirty != 0)
            .collect();
        if self.tier.is_some() {
            self.settle_tiered(&dead, &dirty)?;
        } else {
            if !dead.is_empty() {
                // Every list shares the pools of list 0 (first pool 0).
                let all: Vec<(u32, u32, usize)> =
                    (0..self.pools.len()).map(|p| (0, p as u32, p)).collect();
                self.compact(&all)?;
            }
            if !dirty.is_empty() {
                self.bounds(None)?;
            }
        }
        if !dead.is_empty() {
            // Re-read: the kernels since changed the descriptors (bounds); keep the host
            // copy exact before writing it back.
            let mut descs = self.list_descs()?;
            for d in &mut descs {
                d.dead = 0;
            }
            self.put_list_descs(&descs)?;
        }
        self.sync_aux()
    }

    /// Unlinks dead nodes and frees them: sl_compact over each (owner list, pool of the
    /// owner's, that pool's index in `pools`) of `pools`.
    pub(in crate::skiplist) fn compact(&mut self, pools: &[(u32, u32, usize)]) -> Result<()> {
        self.refresh_pools()?;
        let kernel = self.kernel("sl_compact_u32")?;
        let call = CallStatus::new(&self.gpu, 0)?;
        let r = self.skip_ref(call.status_ptr());
        let stream = self.gpu.stream().clone();
        for &(owner, p, at) in pools {
            let count = u64::from(self.host_pools[at].bump);
            if count == 0 {
                continue;
            }
            let owner = u64::from(owner);
            let mut args = stream.launch_builder(kernel.func());
            args.arg(&r).arg(&owner).arg(&p).arg(&count);
            // SAFETY: reads nodes [0, count) of the pool (all initialized), rewrites links,
            // pushes dead nodes on the pool's free list (room for every node).
            unsafe { args.launch(self.warps_shape(&kernel, count, 1)?) }?;
        }
        self.refresh_pools()?;
        call.check()?;
        Ok(())
    }

    /// sl_bounds over lists `ids` (None: every list).
    pub(in crate::skiplist) fn bounds(&mut self, ids: Option<&[u32]>) -> Result<()> {
        if ids == Some(&[]) {
            return Ok(());
        }
        let m = self.num_lists;
        self.over_lists("sl_bounds_u32", ids, m)?.check()?;
        Ok(())
    }

    /// Tells the auxiliary list (range lists) which lists became empty or non-empty.
    pub(in crate::skiplist) fn sync_aux(&mut self) -> Result<()> {
        if self.aux.is_none() {
            return Ok(());
        }
        let stream = self.gpu.stream().clone();
        let m = self.num_lists as usize;
        let mut add = stream.alloc_zeros::<u32>(m)?;
        let mut drop = stream.alloc_zeros::<u32>(m)?;
        let mut counts = stream.alloc_zeros::<u32>(2)?;
        let kernel = self.kernel("sl_aux_changes_u32")?;
        let r = self.skip_ref(0);
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&r).arg(&mut add).arg(&mut drop).arg(&mut counts);
        // SAFETY: reads the lists; writes at most num_lists entries of add and drop.
        unsafe { args.launch(self.gpu.grid_for(&kernel, m.max(1), BLOCK)?) }?;
        let c = stream.clone_dtoh(&counts)?;
        let aux = self.aux.as_mut().expect("checked above");
        // Each change is marked told only after the auxiliary list took it, so a failed
        // update is found again by the next call.
        let mut told = Vec::new();
        if c[0] > 0 {
            let k = stream.clone_dtoh(&add.slice(..c[0] as usize))?;
            let dv = stream.alloc_zeros::<u32>(k.len())?;
            aux.insert(stream.clone_htod(&k)?, dv, false)
                .map_err(without_positions)?;
            told.push((k, 1u32));
        }
        if c[1] > 0 {
            let k = stream.clone_dtoh(&drop.slice(..c[1] as usize))?;
            aux.erase(&k).map_err(without_positions)?;
            told.push((k, 0u32));
        }
        let commit = self.kernel("sl_aux_commit_u32")?;
        for (k, value) in told {
            let dk = stream.clone_htod(&k)?;
            let m = k.len() as u64;
            let mut args = stream.launch_builder(commit.func());
            args.arg(&r).arg(&dk).arg(&m).arg(&value);
            // SAFETY: every key is a list index + 1 below num_lists + 1.
            unsafe { args.launch(self.gpu.grid_for(&commit, k.len(), BLOCK)?) }?;
        }
        Ok(())
    }
}

/// The operations of a sorted launch (`keys` with their positions `index`) whose
/// positions are in `failed` (ascending), in the launch's order: what runs again.
fn pick_failed(keys: &[u32], index: &[u64], failed: &[usize]) -> (Vec<u32>, Vec<u64>) {
    keys.iter()
        .zip(index)
        .filter(|&(_, &at)| failed.binary_search(&(at as usize)).is_ok())
        .map(|(&k, &at)| (k, at))
        .unzip()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_operations_run_again_in_key_order_with_their_positions() {
        // The caller's batch [50, 10, 40, 10, 30] sorted with its positions.
        let keys = [10, 10, 30, 40, 50];
        let index = [1, 3, 4, 2, 0];
        // The kernel marked positions 0 (key 50) and 3 (the second 10).
        let (k, i) = pick_failed(&keys, &index, &[0, 3]);
        assert_eq!(k, vec![10, 50]);
        assert_eq!(i, vec![3, 0]);
        assert_eq!(pick_failed(&keys, &index, &[]), (vec![], vec![]));
        let all: Vec<usize> = (0..5).collect();
        assert_eq!(pick_failed(&keys, &index, &all).0, keys.to_vec());
    }
}
