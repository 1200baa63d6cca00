//! `hive`: gpuds-hive's HiveMap, the resizable bucketed cuckoo table of the Hive paper.
//!
//! - Balanced workloads: bulk insert into an empty table up to load 0.8 and 0.95 (no
//!   resizing), then bulk lookups of present and of absent keys, 2^24 u32 keys, against
//!   the published figures of the original bucketed cuckoo table (buckets of 16) on the
//!   same GPU, and LinearProbeMap measured in the same run on a table of as many slots.
//! - Bucket size (16 vs 32 slots) and table size (2^20 to 2^25 keys, load 0.95).
//! - The imbalanced mix insert:lookup:delete = 0.5:0.3:0.2 in one kernel (`apply`) over
//!   sizes 2^20 to 2^25 operations, on a table prefilled with half as many keys.
//! - Resize throughput: expansion and contraction by 32,768 buckets.
//! - The insert-step breakdown (replace, claim-then-commit, eviction, stash) of batches
//!   filling a table from load 0.5 to 0.97.
//! - The hash-function pairs (BitHash, Murmur, City, CRC-32C) at load 0.9.
//!
//! Figures (the paper's): `fig6` bulk insert and `fig7` bulk finds against the number of
//! keys at load 0.95, with LinearProbeMap and SlabHashMap of the same run at every size;
//! `fig8` the mixed workload against the number of operations, with SlabHashMap running
//! the same operations on the same prefill beside it; `fig9` the load-factor
//! figure, the insert rate of each batch filling a table from load 0.5 to 0.97 with
//! LinearProbeMap filled by the same batches beside it; `fig5` the hash pairs against the
//! number of keys; `resize` expansion and contraction against the buckets per step
//! (8,192 to 65,536; the paper's figure is 32,768), with LinearProbeMap's full rehash of
//! the same keys to the same size beside them. `--keys N` replaces 2^24 in the bulk
//! rows and the largest size of every sweep (2^20, 2^22, ... up to N), and the fig9 and
//! resize tables' sizes; `--load` replaces the bulk rows' loads (0.8, 0.95), fig6 and 7
//! run at the largest, and fig9's batches then fill the table from empty to each.
//!
//! Every timed call is the public batch API on device inputs (reserved-key pass and the
//! final status and length read included). Keys are fresh per repetition where the table
//! is rebuilt per repetition. SlabHashMap (sized for the same keys at the slab hash
//! paper's β 0.7) is measured next to the load-0.8 rows, in fig6/7 and in fig8.

use gpuds_core::cudarc::driver::CudaSlice;
use gpuds_core::hash::murmur3_32;
use gpuds_core::{Error, Gpu, Result};
use gpuds_hive::{HashPair, HiveConfig, HiveMap, LinearConfig, LinearProbeMap, WhenFull};
use gpuds_slabhash::{DeviceBatch, MapOp, OpResult, SlabHashMap};

use super::core_error;
use super::{Accepts, Case, Experiment, Forms, Params, Scale, Word};
use crate::bench::Bench;
use crate::peers;
use crate::report::{Row, Unit};
use crate::timing::{time_once, Timing};

/// The `hive` experiment.
pub const EXPERIMENT: Experiment = Experiment {
    name: "hive",
    about: "HiveMap (Hive paper): Fig. 5-9 (hash pairs, bulk insert/find vs keys, mixed, load factor), resize",
    accepts: Accepts {
        words: FORMS,
        ..Accepts::WIDE_KEYS_LOAD
    },
    plan,
};

/// HiveMap's key/value forms: u64 values only with u64 keys (`HiveValue<K>`: a packed
/// u32 slot has room for a u32 value only).
const FORMS: Forms = Forms::new(&[
    (Word::U32, Word::U32),
    (Word::U64, Word::U32),
    (Word::U64, Word::U64),
]);

/// `hive-targets`: only the 2^24 rows the targets speak about (loads 0.8 and 0.95
/// with 16-slot buckets, and 32-slot buckets at 0.8), without the LinearProbeMap
/// baseline: the full `hive` plan measures the same rows among many others.
pub const TARGETS: Experiment = Experiment {
    name: "hive-targets",
    about: "HiveMap: the 2^24 bulk rows at loads 0.8 and 0.95 only (a part of `hive`)",
    accepts: Accepts::KEYS_LOAD,
    plan: targets_plan,
};

fn targets_plan(params: &Params) -> Vec<Case> {
    match params.scale {
        // `quick` already runs the `hive` quick plan.
        Scale::Quick => Vec::new(),
        Scale::Full => target_cases(params, false),
    }
}

/// The 2^24 rows of the targets; `linear` adds the LinearProbeMap rows at 16 slots.
fn target_cases(params: &Params, linear: bool) -> Vec<Case> {
    let b = HashPair::BitHash;
    let n = params.keys_or(1 << 24);
    let label = crate::report::size_label(n as u64);
    let loads = params.loads_or(&[0.8, 0.95]);
    let mut cases = Vec::new();
    for &load in &loads {
        cases.push(Case::new(
            format!("bulk {label}, load {load}"),
            move |bench| bulk(bench, n, load, 16, b, linear),
        ));
    }
    let first = loads[0];
    cases.push(Case::new(
        format!("bulk {label}, 32 slots, load {first}"),
        move |bench| bulk(bench, n, first, 32, b, false),
    ));
    cases
}

const NAME: &str = "hive";
const ABSENT: u32 = u32::MAX;

fn plan(params: &Params) -> Vec<Case> {
    if super::wide::asked(params) {
        return super::wide::plan(super::wide::Structure::Hive, params);
    }
    let b = HashPair::BitHash;
    if params.scale == Scale::Quick {
        let n = params.keys_or(1 << 22);
        let load = params.loads_or(&[0.8])[0];
        return vec![
            Case::new(format!("bulk, load {load}"), move |bench| {
                bulk(bench, n, load, 16, b, false)
            }),
            Case::new("mixed 0.5:0.3:0.2", move |bench| mixed(bench, n)),
        ];
    }
    let label = |n: usize| crate::report::size_label(n as u64);
    let sizes = params.sweep(1 << 20, &[1 << 20, 1 << 22, 1 << 24, 1 << 25]);
    let fig_load = params.loads_or(&[0.95]).into_iter().fold(0.0, f64::max);
    let mut cases = target_cases(params, true);
    for &n in &sizes {
        cases.push(Case::new(
            format!("Fig. 6-7: bulk {}, load {fig_load}", label(n)),
            move |bench| fig_6_7(bench, n, fig_load),
        ));
    }
    for &n in &sizes {
        cases.push(Case::new(
            format!("Fig. 8: mixed {}", label(n)),
            move |bench| mixed(bench, n),
        ));
    }
    let resize_n = params.keys_or(1 << 23);
    for k in [8_192usize, 16_384, 32_768, 65_536] {
        cases.push(Case::new(format!("resize by {k} buckets"), move |bench| {
            resize(bench, resize_n, k)
        }));
    }
    let capacity = params.keys_or(1 << 22);
    let (prefill, loads) = match &params.loads {
        Some(loads) => {
            let mut loads = loads.clone();
            loads.sort_by(f64::total_cmp);
            loads.dedup();
            (0.0, loads)
        }
        None => (
            0.5,
            vec![0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 0.97],
        ),
    };
    cases.push(Case::new("Fig. 9: insert batches by load", move |bench| {
        steps(bench, capacity, prefill, &loads)
    }));
    for hash in HashPair::ALL {
        for &n in &sizes {
            cases.push(Case::new(
                format!("Fig. 5: hash {}, {}", hash.name(), label(n)),
                move |bench| fig_5(bench, n, hash),
            ));
        }
    }
    cases
}

/// Fig. 5 at n keys: the insert rate of HashPair `hash` at load 0.9 (the finds measured
/// with it are left out).
fn fig_5(bench: &mut Bench, n: usize, hash: HashPair) -> Result<Vec<Row>> {
    let rows = bulk(bench, n, 0.9, 16, hash, false)?;
    Ok(rows
        .into_iter()
        .filter(|r| r.operation == "insert")
        .map(|r| {
            r.with_operation(format!("insert, {}", hash.name()))
                .in_figure("fig5", Some((n as f64).log2()))
        })
        .collect())
}

/// Fig. 6 and 7 at n keys: HiveMap's bulk insert (fig6) and finds (fig7) at `load`,
/// with LinearProbeMap on as many slots and SlabHashMap (β 0.7) of the same keys.
fn fig_6_7(bench: &mut Bench, n: usize, load: f64) -> Result<Vec<Row>> {
    let capacity = (n as f64 / load).ceil() as usize;
    let mut rows = bulk(bench, n, load, 16, HashPair::BitHash, false)?;
    rows.extend(linear_rows(bench, n, map_slots(capacity, 16), load)?);
    rows.extend(slabhash_rows(bench, n)?);
    let x = (n as f64).log2();
    Ok(rows
        .into_iter()
        .map(|r| {
            let figure = if r.operation == "insert" {
                "fig6"
            } else {
                "fig7"
            };
            r.in_figure(figure, Some(x))
        })
        .collect())
}

/// Key `i` of the bijection under `seed`: murmur3's finalizer of `i ^ seed`, walked past
/// the two largest words (reserved by the tables), so distinct indices give distinct keys.
fn key(i: u64, seed: u32) -> u32 {
    let mut k = murmur3_32(i as u32 ^ seed);
    for _ in 0..4 {
        if k < 0xffff_fffe {
            break;
        }
        k = murmur3_32(k ^ seed);
    }
    k
}

/// Keys `first..first + n` under `seed` and their values, on the device.
fn upload(gpu: &Gpu, first: u64, n: usize, seed: u32) -> Result<(CudaSlice<u32>, CudaSlice<u32>)> {
    let keys: Vec<u32> = (first..first + n as u64).map(|i| key(i, seed)).collect();
    let values: Vec<u32> = (first..first + n as u64)
        .map(|i| i as u32 ^ 0x5bd1_e995)
        .collect();
    let stream = gpu.stream();
    Ok((stream.clone_htod(&keys)?, stream.clone_htod(&values)?))
}

fn hive(
    bench: &Bench,
    capacity: usize,
    slots: u32,
    hash: HashPair,
    auto_resize: bool,
) -> Result<HiveMap> {
    HiveMap::with_config(
        &bench.gpu,
        HiveConfig {
            capacity,
            slots_per_bucket: slots,
            hash,
            auto_resize,
            ..Default::default()
        },
    )
    .map_err(core_error)
}

fn steps_note(map: &HiveMap) -> Result<String> {
    let s = map.stats().map_err(core_error)?;
    let f = s.step_fractions();
    Ok(format!(
        "load {:.3}; steps replace/claim/evict/stash {:.1}/{:.1}/{:.2}/{:.3} %; stash {} of {}",
        s.load_factor,
        100.0 * f[0],
        100.0 * f[1],
        100.0 * f[2],
        100.0 * f[3],
        s.stash_used,
        s.stash_capacity
    ))
}

/// Bulk insert into an empty table to `load`, then finds of present and absent keys.
/// `linear` adds LinearProbeMap on as many slots, and the results are checked.
fn bulk(
    bench: &mut Bench,
    n: usize,
    load: f64,
    slots: u32,
    hash: HashPair,
    linear: bool,
) -> Result<Vec<Row>> {
    let capacity = (n as f64 / load).ceil() as usize;
    let mut map = hive(bench, capacity, slots, hash, false)?;
    let gpu = bench.gpu.clone();
    let stream = gpu.stream().clone();
    let device = gpu.info().name.clone();
    let shape = format!("{slots} slots, {}, load {load}", hash.name());
    let mut keys = stream.alloc_zeros::<u32>(n)?;
    let mut values = stream.alloc_zeros::<u32>(n)?;
    let mut seed = 0;
    let mut failed = 0;
    let insert = bench.timer.measure(|rep| {
        map.clear().map_err(core_error)?;
        seed = rep.seed();
        (keys, values) = upload(&gpu, 0, n, seed)?;
        map.reset_counters().map_err(core_error)?;
        rep.time(|| insert_counted(&mut map, &keys, &values, &mut failed))
    })?;
    let mut note = steps_note(&map)?;
    if failed > 0 {
        note.push_str(&format!("; {failed} inserts FAILED (stash full)"));
    }
    // SAFETY: every find writes all of out.
    let mut out = unsafe { stream.alloc::<u32>(n) }?;
    let hit = bench.timer.measure(|rep| {
        rep.time(|| {
            map.get_many_into(&keys, &mut out, ABSENT)
                .map_err(core_error)
        })
    })?;
    let hits_ok = failed > 0 || stream.clone_dtoh(&out)? == stream.clone_dtoh(&values)?;
    let (misses, _) = upload(&gpu, n as u64, n, seed)?;
    let miss = bench.timer.measure(|rep| {
        rep.time(|| {
            map.get_many_into(&misses, &mut out, ABSENT)
                .map_err(core_error)
        })
    })?;
    let misses_ok = stream.clone_dtoh(&out)?.iter().all(|&v| v == ABSENT);
    let checked = if hits_ok && misses_ok {
        "results checked"
    } else {
        "RESULTS WRONG: the rates are meaningless"
    };
    let cuckoo = |op: &str| {
        if slots == 16 {
            peers::bucketed_cuckoo(&device, op, load)
        } else {
            None
        }
    };
    let mut rows = vec![
        Row::new(
            NAME,
            &format!("insert, {shape}"),
            n as u64,
            insert,
            n as f64,
            Unit::GigaKeysPerSecond,
        )
        .with_load(load)
        .with_baseline(cuckoo("insert"))
        .with_note(note),
        Row::new(
            NAME,
            &format!("find (hit), {shape}"),
            n as u64,
            hit,
            n as f64,
            Unit::GigaQueriesPerSecond,
        )
        .with_load(load)
        .with_baseline(cuckoo("find hit"))
        .with_note(checked),
        Row::new(
            NAME,
            &format!("find (miss), {shape}"),
            n as u64,
            miss,
            n as f64,
            Unit::GigaQueriesPerSecond,
        )
        .with_load(load)
        .with_baseline(cuckoo("find miss"))
        .with_note(checked),
    ];
    drop(map);
    if linear {
        rows.extend(linear_rows(bench, n, map_slots(capacity, slots), load)?);
        if load == 0.8 {
            rows.extend(slabhash_rows(bench, n)?);
        }
    }
    Ok(rows)
}

fn map_slots(capacity: usize, slots: u32) -> usize {
    capacity.div_ceil(slots as usize) * slots as usize
}

/// A LinearProbeMap of `capacity` slots (rounded up to a power of two) that fails
/// inserts past `max_load_factor` rather than growing.
fn linear_table(
    gpu: &Gpu,
    capacity: usize,
    max_load_factor: f64,
) -> Result<LinearProbeMap<u32, u32>> {
    let config = LinearConfig {
        capacity: capacity as u64,
        max_load_factor,
        when_full: WhenFull::Fail,
        ..LinearConfig::default()
    };
    LinearProbeMap::with_config(gpu, config).map_err(core_error)
}

/// LinearProbeMap on `capacity` slots holding `n` keys: insert, find hit and miss.
fn linear_rows(bench: &mut Bench, n: usize, capacity: usize, load: f64) -> Result<Vec<Row>> {
    let mut map = linear_table(&bench.gpu, capacity, 0.97)?;
    let timings = baseline_timings(
        bench,
        n,
        &mut map,
        |m| m.clear().map_err(core_error),
        |m, k, v| m.insert_many(k, v).map_err(core_error),
        |m, k, out| m.get_many_into(k, out).map_err(core_error),
    )?;
    // The linear table rounds its capacity up to a power of two, so its load can be
    // lower than HiveMap's: the rows name the load it ran at.
    let actual = map.stats().map_err(core_error)?.load_factor;
    Ok(baseline_rows(
        &format!("LinearProbeMap baseline, load {actual:.2} (HiveMap's {load})"),
        n,
        timings,
    ))
}

/// SlabHashMap sized for `n` keys (the slab hash paper's β 0.7, memory utilization about
/// 0.6): insert, find hit and miss.
fn slabhash_rows(bench: &mut Bench, n: usize) -> Result<Vec<Row>> {
    let mut map = SlabHashMap::<u32, u32>::new(&bench.gpu, n).map_err(core_error)?;
    let timings = baseline_timings(
        bench,
        n,
        &mut map,
        |m| m.clear().map_err(core_error),
        |m, k, v| m.insert_many(k, v).map_err(core_error),
        |m, k, out| m.get_many_into(k, out).map_err(core_error),
    )?;
    let utilization = map.stats().map_err(core_error)?.memory_utilization;
    Ok(baseline_rows(
        &format!("SlabHashMap baseline, memory utilization {utilization:.2}"),
        n,
        timings,
    ))
}

/// Insert, find hit and find miss timings of `n` fresh keys through a baseline table's
/// own batch calls (cleared before each insert repetition).
fn baseline_timings<T>(
    bench: &mut Bench,
    n: usize,
    table: &mut T,
    clear: impl Fn(&mut T) -> Result<()>,
    insert: impl Fn(&mut T, &CudaSlice<u32>, &CudaSlice<u32>) -> Result<()>,
    find: impl Fn(&mut T, &CudaSlice<u32>, &mut CudaSlice<u32>) -> Result<()>,
) -> Result<[Timing; 3]> {
    let gpu = bench.gpu.clone();
    let stream = gpu.stream().clone();
    let mut keys = stream.alloc_zeros::<u32>(n)?;
    let mut values = stream.alloc_zeros::<u32>(n)?;
    let mut seed = 0;
    let insert = bench.timer.measure(|rep| {
        clear(table)?;
        seed = rep.seed();
        (keys, values) = upload(&gpu, 0, n, seed)?;
        rep.time(|| insert(table, &keys, &values))
    })?;
    // SAFETY: every find writes all of out.
    let mut out = unsafe { stream.alloc::<u32>(n) }?;
    let hit = bench
        .timer
        .measure(|rep| rep.time(|| find(table, &keys, &mut out)))?;
    let (misses, _) = upload(&gpu, n as u64, n, seed)?;
    let miss = bench
        .timer
        .measure(|rep| rep.time(|| find(table, &misses, &mut out)))?;
    Ok([insert, hit, miss])
}

/// The insert, find (hit) and find (miss) rows of a baseline labelled `shape`.
fn baseline_rows(shape: &str, n: usize, [insert, hit, miss]: [Timing; 3]) -> Vec<Row> {
    [
        ("insert", insert, Unit::GigaKeysPerSecond),
        ("find (hit)", hit, Unit::GigaQueriesPerSecond),
        ("find (miss)", miss, Unit::GigaQueriesPerSecond),
    ]
    .into_iter()
    .map(|(what, timing, unit)| {
        Row::new(
            NAME,
            &format!("{what}, {shape}"),
            n as u64,
            timing,
            n as f64,
            unit,
        )
        .with_structure(shape.split_whitespace().next().unwrap_or(shape))
    })
    .collect()
}

/// The paper's imbalanced workload: `n` operations, insert:lookup:delete = 0.5:0.3:0.2,
/// in one `apply` kernel, on a table of `n` slots prefilled with `n / 2` keys (load 0.5
/// before, 0.8 after). Lookups and deletes take distinct present keys, inserts new ones;
/// the order is shuffled. The operations are the same in every repetition (the table is
/// rebuilt each time). SlabHashMap then runs the same operations (`mixed_slabhash`): the
/// row's same-run baseline.
fn mixed(bench: &mut Bench, n: usize) -> Result<Vec<Row>> {
    let gpu = bench.gpu.clone();
    let stream = gpu.stream().clone();
    let mut map = hive(bench, n, 16, HashPair::BitHash, false)?;
    let seed = 0x4d49_5845;
    let half = n / 2;
    let (prefill_keys, prefill_values) = upload(&gpu, 0, half, seed)?;
    let deletes = n / 5;
    let lookups = 3 * n / 10;
    let mut kinds: Vec<u8> = Vec::with_capacity(n);
    let mut idx: Vec<u64> = Vec::with_capacity(n);
    for i in 0..n as u64 {
        let (kind, index) = if (i as usize) < deletes {
            (1u8, i)
        } else if (i as usize) < deletes + lookups {
            (2, i)
        } else {
            (0, half as u64 + i - (deletes + lookups) as u64)
        };
        kinds.push(kind);
        idx.push(index);
    }
    // Fisher-Yates with a 64-bit LCG: a fixed shuffle.
    let mut state = 0x853c_49e6_748f_ea9bu64;
    for i in (1..n).rev() {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let j = ((state >> 33) % (i as u64 + 1)) as usize;
        kinds.swap(i, j);
        idx.swap(i, j);
    }
    let host_keys: Vec<u32> = idx.iter().map(|&i| key(i, seed)).collect();
    let host_values: Vec<u32> = idx.iter().map(|&i| i as u32).collect();
    let host_kinds = kinds;
    let (kinds, keys, values) = (
        stream.clone_htod(&host_kinds)?,
        stream.clone_htod(&host_keys)?,
        stream.clone_htod(&host_values)?,
    );
    let mut out = stream.alloc_zeros::<u64>(n)?;
    let timing = bench.timer.measure(|rep| {
        map.clear().map_err(core_error)?;
        map.insert_many(&prefill_keys, &prefill_values)
            .map_err(core_error)?;
        rep.time(|| {
            map.apply_device(
                &kinds.as_view(),
                &keys.as_view(),
                &values.as_view(),
                &mut out,
            )
            .map_err(core_error)
        })
    })?;
    let out = stream.clone_dtoh(&out)?;
    let observed = out.iter().filter(|&&w| w & (1 << 32) != 0).count();
    let expected_len = half + (n - deletes - lookups) - deletes;
    let ok = observed == deletes + lookups && map.len() == expected_len;
    let mut note = format!(
        "{}; {}",
        if ok {
            "observations and length checked"
        } else {
            "RESULTS WRONG"
        },
        steps_note(&map)?
    );
    drop(map);
    let ops: Vec<MapOp<u32, u32>> = host_kinds
        .iter()
        .zip(host_keys.iter().zip(&host_values))
        .map(|(&kind, (&k, &v))| match kind {
            0 => MapOp::Insert(k, v),
            1 => MapOp::Remove(k),
            _ => MapOp::Get(k),
        })
        .collect();
    let (slab_rate, slab_note) = mixed_slabhash(
        bench,
        n,
        (&prefill_keys, &prefill_values),
        &ops,
        (deletes + lookups, expected_len),
    )?;
    note.push_str(&slab_note);
    Ok(vec![Row::new(
        NAME,
        "mixed insert:lookup:delete 0.5:0.3:0.2, 16 slots",
        n as u64,
        timing,
        n as f64,
        Unit::GigaQueriesPerSecond,
    )
    .with_operation("mixed 0.5:0.3:0.2")
    .in_figure("fig8", Some((n as f64).log2()))
    .with_baseline(Some(crate::report::Baseline {
        label: "SlabHashMap, same operations, this run".into(),
        rate: slab_rate,
    }))
    .with_note(note)])
}

/// Fig. 8's comparison: SlabHashMap sized for `n` keys (β 0.7), prefilled with the same
/// keys as HiveMap, running the same shuffled operations in one `apply_batch` kernel
/// (the batch on the device, prefilled again before each repetition). Returns its rate in
/// G operations/s and a note: its timing, whether the `observed` finds and removes and
/// the final `len` (the pair) match, and its memory utilization.
fn mixed_slabhash(
    bench: &mut Bench,
    n: usize,
    (prefill_keys, prefill_values): (&CudaSlice<u32>, &CudaSlice<u32>),
    ops: &[MapOp<u32, u32>],
    (observed, len): (usize, usize),
) -> Result<(f64, String)> {
    let gpu = bench.gpu.clone();
    let mut map = SlabHashMap::<u32, u32>::new(&gpu, n).map_err(core_error)?;
    let batch = DeviceBatch::map(&gpu, ops).map_err(core_error)?;
    let mut results = None;
    let timing = bench.timer.measure(|rep| {
        results = None;
        map.clear().map_err(core_error)?;
        map.insert_many(prefill_keys, prefill_values)
            .map_err(core_error)?;
        rep.time(|| {
            results = Some(map.apply_batch(&batch).map_err(core_error)?);
            Ok(())
        })
    })?;
    let seen = match &results {
        Some(r) => r.to_host().map_err(core_error)?,
        None => Vec::new(),
    };
    let present = seen
        .iter()
        .filter(|r| matches!(r, OpResult::Present(_)))
        .count();
    let ok = present == observed && map.len().map_err(core_error)? == len;
    let utilization = map.stats().map_err(core_error)?.memory_utilization;
    let note = format!(
        "; SlabHashMap (β 0.7, same prefill and operations, apply_batch): median {:.3} ms \
         (min {:.3}, max {:.3}), memory utilization {utilization:.2}, {}",
        timing.median_ms,
        timing.min_ms,
        timing.max_ms,
        if ok {
            "observations and length checked"
        } else {
            "RESULTS WRONG"
        }
    );
    Ok((timing.giga_rate(n as f64), note))
}

/// Expansion and contraction by k (the paper: 32,768) buckets of a table at load 0.45
/// holding n (2^23) keys.
fn resize(bench: &mut Bench, n: usize, k: usize) -> Result<Vec<Row>> {
    let gpu = bench.gpu.clone();
    let mut map = HiveMap::with_config(
        &gpu,
        HiveConfig {
            capacity: (n as f64 / 0.45) as usize,
            auto_resize: false,
            resize_batch: k as u32,
            ..Default::default()
        },
    )
    .map_err(core_error)?;
    let (keys, values) = upload(&gpu, 0, n, 0x7e51_2e00)?;
    map.insert_many(&keys, &values).map_err(core_error)?;
    let base = map.buckets();
    let expand = bench.timer.measure(|rep| {
        if map.buckets() > base {
            map.contract(map.buckets() - base).map_err(core_error)?;
        }
        rep.time(|| map.expand(k).map_err(core_error))
    })?;
    let contract = bench.timer.measure(|rep| {
        if map.buckets() == base {
            map.expand(k).map_err(core_error)?;
        }
        rep.time(|| map.contract(k).map(drop).map_err(core_error))
    })?;
    map.validate().map_err(core_error)?;
    let ok = map.len() == n && map.buckets() == base;
    drop(map);
    let slots = (k * 16) as f64;
    let [grow, shrink] = rehash_baselines(bench, (&keys, &values), base * 16, k * 16)?;
    let note = |what: &str, rehash: &str| {
        format!(
            "{k} buckets {what} (x16 slots), table of {base} buckets at load 0.45{}; {rehash}",
            if ok { "; validated" } else { "; WRONG SIZE" }
        )
    };
    Ok(vec![
        Row::new(
            NAME,
            "expansion (split), slots processed",
            slots as u64,
            expand,
            slots,
            Unit::GigaItemsPerSecond,
        )
        .with_operation("expansion")
        .in_figure("resize", Some(k as f64))
        .with_baseline(Some(grow.0))
        .with_note(note("split", &grow.1)),
        Row::new(
            NAME,
            "contraction (merge), slots processed",
            slots as u64,
            contract,
            slots,
            Unit::GigaItemsPerSecond,
        )
        .with_operation("contraction")
        .in_figure("resize", Some(k as f64))
        .with_baseline(Some(shrink.0))
        .with_note(note("merged", &shrink.1)),
    ])
}

/// The resize figure's comparison: LinearProbeMap holding the same `keys` in a table of
/// `slots` slots (HiveMap's before the step), rebuilt in full by `rehash` to the size
/// HiveMap reaches, `slots + step` (grow), and back to `slots` (shrink); each repetition
/// one rehash of the whole table, from the other size (rebuilt untimed before it). The
/// rate counts the slots the rehash processes (every slot of the old table, as the
/// HiveMap rows count the slots of the buckets split or merged) per second; the note
/// gives the capacities (LinearProbeMap rounds them up to a power of two), the timing
/// and the rate at which the rehash delivers the step's `step` slots.
fn rehash_baselines(
    bench: &mut Bench,
    (keys, values): (&CudaSlice<u32>, &CudaSlice<u32>),
    slots: usize,
    step: usize,
) -> Result<[(crate::report::Baseline, String); 2]> {
    let mut map = linear_table(&bench.gpu, slots, 0.97)?;
    map.insert_many(keys, values).map_err(core_error)?;
    let (small, large) = (slots as u64, (slots + step) as u64);
    let grow = rehash_baseline(bench, &mut map, "grow", (small, large), step)?;
    let shrink = rehash_baseline(bench, &mut map, "shrink", (large, small), step)?;
    let ok = map.len().map_err(core_error)? == keys.len();
    Ok([grow, shrink].map(|(baseline, mut note)| {
        if !ok {
            note.push_str("; LENGTH WRONG");
        }
        (baseline, note)
    }))
}

/// One of [`rehash_baselines`]: `map` rebuilt from `from` slots to `to` per repetition.
fn rehash_baseline(
    bench: &mut Bench,
    map: &mut LinearProbeMap<u32, u32>,
    what: &str,
    (from, to): (u64, u64),
    step: usize,
) -> Result<(crate::report::Baseline, String)> {
    let mut before = 0;
    let timing = bench.timer.measure(|rep| {
        map.rehash(from).map_err(core_error)?;
        before = map.capacity();
        rep.time(|| map.rehash(to).map_err(core_error))
    })?;
    let after = map.capacity();
    Ok((
        crate::report::Baseline {
            label: format!("LinearProbeMap full rehash ({what}), this run"),
            rate: timing.giga_rate(before as f64),
        },
        format!(
            "comparison: LinearProbeMap (same keys) rehash({to}) rebuilding {before} slots \
             into {after} (powers of two), median {:.3} ms (min {:.3}, max {:.3}), \
             {:.3} G slots/s of the step's {step}",
            timing.median_ms,
            timing.min_ms,
            timing.max_ms,
            timing.giga_rate(step as f64),
        ),
    ))
}

/// Fig. 9, the load-factor figure: fills a fixed table of `capacity` (2^22) slots,
/// prefilled untimed to `prefill` (0.5), in batches up to each of `loads` (0.55 to 0.97)
/// and reports, per batch, its insert rate (and in the note how many of its inserts
/// finished in each step), against LinearProbeMap of as many slots taking the same
/// batches.
fn steps(bench: &mut Bench, capacity: usize, prefill: f64, loads: &[f64]) -> Result<Vec<Row>> {
    let gpu = bench.gpu.clone();
    let mut map = hive(bench, capacity, 16, HashPair::BitHash, false)?;
    let mut linear = linear_table(&gpu, map_slots(capacity, 16), 0.99)?;
    let seed = 0x5732_0055;
    let mut filled = (capacity as f64 * prefill) as usize;
    if filled > 0 {
        let (k0, v0) = upload(&gpu, 0, filled, seed)?;
        map.insert_many(&k0, &v0).map_err(core_error)?;
        linear.insert_many(&k0, &v0).map_err(core_error)?;
    }
    let mut rows = Vec::new();
    for &load in loads {
        let to = (capacity as f64 * load) as usize;
        if to <= filled {
            continue;
        }
        let (keys, values) = upload(&gpu, filled as u64, to - filled, seed)?;
        map.reset_counters().map_err(core_error)?;
        let mut failed = 0;
        let ms = time_once(&gpu, || {
            insert_counted(&mut map, &keys, &values, &mut failed)
        })?;
        let linear_ms = time_once(&gpu, || {
            linear.insert_many(&keys, &values).map_err(core_error)
        })?;
        let timing = Timing::from_samples(&[ms])
            .ok_or_else(|| Error::InvalidArgument("no sample".into()))?;
        let batch = to - filled;
        filled = to;
        let mut note = steps_note(&map)?;
        if failed > 0 {
            note.push_str(&format!("; {failed} inserts failed (stash full)"));
        }
        rows.push(
            Row::new(
                NAME,
                &format!("insert batch to load {load:.2}"),
                batch as u64,
                timing,
                batch as f64,
                Unit::GigaKeysPerSecond,
            )
            .with_operation("insert batch")
            .with_load(load)
            // The batches differ in size: the x axis is the load reached, not log2 n.
            .in_figure("fig9", Some(load))
            .with_baseline(Some(crate::report::Baseline {
                label: "LinearProbeMap, same batches, this run".into(),
                rate: batch as f64 / (linear_ms * 1e-3) / 1e9,
            }))
            .with_note(note),
        );
    }
    Ok(rows)
}

/// `insert_many` that counts failed inserts (stash full) in `failed` instead of failing.
fn insert_counted(
    map: &mut HiveMap,
    keys: &CudaSlice<u32>,
    values: &CudaSlice<u32>,
    failed: &mut u64,
) -> Result<()> {
    match map.insert_many(keys, values) {
        Ok(()) => {
            *failed = 0;
            Ok(())
        }
        Err(e) => match e.not_applied() {
            Some(indices) => {
                *failed = indices.len() as u64;
                Ok(())
            }
            None => Err(core_error(e)),
        },
    }
}
