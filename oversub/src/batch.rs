//! What both tables share: key checks, the call status, and the launch of a request
//! kernel.

use cudarc::driver::{CudaSlice, LaunchConfig};
use gpuds_core::{Gpu, Kernel};

use crate::error::{Error, Result};

/// The reserved keys: 0 (empty slot) and all ones (tombstone).
pub const RESERVED_KEYS: [u32; 2] = [0, u32::MAX];

pub(crate) fn check_host_keys(keys: &[u32]) -> Result<()> {
    match keys.iter().position(|k| RESERVED_KEYS.contains(k)) {
        Some(index) => Err(Error::ReservedKey {
            index,
            key: keys[index],
        }),
        None => Ok(()),
    }
}

pub(crate) fn same_len(what: &'static str, a: usize, b: usize) -> Result<()> {
    if a == b {
        Ok(())
    } else {
        Err(Error::LengthMismatch { what, a, b })
    }
}

/// Checks device keys for reserved values (one kernel and a synchronization).
pub(crate) fn check_device_keys(
    gpu: &Gpu,
    first_reserved: &Kernel,
    keys: &CudaSlice<u32>,
) -> Result<()> {
    use cudarc::driver::PushKernelArg;
    let n = keys.len();
    if n == 0 {
        return Ok(());
    }
    let stream = gpu.stream();
    let mut out = stream.alloc_zeros::<u64>(1)?;
    let n64 = n as u64;
    let mut args = stream.launch_builder(first_reserved.func());
    args.arg(keys).arg(&n64).arg(&mut out);
    // SAFETY: reads keys[..n], writes one word.
    unsafe { args.launch(shape(gpu, first_reserved, n)?) }?;
    let bad = stream.clone_dtoh(&out)?[0];
    if bad == 0 {
        return Ok(());
    }
    let index = (n64 - bad) as usize;
    let key = stream.clone_dtoh(&keys.slice(index..index + 1))?[0];
    Err(Error::ReservedKey { index, key })
}

/// Checks the output arrays of a device query or removal of `n` keys: `bits` holds `n`
/// bits, `values` (when given) `n` words.
pub(crate) fn check_outputs(
    n: usize,
    values: Option<&CudaSlice<u32>>,
    bits: &CudaSlice<u32>,
) -> Result<()> {
    if bits.len() < n.div_ceil(32) {
        return Err(Error::LengthMismatch {
            what: "keys (in bits) and the bit array",
            a: n.div_ceil(32),
            b: bits.len(),
        });
    }
    match values {
        Some(v) if v.len() < n => Err(Error::LengthMismatch {
            what: "keys and values",
            a: n,
            b: v.len(),
        }),
        _ => Ok(()),
    }
}

pub(crate) fn shape(gpu: &Gpu, kernel: &Kernel, n: usize) -> Result<LaunchConfig> {
    Ok(gpu.grid_for(kernel, n.max(1), crate::kernels::BLOCK)?)
}

/// Lookups' answers from their found flags and values.
pub(crate) fn answers(found: &[bool], values: Vec<u32>) -> Vec<Option<u32>> {
    found
        .iter()
        .zip(values)
        .map(|(&f, v)| f.then_some(v))
        .collect()
}

/// Bits of a found/removed bitmap as bools.
pub(crate) fn bits(words: &[u32], n: usize) -> Vec<bool> {
    (0..n).map(|i| words[i / 32] >> (i % 32) & 1 == 1).collect()
}

/// The operations a call's kernels did not apply, gathered over its batches and runs,
/// as positions in the caller's whole batch. A batch's [`NotApplied`] error names
/// positions inside that batch (its kernels mark the positions the caller gave, not the
/// sorted ones); [`take`](Self::take) shifts them by the batch's first position, so a
/// call keeps going after a batch that failed some operations and reports every one at
/// the end. Any other error ends the call at once.
///
/// [`NotApplied`]: gpuds_core::Error::NotApplied
#[derive(Debug, Default)]
pub(crate) struct Failures {
    status: gpuds_core::Status,
    not_applied: Vec<usize>,
}

impl Failures {
    /// `Some(value)` when `result` is `Ok`; `None` after noting the operations of a
    /// `NotApplied` error (positions from `base`); any other error is returned.
    pub fn take<T>(&mut self, result: Result<T>, base: usize) -> Result<Option<T>> {
        match result {
            Ok(v) => Ok(Some(v)),
            Err(Error::Core(gpuds_core::Error::NotApplied {
                status,
                not_applied,
            })) => {
                self.status = self.status | status;
                self.not_applied
                    .extend(not_applied.into_iter().map(|i| i + base));
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// `Ok(value)` when nothing failed, else one `NotApplied` naming every operation
    /// noted, ascending.
    pub fn finish<T>(mut self, value: T) -> Result<T> {
        if self.not_applied.is_empty() {
            return Ok(value);
        }
        self.not_applied.sort_unstable();
        self.not_applied.dedup();
        Err(gpuds_core::Error::NotApplied {
            status: self.status,
            not_applied: self.not_applied,
        }
        .into())
    }
}

/// `e` without the positions of a `NotApplied` error, for errors of internal batches
/// (an auxiliary list's) whose positions are not the caller's: the flags alone.
pub(crate) fn without_positions(e: Error) -> Error {
    match e {
        Error::Core(gpuds_core::Error::NotApplied { status, .. }) => {
            gpuds_core::Error::Status(status).into()
        }
        e => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpuds_core::Status;

    fn not_applied(status: Status, at: &[usize]) -> Result<()> {
        Err(gpuds_core::Error::NotApplied {
            status,
            not_applied: at.to_vec(),
        }
        .into())
    }

    #[test]
    fn failures_of_batches_name_positions_in_the_whole_call() {
        let mut f = Failures::default();
        assert_eq!(f.take(Ok(7), 0).unwrap(), Some(7));
        // Batches of 100: the second failed its positions 3 and 99, the fourth its 0.
        assert_eq!(
            f.take(not_applied(Status::RETRY_LIMIT, &[3, 99]), 100)
                .unwrap(),
            None
        );
        assert_eq!(f.take(Ok(()), 200).unwrap(), Some(()));
        assert_eq!(
            f.take(not_applied(Status::TABLE_FULL, &[0]), 300).unwrap(),
            None
        );
        match f.finish(()) {
            Err(Error::Core(gpuds_core::Error::NotApplied {
                status,
                not_applied,
            })) => {
                assert_eq!(not_applied, vec![103, 199, 300]);
                assert_eq!(status, Status::RETRY_LIMIT | Status::TABLE_FULL);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn internal_failures_keep_their_flags_only() {
        let e = without_positions(not_applied(Status::RETRY_LIMIT, &[3]).unwrap_err());
        assert!(matches!(e, Error::Core(gpuds_core::Error::Status(s)) if s == Status::RETRY_LIMIT));
        assert!(matches!(
            without_positions(Error::Config("x".into())),
            Error::Config(_)
        ));
    }

    #[test]
    fn other_errors_end_the_call_and_nothing_failed_is_ok() {
        let mut f = Failures::default();
        let e = f.take::<()>(Err(Error::Config("x".into())), 5);
        assert!(matches!(e, Err(Error::Config(_))));
        assert_eq!(Failures::default().finish(3).unwrap(), 3);
        let mut f = Failures::default();
        // The same position noted twice (a run and its rerun) is named once.
        f.take(not_applied(Status::RETRY_LIMIT, &[4, 2]), 0)
            .unwrap();
        f.take(not_applied(Status::RETRY_LIMIT, &[2]), 0).unwrap();
        assert!(matches!(
            f.finish(()),
            Err(Error::Core(gpuds_core::Error::NotApplied { ref not_applied, .. })) if not_applied == &[2, 4]
        ));
    }
}
