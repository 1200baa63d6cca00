//! Sizes computed from a caller's numbers, checked: lengths that kernels take as 32-bit
//! counts, element counts from load factors, and device allocations whose byte counts
//! are checked before the driver sees them and whose out-of-memory errors say what they
//! were for.
//!
//! Every gpuds structure sizes its buffers through these, so that a request that cannot
//! be met is an [`Error::CapacityOverflow`] (or [`Error::OutOfMemory`]) before anything
//! is allocated or changed, never a wrapped product or a truncated length.
//!
//! ```
//! use gpuds_core::size::{slots_for_load, u32_len};
//! assert_eq!(u32_len(10, "keys")?, 10);
//! assert!(u32_len(1 << 40, "keys").is_err());
//! assert_eq!(slots_for_load(90, 0.9, 1 << 31, "keys")?, 100);
//! assert!(slots_for_load(u64::MAX, 0.9, 1 << 31, "keys").is_err());
//! # Ok::<(), gpuds_core::Error>(())
//! ```

use cudarc::driver::{CudaSlice, DeviceRepr, ValidAsZeroBits};

use crate::error::{checked_bytes, Error, Result};
use crate::gpu::Gpu;

/// `n` as the 32-bit count a kernel takes, or [`Error::CapacityOverflow`] naming `what`
/// when it has more than `u32::MAX` items (a batch is never truncated).
///
/// ```
/// assert_eq!(gpuds_core::size::u32_len(7, "keys")?, 7);
/// assert!(gpuds_core::size::u32_len(u32::MAX as usize + 1, "keys").is_err());
/// # Ok::<(), gpuds_core::Error>(())
/// ```
pub fn u32_len(n: usize, what: &str) -> Result<u32> {
    u32::try_from(n).map_err(|_| {
        Error::CapacityOverflow(format!(
            "{n} {what} in one call; at most {} (split the batch)",
            u32::MAX
        ))
    })
}

/// `n` as a host length (`usize`), or [`Error::CapacityOverflow`] naming `what`.
///
/// ```
/// assert_eq!(gpuds_core::size::to_usize(5, "slots")?, 5usize);
/// # Ok::<(), gpuds_core::Error>(())
/// ```
pub fn to_usize(n: u64, what: &str) -> Result<usize> {
    usize::try_from(n).map_err(|_| {
        Error::CapacityOverflow(format!("{n} {what} do not fit this host's address space"))
    })
}

/// The checked sum `a + b`, or [`Error::CapacityOverflow`] naming `what`.
///
/// ```
/// assert_eq!(gpuds_core::size::checked_add(2, 3, "keys")?, 5);
/// assert!(gpuds_core::size::checked_add(u64::MAX, 1, "keys").is_err());
/// # Ok::<(), gpuds_core::Error>(())
/// ```
pub fn checked_add(a: u64, b: u64, what: &str) -> Result<u64> {
    a.checked_add(b)
        .ok_or_else(|| Error::CapacityOverflow(format!("{a} + {b} {what} overflow 64 bits")))
}

/// The checked product `a * b`, or [`Error::CapacityOverflow`] naming `what`.
///
/// ```
/// assert_eq!(gpuds_core::size::checked_mul(4, 3, "slots")?, 12);
/// assert!(gpuds_core::size::checked_mul(1 << 32, 1 << 32, "slots").is_err());
/// # Ok::<(), gpuds_core::Error>(())
/// ```
pub fn checked_mul(a: u64, b: u64, what: &str) -> Result<u64> {
    a.checked_mul(b)
        .ok_or_else(|| Error::CapacityOverflow(format!("{a} x {b} {what} overflow 64 bits")))
}

/// The least whole number of slots that holds `count` items at load factor `load`
/// (`⌈count / load⌉`, and never fewer than `count`), or [`Error::CapacityOverflow`]
/// naming `what` when that passes `limit`. `load` must be in (0, 1] (configurations check
/// it); anything else is treated as 1.
///
/// A result the float division rounds below `count / load` is raised until
/// `⌊slots · load⌋ >= count` holds in the float arithmetic the structures use to check
/// their load.
///
/// ```
/// use gpuds_core::size::slots_for_load;
/// assert_eq!(slots_for_load(0, 0.5, 100, "keys")?, 0);
/// assert_eq!(slots_for_load(10, 0.5, 100, "keys")?, 20);
/// assert!(slots_for_load(60, 0.5, 100, "keys").is_err());
/// # Ok::<(), gpuds_core::Error>(())
/// ```
pub fn slots_for_load(count: u64, load: f64, limit: u64, what: &str) -> Result<u64> {
    let load = if load > 0.0 && load <= 1.0 { load } else { 1.0 };
    let too_many = || {
        Error::CapacityOverflow(format!(
            "{count} {what} at load factor {load} need more than {limit} slots"
        ))
    };
    // At load <= 1 at least `count` slots are needed: larger counts fail before any
    // float arithmetic loses precision.
    if count > limit {
        return Err(too_many());
    }
    let wanted = (count as f64 / load).ceil();
    if wanted > limit as f64 {
        return Err(too_many());
    }
    let mut slots = (wanted as u64).max(count);
    // A rounding shortfall is a few units in the last place: steps of at least one unit
    // in the last place of `slots` close it in a few rounds (capped, never a hang).
    for _ in 0..64 {
        if slots > limit {
            break;
        }
        if ((slots as f64) * load).floor() >= count as f64 {
            return Ok(slots);
        }
        slots = slots.saturating_add((slots >> 52).max(1));
    }
    Err(too_many())
}

impl Gpu {
    /// `len` uninitialised elements on the device (stream-ordered), for `what`: the byte
    /// count is checked first ([`Error::CapacityOverflow`]; `len` must be at least 1) and
    /// the driver's out-of-memory error comes back as [`Error::OutOfMemory`] naming
    /// `what`.
    ///
    /// # Safety
    /// The memory is uninitialised: the caller writes every element before it is read
    /// (as for cudarc's `CudaStream::alloc`).
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// // SAFETY: filled right below.
    /// let mut slots = unsafe { gpu.alloc_uninit::<u64>(1 << 20, "the table") }?;
    /// gpuds_core::primitives::fill(&gpu, &mut slots, u64::MAX)?;
    /// assert!(matches!(
    ///     unsafe { gpu.alloc_uninit::<u64>(1 << 50, "the table") },
    ///     Err(gpuds_core::Error::OutOfMemory { .. })
    /// ));
    /// # Ok::<(), gpuds_core::Error>(())
    /// ```
    pub unsafe fn alloc_uninit<T: DeviceRepr>(
        &self,
        len: usize,
        what: &str,
    ) -> Result<CudaSlice<T>> {
        let bytes = self.allocation_bytes::<T>(len, what)?;
        // SAFETY: the caller initialises the elements before reading them; the byte count
        // fits usize (checked above), so cudarc's own product cannot overflow.
        unsafe { self.stream().alloc::<T>(len) }
            .map_err(|e| Error::from(e).out_of_memory(what, bytes))
    }

    /// The bytes of `len` elements of `T` for `what`: [`Error::InvalidArgument`] for 0
    /// (the driver refuses empty allocations), [`Error::CapacityOverflow`] when they
    /// overflow, [`Error::OutOfMemory`] at once when they pass the device's whole memory
    /// (the driver is not asked: its error for absurd sizes is not always
    /// out-of-memory).
    fn allocation_bytes<T>(&self, len: usize, what: &str) -> Result<u64> {
        if len == 0 {
            return Err(Error::InvalidArgument(format!(
                "{what}: an allocation needs at least one element"
            )));
        }
        let bytes = checked_bytes::<T>(len as u64, what)?;
        to_usize(bytes, "bytes")?;
        if bytes > self.info().total_memory as u64 {
            return Err(Error::OutOfMemory {
                what: what.to_string(),
                bytes,
            });
        }
        self.charge_allocation(bytes, what)?;
        Ok(bytes)
    }

    /// `len` zeroed elements on the device (stream-ordered), for `what`, with the checks
    /// and the out-of-memory mapping of [`alloc_uninit`](Self::alloc_uninit).
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let counts = gpu.alloc_zeroed::<u32>(1000, "the counts")?;
    /// assert_eq!(gpu.stream().clone_dtoh(&counts)?, vec![0; 1000]);
    /// # Ok::<(), gpuds_core::Error>(())
    /// ```
    pub fn alloc_zeroed<T: DeviceRepr + ValidAsZeroBits>(
        &self,
        len: usize,
        what: &str,
    ) -> Result<CudaSlice<T>> {
        let bytes = self.allocation_bytes::<T>(len, what)?;
        self.stream()
            .alloc_zeros::<T>(len)
            .map_err(|e| Error::from(e).out_of_memory(what, bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn overflow<T: std::fmt::Debug>(r: Result<T>) -> bool {
        matches!(r, Err(Error::CapacityOverflow(_)))
    }

    #[test]
    fn lengths_past_u32_are_refused() {
        assert_eq!(u32_len(0, "keys").unwrap(), 0);
        assert_eq!(u32_len(u32::MAX as usize, "keys").unwrap(), u32::MAX);
        assert!(overflow(u32_len(u32::MAX as usize + 1, "keys")));
        assert!(overflow(u32_len(usize::MAX, "keys")));
    }

    #[test]
    fn loads_round_up_and_stop_at_the_limit() {
        assert_eq!(slots_for_load(9, 0.9, 1 << 31, "keys").unwrap(), 10);
        assert_eq!(slots_for_load(1, 1.0, 1, "keys").unwrap(), 1);
        assert!(overflow(slots_for_load(2, 1.0, 1, "keys")));
        assert!(overflow(slots_for_load(1 << 31, 0.9, 1 << 31, "keys")));
        for count in [u64::MAX, u64::MAX - 50, 1 << 63, (1 << 39) + 1] {
            assert!(overflow(slots_for_load(count, 0.5, 1 << 40, "keys")));
        }
        // A bad load factor is treated as 1, never as a division by zero.
        assert_eq!(slots_for_load(5, 0.0, 100, "keys").unwrap(), 5);
        assert_eq!(slots_for_load(5, f64::NAN, 100, "keys").unwrap(), 5);
    }

    proptest! {
        #[test]
        fn slots_hold_the_count_at_the_load(
            count in prop_oneof![0u64..1 << 20, 0u64..1 << 52, Just(u64::MAX)],
            load in 0.01f64..=1.0,
            limit in prop_oneof![Just(1u64 << 31), Just(1u64 << 52), 0u64..1 << 20],
        ) {
            match slots_for_load(count, load, limit, "keys") {
                Ok(slots) => {
                    prop_assert!(slots <= limit);
                    prop_assert!(slots >= count);
                    prop_assert!(((slots as f64) * load).floor() >= count as f64);
                }
                Err(Error::CapacityOverflow(_)) => {
                    // The limit itself cannot hold the count at this load.
                    prop_assert!(
                        count > limit
                            || ((limit as f64) * load).floor() < count as f64
                            || (count as f64 / load).ceil() > limit as f64
                    );
                }
                Err(e) => prop_assert!(false, "unexpected error {e}"),
            }
        }

        #[test]
        fn sums_and_products_are_exact_or_refused(a in any::<u64>(), b in any::<u64>()) {
            match checked_add(a, b, "items") {
                Ok(s) => prop_assert_eq!(u128::from(s), u128::from(a) + u128::from(b)),
                Err(_) => prop_assert!(u128::from(a) + u128::from(b) > u128::from(u64::MAX)),
            }
            match checked_mul(a, b, "items") {
                Ok(p) => prop_assert_eq!(u128::from(p), u128::from(a) * u128::from(b)),
                Err(_) => prop_assert!(u128::from(a) * u128::from(b) > u128::from(u64::MAX)),
            }
        }
    }
}
