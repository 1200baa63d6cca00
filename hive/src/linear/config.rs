//! [`LinearConfig`]: how a [`LinearProbeMap`](super::LinearProbeMap) probes, deletes and
//! grows.

use crate::error::{Error, Result};
use crate::probe::{GroupWidth, Probing};

/// How erased pairs are marked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Deletion {
    /// Erase writes the empty value and the key keeps its slot (Farrell's table): safe
    /// with any mix of concurrent inserts, removes and lookups. An erased key's slot is
    /// reused only when the same key comes back, so probe lengths do not shrink until a
    /// [`rehash`](super::LinearProbeMap::rehash).
    #[default]
    ValueTombstones,
    /// Erase writes an erased-key sentinel and inserts reuse erased slots (Farrell's
    /// "reusing tombstoned slots"): faster churn, but correct only when inserts and
    /// removes never run in the same batch. `apply` rejects batches that mix them.
    KeyTombstones,
}

impl Deletion {
    pub(crate) fn suffix(self) -> &'static str {
        match self {
            Deletion::ValueTombstones => "vt",
            Deletion::KeyTombstones => "kt",
        }
    }
}

/// What an insert batch does when it would pass the maximum load factor.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum WhenFull {
    /// Rebuild into a larger table on the GPU first (power-of-two capacity large enough
    /// for the live pairs and the batch at the maximum load factor).
    #[default]
    Grow,
    /// Return [`Error::LoadFactor`] and apply nothing.
    Fail,
}

/// The configuration of a [`LinearProbeMap`](super::LinearProbeMap).
///
/// # Examples
/// ```
/// use gpuds_hive::{probe::{GroupWidth, Probing}, Deletion, LinearConfig, WhenFull};
/// let config = LinearConfig {
///     capacity: 1 << 20,
///     probing: Probing::DoubleHashing,
///     group_width: GroupWidth::new(4)?,
///     deletion: Deletion::KeyTombstones,
///     max_load_factor: 0.8,
///     when_full: WhenFull::Fail,
/// };
/// config.validate()?;
/// assert!(LinearConfig { max_load_factor: 1.5, ..LinearConfig::default() }.validate().is_err());
/// # Ok::<(), gpuds_hive::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinearConfig {
    /// Slots wanted; rounded up to a power of two, at least the group width.
    pub capacity: u64,
    /// The probing policy.
    pub probing: Probing,
    /// Lanes per operation. Width 1 reads one 8-byte slot per probe (best at low load);
    /// wider groups read a window of consecutive slots per probe.
    pub group_width: GroupWidth,
    /// How pairs are erased.
    pub deletion: Deletion,
    /// The most occupied slots (live pairs and tombstones) per slot an insert batch may
    /// leave, in (0, 1].
    pub max_load_factor: f64,
    /// What an insert batch does when it would pass `max_load_factor`.
    pub when_full: WhenFull,
}

impl Default for LinearConfig {
    fn default() -> Self {
        LinearConfig {
            capacity: 1 << 10,
            probing: Probing::Linear,
            group_width: GroupWidth::ONE,
            deletion: Deletion::ValueTombstones,
            max_load_factor: 0.9,
            when_full: WhenFull::Grow,
        }
    }
}

/// The largest capacity a table may have (slots): 2^31 windows of one slot.
pub const MAX_CAPACITY: u64 = 1 << 31;

impl LinearConfig {
    /// Checks the configuration; the error says what is wrong: a capacity of 0 or a bad
    /// load factor is an invalid argument, a capacity past [`MAX_CAPACITY`] a
    /// [`CapacityOverflow`](gpuds_core::Error::CapacityOverflow).
    ///
    /// ```
    /// use gpuds_hive::{Error, LinearConfig};
    /// let huge = LinearConfig { capacity: u64::MAX, ..LinearConfig::default() };
    /// assert!(matches!(huge.validate(), Err(Error::Core(gpuds_core::Error::CapacityOverflow(_)))));
    /// ```
    pub fn validate(&self) -> Result<()> {
        if !(self.max_load_factor > 0.0 && self.max_load_factor <= 1.0) {
            return Err(invalid(format!(
                "max_load_factor {} must be in (0, 1]",
                self.max_load_factor
            )));
        }
        if self.capacity == 0 {
            return Err(invalid(format!(
                "capacity 0: a table has from 1 to {MAX_CAPACITY} slots"
            )));
        }
        self.slots()?;
        Ok(())
    }

    /// The capacity the table gets: `capacity` rounded up to a power of two, at least
    /// the group width; [`CapacityOverflow`](gpuds_core::Error::CapacityOverflow) past
    /// [`MAX_CAPACITY`].
    ///
    /// ```
    /// use gpuds_hive::{probe::GroupWidth, LinearConfig};
    /// let c = LinearConfig { capacity: 1000, ..LinearConfig::default() };
    /// assert_eq!(c.slots()?, 1024);
    /// let c = LinearConfig { capacity: 2, group_width: GroupWidth::new(8)?, ..c };
    /// assert_eq!(c.slots()?, 8);
    /// assert!(LinearConfig { capacity: (1 << 31) + 1, ..c }.slots().is_err());
    /// # Ok::<(), gpuds_hive::Error>(())
    /// ```
    pub fn slots(&self) -> Result<u64> {
        if self.capacity > MAX_CAPACITY {
            return Err(overflow(format!(
                "capacity {} passes the largest table, {MAX_CAPACITY} slots",
                self.capacity
            )));
        }
        // At most 2^31 rounded up to a power of two: no overflow.
        Ok(self
            .capacity
            .max(u64::from(self.group_width.get()))
            .next_power_of_two())
    }

    /// The most occupied slots a table of `capacity` slots may hold.
    pub(crate) fn limit(&self, capacity: u64) -> u64 {
        ((capacity as f64) * self.max_load_factor).floor() as u64
    }

    /// The least power-of-two capacity (at least the group width) holding `keys` keys
    /// within the maximum load factor, or
    /// [`CapacityOverflow`](gpuds_core::Error::CapacityOverflow) past [`MAX_CAPACITY`].
    pub(crate) fn slots_for(&self, keys: u64) -> Result<u64> {
        let slots =
            gpuds_core::size::slots_for_load(keys, self.max_load_factor, MAX_CAPACITY, "keys")?;
        // A power of two at most MAX_CAPACITY (itself one): no overflow, and the limit
        // only grows with the capacity.
        Ok(slots
            .max(u64::from(self.group_width.get()))
            .next_power_of_two())
    }

    /// What [`reserve`](super::LinearProbeMap::reserve) of `additional` keys does to a
    /// table of `capacity` slots holding `live` pairs among `occupied` occupied slots:
    /// `None` when they fit as it is, else the capacity to rebuild into (never less than
    /// `capacity`; rebuilding drops the tombstones, so it holds `live + additional` keys
    /// within the load factor). A request no table can meet is a
    /// [`CapacityOverflow`](gpuds_core::Error::CapacityOverflow), decided before anything
    /// changes.
    pub(crate) fn reserve_target(
        &self,
        capacity: u64,
        occupied: u64,
        live: u64,
        additional: u64,
    ) -> Result<Option<u64>> {
        let wanted = gpuds_core::size::checked_add(occupied, additional, "occupied and new keys")?;
        if wanted <= self.limit(capacity) {
            return Ok(None);
        }
        let keys = gpuds_core::size::checked_add(live, additional, "live and new keys")?;
        Ok(Some(self.slots_for(keys)?.max(capacity)))
    }
}

fn invalid(message: String) -> Error {
    Error::Core(gpuds_core::Error::InvalidArgument(message))
}

fn overflow(message: String) -> Error {
    Error::Core(gpuds_core::Error::CapacityOverflow(message))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::GroupWidth;
    use gpuds_testkit::strategy::{capacities, capacity_edges};
    use proptest::prelude::*;

    fn is_overflow(e: &Error) -> bool {
        matches!(e, Error::Core(gpuds_core::Error::CapacityOverflow(_)))
    }

    fn config(capacity: u64, width: u32, load: f64) -> LinearConfig {
        LinearConfig {
            capacity,
            group_width: GroupWidth::new(width).unwrap(),
            max_load_factor: load,
            ..LinearConfig::default()
        }
    }

    #[test]
    fn capacities_validate_or_overflow() {
        for capacity in capacity_edges() {
            for width in [1, 8, 32] {
                let c = config(capacity, width, 0.9);
                match (c.validate(), c.slots()) {
                    (Ok(()), Ok(slots)) => {
                        assert!(slots >= capacity && slots.is_power_of_two());
                        assert!(slots <= MAX_CAPACITY && slots >= u64::from(width));
                    }
                    (Err(e), _) if capacity == 0 => assert!(!is_overflow(&e), "{e}"),
                    (Err(e), Err(f)) => {
                        assert!(capacity > MAX_CAPACITY);
                        assert!(is_overflow(&e) && is_overflow(&f), "{e} / {f}");
                    }
                    other => panic!("capacity {capacity}: {other:?}"),
                }
            }
        }
    }

    /// The issue's cases: `reserve(n)` for huge n on tables of 1,024 slots (empty or
    /// holding 500 keys) overflowed `occupied + additional` and the rounding, and
    /// rebuilt into 128 slots or 1.
    #[test]
    fn huge_reserves_overflow_instead_of_shrinking() {
        let c = config(1024, 1, 0.9);
        for additional in [u64::MAX, 1 << 63, u64::MAX - 50, u64::MAX - 600, 1 << 40] {
            for (occupied, live) in [(0, 0), (500, 500), (900, 10)] {
                let e = c
                    .reserve_target(1024, occupied, live, additional)
                    .unwrap_err();
                assert!(is_overflow(&e), "{additional}: {e}");
            }
        }
        assert_eq!(c.reserve_target(1024, 0, 0, 100).unwrap(), None);
        assert_eq!(c.reserve_target(1024, 900, 900, 100).unwrap(), Some(2048));
        // Tombstones only: rebuilt at the same size, never smaller.
        assert_eq!(c.reserve_target(1024, 921, 0, 1).unwrap(), Some(1024));
    }

    proptest! {
        #[test]
        fn reserve_never_shrinks_and_always_fits(
            capacity_log in 0u32..=31,
            width_log in 0u32..=5,
            load in prop_oneof![Just(1.0f64), Just(0.9), 0.05f64..=1.0],
            occupied in capacities(),
            live in capacities(),
            additional in capacities(),
        ) {
            let width = 1u32 << width_log;
            let capacity = (1u64 << capacity_log).max(u64::from(width));
            let c = config(capacity, width, load);
            // A table's occupancy is at most its capacity, its live pairs at most that.
            let occupied = occupied % (capacity + 1);
            let live = live % (occupied + 1);
            match c.reserve_target(capacity, occupied, live, additional) {
                Ok(None) => {
                    prop_assert!(occupied + additional <= c.limit(capacity));
                }
                Ok(Some(slots)) => {
                    prop_assert!(slots >= capacity);
                    prop_assert!(slots.is_power_of_two() && slots <= MAX_CAPACITY);
                    prop_assert!(c.limit(slots) >= live + additional);
                }
                Err(e) => {
                    prop_assert!(is_overflow(&e), "{}", e);
                    // No table within the limit holds them.
                    let keys = u128::from(live) + u128::from(additional);
                    prop_assert!(keys > u128::from(c.limit(MAX_CAPACITY)));
                }
            }
        }
    }
}
