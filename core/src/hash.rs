//! Host twins of the device hash functions in `gpuds/core/hash.cuh`.
//!
//! Each function returns exactly what its device twin returns, so host code (reference
//! models, validators, bucket statistics) can compute where a key lives.

/// MurmurHash3's 32-bit finalizer.
///
/// ```
/// assert_eq!(gpuds_core::hash::murmur3_32(0), 0);
/// assert_ne!(gpuds_core::hash::murmur3_32(1), 1);
/// ```
pub const fn murmur3_32(mut k: u32) -> u32 {
    k ^= k >> 16;
    k = k.wrapping_mul(0x85eb_ca6b);
    k ^= k >> 13;
    k = k.wrapping_mul(0xc2b2_ae35);
    k ^= k >> 16;
    k
}

/// MurmurHash3's 64-bit finalizer.
///
/// ```
/// use gpuds_core::hash::murmur3_64;
/// assert_eq!(murmur3_64(0), 0);
/// assert_ne!(murmur3_64(1), murmur3_64(2));
/// ```
pub const fn murmur3_64(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^= k >> 33;
    k
}

/// The largest prime below 2^32, the default modulus of [`Universal`].
pub const UNIVERSAL_PRIME: u32 = 4_294_967_291;

/// The slab hash paper's universal hash `((a·k + b) mod p) mod buckets`.
///
/// `#[repr(C)]` twin of `gpuds::hash::universal`, so it can be passed to kernels. Build
/// one with [`Universal::new`] or [`Universal::from_seed`], which keep 1 ≤ a < p and
/// b < p (what makes the family universal). The fields are public for kernels and
/// layout checks; [`bucket`](Universal::bucket) is total even for values written into
/// them directly: `p == 0` stands for [`UNIVERSAL_PRIME`], and nothing overflows for
/// any `a`, `b` and `p` (a·k + b < 2^64).
///
/// ```
/// use gpuds_core::hash::Universal;
/// let h = Universal::new(12345, 678).unwrap();
/// assert!(h.bucket(42, 100) < 100);
/// assert!(Universal::new(0, 1).is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub struct Universal {
    /// Multiplier, 1 ≤ a < p.
    pub a: u32,
    /// Offset, b < p.
    pub b: u32,
    /// Prime modulus; 0 stands for [`UNIVERSAL_PRIME`].
    pub p: u32,
}

// SAFETY: plain old data with the layout of its C++ twin.
unsafe impl cudarc::driver::DeviceRepr for Universal {}

impl Universal {
    /// A hash with modulus [`UNIVERSAL_PRIME`]; fails unless 1 ≤ a < p and b < p.
    pub fn new(a: u32, b: u32) -> crate::Result<Self> {
        let p = UNIVERSAL_PRIME;
        if a == 0 || a >= p || b >= p {
            return Err(crate::Error::InvalidArgument(format!(
                "universal hash needs 1 <= a < {p} and b < {p}, got a = {a}, b = {b}"
            )));
        }
        Ok(Self { a, b, p })
    }

    /// A hash with parameters drawn from `seed` (a splitmix64 stream), always valid.
    pub fn from_seed(seed: u64) -> Self {
        let mut s = seed;
        let mut next = || {
            s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        let p = UNIVERSAL_PRIME as u64;
        let a = 1 + next() % (p - 1);
        let b = next() % p;
        Self {
            a: a as u32,
            b: b as u32,
            p: UNIVERSAL_PRIME,
        }
    }

    /// The bucket of `k` among `buckets`, in `0..buckets`.
    ///
    /// `buckets` should be at least 1; with `buckets == 0` there is no bucket to name and
    /// the result is 0, so the call never panics (the device twin returns the same).
    /// Callers that index with the result must not have zero buckets.
    ///
    /// ```
    /// use gpuds_core::hash::Universal;
    /// let h = Universal::from_seed(7);
    /// assert!(h.bucket(42, 10) < 10);
    /// assert_eq!(h.bucket(42, 1), 0);
    /// assert_eq!(h.bucket(42, 0), 0);
    /// // p == 0 stands for the default prime.
    /// let zero_p = Universal { p: 0, ..h };
    /// assert_eq!(zero_p.bucket(42, 1000), h.bucket(42, 1000));
    /// ```
    pub const fn bucket(&self, k: u32, buckets: u32) -> u32 {
        let p = if self.p == 0 { UNIVERSAL_PRIME } else { self.p };
        let x = (self.a as u64 * k as u64 + self.b as u64) % p as u64;
        match buckets {
            0 => 0,
            _ => (x % buckets as u64) as u32,
        }
    }
}

/// First of the two cheap shift/xor/add mixers used for cuckoo hashing.
///
/// ```
/// use gpuds_core::hash::{bit_mix1, bit_mix2};
/// // Two unrelated buckets for the same key.
/// let (b1, b2) = (bit_mix1(42) % 1024, bit_mix2(42) % 1024);
/// assert!(b1 < 1024 && b2 < 1024);
/// ```
pub const fn bit_mix1(mut k: u32) -> u32 {
    k = k.wrapping_add(0x7ed5_5d16).wrapping_add(k << 12);
    k = (k ^ 0xc761_c23c) ^ (k >> 19);
    k = k.wrapping_add(0x1656_67b1).wrapping_add(k << 5);
    k = k.wrapping_add(0xd3a2_646c) ^ (k << 9);
    k = k.wrapping_add(0xfd70_46c5).wrapping_add(k << 3);
    k = (k ^ 0xb55a_4f09) ^ (k >> 16);
    k
}

/// Second of the two cheap mixers, independent of the first.
///
/// ```
/// assert_ne!(gpuds_core::hash::bit_mix2(7), gpuds_core::hash::bit_mix1(7));
/// ```
pub const fn bit_mix2(mut k: u32) -> u32 {
    k = (k ^ 61) ^ (k >> 16);
    k = k.wrapping_add(k << 3);
    k ^= k >> 4;
    k = k.wrapping_mul(0x27d4_eb2d);
    k ^= k >> 15;
    k
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_is_total() {
        let h = Universal::from_seed(3);
        for k in [0, 1, 12345, u32::MAX] {
            assert_eq!(h.bucket(k, 0), 0);
            assert_eq!(h.bucket(k, 1), 0);
            assert!(h.bucket(k, 1000) < 1000);
            assert!(h.bucket(k, u32::MAX) < u32::MAX);
        }
        // Parameters written directly, outside what `new` allows: still no panic and no
        // overflow.
        let wild = Universal {
            a: u32::MAX,
            b: u32::MAX,
            p: 0,
        };
        assert_eq!(wild.bucket(u32::MAX, 0), 0);
        assert!(wild.bucket(u32::MAX, 17) < 17);
        let zeroed: Universal = bytemuck::Zeroable::zeroed();
        assert_eq!(zeroed.bucket(99, 7), 0); // a = b = 0 hashes everything to 0
    }

    #[test]
    fn zero_modulus_means_the_default_prime() {
        let h = Universal::new(0x1234_5679, 77).expect("valid");
        assert_eq!(h.p, UNIVERSAL_PRIME);
        let zero_p = Universal { p: 0, ..h };
        for k in [0, 5, 1 << 31, u32::MAX] {
            assert_eq!(zero_p.bucket(k, 1_000_003), h.bucket(k, 1_000_003));
        }
    }

    #[test]
    fn bucket_matches_the_formula() {
        let h = Universal { a: 3, b: 5, p: 7 };
        // ((3k + 5) mod 7) mod 4 for k = 0..7.
        let got: Vec<u32> = (0..7).map(|k| h.bucket(k, 4)).collect();
        assert_eq!(got, [1, 1, 0, 0, 3, 2, 2]);
    }
}
