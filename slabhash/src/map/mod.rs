//! [`SlabHashMap`]: the slab hash of key-value pairs.

use std::marker::PhantomData;

use cudarc::driver::{CudaSlice, PushKernelArg};
use gpuds_core::Gpu;

use crate::config::SlabHashConfig;
use crate::error::{Error, Result};
use crate::input::BatchInput;
use crate::kernels::Kind;
use crate::keys::{SlabKey, SlabValue};
use crate::layout::Layout;
use crate::ops::{BatchResults, DeviceBatch, MapOp, OpResult};
use crate::refs::MapRef;
use crate::sizing;
use crate::stats::SlabHashStats;
use crate::table::Table;

mod multimap;

/// A concurrent hash map on the GPU: the slab hash (Ashkiani et al., 2018) of 32- or
/// 64-bit keys and values (`u32` or `u64` each, every combination), with unique keys
/// (REPLACE) by default or duplicate keys (a multimap) when configured.
///
/// Every operation is a batch run by one kernel, one request per thread, requests served
/// warp by warp. The key type's all ones and all ones minus one are reserved
/// ([`SlabKey::RESERVED`]): a batch holding one fails with [`Error::ReservedKey`] and
/// nothing is applied. Values are unrestricted. Each method says whether it synchronizes
/// the stream. Switching `u32` to `u64` in the type parameters changes nothing else:
///
/// ```no_run
/// use gpuds_slabhash::SlabHashMap;
/// let gpu = gpuds_core::Gpu::new(0)?;
/// let mut ids = SlabHashMap::<u64, u64>::new(&gpu, 1000)?;
/// ids.insert_many(&[1 << 40, 2 << 40], &[u64::MAX, 7])?;
/// assert_eq!(ids.get_many(&[1 << 40, 3 << 40])?, vec![Some(u64::MAX), None]);
/// # Ok::<(), gpuds_slabhash::Error>(())
/// ```
///
/// # Examples
/// ```no_run
/// use gpuds_slabhash::SlabHashMap;
/// let gpu = gpuds_core::Gpu::new(0)?;
/// let mut map = SlabHashMap::<u32, u32>::new(&gpu, 1000)?;
/// map.insert_many(&[1, 2, 3], &[10, 20, 30])?;
/// map.insert_many(&[2], &[21])?; // replaces
/// assert_eq!(map.get_many(&[1, 2, 4])?, vec![Some(10), Some(21), None]);
/// map.remove_many(&[1])?;
/// assert_eq!(map.len()?, 2);
/// map.validate()?;
/// # Ok::<(), gpuds_slabhash::Error>(())
/// ```
#[derive(Debug)]
pub struct SlabHashMap<K: SlabKey = u32, V: SlabValue = u32> {
    table: Table,
    types: PhantomData<(K, V)>,
}

impl<K: SlabKey, V: SlabValue> SlabHashMap<K, V> {
    /// A map for about `expected_len` pairs: buckets for an average slab count of 0.7
    /// (the paper's best range), unique keys, a default slab pool that grows as needed.
    /// Synchronizes nothing but compiles the kernels on first use in the process.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let map = gpuds_slabhash::SlabHashMap::<u32, u32>::new(&gpu, 1 << 20)?;
    /// assert_eq!(map.config().buckets, 99_865);
    /// # Ok::<(), gpuds_slabhash::Error>(())
    /// ```
    pub fn new(gpu: &Gpu, expected_len: usize) -> Result<Self> {
        let mut config =
            SlabHashConfig::for_len(expected_len, Layout::of::<K, V>(Kind::Map).slots());
        config.alloc = sizing::default_alloc(expected_len, Layout::of::<K, V>(Kind::Map).slots())?;
        Self::with_config(gpu, config)
    }

    /// A map with the given buckets, hash seed, key uniqueness and pool settings.
    ///
    /// ```no_run
    /// use gpuds_slabhash::{SlabHashConfig, SlabHashMap};
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let multimap = SlabHashMap::<u32, u32>::with_config(
    ///     &gpu,
    ///     SlabHashConfig { buckets: 64, unique_keys: false, ..Default::default() },
    /// )?;
    /// assert!(!multimap.config().unique_keys);
    /// # Ok::<(), gpuds_slabhash::Error>(())
    /// ```
    pub fn with_config(gpu: &Gpu, config: SlabHashConfig) -> Result<Self> {
        Ok(Self {
            table: Table::new::<K, V>(gpu, config, Kind::Map)?,
            types: PhantomData,
        })
    }

    /// The configuration the map was made with.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// let map = gpuds_slabhash::SlabHashMap::<u32, u32>::new(&gpu, 10)?;
    /// assert!(map.config().unique_keys);
    /// # Ok::<(), gpuds_slabhash::Error>(())
    /// ```
    pub fn config(&self) -> &SlabHashConfig {
        self.table.config()
    }

    /// The device ref for user kernels (`gpuds::slabhash::map_ref<K, V>`). Fetch it
    /// again after any call that may grow the slab pool; call
    /// [`reserve`](Self::reserve) first when the kernel inserts. See the crate
    /// documentation for a kernel that uses it. A kernel that writes through the ref
    /// must be done before the map's next call (launch it on the map's stream, or
    /// synchronize): the bulk lookups read the table with read-only loads that assume
    /// no writer in flight. [`refresh`](Self::refresh) then reads back its length and
    /// status.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// let map = gpuds_slabhash::SlabHashMap::<u32, u32>::new(&gpu, 10)?;
    /// let r = map.device_ref(); // pass by value: builder.arg(&r)
    /// assert_eq!(r.table.num_buckets, map.config().buckets);
    /// # Ok::<(), gpuds_slabhash::Error>(())
    /// ```
    pub fn device_ref(&self) -> MapRef<K, V> {
        MapRef::new(self.table.device_ref())
    }

    /// Grows the slab pool so that `additional` insertions cannot run out of slabs
    /// (up to the pool's maximum), e.g. before a user kernel inserts through
    /// [`device_ref`](Self::device_ref). Synchronizes when the pool grows.
    ///
    /// More slabs than the pool's `max_units` could fill is [`Error::PoolExhausted`],
    /// a count overflowing 64 bits
    /// [`CapacityOverflow`](gpuds_core::Error::CapacityOverflow), and a pool the device
    /// has no room for [`OutOfMemory`](gpuds_core::Error::OutOfMemory); the pool is
    /// unchanged in each case.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = gpuds_slabhash::SlabHashMap::<u32, u32>::new(&gpu, 10)?;
    /// map.reserve(1 << 20)?;
    /// # Ok::<(), gpuds_slabhash::Error>(())
    /// ```
    pub fn reserve(&mut self, additional: usize) -> Result<()> {
        self.table.reserve(additional)
    }

    /// Inserts the pairs `keys[i] → values[i]`: REPLACE (the paper's unique-key insert)
    /// in a map with unique keys, INSERT (another instance) in a map with duplicates.
    /// Within one batch, pairs with equal keys are applied in some order. The pool grows
    /// first if the batch may need it. Synchronizes.
    ///
    /// Fails with [`Error::ReservedKey`] (nothing applied), or with
    /// [`gpuds_core::Error::NotApplied`] (in [`Error::Core`]) naming exactly the pairs
    /// that were not applied, because their key's list was full at the step cap
    /// ([`LIST_FULL`](crate::LIST_FULL)), the slab pool was exhausted
    /// (`Status::POOL_EXHAUSTED`) or contention passed a retry cap (`Status::RETRY_LIMIT`).
    /// Every other pair was applied; the map is valid, and later calls see exactly what
    /// was applied.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = gpuds_slabhash::SlabHashMap::<u32, u32>::new(&gpu, 10)?;
    /// map.insert_many(&[5, 6], &[50, 60])?;
    /// assert!(map.insert_many(&[u32::MAX], &[0]).is_err());
    /// # Ok::<(), gpuds_slabhash::Error>(())
    /// ```
    pub fn insert_many(
        &mut self,
        keys: &(impl BatchInput<K> + ?Sized),
        values: &(impl BatchInput<V> + ?Sized),
    ) -> Result<()> {
        let unique = self.config().unique_keys;
        self.store(keys, values, unique, "insert_many")
    }

    fn store(
        &mut self,
        keys: &(impl BatchInput<K> + ?Sized),
        values: &(impl BatchInput<V> + ?Sized),
        unique: bool,
        what: &'static str,
    ) -> Result<()> {
        let n = keys.len();
        if values.len() != n {
            return Err(Error::LengthMismatch {
                what,
                left: n,
                right: values.len(),
            });
        }
        if n == 0 {
            return Ok(());
        }
        let gpu = self.table.gpu().clone();
        let k = keys.stage(&gpu)?;
        let guard = self.table.check_keys(keys, &k.view())?;
        let v = values.stage(&gpu)?;
        self.table.reserve_for(n)?;
        let call = self.table.begin_call(n, true)?;
        // REPLACE runs each lane alone first at half occupancy, INSERT (a multimap's) the
        // warp walk at full: one body, two entry points (slabhash.cu).
        let kernel = self
            .table
            .kernel(if unique { "insert" } else { "insert_dup" })?;
        let r = self.table.call_ref(&call);
        let (n64, unique, null, failed) = (n as u64, unique as u32, 0u64, call.bits_ptr());
        let (kv, vv) = (k.view(), v.view());
        let stream = gpu.stream();
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&r)
            .arg(&kv)
            .arg(&vv)
            .arg(&n64)
            .arg(&unique)
            .arg(&null)
            .arg(&null);
        guard.push(&mut args);
        args.arg(&failed);
        // SAFETY: the kernel reads keys[..n] and values[..n] and the table's memory, and
        // writes the call's status and failure bits.
        unsafe { args.launch(self.table.item_shape(n)?) }?;
        self.table.finish_keys(&call, &guard, &kv)
    }

    /// SEARCH for every key: its value (the least recent instance), or `None`.
    /// Synchronizes.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = gpuds_slabhash::SlabHashMap::<u32, u32>::new(&gpu, 10)?;
    /// map.insert_many(&[1], &[10])?;
    /// assert_eq!(map.get_many(&[1, 2])?, vec![Some(10), None]);
    /// # Ok::<(), gpuds_slabhash::Error>(())
    /// ```
    pub fn get_many(&self, keys: &(impl BatchInput<K> + ?Sized)) -> Result<Vec<Option<V>>> {
        let n = keys.len();
        if n == 0 {
            return Ok(Vec::new());
        }
        let stream = self.table.gpu().stream();
        let mut values = stream.alloc_zeros::<V>(n)?;
        let mut found = stream.alloc_zeros::<u32>(n.div_ceil(32))?;
        self.find(keys, &mut values, Some(&mut found))?;
        let values = stream.clone_dtoh(&values)?;
        let found = stream.clone_dtoh(&found)?;
        Ok(values
            .into_iter()
            .enumerate()
            .map(|(i, v)| (found[i / 32] >> (i % 32) & 1 == 1).then_some(v))
            .collect())
    }

    /// SEARCH for every key into device memory: `out[i]` gets key `i`'s value, or
    /// [`SlabValue::NOT_FOUND`] (all ones) when it is missing; a value equal to all ones
    /// is therefore ambiguous here (use [`get_many`](Self::get_many)). Device keys are
    /// checked for reserved values on the device, right before the search; host keys
    /// are checked on the host and copied. Synchronizes once at the end, to read the
    /// call's own status: a lookup the kernel could not answer (only a corrupted list
    /// has more slabs than the step cap) is named in
    /// [`gpuds_core::Error::NotApplied`], never left as a silent "missing", and nothing
    /// of this call is left for a later one to report.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = gpuds_slabhash::SlabHashMap::<u32, u32>::new(&gpu, 10)?;
    /// map.insert_many(&[1], &[10])?;
    /// let mut out = gpu.stream().alloc_zeros::<u32>(2)?;
    /// map.get_many_into(&[1, 2], &mut out)?;
    /// assert_eq!(gpu.stream().clone_dtoh(&out)?, vec![10, u32::MAX]);
    /// # Ok::<(), gpuds_slabhash::Error>(())
    /// ```
    pub fn get_many_into(
        &self,
        keys: &(impl BatchInput<K> + ?Sized),
        out: &mut CudaSlice<V>,
    ) -> Result<()> {
        if out.len() < keys.len() {
            return Err(Error::LengthMismatch {
                what: "get_many_into",
                left: keys.len(),
                right: out.len(),
            });
        }
        if keys.is_empty() {
            return Ok(());
        }
        self.find(keys, out, None)
    }

    /// SEARCH for non-empty `keys`, checked at its end. Synchronizes.
    fn find(
        &self,
        keys: &(impl BatchInput<K> + ?Sized),
        values: &mut CudaSlice<V>,
        found: Option<&mut CudaSlice<u32>>,
    ) -> Result<()> {
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
        args.arg(&r).arg(&kv).arg(&n64).arg(values);
        match found {
            Some(f) => args.arg(f),
            None => args.arg(&null),
        };
        guard.push(&mut args);
        args.arg(&failed);
        // SAFETY: the kernel reads keys[..n] and writes values[..n], found[..n/32] and
        // the call's status and failure bits.
        unsafe { args.launch(self.table.item_shape(n)?) }?;
        drop(args);
        self.table.check_read(&call, &guard, &kv)
    }

    /// Whether each key is present. Synchronizes.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = gpuds_slabhash::SlabHashMap::<u32, u32>::new(&gpu, 10)?;
    /// map.insert_many(&[1], &[10])?;
    /// assert_eq!(map.contains_many(&[1, 2])?, vec![true, false]);
    /// # Ok::<(), gpuds_slabhash::Error>(())
    /// ```
    pub fn contains_many(&self, keys: &(impl BatchInput<K> + ?Sized)) -> Result<Vec<bool>> {
        Ok(self.get_many(keys)?.iter().map(Option::is_some).collect())
    }

    /// DELETE: removes each key's least recent instance (missing keys are no error). The
    /// slot stays a tombstone until [`flush`](Self::flush). Synchronizes.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = gpuds_slabhash::SlabHashMap::<u32, u32>::new(&gpu, 10)?;
    /// map.insert_many(&[1, 2], &[10, 20])?;
    /// map.remove_many(&[1, 3])?;
    /// assert_eq!(map.len()?, 1);
    /// # Ok::<(), gpuds_slabhash::Error>(())
    /// ```
    pub fn remove_many(&mut self, keys: &(impl BatchInput<K> + ?Sized)) -> Result<()> {
        self.remove("erase", keys, 2)
    }

    /// Launches an erase kernel whose `outputs` output pointers are all null.
    fn remove(
        &mut self,
        kernel: &str,
        keys: &(impl BatchInput<K> + ?Sized),
        outputs: usize,
    ) -> Result<()> {
        let n = keys.len();
        if n == 0 {
            return Ok(());
        }
        let gpu = self.table.gpu().clone();
        let k = keys.stage(&gpu)?;
        let guard = self.table.check_keys(keys, &k.view())?;
        let call = self.table.begin_call(n, false)?;
        let kernel = self.table.kernel(kernel)?;
        let r = self.table.call_ref(&call);
        let (n64, null, failed) = (n as u64, 0u64, call.bits_ptr());
        let kv = k.view();
        let stream = gpu.stream();
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&r).arg(&kv).arg(&n64);
        for _ in 0..outputs {
            args.arg(&null);
        }
        guard.push(&mut args);
        args.arg(&failed);
        // SAFETY: the kernel reads keys[..n] and writes the call's status and failure
        // bits; its output pointers are null.
        unsafe { args.launch(self.table.item_shape(n)?) }?;
        self.table.finish_keys(&call, &guard, &kv)
    }

    /// Runs a mixed batch in one kernel: inserts, removes and gets, each request served
    /// concurrently with the others (as the paper's concurrent benchmark), and returns
    /// what each saw. Operations on different keys commute; several on one key take
    /// effect in some order. Synchronizes.
    ///
    /// ```no_run
    /// use gpuds_slabhash::{MapOp, OpResult, SlabHashMap};
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = SlabHashMap::<u32, u32>::new(&gpu, 10)?;
    /// map.insert_many(&[1], &[10])?;
    /// let seen = map.apply(&[MapOp::Insert(1, 11), MapOp::Get(2), MapOp::Remove(3)])?;
    /// assert_eq!(seen, vec![OpResult::Present(10), OpResult::Absent, OpResult::Absent]);
    /// # Ok::<(), gpuds_slabhash::Error>(())
    /// ```
    pub fn apply(&mut self, ops: &[MapOp<K, V>]) -> Result<Vec<OpResult<V>>> {
        let batch = DeviceBatch::map(self.table.gpu(), ops)?;
        self.apply_batch(&batch)?.to_host()
    }

    /// [`apply`](Self::apply) for a batch already on the device; the results stay on
    /// the device. Synchronizes (to read the status word).
    ///
    /// ```no_run
    /// use gpuds_slabhash::{DeviceBatch, MapOp, OpResult, SlabHashMap};
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = SlabHashMap::<u32, u32>::new(&gpu, 10)?;
    /// let batch = DeviceBatch::map(&gpu, &[MapOp::Insert(4, 40)])?;
    /// assert_eq!(map.apply_batch(&batch)?.to_host()?, vec![OpResult::Absent]);
    /// # Ok::<(), gpuds_slabhash::Error>(())
    /// ```
    pub fn apply_batch(&mut self, batch: &DeviceBatch<K, V>) -> Result<BatchResults<V>> {
        self.table.apply(batch)
    }

    /// FLUSH: compacts every bucket's list into the fewest slabs (dropping tombstones,
    /// keeping the order of the rest) and returns the freed slabs to the pool; returns
    /// how many were freed. Runs alone on the table. Synchronizes.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = gpuds_slabhash::SlabHashMap::<u32, u32>::new(&gpu, 10)?;
    /// let keys: Vec<u32> = (0..1000).collect();
    /// map.insert_many(&keys, &keys)?;
    /// map.remove_many(&keys[..900])?;
    /// let freed = map.flush()?;
    /// assert!(freed > 0);
    /// assert_eq!(map.len()?, 100);
    /// # Ok::<(), gpuds_slabhash::Error>(())
    /// ```
    pub fn flush(&mut self) -> Result<u64> {
        self.table.flush()
    }

    /// Number of live pairs (instances, with duplicates), exact: kernels keep it with
    /// warp-aggregated atomics. Synchronizes.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// let map = gpuds_slabhash::SlabHashMap::<u32, u32>::new(&gpu, 10)?;
    /// assert_eq!(map.len()?, 0);
    /// # Ok::<(), gpuds_slabhash::Error>(())
    /// ```
    pub fn len(&self) -> Result<usize> {
        Ok(self.table.len()? as usize)
    }

    /// `true` when no pair is live. Synchronizes.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// let map = gpuds_slabhash::SlabHashMap::<u32, u32>::new(&gpu, 10)?;
    /// assert!(map.is_empty()?);
    /// # Ok::<(), gpuds_slabhash::Error>(())
    /// ```
    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }

    /// Removes everything and returns every slab to the pool (the base slabs stay).
    /// Does not synchronize.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = gpuds_slabhash::SlabHashMap::<u32, u32>::new(&gpu, 10)?;
    /// map.insert_many(&[1], &[10])?;
    /// map.clear()?;
    /// assert!(map.is_empty()?);
    /// # Ok::<(), gpuds_slabhash::Error>(())
    /// ```
    pub fn clear(&mut self) -> Result<()> {
        self.table.clear()
    }

    /// Every live pair, in no particular order. Synchronizes.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = gpuds_slabhash::SlabHashMap::<u32, u32>::new(&gpu, 10)?;
    /// map.insert_many(&[1, 2], &[10, 20])?;
    /// let mut pairs = map.to_vec()?;
    /// pairs.sort();
    /// assert_eq!(pairs, vec![(1, 10), (2, 20)]);
    /// # Ok::<(), gpuds_slabhash::Error>(())
    /// ```
    pub fn to_vec(&self) -> Result<Vec<(K, V)>> {
        let (keys, values) = self.table.export::<K, V>()?;
        Ok(keys.into_iter().zip(values).collect())
    }

    /// Shape and memory use: slabs per bucket, β, the paper's memory utilization, bytes.
    /// Synchronizes.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// let map = gpuds_slabhash::SlabHashMap::<u32, u32>::new(&gpu, 1000)?;
    /// let s = map.stats()?;
    /// assert_eq!(s.slabs, s.buckets); // only base slabs so far
    /// # Ok::<(), gpuds_slabhash::Error>(())
    /// ```
    pub fn stats(&self) -> Result<SlabHashStats> {
        self.table.stats()
    }

    /// Injects faults into the slab pool (tests only: the `fault-injection` feature; see
    /// [`gpuds_alloc::faults`]); `Faults::default()` lifts them.
    #[cfg(feature = "fault-injection")]
    pub fn inject_faults(&mut self, faults: gpuds_alloc::faults::Faults) -> Result<()> {
        self.table.inject_faults(faults)
    }

    /// The slab pool's allocation requests since faults were injected (tests only).
    /// Synchronizes.
    #[cfg(feature = "fault-injection")]
    pub fn fault_requests(&self) -> Result<u32> {
        self.table.fault_requests()
    }

    /// Reports (and clears) what user kernels recorded in the map's status word through
    /// [`device_ref`](Self::device_ref) (as [`Error::Kernel`]), and re-reads the counters
    /// they moved. Host calls never read that word: each reports its own kernels' flags
    /// only. Synchronizes.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = gpuds_slabhash::SlabHashMap::<u32, u32>::new(&gpu, 10)?;
    /// let r = map.device_ref();
    /// // ... a kernel inserts through `r` ...
    /// # let _ = r;
    /// map.refresh()?;
    /// # Ok::<(), gpuds_slabhash::Error>(())
    /// ```
    pub fn refresh(&mut self) -> Result<()> {
        self.table.refresh()
    }

    /// Checks every invariant on a host copy: every list well formed (allocated slabs,
    /// reached once, claimed slots before empty ones, keys in their buckets), no key
    /// twice with unique keys, the counters agree, and the pool holds exactly the
    /// reachable slabs. Synchronizes; copies the whole table.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// let map = gpuds_slabhash::SlabHashMap::<u32, u32>::new(&gpu, 10)?;
    /// map.validate()?;
    /// # Ok::<(), gpuds_slabhash::Error>(())
    /// ```
    pub fn validate(&self) -> Result<()> {
        self.table.validate().map(drop)
    }
}
