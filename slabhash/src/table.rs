//! [`Table`]: the owner core that [`SlabHashMap`](crate::SlabHashMap) and
//! [`SlabHashSet`](crate::SlabHashSet) share: the base slabs, the slab pool, the
//! counters and status word, and the launches that do not depend on values.
//!
//! Every call that launches request kernels gives them its own status word and failure
//! bits (a [`CallStatus`], zeroed before its kernels run) in place of the table's, and
//! reads them at its own synchronization point: a call reports its own failures and no
//! one else's, and leaves nothing behind for later calls. The table's own word is only
//! for the device refs handed to user kernels, read by [`Table::refresh`].

use std::sync::atomic::{AtomicBool, Ordering};

use cudarc::driver::{CudaSlice, CudaView, DevicePtr, LaunchArgs, LaunchConfig, PushKernelArg};
use gpuds_alloc::SlabAlloc;
use gpuds_core::failures::{self, CallStatus};
use gpuds_core::hash::Universal;
use gpuds_core::{launch, primitives, DeviceType, Gpu, Kernel, Module, Status};

use crate::config::SlabHashConfig;
use crate::error::{Error, Result};
use crate::image::{self, Image, Summary};
use crate::input::BatchInput;
use crate::kernels::{self, Kind, BLOCK, TABLE_BLOCK};
use crate::keys::SlabKey;
use crate::layout::Layout;
use crate::ops::{BatchResults, DeviceBatch, OpResult, OP_ADDED, OP_PRESENT};
use crate::refs::TableRef;
use crate::sizing::{pool_slabs_for, slab_bound};
use crate::stats::SlabHashStats;

/// What `read_control` returns: live keys, claimed slots, status word (low 32 bits).
const LIVE: usize = 0;
const CLAIMED: usize = 1;
const STATUS: usize = 2;

/// The device control buffer: the status word in word 0, then the counters in
/// `COUNTER_STRIPES` stripes of one 128-byte line each (live keys in word 0, claimed
/// slots in word 1), as `gpuds::slabhash::detail::table::count` updates them. Warps add
/// to the stripe of their warp id, so the per-warp atomics of a batch spread over many
/// addresses instead of serializing on one.
const DEVICE_STATUS: usize = 0;
const COUNTER_STRIPES: usize = 32;
const STRIPE_WORDS: usize = 16;
const FIRST_STRIPE: usize = 16;
const CONTROL_WORDS: usize = FIRST_STRIPE + COUNTER_STRIPES * STRIPE_WORDS;

pub(crate) struct Table {
    gpu: Gpu,
    layout: Layout,
    suffix: String,
    module: Module,
    buckets: CudaSlice<u32>,
    control: CudaSlice<u64>,
    alloc: SlabAlloc,
    hash: Universal,
    config: SlabHashConfig,
    /// Claimed slots after the last batch that synchronized.
    claimed: u64,
    /// A device ref was handed out since: kernels of the user may have moved the counters.
    stale: AtomicBool,
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table")
            .field("layout", &self.layout)
            .field("buckets", &self.config.buckets)
            .field("unique_keys", &self.config.unique_keys)
            .field("alloc", &self.alloc)
            .finish()
    }
}

impl Table {
    pub(crate) fn new<K: SlabKey, V: DeviceType>(
        gpu: &Gpu,
        mut config: SlabHashConfig,
        kind: Kind,
    ) -> Result<Self> {
        if kind == Kind::Set {
            config.unique_keys = true;
        }
        config.validate()?;
        let module = gpu.load(&kernels::program::<K, V>(kind))?;
        let stream = gpu.stream();
        // The pool first: a pool past the device's memory fails before the base slabs
        // are allocated.
        let alloc = SlabAlloc::new(gpu, config.alloc.clone())?;
        // At most MAX_BUCKETS (2^27) buckets of 32 words (validated): no overflow.
        let words = config.buckets as usize * 32;
        // SAFETY: filled with all ones (empty slots, NULL next) right below.
        let mut buckets = unsafe { gpu.alloc_uninit::<u32>(words, "the table's base slabs") }?;
        primitives::fill(gpu, &mut buckets, u32::MAX)?;
        Ok(Self {
            gpu: gpu.clone(),
            layout: Layout::of::<K, V>(kind),
            suffix: kernels::suffix::<K, V>(kind),
            module,
            buckets,
            control: stream.alloc_zeros::<u64>(CONTROL_WORDS)?,
            alloc,
            hash: Universal::from_seed(config.seed),
            config,
            claimed: 0,
            stale: AtomicBool::new(false),
        })
    }

    pub(crate) fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// Injects faults into the slab pool (tests only).
    #[cfg(feature = "fault-injection")]
    pub(crate) fn inject_faults(&mut self, faults: gpuds_alloc::faults::Faults) -> Result<()> {
        Ok(self.alloc.inject_faults(faults)?)
    }

    /// The slab pool's allocation requests since faults were injected (tests only).
    #[cfg(feature = "fault-injection")]
    pub(crate) fn fault_requests(&self) -> Result<u32> {
        Ok(self.alloc.fault_requests()?)
    }

    pub(crate) fn config(&self) -> &SlabHashConfig {
        &self.config
    }

    /// The ref kernels get. Marks the counters stale: a user kernel may change them.
    pub(crate) fn device_ref(&self) -> TableRef {
        self.stale.store(true, Ordering::Relaxed);
        self.table_ref()
    }

    /// The ref a call's kernels get: the table, with the call's own status word.
    pub(crate) fn call_ref(&self, call: &CallStatus) -> TableRef {
        TableRef {
            status: call.status_ptr(),
            ..self.table_ref()
        }
    }

    /// A clear status for a call of `n` requests (see the module documentation), and,
    /// for calls that may allocate or free slabs (`updates`), the pool's status word
    /// cleared too, so that the pool's flags after the call are the call's. Does not
    /// synchronize.
    pub(crate) fn begin_call(&self, n: usize, updates: bool) -> Result<CallStatus> {
        if updates {
            self.alloc.clear_status()?;
        }
        Ok(CallStatus::new(&self.gpu, n)?)
    }

    fn table_ref(&self) -> TableRef {
        let stream = self.gpu.stream();
        let control = self.control.device_ptr(stream).0;
        TableRef {
            buckets: self.buckets.device_ptr(stream).0,
            counters: control + (FIRST_STRIPE * 8) as u64,
            status: control + (DEVICE_STATUS * 8) as u64,
            alloc: self.alloc.device_ref(),
            hash: self.hash,
            num_buckets: self.config.buckets,
            unique_keys: self.config.unique_keys as u32,
            step_cap: self.config.effective_step_cap(),
        }
    }

    pub(crate) fn kernel(&self, name: &str) -> Result<Kernel> {
        Ok(self.module.kernel(&format!("{name}_{}", self.suffix))?)
    }

    /// One thread per request.
    pub(crate) fn item_shape(&self, n: usize) -> Result<LaunchConfig> {
        Ok(launch::one_thread_per_item(n, BLOCK)?)
    }

    /// One warp per bucket, grid-stride.
    fn bucket_shape(&self, kernel: &Kernel) -> Result<LaunchConfig> {
        Ok(self
            .gpu
            .grid_for(kernel, self.config.buckets as usize * 32, TABLE_BLOCK)?)
    }

    /// Checks a batch's keys for reserved values: host keys on the host (an error
    /// right away), device keys with a kernel whose verdict the batch's kernel reads
    /// (see [`Guard`]). Does not synchronize.
    pub(crate) fn check_keys<K: SlabKey>(
        &self,
        input: &(impl BatchInput<K> + ?Sized),
        staged: &CudaView<'_, K>,
    ) -> Result<Guard> {
        if let Some(keys) = input.host() {
            check_host_keys(keys)?;
            return Ok(Guard::none());
        }
        let n = staged.len();
        let stream = self.gpu.stream();
        let mut word = stream.alloc_zeros::<u64>(1)?;
        if n > 0 {
            let kernel = self.kernel("first_reserved")?;
            let n64 = n as u64;
            let mut args = stream.launch_builder(kernel.func());
            args.arg(staged).arg(&n64).arg(&mut word);
            // SAFETY: the kernel reads keys[..n] and writes the one word of `word`.
            unsafe { args.launch(self.item_shape(n)?) }?;
        }
        Ok(Guard {
            word: Some(word),
            null: 0,
        })
    }

    /// Grows the slab pool so that `n` more claimed slots cannot run out of slabs (see
    /// [`slab_bound`]). Synchronizes only when the pool must grow or a device ref was
    /// handed out since the last batch. Growth is geometric (to twice the bound), so a
    /// table that keeps taking batches grows rarely. A pool that cannot grow that far is
    /// left as large as it may be: the batch runs and reports exhaustion if it really
    /// runs out.
    pub(crate) fn reserve_for(&mut self, n: usize) -> Result<()> {
        self.refresh_claimed()?;
        let warps = self.gpu.info().sm_count as u64 * 64;
        let bound = slab_bound(self.claimed, n as u64, self.layout.slots() as u64, warps);
        if self.alloc.capacity_units() >= bound.saturating_add(bound / 4) {
            return Ok(());
        }
        let in_use = self.alloc.units_in_use()?;
        self.alloc
            .reserve_within_max(bound.saturating_mul(2).saturating_sub(in_use))?;
        Ok(())
    }

    /// `reserve(additional)` of a map or set: [`reserve_for`](Self::reserve_for), after a
    /// check that the table can hold `additional` more elements at all (base slabs and
    /// the pool at its maximum, every slot used): past that [`Error::PoolExhausted`],
    /// past 64 bits
    /// [`CapacityOverflow`](gpuds_core::Error::CapacityOverflow), the pool unchanged
    /// either way. Synchronizes when the pool grows.
    pub(crate) fn reserve(&mut self, additional: usize) -> Result<()> {
        self.refresh_claimed()?;
        let slabs = pool_slabs_for(
            self.claimed,
            additional as u64,
            self.layout.slots() as u64,
            self.config.buckets,
        )?;
        let max_units = self.alloc.config().max_units;
        if slabs > max_units {
            return Err(Error::PoolExhausted(gpuds_alloc::Error::PoolExhausted {
                needed: slabs,
                capacity: self.alloc.capacity_units(),
                max_units,
            }));
        }
        self.reserve_for(additional)
    }

    /// Reads the claimed slots again when a device ref was handed out since the last
    /// batch (a user kernel may have moved them). Synchronizes then.
    fn refresh_claimed(&mut self) -> Result<()> {
        if self.stale.swap(false, Ordering::Relaxed) {
            self.claimed = self.read_control()?[CLAIMED];
        }
        Ok(())
    }

    /// Live keys, claimed slots and the status word (indices LIVE, CLAIMED, STATUS),
    /// the counters summed over their stripes. Synchronizes.
    fn read_control(&self) -> Result<[u64; 3]> {
        let words = self.gpu.stream().clone_dtoh(&self.control)?;
        let mut out = [0, 0, words[DEVICE_STATUS]];
        for stripe in words[FIRST_STRIPE..].chunks_exact(STRIPE_WORDS) {
            // Stripes hold wrapping sums of signed changes; only their total is a count.
            out[LIVE] = out[LIVE].wrapping_add(stripe[0]);
            out[CLAIMED] = out[CLAIMED].wrapping_add(stripe[1]);
        }
        Ok(out)
    }

    /// Ends an update call: reads the counters (the claimed slots the next
    /// [`reserve_for`](Self::reserve_for) starts from) and the call's status. Synchronizes.
    pub(crate) fn finish(&mut self, call: &CallStatus) -> Result<()> {
        self.claimed = self.read_control()?[CLAIMED];
        call_result(call, || Ok(()))
    }

    /// [`finish`](Self::finish) for a batch of `keys` checked by `guard`: a batch refused
    /// for a reserved key fails with [`Error::ReservedKey`].
    pub(crate) fn finish_keys<K: SlabKey>(
        &mut self,
        call: &CallStatus,
        guard: &Guard,
        keys: &CudaView<'_, K>,
    ) -> Result<()> {
        self.claimed = self.read_control()?[CLAIMED];
        call_result(call, || guard.check(&self.gpu, keys))
    }

    /// Ends a read-only call on `keys` checked by `guard`: a refused batch as
    /// [`Error::ReservedKey`], requests its kernels could not answer as
    /// [`gpuds_core::Error::NotApplied`]. Synchronizes.
    pub(crate) fn check_read<K: SlabKey>(
        &self,
        call: &CallStatus,
        guard: &Guard,
        keys: &CudaView<'_, K>,
    ) -> Result<()> {
        call_result(call, || guard.check(&self.gpu, keys))
    }

    /// Reports (and clears) what user kernels recorded in the table's own status word
    /// through [`device_ref`](Self::device_ref), and re-reads the counters they may have
    /// moved. Synchronizes.
    pub(crate) fn refresh(&mut self) -> Result<()> {
        let control = self.read_control()?;
        self.claimed = control[CLAIMED];
        self.stale.store(false, Ordering::Relaxed);
        let flags = Status(control[STATUS] as u32);
        if flags.is_ok() {
            return Ok(());
        }
        let stream = self.gpu.stream();
        stream.memset_zeros(&mut self.control.slice_mut(DEVICE_STATUS..DEVICE_STATUS + 1))?;
        Err(Error::Kernel(flags))
    }

    /// Runs a mixed batch already on the device. Returns each request's outcome code
    /// and (maps) the value it saw, on the device. Synchronizes.
    pub(crate) fn apply<K: SlabKey, V: DeviceType>(
        &mut self,
        batch: &DeviceBatch<K, V>,
    ) -> Result<BatchResults<V>> {
        let n = batch.len();
        self.reserve_for(batch.inserts)?;
        let call = self.begin_call(n, true)?;
        let stream = self.gpu.stream().clone();
        let mut outcomes = stream.alloc_zeros::<u32>(n.max(1))?;
        let mut seen = match batch.values {
            Some(_) => Some(stream.alloc_zeros::<V>(n.max(1))?),
            None => None,
        };
        if n > 0 {
            let kernel = self.kernel("apply")?;
            let r = self.call_ref(&call);
            let (n64, null, failed) = (n as u64, 0u64, call.bits_ptr());
            let mut args = stream.launch_builder(kernel.func());
            args.arg(&r).arg(&batch.kinds).arg(&batch.keys);
            match &batch.values {
                Some(v) => args.arg(v),
                None => args.arg(&null),
            };
            args.arg(&n64).arg(&mut outcomes);
            match &mut seen {
                Some(v) => args.arg(v),
                None => args.arg(&null),
            };
            args.arg(&failed);
            // SAFETY: the kernel reads kinds, keys (and values) [..n] and writes outcomes
            // (and seen) [..n] and the call's failure bits.
            unsafe { args.launch(self.item_shape(n)?) }?;
        }
        self.finish(&call)?;
        Ok(BatchResults {
            outcomes,
            seen,
            len: n,
        })
    }

    /// Live keys. Synchronizes.
    pub(crate) fn len(&self) -> Result<u64> {
        Ok(self.read_control()?[LIVE])
    }

    /// FLUSH: compacts every list and frees the emptied slabs; returns how many.
    /// Synchronizes. Reports only what its own frees recorded in the pool's word.
    pub(crate) fn flush(&mut self) -> Result<u64> {
        self.alloc.clear_status()?;
        let stream = self.gpu.stream().clone();
        let kernel = self.kernel("flush")?;
        let shape = self.bucket_shape(&kernel)?;
        let mut freed = stream.alloc_zeros::<u64>(1)?;
        let r = self.table_ref();
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&r).arg(&mut freed);
        // SAFETY: the kernel walks the table's own lists and writes one word of `freed`.
        unsafe { args.launch(shape) }?;
        // Tombstones are gone: every claimed slot is live again, stripe by stripe.
        let mut words = stream.clone_dtoh(&self.control)?;
        for stripe in words[FIRST_STRIPE..].chunks_exact_mut(STRIPE_WORDS) {
            stripe[1] = stripe[0];
        }
        stream.memcpy_htod(&words, &mut self.control)?;
        let freed = stream.clone_dtoh(&freed)?[0];
        self.claimed = self.read_control()?[CLAIMED];
        self.alloc.check_status()?;
        Ok(freed)
    }

    /// Every key gone, every slab back in the pool. Does not synchronize.
    pub(crate) fn clear(&mut self) -> Result<()> {
        primitives::fill(&self.gpu, &mut self.buckets, u32::MAX)?;
        self.alloc.reset()?;
        self.gpu.stream().memset_zeros(&mut self.control)?;
        self.claimed = 0;
        Ok(())
    }

    /// Slabs of each bucket. Synchronizes.
    pub(crate) fn census(&self) -> Result<Vec<u32>> {
        let stream = self.gpu.stream();
        let kernel = self.kernel("census")?;
        let shape = self.bucket_shape(&kernel)?;
        let mut slabs = stream.alloc_zeros::<u32>(self.config.buckets as usize)?;
        let r = self.table_ref();
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&r).arg(&mut slabs);
        // SAFETY: the kernel writes slabs[b] for every bucket b < buckets.
        unsafe { args.launch(shape) }?;
        Ok(stream.clone_dtoh(&slabs)?)
    }

    /// Statistics of the shape and memory use. Synchronizes.
    pub(crate) fn stats(&self) -> Result<SlabHashStats> {
        let census = self.census()?;
        let len = self.len()?;
        let pool = self.alloc.stats()?;
        Ok(SlabHashStats::from_census(
            &census,
            len,
            self.claimed_now()?,
            self.layout.slots(),
            self.layout.element_bytes(),
            pool.bytes_reserved,
        ))
    }

    fn claimed_now(&self) -> Result<u64> {
        Ok(self.read_control()?[CLAIMED])
    }

    /// Every live entry: keys, and values for maps. Synchronizes.
    pub(crate) fn export<K: SlabKey, V: DeviceType>(&self) -> Result<(Vec<K>, Vec<V>)> {
        let len = self.len()? as usize;
        let stream = self.gpu.stream();
        let kernel = self.kernel("export_entries")?;
        let shape = self.bucket_shape(&kernel)?;
        let mut keys = stream.alloc_zeros::<K>(len.max(1))?;
        let mut values = stream.alloc_zeros::<V>(len.max(1))?;
        let mut cursor = stream.alloc_zeros::<u64>(1)?;
        let capacity = len as u64;
        let null = 0u64;
        let r = self.table_ref();
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&r).arg(&mut keys);
        if self.layout.kind == Kind::Map {
            args.arg(&mut values);
        } else {
            args.arg(&null);
        }
        args.arg(&mut cursor).arg(&capacity);
        // SAFETY: the kernel writes at most `capacity` entries into keys (and values).
        unsafe { args.launch(shape) }?;
        let found = stream.clone_dtoh(&cursor)?[0];
        if found != capacity {
            return Err(Error::Corrupted(format!(
                "the lists hold {found} live keys but the counter says {capacity}"
            )));
        }
        let mut k = stream.clone_dtoh(&keys)?;
        k.truncate(len);
        let mut v = if self.layout.kind == Kind::Map {
            stream.clone_dtoh(&values)?
        } else {
            Vec::new()
        };
        v.truncate(len);
        Ok((k, v))
    }

    /// Checks every invariant on a host copy of the table and its pool. Synchronizes;
    /// copies the base slabs and the whole pool.
    pub(crate) fn validate(&self) -> Result<Summary> {
        let stream = self.gpu.stream();
        let buckets = stream.clone_dtoh(&self.buckets)?;
        let control = self.read_control()?;
        let pool = self.alloc.snapshot()?;
        let summary = image::validate(&Image {
            layout: self.layout,
            unique: self.config.unique_keys,
            buckets: &buckets,
            pool: &pool,
            hash: self.hash,
            live: control[LIVE],
            claimed: control[CLAIMED],
            step_cap: self.config.effective_step_cap(),
        })?;
        self.alloc.validate()?;
        Ok(summary)
    }
}

/// The result of a call from its status: a refused batch (RESERVED_KEY) as `refused`
/// says, requests marked failed as [`gpuds_core::Error::NotApplied`], a flag that names
/// no request as [`Error::Kernel`]. Synchronizes.
fn call_result(call: &CallStatus, refused: impl FnOnce() -> Result<()>) -> Result<()> {
    let flags = call.status()?;
    if flags.is_ok() {
        return Ok(());
    }
    if flags.contains(Status::RESERVED_KEY) {
        refused()?;
    }
    let flags = Status(flags.0 & !Status::RESERVED_KEY.0);
    if flags.is_ok() {
        return Ok(());
    }
    match failures::error_of(flags, call.not_applied()?) {
        Some(gpuds_core::Error::Status(flags)) => Err(Error::Kernel(flags)),
        Some(e) => Err(Error::Core(e)),
        None => Ok(()),
    }
}

/// The result of one request from its outcome code and the value it saw.
pub(crate) fn op_result<V>(outcome: u32, seen: V) -> OpResult<V> {
    match outcome {
        OP_PRESENT => OpResult::Present(seen),
        OP_ADDED => OpResult::Added,
        _ => OpResult::Absent,
    }
}

/// Rejects host keys holding a reserved value, naming the first.
pub(crate) fn check_host_keys<K: SlabKey>(keys: &[K]) -> Result<()> {
    match gpuds_core::keys::first_reserved(keys, &K::RESERVED) {
        Some((index, key)) => Err(Error::ReservedKey {
            index,
            key: key.to_u64(),
        }),
        None => Ok(()),
    }
}

/// The verdict of a device-side reserved-key check (`first_reserved`), which the batch's
/// kernel reads before doing anything: a batch with a reserved key is refused whole.
/// Host keys are checked on the host and need none.
pub(crate) struct Guard {
    word: Option<CudaSlice<u64>>,
    null: u64,
}

impl Guard {
    fn none() -> Self {
        Self {
            word: None,
            null: 0,
        }
    }

    /// Passes the guard (or a null pointer) as the next kernel argument.
    pub(crate) fn push<'a>(&'a self, args: &mut LaunchArgs<'a>) {
        match &self.word {
            Some(w) => args.arg(w),
            None => args.arg(&self.null),
        };
    }

    /// [`Error::ReservedKey`] if the check found a reserved key. Synchronizes when the
    /// keys were checked on the device.
    pub(crate) fn check<K: SlabKey>(&self, gpu: &Gpu, keys: &CudaView<'_, K>) -> Result<()> {
        let Some(word) = &self.word else {
            return Ok(());
        };
        let stream = gpu.stream();
        let found = stream.clone_dtoh(word)?[0];
        if found == 0 {
            return Ok(());
        }
        let index = keys.len() - found as usize;
        let key = stream.clone_dtoh(&keys.slice(index..index + 1))?[0];
        Err(Error::ReservedKey {
            index,
            key: key.to_u64(),
        })
    }
}
