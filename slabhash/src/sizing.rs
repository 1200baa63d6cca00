//! How big a table's slab pool must be: the default pool for an expected length, the
//! bound a batch of claims can need, and the slabs a number of claimed slots fills
//! (every layout: `slots` entries per slab).

use gpuds_alloc::SlabAllocConfig;

use crate::error::Result;

/// The default slab pool for about `expected_len` elements at `slots` per slab: room
/// for all of them from the start (at least 2^14 slabs), a maximum of at least the
/// default's. More slabs than any pool holds
/// ([`MAX_UNITS`](gpuds_alloc::MAX_UNITS)) is a
/// [`CapacityOverflow`](gpuds_core::Error::CapacityOverflow).
pub(crate) fn default_alloc(expected_len: usize, slots: u32) -> Result<SlabAllocConfig> {
    let expected_slabs = (expected_len as u64).div_ceil(u64::from(slots.max(1)));
    if expected_slabs > gpuds_alloc::MAX_UNITS {
        return Err(gpuds_core::Error::CapacityOverflow(format!(
            "{expected_len} elements need {expected_slabs} slabs of {slots}; a pool holds \
             at most {}",
            gpuds_alloc::MAX_UNITS
        ))
        .into());
    }
    let default = SlabAllocConfig::default();
    Ok(SlabAllocConfig {
        initial_units: expected_slabs.max(1 << 14),
        max_units: default.max_units.max(expected_slabs),
        ..default
    })
}

/// The most slabs beyond the base slabs a table with `claimed` claimed slots can need
/// after `n` more claims, while `warps` warps run: every slab of a list but the last is
/// full, so there are at most (claimed + n) / slots of them, and each resident warp may
/// hold one more for a moment (a slab it allocated but lost the race to link).
/// Saturates rather than overflowing: it is a bound to grow towards, capped by the
/// pool's maximum.
pub(crate) fn slab_bound(claimed: u64, n: u64, slots: u64, warps: u64) -> u64 {
    claimed
        .saturating_add(n)
        .div_ceil(slots.max(1))
        .saturating_add(warps)
}

/// Pool slabs (beyond the `buckets` base slabs) that `claimed + n` claimed slots need at
/// least, every slab full at `slots` per slab, or
/// [`CapacityOverflow`](gpuds_core::Error::CapacityOverflow).
pub(crate) fn pool_slabs_for(claimed: u64, n: u64, slots: u64, buckets: u32) -> Result<u64> {
    let total = gpuds_core::size::checked_add(claimed, n, "claimed and new slots")?;
    Ok(total
        .div_ceil(slots.max(1))
        .saturating_sub(u64::from(buckets)))
}

#[cfg(test)]
mod tests {
    use super::{default_alloc, pool_slabs_for, slab_bound};
    use crate::error::Error;
    use gpuds_testkit::strategy::capacity_edges;

    #[test]
    fn bounds_saturate_and_slab_counts_are_checked() {
        for claimed in [0u64, 1, 1 << 32, u64::MAX] {
            for n in capacity_edges() {
                let bound = slab_bound(claimed, n, 15, 8448);
                let exact = (u128::from(claimed) + u128::from(n)).div_ceil(15) + 8448;
                let sum = (u128::from(claimed) + u128::from(n)).min(u128::from(u64::MAX));
                assert_eq!(
                    u128::from(bound),
                    sum.div_ceil(15) + 8448,
                    "{claimed} + {n}"
                );
                assert!(u128::from(bound) <= exact);
                match pool_slabs_for(claimed, n, 15, 64) {
                    Ok(s) => assert_eq!(u128::from(s), (exact - 8448).saturating_sub(64)),
                    Err(Error::Core(gpuds_core::Error::CapacityOverflow(_))) => {
                        assert!(u128::from(claimed) + u128::from(n) > u128::from(u64::MAX))
                    }
                    Err(e) => panic!("{claimed} + {n}: {e}"),
                }
            }
        }
    }

    #[test]
    fn default_pools_hold_the_expected_length_or_refuse_it() {
        for len in capacity_edges() {
            let Ok(len) = usize::try_from(len) else {
                continue;
            };
            for slots in [7u32, 10, 15, 30] {
                match default_alloc(len, slots) {
                    Ok(config) => {
                        config.validate().unwrap();
                        assert!(config.initial_units * u64::from(slots) >= len as u64);
                    }
                    Err(Error::Core(gpuds_core::Error::CapacityOverflow(_))) => {
                        assert!((len as u64).div_ceil(u64::from(slots)) > gpuds_alloc::MAX_UNITS)
                    }
                    Err(e) => panic!("{len}: {e}"),
                }
            }
        }
    }

    #[test]
    fn the_bound_covers_full_lists_and_racing_warps() {
        // 15 pairs per slab: 30 claimed slots in one list are the base slab and two more
        // at most; the bound never undercounts.
        assert_eq!(slab_bound(0, 30, 15, 0), 2);
        assert_eq!(slab_bound(10, 21, 15, 0), 3);
        assert_eq!(slab_bound(0, 0, 30, 8448), 8448);
        for claimed in [0u64, 1, 14, 15, 16, 1 << 20] {
            for n in [0u64, 1, 15, 1000] {
                let b = slab_bound(claimed, n, 15, 0);
                assert!(b * 15 >= claimed + n);
            }
        }
    }
}
