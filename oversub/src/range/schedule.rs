//! The order in which a tiered batch's copies and kernels are issued on the three streams,
//! worked out on the host without the GPU, and checked here for races: every two
//! operations that touch the same slot, home or outer entry (one of them writing) are
//! ordered by the streams and their events.

use super::plan::{Load, Step};

/// How many loads of a step share one event between their write-backs (on the
/// write-back stream) and their copies in (on the copy stream): the write-backs of a
/// group run while the copies in of the group before it do, both directions of the link
/// at once, and neither copy engine switches direction between two copies.
pub(super) const WRITE_BACK_GROUP: usize = 32;

/// One operation of a batch, in the order the host issues it. The compute stream holds
/// the kernels; the copy stream the copies in and outer-entry updates; the write-back
/// stream the write-backs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Op {
    /// Compute stream: records `done[j]`: everything before the batch (j = 0), or run
    /// j - 1's kernel and all before it.
    Done(usize),
    /// Copy stream: waits for `done[j]`.
    AwaitDone(usize),
    /// Write-back stream: waits for `done[j]`.
    OutAwaitDone(usize),
    /// Copy stream: the batch's staged outer-entry updates to the device.
    Upload,
    /// Write-back stream: the table in `slot` back to the home of `range`.
    WriteBack { slot: usize, range: usize },
    /// Write-back stream: records `written[g]`, the end of write-back group `g`.
    WrittenBack(usize),
    /// Copy stream: waits for `written[g]`.
    AwaitWrittenBack(usize),
    /// Copy stream: `range`'s table from its home into `slot`.
    CopyIn { slot: usize, range: usize },
    /// Copy stream: the outer-entry updates of step `i` (its loads and evictions).
    SetInner(usize),
    /// Copy stream: records `copied[i]`, the end of step `i`'s copies.
    Copied(usize),
    /// Compute stream: waits for `copied[i]`.
    AwaitCopied(usize),
    /// Compute stream: run `i`'s kernel.
    Kernel(usize),
}

/// The copies of `loads` (one phase of a step: its early or its late loads), each group
/// of [`WRITE_BACK_GROUP`] loads as: the group's write-backs and an event on the
/// write-back stream, then on the copy stream a wait for that event and the group's
/// copies in. `groups` numbers the events.
fn copies(ops: &mut Vec<Op>, loads: &[Load], groups: &mut usize) {
    for group in loads.chunks(WRITE_BACK_GROUP) {
        let mut written = false;
        for l in group {
            if let (true, Some(range)) = (l.write_back, l.evicted) {
                ops.push(Op::WriteBack {
                    slot: l.slot,
                    range,
                });
                written = true;
            }
        }
        if written {
            ops.push(Op::WrittenBack(*groups));
            ops.push(Op::AwaitWrittenBack(*groups));
            *groups += 1;
        }
        ops.extend(group.iter().map(|l| Op::CopyIn {
            slot: l.slot,
            range: l.range,
        }));
    }
}

/// Whether any of `loads` writes its victim back.
fn writes_back(loads: &[Load]) -> bool {
    loads.iter().any(|l| l.write_back && l.evicted.is_some())
}

/// The schedule of a batch planned as `steps` (see the module docs of `tier` for why
/// each wait is enough).
pub(super) fn schedule(steps: &[Step]) -> Vec<Op> {
    let mut ops = Vec::new();
    if steps.iter().any(|s| s.loads().next().is_some()) {
        ops.push(Op::Upload);
    }
    ops.push(Op::Done(0));
    let mut groups = 0;
    for (i, step) in steps.iter().enumerate() {
        if step.loads().next().is_some() {
            // Early copies go to slots run i - 1 does not use: wait for run i - 2.
            ops.push(Op::AwaitDone(i.saturating_sub(1)));
            if writes_back(&step.early) {
                ops.push(Op::OutAwaitDone(i.saturating_sub(1)));
            }
            copies(&mut ops, &step.early, &mut groups);
            if !step.late.is_empty() {
                // Late copies go to slots of run i - 1: wait for its kernel.
                ops.push(Op::AwaitDone(i));
                if writes_back(&step.late) {
                    ops.push(Op::OutAwaitDone(i));
                }
                copies(&mut ops, &step.late, &mut groups);
            }
            ops.push(Op::SetInner(i));
            ops.push(Op::Copied(i));
            ops.push(Op::AwaitCopied(i));
        }
        ops.push(Op::Kernel(i));
        ops.push(Op::Done(i + 1));
    }
    ops
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::range::plan::tests::{random_batches, random_batches_of, RANGES};
    use crate::range::plan::{split_runs, CacheMap, Run};
    use proptest::prelude::*;

    /// The stream an operation runs on.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Lane {
        /// The table's own stream: kernels.
        Compute = 0,
        /// Copies in and outer-entry updates.
        Copy = 1,
        /// Write-backs of dirty victims.
        Out = 2,
    }

    impl Op {
        /// The stream `self` runs on.
        fn lane(self) -> Lane {
            match self {
                Op::Done(_) | Op::AwaitCopied(_) | Op::Kernel(_) => Lane::Compute,
                Op::OutAwaitDone(_) | Op::WriteBack { .. } | Op::WrittenBack(_) => Lane::Out,
                _ => Lane::Copy,
            }
        }
    }

    /// What an operation touches: slots, homes and outer entries, each read or written.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Place {
        Slot(usize),
        Home(usize),
        Entry(usize),
    }

    fn touches(op: Op, runs: &[Run], steps: &[Step], write: bool) -> Vec<(Place, bool)> {
        match op {
            Op::WriteBack { slot, range } => {
                vec![(Place::Slot(slot), false), (Place::Home(range), true)]
            }
            Op::CopyIn { slot, range } => {
                vec![(Place::Slot(slot), true), (Place::Home(range), false)]
            }
            Op::SetInner(i) => steps[i]
                .loads()
                .flat_map(|l| [Some(l.range), l.evicted])
                .flatten()
                .map(|r| (Place::Entry(r), true))
                .collect(),
            // A kernel reads or writes its run's slots, and updates their entries' counts.
            Op::Kernel(i) => steps[i]
                .uses
                .iter()
                .map(|&s| (Place::Slot(s), write))
                .chain(runs[i].ranges.iter().map(|&r| (Place::Entry(r), true)))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The first two conflicting operations of `ops` (in the order they are issued)
    /// that stream order and events leave unordered: vector clocks over the three
    /// streams, a wait taking the clock of the event's record.
    fn first_race(ops: &[Op], runs: &[Run], steps: &[Step], write: bool) -> Option<String> {
        type Clock = [usize; 3];
        let mut last = [[0usize; 3]; 3]; // each stream's clock after its latest op
        let mut clocks: Vec<Clock> = Vec::new(); // after each op
        let mut done: Vec<Clock> = Vec::new();
        let mut copied: Vec<Option<Clock>> = vec![None; steps.len()];
        let mut written: Vec<Option<Clock>> = Vec::new();
        for &op in ops {
            let s = op.lane() as usize;
            let mut c = last[s];
            c[s] += 1;
            let mut merge = |e: Clock| {
                for (x, y) in c.iter_mut().zip(e) {
                    *x = (*x).max(y);
                }
            };
            match op {
                Op::Done(j) => {
                    assert_eq!(j, done.len());
                    done.push(c);
                }
                Op::AwaitDone(j) | Op::OutAwaitDone(j) => merge(done[j]),
                Op::WrittenBack(g) => {
                    assert_eq!(g, written.len());
                    written.push(Some(c));
                }
                Op::AwaitWrittenBack(g) => {
                    merge(written[g].expect("a wait for a recorded write-back event"))
                }
                Op::Copied(i) => copied[i] = Some(c),
                Op::AwaitCopied(i) => merge(copied[i].expect("a wait for a recorded event")),
                _ => {}
            }
            last[s] = c;
            clocks.push(c);
        }
        for (b, &op_b) in ops.iter().enumerate() {
            for (a, &op_a) in ops.iter().enumerate().take(b) {
                let sa = op_a.lane() as usize;
                if clocks[b][sa] >= clocks[a][sa] {
                    continue; // a happens before b
                }
                for (pa, wa) in touches(op_a, runs, steps, write) {
                    for (pb, wb) in touches(op_b, runs, steps, write) {
                        if pa == pb && (wa || wb) {
                            return Some(format!("{op_a:?} and {op_b:?} race on {pa:?}"));
                        }
                    }
                }
            }
        }
        None
    }

    fn check(runs: &[Run], steps: &[Step], write: bool) {
        if let Some(race) = first_race(&schedule(steps), runs, steps, write) {
            panic!("{race}");
        }
    }

    #[test]
    fn the_overlapped_and_the_serial_orders_have_no_race() {
        for slots in 1..=4 {
            let mut map = CacheMap::new(slots, 16);
            for (counts, write) in [
                (vec![1u32; 16], true),
                (vec![2u32; 16], false),
                (vec![1u32; 16], true),
            ] {
                let runs = split_runs(&counts, map.per_run(), |_| true);
                let steps = map.plan(&runs, write).unwrap();
                check(&runs, &steps, write);
            }
        }
    }

    /// Two slots, runs of one range each, written: the plan and schedule of three runs.
    fn three_runs() -> (Vec<Run>, Vec<Step>, Vec<Op>) {
        let mut map = CacheMap::new(2, 8);
        let runs = split_runs(&[0, 1, 1, 1], 1, |_| true);
        let steps = map.plan(&runs, true).unwrap();
        let ops = schedule(&steps);
        (runs, steps, ops)
    }

    #[test]
    fn the_checker_finds_a_wait_one_run_short() {
        let (runs, steps, ops) = three_runs();
        // Run 2's copy goes to run 0's slot: it waits for done[1] (run 0's kernel).
        assert!(ops.contains(&Op::AwaitDone(1)));
        assert_eq!(steps[2].early[0].slot, steps[0].uses[0]);
        let short: Vec<Op> = ops
            .iter()
            .map(|&op| match op {
                Op::AwaitDone(j) => Op::AwaitDone(j.saturating_sub(1)),
                Op::OutAwaitDone(j) => Op::OutAwaitDone(j.saturating_sub(1)),
                other => other,
            })
            .collect();
        let race = first_race(&short, &runs, &steps, true).expect("a race");
        // With the waits one run short, the copy and the write-back of run 2 race with
        // run 0's kernel, and the write-back with run 0's copy into the same slot.
        let slot = format!("Slot({})", steps[0].uses[0]);
        assert!(race.contains(&slot), "{race}");
    }

    /// The first race of [`three_runs`]'s schedule without the operations `drop` picks.
    fn race_without(drop: impl Fn(Op) -> bool) -> String {
        let (runs, steps, ops) = three_runs();
        let kept: Vec<Op> = ops.into_iter().filter(|&op| !drop(op)).collect();
        first_race(&kept, &runs, &steps, true).expect("a race")
    }

    #[test]
    fn the_checker_finds_a_kernel_that_does_not_wait_for_its_copies() {
        let race = race_without(|op| op == Op::AwaitCopied(1));
        assert!(race.contains("Kernel(1)"), "{race}");
    }

    #[test]
    fn the_checker_finds_an_early_copy_into_a_busy_slot() {
        let (runs, mut steps, _) = three_runs();
        // Run 1's copy into run 0's slot, as if run 0's kernel were done.
        steps[1].early[0].slot = steps[0].uses[0];
        steps[1].uses = steps[0].uses.clone();
        assert!(first_race(&schedule(&steps), &runs, &steps, true).is_some());
    }

    #[test]
    fn the_checker_finds_a_copy_in_that_does_not_wait_for_the_write_back() {
        assert!(three_runs().2.contains(&Op::AwaitWrittenBack(0)));
        let race = race_without(|op| op == Op::AwaitWrittenBack(0));
        assert!(race.contains("WriteBack"), "{race}");
    }

    #[test]
    fn a_write_back_waits_for_the_kernel_that_wrote_its_slot() {
        let race = race_without(|op| matches!(op, Op::OutAwaitDone(_)));
        assert!(race.contains("WriteBack"), "{race}");
    }

    #[test]
    fn write_backs_are_grouped() {
        // One slot per range, all dirty, then a sweep of twice as many ranges: every load
        // of the second batch writes a victim back, WRITE_BACK_GROUP to an event.
        let n = 3 * WRITE_BACK_GROUP;
        let mut map = CacheMap::new(n, 2 * n);
        let first: Vec<u32> = (0..2 * n).map(|r| u32::from(r < n)).collect();
        let runs = split_runs(&first, map.per_run(), |_| true);
        map.plan(&runs, true).unwrap();
        let second: Vec<u32> = (0..2 * n).map(|r| u32::from(r >= n)).collect();
        let runs = split_runs(&second, map.per_run(), |_| true);
        let steps = map.plan(&runs, true).unwrap();
        let ops = schedule(&steps);
        check(&runs, &steps, true);
        let backs = ops
            .iter()
            .filter(|op| matches!(op, Op::WriteBack { .. }))
            .count();
        let events = ops
            .iter()
            .filter(|op| matches!(op, Op::WrittenBack(_)))
            .count();
        assert_eq!(backs, n);
        // Every load writes back: one event per group of each step's early and late loads.
        let groups: usize = steps
            .iter()
            .map(|s| {
                s.early.len().div_ceil(WRITE_BACK_GROUP) + s.late.len().div_ceil(WRITE_BACK_GROUP)
            })
            .sum();
        assert_eq!(events, groups);
        assert!(steps
            .iter()
            .any(|s| s.early.len().max(s.late.len()) > WRITE_BACK_GROUP));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        #[test]
        // Caches of 33 to 99 slots over 256 ranges: steps of more loads than a write-back
        // group, early and late, with dirty victims from earlier batches.
        fn large_schedules_have_no_race(
            (slots, per_run, batches) in random_batches_of(33..100, 256, 1..5)
        ) {
            let mut map = CacheMap::new(slots, 256);
            for (counts, write) in &batches {
                let runs = split_runs(counts, per_run, |_| true);
                let steps = map.plan(&runs, *write).unwrap();
                check(&runs, &steps, *write);
            }
        }
    }

    proptest! {
        #[test]
        fn schedules_have_no_race((slots, per_run, batches) in random_batches()) {
            let mut map = CacheMap::new(slots, RANGES);
            for (counts, write) in &batches {
                let runs = split_runs(counts, per_run, |_| true);
                let steps = map.plan(&runs, *write).unwrap();
                check(&runs, &steps, *write);
            }
        }
    }
}
