//! Run-time compilation of CUDA C++ with NVRTC.
//!
//! A [`Program`] is one source file plus in-memory headers plus defines. It compiles to a
//! CUBIN for a device's exact architecture ([`Gpu::load`](crate::Gpu::load)) or to PTX
//! for a given architecture when only checking that it compiles ([`Program::compile`]).
//! Headers live in memory under their include names (`gpuds/core/warp.cuh`), so
//! `#include` works the same inside NVRTC as on disk and no toolkit headers are needed.

mod arch;
mod module;
mod nvrtc;
mod program;

pub use arch::{Arch, Compiled, Output};
pub use module::{Kernel, Module};
pub use nvrtc::{nvrtc_compilations, nvrtc_supported_archs, nvrtc_version};
pub use program::Program;
