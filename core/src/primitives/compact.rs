//! Stream compaction: keep the elements whose flag is set, in order.

use cudarc::driver::{CudaSlice, PushKernelArg};

use super::scan::{items_per_thread, Scanner, SCAN_BLOCK, SOURCE};
use super::{tile_launch, Element};
use crate::compile::Program;
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::keys::DeviceType;

/// The compaction module for one element type (it shares the scan's source).
pub(super) fn program(element: Element) -> Program {
    Program::new(format!("compact_{}", element.suffix), SOURCE)
        .define("ELEM_T", element.cuda)
        .define("KERNEL_SUFFIX", element.suffix)
        .define("SCAN_BLOCK", SCAN_BLOCK)
        .define("SCAN_ITEMS", items_per_thread(Element::of::<u32>()))
}

impl Scanner {
    /// Copies every `input[i]` whose `flags[i]` is non-zero to the front of `output`,
    /// keeping their order, and writes how many there are to `count[0]`. Only the first
    /// `output.len()` of them are written when there are more (the count says how many
    /// there were); elements of `output` past the kept ones are left as they were.
    ///
    /// Does not synchronize: the work is enqueued on [`Gpu::stream`], and `output` and
    /// `count` hold the results once the stream reaches them. Fails with
    /// [`Error::InvalidArgument`] when `flags` and `input` differ in length, when an
    /// element has more than 8 bytes, or when `count` is empty, and with
    /// [`Error::CapacityOverflow`] when the input has more than `u32::MAX` elements (the
    /// count is 32 bits).
    ///
    /// # Examples
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// # let stream = gpu.stream();
    /// let mut scanner = gpuds_core::primitives::Scanner::new(&gpu)?;
    /// let input = stream.clone_htod(&[10u64, 11, 12, 13])?;
    /// let flags = stream.clone_htod(&[0u32, 1, 0, 7])?;
    /// let mut output = stream.alloc_zeros::<u64>(4)?;
    /// let mut count = stream.alloc_zeros::<u32>(1)?;
    /// scanner.compact(&input, &flags, &mut output, &mut count)?;
    /// assert_eq!(stream.clone_dtoh(&count)?, vec![2]);
    /// assert_eq!(stream.clone_dtoh(&output)?[..2], [11, 13]);
    /// # Ok::<(), gpuds_core::Error>(())
    /// ```
    pub fn compact<T: DeviceType>(
        &mut self,
        input: &CudaSlice<T>,
        flags: &CudaSlice<u32>,
        output: &mut CudaSlice<T>,
        count: &mut CudaSlice<u32>,
    ) -> Result<()> {
        let n = input.len();
        if flags.len() != n {
            return Err(Error::InvalidArgument(format!(
                "compact: {n} elements but {} flags",
                flags.len()
            )));
        }
        crate::size::u32_len(n, "elements to compact")?;
        let element = Element::of::<T>();
        if element.size > 8 {
            return Err(Error::InvalidArgument(format!(
                "compact moves elements of at most 8 bytes; {} has {}",
                element.cuda, element.size
            )));
        }
        if count.is_empty() {
            return Err(Error::InvalidArgument(
                "compact: the count needs a one-element slice, got an empty one".into(),
            ));
        }
        let stream = self.gpu.stream().clone();
        if n == 0 {
            stream.memset_zeros(&mut count.slice_mut(..1))?;
            return Ok(());
        }
        let kernel = self.kernel(&format!("compact_{}", element.suffix), program(element))?;
        let shape = tile_launch(n, SCAN_BLOCK, items_per_thread(Element::of::<u32>()))?;
        let scratch = self.scratch(shape.grid_dim.0 as usize, 4)?;
        let (n64, out_len) = (n as u64, output.len() as u64);
        let mut args = stream.launch_builder(kernel.func());
        args.arg(input)
            .arg(flags)
            .arg(&n64)
            .arg(&mut *output)
            .arg(&out_len)
            .arg(scratch)
            .arg(&mut *count);
        // SAFETY: the arguments match the kernel's signature; one block per tile, the
        // scratch laid out and zeroed for this many tiles; the kernel writes output only
        // below out_len and count[0].
        unsafe { args.launch(shape) }?;
        Ok(())
    }
}

/// Copies every `input[i]` whose `flags[i]` is non-zero to the front of `output`,
/// keeping their order, and returns how many there are. Elements of `output` past that
/// count are left as they were.
///
/// A convenience over [`Scanner::compact`]: it allocates the scratch and the count on
/// every call and synchronizes the stream to read the count back. Use a [`Scanner`] in
/// loops and timed code. Fails with [`Error::InvalidArgument`] when `flags` and `input`
/// differ in length or when more elements are kept than `output` holds (then `output`
/// holds the first `output.len()` of them), and with [`Error::CapacityOverflow`] when the
/// input has more than `u32::MAX` elements.
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
    let stream = gpu.stream();
    let mut kept = stream.alloc_zeros::<u32>(1)?;
    Scanner::new(gpu)?.compact(input, flags, output, &mut kept)?;
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
