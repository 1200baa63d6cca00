//! [`GpuBTreeMap`], the owner: node pool, root, status words, construction, and the
//! grow-and-retry policy of the updates. The operations live in the submodules, one idea
//! each.

use std::marker::PhantomData;

use gpuds_alloc::{SlabAlloc, SlabAllocConfig};
use gpuds_core::cudarc::driver::{CudaSlice, DevicePtr, LaunchConfig, PushKernelArg};
use gpuds_core::primitives::{RadixSorter, Scanner};
use gpuds_core::{launch, Gpu, Kernel, Status, StatusWord};
use parking_lot::Mutex;

use crate::config::BTreeConfig;
use crate::error::{Error, Result};
use crate::kernels::Kernels;
use crate::keys::{TreeKey, TreeValue};
use crate::node::{NodeLayout, NULL_NODE};
use crate::tree_ref::TreeRef;
use crate::validate::TreeShape;

mod batch;
mod bulk;
mod inspect;
mod mixed;
mod query;
mod range;
mod update;

pub(crate) use batch::{batch_len, bit, query_len, same_len};
use batch::{picked, split_bound};

/// Threads per block of every launch (the kernels' launch bounds assume it).
pub(crate) const BLOCK: u32 = 256;

/// Status flag (structure bit 16) of `btree_check_increasing`: the keys of a sorted bulk
/// build are not strictly increasing.
pub(crate) const UNSORTED_INPUT: u32 = gpuds_core::Status::FIRST_STRUCTURE_BIT;

/// Shape and memory of a tree: what [`GpuBTreeMap::stats`] returns.
#[derive(Clone, Debug, PartialEq)]
pub struct BTreeStats {
    /// Height, nodes and pairs per level (leaves first).
    pub shape: TreeShape,
    /// Pairs stored.
    pub len: u64,
    /// Slab units in use (the nodes).
    pub units_in_use: u64,
    /// Slab units the pool holds.
    pub capacity_units: u64,
    /// Bytes per node (one slab unit).
    pub bytes_per_node: u32,
}

impl BTreeStats {
    /// Bytes of nodes in use.
    pub fn node_bytes(&self) -> u64 {
        self.units_in_use * self.bytes_per_node as u64
    }
}

/// A GPU ordered map from `K` to `V` (each `u32` or `u64`; every key of the type is
/// valid): the warp-cooperative B-link tree of Awad (2022), chapter 3. The node layout
/// follows from the types ([`crate::node::NodeLayout`]). See the [crate docs](crate) for the design and the semantics of
/// concurrent batches.
///
/// Every call enqueues its kernels on the GPU's stream ([`Gpu::stream`]). The `_device`
/// forms take device buffers and do not synchronize; the host forms synchronize (they
/// return the results) and check the status words.
///
/// # Examples
/// ```no_run
/// use gpuds_btree::GpuBTreeMap;
/// let gpu = gpuds_core::Gpu::new(0)?;
/// let mut tree = GpuBTreeMap::<u32, u32>::new(&gpu)?;
/// let keys: Vec<u32> = (0..1000).rev().collect();
/// tree.insert_many(&keys, &keys)?;
/// assert_eq!(tree.len()?, 1000);
/// assert_eq!(tree.range_count_many(&[(10, 19), (20, 10)])?, vec![10, 0]);
/// # Ok::<(), gpuds_btree::Error>(())
/// ```
pub struct GpuBTreeMap<K: TreeKey = u32, V: TreeValue = u32> {
    gpu: Gpu,
    config: BTreeConfig,
    layout: NodeLayout,
    pool: SlabAlloc,
    status: Mutex<StatusWord>,
    size: CudaSlice<u64>,
    root: u32,
    kernels: Kernels,
    sorter: RadixSorter,
    scanner: Scanner,
    /// Upper bound of the units in use (exact after a count, plus the most every batch
    /// since may have taken): the pool is grown only when this passes its capacity.
    used_bound: u64,
    _marker: PhantomData<(K, V)>,
}

impl<K: TreeKey, V: TreeValue> std::fmt::Debug for GpuBTreeMap<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuBTreeMap")
            .field("device", &self.gpu.info().name)
            .field("root", &self.root)
            .field("config", &self.config)
            .finish()
    }
}

impl<K: TreeKey, V: TreeValue> GpuBTreeMap<K, V> {
    /// An empty tree with the default [`BTreeConfig`].
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let tree = gpuds_btree::GpuBTreeMap::<u32, u32>::new(&gpu)?;
    /// assert!(tree.is_empty()?);
    /// # Ok::<(), gpuds_btree::Error>(())
    /// ```
    pub fn new(gpu: &Gpu) -> Result<Self> {
        Self::with_config(gpu, BTreeConfig::default())
    }

    /// An empty tree; the config is validated first. Synchronizes.
    ///
    /// ```no_run
    /// use gpuds_btree::{BTreeConfig, GpuBTreeMap};
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let config = BTreeConfig { initial_nodes: 1 << 20, query_tile: 32, ..Default::default() };
    /// let tree = GpuBTreeMap::<u32, u32>::with_config(&gpu, config)?;
    /// # let _ = tree;
    /// # Ok::<(), gpuds_btree::Error>(())
    /// ```
    pub fn with_config(gpu: &Gpu, config: BTreeConfig) -> Result<Self> {
        config.validate()?;
        let layout = NodeLayout::of::<K, V>(config.wide_node_bytes);
        let pool = SlabAlloc::new(
            gpu,
            SlabAllocConfig {
                unit_bytes: layout.node_bytes,
                initial_units: config.initial_nodes.max(1),
                max_units: config.max_nodes,
                ..Default::default()
            },
        )?;
        let kernels = Kernels::load::<K, V>(gpu, config.query_tile, config.wide_node_bytes)?;
        let mut map = Self {
            gpu: gpu.clone(),
            layout,
            pool,
            status: Mutex::new(StatusWord::new(gpu)?),
            size: gpu.stream().alloc_zeros::<u64>(1)?,
            root: NULL_NODE,
            kernels,
            sorter: RadixSorter::new(gpu)?,
            scanner: Scanner::new(gpu)?,
            used_bound: 0,
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

    /// The tree for user kernels (see [`TreeRef`]). Valid until the next call that takes
    /// `&mut self`.
    pub fn device_ref(&self) -> TreeRef<K, V> {
        let stream = self.gpu.stream();
        TreeRef {
            alloc: self.pool.device_ref(),
            root: self.root,
            max_steps: self.config.max_steps,
            status: self.status.lock().slice().device_ptr(stream).0,
            size: self.size.device_ptr(stream).0,
            types: PhantomData,
        }
    }

    /// The node layout of this tree's key and value types (and
    /// [`BTreeConfig::wide_node_bytes`]).
    pub fn node_layout(&self) -> NodeLayout {
        self.layout
    }

    /// Number of pairs. Synchronizes.
    pub fn len(&self) -> Result<usize> {
        let size = self.gpu.stream().clone_dtoh(&self.size)?;
        Ok(size.first().copied().unwrap_or(0) as usize)
    }

    /// True when the tree holds no pair. Synchronizes.
    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }

    /// Removes every pair (the pool keeps its memory). Synchronizes.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut tree = gpuds_btree::GpuBTreeMap::<u32, u32>::new(&gpu)?;
    /// tree.insert_many(&[1], &[2])?;
    /// tree.clear()?;
    /// assert!(tree.is_empty()?);
    /// # Ok::<(), gpuds_btree::Error>(())
    /// ```
    pub fn clear(&mut self) -> Result<()> {
        self.pool.reset()?;
        self.init_root()
    }

    /// Allocates the root as an empty leaf and zeroes the size.
    fn init_root(&mut self) -> Result<()> {
        let stream = self.gpu.stream().clone();
        stream.memset_zeros(&mut self.size)?;
        let mut out = stream.alloc_zeros::<u32>(1)?;
        let r = self.device_ref();
        let mut args = stream.launch_builder(self.kernels.init.func());
        args.arg(&r).arg(&mut out);
        // SAFETY: the kernel's arguments are a tree_ref and one output word.
        unsafe { args.launch(launch::shape(1, 32, 0)) }?;
        let root = stream
            .clone_dtoh(&out)?
            .first()
            .copied()
            .unwrap_or(NULL_NODE);
        self.pool.check_status()?;
        if root == NULL_NODE {
            return Err(
                gpuds_core::Error::InvalidArgument("the pool gave no root node".into()).into(),
            );
        }
        self.root = root;
        self.used_bound = 1;
        Ok(())
    }

    fn grid(&self, kernel: &Kernel, requests: usize) -> Result<LaunchConfig> {
        Ok(self
            .gpu
            .grid_for(kernel, requests.div_ceil(32).max(1) * 32, BLOCK)?)
    }

    /// Grows the pool when `extra` more units might not fit.
    fn ensure_room(&mut self, extra: u64) -> Result<()> {
        if self.used_bound.saturating_add(extra) <= self.pool.capacity_units() {
            self.used_bound += extra;
            return Ok(());
        }
        match self.pool.reserve_within_max(extra) {
            // At the maximum the bound may still be pessimistic: let the kernels try.
            Ok(()) | Err(gpuds_alloc::Error::PoolExhausted { .. }) => {}
            Err(e) => return Err(e.into()),
        }
        self.used_bound = self.pool.units_in_use()?.saturating_add(extra);
        Ok(())
    }

    /// Injects faults into the node pool (tests only: the `fault-injection` feature; see
    /// [`gpuds_alloc::faults`]); `Faults::default()` lifts them.
    #[cfg(feature = "fault-injection")]
    pub fn inject_faults(&mut self, faults: gpuds_alloc::faults::Faults) -> Result<()> {
        Ok(self.pool.inject_faults(faults)?)
    }

    /// The node pool's allocation requests since faults were injected (tests only).
    /// Synchronizes.
    #[cfg(feature = "fault-injection")]
    pub fn fault_requests(&self) -> Result<u32> {
        Ok(self.pool.fault_requests()?)
    }

    /// Reads and clears both status words (the pool's first: an exhausted pool also
    /// ends operations early). Synchronizes. The synchronizing forms clear the words
    /// before their kernels and check them after, so each reports its own failures only;
    /// after `_device` calls, this reports what all of them flagged since the last check.
    pub fn check(&self) -> Result<()> {
        let pool = self.pool.check_status();
        let own = self.status.lock().check();
        pool?;
        own?;
        Ok(())
    }

    /// Clears both status words in stream order (no synchronization): a synchronizing
    /// call does this first, so that it reports its own flags only.
    fn clear_status(&self) -> Result<()> {
        self.pool.clear_status()?;
        self.status.lock().clear()?;
        Ok(())
    }

    /// Reads and clears both status words; the flags of both. Synchronizes.
    fn take_status(&self) -> Result<Status> {
        let pool = self.pool.take_status()?;
        let own = self.status.lock().take()?;
        Ok(pool | own)
    }

    /// The error of a call whose kernels reported `flags` (not OK) and whose operations at
    /// `not_applied` failed.
    fn failure(&self, flags: Status, not_applied: Vec<usize>) -> Error {
        if !not_applied.is_empty() {
            return gpuds_core::Error::NotApplied {
                status: flags,
                not_applied,
            }
            .into();
        }
        if flags.contains(Status::POOL_EXHAUSTED) {
            return gpuds_alloc::Error::PoolExhausted {
                needed: 0,
                capacity: self.pool.capacity_units(),
                max_units: self.pool.config().max_units,
            }
            .into();
        }
        gpuds_core::Error::Status(flags).into()
    }

    /// Runs a synchronizing batch: `round(self, at)` runs the requests at
    /// the batch positions `at` (`None`: all of them) and returns the flags its kernels
    /// reported and the indices, into that round, of the requests that failed. Requests
    /// that ran out of nodes below the pool's maximum run again, alone, after the pool has
    /// grown; what still fails is named in the error ([`gpuds_core::Error::NotApplied`]).
    fn run_growing(
        &mut self,
        mut round: impl FnMut(&mut Self, Option<&[usize]>) -> Result<(Status, Vec<usize>)>,
    ) -> Result<()> {
        self.clear_status()?;
        let mut at: Option<Vec<usize>> = None;
        loop {
            let (flags, failed) = round(self, at.as_deref())?;
            if flags.is_ok() {
                return Ok(());
            }
            let not_applied: Vec<usize> = failed
                .into_iter()
                .map(|i| at.as_ref().map_or(i, |a| a[i]))
                .collect();
            if flags == Status::POOL_EXHAUSTED
                && !not_applied.is_empty()
                && self.grow_after_exhaustion(not_applied.len())?
            {
                at = Some(not_applied);
                continue;
            }
            return Err(self.failure(flags, not_applied));
        }
    }

    /// Grows the pool after a batch ran out of units, by at least its capacity (so that
    /// retries end after a few rounds); false when it is at its maximum.
    fn grow_after_exhaustion(&mut self, failed: usize) -> Result<bool> {
        let before = self.pool.capacity_units();
        match self
            .pool
            .reserve_within_max(before.max(split_bound(failed, self.layout.pairs())))
        {
            Ok(()) | Err(gpuds_alloc::Error::PoolExhausted { .. }) => {}
            // No device memory for more nodes: the batch ends naming what it did not apply.
            Err(gpuds_alloc::Error::Core(gpuds_core::Error::OutOfMemory { .. })) => {
                return Ok(false)
            }
            Err(e) => return Err(e.into()),
        }
        self.used_bound = self.pool.units_in_use()?;
        Ok(self.pool.capacity_units() > before)
    }
}
