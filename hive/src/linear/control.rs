//! Where a [`LinearProbeMap`](super::LinearProbeMap)'s kernels report: two regions of
//! control words, and failure bits per batch.
//!
//! A region holds the first reserved key of a write batch (its index and which sentinel),
//! the first reserved value, the status word, and the first reserved key of a lookup.
//! Write kernels skip their batch when the region's key or value word is set; a lookup's
//! reserved key only reads as absent and is reported, so a read never keeps a write
//! from running.
//!
//! - The **call** region belongs to the synchronizing call running now: cleared before
//!   its kernels, read at its end, so it reports its own failures only.
//! - The **pending** region collects what the `_async` calls (and user kernels, through
//!   the device ref) record until [`check`](super::LinearProbeMap::check) reads and
//!   clears it: a rejected write batch keeps later async write batches from running, so
//!   the first rejection check reports is where the pending work stopped.
//!
//! An insert that finds no room marks its failure bit; the error then names exactly the
//! operations not applied (for `check`, counted over the async write batches since the
//! last check, in call order).

use cudarc::driver::{CudaSlice, DevicePtr};
use gpuds_core::{failures, Gpu, Status};

use crate::error::{Error, Result};

/// Words of a region: [write key, write value, status, read key].
pub(super) const REGION_WORDS: usize = 4;
const WRITE_KEY: usize = 0;
const WRITE_VALUE: usize = 1;
const STATUS: usize = 2;
const READ_KEY: usize = 3;
/// A region with nothing recorded (the index words are "none" when all ones).
const CLEAR: [u64; REGION_WORDS] = [u64::MAX, u64::MAX, 0, u64::MAX];

/// Which region a launch reports to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Region {
    /// The running synchronizing call's.
    Call = 0,
    /// The `_async` calls' and user kernels', until `check`.
    Pending = 1,
}

/// The control words on the device and the failure bits of the batches that report to
/// them.
pub(super) struct Control {
    words: CudaSlice<u64>,
    /// The running call's write batch: its failure bits and length.
    call_bits: Option<(CudaSlice<u32>, usize)>,
    /// The async write batches since the last check, in call order.
    pending_bits: Vec<(CudaSlice<u32>, usize)>,
}

impl Control {
    pub(super) fn new(gpu: &Gpu) -> Result<Self> {
        let mut clear = CLEAR.to_vec();
        clear.extend(CLEAR);
        Ok(Self {
            words: gpu.stream().clone_htod(&clear)?,
            call_bits: None,
            pending_bits: Vec::new(),
        })
    }

    fn range(region: Region) -> std::ops::Range<usize> {
        let start = region as usize * REGION_WORDS;
        start..start + REGION_WORDS
    }

    /// Device address of a region's first word (the `guard` of the kernels).
    pub(super) fn ptr(&self, region: Region) -> u64 {
        let base = self.words.device_ptr(self.words.stream()).0;
        base + (Self::range(region).start * 8) as u64
    }

    /// Device address of a region's status word (`unsigned*`, the low half).
    pub(super) fn status_ptr(&self, region: Region) -> u64 {
        self.ptr(region) + (STATUS * 8) as u64
    }

    /// The region's words, for the kernel that records reserved inputs into them.
    pub(super) fn region_mut(&mut self, region: Region) -> cudarc::driver::CudaViewMut<'_, u64> {
        self.words.slice_mut(Self::range(region))
    }

    /// Starts a synchronizing call: its region cleared (in stream order) and no bits.
    pub(super) fn begin_call(&mut self) -> Result<()> {
        self.call_bits = None;
        let stream = self.words.stream().clone();
        stream.memcpy_htod(&CLEAR, &mut self.words.slice_mut(Self::range(Region::Call)))?;
        Ok(())
    }

    /// Zeroed failure bits for a write batch of `n` operations reporting to `region`;
    /// returns their device address. Does not synchronize.
    pub(super) fn bits(&mut self, gpu: &Gpu, region: Region, n: usize) -> Result<u64> {
        let bits = gpu
            .stream()
            .alloc_zeros::<u32>(failures::words_for(n).max(1))?;
        let ptr = bits.device_ptr(gpu.stream()).0;
        match region {
            Region::Call => self.call_bits = Some((bits, n)),
            Region::Pending => self.pending_bits.push((bits, n)),
        }
        Ok(ptr)
    }

    /// Reads `region` (synchronizing), clears it, and returns what it recorded as an
    /// error (see [`verdict`]); the bits of its batches are read only for a status.
    pub(super) fn finish(&mut self, region: Region, reserved: Reserved) -> Result<()> {
        let stream = self.words.stream().clone();
        let range = Self::range(region);
        let words = stream.clone_dtoh(&self.words.slice(range.clone()))?;
        let batches = match region {
            Region::Call => self.call_bits.take().into_iter().collect(),
            Region::Pending => std::mem::take(&mut self.pending_bits),
        };
        if words[..] == CLEAR[..] {
            return Ok(());
        }
        stream.memcpy_htod(&CLEAR, &mut self.words.slice_mut(range))?;
        match verdict(&words, reserved) {
            Verdict::Fails(e) => Err(e),
            Verdict::Status(status) => {
                let mut read = Vec::with_capacity(batches.len());
                for (bits, n) in &batches {
                    read.push((stream.clone_dtoh(bits)?, *n));
                }
                match failures::error_of(status, concat_indices(&read)) {
                    Some(e) => Err(Error::Core(e)),
                    None => Ok(()),
                }
            }
        }
    }
}

/// The reserved values of a table, to name what a region recorded.
#[derive(Clone, Copy, Debug)]
pub(super) struct Reserved {
    /// The empty key and the erased key.
    pub keys: [u64; 2],
    /// The empty value.
    pub value: u64,
}

/// What a region that is not clear says.
#[derive(Debug)]
enum Verdict {
    /// A batch was refused (a reserved key or value).
    Fails(Error),
    /// Kernels set these flags (the failure bits name the operations).
    Status(Status),
}

/// The error of a region's words: a refused write batch first (its key, then its value),
/// then a lookup's reserved key, then the status flags.
fn verdict(words: &[u64], reserved: Reserved) -> Verdict {
    let key = |code: u64| Error::ReservedKey {
        index: (code >> 1) as usize,
        key: reserved.keys[(code & 1) as usize],
    };
    if words[WRITE_KEY] != u64::MAX {
        return Verdict::Fails(key(words[WRITE_KEY]));
    }
    if words[WRITE_VALUE] != u64::MAX {
        return Verdict::Fails(Error::ReservedValue {
            index: words[WRITE_VALUE] as usize,
            value: reserved.value,
        });
    }
    if words[READ_KEY] != u64::MAX {
        return Verdict::Fails(key(words[READ_KEY]));
    }
    Verdict::Status(Status(words[STATUS] as u32))
}

/// The failed operations of several batches as one sequence: batch `b`'s operation `i`
/// is `i` plus the lengths of the batches before it.
fn concat_indices(batches: &[(Vec<u32>, usize)]) -> Vec<usize> {
    let mut out = Vec::new();
    let mut offset = 0;
    for (bits, n) in batches {
        out.extend(failures::indices(bits, *n).into_iter().map(|i| i + offset));
        offset += n;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const RESERVED: Reserved = Reserved {
        keys: [0xffff_ffff, 0xffff_fffe],
        value: 0xffff_ffff,
    };

    fn with(word: usize, value: u64) -> Vec<u64> {
        let mut w = CLEAR.to_vec();
        w[word] = value;
        w
    }

    #[test]
    fn a_refused_write_comes_first_and_names_its_key() {
        let mut w = with(WRITE_KEY, 7 << 1 | 1);
        w[READ_KEY] = 2 << 1;
        w[STATUS] = Status::TABLE_FULL.0 as u64;
        match verdict(&w, RESERVED) {
            Verdict::Fails(Error::ReservedKey { index, key }) => {
                assert_eq!((index, key), (7, 0xffff_fffe))
            }
            other => panic!("{other:?}"),
        }
        match verdict(&with(WRITE_VALUE, 4), RESERVED) {
            Verdict::Fails(Error::ReservedValue { index, value }) => {
                assert_eq!((index, value), (4, 0xffff_ffff))
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_lookup_key_and_flags_are_reported_after_the_writes() {
        match verdict(&with(READ_KEY, 3 << 1), RESERVED) {
            Verdict::Fails(Error::ReservedKey { index, key }) => {
                assert_eq!((index, key), (3, 0xffff_ffff))
            }
            other => panic!("{other:?}"),
        }
        match verdict(&with(STATUS, Status::TABLE_FULL.0 as u64), RESERVED) {
            Verdict::Status(s) => assert_eq!(s, Status::TABLE_FULL),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn batches_count_on_from_each_other() {
        // Batch 0: 40 operations, 1 and 33 failed; batch 1: 5, 0 failed; batch 2: 3,
        // none; batch 3: 2, 1 failed.
        let batches = vec![
            (vec![1 << 1, 1 << 1], 40),
            (vec![1], 5),
            (vec![0], 3),
            (vec![1 << 1], 2),
        ];
        assert_eq!(concat_indices(&batches), vec![1, 33, 40, 49]);
        assert!(concat_indices(&[]).is_empty());
    }
}
