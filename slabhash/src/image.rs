//! Host-side checks of a table: every invariant of the slab lists, on a host copy of
//! the base slabs and the slab pool (or on a synthetic image in tests).

use std::collections::HashSet;

use gpuds_alloc::PoolSnapshot;
use gpuds_core::hash::Universal;

use crate::error::{Error, Result};
use crate::keys::fold_words;
use crate::layout::{Layout, AUX_LANE, NEXT_LANE};

const NULL_SLAB: u32 = u32::MAX;

/// Where the slabs beyond the base slabs are read from.
pub(crate) trait Pool {
    /// The 32 words of unit `a` (at least), or `None` outside the pool.
    fn unit(&self, a: u32) -> Option<&[u32]>;
    /// Whether unit `a` is allocated.
    fn is_allocated(&self, a: u32) -> bool;
    /// Units allocated in all.
    fn units_in_use(&self) -> u64;
}

impl Pool for PoolSnapshot {
    fn unit(&self, a: u32) -> Option<&[u32]> {
        PoolSnapshot::unit(self, a)
    }
    fn is_allocated(&self, a: u32) -> bool {
        PoolSnapshot::is_allocated(self, a)
    }
    fn units_in_use(&self) -> u64 {
        PoolSnapshot::units_in_use(self)
    }
}

/// A table as the host sees it.
pub(crate) struct Image<'a, P> {
    pub layout: Layout,
    pub unique: bool,
    /// The base slabs, 32 words per bucket.
    pub buckets: &'a [u32],
    pub pool: &'a P,
    pub hash: Universal,
    /// The device's counters.
    pub live: u64,
    pub claimed: u64,
    /// The most slabs a list may have (the effective step cap).
    pub step_cap: u32,
}

/// What a valid table holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Live keys.
    pub live: u64,
    /// Tombstones (deleted keys waiting for FLUSH).
    pub tombstones: u64,
    /// Slabs in all, base slabs included.
    pub slabs: u64,
}

/// Checks, for every bucket's list: it has at most `step_cap` slabs (what every read may
/// walk); each slab beyond the base slab is allocated in the
/// pool and reached once; claimed slots (live keys and tombstones) come before empty
/// slots and every slab but the last is full; empty pairs keep the empty value; the
/// auxiliary lane is untouched (packed layouts) or holds exactly the busy bits of the
/// slots that are not live (wide layouts); every live key hashes to its bucket; with
/// unique keys no key is live twice. Then: the counters agree with the lists, and the pool holds
/// exactly the reachable slabs (no leak).
pub(crate) fn validate<P: Pool>(img: &Image<'_, P>) -> Result<Summary> {
    let bad = |m: String| Err(Error::Corrupted(m));
    let buckets = img.buckets.len() / 32;
    if buckets == 0 || img.buckets.len() != buckets * 32 {
        return bad(format!("{} words of base slabs", img.buckets.len()));
    }
    let layout = img.layout;
    let (empty, tombstone) = layout.reserved_keys();
    let empty_value = Layout::ones(layout.value_words);
    let max_chain = img.pool.units_in_use() + 1;
    let mut reached: HashSet<u32> = HashSet::new();
    let mut summary = Summary::default();
    let mut keys: HashSet<u64> = HashSet::new();
    for b in 0..buckets {
        keys.clear();
        let mut slab: &[u32] = &img.buckets[b * 32..b * 32 + 32];
        let mut place = format!("bucket {b}, base slab");
        let mut seen_empty = false;
        let mut length = 1u64;
        loop {
            summary.slabs += 1;
            let mut busy = u32::MAX;
            for j in 0..layout.slots() {
                let lane = layout.key_lane(j);
                let key = layout.key(slab, j);
                if key == empty {
                    seen_empty = true;
                    if layout.value_words > 0 && layout.value(slab, j) != empty_value {
                        return bad(format!("{place}: empty slot on lane {lane} holds a value"));
                    }
                    continue;
                }
                if seen_empty {
                    return bad(format!(
                        "{place}: claimed slot on lane {lane} after an empty one"
                    ));
                }
                if key == tombstone {
                    summary.tombstones += 1;
                    continue;
                }
                summary.live += 1;
                busy &= !(1 << j);
                let home = img
                    .hash
                    .bucket(fold_words(key, layout.key_words), buckets as u32)
                    as usize;
                if home != b {
                    return bad(format!("{place}: key {key:#x} belongs in bucket {home}"));
                }
                if img.unique && !keys.insert(key) {
                    return bad(format!("{place}: key {key:#x} is live twice"));
                }
            }
            let aux = if layout.packed() { u32::MAX } else { busy };
            if slab[AUX_LANE] != aux {
                return bad(format!(
                    "{place}: auxiliary lane holds {:#x}, not {aux:#x}",
                    slab[AUX_LANE]
                ));
            }
            let next = slab[NEXT_LANE];
            if next == NULL_SLAB {
                break;
            }
            if seen_empty {
                return bad(format!(
                    "{place}: a slab with room is followed by slab {next:#x}"
                ));
            }
            length += 1;
            if length > max_chain {
                return bad(format!("bucket {b}: the list is longer than the pool"));
            }
            if length > u64::from(img.step_cap) {
                return bad(format!(
                    "bucket {b}: the list has more slabs than the step cap {} (reads would \
                     not reach its end)",
                    img.step_cap
                ));
            }
            if !img.pool.is_allocated(next) {
                return bad(format!("{place}: next slab {next:#x} is not allocated"));
            }
            if !reached.insert(next) {
                return bad(format!("{place}: slab {next:#x} is reached twice"));
            }
            slab = match img.pool.unit(next) {
                Some(words) if words.len() >= 32 => &words[..32],
                _ => return bad(format!("{place}: next slab {next:#x} is outside the pool")),
            };
            place = format!("bucket {b}, slab {next:#x}");
        }
    }
    if summary.live != img.live {
        return bad(format!(
            "the lists hold {} live keys, the counter says {}",
            summary.live, img.live
        ));
    }
    if summary.live + summary.tombstones != img.claimed {
        return bad(format!(
            "the lists hold {} claimed slots, the counter says {}",
            summary.live + summary.tombstones,
            img.claimed
        ));
    }
    let in_use = img.pool.units_in_use();
    if in_use != reached.len() as u64 {
        return bad(format!(
            "{in_use} slabs are allocated but {} are reachable",
            reached.len()
        ));
    }
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::Kind;
    use std::collections::HashMap;

    /// A pool of units keyed by address.
    #[derive(Default)]
    struct FakePool(HashMap<u32, Vec<u32>>);

    impl Pool for FakePool {
        fn unit(&self, a: u32) -> Option<&[u32]> {
            self.0.get(&a).map(|v| v.as_slice())
        }
        fn is_allocated(&self, a: u32) -> bool {
            self.0.contains_key(&a)
        }
        fn units_in_use(&self) -> u64 {
            self.0.len() as u64
        }
    }

    const EMPTY: u32 = u32::MAX;

    fn empty_slab() -> Vec<u32> {
        vec![EMPTY; 32]
    }

    fn put_words(slab: &mut [u32], lane: usize, words: u32, x: u64) {
        slab[lane] = x as u32;
        if words == 2 {
            slab[lane + 1] = (x >> 32) as u32;
        }
    }

    /// Writes key `k` (and value `k ^ 0xabc`) into slot `j`, settled (busy bit clear).
    fn put(layout: Layout, slab: &mut [u32], j: u32, k: u64) {
        put_words(slab, layout.key_lane(j), layout.key_words, k);
        if layout.value_words > 0 {
            put_words(slab, layout.value_lane(j), layout.value_words, k ^ 0xabc);
        }
        if !layout.packed() {
            slab[AUX_LANE] &= !(1 << j);
        }
    }

    /// The candidate keys: for 64-bit keys, ones that differ only in their high word
    /// (a bucket hash that dropped it would put them all in one bucket).
    fn candidate(layout: Layout, i: u64) -> u64 {
        if layout.key_words == 2 {
            (i << 32) | 0x5eed
        } else {
            i
        }
    }

    /// A two-bucket table with `per_bucket` keys each (the keys that hash there),
    /// spilling into pool slabs 100, 101, ... as needed.
    fn table_image(
        layout: Layout,
        hash: Universal,
        per_bucket: usize,
    ) -> (Vec<u32>, FakePool, u64) {
        let mut buckets = vec![EMPTY; 64];
        let mut pool = FakePool::default();
        let mut next_unit = 100;
        let mut live = 0;
        let slots = layout.slots() as usize;
        for b in 0..2u32 {
            let keys: Vec<u64> = (0..)
                .map(|i| candidate(layout, i))
                .filter(|&k| hash.bucket(fold_words(k, layout.key_words), 2) == b)
                .take(per_bucket)
                .collect();
            let mut slabs = vec![empty_slab()];
            for (i, &k) in keys.iter().enumerate() {
                if i > 0 && i % slots == 0 {
                    slabs.push(empty_slab());
                }
                put(layout, slabs.last_mut().unwrap(), (i % slots) as u32, k);
                live += 1;
            }
            let addrs: Vec<u32> = (1..slabs.len())
                .map(|_| {
                    next_unit += 1;
                    next_unit
                })
                .collect();
            for (i, slab) in slabs.iter_mut().enumerate() {
                slab[NEXT_LANE] = addrs.get(i).copied().unwrap_or(NULL_SLAB);
            }
            buckets[b as usize * 32..b as usize * 32 + 32].copy_from_slice(&slabs[0]);
            for (a, s) in addrs.iter().zip(slabs.into_iter().skip(1)) {
                pool.0.insert(*a, s);
            }
        }
        (buckets, pool, live)
    }

    fn map_image(hash: Universal, per_bucket: usize) -> (Vec<u32>, FakePool, u64) {
        table_image(Layout::of::<u32, u32>(Kind::Map), hash, per_bucket)
    }

    fn image<'a>(
        buckets: &'a [u32],
        pool: &'a FakePool,
        hash: Universal,
        live: u64,
    ) -> Image<'a, FakePool> {
        Image {
            layout: Layout::of::<u32, u32>(Kind::Map),
            unique: true,
            buckets,
            pool,
            hash,
            live,
            claimed: live,
            step_cap: 100,
        }
    }

    #[test]
    fn a_well_formed_table_passes() {
        let hash = Universal::from_seed(1);
        let (buckets, pool, live) = map_image(hash, 40);
        let s = validate(&image(&buckets, &pool, hash, live)).unwrap();
        assert_eq!((s.live, s.tombstones, s.slabs), (80, 0, 6));
    }

    #[test]
    fn broken_tables_are_caught() {
        let hash = Universal::from_seed(1);
        let (buckets, pool, live) = map_image(hash, 40);
        let check = |buckets: &[u32], pool: &FakePool, live: u64| {
            validate(&image(buckets, pool, hash, live))
                .unwrap_err()
                .to_string()
        };
        // Counter off by one.
        assert!(check(&buckets, &pool, live + 1).contains("counter"));
        // A key in the wrong bucket.
        let mut b = buckets.clone();
        b[0] = b[32];
        assert!(check(&b, &pool, live).contains("belongs in bucket"));
        // A hole before a claimed slot.
        let mut b = buckets.clone();
        b[2] = EMPTY;
        b[3] = EMPTY;
        assert!(check(&b, &pool, live - 1).contains("after an empty one"));
        // A next address that is not allocated.
        let mut b = buckets.clone();
        b[NEXT_LANE] = 7;
        assert!(check(&b, &pool, live).contains("not allocated"));
        // A leaked slab.
        let mut p = FakePool(pool.0.clone());
        p.0.insert(999, empty_slab());
        assert!(check(&buckets, &p, live).contains("reachable"));
        // A cycle.
        let mut p = FakePool(pool.0.clone());
        let first = buckets[NEXT_LANE];
        p.0.get_mut(&first).unwrap()[NEXT_LANE] = first;
        assert!(check(&buckets, &p, live).contains("twice"));
        // The auxiliary lane written.
        let mut b = buckets.clone();
        b[AUX_LANE] = 0;
        assert!(check(&b, &pool, live).contains("auxiliary"));
    }

    #[test]
    fn a_list_past_the_step_cap_is_caught() {
        // 40 keys per bucket are three slabs per list.
        let hash = Universal::from_seed(1);
        let (buckets, pool, live) = map_image(hash, 40);
        let mut img = image(&buckets, &pool, hash, live);
        img.step_cap = 3;
        assert!(validate(&img).is_ok());
        img.step_cap = 2;
        let e = validate(&img).unwrap_err().to_string();
        assert!(e.contains("step cap 2"), "{e}");
    }

    #[test]
    fn duplicates_only_in_multimaps() {
        let hash = Universal::from_seed(3);
        let (mut buckets, pool, live) = map_image(hash, 3);
        buckets[2] = buckets[0];
        let mut img = image(&buckets, &pool, hash, live);
        assert!(validate(&img).unwrap_err().to_string().contains("twice"));
        img.unique = false;
        assert!(validate(&img).is_ok());
    }

    /// Every 64-bit layout: a well-formed table passes (its keys differ only in their
    /// high words and still spread over both buckets), and a live slot still marked busy,
    /// a claimed slot after an empty one, or a key in the wrong bucket are caught.
    #[test]
    fn wide_and_64_bit_layouts_are_checked() {
        let hash = Universal::from_seed(5);
        for layout in [
            Layout::of::<u64, u32>(Kind::Set),
            Layout::of::<u64, u64>(Kind::Map),
            Layout::of::<u64, u32>(Kind::Map),
            Layout::of::<u32, u64>(Kind::Map),
        ] {
            let (buckets, pool, live) = table_image(layout, hash, 25);
            let check = |buckets: &[u32]| {
                validate(&Image {
                    layout,
                    unique: true,
                    buckets,
                    pool: &pool,
                    hash,
                    live,
                    claimed: live,
                    step_cap: 100,
                })
            };
            let s = check(&buckets).unwrap();
            assert_eq!(s.live, 50, "{layout:?}");
            let per_list = 25u64.div_ceil(u64::from(layout.slots()));
            assert_eq!(s.slabs, 2 * per_list, "{layout:?}");

            let mut b = buckets.clone();
            if layout.packed() {
                b[AUX_LANE] = 0;
            } else {
                b[AUX_LANE] |= 1;
            }
            let e = check(&b).unwrap_err().to_string();
            assert!(e.contains("auxiliary"), "{layout:?}: {e}");

            let mut b = buckets.clone();
            let lane = layout.key_lane(0);
            for w in 0..layout.key_words as usize {
                b[lane + w] = b[32 + lane + w];
            }
            let e = check(&b).unwrap_err().to_string();
            assert!(e.contains("belongs in bucket"), "{layout:?}: {e}");

            // The high word alone tells these keys apart: the second key of bucket 0 with
            // a high bit flipped is a new key, checked against its own bucket.
            if layout.key_words == 2 {
                let mut b = buckets.clone();
                b[layout.key_lane(1) + 1] ^= 1 << 31;
                let moved = layout.key(&b, 1);
                let home = hash.bucket(fold_words(moved, 2), 2);
                let r = check(&b);
                assert_eq!(r.is_ok(), home == 0, "{layout:?}: {r:?}");
            }
        }
    }
}
