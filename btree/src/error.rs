//! The error type of gpuds-btree.

/// Everything that can go wrong in a [`crate::GpuBTreeMap`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An error of gpuds-core: the device, a compilation, a kernel's status flags
    /// (`RETRY_LIMIT`: an operation passed `max_steps`; `CORRUPTED`: a node routed a key
    /// nowhere) or an invalid argument.
    #[error(transparent)]
    Core(#[from] gpuds_core::Error),
    /// An error of the node pool. `gpuds_alloc::Error::PoolExhausted` means the pool
    /// reached its `max_units`: the tree is still valid, but some pairs of the batch were
    /// not inserted (see [`crate::GpuBTreeMap::insert_many`]).
    #[error(transparent)]
    Alloc(gpuds_alloc::Error),
    /// A configuration field is out of range; the message says which and why.
    #[error("invalid B-Tree configuration: {0}")]
    InvalidConfig(String),
    /// [`crate::GpuBTreeMap::validate`] found a broken invariant; the message says where.
    #[error("B-Tree invariant broken: {0}")]
    Invalid(String),
}

impl Error {
    /// True when the node pool ran out at its maximum (the tree stays valid): either
    /// [`gpuds_alloc::Error::PoolExhausted`], or a batch that was applied in part
    /// ([`gpuds_core::Error::NotApplied`]) because of it.
    ///
    /// ```
    /// use gpuds_core::Status;
    /// let e = gpuds_btree::Error::from(gpuds_alloc::Error::PoolExhausted {
    ///     needed: 0, capacity: 1024, max_units: 1024,
    /// });
    /// assert!(e.is_pool_exhausted());
    /// let e = gpuds_btree::Error::from(gpuds_core::Error::NotApplied {
    ///     status: Status::POOL_EXHAUSTED, not_applied: vec![3],
    /// });
    /// assert!(e.is_pool_exhausted());
    /// ```
    pub fn is_pool_exhausted(&self) -> bool {
        match self {
            Error::Alloc(gpuds_alloc::Error::PoolExhausted { .. }) => true,
            Error::Core(gpuds_core::Error::NotApplied { status, .. }) => {
                status.contains(gpuds_core::Status::POOL_EXHAUSTED)
            }
            _ => false,
        }
    }

    /// The batch indices that a partly applied batch did not apply
    /// ([`gpuds_core::Error::NotApplied`]); empty for every other error.
    ///
    /// ```
    /// let e = gpuds_btree::Error::from(gpuds_core::Error::NotApplied {
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
            // Sizes that cannot be met read the same in every crate: as core errors.
            gpuds_alloc::Error::Core(
                e
                @ (gpuds_core::Error::CapacityOverflow(_) | gpuds_core::Error::OutOfMemory { .. }),
            ) => Error::Core(e),
            e => Error::Alloc(e),
        }
    }
}

impl From<gpuds_core::cudarc::driver::DriverError> for Error {
    fn from(e: gpuds_core::cudarc::driver::DriverError) -> Self {
        Error::Core(gpuds_core::Error::Driver(e))
    }
}
