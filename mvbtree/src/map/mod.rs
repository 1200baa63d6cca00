//! [`VersionedBTreeMap`], the owner: node pool, root, clock, version log, status words,
//! construction, the grow-and-retry policy of the updates and the version collector. The
//! operations live in the submodules, one idea each.

use std::marker::PhantomData;

use gpuds_alloc::{Collector, CollectorConfig, EbrRef, SlabAlloc, SlabAllocConfig};
use gpuds_btree::node::{NodeLayout, NULL_NODE};
use gpuds_btree::runner::{splits, BatchRunner};
use gpuds_btree::{BTreeConfig, TreeKey, TreeRef, TreeValue};
use gpuds_core::cudarc::driver::{CudaSlice, DevicePtr, LaunchConfig, PushKernelArg};
use gpuds_core::{launch, Gpu, Kernel, Status};

use crate::error::{Error, Result};
use crate::kernels::Kernels;
use crate::ops::Updates;
use crate::snapshot::{Snapshot, Snapshots};
use crate::tree_ref::VersionedTreeRef;

mod collect;
mod device;
mod inspect;
mod mixed;
mod query;
mod update;

pub(crate) use gpuds_btree::runner::{batch_len, capped_len, capped_room, same_len};

pub use device::{MvReplyBuffers, RangeOffsets};
pub use inspect::VersionStats;

/// The reclaimer config of [`VersionedBTreeMap::new`]: one slot per block of the mixed
/// batch's persistent grid, and room for 8192 units per block and epoch beyond the 128 in
/// shared memory (a block that retires more in one epoch leaves the rest allocated and
/// reports `LIMBO_FULL`).
pub const RECLAIMER: CollectorConfig = CollectorConfig {
    slots: 0,
    bag_capacity: 8192,
    poison: 0,
};

/// The timestamp argument of a query of the newest state (the heads).
pub(crate) const LATEST: u32 = u32::MAX;

/// Threads per block of every launch.
pub(crate) const BLOCK: u32 = 256;

/// A GPU ordered map from `K` to `V` (each `u32` or `u64`; every key is valid) whose
/// nodes keep older versions: the multiversion B-Tree of Awad (2022), chapter 4. It does
/// everything [`gpuds_btree::GpuBTreeMap`] does on the newest state, and takes
/// [`Snapshot`]s: queries at a snapshot see exactly the pairs present when it was taken,
/// however many updates ran since, so a range query never mixes states (§4.2.1). See the
/// [crate docs](crate) for the design.
///
/// Every call enqueues its kernels on the GPU's stream ([`Gpu::stream`]); the host forms
/// synchronize and check the status words.
///
/// # Examples
/// ```no_run
/// use gpuds_mvbtree::VersionedBTreeMap;
/// let gpu = gpuds_core::Gpu::new(0)?;
/// let mut map = VersionedBTreeMap::<u32, u32>::new(&gpu)?;
/// map.insert_many(&[1, 2, 3], &[10, 20, 30])?;
/// let s = map.snapshot()?;
/// map.insert_many(&[4], &[40])?;
/// map.remove_many(&[1])?;
/// assert_eq!(map.range_many_at(&s, &[(0, 9)])?, vec![vec![(1, 10), (2, 20), (3, 30)]]);
/// assert_eq!(map.to_vec()?, vec![(2, 20), (3, 30), (4, 40)]);
/// map.validate()?;
/// # Ok::<(), gpuds_mvbtree::Error>(())
/// ```
pub struct VersionedBTreeMap<K: TreeKey = u32, V: TreeValue = u32> {
    gpu: Gpu,
    config: BTreeConfig,
    layout: NodeLayout,
    /// The node pool, the status word and the bound of units in use (shared with
    /// `GpuBTreeMap`: see `gpuds_btree::runner`).
    runner: BatchRunner,
    size: CudaSlice<u64>,
    clock: CudaSlice<u32>,
    log: CudaSlice<u32>,
    log_len: CudaSlice<u32>,
    root: u32,
    kernels: Kernels,
    snapshots: Snapshots,
    collector: Versions,
    /// Epoch-based reclamation for versions made inside kernels (§4.4.4).
    reclaimer: Collector,
    _marker: PhantomData<(K, V)>,
}

/// What the version collector remembers between runs.
#[derive(Clone, Copy, Debug, Default)]
struct Versions {
    /// The oldest live snapshot at the last run (None: none was live, or never ran).
    last_keep: Option<u32>,
    /// The log's length after the last run.
    last_len: u32,
    /// Versions made so far (units), and freed so far.
    freed: u64,
    runs: u64,
}

impl<K: TreeKey, V: TreeValue> std::fmt::Debug for VersionedBTreeMap<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VersionedBTreeMap")
            .field("device", &self.gpu.info().name)
            .field("root", &self.root)
            .field("config", &self.config)
            .finish()
    }
}

impl<K: TreeKey, V: TreeValue> VersionedBTreeMap<K, V> {
    /// An empty map with the default [`BTreeConfig`] (its `bulk_fill` is not used; its
    /// `query_tile` sets the lanes of the host's queries). Synchronizes.
    pub fn new(gpu: &Gpu) -> Result<Self> {
        Self::with_config(gpu, BTreeConfig::default())
    }

    /// An empty map; the config is validated first. Synchronizes.
    ///
    /// ```no_run
    /// use gpuds_mvbtree::{BTreeConfig, VersionedBTreeMap};
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let config = BTreeConfig { initial_nodes: 1 << 20, ..Default::default() };
    /// let map = VersionedBTreeMap::<u64, u64>::with_config(&gpu, config)?;
    /// # let _ = map;
    /// # Ok::<(), gpuds_mvbtree::Error>(())
    /// ```
    pub fn with_config(gpu: &Gpu, config: BTreeConfig) -> Result<Self> {
        Self::with_reclaimer(gpu, config, RECLAIMER)
    }

    /// An empty map whose epoch-based reclaimer (for versions made inside kernels) has the
    /// given config: its `poison` fills reclaimed units with a word first, so that a test
    /// can show no query reads a freed version (queries report `CORRUPTED` when an older
    /// link leads to anything but an older version). `slots` 0 gives one slot per block
    /// of the mixed batch's persistent grid (the fewer the slots, the sooner an epoch
    /// passes). [`VersionedBTreeMap::new`] uses [`RECLAIMER`]. Synchronizes.
    ///
    /// ```no_run
    /// use gpuds_mvbtree::{BTreeConfig, VersionedBTreeMap};
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let reclaimer = gpuds_alloc::CollectorConfig { poison: 0xdead_beef, ..Default::default() };
    /// let map = VersionedBTreeMap::<u32, u32>::with_reclaimer(&gpu, BTreeConfig::default(), reclaimer)?;
    /// # let _ = map;
    /// # Ok::<(), gpuds_mvbtree::Error>(())
    /// ```
    pub fn with_reclaimer(
        gpu: &Gpu,
        config: BTreeConfig,
        reclaimer: CollectorConfig,
    ) -> Result<Self> {
        config.validate()?;
        let layout = NodeLayout::of::<K, V>(crate::WIDE_NODE_BYTES);
        let pool = SlabAlloc::new(
            gpu,
            SlabAllocConfig {
                unit_bytes: layout.node_bytes,
                initial_units: config.initial_nodes.max(1),
                max_units: config.max_nodes,
                ..Default::default()
            },
        )?;
        let stream = gpu.stream();
        let log_cap = log_capacity(pool.capacity_units())?;
        let kernels = Kernels::load::<K, V>(gpu, config.query_tile)?;
        let mut reclaimer = reclaimer;
        if reclaimer.slots == 0 {
            reclaimer.slots = gpu.persistent_grid(&kernels.apply, BLOCK, 0)?.grid_dim.0;
        }
        let mut map = Self {
            gpu: gpu.clone(),
            layout,
            size: stream.alloc_zeros::<u64>(1)?,
            clock: stream.alloc_zeros::<u32>(1)?,
            log: stream.alloc_zeros::<u32>(log_cap as usize)?,
            log_len: stream.alloc_zeros::<u32>(1)?,
            root: NULL_NODE,
            kernels,
            snapshots: Snapshots::new(),
            collector: Versions::default(),
            reclaimer: Collector::new(gpu, reclaimer)?,
            runner: BatchRunner::new(gpu, pool)?,
            config,
            _marker: PhantomData,
        };
        map.init_root()?;
        Ok(map)
    }

    /// The configuration.
    pub fn config(&self) -> &BTreeConfig {
        &self.config
    }

    /// The node layout (the B-Tree's for these types; one pair of each node holds the
    /// version, see [`crate::node`]).
    pub fn node_layout(&self) -> NodeLayout {
        self.layout
    }

    /// The tree for user kernels, with updates in `mode` (see [`VersionedTreeRef`]):
    /// [`Updates::OutOfPlace`] when the kernel takes snapshots while it updates.
    ///
    /// The ref borrows the map, so the borrow checker refuses any call that takes `&mut
    /// self` (an update, [`VersionedBTreeMap::collect_versions`], a snapshot) while it
    /// lives: a ref fetched before a host snapshot would not know the snapshot, and
    /// in-place updates through it would change nodes the snapshot reads. Fetch it again
    /// after such a call:
    ///
    /// ```no_run
    /// use gpuds_mvbtree::{Updates, VersionedBTreeMap};
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = VersionedBTreeMap::<u32, u32>::new(&gpu)?;
    /// let r = map.device_ref(Updates::InPlace);
    /// assert_eq!(r.copy_below, 0); // no snapshot: in-place updates copy nothing
    /// // ... launch kernels with r ...
    /// let s = map.snapshot()?;
    /// let r = map.device_ref(Updates::InPlace); // knows s
    /// assert_eq!(r.copy_below, s.timestamp() + 1);
    /// # Ok::<(), gpuds_mvbtree::Error>(())
    /// ```
    ///
    /// Using a ref fetched before the snapshot does not compile:
    ///
    /// ```compile_fail,E0502
    /// use gpuds_mvbtree::{Updates, VersionedBTreeMap};
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = VersionedBTreeMap::<u32, u32>::new(&gpu)?;
    /// let r = map.device_ref(Updates::InPlace);
    /// let s = map.snapshot()?; // error: `map` is borrowed by `r`
    /// assert_eq!(r.copy_below, 0);
    /// # let _ = s;
    /// # Ok::<(), gpuds_mvbtree::Error>(())
    /// ```
    pub fn device_ref(&self, mode: Updates) -> VersionedTreeRef<'_, K, V> {
        self.tree_ref(mode)
    }

    /// The tree ref of the map's own launches, without the borrow: each is passed to its
    /// kernel at once, before anything can change the map.
    fn tree_ref(&self, mode: Updates) -> VersionedTreeRef<'static, K, V> {
        let stream = self.gpu.stream();
        VersionedTreeRef {
            tree: TreeRef {
                alloc: self.runner.pool().device_ref(),
                root: self.root,
                max_steps: self.config.max_steps,
                status: self.runner.status().slice().device_ptr(stream).0,
                size: self.size.device_ptr(stream).0,
                types: PhantomData,
            },
            clock: self.clock.device_ptr(stream).0,
            copy_below: self.snapshots.bounds().map_or(0, |(_, newest)| newest + 1),
            mode: mode.code(),
            log: self.log.device_ptr(stream).0,
            log_len: self.log_len.device_ptr(stream).0,
            log_cap: self.log.len() as u32,
            now: crate::node::UNSET_TS,
            map: PhantomData,
        }
    }

    /// Number of pairs (newest state). Synchronizes.
    pub fn len(&self) -> Result<usize> {
        let size = self.gpu.stream().clone_dtoh(&self.size)?;
        Ok(size.first().copied().unwrap_or(0) as usize)
    }

    /// True when the newest state holds no pair. Synchronizes.
    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }

    /// Takes a snapshot of the newest state (a device-wide barrier: it runs after every
    /// kernel enqueued before it on the map's stream). It takes `&mut self` because it
    /// changes what in-place updates must copy: no [`VersionedTreeRef`] fetched before it
    /// can be used after it (see [`VersionedBTreeMap::device_ref`]). Synchronizes.
    ///
    /// Fails with [`Error::ClockExhausted`] after 2^31 - 2 snapshots (timestamps are 31 bits).
    pub fn snapshot(&mut self) -> Result<Snapshot> {
        let ts = self.launch_snapshot(self.gpu.stream(), Updates::InPlace)?;
        let flags = self.runner.status().take()?;
        if ts == crate::node::UNSET_TS || flags.contains(Status(crate::CLOCK_FULL)) {
            return Err(Error::ClockExhausted);
        }
        flags.into_result()?;
        Ok(self.snapshots.hold(ts))
    }

    /// Takes a snapshot on `stream` (an on-stream snapshot, §4.3.2): it runs after the
    /// work enqueued before it on `stream` and may run while update kernels run on other
    /// streams, which must then update out of place ([`Updates::OutOfPlace`], e.g.
    /// [`VersionedBTreeMap::insert_many_device`]): their changes are each in the snapshot
    /// entirely or not at all. Takes `&mut self` as [`VersionedBTreeMap::snapshot`] does
    /// (kernels already launched keep running). Synchronizes `stream` only.
    ///
    /// ```no_run
    /// use gpuds_mvbtree::{Updates, VersionedBTreeMap};
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = VersionedBTreeMap::<u32, u32>::new(&gpu)?;
    /// let keys = gpu.stream().clone_htod(&[1u32, 2, 3])?;
    /// map.insert_many_device(&keys, &keys, Updates::OutOfPlace)?; // on the map's stream
    /// let side = gpu.new_stream()?;
    /// let s = map.snapshot_on(&side)?; // may land before, between or after the inserts
    /// map.check()?;
    /// let n = map.range_count_many_at(&s, &[(0, 9)])?[0];
    /// assert!(n <= 3);
    /// # Ok::<(), gpuds_mvbtree::Error>(())
    /// ```
    pub fn snapshot_on(
        &mut self,
        stream: &std::sync::Arc<gpuds_core::cudarc::driver::CudaStream>,
    ) -> Result<Snapshot> {
        let ts = self.launch_snapshot(stream, Updates::OutOfPlace)?;
        if ts == crate::node::UNSET_TS {
            return Err(Error::ClockExhausted);
        }
        Ok(self.snapshots.hold(ts))
    }

    /// Takes one snapshot on `stream` (the tree ref in `mode`) and waits for its
    /// timestamp: `UNSET_TS` when the clock is exhausted. Synchronizes `stream`.
    fn launch_snapshot(
        &self,
        stream: &std::sync::Arc<gpuds_core::cudarc::driver::CudaStream>,
        mode: Updates,
    ) -> Result<u32> {
        let mut out = stream.alloc_zeros::<u32>(1)?;
        let r = self.tree_ref(mode);
        let mut args = stream.launch_builder(self.kernels.snapshot.func());
        args.arg(&r).arg(&mut out);
        // SAFETY: the kernel's arguments are the tree ref and one output word.
        unsafe { args.launch(launch::shape(1, 32, 0)) }?;
        Ok(stream
            .clone_dtoh(&out)?
            .first()
            .copied()
            .unwrap_or(crate::node::UNSET_TS))
    }

    /// The epoch-based reclaimer for user kernels that update through
    /// [`VersionedBTreeMap::device_ref`] with an `ebr_block` (gpuds/alloc/ebr.cuh; see
    /// `versioned_tree_ref::insert` with a reclaimer): such a kernel runs as a persistent
    /// grid of at most [`VersionedBTreeMap::reclaimer_slots`] blocks. Call
    /// [`VersionedBTreeMap::collect_versions`] after it, which also hands back what is still
    /// in limbo.
    pub fn reclaimer_ref(&self) -> EbrRef {
        self.reclaimer.device_ref(self.runner.pool())
    }

    /// The most blocks a kernel that reclaims may run with.
    pub fn reclaimer_slots(&self) -> u32 {
        self.reclaimer.slots()
    }

    /// The timestamps of the live snapshots, ascending.
    pub fn live_snapshots(&self) -> Vec<u32> {
        self.snapshots.timestamps()
    }

    /// Reads and clears the status words: the pool's, the tree's and the reclaimer's.
    /// Synchronizes.
    pub fn check(&self) -> Result<()> {
        let tree = self.runner.check();
        let reclaimer = self.reclaimer.check_status();
        tree?;
        reclaimer?;
        Ok(())
    }

    /// Allocates the root as an empty leaf and zeroes the size and the log.
    fn init_root(&mut self) -> Result<()> {
        let stream = self.gpu.stream().clone();
        stream.memset_zeros(&mut self.size)?;
        stream.memset_zeros(&mut self.log_len)?;
        let mut out = stream.alloc_zeros::<u32>(1)?;
        let r = self.tree_ref(Updates::InPlace);
        let mut args = stream.launch_builder(self.kernels.init.func());
        args.arg(&r).arg(&mut out);
        // SAFETY: the kernel's arguments are the tree ref and one output word.
        unsafe { args.launch(launch::shape(1, 32, 0)) }?;
        let root = stream
            .clone_dtoh(&out)?
            .first()
            .copied()
            .unwrap_or(NULL_NODE);
        self.runner.pool().check_status()?;
        if root == NULL_NODE {
            return Err(
                gpuds_core::Error::InvalidArgument("the pool gave no root node".into()).into(),
            );
        }
        self.root = root;
        self.runner.set_used(1);
        self.collector.last_len = 0;
        Ok(())
    }

    fn grid(&self, kernel: &Kernel, requests: usize) -> Result<LaunchConfig> {
        Ok(self
            .gpu
            .grid_for(kernel, requests.div_ceil(32).max(1) * 32, BLOCK)?)
    }

    /// Grows the pool when `extra` more units might not fit, and the log with it.
    fn ensure_room(&mut self, extra: u64) -> Result<()> {
        self.runner.ensure_room(extra)?;
        self.grow_log()
    }

    /// Keeps the log able to name every unit of the pool (a head is logged at most once).
    fn grow_log(&mut self) -> Result<()> {
        let cap = log_capacity(self.runner.pool().capacity_units())?;
        if cap as usize <= self.log.len() {
            return Ok(());
        }
        let stream = self.gpu.stream().clone();
        let mut log = stream.alloc_zeros::<u32>(cap as usize)?;
        stream.memcpy_dtod(&self.log, &mut log.slice_mut(..self.log.len()))?;
        self.log = log;
        Ok(())
    }

    /// Runs a synchronizing update batch through the runner
    /// ([`gpuds_btree::runner::run_growing`]): requests that ran out of nodes below the
    /// pool's maximum run again after it grew (by three units per failed request and 64:
    /// a split may copy the nodes it changes; the next round's `ensure_room` grows the
    /// log to match); then the version collector runs.
    fn run_growing(
        &mut self,
        round: impl FnMut(&mut Self, Option<&[usize]>) -> Result<(Status, Vec<usize>)>,
    ) -> Result<()> {
        gpuds_btree::runner::run_growing(
            self,
            |map| &mut map.runner,
            |failed| 3 * failed as u64 + 64,
            round,
            Self::collect_if_due,
        )
    }
}

/// Entries of a log for a pool of `units` (one per unit).
fn log_capacity(units: u64) -> Result<u32> {
    Ok(gpuds_core::size::u32_len(
        units.max(1) as usize,
        "version log entries",
    )?)
}

/// Nodes a batch of `n` insertions into nodes of `pairs` pairs may add (the B-Tree's
/// bound: one leaf split per insertion, an upper split per `pairs / 2 - 1` below it),
/// and when versions may be made, a copy of every node changed.
pub(crate) fn node_bound(n: usize, pairs: usize, copies: bool) -> u64 {
    let per_copy = if copies { 3 } else { 1 };
    n as u64 + per_copy * splits(n, pairs)
}

/// The snapshot's timestamp, checked to belong to `snaps`.
pub(crate) fn at(snaps: &Snapshots, snap: &Snapshot) -> Result<u32> {
    snaps.check(snap)
}
