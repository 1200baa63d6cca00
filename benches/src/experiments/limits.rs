//! `limits`: the physical ceilings every other experiment is compared with, measured the
//! way the published figures were measured (2^26 queries into a 4 GiB table): device copy,
//! random 32-byte sector reads, warp-cooperative 128-byte line reads, random atomicCAS.
//!
//! Each probe row carries the published figure of the same GPU as its baseline, so the
//! ratio column says how close our probe comes to the published one. Our random-access
//! probes hash their indices on the device and write nothing per query, so the only
//! traffic is the table's own sectors; they land at or above the published figures (two
//! runs on H200s, 2026-11-21: sector reads 1.09-1.17x, line reads 1.32x, CAS 1.01-1.03x,
//! our copy kernel 0.99x and the driver's memcpy 1.06-1.07x), which makes them the
//! stricter ceilings. Between machines the sector-read figure moved by 7%, within a run
//! by under 1%: compare rows of one run only.
//!
//! The probe rows form the `ceilings` figure: a bar per probe beside the published figure
//! of the same GPU (one figure per unit: GB/s for the copies, G queries/s for the rest).
//!
//! The last row is gpuds-core's radix sort of u32 keys, against the copy bandwidth spent
//! on the bytes a onesweep sort must move.

use gpuds_core::primitives::{self, RadixSorter};
use gpuds_core::Result;

use super::{Accepts, Case, Experiment, Params, Scale};
use crate::bench::{Bench, Limit};
use crate::kernels::random_word;
use crate::peers;
use crate::report::{Baseline, Row, Unit};

/// The `limits` experiment.
pub const EXPERIMENT: Experiment = Experiment {
    name: "limits",
    about: "physical ceilings: copy, random sector reads, warp line reads, random CAS; radix sort",
    accepts: Accepts::NONE,
    plan,
};

const NAME: &str = "limits";
const EMPTY: u32 = u32::MAX;

/// Sizes of the probes at one scale.
#[derive(Clone, Copy, Debug)]
struct Sizes {
    /// Bytes of each of the copy's two buffers.
    copy_bytes: usize,
    /// Bytes of the random-access table (sized down when memory is short).
    table_bytes: usize,
    /// Queries per random-access probe.
    queries: u64,
    /// Keys of the radix sort.
    sort_keys: usize,
}

fn sizes(scale: Scale) -> Sizes {
    match scale {
        Scale::Full => Sizes {
            copy_bytes: 1 << 30,
            table_bytes: 4 << 30,
            queries: 1 << 26,
            sort_keys: 1 << 26,
        },
        // Still twenty times the largest L2 so far (50 MiB on the H100, 60 on the B200).
        Scale::Quick => Sizes {
            copy_bytes: 256 << 20,
            table_bytes: 1 << 30,
            queries: 1 << 24,
            sort_keys: 1 << 24,
        },
    }
}

fn plan(params: &Params) -> Vec<Case> {
    let scale = params.scale;
    let s = sizes(scale);
    [
        Limit::Copy,
        Limit::SectorReads,
        Limit::LineReads,
        Limit::Cas,
    ]
    .into_iter()
    .map(|limit| Case::new(name(limit), move |bench| measure(bench, limit, s)))
    .chain([Case::new("radix sort", move |bench| sort(bench, s, scale))])
    .collect()
}

/// Measures `limit` at `scale` unless this run measured it already, and returns it.
/// Experiments call this for the limit they compare with.
pub fn ensure(bench: &mut Bench, limit: Limit, scale: Scale) -> Result<f64> {
    match bench.limit(limit) {
        Some(rate) => Ok(rate),
        None => {
            measure(bench, limit, sizes(scale))?;
            Ok(bench.limit(limit).unwrap_or(0.0))
        }
    }
}

/// The copy bandwidth as a rate of items for an operation that must move
/// `bytes_per_item` bytes per item (reads plus writes): the ceiling of a memory-bound
/// primitive, in G items/s.
pub fn copy_baseline(
    bench: &mut Bench,
    scale: Scale,
    bytes_per_item: f64,
    item: &str,
) -> Result<Baseline> {
    let copy = ensure(bench, Limit::Copy, scale)?;
    Ok(Baseline {
        label: format!("copy / {bytes_per_item} B per {item}"),
        rate: copy / bytes_per_item,
    })
}

fn name(limit: Limit) -> &'static str {
    match limit {
        Limit::Copy => "device copy, read+write",
        Limit::SectorReads => "random 4 B reads (one 32 B sector)",
        Limit::LineReads => "warp-cooperative 128 B line reads",
        Limit::Cas => "random atomicCAS",
    }
}

/// Measures one limit, records it in `bench` and returns its rows.
fn measure(bench: &mut Bench, limit: Limit, s: Sizes) -> Result<Vec<Row>> {
    let rows = match limit {
        Limit::Copy => copy(bench, s)?,
        Limit::SectorReads | Limit::LineReads | Limit::Cas => vec![random_access(bench, limit, s)?],
    };
    let reference = peers::reference(&bench.gpu.info().name, limit);
    let rows: Vec<Row> = rows
        .into_iter()
        .map(|r| {
            r.with_baseline(reference.clone())
                .in_figure("ceilings", None)
        })
        .collect();
    for r in &rows {
        bench.record_limit(limit, r.rate);
    }
    Ok(rows)
}

/// Two copies: our 16-byte kernel and the driver's device-to-device memcpy. The limit is
/// the faster of the two.
fn copy(bench: &mut Bench, s: Sizes) -> Result<Vec<Row>> {
    let words = s.copy_bytes / 4;
    let src = bench.random_words(words, 0x51ed_270b)?;
    // SAFETY: the copies below write every word before anything reads it.
    let mut dst = unsafe { bench.gpu.stream().alloc::<u32>(words) }?;
    let moved = 2.0 * s.copy_bytes as f64;
    let probes = &bench.probes;
    let kernel = bench
        .timer
        .measure(|rep| rep.time(|| probes.copy(&src, &mut dst)))?;
    let stream = bench.gpu.stream().clone();
    let driver = bench
        .timer
        .measure(|rep| rep.time(|| Ok(stream.memcpy_dtod(&src, &mut dst)?)))?;
    let size = s.copy_bytes as u64;
    Ok(vec![
        Row::new(
            NAME,
            name(Limit::Copy),
            size,
            kernel,
            moved,
            Unit::GigabytesPerSecond,
        )
        .with_note("size: bytes per buffer; 16 B accesses"),
        Row::new(
            NAME,
            "device copy (driver memcpy)",
            size,
            driver,
            moved,
            Unit::GigabytesPerSecond,
        )
        .with_note("size: bytes per buffer"),
    ])
}

/// Sector reads, line reads or CAS: `s.queries` random accesses into one table.
fn random_access(bench: &mut Bench, limit: Limit, s: Sizes) -> Result<Row> {
    let (words, note) = bench.table_words(s.table_bytes)?;
    let mut table = bench.random_words(words, 0x9b05_688c)?;
    let mut found = bench.gpu.stream().alloc_zeros::<u32>(1)?;
    let queries = s.queries;
    let (gpu, probes) = (&bench.gpu, &bench.probes);
    let timing = bench.timer.measure(|rep| {
        let seed = rep.seed();
        // A needle from the seed: compared with every word read, almost never equal.
        let needle = seed.rotate_left(13) ^ 0x1f83_d9ab;
        match limit {
            Limit::SectorReads => {
                rep.time(|| probes.sector_reads(&table, queries, seed, needle, &mut found))
            }
            Limit::LineReads => {
                rep.time(|| probes.line_reads(&table, queries, seed, needle, &mut found))
            }
            _ => {
                primitives::fill(gpu, &mut table, EMPTY)?;
                rep.time(|| probes.random_cas(&mut table, queries, seed))
            }
        }
    })?;
    let table_note = format!("table {}", crate::report::bytes_label(words * 4));
    let note = if note.is_empty() { table_note } else { note };
    Ok(Row::new(
        NAME,
        name(limit),
        queries,
        timing,
        queries as f64,
        Unit::GigaQueriesPerSecond,
    )
    .with_note(note))
}

/// gpuds-core's radix sort of fresh random u32 keys. A onesweep LSD sort reads the keys
/// once for its histograms and then reads and writes them in each of 4 passes: 36 bytes
/// per key, the baseline's conversion of the copy bandwidth. The output of the last
/// repetition is checked on the host (strictly increasing, since the fill's keys are
/// distinct, and the same sum as the input), so a broken sort cannot pass unnoticed.
fn sort(bench: &mut Bench, s: Sizes, scale: Scale) -> Result<Vec<Row>> {
    let n = s.sort_keys;
    let mut sorter = RadixSorter::new(&bench.gpu)?;
    let mut keys = bench.random_words(n, 0)?;
    let probes = &bench.probes;
    let mut last_seed = 0;
    let timing = bench.timer.measure(|rep| {
        last_seed = rep.seed();
        probes.fill_random(&mut keys, last_seed)?;
        rep.time(|| sorter.sort_keys(&mut keys))
    })?;
    let sorted = bench.gpu.stream().clone_dtoh(&keys)?;
    let input_sum: u64 = (0..n as u64)
        .map(|i| random_word(i, last_seed) as u64)
        .sum();
    let output_sum: u64 = sorted.iter().map(|&k| k as u64).sum();
    let note = if sorted.windows(2).all(|w| w[0] < w[1]) && input_sum == output_sum {
        "gpuds-core RadixSorter; output checked"
    } else {
        "OUTPUT WRONG (not the sorted input): the rate is meaningless"
    };
    let baseline = copy_baseline(bench, scale, 36.0, "key")?;
    Ok(vec![Row::new(
        NAME,
        "radix sort, u32 keys",
        n as u64,
        timing,
        n as f64,
        Unit::GigaKeysPerSecond,
    )
    .with_baseline(Some(baseline))
    .with_note(note)])
}
