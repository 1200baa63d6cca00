//! The error type of the CSR baseline.

/// Everything that can go wrong building a [`DeviceCsr`](super::DeviceCsr) or counting
/// its triangles.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CsrError {
    /// An edge names a vertex id that is not below the vertex count; nothing was built.
    #[error(
        "edge {index} names vertex {id}, but ids must be below the vertex count \
         {num_vertices}; nothing was built"
    )]
    VertexOutOfRange {
        /// Position of the first such edge in the input.
        index: usize,
        /// Its offending id (the source when both are out of range).
        id: u32,
        /// The vertex count of the call.
        num_vertices: u32,
    },
    /// The source and destination arrays differ in length.
    #[error("{sources} edge sources but {destinations} destinations")]
    LengthMismatch {
        /// Length of the source array.
        sources: usize,
        /// Length of the destination array.
        destinations: usize,
    },
    /// An error of gpuds-core: a launch, a copy, an allocation ([`OutOfMemory`]), a
    /// size past a limit ([`CapacityOverflow`]).
    ///
    /// [`OutOfMemory`]: gpuds_core::Error::OutOfMemory
    /// [`CapacityOverflow`]: gpuds_core::Error::CapacityOverflow
    #[error(transparent)]
    Core(#[from] gpuds_core::Error),
}

impl From<cudarc::driver::DriverError> for CsrError {
    fn from(e: cudarc::driver::DriverError) -> Self {
        Self::Core(e.into())
    }
}
