//! Key and value types that can live in device structures.

use cudarc::driver::{DeviceRepr, ValidAsZeroBits};

/// A plain-old-data type usable in device memory and as a kernel argument.
///
/// # Safety
///
/// Kernels are instantiated from [`DeviceType::CUDA_TYPE`] while the host sizes buffers
/// with `size_of::<Self>()`, so an implementation must name a C++ type of exactly the
/// same size, alignment and bit representation as `Self`. A wrong name lets kernels
/// read and write outside their buffers.
pub unsafe trait DeviceType:
    bytemuck::Pod + DeviceRepr + ValidAsZeroBits + Copy + Send + Sync + std::fmt::Debug + 'static
{
    /// The C++ spelling of the type, passed to kernels as a define.
    const CUDA_TYPE: &'static str;
    /// The type's name in kernel symbols (`insert_u32`).
    const SUFFIX: &'static str;
    /// Widens to `u64` (for error messages and hashing).
    fn to_u64(self) -> u64;
    /// Narrows from `u64`, keeping the low bits.
    fn from_u64(v: u64) -> Self;
}

/// A type usable as a key. Each structure names its own reserved values (its empty and
/// tombstone sentinels) and rejects them in batches; see the structure's documentation.
pub trait DeviceKey: DeviceType + Eq + Ord + std::hash::Hash {
    /// The largest value of the type.
    const MAX: Self;
}

/// A type usable as a value.
pub trait DeviceValue: DeviceType {}

macro_rules! device_type {
    ($t:ty, $cuda:literal, $suffix:literal) => {
        // SAFETY: the C++ type named has the size, alignment and representation of $t.
        unsafe impl DeviceType for $t {
            const CUDA_TYPE: &'static str = $cuda;
            const SUFFIX: &'static str = $suffix;
            fn to_u64(self) -> u64 {
                self as u64
            }
            fn from_u64(v: u64) -> Self {
                v as $t
            }
        }
        impl DeviceKey for $t {
            const MAX: Self = <$t>::MAX;
        }
        impl DeviceValue for $t {}
    };
}

device_type!(u32, "unsigned int", "u32");
device_type!(u64, "unsigned long long", "u64");

/// Returns the index and value of the first key of `keys` that is one of `reserved`.
///
/// Structures call this before a batch so that a reserved key is rejected with
/// [`Error::ReservedKey`](crate::Error::ReservedKey) and nothing is applied.
///
/// # Examples
/// ```
/// use gpuds_core::keys::first_reserved;
/// assert_eq!(first_reserved(&[1u32, 2, u32::MAX, 4], &[u32::MAX]), Some((2, u32::MAX)));
/// assert_eq!(first_reserved(&[1u32, 2], &[u32::MAX]), None);
/// ```
pub fn first_reserved<K: DeviceKey>(keys: &[K], reserved: &[K]) -> Option<(usize, K)> {
    keys.iter()
        .position(|k| reserved.contains(k))
        .map(|i| (i, keys[i]))
}

/// [`first_reserved`] as a `Result`, ready for `?`.
///
/// ```
/// use gpuds_core::{keys::check_reserved, Error};
/// let err = check_reserved(&[7u64, 0], &[0]).unwrap_err();
/// assert!(matches!(err, Error::ReservedKey { index: 1, key: 0 }));
/// ```
pub fn check_reserved<K: DeviceKey>(keys: &[K], reserved: &[K]) -> crate::Result<()> {
    match first_reserved(keys, reserved) {
        Some((index, key)) => Err(crate::Error::ReservedKey {
            index,
            key: key.to_u64(),
        }),
        None => Ok(()),
    }
}
