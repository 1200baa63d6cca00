//! # gpuds-testkit
//!
//! What every gpuds crate's tests share:
//!
//! - the GPU harness ([`gpu`], [`nvrtc`]): a GPU test skips cleanly without a device;
//! - [`workload`]: seeded keys, values, operation mixes, the papers' input sequences and
//!   skewed keys;
//! - [`Op`] and [`OrderedOp`], the operations of a batch;
//! - [`model`]: serial reference models over `std::collections`;
//! - [`check`]: concurrency-tolerant checks of a GPU batch's results (accepted when some
//!   serial order of the batch explains them);
//! - [`failed`]: checks of a batch that failed in part (the operations it names);
//! - [`strategy`]: proptest strategies for operation sequences.
#![warn(missing_docs)]

pub mod check;
pub mod failed;
mod harness;
pub mod model;
mod op;
pub mod strategy;
pub mod workload;

pub use harness::{assert_cubins, compile_targets, gpu, memory_below, nvrtc, ptx};
pub use op::{Op, OrderedOp};
