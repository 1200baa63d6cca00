//! `linear`: gpuds-hive's LinearProbeMap, the simple lock-free table (Farrell, 2020).
//!
//! - The paper's experiment: a table of 2^27 slots, batches of 2^22 new keys inserted
//!   until the load passes 0.96, the insert rate of every batch, and the probe lengths
//!   (mean and max) at loads 0.5 and 0.97.
//! - Bulk insert, find of present and of absent keys, and erase of half the keys, u32
//!   keys and values in a table of 2^25 slots at loads 0.5 (2^24 keys) and 0.8, each
//!   compared with the published figures of the original implementation on the same GPU.
//! - Group widths and double hashing at both loads (insert and find of present keys).
//!
//! Every timed call is the public batch API on device inputs: the non-synchronizing
//! `_async` calls, reserved-key checks included (a pass over the inputs before inserts
//! and erases, inline in finds); the status is read after each measurement and must be
//! clear. Inputs are fresh per repetition (keys from a seeded bijection).

use gpuds_core::cudarc::driver::{CudaSlice, PushKernelArg};
use gpuds_core::{Error, Gpu, Program, Result};
use gpuds_hive::probe::{GroupWidth, Probing};
use gpuds_hive::{LinearConfig, LinearProbeMap, WhenFull};

use super::{Case, Experiment, Scale};
use crate::bench::Bench;
use crate::peers;
use crate::report::{Row, Unit};
use crate::timing::{time_once, Timing};

/// The `linear` experiment.
pub const EXPERIMENT: Experiment = Experiment {
    name: "linear",
    about: "LinearProbeMap: the simple lock-free table's fill experiment and bulk operations",
    plan,
};

const NAME: &str = "linear";

/// The key generator (`benches/cuda/linear_keys.cu`).
pub fn program() -> Program {
    Program::new(
        "gpuds-bench-linear-keys",
        include_str!("../../cuda/linear_keys.cu"),
    )
    .headers(gpuds_core::cuda_headers())
}

/// This experiment's device programs, for compile checks.
pub fn programs() -> Vec<Program> {
    vec![program()]
}

fn plan(scale: Scale) -> Vec<Case> {
    let w1 = GroupWidth::ONE;
    match scale {
        Scale::Quick => vec![Case::new("bulk, load 0.5", move |bench| {
            bulk(bench, 1 << 23, 0.5, w1, Probing::Linear, true)
        })],
        Scale::Full => {
            let mut cases = vec![Case::new("fill to 0.96 (2^27 slots)", fill)];
            for load in [0.5, 0.8] {
                cases.push(Case::new(format!("bulk, load {load}"), move |bench| {
                    bulk(bench, 1 << 25, load, w1, Probing::Linear, true)
                }));
            }
            for load in [0.5, 0.8] {
                for (width, probing) in [
                    (2, Probing::Linear),
                    (4, Probing::Linear),
                    (8, Probing::Linear),
                    (4, Probing::DoubleHashing),
                ] {
                    cases.push(Case::new(
                        format!("width {width} {probing:?}, load {load}"),
                        move |bench| {
                            let width = GroupWidth::new(width).map_err(core_error)?;
                            bulk(bench, 1 << 25, load, width, probing, false)
                        },
                    ));
                }
            }
            cases
        }
    }
}

fn core_error(e: gpuds_hive::Error) -> Error {
    match e {
        gpuds_hive::Error::Core(e) => e,
        other => Error::InvalidArgument(other.to_string()),
    }
}

/// Device keys and values.
struct Inputs {
    gpu: Gpu,
    kernel: gpuds_core::Kernel,
    keys: CudaSlice<u32>,
    values: CudaSlice<u32>,
}

impl Inputs {
    fn new(gpu: &Gpu, n: usize) -> Result<Self> {
        let kernel = gpu.load(&program())?.kernel("linear_bench_keys")?;
        let stream = gpu.stream();
        Ok(Self {
            gpu: gpu.clone(),
            kernel,
            keys: stream.alloc_zeros::<u32>(n.max(1))?,
            values: stream.alloc_zeros::<u32>(n.max(1))?,
        })
    }

    /// Keys of indices `first..first + n` under `seed` (n at most the buffers' length).
    fn generate(&mut self, first: u64, seed: u32) -> Result<()> {
        let n = self.keys.len() as u64;
        let shape = self.gpu.grid_for(&self.kernel, n as usize, 256)?;
        let stream = self.gpu.stream();
        let mut args = stream.launch_builder(self.kernel.func());
        args.arg(&mut self.keys)
            .arg(&mut self.values)
            .arg(&n)
            .arg(&first)
            .arg(&seed);
        // SAFETY: the arguments match linear_bench_keys; it writes keys[..n], values[..n].
        unsafe { args.launch(shape) }?;
        Ok(())
    }
}

fn table(
    bench: &Bench,
    capacity: u64,
    width: GroupWidth,
    probing: Probing,
) -> Result<LinearProbeMap<u32, u32>> {
    let config = LinearConfig {
        capacity,
        probing,
        group_width: width,
        max_load_factor: 0.97,
        when_full: WhenFull::Fail,
        ..LinearConfig::default()
    };
    LinearProbeMap::with_config(&bench.gpu, config).map_err(core_error)
}

/// Insert, find hit, find miss and erase of half, at `load` of `capacity` slots.
/// `all` adds the miss and erase rows and checks the results on the host.
fn bulk(
    bench: &mut Bench,
    capacity: u64,
    load: f64,
    width: GroupWidth,
    probing: Probing,
    all: bool,
) -> Result<Vec<Row>> {
    let n = (capacity as f64 * load) as usize;
    let mut map = table(bench, capacity, width, probing)?;
    let mut inputs = Inputs::new(&bench.gpu, n)?;
    let mut misses = Inputs::new(&bench.gpu, n)?;
    let device = bench.gpu.info().name.clone();
    let shape = format!("u32, width {}, {probing:?}, load {load}", width.get());
    let stream = bench.gpu.stream().clone();
    // SAFETY: every find writes all of out.
    let mut out = unsafe { stream.alloc::<u32>(n) }?;
    let mut rows = Vec::new();

    let mut built_with = 0u32;
    let insert = bench.timer.measure(|rep| {
        map.clear().map_err(core_error)?;
        built_with = rep.seed();
        inputs.generate(0, built_with)?;
        rep.time(|| {
            map.insert_many_async(&inputs.keys, &inputs.values)
                .map_err(core_error)
        })
    })?;
    map.check().map_err(core_error)?;
    let stats = map.stats().map_err(core_error)?;
    rows.push(
        Row::new(
            NAME,
            &format!("insert, {shape}"),
            n as u64,
            insert,
            n as f64,
            Unit::GigaKeysPerSecond,
        )
        .with_baseline(peers::linear_probe(&device, "insert", load))
        .with_load(load)
        .with_note(format!(
            "mean probe {:.3}, max {}",
            stats.mean_probe, stats.max_probe
        )),
    );
    // The table now holds the last repetition's keys; query those.
    let hit = bench.timer.measure(|rep| {
        rep.time(|| {
            map.get_many_into_async(&inputs.keys, &mut out)
                .map_err(core_error)
        })
    })?;
    map.check().map_err(core_error)?;
    if all {
        let got = stream.clone_dtoh(&out)?;
        let want = stream.clone_dtoh(&inputs.values)?;
        if got != want {
            return Err(Error::InvalidArgument("find returned wrong values".into()));
        }
    }
    rows.push(
        Row::new(
            NAME,
            &format!("find (hit), {shape}"),
            n as u64,
            hit,
            n as f64,
            Unit::GigaQueriesPerSecond,
        )
        .with_baseline(peers::linear_probe(&device, "find hit", load))
        .with_load(load),
    );
    if !all {
        return Ok(rows);
    }
    // Misses: other indices of the bijection the table was built with, fresh per
    // repetition, disjoint from the present keys (indices 0..n).
    let miss = bench.timer.measure(|rep| {
        misses.generate(n as u64 + u64::from(rep.seed() >> 2), built_with)?;
        rep.time(|| {
            map.get_many_into_async(&misses.keys, &mut out)
                .map_err(core_error)
        })
    })?;
    map.check().map_err(core_error)?;
    if stream.clone_dtoh(&out)?.iter().any(|&v| v != u32::MAX) {
        return Err(Error::InvalidArgument("a miss found a value".into()));
    }
    rows.push(
        Row::new(
            NAME,
            &format!("find (miss), {shape}"),
            n as u64,
            miss,
            n as f64,
            Unit::GigaQueriesPerSecond,
        )
        .with_baseline(peers::linear_probe(&device, "find miss", load))
        .with_load(load),
    );
    let half = n / 2;
    let erase = bench.timer.measure(|rep| {
        map.clear().map_err(core_error)?;
        inputs.generate(0, rep.seed())?;
        map.insert_many(&inputs.keys, &inputs.values)
            .map_err(core_error)?;
        rep.time(|| {
            map.remove_many_async(&inputs.keys.slice(..half))
                .map_err(core_error)
        })
    })?;
    map.check().map_err(core_error)?;
    if map.len().map_err(core_error)? != n - half {
        return Err(Error::InvalidArgument(
            "erase left the wrong number of keys".into(),
        ));
    }
    rows.push(
        Row::new(
            NAME,
            &format!("erase (half), {shape}"),
            half as u64,
            erase,
            half as f64,
            Unit::GigaKeysPerSecond,
        )
        .with_baseline(peers::linear_probe(&device, "erase", load))
        .with_load(load),
    );
    Ok(rows)
}

/// The paper's experiment: 2^22 keys per batch into 2^27 slots until the load passes
/// 0.96; one row per batch (its insert rate), probe lengths at 0.5 and at the end.
fn fill(bench: &mut Bench) -> Result<Vec<Row>> {
    let capacity = 1u64 << 27;
    let batch = 1usize << 22;
    let mut map = table(bench, capacity, GroupWidth::ONE, Probing::Linear)?;
    let mut inputs = Inputs::new(&bench.gpu, batch)?;
    let mut rows = Vec::new();
    let mut inserted = 0u64;
    let mut index = 0u64;
    while (inserted as f64) < 0.96 * capacity as f64 {
        let load = inserted as f64 / capacity as f64;
        inputs.generate(index, 0x0051_7e11)?;
        // Timed once: the table changes with every batch.
        let ms = time_once(&bench.gpu, || {
            map.insert_many_async(&inputs.keys, &inputs.values)
                .map_err(core_error)
        })?;
        map.check().map_err(core_error)?;
        let timing = Timing::from_samples(&[ms])
            .ok_or_else(|| Error::InvalidArgument("no sample".into()))?;
        inserted += batch as u64;
        index += batch as u64;
        let mut row = Row::new(
            NAME,
            &format!("fill batch at load {load:.2}"),
            batch as u64,
            timing,
            batch as f64,
            Unit::GigaKeysPerSecond,
        );
        let after = inserted as f64 / capacity as f64;
        if (after - 0.5).abs() < 1e-9 || (inserted as f64) >= 0.96 * capacity as f64 {
            let stats = map.stats().map_err(core_error)?;
            row = row.with_note(format!(
                "after: load {:.3}, mean probe {:.4}, max probe {}",
                stats.load_factor, stats.mean_probe, stats.max_probe
            ));
        }
        rows.push(row);
    }
    Ok(rows)
}
