//! Exclusive prefix sum in one pass with decoupled look-back.

use cudarc::driver::{CudaSlice, PushKernelArg};

use super::{tiles, Element};
use crate::compile::Program;
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::keys::DeviceType;
use crate::launch;

pub(super) const SOURCE: &str = include_str!("../../cuda/kernels/scan.cu");

/// Threads per block of the scan and compaction kernels.
pub(super) const SCAN_BLOCK: u32 = 256;

/// Elements per thread: odd, so that each thread's run in shared memory starts on a
/// different bank.
pub(super) fn items_per_thread(element: Element) -> u32 {
    if element.size <= 4 {
        15
    } else {
        9
    }
}

/// The exclusive-scan module for one element type.
pub(super) fn program(element: Element) -> Program {
    Program::new(format!("exclusive_scan_{}", element.suffix), SOURCE)
        .define("SCAN_T", element.cuda)
        .define("KERNEL_SUFFIX", element.suffix)
        .define("SCAN_BLOCK", SCAN_BLOCK)
        .define("SCAN_ITEMS", items_per_thread(element))
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for u32 {}
    impl Sealed for u64 {}
}

/// Unsigned integer element types of [`exclusive_scan`] and [`iota`](super::iota):
/// `u32` and `u64`. Sums wrap around on overflow, as `wrapping_add` does.
pub trait Scan: DeviceType + sealed::Sealed + std::ops::Add<Output = Self> + Eq {}
impl Scan for u32 {}
impl Scan for u64 {}

/// Writes the exclusive prefix sums of `input` to the first `input.len()` elements of
/// `output` (`output[i] = input[0] + ... + input[i - 1]`, wrapping) and returns the sum
/// of all of `input`.
///
/// Synchronizes the stream, to read the total back. Fails with
/// [`Error::InvalidArgument`] when `output` is shorter than `input`.
///
/// # Examples
/// ```no_run
/// use gpuds_core::{Gpu, primitives::exclusive_scan};
/// let gpu = Gpu::new(0)?;
/// let input = gpu.stream().clone_htod(&[3u64, 0, 2, 5])?;
/// let mut output = gpu.stream().alloc_zeros::<u64>(4)?;
/// let total = exclusive_scan(&gpu, &input, &mut output)?;
/// assert_eq!(gpu.stream().clone_dtoh(&output)?, vec![0, 3, 3, 5]);
/// assert_eq!(total, 10);
/// # Ok::<(), gpuds_core::Error>(())
/// ```
pub fn exclusive_scan<T: Scan>(
    gpu: &Gpu,
    input: &CudaSlice<T>,
    output: &mut CudaSlice<T>,
) -> Result<T> {
    let n = input.len();
    if output.len() < n {
        return Err(Error::InvalidArgument(format!(
            "exclusive_scan: output holds {} elements but the input has {n}",
            output.len()
        )));
    }
    if n == 0 {
        return Ok(T::from_u64(0));
    }
    let element = Element::of::<T>();
    let kernel = gpu
        .load(&program(element))?
        .kernel(&format!("exclusive_scan_{}", element.suffix))?;
    let grid = tiles(n, SCAN_BLOCK * items_per_thread(element), "exclusive_scan")?;
    let stream = gpu.stream();
    let mut counter = stream.alloc_zeros::<u32>(1)?;
    let mut flags = stream.alloc_zeros::<u32>(grid as usize)?;
    let mut aggregates = stream.alloc_zeros::<T>(grid as usize)?;
    let mut inclusives = stream.alloc_zeros::<T>(grid as usize)?;
    let mut total = stream.alloc_zeros::<T>(1)?;
    let n64 = n as u64;
    let mut args = stream.launch_builder(kernel.func());
    args.arg(input)
        .arg(&mut *output)
        .arg(&n64)
        .arg(&mut counter)
        .arg(&mut flags)
        .arg(&mut aggregates)
        .arg(&mut inclusives)
        .arg(&mut total);
    // SAFETY: the arguments match the kernel's signature; one block per tile, zeroed
    // look-back state per tile, and output holds at least n elements.
    unsafe { args.launch(launch::shape(grid, SCAN_BLOCK, 0)) }?;
    let mut sum = [T::from_u64(0)];
    stream.memcpy_dtoh(&total, &mut sum)?;
    stream.synchronize()?;
    Ok(sum[0])
}
