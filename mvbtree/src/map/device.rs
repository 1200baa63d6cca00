//! The `_device` forms of the queries and of the mixed batch: inputs and results stay in
//! device buffers, nothing is copied to or from the host and nothing synchronizes, so a
//! caller can chain them with its own kernels (and time them with events).
//!
//! They enqueue on the map's stream like every other call, so a query at a snapshot runs
//! before any update or version collection enqueued after it: dropping the [`Snapshot`]
//! right after the call is safe. None of them clears or reads the status words: call
//! [`VersionedBTreeMap::check`] when the results are needed.

use super::*;

/// Where each range of [`VersionedBTreeMap::range_collect_at_device`] writes its pairs:
/// range `i` gets the slots `offsets[i] .. offsets[i + 1]` of the outputs (the exclusive
/// scan of the ranges' capacities, on the device). Made on the host, so the offsets are
/// known to be non-decreasing and to end at [`RangeOffsets::total`].
///
/// ```no_run
/// use gpuds_mvbtree::RangeOffsets;
/// let gpu = gpuds_core::Gpu::new(0)?;
/// let capped = RangeOffsets::capped(&gpu, 3, 8)?; // 3 ranges of 8 slots each
/// assert_eq!((capped.len(), capped.total()), (3, 24));
/// let exact = RangeOffsets::from_counts(&gpu, &[2, 0, 5])?; // counts from a count pass
/// assert_eq!(exact.total(), 7);
/// # Ok::<(), gpuds_mvbtree::Error>(())
/// ```
#[derive(Debug)]
pub struct RangeOffsets {
    offsets: CudaSlice<u64>,
    total: u64,
}

impl RangeOffsets {
    /// Offsets for ranges of `counts[i]` slots each (e.g. the results of
    /// [`VersionedBTreeMap::range_count_many_at_device`], copied to the host). Copies
    /// `counts.len() + 1` words to the device.
    pub fn from_counts(gpu: &Gpu, counts: &[u32]) -> Result<Self> {
        batch_len(counts.len())?;
        Self::upload(gpu, &exclusive_scan(counts.iter().map(|&c| c as u64)))
    }

    /// Offsets for `n` ranges of `cap` slots each (range `i` from `i * cap`), for ranges
    /// whose length is known or bounded. Copies `n + 1` words to the device.
    pub fn capped(gpu: &Gpu, n: usize, cap: u32) -> Result<Self> {
        batch_len(n)?;
        Self::upload(gpu, &exclusive_scan(std::iter::repeat_n(cap as u64, n)))
    }

    fn upload(gpu: &Gpu, offsets: &[u64]) -> Result<Self> {
        Ok(Self {
            total: offsets.last().copied().unwrap_or(0),
            offsets: gpu.stream().clone_htod(offsets)?,
        })
    }

    /// Number of ranges.
    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    /// True for no ranges.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Slots of all ranges together: the outputs must hold this many pairs.
    pub fn total(&self) -> u64 {
        self.total
    }
}

/// `0, a0, a0 + a1, ...`: the `n + 1` offsets of `n` sizes.
fn exclusive_scan(sizes: impl Iterator<Item = u64>) -> Vec<u64> {
    let mut offsets = vec![0u64];
    let mut total = 0u64;
    for s in sizes {
        total += s;
        offsets.push(total);
    }
    offsets
}

/// The device buffers a mixed batch of [`VersionedBTreeMap::apply_device`] writes its
/// results to, for batches of up to [`MvReplyBuffers::len`] operations whose ranges
/// return at most [`MvReplyBuffers::range_cap`] pairs each. Operation `i`'s results, as
/// in [`crate::MvReply`]:
///
/// - [`ts`](MvReplyBuffers::ts)`[i]`: the snapshot a query ran at ([`crate::node::UNSET_TS`] for updates);
/// - [`keys`](MvReplyBuffers::keys)`[i]`, [`values`](MvReplyBuffers::values)`[i]`: a
///   successor's pair; the value found (get) or removed (remove);
/// - [`counts`](MvReplyBuffers::counts)`[i]`: the pairs in a range (exact, even above the cap);
/// - bit `i` of [`found`](MvReplyBuffers::found): replaced (insert), removed, found;
/// - bit `i` of [`failed`](MvReplyBuffers::failed): an update that failed and changed nothing;
/// - a range's first `min(count, range_cap)` pairs at `i * range_cap` of
///   [`range_keys`](MvReplyBuffers::range_keys) / [`range_values`](MvReplyBuffers::range_values).
///
/// ```no_run
/// use gpuds_mvbtree::{MvReplyBuffers, VersionedBTreeMap};
/// let gpu = gpuds_core::Gpu::new(0)?;
/// let out = MvReplyBuffers::<u32, u32>::new(&gpu, 1 << 20, 16)?;
/// assert_eq!((out.len(), out.range_cap()), (1 << 20, 16));
/// # Ok::<(), gpuds_mvbtree::Error>(())
/// ```
#[derive(Debug)]
pub struct MvReplyBuffers<K: TreeKey = u32, V: TreeValue = u32> {
    ts: CudaSlice<u32>,
    keys: CudaSlice<K>,
    values: CudaSlice<V>,
    counts: CudaSlice<u32>,
    found: CudaSlice<u32>,
    failed: CudaSlice<u32>,
    range_keys: CudaSlice<K>,
    range_values: CudaSlice<V>,
    range_cap: u32,
}

impl<K: TreeKey, V: TreeValue> MvReplyBuffers<K, V> {
    /// Zeroed buffers for `n` operations and ranges of at most `range_cap` pairs
    /// (`n * range_cap` pairs, at most `u32::MAX`).
    pub fn new(gpu: &Gpu, n: usize, range_cap: u32) -> Result<Self> {
        let slots = capped_len(batch_len(n)?, range_cap)?;
        let stream = gpu.stream();
        let words = n.div_ceil(32).max(1);
        Ok(Self {
            ts: stream.alloc_zeros(n.max(1))?,
            keys: stream.alloc_zeros(n.max(1))?,
            values: stream.alloc_zeros(n.max(1))?,
            counts: stream.alloc_zeros(n.max(1))?,
            found: stream.alloc_zeros(words)?,
            failed: stream.alloc_zeros(words)?,
            range_keys: stream.alloc_zeros(slots.max(1) as usize)?,
            range_values: stream.alloc_zeros(slots.max(1) as usize)?,
            range_cap,
        })
    }

    /// Operations the buffers hold results for.
    pub fn len(&self) -> usize {
        self.counts.len()
    }

    /// True when they hold results for no operation (never: at least one).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Most pairs a range writes.
    pub fn range_cap(&self) -> u32 {
        self.range_cap
    }

    /// The queries' snapshots ([`crate::node::UNSET_TS`] for updates).
    pub fn ts(&self) -> &CudaSlice<u32> {
        &self.ts
    }

    /// Successor keys.
    pub fn keys(&self) -> &CudaSlice<K> {
        &self.keys
    }

    /// Values found, removed, or of a successor.
    pub fn values(&self) -> &CudaSlice<V> {
        &self.values
    }

    /// Pairs per range (and range count).
    pub fn counts(&self) -> &CudaSlice<u32> {
        &self.counts
    }

    /// Found / replaced / removed bits, 32 operations per word.
    pub fn found(&self) -> &CudaSlice<u32> {
        &self.found
    }

    /// Failed-update bits, 32 operations per word.
    pub fn failed(&self) -> &CudaSlice<u32> {
        &self.failed
    }

    /// Range keys, `range_cap` slots per operation.
    pub fn range_keys(&self) -> &CudaSlice<K> {
        &self.range_keys
    }

    /// Range values, `range_cap` slots per operation.
    pub fn range_values(&self) -> &CudaSlice<V> {
        &self.range_values
    }
}

/// The request count of a `_device` call: `n` inputs, each output holding at least `n`.
fn device_len(n: usize, outputs: &[usize], what: &str) -> Result<u32> {
    let len = batch_len(n)?;
    if let Some(&short) = outputs.iter().find(|&&o| o < n) {
        return Err(gpuds_core::Error::InvalidArgument(format!(
            "{n} {what} need outputs of {n} elements; got {short}"
        ))
        .into());
    }
    Ok(len)
}

impl<K: TreeKey, V: TreeValue> VersionedBTreeMap<K, V> {
    /// The timestamp a `_device` query reads at: the snapshot's (of this map), or the
    /// newest state's.
    pub(super) fn read_ts(&self, snap: Option<&Snapshot>) -> Result<u32> {
        snap.map_or(Ok(LATEST), |s| at(&self.snapshots, s))
    }

    /// [`VersionedBTreeMap::get_many_at`] (`snap`: `Some`) or
    /// [`VersionedBTreeMap::get_many`] (`None`: the newest state) on device buffers:
    /// `values[i]` gets the value of `keys[i]` and `found[i]` 1 when it is present (0 and
    /// 0 when not): one word per key. Does not synchronize.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = gpuds_mvbtree::VersionedBTreeMap::<u32, u32>::new(&gpu)?;
    /// map.insert_many(&[1, 2], &[10, 20])?;
    /// let s = map.snapshot()?;
    /// map.remove_many(&[2])?;
    /// let stream = gpu.stream();
    /// let keys = stream.clone_htod(&[1u32, 2])?;
    /// let (mut values, mut found) = (stream.alloc_zeros::<u32>(2)?, stream.alloc_zeros::<u32>(2)?);
    /// map.get_many_at_device(Some(&s), &keys, &mut values, &mut found)?;
    /// assert_eq!(stream.clone_dtoh(&found)?, vec![1, 1]);
    /// map.get_many_at_device(None, &keys, &mut values, &mut found)?;
    /// assert_eq!(stream.clone_dtoh(&found)?, vec![1, 0]);
    /// map.check()?;
    /// # Ok::<(), gpuds_mvbtree::Error>(())
    /// ```
    pub fn get_many_at_device(
        &self,
        snap: Option<&Snapshot>,
        keys: &CudaSlice<K>,
        values: &mut CudaSlice<V>,
        found: &mut CudaSlice<u32>,
    ) -> Result<()> {
        let ts = self.read_ts(snap)?;
        let n = device_len(keys.len(), &[values.len(), found.len()], "keys")?;
        if n == 0 {
            return Ok(());
        }
        let stream = self.gpu.stream();
        let r = self.tree_ref(Updates::InPlace);
        // The newest state: the kernel without the version walk (fewer registers).
        let kernel = if snap.is_some() {
            &self.kernels.find
        } else {
            &self.kernels.find_newest
        };
        let shape = self.grid(kernel, n as usize)?;
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&r);
        if snap.is_some() {
            args.arg(&ts);
        }
        args.arg(keys).arg(&n).arg(values).arg(found);
        // SAFETY: keys, values and found hold at least n elements (checked); the
        // arguments are the kernel's (mv_find_newest takes no timestamp).
        unsafe { args.launch(shape) }?;
        Ok(())
    }

    /// [`VersionedBTreeMap::successor_many_at`] (`snap`: `Some`) or the same query of the
    /// newest state (`None`) on device buffers: for each `keys[i]`, `out_keys[i]` and
    /// `out_values[i]` get the first pair with a greater key and `found[i]` 1 (0, 0 and 0
    /// when there is none): one word per key, as [`VersionedBTreeMap::get_many_at_device`].
    /// Does not synchronize.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = gpuds_mvbtree::VersionedBTreeMap::<u32, u32>::new(&gpu)?;
    /// map.insert_many(&[5, 9], &[50, 90])?;
    /// let s = map.snapshot()?;
    /// map.remove_many(&[9])?;
    /// let stream = gpu.stream();
    /// let keys = stream.clone_htod(&[5u32])?;
    /// let (mut k, mut v) = (stream.alloc_zeros::<u32>(1)?, stream.alloc_zeros::<u32>(1)?);
    /// let mut found = stream.alloc_zeros::<u32>(1)?;
    /// map.successor_many_at_device(Some(&s), &keys, &mut k, &mut v, &mut found)?;
    /// assert_eq!(stream.clone_dtoh(&k)?, vec![9]); // 9 was removed after s
    /// map.successor_many_at_device(None, &keys, &mut k, &mut v, &mut found)?;
    /// assert_eq!(stream.clone_dtoh(&found)?, vec![0]);
    /// map.check()?;
    /// # Ok::<(), gpuds_mvbtree::Error>(())
    /// ```
    pub fn successor_many_at_device(
        &self,
        snap: Option<&Snapshot>,
        keys: &CudaSlice<K>,
        out_keys: &mut CudaSlice<K>,
        out_values: &mut CudaSlice<V>,
        found: &mut CudaSlice<u32>,
    ) -> Result<()> {
        let ts = self.read_ts(snap)?;
        let n = device_len(
            keys.len(),
            &[out_keys.len(), out_values.len(), found.len()],
            "keys",
        )?;
        if n == 0 {
            return Ok(());
        }
        let stream = self.gpu.stream();
        let r = self.tree_ref(Updates::InPlace);
        let shape = self.grid(&self.kernels.successor, n as usize)?;
        let mut args = stream.launch_builder(self.kernels.successor.func());
        args.arg(&r)
            .arg(&ts)
            .arg(keys)
            .arg(&n)
            .arg(out_keys)
            .arg(out_values)
            .arg(found);
        // SAFETY: keys and every output hold at least n elements (checked).
        unsafe { args.launch(shape) }?;
        Ok(())
    }

    /// [`VersionedBTreeMap::range_count_many_at`] on device buffers (`None`: the newest
    /// state): `counts[i]` gets the number of keys in `lo[i] ..= hi[i]` (0 when
    /// `lo[i] > hi[i]`). Does not synchronize.
    pub fn range_count_many_at_device(
        &self,
        snap: Option<&Snapshot>,
        lo: &CudaSlice<K>,
        hi: &CudaSlice<K>,
        counts: &mut CudaSlice<u32>,
    ) -> Result<()> {
        let ts = self.read_ts(snap)?;
        let n = device_len(lo.len(), &[hi.len(), counts.len()], "ranges")?;
        if n == 0 {
            return Ok(());
        }
        let stream = self.gpu.stream();
        let r = self.tree_ref(Updates::InPlace);
        let shape = self.grid(&self.kernels.range_count, n as usize)?;
        let mut args = stream.launch_builder(self.kernels.range_count.func());
        args.arg(&r).arg(&ts).arg(lo).arg(hi).arg(&n).arg(counts);
        // SAFETY: lo, hi and counts hold at least n elements (checked).
        unsafe { args.launch(shape) }?;
        Ok(())
    }

    /// The pairs of each range `lo[i] ..= hi[i]` at the snapshot (`None`: the newest
    /// state), in key order, on device buffers: range `i` writes its first pairs to the
    /// slots `offsets[i] .. offsets[i + 1]` of `out_keys` / `out_values` (more than fit
    /// are not written). With [`RangeOffsets::from_counts`] of a count pass every pair
    /// is written; with [`RangeOffsets::capped`] it is the one-pass form for ranges of
    /// known length. Does not synchronize.
    ///
    /// ```no_run
    /// use gpuds_mvbtree::{RangeOffsets, VersionedBTreeMap};
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = VersionedBTreeMap::<u32, u32>::new(&gpu)?;
    /// map.insert_many(&[2, 4, 6, 8], &[20, 40, 60, 80])?;
    /// let s = map.snapshot()?;
    /// map.insert_many(&[5], &[50])?;
    /// let stream = gpu.stream();
    /// let (lo, hi) = (stream.clone_htod(&[2u32, 5])?, stream.clone_htod(&[4u32, 9])?);
    /// let offsets = RangeOffsets::capped(&gpu, 2, 2)?;
    /// let (mut k, mut v) = (stream.alloc_zeros::<u32>(4)?, stream.alloc_zeros::<u32>(4)?);
    /// map.range_collect_at_device(Some(&s), &lo, &hi, &offsets, &mut k, &mut v)?;
    /// assert_eq!(stream.clone_dtoh(&k)?, vec![2, 4, 6, 8]); // 5 came after s
    /// # Ok::<(), gpuds_mvbtree::Error>(())
    /// ```
    pub fn range_collect_at_device(
        &self,
        snap: Option<&Snapshot>,
        lo: &CudaSlice<K>,
        hi: &CudaSlice<K>,
        offsets: &RangeOffsets,
        out_keys: &mut CudaSlice<K>,
        out_values: &mut CudaSlice<V>,
    ) -> Result<()> {
        let ts = self.read_ts(snap)?;
        let n = device_len(offsets.len(), &[lo.len(), hi.len()], "ranges")?;
        let room = out_keys.len().min(out_values.len()) as u64;
        if room < offsets.total() {
            return Err(gpuds_core::Error::InvalidArgument(format!(
                "the offsets need {} output pairs; got {room}",
                offsets.total()
            ))
            .into());
        }
        if n == 0 {
            return Ok(());
        }
        let stream = self.gpu.stream();
        let r = self.tree_ref(Updates::InPlace);
        let shape = self.grid(&self.kernels.range_collect, n as usize)?;
        let mut args = stream.launch_builder(self.kernels.range_collect.func());
        args.arg(&r)
            .arg(&ts)
            .arg(lo)
            .arg(hi)
            .arg(&n)
            .arg(&offsets.offsets)
            .arg(out_keys)
            .arg(out_values);
        // SAFETY: lo and hi hold at least n elements, the offsets n + 1 non-decreasing
        // entries up to their total, which the outputs hold (checked).
        unsafe { args.launch(shape) }?;
        Ok(())
    }

    /// [`VersionedBTreeMap::range_many_capped_at`] on device buffers (`None`: the newest
    /// state), the shape of `GpuBTreeMap::range_collect_capped_device`: range `i` writes
    /// its first pairs in key order, at most `cap`, to `out_keys` / `out_values` from
    /// index `i * cap`, and the number of pairs in `lo[i] ..= hi[i]` to `counts[i]`
    /// (above `cap`: only `cap` written). A count pass, then a collect pass; the offsets
    /// are made on the device. At most `u32::MAX` output pairs (`n * cap`) per call. Does
    /// not synchronize.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = gpuds_mvbtree::VersionedBTreeMap::<u32, u32>::new(&gpu)?;
    /// map.insert_many(&[1, 2, 3], &[10, 20, 30])?;
    /// let s = map.snapshot()?;
    /// map.remove_many(&[1])?;
    /// let stream = gpu.stream();
    /// let (lo, hi) = (stream.clone_htod(&[0u32, 3])?, stream.clone_htod(&[9u32, 3])?);
    /// let (mut k, mut v) = (stream.alloc_zeros::<u32>(4)?, stream.alloc_zeros::<u32>(4)?);
    /// let mut counts = stream.alloc_zeros::<u32>(2)?;
    /// map.range_many_capped_at_device(Some(&s), &lo, &hi, 2, &mut k, &mut v, &mut counts)?;
    /// assert_eq!(stream.clone_dtoh(&counts)?, vec![3, 1]); // the first range is cut at 2
    /// assert_eq!(stream.clone_dtoh(&k)?[..3], [1, 2, 3]);
    /// map.check()?;
    /// # Ok::<(), gpuds_mvbtree::Error>(())
    /// ```
    #[allow(clippy::too_many_arguments)]
    pub fn range_many_capped_at_device(
        &self,
        snap: Option<&Snapshot>,
        lo: &CudaSlice<K>,
        hi: &CudaSlice<K>,
        cap: u32,
        out_keys: &mut CudaSlice<K>,
        out_values: &mut CudaSlice<V>,
        counts: &mut CudaSlice<u32>,
    ) -> Result<()> {
        self.read_ts(snap)?;
        let n = device_len(lo.len(), &[hi.len(), counts.len()], "ranges")?;
        let needed = capped_room(n, cap, out_keys.len().min(out_values.len()))?;
        if n == 0 {
            return Ok(());
        }
        self.range_count_many_at_device(snap, lo, hi, counts)?;
        let stream = self.gpu.stream();
        let mut offsets = stream.alloc_zeros::<u64>(n as usize + 1)?;
        let kernel = &self.kernels.capped_offsets;
        let shape = self.gpu.grid_for(kernel, n as usize + 1, BLOCK)?;
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&n).arg(&cap).arg(&mut offsets);
        // SAFETY: offsets holds n + 1 words, which the kernel writes.
        unsafe { args.launch(shape) }?;
        let offsets = RangeOffsets {
            offsets,
            total: needed,
        };
        self.range_collect_at_device(snap, lo, hi, &offsets, out_keys, out_values)
    }

    /// [`VersionedBTreeMap::apply`] on device buffers: operation `i` is
    /// `codes[i]` (0 insert, 1 remove, 2 get, 3 successor, 4 range count, 5 range: the
    /// order of [`crate::MvOp`]) on `keys[i]` (a range's lower bound), with `arg_keys[i]`
    /// (a range's upper bound) and `arg_values[i]` (an insertion's value); results in
    /// `out` (see [`MvReplyBuffers`]). Updates go out of place, each query at a tile-wide
    /// snapshot it takes when it starts. Another code changes nothing and is reported as
    /// `OUT_OF_BOUNDS`.
    ///
    /// The kernel is a persistent grid whose blocks hand the older versions they make to
    /// the map's epoch-based reclaimer when no host snapshot is live (as
    /// [`VersionedBTreeMap::apply`]). Does not synchronize unless the pool must grow, does
    /// not retry failed updates (their `failed` bits are set and
    /// [`VersionedBTreeMap::check`] reports why) and does not collect versions: call
    /// [`VersionedBTreeMap::collect_versions`] after, which also hands what the reclaimer
    /// still holds back to the pool.
    ///
    /// ```no_run
    /// use gpuds_mvbtree::{MvReplyBuffers, VersionedBTreeMap};
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = VersionedBTreeMap::<u32, u32>::new(&gpu)?;
    /// map.insert_many(&[1, 2], &[10, 20])?;
    /// let stream = gpu.stream();
    /// let codes = stream.clone_htod(&[0u32, 5])?; // insert (3, 30); range 0 ..= 9
    /// let keys = stream.clone_htod(&[3u32, 0])?;
    /// let arg_keys = stream.clone_htod(&[0u32, 9])?;
    /// let arg_values = stream.clone_htod(&[30u32, 0])?;
    /// let mut out = MvReplyBuffers::new(&gpu, 2, 4)?;
    /// map.apply_device(&codes, &keys, &arg_keys, &arg_values, &mut out)?;
    /// map.check()?;
    /// map.collect_versions()?;
    /// let count = stream.clone_dtoh(out.counts())?[1];
    /// assert!(count == 2 || count == 3); // the insertion is seen entirely or not at all
    /// # Ok::<(), gpuds_mvbtree::Error>(())
    /// ```
    pub fn apply_device(
        &mut self,
        codes: &CudaSlice<u32>,
        keys: &CudaSlice<K>,
        arg_keys: &CudaSlice<K>,
        arg_values: &CudaSlice<V>,
        out: &mut MvReplyBuffers<K, V>,
    ) -> Result<()> {
        self.launch_apply(codes, keys, arg_keys, arg_values, out, codes.len())
    }

    /// Launches the mixed batch after making room for `updates` updates (at most the
    /// operations; [`VersionedBTreeMap::apply`] counts them on the host).
    pub(super) fn launch_apply(
        &mut self,
        codes: &CudaSlice<u32>,
        keys: &CudaSlice<K>,
        arg_keys: &CudaSlice<K>,
        arg_values: &CudaSlice<V>,
        out: &mut MvReplyBuffers<K, V>,
        updates: usize,
    ) -> Result<()> {
        let n = device_len(
            codes.len(),
            &[keys.len(), arg_keys.len(), arg_values.len(), out.len()],
            "operations",
        )?;
        if n == 0 {
            return Ok(());
        }
        let pairs = crate::node::pairs_per_node(self.layout);
        self.ensure_room(node_bound(updates.min(n as usize), pairs, true))?;
        let stream = self.gpu.stream().clone();
        let r = self.tree_ref(Updates::OutOfPlace);
        let e = self.reclaimer.device_ref(self.runner.pool());
        let shape = self.apply_grid(n)?;
        let mut args = stream.launch_builder(self.kernels.apply.func());
        args.arg(&r)
            .arg(&e)
            .arg(codes)
            .arg(keys)
            .arg(arg_keys)
            .arg(arg_values)
            .arg(&n)
            .arg(&out.range_cap)
            .arg(&mut out.ts)
            .arg(&mut out.keys)
            .arg(&mut out.values)
            .arg(&mut out.counts)
            .arg(&mut out.found)
            .arg(&mut out.failed)
            .arg(&mut out.range_keys)
            .arg(&mut out.range_values);
        // SAFETY: the inputs hold at least n elements, the per-operation outputs at least
        // n (checked), the bit outputs ceil(n / 32) words and the range outputs
        // n * range_cap pairs (made so by MvReplyBuffers::new).
        unsafe { args.launch(shape) }?;
        Ok(())
    }

    /// The mixed batch's grid for `n` operations: persistent, at most one block per
    /// reclaimer slot (each block enters and leaves its epoch), blocks of [`BLOCK`]
    /// requests.
    fn apply_grid(&self, n: u32) -> Result<LaunchConfig> {
        let mut shape = self.reclaimer.grid(&self.kernels.apply, BLOCK, 0)?;
        let blocks = (n as usize).div_ceil(BLOCK as usize) as u32;
        shape.grid_dim.0 = shape.grid_dim.0.min(blocks).max(1);
        Ok(shape)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_are_the_exclusive_scan() {
        assert_eq!(exclusive_scan([2u64, 0, 5].into_iter()), vec![0, 2, 2, 7]);
        assert_eq!(exclusive_scan(std::iter::empty()), vec![0]);
        assert_eq!(
            exclusive_scan(std::iter::repeat_n(8, 3)),
            vec![0, 8, 16, 24]
        );
    }

    #[test]
    fn device_lengths_are_checked() {
        assert_eq!(device_len(5, &[5, 9], "keys").unwrap(), 5);
        let e = device_len(5, &[5, 4], "keys").unwrap_err().to_string();
        assert!(e.contains("5 keys") && e.contains("got 4"), "{e}");
        assert_eq!(device_len(0, &[], "ranges").unwrap(), 0);
    }
}
