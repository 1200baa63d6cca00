//! gpuds-oversub: hash tables whose contents may be larger than GPU memory (Patel et al.,
//! 2026): the flat baseline table and the two-level range table, on device, managed
//! (guarded) or host-mapped memory, and the paper's workloads.
#![warn(missing_docs)]

pub mod kmer;
pub mod workload;
