//! Allocation faults of a [`Gpu`](crate::Gpu) handle, for tests: make the structures'
//! own allocations (tables, stashes, bitmaps, scratch grown through
//! [`Gpu::alloc_uninit`](crate::Gpu::alloc_uninit) and
//! [`Gpu::alloc_zeroed`](crate::Gpu::alloc_zeroed)) fail on purpose, to check that a
//! structure reports the failure, loses nothing, stays valid and works again once the fault
//! is lifted.
//!
//! Only with the crate's `fault-injection` feature (enable it in a `[dev-dependencies]`
//! entry): without it `Gpu::inject_allocation_faults` does not exist and nothing can set a
//! fault. The faults belong to one handle and its clones; a handle from another
//! `Gpu::new` is not affected.

use crate::error::{Error, Result};

/// Which allocations fail; `AllocFaults::default()` makes none fail.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AllocFaults {
    /// The k-th allocation after the injection (from 1) fails with
    /// [`Error::OutOfMemory`].
    pub fail_allocation: Option<u32>,
    /// Allocations fail with [`Error::OutOfMemory`] once the bytes allocated since the
    /// injection would pass this budget (frees are not counted back).
    pub memory_budget: Option<u64>,
}

/// A handle's injected faults and their counters.
#[derive(Debug, Default)]
pub(crate) struct AllocFaultState {
    faults: AllocFaults,
    allocations: u32,
    bytes: u64,
}

impl AllocFaultState {
    /// Replaces the faults and restarts their counters.
    #[cfg(feature = "fault-injection")]
    pub fn inject(&mut self, faults: AllocFaults) {
        *self = Self {
            faults,
            ..Self::default()
        };
    }

    /// Counts an allocation of `bytes` for `what`; the injected error when it is to fail.
    pub fn charge(&mut self, bytes: u64, what: &str) -> Result<()> {
        if self.faults == AllocFaults::default() {
            return Ok(());
        }
        self.allocations = self.allocations.saturating_add(1);
        let over = self
            .faults
            .memory_budget
            .is_some_and(|b| self.bytes.saturating_add(bytes) > b);
        if self.faults.fail_allocation == Some(self.allocations) || over {
            return Err(Error::OutOfMemory {
                what: format!("{what} (injected fault)"),
                bytes,
            });
        }
        self.bytes = self.bytes.saturating_add(bytes);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_fault_counts_nothing_and_fails_nothing() {
        let mut s = AllocFaultState::default();
        for _ in 0..10 {
            s.charge(1 << 40, "x").unwrap();
        }
        assert_eq!(s.allocations, 0);
    }

    #[test]
    fn the_kth_allocation_and_the_budget_fail() {
        let mut s = AllocFaultState {
            faults: AllocFaults {
                fail_allocation: Some(3),
                memory_budget: Some(100),
            },
            ..Default::default()
        };
        s.charge(10, "a").unwrap();
        s.charge(10, "b").unwrap();
        assert!(matches!(
            s.charge(10, "c"),
            Err(Error::OutOfMemory { bytes: 10, .. })
        ));
        s.charge(70, "d").unwrap();
        assert!(s.charge(11, "e").is_err());
        s.charge(10, "f").unwrap();
    }
}
