//! [`Lists`]: the engine under both skip lists. An array of device skip lists (one for a
//! [`SkipList`](super::SkipList), one per range for a
//! [`RangeSkipList`](super::RangeSkipList)) over node pools in a placement; batches
//! sorted on the device, node pools grown between kernels, dead nodes compacted away
//! after removals.

use cudarc::driver::{CudaSlice, DevicePtr, LaunchConfig, PushKernelArg};
use gpuds_core::failures::CallStatus;
use gpuds_core::primitives::{self, RadixSorter};
use gpuds_core::{Gpu, Kernel, Module, Status};

use super::layout::{
    from_words, to_words, ListDesc, PoolDesc, SkipRef, MAX_POOL_NODES, NODE_BYTES,
};
use crate::batch::bits;
use crate::error::{Error, Result};
use crate::placement::{Placement, Region};

/// Threads per block of the skip-list kernels.
const BLOCK: u32 = 256;
/// Reruns of the operations of an insertion batch whose nodes ran out (each after the
/// pools grew).
const RERUNS: usize = 40;

/// One pool of super-nodes and its free list.
pub(crate) struct NodePool {
    pub nodes: Region,
    free: CudaSlice<u32>,
    /// One lock word per node, in device memory whatever the placement (the kernels
    /// reach it through the pool descriptor; held here to own it).
    _locks: CudaSlice<u32>,
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
    pub initial_nodes: u64,
    pub with_aux: bool,
}

pub(crate) struct Lists {
    pub gpu: Gpu,
    module: Module,
    pub pools: Vec<NodePool>,
    pool_descs: CudaSlice<u32>,
    pub host_pools: Vec<PoolDesc>,
    lists: CudaSlice<u32>,
    pub num_lists: u64,
    pub shift: u32,
    pub keys_per_warp: u32,
    pub aux: Option<Box<Lists>>,
    sorter: RadixSorter,
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
            initial_nodes,
            with_aux,
        } = shape;
        let module = gpu.load(&crate::kernels::skiplist_program())?;
        let stream = gpu.stream();
        let mut pools = Vec::with_capacity(placements.len());
        let mut host_pools = Vec::with_capacity(placements.len());
        for &placement in placements {
            let capacity = initial_nodes.clamp(16, MAX_POOL_NODES);
            let nodes = Region::new(gpu, placement, capacity * NODE_BYTES)?;
            let free = stream.alloc_zeros::<u32>(capacity as usize)?;
            let locks = stream.alloc_zeros::<u32>(capacity as usize)?;
            host_pools.push(PoolDesc {
                base: nodes.device_ptr(),
                free_list: free.device_ptr(stream).0,
                locks: locks.device_ptr(stream).0,
                capacity: capacity as u32,
                ..Default::default()
            });
            pools.push(NodePool {
                nodes,
                free,
                _locks: locks,
            });
        }
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
                    initial_nodes: 64,
                    with_aux: false,
                },
            )?))
        } else {
            None
        };
        let mut lists = Self {
            gpu: gpu.clone(),
            module,
            pool_descs: stream.clone_htod(&to_words(&host_pools))?,
            host_pools,
            pools,
            lists: stream.clone_htod(&to_words(&descs))?,
            num_lists,
            shift,
            keys_per_warp,
            aux,
            sorter: RadixSorter::new(gpu)?,
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

    fn kernel(&self, name: &str) -> Result<Kernel> {
        Ok(self.module.kernel(name)?)
    }

    /// A grid of one warp per `per` operations (at most the resident warps).
    fn warps_shape(&self, kernel: &Kernel, ops: u64, per: u32) -> Result<LaunchConfig> {
        let warps = ops.div_ceil(u64::from(per.max(1))).max(1);
        let threads = usize::try_from(warps.saturating_mul(32)).unwrap_or(usize::MAX);
        Ok(self.gpu.grid_for(kernel, threads, BLOCK)?)
    }

    /// The list descriptors as the device has them. Synchronizes.
    pub fn list_descs(&self) -> Result<Vec<ListDesc>> {
        Ok(from_words(&self.gpu.stream().clone_dtoh(&self.lists)?))
    }

    fn put_list_descs(&mut self, descs: &[ListDesc]) -> Result<()> {
        let words = to_words(descs);
        self.gpu.stream().memcpy_htod(&words, &mut self.lists)?;
        Ok(())
    }

    /// Reads the pools back after a kernel, clamping the overshoot of failed allocations
    /// (bump past capacity, free_top below zero). Returns the pools that ran out.
    fn refresh_pools(&mut self) -> Result<Vec<usize>> {
        let stream = self.gpu.stream().clone();
        let mut descs: Vec<PoolDesc> = from_words(&stream.clone_dtoh(&self.pool_descs)?);
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
        stream.memcpy_htod(&to_words(&self.host_pools), &mut self.pool_descs)?;
        Ok(out)
    }

    /// Grows pool `i` to at least `min_nodes` (at least doubling): a new region in the
    /// same placement, the used nodes and the free list copied over. Nothing changes on
    /// failure.
    fn grow(&mut self, i: usize, min_nodes: u64) -> Result<()> {
        let d = self.host_pools[i];
        let capacity = min_nodes.max(u64::from(d.capacity) * 2).min(MAX_POOL_NODES);
        if capacity <= u64::from(d.capacity) {
            return Err(gpuds_core::Error::CapacityOverflow(format!(
                "a skip-list node pool is at its limit of {MAX_POOL_NODES} nodes"
            ))
            .into());
        }
        let stream = self.gpu.stream().clone();
        let placement = self.pools[i].nodes.placement();
        let nodes = Region::new(&self.gpu, placement, capacity * NODE_BYTES)?;
        let mut free = stream.alloc_zeros::<u32>(capacity as usize)?;
        // Every lock is free between kernels: the new words start at zero.
        let locks = stream.alloc_zeros::<u32>(capacity as usize)?;
        let used = u64::from(d.bump) * NODE_BYTES;
        if used > 0 {
            copy_device(
                &self.gpu,
                nodes.device_ptr(),
                self.pools[i].nodes.device_ptr(),
                used,
            )?;
        }
        let top = d.free_top.max(0) as usize;
        if top > 0 {
            stream.memcpy_dtod(&self.pools[i].free.slice(..top), &mut free.slice_mut(..top))?;
        }
        stream.synchronize()?;
        self.host_pools[i].base = nodes.device_ptr();
        self.host_pools[i].free_list = free.device_ptr(&stream).0;
        self.host_pools[i].locks = locks.device_ptr(&stream).0;
        self.host_pools[i].capacity = capacity as u32;
        self.pools[i] = NodePool {
            nodes,
            free,
            _locks: locks,
        };
        stream.memcpy_htod(&to_words(&self.host_pools), &mut self.pool_descs)?;
        Ok(())
    }

    /// Makes sure pool `i` can hand out `extra` more nodes without growing in a kernel.
    fn reserve(&mut self, i: usize, extra: u64) -> Result<()> {
        let d = self.host_pools[i];
        let room = u64::from(d.capacity) - u64::from(d.bump) + d.free_top.max(0) as u64;
        if room < extra {
            self.grow(i, u64::from(d.bump) + extra)?;
        }
        Ok(())
    }

    /// Heads for lists `ids` (None: lists 0..m) that have none.
    fn init_lists(&mut self, ids: Option<&CudaSlice<u32>>, m: u64) -> Result<()> {
        self.reserve(0, m)?;
        let kernel = self.kernel("sl_init_lists_u32")?;
        let call = CallStatus::new(&self.gpu, 0)?;
        let r = self.skip_ref(call.status_ptr());
        let stream = self.gpu.stream().clone();
        let null = 0u64;
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&r);
        match ids {
            Some(ids) => args.arg(ids),
            None => args.arg(&null),
        };
        args.arg(&m);
        // SAFETY: reads ids[..m] (each a list index below num_lists); writes those lists'
        // heads from pool 0, which has room for m nodes.
        unsafe { args.launch(self.warps_shape(&kernel, m, 1)?) }?;
        self.refresh_pools()?;
        call.check()?;
        Ok(())
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
        let d = stream.clone_htod(&ids)?;
        self.init_lists(Some(&d), ids.len() as u64)
    }

    /// Inserts or replaces a batch (sorted here), or with `add` adds each value to its
    /// key's (inserting absent keys with it). An operation that found no free node for a
    /// split applied nothing and is marked failed: its pools grow and only the failed
    /// operations run again, so every operation applies exactly once.
    pub fn insert(
        &mut self,
        mut keys: CudaSlice<u32>,
        mut values: CudaSlice<u32>,
        add: bool,
    ) -> Result<()> {
        let n = keys.len();
        if n == 0 {
            return Ok(());
        }
        self.sorter.sort_pairs(&mut keys, &mut values)?;
        self.prepare(&keys)?;
        // About one new data node per 15 keys, one index node per 15 data nodes.
        let data_guess = n as u64 / 12 + 64;
        self.reserve(0, data_guess)?;
        if self.pools.len() > 1 {
            self.reserve(1, data_guess / 10 + 16)?;
        }
        let kernel = self.kernel("sl_insert_u32")?;
        let stream = self.gpu.stream().clone();
        for _ in 0..RERUNS {
            let m = keys.len();
            let call = CallStatus::new(&self.gpu, m)?;
            let r = self.skip_ref(call.status_ptr());
            let (m64, add32, failed) = (m as u64, u32::from(add), call.bits_ptr());
            let mut args = stream.launch_builder(kernel.func());
            args.arg(&r)
                .arg(&keys)
                .arg(&values)
                .arg(&m64)
                .arg(&add32)
                .arg(&failed);
            // SAFETY: reads keys/values[..m]; writes the lists and their pools.
            unsafe { args.launch(self.warps_shape(&kernel, m64, self.keys_per_warp)?) }?;
            let out = self.refresh_pools()?;
            let status = call.status()?;
            if status.is_ok() {
                // A raise dropped for want of a node applied nothing to lose: grow that
                // pool for next time, best effort.
                for i in out {
                    let cap = u64::from(self.host_pools[i].capacity);
                    let _ = self.grow(i, cap * 2);
                }
                return self.sync_aux();
            }
            let again = call.not_applied()?;
            if out.is_empty() || again.is_empty() || status != Status::POOL_EXHAUSTED {
                // Only a shortage of nodes is retried; anything else is the call's error.
                self.sync_aux()?;
                call.check()?;
                return Ok(());
            }
            for i in out {
                let cap = u64::from(self.host_pools[i].capacity);
                self.grow(i, cap * 2)?;
            }
            let (hk, hv) = (stream.clone_dtoh(&keys)?, stream.clone_dtoh(&values)?);
            let pick = |from: &[u32]| again.iter().map(|&i| from[i]).collect::<Vec<u32>>();
            keys = stream.clone_htod(&pick(&hk))?;
            values = stream.clone_htod(&pick(&hv))?;
        }
        self.sync_aux()?;
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
        let r = self.skip_ref(call.status_ptr());
        let (n64, failed) = (n as u64, call.bits_ptr());
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&r)
            .arg(&k)
            .arg(&index)
            .arg(&n64)
            .arg(&mut removed)
            .arg(&failed);
        // SAFETY: reads keys/index[..n]; writes the lists, their pools, the removed bits.
        unsafe { args.launch(self.warps_shape(&kernel, n64, self.keys_per_warp)?) }?;
        let removed = bits(&stream.clone_dtoh(&removed)?, n);
        // A merge or raise skipped for want of a node is not an error: grow for next time,
        // best effort. The removals have applied: compaction, bounds and the auxiliary
        // list are brought up to date before any error of the call is returned.
        for i in self.refresh_pools()? {
            let cap = u64::from(self.host_pools[i].capacity);
            let _ = self.grow(i, cap * 2);
        }
        self.after_erase()?;
        call.check()?;
        Ok(removed)
    }

    /// Compaction (when a merge left dead nodes), bounds, auxiliary list.
    fn after_erase(&mut self) -> Result<()> {
        let mut descs = self.list_descs()?;
        if descs.iter().any(|d| d.dead != 0) {
            self.compact()?;
            // Re-read: the compaction kernels do not touch the descriptors, but keep the
            // host copy exact before writing it back.
            descs = self.list_descs()?;
            for d in &mut descs {
                d.dead = 0;
            }
            self.put_list_descs(&descs)?;
        }
        if descs.iter().any(|d| d.bounds_dirty != 0) {
            let kernel = self.kernel("sl_bounds_u32")?;
            let call = CallStatus::new(&self.gpu, 0)?;
            let r = self.skip_ref(call.status_ptr());
            let stream = self.gpu.stream().clone();
            let mut args = stream.launch_builder(kernel.func());
            args.arg(&r);
            // SAFETY: reads the lists; writes their bounds.
            unsafe { args.launch(self.warps_shape(&kernel, self.num_lists, 1)?) }?;
            call.check()?;
        }
        self.sync_aux()
    }

    /// Unlinks dead nodes and frees them (sl_compact over every pool).
    fn compact(&mut self) -> Result<()> {
        self.refresh_pools()?;
        let kernel = self.kernel("sl_compact_u32")?;
        let call = CallStatus::new(&self.gpu, 0)?;
        let r = self.skip_ref(call.status_ptr());
        let stream = self.gpu.stream().clone();
        for p in 0..self.pools.len() {
            let count = u64::from(self.host_pools[p].bump);
            if count == 0 {
                continue;
            }
            let p32 = p as u32;
            let mut args = stream.launch_builder(kernel.func());
            args.arg(&r).arg(&p32).arg(&count);
            // SAFETY: reads nodes [0, count) of pool p (all initialized), rewrites links,
            // pushes dead nodes on the pool's free list (room for every node).
            unsafe { args.launch(self.warps_shape(&kernel, count, 1)?) }?;
        }
        self.refresh_pools()?;
        call.check()?;
        Ok(())
    }

    /// Tells the auxiliary list (range lists) which lists became empty or non-empty.
    fn sync_aux(&mut self) -> Result<()> {
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
            aux.insert(stream.clone_htod(&k)?, dv, false)?;
            told.push((k, 1u32));
        }
        if c[1] > 0 {
            let k = stream.clone_dtoh(&drop.slice(..c[1] as usize))?;
            aux.erase(&k)?;
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
        let r = self.skip_ref(call.status_ptr());
        let (n64, null, failed) = (n as u64, 0u64, call.bits_ptr());
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&r).arg(&k).arg(&index).arg(&n64);
        if want_values {
            args.arg(&mut values);
        } else {
            args.arg(&null);
        }
        args.arg(&mut found).arg(&failed);
        // SAFETY: reads keys/index[..n]; writes values[index] (when asked), found bits.
        unsafe { args.launch(self.warps_shape(&kernel, n64, self.keys_per_warp)?) }?;
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
        let (k, index) = self.sorted_with_index(keys)?;
        let stream = self.gpu.stream().clone();
        let mut out_keys = stream.alloc_zeros::<u32>(n)?;
        let mut out_values = stream.alloc_zeros::<u32>(n)?;
        let mut found = stream.alloc_zeros::<u32>(n.div_ceil(32))?;
        let call = CallStatus::new(&self.gpu, n)?;
        let kernel = self.kernel("sl_neighbour_u32")?;
        let r = self.skip_ref(call.status_ptr());
        let (n64, down32) = (n as u64, u32::from(down));
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&r)
            .arg(&k)
            .arg(&index)
            .arg(&n64)
            .arg(&down32)
            .arg(&mut out_keys)
            .arg(&mut out_values)
            .arg(&mut found);
        // SAFETY: reads keys/index[..n]; writes out_keys/out_values[index], found bits.
        unsafe { args.launch(self.warps_shape(&kernel, n64, self.keys_per_warp)?) }?;
        call.check()?;
        let found = bits(&stream.clone_dtoh(&found)?, n);
        let (ks, vs) = (
            stream.clone_dtoh(&out_keys)?,
            stream.clone_dtoh(&out_values)?,
        );
        Ok((0..n).map(|i| found[i].then(|| (ks[i], vs[i]))).collect())
    }

    /// Every pair with lo <= key <= hi per query, in key order: a count pass, a scan, a
    /// collect pass.
    pub fn range(&mut self, ranges: &[(u32, u32)]) -> Result<Collected> {
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
