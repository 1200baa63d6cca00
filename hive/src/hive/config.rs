//! [`HiveConfig`] and [`HashPair`]: how a [`HiveMap`](super::HiveMap) is shaped.

use super::types::HiveKey;
use crate::error::{Error, Result};

/// The two hash functions of a [`HiveMap`](super::HiveMap) (Hive paper, §III-C and
/// §V-B). Each has a host twin ([`HashPair::hashes`]) that returns exactly what the
/// device computes.
///
/// # Examples
/// ```
/// use gpuds_hive::HashPair;
/// let (h1, h2) = HashPair::BitHash.hashes(42);
/// assert_ne!(h1, h2);
/// assert_eq!(HashPair::default(), HashPair::BitHash);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum HashPair {
    /// The paper's default: two cheap shift/xor/add mixers (BitHash1 and BitHash2).
    #[default]
    BitHash,
    /// MurmurHash3's 32-bit finalizer on the key and on the key xor a constant.
    Murmur,
    /// CityHash's path for 4-byte inputs, with two seeds.
    City,
    /// CRC-32C, byte-wise through a 256-entry table in constant memory; the second hash
    /// runs on the key times an odd constant (CRC is linear under xor).
    Crc32,
}

impl HashPair {
    /// Every pair, in the order of the paper's comparison.
    pub const ALL: [HashPair; 4] = [
        HashPair::BitHash,
        HashPair::Murmur,
        HashPair::City,
        HashPair::Crc32,
    ];

    /// The `HIVE_HASH` define that selects this pair in the device code.
    pub fn define(self) -> u32 {
        self as u32
    }

    /// A short name for tables and kernel module names.
    pub fn name(self) -> &'static str {
        match self {
            HashPair::BitHash => "bithash",
            HashPair::Murmur => "murmur",
            HashPair::City => "city",
            HashPair::Crc32 => "crc32",
        }
    }

    /// The two hashes of `key`, exactly as the device computes them.
    ///
    /// ```
    /// use gpuds_hive::HashPair;
    /// for pair in HashPair::ALL {
    ///     assert_eq!(pair.hashes(7), pair.hashes(7));
    ///     assert_ne!(pair.hashes(7), pair.hashes(8));
    /// }
    /// ```
    pub fn hashes(self, key: u32) -> (u32, u32) {
        use gpuds_core::hash::{bit_mix1, bit_mix2, murmur3_32};
        match self {
            HashPair::BitHash => (bit_mix1(key), bit_mix2(key)),
            HashPair::Murmur => (murmur3_32(key), murmur3_32(key ^ SECOND_SEED)),
            HashPair::City => (city_32(key, 0), city_32(key, SECOND_SEED)),
            HashPair::Crc32 => (crc32c(key), crc32c(key.wrapping_mul(CRC_MULTIPLIER))),
        }
    }

    /// The two hashes of a key of any [`HiveKey`] type: those of its 32-bit fold
    /// ([`HiveKey::fold`]; a `u32` key is its own fold).
    ///
    /// ```
    /// use gpuds_hive::HashPair;
    /// let pair = HashPair::Murmur;
    /// assert_eq!(pair.key_hashes(7u64), pair.hashes(7));
    /// assert_ne!(pair.key_hashes(7u64 | 1 << 32), pair.hashes(7));
    /// ```
    pub fn key_hashes<K: HiveKey>(self, key: K) -> (u32, u32) {
        self.hashes(key.fold())
    }
}

const SECOND_SEED: u32 = 0x9e37_79b9;
const CRC_MULTIPLIER: u32 = 0x2545_f491;
const CITY_C1: u32 = 0xcc9e_2d51;
const CITY_C2: u32 = 0x1b87_3593;

fn city_mur(mut a: u32, mut h: u32) -> u32 {
    a = a.wrapping_mul(CITY_C1);
    a = a.rotate_right(17);
    a = a.wrapping_mul(CITY_C2);
    h ^= a;
    h = h.rotate_right(19);
    h.wrapping_mul(5).wrapping_add(0xe654_6b64)
}

/// CityHash's 4-byte path (signed bytes, as the reference reads them), seeded.
fn city_32(key: u32, seed: u32) -> u32 {
    let mut b = seed;
    let mut c = 9u32;
    for byte in key.to_le_bytes() {
        b = b
            .wrapping_mul(CITY_C1)
            .wrapping_add(byte as i8 as i32 as u32);
        c ^= b;
    }
    gpuds_core::hash::murmur3_32(city_mur(b, city_mur(4, c)))
}

const fn crc_table() -> [u32; 256] {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut j = 0;
        while j < 8 {
            c = if c & 1 == 1 {
                (c >> 1) ^ 0x82f6_3b78
            } else {
                c >> 1
            };
            j += 1;
        }
        table[i] = c;
        i += 1;
    }
    table
}

static CRC_TABLE: [u32; 256] = crc_table();

fn crc32c(key: u32) -> u32 {
    let mut c = u32::MAX;
    for byte in key.to_le_bytes() {
        c = CRC_TABLE[((c ^ byte as u32) & 0xff) as usize] ^ (c >> 8);
    }
    !c
}

/// How a [`HiveMap`](super::HiveMap) is built and when it resizes.
///
/// # Examples
/// ```
/// use gpuds_hive::{HashPair, HiveConfig};
/// let config = HiveConfig { capacity: 1 << 20, hash: HashPair::Murmur, ..Default::default() };
/// assert!(config.validate().is_ok());
/// assert_eq!(config.buckets(), (1 << 20) / 16);
/// assert!(HiveConfig { slots_per_bucket: 12, ..Default::default() }.validate().is_err());
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct HiveConfig {
    /// Slots to allocate at first (pairs the table holds at load factor 1), rounded up
    /// to whole buckets.
    pub capacity: usize,
    /// Slots per bucket: 8, 16 (one 128-byte line, read by a 16-lane tile) or 32 (the
    /// paper's choice: two lines, a whole warp).
    pub slots_per_bucket: u32,
    /// The hash-function pair.
    pub hash: HashPair,
    /// Resize automatically between batches (expansion above `max_load`, contraction
    /// below `min_load`). Off: the table keeps its size and a full stash fails inserts.
    pub auto_resize: bool,
    /// The upper load-factor threshold (the paper suggests 0.9).
    pub max_load: f64,
    /// The lower load-factor threshold; the table never contracts below its first size.
    pub min_load: f64,
    /// K: buckets split or merged per resize step.
    pub resize_batch: u32,
    /// Rounds of cuckoo eviction before an insert falls back to the stash (at most 16).
    pub eviction_bound: u32,
    /// Stash capacity as a fraction of the slots (the paper: 1-2 %); at least 64 entries.
    pub stash_fraction: f64,
}

impl Default for HiveConfig {
    fn default() -> Self {
        Self {
            capacity: 1 << 16,
            slots_per_bucket: 16,
            hash: HashPair::BitHash,
            auto_resize: true,
            max_load: 0.9,
            min_load: 0.25,
            resize_batch: 4096,
            eviction_bound: 8,
            stash_fraction: 1.0 / 64.0,
        }
    }
}

impl HiveConfig {
    /// Checks every field; the error says which one is wrong and why: a capacity past
    /// [`MAX_BUCKETS`] buckets is a
    /// [`CapacityOverflow`](gpuds_core::Error::CapacityOverflow), every other bad field an
    /// invalid argument.
    pub fn validate(&self) -> Result<()> {
        let bad = |msg: String| Err(Error::Core(gpuds_core::Error::InvalidArgument(msg)));
        if ![8, 16, 32].contains(&self.slots_per_bucket) {
            return bad(format!(
                "slots_per_bucket must be 8, 16 or 32, not {}",
                self.slots_per_bucket
            ));
        }
        if self.capacity == 0 {
            return bad("capacity must be at least 1 slot, not 0".into());
        }
        if self.buckets() > MAX_BUCKETS {
            return Err(Error::Core(gpuds_core::Error::CapacityOverflow(format!(
                "capacity {} needs {} buckets of {} slots; at most {MAX_BUCKETS}",
                self.capacity,
                self.buckets(),
                self.slots_per_bucket
            ))));
        }
        if !(self.max_load > 0.0 && self.max_load <= 1.0) {
            return bad(format!("max_load must be in (0, 1], not {}", self.max_load));
        }
        if !(self.min_load >= 0.0 && self.min_load < self.max_load / 2.0) {
            return bad(format!(
                "min_load must be in [0, max_load / 2), not {} (max_load {})",
                self.min_load, self.max_load
            ));
        }
        if self.resize_batch == 0 {
            return bad("resize_batch must be at least 1 bucket".into());
        }
        if self.eviction_bound > 16 {
            return bad(format!(
                "eviction_bound must be at most 16, not {}",
                self.eviction_bound
            ));
        }
        if !(self.stash_fraction > 0.0 && self.stash_fraction <= 0.25) {
            return bad(format!(
                "stash_fraction must be in (0, 0.25], not {}",
                self.stash_fraction
            ));
        }
        Ok(())
    }

    /// The number of buckets the table starts with.
    pub fn buckets(&self) -> usize {
        self.capacity
            .div_ceil(self.slots_per_bucket.max(1) as usize)
            .max(1)
    }

    /// Stash capacity, in pairs, for a table of `slots` slots (at most `u32::MAX`: the
    /// device ref counts the stash in 32 bits).
    pub fn stash_capacity(&self, slots: usize) -> usize {
        ((slots as f64 * self.stash_fraction).ceil() as usize).clamp(64, u32::MAX as usize)
    }

    /// Buckets that hold `pairs` pairs under the upper threshold `max_load`, or
    /// [`CapacityOverflow`](gpuds_core::Error::CapacityOverflow) past [`MAX_BUCKETS`].
    pub(crate) fn buckets_for(&self, pairs: u64) -> Result<usize> {
        let s = self.slots_per_bucket.max(1) as u64;
        let limit = MAX_BUCKETS as u64 * s;
        let slots = gpuds_core::size::slots_for_load(pairs, self.max_load, limit, "pairs")?;
        // At most MAX_BUCKETS (2^30) buckets: fits usize on every 64-bit host.
        Ok(slots.div_ceil(s) as usize)
    }
}

/// The most buckets a [`HiveMap`](super::HiveMap) may have, at its first size and after
/// any expansion: 2^30 (2^34 slots of 16, 128 GiB of pairs).
pub const MAX_BUCKETS: usize = 1 << 30;

/// The buckets of a table of `buckets` buckets after `more` are added, or
/// [`CapacityOverflow`](gpuds_core::Error::CapacityOverflow) past [`MAX_BUCKETS`].
pub(crate) fn expanded(buckets: usize, more: usize) -> Result<usize> {
    buckets
        .checked_add(more)
        .filter(|&total| total <= MAX_BUCKETS)
        .ok_or_else(|| {
            Error::Core(gpuds_core::Error::CapacityOverflow(format!(
                "{buckets} buckets and {more} more pass the largest table, {MAX_BUCKETS} buckets"
            )))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc_matches_the_standard_check_value() {
        // The standard check value of CRC-32C: the bytes "123456789".
        let mut c = u32::MAX;
        for byte in *b"123456789" {
            c = CRC_TABLE[((c ^ byte as u32) & 0xff) as usize] ^ (c >> 8);
        }
        assert_eq!(!c, 0xe306_9283, "CRC-32C check value");
    }

    #[test]
    fn hashes_spread_low_bits() {
        for pair in HashPair::ALL {
            let mut counts = [0u32; 64];
            for k in 0..64_000u32 {
                let (h1, h2) = pair.hashes(k);
                counts[(h1 & 63) as usize] += 1;
                counts[(h2 & 63) as usize] += 1;
            }
            let (lo, hi) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
            assert!(*lo > 1700 && *hi < 2300, "{pair:?}: {lo}..{hi}");
        }
    }

    #[test]
    fn configs_validate() {
        assert!(HiveConfig::default().validate().is_ok());
        for bad in [
            HiveConfig {
                capacity: 0,
                ..Default::default()
            },
            HiveConfig {
                max_load: 1.5,
                ..Default::default()
            },
            HiveConfig {
                min_load: 0.5,
                ..Default::default()
            },
            HiveConfig {
                resize_batch: 0,
                ..Default::default()
            },
            HiveConfig {
                eviction_bound: 17,
                ..Default::default()
            },
            HiveConfig {
                stash_fraction: 0.0,
                ..Default::default()
            },
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
        }
        assert_eq!(
            HiveConfig {
                capacity: 17,
                ..Default::default()
            }
            .buckets(),
            2
        );
    }

    fn is_overflow(e: &Error) -> bool {
        matches!(e, Error::Core(gpuds_core::Error::CapacityOverflow(_)))
    }

    #[test]
    fn capacities_validate_or_overflow() {
        for capacity in gpuds_testkit::strategy::capacity_edges() {
            for slots_per_bucket in [8, 16, 32] {
                let Ok(capacity) = usize::try_from(capacity) else {
                    continue;
                };
                let c = HiveConfig {
                    capacity,
                    slots_per_bucket,
                    ..Default::default()
                };
                match c.validate() {
                    Ok(()) => {
                        assert!(c.buckets() * slots_per_bucket as usize >= capacity);
                        assert!(c.buckets() <= MAX_BUCKETS);
                    }
                    Err(e) if capacity == 0 => assert!(!is_overflow(&e), "{e}"),
                    Err(e) => {
                        assert!(is_overflow(&e), "{capacity}: {e}");
                        assert!(capacity > MAX_BUCKETS * slots_per_bucket as usize);
                    }
                }
            }
        }
    }

    #[test]
    fn growth_targets_are_checked() {
        let c = HiveConfig::default();
        assert_eq!(c.buckets_for(0).unwrap(), 0);
        assert_eq!(c.buckets_for(144).unwrap(), 10); // 160 slots at 0.9
        for pairs in [u64::MAX, 1 << 63, u64::MAX - 50, (MAX_BUCKETS as u64) << 5] {
            assert!(is_overflow(&c.buckets_for(pairs).unwrap_err()), "{pairs}");
        }
        // The device ref counts the stash in 32 bits.
        let quarter = HiveConfig {
            stash_fraction: 0.25,
            ..c.clone()
        };
        assert_eq!(quarter.stash_capacity(MAX_BUCKETS * 32), u32::MAX as usize);
        assert_eq!(quarter.stash_capacity(0), 64);
        assert_eq!(expanded(10, 5).unwrap(), 15);
        assert_eq!(expanded(MAX_BUCKETS - 1, 1).unwrap(), MAX_BUCKETS);
        for more in [usize::MAX, 1 << 63, MAX_BUCKETS] {
            assert!(is_overflow(&expanded(1, more).unwrap_err()), "{more}");
        }
    }

    proptest::proptest! {
        #[test]
        fn bucket_targets_hold_their_pairs(
            pairs in gpuds_testkit::strategy::capacities(),
            slots_per_bucket in proptest::sample::select(vec![8u32, 16, 32]),
            max_load in 0.3f64..=1.0,
        ) {
            let c = HiveConfig { slots_per_bucket, max_load, ..Default::default() };
            match c.buckets_for(pairs) {
                Ok(b) => {
                    proptest::prop_assert!(b <= MAX_BUCKETS);
                    let slots = b as f64 * slots_per_bucket as f64;
                    proptest::prop_assert!((slots * max_load).floor() >= pairs as f64);
                }
                Err(e) => {
                    proptest::prop_assert!(is_overflow(&e));
                    let most = MAX_BUCKETS as f64 * slots_per_bucket as f64 * max_load;
                    proptest::prop_assert!(pairs as f64 > most.floor() - 1.0);
                }
            }
        }
    }
}
