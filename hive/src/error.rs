//! The error type of gpuds-hive.

/// Everything that can go wrong in gpuds-hive.
///
/// Wraps [`gpuds_core::Error`] (driver, compiler, status and argument errors), so a
/// caller sees one chain from the table down to the driver.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An error of gpuds-core: driver, compilation, launch or invalid argument; and
    /// [`gpuds_core::Error::NotApplied`] for a batch whose kernels could not apply some
    /// operations (a full table, a full stash, a retry cap reached under contention): it
    /// names exactly those operations, every other one was applied and the table is
    /// valid. Expanding the table (or turning on automatic resizing) makes room.
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
    /// `validate()` found a broken invariant; the message names the slot and the rule.
    #[error("invalid table: {0}")]
    Invalid(String),
}

impl From<cudarc::driver::DriverError> for Error {
    fn from(e: cudarc::driver::DriverError) -> Self {
        Error::Core(e.into())
    }
}

impl Error {
    /// The batch's operations that were not applied, ascending, when this is
    /// [`gpuds_core::Error::NotApplied`] (every other operation of the batch was).
    ///
    /// ```
    /// use gpuds_core::Status;
    /// let e = gpuds_hive::Error::from(gpuds_core::Error::NotApplied {
    ///     status: Status::STASH_FULL,
    ///     not_applied: vec![3, 9],
    /// });
    /// assert_eq!(e.not_applied(), Some(&[3, 9][..]));
    /// assert_eq!(gpuds_hive::Error::Invalid("x".into()).not_applied(), None);
    /// ```
    pub fn not_applied(&self) -> Option<&[usize]> {
        match self {
            Error::Core(gpuds_core::Error::NotApplied { not_applied, .. }) => Some(not_applied),
            _ => None,
        }
    }
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
