//! The error type of gpuds-alloc.

/// Everything that can go wrong in gpuds-alloc.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The pool had no free unit for some allocation (a kernel recorded
    /// `POOL_EXHAUSTED`), or growing it would pass the configured maximum. The allocator
    /// is still consistent; grow it with [`crate::SlabAlloc::reserve`] and retry.
    #[error(
        "slab pool exhausted: {needed} units needed, capacity {capacity} units, \
         maximum {max_units} units"
    )]
    PoolExhausted {
        /// Units the failed request needed in all (in use plus asked for), when known;
        /// 0 when a kernel reported the exhaustion.
        needed: u64,
        /// Units the pool holds now.
        capacity: u64,
        /// The configured maximum.
        max_units: u64,
    },
    /// A configuration value is out of range; the message says which and why.
    #[error("invalid allocator configuration: {0}")]
    InvalidConfig(String),
    /// The device cannot do what was asked (e.g. the light layout without virtual memory
    /// management support).
    #[error("unsupported on this device: {0}")]
    Unsupported(String),
    /// `validate` found an inconsistency; the message says what.
    #[error("allocator invariant violated: {0}")]
    Corrupted(String),
    /// An error of gpuds-core (driver, compiler, status flags other than exhaustion).
    #[error(transparent)]
    Core(#[from] gpuds_core::Error),
}

impl From<cudarc::driver::DriverError> for Error {
    fn from(e: cudarc::driver::DriverError) -> Self {
        Error::Core(gpuds_core::Error::from(e))
    }
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// The driver's out-of-memory error of an allocation of `bytes` bytes for `what` as
    /// [`gpuds_core::Error::OutOfMemory`] (see [`gpuds_core::Error::out_of_memory`]);
    /// any other error as it is.
    pub(crate) fn out_of_memory(self, what: &str, bytes: u64) -> Error {
        match self {
            Error::Core(e) => Error::Core(e.out_of_memory(what, bytes)),
            other => other,
        }
    }
}
