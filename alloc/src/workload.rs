//! Device workloads shared by the tests and the benchmark: an allocate/free storm whose
//! units carry stamps (a unit handed out twice loses one), and the read/retire loop of
//! epoch-based reclamation (readers check every word of the units they reach; reclaimed
//! units are poisoned, so a read after free shows).

use cudarc::driver::{CudaSlice, PushKernelArg};

use crate::ebr::Collector;
use crate::error::Result;
use crate::slab_alloc::{Modules, SlabAlloc};

const BLOCK: u32 = 256;

/// Runs `rounds` rounds of the storm over `slots` (each an address or
/// [`crate::NULL_UNIT`]): in each round a random half of the threads free their unit, then
/// every thread without one allocates one and writes its own index into the unit's first
/// word. Does not synchronize; failed allocations leave null (see
/// [`SlabAlloc::check_status`]).
///
/// # Examples
/// ```no_run
/// use gpuds_alloc::{workload, SlabAlloc, SlabAllocConfig, NULL_UNIT};
/// let gpu = gpuds_core::Gpu::new(0)?;
/// let mut pool = SlabAlloc::new(&gpu, SlabAllocConfig::default())?;
/// pool.reserve(1 << 16)?;
/// let mut slots = gpu.stream().clone_htod(&vec![NULL_UNIT; 1 << 16])?;
/// workload::churn(&pool, &mut slots, 10, 7)?;
/// assert_eq!(workload::stamp_errors(&pool, &slots)?, 0);
/// # Ok::<(), gpuds_alloc::Error>(())
/// ```
pub fn churn(pool: &SlabAlloc, slots: &mut CudaSlice<u32>, rounds: u32, seed: u32) -> Result<()> {
    if slots.is_empty() {
        return Ok(());
    }
    let gpu = pool.gpu();
    let kernel = pool.kernel_of(Modules::SlabAlloc, "slab_alloc_churn")?;
    let shape = gpu.grid_for(&kernel, slots.len(), BLOCK)?;
    let n = slots.len() as u64;
    let r = pool.device_ref();
    let mut args = gpu.stream().launch_builder(kernel.func());
    args.arg(&r).arg(slots).arg(&n).arg(&rounds).arg(&seed);
    // SAFETY: the kernel reads and writes slots[..n] and units it allocated.
    unsafe { args.launch(shape) }?;
    Ok(())
}

/// How many non-null slots point at a unit that does not carry the slot's index (after
/// [`churn`]; any nonzero count means a unit was handed out twice). Synchronizes.
pub fn stamp_errors(pool: &SlabAlloc, slots: &CudaSlice<u32>) -> Result<u64> {
    if slots.is_empty() {
        return Ok(0);
    }
    let gpu = pool.gpu();
    let stream = gpu.stream();
    let kernel = pool.kernel_of(Modules::SlabAlloc, "slab_alloc_check_stamps")?;
    let shape = gpu.grid_for(&kernel, slots.len(), BLOCK)?;
    let n = slots.len() as u64;
    let mut bad = stream.alloc_zeros::<u32>(1)?;
    let r = pool.device_ref();
    let mut args = stream.launch_builder(kernel.func());
    args.arg(&r).arg(slots).arg(&n).arg(&mut bad);
    // SAFETY: the kernel reads slots[..n] and their units, and adds to bad[0].
    unsafe { args.launch(shape) }?;
    Ok(stream.clone_dtoh(&bad)?[0] as u64)
}

/// Which reclaimer [`read_retire`] runs with.
#[derive(Clone, Copy, Debug)]
pub enum Reclaimer<'a> {
    /// Epoch-based reclamation through this collector.
    Epoch(&'a Collector),
    /// The null reclaimer: retired units are never freed.
    Null,
}

/// Cells for [`read_retire`]: `count` fresh units, each filled with its cell's index.
/// Synchronizes.
pub fn cells(pool: &SlabAlloc, count: u32) -> Result<CudaSlice<u32>> {
    let cells = pool.allocate(count.max(1) as usize)?;
    let gpu = pool.gpu();
    let kernel = pool.kernel_of(Modules::Ebr, "ebr_cells_init")?;
    let shape = gpu.grid_for(&kernel, cells.len() * 32, BLOCK)?;
    let n = cells.len() as u32;
    let r = pool.device_ref();
    let mut args = gpu.stream().launch_builder(kernel.func());
    args.arg(&r).arg(&cells).arg(&n);
    // SAFETY: the kernel writes the units named by cells[..n], which are allocated.
    unsafe { args.launch(shape) }?;
    gpu.synchronize()?;
    Ok(cells)
}

/// The read/retire loop on a persistent grid: each round, every warp reads a random cell
/// (checking each word of its unit) or replaces the cell's unit with a fresh one and
/// retires the old one (`write_percent` of the time). Bad words seen by readers are
/// added to `violations[0]`. Does not synchronize. Returns the number of warp operations
/// launched.
pub fn read_retire(
    pool: &SlabAlloc,
    reclaimer: Reclaimer<'_>,
    cells: &mut CudaSlice<u32>,
    rounds: u32,
    write_percent: u32,
    seed: u32,
    violations: &mut CudaSlice<u64>,
) -> Result<u64> {
    let gpu = pool.gpu();
    let n = gpuds_core::size::u32_len(cells.len(), "cells")?;
    let stream = gpu.stream();
    let shape = match reclaimer {
        Reclaimer::Epoch(collector) => {
            let kernel = pool.kernel_of(Modules::Ebr, "ebr_churn")?;
            let shape = collector.grid(&kernel, BLOCK, 0)?;
            let r = collector.device_ref(pool);
            let mut args = stream.launch_builder(kernel.func());
            args.arg(&r).arg(cells).arg(&n).arg(&rounds);
            args.arg(&write_percent).arg(&seed).arg(violations);
            // SAFETY: the kernel reads and swaps cells[..n] and the collector's arrays.
            unsafe { args.launch(shape) }?;
            shape
        }
        Reclaimer::Null => {
            let kernel = pool.kernel_of(Modules::Ebr, "ebr_churn_null")?;
            let shape = gpu.persistent_grid(&kernel, BLOCK, 0)?;
            let r = pool.device_ref();
            let mut args = stream.launch_builder(kernel.func());
            args.arg(&r).arg(cells).arg(&n).arg(&rounds);
            args.arg(&write_percent).arg(&seed).arg(violations);
            // SAFETY: the kernel reads and swaps cells[..n] and allocates from the pool.
            unsafe { args.launch(shape) }?;
            shape
        }
    };
    Ok(shape.grid_dim.0 as u64 * (BLOCK / 32) as u64 * rounds as u64)
}
