//! A host copy of a HiveMap and the invariant checks `validate()` runs on it.

use std::collections::HashSet;

use super::config::HashPair;
use super::types::{decode, Layout};

/// Flags in the high half of a metadata word (see `detail/hive_bucket.cuh`).
const LOCK: u32 = 1;
const SPILL: u32 = 2;
const STASHED: u32 = 4;
/// Two-part buckets: the OUT flag of part p is bit `OUT_SHIFT + p` of the free mask's
/// half (some key preferring part p sits in the other part).
const OUT_SHIFT: u32 = 16;

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
    /// How the buckets lie in `slots` (and whether pairs are wide).
    pub layout: Layout,
    /// The keys no pair may have (as 64-bit numbers).
    pub reserved: Vec<u64>,
    pub hash: HashPair,
    pub level_mask: u32,
    pub split: u32,
    /// The buckets' words, `layout.bucket_words()` per bucket.
    pub slots: Vec<u64>,
    /// Each bucket's 64-bit metadata word as two halves: the free mask, then the lock
    /// (bit 0), SPILL (bit 1) and STASHED (bit 2) flags and the version.
    pub meta: Vec<u32>,
    /// The stash's entries (its whole capacity; one or two words each).
    pub stash: Vec<u64>,
    /// Stash entries taken since the last drain (the occupied prefix).
    pub stash_tail: u64,
    /// Stash entries claimed (taken or promised): between kernels every claim has been
    /// spent (an entry taken) or given back, so this equals the tail.
    pub stash_claims: u64,
    /// The length the device counted.
    pub len: u64,
}

impl Image {
    /// Words per stash entry.
    fn words(&self) -> usize {
        if self.layout.wide {
            2
        } else {
            1
        }
    }

    pub fn buckets(&self) -> usize {
        self.slots.len() / self.layout.bucket_words()
    }

    /// The words of bucket `b`.
    fn bucket(&self, b: usize) -> &[u64] {
        let n = self.layout.bucket_words();
        &self.slots[b * n..(b + 1) * n]
    }

    /// The pair in slot `s` of bucket `b`, if any.
    fn pair(&self, b: usize, s: usize) -> Option<(u64, u64)> {
        self.layout.pair(self.bucket(b), s)
    }

    /// The pair in stash entry `i`, if any (a 4-byte value is the low half of its
    /// entry's value word; the high half is not the value's).
    fn entry(&self, i: usize) -> Option<(u64, u64)> {
        let w = self.words();
        let value_mask = if self.layout.wide && self.layout.value_bytes == 4 {
            0xffff_ffff
        } else {
            u64::MAX
        };
        decode(self.layout.wide, &self.stash[i * w..(i + 1) * w]).map(|(k, v)| (k, v & value_mask))
    }

    /// The hash pair of a key, as the device computes it (u64 keys folded first).
    fn hashes(&self, key: u64) -> (u32, u32) {
        if self.layout.wide {
            self.hash.key_hashes(key)
        } else {
            self.hash.hashes(key as u32)
        }
    }

    /// Every stored pair (as 64-bit numbers): buckets first, then the stash.
    pub fn pairs(&self) -> Vec<(u64, u64)> {
        let slots = self.layout.slots;
        let entries = self.stash.len() / self.words();
        (0..self.buckets())
            .flat_map(|b| (0..slots).filter_map(move |s| self.pair(b, s)))
            .chain((0..entries).filter_map(|i| self.entry(i)))
            .collect()
    }

    /// Checks every invariant; the error names the first broken one.
    pub fn check(&self) -> Result<(), String> {
        let s = self.layout.slots;
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
        // Two-part buckets: OUT flags (bit 16 + p) past the free mask.
        let two = self.layout.two_parts();
        let out_flags: u32 = if two { 3 << OUT_SHIFT } else { 0 };
        let mut seen: HashSet<u64> = HashSet::new();
        let mut count = 0u64;
        for b in 0..buckets {
            let (mask, version) = (self.meta[2 * b], self.meta[2 * b + 1]);
            if version & LOCK == LOCK {
                return Err(format!("bucket {b} is still locked (word {version:#x})"));
            }
            if mask & !(all_free | out_flags) != 0 {
                return Err(format!(
                    "bucket {b}: free mask {mask:#x} has bits past its slots"
                ));
            }
            for slot in 0..s {
                let pair = self.pair(b, slot);
                let free = mask >> slot & 1 == 1;
                if free != pair.is_none() {
                    return Err(format!(
                        "bucket {b} slot {slot}: free bit {} but pair {pair:x?}",
                        free as u8
                    ));
                }
                let Some((key, _)) = pair else {
                    continue;
                };
                if self.reserved.contains(&key) {
                    return Err(format!(
                        "bucket {b} slot {slot} holds the reserved key {key:#x}"
                    ));
                }
                let (h1, h2) = self.hashes(key);
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
                let pref = self.layout.preferred_part(key);
                if two && slot / 8 != pref && mask >> (OUT_SHIFT as usize + pref) & 1 == 0 {
                    return Err(format!(
                        "key {key:#x} sits in part {} of bucket {b}, outside its preferred part \
                         {pref}, but the bucket has no OUT flag for part {pref}",
                        slot / 8
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
        let entries = self.stash.len() / self.words();
        if self.stash_tail > entries as u64 {
            return Err(format!(
                "the stash tail {} is past its {entries} entries",
                self.stash_tail
            ));
        }
        if self.stash_claims != self.stash_tail {
            return Err(format!(
                "{} stash entries are claimed but {} taken: a claim was kept",
                self.stash_claims, self.stash_tail
            ));
        }
        let used = self.stash_tail as usize;
        for i in 0..entries {
            let Some((key, _)) = self.entry(i) else {
                continue;
            };
            if i >= used {
                return Err(format!(
                    "stash entry {i} is past the tail {}",
                    self.stash_tail
                ));
            }
            if self.reserved.contains(&key) {
                return Err(format!("stash entry {i} holds the reserved key {key:#x}"));
            }
            if !seen.insert(key) {
                return Err(format!(
                    "key {key:#x} is stored twice (second copy in the stash)"
                ));
            }
            let b1 = bucket_of(self.hashes(key).0, self.level_mask, self.split) as usize;
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
    use crate::hive::types::encode;

    const EMPTY: u64 = u64::MAX;

    /// The three layouts (u32/u32 packed, u64/u32 and u64/u64 wide) with 8-slot buckets.
    fn layouts() -> [Layout; 3] {
        [
            Layout::of::<u32, u32>(8),
            Layout::of::<u64, u32>(8),
            Layout::of::<u64, u64>(8),
        ]
    }

    /// A host image of 4 buckets of 8 slots (level mask 1, split 2).
    struct Fixture {
        img: Image,
    }

    impl Fixture {
        fn new(layout: Layout) -> Self {
            let wide = layout.wide;
            let w = if wide { 2 } else { 1 };
            Fixture {
                img: Image {
                    layout,
                    reserved: if wide {
                        vec![u64::MAX, u64::MAX - 1]
                    } else {
                        vec![u32::MAX as u64]
                    },
                    hash: HashPair::BitHash,
                    level_mask: 1,
                    split: 2,
                    slots: vec![EMPTY; 4 * layout.bucket_words()],
                    meta: (0..4).flat_map(|_| [0xff, 0]).collect(),
                    stash: vec![EMPTY; 64 * w],
                    stash_tail: 0,
                    stash_claims: 0,
                    len: 0,
                },
            }
        }

        fn w(&self) -> usize {
            self.img.words()
        }

        /// The two buckets of a key.
        fn buckets_of(&self, key: u64) -> (usize, usize) {
            let (h1, h2) = self.img.hashes(key);
            (bucket_of(h1, 1, 2) as usize, bucket_of(h2, 1, 2) as usize)
        }

        /// Writes slot `slot` (counted over all buckets) through the layout: a pair, or
        /// empty. The free bit is left alone.
        fn set(&mut self, slot: usize, pair: Option<(u64, u64)>) {
            let layout = self.img.layout;
            let n = layout.bucket_words();
            let b = slot / 8;
            layout.set(&mut self.img.slots[b * n..(b + 1) * n], slot % 8, pair);
        }

        fn get(&self, slot: usize) -> Option<(u64, u64)> {
            self.img.pair(slot / 8, slot % 8)
        }

        fn put(&mut self, slot: usize, key: u64, value: u64) {
            self.set(slot, Some((key, value)));
            self.img.meta[2 * (slot / 8)] &= !(1 << (slot % 8));
        }

        fn take(&mut self, slot: usize) -> Option<(u64, u64)> {
            let pair = self.get(slot);
            self.set(slot, None);
            self.img.meta[2 * (slot / 8)] |= 1 << (slot % 8);
            pair
        }

        fn stash(&mut self, entry: usize, key: u64) {
            let w = self.w();
            let words = encode(self.img.layout.wide, key, 7);
            self.img.stash[entry * w..(entry + 1) * w].copy_from_slice(&words);
        }

        fn free_slot(&self, b: usize) -> usize {
            (0..8)
                .map(|s| b * 8 + s)
                .find(|&i| self.get(i).is_none())
                .unwrap()
        }

        /// Inserts `keys` into their first buckets (value: the key's low bits plus 7).
        fn with(mut self, keys: &[u64]) -> Self {
            for &k in keys {
                let slot = self.free_slot(self.buckets_of(k).0);
                self.put(slot, k, k.wrapping_add(7) & 0xffff_ffff);
                self.img.len += 1;
            }
            self
        }
    }

    /// Keys for each layout: small ones, and for wide images keys whose high words
    /// differ (equal low words).
    fn keys(wide: bool) -> Vec<u64> {
        if wide {
            vec![1, 2, 1 << 32 | 1, 2 << 32 | 1, u64::MAX - 2]
        } else {
            vec![1, 2, 3, 4, 0xffff_fffe]
        }
    }

    #[test]
    fn a_consistent_image_passes() {
        for layout in layouts() {
            let f = Fixture::new(layout).with(&keys(layout.wide));
            assert_eq!(f.img.check(), Ok(()), "{layout:?}");
            let mut pairs = f.img.pairs();
            pairs.sort_unstable();
            let mut want: Vec<(u64, u64)> = keys(layout.wide)
                .into_iter()
                .map(|k| (k, k.wrapping_add(7) & 0xffff_ffff))
                .collect();
            want.sort_unstable();
            assert_eq!(pairs, want, "{layout:?}");
        }
    }

    #[test]
    fn wide_buckets_keep_keys_and_values_apart() {
        // Slot 3 of bucket 2 of an image: its key is word 3 of the bucket's words and its
        // value in the words after the bucket's 8 key words; nothing else is written.
        for layout in layouts().into_iter().filter(|l| l.wide) {
            let mut f = Fixture::new(layout);
            f.put(2 * 8 + 3, 1 << 33 | 5, 0xdead_beef);
            let n = layout.bucket_words();
            let bucket = &f.img.slots[2 * n..3 * n];
            assert_eq!(bucket[3], 1 << 33 | 5);
            let value = if layout.value_bytes == 8 {
                bucket[8 + 3]
            } else {
                bucket[8 + 1] >> 32
            };
            assert_eq!(value, 0xdead_beef, "{layout:?}");
            let written = f.img.slots.iter().filter(|&&w| w != EMPTY).count();
            assert_eq!(written, 2, "{layout:?}");
            assert_eq!(f.img.pairs(), vec![(1 << 33 | 5, 0xdead_beef)]);
        }
    }

    #[test]
    fn each_broken_invariant_is_named() {
        for layout in layouts() {
            let base = Fixture::new(layout).with(&[1, 2, 3]);
            let b = base.buckets_of(1).0;
            let slot1 = (0..8)
                .map(|s| b * 8 + s)
                .find(|&i| base.get(i).map(|p| p.0) == Some(1))
                .unwrap();
            let copy = |f: &Fixture| Fixture { img: f.img.clone() };

            let mut locked = copy(&base);
            locked.img.meta[1] = 9;
            assert!(locked.img.check().unwrap_err().contains("locked"));

            let mut unflagged = copy(&base);
            unflagged.stash(0, 99);
            unflagged.img.stash_tail = 1;
            unflagged.img.stash_claims = 1;
            unflagged.img.len += 1;
            assert!(unflagged.img.check().unwrap_err().contains("STASHED"));
            let b99 = unflagged.buckets_of(99).0;
            unflagged.img.meta[2 * b99 + 1] |= STASHED;
            assert_eq!(unflagged.img.check(), Ok(()));

            let mut mask = copy(&base);
            mask.img.meta[2 * (slot1 / 8)] |= 1 << (slot1 % 8);
            assert!(mask.img.check().unwrap_err().contains("free bit"));

            // A slot whose free bit is clear but whose key word is empty (a value word
            // alone does not make a pair).
            let mut lost = copy(&base);
            lost.set(slot1, None);
            assert!(lost.img.check().unwrap_err().contains("free bit"));

            let mut twice = copy(&base);
            twice.stash(0, 1);
            twice.img.stash_tail = 1;
            twice.img.stash_claims = 1;
            twice.img.len += 1;
            assert!(twice.img.check().unwrap_err().contains("twice"));

            let mut past_tail = copy(&base);
            past_tail.stash(3, 99);
            past_tail.img.len += 1;
            assert!(past_tail.img.check().unwrap_err().contains("past the tail"));

            // A claim neither spent nor given back (the leak that once filled stashes
            // holding nothing), and a tail past the capacity.
            let mut kept = copy(&base);
            kept.stash(0, 99);
            kept.img.stash_tail = 1;
            kept.img.stash_claims = 2;
            kept.img.len += 1;
            let b99 = kept.buckets_of(99).0;
            kept.img.meta[2 * b99 + 1] |= STASHED;
            assert!(kept.img.check().unwrap_err().contains("claim was kept"));
            kept.img.stash_claims = 1;
            assert_eq!(kept.img.check(), Ok(()));
            let mut beyond = copy(&base);
            beyond.img.stash_tail = 65;
            beyond.img.stash_claims = 65;
            assert!(beyond
                .img
                .check()
                .unwrap_err()
                .contains("past its 64 entries"));

            let mut count = copy(&base);
            count.img.len = 9;
            assert!(count.img.check().unwrap_err().contains("length counter"));

            let mut shape = copy(&base);
            shape.img.split = 1;
            assert!(shape.img.check().unwrap_err().contains("do not match"));

            let mut reserved = copy(&base);
            let busy = *reserved.img.reserved.last().unwrap();
            let slot = reserved.free_slot(reserved.buckets_of(busy).0);
            reserved.put(slot, busy, 0);
            reserved.img.len += 1;
            assert!(reserved.img.check().unwrap_err().contains("reserved key"));

            let (b1, b2) = base.buckets_of(1);
            let mut misplaced = copy(&base);
            let other = (0..4).find(|&x| x != b1 && x != b2).unwrap();
            let pair = misplaced.take(slot1).unwrap();
            misplaced.put(other * 8 + 7, pair.0, pair.1);
            assert!(misplaced
                .img
                .check()
                .unwrap_err()
                .contains("its buckets are"));

            // Key 1 in its second bucket: only valid with its first bucket's SPILL flag.
            if b1 != b2 {
                let mut second = copy(&base);
                second.take(slot1);
                let slot = second.free_slot(b2);
                second.put(slot, 1, 7);
                assert!(second.img.check().unwrap_err().contains("SPILL"));
                second.img.meta[2 * b1 + 1] |= SPILL;
                assert_eq!(second.img.check(), Ok(()));
            }
        }
    }

    #[test]
    fn wide_keys_are_told_apart_by_their_high_words() {
        // Two keys with one low word: a check that dropped the high word would see one
        // key twice, or place both by the same hashes.
        for layout in layouts().into_iter().filter(|l| l.wide) {
            let f = Fixture::new(layout).with(&[5, 1 << 32 | 5]);
            assert_eq!(f.img.check(), Ok(()));
            assert_ne!(f.img.hashes(5), f.img.hashes(1 << 32 | 5));
        }
    }

    #[test]
    fn a_key_outside_its_preferred_part_needs_the_out_flag() {
        // One u64/u64 bucket of 16 slots (two parts): a key in its preferred part needs
        // nothing, one in the other part needs its preferred part's OUT flag.
        let layout = Layout::of::<u64, u64>(16);
        assert!(layout.two_parts());
        let mut img = Image {
            layout,
            reserved: vec![u64::MAX, u64::MAX - 1],
            hash: HashPair::BitHash,
            level_mask: 0,
            split: 0,
            slots: vec![EMPTY; layout.bucket_words()],
            meta: vec![0xffff, 0],
            stash: vec![EMPTY; 2 * 4],
            stash_tail: 0,
            stash_claims: 0,
            len: 0,
        };
        let key = (0..).find(|&k| layout.preferred_part(k) == 1).unwrap();
        let inside = (0..).find(|&k| layout.preferred_part(k) == 0).unwrap();
        layout.set(&mut img.slots, 0, Some((inside, 1)));
        img.meta[0] &= !1;
        img.len = 1;
        assert_eq!(img.check(), Ok(()));
        // `key` prefers part 1 but sits in slot 2, in part 0.
        layout.set(&mut img.slots, 2, Some((key, 2)));
        img.meta[0] &= !(1 << 2);
        img.len = 2;
        assert!(img.check().unwrap_err().contains("no OUT flag for part 1"));
        img.meta[0] |= 1 << (OUT_SHIFT + 1);
        assert_eq!(img.check(), Ok(()));
        // The flags are past the free mask: any other bit there is still an error.
        img.meta[0] |= 1 << 20;
        assert!(img.check().unwrap_err().contains("bits past its slots"));
    }
}
