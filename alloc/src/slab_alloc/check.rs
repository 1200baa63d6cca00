//! What a pool reports: occupancy ([`SlabAllocStats`]), validation and snapshots.

use super::*;

/// Occupancy of one super block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SuperBlockStats {
    /// Memory blocks of this super block in the pool.
    pub blocks: u32,
    /// Units in use.
    pub units_in_use: u64,
}

/// What [`SlabAlloc::stats`] reports.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SlabAllocStats {
    /// Light or classic (never `Auto`).
    pub layout: Layout,
    /// Bytes per unit.
    pub unit_bytes: u32,
    /// Units the pool holds.
    pub capacity_units: u64,
    /// Units whose bit is set.
    pub units_in_use: u64,
    /// Memory blocks with every unit in use.
    pub full_blocks: u64,
    /// Per super block, in address order.
    pub super_blocks: Vec<SuperBlockStats>,
    /// Device memory held: units (mapped or allocated) plus the bitmap and tables.
    pub bytes_reserved: u64,
    /// Virtual address space reserved (light layout; equals the unit bytes for classic).
    pub virtual_bytes: u64,
}

impl SlabAlloc {
    /// Occupancy and memory use. Synchronizes.
    pub fn stats(&self) -> Result<SlabAllocStats> {
        let counts = self.block_counts()?;
        let per_super = 1usize << self.log_blocks_per_super;
        let super_blocks: Vec<SuperBlockStats> = counts
            .chunks(per_super)
            .map(|c| SuperBlockStats {
                blocks: c.len() as u32,
                units_in_use: c.iter().map(|&u| u as u64).sum(),
            })
            .collect();
        let (unit_bytes, virtual_bytes, table) = match &self.memory {
            Memory::Light(range) => (range.mapped() as u64, range.reserved() as u64, 0),
            Memory::Classic(supers) => (supers.bytes() as u64, supers.bytes() as u64, 2048),
        };
        Ok(SlabAllocStats {
            layout: self.layout(),
            unit_bytes: self.config.unit_bytes,
            capacity_units: self.capacity_units(),
            units_in_use: counts.iter().map(|&c| c as u64).sum(),
            full_blocks: counts.iter().filter(|&&c| c == UNITS_PER_BLOCK).count() as u64,
            super_blocks,
            bytes_reserved: unit_bytes + self.bitmap.len() as u64 * 4 + table,
            virtual_bytes,
        })
    }

    /// Checks what the owner believes against the device: the bitmap covers exactly the
    /// pool's blocks, every block's count is at most 1,024 and the super block counts add
    /// up, the memory behind the blocks is mapped (light) or the device's super block table
    /// matches the host's (classic), and no kernel recorded a double free or an address
    /// outside the pool (those flags are left in the status word). Synchronizes.
    pub fn validate(&self) -> Result<()> {
        self.validate_counts(None)
    }

    /// [`SlabAlloc::validate`], and also that exactly `expected` units are in use.
    pub fn validate_in_use(&self, expected: u64) -> Result<()> {
        self.validate_counts(Some(expected))
    }

    fn validate_counts(&self, expected: Option<u64>) -> Result<()> {
        let bad = |m: String| Err(Error::Corrupted(m));
        let words = self.num_blocks as usize * WORDS_PER_BLOCK as usize;
        if self.bitmap.len() < words {
            return bad(format!(
                "bitmap has {} words for {} blocks",
                self.bitmap.len(),
                self.num_blocks
            ));
        }
        let stats = self.stats()?;
        if let Some(c) = self
            .block_counts()?
            .iter()
            .position(|&c| c > UNITS_PER_BLOCK)
        {
            return bad(format!("block {c} counts more than 1024 units"));
        }
        let by_super: u64 = stats.super_blocks.iter().map(|s| s.units_in_use).sum();
        if by_super != stats.units_in_use || stats.units_in_use > stats.capacity_units {
            return bad(format!(
                "{} units in use by super block, {} in all, capacity {}",
                by_super, stats.units_in_use, stats.capacity_units
            ));
        }
        if let Some(expected) = expected {
            if expected != stats.units_in_use {
                return bad(format!(
                    "{} units in use, {expected} expected",
                    stats.units_in_use
                ));
            }
        }
        let stream = self.gpu.stream();
        match &self.memory {
            Memory::Light(range) => {
                let needed = self.num_blocks as u64 * self.config.block_bytes();
                if (range.mapped() as u64) < needed {
                    return bad(format!(
                        "{} bytes mapped for {needed} bytes of blocks",
                        range.mapped()
                    ));
                }
            }
            Memory::Classic(supers) => {
                if stream.clone_dtoh(supers.device_table())? != supers.host_table(stream) {
                    return bad("the device's super block table differs from the host's".into());
                }
            }
        }
        let flags = Status(stream.clone_dtoh(self.status.lock().slice())?[0]);
        if flags.contains(DOUBLE_FREE) || flags.contains(Status::OUT_OF_BOUNDS) {
            return bad(format!("kernels reported: {flags}"));
        }
        Ok(())
    }

    /// A host copy of the bitmap and every unit. Synchronizes; copies the whole pool.
    pub fn snapshot(&self) -> Result<PoolSnapshot> {
        let stream = self.gpu.stream();
        let words_per_block = self.config.block_bytes() as usize / 4;
        let total = self.num_blocks as usize * words_per_block;
        let bitmap = stream.clone_dtoh(&self.bitmap.slice(..self.num_blocks as usize * 32))?;
        let mut words = vec![0u32; total];
        match &self.memory {
            Memory::Light(range) => {
                if total > 0 {
                    // SAFETY: the first `total` words of the range are mapped and the copy
                    // is waited for before `words` is used.
                    unsafe {
                        cudarc::driver::result::memcpy_dtoh_async(
                            &mut words,
                            range.base(),
                            stream.cu_stream(),
                        )
                    }?;
                }
            }
            Memory::Classic(supers) => {
                let super_words = words_per_block << self.log_blocks_per_super;
                for (chunk, block) in words.chunks_mut(super_words).zip(supers.blocks()) {
                    let bytes = stream.clone_dtoh(&block.slice(..chunk.len() * 4))?;
                    for (w, b) in chunk.iter_mut().zip(bytes.chunks_exact(4)) {
                        *w = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                    }
                }
            }
        }
        stream.synchronize()?;
        Ok(PoolSnapshot {
            unit_bytes: self.config.unit_bytes,
            log_blocks_per_super: self.log_blocks_per_super,
            bitmap,
            words,
        })
    }
}
