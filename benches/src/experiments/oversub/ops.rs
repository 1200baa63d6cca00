//! Measuring one table: the operations of Figs. 9–10, their inputs, and one loop that
//! times them on either table and checks every answer.

use gpuds_core::cudarc::driver::CudaSlice;
use gpuds_core::{Gpu, Result};
use gpuds_oversub::workload::{search_queries, values, Sequence};
use gpuds_oversub::{FlatTable, RangeTable, TableStats};

use super::link::Moved;
use super::{err, SEED};
use crate::timing::time_once;

/// One operation of Figs. 9–10.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Op {
    Insert,
    Search,
    /// Search with one query in `every` for an absent key.
    Negative(usize),
    Delete,
}

/// The operations in the order they run on one table.
pub(super) const OPS: [Op; 6] = [
    Op::Insert,
    Op::Search,
    Op::Negative(3),
    Op::Negative(4),
    Op::Negative(5),
    Op::Delete,
];

impl Op {
    pub(super) fn name(self) -> String {
        match self {
            Op::Insert => "insert".into(),
            Op::Search => "search".into(),
            Op::Negative(every) => format!("search 1/{every} negative"),
            Op::Delete => "delete".into(),
        }
    }
}

/// The inputs of one sequence: keys, values, and the search batches with negative
/// queries.
pub(super) struct Input {
    pub keys: Vec<u32>,
    pub values: Vec<u32>,
    /// The search batch of each `Op::Negative(every)`, by `every`.
    pub negatives: Vec<(usize, Vec<u32>)>,
}

impl Input {
    /// Keys and values only (inserts).
    pub(super) fn new(s: Sequence, n: usize) -> Input {
        let keys = s.keys(n, SEED);
        let values = values(&keys, SEED);
        Input {
            keys,
            values,
            negatives: Vec::new(),
        }
    }

    /// With the search batches of every negative operation of [`OPS`].
    pub(super) fn with_negatives(mut self) -> Input {
        for op in OPS {
            if let Op::Negative(every) = op {
                let q = search_queries(&self.keys, every, SEED + every as u64);
                self.negatives.push((every, q));
            }
        }
        self
    }

    fn queries(&self, op: Op) -> Result<&[u32]> {
        match op {
            Op::Search => Ok(&self.keys),
            Op::Negative(every) => self
                .negatives
                .iter()
                .find(|(e, _)| *e == every)
                .map(|(_, q)| q.as_slice())
                .ok_or_else(|| {
                    gpuds_core::Error::InvalidArgument(format!("no batch for {}", op.name()))
                }),
            Op::Insert | Op::Delete => Ok(&[]),
        }
    }
}

/// The operations both tables have, so that one loop measures either: the calls a figure
/// times, in their device forms: inputs already on the device,
/// answers left there (the host forms add pageable copies both tables pay alike, which on
/// a host with slow pageable copies hide the tables' own difference).
pub(super) trait Table {
    /// Takes the memory for `keys` up front (the flat table has its slots from its
    /// construction; the range table reserves the inner tables of the ranges they touch).
    fn reserve(&mut self, keys: &[u32]) -> gpuds_oversub::Result<()>;
    fn insert(
        &mut self,
        keys: &CudaSlice<u32>,
        values: &CudaSlice<u32>,
    ) -> gpuds_oversub::Result<()>;
    fn get(
        &mut self,
        keys: &CudaSlice<u32>,
        values: &mut CudaSlice<u32>,
        found: &mut CudaSlice<u32>,
    ) -> gpuds_oversub::Result<()>;
    fn remove(
        &mut self,
        keys: &CudaSlice<u32>,
        removed: &mut CudaSlice<u32>,
    ) -> gpuds_oversub::Result<()>;
    fn live(&self) -> gpuds_oversub::Result<u64>;
    fn stats(&self) -> TableStats;
}

/// `Table` for a table type, given how it reserves a key domain and inserts a device
/// batch; lookups, removals and the rest are the same calls on both.
macro_rules! table {
    ($t:ty, reserve($rs:ident, $domain:ident) $reserve:block, insert($is:ident, $k:ident, $v:ident) $insert:block) => {
        impl Table for $t {
            fn reserve(&mut self, $domain: &[u32]) -> gpuds_oversub::Result<()> {
                let $rs = self;
                $reserve
            }
            fn insert(
                &mut self,
                $k: &CudaSlice<u32>,
                $v: &CudaSlice<u32>,
            ) -> gpuds_oversub::Result<()> {
                let $is = self;
                $insert
            }
            fn get(
                &mut self,
                keys: &CudaSlice<u32>,
                values: &mut CudaSlice<u32>,
                found: &mut CudaSlice<u32>,
            ) -> gpuds_oversub::Result<()> {
                self.get_many_device(keys, Some(values), found)
            }
            fn remove(
                &mut self,
                keys: &CudaSlice<u32>,
                removed: &mut CudaSlice<u32>,
            ) -> gpuds_oversub::Result<()> {
                self.remove_many_device(keys, removed)
            }
            fn live(&self) -> gpuds_oversub::Result<u64> {
                self.len()
            }
            fn stats(&self) -> TableStats {
                <$t>::stats(self)
            }
        }
    };
}
// The flat table has its slots from its construction.
table!(FlatTable, reserve(_t, _domain) { Ok(()) }, insert(t, keys, values) {
    t.insert_many_device(keys, values)
});
// The range table sorts its batch in place: it gets device copies (inside the clock;
// about 0.1 ms for 2^24 keys and values).
table!(RangeTable, reserve(t, keys) { reserve_touched(t, keys) }, insert(t, keys, values) {
    t.insert_many_device(keys.clone(), values.clone())
});

/// Reserves the inner tables of the ranges `keys` touch (see `touched`).
pub(super) fn reserve_touched(t: &mut RangeTable, keys: &[u32]) -> gpuds_oversub::Result<()> {
    for interval in touched(keys, t.config().range_bits) {
        t.reserve(interval)?;
    }
    Ok(())
}

/// The key intervals of the runs of consecutive ranges (of `2^bits` keys) that `keys`
/// touch: the smallest to the largest key would also take the ranges between a sparse
/// sequence's keys, which hold none.
fn touched(keys: &[u32], bits: u32) -> Vec<std::ops::RangeInclusive<u32>> {
    let mut ranges: Vec<u64> = keys.iter().map(|&k| u64::from(k >> bits)).collect();
    ranges.sort_unstable();
    ranges.dedup();
    ranges
        .chunk_by(|a, b| a + 1 == *b)
        .map(|run| {
            let (first, last) = (run[0], run[run.len() - 1]);
            (first << bits) as u32..=(((last + 1) << bits) - 1) as u32
        })
        .collect()
}

/// One timed call.
#[derive(Clone, Debug)]
pub(super) struct Measured {
    pub op: Op,
    pub count: usize,
    pub ms: f64,
    pub moved: Moved,
    /// What was wrong with its answers, if anything.
    pub wrong: Option<String>,
}

impl Measured {
    /// The note's tail: the answers' check when it failed.
    pub(super) fn flagged(&self, note: String) -> String {
        match &self.wrong {
            Some(w) if note.is_empty() => format!("WRONG: {w}"),
            Some(w) => format!("{note}; WRONG: {w}"),
            None => note,
        }
    }
}

/// Lookups whose answer differs from the table's contents: `queries[i]` holds
/// `values[i]` where it equals `keys[i]`, and is absent elsewhere.
pub(super) fn wrong_answers(
    keys: &[u32],
    values: &[u32],
    queries: &[u32],
    got: &[Option<u32>],
) -> usize {
    let mut wrong = queries.len().abs_diff(got.len());
    for (i, (&q, &g)) in queries.iter().zip(got).enumerate() {
        let want = (q == keys[i]).then_some(values[i]);
        wrong += usize::from(g != want);
    }
    wrong
}

/// Times `ops` on `table`, one call each, and checks every answer.
pub(super) fn run_ops(
    gpu: &Gpu,
    table: &mut dyn Table,
    input: &Input,
    ops: &[Op],
) -> Result<Vec<Measured>> {
    let stream = gpu.stream();
    let n = input.keys.len();
    let keys = stream.clone_htod(&input.keys)?;
    let mut out = Vec::with_capacity(ops.len());
    table.reserve(&input.keys).map_err(err)?;
    for &op in ops {
        let before = table.stats();
        let (ms, wrong) = match op {
            Op::Insert => {
                let values = stream.clone_htod(&input.values)?;
                let ms = time_once(gpu, || table.insert(&keys, &values).map_err(err))?;
                (ms, None)
            }
            Op::Search | Op::Negative(_) => {
                let queries = input.queries(op)?;
                let q = stream.clone_htod(queries)?;
                let mut values = stream.alloc_zeros::<u32>(n)?;
                let mut found = stream.alloc_zeros::<u32>(n.div_ceil(32))?;
                let ms = time_once(gpu, || table.get(&q, &mut values, &mut found).map_err(err))?;
                let (v, f) = (stream.clone_dtoh(&values)?, stream.clone_dtoh(&found)?);
                let got: Vec<Option<u32>> = (0..queries.len())
                    .map(|i| (f[i / 32] >> (i % 32) & 1 == 1).then_some(v[i]))
                    .collect();
                let bad = wrong_answers(&input.keys, &input.values, queries, &got);
                (ms, (bad > 0).then(|| format!("{bad} answers differ")))
            }
            Op::Delete => {
                let live = table.live().map_err(err)?;
                let mut removed = stream.alloc_zeros::<u32>(n.div_ceil(32))?;
                let ms = time_once(gpu, || table.remove(&keys, &mut removed).map_err(err))?;
                let count: u64 = stream
                    .clone_dtoh(&removed)?
                    .iter()
                    .map(|w| u64::from(w.count_ones()))
                    .sum();
                let left = table.live().map_err(err)?;
                let bad = count != live || left != 0;
                (
                    ms,
                    bad.then(|| format!("{count} removed of {live}, {left} left")),
                )
            }
        };
        out.push(Measured {
            op,
            count: n,
            ms,
            moved: Moved::between(&before, &table.stats()),
            wrong,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserves_only_the_ranges_touched() {
        assert_eq!(
            touched(&[5, 1 << 20, 3, u32::MAX - 1], 20),
            vec![0..=(2 << 20) - 1, 0xFFF0_0000..=u32::MAX]
        );
        assert_eq!(
            touched(&[7 << 20, 5 << 20], 20),
            vec![5 << 20..=(6 << 20) - 1, 7 << 20..=(8 << 20) - 1]
        );
        assert!(touched(&[], 20).is_empty());
    }

    #[test]
    fn answers_are_checked() {
        let keys = [5, 6, 7, 8];
        let values = [50, 60, 70, 80];
        let queries = [5, 100, 7, 200];
        let right = [Some(50), None, Some(70), None];
        assert_eq!(wrong_answers(&keys, &values, &queries, &right), 0);
        let lost = [Some(50), None, None, None];
        assert_eq!(wrong_answers(&keys, &values, &queries, &lost), 1);
        let stale = [Some(51), Some(1), Some(70), None];
        assert_eq!(wrong_answers(&keys, &values, &queries, &stale), 2);
        assert_eq!(wrong_answers(&keys, &values, &queries, &right[..2]), 2);
    }

    #[test]
    fn wrong_answers_are_flagged() {
        let mut m = Measured {
            op: Op::Search,
            count: 1,
            ms: 1.0,
            moved: Moved::default(),
            wrong: None,
        };
        assert_eq!(m.flagged("2.00x".into()), "2.00x");
        m.wrong = Some("3 answers differ".into());
        assert_eq!(m.flagged(String::new()), "WRONG: 3 answers differ");
        assert_eq!(m.flagged("2.00x".into()), "2.00x; WRONG: 3 answers differ");
    }

    #[test]
    fn ops_and_inputs() {
        let names: Vec<String> = OPS.iter().map(|o| o.name()).collect();
        assert_eq!(names[2], "search 1/3 negative");
        let input = Input::new(Sequence::Du, 600).with_negatives();
        assert_eq!(input.values.len(), 600);
        for every in [3, 4, 5] {
            let q = input.queries(Op::Negative(every)).unwrap();
            let absent = q.iter().zip(&input.keys).filter(|(q, k)| q != k).count();
            assert_eq!(absent, 600 / every);
        }
        assert_eq!(input.queries(Op::Search).unwrap(), &input.keys[..]);
        assert!(Input::new(Sequence::Du, 10)
            .queries(Op::Negative(3))
            .is_err());
    }
}
