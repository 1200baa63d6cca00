//! # gpuds-core
//!
//! The runtime every gpuds structure stands on: a device handle ([`Gpu`]), run-time
//! compilation of CUDA C++ through NVRTC ([`Program`], [`Gpu::load`]) with in-memory
//! headers and a module cache, status words through which kernels report problems
//! ([`status`]), key and value traits ([`DeviceKey`], [`DeviceValue`]), hash functions
//! with host twins ([`hash`]), launch shapes ([`launch`]), layout checks for device refs
//! ([`layout`]) and device primitives: radix sort, scan, compaction, fill
//! ([`primitives`]).
//!
//! | on the CPU | in gpuds-core |
//! | --- | --- |
//! | a machine | [`Gpu`]: one device, its stream, its module cache |
//! | a compiled function | a [`Kernel`] of a [`Module`] compiled from a [`Program`] |
//! | `#include` of a library | `Program::headers(crate::cuda_headers())`, in memory |
//! | a panic or error code | a flag in a [`StatusWord`], turned into an [`Error`] |
//!
//! ## A walk-through
//!
//! 1. Open a device: `Gpu::new(0)`. Without a driver, a device or NVRTC this returns a
//!    clear [`Error`]; it never panics.
//! 2. Write a kernel in CUDA C++, include gpuds headers by name, add defines.
//! 3. `gpu.load(&program)` compiles it for the device's exact architecture (once per
//!    process; later processes load it from the disk cache, see [`cache`]).
//! 4. Launch it with cudarc's launch builder on `gpu.stream()`.
//!
//! ```no_run
//! use gpuds_core::{Gpu, Program, StatusWord, launch};
//! use gpuds_core::cudarc::driver::PushKernelArg;
//! let gpu = Gpu::new(0)?;
//! let program = Program::new(
//!     "double",
//!     r#"#include <gpuds/core/status.cuh>
//!        extern "C" __global__ void double_it(unsigned* x, unsigned n, unsigned* status) {
//!            unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
//!            if (i >= n) return;
//!            if (x[i] > 0x7fffffffu) { gpuds::status::report(status, gpuds::status::OUT_OF_BOUNDS); return; }
//!            x[i] *= 2;
//!        }"#,
//! );
//! let kernel = gpu.load(&program)?.kernel("double_it")?;
//! let stream = gpu.stream();
//! let mut data = stream.clone_htod(&[1u32, 2, 3])?;
//! let mut status = StatusWord::new(&gpu)?;
//! let n = 3u32;
//! let mut args = stream.launch_builder(kernel.func());
//! args.arg(&mut data).arg(&n).arg(status.slice_mut());
//! unsafe { args.launch(launch::one_thread_per_item(3, 128)?) }?;
//! status.check()?;
//! assert_eq!(stream.clone_dtoh(&data)?, vec![2, 4, 6]);
//! # Ok::<(), gpuds_core::Error>(())
//! ```
#![warn(missing_docs)]

pub mod cache;
mod compile;
mod error;
pub mod failures;
pub mod faults;
mod gpu;
pub mod hash;
pub mod keys;
pub mod launch;
pub mod layout;
mod libs;
pub mod primitives;
pub mod size;
pub mod status;

pub use compile::{
    nvrtc_compilations, nvrtc_supported_archs, nvrtc_version, Arch, Compiled, Kernel, Module,
    Output, Program,
};
pub use error::{checked_bytes, Error, Result};
pub use gpu::{trim_memory_pool, DeviceInfo, Gpu};
pub use keys::{DeviceKey, DeviceType, DeviceValue};
pub use libs::{ensure_driver, ensure_nvrtc};
pub use status::{Status, StatusWord};

/// Re-export of cudarc, so that users name the same version gpuds uses.
pub use cudarc;

/// Every kernel module of gpuds-core, with representative instantiations, so that a test
/// can compile all of them without a GPU (each crate has the same function).
pub fn programs() -> Vec<Program> {
    primitives::programs()
}

/// gpuds-core's device headers as (include name, text). Every crate chains these into
/// its own `cuda_headers()`.
pub fn cuda_headers() -> Vec<(&'static str, &'static str)> {
    vec![
        (
            "gpuds/core/memory.cuh",
            include_str!("../cuda/include/gpuds/core/memory.cuh"),
        ),
        (
            "gpuds/core/warp.cuh",
            include_str!("../cuda/include/gpuds/core/warp.cuh"),
        ),
        (
            "gpuds/core/status.cuh",
            include_str!("../cuda/include/gpuds/core/status.cuh"),
        ),
        (
            "gpuds/core/hash.cuh",
            include_str!("../cuda/include/gpuds/core/hash.cuh"),
        ),
        (
            "gpuds/core/scan.cuh",
            include_str!("../cuda/include/gpuds/core/scan.cuh"),
        ),
        (
            "gpuds/core/kernel_name.cuh",
            include_str!("../cuda/include/gpuds/core/kernel_name.cuh"),
        ),
        (
            "gpuds/core/work_queue.cuh",
            include_str!("../cuda/include/gpuds/core/work_queue.cuh"),
        ),
    ]
}
