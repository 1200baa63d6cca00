//! The error type of gpuds-slabhash.

/// Everything that can go wrong in gpuds-slabhash.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A batch held a reserved key (the empty or the tombstone sentinel); nothing of the
    /// batch was applied.
    #[error("key {key:#x} at index {index} is reserved by the slab hash (empty or tombstone)")]
    ReservedKey {
        /// Position of the first reserved key in the batch.
        index: usize,
        /// The key, widened to 64 bits.
        key: u64,
    },
    /// Two inputs of one batch differ in length.
    #[error("{what}: {left} keys but {right} values or outputs")]
    LengthMismatch {
        /// Which call.
        what: &'static str,
        /// Number of keys.
        left: usize,
        /// Number of values (or output slots).
        right: usize,
    },
    /// The slab pool could not grow as asked (from [`reserve`](crate::SlabHashMap::reserve)
    /// or the pool's own calls). A batch whose requests ran out of slabs fails with
    /// [`gpuds_core::Error::NotApplied`] instead, naming them.
    #[error("slab pool exhausted: {0}")]
    PoolExhausted(gpuds_alloc::Error),
    /// A kernel reported flags that name no request (from
    /// [`refresh`](crate::SlabHashMap::refresh): what user kernels recorded). Requests a
    /// batch could not apply are named in [`gpuds_core::Error::NotApplied`] (in
    /// [`Error::Core`]).
    #[error("a slab hash kernel reported: {0}")]
    Kernel(gpuds_core::Status),
    /// The operation needs a table made with duplicate keys allowed.
    #[error("{0} needs a table with duplicate keys (SlabHashConfig::unique_keys = false)")]
    NeedsDuplicates(&'static str),
    /// A configuration value is out of range; the message says which and why.
    #[error("invalid slab hash configuration: {0}")]
    InvalidConfig(String),
    /// `validate` found a broken invariant; the message says where.
    #[error("slab hash invariant violated: {0}")]
    Corrupted(String),
    /// An error of gpuds-alloc.
    #[error(transparent)]
    Alloc(gpuds_alloc::Error),
    /// An error of gpuds-core (driver, compiler).
    #[error(transparent)]
    Core(#[from] gpuds_core::Error),
}

impl From<gpuds_alloc::Error> for Error {
    fn from(e: gpuds_alloc::Error) -> Self {
        match e {
            e @ gpuds_alloc::Error::PoolExhausted { .. } => Error::PoolExhausted(e),
            // Sizes that cannot be met read the same in every crate: as core errors.
            gpuds_alloc::Error::Core(
                e
                @ (gpuds_core::Error::CapacityOverflow(_) | gpuds_core::Error::OutOfMemory { .. }),
            ) => Error::Core(e),
            e => Error::Alloc(e),
        }
    }
}

impl From<cudarc::driver::DriverError> for Error {
    fn from(e: cudarc::driver::DriverError) -> Self {
        Error::Core(gpuds_core::Error::from(e))
    }
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
