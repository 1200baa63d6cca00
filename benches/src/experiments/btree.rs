//! `btree`: the GPU B-Tree experiments of Awad (2022), chapter 3, on the local GPU, with a
//! GPU sorted array (gpuds-core radix sort + binary search) as the baseline in the same
//! run, and the published figures of the original implementations on the same GPU for
//! the target rows (2^24 keys):
//!
//! - targets: insertion into an empty tree, bulk build, lookup (tiles of 8, 16 and 32
//!   lanes), range queries returning exactly 8 and 32 pairs (one pass with a capacity
//!   per query; the collect pass with offsets and the count form too), successor,
//!   erasing half the keys;
//! - Table 3.3: incremental insertion with batches of 2^16 to 2^22 keys (SA: re-sort);
//! - Fig. 3.2: point, range (count, 8 per query) and successor rates against tree size;
//! - Fig. 3.3: inserting a batch of 2^i into a tree of m - 2^i against a bulk rebuild of m;
//! - Fig. 3.4: deleting 10 to 50 % of the keys;
//! - Fig. 3.5: mixed concurrent batches with update ratio α = 0.2, 0.6, 1.0.
//!
//! The figures' rows name their figure (`table3.3`, `fig3.2a` lookup, `fig3.2b` range,
//! `fig3.2c` successor, `fig3.3`, `fig3.4`, `fig3.5`) and their x (log2 of the batch or
//! tree size, or the percentage deleted), so that `--plot DIR` draws each with the sorted
//! array (or the bulk rebuild) of the same run beside the tree. `--keys N` replaces the
//! tree size (2^24; 2^22 in `quick`), and the tree-size sweeps run 2^18, 2^20, ... up to N.
//!
//! Keys are distinct random words (never zero), fresh in every repetition where the
//! operation consumes them; trees for queries are built by insertion, as the originals'.

use gpuds_btree::{BTreeConfig, GpuBTreeMap, SortedArray};
use gpuds_core::cudarc::driver::CudaSlice;
use gpuds_core::primitives::RadixSorter;
use gpuds_core::Result;

use super::core_error;
use super::{Accepts, Case, Experiment, Forms, Params, Scale};
use crate::bench::Bench;
use crate::peers;
use crate::report::{size_label, Baseline, Row, Unit};
use crate::timing::Timing;

/// The `btree` experiment.
pub const EXPERIMENT: Experiment = Experiment {
    name: "btree",
    about:
        "GpuBTreeMap (Awad 2022, ch. 3): Table 3.3, Fig. 3.2-3.5, targets; sorted array baseline",
    accepts: Accepts {
        words: Forms::EVERY,
        ..Accepts::KEYS
    },
    plan,
};

/// `btree-range`: only the 2^24 rows the range targets speak about (lookup with 8-lane
/// tiles for reference, one-pass ranges of 8 and 32 with 8- and 16-lane tiles): a part of
/// `btree`, which measures the same rows among many others.
pub const RANGE: Experiment = Experiment {
    name: "btree-range",
    about: "GpuBTreeMap: lookup and one-pass ranges of 8 and 32 at 2^24 keys (a part of `btree`)",
    accepts: Accepts::KEYS,
    plan: range_plan,
};

fn range_plan(params: &Params) -> Vec<Case> {
    let n = params.keys_or(1 << 24);
    match params.scale {
        // `quick` already runs the `btree` quick plan.
        Scale::Quick => Vec::new(),
        Scale::Full => vec![Case::new(
            format!("lookup and ranges, {} keys", size_label(n as u64)),
            move |b| range_targets(b, n),
        )],
    }
}

const NAME: &str = "btree";
type Tree = GpuBTreeMap<u32, u32>;

fn plan(params: &Params) -> Vec<Case> {
    if super::wide::asked(params) {
        return super::wide::plan(super::wide::Structure::BTree, params);
    }
    let n = params.keys_or(match params.scale {
        Scale::Quick => 1 << 22,
        Scale::Full => 1 << 24,
    });
    let mut cases = vec![
        Case::new("insert and bulk build", move |b| updates(b, n)),
        Case::new("lookup, range, successor", move |b| queries(b, n)),
    ];
    if params.scale == Scale::Quick {
        cases.extend([
            Case::new("erase half", move |b| erase(b, n, &[0.5])),
            Case::new("concurrent α = 0.6", move |b| concurrent(b, n, &[0.6])),
        ]);
        return cases;
    }
    let sizes = params.sweep(1 << 18, &[1 << 18, 1 << 20, 1 << 22, 1 << 24]);
    cases.push(Case::new("Table 3.3 batched insertion", move |b| {
        table_3_3(b, n)
    }));
    for &m in &sizes {
        let label = size_label(m as u64);
        cases.push(Case::new(format!("Fig. 3.2 queries, {label}"), move |b| {
            fig_3_2(b, m)
        }));
    }
    for &m in &sizes {
        let label = size_label(m as u64);
        cases.push(Case::new(
            format!("Fig. 3.3 incremental vs rebuild, {label}"),
            move |b| fig_3_3(b, m),
        ));
    }
    cases.push(Case::new("Fig. 3.4 deletion", move |b| {
        erase(b, n, &[0.1, 0.2, 0.3, 0.4, 0.5])
    }));
    for &m in &sizes {
        let label = size_label(m as u64);
        cases.push(Case::new(
            format!("Fig. 3.5 concurrent, {label}"),
            move |b| concurrent(b, m, &[0.2, 0.6, 1.0]),
        ));
    }
    cases
}

fn tree(bench: &Bench, n: usize, tile: u32) -> Result<Tree> {
    Tree::with_config(
        &bench.gpu,
        BTreeConfig {
            initial_nodes: (n as u64 / 2).max(1 << 16),
            max_nodes: (n as u64 * 2).max(1 << 20),
            query_tile: tile,
            ..Default::default()
        },
    )
    .map_err(core_error)
}

fn copy(bench: &Bench, src: &CudaSlice<u32>) -> Result<CudaSlice<u32>> {
    Ok(bench.gpu.stream().clone_dtod(src)?)
}

fn peer(bench: &Bench, op: &str) -> Option<Baseline> {
    peers::btree(&bench.gpu.info().name, op)
}

fn checked(ok: bool, note: &str) -> String {
    if ok {
        format!("{note}; checked")
    } else {
        format!("RESULT WRONG: {note}")
    }
}

/// Insertion of n fresh keys into an empty tree, and the bulk build of n fresh pairs.
fn updates(bench: &mut Bench, n: usize) -> Result<Vec<Row>> {
    let mut t = tree(bench, n, 16)?;
    let mut keys = bench.random_words(n, 1)?;
    let values = bench.random_words(n, 2)?;
    let probes = &bench.probes;
    let timing = bench.timer.measure(|rep| {
        t.clear().map_err(core_error)?;
        probes.fill_random(&mut keys, rep.seed())?;
        rep.time(|| t.insert_many_device(&keys, &values).map_err(core_error))
    })?;
    let ok = t.check().is_ok() && t.len().map_err(core_error)? == n;
    let insert = Row::new(
        NAME,
        "insert into empty tree",
        n as u64,
        timing,
        n as f64,
        Unit::GigaKeysPerSecond,
    )
    .with_baseline(peer(bench, "insert"))
    .with_note(checked(ok, "one batch, tile 32"));

    let (mut k, mut v) = (copy(bench, &keys)?, copy(bench, &values)?);
    let timing = bench.timer.measure(|rep| {
        probes.fill_random(&mut k, rep.seed())?;
        probes.fill_random(&mut v, rep.seed() ^ 1)?;
        rep.time(|| t.bulk_build_device(&mut k, &mut v).map_err(core_error))
    })?;
    let ok = t.len().map_err(core_error)? == n;
    let bulk = Row::new(
        NAME,
        "bulk build (sort + dedup + build)",
        n as u64,
        timing,
        n as f64,
        Unit::GigaKeysPerSecond,
    )
    .with_baseline(peer(bench, "bulk build"))
    .with_note(checked(ok, "fill 10 of 14"));

    // From sorted unique input (sorted outside the timed region).
    let mut sorter = RadixSorter::new(&bench.gpu)?;
    let timing = bench.timer.measure(|rep| {
        probes.fill_random(&mut k, rep.seed())?;
        sorter.sort_keys(&mut k)?;
        rep.time(|| t.bulk_build_sorted_device(&k, &k).map_err(core_error))
    })?;
    let ok = t.len().map_err(core_error)? == n;
    let sorted_bulk = Row::new(
        NAME,
        "bulk build from sorted input",
        n as u64,
        timing,
        n as f64,
        Unit::GigaKeysPerSecond,
    )
    .with_baseline(peer(bench, "bulk build"))
    .with_note(checked(ok, "increasing keys checked on the device"));

    let mut sa = SortedArray::new(&bench.gpu).map_err(core_error)?;
    let timing = bench.timer.measure(|rep| {
        probes.fill_random(&mut k, rep.seed())?;
        probes.fill_random(&mut v, rep.seed() ^ 1)?;
        rep.time(|| sa.build_device(&mut k, &mut v).map_err(core_error))
    })?;
    let sa_build = Row::new(
        NAME,
        "GPU SA build (sort + dedup)",
        n as u64,
        timing,
        n as f64,
        Unit::GigaKeysPerSecond,
    )
    .with_note(checked(sa.len() == n, "baseline"));
    drop(values);
    Ok(vec![insert, bulk, sorted_bulk, sa_build])
}

/// Sorted copy of the keys on the host.
fn sorted_host(bench: &Bench, keys: &CudaSlice<u32>) -> Result<Vec<u32>> {
    let mut sorted = copy(bench, keys)?;
    RadixSorter::new(&bench.gpu)?.sort_keys(&mut sorted)?;
    Ok(bench.gpu.stream().clone_dtoh(&sorted)?)
}

/// `q` ranges over `sorted` holding exactly `len` keys each, at pseudo-random places.
fn exact_ranges(sorted: &[u32], q: usize, len: usize) -> (Vec<u32>, Vec<u32>) {
    let span = sorted.len() - len;
    (0..q)
        .map(|i| {
            let j = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) as usize % span;
            (sorted[j], sorted[j + len - 1])
        })
        .unzip()
}

fn count_bits(bench: &Bench, bits: &CudaSlice<u32>) -> Result<u64> {
    Ok(bench
        .gpu
        .stream()
        .clone_dtoh(bits)?
        .iter()
        .map(|w| w.count_ones() as u64)
        .sum())
}

/// Lookup (tiles of 8, 16 and 32), ranges of 8 and 32 (collect form; count form for 8) and
/// successor (tiles of 8 and 16) on a tree of n keys built by insertion; the sorted array's
/// lookup and range count.
fn queries(bench: &mut Bench, n: usize) -> Result<Vec<Row>> {
    let keys = bench.random_words(n, 3)?;
    let sorted = sorted_host(bench, &keys)?;
    let stream = bench.gpu.stream().clone();
    let mut rows = Vec::new();
    let mut out = stream.alloc_zeros::<u32>(n)?;
    let mut out2 = stream.alloc_zeros::<u32>(n)?;
    let mut bits = stream.alloc_zeros::<u32>(n.div_ceil(32))?;
    for tile in [8, 16, 32] {
        let t = inserted_tree(bench, &keys, tile)?;
        rows.push(lookup_row(bench, &t, &keys, &mut out, &mut bits, tile)?);
        if tile == 32 {
            continue;
        }
        let timing = bench.timer.measure(|rep| {
            rep.time(|| {
                t.successor_many_device(&keys, &mut out, &mut out2, &mut bits)
                    .map_err(core_error)
            })
        })?;
        let ok = count_bits(bench, &bits)? == n as u64 - 1;
        rows.push(
            Row::new(
                NAME,
                &format!("successor, tile {tile}"),
                n as u64,
                timing,
                n as f64,
                Unit::GigaQueriesPerSecond,
            )
            .with_note(checked(ok, "of every key")),
        );
        let q = n / 4;
        for len in [8usize, 32] {
            let (lo, hi) = exact_ranges(&sorted, q, len);
            let (lo, hi) = (stream.clone_htod(&lo)?, stream.clone_htod(&hi)?);
            let counts = stream.clone_htod(&vec![len as u32; q])?;
            let offsets: Vec<u32> = (0..q as u32).map(|i| i * len as u32).collect();
            let offsets = stream.clone_htod(&offsets)?;
            rows.push(capped_row(bench, &t, &lo, &hi, len, tile)?);
            let mut rk = stream.alloc_zeros::<u32>(q * len)?;
            let mut rv = stream.alloc_zeros::<u32>(q * len)?;
            if tile == 8 {
                // The collect pass of the two-pass form (offsets and counts given).
                let timing = bench.timer.measure(|rep| {
                    rep.time(|| {
                        t.range_collect_device(&lo, &hi, &offsets, &counts, &mut rk, &mut rv)
                            .map_err(core_error)
                    })
                })?;
                let got = stream.clone_dtoh(&rk)?;
                let ok = got.chunks(len).all(|c| c.windows(2).all(|w| w[0] < w[1]));
                rows.push(
                    Row::new(
                        NAME,
                        &format!("range, {len} per query (collect pass, offsets), tile {tile}"),
                        q as u64,
                        timing,
                        q as f64,
                        Unit::GigaQueriesPerSecond,
                    )
                    .with_note(checked(ok, "n/4 queries, pairs written")),
                );
            }
            if len == 8 && tile == 16 {
                let mut c = stream.alloc_zeros::<u32>(q)?;
                let timing = bench.timer.measure(|rep| {
                    rep.time(|| t.range_count_device(&lo, &hi, &mut c).map_err(core_error))
                })?;
                let ok = stream.clone_dtoh(&c)?.iter().all(|&x| x == 8);
                let mut sa = SortedArray::new(&bench.gpu).map_err(core_error)?;
                let (mut k2, mut v2) = (copy(bench, &keys)?, copy(bench, &keys)?);
                sa.build_device(&mut k2, &mut v2).map_err(core_error)?;
                let sa_timing = bench.timer.measure(|rep| {
                    rep.time(|| sa.range_count_device(&lo, &hi, &mut c).map_err(core_error))
                })?;
                let sa_rate = sa_timing.giga_rate(q as f64);
                rows.push(
                    Row::new(
                        NAME,
                        "range count, 8 per query",
                        q as u64,
                        timing,
                        q as f64,
                        Unit::GigaQueriesPerSecond,
                    )
                    .with_baseline(Some(Baseline {
                        label: "GPU SA, this run".into(),
                        rate: sa_rate,
                    }))
                    .with_note(checked(ok, "count form")),
                );
                let sa_timing = bench.timer.measure(|rep| {
                    rep.time(|| {
                        sa.get_many_device(&keys, &mut out, &mut bits)
                            .map_err(core_error)
                    })
                })?;
                let ok = count_bits(bench, &bits)? == n as u64;
                rows.push(
                    Row::new(
                        NAME,
                        "GPU SA lookup (baseline)",
                        n as u64,
                        sa_timing,
                        n as f64,
                        Unit::GigaQueriesPerSecond,
                    )
                    .with_baseline(peer(bench, "find"))
                    .with_note(checked(ok, "binary search")),
                );
            }
        }
    }
    Ok(rows)
}

/// A tree for queries with `tile`-lane query tiles, holding `keys` (as values too), built
/// by insertion and checked.
fn inserted_tree(bench: &Bench, keys: &CudaSlice<u32>, tile: u32) -> Result<Tree> {
    let mut t = tree(bench, keys.len(), tile)?;
    t.insert_many_device(keys, keys).map_err(core_error)?;
    t.check().map_err(core_error)?;
    Ok(t)
}

/// Looking up every key of the tree: one row, checked (every key found).
fn lookup_row(
    bench: &mut Bench,
    t: &Tree,
    keys: &CudaSlice<u32>,
    out: &mut CudaSlice<u32>,
    bits: &mut CudaSlice<u32>,
    tile: u32,
) -> Result<Row> {
    let n = keys.len();
    let timing = bench
        .timer
        .measure(|rep| rep.time(|| t.get_many_device(keys, out, bits).map_err(core_error)))?;
    let ok = count_bits(bench, bits)? == n as u64;
    Ok(Row::new(
        NAME,
        &format!("lookup, tile {tile}"),
        n as u64,
        timing,
        n as f64,
        Unit::GigaQueriesPerSecond,
    )
    .with_baseline(peer(bench, "find"))
    .with_note(checked(ok, "every key present")))
}

/// The one-pass range form with a capacity of `len` per query (no count pass): one row,
/// checked (every query found exactly `len` pairs and wrote them in increasing order).
fn capped_row(
    bench: &mut Bench,
    t: &Tree,
    lo: &CudaSlice<u32>,
    hi: &CudaSlice<u32>,
    len: usize,
    tile: u32,
) -> Result<Row> {
    let stream = bench.gpu.stream().clone();
    let q = lo.len();
    let mut rk = stream.alloc_zeros::<u32>(q * len)?;
    let mut rv = stream.alloc_zeros::<u32>(q * len)?;
    let mut found = stream.alloc_zeros::<u32>(q)?;
    let timing = bench.timer.measure(|rep| {
        rep.time(|| {
            t.range_collect_capped_device(lo, hi, len as u32, &mut rk, &mut rv, &mut found)
                .map_err(core_error)
        })
    })?;
    let got = stream.clone_dtoh(&rk)?;
    let ok = got.chunks(len).all(|c| c.windows(2).all(|w| w[0] < w[1]))
        && stream
            .clone_dtoh(&found)?
            .iter()
            .all(|&c| c as usize == len);
    Ok(Row::new(
        NAME,
        &format!("range, {len} per query (one pass, capacity {len}), tile {tile}"),
        q as u64,
        timing,
        q as f64,
        Unit::GigaQueriesPerSecond,
    )
    .with_baseline(peer(bench, if len == 8 { "range 8" } else { "range 32" }))
    .with_note(checked(ok, "n/4 queries, pairs and counts written")))
}

/// Lookup (tile 8) and the one-pass ranges of 8 and 32 (tiles 8 and 16) on a tree of n
/// keys built by insertion: the rows of `queries` that the range targets speak about.
fn range_targets(bench: &mut Bench, n: usize) -> Result<Vec<Row>> {
    let keys = bench.random_words(n, 3)?;
    let sorted = sorted_host(bench, &keys)?;
    let stream = bench.gpu.stream().clone();
    let mut rows = Vec::new();
    let mut out = stream.alloc_zeros::<u32>(n)?;
    let mut bits = stream.alloc_zeros::<u32>(n.div_ceil(32))?;
    for tile in [8, 16] {
        let t = inserted_tree(bench, &keys, tile)?;
        if tile == 8 {
            rows.push(lookup_row(bench, &t, &keys, &mut out, &mut bits, tile)?);
        }
        for len in [8usize, 32] {
            let (lo, hi) = exact_ranges(&sorted, n / 4, len);
            let (lo, hi) = (stream.clone_htod(&lo)?, stream.clone_htod(&hi)?);
            rows.push(capped_row(bench, &t, &lo, &hi, len, tile)?);
        }
    }
    Ok(rows)
}

/// Deleting each fraction of n keys from a bulk-built tree (rebuilt for every repetition).
fn erase(bench: &mut Bench, n: usize, fractions: &[f64]) -> Result<Vec<Row>> {
    let mut t = tree(bench, n, 16)?;
    let keys = bench.random_words(n, 4)?;
    let stream = bench.gpu.stream().clone();
    let mut rows = Vec::new();
    for &f in fractions {
        let m = ((n as f64 * f) as usize).max(1);
        let gone = stream.clone_dtod(&keys.slice(..m))?;
        let mut old = stream.alloc_zeros::<u32>(m)?;
        let mut bits = stream.alloc_zeros::<u32>(m.div_ceil(32))?;
        let timing = bench.timer.measure(|rep| {
            let (mut k, mut v) = (stream.clone_dtod(&keys)?, stream.clone_dtod(&keys)?);
            t.bulk_build_device(&mut k, &mut v).map_err(core_error)?;
            rep.time(|| {
                t.remove_many_device(&gone, &mut old, &mut bits)
                    .map_err(core_error)
            })
        })?;
        let ok = count_bits(bench, &bits)? == m as u64 && t.len().map_err(core_error)? == n - m;
        let name = format!("erase {:.0} %", f * 100.0);
        rows.push(
            Row::new(
                NAME,
                &name,
                m as u64,
                timing,
                m as f64,
                Unit::GigaQueriesPerSecond,
            )
            .with_baseline(if f == 0.5 { peer(bench, "erase") } else { None })
            .with_operation("erase")
            .in_figure("fig3.4", Some(f * 100.0))
            .with_note(checked(ok, "of a bulk-built tree")),
        );
    }
    Ok(rows)
}

/// Incremental insertion of n keys in batches (the dissertation's mean over all tree
/// sizes is the total over the total time), against a sorted array that re-sorts.
fn table_3_3(bench: &mut Bench, n: usize) -> Result<Vec<Row>> {
    let mut t = tree(bench, n, 16)?;
    let mut rows = Vec::new();
    for log_b in (16u32..=22).filter(|&l| 1usize << l <= n) {
        let b = 1usize << log_b;
        let batches: Vec<CudaSlice<u32>> = (0..n / b)
            .map(|i| bench.random_words(b, 100 + i as u32))
            .collect::<Result<_>>()?;
        let timing = bench.timer.measure(|rep| {
            t.clear().map_err(core_error)?;
            rep.time(|| {
                batches
                    .iter()
                    .try_for_each(|k| t.insert_many_device(k, k).map_err(core_error))
            })
        })?;
        let ok = t.check().is_ok() && t.len().map_err(core_error)? == n;
        let mut sa = SortedArray::new(&bench.gpu).map_err(core_error)?;
        let sa_timing = bench.timer.measure(|rep| {
            sa.clear();
            rep.time(|| {
                batches
                    .iter()
                    .try_for_each(|k| sa.insert_device(k, k).map_err(core_error))
            })
        })?;
        rows.push(
            Row::new(
                NAME,
                &format!("Table 3.3: batches of 2^{log_b}"),
                n as u64,
                timing,
                n as f64,
                Unit::GigaKeysPerSecond,
            )
            .with_baseline(Some(Baseline {
                label: "GPU SA (re-sort), this run".into(),
                rate: sa_timing.giga_rate(n as f64),
            }))
            .with_operation("insert in batches")
            .in_figure("table3.3", Some(log_b as f64))
            .with_note(checked(ok, "tree built from empty")),
        );
    }
    Ok(rows)
}

/// A Fig. 3.2 row: the tree's `timing` of `work` queries against the sorted array's
/// `sa` on a tree of `n` keys.
fn fig_3_2_row(
    figure: &str,
    operation: &str,
    n: usize,
    work: usize,
    tree: Timing,
    sa: Timing,
) -> Row {
    Row::new(
        NAME,
        &format!("Fig. 3.2 {operation}, {} keys", size_label(n as u64)),
        work as u64,
        tree,
        work as f64,
        Unit::GigaQueriesPerSecond,
    )
    .with_baseline(Some(Baseline {
        label: "GPU SA, this run".into(),
        rate: sa.giga_rate(work as f64),
    }))
    .with_operation(operation)
    .in_figure(figure, Some((n as f64).log2()))
}

/// Fig. 3.2 at one tree size n: lookup (a), range count of 8 (b) and successor (c) of
/// the tree, each with the sorted array of the same keys.
fn fig_3_2(bench: &mut Bench, n: usize) -> Result<Vec<Row>> {
    let stream = bench.gpu.stream().clone();
    let mut rows = Vec::new();
    let keys = bench.random_words(n, 200 + n.trailing_zeros())?;
    let sorted = sorted_host(bench, &keys)?;
    let mut t = tree(bench, n, 16)?;
    t.insert_many_device(&keys, &keys).map_err(core_error)?;
    let mut sa = SortedArray::new(&bench.gpu).map_err(core_error)?;
    let (mut k2, mut v2) = (copy(bench, &keys)?, copy(bench, &keys)?);
    sa.build_device(&mut k2, &mut v2).map_err(core_error)?;
    let mut out = stream.alloc_zeros::<u32>(n)?;
    let mut out2 = stream.alloc_zeros::<u32>(n)?;
    let mut bits = stream.alloc_zeros::<u32>(n.div_ceil(32))?;
    let tt = bench.timer.measure(|rep| {
        rep.time(|| {
            t.get_many_device(&keys, &mut out, &mut bits)
                .map_err(core_error)
        })
    })?;
    let st = bench.timer.measure(|rep| {
        rep.time(|| {
            sa.get_many_device(&keys, &mut out, &mut bits)
                .map_err(core_error)
        })
    })?;
    rows.push(fig_3_2_row("fig3.2a", "lookup", n, n, tt, st));
    let q = (n / 4).max(1);
    let (lo, hi) = exact_ranges(&sorted, q, 8.min(n - 1).max(1));
    let (lo, hi) = (stream.clone_htod(&lo)?, stream.clone_htod(&hi)?);
    let mut c = stream.alloc_zeros::<u32>(q)?;
    let tt = bench
        .timer
        .measure(|rep| rep.time(|| t.range_count_device(&lo, &hi, &mut c).map_err(core_error)))?;
    let st = bench
        .timer
        .measure(|rep| rep.time(|| sa.range_count_device(&lo, &hi, &mut c).map_err(core_error)))?;
    rows.push(fig_3_2_row("fig3.2b", "range count 8", n, q, tt, st));
    let tt = bench.timer.measure(|rep| {
        rep.time(|| {
            t.successor_many_device(&keys, &mut out, &mut out2, &mut bits)
                .map_err(core_error)
        })
    })?;
    let st = bench.timer.measure(|rep| {
        rep.time(|| {
            sa.successor_many_device(&keys, &mut out, &mut out2, &mut bits)
                .map_err(core_error)
        })
    })?;
    rows.push(fig_3_2_row("fig3.2c", "successor", n, n, tt, st));
    Ok(rows)
}

/// Fig. 3.3 at one final tree size m: inserting a batch of 2^i into a tree of m - 2^i
/// keys against bulk-building all m, both as tree keys per second (m over the time), so
/// the lines cross where the paper's times do.
fn fig_3_3(bench: &mut Bench, m: usize) -> Result<Vec<Row>> {
    let mut t = tree(bench, m, 16)?;
    let keys = bench.random_words(m, 5)?;
    let stream = bench.gpu.stream().clone();
    let rebuild = bench.timer.measure(|rep| {
        let (mut k, mut v) = (stream.clone_dtod(&keys)?, stream.clone_dtod(&keys)?);
        rep.time(|| t.bulk_build_device(&mut k, &mut v).map_err(core_error))
    })?;
    let mut rows = Vec::new();
    for log_b in [16u32, 18, 20, 22].into_iter().filter(|&l| 1usize << l < m) {
        let b = 1usize << log_b;
        let batch = stream.clone_dtod(&keys.slice(m - b..))?;
        let timing = bench.timer.measure(|rep| {
            let (mut k, mut v) = (
                stream.clone_dtod(&keys.slice(..m - b))?,
                stream.clone_dtod(&keys.slice(..m - b))?,
            );
            t.bulk_build_device(&mut k, &mut v).map_err(core_error)?;
            rep.time(|| t.insert_many_device(&batch, &batch).map_err(core_error))
        })?;
        let ok = t.len().map_err(core_error)? == m;
        rows.push(
            Row::new(
                NAME,
                &format!(
                    "Fig. 3.3 insert 2^{log_b} into {} - 2^{log_b}",
                    size_label(m as u64)
                ),
                m as u64,
                timing,
                m as f64,
                Unit::GigaKeysPerSecond,
            )
            .with_baseline(Some(Baseline {
                label: "bulk rebuild, this run".into(),
                rate: rebuild.giga_rate(m as f64),
            }))
            .with_operation(format!("insert 2^{log_b}"))
            .in_figure("fig3.3", Some((m as f64).log2()))
            .with_note(checked(
                ok,
                "tree keys per second; ratio > 1: incremental wins",
            )),
        );
    }
    Ok(rows)
}

/// Mixed concurrent batches of n operations on a tree of n keys: a fraction α of updates
/// (inserts of new keys and removals of present ones, equally), the rest lookups,
/// successor and count queries (ranges of 2^11, about 8 keys), equally; randomly assigned to threads.
fn concurrent(bench: &mut Bench, n: usize, alphas: &[f64]) -> Result<Vec<Row>> {
    let mut t = tree(bench, n, 16)?;
    let keys = bench.random_words(n, 6)?;
    let fresh = bench.random_words(n, 7)?;
    let stream = bench.gpu.stream().clone();
    let (present, new) = (stream.clone_dtoh(&keys)?, stream.clone_dtoh(&fresh)?);
    let mut rows = Vec::new();
    for &alpha in alphas {
        let mut codes = Vec::with_capacity(n);
        let mut ks = Vec::with_capacity(n);
        let mut args = Vec::with_capacity(n);
        for (i, &fresh_key) in new.iter().enumerate() {
            let h = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 11;
            let u = (h % 1_000_000) as f64 / 1e6;
            let j = (h >> 20) as usize % n;
            if u < alpha {
                if h & 1 == 0 {
                    codes.push(0);
                    ks.push(fresh_key);
                    args.push(fresh_key);
                } else {
                    codes.push(1);
                    ks.push(present[j]);
                    args.push(0);
                }
            } else {
                let kind = ((u - alpha) / (1.0 - alpha).max(1e-9) * 3.0) as u32;
                codes.push([2, 3, 4][kind.min(2) as usize]);
                ks.push(present[j]);
                args.push(present[j].saturating_add(1 << 11));
            }
        }
        let (codes, ks, args) = (
            stream.clone_htod(&codes)?,
            stream.clone_htod(&ks)?,
            stream.clone_htod(&args)?,
        );
        let mut a = stream.alloc_zeros::<u32>(n)?;
        let mut b = stream.alloc_zeros::<u32>(n)?;
        let mut bits = stream.alloc_zeros::<u32>(n.div_ceil(32))?;
        let timing = bench.timer.measure(|rep| {
            let (mut k, mut v) = (stream.clone_dtod(&keys)?, stream.clone_dtod(&keys)?);
            t.bulk_build_device(&mut k, &mut v).map_err(core_error)?;
            rep.time(|| {
                t.apply_device(&codes, &ks, &args, &mut a, &mut b, &mut bits)
                    .map_err(core_error)
            })
        })?;
        let ok = t.check().is_ok() && t.validate().is_ok();
        rows.push(
            Row::new(
                NAME,
                &format!("Fig. 3.5 concurrent, α = {alpha}"),
                n as u64,
                timing,
                n as f64,
                Unit::GigaQueriesPerSecond,
            )
            .with_operation(format!("α = {alpha}"))
            .in_figure("fig3.5", Some((n as f64).log2()))
            .with_note(checked(ok, "tree validated after")),
        );
    }
    Ok(rows)
}
