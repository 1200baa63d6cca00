//! The multimap operations of [`SlabHashMap`] (a map made with `unique_keys: false`;
//! COUNT works on every map): INSERT of duplicates, COUNT, SEARCHALL and DELETEALL.

use cudarc::driver::{CudaSlice, PushKernelArg};
use gpuds_core::failures::CallStatus;
use gpuds_core::primitives;

use super::SlabHashMap;
use crate::error::{Error, Result};
use crate::input::{BatchInput, Staged};
use crate::keys::{SlabKey, SlabValue};
use crate::ops::MultiValues;
use crate::table::Guard;

impl<K: SlabKey, V: SlabValue> SlabHashMap<K, V> {
    /// INSERT, the multimap insert: adds every pair as a new instance, after the key's
    /// earlier instances. Only for maps made with `unique_keys: false`
    /// ([`Error::NeedsDuplicates`] otherwise). Synchronizes.
    ///
    /// ```no_run
    /// use gpuds_slabhash::{SlabHashConfig, SlabHashMap};
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut mm = SlabHashMap::<u32, u32>::with_config(
    ///     &gpu, SlabHashConfig { unique_keys: false, ..Default::default() })?;
    /// mm.insert_duplicates_many(&[7, 7], &[1, 2])?;
    /// assert_eq!(mm.count_many(&[7])?, vec![2]);
    /// # Ok::<(), gpuds_slabhash::Error>(())
    /// ```
    pub fn insert_duplicates_many(
        &mut self,
        keys: &(impl BatchInput<K> + ?Sized),
        values: &(impl BatchInput<V> + ?Sized),
    ) -> Result<()> {
        if self.config().unique_keys {
            return Err(Error::NeedsDuplicates("insert_duplicates_many"));
        }
        self.store(keys, values, false, "insert_duplicates_many")
    }

    /// COUNT: instances of each key (0 or 1 with unique keys). Synchronizes.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = gpuds_slabhash::SlabHashMap::<u32, u32>::new(&gpu, 10)?;
    /// map.insert_many(&[1], &[10])?;
    /// assert_eq!(map.count_many(&[1, 2])?, vec![1, 0]);
    /// # Ok::<(), gpuds_slabhash::Error>(())
    /// ```
    pub fn count_many(&self, keys: &(impl BatchInput<K> + ?Sized)) -> Result<Vec<u32>> {
        let n = keys.len();
        if n == 0 {
            return Ok(Vec::new());
        }
        let call = self.table.begin_call(n, false)?;
        let (k, counts, guard) = self.counts(keys, &call)?;
        self.table.check_read(&call, &guard, &k.view())?;
        Ok(self.table.gpu().stream().clone_dtoh(&counts)?)
    }

    /// Launches COUNT for non-empty `keys` under `call`; returns the staged keys, the
    /// counts on the device and the keys' check.
    fn counts<'a>(
        &self,
        keys: &'a (impl BatchInput<K> + ?Sized),
        call: &CallStatus,
    ) -> Result<(Staged<'a, K>, CudaSlice<u32>, Guard)> {
        let n = keys.len();
        let gpu = self.table.gpu();
        let k = keys.stage(gpu)?;
        let guard = self.table.check_keys(keys, &k.view())?;
        let stream = gpu.stream();
        let mut counts = stream.alloc_zeros::<u32>(n)?;
        let kernel = self.table.kernel("count")?;
        let r = self.table.call_ref(call);
        let (n64, failed) = (n as u64, call.bits_ptr());
        let kv = k.view();
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&r).arg(&kv).arg(&n64).arg(&mut counts);
        guard.push(&mut args);
        args.arg(&failed);
        // SAFETY: the kernel reads keys[..n] and writes counts[..n] and the call's
        // status and failure bits.
        unsafe { args.launch(self.table.item_shape(n)?) }?;
        drop(args);
        Ok((k, counts, guard))
    }

    /// SEARCHALL: every value of every key, least recent first, as counts, offsets and
    /// one array of values (a COUNT, a scan and a second walk). Synchronizes. The offsets
    /// are 32-bit: more than `u32::MAX` values in all is a
    /// [`CapacityOverflow`](gpuds_core::Error::CapacityOverflow) (ask for fewer keys).
    ///
    /// ```no_run
    /// use gpuds_slabhash::{SlabHashConfig, SlabHashMap};
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut mm = SlabHashMap::<u32, u32>::with_config(
    ///     &gpu, SlabHashConfig { unique_keys: false, ..Default::default() })?;
    /// mm.insert_duplicates_many(&[7, 8, 7], &[1, 2, 3])?;
    /// let all = mm.get_all_many(&[7, 9])?;
    /// let mut sevens = all.get(0).to_vec();
    /// sevens.sort();
    /// assert_eq!(sevens, vec![1, 3]);
    /// assert!(all.get(1).is_empty());
    /// # Ok::<(), gpuds_slabhash::Error>(())
    /// ```
    pub fn get_all_many(&self, keys: &(impl BatchInput<K> + ?Sized)) -> Result<MultiValues<V>> {
        let n = keys.len();
        if n == 0 {
            return Ok(MultiValues {
                counts: Vec::new(),
                offsets: Vec::new(),
                values: Vec::new(),
            });
        }
        let gpu = self.table.gpu();
        let stream = gpu.stream();
        // One status for both kernels: a request either of them could not serve is
        // named once.
        let call = self.table.begin_call(n, false)?;
        let (k, counts, guard) = self.counts(keys, &call)?;
        // The offsets are 32-bit: more values than that is refused, never wrapped.
        let counts_host = stream.clone_dtoh(&counts)?;
        let all: u64 = counts_host.iter().map(|&c| u64::from(c)).sum();
        gpuds_core::size::u32_len(all as usize, "values of one get_all_many call")?;
        let mut offsets = stream.alloc_zeros::<u32>(n)?;
        let total = primitives::exclusive_scan(gpu, &counts, &mut offsets)?;
        let mut values = stream.alloc_zeros::<V>(total.max(1) as usize)?;
        let kernel = self.table.kernel("find_all")?;
        let r = self.table.call_ref(&call);
        let (n64, failed) = (n as u64, call.bits_ptr());
        let kv = k.view();
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&r)
            .arg(&kv)
            .arg(&n64)
            .arg(&offsets)
            .arg(&total)
            .arg(&mut values);
        guard.push(&mut args);
        args.arg(&failed);
        // SAFETY: request i writes at most offsets[i+1] - offsets[i] values from offsets[i],
        // and the call's status and failure bits.
        unsafe { args.launch(self.table.item_shape(n)?) }?;
        drop(args);
        self.table.check_read(&call, &guard, &kv)?;
        let mut values = stream.clone_dtoh(&values)?;
        values.truncate(total as usize);
        let result = MultiValues {
            counts: counts_host,
            offsets: stream.clone_dtoh(&offsets)?,
            values,
        };
        Ok(result)
    }

    /// DELETEALL: removes every instance of each key. Synchronizes.
    ///
    /// ```no_run
    /// use gpuds_slabhash::{SlabHashConfig, SlabHashMap};
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut mm = SlabHashMap::<u32, u32>::with_config(
    ///     &gpu, SlabHashConfig { unique_keys: false, ..Default::default() })?;
    /// mm.insert_duplicates_many(&[7, 7, 8], &[1, 2, 3])?;
    /// mm.remove_all_many(&[7])?;
    /// assert_eq!(mm.len()?, 1);
    /// # Ok::<(), gpuds_slabhash::Error>(())
    /// ```
    pub fn remove_all_many(&mut self, keys: &(impl BatchInput<K> + ?Sized)) -> Result<()> {
        self.remove("erase_all", keys, 1)
    }
}
