//! `slabhash`: the slab hash paper's experiments (Ashkiani et al., 2018, §VI) on gpuds'
//! SlabHashMap of u32 keys and values.
//!
//! - The 2^24-key rows at an average slab count of 0.7 (memory utilization about 0.6):
//!   build, search of present and of absent keys, delete, each against the published
//!   figures of the original implementation on the same GPU (the searches also as a
//!   fraction of the warp line-read limit). `quick` runs these.
//! - Fig. 4: 2^22 elements, buckets swept: build, search-all and search-none rates
//!   against the memory utilization reached.
//! - Fig. 5: memory utilization near 0.6, rates against the number of elements.
//! - Fig. 6: batches of 32k, 64k and 128k new elements inserted until 2M, against
//!   rebuilding a static table (gpuds-hive's LinearProbeMap at load 0.65) from scratch
//!   after every batch.
//! - Fig. 7: the concurrent benchmark, Γ0 = (0.5, 0.5, 0, 0), Γ1 = (0.2, 0.2, 0.3, 0.3),
//!   Γ2 = (0.1, 0.1, 0.4, 0.4), one mixed kernel per batch, against the initial memory
//!   utilization.
//! - FLUSH after deleting half of 2^22 elements, in slabs visited per second.
//!
//! Every timed call is the public batch API on device inputs: the reserved-key check
//! (one kernel and a synchronization) and the status read are inside the timing. Keys
//! are distinct, fresh per repetition (the `linear` experiment's seeded bijection, which
//! avoids the same two reserved values). The figures' rows name their figure, so that
//! `--plot DIR` draws them (see [`crate::plot`]).
//!
//! `--keys N` replaces the fixed sizes: the target rows', Fig. 4's and 7's initial
//! elements (Fig. 7 then runs batches of N/4), Fig. 6's final count and FLUSH's, and
//! Fig. 5 sweeps 2^18, 2^20, ... up to N. `--load` gives Fig. 4 and 7 their memory
//! utilizations: each is turned into the average slab count expected to reach it
//! ([`beta_for_utilization`]); the rows carry the utilization measured.

use gpuds_core::cudarc::driver::{CudaSlice, PushKernelArg};
use gpuds_core::{Error, Gpu, Kernel, Result};
use gpuds_hive::LinearProbeMap;
use gpuds_slabhash::{DeviceBatch, MapOp, SlabHashConfig, SlabHashMap};

use super::core_error;
use super::limits;
use super::{Accepts, Case, Experiment, Params, Scale};
use crate::bench::{Bench, Limit};
use crate::peers;
use crate::report::{Row, Unit};
use crate::timing::{time_once, Timing};

/// The `slabhash` experiment.
pub const EXPERIMENT: Experiment = Experiment {
    name: "slabhash",
    about: "SlabHashMap: the slab hash paper's Fig. 4-7, FLUSH, and the 2^24 target rows",
    accepts: Accepts::WIDE_KEYS_LOAD,
    plan,
};

/// `slabhash-targets`: the 2^24 target rows only.
pub const TARGETS: Experiment = Experiment {
    name: "slabhash-targets",
    about: "SlabHashMap: the 2^24 target rows only (a part of `slabhash`)",
    accepts: Accepts::KEYS,
    plan: targets_plan,
};

const NAME: &str = "slabhash";

fn target_case(params: &Params) -> Case {
    let n = params.keys_or(1 << 24);
    Case::new(
        format!("{} keys, beta 0.7", crate::report::size_label(n as u64)),
        move |b| targets(b, n),
    )
}

/// The average slab counts of a swept figure: `defaults`, or the ones expected to reach
/// the `--load` utilizations.
fn betas(params: &Params, defaults: &[f64]) -> Vec<f64> {
    match &params.loads {
        Some(loads) => loads.iter().map(|&u| beta_for_utilization(u)).collect(),
        None => defaults.to_vec(),
    }
}

fn plan(params: &Params) -> Vec<Case> {
    if super::wide::asked(params) {
        return super::wide::plan(super::wide::Structure::SlabHash, params);
    }
    if params.scale == Scale::Quick {
        return vec![target_case(params)];
    }
    let n = params.keys_or(1 << 22);
    let fig4_betas = betas(params, &[0.1, 0.2, 0.3, 0.5, 0.7, 0.9, 1.1, 1.5, 2.0, 3.0]);
    let fig7_betas = betas(params, &[0.2, 0.7, 1.5, 3.0]);
    let fig5_sizes = params.sweep(1 << 18, &(18..=24).map(|l| 1usize << l).collect::<Vec<_>>());
    let fig6_total = params.keys_or(1 << 21);
    vec![
        target_case(params),
        Case::new("Fig. 4: buckets swept", move |b| fig4(b, n, &fig4_betas)),
        Case::new("Fig. 5: utilization 0.6, sizes swept", move |b| {
            fig5(b, &fig5_sizes)
        }),
        Case::new("Fig. 6: incremental batches", move |b| fig6(b, fig6_total)),
        Case::new("Fig. 7: concurrent mixes", move |b| fig7(b, n, &fig7_betas)),
        Case::new("FLUSH", move |b| flush(b, n)),
    ]
}

fn targets_plan(params: &Params) -> Vec<Case> {
    match params.scale {
        // `quick` already runs the `slabhash` quick plan, which is these rows.
        Scale::Quick => Vec::new(),
        Scale::Full => vec![target_case(params)],
    }
}

/// The memory utilization expected at average slab count `beta` (15 pairs per 128-byte
/// slab): a bucket receives Poisson(15 beta) elements and holds at least one slab.
pub fn expected_utilization(beta: f64) -> f64 {
    let lambda = 15.0 * beta;
    let last = (lambda + 12.0 * lambda.sqrt() + 60.0) as u64;
    let (mut p, mut slabs) = ((-lambda).exp(), 0.0);
    for k in 0..=last {
        if k > 0 {
            p *= lambda / k as f64;
        }
        slabs += p * k.div_ceil(15).max(1) as f64;
    }
    8.0 * lambda / (128.0 * slabs)
}

/// The average slab count whose [`expected_utilization`] is `utilization` (bisection;
/// utilizations beyond reach, about 0.91, give the largest count tried, 16).
pub fn beta_for_utilization(utilization: f64) -> f64 {
    let (mut lo, mut hi) = (1e-3, 16.0);
    if expected_utilization(hi) <= utilization {
        return hi;
    }
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        if expected_utilization(mid) < utilization {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// Distinct keys (and values i + 1) made on the device for one seed: `keys` are indices
/// 0..n of the bijection, `misses` indices n..2n.
struct Inputs {
    gpu: Gpu,
    kernel: Kernel,
    keys: CudaSlice<u32>,
    values: CudaSlice<u32>,
    misses: CudaSlice<u32>,
}

impl Inputs {
    fn new(gpu: &Gpu, n: usize) -> Result<Self> {
        let kernel = gpu
            .load(&super::linear::program())?
            .kernel("linear_bench_keys")?;
        let stream = gpu.stream();
        Ok(Self {
            gpu: gpu.clone(),
            kernel,
            keys: stream.alloc_zeros(n)?,
            values: stream.alloc_zeros(n)?,
            misses: stream.alloc_zeros(n)?,
        })
    }

    fn generate(&mut self, seed: u32) -> Result<()> {
        let n = self.keys.len() as u64;
        let shape = self.gpu.grid_for(&self.kernel, n as usize, 256)?;
        let stream = self.gpu.stream();
        let (zero, null) = (0u64, 0u64);
        let mut args = stream.launch_builder(self.kernel.func());
        args.arg(&mut self.keys)
            .arg(&mut self.values)
            .arg(&n)
            .arg(&zero)
            .arg(&seed);
        // SAFETY: linear_bench_keys writes keys[..n] and values[..n].
        unsafe { args.launch(shape) }?;
        let mut args = stream.launch_builder(self.kernel.func());
        args.arg(&mut self.misses)
            .arg(&null)
            .arg(&n)
            .arg(&n)
            .arg(&seed);
        // SAFETY: the same kernel with a null value pointer writes misses[..n].
        unsafe { args.launch(shape) }?;
        Ok(())
    }
}

fn map_with_buckets(gpu: &Gpu, buckets: u32, n: usize) -> Result<SlabHashMap> {
    let mut config = SlabHashConfig {
        buckets,
        ..Default::default()
    };
    config.alloc.initial_units = ((n as u64) / 15).max(1 << 14);
    SlabHashMap::with_config(gpu, config).map_err(core_error)
}

/// Build, search-all, search-none (and delete) rates of one table.
struct Rates {
    build: Timing,
    hit: Timing,
    miss: Timing,
    delete: Option<Timing>,
    utilization: f64,
    beta: f64,
    checked: bool,
}

fn measure_table(
    bench: &mut Bench,
    map: &mut SlabHashMap,
    n: usize,
    with_delete: bool,
) -> Result<Rates> {
    let mut inputs = Inputs::new(&bench.gpu, n)?;
    let build = bench.timer.measure(|rep| {
        inputs.generate(rep.seed())?;
        map.clear().map_err(core_error)?;
        rep.time(|| {
            map.insert_many(&inputs.keys, &inputs.values)
                .map_err(core_error)
        })
    })?;
    let stats = map.stats().map_err(core_error)?;
    let mut out = bench.gpu.stream().alloc_zeros::<u32>(n)?;
    let hit = bench.timer.measure(|rep| {
        rep.time(|| {
            map.get_many_into(&inputs.keys, &mut out)
                .map_err(core_error)
        })
    })?;
    let stream = bench.gpu.stream();
    let found = stream.clone_dtoh(&out)?;
    let mut checked = found.iter().enumerate().all(|(i, &v)| v == i as u32 + 1);
    let miss = bench.timer.measure(|rep| {
        rep.time(|| {
            map.get_many_into(&inputs.misses, &mut out)
                .map_err(core_error)
        })
    })?;
    checked &= stream.clone_dtoh(&out)?.iter().all(|&v| v == u32::MAX);
    checked &= map.len().map_err(core_error)? == n;
    let delete = if with_delete {
        let t = bench.timer.measure(|rep| {
            inputs.generate(rep.seed())?;
            map.clear().map_err(core_error)?;
            map.insert_many(&inputs.keys, &inputs.values)
                .map_err(core_error)?;
            rep.time(|| map.remove_many(&inputs.keys).map_err(core_error))
        })?;
        checked &= map.is_empty().map_err(core_error)?;
        Some(t)
    } else {
        None
    };
    Ok(Rates {
        build,
        hit,
        miss,
        delete,
        utilization: stats.memory_utilization,
        beta: stats.beta,
        checked,
    })
}

fn check_note(checked: bool) -> &'static str {
    if checked {
        "results checked"
    } else {
        "RESULTS WRONG: the rate is meaningless"
    }
}

/// The 2^24 rows at β = 0.7, against the original's published figures.
fn targets(bench: &mut Bench, n: usize) -> Result<Vec<Row>> {
    let line = limits::ensure(bench, Limit::LineReads, Scale::Quick)?;
    let gpu = bench.gpu.clone();
    let mut map = SlabHashMap::<u32, u32>::new(&gpu, n).map_err(core_error)?;
    let r = measure_table(bench, &mut map, n, true)?;
    let device = gpu.info().name.clone();
    let shape = format!(
        "util {:.2}, beta {:.2}, B {}; {}",
        r.utilization,
        r.beta,
        map.config().buckets,
        check_note(r.checked)
    );
    let mut rows = Vec::new();
    let specs = [
        (
            "insert (REPLACE), u32",
            "insert",
            r.build,
            Unit::GigaKeysPerSecond,
        ),
        (
            "search, present keys",
            "find hit",
            r.hit,
            Unit::GigaQueriesPerSecond,
        ),
        (
            "search, absent keys",
            "find miss",
            r.miss,
            Unit::GigaQueriesPerSecond,
        ),
    ];
    for (name, op, timing, unit) in specs {
        let mut row = Row::new(NAME, name, n as u64, timing, n as f64, unit)
            .with_baseline(peers::slabhash(&device, op));
        let note = if unit == Unit::GigaQueriesPerSecond && line > 0.0 {
            format!("{shape}; {:.0}% of line reads", 100.0 * row.rate / line)
        } else {
            shape.clone()
        };
        row = row.with_note(note);
        rows.push(row);
    }
    if let Some(d) = r.delete {
        rows.push(
            Row::new(
                NAME,
                "delete",
                n as u64,
                d,
                n as f64,
                Unit::GigaKeysPerSecond,
            )
            .with_baseline(peers::slabhash(&device, "erase"))
            .with_note(shape),
        );
    }
    Ok(rows)
}

/// The build, search-all and search-none rows of one table of a swept figure.
fn sweep_rows(
    figure: &str,
    n: usize,
    r: &Rates,
    note: &str,
    name: impl Fn(&str) -> String,
) -> Vec<Row> {
    [
        ("build", r.build, Unit::GigaKeysPerSecond),
        ("search all", r.hit, Unit::GigaQueriesPerSecond),
        ("search none", r.miss, Unit::GigaQueriesPerSecond),
    ]
    .into_iter()
    .map(|(what, t, unit)| {
        Row::new(NAME, &name(what), n as u64, t, n as f64, unit)
            .with_operation(what)
            .with_load(r.utilization)
            .in_figure(figure, None)
            .with_note(note)
    })
    .collect()
}

/// Fig. 4: n elements (2^22), B swept over average slab counts (0.1 to 3).
fn fig4(bench: &mut Bench, n: usize, betas: &[f64]) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    for &beta in betas {
        let buckets = gpuds_slabhash::buckets_for(n, 15, beta);
        let gpu = bench.gpu.clone();
        let mut map = map_with_buckets(&gpu, buckets, n)?;
        let r = measure_table(bench, &mut map, n, false)?;
        let note = format!(
            "B {buckets}, beta {:.2}, util {:.3}; {}",
            r.beta,
            r.utilization,
            check_note(r.checked)
        );
        rows.extend(sweep_rows("fig4", n, &r, &note, |what| {
            format!("fig4 {what}, util {:.2}", r.utilization)
        }));
    }
    Ok(rows)
}

/// Fig. 5: β = 0.7 (utilization near 0.6), n over `sizes` (2^18 to 2^24).
fn fig5(bench: &mut Bench, sizes: &[usize]) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    for &n in sizes {
        let gpu = bench.gpu.clone();
        let mut map = SlabHashMap::<u32, u32>::new(&gpu, n).map_err(core_error)?;
        let r = measure_table(bench, &mut map, n, false)?;
        let note = format!("util {:.3}; {}", r.utilization, check_note(r.checked));
        rows.extend(sweep_rows("fig5", n, &r, &note, |what| {
            format!("fig5 {what}")
        }));
    }
    Ok(rows)
}

/// Fig. 6: batches of 32k, 64k, 128k up to `total` (2M) elements: the slab hash takes
/// each batch as it comes (B for utilization 0.65 at the end); the static baseline is
/// rebuilt from scratch with everything so far after each batch (a fresh table at load
/// 0.65).
fn fig6(bench: &mut Bench, total: usize) -> Result<Vec<Row>> {
    let gpu = bench.gpu.clone();
    let mut inputs = Inputs::new(&gpu, total)?;
    inputs.generate(0x6a6a)?;
    let mut rows = Vec::new();
    for batch in [32usize << 10, 64 << 10, 128 << 10] {
        // β ≈ 0.8 gives about 0.65 utilization once everything is in.
        let buckets = gpuds_slabhash::buckets_for(total, 15, 0.8);
        let mut map = map_with_buckets(&gpu, buckets, total)?;
        let (mut incremental, mut rebuild) = (0.0, 0.0);
        for start in (0..total).step_by(batch) {
            let end = (start + batch).min(total);
            let (k, v) = (
                inputs.keys.slice(start..end),
                inputs.values.slice(start..end),
            );
            incremental += time_once(&gpu, || map.insert_many(&k, &v).map_err(core_error))?;
            let capacity = (end as f64 / 0.65).ceil() as u64;
            let mut table = LinearProbeMap::<u32, u32>::new(&gpu, capacity)
                .map_err(|e| Error::InvalidArgument(format!("linear probing: {e}")))?;
            gpu.synchronize()?;
            let (k, v) = (inputs.keys.slice(..end), inputs.values.slice(..end));
            rebuild += time_once(&gpu, || {
                table
                    .insert_many(&k, &v)
                    .map_err(|e| Error::InvalidArgument(format!("linear probing: {e}")))
            })?;
        }
        let checked = map.len().map_err(core_error)? == total;
        let stats = map.stats().map_err(core_error)?;
        let timing = Timing::from_samples(&[incremental])
            .ok_or_else(|| Error::InvalidArgument("no time".into()))?;
        let baseline_rate = total as f64 / (rebuild * 1e-3) / 1e9;
        rows.push(
            Row::new(
                NAME,
                &format!(
                    "fig6 incremental, batches of {}k to {}",
                    batch >> 10,
                    crate::report::size_label(total as u64)
                ),
                total as u64,
                timing,
                total as f64,
                Unit::GigaKeysPerSecond,
            )
            .with_baseline(Some(crate::report::Baseline {
                label: "rebuild LinearProbeMap each batch".into(),
                rate: baseline_rate,
            }))
            .with_operation("incremental insert")
            .in_figure("fig6", Some(batch as f64))
            .with_note(format!(
                "final util {:.2}; rebuild total {rebuild:.2} ms; {}",
                stats.memory_utilization,
                check_note(checked)
            )),
        );
    }
    Ok(rows)
}

/// Fig. 7: n (2^22) initial elements, B swept for the initial utilization, then batches
/// of n/4 mixed operations drawn from Γ0, Γ1, Γ2, one kernel each.
fn fig7(bench: &mut Bench, n: usize, betas: &[f64]) -> Result<Vec<Row>> {
    let ops = (n / 4).max(1);
    let mixes = [
        ("Γ0", (0.5, 0.5, 0.0, 0.0)),
        ("Γ1", (0.2, 0.2, 0.3, 0.3)),
        ("Γ2", (0.1, 0.1, 0.4, 0.4)),
    ];
    let gpu = bench.gpu.clone();
    let mut inputs = Inputs::new(&gpu, n)?;
    let mut rows = Vec::new();
    for (label, (a, b, c, _)) in mixes {
        for &beta in betas {
            let buckets = gpuds_slabhash::buckets_for(n, 15, beta);
            let mut map = map_with_buckets(&gpu, buckets, n + ops)?;
            inputs.generate(0x7777)?;
            map.insert_many(&inputs.keys, &inputs.values)
                .map_err(core_error)?;
            let util = map.stats().map_err(core_error)?.memory_utilization;
            let present = gpu.stream().clone_dtoh(&inputs.keys)?;
            let absent = gpu.stream().clone_dtoh(&inputs.misses)?;
            // Each repetition draws a fresh batch: new keys beyond the initial ones,
            // deletes and hits among the initial keys, misses among never-used keys.
            let mut next_new = 0usize;
            let mut next_old = 0usize;
            let timing = bench.timer.measure(|rep| {
                let counts = [
                    (a * ops as f64) as usize,
                    (b * ops as f64) as usize,
                    (c * ops as f64) as usize,
                ];
                let mut batch = Vec::with_capacity(ops);
                for _ in 0..counts[0] {
                    let k = absent[(n - 1 - next_new) % n];
                    next_new += 1;
                    batch.push(MapOp::Insert(k, 1));
                }
                for _ in 0..counts[1] {
                    batch.push(MapOp::Remove(present[next_old % n]));
                    next_old += 1;
                }
                for _ in 0..counts[2] {
                    batch.push(MapOp::Get(present[next_old % n]));
                    next_old += 1;
                }
                while batch.len() < ops {
                    batch.push(MapOp::Get(
                        absent[(next_old + rep.seed() as usize) % (n / 2)],
                    ));
                    next_old += 1;
                }
                shuffle(&mut batch, rep.seed());
                let device = DeviceBatch::map(&gpu, &batch).map_err(core_error)?;
                rep.time(|| map.apply_batch(&device).map(drop).map_err(core_error))
            })?;
            let row = Row::new(
                NAME,
                &format!("fig7 {label}, initial util {util:.2}"),
                ops as u64,
                timing,
                ops as f64,
                Unit::GigaQueriesPerSecond,
            )
            .with_operation(label)
            .with_load(util)
            .in_figure("fig7", None)
            .with_note(format!(
                "B {buckets}, {} initial elements; G ops/s",
                crate::report::size_label(n as u64)
            ));
            rows.push(row);
        }
    }
    Ok(rows)
}

/// A seeded Fisher-Yates shuffle (xorshift), so that all kinds meet in every warp.
fn shuffle<T>(v: &mut [T], seed: u32) {
    let mut s = (seed as u64) | 1;
    for i in (1..v.len()).rev() {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        v.swap(i, (s % (i as u64 + 1)) as usize);
    }
}

/// FLUSH after deleting half of n (2^22) elements at β = 1.5 (lists of two or three
/// slabs): slabs visited per second, with the slabs freed in the note.
fn flush(bench: &mut Bench, n: usize) -> Result<Vec<Row>> {
    let gpu = bench.gpu.clone();
    let buckets = gpuds_slabhash::buckets_for(n, 15, 1.5);
    let mut map = map_with_buckets(&gpu, buckets, n)?;
    let mut inputs = Inputs::new(&gpu, n)?;
    let mut slabs = 0u64;
    let mut freed = 0u64;
    let timing = bench.timer.measure(|rep| {
        inputs.generate(rep.seed())?;
        map.clear().map_err(core_error)?;
        map.insert_many(&inputs.keys, &inputs.values)
            .map_err(core_error)?;
        let half = inputs.keys.slice(..n / 2);
        map.remove_many(&half).map_err(core_error)?;
        slabs = map.stats().map_err(core_error)?.slabs;
        rep.time(|| {
            freed = map.flush().map_err(core_error)?;
            Ok(())
        })
    })?;
    let checked =
        map.len().map_err(core_error)? == n / 2 && map.stats().map_err(core_error)?.tombstones == 0;
    Ok(vec![Row::new(
        NAME,
        "FLUSH after deleting half (slabs visited)",
        slabs,
        timing,
        slabs as f64,
        Unit::GigaItemsPerSecond,
    )
    .with_note(format!(
        "{} elements, B {buckets}; {freed} of {slabs} slabs freed; {}",
        crate::report::size_label(n as u64),
        check_note(checked)
    ))])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slab_counts_for_utilizations() {
        // The paper: an average slab count of 0.7 gives a utilization near 0.6.
        let u = expected_utilization(0.7);
        assert!((0.5..0.7).contains(&u), "{u}");
        for target in [0.2, 0.4, 0.6, 0.8] {
            let beta = beta_for_utilization(target);
            assert!(
                (expected_utilization(beta) - target).abs() < 1e-6,
                "{target}"
            );
        }
        assert_eq!(beta_for_utilization(0.99), 16.0);
    }
}
