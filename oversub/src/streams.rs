//! What both tiered structures (the range table's inner tables, the range skip list's
//! node pools) use to move containers over the host link on a second stream (the copy
//! stream) while kernels run on the structure's own (the compute stream): the copy
//! between a pinned home and its device copy, and the compute stream's timed waits for
//! copies with their total for `stats().copy_wait_ns`.

use cudarc::driver::sys::{self, CUevent_flags};
use cudarc::driver::{CudaEvent, CudaStream};

use crate::error::{Error, Result};
use crate::placement::check;

/// Which way a copy between a pinned home and device memory goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Way {
    /// Home to device.
    In,
    /// Device to home.
    Out,
}

/// Enqueues on `stream` the copy of `bytes` between the pinned host memory at `host`
/// and the device memory at `device`.
///
/// # Safety
///
/// Both must hold `bytes`, and the caller orders the copy after every kernel and copy
/// that uses either (stream order or events) and keeps both alive until it ends.
pub(crate) unsafe fn copy(
    way: Way,
    host: *mut std::ffi::c_void,
    device: u64,
    bytes: usize,
    stream: &CudaStream,
) -> Result<()> {
    if host.is_null() {
        return Err(Error::Invalid(
            "a tiered home is not pinned host memory".into(),
        ));
    }
    // SAFETY: the caller's contract.
    let r = unsafe {
        match way {
            Way::In => sys::cuMemcpyHtoDAsync_v2(device, host, bytes, stream.cu_stream()),
            Way::Out => sys::cuMemcpyDtoHAsync_v2(host, device, bytes, stream.cu_stream()),
        }
    };
    check(r, "a copy between host and device")
}

/// The compute stream's waits for copies, each between two timed events.
#[derive(Default)]
pub(crate) struct Stalls(Vec<(CudaEvent, CudaEvent)>);

impl Stalls {
    /// Makes `compute` wait for `copied` (an event of the copy stream), timed.
    pub fn wait(&mut self, compute: &CudaStream, copied: &CudaEvent) -> Result<()> {
        let timed = Some(CUevent_flags::CU_EVENT_DEFAULT);
        let before = compute.record_event(timed)?;
        compute.wait(copied)?;
        self.0.push((before, compute.record_event(timed)?));
        Ok(())
    }

    /// Device time the waits took, in ns; the compute stream must have passed them
    /// (synchronized).
    pub fn total_ns(self) -> Result<u64> {
        let mut ns = 0u64;
        for (before, after) in self.0 {
            ns += (f64::from(before.elapsed_ms(&after)?) * 1e6) as u64;
        }
        Ok(ns)
    }
}
