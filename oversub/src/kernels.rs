//! The kernel modules: `cuda/kernels/oversub.cu` (the tables) and
//! `cuda/kernels/workload.cu` (workloads generated on the device).

use gpuds_core::{Gpu, Kernel, Program};

const SOURCE: &str = include_str!("../cuda/kernels/oversub.cu");
const SKIPLIST: &str = include_str!("../cuda/kernels/skiplist.cu");

/// Threads per block of the request kernels.
pub(crate) const BLOCK: u32 = 128;

/// The module of both tables.
pub(crate) fn program() -> Program {
    Program::new("oversub", SOURCE)
        .headers(crate::cuda_headers())
        .define("KERNEL_SUFFIX", "u32")
}

/// The module of both skip lists (with the device side of the test-only faults when
/// the `fault-injection` feature is on).
pub(crate) fn skiplist_program() -> Program {
    let program = Program::new("skiplist", SKIPLIST)
        .headers(crate::cuda_headers())
        .define("KERNEL_SUFFIX", "u32");
    if cfg!(feature = "fault-injection") {
        program.define("GPUDS_OVERSUB_FAULTS", 1)
    } else {
        program
    }
}

const WORKLOAD_SOURCE: &str = include_str!("../cuda/kernels/workload.cu");

/// The module of the device workloads (sequences, queries, k-mer keys).
pub(crate) fn workload_program() -> Program {
    Program::new("oversub_workload", WORKLOAD_SOURCE)
        .headers(crate::cuda_headers())
        .define("KERNEL_SUFFIX", "u32")
}

/// The kernel `name` (without its `_u32` suffix) of the workload module, compiled once
/// per process.
pub(crate) fn workload_kernel(gpu: &Gpu, name: &str) -> crate::Result<Kernel> {
    Ok(gpu
        .load(&workload_program())?
        .kernel(&format!("{name}_u32"))?)
}
