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
/// `#[repr(C)]` twin of `gpuds::hash::universal`, so it can be passed to kernels.
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
    /// Prime modulus.
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

    /// The bucket of `k` among `buckets` (> 0).
    pub const fn bucket(&self, k: u32, buckets: u32) -> u32 {
        let x = (self.a as u64 * k as u64 + self.b as u64) % self.p as u64;
        (x % buckets as u64) as u32
    }
}

/// First of the two cheap shift/xor/add mixers used for cuckoo hashing.
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
pub const fn bit_mix2(mut k: u32) -> u32 {
    k = (k ^ 61) ^ (k >> 16);
    k = k.wrapping_add(k << 3);
    k ^= k >> 4;
    k = k.wrapping_mul(0x27d4_eb2d);
    k ^= k >> 15;
    k
}
