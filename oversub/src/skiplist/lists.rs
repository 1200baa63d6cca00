//! [`Lists`]: the engine under both skip lists. An array of device skip lists (one for a
//! [`SkipList`](super::SkipList), one per range for a
//! [`RangeSkipList`](super::RangeSkipList)) over node pools in a placement; batches
//! sorted on the device, node pools grown between kernels, dead nodes compacted away
//! after removals.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaView, DevicePtr, LaunchConfig, PushKernelArg};
use gpuds_core::failures::CallStatus;
use gpuds_core::primitives::{self, RadixSorter};
use gpuds_core::{Gpu, Kernel, Module, Status};

use super::layout::{
    from_words, to_words, ListDesc, PoolDesc, SkipRef, MAX_POOL_NODES, NODE_BYTES,
};
use super::tier::Tier;
use crate::batch::{bits, without_positions};
use crate::error::{Error, Result};
use crate::placement::{Placement, Region};
use crate::range::home::Home;

/// Threads per block of the skip-list kernels.
const BLOCK: u32 = 256;
/// Reruns of the operations of an insertion batch whose nodes ran out (each after the
/// pools grew).
const RERUNS: usize = 40;

/// One pool of super-nodes and its free list.
pub(crate) struct NodePool {
    /// The nodes: their only copy, or (tiered) their home in pinned host memory.
    pub nodes: Home,
    /// Tiered: the nodes' device copy while the pool is in the cache.
    pub cached: Option<Region>,
    /// Tiered: a kernel may have written the device copy since it was copied in.
    pub dirty: bool,
    /// Tiered: when a run last needed the pool (the tier's clock).
    pub used: u64,
    /// The free list, in device memory whatever the placement (tiered: outside the
    /// budget, like the locks: 8 bytes per node of 256).
    free: CudaSlice<u32>,
    /// One lock word per node, in device memory whatever the placement (the kernels
    /// reach it through the pool descriptor; held here to own it).
    _locks: CudaSlice<u32>,
}

impl NodePool {
    /// A pool of `capacity` nodes at `nodes`, with its descriptor.
    pub fn new(gpu: &Gpu, nodes: Home, capacity: u64) -> Result<(Self, PoolDesc)> {
        let stream = gpu.stream();
        let free = stream.alloc_zeros::<u32>(capacity as usize)?;
        let locks = stream.alloc_zeros::<u32>(capacity as usize)?;
        let desc = PoolDesc {
            base: nodes.device_ptr(),
            free_list: free.device_ptr(stream).0,
            locks: locks.device_ptr(stream).0,
            capacity: capacity as u32,
            ..Default::default()
        };
        let pool = Self {
            nodes,
            cached: None,
            dirty: false,
            used: 0,
            free,
            _locks: locks,
        };
        Ok((pool, desc))
    }

    /// Where kernels reach the nodes: the cache's copy, else the nodes' own device
    /// address (0 for a tiered pool out of the cache: no kernel may touch it).
    pub fn base(&self) -> u64 {
        self.cached
            .as_ref()
            .map_or(self.nodes.device_ptr(), Region::device_ptr)
    }

    /// The first `bytes` bytes of the nodes as words, from the cache when the pool is
    /// there. Synchronizes.
    pub fn words(&self, bytes: u64) -> Result<Vec<u64>> {
        match &self.cached {
            Some(c) => c.words_at(0, bytes),
            None => self.nodes.words(bytes),
        }
    }
}

/// `bytes` of a fresh region as a home of its own.
pub(crate) fn own_home(gpu: &Gpu, placement: Placement, bytes: u64) -> Result<Home> {
    Ok(Home {
        block: Arc::new(Region::new(gpu, placement, bytes)?),
        offset: 0,
        bytes,
        fresh: false,
    })
}

/// `Ok` for a pool that found no room to grow: its node limit, the tiered device
/// budget (a configuration error there), or memory, device or pinned host; any other
/// error as it is.
fn no_room_is_ok(r: Result<()>) -> Result<()> {
    use cudarc::driver::{sys::CUresult, DriverError};
    match r {
        Err(
            Error::Config(_)
            | Error::HostAlloc { .. }
            | Error::Core(
                gpuds_core::Error::CapacityOverflow(_)
                | gpuds_core::Error::OutOfMemory { .. }
                | gpuds_core::Error::Driver(DriverError(CUresult::CUDA_ERROR_OUT_OF_MEMORY)),
            ),
        ) => Ok(()),
        other => other,
    }
}

/// Pairs per query of a range batch, and the pairs, in key order per query.
pub(crate) struct Collected {
    pub offsets: Vec<usize>,
    pub keys: Vec<u32>,
    pub values: Vec<u32>,
}

/// What [`Lists::new`] makes: `num_lists` empty lists with `flags` (pool mode | layout);
/// with `shift` < 32 key k belongs to list k >> shift; an auxiliary list of the non-empty
/// lists when `with_aux`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Shape {
    pub flags: u32,
    pub num_lists: u64,
    pub shift: u32,
    pub keys_per_warp: u32,
    /// The most blocks of a warp kernel's grid (0: no cap but residency).
    pub max_blocks: u32,
    pub initial_nodes: u64,
    pub with_aux: bool,
    /// `Tiered { device_budget_bytes }`: one pool per list, homed in pinned host memory,
    /// made when a batch first touches the list, cached on the device within the budget
    /// (the placements list is then empty).
    pub tiered: Option<u64>,
}

pub(crate) struct Lists {
    pub gpu: Gpu,
    pub(super) module: Module,
    pub pools: Vec<NodePool>,
    pub(super) pool_descs: CudaSlice<u32>,
    pub host_pools: Vec<PoolDesc>,
    pub(super) lists: CudaSlice<u32>,
    pub num_lists: u64,
    pub shift: u32,
    pub keys_per_warp: u32,
    /// The most blocks of a warp kernel's grid (0: no cap but residency).
    pub max_blocks: u32,
    pub aux: Option<Box<Lists>>,
    pub(super) sorter: RadixSorter,
    /// The tiered placement's cache book (range lists with `Shape::tiered`).
    pub(super) tier: Option<Tier>,
    /// Raises the kernels dropped whose counters a repair pass took (see `repair`).
    pub(super) raises_dropped: u64,
}

impl Lists {
    /// The lists of `shape` over one node pool per entry of `placements`. A single list
    /// gets its head at once; range lists get theirs on first use.
    pub fn new(gpu: &Gpu, placements: &[Placement], shape: Shape) -> Result<Self> {
        let Shape {
            flags,
            num_lists,
            shift,
            keys_per_warp,
            max_blocks,
            initial_nodes,
            with_aux,
            tiered,
        } = shape;
        let module = gpu.load(&crate::kernels::skiplist_program())?;
        let stream = gpu.stream();
        let mut pools = Vec::with_capacity(placements.len());
        let mut host_pools = Vec::with_capacity(placements.len());
        let capacity = initial_nodes.clamp(16, MAX_POOL_NODES);
        for &placement in placements {
            let home = own_home(gpu, placement, capacity * NODE_BYTES)?;
            let (pool, desc) = NodePool::new(gpu, home, capacity)?;
            host_pools.push(desc);
            pools.push(pool);
        }
        let tier = match tiered {
            Some(budget) => {
                let mut tier = Tier::new(budget, capacity, num_lists)?;
                tier.copy = Some(gpu.new_stream()?);
                Some(tier)
            }
            None => None,
        };
        let descs = vec![ListDesc::empty(flags); num_lists as usize];
        let aux = if with_aux {
            Some(Box::new(Lists::new(
                gpu,
                &[Placement::Device],
                Shape {
                    flags: 0,
                    num_lists: 1,
                    shift: 32,
                    keys_per_warp: 1,
                    max_blocks: 0,
                    initial_nodes: 64,
                    with_aux: false,
                    tiered: None,
                },
            )?))
        } else {
            None
        };
        let mut lists = Self {
            gpu: gpu.clone(),
            module,
            pool_descs: stream.clone_htod(&pool_words(&host_pools))?,
            host_pools,
            pools,
            lists: stream.clone_htod(&to_words(&descs))?,
            num_lists,
            shift,
            keys_per_warp,
            max_blocks,
            aux,
            sorter: RadixSorter::new(gpu)?,
            tier,
            raises_dropped: 0,
        };
        if num_lists == 1 {
            lists.init_lists(None, 1)?;
        }
        Ok(lists)
    }

    pub fn skip_ref(&self, status: u64) -> SkipRef {
        let stream = self.gpu.stream();
        let (aux, aux_pools) = match &self.aux {
            Some(a) => (
                a.lists.device_ptr(stream).0,
                a.pool_descs.device_ptr(stream).0,
            ),
            None => (0, 0),
        };
        SkipRef {
            lists: self.lists.device_ptr(stream).0,
            pools: self.pool_descs.device_ptr(stream).0,
            status,
            shift: self.shift,
            keys_per_warp: self.keys_per_warp,
            aux,
            aux_pools,
            num_lists: self.num_lists,
        }
    }

    pub(super) fn kernel(&self, name: &str) -> Result<Kernel> {
        Ok(self.module.kernel(name)?)
    }

    /// A grid of one warp per `per` operations (at most the resident warps, and at most
    /// `max_blocks` blocks when that is set): the kernels deal their operations round
    /// robin over the warps they get.
    pub(super) fn warps_shape(&self, kernel: &Kernel, ops: u64, per: u32) -> Result<LaunchConfig> {
        let warps = ops.div_ceil(u64::from(per.max(1))).max(1);
        let threads = usize::try_from(warps.saturating_mul(32)).unwrap_or(usize::MAX);
        let mut shape = self.gpu.grid_for(kernel, threads, BLOCK)?;
        if self.max_blocks > 0 {
            shape.grid_dim.0 = shape.grid_dim.0.min(self.max_blocks);
        }
        Ok(shape)
    }

    /// The list descriptors as the device has them. Synchronizes.
    pub fn list_descs(&self) -> Result<Vec<ListDesc>> {
        Ok(from_words(&self.gpu.stream().clone_dtoh(&self.lists)?))
    }

    /// Test-only: writes `faults` into every list's descriptor (not the auxiliary
    /// list's). Synchronizes.
    #[cfg(feature = "fault-injection")]
    pub fn inject_faults(&mut self, faults: crate::faults::Faults) -> Result<()> {
        let mut descs = self.list_descs()?;
        let (lo, hi) = faults.fail_updates.unwrap_or((0, 0));
        for d in &mut descs {
            d.fail_lo = lo;
            d.fail_hi = hi;
            d.faults = u32::from(faults.drop_raises);
        }
        self.put_list_descs(&descs)
    }

    fn put_list_descs(&mut self, descs: &[ListDesc]) -> Result<()> {
        let words = to_words(descs);
        self.gpu.stream().memcpy_htod(&words, &mut self.lists)?;
        Ok(())
    }

    /// Writes the host's pool descriptors to the device (a new array when pools were
    /// added).
    pub(super) fn put_pools(&mut self) -> Result<()> {
        let words = pool_words(&self.host_pools);
        let stream = self.gpu.stream().clone();
        if words.len() == self.pool_descs.len() {
            stream.memcpy_htod(&words, &mut self.pool_descs)?;
        } else {
            self.pool_descs = stream.clone_htod(&words)?;
        }
        Ok(())
    }

    /// Reads the pools back after a kernel, clamping the overshoot of failed allocations
    /// (bump past capacity, free_top below zero). Returns the pools that ran out.
    pub(super) fn refresh_pools(&mut self) -> Result<Vec<usize>> {
        let stream = self.gpu.stream().clone();
        let mut descs: Vec<PoolDesc> = from_words(&stream.clone_dtoh(&self.pool_descs)?);
        descs.truncate(self.pools.len());
        let mut out = Vec::new();
        for (i, d) in descs.iter_mut().enumerate() {
            if d.exhausted != 0 {
                out.push(i);
            }
            d.exhausted = 0;
            d.bump = d.bump.min(d.capacity);
            d.free_top = d.free_top.max(0);
        }
        self.host_pools = descs;
        self.put_pools()?;
        Ok(out)
    }

    /// Grows pool `i` to at least `min_nodes` (at least doubling): a new region in the
    /// same placement, the used nodes and the free list copied over. Nothing changes on
    /// failure.
    ///
    /// A tiered pool grows in the cache when it is there (its new home is written when
    /// it is evicted), else home to home; it may not pass the device budget.
    pub(super) fn grow(&mut self, i: usize, min_nodes: u64) -> Result<()> {
        let d = self.host_pools[i];
        let mut capacity = min_nodes.max(u64::from(d.capacity) * 2).min(MAX_POOL_NODES);
        if let Some(tier) = &self.tier {
            capacity = tier.clamp_growth(i, u64::from(d.capacity), min_nodes, capacity)?;
        }
        if capacity <= u64::from(d.capacity) {
            return Err(gpuds_core::Error::CapacityOverflow(format!(
                "a skip-list node pool is at its limit of {MAX_POOL_NODES} nodes"
            ))
            .into());
        }
        let stream = self.gpu.stream().clone();
        let bytes = capacity * NODE_BYTES;
        let old = &self.pools[i];
        let home = own_home(&self.gpu, old.nodes.placement(), bytes)?;
        let cached = match &old.cached {
            Some(_) => Some(Region::new(&self.gpu, Placement::Device, bytes)?),
            None => None,
        };
        let (mut pool, mut desc) = NodePool::new(&self.gpu, home, capacity)?;
        let used = u64::from(d.bump) * NODE_BYTES;
        stream.synchronize()?;
        if used > 0 {
            match (&old.cached, &cached) {
                (Some(from), Some(to)) => {
                    copy_device(&self.gpu, to.device_ptr(), from.device_ptr(), used)?
                }
                _ => copy_nodes(&self.gpu, &pool.nodes, &old.nodes, used)?,
            }
        }
        let top = d.free_top.max(0) as usize;
        if top > 0 {
            stream.memcpy_dtod(&old.free.slice(..top), &mut pool.free.slice_mut(..top))?;
        }
        stream.synchronize()?;
        // A grown copy in the cache is newer than the (empty) new home.
        pool.dirty = cached.is_some();
        pool.used = old.used;
        pool.cached = cached;
        desc.base = pool.base();
        desc.bump = d.bump;
        desc.free_top = d.free_top.max(0);
        desc.dropped = d.dropped;
        self.host_pools[i] = desc;
        self.pools[i] = pool;
        self.put_pools()
    }

    /// [`grow`](Self::grow) for a best-effort step (a raise or a merge that found no
    /// node, room for the index repair): a pool that cannot grow (its limit, the device
    /// budget, memory) is not an error, since those steps drop what finds no node and
    /// count it; any other failure is.
    pub(super) fn grow_best_effort(&mut self, i: usize, min_nodes: u64) -> Result<()> {
        let grown = self.grow(i, min_nodes);
        no_room_is_ok(grown)
    }

    /// [`reserve`](Self::reserve) for a best-effort step, as
    /// [`grow_best_effort`](Self::grow_best_effort).
    pub(super) fn reserve_best_effort(&mut self, i: usize, extra: u64) -> Result<()> {
        let reserved = self.reserve(i, extra);
        no_room_is_ok(reserved)
    }

    /// Makes sure pool `i` can hand out `extra` more nodes without growing in a kernel.
    pub(super) fn reserve(&mut self, i: usize, extra: u64) -> Result<()> {
        let d = self.host_pools[i];
        let room = u64::from(d.capacity) - u64::from(d.bump) + d.free_top.max(0) as u64;
        if room < extra {
            self.grow(i, u64::from(d.bump) + extra)?;
        }
        Ok(())
    }

    /// Heads for lists `ids` (None: lists 0..m) that have none, from pool 0 (shared) or
    /// (tiered) each list's own pool, which must be in the cache.
    pub(super) fn init_lists(&mut self, ids: Option<&[u32]>, m: u64) -> Result<()> {
        match (&self.tier, ids) {
            (Some(tier), Some(ids)) => {
                let own: Vec<usize> = ids.iter().filter_map(|&l| tier.pool(l as usize)).collect();
                for p in own {
                    self.reserve(p, 1)?;
                }
            }
            _ => self.reserve(0, m)?,
        }
        // The lists' pools have room for their heads.
        let call = self.over_lists("sl_init_lists_u32", ids, m)?;
        self.refresh_pools()?;
        call.check()?;
        Ok(())
    }

    /// Launches `name` (a kernel of the lists `ids`, or with None lists 0..m, one warp
    /// each: the kernel reads ids[..m], each below num_lists) and returns its status.
    fn over_lists(&mut self, name: &str, ids: Option<&[u32]>, m: u64) -> Result<CallStatus> {
        let stream = self.gpu.stream().clone();
        let kernel = self.kernel(name)?;
        let call = CallStatus::new(&self.gpu, 0)?;
        let r = self.skip_ref(call.status_ptr());
        let ids = match ids {
            Some(ids) => Some(stream.clone_htod(ids)?),
            None => None,
        };
        let m = ids.as_ref().map_or(m, |d| d.len() as u64);
        let null = 0u64;
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&r);
        match &ids {
            Some(ids) => args.arg(ids),
            None => args.arg(&null),
        };
        args.arg(&m);
        // SAFETY: the kernel reads ids[..m] (list indices below num_lists) and writes
        // those lists (and their pools, which the caller made room in).
        unsafe { args.launch(self.warps_shape(&kernel, m, 1)?) }?;
        Ok(call)
    }

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
    pub(super) fn insert_run(
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
    fn span_args<'a>(
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
    pub(super) fn over_runs(
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
    pub(super) fn compact(&mut self, pools: &[(u32, u32, usize)]) -> Result<()> {
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
    pub(super) fn bounds(&mut self, ids: Option<&[u32]>) -> Result<()> {
        if ids == Some(&[]) {
            return Ok(());
        }
        let m = self.num_lists;
        self.over_lists("sl_bounds_u32", ids, m)?.check()?;
        Ok(())
    }

    /// Tells the auxiliary list (range lists) which lists became empty or non-empty.
    pub(super) fn sync_aux(&mut self) -> Result<()> {
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

    /// Lookups: (found, values) in the caller's order.
    pub fn find(&mut self, keys: &[u32], want_values: bool) -> Result<(Vec<bool>, Vec<u32>)> {
        let n = keys.len();
        if n == 0 {
            return Ok((Vec::new(), Vec::new()));
        }
        let (k, index) = self.sorted_with_index(keys)?;
        let stream = self.gpu.stream().clone();
        let mut found = stream.alloc_zeros::<u32>(n.div_ceil(32))?;
        let mut values = stream.alloc_zeros::<u32>(if want_values { n } else { 1 })?;
        let call = CallStatus::new(&self.gpu, n)?;
        let kernel = self.kernel("sl_find_u32")?;
        self.over_runs(&k, false, &mut |lists, span| {
            let (r, ks, is, m) = lists.span_args(&call, &k, &index, span);
            let (null, failed) = (0u64, call.bits_ptr());
            let mut args = stream.launch_builder(kernel.func());
            args.arg(&r).arg(&ks).arg(&is).arg(&m);
            if want_values {
                args.arg(&mut values);
            } else {
                args.arg(&null);
            }
            args.arg(&mut found).arg(&failed);
            // SAFETY: reads keys/index[..m]; writes values[index] (when asked), found bits
            // (positions below n).
            unsafe { args.launch(lists.warps_shape(&kernel, m, lists.keys_per_warp)?) }?;
            Ok(())
        })?;
        call.check()?;
        let found = bits(&stream.clone_dtoh(&found)?, n);
        let values = if want_values {
            stream.clone_dtoh(&values)?
        } else {
            Vec::new()
        };
        Ok((found, values))
    }

    /// Successors (`down` false: smallest key >= k) or predecessors (largest key <= k).
    pub fn neighbours(&mut self, keys: &[u32], down: bool) -> Result<Vec<Option<(u32, u32)>>> {
        let n = keys.len();
        if n == 0 {
            return Ok(Vec::new());
        }
        let stream = self.gpu.stream().clone();
        // Tiered: the queries rewritten to their target ranges (those without one answer
        // none), sorted, with the targets for the runs.
        let (k, index, targets) = if self.tier.is_some() {
            let (asks, at, targets) = self.plan_neighbours(keys, down)?;
            if asks.is_empty() {
                return Ok(vec![None; n]);
            }
            (
                stream.clone_htod(&asks)?,
                stream.clone_htod(&at)?,
                Some(targets),
            )
        } else {
            let (k, index) = self.sorted_with_index(keys)?;
            (k, index, None)
        };
        let mut out_keys = stream.alloc_zeros::<u32>(n)?;
        let mut out_values = stream.alloc_zeros::<u32>(n)?;
        let mut found = stream.alloc_zeros::<u32>(n.div_ceil(32))?;
        let call = CallStatus::new(&self.gpu, n)?;
        let kernel = self.kernel("sl_neighbour_u32")?;
        let mut launch = |lists: &mut Self, span: std::ops::Range<usize>| -> Result<()> {
            let (r, ks, is, m) = lists.span_args(&call, &k, &index, span);
            let down32 = u32::from(down);
            let mut args = stream.launch_builder(kernel.func());
            args.arg(&r)
                .arg(&ks)
                .arg(&is)
                .arg(&m)
                .arg(&down32)
                .arg(&mut out_keys)
                .arg(&mut out_values)
                .arg(&mut found);
            // SAFETY: reads keys/index[..m]; writes out_keys/out_values[index], found bits
            // (positions below n).
            unsafe { args.launch(lists.warps_shape(&kernel, m, lists.keys_per_warp)?) }?;
            Ok(())
        };
        match targets {
            Some(targets) => self.tiered_runs(&targets, false, &mut launch)?,
            None => launch(self, 0..n)?,
        }
        call.check()?;
        let found = bits(&stream.clone_dtoh(&found)?, n);
        let (ks, vs) = (
            stream.clone_dtoh(&out_keys)?,
            stream.clone_dtoh(&out_values)?,
        );
        Ok((0..n).map(|i| found[i].then(|| (ks[i], vs[i]))).collect())
    }

    /// Every pair with lo <= key <= hi per query, in key order: a count pass, a scan, a
    /// collect pass (tiered: per run of the queries split by range).
    pub fn range(&mut self, ranges: &[(u32, u32)]) -> Result<Collected> {
        if self.tier.is_some() {
            return self.range_tiered(ranges);
        }
        self.range_pass(ranges)
    }

    /// [`range`](Self::range) in one pass over every list.
    pub(super) fn range_pass(&mut self, ranges: &[(u32, u32)]) -> Result<Collected> {
        let n = ranges.len();
        if n == 0 {
            return Ok(Collected {
                offsets: vec![0],
                keys: Vec::new(),
                values: Vec::new(),
            });
        }
        let stream = self.gpu.stream().clone();
        let (lo, hi): (Vec<u32>, Vec<u32>) = ranges.iter().copied().unzip();
        let (lo, hi) = (stream.clone_htod(&lo)?, stream.clone_htod(&hi)?);
        let mut counts = stream.alloc_zeros::<u64>(n)?;
        let call = CallStatus::new(&self.gpu, n)?;
        let r = self.skip_ref(call.status_ptr());
        let n64 = n as u64;
        let count = self.kernel("sl_range_count_u32")?;
        let mut args = stream.launch_builder(count.func());
        args.arg(&r).arg(&lo).arg(&hi).arg(&n64).arg(&mut counts);
        // SAFETY: reads lo/hi[..n]; writes counts[..n].
        unsafe { args.launch(self.warps_shape(&count, n64, 1)?) }?;
        let mut offsets = stream.alloc_zeros::<u64>(n)?;
        let total = primitives::exclusive_scan(&self.gpu, &counts, &mut offsets)?;
        let room = usize::try_from(total)
            .map_err(|_| gpuds_core::Error::CapacityOverflow(format!("{total} pairs")))?;
        let mut keys = stream.alloc_zeros::<u32>(room.max(1))?;
        let mut values = stream.alloc_zeros::<u32>(room.max(1))?;
        let collect = self.kernel("sl_range_collect_u32")?;
        let mut args = stream.launch_builder(collect.func());
        args.arg(&r)
            .arg(&lo)
            .arg(&hi)
            .arg(&offsets)
            .arg(&n64)
            .arg(&mut keys)
            .arg(&mut values);
        // SAFETY: query i writes counts[i] pairs from offsets[i]; the offsets are the scan
        // of the counts, so every write is below total (no update ran in between).
        unsafe { args.launch(self.warps_shape(&collect, n64, 1)?) }?;
        call.check()?;
        let mut offs: Vec<usize> = stream
            .clone_dtoh(&offsets)?
            .into_iter()
            .map(|o| o as usize)
            .collect();
        offs.push(room);
        let mut keys = stream.clone_dtoh(&keys)?;
        let mut values = stream.clone_dtoh(&values)?;
        keys.truncate(room);
        values.truncate(room);
        Ok(Collected {
            offsets: offs,
            keys,
            values,
        })
    }

    /// The first `top` entries of pool `p`'s free list. Synchronizes.
    pub fn free_list(&self, p: usize, top: usize) -> Result<Vec<u32>> {
        if top == 0 {
            return Ok(Vec::new());
        }
        Ok(self
            .gpu
            .stream()
            .clone_dtoh(&self.pools[p].free.slice(..top))?)
    }

    /// Live keys (the lists' counts). Synchronizes.
    pub fn len(&self) -> Result<u64> {
        Ok(self.list_descs()?.iter().map(|d| d.count).sum())
    }
}

/// The operations of a sorted launch (`keys` with their positions `index`) whose
/// positions are in `failed` (ascending), in the launch's order: what runs again.
pub(super) fn pick_failed(keys: &[u32], index: &[u64], failed: &[usize]) -> (Vec<u32>, Vec<u64>) {
    keys.iter()
        .zip(index)
        .filter(|&(_, &at)| failed.binary_search(&(at as usize)).is_ok())
        .map(|(&k, &at)| (k, at))
        .unzip()
}

/// The pool descriptors as device words (one zeroed descriptor when there are none: a
/// device array is never empty).
fn pool_words(descs: &[PoolDesc]) -> Vec<u32> {
    if descs.is_empty() {
        to_words(&[PoolDesc::default()])
    } else {
        to_words(descs)
    }
}

/// Copies the first `bytes` of the nodes at `from` to `to`: on the device where both are
/// device-addressable, else (tiered homes) between their pinned host memories.
/// Synchronizes.
fn copy_nodes(gpu: &Gpu, to: &Home, from: &Home, bytes: u64) -> Result<()> {
    let (dst, src) = (to.device_ptr(), from.device_ptr());
    if dst != 0 && src != 0 {
        return copy_device(gpu, dst, src, bytes);
    }
    let (dst, src) = (to.host_ptr(), from.host_ptr());
    if dst.is_null() || src.is_null() || bytes > to.bytes.min(from.bytes) {
        return Err(Error::Invalid(
            "a node pool copy between homes of different kinds".into(),
        ));
    }
    gpu.stream().synchronize()?;
    // SAFETY: both are pinned host memories of at least `bytes` bytes; no copy or kernel
    // uses them now (synchronized; the pool is out of the cache).
    unsafe { std::ptr::copy_nonoverlapping(src.cast::<u8>(), dst.cast::<u8>(), bytes as usize) };
    Ok(())
}

/// A copy between two device addresses (any placement: all are device-addressable).
fn copy_device(gpu: &Gpu, dst: u64, src: u64, bytes: u64) -> Result<()> {
    gpu.context().bind_to_thread()?;
    // SAFETY: both ranges are live allocations of at least `bytes` bytes.
    let r = unsafe {
        cudarc::driver::sys::cuMemcpyDtoD_v2(dst, src, usize::try_from(bytes).unwrap_or(usize::MAX))
    };
    if r != cudarc::driver::sys::CUresult::CUDA_SUCCESS {
        return Err(
            gpuds_core::Error::InvalidArgument(format!("a node pool copy failed: {r:?}")).into(),
        );
    }
    Ok(())
}

impl std::fmt::Debug for Lists {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lists")
            .field("num_lists", &self.num_lists)
            .field("pools", &self.host_pools)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_pool_without_room_is_ok_for_a_best_effort_step() {
        use cudarc::driver::{sys::CUresult, DriverError};
        let room = |e: Error| no_room_is_ok(Err(e)).is_ok();
        assert!(room(Error::Config("past the budget".into())));
        assert!(room(Error::HostAlloc {
            bytes: 1,
            reason: "no pinned memory".into()
        }));
        assert!(room(
            gpuds_core::Error::CapacityOverflow("limit".into()).into()
        ));
        assert!(room(
            gpuds_core::Error::OutOfMemory {
                what: "pool".into(),
                bytes: 1
            }
            .into()
        ));
        assert!(room(
            gpuds_core::Error::Driver(DriverError(CUresult::CUDA_ERROR_OUT_OF_MEMORY)).into()
        ));
        assert!(!room(
            gpuds_core::Error::Driver(DriverError(CUresult::CUDA_ERROR_LAUNCH_FAILED)).into()
        ));
        assert!(!room(Error::Invalid("broken".into())));
        assert!(no_room_is_ok(Ok(())).is_ok());
    }

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
