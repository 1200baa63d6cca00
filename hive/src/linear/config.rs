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
    /// Checks the configuration; the error says what is wrong.
    pub fn validate(&self) -> Result<()> {
        if !(self.max_load_factor > 0.0 && self.max_load_factor <= 1.0) {
            return Err(invalid(format!(
                "max_load_factor {} must be in (0, 1]",
                self.max_load_factor
            )));
        }
        if self.capacity == 0 || self.capacity > MAX_CAPACITY {
            return Err(invalid(format!(
                "capacity {} must be from 1 to {MAX_CAPACITY} slots",
                self.capacity
            )));
        }
        Ok(())
    }

    /// The capacity the table gets: `capacity` rounded up to a power of two, at least
    /// the group width.
    ///
    /// ```
    /// use gpuds_hive::{probe::GroupWidth, LinearConfig};
    /// let c = LinearConfig { capacity: 1000, ..LinearConfig::default() };
    /// assert_eq!(c.slots(), 1024);
    /// let c = LinearConfig { capacity: 2, group_width: GroupWidth::new(8)?, ..c };
    /// assert_eq!(c.slots(), 8);
    /// # Ok::<(), gpuds_hive::Error>(())
    /// ```
    pub fn slots(&self) -> u64 {
        self.capacity
            .max(u64::from(self.group_width.get()))
            .next_power_of_two()
    }

    /// The most occupied slots a table of `capacity` slots may hold.
    pub(crate) fn limit(&self, capacity: u64) -> u64 {
        ((capacity as f64) * self.max_load_factor).floor() as u64
    }
}

fn invalid(message: String) -> Error {
    Error::Core(gpuds_core::Error::InvalidArgument(message))
}
