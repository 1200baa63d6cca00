//! The tiered placement of a [`RangeSkipList`](super::RangeSkipList): each range's inner
//! list has a node pool of its own, homed in pinned host memory (the pools a batch makes
//! share one pinned block: pinned allocations are slow), and a device cache of at most
//! the budget holds whole pools' nodes. The free lists and the lock words stay in device
//! memory (8 bytes per node of 256, outside the budget), as do the list descriptors and
//! the auxiliary list.
//!
//! A kernel reaches a pool's nodes only through its descriptor's `base`, so moving a pool
//! in or out is a descriptor update between kernels: `base` is the device copy's address
//! while the pool is cached, 0 otherwise. Every kernel runs on one run of its batch at a
//! time (ranges in key order whose pools fit the budget together),
//! after the run's pools are made resident: the least recently used pools outside the
//! run are evicted first (written back when a kernel may have written them), the
//! missing ones copied in. Queries that leave their range are first rewritten to the one
//! range that answers them ([`plan::Ranges`]), so no kernel reads a pool outside its run:
//! insertions, removals and lookups touch only their key's range (a lookup or removal in
//! a range without a pool answers at once), compaction and bounds are run over the
//! ranges that need them, heads are made in the run that first touches a range.
//!
//! Runs take at most half the budget where their pools allow ([`plan::plan_runs`]), so
//! that the next run's pools are copied in on a second stream (the copy stream) while
//! the current run's kernels run on the table's stream: before run *i* is launched, the
//! host reads the pools' counts back (which waits for runs *i − 1* and before), evicts
//! least recently used pools outside runs *i* and *i + 1* (written back on the table's
//! stream, which is idle then, and freed), enqueues run *i + 1*'s copies on the copy
//! stream and records an event there, which run *i + 1*'s first kernel waits for. The
//! descriptors name the new copies at once: run *i* never reaches run *i + 1*'s pools.
//! The first run, and a run whose pools pass half the budget, are copied in on the
//! table's stream after the copy stream is idle (the serial order). Every call ends with
//! the copy stream idle and the table's stream synchronized, so a write-back is complete
//! before any host read of a home. The copy code and the timed waits are the range
//! table's (`crate::streams`); the schedule differs (pools have their own sizes and
//! device copies, not slots), and its safety rests on the host's synchronization before
//! each run, not on events alone.
//!
//! A pool that must grow while cached grows in the cache (its new home is written when it
//! is evicted), at most to the budget: a pool that would pass it is an error naming the
//! range and sizes. Growth inside a run may take the cache past the budget until the run
//! ends; every call ends within it.

use std::sync::Arc;

use cudarc::driver::{CudaEvent, CudaSlice, CudaStream};

use super::layout::{NIL, NODE_BYTES};
use super::lists::{Collected, Lists, NodePool};
use super::plan::{plan_runs, Ranges};
use crate::batch::Failures;
use crate::error::{Error, Result};
use crate::placement::{Placement, Region};
use crate::range::home::Home;
use crate::streams::{self, Stalls, Way};
use crate::TableStats;

const NO_POOL: u32 = u32::MAX;

/// The host's book of the tiered cache.
pub(crate) struct Tier {
    budget: u64,
    /// Nodes a new pool starts with.
    initial: u64,
    /// The pool of each list (`NO_POOL`: none yet).
    pool_of: Vec<u32>,
    /// The list of each pool.
    owner: Vec<usize>,
    clock: u64,
    moved_in: u64,
    moved_out: u64,
    link_bytes: u64,
    /// Of `moved_in`, the pools copied in on the copy stream while a kernel could run.
    overlapped_in: u64,
    copy_wait_ns: u64,
    /// The copy stream (made with the lists; `None` only in host-side tests).
    pub copy: Option<Arc<CudaStream>>,
}

impl Tier {
    /// The book of `num_lists` lists whose pools start with `initial` nodes, within
    /// `budget` device bytes: a budget below one pool is a configuration error.
    pub fn new(budget: u64, initial: u64, num_lists: u64) -> Result<Self> {
        let bytes = initial * NODE_BYTES;
        if budget < bytes {
            return Err(Error::Config(format!(
                "a device budget of {budget} bytes holds no node pool of {bytes} bytes ({initial} nodes)"
            )));
        }
        Ok(Self {
            budget,
            initial,
            pool_of: vec![NO_POOL; num_lists as usize],
            owner: Vec::new(),
            clock: 0,
            moved_in: 0,
            moved_out: 0,
            link_bytes: 0,
            overlapped_in: 0,
            copy_wait_ns: 0,
            copy: None,
        })
    }

    /// The pool of `list`, if it has one.
    pub fn pool(&self, list: usize) -> Option<usize> {
        match self.pool_of.get(list) {
            Some(&p) if p != NO_POOL => Some(p as usize),
            _ => None,
        }
    }

    /// The list that owns `pool`.
    pub fn owner(&self, pool: usize) -> Option<usize> {
        self.owner.get(pool).copied()
    }

    /// The capacity pool `pool` (of `now` nodes) grows to: `wanted`, or the most the
    /// budget holds if that is still at least `min_nodes` and more than now.
    pub fn clamp_growth(&self, pool: usize, now: u64, min_nodes: u64, wanted: u64) -> Result<u64> {
        let most = self.budget / NODE_BYTES;
        if wanted <= most {
            return Ok(wanted);
        }
        if most > now && most >= min_nodes {
            return Ok(most);
        }
        Err(Error::Config(format!(
            "range {}'s node pool of {} bytes cannot grow to hold {} nodes within the device budget of {} bytes",
            self.owner.get(pool).copied().unwrap_or(usize::MAX),
            now * NODE_BYTES,
            min_nodes.max(now + 1),
            self.budget
        )))
    }
}

impl Lists {
    pub(super) fn book(&self) -> Result<&Tier> {
        self.tier
            .as_ref()
            .ok_or_else(|| Error::Invalid("no tiered cache".into()))
    }

    fn book_mut(&mut self) -> Result<&mut Tier> {
        self.tier
            .as_mut()
            .ok_or_else(|| Error::Invalid("no tiered cache".into()))
    }

    /// Gives each of `lists` that has no pool one, out of one pinned block, and points
    /// its descriptor at it. Nothing changes when an allocation fails.
    fn add_pools(&mut self, lists: &[usize]) -> Result<()> {
        let tier = self.book()?;
        let fresh: Vec<usize> = lists
            .iter()
            .copied()
            .filter(|&l| tier.pool(l).is_none())
            .collect();
        if fresh.is_empty() {
            return Ok(());
        }
        let (initial, budget) = (tier.initial, tier.budget);
        let bytes = initial * NODE_BYTES;
        let total = bytes
            .checked_mul(fresh.len() as u64)
            .ok_or_else(|| gpuds_core::Error::CapacityOverflow(format!("{} pools", fresh.len())))?;
        let block = Arc::new(Region::new(
            &self.gpu,
            Placement::Tiered {
                device_budget_bytes: budget,
            },
            total,
        )?);
        let mut made = Vec::with_capacity(fresh.len());
        for j in 0..fresh.len() {
            let home = Home {
                block: block.clone(),
                offset: j as u64 * bytes,
                bytes,
                fresh: false,
            };
            made.push(NodePool::new(&self.gpu, home, initial)?);
        }
        let stream = self.gpu.stream().clone();
        for (&l, (pool, desc)) in fresh.iter().zip(made) {
            let p = self.pools.len() as u32;
            // The descriptor's first_pool word (word 18 of its 32).
            let at = l * 32 + 18;
            stream.memcpy_htod(&[p], &mut self.lists.slice_mut(at..at + 1))?;
            self.pools.push(pool);
            self.host_pools.push(desc);
            let tier = self.book_mut()?;
            tier.pool_of[l] = p;
            tier.owner.push(l);
        }
        self.put_pools()
    }

    /// Makes the pools of `lists` resident (`write`: marked dirty), evicting the least
    /// recently used others while the cache would pass the budget, on the table's stream
    /// (the serial order: for the first run and runs too large to overlap).
    fn make_resident(&mut self, lists: &[usize], write: bool) -> Result<()> {
        let compute = self.gpu.stream().clone();
        self.bring_in(lists, &[], write, &compute).map(|_| ())
    }

    /// Makes the pools of `lists` resident (`write`: marked dirty), evicting the least
    /// recently used pools outside `lists` and `keep` (written back first, on the table's
    /// stream, when dirty) while the cache would pass the budget, and copying the missing
    /// ones in on `stream`. Returns how many were copied in. The descriptors name the new
    /// copies at once: no kernel may touch `lists`' pools before the copies end.
    fn bring_in(
        &mut self,
        lists: &[usize],
        keep: &[usize],
        write: bool,
        stream: &CudaStream,
    ) -> Result<u64> {
        // Exact bumps first: a write-back copies the nodes handed out.
        self.refresh_pools()?;
        let n = self.pools.len();
        let tier = self.book_mut()?;
        tier.clock += 1;
        let (now, budget) = (tier.clock, tier.budget);
        let want: Vec<usize> = lists.iter().filter_map(|&l| tier.pool(l)).collect();
        let mut kept = vec![false; n];
        for p in want
            .iter()
            .copied()
            .chain(keep.iter().filter_map(|&l| tier.pool(l)))
        {
            kept[p] = true;
        }
        let bytes = |lists: &Self, p: usize| u64::from(lists.host_pools[p].capacity) * NODE_BYTES;
        let need: u64 = want
            .iter()
            .filter(|&&p| self.pools[p].cached.is_none())
            .map(|&p| bytes(self, p))
            .sum();
        self.fit(budget - need.min(budget), &kept)?;
        let mut loaded = 0;
        for &p in &want {
            if self.pools[p].cached.is_none() {
                self.load(p, stream)?;
                loaded += 1;
            }
            self.pools[p].used = now;
            self.pools[p].dirty |= write;
        }
        self.put_pools()?;
        Ok(loaded)
    }

    /// Evicts the least recently used cached pools not `kept` until the cache holds at
    /// most `room` bytes (or only kept pools).
    fn fit(&mut self, room: u64, kept: &[bool]) -> Result<()> {
        let mut held: u64 = self
            .pools
            .iter()
            .filter_map(|p| p.cached.as_ref().map(Region::bytes))
            .sum();
        let mut evicted = false;
        while held > room {
            let victim = (0..self.pools.len())
                .filter(|&p| {
                    !kept.get(p).copied().unwrap_or(false) && self.pools[p].cached.is_some()
                })
                .min_by_key(|&p| self.pools[p].used);
            let Some(v) = victim else { break };
            held -= self.pools[v].cached.as_ref().map_or(0, Region::bytes);
            self.evict(v)?;
            evicted = true;
        }
        if evicted {
            // The device's descriptors no longer name the freed copies.
            self.put_pools()?;
        }
        Ok(())
    }

    /// Writes pool `p` back to its home when dirty and drops its device copy. On the
    /// table's stream, after every kernel that wrote the copy; the copy stream is idle
    /// (no copy-in of `p` is in flight: `tiered_runs` waits for it first).
    fn evict(&mut self, p: usize) -> Result<()> {
        let used = u64::from(self.host_pools[p].bump) * NODE_BYTES;
        let pool = &self.pools[p];
        let Some(cached) = &pool.cached else {
            return Ok(());
        };
        if pool.dirty {
            // Stream order puts the copy after every kernel that wrote the device copy,
            // and before the device copy is freed (freeing synchronizes).
            let compute = self.gpu.stream();
            self.copy_pool(&pool.nodes, cached, used, Way::Out, compute)?;
        }
        let dirty = pool.dirty;
        let tier = self.book_mut()?;
        if dirty {
            tier.moved_out += 1;
            tier.link_bytes += used;
        }
        self.pools[p].cached = None;
        self.pools[p].dirty = false;
        self.host_pools[p].base = 0;
        Ok(())
    }

    /// Enqueues on `stream` the copy of the first `used` bytes of nodes between `home`
    /// and `cached` (`way`).
    fn copy_pool(
        &self,
        home: &Home,
        cached: &Region,
        used: u64,
        way: Way,
        stream: &CudaStream,
    ) -> Result<()> {
        if used == 0 {
            return Ok(());
        }
        if used > home.bytes || used > cached.bytes() {
            return Err(Error::Invalid(format!(
                "a node pool copy of {used} bytes between a home of {} bytes and a cache \
                 copy of {} bytes",
                home.bytes,
                cached.bytes()
            )));
        }
        self.gpu.context().bind_to_thread()?;
        // SAFETY: both hold `used` bytes; the callers order the copy with the kernels
        // and keep both alive until it ends.
        unsafe {
            streams::copy(
                way,
                home.host_ptr(),
                cached.device_ptr(),
                used as usize,
                stream,
            )
        }
    }

    /// Copies pool `p` from its home into a fresh device copy, on `stream`.
    fn load(&mut self, p: usize, stream: &CudaStream) -> Result<()> {
        let capacity = u64::from(self.host_pools[p].capacity) * NODE_BYTES;
        let used = u64::from(self.host_pools[p].bump) * NODE_BYTES;
        let cached = Region::new(&self.gpu, Placement::Device, capacity)?;
        // The home's last write-back was earlier on the table's stream, and completed
        // (synchronized) before this copy was enqueued; the kernels that read the copy
        // come later on the table's stream or wait for the copy stream.
        self.copy_pool(&self.pools[p].nodes, &cached, used, Way::In, stream)?;
        let tier = self.book_mut()?;
        tier.moved_in += 1;
        tier.link_bytes += used;
        self.host_pools[p].base = cached.device_ptr();
        self.pools[p].cached = Some(cached);
        self.pools[p].dirty = false;
        Ok(())
    }

    /// Calls `launch` once per run of a batch whose operations target the lists
    /// `targets` (ascending), after the run's pools are in the cache; synchronizes.
    ///
    /// Runs are planned first, each within half the budget where its pools allow
    /// ([`plan_runs`]). Before run *i* is launched, the pools of run *i + 1* (when both
    /// runs are halves) are copied in on the copy stream, so the copies overlap run *i*'s
    /// kernels: the victims they evict are outside runs *i* and *i + 1* (their kernels,
    /// runs *i − 1* and before, are complete: the pools' counts were just read back,
    /// which synchronizes) and are written back on the table's stream first; run *i +
    /// 1*'s first kernel waits for an event recorded after its copies. The first run, and
    /// any run that is not a half, is made resident on the table's stream (the serial
    /// order), after the copy stream is idle. Whatever happens, the copy stream is idle
    /// and the table's stream synchronized when this returns.
    pub(super) fn tiered_runs(
        &mut self,
        targets: &[usize],
        write: bool,
        launch: &mut dyn FnMut(&mut Self, std::ops::Range<usize>) -> Result<()>,
    ) -> Result<()> {
        let mut stalls = Stalls::default();
        let ran = self.overlapped_runs(targets, write, launch, &mut stalls);
        let idle = self.copy_idle();
        let synced = self.gpu.stream().synchronize();
        ran?;
        idle?;
        synced?;
        let ns = stalls.total_ns()?;
        let tier = self.book_mut()?;
        tier.copy_wait_ns += ns;
        // Pools that grew in the last run may have taken the cache past the budget.
        let budget = tier.budget;
        self.refresh_pools()?;
        self.fit(budget, &[])
    }

    /// Waits until the copy stream is idle.
    fn copy_idle(&self) -> Result<()> {
        match &self.book()?.copy {
            Some(c) => Ok(c.synchronize()?),
            None => Ok(()),
        }
    }

    /// The runs of [`tiered_runs`](Self::tiered_runs) and their copies.
    fn overlapped_runs(
        &mut self,
        targets: &[usize],
        write: bool,
        launch: &mut dyn FnMut(&mut Self, std::ops::Range<usize>) -> Result<()>,
        stalls: &mut Stalls,
    ) -> Result<()> {
        let runs = {
            let tier = self.book()?;
            plan_runs(targets, tier.budget, |l| {
                tier.pool(l)
                    .map(|p| u64::from(self.host_pools[p].capacity) * NODE_BYTES)
            })?
        };
        let copy = self.book()?.copy.clone();
        // Run i's pools: already brought in on the copy stream (with the event to wait
        // for, if any were copied), or not yet.
        let mut ready: Option<Option<CudaEvent>> = None;
        for (i, run) in runs.iter().enumerate() {
            match ready.take() {
                Some(Some(copied)) => stalls.wait(self.gpu.stream(), &copied)?,
                Some(None) => {}
                None => {
                    self.copy_idle()?;
                    self.make_resident(&run.lists, write)?;
                }
            }
            if let (Some(next), Some(c)) = (runs.get(i + 1), &copy) {
                if run.half && next.half {
                    // The copy stream is idle: run i's copies ended before its pools'
                    // counts were read back (its kernels waited for them).
                    let loaded = self.bring_in(&next.lists, &run.lists, write, c)?;
                    ready = Some(if loaded > 0 {
                        self.book_mut()?.overlapped_in += loaded;
                        Some(c.record_event(None)?)
                    } else {
                        None
                    });
                }
            }
            launch(self, run.span.clone())?;
        }
        Ok(())
    }
    /// Tiered insertions of the sorted `keys` (with their positions `index` into
    /// `values`): pools for the lists they touch first, then run by run heads, room, and
    /// the insertion kernel. A run whose operations fail some does not stop the others:
    /// the error names every failed position of the batch.
    pub(super) fn insert_tiered(
        &mut self,
        keys: &CudaSlice<u32>,
        index: &CudaSlice<u64>,
        values: &CudaSlice<u32>,
        add: bool,
    ) -> Result<()> {
        let hk = self.gpu.stream().clone_dtoh(keys)?;
        let shift = self.shift;
        let targets: Vec<usize> = hk.iter().map(|&k| (k >> shift) as usize).collect();
        let mut touched = targets.clone();
        touched.dedup();
        self.add_pools(&touched)?;
        let descs = self.list_descs()?;
        let mut failures = Failures::default();
        let ran = self.tiered_runs(&targets, true, &mut |lists, span| {
            let run = &targets[span.clone()];
            let mut ids: Vec<u32> = run.iter().map(|&l| l as u32).collect();
            ids.dedup();
            let heads: Vec<u32> = ids
                .iter()
                .copied()
                .filter(|&l| descs[l as usize].heads[0] == NIL)
                .collect();
            if !heads.is_empty() {
                lists.init_lists(Some(&heads), heads.len() as u64)?;
            }
            // Room for about one new node per 12 keys, best effort: the kernel's reruns
            // grow what it really needs.
            for &l in &ids {
                let keys = run.partition_point(|&x| x <= l as usize)
                    - run.partition_point(|&x| x < l as usize);
                if let Some(p) = lists.book()?.pool(l as usize) {
                    let _ = lists.reserve(p, keys as u64 / 12 + 4);
                }
            }
            // Positions are the batch's already (the kernel marks index[i]).
            failures.take(lists.insert_run(keys, index, span, values, add), 0)?;
            Ok(())
        });
        let repaired = self.repair(false);
        self.sync_aux()?;
        ran?;
        repaired?;
        failures.finish(())
    }

    /// After tiered removals: compaction of the `dead` lists' pools and the bounds of the
    /// `dirty` ones (both ascending), run by run.
    pub(super) fn settle_tiered(&mut self, dead: &[u32], dirty: &[u32]) -> Result<()> {
        let mut targets: Vec<usize> = dead.iter().chain(dirty).map(|&l| l as usize).collect();
        targets.sort_unstable();
        targets.dedup();
        let run_targets = targets.clone();
        self.tiered_runs(&targets, true, &mut |lists, span| {
            let run = &run_targets[span];
            let mut pools = Vec::new();
            for &l in run
                .iter()
                .filter(|&&l| dead.binary_search(&(l as u32)).is_ok())
            {
                if let Some(p) = lists.book()?.pool(l) {
                    pools.push((l as u32, 0, p));
                }
            }
            if !pools.is_empty() {
                lists.compact(&pools)?;
            }
            let ids: Vec<u32> = run
                .iter()
                .map(|&l| l as u32)
                .filter(|l| dirty.binary_search(l).is_ok())
                .collect();
            lists.bounds(Some(&ids))
        })
    }

    /// Tiered successor (`down` false) or predecessor queries rewritten to their target
    /// ranges: (keys to ask, their positions in `keys`, target lists), sorted by key;
    /// a query without a target is left out (it has no answer).
    pub(super) fn plan_neighbours(
        &self,
        keys: &[u32],
        down: bool,
    ) -> Result<(Vec<u32>, Vec<u64>, Vec<usize>)> {
        let plan = Ranges::new(&self.list_descs()?, self.shift);
        let mut asks: Vec<(u32, u64, usize)> = keys
            .iter()
            .enumerate()
            .filter_map(|(i, &k)| {
                let t = if down {
                    plan.predecessor(k)
                } else {
                    plan.successor(k)
                };
                t.map(|(r, ask)| (ask, i as u64, r))
            })
            .collect();
        asks.sort_unstable();
        let mut out = (Vec::new(), Vec::new(), Vec::new());
        for (ask, i, r) in asks {
            out.0.push(ask);
            out.1.push(i);
            out.2.push(r);
        }
        Ok(out)
    }

    /// Tiered range queries: each split into per-range sub-queries, run by run; a query's
    /// pairs are its sub-queries' in range order.
    pub(super) fn range_tiered(&mut self, ranges: &[(u32, u32)]) -> Result<Collected> {
        let plan = Ranges::new(&self.list_descs()?, self.shift);
        let mut subs: Vec<(usize, usize, u32, u32)> = Vec::new();
        for (q, &(lo, hi)) in ranges.iter().enumerate() {
            subs.extend(plan.split(lo, hi).into_iter().map(|(r, a, b)| (r, q, a, b)));
        }
        subs.sort_unstable();
        let targets: Vec<usize> = subs.iter().map(|s| s.0).collect();
        let mut per_query: Vec<Vec<(u32, u32)>> = vec![Vec::new(); ranges.len()];
        self.tiered_runs(&targets, false, &mut |lists, span| {
            let run = &subs[span];
            let asks: Vec<(u32, u32)> = run.iter().map(|s| (s.2, s.3)).collect();
            let c = lists.range_pass(&asks)?;
            for (j, s) in run.iter().enumerate() {
                let (a, b) = (c.offsets[j], c.offsets[j + 1]);
                per_query[s.1].extend(
                    c.keys[a..b]
                        .iter()
                        .copied()
                        .zip(c.values[a..b].iter().copied()),
                );
            }
            Ok(())
        })?;
        let mut out = Collected {
            offsets: Vec::with_capacity(ranges.len() + 1),
            keys: Vec::new(),
            values: Vec::new(),
        };
        for pairs in per_query {
            out.offsets.push(out.keys.len());
            for (k, v) in pairs {
                out.keys.push(k);
                out.values.push(v);
            }
        }
        out.offsets.push(out.keys.len());
        Ok(out)
    }

    /// Bytes per tier (node pools: homes, and the cache's copies) and, tiered, the
    /// cache's traffic.
    pub(crate) fn add_stats(&self, s: &mut TableStats) {
        for p in &self.pools {
            s.add(p.nodes.placement(), p.nodes.bytes);
            if let Some(c) = &p.cached {
                s.device_bytes += c.bytes();
            }
        }
        if let Some(t) = &self.tier {
            s.moved_in += t.moved_in;
            s.moved_out += t.moved_out;
            s.link_bytes += t.link_bytes;
            s.overlapped_in += t.overlapped_in;
            s.copy_wait_ns += t.copy_wait_ns;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_below_one_pool_is_a_configuration_error() {
        let err = Tier::new(16 * NODE_BYTES - 1, 16, 4)
            .err()
            .expect("an error");
        assert!(matches!(err, Error::Config(_)), "{err}");
        assert!(err.to_string().contains("4095 bytes"), "{err}");
        assert!(Tier::new(16 * NODE_BYTES, 16, 4).is_ok());
    }

    #[test]
    fn pools_grow_up_to_the_budget_then_fail_naming_their_range() {
        let mut t = Tier::new(100 * NODE_BYTES, 16, 8).unwrap();
        t.pool_of[5] = 0;
        t.owner.push(5);
        assert_eq!(t.pool(5), Some(0));
        assert_eq!(t.pool(4), None);
        assert_eq!(t.pool(99), None);
        assert_eq!(t.clamp_growth(0, 32, 33, 64).unwrap(), 64);
        // Doubling past the budget stops at it.
        assert_eq!(t.clamp_growth(0, 64, 65, 128).unwrap(), 100);
        // A pool at the budget, or one that needs more than it, cannot grow.
        let err = t.clamp_growth(0, 100, 101, 200).unwrap_err().to_string();
        assert!(
            err.contains("range 5") && err.contains("25600 bytes"),
            "{err}"
        );
        assert!(t.clamp_growth(0, 64, 120, 128).is_err());
    }
}
