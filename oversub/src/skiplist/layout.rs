//! The `#[repr(C)]` mirrors of `gpuds/oversub/skiplist.cuh`'s `pool` and `list`, the
//! kernels' `skiplist_ref`, and the node format, shared by the host walk.

use cudarc::driver::DeviceRepr;

/// Slots of a super-node holding pairs.
pub(crate) const NODE_KEYS: usize = 30;
/// Slots (8 bytes each) per super-node.
pub(crate) const NODE_SLOTS: usize = 32;
/// Bytes per super-node.
pub(crate) const NODE_BYTES: u64 = 256;
pub(crate) const HIGH_SLOT: usize = 30;
pub(crate) const META_SLOT: usize = 31;
/// No node; the key of an unused slot.
pub(crate) const NIL: u32 = u32::MAX;
pub(crate) const KEY_TOP: u32 = u32::MAX;
pub(crate) const MAX_LEVELS: usize = 16;
pub(crate) const LEVEL_MASK: u32 = 0xFF;
pub(crate) const DEAD: u32 = 1 << 8;
pub(crate) const HEAD: u32 = 1 << 9;
pub(crate) const FREED: u32 = 1 << 10;
pub(crate) const POOL_SHIFT: u32 = 28;
pub(crate) const INDEX_MASK: u32 = (1 << POOL_SHIFT) - 1;
/// The most nodes one pool can address.
pub(crate) const MAX_POOL_NODES: u64 = 1 << POOL_SHIFT;
pub(crate) const UNSORTED: u32 = 4;

/// `sl::pool`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct PoolDesc {
    pub base: u64,
    pub free_list: u64,
    pub locks: u64,
    pub capacity: u32,
    pub bump: u32,
    pub free_top: i32,
    pub exhausted: u32,
    /// Raises dropped by the lists whose first pool this is, since the last repair.
    pub dropped: u32,
    pub pad: u32,
}

/// `sl::list`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ListDesc {
    pub heads: [u32; MAX_LEVELS],
    pub height: u32,
    pub flags: u32,
    pub first_pool: u32,
    pub min_key: u32,
    pub max_key: u32,
    pub bounds_dirty: u32,
    pub count: u64,
    pub dead: u64,
    pub in_aux: u32,
    /// Test-only faults (the `fault-injection` feature; see `crate::faults`).
    pub faults: u32,
    pub fail_lo: u32,
    pub fail_hi: u32,
    pub pad: [u32; 2],
}

impl ListDesc {
    pub fn empty(flags: u32) -> Self {
        Self {
            heads: [NIL; MAX_LEVELS],
            height: 0,
            flags,
            first_pool: 0,
            min_key: KEY_TOP,
            max_key: 0,
            bounds_dirty: 0,
            count: 0,
            dead: 0,
            in_aux: 0,
            faults: 0,
            fail_lo: 0,
            fail_hi: 0,
            pad: [0; 2],
        }
    }
}

/// The kernels' `skiplist_ref`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub(crate) struct SkipRef {
    pub lists: u64,
    pub pools: u64,
    pub status: u64,
    pub shift: u32,
    pub keys_per_warp: u32,
    pub aux: u64,
    pub aux_pools: u64,
    pub num_lists: u64,
}
// SAFETY: plain data with the layout of skiplist_ref.
unsafe impl DeviceRepr for SkipRef {}

/// Plain-data structs as 32-bit words (both mirrors are multiples of 8 bytes, no padding).
pub(crate) fn to_words<T: Copy>(items: &[T]) -> Vec<u32> {
    debug_assert_eq!(std::mem::size_of::<T>() % 4, 0);
    let n = std::mem::size_of_val(items) / 4;
    // SAFETY: T is a #[repr(C)] struct of u32/u64/i32 fields with no padding, so its bytes
    // are initialized and 4-byte aligned.
    unsafe { std::slice::from_raw_parts(items.as_ptr().cast::<u32>(), n) }.to_vec()
}

/// The inverse of [`to_words`].
pub(crate) fn from_words<T: Copy>(words: &[u32]) -> Vec<T> {
    let size = std::mem::size_of::<T>() / 4;
    words
        .chunks_exact(size)
        // SAFETY: every bit pattern is a valid T (integer fields only); read_unaligned
        // copes with the Vec<u32>'s 4-byte alignment.
        .map(|c| unsafe { std::ptr::read_unaligned(c.as_ptr().cast::<T>()) })
        .collect()
}

pub(crate) fn key_of(slot: u64) -> u32 {
    slot as u32
}
pub(crate) fn val_of(slot: u64) -> u32 {
    (slot >> 32) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mirrors_have_the_device_sizes() {
        assert_eq!(std::mem::size_of::<PoolDesc>(), 48);
        assert_eq!(std::mem::offset_of!(PoolDesc, dropped), 40);
        assert_eq!(std::mem::size_of::<ListDesc>(), 128);
        assert_eq!(std::mem::offset_of!(ListDesc, count), 88);
        assert_eq!(std::mem::offset_of!(ListDesc, in_aux), 104);
        assert_eq!(std::mem::offset_of!(ListDesc, fail_lo), 112);
        assert_eq!(std::mem::size_of::<SkipRef>(), 56);
        assert_eq!(std::mem::offset_of!(SkipRef, aux), 32);
    }

    #[test]
    fn words_round_trip() {
        let mut l = ListDesc::empty(UNSORTED);
        l.count = u64::MAX - 3;
        l.heads[3] = 17;
        let back: Vec<ListDesc> = from_words(&to_words(&[l, l]));
        assert_eq!(back, vec![l, l]);
        let p = PoolDesc {
            base: 1 << 40,
            free_top: -5,
            ..Default::default()
        };
        assert_eq!(from_words::<PoolDesc>(&to_words(&[p])), vec![p]);
    }
}
