//! Unit addresses: `super block (8 bits) | memory block (14 bits) | unit (10 bits)`.
//!
//! The host twin of the address arithmetic in `gpuds/alloc/slab_alloc.cuh`. A pool with
//! `2^log` memory blocks per super block numbers its blocks `g = super << log | block`;
//! [`address`] and [`block_index`] convert between block numbers and addresses.

/// The null address; never handed out.
pub const NULL_UNIT: u32 = 0xFFFF_FFFF;
/// Units per memory block.
pub const UNITS_PER_BLOCK: u32 = 1 << UNIT_BITS;
/// Bitmap words per memory block.
pub const WORDS_PER_BLOCK: u32 = UNITS_PER_BLOCK / 32;
/// Bits of the unit field.
pub const UNIT_BITS: u32 = 10;
/// Bits of the memory block field.
pub const BLOCK_BITS: u32 = 14;
/// Bits of the super block field.
pub const SUPER_BITS: u32 = 8;
/// Most memory blocks a pool can have: every block of every super block except the last
/// block of super block 255, which holds the null address.
pub const MAX_BLOCKS: u64 = (1 << (SUPER_BITS + BLOCK_BITS)) - 1;

/// The fields of an address.
///
/// # Examples
/// ```
/// use gpuds_alloc::address::{Fields, NULL_UNIT};
/// let f = Fields { super_block: 3, block: 17, unit: 1000 };
/// assert_eq!(Fields::decode(f.encode()), f);
/// assert_eq!(Fields::decode(NULL_UNIT), Fields { super_block: 255, block: 16383, unit: 1023 });
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Fields {
    /// Super block, 0..256.
    pub super_block: u32,
    /// Memory block within the super block, 0..16384.
    pub block: u32,
    /// Unit within the memory block, 0..1024.
    pub unit: u32,
}

impl Fields {
    /// The address of these fields; each field is masked to its width.
    pub const fn encode(self) -> u32 {
        ((self.super_block & 0xFF) << (UNIT_BITS + BLOCK_BITS))
            | ((self.block & 0x3FFF) << UNIT_BITS)
            | (self.unit & 0x3FF)
    }

    /// The fields of an address.
    pub const fn decode(address: u32) -> Self {
        Self {
            super_block: address >> (UNIT_BITS + BLOCK_BITS),
            block: (address >> UNIT_BITS) & 0x3FFF,
            unit: address & 0x3FF,
        }
    }
}

/// The address of unit `unit` of memory block `g` in a pool with `2^log_blocks_per_super`
/// blocks per super block (the device's `slab_alloc_ref::address`).
///
/// # Examples
/// ```
/// use gpuds_alloc::address::{address, block_index};
/// // Light layout: 2^14 blocks per super block, so the address is g * 1024 + unit.
/// assert_eq!(address(20_000, 5, 14), 20_000 * 1024 + 5);
/// // Classic layout with 256 blocks per super block: block 300 is block 44 of super 1.
/// let a = address(300, 7, 8);
/// assert_eq!(a, (1 << 24) | (44 << 10) | 7);
/// assert_eq!(block_index(a, 8), 300);
/// ```
pub const fn address(g: u32, unit: u32, log_blocks_per_super: u32) -> u32 {
    let super_block = g >> log_blocks_per_super;
    let block = g & ((1 << log_blocks_per_super) - 1);
    Fields {
        super_block,
        block,
        unit,
    }
    .encode()
}

/// The memory block number `g` of an address (the device's `slab_alloc_ref::block_of`).
pub const fn block_index(address: u32, log_blocks_per_super: u32) -> u32 {
    let f = Fields::decode(address);
    (f.super_block << log_blocks_per_super) | f.block
}

/// The byte offset of an address from its super block's base.
///
/// ```
/// use gpuds_alloc::address::offset_in_super;
/// assert_eq!(offset_in_super((2 << 24) | (3 << 10) | 4, 128), (3 * 1024 + 4) * 128);
/// ```
pub const fn offset_in_super(address: u32, unit_bytes: u32) -> u64 {
    (address & ((1 << (UNIT_BITS + BLOCK_BITS)) - 1)) as u64 * unit_bytes as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_field_boundary() {
        for super_block in [0, 1, 127, 255] {
            for block in [0, 1, 8191, 16383] {
                for unit in [0, 1, 511, 1023] {
                    let f = Fields {
                        super_block,
                        block,
                        unit,
                    };
                    assert_eq!(Fields::decode(f.encode()), f);
                }
            }
        }
    }

    #[test]
    fn block_numbers_round_trip_for_every_layout() {
        for log in 0..=BLOCK_BITS {
            let per_super = 1u64 << log;
            let blocks = (per_super * 256).min(MAX_BLOCKS);
            for g in [0, 1, per_super - 1, per_super, blocks / 2, blocks - 1] {
                let g = g.min(blocks - 1) as u32;
                for unit in [0, 1023] {
                    let a = address(g, unit, log);
                    assert_eq!(block_index(a, log), g, "g {g} log {log}");
                    assert_eq!(a & 0x3FF, unit);
                    assert_ne!(a, NULL_UNIT, "g {g} log {log}");
                }
            }
        }
    }

    #[test]
    fn light_addresses_are_linear_unit_indices() {
        for g in [0u32, 1, 16383, 16384, (MAX_BLOCKS - 1) as u32] {
            assert_eq!(address(g, 9, BLOCK_BITS) as u64, g as u64 * 1024 + 9);
        }
    }
}
