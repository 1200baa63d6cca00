//! Status words: how kernels report problems without trapping or hanging.
//!
//! # The protocol
//!
//! 1. Every structure owns a [`StatusWord`]: one `u32` in device memory, zero when all
//!    is well. Kernels receive a pointer to it.
//! 2. A kernel that cannot complete an operation (allocator exhausted, retry cap reached,
//!    a reserved key, a full stash) sets the matching flag with
//!    `gpuds::status::report(word, flag)` (an atomic OR, see `gpuds/core/status.cuh`)
//!    and ends that one operation. It never traps, asserts or loops without bound.
//! 3. The host reads and clears the word ([`StatusWord::take`]) at a point where it
//!    synchronizes anyway (copying results back, the end of a batch), and turns a
//!    non-zero word into [`Error::Status`]. Documentation of each
//!    operation says what a flag means for the batch (which operations took effect).
//!
//! Bits 0–15 are shared by all structures ([`Status`]'s constants); bits 16–31 are the
//! owning structure's own, named by that crate.

use cudarc::driver::CudaSlice;

use crate::error::{Error, Result};
use crate::gpu::Gpu;

/// A set of status flags, as read from a device status word.
///
/// # Examples
/// ```
/// use gpuds_core::Status;
/// let s = Status::POOL_EXHAUSTED | Status::RETRY_LIMIT;
/// assert!(s.contains(Status::RETRY_LIMIT));
/// assert_eq!(s.to_string(), "pool exhausted, retry limit reached");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(transparent)]
pub struct Status(pub u32);

impl Status {
    /// No flag set.
    pub const OK: Status = Status(0);
    /// An allocator had no free unit for an operation.
    pub const POOL_EXHAUSTED: Status = Status(1 << 0);
    /// A bounded retry loop reached its cap (heavy contention, or a bug).
    pub const RETRY_LIMIT: Status = Status(1 << 1);
    /// A reserved (sentinel) key reached a kernel.
    pub const RESERVED_KEY: Status = Status(1 << 2);
    /// An overflow area (stash) had no room.
    pub const STASH_FULL: Status = Status(1 << 3);
    /// A probe sequence visited every slot without finding room.
    pub const TABLE_FULL: Status = Status(1 << 4);
    /// An index or address outside its valid range was seen.
    pub const OUT_OF_BOUNDS: Status = Status(1 << 5);
    /// A device-side invariant check failed.
    pub const CORRUPTED: Status = Status(1 << 6);
    /// The lowest bit a structure may define for itself.
    pub const FIRST_STRUCTURE_BIT: u32 = 1 << 16;

    const NAMES: [(Status, &'static str); 7] = [
        (Status::POOL_EXHAUSTED, "pool exhausted"),
        (Status::RETRY_LIMIT, "retry limit reached"),
        (Status::RESERVED_KEY, "reserved key"),
        (Status::STASH_FULL, "stash full"),
        (Status::TABLE_FULL, "table full"),
        (Status::OUT_OF_BOUNDS, "out of bounds"),
        (Status::CORRUPTED, "corrupted structure"),
    ];

    /// The raw bits.
    ///
    /// ```
    /// assert_eq!(gpuds_core::Status::RETRY_LIMIT.bits(), 2);
    /// ```
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// True when no flag is set.
    ///
    /// ```
    /// assert!(gpuds_core::Status::OK.is_ok());
    /// assert!(!gpuds_core::Status::STASH_FULL.is_ok());
    /// ```
    pub const fn is_ok(self) -> bool {
        self.0 == 0
    }

    /// True when every flag of `other` is set here.
    ///
    /// ```
    /// use gpuds_core::Status;
    /// assert!((Status::TABLE_FULL | Status::CORRUPTED).contains(Status::CORRUPTED));
    /// ```
    pub const fn contains(self, other: Status) -> bool {
        self.0 & other.0 == other.0
    }

    /// `Ok` when no flag is set, else [`Error::Status`].
    ///
    /// ```
    /// use gpuds_core::{Error, Status};
    /// assert!(Status::OK.into_result().is_ok());
    /// assert!(matches!(Status::POOL_EXHAUSTED.into_result(), Err(Error::Status(_))));
    /// ```
    pub fn into_result(self) -> Result<()> {
        if self.is_ok() {
            Ok(())
        } else {
            Err(Error::Status(self))
        }
    }
}

impl std::ops::BitOr for Status {
    type Output = Status;
    fn bitor(self, rhs: Status) -> Status {
        Status(self.0 | rhs.0)
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.is_ok() {
            return f.write_str("ok");
        }
        let mut parts: Vec<String> = Self::NAMES
            .iter()
            .filter(|(flag, _)| self.contains(*flag))
            .map(|(_, name)| (*name).to_string())
            .collect();
        let own = self.0 >> 16;
        if own != 0 {
            parts.push(format!("structure flags {own:#x}"));
        }
        let unknown = self.0 & 0xffff & !Self::NAMES.iter().fold(0, |acc, (s, _)| acc | s.0);
        if unknown != 0 {
            parts.push(format!("unknown flags {unknown:#x}"));
        }
        f.write_str(&parts.join(", "))
    }
}

/// A device status word owned by a structure.
///
/// Pass [`StatusWord::slice_mut`] to kernels as an `unsigned*`; read it back with
/// [`StatusWord::take`] or [`StatusWord::check`] where the host synchronizes anyway.
#[derive(Debug)]
pub struct StatusWord {
    word: CudaSlice<u32>,
}

impl StatusWord {
    /// A cleared word on `gpu`'s default stream.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut status = gpuds_core::StatusWord::new(&gpu)?;
    /// assert!(status.take()?.is_ok());
    /// # Ok::<(), gpuds_core::Error>(())
    /// ```
    pub fn new(gpu: &Gpu) -> Result<Self> {
        Ok(Self {
            word: gpu.stream().alloc_zeros::<u32>(1)?,
        })
    }

    /// The device word, to pass to a kernel.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut status = gpuds_core::StatusWord::new(&gpu)?;
    /// assert_eq!(status.slice().len(), 1);
    /// # Ok::<(), gpuds_core::Error>(())
    /// ```
    pub fn slice(&self) -> &CudaSlice<u32> {
        &self.word
    }

    /// The device word, mutably, to pass to a kernel that may set flags.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut status = gpuds_core::StatusWord::new(&gpu)?;
    /// // pass to a kernel: builder.arg(status.slice_mut())
    /// let _word = status.slice_mut();
    /// # Ok::<(), gpuds_core::Error>(())
    /// ```
    pub fn slice_mut(&mut self) -> &mut CudaSlice<u32> {
        &mut self.word
    }

    /// Clears the word in stream order, without synchronizing: a call does this before its
    /// kernels run, so that it reports its own flags only.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut status = gpuds_core::StatusWord::new(&gpu)?;
    /// status.clear()?;
    /// assert!(status.take()?.is_ok());
    /// # Ok::<(), gpuds_core::Error>(())
    /// ```
    pub fn clear(&mut self) -> Result<()> {
        let stream = self.word.stream().clone();
        stream.memset_zeros(&mut self.word)?;
        Ok(())
    }

    /// Reads the flags and clears the word. Synchronizes the word's stream.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut status = gpuds_core::StatusWord::new(&gpu)?;
    /// // ... launch kernels that may report ...
    /// let flags = status.take()?;
    /// if flags.contains(gpuds_core::Status::POOL_EXHAUSTED) {
    ///     // grow the pool and retry the batch
    /// }
    /// # Ok::<(), gpuds_core::Error>(())
    /// ```
    pub fn take(&mut self) -> Result<Status> {
        let stream = self.word.stream().clone();
        let bits = stream.clone_dtoh(&self.word)?;
        let status = Status(bits.first().copied().unwrap_or(0));
        if !status.is_ok() {
            stream.memset_zeros(&mut self.word)?;
        }
        Ok(status)
    }

    /// Reads and clears the word; `Err(Error::Status)` when any flag was set.
    /// Synchronizes the word's stream.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut status = gpuds_core::StatusWord::new(&gpu)?;
    /// // ... launch kernels that may report ...
    /// status.check()?; // Err(Error::Status(flags)) if any flag was set
    /// # Ok::<(), gpuds_core::Error>(())
    /// ```
    pub fn check(&mut self) -> Result<()> {
        self.take()?.into_result()
    }
}
