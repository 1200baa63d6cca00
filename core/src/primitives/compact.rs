//! Stream compaction: keep the elements whose flag is set, in order.

use cudarc::driver::{CudaSlice, PushKernelArg};

use super::scan::{items_per_thread, SCAN_BLOCK, SOURCE};
use super::{tiles, Element};
use crate::compile::Program;
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::keys::DeviceType;
use crate::launch;

/// The compaction module for one element type (it shares the scan's source).
pub(super) fn program(element: Element) -> Program {
    Program::new(format!("compact_{}", element.suffix), SOURCE)
        .define("ELEM_T", element.cuda)
        .define("KERNEL_SUFFIX", element.suffix)
        .define("SCAN_BLOCK", SCAN_BLOCK)
        .define("SCAN_ITEMS", items_per_thread(Element::of::<u32>()))
}

/// Copies every `input[i]` whose `flags[i]` is non-zero to the front of `output`,
/// keeping their order, and returns how many there are. Elements of `output` past that
/// count are left as they were.
///
/// Synchronizes the stream, to read the count back. Fails with
/// [`Error::InvalidArgument`] when `flags` and `input` differ in length, when the input
/// has more than `u32::MAX` elements, or when more elements are kept than `output`
/// holds (then `output` holds the first `output.len()` of them).
///
/// # Examples
/// ```no_run
/// use gpuds_core::{Gpu, primitives::compact};
/// let gpu = Gpu::new(0)?;
/// let stream = gpu.stream();
/// let input = stream.clone_htod(&[10u32, 11, 12, 13])?;
/// let flags = stream.clone_htod(&[0u32, 1, 0, 7])?;
/// let mut output = stream.alloc_zeros::<u32>(4)?;
/// let kept = compact(&gpu, &input, &flags, &mut output)?;
/// assert_eq!(stream.clone_dtoh(&output)?[..kept], [11, 13]);
/// # Ok::<(), gpuds_core::Error>(())
/// ```
pub fn compact<T: DeviceType>(
    gpu: &Gpu,
    input: &CudaSlice<T>,
    flags: &CudaSlice<u32>,
    output: &mut CudaSlice<T>,
) -> Result<usize> {
    let n = input.len();
    if flags.len() != n {
        return Err(Error::InvalidArgument(format!(
            "compact: {n} elements but {} flags",
            flags.len()
        )));
    }
    if n > u32::MAX as usize {
        return Err(Error::InvalidArgument(format!(
            "compact takes at most {} elements, got {n}",
            u32::MAX
        )));
    }
    if n == 0 {
        return Ok(0);
    }
    let element = Element::of::<T>();
    if element.size > 8 {
        return Err(Error::InvalidArgument(format!(
            "compact moves elements of at most 8 bytes; {} has {}",
            element.cuda, element.size
        )));
    }
    let kernel = gpu
        .load(&program(element))?
        .kernel(&format!("compact_{}", element.suffix))?;
    let grid = tiles(
        n,
        SCAN_BLOCK * items_per_thread(Element::of::<u32>()),
        "compact",
    )?;
    let stream = gpu.stream();
    // Counter, then per tile a flag, an aggregate and an inclusive count, then the total.
    let mut counter = stream.alloc_zeros::<u32>(1)?;
    let mut states = stream.alloc_zeros::<u32>(grid as usize)?;
    let mut aggregates = stream.alloc_zeros::<u32>(grid as usize)?;
    let mut inclusives = stream.alloc_zeros::<u32>(grid as usize)?;
    let mut kept = stream.alloc_zeros::<u32>(1)?;
    let (n64, out_len) = (n as u64, output.len() as u64);
    let mut args = stream.launch_builder(kernel.func());
    args.arg(input)
        .arg(flags)
        .arg(&n64)
        .arg(&mut *output)
        .arg(&out_len)
        .arg(&mut counter)
        .arg(&mut states)
        .arg(&mut aggregates)
        .arg(&mut inclusives)
        .arg(&mut kept);
    // SAFETY: the arguments match the kernel's signature; one block per tile, zeroed
    // look-back state per tile; the kernel writes output only below out_len.
    unsafe { args.launch(launch::shape(grid, SCAN_BLOCK, 0)) }?;
    let mut count = [0u32];
    stream.memcpy_dtoh(&kept, &mut count)?;
    stream.synchronize()?;
    let count = count[0] as usize;
    if count > output.len() {
        return Err(Error::InvalidArgument(format!(
            "compact: {count} elements are kept but output holds {}; it holds the first {}",
            output.len(),
            output.len()
        )));
    }
    Ok(count)
}
