//! Launch shapes: grid sizes from the SM count and the kernel's occupancy.

use cudarc::driver::LaunchConfig;

use crate::compile::Kernel;
use crate::error::{Error, Result};
use crate::gpu::Gpu;

impl Kernel {
    /// How many blocks of `block` threads (with `shared_bytes` of dynamic shared memory)
    /// can be resident on one SM at once.
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
    pub fn grid_for(&self, kernel: &Kernel, threads: usize, block: u32) -> Result<LaunchConfig> {
        check_block(block)?;
        let resident = self.persistent_blocks(kernel, block, 0)? as usize;
        let needed = threads.div_ceil(block as usize).max(1);
        Ok(shape(needed.min(resident.max(1)) as u32, block, 0))
    }

    /// A persistent grid: exactly as many blocks as can be resident at once, so that
    /// every block runs concurrently (kernels that wait on each other need this, e.g.
    /// epoch-based reclamation scanning an announce array).
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
pub fn shape(grid: u32, block: u32, shared_bytes: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (grid, 1, 1),
        block_dim: (block, 1, 1),
        shared_mem_bytes: shared_bytes,
    }
}

/// A launch with one thread per item (no grid-stride loop), `block` threads per block.
/// Fails when the grid would pass the hardware's limit of 2^31 - 1 blocks.
pub fn one_thread_per_item(items: usize, block: u32) -> Result<LaunchConfig> {
    check_block(block)?;
    let blocks = items.div_ceil(block as usize).max(1);
    let grid = u32::try_from(blocks)
        .ok()
        .filter(|&g| g <= i32::MAX as u32)
        .ok_or_else(|| Error::InvalidArgument(format!("{items} items need too many blocks")))?;
    Ok(shape(grid, block, 0))
}

fn check_block(block: u32) -> Result<()> {
    if block == 0 || block > 1024 || block % 32 != 0 {
        return Err(Error::InvalidArgument(format!(
            "block size {block} must be a multiple of 32 between 32 and 1024"
        )));
    }
    Ok(())
}
