//! [`SlabAllocConfig`]: unit size, pool sizes and memory layout.

use crate::address::{BLOCK_BITS, MAX_BLOCKS, UNITS_PER_BLOCK};
use crate::error::{Error, Result};

/// How the pool's memory is laid out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Layout {
    /// Light when the device supports virtual memory management, classic otherwise.
    #[default]
    Auto,
    /// SlabAlloc-light: one reserved virtual range, physical memory mapped into it as the
    /// pool grows; decode is `base + address * unit_bytes`. Fails with
    /// [`Error::Unsupported`] on a device without virtual memory management.
    Light,
    /// Classic SlabAlloc: each super block is its own allocation, decode reads the super
    /// block's base from a table. Works on every device.
    Classic,
}

/// The most units a pool may have (`max_units`): 2^22 - 1 memory blocks of 1,024 units.
pub const MAX_UNITS: u64 = MAX_BLOCKS * UNITS_PER_BLOCK as u64;

/// Configuration of a [`crate::SlabAlloc`].
///
/// # Examples
/// ```
/// use gpuds_alloc::SlabAllocConfig;
/// let config = SlabAllocConfig { unit_bytes: 64, initial_units: 1 << 20, ..Default::default() };
/// config.validate()?;
/// assert!(SlabAllocConfig { unit_bytes: 100, ..Default::default() }.validate().is_err());
/// # Ok::<(), gpuds_alloc::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlabAllocConfig {
    /// Bytes per unit: 64, 128 (default) or 256.
    pub unit_bytes: u32,
    /// Units the pool holds from the start (rounded up to whole memory blocks of 1,024
    /// units, and in the classic layout to whole super blocks).
    pub initial_units: u64,
    /// Most units the pool may grow to. The light layout reserves virtual addresses for
    /// this many units at construction (no physical memory).
    pub max_units: u64,
    /// Memory layout.
    pub layout: Layout,
    /// Classic layout only: memory blocks per super block, a power of two up to 16,384.
    /// The pool grows by whole super blocks.
    pub blocks_per_super_block: u32,
    /// How many times one allocation may move its warp's resident memory block before it
    /// gives up with `POOL_EXHAUSTED` (1 to 65,536).
    pub max_resident_changes: u32,
}

impl Default for SlabAllocConfig {
    fn default() -> Self {
        Self {
            unit_bytes: 128,
            initial_units: 1 << 16,
            max_units: 1 << 28,
            layout: Layout::Auto,
            blocks_per_super_block: 256,
            max_resident_changes: 256,
        }
    }
}

impl SlabAllocConfig {
    /// Checks every field; the error says which is wrong and why. Sizes past their
    /// limits (`max_units` past [`MAX_UNITS`], `initial_units` past `max_units`) are
    /// [`CapacityOverflow`](gpuds_core::Error::CapacityOverflow) errors, every other bad
    /// field [`Error::InvalidConfig`].
    ///
    /// ```
    /// use gpuds_alloc::SlabAllocConfig;
    /// let bad = SlabAllocConfig { initial_units: 1 << 30, max_units: 1 << 20, ..Default::default() };
    /// assert!(bad.validate().unwrap_err().to_string().contains("initial_units"));
    /// ```
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(Error::InvalidConfig(m));
        let overflow = |m: String| Err(Error::Core(gpuds_core::Error::CapacityOverflow(m)));
        if ![64, 128, 256].contains(&self.unit_bytes) {
            return bad(format!(
                "unit_bytes is {}, must be 64, 128 or 256",
                self.unit_bytes
            ));
        }
        if self.max_units == 0 {
            return bad(format!("max_units is 0, must be between 1 and {MAX_UNITS}"));
        }
        if self.max_units > MAX_UNITS {
            return overflow(format!(
                "max_units is {}, must be between 1 and {MAX_UNITS}",
                self.max_units
            ));
        }
        if self.initial_units > self.max_units {
            return overflow(format!(
                "initial_units ({}) is more than max_units ({})",
                self.initial_units, self.max_units
            ));
        }
        let per_super = self.blocks_per_super_block;
        if per_super == 0 || !per_super.is_power_of_two() || per_super > 1 << BLOCK_BITS {
            return bad(format!(
                "blocks_per_super_block is {per_super}, must be a power of two up to {}",
                1u32 << BLOCK_BITS
            ));
        }
        if self.max_resident_changes == 0 || self.max_resident_changes > 1 << 16 {
            return bad(format!(
                "max_resident_changes is {}, must be between 1 and 65536",
                self.max_resident_changes
            ));
        }
        Ok(())
    }

    /// log2 of the unit size.
    pub(crate) fn unit_shift(&self) -> u32 {
        self.unit_bytes.trailing_zeros()
    }

    /// Bytes per memory block.
    pub(crate) fn block_bytes(&self) -> u64 {
        self.unit_bytes as u64 * UNITS_PER_BLOCK as u64
    }

    /// Memory blocks needed for `units` units, capped at the maximum.
    pub(crate) fn blocks_for(&self, units: u64) -> u64 {
        units
            .div_ceil(UNITS_PER_BLOCK as u64)
            .min(self.max_blocks())
    }

    /// Most memory blocks the pool may have.
    pub(crate) fn max_blocks(&self) -> u64 {
        self.max_units
            .div_ceil(UNITS_PER_BLOCK as u64)
            .min(MAX_BLOCKS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid() {
        SlabAllocConfig::default().validate().unwrap();
    }

    #[test]
    fn every_field_is_checked() {
        let base = SlabAllocConfig::default;
        let cases = [
            (
                SlabAllocConfig {
                    unit_bytes: 32,
                    ..base()
                },
                "unit_bytes",
            ),
            (
                SlabAllocConfig {
                    max_units: 0,
                    ..base()
                },
                "max_units",
            ),
            (
                SlabAllocConfig {
                    max_units: 1 << 33,
                    ..base()
                },
                "max_units",
            ),
            (
                SlabAllocConfig {
                    initial_units: 10,
                    max_units: 5,
                    ..base()
                },
                "initial_units",
            ),
            (
                SlabAllocConfig {
                    blocks_per_super_block: 3,
                    ..base()
                },
                "blocks_per_super_block",
            ),
            (
                SlabAllocConfig {
                    blocks_per_super_block: 1 << 15,
                    ..base()
                },
                "blocks_per_super_block",
            ),
            (
                SlabAllocConfig {
                    max_resident_changes: 0,
                    ..base()
                },
                "max_resident_changes",
            ),
        ];
        for (config, field) in cases {
            let e = config.validate().unwrap_err().to_string();
            assert!(e.contains(field), "{e}");
        }
    }

    #[test]
    fn block_arithmetic() {
        let c = SlabAllocConfig {
            unit_bytes: 256,
            max_units: 5000,
            ..Default::default()
        };
        assert_eq!(c.block_bytes(), 256 * 1024);
        assert_eq!(c.blocks_for(1), 1);
        assert_eq!(c.blocks_for(1025), 2);
        assert_eq!(c.max_blocks(), 5);
        assert_eq!(c.blocks_for(1 << 20), 5);
        assert_eq!(c.unit_shift(), 8);
    }

    #[test]
    fn sizes_past_their_limits_are_overflows() {
        let overflow = |c: &SlabAllocConfig| {
            matches!(
                c.validate(),
                Err(Error::Core(gpuds_core::Error::CapacityOverflow(_)))
            )
        };
        for n in gpuds_testkit::strategy::capacity_edges() {
            let max = SlabAllocConfig {
                initial_units: 0,
                max_units: n,
                ..Default::default()
            };
            match max.validate() {
                Ok(()) => assert!((1..=MAX_UNITS).contains(&n)),
                Err(Error::InvalidConfig(_)) => assert_eq!(n, 0),
                Err(e) => assert!(n > MAX_UNITS && overflow(&max), "{n}: {e}"),
            }
            let initial = SlabAllocConfig {
                initial_units: n,
                ..Default::default()
            };
            assert_eq!(initial.validate().is_ok(), n <= initial.max_units, "{n}");
            assert!(n <= initial.max_units || overflow(&initial), "{n}");
            // Block counts never overflow, whatever the request.
            assert!(initial.blocks_for(n) <= initial.max_blocks());
        }
    }
}
