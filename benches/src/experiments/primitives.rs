//! `primitives`: gpuds-core's exclusive scan and stream compaction of u32 items, each
//! compared with the copy bandwidth turned into items per second for the bytes it must
//! move. (The radix sort is a row of `limits`, since later experiments compare with it.)

use gpuds_core::primitives::Scanner;
use gpuds_core::Result;

use super::limits::copy_baseline;
use super::{Accepts, Case, Experiment, Params, Scale};
use crate::bench::Bench;
use crate::report::{Row, Unit};

/// The `primitives` experiment.
pub const EXPERIMENT: Experiment = Experiment {
    name: "primitives",
    about: "gpuds-core exclusive scan and stream compaction of u32 items",
    accepts: Accepts::NONE,
    plan,
};

const NAME: &str = "primitives";

fn plan(params: &Params) -> Vec<Case> {
    let scale = params.scale;
    let n = match scale {
        Scale::Quick => 1 << 24,
        Scale::Full => 1 << 26,
    };
    vec![
        Case::new("exclusive scan", move |bench| scan(bench, n, scale)),
        Case::new("stream compaction", move |bench| {
            compaction(bench, n, scale)
        }),
    ]
}

/// Scan of fresh random words; reads and writes 4 bytes per item. The scanner's scratch
/// and the total are allocated before the timed region, and the timed call does not
/// synchronize: the events time the scan kernel and the zeroing of its look-back flags.
fn scan(bench: &mut Bench, n: usize, scale: Scale) -> Result<Vec<Row>> {
    let mut input = bench.random_words(n, 1)?;
    let stream = bench.gpu.stream();
    // SAFETY: the scan writes every output word.
    let mut output = unsafe { stream.alloc::<u32>(n) }?;
    let mut total = stream.alloc_zeros::<u32>(1)?;
    let mut scanner = Scanner::new(&bench.gpu)?;
    scanner.reserve(n)?;
    let probes = &bench.probes;
    let timing = bench.timer.measure(|rep| {
        probes.fill_random(&mut input, rep.seed())?;
        rep.time(|| scanner.exclusive_scan(&input, &mut output, &mut total))
    })?;
    let baseline = copy_baseline(bench, scale, 8.0, "item")?;
    Ok(vec![Row::new(
        NAME,
        "exclusive scan, u32",
        n as u64,
        timing,
        n as f64,
        Unit::GigaItemsPerSecond,
    )
    .with_baseline(Some(baseline))
    .with_note("Scanner, no sync; total left on the device")])
}

/// Compaction of fresh random words by fresh random flags keeping about half; reads 8
/// bytes per item and writes 4 per kept item. Scratch and count are allocated before the
/// timed region, and the timed call does not synchronize.
fn compaction(bench: &mut Bench, n: usize, scale: Scale) -> Result<Vec<Row>> {
    let mut input = bench.random_words(n, 2)?;
    let mut flags = bench.random_words(n, 3)?;
    let stream = bench.gpu.stream();
    // SAFETY: the compaction writes the kept prefix, and nothing reads the rest.
    let mut output = unsafe { stream.alloc::<u32>(n) }?;
    let mut count = stream.alloc_zeros::<u32>(1)?;
    let mut scanner = Scanner::new(&bench.gpu)?;
    scanner.reserve(n)?;
    let probes = &bench.probes;
    let timing = bench.timer.measure(|rep| {
        probes.fill_random(&mut input, rep.seed())?;
        probes.fill_flags(&mut flags, rep.seed() ^ 0x5555_5555)?;
        rep.time(|| scanner.compact(&input, &flags, &mut output, &mut count))
    })?;
    let baseline = copy_baseline(bench, scale, 10.0, "item")?;
    Ok(vec![Row::new(
        NAME,
        "stream compaction, u32, half kept",
        n as u64,
        timing,
        n as f64,
        Unit::GigaItemsPerSecond,
    )
    .with_baseline(Some(baseline))
    .with_note("Scanner, no sync; count left on the device")])
}
