//! The tiered placement's plan, worked out on the host without the GPU (so that it is
//! tested without one): how a sorted batch splits into runs of ranges, and which cache
//! slot each missing inner table of a run is copied into, evicting whom.
//!
//! # Why runs of half the cache
//!
//! The device cache holds `slots` inner tables. While run *i*'s kernel reads and writes
//! its slots, the copies of run *i + 1* may only go to the other slots. A run therefore
//! needs at most half the slots ([`CacheMap::per_run`]): then run *i + 1* always finds
//! victims outside run *i*, and its copies overlap run *i*'s kernel. A cache of one slot
//! cannot do that: each of its copies waits for the previous kernel (the serial order).
//! The planner itself accepts any runs of at most `slots` ranges; a copy that finds no
//! victim outside the previous run is planned as *late* (after the previous kernel).

use crate::error::{Error, Result};

/// A run of a sorted batch: `len` keys from `start`, whose ranges that need a cache slot
/// (those with an inner table) are `ranges`, ascending.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Run {
    pub start: usize,
    pub len: usize,
    pub ranges: Vec<usize>,
}

/// Splits a sorted batch into runs, given the batch's keys per range (`counts`, indexed
/// by range): consecutive ranges, of which at most `per_run` need a slot (`needs_slot`;
/// a range without an inner table needs none, its lookups answer at once). Ranges
/// without keys are in no run.
#[cfg(test)]
pub(super) fn split_runs(
    counts: &[u32],
    per_run: usize,
    needs_slot: impl Fn(usize) -> bool,
) -> Vec<Run> {
    split_by(counts, per_run, needs_slot, |_| true)
}

/// [`split_runs`], with a run also ending where the next range's residency (`resident`:
/// its inner table is in the cache now) differs from its first range's, and the runs
/// whose ranges are all resident first (in key order, then the others). Runs may run in
/// any order: each covers its own ranges, and every answer goes to its key's position.
/// A sorted batch touching more ranges than the cache holds then reuses every table the
/// last batch left in the cache before it evicts any: with the least recently used
/// eviction and key order alone, the tables left by a batch that swept the same ranges
/// are exactly the ones evicted first, and every range of the next batch misses.
pub(super) fn split_runs_resident_first(
    counts: &[u32],
    per_run: usize,
    needs_slot: impl Fn(usize) -> bool,
    resident: impl Fn(usize) -> bool,
) -> Vec<Run> {
    let mut runs = split_by(counts, per_run, needs_slot, &resident);
    runs.sort_by_key(|run| !run.ranges.iter().all(|&r| resident(r)));
    runs
}

fn split_by(
    counts: &[u32],
    per_run: usize,
    needs_slot: impl Fn(usize) -> bool,
    class: impl Fn(usize) -> bool,
) -> Vec<Run> {
    let per_run = per_run.max(1);
    let mut runs = Vec::new();
    let mut run = Run {
        start: 0,
        len: 0,
        ranges: Vec::new(),
    };
    for (range, &c) in counts.iter().enumerate() {
        if c == 0 {
            continue;
        }
        let slot = needs_slot(range);
        let other_class = run
            .ranges
            .first()
            .is_some_and(|&f| class(f) != class(range));
        if slot && (run.ranges.len() == per_run || other_class) {
            let next = Run {
                start: run.start + run.len,
                len: 0,
                ranges: Vec::new(),
            };
            runs.push(std::mem::replace(&mut run, next));
        }
        if slot {
            run.ranges.push(range);
        }
        run.len += c as usize;
    }
    if run.len > 0 {
        runs.push(run);
    }
    runs
}

/// What one cache slot holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct SlotState {
    /// The range whose inner table is in the slot.
    pub range: Option<usize>,
    /// Whether a kernel may have written it since it was copied in.
    pub dirty: bool,
    /// When it was last needed (the map's clock).
    pub used: u64,
}

/// One inner table copied into a slot, after the slot's previous table (`evicted`) was
/// written back to its home when `write_back`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Load {
    pub slot: usize,
    pub range: usize,
    pub evicted: Option<usize>,
    pub write_back: bool,
}

/// The copies before one run's kernel: `early` ones go to slots the previous run's kernel
/// does not use (they may run while it does), `late` ones to slots it uses (they wait
/// for it: the serial order).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Step {
    pub early: Vec<Load>,
    pub late: Vec<Load>,
    /// The slots of the run's ranges while its kernel runs.
    pub uses: Vec<usize>,
}

impl Step {
    /// Every copy of the step, early ones first (the order they are issued in).
    pub fn loads(&self) -> impl Iterator<Item = &Load> {
        self.early.iter().chain(&self.late)
    }
}

/// Which range each cache slot holds, which are dirty, and their recency: the host's
/// book of the device cache.
#[derive(Clone, Debug)]
pub(super) struct CacheMap {
    slots: Vec<SlotState>,
    /// The slot of each range, or NONE.
    resident: Vec<u32>,
    clock: u64,
}

const NONE: u32 = u32::MAX;

impl CacheMap {
    /// An empty cache of `slots` slots over `num_ranges` ranges.
    pub fn new(slots: usize, num_ranges: usize) -> Self {
        Self {
            slots: vec![SlotState::default(); slots],
            resident: vec![NONE; num_ranges],
            clock: 0,
        }
    }

    /// The slots.
    pub fn slots(&self) -> &[SlotState] {
        &self.slots
    }

    /// The slot holding `range`'s inner table.
    pub fn slot_of(&self, range: usize) -> Option<usize> {
        match self.resident.get(range) {
            Some(&at) if at != NONE => Some(at as usize),
            _ => None,
        }
    }

    /// The most ranges (that need a slot) per run: half the slots, so that the next
    /// run's copies always find slots the running kernel does not use; 1 for a cache of
    /// one slot (which has no such slot: its copies wait for the kernel).
    pub fn per_run(&self) -> usize {
        (self.slots.len() / 2).max(1)
    }

    /// Marks `slot` clean (its table was written back).
    pub fn mark_clean(&mut self, slot: usize) {
        self.slots[slot].dirty = false;
    }

    /// Plans the copies before each run's kernel, runs in order, and books the result:
    /// afterwards every range of every run is (or was, for the run's kernel) resident.
    /// A run of more ranges than slots is an error, before anything is booked.
    /// The ranges of a run (at most the cache's slots) that are resident are touched
    /// (and dirtied when `write`); each missing one takes a victim slot that holds no
    /// range of its run, chosen in this order: slots the previous run does not use
    /// before those it does (early before late), free before taken, clean before dirty,
    /// least recently used first. A dirty victim is written back before the copy.
    pub fn plan(&mut self, runs: &[Run], write: bool) -> Result<Vec<Step>> {
        let n = self.slots.len();
        if let Some(run) = runs.iter().find(|run| run.ranges.len() > n) {
            return Err(Error::Invalid(format!(
                "a run needs {} inner tables but the cache has {n} slots",
                run.ranges.len()
            )));
        }
        let mut previous = vec![false; n];
        let mut steps = Vec::with_capacity(runs.len());
        for run in runs {
            let mut mine = vec![false; n];
            let mut missing = Vec::new();
            for &range in &run.ranges {
                self.clock += 1;
                match self.slot_of(range) {
                    Some(at) => {
                        let slot = &mut self.slots[at];
                        slot.used = self.clock;
                        slot.dirty |= write;
                        mine[at] = true;
                    }
                    None => missing.push(range),
                }
            }
            // n - resident victims for ranges.len() - resident missing ones: enough.
            let mut victims: Vec<usize> = (0..n).filter(|&i| !mine[i]).collect();
            victims.sort_by_key(|&i| {
                let s = &self.slots[i];
                (previous[i], s.range.is_some(), s.dirty, s.used)
            });
            let mut step = Step::default();
            for (&range, &at) in missing.iter().zip(&victims) {
                self.clock += 1;
                let old = self.slots[at];
                if let Some(evicted) = old.range {
                    self.resident[evicted] = NONE;
                }
                self.slots[at] = SlotState {
                    range: Some(range),
                    dirty: write,
                    used: self.clock,
                };
                self.resident[range] = at as u32;
                mine[at] = true;
                let load = Load {
                    slot: at,
                    range,
                    evicted: old.range,
                    write_back: old.range.is_some() && old.dirty,
                };
                if previous[at] {
                    step.late.push(load);
                } else {
                    step.early.push(load);
                }
            }
            step.uses = (0..n).filter(|&i| mine[i]).collect();
            previous = mine;
            steps.push(step);
        }
        Ok(steps)
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use proptest::prelude::*;

    fn run(start: usize, len: usize, ranges: &[usize]) -> Run {
        Run {
            start,
            len,
            ranges: ranges.to_vec(),
        }
    }

    #[test]
    fn resident_runs_come_first_and_never_mix() {
        let counts = [3, 0, 2, 1, 5, 4, 2];
        let resident = |r: usize| r >= 4;
        let runs = split_runs_resident_first(&counts, 2, |r| r != 2, resident);
        assert_eq!(
            runs,
            vec![run(6, 9, &[4, 5]), run(15, 2, &[6]), run(0, 6, &[0, 3])],
            "ranges 4-6 are cached: they run first, without the others"
        );
        // Nothing resident: the key order of split_runs.
        assert_eq!(
            split_runs_resident_first(&counts, 2, |r| r != 2, |_| false),
            split_runs(&counts, 2, |r| r != 2)
        );
    }

    proptest! {
        #[test]
        fn resident_first_runs_cover_the_batch_once(
            counts in proptest::collection::vec(0u32..4, 1..40),
            per_run in 1usize..6,
            resident_bits in any::<u64>(),
        ) {
            let resident = |r: usize| resident_bits >> (r % 64) & 1 == 1;
            let runs = split_runs_resident_first(&counts, per_run, |_| true, resident);
            let mut spans: Vec<(usize, usize)> = runs.iter().map(|r| (r.start, r.len)).collect();
            spans.sort_unstable();
            let mut at = 0;
            for (start, len) in spans {
                prop_assert_eq!(start, at);
                at += len;
            }
            prop_assert_eq!(at, counts.iter().map(|&c| c as usize).sum::<usize>());
            let mut seen = Vec::new();
            let mut past_resident = false;
            for run in &runs {
                prop_assert!(run.ranges.len() <= per_run);
                let all = run.ranges.iter().all(|&r| resident(r));
                let none = run.ranges.iter().all(|&r| !resident(r));
                prop_assert!(all || none, "a run mixes resident and missing ranges");
                prop_assert!(!(past_resident && all && !run.ranges.is_empty()));
                past_resident |= !all;
                seen.extend(run.ranges.iter().copied());
            }
            seen.sort_unstable();
            let want: Vec<usize> = (0..counts.len()).filter(|&r| counts[r] > 0).collect();
            prop_assert_eq!(seen, want);
        }
    }

    #[test]
    fn runs_hold_at_most_per_run_ranges_that_need_a_slot() {
        // Ranges 0..6 with keys 3, 0, 2, 1, 5, 4; range 2 has no inner table.
        let counts = [3, 0, 2, 1, 5, 4];
        let runs = split_runs(&counts, 2, |r| r != 2);
        assert_eq!(
            runs,
            vec![run(0, 6, &[0, 3]), run(6, 9, &[4, 5])],
            "range 2 rides along with the first run"
        );
        let runs = split_runs(&counts, 1, |_| true);
        assert_eq!(
            runs,
            vec![
                run(0, 3, &[0]),
                run(3, 2, &[2]),
                run(5, 1, &[3]),
                run(6, 5, &[4]),
                run(11, 4, &[5])
            ]
        );
        assert!(split_runs(&[0, 0], 3, |_| true).is_empty());
        // No range needing a slot: one run of every key.
        assert_eq!(split_runs(&[1, 2], 1, |_| false), vec![run(0, 3, &[])]);
    }

    #[test]
    fn per_run_is_half_the_slots_and_at_least_one() {
        assert_eq!(CacheMap::new(1, 8).per_run(), 1);
        assert_eq!(CacheMap::new(2, 8).per_run(), 1);
        assert_eq!(CacheMap::new(3, 8).per_run(), 1);
        assert_eq!(CacheMap::new(7, 8).per_run(), 3);
    }

    fn load(slot: usize, range: usize, evicted: Option<usize>, write_back: bool) -> Load {
        Load {
            slot,
            range,
            evicted,
            write_back,
        }
    }

    #[test]
    fn the_next_run_goes_to_slots_the_running_kernel_does_not_use() {
        let mut map = CacheMap::new(4, 16);
        let runs = [run(0, 1, &[1, 2]), run(1, 1, &[3, 4]), run(2, 1, &[5, 6])];
        let steps = map.plan(&runs, true).unwrap();
        assert_eq!(
            steps[0].early,
            vec![load(0, 1, None, false), load(1, 2, None, false)]
        );
        assert_eq!(
            steps[1].early,
            vec![load(2, 3, None, false), load(3, 4, None, false)]
        );
        // Run 2 evicts run 0's (dirty) tables, not run 1's.
        assert_eq!(
            steps[2].early,
            vec![load(0, 5, Some(1), true), load(1, 6, Some(2), true)]
        );
        assert!(steps.iter().all(|s| s.late.is_empty()));
        assert_eq!(map.slot_of(1), None);
        assert_eq!(map.slot_of(6), Some(1));
    }

    #[test]
    fn one_slot_copies_wait_for_the_kernel() {
        let mut map = CacheMap::new(1, 8);
        // Range 2 twice in a row: the second time it is resident.
        let runs = [run(0, 1, &[1]), run(1, 1, &[2]), run(2, 1, &[2])];
        let steps = map.plan(&runs[..2], false).unwrap();
        assert_eq!(steps[0].early, vec![load(0, 1, None, false)]);
        assert!(steps[0].late.is_empty());
        assert!(steps[1].early.is_empty());
        assert_eq!(steps[1].late, vec![load(0, 2, Some(1), false)]);
        let again = map.plan(&runs[2..], true).unwrap();
        assert!(again[0].loads().next().is_none());
        assert_eq!(again[0].uses, vec![0]);
        assert!(
            map.slots()[0].dirty,
            "a resident range is dirtied by a write"
        );
    }

    #[test]
    fn clean_victims_go_before_dirty_ones_then_least_recently_used() {
        let mut map = CacheMap::new(4, 16);
        // Ranges 1, 2 written (dirty), then 3, 4 read (clean), in that order.
        map.plan(&[run(0, 1, &[1, 2])], true).unwrap();
        map.plan(&[run(0, 1, &[3, 4])], false).unwrap();
        // Touch 3 again so that 4 is the least recently used clean one.
        map.plan(&[run(0, 1, &[3])], false).unwrap();
        let steps = map.plan(&[run(0, 1, &[7])], false).unwrap();
        assert_eq!(steps[0].early, vec![load(3, 7, Some(4), false)]);
        let steps = map.plan(&[run(0, 1, &[8])], false).unwrap();
        assert_eq!(steps[0].early, vec![load(2, 8, Some(3), false)]);
        // Three victims: the two clean ones (least recently used first), then the least
        // recently used dirty one, written back.
        let steps = map.plan(&[run(0, 1, &[9, 10, 11])], false).unwrap();
        assert_eq!(
            steps[0].early,
            vec![
                load(3, 9, Some(7), false),
                load(2, 10, Some(8), false),
                load(0, 11, Some(1), true)
            ]
        );
    }

    #[test]
    fn a_run_larger_than_the_cache_is_an_error_that_books_nothing() {
        let mut map = CacheMap::new(2, 8);
        assert!(map
            .plan(&[run(0, 1, &[1]), run(1, 3, &[2, 3, 4])], true)
            .is_err());
        assert_eq!(map.slots(), &[SlotState::default(); 2]);
        assert_eq!(map.slot_of(1), None);
    }

    /// Replays plans on a model of the homes and slots (each table a version number;
    /// a kernel of a writing run bumps the versions of its tables), checking after every
    /// step what the device relies on: each run's tables are in their slots, no copy
    /// goes to a slot of its own run, an early copy never to a slot of the previous run
    /// (and a late one only when no other slot was left), and a clean slot always equals
    /// its home. After the last batch the dirty slots are
    /// written back and every home holds the last version: nothing written is lost.
    fn replay(slots: usize, per_run: usize, ranges: usize, batches: &[(Vec<u32>, bool)]) {
        let mut map = CacheMap::new(slots, ranges);
        let mut home = vec![0u64; ranges];
        let mut truth = vec![0u64; ranges];
        let mut device: Vec<Option<(usize, u64)>> = vec![None; slots];
        for (counts, write) in batches {
            let runs = split_runs(counts, per_run, |_| true);
            let steps = map.plan(&runs, *write).unwrap();
            let mut previous: Vec<usize> = Vec::new();
            for (run, step) in runs.iter().zip(&steps) {
                for l in step.loads() {
                    if let Some((old, _)) = device[l.slot] {
                        assert!(
                            !run.ranges.contains(&old),
                            "a copy over its own run's table"
                        );
                    }
                    match (device[l.slot], l.evicted) {
                        (Some((old, v)), Some(e)) => {
                            assert_eq!(old, e);
                            if l.write_back {
                                home[old] = v;
                            } else {
                                assert_eq!(home[old], v, "a clean victim differs from its home");
                            }
                        }
                        (None, None) => {}
                        other => panic!("slot {} holds {:?}", l.slot, other),
                    }
                    device[l.slot] = Some((l.range, home[l.range]));
                }
                for l in &step.early {
                    assert!(!previous.contains(&l.slot), "early copy into a busy slot");
                }
                let mine: Vec<usize> = run.ranges.iter().map(|&r| map_slot(&device, r)).collect();
                if !step.late.is_empty() {
                    assert!(
                        (0..slots).all(|i| previous.contains(&i) || mine.contains(&i)),
                        "a late copy while a slot outside the previous run was free to take"
                    );
                }
                for (&r, &at) in run.ranges.iter().zip(&mine) {
                    if *write {
                        truth[r] += 1;
                        device[at] = Some((r, truth[r]));
                    }
                }
                previous = mine;
            }
            for (i, s) in map.slots().iter().enumerate() {
                if let (false, Some((r, v))) = (s.dirty, device[i]) {
                    assert_eq!(home[r], v, "clean slot {i} differs from its home");
                }
            }
        }
        for (i, d) in device.iter().enumerate() {
            if map.slots()[i].dirty {
                let (r, v) = d.unwrap();
                home[r] = v;
                map.mark_clean(i);
            }
        }
        assert_eq!(home, truth);
    }

    /// The slot that holds `range` on the model device (every range of a run must be in one).
    fn map_slot(device: &[Option<(usize, u64)>], range: usize) -> usize {
        device
            .iter()
            .position(|d| d.is_some_and(|(r, _)| r == range))
            .unwrap_or_else(|| panic!("range {range} is not on the device for its run"))
    }

    /// Ranges of the random batches.
    pub const RANGES: usize = 12;

    /// A cache of 1 to 5 slots, runs of half of it (the table's choice: all copies
    /// early) or of all of it (copies early and late in one step), and batches of keys
    /// per range (0 to 2 each), writing or not.
    pub fn random_batches() -> impl Strategy<Value = (usize, usize, Vec<(Vec<u32>, bool)>)> {
        random_batches_of(1..6, RANGES, 1..12)
    }

    /// [`random_batches`]' shape with caches of `slots` slots over `ranges` ranges and
    /// `batches` batches.
    pub fn random_batches_of(
        slots: std::ops::Range<usize>,
        ranges: usize,
        batches: std::ops::Range<usize>,
    ) -> impl Strategy<Value = (usize, usize, Vec<(Vec<u32>, bool)>)> {
        let batch = (prop::collection::vec(0u32..3, ranges), any::<bool>());
        (slots, any::<bool>(), prop::collection::vec(batch, batches)).prop_map(
            |(slots, wide, batches)| {
                let per_run = if wide {
                    slots
                } else {
                    CacheMap::new(slots, 1).per_run()
                };
                (slots, per_run, batches)
            },
        )
    }

    proptest! {
        #[test]
        fn plans_lose_no_write((slots, per_run, batches) in random_batches()) {
            replay(slots, per_run, RANGES, &batches);
        }
    }
}
