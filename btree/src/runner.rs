//! [`BatchRunner`]: the node pool of a tree, its status word and the bound of the units in
//! use, with the grow-and-retry policy of synchronizing update batches
//! ([`run_growing`]). [`crate::GpuBTreeMap`] and `gpuds_mvbtree::VersionedBTreeMap` both
//! keep their nodes in one; host side only.

use std::ops::DerefMut;

use gpuds_alloc::SlabAlloc;
use gpuds_core::{Gpu, Status, StatusWord};
use parking_lot::Mutex;

use crate::error::{Error, Result};

/// A tree's node pool and status word, and an upper bound of the units in use: the pool
/// is grown only when a batch's bound of new units passes its capacity.
///
/// # Examples
/// ```no_run
/// use gpuds_alloc::{SlabAlloc, SlabAllocConfig};
/// use gpuds_btree::runner::BatchRunner;
/// let gpu = gpuds_core::Gpu::new(0)?;
/// let pool = SlabAlloc::new(&gpu, SlabAllocConfig { unit_bytes: 128, ..Default::default() })?;
/// let mut runner = BatchRunner::new(&gpu, pool)?;
/// runner.ensure_room(1 << 20)?; // the pool holds 2^20 more units, or is at its maximum
/// assert!(runner.take_status()?.is_ok());
/// # Ok::<(), gpuds_btree::Error>(())
/// ```
#[derive(Debug)]
pub struct BatchRunner {
    pool: SlabAlloc,
    status: Mutex<StatusWord>,
    used_bound: u64,
}

impl BatchRunner {
    /// A runner over `pool` with a fresh status word, no unit counted in use. Does not
    /// synchronize.
    pub fn new(gpu: &Gpu, pool: SlabAlloc) -> Result<Self> {
        Ok(Self {
            pool,
            status: Mutex::new(StatusWord::new(gpu)?),
            used_bound: 0,
        })
    }

    /// The node pool.
    pub fn pool(&self) -> &SlabAlloc {
        &self.pool
    }

    /// The node pool, to grow or reset it (then set the bound: [`BatchRunner::set_used`]).
    pub fn pool_mut(&mut self) -> &mut SlabAlloc {
        &mut self.pool
    }

    /// The tree's own status word (kernels get its device address; the pool has its own).
    pub fn status(&self) -> impl DerefMut<Target = StatusWord> + '_ {
        self.status.lock()
    }

    /// The bound of the units in use.
    pub fn used(&self) -> u64 {
        self.used_bound
    }

    /// Sets the bound of the units in use (after a count, a reset or a build).
    pub fn set_used(&mut self, units: u64) {
        self.used_bound = units;
    }

    /// Takes `units` freed units off the bound.
    pub fn release(&mut self, units: u64) {
        self.used_bound = self.used_bound.saturating_sub(units);
    }

    /// Grows the pool when `extra` more units might not fit, and counts them in the
    /// bound. At the pool's maximum it grows what it can and lets the kernels try (the
    /// bound may be pessimistic; they report a real shortage).
    pub fn ensure_room(&mut self, extra: u64) -> Result<()> {
        if self.used_bound.saturating_add(extra) <= self.pool.capacity_units() {
            self.used_bound += extra;
            return Ok(());
        }
        match self.pool.reserve_within_max(extra) {
            Ok(()) | Err(gpuds_alloc::Error::PoolExhausted { .. }) => {}
            Err(e) => return Err(e.into()),
        }
        self.used_bound = self.pool.units_in_use()?.saturating_add(extra);
        Ok(())
    }

    /// Clears both status words in stream order (no synchronization): a synchronizing
    /// call does this first, so that it reports its own flags only.
    pub fn clear_status(&self) -> Result<()> {
        self.pool.clear_status()?;
        self.status.lock().clear()?;
        Ok(())
    }

    /// Reads and clears both status words; the flags of both. Synchronizes.
    pub fn take_status(&self) -> Result<Status> {
        let pool = self.pool.take_status()?;
        let own = self.status.lock().take()?;
        Ok(pool | own)
    }

    /// Reads and clears both status words (the pool's first: an exhausted pool also ends
    /// operations early) as errors. Synchronizes.
    pub fn check(&self) -> Result<()> {
        let pool = self.pool.check_status();
        let own = self.status.lock().check();
        pool?;
        own?;
        Ok(())
    }

    /// The error of a call whose kernels reported `flags` (not OK) and whose operations at
    /// `not_applied` failed: [`gpuds_core::Error::NotApplied`] naming them, else
    /// [`gpuds_alloc::Error::PoolExhausted`] for an exhausted pool, else the flags.
    pub fn failure(&self, flags: Status, not_applied: Vec<usize>) -> Error {
        if !not_applied.is_empty() {
            return gpuds_core::Error::NotApplied {
                status: flags,
                not_applied,
            }
            .into();
        }
        if flags.contains(Status::POOL_EXHAUSTED) {
            return gpuds_alloc::Error::PoolExhausted {
                needed: 0,
                capacity: self.pool.capacity_units(),
                max_units: self.pool.config().max_units,
            }
            .into();
        }
        gpuds_core::Error::Status(flags).into()
    }

    /// Grows the pool after a batch ran out of units, by at least its capacity and at
    /// least `units` (so that retries end after a few rounds); false when it could not
    /// grow (at its maximum, or no device memory).
    pub fn grow_after_exhaustion(&mut self, units: u64) -> Result<bool> {
        let before = self.pool.capacity_units();
        match self.pool.reserve_within_max(before.max(units)) {
            Ok(()) | Err(gpuds_alloc::Error::PoolExhausted { .. }) => {}
            // No device memory for more nodes: the batch ends naming what it did not apply.
            Err(gpuds_alloc::Error::Core(gpuds_core::Error::OutOfMemory { .. })) => {
                return Ok(false)
            }
            Err(e) => return Err(e.into()),
        }
        self.used_bound = self.pool.units_in_use()?;
        Ok(self.pool.capacity_units() > before)
    }
}

/// Runs a synchronizing update batch of `map`, whose [`BatchRunner`] `runner` gives:
/// clears the status words, then `round(map, at)` runs the requests at the batch
/// positions `at` (`None`: all of them) and returns the flags its kernels reported and
/// the indices, into that round, of the requests that failed. Requests that ran out of
/// nodes below the pool's maximum run again, alone, after the pool has grown by at least
/// `retry_units(failed)`; what still fails is named in the error
/// ([`gpuds_core::Error::NotApplied`]), every other request having taken effect.
/// `finish(map)` runs after the last round, whether the batch succeeded or failed (not
/// after an error of a round or of the pool's growth, which ends the call at once), and
/// its error comes first.
///
/// ```no_run
/// use gpuds_alloc::{SlabAlloc, SlabAllocConfig};
/// use gpuds_btree::runner::{run_growing, BatchRunner};
/// let gpu = gpuds_core::Gpu::new(0)?;
/// let pool = SlabAlloc::new(&gpu, SlabAllocConfig { unit_bytes: 128, ..Default::default() })?;
/// let mut runner = BatchRunner::new(&gpu, pool)?;
/// let mut rounds = 0;
/// let round = |r: &mut BatchRunner, _at: Option<&[usize]>| {
///     rounds += 1; // launch the kernels of the requests at `_at` here
///     Ok::<_, gpuds_btree::Error>((r.take_status()?, Vec::new()))
/// };
/// run_growing(&mut runner, |r| r, |failed| failed as u64, round, |_| Ok(()))?;
/// assert_eq!(rounds, 1);
/// # Ok::<(), gpuds_btree::Error>(())
/// ```
pub fn run_growing<M, E: From<Error>>(
    map: &mut M,
    runner: impl Fn(&mut M) -> &mut BatchRunner,
    retry_units: impl Fn(usize) -> u64,
    mut round: impl FnMut(&mut M, Option<&[usize]>) -> Result<(Status, Vec<usize>), E>,
    finish: impl FnOnce(&mut M) -> Result<(), E>,
) -> Result<(), E> {
    runner(map).clear_status()?;
    let mut at: Option<Vec<usize>> = None;
    loop {
        let (flags, failed) = round(map, at.as_deref())?;
        if flags.is_ok() {
            return finish(map);
        }
        let not_applied: Vec<usize> = failed
            .into_iter()
            .map(|i| at.as_ref().map_or(i, |a| a[i]))
            .collect();
        if flags == Status::POOL_EXHAUSTED
            && !not_applied.is_empty()
            && runner(map).grow_after_exhaustion(retry_units(not_applied.len()))?
        {
            at = Some(not_applied);
            continue;
        }
        let failure = runner(map).failure(flags, not_applied);
        finish(map)?;
        return Err(failure.into());
    }
}

/// Splits a batch of `inserts` insertions may make in a tree of nodes of `node_pairs`
/// pairs: one leaf split per insertion reaching a full leaf, and a split one level up per
/// h - 1 splits below it (h = node_pairs / 2: pairs landed in a half), plus 64 for the
/// root and the nodes that were full before the batch. See [`split_bound`].
pub fn splits(inserts: usize, node_pairs: usize) -> u64 {
    let per_split = (node_pairs as u64 / 2).saturating_sub(1).clamp(1, 3);
    (inserts as u64).div_ceil(per_split) + 64
}

/// Nodes a batch of `inserts` insertions may add to a tree of nodes of `node_pairs`
/// pairs, reserved before it runs: the insertions plus their [`splits`]. An insertion
/// that reaches a full leaf splits it (at most one such split per insertion); a split one
/// level up needs h = node_pairs / 2 splits below it (pairs landed in a half), or a node
/// that was already full, and a root split adds two nodes: at most n + n / (h - 1) nodes
/// (14 pairs: 7/6 of the insertions, reserved as 4/3; 6 pairs: 3/2) plus the internal
/// nodes that were full before the batch, which this bound leaves out. A batch that
/// needs those too (rare: trees whose internal nodes are nearly all full) fails part of
/// its insertions with `POOL_EXHAUSTED`; the synchronizing forms then grow the pool and
/// insert those again ([`run_growing`]), so that only the pool's maximum ends them.
///
/// ```
/// assert_eq!(gpuds_btree::runner::split_bound(600, 14), 600 + 200 + 64);
/// ```
pub fn split_bound(inserts: usize, node_pairs: usize) -> u64 {
    inserts as u64 + splits(inserts, node_pairs)
}

/// The elements of `all` at the positions `at`, or all of them (`None`): the requests of
/// one round of [`run_growing`].
///
/// ```
/// use gpuds_btree::runner::picked;
/// assert_eq!(&*picked(&[5, 6, 7], Some(&[2, 0])), &[7, 5]);
/// assert_eq!(&*picked(&[5, 6, 7], None), &[5, 6, 7]);
/// ```
pub fn picked<'a, T: Copy>(all: &'a [T], at: Option<&[usize]>) -> std::borrow::Cow<'a, [T]> {
    match at {
        None => std::borrow::Cow::Borrowed(all),
        Some(at) => std::borrow::Cow::Owned(at.iter().map(|&i| all[i]).collect()),
    }
}

/// The batch length as the kernels' 32-bit count: more than `u32::MAX` operations is a
/// [`CapacityOverflow`](gpuds_core::Error::CapacityOverflow), never truncated.
///
/// ```
/// assert_eq!(gpuds_btree::runner::batch_len(7)?, 7);
/// # Ok::<(), gpuds_btree::Error>(())
/// ```
pub fn batch_len(n: usize) -> Result<u32> {
    Ok(gpuds_core::size::u32_len(n, "operations in one batch")?)
}

/// Output pairs of `n` capped ranges of capacity `cap` (`n * cap`): at most `u32::MAX`
/// per call (the kernels' offsets are 32-bit), else a
/// [`CapacityOverflow`](gpuds_core::Error::CapacityOverflow).
///
/// ```
/// use gpuds_btree::runner::capped_len;
/// assert_eq!(capped_len(1 << 20, 32)?, 1 << 25);
/// assert!(capped_len(1 << 27, 32).is_err());
/// # Ok::<(), gpuds_btree::Error>(())
/// ```
pub fn capped_len(n: u32, cap: u32) -> Result<u64> {
    let needed = n as u64 * cap as u64;
    if needed > u32::MAX as u64 {
        return Err(gpuds_core::Error::CapacityOverflow(format!(
            "{n} ranges of capacity {cap} need {needed} output pairs; at most {} per call",
            u32::MAX
        ))
        .into());
    }
    Ok(needed)
}

/// [`capped_len`], checked against outputs that hold `room` pairs: fewer is an
/// [`InvalidArgument`](gpuds_core::Error::InvalidArgument).
///
/// ```
/// use gpuds_btree::runner::capped_room;
/// assert_eq!(capped_room(4, 8, 32)?, 32);
/// assert!(capped_room(4, 8, 31).is_err());
/// # Ok::<(), gpuds_btree::Error>(())
/// ```
pub fn capped_room(n: u32, cap: u32, room: usize) -> Result<u64> {
    let needed = capped_len(n, cap)?;
    if (room as u64) < needed {
        return Err(gpuds_core::Error::InvalidArgument(format!(
            "{n} ranges of capacity {cap} need {needed} output pairs; got {room}"
        ))
        .into());
    }
    Ok(needed)
}

/// Both lengths, equal (`a` keys and `b` of `what`), as a batch length.
///
/// ```
/// use gpuds_btree::runner::same_len;
/// assert_eq!(same_len(3, 3, "values")?, 3);
/// assert!(same_len(3, 2, "values").is_err());
/// # Ok::<(), gpuds_btree::Error>(())
/// ```
pub fn same_len(a: usize, b: usize, what: &str) -> Result<u32> {
    if a != b {
        return Err(gpuds_core::Error::InvalidArgument(format!("{a} keys but {b} {what}")).into());
    }
    batch_len(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capped_outputs_stay_within_the_kernels_offsets() {
        assert_eq!(capped_len(1 << 20, 32).unwrap(), 1 << 25);
        assert_eq!(capped_len(u32::MAX, 1).unwrap(), u32::MAX as u64);
        assert!(capped_len(1 << 27, 32).is_err());
        assert_eq!(capped_len(7, 0).unwrap(), 0);
        assert_eq!(capped_room(7, 0, 0).unwrap(), 0);
        let e = capped_room(3, 4, 11).unwrap_err().to_string();
        assert!(e.contains("need 12 output pairs; got 11"), "{e}");
    }
}
