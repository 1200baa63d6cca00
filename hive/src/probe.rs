//! The probing core: probing policies, cooperative-group widths and table geometry,
//! shared by [`LinearProbeMap`](crate::LinearProbeMap) and by other gpuds crates whose
//! tables probe the same way (the oversubscription tables).
//!
//! A table of `capacity` slots is cut into `windows` aligned windows of `width`
//! consecutive slots; one operation is carried out by `width` lanes (a cooperative
//! group), each reading one slot of the current window. The [`Probing`] policy says
//! which windows a key visits, in order. The device side is
//! `#include <gpuds/hive/probing.cuh>`; this module is its host twin, so that host code
//! (validation, statistics) walks exactly the sequences the kernels walk.
//!
//! Every probe sequence visits every window within `windows` steps: linear probing
//! trivially, double hashing because its step is coprime with the window count (odd for a
//! power-of-two count; any step for a prime count, the only other counts
//! [`Geometry::new`] accepts for double hashing). This is the oversubscription paper's
//! rule of a group size coprime with the table size (Patel et al., §3.1), stated on
//! windows. A probe that has seen every window has seen the whole table and stops.
//!
//! # Examples
//! ```
//! use gpuds_hive::probe::{Geometry, GroupWidth, Probing, ProbeSequence};
//! let width = GroupWidth::new(4)?;
//! let geometry = Geometry::new(1 << 10, width, Probing::DoubleHashing)?;
//! assert_eq!(geometry.windows, 256);
//! // A key's sequence visits all 256 windows before it repeats.
//! let mut seen = std::collections::HashSet::new();
//! let mut seq = ProbeSequence::new(42u32, geometry, Probing::DoubleHashing);
//! for _ in 0..256 {
//!     seen.insert(seq.window());
//!     seq.next();
//! }
//! assert_eq!(seen.len(), 256);
//! # Ok::<(), gpuds_hive::Error>(())
//! ```

use gpuds_core::hash::{murmur3_32, murmur3_64};
use gpuds_core::DeviceKey;

use crate::error::{Error, Result};

/// The order in which a key visits the windows of a table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Probing {
    /// Consecutive windows (`gpuds::probing::linear`): the best locality, but clusters
    /// grow at high load.
    #[default]
    Linear,
    /// Windows `w, w+s, w+2s, ...` with a per-key step `s` from a second hash
    /// (`gpuds::probing::double_hashing`): no primary clustering.
    DoubleHashing,
}

impl Probing {
    /// The C++ policy type of `gpuds/hive/probing.cuh`.
    ///
    /// ```
    /// assert_eq!(gpuds_hive::probe::Probing::Linear.cuda_type(), "gpuds::probing::linear");
    /// ```
    pub fn cuda_type(self) -> &'static str {
        match self {
            Probing::Linear => "gpuds::probing::linear",
            Probing::DoubleHashing => "gpuds::probing::double_hashing",
        }
    }

    /// A short name for kernel symbols.
    ///
    /// ```
    /// assert_eq!(gpuds_hive::probe::Probing::DoubleHashing.suffix(), "dh");
    /// ```
    pub fn suffix(self) -> &'static str {
        match self {
            Probing::Linear => "lin",
            Probing::DoubleHashing => "dh",
        }
    }
}

/// Lanes per operation: a power of two from 1 to 32.
///
/// ```
/// use gpuds_hive::probe::GroupWidth;
/// assert_eq!(GroupWidth::new(8)?.get(), 8);
/// assert!(GroupWidth::new(3).is_err());
/// assert!(GroupWidth::new(64).is_err());
/// # Ok::<(), gpuds_hive::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GroupWidth(u32);

impl GroupWidth {
    /// One lane per operation.
    pub const ONE: GroupWidth = GroupWidth(1);

    /// A width of `lanes`, which must be a power of two from 1 to 32.
    pub fn new(lanes: u32) -> Result<Self> {
        if lanes == 0 || lanes > 32 || !lanes.is_power_of_two() {
            return Err(invalid(format!(
                "group width {lanes} must be a power of two from 1 to 32"
            )));
        }
        Ok(GroupWidth(lanes))
    }

    /// The number of lanes.
    pub fn get(self) -> u32 {
        self.0
    }
}

impl Default for GroupWidth {
    fn default() -> Self {
        GroupWidth::ONE
    }
}

/// The largest window count: keeps the device's 32-bit index arithmetic exact.
pub const MAX_WINDOWS: u64 = 1 << 31;

/// The shape of a table as a probe sees it: `#[repr(C)]` twin of
/// `gpuds::probing::geometry`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Geometry {
    /// Number of windows.
    pub windows: u32,
    /// `windows - 1` when `windows` is a power of two, else 0.
    pub mask: u32,
}

impl Geometry {
    /// The geometry of `capacity` slots probed by groups of `width` lanes with
    /// `probing`. The capacity must be a positive multiple of the width with at most
    /// [`MAX_WINDOWS`] windows; with double hashing the window count must be a power of
    /// two or a prime, so that every step is coprime with it.
    ///
    /// ```
    /// use gpuds_hive::probe::{Geometry, GroupWidth, Probing};
    /// let w4 = GroupWidth::new(4)?;
    /// assert_eq!(Geometry::new(1 << 20, w4, Probing::Linear)?.mask, (1 << 18) - 1);
    /// assert_eq!(Geometry::new(4 * 1009, w4, Probing::DoubleHashing)?.mask, 0); // prime
    /// assert!(Geometry::new(4 * 1000, w4, Probing::DoubleHashing).is_err());
    /// assert!(Geometry::new(6, w4, Probing::Linear).is_err());
    /// # Ok::<(), gpuds_hive::Error>(())
    /// ```
    pub fn new(capacity: u64, width: GroupWidth, probing: Probing) -> Result<Self> {
        let lanes = u64::from(width.get());
        if capacity == 0 || !capacity.is_multiple_of(lanes) {
            return Err(invalid(format!(
                "capacity {capacity} must be a positive multiple of the group width {lanes}"
            )));
        }
        let windows = capacity / lanes;
        if windows > MAX_WINDOWS {
            return Err(invalid(format!(
                "capacity {capacity} has {windows} windows of {lanes} slots; at most {MAX_WINDOWS}"
            )));
        }
        let pow2 = windows.is_power_of_two();
        if probing == Probing::DoubleHashing && !pow2 && !is_prime(windows) {
            return Err(invalid(format!(
                "double hashing needs a power-of-two or prime number of windows, so that every \
                 step is coprime with it; capacity {capacity} has {windows} windows of {lanes} \
                 (try {} slots)",
                next_prime(windows) * lanes
            )));
        }
        Ok(Geometry {
            windows: windows as u32,
            mask: if pow2 { (windows - 1) as u32 } else { 0 },
        })
    }

    /// The number of slots for `width` lanes: `windows * width`.
    ///
    /// ```
    /// use gpuds_hive::probe::{Geometry, GroupWidth, Probing};
    /// let w = GroupWidth::new(2)?;
    /// assert_eq!(Geometry::new(64, w, Probing::Linear)?.slots(w), 64);
    /// # Ok::<(), gpuds_hive::Error>(())
    /// ```
    pub fn slots(self, width: GroupWidth) -> u64 {
        u64::from(self.windows) * u64::from(width.get())
    }
}

/// `true` when `n` is prime (trial division; `n` below 2^32 here).
///
/// ```
/// use gpuds_hive::probe::is_prime;
/// assert!(is_prime(2) && is_prime(1009) && !is_prime(1) && !is_prime(1001));
/// ```
pub fn is_prime(n: u64) -> bool {
    if n < 2 {
        return false;
    }
    if n < 4 {
        return true;
    }
    if n.is_multiple_of(2) {
        return false;
    }
    let mut d = 3u64;
    while d * d <= n {
        if n.is_multiple_of(d) {
            return false;
        }
        d += 2;
    }
    true
}

/// The least prime `>= n`: a window count double hashing accepts.
///
/// ```
/// assert_eq!(gpuds_hive::probe::next_prime(1000), 1009);
/// ```
pub fn next_prime(n: u64) -> u64 {
    let mut p = n.max(2);
    while !is_prime(p) {
        p += 1;
    }
    p
}

/// The two 32-bit hashes of a key (start window, double-hashing step): twin of
/// `gpuds::probing::hash_key`.
///
/// ```
/// let (h1, h2) = gpuds_hive::probe::hash_key(7u32);
/// assert_eq!(h1, gpuds_core::hash::murmur3_32(7));
/// assert_ne!(h1, h2);
/// ```
pub fn hash_key<K: DeviceKey>(key: K) -> (u32, u32) {
    if std::mem::size_of::<K>() == 4 {
        let h1 = murmur3_32(key.to_u64() as u32);
        (h1, murmur3_32(h1 ^ 0x9e37_79b9))
    } else {
        let h = murmur3_64(key.to_u64());
        (h as u32, (h >> 32) as u32)
    }
}

fn step(probing: Probing, h2: u32, g: Geometry) -> u32 {
    if g.windows <= 1 {
        return 0;
    }
    match probing {
        Probing::Linear => 1,
        Probing::DoubleHashing if g.mask != 0 => (h2 & g.mask) | 1,
        Probing::DoubleHashing => 1 + ((u64::from(h2) * u64::from(g.windows - 1)) >> 32) as u32,
    }
}

/// The windows one key visits, in order: twin of `gpuds::probing::sequence`.
#[derive(Clone, Copy, Debug)]
pub struct ProbeSequence {
    window: u32,
    step: u32,
    windows: u32,
}

impl ProbeSequence {
    /// The sequence of `key` in a table of geometry `g` probed with `probing`.
    ///
    /// ```
    /// use gpuds_hive::probe::{Geometry, GroupWidth, Probing, ProbeSequence};
    /// let g = Geometry::new(16, GroupWidth::ONE, Probing::Linear)?;
    /// let mut seq = ProbeSequence::new(5u64, g, Probing::Linear);
    /// let first = seq.window();
    /// seq.next();
    /// assert_eq!(seq.window(), (first + 1) % 16);
    /// # Ok::<(), gpuds_hive::Error>(())
    /// ```
    pub fn new<K: DeviceKey>(key: K, g: Geometry, probing: Probing) -> Self {
        let (h1, h2) = hash_key(key);
        ProbeSequence {
            window: ((u64::from(h1) * u64::from(g.windows)) >> 32) as u32,
            step: step(probing, h2, g),
            windows: g.windows,
        }
    }

    /// The current window.
    pub fn window(&self) -> u32 {
        self.window
    }

    /// Moves to the next window.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) {
        let w = u64::from(self.window) + u64::from(self.step);
        self.window = if w >= u64::from(self.windows) {
            (w - u64::from(self.windows)) as u32
        } else {
            w as u32
        };
    }
}

fn invalid(message: String) -> Error {
    Error::Core(gpuds_core::Error::InvalidArgument(message))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn visits_all(capacity: u64, width: u32, probing: Probing, key: u64) {
        let width = GroupWidth::new(width).unwrap();
        let g = Geometry::new(capacity, width, probing).unwrap();
        let mut seq = ProbeSequence::new(key, g, probing);
        let mut seen = vec![false; g.windows as usize];
        for _ in 0..g.windows {
            seen[seq.window() as usize] = true;
            seq.next();
        }
        assert!(seen.iter().all(|&s| s), "{capacity} {probing:?} key {key}");
    }

    #[test]
    fn every_sequence_covers_the_table() {
        for key in 0..50u64 {
            visits_all(1 << 10, 1, Probing::Linear, key);
            visits_all(1 << 10, 4, Probing::DoubleHashing, key);
            visits_all(32 * 101, 32, Probing::DoubleHashing, key);
            visits_all(999, 1, Probing::Linear, key);
            visits_all(997, 1, Probing::DoubleHashing, key);
        }
    }

    #[test]
    fn single_window_tables_work() {
        let g = Geometry::new(8, GroupWidth::new(8).unwrap(), Probing::DoubleHashing).unwrap();
        let mut seq = ProbeSequence::new(3u32, g, Probing::DoubleHashing);
        assert_eq!(seq.window(), 0);
        seq.next();
        assert_eq!(seq.window(), 0);
    }

    #[test]
    fn limits_are_checked() {
        assert!(Geometry::new(0, GroupWidth::ONE, Probing::Linear).is_err());
        assert!(Geometry::new(MAX_WINDOWS * 2, GroupWidth::ONE, Probing::Linear).is_err());
        assert!(Geometry::new(
            MAX_WINDOWS * 2,
            GroupWidth::new(2).unwrap(),
            Probing::Linear
        )
        .is_ok());
    }
}
