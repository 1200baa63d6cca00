//! The tiered placement's plan for a [`RangeSkipList`](super::RangeSkipList), worked out
//! on the host (so that it is tested without a GPU): which range each query needs in the
//! device cache, and how a batch sorted by that range splits into runs whose pools fit
//! the cache together.
//!
//! A query that may leave its key's range has a target range known from the list
//! descriptors alone, because their counts and min / max keys are exact between calls
//! (removals refresh them before returning). The query is rewritten so that its kernel
//! answers it inside the target and never reads another range's nodes:
//!
//! - successor(k) targets r = k >> shift when r holds a key >= k (k <= max_key), and asks
//!   it k; else the next non-empty range s, asked s's first key (its min key answers);
//! - predecessor(k) symmetrically, the previous non-empty range asked its last key;
//! - a range query (lo, hi) becomes one sub-query per non-empty range it meets, clipped to
//!   the range; the sub-queries' pairs, concatenated in range order, are the answer.

use super::layout::{ListDesc, NIL};
use crate::error::{Error, Result};

/// What the planner reads of the lists: which hold keys and their bounds.
pub(crate) struct Ranges {
    shift: u32,
    bounds: Vec<Option<(u32, u32)>>,
    /// `next[r]`: the first non-empty range >= r (`len`: none).
    next: Vec<usize>,
    /// `prev[r]`: the last non-empty range < r (`None`: none).
    prev: Vec<Option<usize>>,
}

impl Ranges {
    /// The ranges of lists `descs` (key k in list k >> shift, shift < 32).
    pub fn new(descs: &[ListDesc], shift: u32) -> Self {
        let bounds: Vec<Option<(u32, u32)>> = descs
            .iter()
            .map(|d| (d.heads[0] != NIL && d.count > 0).then_some((d.min_key, d.max_key)))
            .collect();
        let n = bounds.len();
        let mut next = vec![n; n + 1];
        for r in (0..n).rev() {
            next[r] = if bounds[r].is_some() { r } else { next[r + 1] };
        }
        let mut prev = vec![None; n + 1];
        for r in 1..=n {
            prev[r] = if bounds[r - 1].is_some() {
                Some(r - 1)
            } else {
                prev[r - 1]
            };
        }
        Self {
            shift,
            bounds,
            next,
            prev,
        }
    }

    /// The range of key k (the count of ranges for a key past them all).
    fn of(&self, k: u32) -> usize {
        ((k >> self.shift) as usize).min(self.bounds.len())
    }

    /// The first and last key of range r.
    fn span(&self, r: usize) -> (u32, u32) {
        let lo = (r as u64) << self.shift;
        let hi = ((r as u64 + 1) << self.shift) - 1;
        (lo as u32, hi.min(u64::from(u32::MAX)) as u32)
    }

    /// successor(k) as (target range, key to ask it); `None`: no key >= k.
    pub fn successor(&self, k: u32) -> Option<(usize, u32)> {
        let r = self.of(k);
        match self.bounds.get(r).copied().flatten() {
            Some((_, max)) if k <= max => Some((r, k)),
            _ => {
                let s = *self.next.get(r + 1)?;
                (s < self.bounds.len()).then(|| (s, self.span(s).0))
            }
        }
    }

    /// predecessor(k) as (target range, key to ask it); `None`: no key <= k.
    pub fn predecessor(&self, k: u32) -> Option<(usize, u32)> {
        let r = self.of(k);
        match self.bounds.get(r).copied().flatten() {
            Some((min, _)) if k >= min => Some((r, k)),
            _ => {
                let p = self.prev.get(r).copied().flatten()?;
                Some((p, self.span(p).1))
            }
        }
    }

    /// The sub-queries of the range query (lo, hi): (range, lo', hi') per non-empty range
    /// that holds keys in it, ascending; none when lo > hi.
    pub fn split(&self, lo: u32, hi: u32) -> Vec<(usize, u32, u32)> {
        let mut out = Vec::new();
        if lo > hi {
            return out;
        }
        let last = self.of(hi);
        let mut r = self.next[self.of(lo)];
        while r <= last && r < self.bounds.len() {
            if let Some((min, max)) = self.bounds[r] {
                let (a, b) = self.span(r);
                let (a, b) = (a.max(lo), b.min(hi));
                if a <= max && b >= min {
                    out.push((r, a, b));
                }
            }
            r = self.next[r + 1];
        }
        out
    }
}

/// The end of the run that starts at `start` of a batch whose operations target the
/// ranges `targets` (ascending): the longest stretch whose distinct ranges' pools
/// (`bytes(r)`: `None` when r needs no pool in the cache) fit `budget` together, and those
/// ranges. A single range larger than the budget is an error naming it.
pub(crate) fn next_run(
    targets: &[usize],
    start: usize,
    budget: u64,
    bytes: impl Fn(usize) -> Option<u64>,
) -> Result<(usize, Vec<usize>)> {
    let mut ranges = Vec::new();
    let mut held = 0u64;
    let mut end = start;
    while end < targets.len() {
        let r = targets[end];
        if let Some(b) = bytes(r) {
            if held + b > budget {
                if ranges.is_empty() {
                    return Err(Error::Config(format!(
                        "range {r}'s node pool of {b} bytes is larger than the device budget of {budget} bytes"
                    )));
                }
                break;
            }
            held += b;
            ranges.push(r);
        }
        end += 1;
        // The rest of this range's operations belong to the same run.
        while end < targets.len() && targets[end] == r {
            end += 1;
        }
    }
    Ok((end, ranges))
}

/// A run of a tiered batch: its span of the sorted batch, the lists whose pools it needs
/// in the cache, and whether those fit half the budget (then the next run's copies can
/// go to the other half while its kernels run).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PoolRun {
    pub span: std::ops::Range<usize>,
    pub lists: Vec<usize>,
    pub half: bool,
}

/// The runs of a batch whose operations target `targets` (ascending): each the longest
/// stretch whose pools fit half the budget ([`next_run`]), or, where one pool alone is
/// larger than that, the whole budget (a run that is not a half: copied in serially).
pub(crate) fn plan_runs(
    targets: &[usize],
    budget: u64,
    bytes: impl Fn(usize) -> Option<u64>,
) -> Result<Vec<PoolRun>> {
    let mut runs = Vec::new();
    let mut start = 0;
    while start < targets.len() {
        let (end, lists, half) = match next_run(targets, start, budget / 2, &bytes) {
            Ok((end, lists)) => (end, lists, true),
            Err(_) => {
                let (end, lists) = next_run(targets, start, budget, &bytes)?;
                (end, lists, false)
            }
        };
        runs.push(PoolRun {
            span: start..end,
            lists,
            half,
        });
        start = end;
    }
    Ok(runs)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 8 ranges of 16 keys (shift 4); ranges 1, 2 and 6 hold keys.
    fn ranges() -> Ranges {
        let mut descs = vec![ListDesc::empty(0); 8];
        for (r, lo, hi) in [(1usize, 18u32, 27u32), (2, 32, 32), (6, 100, 110)] {
            descs[r].heads[0] = 0;
            descs[r].count = 2;
            descs[r].min_key = lo;
            descs[r].max_key = hi;
        }
        // A list with a head but no keys is empty.
        descs[4].heads[0] = 0;
        Ranges::new(&descs, 4)
    }

    #[test]
    fn successors_target_the_range_that_answers() {
        let r = ranges();
        assert_eq!(r.successor(0), Some((1, 16)));
        assert_eq!(r.successor(17), Some((1, 17)));
        assert_eq!(r.successor(27), Some((1, 27)));
        assert_eq!(r.successor(28), Some((2, 32)));
        assert_eq!(r.successor(33), Some((6, 96)));
        assert_eq!(r.successor(70), Some((6, 96)));
        assert_eq!(r.successor(110), Some((6, 110)));
        assert_eq!(r.successor(111), None);
        assert_eq!(r.successor(127), None);
        // Past the last range (keys beyond 8 * 16 are no list's).
        assert_eq!(r.successor(u32::MAX), None);
    }

    #[test]
    fn predecessors_target_the_range_that_answers() {
        let r = ranges();
        assert_eq!(r.predecessor(17), None);
        assert_eq!(r.predecessor(18), Some((1, 18)));
        assert_eq!(r.predecessor(31), Some((1, 31)));
        assert_eq!(r.predecessor(32), Some((2, 32)));
        assert_eq!(r.predecessor(99), Some((2, 47)));
        assert_eq!(r.predecessor(100), Some((6, 100)));
        assert_eq!(r.predecessor(127), Some((6, 111)));
        assert_eq!(r.predecessor(u32::MAX), Some((6, 111)));
    }

    #[test]
    fn range_queries_split_over_the_ranges_they_meet() {
        let r = ranges();
        assert_eq!(
            r.split(0, 127),
            vec![(1, 16, 31), (2, 32, 47), (6, 96, 111)]
        );
        assert_eq!(r.split(20, 33), vec![(1, 20, 31), (2, 32, 33)]);
        // Ranges whose keys lie outside the clipped query are left out.
        assert_eq!(r.split(28, 31), vec![]);
        assert_eq!(r.split(33, 99), vec![]);
        assert_eq!(r.split(105, 105), vec![(6, 105, 105)]);
        assert_eq!(r.split(9, 5), vec![]);
    }

    #[test]
    fn the_last_range_spans_to_the_top_key() {
        let mut descs = vec![ListDesc::empty(0); 2];
        descs[1].heads[0] = 0;
        descs[1].count = 1;
        descs[1].min_key = u32::MAX - 1;
        descs[1].max_key = u32::MAX - 1;
        let r = Ranges::new(&descs, 31);
        assert_eq!(r.successor(5), Some((1, 1 << 31)));
        assert_eq!(r.predecessor(u32::MAX), Some((1, u32::MAX)));
        assert_eq!(r.split(0, u32::MAX), vec![(1, 1 << 31, u32::MAX)]);
    }

    #[test]
    fn runs_take_whole_ranges_that_fit_together() {
        let targets = [0, 0, 1, 2, 2, 2, 3, 5, 5];
        let bytes = |r: usize| (r != 3).then_some(10 * (r as u64 + 1));
        // 0 (10) + 1 (20) fit 35; 2 (30) does not.
        assert_eq!(next_run(&targets, 0, 35, bytes).unwrap(), (3, vec![0, 1]));
        // 2 (30), then 3 needs no pool; 5 (60) does not fit.
        assert_eq!(next_run(&targets, 3, 35, bytes).unwrap(), (7, vec![2]));
        let err = next_run(&targets, 7, 35, bytes).unwrap_err().to_string();
        assert!(err.contains("range 5") && err.contains("60 bytes"), "{err}");
        assert_eq!(
            next_run(&targets, 0, 1000, bytes).unwrap(),
            (9, vec![0, 1, 2, 5])
        );
        assert_eq!(next_run(&targets, 9, 1000, bytes).unwrap(), (9, vec![]));
    }

    #[test]
    fn runs_take_half_the_budget_unless_a_pool_is_larger() {
        // Lists 0..5 with 2, 1, 3, 1, 1 operations; pools of 10, 10, 30, 10 bytes (list 4
        // has none yet), a budget of 40: halves of 20.
        let targets = [0, 0, 1, 2, 2, 2, 3, 4];
        let bytes = |l: usize| [Some(10), Some(10), Some(30), Some(10), None][l];
        let runs = plan_runs(&targets, 40, bytes).unwrap();
        let halves = plan_runs(&[0, 1, 3, 3], 40, bytes).unwrap();
        assert_eq!(halves.len(), 2);
        assert!(halves.iter().all(|r| r.half));
        // List 2's pool passes half: its run takes the whole budget (list 3 fits too).
        let want = [(0..3, vec![0, 1], true), (3..8, vec![2, 3], false)];
        assert_eq!(runs.len(), want.len());
        for (run, (span, lists, half)) in runs.iter().zip(want) {
            assert_eq!(
                (run.span.clone(), run.lists.clone(), run.half),
                (span, lists, half)
            );
        }
        // Every operation is in one run, in order; a list's operations never split.
        let mut at = 0;
        for run in &runs {
            assert_eq!(run.span.start, at);
            at = run.span.end;
        }
        assert_eq!(at, targets.len());
        // A pool larger than the whole budget is the error naming its range.
        let err = plan_runs(&targets, 20, bytes).unwrap_err().to_string();
        assert!(err.contains("range 2"), "{err}");
        assert!(plan_runs(&[], 40, bytes).unwrap().is_empty());
    }
}
