//! `oversub`: the hash-table comparisons of Patel et al. (2026), §5.2, on the local GPU,
//! every ratio measured in the same run:
//!
//! - the host link first: pinned copy bandwidth host to device and device to host
//!   (fastest of three copies of 256 MiB), the physical limit of every table kept in
//!   host memory;
//! - Figs. 9–10 analogue, per sequence of Table 2 (MI, DU, DR, SU, SR, SUR, DUL, ZZ):
//!   insert, search (positive), search with 1/3, 1/4 and 1/5 negative queries, delete,
//!   on FlatTable (HT-UVM) and RangeTable (HT-OVS) in host-mapped memory (the zero-copy
//!   equivalent of the paper's UVM with the accessed-by hint), and on RangeTable in the
//!   `Tiered` placement with its inner tables 1.25x, 1.5x, 1.75x and 2x its device
//!   budget (the paper's 25–100 % oversubscription); tiered rows are ratios against
//!   both host-mapped tables and carry their host-link bytes per operation and the time
//!   floor those imply at the measured bandwidth. Every call is timed once, in its
//!   device form (keys on the device before the clock, answers left there: pageable
//!   host copies cost both tables alike and on a slow host hide their difference), the
//!   range table's sort and, tiered, its copies included as the paper counts them; the
//!   range table reserves the inner tables of the ranges the sequence touches before
//!   the clock, as the flat table has its slots from its construction; answers are
//!   checked;
//! - per level, the geomean of RangeTable over FlatTable host-mapped on insert and
//!   search over the sequences (the paper's target: at least 2.06x);
//! - Table 6 (batch size, GBS) and Table 7 (inner table size, RNG) insert sweeps on MI
//!   and DU, host-mapped and tiered at 1.5x, as ratios against the default
//!   configuration (see `sweeps`);
//! - in-memory rates with both tables in device memory next to `LinearProbeMap`.
//!
//! `--keys N` sets the keys per sequence (default 2^24). `quick` runs the link, DU and SU
//! at 1.5x only, and the in-memory rates, at 2^22 keys. `--keys` of 2^31 or more runs
//! instead the beyond-GPU-memory case (`huge`): a tiered table larger than the GPU's
//! whole memory, sized from the device (the number itself only opts in).
//!
//! Not here: the skip lists (Fig. 16, Tables 8–10: `gpuds-bench skiplist`), and
//! repeated timing of these one-shot calls.

mod huge;
mod link;
mod ops;
mod sweeps;

use std::cell::RefCell;
use std::rc::Rc;

use gpuds_core::Result;
use gpuds_hive::LinearProbeMap;
use gpuds_oversub::workload::Sequence;
use gpuds_oversub::{FlatTable, Placement, RangeTable, RangeTableConfig, TableStats};

use super::{core_error, Accepts, Case, CrateError, Experiment, Params, Scale};
use crate::bench::Bench;
use crate::report::{Baseline, Row, Unit};
use crate::timing::{time_once, Timing};
use link::Link;
use ops::{run_ops, wrong_answers, Input, Measured, Op, OPS};

/// The `oversub` experiment.
pub const EXPERIMENT: Experiment = Experiment {
    name: "oversub",
    about: "RangeTable vs FlatTable (Patel 2026, §5.2) over the Table 2 sequences: host-mapped, tiered at 1.25-2x its device budget, Tables 6-7 sweeps, host link; in-memory vs LinearProbeMap; --keys 2^31 or more: a table beyond GPU memory",
    accepts: Accepts::KEYS,
    plan,
};

impl CrateError for gpuds_oversub::Error {
    fn into_core(self) -> std::result::Result<gpuds_core::Error, Self> {
        match self {
            gpuds_oversub::Error::Core(e) => Ok(e),
            other => Err(other),
        }
    }
}

const NAME: &str = "oversub";
const SEED: u64 = 9;
/// The oversubscription levels: a tiered table's inner tables over its device budget.
const LEVELS: [f64; 4] = [1.25, 1.5, 1.75, 2.0];
/// The level of `quick` and of the sweeps.
const LEVEL: f64 = 1.5;
/// The paper's hash-table geomean over its UVM baseline.
const TARGET: f64 = 2.06;

/// What the cases of one run share: the host link, measured by the first case, and the
/// ratios of the sequence cases, summed up by the geomean case.
#[derive(Default)]
struct Shared {
    link: Option<Link>,
    ratios: Vec<Ratio>,
}

type State = Rc<RefCell<Shared>>;

/// One RangeTable figure over FlatTable host-mapped, for the geomeans.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Ratio {
    /// The tiered level, or `None` for RangeTable host-mapped.
    level: Option<f64>,
    op: Op,
    count: usize,
    ms: f64,
    flat_ms: f64,
}

fn plan(params: &Params) -> Vec<Case> {
    let state = State::default();
    let mut cases = vec![link_case(&state)];
    if params.scale == Scale::Full && params.keys.is_some_and(|k| k >= huge::HUGE_KEYS) {
        let s = state.clone();
        cases.push(Case::new("beyond GPU memory: tiered DU", move |b| {
            let link = s.borrow().link;
            huge::rows(b, link)
        }));
        return cases;
    }
    let quick = params.scale == Scale::Quick;
    let n = params
        .keys_or(if quick { 1 << 22 } else { 1 << 24 })
        .max(1 << 12);
    let levels: &'static [f64] = if quick { &[LEVEL] } else { &LEVELS };
    for s in Sequence::ALL
        .into_iter()
        .filter(|s| !quick || matches!(s, Sequence::Du | Sequence::Su))
    {
        let st = state.clone();
        cases.push(Case::new(
            format!("Figs. 9-10 {}, host-mapped and tiered", s.name()),
            move |b| sequence_rows(b, s, n, levels, &st),
        ));
    }
    let st = state.clone();
    cases.push(Case::new("geomeans over the sequences", move |_| {
        Ok(geomean_rows(&st.borrow().ratios, n, levels))
    }));
    if !quick {
        for s in [Sequence::Mi, Sequence::Du] {
            let (a, b) = (state.clone(), state.clone());
            cases.push(Case::new(
                format!("Table 6 batch sizes, {}", s.name()),
                move |bench| sweeps::gbs_rows(bench, s, n, a.borrow().link),
            ));
            cases.push(Case::new(
                format!("Table 7 inner table sizes, {}", s.name()),
                move |bench| sweeps::rng_rows(bench, s, n, b.borrow().link),
            ));
        }
    }
    cases.push(Case::new("in-memory rates", move |b| memory_rows(b, n)));
    cases
}

fn link_case(state: &State) -> Case {
    let state = state.clone();
    Case::new("host link copy bandwidth", move |b| {
        let (link, rows) = link::measure(b)?;
        state.borrow_mut().link = Some(link);
        Ok(rows)
    })
}

fn err(e: gpuds_oversub::Error) -> gpuds_core::Error {
    core_error(e)
}

fn row(name: String, structure: &str, n: usize, ms: f64) -> Row {
    Row::new(
        NAME,
        &name,
        n as u64,
        Timing::once(ms),
        n as f64,
        Unit::GigaQueriesPerSecond,
    )
    .with_structure(structure)
}

/// A row for a figure that was not measured, saying why (rate 0).
fn skipped(name: String, why: String) -> Row {
    let none = Timing {
        median_ms: 0.0,
        min_ms: 0.0,
        max_ms: 0.0,
        reps: 0,
    };
    let mut r = Row::new(NAME, &name, 0, none, 0.0, Unit::GigaQueriesPerSecond)
        .with_structure("RangeTable")
        .with_note(format!("skipped: {why}"));
    r.rate = 0.0;
    r
}

/// Billions of operations per second.
fn rate(count: usize, ms: f64) -> f64 {
    count as f64 / (ms * 1e-3) / 1e9
}

/// A comparison point measured in this run.
fn baseline(label: impl Into<String>, count: usize, ms: f64) -> Option<Baseline> {
    Some(Baseline {
        label: label.into(),
        rate: rate(count, ms),
    })
}

/// A range table sized for the sequence: the paper's full inner tables when the keys
/// are dense, else inner tables of twice the most keys any range gets (sparse keys would
/// otherwise take an inner table of 2^20 keys per range they touch).
pub(crate) fn range_config(keys: &[u32], placement: Placement) -> RangeTableConfig {
    let mut per_range: std::collections::HashMap<u32, u64> = std::collections::HashMap::new();
    for &k in keys {
        *per_range.entry(k >> 20).or_default() += 1;
    }
    let most = per_range.values().copied().max().unwrap_or(1);
    let inner_keys = (2 * most).max(1 << 12);
    RangeTableConfig {
        placement,
        inner_keys: if inner_keys >= 1 << 20 { 0 } else { inner_keys },
        ..Default::default()
    }
}

/// The device cache slots of a tiered table of `containers` inner tables at `level`
/// (inner tables over slots): the nearest whole number, at least one, and fewer than
/// the inner tables when there are two or more (so that the table oversubscribes).
fn cache_slots(containers: u64, level: f64) -> u64 {
    let nearest = (containers as f64 / level).round() as u64;
    nearest.clamp(1, containers.saturating_sub(1).max(1))
}

/// A tiered configuration of `sized` at `level`: the inner tables that `reference` (a
/// table of the same configuration elsewhere, after the same calls) made, over the
/// device budget. `None` when it has fewer than two (nothing to oversubscribe).
fn tiered_at(
    sized: RangeTableConfig,
    reference: &TableStats,
    level: f64,
) -> Option<(RangeTableConfig, u64)> {
    let containers = reference.containers;
    if containers < 2 {
        return None;
    }
    let inner = reference.host_bytes / containers;
    let slots = cache_slots(containers, level);
    let config = RangeTableConfig {
        placement: Placement::Tiered {
            device_budget_bytes: slots * inner,
        },
        ..sized
    };
    Some((config, slots))
}

fn sequence_rows(
    bench: &mut Bench,
    s: Sequence,
    n: usize,
    levels: &[f64],
    state: &State,
) -> Result<Vec<Row>> {
    let gpu = bench.gpu.clone();
    let link = state.borrow().link;
    let input = Input::new(s, n).with_negatives();
    // One table at a time, each dropped before the next: pinned memory is the host's.
    let flat = {
        let mut t = FlatTable::new(&gpu, n as u64, Placement::HostMapped).map_err(err)?;
        run_ops(&gpu, &mut t, &input, &OPS)?
    };
    let (range, reference) = {
        let config = range_config(&input.keys, Placement::HostMapped);
        let mut t = RangeTable::with_config(&gpu, config).map_err(err)?;
        (run_ops(&gpu, &mut t, &input, &OPS)?, t.stats())
    };
    let name = s.name();
    let mut rows = Vec::new();
    let mut ratios = Vec::new();
    for (f, r) in flat.iter().zip(&range) {
        let label = format!("Fig. 9-10 {}, {name}, host-mapped", f.op.name());
        rows.push(
            row(label.clone(), "FlatTable", f.count, f.ms)
                .with_operation(f.op.name())
                .with_note(f.flagged(String::new())),
        );
        rows.push(
            row(label, "RangeTable", r.count, r.ms)
                .with_operation(r.op.name())
                .with_baseline(baseline("FlatTable, this run", f.count, f.ms))
                .with_note(r.flagged(format!(
                    "{:.2}x FlatTable; {} inner tables",
                    f.ms / r.ms,
                    reference.containers
                ))),
        );
        ratios.push(Ratio {
            level: None,
            op: r.op,
            count: r.count,
            ms: r.ms,
            flat_ms: f.ms,
        });
    }
    let sized = range_config(&input.keys, Placement::Device);
    for &level in levels {
        let label = |op: Op| format!("Fig. 9-10 {}, {name}, tiered at {level}x", op.name());
        let Some((config, slots)) = tiered_at(sized, &reference, level) else {
            rows.push(skipped(
                label(Op::Insert),
                format!(
                    "{} inner table, nothing to oversubscribe",
                    reference.containers
                ),
            ));
            continue;
        };
        let tiered = {
            let mut t = RangeTable::with_config(&gpu, config).map_err(err)?;
            run_ops(&gpu, &mut t, &input, &OPS)?
        };
        let shape = format!(
            "{slots} of {} inner tables on the device ({:.2}x)",
            reference.containers,
            reference.containers as f64 / slots as f64
        );
        for ((f, r), t) in flat.iter().zip(&range).zip(&tiered) {
            rows.push(
                row(label(t.op), "RangeTable", t.count, t.ms)
                    .with_operation(t.op.name())
                    .with_baseline(baseline("FlatTable host-mapped, this run", f.count, f.ms))
                    .with_note(t.flagged(format!(
                        "{:.2}x FlatTable host-mapped, {:.2}x RangeTable host-mapped; {shape}; {}",
                        f.ms / t.ms,
                        r.ms / t.ms,
                        t.moved.note(t.count, t.ms, link)
                    ))),
            );
            ratios.push(Ratio {
                level: Some(level),
                op: t.op,
                count: t.count,
                ms: t.ms,
                flat_ms: f.ms,
            });
        }
    }
    state.borrow_mut().ratios.extend(ratios);
    Ok(rows)
}

fn geomean(xs: impl Iterator<Item = f64>) -> Option<f64> {
    let (mut sum, mut k) = (0.0, 0usize);
    for x in xs {
        sum += x.ln();
        k += 1;
    }
    (k > 0).then(|| (sum / k as f64).exp())
}

/// Per level (and host-mapped), the geomean of RangeTable's rates over FlatTable
/// host-mapped on insert and search, as rows whose rate is the geomean rate and whose
/// baseline is FlatTable's geomean rate (so their ratio is the geomean of the ratios).
fn geomean_rows(ratios: &[Ratio], n: usize, levels: &[f64]) -> Vec<Row> {
    let mut rows = Vec::new();
    let placements = std::iter::once(None).chain(levels.iter().map(|&l| Some(l)));
    for level in placements {
        for op in [Op::Insert, Op::Search] {
            let of: Vec<&Ratio> = ratios
                .iter()
                .filter(|r| r.level == level && r.op == op)
                .collect();
            let (Some(ms), Some(flat_ms)) = (
                geomean(of.iter().map(|r| r.ms / r.count as f64)),
                geomean(of.iter().map(|r| r.flat_ms / r.count as f64)),
            ) else {
                continue;
            };
            // Times per key: the geomean of rates is n over n times the geomean time.
            let (ms, flat_ms) = (ms * n as f64, flat_ms * n as f64);
            let what = match level {
                None => "RangeTable host-mapped".to_string(),
                Some(l) => format!("RangeTable tiered at {l}x"),
            };
            let x = flat_ms / ms;
            let verdict = if x >= TARGET { "met" } else { "not met" };
            rows.push(
                row(
                    format!("geomean {}, {what}", op.name()),
                    "RangeTable",
                    n,
                    ms,
                )
                .with_operation(op.name())
                .with_baseline(baseline(
                    "FlatTable host-mapped, geomean, this run",
                    n,
                    flat_ms,
                ))
                .with_note(format!(
                    "{x:.2}x FlatTable host-mapped over {} sequences (the paper's target >= {TARGET}x: {verdict})",
                    of.len()
                )),
            );
        }
    }
    rows
}

fn memory_rows(bench: &mut Bench, n: usize) -> Result<Vec<Row>> {
    let gpu = bench.gpu.clone();
    let keys = Sequence::Du.keys(n, SEED);
    let values = keys.clone();
    let mut lp = LinearProbeMap::<u32, u32>::new(&gpu, (n as u64) * 2).map_err(core_error)?;
    let mut flat = FlatTable::new(&gpu, n as u64, Placement::Device).map_err(err)?;
    let mut range =
        RangeTable::with_config(&gpu, range_config(&keys, Placement::Device)).map_err(err)?;
    ops::reserve_touched(&mut range, &keys).map_err(err)?;
    // Device forms: the keys are on the device before the clock, the answers stay there.
    let stream = gpu.stream();
    let (dk, dv) = (stream.clone_htod(&keys)?, stream.clone_htod(&values)?);
    let (dk2, dv2) = (dk.clone(), dv.clone());
    let mut out = stream.alloc_zeros::<u32>(n)?;
    let mut found = stream.alloc_zeros::<u32>(n.div_ceil(32))?;
    let li = time_once(&gpu, || lp.insert_many(&dk, &dv).map_err(core_error))?;
    let fi = time_once(&gpu, || flat.insert_many_device(&dk, &dv).map_err(err))?;
    let ri = time_once(&gpu, || range.insert_many_device(dk2, dv2).map_err(err))?;
    let ls = time_once(&gpu, || lp.get_many_into(&dk, &mut out).map_err(core_error))?;
    let fs = time_once(&gpu, || {
        flat.get_many_device(&dk, Some(&mut out), &mut found)
            .map_err(err)
    })?;
    let rs = time_once(&gpu, || {
        range
            .get_many_device(&dk, Some(&mut out), &mut found)
            .map_err(err)
    })?;
    let mut rows = Vec::new();
    for (op, l, f, r) in [("insert", li, fi, ri), ("search", ls, fs, rs)] {
        let label = format!("in-memory {op}, DU, device");
        let base = baseline("LinearProbeMap, this run", n, l);
        rows.push(row(label.clone(), "LinearProbeMap", n, l).with_note("keys on the device"));
        rows.push(row(label.clone(), "FlatTable", n, f).with_baseline(base.clone()));
        rows.push(row(label, "RangeTable", n, r).with_baseline(base));
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(params: &Params) -> Vec<String> {
        plan(params).into_iter().map(|c| c.label).collect()
    }

    #[test]
    fn plans() {
        let quick = labels(&Params::new(Scale::Quick));
        assert_eq!(
            quick,
            [
                "host link copy bandwidth",
                "Figs. 9-10 DU, host-mapped and tiered",
                "Figs. 9-10 SU, host-mapped and tiered",
                "geomeans over the sequences",
                "in-memory rates"
            ]
        );
        let full = labels(&Params::new(Scale::Full));
        assert_eq!(full.len(), 1 + 8 + 1 + 4 + 1, "{full:?}");
        assert!(full.contains(&"Table 6 batch sizes, MI".to_string()));
        assert!(full.contains(&"Table 7 inner table sizes, DU".to_string()));
        let big = |keys: u64, scale: Scale| {
            labels(&Params {
                keys: Some(keys),
                ..Params::new(scale)
            })
        };
        assert_eq!(
            big(huge::HUGE_KEYS, Scale::Full),
            ["host link copy bandwidth", "beyond GPU memory: tiered DU"]
        );
        assert_eq!(big(huge::HUGE_KEYS - 1, Scale::Full).len(), full.len());
        assert_eq!(big(huge::HUGE_KEYS, Scale::Quick).len(), quick.len());
    }

    #[test]
    fn range_configs() {
        let dense: Vec<u32> = (1..=1000).collect();
        assert!(range_config(&dense, Placement::Device).inner_keys >= 2000);
        let full: Vec<u32> = (1..=(1 << 20)).collect();
        assert_eq!(range_config(&full, Placement::Device).inner_keys, 0);
    }

    #[test]
    fn cache_slots_at_each_level() {
        // DU at 2^24 keys: 17 inner tables (key 2^24 opens the 17th range).
        let slots: Vec<u64> = LEVELS.iter().map(|&l| cache_slots(17, l)).collect();
        assert_eq!(slots, [14, 11, 10, 9]);
        assert_eq!(cache_slots(4096, 2.0), 2048);
        assert_eq!(cache_slots(2, 1.25), 1);
        assert_eq!(cache_slots(1, 2.0), 1);
        for c in 2..200 {
            for l in LEVELS {
                let s = cache_slots(c, l);
                assert!(s >= 1 && s < c, "{c} {l} {s}");
                assert!(
                    (c as f64 / s as f64 - l).abs() <= l / s as f64,
                    "{c} {l} {s}"
                );
            }
        }
    }

    #[test]
    fn tiered_budgets() {
        let reference = TableStats {
            host_bytes: 17 << 24,
            containers: 17,
            ..Default::default()
        };
        let sized = RangeTableConfig::default();
        let (config, slots) = tiered_at(sized, &reference, 2.0).unwrap();
        assert_eq!(slots, 9);
        assert_eq!(
            config.placement,
            Placement::Tiered {
                device_budget_bytes: 9 << 24
            }
        );
        assert_eq!(config.range_bits, sized.range_bits);
        let one = TableStats {
            host_bytes: 1 << 24,
            containers: 1,
            ..Default::default()
        };
        assert!(tiered_at(sized, &one, 1.5).is_none());
    }

    #[test]
    fn skipped_rows_have_no_rate() {
        let r = skipped("x, DU".into(), "why".into());
        assert_eq!((r.rate, r.size, r.timing.reps), (0.0, 0, 0));
        assert_eq!(r.note, "skipped: why");
        assert_eq!(r.ratio(), None);
    }

    #[test]
    fn geomeans_are_ratios_of_geomeans() {
        let r = |level, op, ms, flat_ms| Ratio {
            level,
            op,
            count: 1000,
            ms,
            flat_ms,
        };
        let ratios = [
            r(Some(1.5), Op::Insert, 1.0, 4.0),
            r(Some(1.5), Op::Insert, 2.0, 2.0),
            r(Some(1.5), Op::Search, 1.0, 1.0),
            r(None, Op::Insert, 1.0, 9.0),
            r(Some(2.0), Op::Delete, 1.0, 1.0),
        ];
        let rows = geomean_rows(&ratios, 1000, &[1.5, 2.0]);
        let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "geomean insert, RangeTable host-mapped",
                "geomean insert, RangeTable tiered at 1.5x",
                "geomean search, RangeTable tiered at 1.5x"
            ]
        );
        assert!((rows[0].ratio().unwrap() - 9.0).abs() < 1e-9);
        assert!((rows[1].ratio().unwrap() - 2.0).abs() < 1e-9);
        assert!(rows[1].note.contains("not met"));
        assert!(rows[0].note.ends_with(": met)"));
        assert!(geomean(std::iter::empty()).is_none());
    }
}
