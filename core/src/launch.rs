//! Launch shapes: grid sizes from the SM count and the kernel's occupancy.

use cudarc::driver::LaunchConfig;

use crate::compile::Kernel;
use crate::error::{Error, Result};
use crate::gpu::Gpu;

impl Kernel {
    /// How many blocks of `block` threads (with `shared_bytes` of dynamic shared memory)
    /// can be resident on one SM at once.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// # let kernel = gpu.load(&gpuds_core::Program::new("k", "extern \"C\" __global__ void k() {}"))?.kernel("k")?;
    /// let resident = kernel.blocks_per_sm(256, 0)?;
    /// println!("{resident} blocks of 256 threads fit on one SM");
    /// # Ok::<(), gpuds_core::Error>(())
    /// ```
    pub fn blocks_per_sm(&self, block: u32, shared_bytes: u32) -> Result<u32> {
        let n = self.func().occupancy_max_active_blocks_per_multiprocessor(
            block,
            shared_bytes as usize,
            None,
        )?;
        Ok(n)
    }
}

impl Gpu {
    /// A launch for a grid-stride kernel over `threads` threads: enough blocks to cover
    /// them, but never more than can be resident at once (the kernel loops for the rest).
    ///
    /// With `threads == 0` the grid has one block, so that a kernel with nothing to do
    /// still launches legally; kernels check their bounds.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// # let kernel = gpu.load(&gpuds_core::Program::new("k", "extern \"C\" __global__ void k() {}"))?.kernel("k")?;
    /// let shape = gpu.grid_for(&kernel, 1 << 24, 256)?;
    /// assert!(shape.grid_dim.0 >= 1);
    /// # Ok::<(), gpuds_core::Error>(())
    /// ```
    pub fn grid_for(&self, kernel: &Kernel, threads: usize, block: u32) -> Result<LaunchConfig> {
        check_block(block)?;
        let resident = self.persistent_blocks(kernel, block, 0)? as usize;
        let needed = threads.div_ceil(block as usize).max(1);
        Ok(shape(needed.min(resident.max(1)) as u32, block, 0))
    }

    /// A persistent grid: exactly as many blocks as can be resident at once, so that
    /// every block runs concurrently (kernels that wait on each other need this, e.g.
    /// epoch-based reclamation scanning an announce array).
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// # let kernel = gpu.load(&gpuds_core::Program::new("k", "extern \"C\" __global__ void k() {}"))?.kernel("k")?;
    /// let shape = gpu.persistent_grid(&kernel, 256, 0)?;
    /// assert!(shape.grid_dim.0 >= gpu.info().sm_count);
    /// # Ok::<(), gpuds_core::Error>(())
    /// ```
    pub fn persistent_grid(
        &self,
        kernel: &Kernel,
        block: u32,
        shared_bytes: u32,
    ) -> Result<LaunchConfig> {
        check_block(block)?;
        let blocks = self.persistent_blocks(kernel, block, shared_bytes)?;
        if blocks == 0 {
            return Err(Error::InvalidArgument(format!(
                "kernel `{}` cannot be resident with {block} threads and {shared_bytes} bytes \
                 of shared memory per block",
                kernel.name()
            )));
        }
        Ok(shape(blocks, block, shared_bytes))
    }

    fn persistent_blocks(&self, kernel: &Kernel, block: u32, shared_bytes: u32) -> Result<u32> {
        Ok(kernel.blocks_per_sm(block, shared_bytes)? * self.info().sm_count)
    }
}

/// A 1-D launch shape.
///
/// ```
/// let cfg = gpuds_core::launch::shape(4, 128, 0);
/// assert_eq!((cfg.grid_dim.0, cfg.block_dim.0), (4, 128));
/// ```
pub fn shape(grid: u32, block: u32, shared_bytes: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (grid, 1, 1),
        block_dim: (block, 1, 1),
        shared_mem_bytes: shared_bytes,
    }
}

/// A launch with one thread per item (no grid-stride loop), `block` threads per block.
/// Fails with [`Error::CapacityOverflow`] when the grid would pass the hardware's limit
/// of 2^31 - 1 blocks (and with [`Error::InvalidArgument`] for a bad block size).
///
/// ```
/// use gpuds_core::launch::one_thread_per_item;
/// assert_eq!(one_thread_per_item(1000, 256)?.grid_dim.0, 4);
/// assert!(one_thread_per_item(10, 100).is_err()); // not a multiple of 32
/// assert!(matches!(
///     one_thread_per_item(usize::MAX, 1024),
///     Err(gpuds_core::Error::CapacityOverflow(_))
/// ));
/// # Ok::<(), gpuds_core::Error>(())
/// ```
pub fn one_thread_per_item(items: usize, block: u32) -> Result<LaunchConfig> {
    check_block(block)?;
    let blocks = items.div_ceil(block as usize).max(1);
    let grid = u32::try_from(blocks)
        .ok()
        .filter(|&g| g <= i32::MAX as u32)
        .ok_or_else(|| {
            Error::CapacityOverflow(format!(
                "{items} items need {blocks} blocks of {block} threads; at most {}",
                i32::MAX
            ))
        })?;
    Ok(shape(grid, block, 0))
}

fn check_block(block: u32) -> Result<()> {
    if block == 0 || block > 1024 || !block.is_multiple_of(32) {
        return Err(Error::InvalidArgument(format!(
            "block size {block} must be a multiple of 32 between 32 and 1024"
        )));
    }
    Ok(())
}
