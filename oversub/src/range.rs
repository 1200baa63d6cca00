//! [`RangeTable`]: the paper's two-level table (HT-OVS, §4.1, Algorithm 4): an outer
//! array of key ranges (h_o(K) = K / RNG) and one flat inner table per range in use,
//! allocated on first use in the configured [`Placement`]; batches sorted by key before
//! they run, so that nearby keys are processed together and land in the same inner table.

use cudarc::driver::{CudaSlice, DevicePtr, DeviceRepr, PushKernelArg, ValidAsZeroBits};
use gpuds_core::failures::CallStatus;
use gpuds_core::primitives::{self, RadixSorter};
use gpuds_core::{Gpu, Module};

use crate::batch::{bits, check_device_keys, check_host_keys, same_len, shape};
use crate::error::{Error, Result};
use crate::flat::{check_slots, live_pairs, windows_for, WINDOW};
use crate::placement::{Placement, Region};
use crate::TableStats;

fn check_copy(r: cudarc::driver::sys::CUresult) -> Result<()> {
    if r == cudarc::driver::sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(gpuds_core::Error::InvalidArgument(format!(
            "a copy between host and device failed: {r:?}"
        ))
        .into())
    }
}

/// How a [`RangeTable`] is built.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RangeTableConfig {
    /// log2 of the keys per range (RNG = 2^range_bits; the paper's 2^20 by default).
    pub range_bits: u32,
    /// The load factor of a full inner table.
    pub load_factor: f64,
    /// Keys one inner table holds; 0 (the default, the paper's design) sizes it for every
    /// key of its range. A smaller number saves memory when keys are sparse (a few per
    /// range), and a range that gets more keys than that fails them with `TABLE_FULL`.
    pub inner_keys: u64,
    /// Keys per kernel launch (GBS; the paper's 10^9): larger batches are split.
    pub batch: usize,
    /// Where the inner tables live (the outer array is on the device).
    pub placement: Placement,
}

impl Default for RangeTableConfig {
    fn default() -> Self {
        Self {
            range_bits: 20,
            load_factor: 0.5,
            inner_keys: 0,
            batch: 1_000_000_000,
            placement: Placement::Device,
        }
    }
}

impl RangeTableConfig {
    /// Checks the configuration: range bits in 8 ..= 28, a load factor in (0, 1], a
    /// nonzero batch.
    pub fn validate(&self) -> Result<()> {
        if !(8..=28).contains(&self.range_bits) {
            return Err(Error::Config(format!(
                "range_bits must be in 8..=28, got {}",
                self.range_bits
            )));
        }
        if self.batch == 0 {
            return Err(Error::Config("batch must be at least 1".into()));
        }
        windows_for(self.keys_per_inner(), self.load_factor).map(|_| ())
    }

    /// Keys one inner table is sized for.
    pub fn keys_per_inner(&self) -> u64 {
        if self.inner_keys == 0 {
            1 << self.range_bits
        } else {
            self.inner_keys.min(1 << self.range_bits)
        }
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

/// Enqueues the copy of a cache slot (`bytes` of `slot`) back to the home of `range`:
/// ordered on the stream after every kernel that wrote the slot.
fn copy_back(
    inners: &[Option<Home>],
    range: usize,
    slot: &Region,
    bytes: usize,
    stream: &cudarc::driver::CudaStream,
) -> Result<()> {
    let home = inners[range]
        .as_ref()
        .ok_or_else(|| Error::Invalid(format!("range {range} cached without a home")))?;
    // SAFETY: both regions hold `bytes`; the stream orders the copy after the kernels.
    check_copy(unsafe {
        cudarc::driver::sys::cuMemcpyDtoHAsync_v2(
            home.host_ptr(),
            slot.device_ptr(),
            bytes,
            stream.cu_stream(),
        )
    })
}

/// The memory of one inner table: a part of a block that every inner table made by one
/// batch shares (one allocation per batch instead of one per table: pinned host
/// allocations are slow), freed with the last of them.
struct Home {
    block: std::sync::Arc<Region>,
    offset: u64,
    bytes: u64,
}

impl Home {
    fn device_ptr(&self) -> u64 {
        match self.block.device_ptr() {
            0 => 0,
            base => base + self.offset,
        }
    }
    fn host_ptr(&self) -> *mut std::ffi::c_void {
        let base = self.block.host_ptr();
        if base.is_null() {
            base
        } else {
            // SAFETY: offset + bytes lie inside the block.
            unsafe { base.cast::<u8>().add(self.offset as usize).cast() }
        }
    }
    fn to_host_words(&self) -> Result<Vec<u64>> {
        self.block.words_at(self.offset, self.bytes)
    }
    fn placement(&self) -> Placement {
        self.block.placement()
    }
    fn bytes(&self) -> u64 {
        self.bytes
    }
}

/// The tiered placement's device cache: slots of one inner table each.
struct Cache {
    slots: Vec<Slot>,
    /// The slot of each range, or NONE.
    resident: Vec<u32>,
    clock: u64,
    moved_in: u64,
    moved_out: u64,
    link_bytes: u64,
}

struct Slot {
    region: Region,
    range: Option<usize>,
    dirty: bool,
    used: u64,
}

const NONE: u32 = u32::MAX;

/// A run of a sorted batch: `len` keys from `start`, in `ranges` (ascending).
struct Run {
    start: usize,
    len: usize,
    ranges: Vec<usize>,
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
            } => {
                let inner_bytes = inner_windows * WINDOW * 8;
                let slots = device_budget_bytes / inner_bytes;
                if slots == 0 {
                    return Err(Error::Config(format!(
                        "a device budget of {device_budget_bytes} bytes holds no inner table of {inner_bytes} bytes"
                    )));
                }
                let slots = (0..slots.min(num_ranges as u64))
                    .map(|_| {
                        Ok(Slot {
                            region: Region::new(gpu, Placement::Device, inner_bytes)?,
                            range: None,
                            dirty: false,
                            used: 0,
                        })
                    })
                    .collect::<Result<Vec<_>>>()?;
                Some(Cache {
                    slots,
                    resident: vec![NONE; num_ranges],
                    clock: 0,
                    moved_in: 0,
                    moved_out: 0,
                    link_bytes: 0,
                })
            }
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
    /// call before anything is applied. Synchronizes.
    pub fn insert_many(&mut self, keys: &[u32], values: &[u32]) -> Result<()> {
        same_len("keys and values", keys.len(), values.len())?;
        check_host_keys(keys)?;
        let stream = self.gpu.stream().clone();
        for (kc, vc) in keys
            .chunks(self.config.batch)
            .zip(values.chunks(self.config.batch))
        {
            let (k, v) = (stream.clone_htod(kc)?, stream.clone_htod(vc)?);
            self.run_insert(k, v)?;
        }
        Ok(())
    }

    /// [`insert_many`](Self::insert_many) of one batch on the device (checked on the
    /// device; the arrays are sorted in place).
    pub fn insert_many_device(
        &mut self,
        keys: CudaSlice<u32>,
        values: CudaSlice<u32>,
    ) -> Result<()> {
        same_len("keys and values", keys.len(), values.len())?;
        check_device_keys(&self.gpu, &self.module.kernel("first_reserved_u32")?, &keys)?;
        self.run_insert(keys, values)
    }

    /// Adds `deltas[i]` to the value of `keys[i]` (atomically), inserting it with
    /// `deltas[i]` when absent: counting. Batches as [`insert_many`](Self::insert_many).
    /// Synchronizes.
    pub fn add_many(&mut self, keys: &[u32], deltas: &[u32]) -> Result<()> {
        same_len("keys and deltas", keys.len(), deltas.len())?;
        check_host_keys(keys)?;
        let stream = self.gpu.stream().clone();
        for (kc, dc) in keys
            .chunks(self.config.batch)
            .zip(deltas.chunks(self.config.batch))
        {
            let (k, d) = (stream.clone_htod(kc)?, stream.clone_htod(dc)?);
            self.run("range_add_u32", k, d)?;
        }
        Ok(())
    }

    fn run_insert(&mut self, keys: CudaSlice<u32>, values: CudaSlice<u32>) -> Result<()> {
        self.run("range_insert_u32", keys, values)
    }

    fn run(
        &mut self,
        name: &str,
        mut keys: CudaSlice<u32>,
        mut values: CudaSlice<u32>,
    ) -> Result<()> {
        let n = keys.len();
        if n == 0 {
            return Ok(());
        }
        self.sorter.sort_pairs(&mut keys, &mut values)?;
        self.make_inners(&keys)?;
        let call = CallStatus::new(&self.gpu, n)?;
        let kernel = self.module.kernel(name)?;
        for run in self.runs(&keys)? {
            self.make_resident(&run.ranges, true)?;
            let r = self.table_ref(call.status_ptr());
            let (len64, failed) = (run.len as u64, call.bits_ptr());
            let span = run.start..run.start + run.len;
            let (k, v) = (keys.slice(span.clone()), values.slice(span));
            let stream = self.gpu.stream();
            let mut args = stream.launch_builder(kernel.func());
            args.arg(&r).arg(&k).arg(&v).arg(&len64).arg(&failed);
            // SAFETY: reads the run of the sorted batch; every range it touches has its
            // inner table on the device.
            unsafe { args.launch(shape(&self.gpu, &kernel, run.len)?) }?;
        }
        call.check()?;
        Ok(())
    }

    /// Allocates the inner tables of the ranges `keys` touch that have none.
    fn make_inners(&mut self, keys: &CudaSlice<u32>) -> Result<()> {
        let stream = self.gpu.stream().clone();
        let mut need = stream.alloc_zeros::<u32>(self.inners.len())?;
        let kernel = self.module.kernel("range_need_u32")?;
        let r = self.table_ref(0);
        let n64 = keys.len() as u64;
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&r).arg(keys).arg(&n64).arg(&mut need);
        // SAFETY: reads the keys and the outer array; writes need[range].
        unsafe { args.launch(shape(&self.gpu, &kernel, keys.len())?) }?;
        let need = stream.clone_dtoh(&need)?;
        let new: Vec<usize> = need
            .iter()
            .enumerate()
            .filter(|&(range, &flag)| flag != 0 && self.inners[range].is_none())
            .map(|(range, _)| range)
            .collect();
        let mut ranges = Vec::with_capacity(new.len());
        let mut inners = Vec::with_capacity(new.len());
        if !new.is_empty() {
            let bytes = self.inner_windows * WINDOW * 8;
            let total = bytes.checked_mul(new.len() as u64).ok_or_else(|| {
                gpuds_core::Error::CapacityOverflow(format!("{} inner tables", new.len()))
            })?;
            let block = std::sync::Arc::new(Region::new(&self.gpu, self.config.placement, total)?);
            for (j, &range) in new.iter().enumerate() {
                let home = Home {
                    block: block.clone(),
                    offset: j as u64 * bytes,
                    bytes,
                };
                ranges.push(range as u32);
                inners.push(home.device_ptr());
                self.inners[range] = Some(home);
            }
        }
        if ranges.is_empty() || self.cache.is_some() {
            // A tiered home is reached only through the cache (make_resident).
            return Ok(());
        }
        let (dr, di) = (stream.clone_htod(&ranges)?, stream.clone_htod(&inners)?);
        let kernel = self.module.kernel("range_set_inner_u32")?;
        let m = ranges.len() as u64;
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&r).arg(&dr).arg(&di).arg(&m);
        // SAFETY: writes outer[ranges[j]].inner for j < m (every range below num_ranges).
        unsafe { args.launch(shape(&self.gpu, &kernel, ranges.len())?) }?;
        Ok(())
    }

    /// The runs of a sorted batch: one run of everything, or (tiered) runs of at most as
    /// many ranges as the cache has slots.
    fn runs(&self, keys: &CudaSlice<u32>) -> Result<Vec<Run>> {
        let n = keys.len();
        let Some(cache) = &self.cache else {
            return Ok(vec![Run {
                start: 0,
                len: n,
                ranges: Vec::new(),
            }]);
        };
        let stream = self.gpu.stream().clone();
        let mut counts = stream.alloc_zeros::<u32>(self.inners.len())?;
        let kernel = self.module.kernel("range_histogram_u32")?;
        let r = self.table_ref(0);
        let n64 = n as u64;
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&r).arg(keys).arg(&n64).arg(&mut counts);
        // SAFETY: reads the keys; writes counts[range].
        unsafe { args.launch(shape(&self.gpu, &kernel, n)?) }?;
        let counts = stream.clone_dtoh(&counts)?;
        let mut runs = Vec::new();
        let mut run = Run {
            start: 0,
            len: 0,
            ranges: Vec::new(),
        };
        for (range, &c) in counts.iter().enumerate() {
            if c == 0 {
                continue;
            }
            if run.ranges.len() == cache.slots.len() {
                let start = run.start + run.len;
                let next = Run {
                    start,
                    len: 0,
                    ranges: Vec::new(),
                };
                runs.push(std::mem::replace(&mut run, next));
            }
            run.ranges.push(range);
            run.len += c as usize;
        }
        if run.len > 0 {
            runs.push(run);
        }
        Ok(runs)
    }

    /// Tiered: brings the inner tables of `ranges` (at most the cache's slots) into the
    /// cache, evicting the least recently used others (written back when dirty), and
    /// points their outer entries at their slots; `write` marks them dirty. Enqueued on
    /// the table's stream, so the copies are ordered with the kernels.
    fn make_resident(&mut self, ranges: &[usize], write: bool) -> Result<()> {
        let Some(cache) = &mut self.cache else {
            return Ok(());
        };
        let stream = self.gpu.stream().clone();
        let bytes = (self.inner_windows * WINDOW * 8) as usize;
        let wanted: std::collections::HashSet<usize> = ranges.iter().copied().collect();
        let mut updates: Vec<(u32, u64)> = Vec::new();
        for &range in ranges {
            let Some(home) = &self.inners[range] else {
                continue; // no key ever in this range: lookups answer at once
            };
            cache.clock += 1;
            let at = cache.resident[range];
            if at != NONE {
                let slot = &mut cache.slots[at as usize];
                slot.used = cache.clock;
                slot.dirty |= write;
                continue;
            }
            // A free slot, or the least recently used one this run does not need.
            let victim = cache
                .slots
                .iter()
                .enumerate()
                .filter(|(_, s)| s.range.is_none_or(|r| !wanted.contains(&r)))
                .min_by_key(|(_, s)| (s.range.is_some(), s.used))
                .map(|(i, _)| i)
                .ok_or_else(|| {
                    Error::Invalid("a run needs more ranges than the cache has slots".into())
                })?;
            let slot = &mut cache.slots[victim];
            if let Some(old) = slot.range.take() {
                if slot.dirty {
                    copy_back(&self.inners, old, &slot.region, bytes, &stream)?;
                    cache.moved_out += 1;
                    cache.link_bytes += bytes as u64;
                }
                cache.resident[old] = NONE;
                updates.push((old as u32, 0));
            }
            // SAFETY: both regions hold `bytes`; ordered on the stream after the
            // write-back of the slot's previous range.
            check_copy(unsafe {
                cudarc::driver::sys::cuMemcpyHtoDAsync_v2(
                    slot.region.device_ptr(),
                    home.host_ptr(),
                    bytes,
                    stream.cu_stream(),
                )
            })?;
            cache.moved_in += 1;
            cache.link_bytes += bytes as u64;
            slot.range = Some(range);
            slot.dirty = write;
            slot.used = cache.clock;
            cache.resident[range] = victim as u32;
            updates.push((range as u32, slot.region.device_ptr()));
        }
        if updates.is_empty() {
            return Ok(());
        }
        let (ranges, ptrs): (Vec<u32>, Vec<u64>) = updates.into_iter().unzip();
        let (dr, dp) = (stream.clone_htod(&ranges)?, stream.clone_htod(&ptrs)?);
        let kernel = self.module.kernel("range_set_inner_u32")?;
        let r = self.table_ref(0);
        let m = ranges.len() as u64;
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&r).arg(&dr).arg(&dp).arg(&m);
        // SAFETY: writes outer[ranges[j]].inner for j < m.
        unsafe { args.launch(shape(&self.gpu, &kernel, ranges.len())?) }?;
        Ok(())
    }

    /// Tiered: writes every dirty cached inner table back to its home (no-op for the
    /// other placements). Synchronizes.
    pub fn write_back(&mut self) -> Result<()> {
        let Some(cache) = &mut self.cache else {
            return Ok(());
        };
        let stream = self.gpu.stream().clone();
        let bytes = (self.inner_windows * WINDOW * 8) as usize;
        for slot in cache.slots.iter_mut().filter(|s| s.dirty) {
            let Some(range) = slot.range else { continue };
            copy_back(&self.inners, range, &slot.region, bytes, &stream)?;
            cache.moved_out += 1;
            cache.link_bytes += bytes as u64;
            slot.dirty = false;
        }
        stream.synchronize()?;
        Ok(())
    }

    /// The words of `range`'s inner table as the device sees them now (its cache slot
    /// when cached, else its home).
    fn inner_words(&self, range: usize, region: &Home) -> Result<Vec<u64>> {
        if let Some(cache) = &self.cache {
            let at = cache.resident[range];
            if at != NONE {
                return cache.slots[at as usize].region.to_host_words();
            }
        }
        region.to_host_words()
    }

    /// Keys and their positions, sorted by key on the device.
    fn sorted_with_index(&mut self, keys: &[u32]) -> Result<(CudaSlice<u32>, CudaSlice<u64>)> {
        let stream = self.gpu.stream().clone();
        let mut k = stream.clone_htod(keys)?;
        let mut index = stream.alloc_zeros::<u64>(keys.len())?;
        primitives::iota(&self.gpu, &mut index, 0u64)?;
        self.sorter.sort_pairs(&mut k, &mut index)?;
        Ok((k, index))
    }

    /// The value of each key (`None` where absent); the batch runs sorted, the answers
    /// come back in the caller's order. Synchronizes.
    pub fn get_many(&mut self, keys: &[u32]) -> Result<Vec<Option<u32>>> {
        let (found, values) = self.query(keys, true)?;
        Ok(found
            .iter()
            .zip(values)
            .map(|(&f, v)| f.then_some(v))
            .collect())
    }

    /// Whether each key is present. Synchronizes.
    pub fn contains_many(&mut self, keys: &[u32]) -> Result<Vec<bool>> {
        Ok(self.query(keys, false)?.0)
    }

    fn query(&mut self, keys: &[u32], want_values: bool) -> Result<(Vec<bool>, Vec<u32>)> {
        check_host_keys(keys)?;
        let n = keys.len();
        if n == 0 {
            return Ok((Vec::new(), Vec::new()));
        }
        let stream = self.gpu.stream().clone();
        let mut found_all = vec![false; n];
        let mut values_all = vec![0u32; if want_values { n } else { 0 }];
        for (c, chunk) in keys.chunks(self.config.batch).enumerate() {
            let m = chunk.len();
            let (k, index) = self.sorted_with_index(chunk)?;
            let mut found = stream.alloc_zeros::<u32>(m.div_ceil(32))?;
            let mut values = stream.alloc_zeros::<u32>(if want_values { m } else { 1 })?;
            let call = CallStatus::new(&self.gpu, m)?;
            let kernel = self.module.kernel("range_find_u32")?;
            for run in self.runs(&k)? {
                self.make_resident(&run.ranges, false)?;
                let r = self.table_ref(call.status_ptr());
                let (len64, null, failed) = (run.len as u64, 0u64, call.bits_ptr());
                let span = run.start..run.start + run.len;
                let (rk, ri) = (k.slice(span.clone()), index.slice(span));
                let mut args = stream.launch_builder(kernel.func());
                args.arg(&r).arg(&rk).arg(&ri).arg(&len64);
                if want_values {
                    args.arg(&mut values);
                } else {
                    args.arg(&null);
                }
                args.arg(&mut found).arg(&failed);
                // SAFETY: reads the run's sorted keys and their positions (< m); writes
                // values[position] and the found bits.
                unsafe { args.launch(shape(&self.gpu, &kernel, run.len)?) }?;
            }
            call.check()?;
            let base = c * self.config.batch;
            for (j, f) in bits(&stream.clone_dtoh(&found)?, m).into_iter().enumerate() {
                found_all[base + j] = f;
            }
            if want_values {
                let v = stream.clone_dtoh(&values)?;
                values_all[base..base + m].copy_from_slice(&v[..m]);
            }
        }
        Ok((found_all, values_all))
    }

    /// Removes each key; `true` where this batch removed it (answers in the caller's
    /// order). Synchronizes.
    pub fn remove_many(&mut self, keys: &[u32]) -> Result<Vec<bool>> {
        check_host_keys(keys)?;
        let stream = self.gpu.stream().clone();
        let mut out = Vec::with_capacity(keys.len());
        for chunk in keys.chunks(self.config.batch) {
            let m = chunk.len();
            let (k, index) = self.sorted_with_index(chunk)?;
            let mut removed = stream.alloc_zeros::<u32>(m.div_ceil(32))?;
            let call = CallStatus::new(&self.gpu, m)?;
            let kernel = self.module.kernel("range_erase_u32")?;
            for run in self.runs(&k)? {
                self.make_resident(&run.ranges, true)?;
                let r = self.table_ref(call.status_ptr());
                let (len64, failed) = (run.len as u64, call.bits_ptr());
                let span = run.start..run.start + run.len;
                let (rk, ri) = (k.slice(span.clone()), index.slice(span));
                let mut args = stream.launch_builder(kernel.func());
                args.arg(&r)
                    .arg(&rk)
                    .arg(&ri)
                    .arg(&len64)
                    .arg(&mut removed)
                    .arg(&failed);
                // SAFETY: reads the run's sorted keys and positions; writes the removed bits.
                unsafe { args.launch(shape(&self.gpu, &kernel, run.len)?) }?;
            }
            call.check()?;
            out.extend(bits(&stream.clone_dtoh(&removed)?, m));
        }
        Ok(out)
    }

    /// Bytes per tier and inner tables in use. Does not synchronize.
    pub fn stats(&self) -> TableStats {
        let mut s = TableStats::default();
        s.add(
            Placement::Device,
            (self.inners.len() * std::mem::size_of::<RangeEntry>()) as u64,
        );
        for region in self.inners.iter().flatten() {
            s.add(region.placement(), region.bytes());
            s.containers += 1;
        }
        if let Some(cache) = &self.cache {
            for slot in &cache.slots {
                s.add(Placement::Device, slot.region.bytes());
            }
            s.moved_in = cache.moved_in;
            s.moved_out = cache.moved_out;
            s.link_bytes = cache.link_bytes;
        }
        s
    }

    /// Every live pair, range by range. Synchronizes; copies the inner tables.
    pub fn to_vec(&self) -> Result<Vec<(u32, u32)>> {
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
                        Some(cache) if cache.resident[range] != NONE => cache.slots
                            [cache.resident[range] as usize]
                            .region
                            .device_ptr(),
                        _ => region.device_ptr(),
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
