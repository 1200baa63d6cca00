//! Repair of dropped raises. A split raises the new node's first key into the layer
//! above, best effort: with no free node, a head being made by another warp or a lock
//! wait given up, the raise is dropped. Searches stay correct (they move right), but a
//! node the index misses makes every search that passes it walk one node further, and
//! the misses add up where pools ran short. So the kernels count every dropped raise in
//! the list's first pool, and at the end of each insertion or removal call that dropped
//! some, the host repairs the index between kernels:
//!
//! 1. `sl_named` marks, in a bitmap per pool, every node an entry of a live index node
//!    names;
//! 2. `sl_unindexed` lists the live nodes that are not heads, hold a key and are named
//!    by no entry, as jobs (list, level, smallest key, node);
//! 3. the pools of the layers above get room ([`room_for`]),
//!    then `sl_raise_jobs` raises each job's key into the layer above, naming its node
//!    (valid: the node's range starts at or below its smallest key; an equal key already
//!    there is pointed at the node, and the node it named is found in the next pass).
//!
//! Bounded: at most [`PASSES`] passes per call, each best effort (a raise it drops is
//! counted again and repaired by a later call). Tiered lists repair the pools with drops,
//! run by run, in the cache.

use cudarc::driver::PushKernelArg;

use super::layout::MAX_LEVELS;
use super::lists::Lists;
use crate::error::Result;

/// Repair passes per call at most.
const PASSES: usize = 3;
/// Jobs one pass collects per owner list at most (16 bytes each); the rest stay counted
/// as dropped, for the next pass or call.
const JOB_CAP: u64 = 1 << 20;

/// A list whose pools a repair scans: (owner list, its pools as (index relative to the
/// owner's first pool, index in `Lists::pools`)).
type Owner = (u32, Vec<(u32, usize)>);

/// A job of `sl_unindexed`: (list, level, key, node).
type Job = [u32; 4];

/// Nodes each target pool should have room for before the raises of `jobs`:
/// (pool, nodes), `pool_of(list, level)` naming the pool of a list's layer. A raise into
/// layer L + 1 splits a node there about once in eight (nodes half full after splits),
/// and such a split raises into layer L + 2 in turn: one node per eight raises in the
/// first, one per 64 in the second, and four more in each.
fn room_for(jobs: &[Job], pool_of: impl Fn(u32, u32) -> Option<usize>) -> Vec<(usize, u64)> {
    // (raises into the layer above, into the one above that) per pool.
    let mut per_pool: std::collections::BTreeMap<usize, (u64, u64)> = Default::default();
    for j in jobs {
        if let Some(p) = pool_of(j[0], j[1] + 1) {
            per_pool.entry(p).or_default().0 += 1;
        }
        if let Some(p) = pool_of(j[0], j[1] + 2) {
            per_pool.entry(p).or_default().1 += 1;
        }
    }
    per_pool
        .into_iter()
        .map(|(p, (one, two))| (p, one / 8 + two / 64 + 4))
        .collect()
}

impl Lists {
    /// Raises dropped so far: those repair passes took, and those counted since.
    pub fn raises_dropped(&self) -> u64 {
        self.raises_dropped
            + self
                .host_pools
                .iter()
                .map(|d| u64::from(d.dropped))
                .sum::<u64>()
    }

    /// Repairs the index where kernels dropped raises (`force`: every list, once at
    /// least), at most [`PASSES`] passes (module docs). Synchronizes.
    pub(super) fn repair(&mut self, force: bool) -> Result<()> {
        for pass in 0..PASSES {
            self.refresh_pools()?;
            let dropped: Vec<usize> = (0..self.host_pools.len())
                .filter(|&p| self.host_pools[p].dropped != 0)
                .collect();
            if dropped.is_empty() && !(force && pass == 0) {
                return Ok(());
            }
            for &p in &dropped {
                self.raises_dropped += u64::from(self.host_pools[p].dropped);
                self.host_pools[p].dropped = 0;
            }
            self.put_pools()?;
            let raised = match &self.tier {
                Some(tier) => {
                    let mut owners: Vec<usize> = if force {
                        (0..self.pools.len())
                            .filter_map(|p| tier.owner(p))
                            .collect()
                    } else {
                        dropped.iter().filter_map(|&p| tier.owner(p)).collect()
                    };
                    owners.sort_unstable();
                    owners.dedup();
                    let mut raised = 0;
                    let run_owners = owners.clone();
                    self.tiered_runs(&owners, true, &mut |lists, span| {
                        let book = lists.book()?;
                        let group: Vec<Owner> = run_owners[span]
                            .iter()
                            .filter_map(|&l| book.pool(l).map(|p| (l as u32, vec![(0, p)])))
                            .collect();
                        raised += lists.repair_owners(&group)?;
                        Ok(())
                    })?;
                    raised
                }
                // Every list shares the pools of list 0.
                None => {
                    let all = (0..self.pools.len()).map(|p| (p as u32, p)).collect();
                    self.repair_owners(&[(0, all)])?
                }
            };
            if raised == 0 {
                return Ok(());
            }
        }
        Ok(())
    }

    /// The pool (index in `pools`) of `list`'s layer `level`.
    fn pool_of_level(&self, list: u32, level: u32) -> Option<usize> {
        if let Some(tier) = &self.tier {
            return tier.pool(list as usize);
        }
        let p = match self.pools.len() {
            1 => 0,
            2 => usize::from(level > 0),
            _ => level as usize,
        };
        (p < self.pools.len()).then_some(p)
    }

    /// One repair pass over the pools of `owners` (resident when tiered): marks, jobs,
    /// room, raises. Returns the raises made.
    fn repair_owners(&mut self, owners: &[Owner]) -> Result<u64> {
        let stream = self.gpu.stream().clone();
        let (named, unindexed) = (
            self.kernel("sl_named_u32")?,
            self.kernel("sl_unindexed_u32")?,
        );
        let r = self.skip_ref(0);
        let mut jobs: Vec<Job> = Vec::new();
        for (owner, pools) in owners {
            // Bitmap words per pool of the owner: at[q] the first, at[16 + q] how many.
            let mut at = vec![0u64; 2 * MAX_LEVELS];
            let mut words = 0u64;
            for &(q, g) in pools {
                let w = u64::from(self.host_pools[g].bump).div_ceil(32);
                at[q as usize] = words;
                at[MAX_LEVELS + q as usize] = w;
                words += w;
            }
            let cap: u64 = pools
                .iter()
                .map(|&(_, g)| u64::from(self.host_pools[g].bump))
                .sum::<u64>()
                .min(JOB_CAP);
            if cap == 0 {
                continue;
            }
            let mut marks = stream.alloc_zeros::<u32>(words.max(1) as usize)?;
            let at_d = stream.clone_htod(&at)?;
            let mut out = stream.alloc_zeros::<u32>(4 * cap as usize)?;
            let mut found = stream.alloc_zeros::<u64>(1)?;
            let owner64 = u64::from(*owner);
            for &(q, g) in pools {
                let count = u64::from(self.host_pools[g].bump);
                let mut args = stream.launch_builder(named.func());
                args.arg(&r)
                    .arg(&owner64)
                    .arg(&q)
                    .arg(&count)
                    .arg(&mut marks)
                    .arg(&at_d);
                // SAFETY: reads nodes [0, count) of the owner's pool q (all initialized);
                // sets bits below at[16 + q'] words from at[q'] of the marks.
                unsafe { args.launch(self.warps_shape(&named, count, 1)?) }?;
            }
            for &(q, g) in pools {
                let count = u64::from(self.host_pools[g].bump);
                let mut args = stream.launch_builder(unindexed.func());
                args.arg(&r)
                    .arg(&owner64)
                    .arg(&q)
                    .arg(&count)
                    .arg(&marks)
                    .arg(&at_d)
                    .arg(&mut out)
                    .arg(&mut found)
                    .arg(&cap);
                // SAFETY: reads the pool's nodes and the marks; writes at most cap jobs.
                unsafe { args.launch(self.warps_shape(&unindexed, count, 1)?) }?;
            }
            let all = stream.clone_dtoh(&found)?[0];
            let m = all.min(cap) as usize;
            if all > cap {
                // Left for the next pass: counted as dropped again in the owner's pool.
                let first = pools[0].1;
                let d = &mut self.host_pools[first].dropped;
                *d = d.saturating_add(u32::try_from(all - cap).unwrap_or(u32::MAX));
                self.put_pools()?;
            }
            if m > 0 {
                let words = stream.clone_dtoh(&out.slice(..4 * m))?;
                jobs.extend(words.chunks_exact(4).map(|c| [c[0], c[1], c[2], c[3]]));
            }
        }
        if jobs.is_empty() {
            return Ok(0);
        }
        for (p, nodes) in room_for(&jobs, |l, level| self.pool_of_level(l, level)) {
            // Best effort: a raise that finds no node is dropped and counted again.
            self.reserve_best_effort(p, nodes)?;
        }
        let flat: Vec<u32> = jobs.iter().flatten().copied().collect();
        let d = stream.clone_htod(&flat)?;
        let m = jobs.len() as u64;
        let raise = self.kernel("sl_raise_jobs_u32")?;
        let r = self.skip_ref(0);
        let mut args = stream.launch_builder(raise.func());
        args.arg(&r).arg(&d).arg(&m);
        // SAFETY: every job names a list below num_lists and a live node of its pools
        // (resident when tiered), which had room made for the raises.
        unsafe { args.launch(self.warps_shape(&raise, m, 1)?) }?;
        for p in self.refresh_pools()? {
            let cap = u64::from(self.host_pools[p].capacity);
            self.grow_best_effort(p, cap * 2)?;
        }
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn room_goes_to_the_pool_of_the_layer_above() {
        // 90 raises from layer 0 and one from layer 1 of list 3; two from layer 0 of
        // list 5.
        let mut jobs = vec![[3, 0, 10, 1]; 90];
        jobs.push([3, 1, 50, 2]);
        jobs.extend([[5, 0, 7, 3], [5, 0, 9, 4]]);
        // A pool per layer: layer 1's pool takes 92 raises (11 nodes and 4); layer 2's
        // one raise and the splits of 92 (1 node and 4); layer 3's the splits of one.
        let per_layer = room_for(&jobs, |_, level| Some(level as usize));
        assert_eq!(per_layer, vec![(1, 15), (2, 5), (3, 4)]);
        // A pool per list (tiered): both layers above in each list's own.
        let per_list = room_for(&jobs, |l, _| Some(l as usize * 10));
        assert_eq!(per_list, vec![(30, 16), (50, 4)]);
        assert!(room_for(&jobs, |_, _| None).is_empty());
        assert!(room_for(&[], |_, _| Some(0)).is_empty());
    }
}
