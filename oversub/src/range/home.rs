//! [`Home`]: where one inner table (or one skip-list node pool) lives between batches.

use std::sync::Arc;

use crate::error::Result;
use crate::placement::{Placement, Region};

/// The memory of one inner table: a part of a block that every inner table made by one
/// batch shares (one allocation per batch instead of one per table: pinned host
/// allocations are slow), freed with the last of them.
pub(crate) struct Home {
    pub block: Arc<Region>,
    pub offset: u64,
    pub bytes: u64,
    /// The home still holds the empty table it was made with and no cache slot holds a
    /// newer copy (tiered): a lookup or removal needs no copy of it (its range has no
    /// key), and an insert's copy into the cache is a fill with zeros on the device, not
    /// a copy over the host link.
    pub fresh: bool,
}

impl Home {
    /// The device address of the table (0 for a tiered home, reached through copies).
    pub fn device_ptr(&self) -> u64 {
        match self.block.device_ptr() {
            0 => 0,
            base => base + self.offset,
        }
    }

    /// The host address of a pinned home, else null.
    pub fn host_ptr(&self) -> *mut std::ffi::c_void {
        let base = self.block.host_ptr();
        if base.is_null() {
            base
        } else {
            // SAFETY: offset + bytes lie inside the block.
            unsafe { base.cast::<u8>().add(self.offset as usize).cast() }
        }
    }

    /// The table's words. Synchronizes.
    pub fn to_host_words(&self) -> Result<Vec<u64>> {
        self.words(self.bytes)
    }

    /// Its first `bytes` bytes (a multiple of 8, at most its size) as words. Synchronizes.
    pub fn words(&self, bytes: u64) -> Result<Vec<u64>> {
        if bytes > self.bytes {
            return Err(crate::error::Error::Invalid(format!(
                "{bytes} bytes pass a home of {}",
                self.bytes
            )));
        }
        self.block.words_at(self.offset, bytes)
    }

    /// Where the block lives.
    pub fn placement(&self) -> Placement {
        self.block.placement()
    }
}
