//! Exclusive prefix sum in one pass with decoupled look-back, and [`Scanner`], the owner
//! of the look-back scratch that scans and compactions share.

use std::collections::HashMap;

use cudarc::driver::{CudaSlice, PushKernelArg};

use super::{grow, tile_launch, Element};
use crate::compile::{Kernel, Program};
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::keys::DeviceType;

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

/// The look-back scratch of one launch over `tiles` tiles with sums of `sum_bytes`
/// bytes, in 32-bit words, as `scratch` in `core/cuda/kernels/scan.cu` reads it: the
/// tile counter and a pad word, one flag per tile, a pad word when `tiles` is odd, then
/// the aggregates and the inclusive prefixes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Layout {
    /// Words to zero before the launch: the counter, the pad and the flags.
    pub zeroed: usize,
    /// Words in all.
    pub words: usize,
}

impl Layout {
    pub fn new(tiles: usize, sum_bytes: usize) -> Self {
        let sums = 2 + tiles + tiles % 2;
        Self {
            zeroed: 2 + tiles,
            words: sums + 2 * tiles * sum_bytes / 4,
        }
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for u32 {}
    impl Sealed for u64 {}
}

/// Unsigned integer element types of [`exclusive_scan`] and [`iota`](super::iota):
/// `u32` and `u64`. Sums wrap around on overflow, as `wrapping_add` does.
///
/// # Examples
/// ```
/// use gpuds_core::primitives::Scan;
/// fn zero<T: Scan>() -> T {
///     T::from_u64(0)
/// }
/// assert_eq!(zero::<u64>() + 3, 3);
/// ```
pub trait Scan: DeviceType + sealed::Sealed + std::ops::Add<Output = Self> + Eq {}
impl Scan for u32 {}
impl Scan for u64 {}

/// Reusable exclusive scans and stream compactions that never synchronize.
///
/// A single-pass scan chains its tiles through a little device scratch (a tile counter
/// and a flag and two sums per tile, about 20 bytes per 2,304 elements). The scanner
/// owns that scratch and keeps it between calls, growing it when a larger input comes,
/// so repeated scans and compactions of similar sizes allocate nothing; totals and
/// counts are written to device memory the caller provides, so nothing waits for the
/// GPU either. Kernels are compiled on the first use of each element type.
///
/// # Examples
/// ```no_run
/// use gpuds_core::{Gpu, primitives::Scanner};
/// let gpu = Gpu::new(0)?;
/// let stream = gpu.stream();
/// let mut scanner = Scanner::new(&gpu)?;
/// let input = stream.clone_htod(&[3u32, 0, 2, 5])?;
/// let mut output = stream.alloc_zeros::<u32>(4)?;
/// let mut total = stream.alloc_zeros::<u32>(1)?;
/// scanner.exclusive_scan(&input, &mut output, &mut total)?;
/// // Only the copies back wait for the GPU.
/// assert_eq!(stream.clone_dtoh(&output)?, vec![0, 3, 3, 5]);
/// assert_eq!(stream.clone_dtoh(&total)?, vec![10]);
/// # Ok::<(), gpuds_core::Error>(())
/// ```
pub struct Scanner {
    pub(super) gpu: Gpu,
    kernels: HashMap<String, Kernel>,
    /// The look-back scratch ([`Layout`]); its counter and flags are zeroed before each
    /// launch.
    scratch: Option<CudaSlice<u32>>,
}

impl std::fmt::Debug for Scanner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scanner")
            .field("device", &self.gpu.info().name)
            .field(
                "scratch_bytes",
                &self.scratch.as_ref().map_or(0, |b| 4 * b.len()),
            )
            .finish()
    }
}

impl Scanner {
    /// A scanner for `gpu`, with no scratch yet. Allocates nothing.
    ///
    /// # Examples
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let scanner = gpuds_core::primitives::Scanner::new(&gpu)?;
    /// # let _ = scanner;
    /// # Ok::<(), gpuds_core::Error>(())
    /// ```
    pub fn new(gpu: &Gpu) -> Result<Self> {
        Ok(Self {
            gpu: gpu.clone(),
            kernels: HashMap::new(),
            scratch: None,
        })
    }

    /// Allocates now the scratch that scans and compactions of up to `len` elements (of
    /// any element type) need, so that later calls allocate nothing; for timed loops.
    /// Does not synchronize. A length past what one launch can scan (2^31 - 1 tiles) is
    /// [`Error::CapacityOverflow`], and a scratch the device has no room for
    /// [`Error::OutOfMemory`]; the scanner keeps its old scratch in the first case.
    ///
    /// # Examples
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut scanner = gpuds_core::primitives::Scanner::new(&gpu)?;
    /// scanner.reserve(1 << 26)?;
    /// # Ok::<(), gpuds_core::Error>(())
    /// ```
    pub fn reserve(&mut self, len: usize) -> Result<()> {
        // The most tiles (the smallest tile) and the widest sums of any element type.
        let tiles = tile_launch(len, SCAN_BLOCK, items_per_thread(Element::of::<u64>()))?
            .grid_dim
            .0 as usize;
        grow(
            &self.gpu,
            &mut self.scratch,
            Layout::new(tiles, 8).words,
            "the scan's look-back scratch",
        )?;
        Ok(())
    }

    /// Writes the exclusive prefix sums of `input` to the first `input.len()` elements of
    /// `output` (`output[i] = input[0] + ... + input[i - 1]`, wrapping) and the sum of
    /// all of `input` to `total[0]`.
    ///
    /// Does not synchronize: the work is enqueued on [`Gpu::stream`], and `output` and
    /// `total` hold the results once the stream reaches them. Fails with
    /// [`Error::InvalidArgument`] when `output` is shorter than `input` or `total` is
    /// empty.
    ///
    /// # Examples
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// # let stream = gpu.stream();
    /// let mut scanner = gpuds_core::primitives::Scanner::new(&gpu)?;
    /// let input = stream.clone_htod(&[u64::MAX, 1, 7])?;
    /// let mut output = stream.alloc_zeros::<u64>(3)?;
    /// let mut total = stream.alloc_zeros::<u64>(1)?;
    /// scanner.exclusive_scan(&input, &mut output, &mut total)?;
    /// assert_eq!(stream.clone_dtoh(&output)?, vec![0, u64::MAX, 0]); // wraps
    /// assert_eq!(stream.clone_dtoh(&total)?, vec![7]);
    /// # Ok::<(), gpuds_core::Error>(())
    /// ```
    pub fn exclusive_scan<T: Scan>(
        &mut self,
        input: &CudaSlice<T>,
        output: &mut CudaSlice<T>,
        total: &mut CudaSlice<T>,
    ) -> Result<()> {
        let n = input.len();
        if output.len() < n {
            return Err(Error::InvalidArgument(format!(
                "exclusive_scan: output holds {} elements but the input has {n}",
                output.len()
            )));
        }
        if total.is_empty() {
            return Err(Error::InvalidArgument(
                "exclusive_scan: the total needs a one-element slice, got an empty one".into(),
            ));
        }
        let stream = self.gpu.stream().clone();
        if n == 0 {
            stream.memset_zeros(&mut total.slice_mut(..1))?;
            return Ok(());
        }
        let element = Element::of::<T>();
        let kernel = self.kernel(
            &format!("exclusive_scan_{}", element.suffix),
            program(element),
        )?;
        let shape = tile_launch(n, SCAN_BLOCK, items_per_thread(element))?;
        let scratch = self.scratch(shape.grid_dim.0 as usize, element.size)?;
        let n64 = n as u64;
        let mut args = stream.launch_builder(kernel.func());
        args.arg(input)
            .arg(&mut *output)
            .arg(&n64)
            .arg(scratch)
            .arg(&mut *total);
        // SAFETY: the arguments match the kernel's signature; one block per tile, the
        // scratch laid out and zeroed for this many tiles; output holds at least n
        // elements and total at least one.
        unsafe { args.launch(shape) }?;
        Ok(())
    }

    /// The scratch for `tiles` tiles with sums of `sum_bytes` bytes, grown if needed,
    /// with its counter and flags zeroed on the stream.
    pub(super) fn scratch(
        &mut self,
        tiles: usize,
        sum_bytes: usize,
    ) -> Result<&mut CudaSlice<u32>> {
        let layout = Layout::new(tiles, sum_bytes);
        let scratch = grow(
            &self.gpu,
            &mut self.scratch,
            layout.words,
            "the scan's look-back scratch",
        )?;
        self.gpu
            .stream()
            .memset_zeros(&mut scratch.slice_mut(..layout.zeroed))?;
        Ok(scratch)
    }

    /// The kernel `name` of `program`, loaded once per scanner.
    pub(super) fn kernel(&mut self, name: &str, program: Program) -> Result<Kernel> {
        if let Some(kernel) = self.kernels.get(name) {
            return Ok(kernel.clone());
        }
        let kernel = self.gpu.load(&program)?.kernel(name)?;
        self.kernels.insert(name.to_string(), kernel.clone());
        Ok(kernel)
    }
}

/// Writes the exclusive prefix sums of `input` to the first `input.len()` elements of
/// `output` (`output[i] = input[0] + ... + input[i - 1]`, wrapping) and returns the sum
/// of all of `input`.
///
/// A convenience over [`Scanner::exclusive_scan`]: it allocates the scratch and the
/// total on every call and synchronizes the stream to read the total back. Use a
/// [`Scanner`] in loops and timed code. Fails with [`Error::InvalidArgument`] when
/// `output` is shorter than `input`.
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
    let stream = gpu.stream();
    let mut total = stream.alloc_zeros::<T>(1)?;
    Scanner::new(gpu)?.exclusive_scan(input, output, &mut total)?;
    let mut sum = [T::from_u64(0)];
    stream.memcpy_dtoh(&total, &mut sum)?;
    stream.synchronize()?;
    Ok(sum[0])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scratch_layout_keeps_sums_aligned() {
        // Counter and pad, 3 flags, a pad, then 3 + 3 sums of 8 bytes.
        assert_eq!(
            Layout::new(3, 8),
            Layout {
                zeroed: 5,
                words: 6 + 12
            }
        );
        // Even tile counts need no pad; 4-byte sums take one word each.
        assert_eq!(
            Layout::new(4, 4),
            Layout {
                zeroed: 6,
                words: 6 + 8
            }
        );
        assert_eq!(
            Layout::new(0, 8),
            Layout {
                zeroed: 2,
                words: 2
            }
        );
    }
}
