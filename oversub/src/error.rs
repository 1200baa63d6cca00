//! The crate's error type.

/// What a table call can fail with; every variant leaves the table valid.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A failure of gpuds-core: the driver, compilation, or requests a kernel marked
    /// not applied ([`gpuds_core::Error::NotApplied`], e.g. a full flat table).
    #[error(transparent)]
    Core(#[from] gpuds_core::Error),
    /// A reserved key (0 or u32::MAX). Nothing of the batch was applied.
    #[error(
        "request {index}: key {key} is reserved (keys are 1 ..= 2^32 - 2); nothing was applied"
    )]
    ReservedKey {
        /// Index of the first offending request.
        index: usize,
        /// The key.
        key: u32,
    },
    /// A `Managed` allocation that would take the process's managed memory above the
    /// device's free memory minus a safety margin (managed memory beyond free GPU memory
    /// can hang the whole GPU). Nothing was allocated.
    #[error(
        "refused a managed allocation of {requested} bytes: managed memory would reach {would_be} \
         bytes, above the {limit} bytes allowed (free device memory {free} minus a margin)"
    )]
    ManagedGuard {
        /// Bytes asked for.
        requested: u64,
        /// Managed bytes with this allocation.
        would_be: u64,
        /// The most managed bytes allowed now.
        limit: u64,
        /// Free device memory when asked.
        free: u64,
    },
    /// Host memory (pinned, mapped) could not be allocated. Nothing changed.
    #[error("could not allocate {bytes} bytes of pinned host memory: {reason}")]
    HostAlloc {
        /// Bytes asked for.
        bytes: u64,
        /// The driver's answer.
        reason: String,
    },
    /// A configuration that cannot work, and why.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// Arrays of one batch with different lengths. Nothing was applied.
    #[error("{what}: lengths {a} and {b} differ; nothing was applied")]
    LengthMismatch {
        /// Which arrays.
        what: &'static str,
        /// First length.
        a: usize,
        /// Second length.
        b: usize,
    },
    /// `validate()` found a broken invariant.
    #[error("the table is invalid: {0}")]
    Invalid(String),
}

impl From<cudarc::driver::DriverError> for Error {
    fn from(e: cudarc::driver::DriverError) -> Self {
        Error::Core(e.into())
    }
}

/// The crate's result type.
pub type Result<T> = std::result::Result<T, Error>;
