//! [`SortedArray`], the GPU sorted array (GPU SA) the dissertation compares the B-Tree
//! with (§3.5): the pairs sorted by key with gpuds-core's radix sort, queried by binary
//! search, one thread per query. `gpuds-bench btree` runs it as the baseline.

use gpuds_core::cudarc::driver::{CudaSlice, LaunchConfig, PushKernelArg};
use gpuds_core::primitives::{RadixSorter, Scanner};
use gpuds_core::{Gpu, Kernel, Program};

use crate::error::Result;

const SOURCE: &str = include_str!("../cuda/kernels/sorted_array.cu");
const BLOCK: u32 = 256;

pub(crate) fn program() -> Program {
    Program::new("btree_sorted_array", SOURCE).headers(gpuds_core::cuda_headers())
}

/// A sorted array of unique `u32` keys with `u32` values on the GPU.
///
/// # Examples
/// ```no_run
/// use gpuds_btree::SortedArray;
/// let gpu = gpuds_core::Gpu::new(0)?;
/// let mut sa = SortedArray::new(&gpu)?;
/// let stream = gpu.stream();
/// let (mut k, mut v) = (stream.clone_htod(&[3u32, 1, 2])?, stream.clone_htod(&[30u32, 10, 20])?);
/// sa.build_device(&mut k, &mut v)?;
/// assert_eq!(sa.get_many(&[2, 5])?, vec![Some(20), None]);
/// # Ok::<(), gpuds_btree::Error>(())
/// ```
pub struct SortedArray {
    gpu: Gpu,
    keys: CudaSlice<u32>,
    values: CudaSlice<u32>,
    len: u32,
    sorter: RadixSorter,
    scanner: Scanner,
    last_of_run: Kernel,
    get: Kernel,
    range_count: Kernel,
    successor: Kernel,
}

impl std::fmt::Debug for SortedArray {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SortedArray")
            .field("len", &self.len)
            .finish()
    }
}

impl SortedArray {
    /// An empty array.
    pub fn new(gpu: &Gpu) -> Result<Self> {
        let module = gpu.load(&program())?;
        // The B-Tree's bulk-build helper of u32 keys (its node size is irrelevant here).
        let update = gpu.load(&crate::kernels::update_program::<u32, u32>(128))?;
        Ok(Self {
            gpu: gpu.clone(),
            keys: gpu.stream().alloc_zeros::<u32>(1)?,
            values: gpu.stream().alloc_zeros::<u32>(1)?,
            len: 0,
            sorter: RadixSorter::new(gpu)?,
            scanner: Scanner::new(gpu)?,
            last_of_run: update.kernel("btree_last_of_run_u32_u32")?,
            get: module.kernel("sa_get")?,
            range_count: module.kernel("sa_range_count")?,
            successor: module.kernel("sa_successor")?,
        })
    }

    /// Number of pairs.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Empties the array (keeps its memory).
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Replaces the contents: sorts the pairs (in place; for a repeated key the last
    /// pair wins). Synchronizes (it reads the number of distinct keys).
    pub fn build_device(
        &mut self,
        keys: &mut CudaSlice<u32>,
        values: &mut CudaSlice<u32>,
    ) -> Result<()> {
        let n = crate::map::same_len(keys.len(), values.len(), "values")?;
        let stream = self.gpu.stream().clone();
        if n == 0 {
            self.len = 0;
            return Ok(());
        }
        self.sorter.sort_pairs(keys, values)?;
        let mut flags = stream.alloc_zeros::<u32>(n as usize)?;
        let shape = self.gpu.grid_for(&self.last_of_run, n as usize, BLOCK)?;
        let mut args = stream.launch_builder(self.last_of_run.func());
        args.arg(&*keys).arg(&n).arg(&mut flags);
        // SAFETY: keys and flags hold n elements.
        unsafe { args.launch(shape) }?;
        let mut unique_keys = stream.alloc_zeros::<u32>(n as usize)?;
        let mut unique_values = stream.alloc_zeros::<u32>(n as usize)?;
        let mut count = stream.alloc_zeros::<u32>(1)?;
        self.scanner
            .compact(keys, &flags, &mut unique_keys, &mut count)?;
        self.scanner
            .compact(values, &flags, &mut unique_values, &mut count)?;
        self.len = stream.clone_dtoh(&count)?.first().copied().unwrap_or(0);
        self.keys = unique_keys;
        self.values = unique_values;
        Ok(())
    }

    /// Adds a batch the way a sorted array must: the old pairs and the batch together,
    /// sorted again. Synchronizes.
    pub fn insert_device(&mut self, keys: &CudaSlice<u32>, values: &CudaSlice<u32>) -> Result<()> {
        let b = crate::map::same_len(keys.len(), values.len(), "values")? as usize;
        let m = self.len as usize;
        let stream = self.gpu.stream().clone();
        let mut all_keys = stream.alloc_zeros::<u32>(m + b)?;
        let mut all_values = stream.alloc_zeros::<u32>(m + b)?;
        if m > 0 {
            stream.memcpy_dtod(&self.keys.slice(..m), &mut all_keys.slice_mut(..m))?;
            stream.memcpy_dtod(&self.values.slice(..m), &mut all_values.slice_mut(..m))?;
        }
        if b > 0 {
            stream.memcpy_dtod(keys, &mut all_keys.slice_mut(m..))?;
            stream.memcpy_dtod(values, &mut all_values.slice_mut(m..))?;
        }
        self.build_device(&mut all_keys, &mut all_values)
    }

    fn grid(&self, kernel: &Kernel, q: u32) -> Result<LaunchConfig> {
        Ok(self
            .gpu
            .grid_for(kernel, (q as usize).div_ceil(32).max(1) * 32, BLOCK)?)
    }

    /// Lookups: values and one found bit per query. Does not synchronize.
    pub fn get_many_device(
        &self,
        queries: &CudaSlice<u32>,
        out: &mut CudaSlice<u32>,
        found: &mut CudaSlice<u32>,
    ) -> Result<()> {
        let q = crate::map::query_len(queries.len(), out.len(), found.len())?;
        let shape = self.grid(&self.get, q)?;
        let mut a = self.gpu.stream().launch_builder(self.get.func());
        a.arg(&self.keys)
            .arg(&self.values)
            .arg(&self.len)
            .arg(queries)
            .arg(&q)
            .arg(out)
            .arg(found);
        // SAFETY: the arguments match the kernel; every buffer holds the results of q
        // queries (checked by query_len).
        unsafe { a.launch(shape) }?;
        Ok(())
    }

    /// Lookups from the host. Synchronizes.
    pub fn get_many(&self, queries: &[u32]) -> Result<Vec<Option<u32>>> {
        let stream = self.gpu.stream();
        let q = stream.clone_htod(queries)?;
        let mut out = stream.alloc_zeros::<u32>(queries.len().max(1))?;
        let mut found = stream.alloc_zeros::<u32>(queries.len().div_ceil(32).max(1))?;
        self.get_many_device(&q, &mut out, &mut found)?;
        let (out, found) = (stream.clone_dtoh(&out)?, stream.clone_dtoh(&found)?);
        Ok((0..queries.len())
            .map(|i| crate::map::bit(&found, i).then_some(out[i]))
            .collect())
    }

    /// Count form of range queries (0 when lo > hi). Does not synchronize.
    pub fn range_count_device(
        &self,
        lo: &CudaSlice<u32>,
        hi: &CudaSlice<u32>,
        counts: &mut CudaSlice<u32>,
    ) -> Result<()> {
        let q = crate::map::query_len(lo.len().min(hi.len()), counts.len(), usize::MAX)?;
        let shape = self.grid(&self.range_count, q)?;
        let mut a = self.gpu.stream().launch_builder(self.range_count.func());
        a.arg(&self.keys)
            .arg(&self.len)
            .arg(lo)
            .arg(hi)
            .arg(&q)
            .arg(counts);
        // SAFETY: the arguments match the kernel; every buffer holds the results of q
        // queries (checked by query_len).
        unsafe { a.launch(shape) }?;
        Ok(())
    }

    /// Successor queries. Does not synchronize.
    pub fn successor_many_device(
        &self,
        queries: &CudaSlice<u32>,
        out_keys: &mut CudaSlice<u32>,
        out_values: &mut CudaSlice<u32>,
        found: &mut CudaSlice<u32>,
    ) -> Result<()> {
        let q = crate::map::query_len(
            queries.len(),
            out_keys.len().min(out_values.len()),
            found.len(),
        )?;
        let shape = self.grid(&self.successor, q)?;
        let mut a = self.gpu.stream().launch_builder(self.successor.func());
        a.arg(&self.keys)
            .arg(&self.values)
            .arg(&self.len)
            .arg(queries)
            .arg(&q)
            .arg(out_keys)
            .arg(out_values)
            .arg(found);
        // SAFETY: the arguments match the kernel; every buffer holds the results of q
        // queries (checked by query_len).
        unsafe { a.launch(shape) }?;
        Ok(())
    }
}
