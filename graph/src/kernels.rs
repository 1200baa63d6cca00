//! The kernel module of a graph: `cuda/kernels/graph.cu`, compiled once per edge value
//! type.

use gpuds_core::{DeviceType, Program};

use crate::value::EdgeValue;

const SOURCE: &str = include_str!("../cuda/kernels/graph.cu");

/// The module for edge values `W`.
pub(crate) fn program<W: EdgeValue>() -> Program {
    let program = Program::new(format!("graph_{}", W::SUFFIX), SOURCE)
        .headers(crate::cuda_headers())
        .define("KERNEL_SUFFIX", W::SUFFIX);
    if W::SET {
        program.define("GRAPH_SET", 1)
    } else {
        program
            .define("GRAPH_SET", 0)
            .define("VALUE_T", <W::Device as DeviceType>::CUDA_TYPE)
    }
}
