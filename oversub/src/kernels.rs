//! The kernel module: `cuda/kernels/oversub.cu`.

use gpuds_core::Program;

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

/// The module of both skip lists.
pub(crate) fn skiplist_program() -> Program {
    Program::new("skiplist", SKIPLIST)
        .headers(crate::cuda_headers())
        .define("KERNEL_SUFFIX", "u32")
}
