//! # gpuds-testkit
//!
//! What every gpuds crate's tests share: the GPU harness ([`gpu`], [`nvrtc`]).
#![warn(missing_docs)]

mod harness;

pub use harness::{gpu, nvrtc};
