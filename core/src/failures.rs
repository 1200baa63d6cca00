//! One call's own status: a status word and a failure bit per operation of its batch.
//!
//! # Why a word per call
//!
//! A status word that a structure keeps from call to call mixes calls up: a flag a read
//! left there shows up as the error of the next update, and a failed batch poisons every
//! call after it until something clears the word. So a call that launches kernels makes
//! a [`CallStatus`] (zeroed when made, on the stream, before its kernels run), hands its
//! word to its kernels in place of the structure's, and reads it back once at its own
//! synchronization point. What it reports is its own and nothing else; nothing is left
//! behind for a later call. (A structure's own word stays for the device refs it hands
//! to user kernels, read by the structure's explicit check call.)
//!
//! # Which operations failed
//!
//! A kernel that can fail some operations of a batch and not others marks each failed
//! one with `gpuds::status::mark_not_applied(bits, i)` (`gpuds/core/status.cuh`): bit
//! `i % 32` of word `i / 32`. The host reads the bits only when the word says something
//! failed and returns [`Error::NotApplied`] naming exactly those operations.

use cudarc::driver::{CudaSlice, DevicePtr};

use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::status::Status;

/// 32-bit words of failure bits for a batch of `ops` operations.
///
/// ```
/// assert_eq!(gpuds_core::failures::words_for(0), 0);
/// assert_eq!(gpuds_core::failures::words_for(33), 2);
/// ```
pub fn words_for(ops: usize) -> usize {
    ops.div_ceil(32)
}

/// The operations whose bit is set, ascending; bits at or past `ops` are ignored.
///
/// ```
/// let bits = [0b1010u32, 0, 1];
/// assert_eq!(gpuds_core::failures::indices(&bits, 65), vec![1, 3, 64]);
/// assert_eq!(gpuds_core::failures::indices(&bits, 64), vec![1, 3]);
/// ```
pub fn indices(bits: &[u32], ops: usize) -> Vec<usize> {
    let mut out = Vec::new();
    for (w, &word) in bits.iter().enumerate().take(words_for(ops)) {
        let mut rest = word;
        while rest != 0 {
            let i = w * 32 + rest.trailing_zeros() as usize;
            if i >= ops {
                break;
            }
            out.push(i);
            rest &= rest - 1;
        }
    }
    out
}

/// The error of a call whose kernels reported `status`, given the operations they marked
/// (`not_applied`, ascending): [`Error::NotApplied`] when some operations were marked,
/// [`Error::Status`] when none was (a flag that names no operation), `None` for a clear
/// status.
///
/// ```
/// use gpuds_core::{failures::error_of, Error, Status};
/// assert!(error_of(Status::OK, vec![]).is_none());
/// assert!(matches!(error_of(Status::TABLE_FULL, vec![]), Some(Error::Status(_))));
/// let e = error_of(Status::TABLE_FULL, vec![2, 5]).unwrap();
/// assert!(matches!(e, Error::NotApplied { ref not_applied, .. } if not_applied == &[2, 5]));
/// ```
pub fn error_of(status: Status, not_applied: Vec<usize>) -> Option<Error> {
    if status.is_ok() && not_applied.is_empty() {
        None
    } else if not_applied.is_empty() {
        Some(Error::Status(status))
    } else {
        Some(Error::NotApplied {
            status,
            not_applied,
        })
    }
}

/// One call's status word and failure bits on the device (see the [module
/// documentation](self)): zeroed on the stream when made, so the call's kernels start
/// from a clear word, and read once by [`CallStatus::check`].
///
/// ```no_run
/// use gpuds_core::failures::CallStatus;
/// let gpu = gpuds_core::Gpu::new(0)?;
/// let call = CallStatus::new(&gpu, 1000)?;
/// // pass call.status_ptr() and call.bits_ptr() to the batch's kernels ...
/// call.check()?; // Err(Error::NotApplied { .. }) names the operations marked failed
/// # Ok::<(), gpuds_core::Error>(())
/// ```
#[derive(Debug)]
pub struct CallStatus {
    /// The status word; with a tally, a pad word and the tally's 64-bit words; then the
    /// failure bits.
    words: CudaSlice<u32>,
    ops: usize,
    /// 64-bit tally words (0: none).
    tally: usize,
}

impl CallStatus {
    /// A clear status for a batch of `ops` operations, on `gpu`'s stream. Does not
    /// synchronize.
    pub fn new(gpu: &Gpu, ops: usize) -> Result<Self> {
        Self::with_tally(gpu, ops, 0)
    }

    /// A clear status with `tally` zeroed 64-bit words beside it, for the counts the
    /// call's kernels add up (entries added, requests skipped, ...): read back together
    /// with the status word by [`status_and_tally`](Self::status_and_tally), one copy
    /// where a separate tally buffer would take a second synchronization. Does not
    /// synchronize.
    ///
    /// ```no_run
    /// use gpuds_core::failures::CallStatus;
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let call = CallStatus::with_tally(&gpu, 1000, 2)?;
    /// // pass call.status_ptr(), call.tally_ptr() and call.bits_ptr() to the kernels ...
    /// let (status, counts) = call.status_and_tally()?;
    /// assert_eq!(counts.len(), 2);
    /// if !status.is_ok() {
    ///     call.check()?;
    /// }
    /// # Ok::<(), gpuds_core::Error>(())
    /// ```
    pub fn with_tally(gpu: &Gpu, ops: usize, tally: usize) -> Result<Self> {
        let head = Self::head_words(tally);
        Ok(Self {
            words: gpu.stream().alloc_zeros::<u32>(head + words_for(ops))?,
            ops,
            tally,
        })
    }

    /// 32-bit words before the failure bits: the status word, and with a tally a pad
    /// word (the tally's words are 8-byte aligned: the allocation is) and its words.
    fn head_words(tally: usize) -> usize {
        if tally == 0 {
            1
        } else {
            2 + 2 * tally
        }
    }

    /// Operations of the batch.
    pub fn ops(&self) -> usize {
        self.ops
    }

    /// Device address of the status word (`unsigned*`).
    pub fn status_ptr(&self) -> u64 {
        self.words.device_ptr(self.words.stream()).0
    }

    /// Device address of the failure bits (`unsigned*`), or 0 (null) for an empty batch.
    pub fn bits_ptr(&self) -> u64 {
        if self.ops == 0 {
            0
        } else {
            self.status_ptr() + 4 * Self::head_words(self.tally) as u64
        }
    }

    /// Device address of the tally's words (`unsigned long long*`), or 0 (null) without
    /// a tally.
    pub fn tally_ptr(&self) -> u64 {
        if self.tally == 0 {
            0
        } else {
            self.status_ptr() + 8
        }
    }

    /// The status word and the tally's words, in one copy. Synchronizes.
    pub fn status_and_tally(&self) -> Result<(Status, Vec<u64>)> {
        let head = self
            .words
            .stream()
            .clone_dtoh(&self.words.slice(..Self::head_words(self.tally)))?;
        let tally = head[2.min(head.len())..]
            .chunks_exact(2)
            .map(|w| u64::from(w[0]) | (u64::from(w[1]) << 32))
            .collect();
        Ok((Status(head[0]), tally))
    }

    /// The flags the call's kernels reported. Synchronizes.
    pub fn status(&self) -> Result<Status> {
        let word = self.words.stream().clone_dtoh(&self.words.slice(..1))?;
        Ok(Status(word.first().copied().unwrap_or(0)))
    }

    /// The operations the call's kernels marked failed, ascending. Synchronizes; copies
    /// the bits.
    pub fn not_applied(&self) -> Result<Vec<usize>> {
        if self.ops == 0 {
            return Ok(Vec::new());
        }
        let bits = self
            .words
            .stream()
            .clone_dtoh(&self.words.slice(Self::head_words(self.tally)..))?;
        Ok(indices(&bits, self.ops))
    }

    /// `Ok` when the kernels reported nothing; else the error of [`error_of`] (the
    /// bits are read only then). Synchronizes.
    pub fn check(&self) -> Result<()> {
        let status = self.status()?;
        if status.is_ok() {
            return Ok(());
        }
        match error_of(status, self.not_applied()?) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_follow_the_bit_order_and_stop_at_the_batch() {
        assert!(indices(&[], 0).is_empty());
        assert!(indices(&[0, 0], 64).is_empty());
        assert_eq!(indices(&[1], 1), vec![0]);
        assert_eq!(indices(&[u32::MAX], 5), vec![0, 1, 2, 3, 4]);
        assert_eq!(indices(&[1 << 31, 1 << 31], 64), vec![31, 63]);
        // Bits past the batch (a padded last word) and words past it are ignored.
        assert_eq!(indices(&[0, 1 << 1, u32::MAX], 34), vec![33]);
        let all: Vec<usize> = (0..100).collect();
        assert_eq!(indices(&[u32::MAX; 4], 100), all);
    }

    #[test]
    fn every_single_bit_round_trips() {
        for ops in [1usize, 31, 32, 33, 95, 96, 97] {
            for i in 0..ops {
                let mut bits = vec![0u32; words_for(ops)];
                bits[i / 32] |= 1 << (i % 32);
                assert_eq!(indices(&bits, ops), vec![i], "ops {ops}, bit {i}");
            }
        }
    }

    #[test]
    fn errors_name_the_operations_or_the_flags() {
        assert!(error_of(Status::OK, Vec::new()).is_none());
        match error_of(Status::RETRY_LIMIT, Vec::new()) {
            Some(Error::Status(s)) => assert_eq!(s, Status::RETRY_LIMIT),
            other => panic!("{other:?}"),
        }
        match error_of(Status::POOL_EXHAUSTED, vec![0, 7]) {
            Some(Error::NotApplied {
                status,
                not_applied,
            }) => {
                assert_eq!(status, Status::POOL_EXHAUSTED);
                assert_eq!(not_applied, vec![0, 7]);
            }
            other => panic!("{other:?}"),
        }
    }
}
