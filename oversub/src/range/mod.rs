//! [`RangeTable`]: the paper's two-level table (HT-OVS, §4.1, Algorithm 4): an outer
//! array of key ranges (h_o(K) = K / RNG) and one flat inner table per range in use,
//! allocated on first use in the configured [`Placement`]; batches sorted by key before
//! they run, so that nearby keys are processed together and land in the same inner table.

mod config;
pub(crate) mod home;
mod plan;
mod queries;
mod schedule;
mod tier;

use cudarc::driver::{CudaSlice, DevicePtr, DeviceRepr, PushKernelArg, ValidAsZeroBits};
use gpuds_core::failures::CallStatus;
use gpuds_core::primitives::{self, RadixSorter};
use gpuds_core::{Gpu, Module};

pub use config::RangeTableConfig;
use home::Home;
use plan::Run;
use tier::Cache;

use crate::batch::{check_device_keys, check_host_keys, same_len, shape, Failures};
use crate::error::{Error, Result};
use crate::flat::{check_slots, live_pairs, windows_for, WINDOW};
use crate::placement::{Placement, Region};
use crate::TableStats;

/// A batch's keys sorted on the device, and each key's position in the caller's batch.
type Sorted = (CudaSlice<u32>, CudaSlice<u64>);

/// How a batch uses the inner tables of the ranges it touches (tiered: which tables it
/// needs in the cache, and whether it dirties them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Access {
    /// Lookups: read only.
    Lookup,
    /// Removals: write, but a table holding no key has nothing to remove.
    Remove,
    /// Inserts (and counting): write, into any table of the range.
    Insert,
}

impl Access {
    fn writes(self) -> bool {
        self != Access::Lookup
    }
}

/// One outer entry, as `gpuds::oversub::range_entry`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct RangeEntry {
    inner: u64,
    count: u64,
}
// SAFETY: plain data with the layout of range_entry.
unsafe impl DeviceRepr for RangeEntry {}
// SAFETY: all zero bits is an empty range.
unsafe impl ValidAsZeroBits for RangeEntry {}

/// The `#[repr(C)]` mirror of `gpuds::oversub::range_table`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct RangeRef {
    outer: u64,
    num_ranges: u64,
    inner_windows: u64,
    count: u64,
    status: u64,
    range_shift: u32,
    pad: u32,
}
// SAFETY: plain data with the layout of range_table.
unsafe impl DeviceRepr for RangeRef {}

/// The two-level hash table of u32 keys and values (keys 1 ..= 2^32 - 2). Each range of
/// RNG consecutive keys has its own flat inner table of RNG / load factor slots, made
/// when a batch first touches the range; a lookup in a range that has no key answers at
/// once. Every batch is sorted by key on the device first (the sort is part of the
/// call), and results come back in the caller's order.
///
/// ```no_run
/// use gpuds_oversub::{RangeTable, RangeTableConfig, Placement};
/// let gpu = gpuds_core::Gpu::new(0)?;
/// let config = RangeTableConfig { range_bits: 16, placement: Placement::HostMapped, ..Default::default() };
/// let mut t = RangeTable::with_config(&gpu, config)?;
/// t.insert_many(&[3, 1 << 20, 3], &[30, 40, 31])?;
/// assert_eq!(t.len()?, 2);
/// assert_eq!(t.get_many(&[1 << 20, 4])?, vec![Some(40), None]);
/// assert_eq!(t.stats().containers, 2); // two ranges in use
/// # Ok::<(), gpuds_oversub::Error>(())
/// ```
pub struct RangeTable {
    gpu: Gpu,
    module: Module,
    config: RangeTableConfig,
    outer: CudaSlice<RangeEntry>,
    inners: Vec<Option<Home>>,
    inner_windows: u64,
    count: CudaSlice<u64>,
    sorter: RadixSorter,
    /// The device cache of the tiered placement.
    cache: Option<Cache>,
}

impl std::fmt::Debug for RangeTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RangeTable")
            .field("config", &self.config)
            .field(
                "ranges_in_use",
                &self.inners.iter().filter(|i| i.is_some()).count(),
            )
            .finish()
    }
}

impl RangeTable {
    /// An empty table with the default configuration (RNG 2^20, device memory).
    pub fn new(gpu: &Gpu) -> Result<Self> {
        Self::with_config(gpu, RangeTableConfig::default())
    }

    /// An empty table with the given configuration. Synchronizes.
    pub fn with_config(gpu: &Gpu, config: RangeTableConfig) -> Result<Self> {
        config.validate()?;
        let num_ranges = 1usize << (32 - config.range_bits);
        let inner_windows = windows_for(config.keys_per_inner(), config.load_factor)?;
        let cache = match config.placement {
            Placement::Tiered {
                device_budget_bytes,
            } => Some(Cache::new(
                gpu,
                device_budget_bytes,
                inner_windows * WINDOW * 8,
                num_ranges,
            )?),
            _ => None,
        };
        Ok(Self {
            gpu: gpu.clone(),
            module: gpu.load(&crate::kernels::program())?,
            config,
            outer: gpu.stream().alloc_zeros::<RangeEntry>(num_ranges)?,
            inners: (0..num_ranges).map(|_| None).collect(),
            inner_windows,
            count: gpu.stream().alloc_zeros::<u64>(1)?,
            sorter: RadixSorter::new(gpu)?,
            cache,
        })
    }

    fn table_ref(&self, status: u64) -> RangeRef {
        let stream = self.gpu.stream();
        RangeRef {
            outer: self.outer.device_ptr(stream).0,
            num_ranges: self.inners.len() as u64,
            inner_windows: self.inner_windows,
            count: self.count.device_ptr(stream).0,
            status,
            range_shift: self.config.range_bits,
            pad: 0,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &RangeTableConfig {
        &self.config
    }

    /// Live keys. Synchronizes.
    pub fn len(&self) -> Result<u64> {
        Ok(self.gpu.stream().clone_dtoh(&self.count)?[0])
    }

    /// Whether no key is live. Synchronizes.
    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }

    /// Inserts or replaces `keys[i] -> values[i]` (duplicates inside a batch keep one of
    /// their values), in batches of `config.batch`, each sorted by key on the device and
    /// given the inner tables of the ranges it touches first. A reserved key fails the
    /// call before anything is applied. Keys that found no slot in their full inner
    /// table fail the call with [`gpuds_core::Error::NotApplied`] naming their positions
    /// in `keys` (not the sorted order); every other key of the call applied.
    /// Synchronizes.
    pub fn insert_many(&mut self, keys: &[u32], values: &[u32]) -> Result<()> {
        same_len("keys and values", keys.len(), values.len())?;
        self.host_batches("range_insert_u32", keys, values)
    }

    /// Runs `kernel` over host keys and their values (or deltas) in batches of
    /// `config.batch`, after checking every key.
    fn host_batches(&mut self, kernel: &str, keys: &[u32], values: &[u32]) -> Result<()> {
        check_host_keys(keys)?;
        let stream = self.gpu.stream().clone();
        let mut failures = Failures::default();
        for (c, (kc, vc)) in keys
            .chunks(self.config.batch)
            .zip(values.chunks(self.config.batch))
            .enumerate()
        {
            let (k, v) = (stream.clone_htod(kc)?, stream.clone_htod(vc)?);
            failures.take(self.run(kernel, k, v), c * self.config.batch)?;
        }
        failures.finish(())
    }

    /// [`insert_many`](Self::insert_many) of one batch on the device (checked on the
    /// device; errors name positions in these arrays).
    pub fn insert_many_device(
        &mut self,
        keys: CudaSlice<u32>,
        values: CudaSlice<u32>,
    ) -> Result<()> {
        same_len("keys and values", keys.len(), values.len())?;
        check_device_keys(&self.gpu, &self.module.kernel("first_reserved_u32")?, &keys)?;
        self.run("range_insert_u32", keys, values)
    }

    /// Adds `deltas[i]` to the value of `keys[i]` (atomically), inserting it with
    /// `deltas[i]` when absent: counting. Batches as [`insert_many`](Self::insert_many).
    /// Synchronizes.
    pub fn add_many(&mut self, keys: &[u32], deltas: &[u32]) -> Result<()> {
        same_len("keys and deltas", keys.len(), deltas.len())?;
        self.host_batches("range_add_u32", keys, deltas)
    }

    /// One batch: sorted with each key's position (the values stay in the caller's
    /// order), so the failures the kernel marks are the caller's positions.
    fn run(&mut self, name: &str, keys: CudaSlice<u32>, values: CudaSlice<u32>) -> Result<()> {
        let n = keys.len();
        if n == 0 {
            return Ok(());
        }
        let (keys, index) = self.sorted_with_index(keys, 0)?;
        self.make_inners(&keys)?;
        let call = CallStatus::new(&self.gpu, n)?;
        let kernel = self.module.kernel(name)?;
        self.for_each_run(&keys, Access::Insert, &mut |t, run| {
            let r = t.table_ref(call.status_ptr());
            let (len64, failed) = (run.len as u64, call.bits_ptr());
            let span = run.start..run.start + run.len;
            let (k, ix) = (keys.slice(span.clone()), index.slice(span));
            let mut args = t.gpu.stream().launch_builder(kernel.func());
            args.arg(&r)
                .arg(&k)
                .arg(&ix)
                .arg(&values)
                .arg(&len64)
                .arg(&failed);
            // SAFETY: reads the run of the sorted batch and the values at its positions
            // (below n); every range it touches has its inner table on the device.
            unsafe { args.launch(shape(&t.gpu, &kernel, run.len)?) }?;
            Ok(())
        })?;
        call.check()?;
        Ok(())
    }

    /// Launches `launch` (a kernel on the table's stream) for the sorted batch `keys`:
    /// once for every key, or (tiered) once per run of ranges whose inner tables the
    /// cache holds, brought in first (`access` says which it needs and whether they are
    /// dirtied); see `tier`.
    fn for_each_run(
        &mut self,
        keys: &CudaSlice<u32>,
        access: Access,
        launch: &mut dyn FnMut(&RangeTable, &Run) -> Result<()>,
    ) -> Result<()> {
        if self.cache.is_some() {
            return self.tiered_runs(keys, access, launch);
        }
        let every = Run {
            start: 0,
            len: keys.len(),
            ranges: Vec::new(),
        };
        launch(self, &every)
    }

    /// A word per range that `kernel` (`range_need`, `range_histogram`) computes from
    /// the keys. Synchronizes.
    fn per_range(&self, kernel: &str, keys: &CudaSlice<u32>) -> Result<Vec<u32>> {
        let stream = self.gpu.stream();
        let mut out = stream.alloc_zeros::<u32>(self.inners.len())?;
        let kernel = self.module.kernel(kernel)?;
        let r = self.table_ref(0);
        let n64 = keys.len() as u64;
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&r).arg(keys).arg(&n64).arg(&mut out);
        // SAFETY: reads the keys and the outer array; writes out[range].
        unsafe { args.launch(shape(&self.gpu, &kernel, keys.len())?) }?;
        Ok(stream.clone_dtoh(&out)?)
    }

    /// Bytes of one inner table.
    fn inner_bytes(&self) -> u64 {
        self.inner_windows * WINDOW * 8
    }

    /// Allocates the inner tables of the ranges `keys` touch that have none.
    fn make_inners(&mut self, keys: &CudaSlice<u32>) -> Result<()> {
        let need = self.per_range("range_need_u32", keys)?;
        let new: Vec<usize> = need
            .iter()
            .enumerate()
            .filter(|&(range, &flag)| flag != 0 && self.inners[range].is_none())
            .map(|(range, _)| range)
            .collect();
        self.add_inners(&new)
    }

    /// Makes the inner tables of every range that holds a key of `keys` and has none
    /// yet, in one allocation, so that later batches into those ranges allocate nothing
    /// (pinned host memory, for the host-mapped and tiered placements, costs far more to
    /// allocate than device memory). A table that knows its key domain ahead can pay for
    /// its memory up front, as [`FlatTable::new`](crate::FlatTable::new) does.
    /// Synchronizes.
    ///
    /// ```no_run
    /// use gpuds_oversub::{Placement, RangeTable, RangeTableConfig};
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let config = RangeTableConfig { range_bits: 16, placement: Placement::HostMapped, ..Default::default() };
    /// let mut t = RangeTable::with_config(&gpu, config)?;
    /// t.reserve(1..=(3 << 16) - 1)?; // ranges 0, 1 and 2
    /// assert_eq!(t.stats().containers, 3);
    /// t.insert_many(&[5, 1 << 16], &[50, 60])?; // allocates nothing
    /// # Ok::<(), gpuds_oversub::Error>(())
    /// ```
    pub fn reserve(&mut self, keys: std::ops::RangeInclusive<u32>) -> Result<()> {
        if keys.is_empty() {
            return Ok(());
        }
        let shift = self.config.range_bits;
        let (first, last) = (
            (*keys.start() >> shift) as usize,
            (*keys.end() >> shift) as usize,
        );
        let new: Vec<usize> = (first..=last)
            .filter(|&r| self.inners[r].is_none())
            .collect();
        self.add_inners(&new)?;
        self.gpu.stream().synchronize()?;
        Ok(())
    }

    /// Makes the inner tables of `new` (ranges without one), in one allocation.
    fn add_inners(&mut self, new: &[usize]) -> Result<()> {
        let mut ranges = Vec::with_capacity(new.len());
        let mut inners = Vec::with_capacity(new.len());
        if !new.is_empty() {
            let bytes = self.inner_bytes();
            let total = bytes.checked_mul(new.len() as u64).ok_or_else(|| {
                gpuds_core::Error::CapacityOverflow(format!("{} inner tables", new.len()))
            })?;
            let block = std::sync::Arc::new(Region::new(&self.gpu, self.config.placement, total)?);
            for (j, &range) in new.iter().enumerate() {
                let home = Home {
                    block: block.clone(),
                    offset: j as u64 * bytes,
                    bytes,
                    fresh: true,
                };
                ranges.push(range as u32);
                inners.push(home.device_ptr());
                self.inners[range] = Some(home);
            }
        }
        if ranges.is_empty() || self.cache.is_some() {
            // A tiered home is reached only through the cache (see `tier`).
            return Ok(());
        }
        let stream = self.gpu.stream();
        let r = self.table_ref(0);
        let (dr, di) = (stream.clone_htod(&ranges)?, stream.clone_htod(&inners)?);
        let kernel = self.module.kernel("range_set_inner_u32")?;
        let m = ranges.len() as u64;
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&r).arg(&dr).arg(&di).arg(&m);
        // SAFETY: writes outer[ranges[j]].inner for j < m (every range below num_ranges).
        unsafe { args.launch(shape(&self.gpu, &kernel, ranges.len())?) }?;
        Ok(())
    }

    /// Tiered: writes every dirty cached inner table back to its home (no-op for the
    /// other placements). Synchronizes.
    ///
    /// ```no_run
    /// use gpuds_oversub::{Placement, RangeTable, RangeTableConfig};
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let tiered = Placement::Tiered { device_budget_bytes: 4 << 20 };
    /// let config = RangeTableConfig { range_bits: 16, placement: tiered, ..Default::default() };
    /// let mut t = RangeTable::with_config(&gpu, config)?;
    /// t.insert_many(&[1, 2, 3], &[10, 20, 30])?;
    /// t.write_back()?;
    /// assert!(t.stats().moved_out >= 1);
    /// # Ok::<(), gpuds_oversub::Error>(())
    /// ```
    pub fn write_back(&mut self) -> Result<()> {
        self.flush()
    }

    /// The words of `range`'s inner table as the device sees them now (its cache slot
    /// when cached, else its home).
    fn inner_words(&self, range: usize, home: &Home) -> Result<Vec<u64>> {
        if let Some(cache) = &self.cache {
            if let Some(at) = cache.map.slot_of(range) {
                return cache.regions[at].to_host_words();
            }
        }
        home.to_host_words()
    }

    /// `keys` sorted on the device, with each key's position (`base` plus its place in
    /// `keys`).
    fn sorted_with_index(&mut self, mut keys: CudaSlice<u32>, base: u64) -> Result<Sorted> {
        let mut index = self.gpu.stream().alloc_zeros::<u64>(keys.len())?;
        primitives::iota(&self.gpu, &mut index, base)?;
        self.sorter.sort_pairs(&mut keys, &mut index)?;
        Ok((keys, index))
    }

    /// Bytes per tier and inner tables in use. Does not synchronize.
    pub fn stats(&self) -> TableStats {
        let mut s = TableStats::default();
        s.add(
            Placement::Device,
            (self.inners.len() * std::mem::size_of::<RangeEntry>()) as u64,
        );
        for home in self.inners.iter().flatten() {
            s.add(home.placement(), home.bytes);
            s.containers += 1;
        }
        if let Some(cache) = &self.cache {
            for region in &cache.regions {
                s.add(Placement::Device, region.bytes());
            }
            s.moved_in = cache.moved_in;
            s.moved_out = cache.moved_out;
            s.overlapped_in = cache.overlapped_in;
            s.link_bytes = cache.link_bytes;
            s.copy_wait_ns = cache.copy_wait_ns;
        }
        s
    }

    /// Every live pair, range by range. Synchronizes; copies the inner tables.
    pub fn to_vec(&self) -> Result<Vec<(u32, u32)>> {
        if let Some(cache) = &self.cache {
            cache.ready()?;
        }
        let mut out = Vec::new();
        for (range, region) in self.inners.iter().enumerate() {
            if let Some(region) = region {
                out.extend(live_pairs(&self.inner_words(range, region)?));
            }
        }
        Ok(out)
    }

    /// Checks every inner table (see [`FlatTable::validate`](crate::FlatTable::validate)),
    /// that each key lies in its table's range, that each range's count equals its live
    /// keys and the total equals their sum. Synchronizes; copies the table.
    pub fn validate(&self) -> Result<()> {
        if let Some(cache) = &self.cache {
            cache.ready()?;
        }
        let outer = self.gpu.stream().clone_dtoh(&self.outer)?;
        let mut total = 0u64;
        for (range, (entry, region)) in outer.iter().zip(&self.inners).enumerate() {
            match region {
                None => {
                    if entry.inner != 0 || entry.count != 0 {
                        return Err(Error::Invalid(format!(
                            "range {range} has no inner table but an entry"
                        )));
                    }
                }
                Some(region) => {
                    let expected = match &self.cache {
                        Some(cache) => cache
                            .map
                            .slot_of(range)
                            .map_or(0, |at| cache.regions[at].device_ptr()),
                        None => region.device_ptr(),
                    };
                    if entry.inner != expected {
                        return Err(Error::Invalid(format!(
                            "range {range}: its entry names another table"
                        )));
                    }
                    let words = self.inner_words(range, region)?;
                    if let Some(&(k, _)) = live_pairs(&words)
                        .iter()
                        .find(|(k, _)| (*k as usize) >> self.config.range_bits != range)
                    {
                        return Err(Error::Invalid(format!(
                            "key {k} is in the table of range {range}"
                        )));
                    }
                    let live = check_slots(&words, self.inner_windows, &format!("range {range}"))?;
                    if live != entry.count {
                        return Err(Error::Invalid(format!(
                            "range {range}: count {} but {live} keys",
                            entry.count
                        )));
                    }
                    total += live;
                }
            }
        }
        let count = self.len()?;
        if count != total {
            return Err(Error::Invalid(format!(
                "total count {count} but {total} keys"
            )));
        }
        Ok(())
    }
}

impl Drop for RangeTable {
    fn drop(&mut self) {
        // Every call leaves the copy and write-back streams idle; after a failed one,
        // wait for its copies before the slots and homes they use are freed.
        if let Some(cache) = &self.cache {
            cache.idle();
        }
    }
}
