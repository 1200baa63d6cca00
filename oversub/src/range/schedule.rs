//! The order in which a tiered batch's copies and kernels are issued on the two streams,
//! worked out on the host without the GPU, and checked here for races: every two
//! operations that touch the same slot, home or outer entry (one of them writing) are
//! ordered by the streams and their events.

use super::plan::Step;

/// One operation of a batch, in the order the host issues it. The compute stream holds
/// the kernels; the copy stream the copies and outer-entry updates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Op {
    /// Compute stream: records `done[j]`: everything before the batch (j = 0), or run
    /// j - 1's kernel and all before it.
    Done(usize),
    /// Copy stream: waits for `done[j]`.
    AwaitDone(usize),
    /// Copy stream: the batch's staged outer-entry updates to the device.
    Upload,
    /// Copy stream: the table in `slot` back to the home of `range`.
    WriteBack { slot: usize, range: usize },
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

/// The schedule of a batch planned as `steps` (see the module docs of `tier` for why
/// each wait is enough).
pub(super) fn schedule(steps: &[Step]) -> Vec<Op> {
    let mut ops = Vec::new();
    if steps.iter().any(|s| s.loads().next().is_some()) {
        ops.push(Op::Upload);
    }
    ops.push(Op::Done(0));
    for (i, step) in steps.iter().enumerate() {
        if step.loads().next().is_some() {
            // Early copies go to slots run i - 1 does not use: wait for run i - 2.
            ops.push(Op::AwaitDone(i.saturating_sub(1)));
            for (k, l) in step.early.iter().chain(&step.late).enumerate() {
                if k == step.early.len() {
                    // Late copies go to slots of run i - 1: wait for its kernel.
                    ops.push(Op::AwaitDone(i));
                }
                if let (true, Some(range)) = (l.write_back, l.evicted) {
                    ops.push(Op::WriteBack {
                        slot: l.slot,
                        range,
                    });
                }
                ops.push(Op::CopyIn {
                    slot: l.slot,
                    range: l.range,
                });
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
    use crate::range::plan::tests::{random_batches, RANGES};
    use crate::range::plan::{split_runs, CacheMap, Run};
    use proptest::prelude::*;

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

    /// Whether each op runs on the copy stream.
    fn on_copy_stream(op: Op) -> bool {
        !matches!(op, Op::Done(_) | Op::AwaitCopied(_) | Op::Kernel(_))
    }

    /// The first two conflicting operations of `ops` (in the order they are issued)
    /// that stream order and events leave unordered: vector clocks over the two streams,
    /// a wait taking the clock of the event's record.
    fn first_race(ops: &[Op], runs: &[Run], steps: &[Step], write: bool) -> Option<String> {
        let mut last = [[0usize; 2]; 2]; // each stream's clock after its latest op
        let mut clocks: Vec<[usize; 2]> = Vec::new(); // after each op
        let mut done: Vec<[usize; 2]> = Vec::new();
        let mut copied: Vec<Option<[usize; 2]>> = vec![None; steps.len()];
        for &op in ops {
            let s = usize::from(on_copy_stream(op));
            let mut c = last[s];
            c[s] += 1;
            let mut merge = |e: [usize; 2]| {
                c[0] = c[0].max(e[0]);
                c[1] = c[1].max(e[1]);
            };
            match op {
                Op::Done(j) => {
                    assert_eq!(j, done.len());
                    done.push(c);
                }
                Op::AwaitDone(j) => merge(done[j]),
                Op::Copied(i) => copied[i] = Some(c),
                Op::AwaitCopied(i) => merge(copied[i].expect("a wait for a recorded event")),
                _ => {}
            }
            last[s] = c;
            clocks.push(c);
        }
        for (b, &op_b) in ops.iter().enumerate() {
            for (a, &op_a) in ops.iter().enumerate().take(b) {
                let sa = usize::from(on_copy_stream(op_a));
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
                other => other,
            })
            .collect();
        let race = first_race(&short, &runs, &steps, true).expect("a race");
        assert!(race.contains("Kernel(0)"), "{race}");
    }

    #[test]
    fn the_checker_finds_a_kernel_that_does_not_wait_for_its_copies() {
        let (runs, steps, ops) = three_runs();
        let eager: Vec<Op> = ops
            .iter()
            .copied()
            .filter(|&op| op != Op::AwaitCopied(1))
            .collect();
        let race = first_race(&eager, &runs, &steps, true).expect("a race");
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
