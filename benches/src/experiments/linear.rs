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
//! `--keys N` sets the table's slots (the keys are the load times N) for the bulk rows and
//! the fill experiment (batches of N/32), `--load` the bulk rows' loads, and `--key`,
//! `--value` the word types (u32 or u64; 64-bit inputs are made on the host with the same
//! bijection, and only u32 rows carry the published figures).
//!
//! Every timed call is the public batch API on device inputs: the non-synchronizing
//! `_async` calls, reserved-key checks included (a pass over the inputs before inserts
//! and erases, inline in finds); the status is read after each measurement and must be
//! clear. Inputs are fresh per repetition (keys from a seeded bijection).

use gpuds_core::cudarc::driver::{CudaSlice, PushKernelArg};
use gpuds_core::hash::murmur3_32;
use gpuds_core::keys::{DeviceKey, DeviceType, DeviceValue};
use gpuds_core::{Error, Gpu, Program, Result};
use gpuds_hive::probe::{GroupWidth, Probing};
use gpuds_hive::{LinearConfig, LinearProbeMap, WhenFull};

use super::core_error;
use super::{Accepts, Case, Experiment, Params, Scale, Word};
use crate::bench::Bench;
use crate::peers;
use crate::report::{size_label, Row, Unit};
use crate::timing::{time_once, Timing};

/// The `linear` experiment.
pub const EXPERIMENT: Experiment = Experiment {
    name: "linear",
    about: "LinearProbeMap: the simple lock-free table's fill experiment and bulk operations",
    accepts: Accepts::WIDE_KEYS_LOAD,
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

fn plan(params: &Params) -> Vec<Case> {
    match (params.key, params.value) {
        (Word::U32, Word::U32) => typed_plan::<u32, u32>(params),
        (Word::U32, Word::U64) => typed_plan::<u32, u64>(params),
        (Word::U64, Word::U32) => typed_plan::<u64, u32>(params),
        (Word::U64, Word::U64) => typed_plan::<u64, u64>(params),
    }
}

fn typed_plan<K: DeviceKey, V: DeviceValue>(params: &Params) -> Vec<Case> {
    let w1 = GroupWidth::ONE;
    match params.scale {
        Scale::Quick => {
            let slots = params.keys_or(1 << 23) as u64;
            params
                .loads_or(&[0.5])
                .into_iter()
                .map(|load| {
                    Case::new(format!("bulk, load {load}"), move |bench| {
                        bulk::<K, V>(bench, slots, load, w1, Probing::Linear, true)
                    })
                })
                .collect()
        }
        Scale::Full => {
            let fill_slots = params.keys_or(1 << 27) as u64;
            let slots = params.keys_or(1 << 25) as u64;
            let loads = params.loads_or(&[0.5, 0.8]);
            let mut cases = vec![Case::new(
                format!("fill to 0.96 ({} slots)", size_label(fill_slots)),
                move |bench| fill::<K, V>(bench, fill_slots),
            )];
            for &load in &loads {
                cases.push(Case::new(format!("bulk, load {load}"), move |bench| {
                    bulk::<K, V>(bench, slots, load, w1, Probing::Linear, true)
                }));
            }
            for &load in &loads {
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
                            bulk::<K, V>(bench, slots, load, width, probing, false)
                        },
                    ));
                }
            }
            cases
        }
    }
}

/// Key `i` of the experiment's bijection under `seed`: for 32-bit keys the twin of
/// `linear_bench_keys` (murmur3's finalizer of `i ^ seed`, walked below `0xfffffffe`);
/// for 64-bit keys that word below a high word derived from it with its top bit clear, so
/// distinct indices still give distinct keys and no key is reserved (`K::MAX`, `K::MAX - 1`).
pub fn bench_key(i: u64, seed: u32, wide: bool) -> u64 {
    let mut low = murmur3_32(i as u32 ^ seed);
    for _ in 0..4 {
        if low < 0xffff_fffe {
            break;
        }
        low = murmur3_32(low ^ seed);
    }
    if wide {
        let high = murmur3_32(low ^ !seed) & 0x7fff_ffff;
        (u64::from(high) << 32) | u64::from(low)
    } else {
        u64::from(low)
    }
}

fn is_u32<T: DeviceType>() -> bool {
    T::SUFFIX == "u32"
}

/// `u32` when keys and values are both u32, else `u64 keys, u32 values` and the like.
fn types_label<K: DeviceType, V: DeviceType>() -> String {
    if K::SUFFIX == V::SUFFIX {
        K::SUFFIX.to_string()
    } else {
        format!("{} keys, {} values", K::SUFFIX, V::SUFFIX)
    }
}

/// Device keys and values.
pub(super) struct Inputs<K: DeviceKey, V: DeviceValue> {
    gpu: Gpu,
    kernel: gpuds_core::Kernel,
    pub(super) keys: CudaSlice<K>,
    pub(super) values: CudaSlice<V>,
}

impl<K: DeviceKey, V: DeviceValue> Inputs<K, V> {
    pub(super) fn new(gpu: &Gpu, n: usize) -> Result<Self> {
        let kernel = gpu.load(&program())?.kernel("linear_bench_keys")?;
        let stream = gpu.stream();
        Ok(Self {
            gpu: gpu.clone(),
            kernel,
            keys: stream.alloc_zeros::<K>(n.max(1))?,
            values: stream.alloc_zeros::<V>(n.max(1))?,
        })
    }

    /// Keys of indices `first..first + n` under `seed` (n the buffers' length), values
    /// `first + i + 1`: made on the device for u32 keys and values, on the host (the same
    /// bijection, [`bench_key`]) when either is 64-bit.
    pub(super) fn generate(&mut self, first: u64, seed: u32) -> Result<()> {
        let n = self.keys.len() as u64;
        if !(is_u32::<K>() && is_u32::<V>()) {
            let wide = !is_u32::<K>();
            let keys: Vec<K> = (first..first + n)
                .map(|i| K::from_u64(bench_key(i, seed, wide)))
                .collect();
            let values: Vec<V> = (first..first + n).map(|i| V::from_u64(i + 1)).collect();
            let stream = self.gpu.stream();
            stream.memcpy_htod(&keys, &mut self.keys)?;
            stream.memcpy_htod(&values, &mut self.values)?;
            return Ok(());
        }
        let shape = self.gpu.grid_for(&self.kernel, n as usize, 256)?;
        let stream = self.gpu.stream();
        let mut args = stream.launch_builder(self.kernel.func());
        args.arg(&mut self.keys)
            .arg(&mut self.values)
            .arg(&n)
            .arg(&first)
            .arg(&seed);
        // SAFETY: K and V are u32 here (checked above), so the arguments match
        // linear_bench_keys; it writes keys[..n], values[..n].
        unsafe { args.launch(shape) }?;
        Ok(())
    }
}

fn table<K: DeviceKey, V: DeviceValue>(
    bench: &Bench,
    capacity: u64,
    width: GroupWidth,
    probing: Probing,
) -> Result<LinearProbeMap<K, V>> {
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
fn bulk<K: DeviceKey, V: DeviceValue>(
    bench: &mut Bench,
    capacity: u64,
    load: f64,
    width: GroupWidth,
    probing: Probing,
    all: bool,
) -> Result<Vec<Row>> {
    let n = (capacity as f64 * load) as usize;
    let mut map = table::<K, V>(bench, capacity, width, probing)?;
    let mut inputs = Inputs::<K, V>::new(&bench.gpu, n)?;
    let mut misses = Inputs::<K, V>::new(&bench.gpu, n)?;
    let device = bench.gpu.info().name.clone();
    let shape = format!(
        "{}, width {}, {probing:?}, load {load}",
        types_label::<K, V>(),
        width.get()
    );
    // The published figures are of u32 keys and values.
    let narrow = is_u32::<K>() && is_u32::<V>();
    let peer = |op: &str| {
        if narrow {
            peers::linear_probe(&device, op, load)
        } else {
            None
        }
    };
    let stream = bench.gpu.stream().clone();
    // SAFETY: every find writes all of out.
    let mut out = unsafe { stream.alloc::<V>(n) }?;
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
        .with_baseline(peer("insert"))
        .with_types(K::SUFFIX, V::SUFFIX)
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
        if !got.iter().zip(&want).all(|(g, w)| g.to_u64() == w.to_u64()) {
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
        .with_baseline(peer("find hit"))
        .with_types(K::SUFFIX, V::SUFFIX)
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
    let absent = LinearProbeMap::<K, V>::reserved_value().to_u64();
    if stream
        .clone_dtoh(&out)?
        .iter()
        .any(|v| v.to_u64() != absent)
    {
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
        .with_baseline(peer("find miss"))
        .with_types(K::SUFFIX, V::SUFFIX)
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
        .with_baseline(peer("erase"))
        .with_types(K::SUFFIX, V::SUFFIX)
        .with_load(load),
    );
    Ok(rows)
}

/// The paper's experiment: batches of 1/32 of the table (2^22 keys into 2^27 slots) until
/// the load passes 0.96; one row per batch (its insert rate), probe lengths at 0.5 and at
/// the end.
fn fill<K: DeviceKey, V: DeviceValue>(bench: &mut Bench, capacity: u64) -> Result<Vec<Row>> {
    let batch = (capacity as usize / 32).max(1);
    let mut map = table::<K, V>(bench, capacity, GroupWidth::ONE, Probing::Linear)?;
    let mut inputs = Inputs::<K, V>::new(&bench.gpu, batch)?;
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
        )
        .with_types(K::SUFFIX, V::SUFFIX);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wide_keys_are_distinct_and_never_reserved() {
        let keys: std::collections::BTreeSet<u64> =
            (0..100_000).map(|i| bench_key(i, 0x51, true)).collect();
        assert_eq!(keys.len(), 100_000);
        assert!(keys.iter().all(|&k| k < u64::MAX - 1 && k >> 63 == 0));
        assert!((0..1000).all(|i| bench_key(i, 7, false) < 0xffff_fffe));
        assert_eq!(bench_key(5, 9, true) as u32 as u64, bench_key(5, 9, false));
    }
}
