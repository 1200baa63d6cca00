//! `alloc`: SlabAlloc and epoch-based reclamation (gpuds-alloc).
//!
//! - The slab hash paper's experiment (§VI): one allocation per thread, 1 M slabs of
//!   128 B, each warp serving its lanes one after another with the warp-cooperative
//!   `allocate()` (the paper reports 600 M slabs/s on a K40c); the same with the lanes
//!   claiming from their own bitmap words at once (`allocate_lane`). The full run sweeps
//!   both over 2^20, 2^22 and 2^24 allocations (`--keys N`: 2^20, 2^22, ... up to N) for
//!   the allocation figure (rows tagged `allocation`, x = log2 allocations), with random
//!   atomicCAS of the same run beside them.
//! - A mixed load: rounds in which half the threads free their unit and every thread
//!   without one allocates (frees and allocations both counted).
//! - EBR overhead: the read/retire loop (warps read a cell's unit or replace and retire
//!   it) with epoch-based reclamation against the null reclaimer.
//!
//! Allocation rows compare with random atomicCAS (an allocation is one atomic on a
//! bitmap word); the EBR row compares with the same loop without reclamation. Each
//! repetition starts from an empty pool grown beforehand (`reserve` of the batch, so the
//! pool is at most 80% full at the end of a batch).

use gpuds_alloc::workload::{self, Reclaimer};
use gpuds_alloc::{Collector, CollectorConfig, SlabAlloc, SlabAllocConfig, NULL_UNIT};
use gpuds_core::hash::murmur3_32;
use gpuds_core::Result;

use super::core_error;
use super::limits::ensure;
use super::{Accepts, Case, Experiment, Params, Scale};
use crate::bench::{Bench, Limit};
use crate::report::{Baseline, Row, Unit};

/// The `alloc` experiment.
pub const EXPERIMENT: Experiment = Experiment {
    name: "alloc",
    about:
        "SlabAlloc: the slab hash paper's allocation experiment (rate vs allocations), mixed load, EBR",
    accepts: Accepts::KEYS,
    plan,
};

const NAME: &str = "alloc";

#[derive(Clone, Copy)]
enum Path {
    /// The paper's: lanes served one at a time by the warp-cooperative allocate().
    EachLane,
    /// allocate_lane: lanes claim from their own bitmap words at once.
    Lanes,
}

fn plan(params: &Params) -> Vec<Case> {
    let scale = params.scale;
    let allocations = |path: Path, n: usize| {
        let what = match path {
            Path::EachLane => "warp-cooperative",
            Path::Lanes => "lanes at once",
        };
        Case::new(
            format!("{} slabs, {what}", crate::report::size_label(n as u64)),
            move |b| allocation(b, scale, n, path),
        )
    };
    if scale == Scale::Quick {
        return vec![
            allocations(Path::EachLane, params.keys_or(1 << 20).min(1 << 20)),
            allocations(Path::Lanes, params.keys_or(1 << 24)),
        ];
    }
    let mut cases = Vec::new();
    for n in params.sweep(1 << 20, &[1 << 20, 1 << 22, 1 << 24]) {
        cases.push(allocations(Path::EachLane, n));
        cases.push(allocations(Path::Lanes, n));
    }
    let mixed_n = params.keys_or(1 << 22);
    cases.extend([
        Case::new("mixed allocate/free", move |b| mixed(b, scale, mixed_n, 8)),
        Case::new("EBR read/retire", move |b| ebr(b, 1000)),
    ]);
    cases
}

fn cas_baseline(bench: &mut Bench, scale: Scale) -> Result<Baseline> {
    Ok(Baseline {
        label: "random atomicCAS".into(),
        rate: ensure(bench, Limit::Cas, scale)?,
    })
}

/// `n` allocations into an emptied pool, timed.
fn allocation(bench: &mut Bench, scale: Scale, n: usize, path: Path) -> Result<Vec<Row>> {
    let mut pool = SlabAlloc::new(&bench.gpu, SlabAllocConfig::default()).map_err(core_error)?;
    pool.reserve(n as u64).map_err(core_error)?;
    let mut out = bench.gpu.stream().alloc_zeros::<u32>(n)?;
    let timing = bench.timer.measure(|rep| {
        pool.reset().map_err(core_error)?;
        let mut view = out.slice_mut(..);
        rep.time(|| match path {
            Path::EachLane => pool.allocate_each_into(&mut view).map_err(core_error),
            Path::Lanes => pool.allocate_into(&mut view).map_err(core_error),
        })
    })?;
    pool.check_status().map_err(core_error)?;
    if pool.units_in_use().map_err(core_error)? != n as u64 {
        return Err(core_error(gpuds_alloc::Error::Corrupted(
            "the batch did not allocate every unit".into(),
        )));
    }
    let (what, operation, note) = match path {
        Path::EachLane => (
            "warp-cooperative allocate(), lanes in turn",
            "allocate() (warp-cooperative)",
            "the paper's experiment; paper: 0.6 G/s on a K40c",
        ),
        Path::Lanes => (
            "allocate_lane(), lanes at once",
            "allocate_lane()",
            "one atomic OR per lane",
        ),
    };
    Ok(vec![Row::new(
        NAME,
        &format!("{what}, 128 B units"),
        n as u64,
        timing,
        n as f64,
        Unit::GigaItemsPerSecond,
    )
    .with_operation(operation)
    .in_figure("allocation", Some((n as f64).log2()))
    .with_baseline(Some(cas_baseline(bench, scale)?))
    .with_note(format!(
        "{note}; {:?} layout, pool {} units",
        pool.layout(),
        pool.capacity_units()
    ))])
}

/// Frees plus allocations of `rounds` churn rounds over `n` initially empty slots: every
/// slot allocates in round 0; later, slots whose coin is odd free and allocate again (the
/// host twin of the kernel's coin).
fn churn_operations(n: usize, rounds: u32, seed: u32) -> u64 {
    let mut ops = n as u64;
    for round in 1..rounds {
        let salt = murmur3_32(seed.wrapping_add(round));
        ops += 2
            * (0..n as u32)
                .filter(|&i| murmur3_32(i ^ salt) & 1 == 1)
                .count() as u64;
    }
    ops
}

fn mixed(bench: &mut Bench, scale: Scale, n: usize, rounds: u32) -> Result<Vec<Row>> {
    let mut pool = SlabAlloc::new(&bench.gpu, SlabAllocConfig::default()).map_err(core_error)?;
    pool.reserve(n as u64).map_err(core_error)?;
    let stream = bench.gpu.stream().clone();
    let mut slots = stream.clone_htod(&vec![NULL_UNIT; n])?;
    let empty = stream.clone_htod(&vec![NULL_UNIT; n])?;
    let mut ops = Vec::new();
    let timing = bench.timer.measure(|rep| {
        pool.reset().map_err(core_error)?;
        stream.memcpy_dtod(&empty, &mut slots)?;
        let seed = rep.seed();
        ops.push(churn_operations(n, rounds, seed));
        rep.time(|| workload::churn(&pool, &mut slots, rounds, seed).map_err(core_error))
    })?;
    pool.check_status().map_err(core_error)?;
    if workload::stamp_errors(&pool, &slots).map_err(core_error)? != 0 {
        return Err(core_error(gpuds_alloc::Error::Corrupted(
            "a unit was handed out twice".into(),
        )));
    }
    // Repetitions differ in their seeds by a fraction of a percent of operations.
    let work = ops.iter().sum::<u64>() as f64 / ops.len().max(1) as f64;
    Ok(vec![Row::new(
        NAME,
        &format!("mixed: {rounds} rounds of free half / allocate, frees+allocations"),
        n as u64,
        timing,
        work,
        Unit::GigaItemsPerSecond,
    )
    .with_baseline(Some(cas_baseline(bench, scale)?))
    .with_note(
        "one atomic per free or allocation; stamps checked",
    )])
}

/// The read/retire loop, 50% writes, over 512 cells: with EBR and with the null reclaimer.
fn ebr(bench: &mut Bench, rounds: u32) -> Result<Vec<Row>> {
    let gpu = bench.gpu.clone();
    let stream = gpu.stream().clone();
    let mut rows = Vec::new();
    let mut null_rate = None;
    for epoch_based in [false, true] {
        let mut pool = SlabAlloc::new(&gpu, SlabAllocConfig::default()).map_err(core_error)?;
        // The null reclaimer keeps every retired unit: room for all of them.
        let warps = gpu.info().sm_count as u64 * gpu.info().max_threads_per_sm as u64 / 32;
        pool.reserve(warps * rounds as u64 / 2 + (1 << 20))
            .map_err(core_error)?;
        let collector = Collector::new(&gpu, CollectorConfig::default()).map_err(core_error)?;
        let mut violations = stream.alloc_zeros::<u64>(1)?;
        let mut cells = None;
        let mut ops = 0;
        let timing = bench.timer.measure(|rep| {
            collector.drain(&pool).map_err(core_error)?;
            pool.reset().map_err(core_error)?;
            let c = cells.insert(workload::cells(&pool, 512).map_err(core_error)?);
            let seed = rep.seed();
            let reclaimer = if epoch_based {
                Reclaimer::Epoch(&collector)
            } else {
                Reclaimer::Null
            };
            rep.time(|| {
                ops = workload::read_retire(&pool, reclaimer, c, rounds, 50, seed, &mut violations)
                    .map_err(core_error)?;
                Ok(())
            })
        })?;
        pool.check_status().map_err(core_error)?;
        collector.check_status().map_err(core_error)?;
        if stream.clone_dtoh(&violations)?[0] != 0 {
            return Err(core_error(gpuds_alloc::Error::Corrupted(
                "a reader saw a reclaimed unit".into(),
            )));
        }
        let stats = collector.stats().map_err(core_error)?;
        let name = if epoch_based {
            "read/retire, 50% writes, epoch-based reclamation"
        } else {
            "read/retire, 50% writes, null reclaimer"
        };
        let mut row = Row::new(
            NAME,
            name,
            ops,
            timing,
            ops as f64,
            Unit::GigaQueriesPerSecond,
        );
        if epoch_based {
            row = row
                .with_baseline(null_rate.map(|rate| Baseline {
                    label: "null reclaimer".into(),
                    rate,
                }))
                .with_note(format!(
                    "warp operations; last run: epoch {}, {} retired, {} reclaimed in kernels",
                    stats.epoch, stats.retired, stats.reclaimed
                ));
        } else {
            null_rate = Some(row.rate);
            row = row.with_note("warp operations; retired units never freed");
        }
        rows.push(row);
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn churn_counts_every_slot_once_then_pairs() {
        assert_eq!(churn_operations(100, 1, 5), 100);
        let two = churn_operations(1000, 2, 5);
        assert!(two > 1000 + 800 && two < 1000 + 1200, "{two}");
        assert_eq!(two % 2, 0);
    }
}
