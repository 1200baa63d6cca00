//! The error type of gpuds-hive.

/// Everything that can go wrong in gpuds-hive.
///
/// Wraps [`gpuds_core::Error`] (driver, compiler, status and argument errors), so a
/// caller sees one chain from the table down to the driver.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An error of gpuds-core: driver, compilation, launch or invalid argument.
    #[error(transparent)]
    Core(#[from] gpuds_core::Error),
    /// A reserved (sentinel) key was found in a batch; nothing of the batch was applied.
    #[error("key {key:#x} at index {index} is reserved by this table")]
    ReservedKey {
        /// Position of the first offending key in the batch.
        index: usize,
        /// The offending key, widened to 64 bits.
        key: u64,
    },
}

impl From<cudarc::driver::DriverError> for Error {
    fn from(e: cudarc::driver::DriverError) -> Self {
        Error::Core(e.into())
    }
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
