//! Fill and iota.

use cudarc::driver::{CudaSlice, PushKernelArg};

use super::{Element, Scan};
use crate::compile::{Kernel, Program};
use crate::error::Result;
use crate::gpu::Gpu;
use crate::keys::DeviceType;

const SOURCE: &str = include_str!("../../cuda/kernels/fill.cu");
const BLOCK: u32 = 256;

/// The fill/iota module for one element type.
pub(super) fn program(element: Element) -> Program {
    Program::new(format!("fill_{}", element.suffix), SOURCE)
        .define("ELEM_T", element.cuda)
        .define("KERNEL_SUFFIX", element.suffix)
}

fn kernel<T: DeviceType>(gpu: &Gpu, name: &str) -> Result<Kernel> {
    let element = Element::of::<T>();
    gpu.load(&program(element))?
        .kernel(&format!("{name}_{}", element.suffix))
}

/// Launches `name` over `data` with one extra argument.
fn run<T: DeviceType>(gpu: &Gpu, name: &str, data: &mut CudaSlice<T>, arg: T) -> Result<()> {
    if data.is_empty() {
        return Ok(());
    }
    let kernel = kernel::<T>(gpu, name)?;
    let shape = gpu.grid_for(&kernel, data.len(), BLOCK)?;
    let n = data.len() as u64;
    let mut args = gpu.stream().launch_builder(kernel.func());
    args.arg(data).arg(&n).arg(&arg);
    // SAFETY: the arguments match the kernel's signature; it writes data[..n].
    unsafe { args.launch(shape) }?;
    Ok(())
}

/// Sets every element of `data` to `value`. Does not synchronize: the work is enqueued
/// on [`Gpu::stream`].
///
/// # Examples
/// ```no_run
/// use gpuds_core::{Gpu, primitives::fill};
/// let gpu = Gpu::new(0)?;
/// let mut data = gpu.stream().alloc_zeros::<u64>(3)?;
/// fill(&gpu, &mut data, 7)?;
/// assert_eq!(gpu.stream().clone_dtoh(&data)?, vec![7, 7, 7]);
/// # Ok::<(), gpuds_core::Error>(())
/// ```
pub fn fill<T: DeviceType>(gpu: &Gpu, data: &mut CudaSlice<T>, value: T) -> Result<()> {
    run(gpu, "fill", data, value)
}

/// Sets `data[i] = start + i` (wrapping). Does not synchronize: the work is enqueued on
/// [`Gpu::stream`].
///
/// # Examples
/// ```no_run
/// use gpuds_core::{Gpu, primitives::iota};
/// let gpu = Gpu::new(0)?;
/// let mut data = gpu.stream().alloc_zeros::<u32>(4)?;
/// iota(&gpu, &mut data, 10)?;
/// assert_eq!(gpu.stream().clone_dtoh(&data)?, vec![10, 11, 12, 13]);
/// # Ok::<(), gpuds_core::Error>(())
/// ```
pub fn iota<T: Scan>(gpu: &Gpu, data: &mut CudaSlice<T>, start: T) -> Result<()> {
    run(gpu, "iota", data, start)
}
