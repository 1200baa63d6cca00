//! The queries of a [`HiveMap`]: lookups, export, statistics, counters and `validate`.

use cudarc::driver::{CudaSlice, CudaView, PushKernelArg};

use super::device::{Counters, CTRL_STASH_CLAIMS, CTRL_STASH_TAIL};
use super::image::Image;
use super::types::{decode, words_per_entry};
use super::{HiveKey, HiveMap, HiveStats, HiveValue};
use crate::error::{Error, Result};
use crate::Input;

impl<K: HiveKey, V: HiveValue<K>> HiveMap<K, V> {
    /// Looks keys up: the value of each, or `None`. Synchronizes. Lookups cannot fail
    /// (no writer runs beside them, so they never wait or retry) and report nothing; in
    /// particular nothing an earlier call or a user kernel recorded.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = gpuds_hive::HiveMap::<u32, u32>::new(&gpu, 1 << 16)?;
    /// map.insert_many(&[5], &[50])?;
    /// assert_eq!(map.get_many(&[5, 6])?, vec![Some(50), None]);
    /// # Ok::<(), gpuds_hive::Error>(())
    /// ```
    pub fn get_many<I: Input<K> + ?Sized>(&self, keys: &I) -> Result<Vec<Option<V>>> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let k = self.stage_keys(keys, false)?;
        let stream = self.gpu.stream();
        let mut values = stream.alloc_zeros::<V>(keys.len())?;
        let mut found = stream.alloc_zeros::<u8>(keys.len())?;
        self.launch_find(
            &k.view(),
            Some(&mut values),
            Some(&mut found),
            V::from_u64(0),
        )?;
        let values = stream.clone_dtoh(&values)?;
        let found = stream.clone_dtoh(&found)?;
        Ok(values
            .into_iter()
            .zip(found)
            .map(|(v, f)| (f != 0).then_some(v))
            .collect())
    }

    /// Looks keys up into `values` (`absent` for missing keys). Device keys are not
    /// checked for the reserved key, which is simply never found; host keys are. Does
    /// not synchronize for device keys: the work is enqueued on [`Gpu::stream`](gpuds_core::Gpu::stream). As for
    /// [`get_many`](Self::get_many), the lookups cannot fail, so there is no status to
    /// read later.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let map = gpuds_hive::HiveMap::<u32, u32>::new(&gpu, 1 << 16)?;
    /// let keys = gpu.stream().clone_htod(&[1u32, 2])?;
    /// let mut values = gpu.stream().alloc_zeros::<u32>(2)?;
    /// map.get_many_into(&keys.as_view(), &mut values, u32::MAX)?;
    /// assert_eq!(gpu.stream().clone_dtoh(&values)?, vec![u32::MAX; 2]);
    /// # Ok::<(), gpuds_hive::Error>(())
    /// ```
    pub fn get_many_into<I: Input<K> + ?Sized>(
        &self,
        keys: &I,
        values: &mut CudaSlice<V>,
        absent: V,
    ) -> Result<()> {
        if values.len() < keys.len() {
            return Err(gpuds_core::Error::InvalidArgument(format!(
                "{} keys but room for {} values",
                keys.len(),
                values.len()
            ))
            .into());
        }
        if keys.is_empty() {
            return Ok(());
        }
        let k = self.stage_keys(keys, false)?;
        self.launch_find(&k.view(), Some(values), None, absent)
    }

    /// Whether each key is present. Synchronizes.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = gpuds_hive::HiveMap::<u32, u32>::new(&gpu, 1 << 16)?;
    /// map.insert_many(&[5], &[50])?;
    /// assert_eq!(map.contains_many(&[5, 6])?, vec![true, false]);
    /// # Ok::<(), gpuds_hive::Error>(())
    /// ```
    pub fn contains_many<I: Input<K> + ?Sized>(&self, keys: &I) -> Result<Vec<bool>> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let k = self.stage_keys(keys, false)?;
        let stream = self.gpu.stream();
        let mut found = stream.alloc_zeros::<u8>(keys.len())?;
        self.launch_find(&k.view(), None, Some(&mut found), V::from_u64(0))?;
        let found = stream.clone_dtoh(&found)?;
        Ok(found.into_iter().map(|f| f != 0).collect())
    }

    pub(super) fn launch_find(
        &self,
        keys: &CudaView<'_, K>,
        values: Option<&mut CudaSlice<V>>,
        found: Option<&mut CudaSlice<u8>>,
        absent: V,
    ) -> Result<()> {
        let stream = self.gpu.stream();
        let mut r = self.device_ref();
        if self.stash_tail == 0 {
            // No writer runs with this kernel: an empty stash stays empty.
            r.stash_capacity = 0;
        }
        let n = keys.len() as u64;
        let null = 0u64;
        let kernel = &self.kernels.find;
        let shape = self.shape(kernel, keys.len())?;
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&r).arg(keys).arg(&n);
        match values {
            Some(v) => args.arg(v),
            None => args.arg(&null),
        };
        match found {
            Some(f) => args.arg(f),
            None => args.arg(&null),
        };
        args.arg(&absent);
        // SAFETY: the kernel reads n keys and writes n entries of each non-null output.
        unsafe { args.launch(shape) }?;
        Ok(())
    }

    /// Every pair, in no particular order. Synchronizes.
    pub fn to_vec(&self) -> Result<Vec<(K, V)>> {
        Ok(self
            .image()?
            .pairs()
            .into_iter()
            .map(|(k, v)| (K::from_u64(k), V::from_u64(v)))
            .collect())
    }

    /// Size, load, stash occupancy and the insert-step counts. Synchronizes.
    pub fn stats(&self) -> Result<HiveStats> {
        let stream = self.gpu.stream();
        let ctrl = stream.clone_dtoh(&self.ctrl)?;
        let counters = Counters::of(&ctrl);
        let stash = stream.clone_dtoh(&self.stash)?;
        let w = words_per_entry::<K>();
        let stash_used = stash
            .chunks_exact(w)
            .filter(|entry| decode(K::WIDE, entry).is_some())
            .count();
        let stash_capacity = stash.len() / w;
        let bucket_words = self.layout().bucket_words();
        let allocated = self.slots.len() / bucket_words;
        Ok(HiveStats {
            len: self.len,
            capacity: self.capacity(),
            buckets: self.buckets(),
            allocated_buckets: allocated,
            load_factor: self.load_factor(),
            level_mask: self.level_mask,
            split: self.split,
            stash_used,
            stash_capacity,
            stash_occupancy: stash_used as f64 / stash_capacity as f64,
            insert_steps: counters.steps,
            evictions: counters.moves,
            expansions: self.expansions,
            contractions: self.contractions,
            memory_bytes: allocated * (bucket_words * 8 + 8)
                + stash.len() * 8
                + self.queue.as_ref().map_or(0, |q| q.len() * 4),
        })
    }

    /// Zeroes the insert-step and eviction counters of [`stats`](Self::stats).
    /// Synchronizes.
    pub fn reset_counters(&mut self) -> Result<()> {
        let stream = self.gpu.stream();
        let mut ctrl = stream.clone_dtoh(&self.ctrl)?;
        Counters::reset_history(&mut ctrl);
        stream.memcpy_htod(&ctrl, &mut self.ctrl)?;
        self.gpu.synchronize()?;
        Ok(())
    }

    /// Copies the table to the host and checks its invariants: every free bit matches
    /// an empty slot, no bucket is locked, every key sits in one of its two buckets
    /// (under the current level mask and split pointer) or in the stash below its tail,
    /// a key outside its first bucket has that bucket's SPILL (second bucket) or STASHED
    /// (stash) flag set, no key is stored twice, the count matches the length, and no
    /// stash entry is still claimed without having been taken.
    /// Synchronizes.
    pub fn validate(&self) -> Result<()> {
        let image = self.image()?;
        image.check().map_err(Error::Invalid)?;
        if image.len as usize != self.len {
            return Err(Error::Invalid(format!(
                "the device counts {} pairs, the host {}",
                image.len, self.len
            )));
        }
        Ok(())
    }

    pub(super) fn image(&self) -> Result<Image> {
        let stream = self.gpu.stream();
        let layout = self.layout();
        let s = layout.bucket_words();
        let buckets = self.buckets();
        let ctrl = stream.clone_dtoh(&self.ctrl)?;
        Ok(Image {
            layout,
            reserved: K::RESERVED.iter().map(|k| k.to_u64()).collect(),
            hash: self.config.hash,
            level_mask: self.level_mask,
            split: self.split,
            slots: stream.clone_dtoh(&self.slots.slice(..buckets * s))?,
            meta: stream.clone_dtoh(&self.meta.slice(..2 * buckets))?,
            stash: stream.clone_dtoh(&self.stash)?,
            stash_tail: ctrl[CTRL_STASH_TAIL],
            stash_claims: ctrl[CTRL_STASH_CLAIMS],
            len: Counters::of(&ctrl).len,
        })
    }
}
