//! Online resizing by warp-parallel linear hashing (Hive paper, §IV-C), between batches.
//!
//! The table's buckets are `level_mask + 1 + split`: buckets below the split pointer
//! have been split into partners `b + level_mask + 1`. An expansion step splits the next
//! K buckets (one tile per pair; one extra hash bit decides whether an entry moves); when
//! the split pointer reaches the end of the level, the level doubles. A contraction step
//! merges the last K partners back, after a check that each fits; the level halves when
//! the split pointer falls to zero. The arrays grow by doubling when a partner lies past
//! them and never shrink. After an expansion the stash is drained and its pairs are
//! reinserted into the larger table.

use cudarc::driver::{CudaSlice, PushKernelArg};

use gpuds_core::failures::CallStatus;

use super::device::{Counters, CTRL_STASH_CLAIMS, CTRL_STASH_TAIL, EMPTY};

/// A stash tail (entries taken since the last drain) past which an update batch ends
/// with a drain: a lookup whose first bucket is flagged scans the whole tail, 64 words
/// per round, so a few thousand words cost more than the drain of the pairs behind them.
pub(super) const STASH_TAIL_LIMIT: u64 = 1024;
/// Rounds of reinsertion a drain gives the pairs that failed (a retry cap reached under
/// contention): each round runs only those, so contention fades at once.
const REINSERT_ROUNDS: usize = 8;
use super::config::{expanded, MAX_BUCKETS};
use super::types::words_per_entry;
use super::{HiveKey, HiveMap, HiveValue, META, SLOTS, STASH};
use crate::error::{Error, Result};

impl<K: HiveKey, V: HiveValue<K>> HiveMap<K, V> {
    /// Adds `buckets` buckets, splitting K at a time, then reinserts the stash. Works
    /// with or without [`auto_resize`](super::HiveConfig::auto_resize). Synchronizes.
    ///
    /// More than [`MAX_BUCKETS`] buckets in all is a
    /// [`CapacityOverflow`](gpuds_core::Error::CapacityOverflow), and arrays the device
    /// has no room for are [`OutOfMemory`](gpuds_core::Error::OutOfMemory); either way the
    /// table is left as it was (the slot and metadata arrays for the whole expansion are
    /// allocated before the first split). Should the stash's growth after the splits find
    /// no memory, the expansion stands and the table is valid.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = gpuds_hive::HiveMap::<u32, u32>::new(&gpu, 1 << 16)?;
    /// map.insert_many(&[1, 2, 3], &[1, 2, 3])?;
    /// let before = map.buckets();
    /// map.expand(100)?;
    /// assert_eq!(map.buckets(), before + 100);
    /// map.validate()?;
    /// # Ok::<(), gpuds_hive::Error>(())
    /// ```
    pub fn expand(&mut self, buckets: usize) -> Result<()> {
        let total = expanded(self.buckets(), buckets)?;
        self.reserve_buckets(total)?;
        // Everything the stash's drain will allocate, before the table changes: an
        // allocation that failed after the split would leave an expansion half done.
        let slots = total.saturating_mul(self.config.slots_per_bucket as usize);
        let spare = self.stash_buffers(slots)?;
        self.split_buckets(buckets)?;
        self.drain_stash_with(spare)
    }

    /// Removes up to `buckets` buckets by merging partners back, K at a time, stopping
    /// early where a partner does not fit or at the first size of the table; returns how
    /// many were removed. Synchronizes.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = gpuds_hive::HiveMap::<u32, u32>::new(&gpu, 1 << 16)?;
    /// map.expand(64)?;
    /// assert_eq!(map.contract(64)?, 64);
    /// # Ok::<(), gpuds_hive::Error>(())
    /// ```
    pub fn contract(&mut self, buckets: usize) -> Result<usize> {
        let mut left = buckets;
        let mut removed = 0;
        let k = self.config.resize_batch as usize;
        while left > 0 && self.buckets() > self.min_buckets as usize {
            let lowered = self.split == 0;
            if lowered {
                if self.level_mask == 0 {
                    break;
                }
                self.level_mask >>= 1;
                self.split = self.level_mask + 1;
            }
            let step = left
                .min(k)
                .min(self.split as usize)
                .min(self.buckets() - self.min_buckets as usize) as u32;
            let first = self.split - step;
            let fits = self.merge_fits(first, step)?;
            if fits == 0 {
                if lowered {
                    self.level_mask = (self.level_mask << 1) | 1;
                    self.split = 0;
                }
                break;
            }
            self.launch_pairs(true, self.split - fits, fits)?;
            self.split -= fits;
            self.contractions += 1;
            removed += fits as usize;
            left -= fits as usize;
            if fits < step {
                break;
            }
        }
        self.gpu.synchronize()?;
        Ok(removed)
    }

    /// How many of the pairs `first..first + count`, counted from the top, can merge.
    fn merge_fits(&mut self, first: u32, count: u32) -> Result<u32> {
        let stream = self.gpu.stream().clone();
        let mut ok = stream.alloc_zeros::<u32>(count as usize)?;
        let r = self.device_ref_with(self.level_mask, self.split);
        let kernel = &self.kernels.merge_check;
        let shape = self.gpu.grid_for(kernel, count as usize, super::BLOCK)?;
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&r).arg(&first).arg(&count).arg(&mut ok);
        // SAFETY: the kernel reads the metadata of both buckets of each pair.
        unsafe { args.launch(shape) }?;
        let ok = stream.clone_dtoh(&ok)?;
        Ok(ok.iter().rev().take_while(|&&f| f == 1).count() as u32)
    }

    fn device_ref_with(&self, level_mask: u32, split: u32) -> super::HiveRef {
        super::HiveRef {
            level_mask,
            split,
            buckets: level_mask + 1 + split,
            ..self.device_ref()
        }
    }

    /// Splits (or merges) `count` pairs starting at bucket `first` under the current
    /// level mask.
    fn launch_pairs(&mut self, merge: bool, first: u32, count: u32) -> Result<()> {
        let r = self.device_ref();
        let kernel = if merge {
            &self.kernels.merge
        } else {
            &self.kernels.split
        };
        let shape = self.shape(
            kernel,
            count as usize * self.config.slots_per_bucket as usize,
        )?;
        let mut args = self.gpu.stream().launch_builder(kernel.func());
        args.arg(&r).arg(&first).arg(&count);
        // SAFETY: every partner first + level_mask + 1 + i lies inside the arrays.
        unsafe { args.launch(shape) }?;
        Ok(())
    }

    /// Splits `buckets` more buckets, K at a time, growing the arrays as needed.
    fn split_buckets(&mut self, buckets: usize) -> Result<()> {
        let mut left = buckets;
        let k = self.config.resize_batch as usize;
        while left > 0 {
            let level_end = self.level_mask as usize + 1;
            let step = left.min(k).min(level_end - self.split as usize) as u32;
            self.reserve_buckets(self.buckets() + step as usize)?;
            self.launch_pairs(false, self.split, step)?;
            self.split += step;
            if self.split as usize == level_end {
                self.level_mask = (self.level_mask << 1) | 1;
                self.split = 0;
            }
            self.expansions += 1;
            left -= step as usize;
        }
        Ok(())
    }

    /// Grows the arrays (doubling, up to [`MAX_BUCKETS`]) so that `buckets` buckets fit.
    /// When the doubled arrays do not fit in device memory, arrays of exactly `buckets`
    /// are tried; when those do not fit either, the error is
    /// [`OutOfMemory`](gpuds_core::Error::OutOfMemory) and the arrays are as they were.
    fn reserve_buckets(&mut self, buckets: usize) -> Result<()> {
        let s = self.layout().bucket_words();
        let have = self.slots.len() / s;
        if buckets <= have {
            return Ok(());
        }
        expanded(buckets, 0)?;
        let doubled = have.saturating_mul(2).min(MAX_BUCKETS).max(buckets);
        let (mut slots, mut meta) = match self.alloc_buckets(doubled) {
            Err(Error::Core(gpuds_core::Error::OutOfMemory { .. })) if doubled > buckets => {
                self.alloc_buckets(buckets)?
            }
            other => other?,
        };
        let stream = self.gpu.stream().clone();
        let used = self.buckets();
        stream.memcpy_dtod(
            &self.slots.slice(..used * s),
            &mut slots.slice_mut(..used * s),
        )?;
        stream.memcpy_dtod(
            &self.meta.slice(..2 * used),
            &mut meta.slice_mut(..2 * used),
        )?;
        self.slots = slots;
        self.meta = meta;
        Ok(())
    }

    /// Uninitialised slot and metadata arrays for `buckets` buckets (at most
    /// [`MAX_BUCKETS`]: the sizes fit).
    fn alloc_buckets(
        &self,
        buckets: usize,
    ) -> Result<(
        cudarc::driver::CudaSlice<u64>,
        cudarc::driver::CudaSlice<u32>,
    )> {
        let s = self.layout().bucket_words();
        // SAFETY: the caller copies the used prefix; the split kernel writes every
        // partner bucket (slots and metadata) before any kernel reads it.
        let slots = unsafe { self.gpu.alloc_uninit::<u64>(buckets * s, SLOTS) }?;
        // SAFETY: as for the slots.
        let meta = unsafe { self.gpu.alloc_uninit::<u32>(2 * buckets, META) }?;
        Ok((slots, meta))
    }

    /// Before a batch of up to `incoming` new keys: expands so that they fit under the
    /// upper threshold.
    pub(super) fn grow_for(&mut self, incoming: usize) -> Result<()> {
        if !self.config.auto_resize {
            return Ok(());
        }
        // Past the largest table the batch runs in the largest one; inserts that find no
        // room then fail alone (NotApplied), as without auto_resize.
        let pairs = (self.len as u64).saturating_add(incoming as u64);
        let buckets = self.config.buckets_for(pairs).unwrap_or(MAX_BUCKETS);
        if buckets > self.buckets() {
            self.expand(buckets - self.buckets())?;
        }
        Ok(())
    }

    /// After an update batch: expand above the upper threshold (which drains the stash),
    /// contract below the lower one, and drain a stash that is half used (reinsertion
    /// compacts it and makes room) or whose tail has passed [`STASH_TAIL_LIMIT`] entries
    /// (entries emptied by deletes stay as empty words that every lookup of a flagged
    /// bucket scans). A shorter stash is left as it is: only operations whose
    /// first bucket has its STASHED flag look at it.
    pub(super) fn after_update(&mut self) -> Result<()> {
        if self.config.auto_resize {
            let s = self.config.slots_per_bucket as usize;
            if self.load_factor() > self.config.max_load && self.buckets() < MAX_BUCKETS {
                let wanted = self
                    .config
                    .buckets_for(self.len as u64)
                    .unwrap_or(MAX_BUCKETS);
                let extra = wanted
                    .saturating_sub(self.buckets())
                    .clamp(1, MAX_BUCKETS - self.buckets());
                return self.expand(extra);
            }
            if self.config.min_load > 0.0
                && self.load_factor() < self.config.min_load
                && self.buckets() > self.min_buckets as usize
            {
                let middle = (self.config.min_load + self.config.max_load) / 2.0;
                let target = ((self.len as f64 / middle).ceil() as usize)
                    .div_ceil(s)
                    .max(self.min_buckets as usize);
                if target < self.buckets() {
                    self.contract(self.buckets() - target)?;
                }
            }
        }
        if self.stash_tail > STASH_TAIL_LIMIT
            || (self.stash_tail > 0 && self.stash_tail as usize * 2 >= self.stash_entries())
        {
            self.drain_stash()?;
        }
        Ok(())
    }

    /// Takes every pair out of the stash and reinserts it into the table (pairs that
    /// still find no room go back into the emptied stash, which first grows to its share
    /// of the current capacity). The STASHED flags are cleared first; the reinsertion
    /// sets those of the pairs parked again. Synchronizes.
    pub(super) fn drain_stash(&mut self) -> Result<()> {
        let spare = self.stash_buffers(self.capacity())?;
        self.drain_stash_with(spare)
    }

    /// The buffers a drain of the stash at a table of `slots` slots allocates: room for a
    /// copy of every stashed pair, and the larger stash when its share of `slots` passes
    /// its size. Allocated first, so that a drain that runs out of memory changes nothing.
    fn stash_buffers(&self, slots: usize) -> Result<StashBuffers> {
        let w = words_per_entry::<K>();
        let wanted = self.config.stash_capacity(slots) * w;
        // SAFETY (both): the drain writes every word it reads (a copy of the stashed
        // pairs; the new stash is filled with empty words).
        let words = unsafe { self.gpu.alloc_uninit::<u64>(self.stash.len().max(w), STASH) }?;
        let larger = if wanted > self.stash.len() {
            Some(unsafe { self.gpu.alloc_uninit::<u64>(wanted, STASH) }?)
        } else {
            None
        };
        Ok(StashBuffers { words, larger })
    }

    /// [`Self::drain_stash`] with its buffers allocated.
    fn drain_stash_with(&mut self, spare: StashBuffers) -> Result<()> {
        let stream = self.gpu.stream().clone();
        let ctrl = stream.clone_dtoh(&self.ctrl)?;
        let w = words_per_entry::<K>();
        // Entries in use (each `w` words).
        let used = (ctrl[CTRL_STASH_TAIL] as usize).min(self.stash_entries());
        if used == 0 && spare.larger.is_none() {
            self.stash_tail = 0;
            return Ok(());
        }
        let mut words = spare.words;
        if used > 0 {
            stream.memcpy_dtod(
                &self.stash.slice(..used * w),
                &mut words.slice_mut(..used * w),
            )?;
        }
        if let Some(larger) = spare.larger {
            self.stash = larger;
        }
        gpuds_core::primitives::fill(&self.gpu, &mut self.stash, EMPTY)?;
        // The tail and the claims (none is held between kernels) start again at zero.
        stream.memcpy_htod(
            &[0u64, 0],
            &mut self.ctrl.slice_mut(CTRL_STASH_TAIL..CTRL_STASH_CLAIMS + 1),
        )?;
        if used == 0 {
            self.stash_tail = 0;
            return Ok(());
        }
        let r = self.device_ref();
        let kernel = &self.kernels.clear_stashed;
        let shape = self.gpu.grid_for(kernel, self.buckets(), super::BLOCK)?;
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&r);
        // SAFETY: the kernel rewrites the metadata words of the buckets in use.
        unsafe { args.launch(shape) }?;
        let mut words = words;
        let mut left = used;
        for round in 1.. {
            let call = CallStatus::new(&self.gpu, left)?;
            let r = self.call_ref(&call);
            let n = left as u64;
            let kernel = &self.kernels.reinsert;
            let shape = self.shape(kernel, left)?;
            let mut args = stream.launch_builder(kernel.func());
            args.arg(&r).arg(&words).arg(&n);
            // SAFETY: the kernel reads n words and works inside the ref's arrays.
            unsafe { args.launch(shape) }?;
            // Each reinsert parks at most one pair in the emptied stash, so a failure is a
            // retry cap reached under contention: the failed pairs (still in `words`) go
            // round again, alone.
            let status = call.status()?;
            if status.is_ok() {
                break;
            }
            let failed = call.not_applied()?;
            if round == REINSERT_ROUNDS || failed.is_empty() {
                return Err(Error::Invalid(format!(
                    "{} stash pairs could not be reinserted in {round} rounds ({status})",
                    failed.len()
                )));
            }
            let host = stream.clone_dtoh(&words)?;
            let again: Vec<u64> = failed
                .iter()
                .flat_map(|&i| host[i * w..(i + 1) * w].iter().copied())
                .collect();
            words = stream.clone_htod(&again)?;
            left = again.len() / w;
        }
        let ctrl = stream.clone_dtoh(&self.ctrl)?;
        self.len = Counters::of(&ctrl).len as usize;
        self.stash_tail = ctrl[CTRL_STASH_TAIL];
        Ok(())
    }
}

/// The buffers a drain of the stash needs (see `HiveMap::stash_buffers`).
struct StashBuffers {
    /// Room for a copy of the stashed pairs (the stash's size, at least one word).
    words: CudaSlice<u64>,
    /// The stash at its new size, when it grows.
    larger: Option<CudaSlice<u64>>,
}
