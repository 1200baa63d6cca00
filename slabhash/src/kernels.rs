//! The kernel module of a table: `cuda/kernels/slabhash.cu`, compiled once per kind and
//! key/value type.

use gpuds_core::{DeviceType, Program};

const SOURCE: &str = include_str!("../cuda/kernels/slabhash.cu");

/// Threads per block of the per-request kernels.
pub(crate) const BLOCK: u32 = 128;
/// Threads per block of the whole-table kernels (one warp per bucket).
pub(crate) const TABLE_BLOCK: u32 = 256;

/// A map or a set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Map,
    Set,
}

/// The module for `kind` with key type `K` and value type `V` (ignored for sets).
pub(crate) fn program<K: DeviceType, V: DeviceType>(kind: Kind) -> Program {
    let suffix = suffix::<K, V>(kind);
    let program = Program::new(format!("slabhash_{suffix}"), SOURCE)
        .headers(crate::cuda_headers())
        .define("KEY_T", K::CUDA_TYPE)
        .define("KERNEL_SUFFIX", &suffix)
        .define("ITEM_BLOCK", BLOCK);
    match kind {
        Kind::Map => program
            .define("SLAB_SET", 0)
            .define("VALUE_T", V::CUDA_TYPE),
        Kind::Set => program.define("SLAB_SET", 1),
    }
}

/// The suffix of the kernel names: `map_u32_u32`, `set_u32`.
pub(crate) fn suffix<K: DeviceType, V: DeviceType>(kind: Kind) -> String {
    match kind {
        Kind::Map => format!("map_{}_{}", K::SUFFIX, V::SUFFIX),
        Kind::Set => format!("set_{}", K::SUFFIX),
    }
}
