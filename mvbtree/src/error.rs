//! The error type of gpuds-mvbtree.

/// Everything that can go wrong in a [`crate::VersionedBTreeMap`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An error of gpuds-core: the device, a compilation, a kernel's status flags
    /// (`RETRY_LIMIT`: an operation passed `max_steps`; `CORRUPTED`: a node routed a key
    /// nowhere), a batch applied in part ([`gpuds_core::Error::NotApplied`]) or an
    /// invalid argument.
    #[error(transparent)]
    Core(#[from] gpuds_core::Error),
    /// An error of the node pool. `gpuds_alloc::Error::PoolExhausted`: the pool reached
    /// its `max_units` (the tree stays valid).
    #[error(transparent)]
    Alloc(gpuds_alloc::Error),
    /// An error of the B-Tree crate (a configuration out of range).
    #[error(transparent)]
    Btree(gpuds_btree::Error),
    /// [`crate::VersionedBTreeMap::validate`] found a broken invariant; the message says
    /// where.
    #[error("multiversion B-Tree invariant broken: {0}")]
    Invalid(String),
    /// A [`crate::Snapshot`] of another map was passed to a query.
    #[error("the snapshot belongs to another VersionedBTreeMap")]
    ForeignSnapshot,
    /// The global timestamp reached its maximum (2^31 - 2 snapshots were taken:
    /// timestamps are 31 bits); no more snapshots can be taken.
    #[error("the snapshot clock is exhausted (2^31 - 2 snapshots taken)")]
    ClockExhausted,
}

impl Error {
    /// True when the node pool ran out at its maximum (the tree stays valid).
    ///
    /// ```
    /// let e = gpuds_mvbtree::Error::from(gpuds_core::Error::NotApplied {
    ///     status: gpuds_core::Status::POOL_EXHAUSTED, not_applied: vec![3],
    /// });
    /// assert!(e.is_pool_exhausted());
    /// ```
    pub fn is_pool_exhausted(&self) -> bool {
        match self {
            Error::Alloc(gpuds_alloc::Error::PoolExhausted { .. }) => true,
            Error::Core(gpuds_core::Error::NotApplied { status, .. }) => {
                status.contains(gpuds_core::Status::POOL_EXHAUSTED)
            }
            Error::Btree(e) => e.is_pool_exhausted(),
            _ => false,
        }
    }

    /// The batch indices that a partly applied batch did not apply; empty for every other
    /// error.
    ///
    /// ```
    /// let e = gpuds_mvbtree::Error::from(gpuds_core::Error::NotApplied {
    ///     status: gpuds_core::Status::RETRY_LIMIT, not_applied: vec![1, 4],
    /// });
    /// assert_eq!(e.not_applied(), &[1, 4]);
    /// ```
    pub fn not_applied(&self) -> &[usize] {
        match self {
            Error::Core(gpuds_core::Error::NotApplied { not_applied, .. }) => not_applied,
            _ => &[],
        }
    }
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl From<gpuds_alloc::Error> for Error {
    fn from(e: gpuds_alloc::Error) -> Self {
        match e {
            gpuds_alloc::Error::Core(
                e
                @ (gpuds_core::Error::CapacityOverflow(_) | gpuds_core::Error::OutOfMemory { .. }),
            ) => Error::Core(e),
            e => Error::Alloc(e),
        }
    }
}

impl From<gpuds_btree::Error> for Error {
    fn from(e: gpuds_btree::Error) -> Self {
        match e {
            gpuds_btree::Error::Core(e) => Error::Core(e),
            gpuds_btree::Error::Alloc(e) => Error::Alloc(e),
            e => Error::Btree(e),
        }
    }
}

impl From<gpuds_core::cudarc::driver::DriverError> for Error {
    fn from(e: gpuds_core::cudarc::driver::DriverError) -> Self {
        Error::Core(gpuds_core::Error::Driver(e))
    }
}
