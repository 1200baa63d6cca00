//! A host copy of a HiveMap and the invariant checks `validate()` runs on it.

use std::collections::HashSet;

use super::config::HashPair;
use super::device::EMPTY;

/// Flags in the high half of a metadata word (see `detail/hive_bucket.cuh`).
const LOCK: u32 = 1;
const SPILL: u32 = 2;
const STASHED: u32 = 4;

/// Linear-hashing address of hash `h` (see `hive_ref::bucket_of`).
pub(crate) fn bucket_of(h: u32, level_mask: u32, split: u32) -> u32 {
    let b = h & level_mask;
    if b < split {
        h & ((level_mask << 1) | 1)
    } else {
        b
    }
}

/// Everything of a table that its invariants speak about, copied to the host.
#[derive(Clone, Debug)]
pub(crate) struct Image {
    pub slots_per_bucket: u32,
    pub hash: HashPair,
    pub level_mask: u32,
    pub split: u32,
    /// `buckets * slots_per_bucket` words.
    pub slots: Vec<u64>,
    /// Each bucket's 64-bit metadata word as two halves: the free mask, then the lock
    /// (bit 0), SPILL (bit 1) and STASHED (bit 2) flags and the version.
    pub meta: Vec<u32>,
    /// The stash's words (its whole capacity).
    pub stash: Vec<u64>,
    /// Stash reservations so far (may pass the capacity).
    pub stash_tail: u64,
    /// The length the device counted.
    pub len: u64,
}

impl Image {
    pub fn buckets(&self) -> usize {
        self.slots.len() / self.slots_per_bucket as usize
    }

    /// Every stored pair: buckets first, then the stash.
    pub fn pairs(&self) -> Vec<(u32, u32)> {
        self.slots
            .iter()
            .chain(&self.stash)
            .filter(|&&w| w != EMPTY)
            .map(|&w| ((w >> 32) as u32, w as u32))
            .collect()
    }

    /// Checks every invariant; the error names the first broken one.
    pub fn check(&self) -> Result<(), String> {
        let s = self.slots_per_bucket as usize;
        let buckets = self.buckets();
        if self.meta.len() != 2 * buckets {
            return Err(format!(
                "{} metadata words for {buckets} buckets",
                self.meta.len()
            ));
        }
        if buckets != (self.level_mask as usize + 1) + self.split as usize
            || self.split > self.level_mask + 1
            || !(self.level_mask as u64 + 1).is_power_of_two()
        {
            return Err(format!(
                "{buckets} buckets do not match level mask {:#x} and split pointer {}",
                self.level_mask, self.split
            ));
        }
        let all_free: u32 = if s == 32 { u32::MAX } else { (1u32 << s) - 1 };
        let mut seen: HashSet<u32> = HashSet::new();
        let mut count = 0u64;
        for b in 0..buckets {
            let (mask, version) = (self.meta[2 * b], self.meta[2 * b + 1]);
            if version & LOCK == LOCK {
                return Err(format!("bucket {b} is still locked (word {version:#x})"));
            }
            if mask & !all_free != 0 {
                return Err(format!(
                    "bucket {b}: free mask {mask:#x} has bits past its slots"
                ));
            }
            for slot in 0..s {
                let w = self.slots[b * s + slot];
                let free = mask >> slot & 1 == 1;
                if free != (w == EMPTY) {
                    return Err(format!(
                        "bucket {b} slot {slot}: free bit {} but word {w:#018x}",
                        free as u8
                    ));
                }
                if w == EMPTY {
                    continue;
                }
                let key = (w >> 32) as u32;
                let (h1, h2) = self.hash.hashes(key);
                let (b1, b2) = (
                    bucket_of(h1, self.level_mask, self.split),
                    bucket_of(h2, self.level_mask, self.split),
                );
                if b as u32 != b1 && b as u32 != b2 {
                    return Err(format!(
                        "key {key:#x} sits in bucket {b}, but its buckets are {b1} and {b2}"
                    ));
                }
                if b as u32 != b1 && self.meta[2 * b1 as usize + 1] & SPILL == 0 {
                    return Err(format!(
                        "key {key:#x} sits in its second bucket {b}, but its first bucket \
                         {b1} has no SPILL flag"
                    ));
                }
                if !seen.insert(key) {
                    return Err(format!(
                        "key {key:#x} is stored twice (second copy in bucket {b})"
                    ));
                }
                count += 1;
            }
        }
        let used = (self.stash_tail as usize).min(self.stash.len());
        for (i, &w) in self.stash.iter().enumerate() {
            if w == EMPTY {
                continue;
            }
            if i >= used {
                return Err(format!(
                    "stash word {i} is past the tail {}",
                    self.stash_tail
                ));
            }
            let key = (w >> 32) as u32;
            if key == u32::MAX {
                return Err(format!("stash word {i} holds the reserved key"));
            }
            if !seen.insert(key) {
                return Err(format!(
                    "key {key:#x} is stored twice (second copy in the stash)"
                ));
            }
            let b1 = bucket_of(self.hash.hashes(key).0, self.level_mask, self.split) as usize;
            if self.meta[2 * b1 + 1] & STASHED == 0 {
                return Err(format!(
                    "key {key:#x} is in the stash, but its first bucket {b1} has no STASHED flag"
                ));
            }
            count += 1;
        }
        if count != self.len {
            return Err(format!(
                "{count} pairs stored, but the length counter says {}",
                self.len
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A valid image of 4 buckets of 8 slots (level mask 1, split 2) holding `keys`.
    fn image_with(keys: &[u32]) -> Image {
        let hash = HashPair::BitHash;
        let mut img = Image {
            slots_per_bucket: 8,
            hash,
            level_mask: 1,
            split: 2,
            slots: vec![EMPTY; 32],
            meta: (0..4).flat_map(|_| [0xff, 0]).collect(),
            stash: vec![EMPTY; 64],
            stash_tail: 0,
            len: 0,
        };
        for &k in keys {
            let b = bucket_of(hash.hashes(k).0, 1, 2) as usize;
            let slot = (0..8).find(|&s| img.slots[b * 8 + s] == EMPTY).unwrap();
            img.slots[b * 8 + slot] = (k as u64) << 32 | 7;
            img.meta[2 * b] &= !(1 << slot);
            img.len += 1;
        }
        img
    }

    #[test]
    fn a_consistent_image_passes() {
        let img = image_with(&[1, 2, 3, 4, 5]);
        assert_eq!(img.check(), Ok(()));
        assert_eq!(img.pairs().len(), 5);
    }

    #[test]
    fn each_broken_invariant_is_named() {
        let img = image_with(&[1, 2, 3]);
        let b = bucket_of(HashPair::BitHash.hashes(1).0, 1, 2) as usize;

        let mut locked = img.clone();
        locked.meta[1] = 9;
        assert!(locked.check().unwrap_err().contains("locked"));

        let mut unflagged = img.clone();
        unflagged.stash[0] = 99u64 << 32;
        unflagged.stash_tail = 1;
        unflagged.len += 1;
        let b99 = bucket_of(HashPair::BitHash.hashes(99).0, 1, 2) as usize;
        assert!(unflagged.check().unwrap_err().contains("STASHED"));
        unflagged.meta[2 * b99 + 1] |= STASHED;
        assert_eq!(unflagged.check(), Ok(()));

        let mut mask = img.clone();
        mask.meta[2 * b] |= 1;
        assert!(mask.check().unwrap_err().contains("free bit"));

        let mut twice = img.clone();
        twice.stash[0] = img.slots[b * 8];
        twice.stash_tail = 1;
        twice.len += 1;
        assert!(twice.check().unwrap_err().contains("twice"));

        let mut past_tail = img.clone();
        past_tail.stash[3] = 99u64 << 32;
        past_tail.len += 1;
        assert!(past_tail.check().unwrap_err().contains("past the tail"));

        let mut count = img.clone();
        count.len = 9;
        assert!(count.check().unwrap_err().contains("length counter"));

        let mut shape = img.clone();
        shape.split = 1;
        assert!(shape.check().unwrap_err().contains("do not match"));

        let mut misplaced = img.clone();
        let (h1, h2) = HashPair::BitHash.hashes(1);
        let other = (0..4u32)
            .find(|&x| x != bucket_of(h1, 1, 2) && x != bucket_of(h2, 1, 2))
            .unwrap() as usize;
        let w = misplaced.slots[b * 8];
        misplaced.slots[b * 8] = EMPTY;
        misplaced.meta[2 * b] |= 1;
        misplaced.slots[other * 8 + 7] = w;
        misplaced.meta[2 * other] &= !(1 << 7);
        assert!(misplaced.check().unwrap_err().contains("its buckets are"));

        // Key 1 in its second bucket: only valid with its first bucket's SPILL flag.
        let (b1, b2) = (bucket_of(h1, 1, 2) as usize, bucket_of(h2, 1, 2) as usize);
        if b1 != b2 {
            let mut second = img.clone();
            let w = second.slots[b * 8];
            second.slots[b * 8] = EMPTY;
            second.meta[2 * b] |= 1;
            let slot = (0..8).find(|&s| second.slots[b2 * 8 + s] == EMPTY).unwrap();
            second.slots[b2 * 8 + slot] = w;
            second.meta[2 * b2] &= !(1 << slot);
            assert!(second.check().unwrap_err().contains("SPILL"));
            second.meta[2 * b1 + 1] |= SPILL;
            assert_eq!(second.check(), Ok(()));
        }
    }
}
