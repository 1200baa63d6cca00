//! # gpuds-benches
//!
//! The library behind the `gpuds-bench` command, which reproduces the papers' experiments
//! on the local GPU and compares every figure with the device's physical limits measured
//! in the same run.
//!
//! | module | what it does |
//! | --- | --- |
//! | [`cli`] | the command line |
//! | [`compare`](mod@compare) | two saved runs side by side |
//! | [`experiments`] | the registry of experiments and their plans |
//! | [`run`] | runs plans with a progress bar, collects rows |
//! | [`bench`](mod@bench) | the context experiments run in: device, timer, probes, limits |
//! | [`timing`] | CUDA-event timing: warm-up, median of repetitions, L2 eviction |
//! | [`kernels`] | the probe programs (`benches/cuda/*.cu`) and their launchers |
//! | [`peers`] | published limits of the H100 and H200, for comparison |
//! | [`plot`] | the figures as SVG (plotters), drawn from result records |
//! | [`report`] | rows and header; the table, and serde records for CSV and JSON |
#![warn(missing_docs)]

pub mod bench;
pub mod cli;
pub mod compare;
pub mod experiments;
pub mod kernels;
pub mod peers;
pub mod plot;
pub mod report;
pub mod run;
pub mod timing;

pub use kernels::programs;
