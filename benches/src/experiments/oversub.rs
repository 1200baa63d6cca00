//! `oversub`: the hash-table comparisons of Patel et al. (2026) on the local GPU:
//!
//! - Figs. 9–10 analogue: RangeTable (HT-OVS) over FlatTable (HT-UVM) with both tables in
//!   host-mapped memory (the zero-copy equivalent of the paper's UVM with the
//!   accessed-by hint), for insert, search (positive), search (negative) and delete over
//!   the eight input sequences of Table 2; every call is timed end to end (the range
//!   table's sort included, as the paper counts it);
//! - in-memory rates at the same size with both tables in device memory, next to
//!   `LinearProbeMap` in the same run.
//!
//! `--keys N` sets the keys per sequence (default 2^24; `quick` 2^22). Not here yet: the
//! `Tiered` placement and so the 25–100 % oversubscription levels, the skip lists and
//! the k-mer applications (see docs/oversub.md).

use gpuds_core::Result;
use gpuds_hive::LinearProbeMap;
use gpuds_oversub::workload::Sequence;
use gpuds_oversub::{FlatTable, Placement, RangeTable, RangeTableConfig};

use super::{core_error, Accepts, Case, CrateError, Experiment, Params, Scale};
use crate::bench::Bench;
use crate::report::{Baseline, Row, Unit};
use crate::timing::{time_once, Timing};

/// The `oversub` experiment.
pub const EXPERIMENT: Experiment = Experiment {
    name: "oversub",
    about: "RangeTable vs FlatTable (Patel 2026) on host-mapped memory over the Table 2 sequences; in-memory vs LinearProbeMap",
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

fn plan(params: &Params) -> Vec<Case> {
    let quick = params.scale == Scale::Quick;
    let n = params
        .keys_or(if quick { 1 << 22 } else { 1 << 24 })
        .max(1 << 12);
    let mut cases: Vec<Case> = Sequence::ALL
        .into_iter()
        .filter(|s| !quick || matches!(s, Sequence::Du | Sequence::Su))
        .map(|s| {
            Case::new(format!("Figs. 9-10 {}, host-mapped", s.name()), move |b| {
                sequence_rows(b, s, n)
            })
        })
        .collect();
    cases.push(Case::new("in-memory rates", move |b| memory_rows(b, n)));
    cases
}

fn err(e: gpuds_oversub::Error) -> gpuds_core::Error {
    core_error(e)
}

fn once(ms: f64) -> Timing {
    Timing {
        median_ms: ms,
        min_ms: ms,
        max_ms: ms,
        reps: 1,
    }
}

fn row(name: String, structure: &str, n: usize, ms: f64) -> Row {
    Row::new(
        NAME,
        &name,
        n as u64,
        once(ms),
        n as f64,
        Unit::GigaQueriesPerSecond,
    )
    .with_structure(structure)
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

/// Keys of the sequence's range that it does not hold (negative queries).
fn negatives(keys: &[u32], n: usize) -> Vec<u32> {
    let set: std::collections::HashSet<u32> = keys.iter().copied().collect();
    let mut out = Vec::with_capacity(n);
    let mut x = 0x9e37_79b9u32;
    while out.len() < n {
        x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        let k = x % (u32::MAX - 2) + 1;
        if !set.contains(&k) {
            out.push(k);
        }
    }
    out
}

fn sequence_rows(bench: &mut Bench, s: Sequence, n: usize) -> Result<Vec<Row>> {
    let gpu = bench.gpu.clone();
    let keys = s.keys(n, SEED);
    let values: Vec<u32> = keys.iter().map(|k| k ^ 0x5bd1_e995).collect();
    let neg = negatives(&keys, n / 4);
    let mut flat = FlatTable::new(&gpu, n as u64, Placement::HostMapped).map_err(err)?;
    let mut range =
        RangeTable::with_config(&gpu, range_config(&keys, Placement::HostMapped)).map_err(err)?;
    let ms = |f: &mut dyn FnMut() -> gpuds_oversub::Result<()>| -> Result<f64> {
        time_once(&gpu, || f().map_err(err))
    };
    let fi = ms(&mut || flat.insert_many(&keys, &values))?;
    let ri = ms(&mut || range.insert_many(&keys, &values))?;
    let fs = ms(&mut || flat.get_many(&keys).map(drop))?;
    let rs = ms(&mut || range.get_many(&keys).map(drop))?;
    let fneg = ms(&mut || flat.contains_many(&neg).map(drop))?;
    let rneg = ms(&mut || range.contains_many(&neg).map(drop))?;
    let fd = ms(&mut || flat.remove_many(&keys).map(drop))?;
    let rd = ms(&mut || range.remove_many(&keys).map(drop))?;
    // The tiered placement: the same table with a device cache of 1/1.5 of its inner
    // tables (50 % oversubscription of the budget), its home in pinned host memory.
    let structure = range.stats().host_bytes;
    let tiered_config = RangeTableConfig {
        placement: Placement::Tiered {
            device_budget_bytes: (structure as f64 / 1.5) as u64,
        },
        ..range_config(&keys, Placement::Device)
    };
    let mut tiered = RangeTable::with_config(&gpu, tiered_config).map_err(err)?;
    let ti = ms(&mut || tiered.insert_many(&keys, &values))?;
    let ts = ms(&mut || tiered.get_many(&keys).map(drop))?;
    let tneg = ms(&mut || tiered.contains_many(&neg).map(drop))?;
    let td = ms(&mut || tiered.remove_many(&keys).map(drop))?;
    let moved = tiered.stats();
    let name = s.name();
    let mut rows = Vec::new();
    for (op, count, f, r, t) in [
        ("insert", n, fi, ri, ti),
        ("search", n, fs, rs, ts),
        ("search negative", n / 4, fneg, rneg, tneg),
        ("delete", n, fd, rd, td),
    ] {
        let label = format!("Fig. 9-10 {op}, {name}, host-mapped");
        let flat_rate = count as f64 / (f * 1e-3) / 1e9;
        rows.push(row(label.clone(), "FlatTable", count, f));
        rows.push(
            row(label, "RangeTable", count, r)
                .with_baseline(Some(Baseline {
                    label: "FlatTable, this run".into(),
                    rate: flat_rate,
                }))
                .with_note(format!(
                    "{:.2}x FlatTable; {} inner tables",
                    f / r,
                    range.stats().containers
                )),
        );
        rows.push(
            row(
                format!("Fig. 9-10 {op}, {name}, tiered at 1.5x its budget"),
                "RangeTable",
                count,
                t,
            )
            .with_baseline(Some(Baseline {
                label: "FlatTable host-mapped, this run".into(),
                rate: flat_rate,
            }))
            .with_note(format!(
                "{:.2}x FlatTable host-mapped, {:.2}x RangeTable host-mapped; {} tables in, {} out",
                f / t,
                r / t,
                moved.moved_in,
                moved.moved_out
            )),
        );
    }
    Ok(rows)
}

fn memory_rows(bench: &mut Bench, n: usize) -> Result<Vec<Row>> {
    let gpu = bench.gpu.clone();
    let keys = Sequence::Du.keys(n, SEED);
    let values = keys.clone();
    let mut lp = LinearProbeMap::<u32, u32>::new(&gpu, (n as u64) * 2).map_err(core_error)?;
    let mut flat = FlatTable::new(&gpu, n as u64, Placement::Device).map_err(err)?;
    let mut range =
        RangeTable::with_config(&gpu, range_config(&keys, Placement::Device)).map_err(err)?;
    let li = time_once(&gpu, || {
        lp.insert_many(&keys[..], &values[..]).map_err(core_error)
    })?;
    let fi = time_once(&gpu, || flat.insert_many(&keys, &values).map_err(err))?;
    let ri = time_once(&gpu, || range.insert_many(&keys, &values).map_err(err))?;
    let ls = time_once(&gpu, || {
        lp.get_many(&keys[..]).map(drop).map_err(core_error)
    })?;
    let fs = time_once(&gpu, || flat.get_many(&keys).map(drop).map_err(err))?;
    let rs = time_once(&gpu, || range.get_many(&keys).map(drop).map_err(err))?;
    let mut rows = Vec::new();
    for (op, l, f, r) in [("insert", li, fi, ri), ("search", ls, fs, rs)] {
        let label = format!("in-memory {op}, DU, device");
        let rate = n as f64 / (l * 1e-3) / 1e9;
        let base = Some(Baseline {
            label: "LinearProbeMap, this run".into(),
            rate,
        });
        rows.push(
            row(label.clone(), "LinearProbeMap", n, l).with_note("host slices, transfers included"),
        );
        rows.push(row(label.clone(), "FlatTable", n, f).with_baseline(base.clone()));
        rows.push(row(label, "RangeTable", n, r).with_baseline(base));
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_and_configs() {
        assert_eq!(plan(&Params::new(Scale::Quick)).len(), 3);
        assert_eq!(plan(&Params::new(Scale::Full)).len(), 9);
        let dense: Vec<u32> = (1..=1000).collect();
        assert!(range_config(&dense, Placement::Device).inner_keys >= 2000);
        let full: Vec<u32> = (1..=(1 << 20)).collect();
        assert_eq!(range_config(&full, Placement::Device).inner_keys, 0);
        let neg = negatives(&dense, 10);
        assert!(neg
            .iter()
            .all(|k| !dense.contains(k) && *k != 0 && *k != u32::MAX));
    }
}
