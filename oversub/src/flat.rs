//! [`FlatTable`]: the paper's baseline hash table (HT-UVM, §3.1, Algorithm 1) on any
//! [`Placement`].

use cudarc::driver::{CudaSlice, DeviceRepr, PushKernelArg};
use gpuds_core::failures::CallStatus;
use gpuds_core::{Gpu, Module};

use crate::batch::{
    answers, bits, check_device_keys, check_host_keys, check_outputs, same_len, shape,
};
use crate::error::{Error, Result};
use crate::placement::{Placement, Region};
use crate::TableStats;

/// Slots per probe window (the cooperative group size, CGS = 16).
pub const WINDOW: u64 = 16;

/// How a [`FlatTable`] is built.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlatTableConfig {
    /// Keys the table must hold (it is static, as the paper's: ceil(capacity / load
    /// factor) slots, rounded up to a power-of-two number of 16-slot windows).
    pub capacity: u64,
    /// The fraction of slots filled at capacity.
    pub load_factor: f64,
    /// Where the slots live.
    pub placement: Placement,
}

impl Default for FlatTableConfig {
    fn default() -> Self {
        Self {
            capacity: 1 << 20,
            load_factor: 0.5,
            placement: Placement::Device,
        }
    }
}

/// Windows of a table of `capacity` keys at `load_factor`: a power of two.
pub(crate) fn windows_for(capacity: u64, load_factor: f64) -> Result<u64> {
    if !(load_factor > 0.0 && load_factor <= 1.0) {
        return Err(Error::Config(format!(
            "load_factor must be in (0, 1], got {load_factor}"
        )));
    }
    let slots = (capacity.max(1) as f64 / load_factor).ceil() as u64;
    let windows = slots.div_ceil(WINDOW).max(1);
    windows
        .checked_next_power_of_two()
        .filter(|w| w.checked_mul(WINDOW * 8).is_some())
        .ok_or_else(|| gpuds_core::Error::CapacityOverflow(format!("{capacity} keys")).into())
}

/// The `#[repr(C)]` mirror of `gpuds::oversub::flat_table`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub(crate) struct FlatRef {
    slots: u64,
    windows: u64,
    count: u64,
    status: u64,
}
// SAFETY: plain data with the layout of flat_table.
unsafe impl DeviceRepr for FlatRef {}

/// A static open-addressing hash table of u32 keys and values (keys 1 ..= 2^32 - 2):
/// double hashing over 16-slot windows, each probed by a group of 16 lanes, the step
/// co-prime with the number of windows so that a miss visits each window once at most.
/// Its slots live in the configured [`Placement`], so it can be larger than the GPU's
/// memory when host-mapped.
///
/// ```no_run
/// use gpuds_oversub::{FlatTable, Placement};
/// let gpu = gpuds_core::Gpu::new(0)?;
/// let mut t = FlatTable::new(&gpu, 1000, Placement::HostMapped)?;
/// t.insert_many(&[5, 7], &[50, 70])?;
/// assert_eq!(t.get_many(&[7, 9])?, vec![Some(70), None]);
/// assert_eq!(t.remove_many(&[5, 5])?.iter().filter(|r| **r).count(), 1);
/// assert_eq!(t.len()?, 1);
/// # Ok::<(), gpuds_oversub::Error>(())
/// ```
pub struct FlatTable {
    gpu: Gpu,
    module: Module,
    config: FlatTableConfig,
    slots: Region,
    windows: u64,
    count: CudaSlice<u64>,
}

impl std::fmt::Debug for FlatTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlatTable")
            .field("config", &self.config)
            .field("windows", &self.windows)
            .finish()
    }
}

impl FlatTable {
    /// A table for `capacity` keys at load factor 0.5 in `placement`. Synchronizes.
    pub fn new(gpu: &Gpu, capacity: u64, placement: Placement) -> Result<Self> {
        Self::with_config(
            gpu,
            FlatTableConfig {
                capacity,
                placement,
                ..Default::default()
            },
        )
    }

    /// A table with the given configuration. Synchronizes.
    pub fn with_config(gpu: &Gpu, config: FlatTableConfig) -> Result<Self> {
        let windows = windows_for(config.capacity, config.load_factor)?;
        if let Placement::Tiered { .. } = config.placement {
            return Err(Error::Config(
                "a flat table is one container: the tiered placement is for range tables".into(),
            ));
        }
        let module = gpu.load(&crate::kernels::program())?;
        let slots = Region::new(gpu, config.placement, windows * WINDOW * 8)?;
        Ok(Self {
            gpu: gpu.clone(),
            module,
            config,
            slots,
            windows,
            count: gpu.stream().alloc_zeros::<u64>(1)?,
        })
    }

    fn table_ref(&self, status: u64) -> FlatRef {
        use cudarc::driver::DevicePtr;
        FlatRef {
            slots: self.slots.device_ptr(),
            windows: self.windows,
            count: self.count.device_ptr(self.gpu.stream()).0,
            status,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &FlatTableConfig {
        &self.config
    }

    /// Slots (windows × 16).
    pub fn slots(&self) -> u64 {
        self.windows * WINDOW
    }

    /// Live keys. Synchronizes.
    pub fn len(&self) -> Result<u64> {
        Ok(self.gpu.stream().clone_dtoh(&self.count)?[0])
    }

    /// Whether no key is live. Synchronizes.
    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }

    /// Inserts or replaces `keys[i] -> values[i]` (duplicates inside a batch keep one
    /// of their values). A reserved key fails the batch before anything is applied;
    /// a full table fails the keys that found no slot
    /// ([`gpuds_core::Error::NotApplied`] with `TABLE_FULL`), the rest are in.
    /// Synchronizes.
    pub fn insert_many(&mut self, keys: &[u32], values: &[u32]) -> Result<()> {
        same_len("keys and values", keys.len(), values.len())?;
        check_host_keys(keys)?;
        if keys.is_empty() {
            return Ok(());
        }
        let stream = self.gpu.stream();
        let (k, v) = (stream.clone_htod(keys)?, stream.clone_htod(values)?);
        self.run_insert(&k, &v)
    }

    /// [`insert_many`](Self::insert_many) of a batch on the device (keys checked on the
    /// device first).
    pub fn insert_many_device(
        &mut self,
        keys: &CudaSlice<u32>,
        values: &CudaSlice<u32>,
    ) -> Result<()> {
        same_len("keys and values", keys.len(), values.len())?;
        check_device_keys(&self.gpu, &self.module.kernel("first_reserved_u32")?, keys)?;
        self.run_insert(keys, values)
    }

    /// Adds `deltas[i]` to the value of `keys[i]` (atomically), inserting it with
    /// `deltas[i]` when absent: counting (k-mer counts, histograms). Reserved keys and a
    /// full table as [`insert_many`](Self::insert_many). Synchronizes.
    pub fn add_many(&mut self, keys: &[u32], deltas: &[u32]) -> Result<()> {
        same_len("keys and deltas", keys.len(), deltas.len())?;
        check_host_keys(keys)?;
        if keys.is_empty() {
            return Ok(());
        }
        let stream = self.gpu.stream();
        let (k, v) = (stream.clone_htod(keys)?, stream.clone_htod(deltas)?);
        self.run("flat_add_u32", &k, &v)
    }

    fn run_insert(&mut self, keys: &CudaSlice<u32>, values: &CudaSlice<u32>) -> Result<()> {
        self.run("flat_insert_u32", keys, values)
    }

    fn run(&mut self, name: &str, keys: &CudaSlice<u32>, values: &CudaSlice<u32>) -> Result<()> {
        let n = keys.len();
        if n == 0 {
            return Ok(());
        }
        let call = CallStatus::new(&self.gpu, n)?;
        let kernel = self.module.kernel(name)?;
        let r = self.table_ref(call.status_ptr());
        let (n64, failed) = (n as u64, call.bits_ptr());
        let stream = self.gpu.stream();
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&r).arg(keys).arg(values).arg(&n64).arg(&failed);
        // SAFETY: reads keys/values[..n]; writes the table, its count and the call's bits.
        unsafe { args.launch(shape(&self.gpu, &kernel, n)?) }?;
        call.check()?;
        Ok(())
    }

    /// The value of each key (`None` where absent). Synchronizes.
    pub fn get_many(&self, keys: &[u32]) -> Result<Vec<Option<u32>>> {
        let (found, values) = self.query(keys, true)?;
        Ok(answers(&found, values))
    }

    /// Whether each key is present. Synchronizes.
    pub fn contains_many(&self, keys: &[u32]) -> Result<Vec<bool>> {
        Ok(self.query(keys, false)?.0)
    }

    fn query(&self, keys: &[u32], want_values: bool) -> Result<(Vec<bool>, Vec<u32>)> {
        check_host_keys(keys)?;
        let n = keys.len();
        if n == 0 {
            return Ok((Vec::new(), Vec::new()));
        }
        let stream = self.gpu.stream();
        let k = stream.clone_htod(keys)?;
        let mut found = stream.alloc_zeros::<u32>(n.div_ceil(32))?;
        let mut values = stream.alloc_zeros::<u32>(if want_values { n } else { 1 })?;
        self.run_find(&k, want_values.then_some(&mut values), &mut found)?;
        let found = bits(&stream.clone_dtoh(&found)?, n);
        let values = if want_values {
            stream.clone_dtoh(&values)?
        } else {
            Vec::new()
        };
        Ok((found, values))
    }

    /// Lookups of a batch on the device (keys checked on the device first): bit `i % 32`
    /// of `found[i / 32]` is set where `keys[i]` is present (`found` is cleared first and
    /// needs `keys.len().div_ceil(32)` words), and `values[i]` gets its value (`u32::MAX`
    /// where absent; `values` needs `keys.len()` words, or pass `None`). Nothing comes
    /// back to the host but the call's status. Synchronizes.
    ///
    /// ```no_run
    /// use gpuds_oversub::{FlatTable, Placement};
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut t = FlatTable::new(&gpu, 1 << 10, Placement::Device)?;
    /// t.insert_many(&[5, 6], &[50, 60])?;
    /// let keys = gpu.stream().clone_htod(&[6u32, 7])?;
    /// let mut values = gpu.stream().alloc_zeros::<u32>(2)?;
    /// let mut found = gpu.stream().alloc_zeros::<u32>(1)?;
    /// t.get_many_device(&keys, Some(&mut values), &mut found)?;
    /// assert_eq!(gpu.stream().clone_dtoh(&found)?, vec![0b01]);
    /// assert_eq!(gpu.stream().clone_dtoh(&values)?, vec![60, u32::MAX]);
    /// # Ok::<(), gpuds_oversub::Error>(())
    /// ```
    pub fn get_many_device(
        &self,
        keys: &CudaSlice<u32>,
        values: Option<&mut CudaSlice<u32>>,
        found: &mut CudaSlice<u32>,
    ) -> Result<()> {
        check_outputs(keys.len(), values.as_deref(), found)?;
        check_device_keys(&self.gpu, &self.module.kernel("first_reserved_u32")?, keys)?;
        self.run_find(keys, values, found)
    }

    fn run_find(
        &self,
        keys: &CudaSlice<u32>,
        values: Option<&mut CudaSlice<u32>>,
        found: &mut CudaSlice<u32>,
    ) -> Result<()> {
        let n = keys.len();
        if n == 0 {
            return Ok(());
        }
        let stream = self.gpu.stream();
        stream.memset_zeros(found)?;
        let call = CallStatus::new(&self.gpu, n)?;
        let kernel = self.module.kernel("flat_find_u32")?;
        let r = self.table_ref(call.status_ptr());
        let (n64, null, failed) = (n as u64, 0u64, call.bits_ptr());
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&r).arg(keys).arg(&null).arg(&n64);
        match values {
            Some(v) => args.arg(v),
            None => args.arg(&null),
        };
        args.arg(found).arg(&failed);
        // SAFETY: reads keys[..n]; writes values[..n] (when given, checked to hold n) and
        // the found bits (checked to hold n bits).
        unsafe { args.launch(shape(&self.gpu, &kernel, n)?) }?;
        call.check()?;
        Ok(())
    }

    /// Removes each key; `true` where this batch removed it. Synchronizes.
    pub fn remove_many(&mut self, keys: &[u32]) -> Result<Vec<bool>> {
        check_host_keys(keys)?;
        let n = keys.len();
        if n == 0 {
            return Ok(Vec::new());
        }
        let stream = self.gpu.stream().clone();
        let k = stream.clone_htod(keys)?;
        let mut removed = stream.alloc_zeros::<u32>(n.div_ceil(32))?;
        self.run_erase(&k, &mut removed)?;
        Ok(bits(&stream.clone_dtoh(&removed)?, n))
    }

    /// [`remove_many`](Self::remove_many) of a batch on the device (keys checked on the
    /// device first): bit `i % 32` of `removed[i / 32]` is set where this batch removed
    /// `keys[i]` (`removed` is cleared first and needs `keys.len().div_ceil(32)` words).
    /// Synchronizes.
    pub fn remove_many_device(
        &mut self,
        keys: &CudaSlice<u32>,
        removed: &mut CudaSlice<u32>,
    ) -> Result<()> {
        check_outputs(keys.len(), None, removed)?;
        check_device_keys(&self.gpu, &self.module.kernel("first_reserved_u32")?, keys)?;
        self.run_erase(keys, removed)
    }

    fn run_erase(&mut self, keys: &CudaSlice<u32>, removed: &mut CudaSlice<u32>) -> Result<()> {
        let n = keys.len();
        if n == 0 {
            return Ok(());
        }
        let stream = self.gpu.stream();
        stream.memset_zeros(removed)?;
        let call = CallStatus::new(&self.gpu, n)?;
        let kernel = self.module.kernel("flat_erase_u32")?;
        let r = self.table_ref(call.status_ptr());
        let (n64, null, failed) = (n as u64, 0u64, call.bits_ptr());
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&r)
            .arg(keys)
            .arg(&null)
            .arg(&n64)
            .arg(removed)
            .arg(&failed);
        // SAFETY: reads keys[..n]; writes the table, its count, the removed bits (checked
        // to hold n bits).
        unsafe { args.launch(shape(&self.gpu, &kernel, n)?) }?;
        call.check()?;
        Ok(())
    }

    /// Bytes per tier. Does not synchronize.
    pub fn stats(&self) -> TableStats {
        let mut s = TableStats::default();
        s.add(self.slots.placement(), self.slots.bytes());
        s.containers = 1;
        s
    }

    /// Every live pair, in slot order. Synchronizes; copies the table.
    pub fn to_vec(&self) -> Result<Vec<(u32, u32)>> {
        Ok(live_pairs(&self.slots.to_host_words()?))
    }

    /// Checks the table on a host copy: no key twice, every key reachable (no empty
    /// slot before it on its probe sequence), the count equal to the live keys.
    /// Synchronizes; copies the table.
    pub fn validate(&self) -> Result<()> {
        let words = self.slots.to_host_words()?;
        let live = check_slots(&words, self.windows, "the table")?;
        let count = self.len()?;
        if live != count {
            return Err(Error::Invalid(format!(
                "count {count} but {live} live keys"
            )));
        }
        Ok(())
    }
}

/// The live (key, value) pairs of a slot array.
pub(crate) fn live_pairs(words: &[u64]) -> Vec<(u32, u32)> {
    words
        .iter()
        .filter(|&&p| !crate::batch::RESERVED_KEYS.contains(&(p as u32)))
        .map(|&p| (p as u32, (p >> 32) as u32))
        .collect()
}

/// Host twins of the device's mixers.
pub(crate) fn mix1(mut k: u32) -> u32 {
    k ^= k >> 16;
    k = k.wrapping_mul(0x85eb_ca6b);
    k ^= k >> 13;
    k = k.wrapping_mul(0xc2b2_ae35);
    k ^= k >> 16;
    k
}
pub(crate) fn mix2(mut k: u32) -> u32 {
    k = (k ^ 61) ^ (k >> 16);
    k = k.wrapping_mul(9);
    k ^= k >> 4;
    k = k.wrapping_mul(0x27d4_eb2d);
    k ^= k >> 15;
    k
}

/// Checks one flat slot array of `windows` windows (no key twice, every key reachable
/// on its probe sequence); `what` names it in errors. Returns the live keys.
pub(crate) fn check_slots(words: &[u64], windows: u64, what: &str) -> Result<u64> {
    let mut seen = std::collections::HashSet::new();
    let mut live = 0u64;
    for &p in words.iter().take((windows * WINDOW) as usize) {
        let k = p as u32;
        if crate::batch::RESERVED_KEYS.contains(&k) {
            continue;
        }
        if !seen.insert(k) {
            return Err(Error::Invalid(format!("{what} holds key {k} twice")));
        }
        live += 1;
        // Walk its probe sequence: every window before the one holding it has no empty slot.
        let mut w = u64::from(mix1(k)) & (windows - 1);
        let step = ((u64::from(mix2(k) | 1)) & (windows - 1)) | 1;
        let mut found = false;
        for _ in 0..windows {
            let window = &words[(w * WINDOW) as usize..((w + 1) * WINDOW) as usize];
            if window.iter().any(|&q| q as u32 == k) {
                found = true;
                break;
            }
            if window.iter().any(|&q| q as u32 == 0) {
                break;
            }
            w = (w + step) & (windows - 1);
        }
        if !found {
            return Err(Error::Invalid(format!(
                "{what}: key {k} is not reachable on its probe sequence"
            )));
        }
    }
    Ok(live)
}
