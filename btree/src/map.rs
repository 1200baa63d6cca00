//! [`GpuBTreeMap`], the owner: node pool, root, status word and the batch operations.

use std::marker::PhantomData;

use gpuds_alloc::{SlabAlloc, SlabAllocConfig};
use gpuds_core::cudarc::driver::{CudaSlice, DevicePtr, LaunchConfig, PushKernelArg};
use gpuds_core::failures::indices;
use gpuds_core::primitives::{exclusive_scan, RadixSorter, Scanner};
use gpuds_core::{launch, DeviceKey, DeviceValue, Gpu, Kernel, Status, StatusWord};
use parking_lot::Mutex;

use crate::config::BTreeConfig;
use crate::error::{Error, Result};
use crate::kernels::Kernels;
use crate::node::{Node, NODE_BYTES, NULL_NODE};
use crate::ops::{Ranges, TreeOp, TreeReply};
use crate::tree_ref::TreeRef;
use crate::validate::{bulk_shape, walk, TreeShape};

/// Threads per block of every launch (the kernels' launch bounds assume it).
pub(crate) const BLOCK: u32 = 256;

/// Status flag (structure bit 16) of `btree_check_increasing`: the keys of a sorted bulk
/// build are not strictly increasing.
const UNSORTED_INPUT: u32 = gpuds_core::Status::FIRST_STRUCTURE_BIT;

mod sealed {
    pub trait Sealed {}
    impl Sealed for u32 {}
}

/// A key type of [`GpuBTreeMap`]: `u32` (every value is a valid key). Sealed; `u64` keys
/// need a node layout of their own and are not offered yet.
pub trait TreeKey: DeviceKey + sealed::Sealed {}
impl TreeKey for u32 {}

/// A value type of [`GpuBTreeMap`]: `u32`. Sealed.
pub trait TreeValue: DeviceValue + PartialEq + Default + sealed::Sealed {
    /// The value type holding a key (the upper bound of a count in a mixed batch).
    fn from_key<K: TreeKey>(k: K) -> Self;
}
impl TreeValue for u32 {
    fn from_key<K: TreeKey>(k: K) -> Self {
        k.to_u64() as u32
    }
}

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
}

impl BTreeStats {
    /// Bytes of nodes in use.
    pub fn node_bytes(&self) -> u64 {
        self.units_in_use * NODE_BYTES as u64
    }
}

/// A GPU ordered map from `K` to `V` (both `u32`): the warp-cooperative B-link tree of
/// Awad (2022), chapter 3. See the [crate docs](crate) for the design and the semantics of
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

/// Nodes a batch of `inserts` insertions may add, reserved before it runs. An insertion
/// that reaches a full leaf splits it (at most one such split per insertion; a further
/// split of one of its halves needs seven more pairs landed in it), so leaf splits are at
/// most 8/7 of the insertions; a split one level up needs seven splits below it, or a node
/// that was already full, and a root split adds two nodes: at most 4/3 of the insertions
/// plus the internal nodes that were full before the batch, which this bound leaves out.
/// A batch that needs those too (rare: trees whose internal nodes are nearly all full)
/// fails part of its insertions with `POOL_EXHAUSTED`; the synchronizing forms then grow
/// the pool and insert those again, so that only the pool's maximum ends them.
fn split_bound(inserts: usize) -> u64 {
    let n = inserts as u64;
    n + n.div_ceil(3) + 64
}

/// The batch length as the kernels' 32-bit count: more than `u32::MAX` operations is a
/// [`CapacityOverflow`](gpuds_core::Error::CapacityOverflow), never truncated.
/// The elements of `all` at the positions `at`, or all of them (`None`).
fn picked<'a, T: Copy>(all: &'a [T], at: Option<&[usize]>) -> std::borrow::Cow<'a, [T]> {
    match at {
        None => std::borrow::Cow::Borrowed(all),
        Some(at) => std::borrow::Cow::Owned(at.iter().map(|&i| all[i]).collect()),
    }
}

pub(crate) fn batch_len(n: usize) -> Result<u32> {
    Ok(gpuds_core::size::u32_len(n, "operations in one batch")?)
}

pub(crate) fn same_len(a: usize, b: usize, what: &str) -> Result<u32> {
    if a != b {
        return Err(gpuds_core::Error::InvalidArgument(format!("{a} keys but {b} {what}")).into());
    }
    batch_len(a)
}

/// The batch length, checked against the result buffers (`out` results, `bits` words of
/// one bit per request).
pub(crate) fn query_len(keys: usize, out: usize, bits: usize) -> Result<u32> {
    let n = batch_len(keys)?;
    if out < keys || bits < keys.div_ceil(32) {
        return Err(gpuds_core::Error::InvalidArgument(format!(
            "{keys} requests need {keys} results and {} bit words; got {out} and {bits}",
            keys.div_ceil(32)
        ))
        .into());
    }
    Ok(n)
}

/// Output pairs of `n` capped ranges of capacity `cap`: at most `u32::MAX` per call.
fn capped_len(n: u32, cap: u32) -> Result<u64> {
    let needed = n as u64 * cap as u64;
    if needed > u32::MAX as u64 {
        return Err(gpuds_core::Error::CapacityOverflow(format!(
            "{n} ranges of capacity {cap} need {needed} output pairs; at most {} per call",
            u32::MAX
        ))
        .into());
    }
    Ok(needed)
}

pub(crate) fn bit(bits: &[u32], i: usize) -> bool {
    bits.get(i / 32).is_some_and(|w| w >> (i % 32) & 1 == 1)
}

/// Runs a per-key device batch (`run(keys, values, bits)`) on host keys and returns each
/// key's value where its bit is set. Synchronizes.
fn keyed_on_host<K: DeviceKey, V: DeviceValue>(
    gpu: &Gpu,
    keys: &[K],
    run: impl FnOnce(&CudaSlice<K>, &mut CudaSlice<V>, &mut CudaSlice<u32>) -> Result<()>,
) -> Result<Vec<Option<V>>> {
    let n = batch_len(keys.len())? as usize;
    if n == 0 {
        return Ok(Vec::new());
    }
    let stream = gpu.stream();
    let k = stream.clone_htod(keys)?;
    let mut values = stream.alloc_zeros::<V>(n)?;
    let mut found = stream.alloc_zeros::<u32>(n.div_ceil(32))?;
    run(&k, &mut values, &mut found)?;
    let (values, found) = (stream.clone_dtoh(&values)?, stream.clone_dtoh(&found)?);
    Ok(values
        .into_iter()
        .enumerate()
        .map(|(i, v)| bit(&found, i).then_some(v))
        .collect())
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
        let pool = SlabAlloc::new(
            gpu,
            SlabAllocConfig {
                unit_bytes: NODE_BYTES,
                initial_units: config.initial_nodes.max(1),
                max_units: config.max_nodes,
                ..Default::default()
            },
        )?;
        let kernels = Kernels::load(gpu, config.query_tile)?;
        let mut map = Self {
            gpu: gpu.clone(),
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
    pub fn device_ref(&self) -> TreeRef {
        let stream = self.gpu.stream();
        TreeRef {
            alloc: self.pool.device_ref(),
            root: self.root,
            max_steps: self.config.max_steps,
            status: self.status.lock().slice().device_ptr(stream).0,
            size: self.size.device_ptr(stream).0,
        }
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
            .reserve_within_max(before.max(split_bound(failed)))
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

    /// Inserts `(keys[i], values[i])` for every i; an existing key's value is replaced
    /// (when a key repeats in the batch, one of its values wins). Synchronizes.
    ///
    /// When the pool runs out of nodes below [`BTreeConfig::max_nodes`], it is grown and
    /// the insertions that failed run again. At the maximum the call fails with
    /// [`gpuds_core::Error::NotApplied`] (flag `POOL_EXHAUSTED`, see
    /// [`Error::is_pool_exhausted`]) naming exactly the pairs that were not inserted;
    /// every other pair was, and the tree is valid. Near the limit even a key that is
    /// present may fail to be updated: an insertion splits every full node on its path
    /// (proactive splitting).
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut tree = gpuds_btree::GpuBTreeMap::<u32, u32>::new(&gpu)?;
    /// tree.insert_many(&[3, 1, 2], &[30, 10, 20])?;
    /// tree.insert_many(&[1], &[11])?;
    /// assert_eq!(tree.to_vec()?, vec![(1, 11), (2, 20), (3, 30)]);
    /// # Ok::<(), gpuds_btree::Error>(())
    /// ```
    pub fn insert_many(&mut self, keys: &[K], values: &[V]) -> Result<()> {
        same_len(keys.len(), values.len(), "values")?;
        if keys.is_empty() {
            return Ok(());
        }
        let stream = self.gpu.stream().clone();
        self.run_growing(|tree, at| {
            let (k, v) = (picked(keys, at), picked(values, at));
            let (k, v) = (stream.clone_htod(&*k)?, stream.clone_htod(&*v)?);
            let failed = tree.launch_insert(&k, &v)?;
            let flags = tree.take_status()?;
            let bits = if flags.is_ok() {
                Vec::new()
            } else {
                stream.clone_dtoh(&failed)?
            };
            Ok((flags, indices(&bits, k.len())))
        })
    }

    /// [`GpuBTreeMap::insert_many`] from device buffers. Does not synchronize unless the
    /// pool must grow; call [`GpuBTreeMap::check`] to see the status. It does not retry:
    /// when its nodes run out below the pool's maximum (see [`BTreeConfig::max_nodes`]),
    /// `check` reports a pool-exhausted error and some pairs were not inserted; insert
    /// them again, or use [`GpuBTreeMap::insert_many`], which grows the pool and retries.
    pub fn insert_many_device(&mut self, keys: &CudaSlice<K>, values: &CudaSlice<V>) -> Result<()> {
        self.launch_insert(keys, values).map(drop)
    }

    /// Launches the batched insertion; returns its failed bits (one per request).
    fn launch_insert(
        &mut self,
        keys: &CudaSlice<K>,
        values: &CudaSlice<V>,
    ) -> Result<CudaSlice<u32>> {
        let n = same_len(keys.len(), values.len(), "values")?;
        let stream = self.gpu.stream().clone();
        let words = (n as usize).div_ceil(32);
        let mut failed = stream.alloc_zeros::<u32>(words.max(1))?;
        if n == 0 {
            return Ok(failed);
        }
        self.ensure_room(split_bound(n as usize))?;
        let mut replaced = stream.alloc_zeros::<u32>(words)?;
        let r = self.device_ref();
        let shape = self.grid(&self.kernels.insert, n as usize)?;
        let mut args = stream.launch_builder(self.kernels.insert.func());
        args.arg(&r)
            .arg(keys)
            .arg(values)
            .arg(&n)
            .arg(&mut replaced)
            .arg(&mut failed);
        // SAFETY: keys and values hold n elements; replaced and failed ceil(n / 32) words.
        unsafe { args.launch(shape) }?;
        Ok(failed)
    }

    /// The value of each key, if present. Synchronizes.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut tree = gpuds_btree::GpuBTreeMap::<u32, u32>::new(&gpu)?;
    /// tree.insert_many(&[7], &[70])?;
    /// assert_eq!(tree.get_many(&[7, 8])?, vec![Some(70), None]);
    /// # Ok::<(), gpuds_btree::Error>(())
    /// ```
    pub fn get_many(&self, keys: &[K]) -> Result<Vec<Option<V>>> {
        self.clear_status()?;
        let values = keyed_on_host(&self.gpu, keys, |k, v, f| self.get_many_device(k, v, f))?;
        self.check()?;
        Ok(values)
    }

    /// Phased lookups on device buffers: `values[i]` and bit i of `found` (32 keys per
    /// word). Does not synchronize. Must not overlap a kernel that modifies the tree.
    pub fn get_many_device(
        &self,
        keys: &CudaSlice<K>,
        values: &mut CudaSlice<V>,
        found: &mut CudaSlice<u32>,
    ) -> Result<()> {
        self.launch_keyed(&self.kernels.get, keys, values, found, false)
            .map(drop)
    }

    /// Removes each key; returns the removed values. Nodes are never merged (§3.4.4).
    /// Synchronizes.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut tree = gpuds_btree::GpuBTreeMap::<u32, u32>::new(&gpu)?;
    /// tree.insert_many(&[1, 2], &[10, 20])?;
    /// assert_eq!(tree.remove_many(&[2, 3])?, vec![Some(20), None]);
    /// assert_eq!(tree.len()?, 1);
    /// # Ok::<(), gpuds_btree::Error>(())
    /// ```
    ///
    /// A removal that passes `max_steps` fails and changes nothing: the call then returns
    /// [`gpuds_core::Error::NotApplied`] naming exactly those keys; every other removal
    /// took effect.
    pub fn remove_many(&mut self, keys: &[K]) -> Result<Vec<Option<V>>> {
        self.clear_status()?;
        let gpu = self.gpu.clone();
        let mut failed = None;
        let values = keyed_on_host(&gpu, keys, |k, v, f| {
            failed = Some(self.launch_keyed(&self.kernels.remove, k, v, f, true)?);
            Ok(())
        })?;
        let flags = self.take_status()?;
        if flags.is_ok() {
            return Ok(values);
        }
        let bits = match failed {
            Some(f) => gpu.stream().clone_dtoh(&f)?,
            None => Vec::new(),
        };
        Err(self.failure(flags, indices(&bits, keys.len())))
    }

    /// [`GpuBTreeMap::remove_many`] on device buffers: removed values and removed bits.
    /// Does not synchronize; [`GpuBTreeMap::check`] reports a removal that failed.
    pub fn remove_many_device(
        &mut self,
        keys: &CudaSlice<K>,
        old_values: &mut CudaSlice<V>,
        removed: &mut CudaSlice<u32>,
    ) -> Result<()> {
        self.launch_keyed(&self.kernels.remove, keys, old_values, removed, true)
            .map(drop)
    }

    /// Launches a per-key kernel taking (tree, keys, n, values, bits), and with `failures`
    /// a failed bit per request, which it returns (removals); else (lookups) the returned
    /// buffer is empty.
    fn launch_keyed(
        &self,
        kernel: &Kernel,
        keys: &CudaSlice<K>,
        values: &mut CudaSlice<V>,
        bits: &mut CudaSlice<u32>,
        failures: bool,
    ) -> Result<CudaSlice<u32>> {
        let n = query_len(keys.len(), values.len(), bits.len())?;
        let stream = self.gpu.stream();
        let words = if failures {
            (n as usize).div_ceil(32).max(1)
        } else {
            1
        };
        let mut failed = stream.alloc_zeros::<u32>(words)?;
        if n == 0 {
            return Ok(failed);
        }
        let r = self.device_ref();
        let shape = self.grid(kernel, n as usize)?;
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&r).arg(keys).arg(&n).arg(values).arg(bits);
        if failures {
            args.arg(&mut failed);
        }
        // SAFETY: buffer lengths were checked by query_len; failed holds ceil(n / 32) words.
        unsafe { args.launch(shape) }?;
        Ok(failed)
    }

    /// For each key k, the pair with the smallest key greater than k. Synchronizes.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut tree = gpuds_btree::GpuBTreeMap::<u32, u32>::new(&gpu)?;
    /// tree.insert_many(&[10, 20], &[1, 2])?;
    /// assert_eq!(tree.successor_many(&[0, 10, 20])?, vec![Some((10, 1)), Some((20, 2)), None]);
    /// # Ok::<(), gpuds_btree::Error>(())
    /// ```
    pub fn successor_many(&self, keys: &[K]) -> Result<Vec<Option<(K, V)>>> {
        self.clear_status()?;
        let n = batch_len(keys.len())?;
        if n == 0 {
            return Ok(Vec::new());
        }
        let stream = self.gpu.stream();
        let k = stream.clone_htod(keys)?;
        let mut out_keys = stream.alloc_zeros::<K>(n as usize)?;
        let mut out_values = stream.alloc_zeros::<V>(n as usize)?;
        let mut found = stream.alloc_zeros::<u32>((n as usize).div_ceil(32))?;
        self.successor_many_device(&k, &mut out_keys, &mut out_values, &mut found)?;
        let (ks, vs) = (
            stream.clone_dtoh(&out_keys)?,
            stream.clone_dtoh(&out_values)?,
        );
        let found = stream.clone_dtoh(&found)?;
        self.check()?;
        Ok((0..n as usize)
            .map(|i| bit(&found, i).then(|| (ks[i], vs[i])))
            .collect())
    }

    /// Phased successor queries on device buffers. Does not synchronize.
    pub fn successor_many_device(
        &self,
        keys: &CudaSlice<K>,
        out_keys: &mut CudaSlice<K>,
        out_values: &mut CudaSlice<V>,
        found: &mut CudaSlice<u32>,
    ) -> Result<()> {
        let n = query_len(
            keys.len(),
            out_keys.len().min(out_values.len()),
            found.len(),
        )?;
        if n == 0 {
            return Ok(());
        }
        let r = self.device_ref();
        let shape = self.grid(&self.kernels.successor, n as usize)?;
        let mut args = self
            .gpu
            .stream()
            .launch_builder(self.kernels.successor.func());
        args.arg(&r)
            .arg(keys)
            .arg(&n)
            .arg(out_keys)
            .arg(out_values)
            .arg(found);
        // SAFETY: buffer lengths were checked by query_len.
        unsafe { args.launch(shape) }?;
        Ok(())
    }

    /// For each `(lo, hi)`, the number of pairs with `lo <= key <= hi` (0 when
    /// `lo > hi`). Synchronizes.
    pub fn range_count_many(&self, ranges: &[(K, K)]) -> Result<Vec<u32>> {
        self.clear_status()?;
        let n = batch_len(ranges.len())?;
        if n == 0 {
            return Ok(Vec::new());
        }
        let stream = self.gpu.stream();
        let (lo, hi): (Vec<K>, Vec<K>) = ranges.iter().copied().unzip();
        let (lo, hi) = (stream.clone_htod(&lo)?, stream.clone_htod(&hi)?);
        let mut counts = stream.alloc_zeros::<u32>(n as usize)?;
        self.range_count_device(&lo, &hi, &mut counts)?;
        let counts = stream.clone_dtoh(&counts)?;
        self.check()?;
        Ok(counts)
    }

    /// The count pass on device buffers. Does not synchronize.
    pub fn range_count_device(
        &self,
        lo: &CudaSlice<K>,
        hi: &CudaSlice<K>,
        counts: &mut CudaSlice<u32>,
    ) -> Result<()> {
        let n = query_len(lo.len().min(hi.len()), counts.len(), usize::MAX)?;
        if n == 0 {
            return Ok(());
        }
        let r = self.device_ref();
        let shape = self.grid(&self.kernels.range_count, n as usize)?;
        let mut args = self
            .gpu
            .stream()
            .launch_builder(self.kernels.range_count.func());
        args.arg(&r).arg(lo).arg(hi).arg(&n).arg(counts);
        // SAFETY: lo, hi and counts hold at least n elements.
        unsafe { args.launch(shape) }?;
        Ok(())
    }

    /// The collect pass on device buffers: query i writes its pairs at `offsets[i]`, at
    /// most `counts[i]` of them (the count pass's results and their exclusive scan). Does
    /// not synchronize. Offsets and counts that pass the outputs' length are cut to it
    /// (nothing is written outside the outputs) and reported as `OUT_OF_BOUNDS` by
    /// [`GpuBTreeMap::check`].
    #[allow(clippy::too_many_arguments)]
    pub fn range_collect_device(
        &self,
        lo: &CudaSlice<K>,
        hi: &CudaSlice<K>,
        offsets: &CudaSlice<u32>,
        counts: &CudaSlice<u32>,
        out_keys: &mut CudaSlice<K>,
        out_values: &mut CudaSlice<V>,
    ) -> Result<()> {
        let n = query_len(
            lo.len().min(hi.len()),
            offsets.len().min(counts.len()),
            usize::MAX,
        )?;
        if n == 0 {
            return Ok(());
        }
        let r = self.device_ref();
        let shape = self.grid(&self.kernels.range_collect, n as usize)?;
        let mut args = self
            .gpu
            .stream()
            .launch_builder(self.kernels.range_collect.func());
        let out_len = out_keys.len().min(out_values.len()).min(u32::MAX as usize) as u32;
        args.arg(&r)
            .arg(lo)
            .arg(hi)
            .arg(&n)
            .arg(offsets)
            .arg(counts)
            .arg(out_keys)
            .arg(out_values)
            .arg(&out_len);
        // SAFETY: each query writes at most counts[i] pairs from offsets[i], cut by the
        // kernel to the outputs' length out_len.
        unsafe { args.launch(shape) }?;
        Ok(())
    }

    /// The one-pass collect for a known bound: query i writes its first pairs in key
    /// order, at most `cap`, to `out_keys` / `out_values` from index `i * cap`, and the
    /// number of pairs in its range to `counts[i]` (above `cap`: only `cap` written). No
    /// count pass, no scan. At most `u32::MAX` output pairs (`n * cap`) per call. Does not
    /// synchronize.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut tree = gpuds_btree::GpuBTreeMap::<u32, u32>::new(&gpu)?;
    /// tree.insert_many(&[1, 2, 3], &[10, 20, 30])?;
    /// let stream = gpu.stream();
    /// let (lo, hi) = (stream.clone_htod(&[1u32, 3])?, stream.clone_htod(&[3u32, 9])?);
    /// let (mut k, mut v) = (stream.alloc_zeros::<u32>(4)?, stream.alloc_zeros::<u32>(4)?);
    /// let mut counts = stream.alloc_zeros::<u32>(2)?;
    /// tree.range_collect_capped_device(&lo, &hi, 2, &mut k, &mut v, &mut counts)?;
    /// assert_eq!(stream.clone_dtoh(&counts)?, vec![3, 1]); // the first range is cut at 2
    /// assert_eq!(stream.clone_dtoh(&k)?[..3], [1, 2, 3]);
    /// # Ok::<(), gpuds_btree::Error>(())
    /// ```
    pub fn range_collect_capped_device(
        &self,
        lo: &CudaSlice<K>,
        hi: &CudaSlice<K>,
        cap: u32,
        out_keys: &mut CudaSlice<K>,
        out_values: &mut CudaSlice<V>,
        counts: &mut CudaSlice<u32>,
    ) -> Result<()> {
        let n = query_len(lo.len().min(hi.len()), counts.len(), usize::MAX)?;
        let room = out_keys.len().min(out_values.len()) as u64;
        let needed = capped_len(n, cap)?;
        if room < needed {
            return Err(gpuds_core::Error::InvalidArgument(format!(
                "{n} ranges of capacity {cap} need {needed} output pairs; got {room}"
            ))
            .into());
        }
        if n == 0 {
            return Ok(());
        }
        let r = self.device_ref();
        let kernel = &self.kernels.range_collect_capped;
        let shape = self.grid(kernel, n as usize)?;
        let mut args = self.gpu.stream().launch_builder(kernel.func());
        args.arg(&r)
            .arg(lo)
            .arg(hi)
            .arg(&n)
            .arg(&cap)
            .arg(out_keys)
            .arg(out_values)
            .arg(counts);
        // SAFETY: lo, hi and counts hold at least n elements, the outputs n * cap (checked).
        unsafe { args.launch(shape) }?;
        Ok(())
    }

    /// Every pair with `lo <= key <= hi` for each range, at most `cap` per range (the
    /// first in key order), in one pass; also returns each range's full count, so a
    /// count above `cap` shows a cut range. Synchronizes.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut tree = gpuds_btree::GpuBTreeMap::<u32, u32>::new(&gpu)?;
    /// tree.insert_many(&[1, 2, 3], &[10, 20, 30])?;
    /// let (ranges, counts) = tree.range_many_capped(&[(0, 9), (3, 3)], 2)?;
    /// assert_eq!(ranges.get(0), &[(1, 10), (2, 20)]);
    /// assert_eq!(counts, vec![3, 1]);
    /// # Ok::<(), gpuds_btree::Error>(())
    /// ```
    pub fn range_many_capped(
        &self,
        ranges: &[(K, K)],
        cap: u32,
    ) -> Result<(Ranges<K, V>, Vec<u32>)> {
        self.clear_status()?;
        let n = batch_len(ranges.len())?;
        if n == 0 {
            return Ok((Ranges::new(vec![0], Vec::new()), Vec::new()));
        }
        let stream = self.gpu.stream();
        let (lo, hi): (Vec<K>, Vec<K>) = ranges.iter().copied().unzip();
        let (lo, hi) = (stream.clone_htod(&lo)?, stream.clone_htod(&hi)?);
        let room = capped_len(n, cap)?.max(1) as usize;
        let mut keys = stream.alloc_zeros::<K>(room)?;
        let mut values = stream.alloc_zeros::<V>(room)?;
        let mut counts = stream.alloc_zeros::<u32>(n as usize)?;
        self.range_collect_capped_device(&lo, &hi, cap, &mut keys, &mut values, &mut counts)?;
        let (keys, values) = (stream.clone_dtoh(&keys)?, stream.clone_dtoh(&values)?);
        let counts = stream.clone_dtoh(&counts)?;
        self.check()?;
        let mut starts = Vec::with_capacity(n as usize + 1);
        let mut pairs = Vec::new();
        for (i, &c) in counts.iter().enumerate() {
            starts.push(pairs.len());
            let from = i * cap as usize;
            let len = c.min(cap) as usize;
            pairs.extend(
                keys[from..from + len]
                    .iter()
                    .copied()
                    .zip(values[from..from + len].iter().copied()),
            );
        }
        starts.push(pairs.len());
        Ok((Ranges::new(starts, pairs), counts))
    }

    /// Every pair with `lo <= key <= hi` for each range, in key order: a count pass, an
    /// exclusive scan of the counts into per-query offsets, then a collect pass. A range
    /// with `lo > hi` is empty. Synchronizes.
    pub fn range_many(&self, ranges: &[(K, K)]) -> Result<Ranges<K, V>> {
        self.clear_status()?;
        let n = batch_len(ranges.len())?;
        if n == 0 {
            return Ok(Ranges::new(vec![0], Vec::new()));
        }
        let stream = self.gpu.stream();
        let (lo, hi): (Vec<K>, Vec<K>) = ranges.iter().copied().unzip();
        let (lo, hi) = (stream.clone_htod(&lo)?, stream.clone_htod(&hi)?);
        let mut counts = stream.alloc_zeros::<u32>(n as usize)?;
        self.range_count_device(&lo, &hi, &mut counts)?;
        let mut offsets = stream.alloc_zeros::<u32>(n as usize)?;
        let counts_host = stream.clone_dtoh(&counts)?;
        let total: u64 = counts_host.iter().map(|&c| c as u64).sum();
        if total > u32::MAX as u64 {
            return Err(gpuds_core::Error::CapacityOverflow(format!(
                "the ranges hold {total} pairs; at most {} per call",
                u32::MAX
            ))
            .into());
        }
        exclusive_scan(&self.gpu, &counts, &mut offsets)?;
        let mut keys = stream.alloc_zeros::<K>(total.max(1) as usize)?;
        let mut values = stream.alloc_zeros::<V>(total.max(1) as usize)?;
        self.range_collect_device(&lo, &hi, &offsets, &counts, &mut keys, &mut values)?;
        let (keys, values) = (stream.clone_dtoh(&keys)?, stream.clone_dtoh(&values)?);
        self.check()?;
        let mut starts = Vec::with_capacity(n as usize + 1);
        let mut at = 0usize;
        for &c in &counts_host {
            starts.push(at);
            at += c as usize;
        }
        starts.push(at);
        let pairs = keys.into_iter().zip(values).take(at).collect();
        Ok(Ranges::new(starts, pairs))
    }

    /// Runs a mixed batch in one kernel, every operation by its own warp, concurrently:
    /// see the [crate docs](crate) for what the replies may show. Synchronizes.
    ///
    /// ```no_run
    /// use gpuds_btree::{GpuBTreeMap, TreeOp, TreeReply};
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut tree = GpuBTreeMap::<u32, u32>::new(&gpu)?;
    /// tree.insert_many(&[1, 2], &[10, 20])?;
    /// let replies = tree.apply(&[TreeOp::Insert(3, 30), TreeOp::Get(1), TreeOp::Count(1, 2)])?;
    /// assert_eq!(replies[1], TreeReply::Value(Some(10)));
    /// assert_eq!(replies[2], TreeReply::Count(2));
    /// # Ok::<(), gpuds_btree::Error>(())
    /// ```
    ///
    /// Insertions that find the pool out of nodes below [`BTreeConfig::max_nodes`] run
    /// again, alone, after the pool has grown (a legal order of a concurrent batch: they
    /// come after everything else). An operation that still fails (the pool at its
    /// maximum, or `max_steps` passed) changes nothing; the call then returns
    /// [`gpuds_core::Error::NotApplied`] naming exactly those operations, and every other
    /// update of the batch took effect.
    pub fn apply(&mut self, ops: &[TreeOp<K, V>]) -> Result<Vec<TreeReply<K, V>>> {
        batch_len(ops.len())?;
        if ops.is_empty() {
            return Ok(Vec::new());
        }
        let mut replies = Vec::new();
        self.run_growing(|tree, at| {
            let (r, flags, failed) = tree.apply_round(&picked(ops, at))?;
            match at {
                None => replies = r,
                Some(at) => {
                    for (&i, reply) in at.iter().zip(r) {
                        replies[i] = reply;
                    }
                }
            }
            Ok((flags, failed))
        })?;
        Ok(replies)
    }

    /// Runs `ops` as one mixed batch: the replies, the flags the kernels reported (read
    /// and cleared) and the indices of the updates that failed. Synchronizes.
    #[allow(clippy::type_complexity)]
    fn apply_round(
        &mut self,
        ops: &[TreeOp<K, V>],
    ) -> Result<(Vec<TreeReply<K, V>>, Status, Vec<usize>)> {
        let n = ops.len();
        let mut codes = Vec::with_capacity(n);
        let mut keys = Vec::with_capacity(n);
        let mut args = Vec::with_capacity(n);
        for op in ops {
            let (c, k, a) = op.encode(V::default(), V::from_key);
            codes.push(c);
            keys.push(k);
            args.push(a);
        }
        let stream = self.gpu.stream().clone();
        let (codes, keys, args) = (
            stream.clone_htod(&codes)?,
            stream.clone_htod(&keys)?,
            stream.clone_htod(&args)?,
        );
        let mut out_a = stream.alloc_zeros::<u32>(n)?;
        let mut out_b = stream.alloc_zeros::<V>(n)?;
        let mut found = stream.alloc_zeros::<u32>(n.div_ceil(32))?;
        let failed = self.launch_apply(&codes, &keys, &args, &mut out_a, &mut out_b, &mut found)?;
        let (a, b) = (stream.clone_dtoh(&out_a)?, stream.clone_dtoh(&out_b)?);
        let (found, failed) = (stream.clone_dtoh(&found)?, stream.clone_dtoh(&failed)?);
        let flags = self.take_status()?;
        let replies = ops
            .iter()
            .enumerate()
            .map(|(i, op)| {
                let hit = bit(&found, i);
                let value = V::from_u64(a[i] as u64);
                match op {
                    TreeOp::Insert(..) => TreeReply::Inserted { replaced: hit },
                    TreeOp::Remove(_) => TreeReply::Removed(hit.then_some(value)),
                    TreeOp::Get(_) => TreeReply::Value(hit.then_some(value)),
                    TreeOp::Successor(_) => {
                        TreeReply::Successor(hit.then(|| (K::from_u64(a[i] as u64), b[i])))
                    }
                    TreeOp::Count(..) => TreeReply::Count(a[i]),
                }
            })
            .collect();
        Ok((replies, flags, indices(&failed, n)))
    }

    /// A mixed batch on device buffers: operation codes (0 insert, 1 remove, 2 get,
    /// 3 successor, 4 count), keys, arguments (an insert's value, a count's upper bound);
    /// results as in `btree_apply` (value / successor key / count, successor value, and the
    /// found / replaced / removed bits). Does not synchronize unless the pool must grow.
    #[allow(clippy::too_many_arguments)]
    pub fn apply_device(
        &mut self,
        codes: &CudaSlice<u32>,
        keys: &CudaSlice<K>,
        args: &CudaSlice<V>,
        out_a: &mut CudaSlice<u32>,
        out_b: &mut CudaSlice<V>,
        found: &mut CudaSlice<u32>,
    ) -> Result<()> {
        self.launch_apply(codes, keys, args, out_a, out_b, found)
            .map(drop)
    }

    /// Launches `btree_apply`; returns its failed bits (one per request).
    fn launch_apply(
        &mut self,
        codes: &CudaSlice<u32>,
        keys: &CudaSlice<K>,
        args: &CudaSlice<V>,
        out_a: &mut CudaSlice<u32>,
        out_b: &mut CudaSlice<V>,
        found: &mut CudaSlice<u32>,
    ) -> Result<CudaSlice<u32>> {
        let n = query_len(
            codes.len().min(keys.len()).min(args.len()),
            out_a.len().min(out_b.len()),
            found.len(),
        )?;
        let stream = self.gpu.stream().clone();
        let mut failed = stream.alloc_zeros::<u32>((n as usize).div_ceil(32).max(1))?;
        if n == 0 {
            return Ok(failed);
        }
        self.ensure_room(split_bound(n as usize))?;
        let r = self.device_ref();
        let shape = self.grid(&self.kernels.apply, n as usize)?;
        let mut b = stream.launch_builder(self.kernels.apply.func());
        b.arg(&r)
            .arg(codes)
            .arg(keys)
            .arg(args)
            .arg(&n)
            .arg(out_a)
            .arg(out_b)
            .arg(found)
            .arg(&mut failed);
        // SAFETY: buffer lengths were checked by query_len; failed holds ceil(n / 32) words.
        unsafe { b.launch(shape) }?;
        Ok(failed)
    }

    /// Replaces the contents with the given pairs (for a repeated key the last pair
    /// wins): sorts them with the core radix sort and writes the whole tree in one kernel
    /// with [`BTreeConfig::bulk_fill`] pairs per node (§3.4.1). Synchronizes.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut tree = gpuds_btree::GpuBTreeMap::<u32, u32>::new(&gpu)?;
    /// tree.bulk_build(&[5, 3, 5, 1], &[50, 30, 51, 10])?;
    /// assert_eq!(tree.to_vec()?, vec![(1, 10), (3, 30), (5, 51)]);
    /// # Ok::<(), gpuds_btree::Error>(())
    /// ```
    pub fn bulk_build(&mut self, keys: &[K], values: &[V]) -> Result<()> {
        same_len(keys.len(), values.len(), "values")?;
        let stream = self.gpu.stream();
        let (mut k, mut v) = if keys.is_empty() {
            (stream.alloc_zeros::<K>(1)?, stream.alloc_zeros::<V>(1)?)
        } else {
            (stream.clone_htod(keys)?, stream.clone_htod(values)?)
        };
        if keys.is_empty() {
            return self.clear();
        }
        self.bulk_build_device(&mut k, &mut v)
    }

    /// [`GpuBTreeMap::bulk_build`] from device buffers, which it sorts in place.
    /// Synchronizes once (it reads the number of distinct keys); the build itself is one
    /// kernel with node addresses computed, not allocated. More pairs than one sort takes
    /// ([`RadixSorter::MAX_LEN`]) is a
    /// [`CapacityOverflow`](gpuds_core::Error::CapacityOverflow) with the tree unchanged;
    /// on another error the tree is left empty.
    pub fn bulk_build_device(
        &mut self,
        keys: &mut CudaSlice<K>,
        values: &mut CudaSlice<V>,
    ) -> Result<()> {
        if keys.len().max(values.len()) > RadixSorter::MAX_LEN {
            return Err(gpuds_core::Error::CapacityOverflow(format!(
                "a bulk build of {} pairs; one sort takes at most {}",
                keys.len().max(values.len()),
                RadixSorter::MAX_LEN
            ))
            .into());
        }
        let result = self.try_bulk_build(keys, values);
        if result.is_err() {
            // A partial build is not a tree: start over empty (keep the first error).
            let _ = self.check();
            let _ = self.clear();
        }
        result
    }

    fn try_bulk_build(&mut self, keys: &mut CudaSlice<K>, values: &mut CudaSlice<V>) -> Result<()> {
        let n = same_len(keys.len(), values.len(), "values")?;
        if n == 0 {
            return self.clear();
        }
        let stream = self.gpu.stream().clone();
        self.sorter.sort_pairs(keys, values)?;
        // Count the repeated keys first (a read-only pass): without repeats, the common
        // case, the sorted buffers are the build's input and no compaction runs.
        let mut repeats = stream.alloc_zeros::<u32>(1)?;
        {
            let kernel = &self.kernels.count_repeats;
            let shape = self.gpu.grid_for(kernel, n as usize, BLOCK)?;
            let mut args = stream.launch_builder(kernel.func());
            args.arg(&*keys).arg(&n).arg(&mut repeats);
            // SAFETY: keys holds n elements; repeats one word.
            unsafe { args.launch(shape) }?;
        }
        let r = stream.clone_dtoh(&repeats)?.first().copied().unwrap_or(0);
        let m = n.saturating_sub(r);
        if r == 0 {
            let total = self.room_for_build(m)?;
            self.launch_build(keys, values, m, total, false)?;
            self.finish_build(total);
            return Ok(());
        }
        // SAFETY (all three): every element is written before it is read: flags by
        // btree_last_of_run, the first m of the outputs by the compactions, and the build
        // reads only those.
        let mut flags = unsafe { stream.alloc::<u32>(n as usize) }?;
        let mut unique_keys = unsafe { stream.alloc::<K>(m.max(1) as usize) }?;
        let mut unique_values = unsafe { stream.alloc::<V>(m.max(1) as usize) }?;
        {
            let shape = self
                .gpu
                .grid_for(&self.kernels.last_of_run, n as usize, BLOCK)?;
            let mut args = stream.launch_builder(self.kernels.last_of_run.func());
            args.arg(&*keys).arg(&n).arg(&mut flags);
            // SAFETY: keys and flags hold n elements.
            unsafe { args.launch(shape) }?;
        }
        self.scanner
            .compact(keys, &flags, &mut unique_keys, &mut repeats)?;
        self.scanner
            .compact(values, &flags, &mut unique_values, &mut repeats)?;
        let total = self.room_for_build(m)?;
        self.launch_build(&unique_keys, &unique_values, m, total, false)?;
        self.finish_build(total);
        Ok(())
    }

    /// Replaces the contents with `keys[i] -> values[i]`, keys already strictly increasing
    /// (checked on the device first: otherwise an invalid-argument error and the tree is
    /// unchanged): the bulk build without its sort. Synchronizes once, after the check
    /// and the build kernel (which writes nothing when the check failed). On another
    /// error the tree is left empty.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut tree = gpuds_btree::GpuBTreeMap::<u32, u32>::new(&gpu)?;
    /// let keys = gpu.stream().clone_htod(&[1u32, 5, 9])?;
    /// tree.bulk_build_sorted_device(&keys, &keys)?;
    /// assert_eq!(tree.len()?, 3);
    /// let unsorted = gpu.stream().clone_htod(&[5u32, 1])?;
    /// assert!(tree.bulk_build_sorted_device(&unsorted, &unsorted).is_err());
    /// assert_eq!(tree.len()?, 3);
    /// # Ok::<(), gpuds_btree::Error>(())
    /// ```
    pub fn bulk_build_sorted_device(
        &mut self,
        keys: &CudaSlice<K>,
        values: &CudaSlice<V>,
    ) -> Result<()> {
        let n = same_len(keys.len(), values.len(), "values")?;
        if n == 0 {
            return self.clear();
        }
        let result = self.try_bulk_build_sorted(keys, values, n);
        if let Err(e) = &result {
            if !matches!(e, Error::Core(gpuds_core::Error::InvalidArgument(_))) {
                let _ = self.check();
                let _ = self.clear();
            }
        }
        result
    }

    fn try_bulk_build_sorted(
        &mut self,
        keys: &CudaSlice<K>,
        values: &CudaSlice<V>,
        n: u32,
    ) -> Result<()> {
        // Room first: growing the pool keeps the old tree's units (nothing is lost when
        // the input then turns out unsorted).
        let total = self.room_for_build(n)?;
        let stream = self.gpu.stream().clone();
        if n > 1 {
            let kernel = &self.kernels.check_increasing;
            let shape = self.gpu.grid_for(kernel, n as usize, BLOCK)?;
            let mut status = self.status.lock();
            let mut args = stream.launch_builder(kernel.func());
            args.arg(keys).arg(&n).arg(status.slice_mut());
            // SAFETY: keys holds n elements; the status word one.
            unsafe { args.launch(shape) }?;
        }
        self.launch_build(keys, values, n, total, n > 1)?;
        let flags = self.status.lock().take()?;
        if flags.contains(gpuds_core::Status(UNSORTED_INPUT)) {
            // The build kernel saw the flag and wrote nothing: the tree is as it was.
            return Err(gpuds_core::Error::InvalidArgument(
                "bulk_build_sorted_device needs strictly increasing keys".into(),
            )
            .into());
        }
        self.finish_build(total);
        flags.into_result()?;
        Ok(())
    }

    /// Grows the pool, when needed, to hold a bulk build of `m` pairs (plus headroom for
    /// later insertions); returns the build's number of nodes.
    fn room_for_build(&mut self, m: u32) -> Result<u64> {
        let total = bulk_shape(m as u64, self.config.bulk_fill).nodes();
        // Headroom as well as room: warps find free units quickly in a pool that is not full.
        let wanted = total + total / 4 + 1024;
        if self.pool.capacity_units() < wanted {
            match self.pool.reserve_within_max(wanted) {
                Ok(()) | Err(gpuds_alloc::Error::PoolExhausted { .. }) => {}
                Err(e) => return Err(e.into()),
            }
            if self.pool.capacity_units() < total {
                return Err(gpuds_alloc::Error::PoolExhausted {
                    needed: total,
                    capacity: self.pool.capacity_units(),
                    max_units: self.config.max_nodes,
                }
                .into());
            }
        }
        Ok(total)
    }

    /// Enqueues `btree_bulk_build` (§3.4.1): the whole tree of `m` strictly increasing
    /// pairs, `total` nodes, in one kernel, into units [0, total) of the pool (claimed by
    /// the kernel itself, every other unit freed). With `gated` the kernel first reads the
    /// status word and writes nothing when `btree_check_increasing` flagged the input.
    fn launch_build(
        &self,
        keys: &CudaSlice<K>,
        values: &CudaSlice<V>,
        m: u32,
        total: u64,
        gated: bool,
    ) -> Result<()> {
        let stream = self.gpu.stream().clone();
        let r = self.device_ref();
        let gate: u64 = if gated { r.status } else { 0 };
        let fill = self.config.bulk_fill;
        let kernel = &self.kernels.bulk_build;
        let words = self.pool.capacity_units() / 32;
        let threads = (total * 8).max(words) as usize;
        let grid = self.gpu.grid_for(kernel, threads, BLOCK)?;
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&r)
            .arg(keys)
            .arg(values)
            .arg(&m)
            .arg(&fill)
            .arg(&total)
            .arg(&gate);
        // SAFETY: keys and values hold m elements; the pool holds at least `total` units
        // (room_for_build); gate is the tree's status word or null.
        unsafe { args.launch(grid) }?;
        Ok(())
    }

    /// The host's side of a finished bulk build of `total` nodes: the root is the last
    /// node of the run, linear index total - 1.
    fn finish_build(&mut self, total: u64) {
        let last = total.saturating_sub(1) as u32;
        let log = self.pool.device_ref().log_blocks_per_super;
        self.root = gpuds_alloc::address::address(
            last >> gpuds_alloc::address::UNIT_BITS,
            last & (gpuds_alloc::address::UNITS_PER_BLOCK - 1),
            log,
        );
        self.used_bound = total;
    }

    /// Every pair in key order, read from a host copy of the node pool. Synchronizes.
    pub fn to_vec(&self) -> Result<Vec<(K, V)>> {
        let (_, pairs) = self.walk(true)?;
        Ok(pairs
            .into_iter()
            .map(|(k, v)| (K::from_u64(k as u64), V::from_u64(v as u64)))
            .collect())
    }

    fn walk(&self, collect: bool) -> Result<(TreeShape, Vec<(u32, u32)>)> {
        let snapshot = self.pool.snapshot()?;
        let fetch = |a: u32| {
            if snapshot.is_allocated(a) {
                snapshot.unit(a).and_then(Node::decode)
            } else {
                None
            }
        };
        let (shape, pairs) = walk(self.root, fetch, collect).map_err(Error::Invalid)?;
        let in_use = snapshot.units_in_use();
        if in_use != shape.nodes() {
            return Err(Error::Invalid(format!(
                "{} nodes are reachable from the root but the pool has {in_use} units in use",
                shape.nodes()
            )));
        }
        Ok((shape, pairs))
    }

    /// Height, nodes and fill per level, pairs and memory, from a host copy of the pool
    /// (which is also checked as by [`GpuBTreeMap::validate`]). Synchronizes.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut tree = gpuds_btree::GpuBTreeMap::<u32, u32>::new(&gpu)?;
    /// let keys: Vec<u32> = (0..10_000).collect();
    /// tree.bulk_build(&keys, &keys)?;
    /// let stats = tree.stats()?;
    /// assert_eq!(stats.shape.height, 4); // 1000, 100, 10 and 1 nodes
    /// println!("fill per level: {:?}", stats.shape.fill_per_level());
    /// # Ok::<(), gpuds_btree::Error>(())
    /// ```
    pub fn stats(&self) -> Result<BTreeStats> {
        let (shape, _) = self.walk(false)?;
        Ok(BTreeStats {
            len: self.len()? as u64,
            units_in_use: shape.nodes(),
            capacity_units: self.pool.capacity_units(),
            shape,
        })
    }

    /// Copies the tree to the host and checks every invariant (see
    /// [`crate::validate::walk`]), that every node in the pool is reachable from the root,
    /// that the pair count agrees with [`GpuBTreeMap::len`], and the status words.
    /// Synchronizes.
    pub fn validate(&self) -> Result<()> {
        self.check()?;
        let (shape, _) = self.walk(false)?;
        let len = self.len()? as u64;
        if shape.keys() != len {
            return Err(Error::Invalid(format!(
                "the leaves hold {} pairs but the size counter says {len}",
                shape.keys()
            )));
        }
        Ok(())
    }
}
