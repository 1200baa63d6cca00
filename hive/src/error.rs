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
    /// A reserved value (the empty value of a table that marks absence with it) was found
    /// in a batch; nothing of the batch was applied.
    #[error("value {value:#x} at index {index} is reserved by this table")]
    ReservedValue {
        /// Position of the first offending value in the batch.
        index: usize,
        /// The offending value, widened to 64 bits.
        value: u64,
    },
    /// An insert batch would pass the table's maximum load factor and the table is
    /// configured not to grow; nothing of the batch was applied.
    #[error(
        "inserting {incoming} keys into a table of {capacity} slots with {occupied} occupied \
         would pass its limit of {limit} occupied slots (grow it with `reserve`/`rehash`, or \
         configure it to grow)"
    )]
    LoadFactor {
        /// Keys in the batch (counted as if all were new).
        incoming: u64,
        /// Slots occupied before the batch (live pairs and tombstones).
        occupied: u64,
        /// The most occupied slots the maximum load factor allows.
        limit: u64,
        /// The table's capacity in slots.
        capacity: u64,
    },
    /// Some operations of a HiveMap batch failed (no room even in the stash, or a retry
    /// cap reached under contention); every other operation was applied and the table is
    /// valid. Expanding the table (or turning on automatic resizing) makes room.
    #[error(
        "{failed} operation(s) of the batch failed ({status}); first failed indices: {indices:?}"
    )]
    OperationsFailed {
        /// How many operations failed.
        failed: u64,
        /// Batch indices of the first failures (at most 64).
        indices: Vec<usize>,
        /// The status flags the kernel reported.
        status: gpuds_core::Status,
    },
    /// `validate()` found a broken invariant; the message names the slot and the rule.
    #[error("invalid table: {0}")]
    Invalid(String),
}

impl From<cudarc::driver::DriverError> for Error {
    fn from(e: cudarc::driver::DriverError) -> Self {
        Error::Core(e.into())
    }
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
