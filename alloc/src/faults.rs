//! Fault injection for tests: make the pool fail on purpose, to check that every structure
//! built on it reports the failure, loses nothing the error does not name, stays valid and
//! works again once the fault is lifted.
//!
//! Only with the crate's `fault-injection` feature (enable it in a `[dev-dependencies]`
//! entry): without it `SlabAlloc::inject_faults` does
//! not exist and the device check is not compiled, so no user path can reach it. Three
//! faults, each optional:
//!
//! - `fail_request`: the k-th warp-wide allocation request made in kernels after the
//!   injection (a call of `allocate` or `allocate_lane`, counted across the grid, from 1)
//!   fails as an exhausted pool does: null unit and `POOL_EXHAUSTED`.
//! - `fail_growth`: the k-th growth of the pool after the injection (from 1) fails with
//!   [`gpuds_core::Error::OutOfMemory`], as the driver's out-of-memory error would.
//! - `memory_budget`: growth past this many bytes of units fails the same way.

use gpuds_core::cudarc::driver::{CudaSlice, CudaStream, DevicePtr};

use crate::error::Result;

/// The device header that switches the device check on (`GPUDS_ALLOC_FAULTS`) when the
/// feature is on, and is empty otherwise.
pub(crate) const HEADER: &str = if cfg!(feature = "fault-injection") {
    "#pragma once\n#define GPUDS_ALLOC_FAULTS 1\n"
} else {
    "#pragma once\n"
};

/// Which faults to inject (see the [module documentation](self)); `Faults::default()`
/// injects none.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Faults {
    /// The k-th warp-wide allocation request in kernels fails (from 1).
    pub fail_request: Option<u32>,
    /// The k-th growth of the pool fails with an out-of-memory error (from 1).
    pub fail_growth: Option<u32>,
    /// Growth past this many bytes of units fails with an out-of-memory error.
    pub memory_budget: Option<u64>,
}

/// A pool's injected faults and their counters.
#[derive(Debug, Default)]
pub(crate) struct FaultState {
    pub faults: Faults,
    /// The device request counter, while `fail_request` is set.
    pub counter: Option<CudaSlice<u32>>,
    /// Growths since the injection.
    pub growths: u32,
}

impl FaultState {
    /// (fail_at, counter address) for the device ref: (0, 0) when off (always, without
    /// the feature: nothing sets a counter then).
    pub fn device_fields(&self, stream: &CudaStream) -> (u32, u64) {
        match (&self.counter, self.faults.fail_request) {
            (Some(c), Some(k)) => (k, c.device_ptr(stream).0),
            _ => (0, 0),
        }
    }

    /// Called before the pool grows to `bytes` bytes of units: the injected error, if
    /// this growth is to fail.
    pub fn before_growth(&mut self, bytes: u64) -> Result<()> {
        self.growths = self.growths.saturating_add(1);
        let fail = self.faults.fail_growth == Some(self.growths)
            || self.faults.memory_budget.is_some_and(|b| bytes > b);
        if fail {
            return Err(gpuds_core::Error::OutOfMemory {
                what: "the slab pool's growth (injected fault)".into(),
                bytes,
            }
            .into());
        }
        Ok(())
    }
}
