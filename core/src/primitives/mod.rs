//! Device primitives: radix sort, exclusive scan, stream compaction, fill and iota.
//!
//! Later crates build on these (the B-Tree's bulk build sorts its keys, the
//! oversubscription tables sort batches, graph builds compact edge lists). Each
//! primitive is a kernel module under `core/cuda/kernels/`, compiled per element type on
//! first use and cached like every other module ([`Gpu::load`](crate::Gpu::load)).
//!
//! ```text
//! RadixSorter::new(gpu: &Gpu) -> Result<RadixSorter>
//! RadixSorter::sort_keys<K: DeviceKey>(&mut self, keys: &mut CudaSlice<K>) -> Result<()>
//! RadixSorter::sort_keys_bits<K: DeviceKey>(&mut self, keys: &mut CudaSlice<K>,
//!                                           begin_bit: u32, end_bit: u32) -> Result<()>
//! RadixSorter::sort_pairs<K: DeviceKey, V: DeviceValue>(&mut self, keys: &mut CudaSlice<K>,
//!                                                       values: &mut CudaSlice<V>) -> Result<()>
//! RadixSorter::sort_pairs_bits<K: DeviceKey, V: DeviceValue>(&mut self, keys, values,
//!                                                            begin_bit: u32, end_bit: u32) -> Result<()>
//! Scanner::new(gpu: &Gpu) -> Result<Scanner>
//! Scanner::reserve(&mut self, len: usize) -> Result<()>
//! Scanner::exclusive_scan<T: Scan>(&mut self, input: &CudaSlice<T>, output: &mut CudaSlice<T>,
//!                                  total: &mut CudaSlice<T>) -> Result<()>
//! Scanner::compact<T: DeviceType>(&mut self, input: &CudaSlice<T>, flags: &CudaSlice<u32>,
//!                                 output: &mut CudaSlice<T>, count: &mut CudaSlice<u32>) -> Result<()>
//! exclusive_scan<T: Scan>(gpu: &Gpu, input: &CudaSlice<T>, output: &mut CudaSlice<T>) -> Result<T>
//! compact<T: DeviceType>(gpu: &Gpu, input: &CudaSlice<T>, flags: &CudaSlice<u32>,
//!                        output: &mut CudaSlice<T>) -> Result<usize>
//! fill<T: DeviceType>(gpu: &Gpu, data: &mut CudaSlice<T>, value: T) -> Result<()>
//! iota<T: Scan>(gpu: &Gpu, data: &mut CudaSlice<T>, start: T) -> Result<()>
//! programs() -> Vec<Program>
//! ```
//!
//! | call | synchronizes the stream? |
//! | --- | --- |
//! | `RadixSorter::sort_*`, `Scanner::exclusive_scan`, `Scanner::compact`, [`fill`], [`iota`] | no: work is enqueued on [`Gpu::stream`](crate::Gpu::stream); totals and counts stay on the device |
//! | [`exclusive_scan`], [`compact`] | yes: they return the total / the count, and allocate their scratch per call |
//!
//! The owners ([`RadixSorter`], [`Scanner`]) keep their scratch memory between calls and
//! allocate only when a larger input comes; use them in loops and timed code. The free
//! functions are conveniences built on them.
//!
//! Keys sort as unsigned integers (u32, u64); values are any 4- or 8-byte
//! [`DeviceValue`]. Sorting is stable: equal keys keep the order of
//! their values.
//!
//! # Examples
//! ```no_run
//! use gpuds_core::Gpu;
//! use gpuds_core::primitives::{compact, exclusive_scan, iota, RadixSorter};
//! let gpu = Gpu::new(0)?;
//! let stream = gpu.stream();
//!
//! let mut keys = stream.clone_htod(&[5u32, 1, 4, 1, 3])?;
//! let mut values = stream.alloc_zeros::<u32>(5)?;
//! iota(&gpu, &mut values, 0)?;
//! let mut sorter = RadixSorter::new(&gpu)?;
//! sorter.sort_pairs(&mut keys, &mut values)?;
//! assert_eq!(stream.clone_dtoh(&keys)?, vec![1, 1, 3, 4, 5]);
//! assert_eq!(stream.clone_dtoh(&values)?, vec![1, 3, 4, 2, 0]);
//!
//! let mut starts = stream.alloc_zeros::<u32>(5)?;
//! let total = exclusive_scan(&gpu, &keys, &mut starts)?;
//! assert_eq!((stream.clone_dtoh(&starts)?, total), (vec![0, 1, 2, 5, 9], 14));
//!
//! let flags = stream.clone_htod(&[1u32, 0, 0, 1, 1])?;
//! let mut kept = stream.alloc_zeros::<u32>(5)?;
//! let count = compact(&gpu, &keys, &flags, &mut kept)?;
//! assert_eq!(stream.clone_dtoh(&kept)?[..count], [1, 4, 5]);
//! # Ok::<(), gpuds_core::Error>(())
//! ```

mod compact;
mod fill;
mod scan;
mod sort;

pub use compact::compact;
pub use fill::{fill, iota};
pub use scan::{exclusive_scan, Scan, Scanner};
pub use sort::RadixSorter;

use cudarc::driver::{CudaSlice, DeviceRepr, LaunchConfig};

use crate::compile::Program;
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::keys::{DeviceType, DeviceValue};
use crate::launch;

/// Every kernel module of the primitives, with representative instantiations (u32 and
/// u64 elements; keys alone and pairs), so that a compile test can check them all for
/// several architectures without a GPU.
///
/// # Examples
/// ```no_run
/// use gpuds_core::{Arch, Output};
/// for program in gpuds_core::primitives::programs() {
///     program.compile(Arch::new(9, 0), Output::Ptx)?;
/// }
/// # Ok::<(), gpuds_core::Error>(())
/// ```
pub fn programs() -> Vec<Program> {
    let (u32_t, u64_t) = (Element::of::<u32>(), Element::of::<u64>());
    let mut programs = Vec::new();
    for wide in [false, true] {
        programs.extend([
            sort::program(u32_t, None, wide),
            sort::program(u64_t, None, wide),
            sort::program(u32_t, Some(u32_t), wide),
            sort::program(u32_t, Some(u64_t), wide),
            sort::program(u64_t, Some(u32_t), wide),
            sort::program(u64_t, Some(u64_t), wide),
        ]);
    }
    for t in [u32_t, u64_t] {
        programs.push(scan::program(t));
        programs.push(compact::program(t));
        programs.push(fill::program(t));
    }
    programs
}

/// What a kernel module needs to know about an element type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Element {
    cuda: &'static str,
    suffix: &'static str,
    size: usize,
}

impl Element {
    fn of<T: DeviceType>() -> Self {
        Self {
            cuda: T::CUDA_TYPE,
            suffix: T::SUFFIX,
            size: std::mem::size_of::<T>(),
        }
    }

    /// The element type of a value array: moved, never interpreted, so only its size
    /// matters (4 or 8 bytes).
    fn value<V: DeviceValue>() -> Result<Self> {
        let element = Self::of::<V>();
        if element.size != 4 && element.size != 8 {
            return Err(Error::InvalidArgument(format!(
                "values of type {} are {} bytes; the primitives move 4- or 8-byte values",
                element.cuda, element.size
            )));
        }
        Ok(element)
    }
}

/// The launch of a tile kernel: one block of `block` threads per tile of
/// `block * items` elements (one "item" of `items` elements per thread). Fails when the
/// grid would pass the hardware's limit.
fn tile_launch(n: usize, block: u32, items: u32) -> Result<LaunchConfig> {
    launch::one_thread_per_item(n.div_ceil(items as usize), block)
}

/// The buffer in `slot`, replaced by a larger one when it holds fewer than `len`
/// elements (at least one element, so an empty input still has a buffer). The driver's
/// out-of-memory error comes back as [`Error::OutOfMemory`] naming `what`.
fn grow<'a, T: DeviceRepr>(
    gpu: &Gpu,
    slot: &'a mut Option<CudaSlice<T>>,
    len: usize,
    what: &str,
) -> Result<&'a mut CudaSlice<T>> {
    if let Some(buffer) = slot.take_if(|b| b.len() < len) {
        // Free the old buffer before taking a larger one.
        drop(buffer);
    }
    if let Some(buffer) = slot {
        return Ok(buffer);
    }
    // SAFETY: temporary buffers are written (or zeroed) before they are read.
    let buffer = unsafe { gpu.alloc_uninit::<T>(len.max(1), what) }?;
    Ok(slot.insert(buffer))
}
