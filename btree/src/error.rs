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
    Alloc(#[from] gpuds_alloc::Error),
    /// A configuration field is out of range; the message says which and why.
    #[error("invalid B-Tree configuration: {0}")]
    InvalidConfig(String),
    /// [`crate::GpuBTreeMap::validate`] found a broken invariant; the message says where.
    #[error("B-Tree invariant broken: {0}")]
    Invalid(String),
}

impl Error {
    /// True when the node pool ran out (the tree stays valid).
    ///
    /// ```
    /// let e = gpuds_btree::Error::from(gpuds_alloc::Error::PoolExhausted {
    ///     needed: 0, capacity: 1024, max_units: 1024,
    /// });
    /// assert!(e.is_pool_exhausted());
    /// ```
    pub fn is_pool_exhausted(&self) -> bool {
        matches!(self, Error::Alloc(gpuds_alloc::Error::PoolExhausted { .. }))
    }
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl From<gpuds_core::cudarc::driver::DriverError> for Error {
    fn from(e: gpuds_core::cudarc::driver::DriverError) -> Self {
        Error::Core(gpuds_core::Error::Driver(e))
    }
}
