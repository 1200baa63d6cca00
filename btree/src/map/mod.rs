//! [`GpuBTreeMap`], the owner: node pool, root, status words, construction, and the
//! grow-and-retry policy of the updates. The operations live in the submodules, one idea
//! each.

use std::marker::PhantomData;

use gpuds_alloc::{SlabAlloc, SlabAllocConfig};
use gpuds_core::cudarc::driver::{CudaSlice, DevicePtr, LaunchConfig, PushKernelArg};
use gpuds_core::primitives::{RadixSorter, Scanner};
use gpuds_core::{launch, Gpu, Kernel, Status};

use crate::config::BTreeConfig;
use crate::error::{Error, Result};
use crate::kernels::Kernels;
use crate::keys::{TreeKey, TreeValue};
use crate::node::{NodeLayout, NULL_NODE};
use crate::runner::{picked, split_bound, BatchRunner};
use crate::tree_ref::TreeRef;
use crate::validate::TreeShape;

mod batch;
mod bulk;
mod inspect;
mod mixed;
mod query;
mod range;
mod update;

pub(crate) use crate::runner::{batch_len, same_len};
pub(crate) use batch::{bit, query_len};

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
    /// The node pool, the status word and the bound of units in use: the pool is grown
    /// only when that bound (exact after a count, plus the most every batch since may
    /// have taken) passes its capacity.
    runner: BatchRunner,
    size: CudaSlice<u64>,
    root: u32,
    kernels: Kernels,
    sorter: RadixSorter,
    scanner: Scanner,
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
            runner: BatchRunner::new(gpu, pool)?,
            size: gpu.stream().alloc_zeros::<u64>(1)?,
            root: NULL_NODE,
            kernels,
            sorter: RadixSorter::new(gpu)?,
            scanner: Scanner::new(gpu)?,
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
            alloc: self.runner.pool().device_ref(),
            root: self.root,
            max_steps: self.config.max_steps,
            status: self.runner.status().slice().device_ptr(stream).0,
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
        self.runner.pool_mut().reset()?;
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
        self.runner.pool().check_status()?;
        if root == NULL_NODE {
            return Err(
                gpuds_core::Error::InvalidArgument("the pool gave no root node".into()).into(),
            );
        }
        self.root = root;
        self.runner.set_used(1);
        Ok(())
    }

    fn grid(&self, kernel: &Kernel, requests: usize) -> Result<LaunchConfig> {
        Ok(self
            .gpu
            .grid_for(kernel, requests.div_ceil(32).max(1) * 32, BLOCK)?)
    }

    /// Injects faults into the node pool (tests only: the `fault-injection` feature; see
    /// [`gpuds_alloc::faults`]); `Faults::default()` lifts them.
    #[cfg(feature = "fault-injection")]
    pub fn inject_faults(&mut self, faults: gpuds_alloc::faults::Faults) -> Result<()> {
        Ok(self.runner.pool_mut().inject_faults(faults)?)
    }

    /// The node pool's allocation requests since faults were injected (tests only).
    /// Synchronizes.
    #[cfg(feature = "fault-injection")]
    pub fn fault_requests(&self) -> Result<u32> {
        Ok(self.runner.pool().fault_requests()?)
    }

    /// Reads and clears both status words (the pool's first: an exhausted pool also
    /// ends operations early). Synchronizes. The synchronizing forms clear the words
    /// before their kernels and check them after, so each reports its own failures only;
    /// after `_device` calls, this reports what all of them flagged since the last check.
    pub fn check(&self) -> Result<()> {
        self.runner.check()
    }

    /// Runs a synchronizing batch through the runner ([`crate::runner::run_growing`]):
    /// requests that ran out of nodes below the pool's maximum run again after it grew by
    /// the nodes they may split into.
    fn run_growing(
        &mut self,
        round: impl FnMut(&mut Self, Option<&[usize]>) -> Result<(Status, Vec<usize>)>,
    ) -> Result<()> {
        let pairs = self.layout.pairs();
        crate::runner::run_growing(
            self,
            |tree| &mut tree.runner,
            |failed| split_bound(failed, pairs),
            round,
            |_| Ok(()),
        )
    }
}
