//! `skiplist`: the skip-list comparisons of Patel et al. (2026) on the local GPU, every
//! call timed end to end (the batch sort included, as the paper counts it):
//!
//! - Fig. 16 analogue: RangeSkipList (SL-OVS) over SkipList (SL-UVM) with both in
//!   host-mapped memory (the zero-copy equivalent of UVM with the accessed-by hint), for
//!   insert and search over the MI, DU and SU sequences, and RangeSkipList in the
//!   `Tiered` placement with its pools 1.5x its device budget;
//! - Table 8: SkipList insertion with the block-cyclic deal of keys to warps (keys per
//!   warp 1–360) over the cyclic deal (1), MI and DU;
//! - Table 9: SkipList insertion with the cyclic deal over grids of 2^4–2^10 thread
//!   blocks (128 threads each) against the full resident grid, MI and DU;
//! - RangeSkipList's keys per warp (1, 32, 180), insert and search, DU and SU;
//! - Table 10: RangeSkipList with keys per range 2^12–2^27 over the paper's 2^21, insert
//!   and search, MI and DU;
//! - the §4.2.1 options (unsorted data nodes, separate pools per layer, index layers
//!   pinned on the device) over the default GFSL, insert and search, DU and SU;
//! - in-memory rates (device memory) next to `GpuBTreeMap` and `LinearProbeMap` in the
//!   same run, plus successor and range rates.
//!
//! `--keys N` sets the keys per sequence (default 2^22; `quick` 2^18).

use gpuds_btree::GpuBTreeMap;
use gpuds_core::Result;
use gpuds_hive::LinearProbeMap;
use gpuds_oversub::workload::Sequence;
use gpuds_oversub::{
    NodeLayout, Placement, PoolLayout, RangeSkipList, RangeSkipListConfig, SkipList, SkipListConfig,
};

use super::{core_error, Accepts, Case, Experiment, Params, Scale};
use crate::bench::Bench;
use crate::report::{Baseline, Row, Unit};
use crate::timing::{time_once, Timing};

/// The `skiplist` experiment.
pub const EXPERIMENT: Experiment = Experiment {
    name: "skiplist",
    about: "RangeSkipList vs SkipList (Patel 2026, Fig. 16, Tables 8-10, the GFSL options) and in-memory rates",
    accepts: Accepts::KEYS,
    plan,
};

const NAME: &str = "skiplist";
const SEED: u64 = 11;

fn plan(params: &Params) -> Vec<Case> {
    let quick = params.scale == Scale::Quick;
    let n = params
        .keys_or(if quick { 1 << 18 } else { 1 << 22 })
        .max(1 << 12);
    let fig: &[Sequence] = if quick {
        &[Sequence::Su]
    } else {
        &[Sequence::Mi, Sequence::Du, Sequence::Su]
    };
    let mut cases: Vec<Case> = fig
        .iter()
        .map(|&s| {
            Case::new(format!("Fig. 16 {}, host-mapped", s.name()), move |b| {
                fig16_rows(b, s, n)
            })
        })
        .collect();
    if !quick {
        cases.push(Case::new("Table 8 keys per warp", move |b| {
            table8_rows(b, n)
        }));
        cases.push(Case::new("Table 9 thread blocks", move |b| {
            table9_rows(b, n)
        }));
        cases.push(Case::new("RangeSkipList keys per warp", move |b| {
            deal_rows(b, n)
        }));
        cases.push(Case::new("Table 10 keys per range", move |b| {
            table10_rows(b, n)
        }));
        cases.push(Case::new("GFSL options", move |b| option_rows(b, n)));
    }
    cases.push(Case::new("in-memory rates", move |b| memory_rows(b, n)));
    cases
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

fn rate(n: usize, ms: f64) -> f64 {
    n as f64 / (ms * 1e-3) / 1e9
}

fn against(r: Row, label: &str, n: usize, base_ms: f64, ms: f64) -> Row {
    r.with_baseline(Some(Baseline {
        label: format!("{label}, this run"),
        rate: rate(n, base_ms),
    }))
    .with_note(format!("{:.2}x {label}", base_ms / ms))
}

/// One insert then one search of all `keys`, timed: (insert ms, search ms).
fn insert_search<T>(
    gpu: &gpuds_core::Gpu,
    t: &mut T,
    keys: &[u32],
    insert: impl Fn(&mut T, &[u32], &[u32]) -> gpuds_oversub::Result<()>,
    search: impl Fn(&mut T, &[u32]) -> gpuds_oversub::Result<()>,
) -> Result<(f64, f64)> {
    let values: Vec<u32> = keys.iter().map(|k| k ^ 0x5bd1_e995).collect();
    let i = time_once(gpu, || insert(t, keys, &values).map_err(err))?;
    let s = time_once(gpu, || search(t, keys).map_err(err))?;
    Ok((i, s))
}

fn skip_ops(gpu: &gpuds_core::Gpu, config: SkipListConfig, keys: &[u32]) -> Result<(f64, f64)> {
    let mut t = SkipList::with_config(gpu, config).map_err(err)?;
    insert_search(
        gpu,
        &mut t,
        keys,
        |t, k, v| t.insert_many(k, v),
        |t, k| t.get_many(k).map(drop),
    )
}

fn range_ops(
    gpu: &gpuds_core::Gpu,
    config: RangeSkipListConfig,
    keys: &[u32],
) -> Result<(f64, f64)> {
    let mut t = RangeSkipList::with_config(gpu, config).map_err(err)?;
    insert_search(
        gpu,
        &mut t,
        keys,
        |t, k, v| t.insert_many(k, v),
        |t, k| t.get_many(k).map(drop),
    )
}

fn fig16_rows(bench: &mut Bench, s: Sequence, n: usize) -> Result<Vec<Row>> {
    let gpu = bench.gpu.clone();
    let keys = s.keys(n, SEED);
    let (ui, us) = skip_ops(
        &gpu,
        SkipListConfig {
            placement: Placement::HostMapped,
            ..Default::default()
        },
        &keys,
    )?;
    let (oi, os) = range_ops(
        &gpu,
        RangeSkipListConfig {
            placement: Placement::HostMapped,
            ..Default::default()
        },
        &keys,
    )?;
    // The tiered placement with a device cache of 1/1.5 of the structure (its pools'
    // bytes, measured on a first build with the same keys). The cache holds whole
    // ranges' pools, so the ranges are sized for about 16 of them over the keys (at
    // 2^21 keys per range the dense sequences here would fill a single pool).
    let rng = (keys.iter().copied().max().unwrap_or(1) as u64 / 16)
        .next_power_of_two()
        .clamp(1 << 12, 1 << 21);
    let mut sizing = RangeSkipList::with_config(
        &gpu,
        RangeSkipListConfig {
            placement: Placement::HostMapped,
            keys_per_range: rng,
            ..Default::default()
        },
    )
    .map_err(err)?;
    sizing.insert_many(&keys, &keys).map_err(err)?;
    let bytes = sizing.stats().map_err(err)?.host_bytes;
    drop(sizing);
    let tiered = RangeSkipListConfig {
        placement: Placement::Tiered {
            device_budget_bytes: (bytes as f64 / 1.5) as u64,
        },
        keys_per_range: rng,
        ..Default::default()
    };
    let (ti, ts) = range_ops(&gpu, tiered, &keys)?;
    let mut rows = Vec::new();
    for (op, u, o, t) in [("insert", ui, oi, ti), ("search", us, os, ts)] {
        let label = format!("Fig. 16 {op}, {}, host-mapped", s.name());
        rows.push(row(label.clone(), "SkipList", n, u));
        rows.push(against(
            row(label, "RangeSkipList", n, o),
            "SkipList",
            n,
            u,
            o,
        ));
        rows.push(against(
            row(
                format!(
                    "Fig. 16 {op}, {}, tiered at 1.5x its budget, 2^{} keys per range",
                    s.name(),
                    rng.trailing_zeros()
                ),
                "RangeSkipList",
                n,
                t,
            ),
            "SkipList host-mapped",
            n,
            u,
            t,
        ));
    }
    Ok(rows)
}

fn table8_rows(bench: &mut Bench, n: usize) -> Result<Vec<Row>> {
    let gpu = bench.gpu.clone();
    let mut rows = Vec::new();
    for s in [Sequence::Mi, Sequence::Du] {
        let keys = s.keys(n, SEED);
        let mut base = None;
        for kpw in [1u32, 30, 60, 120, 180, 300, 360] {
            let config = SkipListConfig {
                keys_per_warp: kpw,
                ..Default::default()
            };
            let (ins, _) = skip_ops(&gpu, config, &keys)?;
            let label = format!("Table 8 insert, {}, {kpw} keys per warp", s.name());
            let r = row(label, "SkipList", n, ins);
            rows.push(match base {
                None => {
                    base = Some(ins);
                    r
                }
                Some(b) => against(r, "1 key per warp", n, b, ins),
            });
        }
    }
    Ok(rows)
}

/// Table 9: SkipList insertion, the cyclic deal, over grids capped at 2^4 ... 2^10 blocks
/// of 128 threads (the paper's blocks are of 512 threads, up to 2^22 of them; a grid
/// beyond the resident blocks runs like the resident grid here, whose kernels loop over
/// the deal), each against the uncapped grid in the same case.
fn table9_rows(bench: &mut Bench, n: usize) -> Result<Vec<Row>> {
    let gpu = bench.gpu.clone();
    let mut rows = Vec::new();
    for s in [Sequence::Mi, Sequence::Du] {
        let keys = s.keys(n, SEED);
        let config = |max_blocks| SkipListConfig {
            keys_per_warp: 1,
            max_blocks,
            ..Default::default()
        };
        let (base, _) = skip_ops(&gpu, config(0), &keys)?;
        rows.push(row(
            format!("Table 9 insert, {}, every resident block", s.name()),
            "SkipList",
            n,
            base,
        ));
        for bits in [4u32, 6, 8, 10] {
            let (ins, _) = skip_ops(&gpu, config(1 << bits), &keys)?;
            let label = format!("Table 9 insert, {}, 2^{bits} blocks", s.name());
            rows.push(against(
                row(label, "SkipList", n, ins),
                "every resident block",
                n,
                base,
                ins,
            ));
        }
    }
    Ok(rows)
}

/// RangeSkipList insert and search over `seqs`, once per setting of one configuration
/// knob (`config` makes the configuration of a setting), each against `base`'s rates
/// measured first in the same case; `label(op, sequence, setting)` names the rows.
fn range_sweep<T: Copy + PartialEq>(
    bench: &mut Bench,
    n: usize,
    seqs: &[Sequence],
    settings: &[T],
    base: (T, &str),
    config: impl Fn(T) -> RangeSkipListConfig,
    label: impl Fn(&str, Sequence, T) -> String,
) -> Result<Vec<Row>> {
    let gpu = bench.gpu.clone();
    let mut rows = Vec::new();
    for &s in seqs {
        let keys = s.keys(n, SEED);
        let (bi, bs) = range_ops(&gpu, config(base.0), &keys)?;
        for &setting in settings {
            let (i, q) = if setting == base.0 {
                (bi, bs)
            } else {
                range_ops(&gpu, config(setting), &keys)?
            };
            for (op, b, ms) in [("insert", bi, i), ("search", bs, q)] {
                let r = row(label(op, s, setting), "RangeSkipList", n, ms);
                rows.push(if setting == base.0 {
                    r
                } else {
                    against(r, base.1, n, b, ms)
                });
            }
        }
    }
    Ok(rows)
}

/// RangeSkipList's deal of keys to warps (the paper's 180 for SL-OVS against the cyclic
/// deal and a warp's worth), insert and search, DU and SU, against 180.
fn deal_rows(bench: &mut Bench, n: usize) -> Result<Vec<Row>> {
    range_sweep(
        bench,
        n,
        &[Sequence::Du, Sequence::Su],
        &[180u32, 1, 32],
        (180, "180 keys per warp"),
        |kpw| RangeSkipListConfig {
            keys_per_warp: kpw,
            ..Default::default()
        },
        |op, s, kpw| format!("RangeSkipList {op}, {}, {kpw} keys per warp", s.name()),
    )
}

fn table10_rows(bench: &mut Bench, n: usize) -> Result<Vec<Row>> {
    range_sweep(
        bench,
        n,
        &[Sequence::Mi, Sequence::Du],
        &[12u32, 15, 18, 21, 24, 27],
        (21, "2^21 keys per range"),
        |bits| RangeSkipListConfig {
            keys_per_range: 1 << bits,
            ..Default::default()
        },
        |op, s, bits| format!("Table 10 {op}, {}, 2^{bits} keys per range", s.name()),
    )
}

fn option_rows(bench: &mut Bench, n: usize) -> Result<Vec<Row>> {
    let gpu = bench.gpu.clone();
    let mut rows = Vec::new();
    let options = [
        ("default (sorted, one pool)", SkipListConfig::default()),
        (
            "unsorted data nodes",
            SkipListConfig {
                layout: NodeLayout::Unsorted,
                ..Default::default()
            },
        ),
        (
            "a pool per layer",
            SkipListConfig {
                pools: PoolLayout::PerLayer,
                ..Default::default()
            },
        ),
        (
            "index layers pinned on the device",
            SkipListConfig {
                pools: PoolLayout::IndexSeparate,
                pin_index_layers: true,
                ..Default::default()
            },
        ),
    ];
    for s in [Sequence::Du, Sequence::Su] {
        let keys = s.keys(n, SEED);
        let mut base = None;
        for (name, mut config) in options {
            config.placement = Placement::HostMapped;
            let (i, q) = skip_ops(&gpu, config, &keys)?;
            for (j, (op, ms)) in [("insert", i), ("search", q)].into_iter().enumerate() {
                let label = format!("GFSL option {op}, {}, host-mapped: {name}", s.name());
                let r = row(label, "SkipList", n, ms);
                rows.push(match base {
                    None => r,
                    Some((bi, bq)) => {
                        let b = if j == 0 { bi } else { bq };
                        against(r, "default", n, b, ms)
                    }
                });
            }
            base.get_or_insert((i, q));
        }
    }
    Ok(rows)
}

fn memory_rows(bench: &mut Bench, n: usize) -> Result<Vec<Row>> {
    let gpu = bench.gpu.clone();
    let keys = Sequence::Su.keys(n, SEED);
    let values = keys.clone();
    let mut lp = LinearProbeMap::<u32, u32>::new(&gpu, (n as u64) * 2).map_err(core_error)?;
    let li = time_once(&gpu, || {
        lp.insert_many(&keys[..], &values[..]).map_err(core_error)
    })?;
    let ls = time_once(&gpu, || {
        lp.get_many(&keys[..]).map(drop).map_err(core_error)
    })?;
    let mut tree = GpuBTreeMap::<u32, u32>::new(&gpu).map_err(core_error)?;
    let bi = time_once(&gpu, || {
        tree.insert_many(&keys, &values).map_err(core_error)
    })?;
    let bs = time_once(&gpu, || tree.get_many(&keys).map(drop).map_err(core_error))?;
    let bn = time_once(&gpu, || {
        tree.successor_many(&keys).map(drop).map_err(core_error)
    })?;
    let mut skip = SkipList::new(&gpu, Placement::Device).map_err(err)?;
    let mut ranged = RangeSkipList::new(&gpu).map_err(err)?;
    let si = time_once(&gpu, || skip.insert_many(&keys, &values).map_err(err))?;
    let ss = time_once(&gpu, || skip.get_many(&keys).map(drop).map_err(err))?;
    let sn = time_once(&gpu, || skip.successor_many(&keys).map(drop).map_err(err))?;
    let ri = time_once(&gpu, || ranged.insert_many(&keys, &values).map_err(err))?;
    let rs = time_once(&gpu, || ranged.get_many(&keys).map(drop).map_err(err))?;
    let rn = time_once(&gpu, || ranged.successor_many(&keys).map(drop).map_err(err))?;
    let spans: Vec<(u32, u32)> = keys
        .iter()
        .take(n / 16)
        .map(|&k| (k, k.saturating_add(1 << 12)))
        .collect();
    let sr = time_once(&gpu, || skip.range_many(&spans).map(drop).map_err(err))?;
    let rr = time_once(&gpu, || ranged.range_many(&spans).map(drop).map_err(err))?;
    let mut rows = Vec::new();
    for (op, base_name, base, s, r) in [
        ("insert", "GpuBTreeMap", bi, si, ri),
        ("search", "GpuBTreeMap", bs, ss, rs),
        ("successor", "GpuBTreeMap", bn, sn, rn),
    ] {
        let label = format!("in-memory {op}, SU, device");
        rows.push(row(label.clone(), base_name, n, base));
        rows.push(against(
            row(label.clone(), "SkipList", n, s),
            base_name,
            n,
            base,
            s,
        ));
        rows.push(against(
            row(label, "RangeSkipList", n, r),
            base_name,
            n,
            base,
            r,
        ));
    }
    for (op, base, s, r) in [("insert", li, si, ri), ("search", ls, ss, rs)] {
        let label = format!("in-memory {op}, SU, device, vs LinearProbeMap");
        rows.push(row(label.clone(), "LinearProbeMap", n, base).with_note("host slices"));
        rows.push(against(
            row(label.clone(), "SkipList", n, s),
            "LinearProbeMap",
            n,
            base,
            s,
        ));
        rows.push(against(
            row(label, "RangeSkipList", n, r),
            "LinearProbeMap",
            n,
            base,
            r,
        ));
    }
    let q = spans.len();
    let label = "in-memory range (about 1 key each), SU, device".to_string();
    rows.push(row(label.clone(), "SkipList", q, sr));
    rows.push(against(
        row(label, "RangeSkipList", q, rr),
        "SkipList",
        q,
        sr,
        rr,
    ));
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans() {
        assert_eq!(plan(&Params::new(Scale::Quick)).len(), 2);
        assert_eq!(plan(&Params::new(Scale::Full)).len(), 9);
    }
}
