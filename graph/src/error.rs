//! The crate's error type.

use crate::MAX_VERTEX_ID;

/// What a graph call can fail with. Every variant leaves the graph valid; the variant's
/// text says what of the batch was applied.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A failure of gpuds-core: the driver, compilation, a kernel's status, or requests
    /// a kernel marked not applied ([`gpuds_core::Error::NotApplied`]).
    #[error(transparent)]
    Core(#[from] gpuds_core::Error),
    /// A failure of the slab pool (gpuds-alloc), e.g. exhaustion past its maximum.
    #[error(transparent)]
    Alloc(#[from] gpuds_alloc::Error),
    /// A vertex id above [`MAX_VERTEX_ID`] (the slab hash's sentinels). Nothing of the
    /// batch was applied.
    #[error(
        "request {index}: vertex id {id} is reserved (ids above {MAX_VERTEX_ID} are the tables' \
         sentinels); nothing was applied"
    )]
    ReservedVertex {
        /// Index of the first offending request in the batch.
        index: usize,
        /// The id it named.
        id: u32,
    },
    /// A vertex id at or past the dictionary on a graph that may not grow
    /// ([`GraphConfig::growable`](crate::GraphConfig::growable) false), or on a query.
    /// Nothing of the batch was applied.
    #[error(
        "request {index}: vertex id {id} is not in the graph (it has {num_vertices} vertex ids{}); \
         nothing was applied",
        if *growable { "" } else { " and may not grow" }
    )]
    VertexBeyondCapacity {
        /// Index of the first offending request in the batch.
        index: usize,
        /// The id it named.
        id: u32,
        /// Vertex ids in the dictionary.
        num_vertices: u32,
        /// Whether the graph may grow (queries never grow it).
        growable: bool,
    },
    /// The slab pool ran out of slabs for the tables' collision lists and may not grow
    /// further (its `max_units`). Edges inserted before it ran out stay (every count is
    /// exact); the rest of the batch was not applied.
    #[error(
        "the slab pool is exhausted ({capacity} slabs, at its maximum): {not_applied} of the \
         batch's requests were not applied, the rest were; counts are exact"
    )]
    PoolExhausted {
        /// Slabs in the pool.
        capacity: u64,
        /// Requests of the batch not applied.
        not_applied: usize,
    },
    /// Arrays of one batch that must have equal lengths do not.
    #[error("{what}: lengths {a} and {b} differ; nothing was applied")]
    LengthMismatch {
        /// Which arrays.
        what: &'static str,
        /// The first length.
        a: usize,
        /// The second length.
        b: usize,
    },
    /// A failure of the sorted-CSR baseline ([`DeviceCsr`](crate::csr::DeviceCsr)).
    #[error(transparent)]
    Csr(#[from] crate::csr::CsrError),
    /// A configuration that cannot work, and why.
    #[error("invalid graph configuration: {0}")]
    Config(String),
    /// `validate()` found a broken invariant (a bug: please report it).
    #[error("the graph is invalid: {0}")]
    Invalid(String),
}

/// The crate's result type.
pub type Result<T> = std::result::Result<T, Error>;

impl From<cudarc::driver::DriverError> for Error {
    fn from(e: cudarc::driver::DriverError) -> Self {
        Error::Core(e.into())
    }
}
