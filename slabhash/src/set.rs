//! [`SlabHashSet`]: the dissertation's concurrent set, 30 keys per slab.

use std::marker::PhantomData;

use cudarc::driver::{CudaSlice, PushKernelArg};
use gpuds_core::Gpu;

use crate::config::SlabHashConfig;
use crate::error::{Error, Result};
use crate::input::BatchInput;
use crate::kernels::Kind;
use crate::keys::SlabKey;
use crate::layout::Layout;
use crate::ops::{DeviceBatch, SetOp};
use crate::refs::SetRef;
use crate::sizing;
use crate::stats::SlabHashStats;
use crate::table::Table;

/// A concurrent hash set on the GPU: the slab list with no values (Awad, 2022, §5.4),
/// 30 `u32` or 15 `u64` keys per slab, keys unique. The same batch model, reserved keys
/// (all ones and all ones minus one of the key type) and synchronization rules as
/// [`SlabHashMap`](crate::SlabHashMap).
///
/// # Examples
/// ```no_run
/// use gpuds_slabhash::SlabHashSet;
/// let gpu = gpuds_core::Gpu::new(0)?;
/// let mut set = SlabHashSet::<u32>::new(&gpu, 1000)?;
/// set.insert_many(&[1, 2, 2, 3])?;
/// assert_eq!(set.len()?, 3);
/// set.remove_many(&[2])?;
/// assert_eq!(set.contains_many(&[1, 2])?, vec![true, false]);
/// # Ok::<(), gpuds_slabhash::Error>(())
/// ```
#[derive(Debug)]
pub struct SlabHashSet<K: SlabKey = u32> {
    table: Table,
    types: PhantomData<K>,
}

impl<K: SlabKey> SlabHashSet<K> {
    /// A set for about `expected_len` keys (β ≈ 0.7 at 30 keys per slab). Compiles the
    /// kernels on first use in the process.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let set = gpuds_slabhash::SlabHashSet::<u32>::new(&gpu, 1 << 20)?;
    /// assert_eq!(set.config().buckets, 49_933);
    /// # Ok::<(), gpuds_slabhash::Error>(())
    /// ```
    pub fn new(gpu: &Gpu, expected_len: usize) -> Result<Self> {
        let mut config =
            SlabHashConfig::for_len(expected_len, Layout::of::<K, u32>(Kind::Set).slots());
        config.alloc =
            sizing::default_alloc(expected_len, Layout::of::<K, u32>(Kind::Set).slots())?;
        Self::with_config(gpu, config)
    }

    /// A set with the given buckets, seed and pool settings (`unique_keys` is ignored:
    /// set keys are unique).
    ///
    /// ```no_run
    /// use gpuds_slabhash::{SlabHashConfig, SlabHashSet};
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let set = SlabHashSet::<u32>::with_config(&gpu, SlabHashConfig { buckets: 1, ..Default::default() })?;
    /// assert_eq!(set.config().buckets, 1);
    /// # Ok::<(), gpuds_slabhash::Error>(())
    /// ```
    pub fn with_config(gpu: &Gpu, config: SlabHashConfig) -> Result<Self> {
        Ok(Self {
            table: Table::new::<K, u32>(gpu, config, Kind::Set)?,
            types: PhantomData,
        })
    }

    /// The configuration the set was made with.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// let set = gpuds_slabhash::SlabHashSet::<u32>::new(&gpu, 10)?;
    /// assert!(set.config().unique_keys);
    /// # Ok::<(), gpuds_slabhash::Error>(())
    /// ```
    pub fn config(&self) -> &SlabHashConfig {
        self.table.config()
    }

    /// The device ref for user kernels (`gpuds::slabhash::set_ref<K>`); same rules as
    /// [`SlabHashMap::device_ref`](crate::SlabHashMap::device_ref).
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// let set = gpuds_slabhash::SlabHashSet::<u32>::new(&gpu, 10)?;
    /// let r = set.device_ref();
    /// assert_eq!(r.table.unique_keys, 1);
    /// # Ok::<(), gpuds_slabhash::Error>(())
    /// ```
    pub fn device_ref(&self) -> SetRef<K> {
        SetRef::new(self.table.device_ref())
    }

    /// Grows the slab pool for `additional` insertions (see
    /// [`SlabHashMap::reserve`](crate::SlabHashMap::reserve)).
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut set = gpuds_slabhash::SlabHashSet::<u32>::new(&gpu, 10)?;
    /// set.reserve(1000)?;
    /// # Ok::<(), gpuds_slabhash::Error>(())
    /// ```
    pub fn reserve(&mut self, additional: usize) -> Result<()> {
        self.table.reserve(additional)
    }

    /// Adds every key (present keys stay as they are). Synchronizes. Errors as
    /// [`SlabHashMap::insert_many`](crate::SlabHashMap::insert_many): a key that could
    /// not be added is named in [`gpuds_core::Error::NotApplied`], every other one was.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut set = gpuds_slabhash::SlabHashSet::<u32>::new(&gpu, 10)?;
    /// set.insert_many(&[4, 4])?;
    /// assert_eq!(set.len()?, 1);
    /// # Ok::<(), gpuds_slabhash::Error>(())
    /// ```
    pub fn insert_many(&mut self, keys: &(impl BatchInput<K> + ?Sized)) -> Result<()> {
        self.launch("insert", keys, true)
    }

    /// Removes every key (missing keys are no error); slots stay tombstones until
    /// [`flush`](Self::flush). Synchronizes.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut set = gpuds_slabhash::SlabHashSet::<u32>::new(&gpu, 10)?;
    /// set.insert_many(&[4])?;
    /// set.remove_many(&[4, 5])?;
    /// assert!(set.is_empty()?);
    /// # Ok::<(), gpuds_slabhash::Error>(())
    /// ```
    pub fn remove_many(&mut self, keys: &(impl BatchInput<K> + ?Sized)) -> Result<()> {
        self.launch("erase", keys, false)
    }

    fn launch(
        &mut self,
        name: &str,
        keys: &(impl BatchInput<K> + ?Sized),
        inserting: bool,
    ) -> Result<()> {
        let n = keys.len();
        if n == 0 {
            return Ok(());
        }
        let gpu = self.table.gpu().clone();
        let k = keys.stage(&gpu)?;
        let guard = self.table.check_keys(keys, &k.view())?;
        if inserting {
            self.table.reserve_for(n)?;
        }
        let call = self.table.begin_call(n, inserting)?;
        let kernel = self.table.kernel(name)?;
        let r = self.table.call_ref(&call);
        let (n64, null, unique, failed) = (n as u64, 0u64, 1u32, call.bits_ptr());
        let kv = k.view();
        let stream = gpu.stream();
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&r).arg(&kv);
        if inserting {
            // insert(ref, keys, values, n, unique, outcomes, olds)
            args.arg(&null).arg(&n64).arg(&unique).arg(&null).arg(&null);
        } else {
            // erase(ref, keys, n, outcomes, olds)
            args.arg(&n64).arg(&null).arg(&null);
        }
        guard.push(&mut args);
        args.arg(&failed);
        // SAFETY: the kernel reads keys[..n] and writes the call's status and failure
        // bits; every output pointer is null.
        unsafe { args.launch(self.table.item_shape(n)?) }?;
        self.table.finish_keys(&call, &guard, &kv)
    }

    /// Whether each key is present. Synchronizes.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut set = gpuds_slabhash::SlabHashSet::<u32>::new(&gpu, 10)?;
    /// set.insert_many(&[4])?;
    /// assert_eq!(set.contains_many(&[4, 5])?, vec![true, false]);
    /// # Ok::<(), gpuds_slabhash::Error>(())
    /// ```
    pub fn contains_many(&self, keys: &(impl BatchInput<K> + ?Sized)) -> Result<Vec<bool>> {
        let n = keys.len();
        if n == 0 {
            return Ok(Vec::new());
        }
        let gpu = self.table.gpu();
        let stream = gpu.stream();
        let mut found = stream.alloc_zeros::<u32>(n.div_ceil(32))?;
        self.find(keys, &mut found)?;
        let found = stream.clone_dtoh(&found)?;
        Ok((0..n).map(|i| found[i / 32] >> (i % 32) & 1 == 1).collect())
    }

    /// Membership of each key as one bit per key in device memory (`found[i / 32]` bit
    /// `i % 32`). Synchronizes once at the end, to read the call's own status (as
    /// [`SlabHashMap::get_many_into`](crate::SlabHashMap::get_many_into)).
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut set = gpuds_slabhash::SlabHashSet::<u32>::new(&gpu, 10)?;
    /// set.insert_many(&[4])?;
    /// let mut bits = gpu.stream().alloc_zeros::<u32>(1)?;
    /// set.contains_many_into(&[4, 5], &mut bits)?;
    /// assert_eq!(gpu.stream().clone_dtoh(&bits)?, vec![0b01]);
    /// # Ok::<(), gpuds_slabhash::Error>(())
    /// ```
    pub fn contains_many_into(
        &self,
        keys: &(impl BatchInput<K> + ?Sized),
        found: &mut CudaSlice<u32>,
    ) -> Result<()> {
        if found.len() < keys.len().div_ceil(32) {
            return Err(Error::LengthMismatch {
                what: "contains_many_into (words of bits)",
                left: keys.len(),
                right: found.len() * 32,
            });
        }
        if keys.is_empty() {
            return Ok(());
        }
        self.find(keys, found)
    }

    /// SEARCH for non-empty `keys`, checked at its end. Synchronizes.
    fn find(&self, keys: &(impl BatchInput<K> + ?Sized), found: &mut CudaSlice<u32>) -> Result<()> {
        let n = keys.len();
        let gpu = self.table.gpu();
        let k = keys.stage(gpu)?;
        let guard = self.table.check_keys(keys, &k.view())?;
        let call = self.table.begin_call(n, false)?;
        let kernel = self.table.kernel("find")?;
        let r = self.table.call_ref(&call);
        let (n64, null, failed) = (n as u64, 0u64, call.bits_ptr());
        let kv = k.view();
        let stream = gpu.stream();
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&r).arg(&kv).arg(&n64).arg(&null).arg(found);
        guard.push(&mut args);
        args.arg(&failed);
        // SAFETY: the kernel reads keys[..n] and writes found[..n.div_ceil(32)] and the
        // call's status and failure bits.
        unsafe { args.launch(self.table.item_shape(n)?) }?;
        drop(args);
        self.table.check_read(&call, &guard, &kv)
    }

    /// A mixed batch of inserts, removes and lookups in one kernel; each result says
    /// whether the key was present just before the operation. Synchronizes.
    ///
    /// ```no_run
    /// use gpuds_slabhash::{SetOp, SlabHashSet};
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut set = SlabHashSet::<u32>::new(&gpu, 10)?;
    /// let seen = set.apply(&[SetOp::Insert(1), SetOp::Contains(2)])?;
    /// assert_eq!(seen, vec![false, false]);
    /// # Ok::<(), gpuds_slabhash::Error>(())
    /// ```
    pub fn apply(&mut self, ops: &[SetOp<K>]) -> Result<Vec<bool>> {
        let batch = DeviceBatch::set(self.table.gpu(), ops)?;
        let results = self.table.apply(&batch)?.to_host()?;
        Ok(results.iter().map(|r| r.value().is_some()).collect())
    }

    /// FLUSH (see [`SlabHashMap::flush`](crate::SlabHashMap::flush)); returns the slabs
    /// freed. Synchronizes.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut set = gpuds_slabhash::SlabHashSet::<u32>::new(&gpu, 10)?;
    /// set.flush()?;
    /// # Ok::<(), gpuds_slabhash::Error>(())
    /// ```
    pub fn flush(&mut self) -> Result<u64> {
        self.table.flush()
    }

    /// Number of keys, exact. Synchronizes.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// let set = gpuds_slabhash::SlabHashSet::<u32>::new(&gpu, 10)?;
    /// assert_eq!(set.len()?, 0);
    /// # Ok::<(), gpuds_slabhash::Error>(())
    /// ```
    pub fn len(&self) -> Result<usize> {
        Ok(self.table.len()? as usize)
    }

    /// `true` when the set holds no key. Synchronizes.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// let set = gpuds_slabhash::SlabHashSet::<u32>::new(&gpu, 10)?;
    /// assert!(set.is_empty()?);
    /// # Ok::<(), gpuds_slabhash::Error>(())
    /// ```
    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }

    /// Removes every key and returns every slab to the pool. Does not synchronize.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut set = gpuds_slabhash::SlabHashSet::<u32>::new(&gpu, 10)?;
    /// set.clear()?;
    /// # Ok::<(), gpuds_slabhash::Error>(())
    /// ```
    pub fn clear(&mut self) -> Result<()> {
        self.table.clear()
    }

    /// Every key, in no particular order. Synchronizes.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut set = gpuds_slabhash::SlabHashSet::<u32>::new(&gpu, 10)?;
    /// set.insert_many(&[3, 1])?;
    /// let mut keys = set.to_vec()?;
    /// keys.sort();
    /// assert_eq!(keys, vec![1, 3]);
    /// # Ok::<(), gpuds_slabhash::Error>(())
    /// ```
    pub fn to_vec(&self) -> Result<Vec<K>> {
        Ok(self.table.export::<K, u32>()?.0)
    }

    /// Shape and memory use (4-byte elements, 30 per slab). Synchronizes.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// let set = gpuds_slabhash::SlabHashSet::<u32>::new(&gpu, 10)?;
    /// assert_eq!(set.stats()?.len, 0);
    /// # Ok::<(), gpuds_slabhash::Error>(())
    /// ```
    pub fn stats(&self) -> Result<SlabHashStats> {
        self.table.stats()
    }

    /// Reports (and clears) what user kernels recorded in the set's status word through
    /// [`device_ref`](Self::device_ref), and re-reads the counters they moved (see
    /// [`SlabHashMap::refresh`](crate::SlabHashMap::refresh)). Synchronizes.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut set = gpuds_slabhash::SlabHashSet::<u32>::new(&gpu, 10)?;
    /// let r = set.device_ref();
    /// // ... a kernel inserts through `r` ...
    /// # let _ = r;
    /// set.refresh()?;
    /// # Ok::<(), gpuds_slabhash::Error>(())
    /// ```
    pub fn refresh(&mut self) -> Result<()> {
        self.table.refresh()
    }

    /// Checks every invariant (see [`SlabHashMap::validate`](crate::SlabHashMap::validate)).
    /// Synchronizes; copies the whole table.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// let set = gpuds_slabhash::SlabHashSet::<u32>::new(&gpu, 10)?;
    /// set.validate()?;
    /// # Ok::<(), gpuds_slabhash::Error>(())
    /// ```
    pub fn validate(&self) -> Result<()> {
        self.table.validate().map(drop)
    }
}
