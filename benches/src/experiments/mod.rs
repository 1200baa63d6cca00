//! The registry of experiments.
//!
//! An experiment turns a [`Scale`] into a plan: a list of [`Case`]s, each measuring one or
//! a few rows. The runner shows progress case by case, so a sweep is simply a plan with
//! many cases. `gpuds-bench quick` runs every experiment's [`Scale::Quick`] plan in
//! registry order, limits first, so that later rows can be compared with them.
//!
//! A new structure crate adds one line to [`registry`] and one module here.

pub mod alloc;
pub mod btree;
pub mod hive;
pub mod limits;
pub mod linear;
pub mod primitives;
pub mod slabhash;

use gpuds_core::Result;

use crate::bench::Bench;
use crate::report::Row;

/// How large an experiment runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// Small sizes, for `gpuds-bench quick`: seconds per experiment.
    Quick,
    /// The papers' sizes.
    Full,
}

/// What a case does: measures its rows on the bench.
pub type CaseFn = Box<dyn FnOnce(&mut Bench) -> Result<Vec<Row>>>;

/// One step of a plan: measures its rows when run.
pub struct Case {
    /// Shown next to the progress bar while the case runs.
    pub label: String,
    /// Measures the case's rows.
    pub run: CaseFn,
}

impl Case {
    /// A case from a label and a function.
    pub fn new(
        label: impl Into<String>,
        run: impl FnOnce(&mut Bench) -> Result<Vec<Row>> + 'static,
    ) -> Self {
        Self {
            label: label.into(),
            run: Box::new(run),
        }
    }
}

/// A named experiment of `gpuds-bench`.
pub struct Experiment {
    /// The name given on the command line.
    pub name: &'static str,
    /// One line for `--help`.
    pub about: &'static str,
    /// The cases to run at a scale.
    pub plan: fn(Scale) -> Vec<Case>,
}

/// Every experiment, in the order `quick` runs them.
pub fn registry() -> Vec<Experiment> {
    vec![
        limits::EXPERIMENT,
        primitives::EXPERIMENT,
        linear::EXPERIMENT,
        hive::EXPERIMENT,
        hive::TARGETS,
        alloc::EXPERIMENT,
        btree::EXPERIMENT,
        btree::RANGE,
        slabhash::EXPERIMENT,
        slabhash::TARGETS,
    ]
}

/// The experiment called `name`.
pub fn find(name: &str) -> Option<Experiment> {
    registry().into_iter().find(|e| e.name == name)
}
