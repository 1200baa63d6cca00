//! The mixed batches of §4.5.2: Table 4.1 / Fig. 4.3 and Fig. 4.4 (inserts and snapshot
//! ranges), Table 4.2 / Fig. 4.5 (removals and lookups) and Fig. 4.6 (memory over several
//! batches). Each batch runs in one kernel per structure, operations assigned at random.

use gpuds_core::cudarc::driver::CudaSlice;
use gpuds_core::Result;
use gpuds_mvbtree::{MvReplyBuffers, Updates};

use super::*;
use crate::bench::Bench;
use crate::kernels::random_word;
use crate::report::{bytes_label, size_label, Row, Unit};
use crate::timing::{time_once, Timing};

/// One mixed batch of inserts of new keys and snapshot range queries.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Mixed {
    /// Keys of the initial tree.
    initial: usize,
    /// Operations in the batch.
    ops: usize,
    /// Fraction of insertions.
    alpha: f64,
    /// Average pairs per range.
    len: usize,
    /// Figure and x of the rows.
    figure: &'static str,
    x: f64,
}

impl Mixed {
    /// Table 4.1 / Fig. 4.3 (`fig4.3a`: the 1 M tree, `fig4.3b`: the 40 M tree), x = α in %.
    pub(super) fn table_4_1(
        initial: usize,
        ops: usize,
        alpha: f64,
        len: usize,
        figure: &'static str,
    ) -> Self {
        Self {
            initial,
            ops,
            alpha,
            len,
            figure,
            x: alpha * 100.0,
        }
    }

    /// Fig. 4.4: α = 50 %, x = the range length.
    pub(super) fn fig_4_4(initial: usize, ops: usize, len: usize) -> Self {
        Self {
            initial,
            ops,
            alpha: 0.5,
            len,
            figure: "fig4.4",
            x: len as f64,
        }
    }

    /// Pairs a range may write: room for the longest ranges of the batch (the tree
    /// grows while it runs); a longer one is counted in full and written in part.
    pub(super) fn cap(&self) -> u32 {
        2 * self.len as u32 + 16
    }
}

/// The host-made operations of a mixed batch, in both encodings.
struct Batch {
    /// VersionedBTreeMap: codes (0 insert, 5 range), keys, range upper bounds, values.
    mv: [Vec<u32>; 4],
    /// GpuBTreeMap: codes (0 insert, 4 count), keys, values or upper bounds.
    bt: [Vec<u32>; 3],
    /// Insertions in the batch.
    inserts: usize,
}

/// `ops` operations: a fraction `alpha` of inserts of new keys (`fresh` from index
/// `first_fresh` on), the rest ranges of width for `len` pairs on average in a tree of
/// `initial` keys that grows by the batch's inserts.
fn insert_range_batch(
    initial: usize,
    ops: usize,
    alpha: f64,
    len: usize,
    first_fresh: u64,
) -> Batch {
    let average = initial as f64 + alpha * ops as f64 / 2.0;
    let width = (len as f64 * 4_294_967_296.0 / average).min(u32::MAX as f64) as u32;
    let mut b = Batch {
        mv: Default::default(),
        bt: Default::default(),
        inserts: 0,
    };
    for i in 0..ops as u64 {
        let h = mix(i ^ (first_fresh << 32));
        if unit(h) < alpha {
            let k = random_word(first_fresh + i, SEED_FRESH);
            b.inserts += 1;
            push(&mut b, [0, k, 0, k], [0, k, k]);
        } else {
            let lo = mix(h) as u32;
            let hi = lo.saturating_add(width);
            push(&mut b, [5, lo, hi, 0], [4, lo, hi]);
        }
    }
    b
}

fn push(b: &mut Batch, mv: [u32; 4], bt: [u32; 3]) {
    for (v, x) in b.mv.iter_mut().zip(mv) {
        v.push(x);
    }
    for (v, x) in b.bt.iter_mut().zip(bt) {
        v.push(x);
    }
}

/// The mixed batch's buffers on the device: (VersionedBTreeMap's four, GpuBTreeMap's three).
type DeviceBatch = ([CudaSlice<u32>; 4], [CudaSlice<u32>; 3]);

fn upload(bench: &Bench, b: &Batch) -> Result<DeviceBatch> {
    let s = bench.gpu.stream();
    Ok((
        [
            s.clone_htod(&b.mv[0])?,
            s.clone_htod(&b.mv[1])?,
            s.clone_htod(&b.mv[2])?,
            s.clone_htod(&b.mv[3])?,
        ],
        [
            s.clone_htod(&b.bt[0])?,
            s.clone_htod(&b.bt[1])?,
            s.clone_htod(&b.bt[2])?,
        ],
    ))
}

/// Runs one mixed batch on both structures, each on a tree of the initial keys rebuilt
/// by insertion before every repetition; the tree sizes after the batch are checked.
/// Returns (VoB timing, GpuBTreeMap timing, checks passed).
fn run_mixed(
    bench: &mut Bench,
    initial: usize,
    b: &Batch,
    cap: u32,
    removed: usize,
) -> Result<(Timing, Timing, bool)> {
    let stream = bench.gpu.stream().clone();
    let init = bench.random_words(initial, SEED_INITIAL)?;
    let ops = b.mv[0].len();
    let expected = initial + b.inserts - removed;
    let ([codes, keys, arg_keys, arg_values], [bt_codes, bt_keys, bt_args]) = upload(bench, b)?;
    let mut t = btree(bench, initial + b.inserts)?;
    let mut a = stream.alloc_zeros::<u32>(ops)?;
    let mut v = stream.alloc_zeros::<u32>(ops)?;
    let mut bits = stream.alloc_zeros::<u32>(ops.div_ceil(32))?;
    let bt = bench.timer.measure(|rep| {
        t.clear().map_err(core_error)?;
        t.insert_many_device(&init, &init).map_err(core_error)?;
        rep.time(|| {
            t.apply_device(&bt_codes, &bt_keys, &bt_args, &mut a, &mut v, &mut bits)
                .map_err(core_error)
        })
    })?;
    let bt_ok = t.check().is_ok() && t.len().map_err(core_error)? == expected;
    drop(t);
    let mut map = mv_map(bench, initial + b.inserts)?;
    let mut out = MvReplyBuffers::new(&bench.gpu, ops, cap).map_err(core_error)?;
    let vob = bench.timer.measure(|rep| {
        mv_clear(&mut map)?;
        map.insert_many_device(&init, &init, Updates::InPlace)
            .map_err(core_error)?;
        rep.time(|| {
            map.apply_device(&codes, &keys, &arg_keys, &arg_values, &mut out)
                .map_err(core_error)
        })
    })?;
    let mut ok = map.check().is_ok() && ones(bench, out.failed())? == 0;
    map.collect_versions().map_err(core_error)?;
    ok &= map.len().map_err(core_error)? == expected;
    // A host walk of every node: only for trees of a few million keys.
    if expected <= 1 << 23 {
        ok &= map.validate().is_ok();
    }
    if cap > 0 {
        ok &= sorted_within(bench, &out, &b.mv, cap)?;
    }
    Ok((vob, bt, ok && bt_ok))
}

/// The first ranges of the batch wrote `min(count, cap)` increasing keys in their range.
fn sorted_within(
    bench: &Bench,
    out: &MvReplyBuffers<u32, u32>,
    ops: &[Vec<u32>; 4],
    cap: u32,
) -> Result<bool> {
    let stream = bench.gpu.stream();
    let q = ops[0].len().min(4096);
    let cap = cap as usize;
    let counts = stream.clone_dtoh(&out.counts().slice(..q))?;
    let keys = stream.clone_dtoh(&out.range_keys().slice(..q * cap))?;
    Ok((0..q).filter(|&i| ops[0][i] == 5).all(|i| {
        let got = &keys[i * cap..i * cap + (counts[i] as usize).min(cap)];
        got.windows(2).all(|w| w[0] < w[1]) && got.iter().all(|&k| k >= ops[1][i] && k <= ops[2][i])
    }))
}

/// The two rows of a mixed batch: VoB (against GpuBTreeMap) and GpuBTreeMap.
#[allow(clippy::too_many_arguments)]
fn mixed_rows(
    name: &str,
    operation: &str,
    figure: &str,
    x: f64,
    ops: usize,
    vob: Timing,
    bt: Timing,
    note: &str,
) -> Vec<Row> {
    let bt_rate = bt.giga_rate(ops as f64);
    vec![
        row(name, VOB, operation, ops, vob, Unit::GigaQueriesPerSecond)
            .in_figure(figure, Some(x))
            .with_baseline(this_run(bt_rate))
            .with_note(note),
        row(
            &format!("{name} (baseline)"),
            BTREE,
            operation,
            ops,
            bt,
            Unit::GigaQueriesPerSecond,
        )
        .in_figure(figure, Some(x)),
    ]
}

/// Table 4.1 / Fig. 4.3 / Fig. 4.4: one mixed batch of inserts and snapshot ranges.
pub(super) fn insert_range(bench: &mut Bench, c: Mixed) -> Result<Vec<Row>> {
    let batch = insert_range_batch(c.initial, c.ops, c.alpha, c.len, 0);
    let (vob, bt, ok) = run_mixed(bench, c.initial, &batch, c.cap(), 0)?;
    let ok = ok && disjoint(SEED_INITIAL, c.initial as u64, SEED_FRESH, c.ops as u64);
    let name = format!(
        "{} insert + range {}, α = {:.0} %, {} initial keys",
        if c.figure == "fig4.4" {
            "Fig. 4.4"
        } else {
            "Table 4.1"
        },
        c.len,
        c.alpha * 100.0,
        size_label(c.initial as u64)
    );
    let note = checked(
        ok,
        &format!(
            "{} ops in one kernel: {} inserts of new keys, the rest ranges of {} pairs on \
             average at tile-wide snapshots (collect, at most {} written); {BTREE}: the same \
             inserts and count queries of the same ranges (its mixed batch has no collect; \
             not linearizable); tree sizes checked",
            size_label(c.ops as u64),
            batch.inserts,
            c.len,
            c.cap()
        ),
    );
    Ok(mixed_rows(
        &name,
        &format!("insert + range {}", c.len),
        c.figure,
        c.x,
        c.ops,
        vob,
        bt,
        &note,
    ))
}

/// Table 4.2 / Fig. 4.5: one mixed batch of removals (α) and lookups of present keys on a
/// tree of `initial` keys.
pub(super) fn erase_find(
    bench: &mut Bench,
    initial: usize,
    ops: usize,
    alpha: f64,
) -> Result<Vec<Row>> {
    let mut b = Batch {
        mv: Default::default(),
        bt: Default::default(),
        inserts: 0,
    };
    let mut gone = vec![false; initial];
    for i in 0..ops as u64 {
        let h = mix(i ^ 0xe7a5e);
        let j = mix(h) % initial as u64;
        let k = random_word(j, SEED_INITIAL);
        if unit(h) < alpha {
            gone[j as usize] = true;
            push(&mut b, [1, k, 0, 0], [1, k, 0]);
        } else {
            push(&mut b, [2, k, 0, 0], [2, k, 0]);
        }
    }
    let removed = gone.iter().filter(|&&g| g).count();
    let (vob, bt, ok) = run_mixed(bench, initial, &b, 0, removed)?;
    let name = format!(
        "Table 4.2 erase + find, α = {:.0} %, {} initial keys",
        alpha * 100.0,
        size_label(initial as u64)
    );
    let note = checked(
        ok,
        &format!(
            "{} ops in one kernel: removals and lookups of present keys ({removed} distinct \
             removed); lookups at tile-wide snapshots; tree sizes checked",
            size_label(ops as u64)
        ),
    );
    Ok(mixed_rows(
        &name,
        "erase + find",
        "fig4.5",
        alpha * 100.0,
        ops,
        vob,
        bt,
        &note,
    ))
}

/// Fig. 4.6: `batches` mixed batches of `ops` operations (half inserts of new keys, half
/// snapshot ranges of 8) on a VoB tree of `initial` keys, the version collector after
/// each; memory in use and reclaimed per batch, and at the end against a tree built
/// afresh (by insertion) with the same keys.
pub(super) fn memory(
    bench: &mut Bench,
    initial: usize,
    ops: usize,
    batches: usize,
) -> Result<Vec<Row>> {
    let stream = bench.gpu.stream().clone();
    let init = bench.random_words(initial, SEED_INITIAL)?;
    let total = initial + batches * ops;
    // A pool that never grows inside a timed batch: room for the bound the batches
    // reserve (two nodes per operation) on top of the tree.
    let roomy = BTreeConfig {
        initial_nodes: 2 * total as u64,
        ..config(total)
    };
    let mut map = Mv::with_config(&bench.gpu, roomy).map_err(core_error)?;
    map.insert_many_device(&init, &init, Updates::InPlace)
        .map_err(core_error)?;
    map.check().map_err(core_error)?;
    let mut out = MvReplyBuffers::new(&bench.gpu, ops, 8).map_err(core_error)?;
    let mut rows = Vec::new();
    let mut inserted = Vec::new();
    let mut times = Vec::new();
    let mut ok = disjoint(
        SEED_INITIAL,
        initial as u64,
        SEED_FRESH,
        (batches * ops) as u64,
    );
    let mut prev = map.stats().map_err(core_error)?;
    let unit_bytes = prev.bytes_per_node as u64;
    let bytes = |units: u64| bytes_label((units * unit_bytes) as usize);
    for batch in 0..batches {
        let size = initial + inserted.len();
        let b = insert_range_batch(size, ops, 0.5, 8, (batch * ops) as u64);
        inserted.extend(
            b.mv[1]
                .iter()
                .zip(&b.mv[0])
                .filter(|(_, &c)| c == 0)
                .map(|(&k, _)| k),
        );
        let ([codes, keys, arg_keys, arg_values], _) = upload(bench, &b)?;
        let ms = time_once(&bench.gpu, || {
            map.apply_device(&codes, &keys, &arg_keys, &arg_values, &mut out)
                .map_err(core_error)
        })?;
        ok &= map.check().is_ok() && ones(bench, out.failed())? == 0;
        // No snapshot outlives the batch: after the collector (version lists) and the
        // drain of the kernel's reclaimer no older version is left, and every unit the
        // batch allocated is either in use or was reclaimed by one of the two.
        let freed = map.collect_versions().map_err(core_error)?;
        let now = map.stats().map_err(core_error)?;
        ok &= now.len == (initial + inserted.len()) as u64 && now.versions == 0;
        let by_kernel = now.reclaimed_in_kernels - prev.reclaimed_in_kernels;
        let reclaimed = by_kernel + freed;
        let allocated = (now.units_in_use + reclaimed).saturating_sub(prev.units_in_use);
        times.push(ms);
        let timing = Timing::from_samples(&[ms])
            .ok_or_else(|| gpuds_core::Error::InvalidArgument("no time".into()))?;
        rows.push(
            row(
                &format!("Fig. 4.6 batch {}", batch + 1),
                VOB,
                "insert + range 8",
                ops,
                timing,
                Unit::GigaQueriesPerSecond,
            )
            .in_figure("fig4.6", Some((batch + 1) as f64))
            .with_note(checked(
                ok,
                &format!(
                    "one run; allocated {}, reclaimed {} ({} by the kernel's reclaimer and its \
                     drain, {} by the version collector), in use {} after the batch",
                    bytes(allocated),
                    bytes(reclaimed),
                    bytes(by_kernel),
                    bytes(freed),
                    bytes(now.units_in_use)
                ),
            )),
        );
        prev = now;
    }
    let used = map.stats().map_err(core_error)?;
    drop(map);
    drop(out);
    let mut all = stream.clone_dtoh(&init)?;
    all.extend(&inserted);
    let all = stream.clone_htod(&all)?;
    let mut fresh = mv_map(bench, total)?;
    fresh
        .insert_many_device(&all, &all, Updates::InPlace)
        .map_err(core_error)?;
    fresh.check().map_err(core_error)?;
    let fresh = fresh.stats().map_err(core_error)?;
    ok &= fresh.len == used.len;
    let overhead = (used.bytes_in_use() as f64 / fresh.bytes_in_use() as f64 - 1.0) * 100.0;
    let timing = Timing::from_samples(&[times.iter().sum()])
        .ok_or_else(|| gpuds_core::Error::InvalidArgument("no batches".into()))?;
    let verdict = if overhead <= 5.0 {
        "within 5 %: target met"
    } else {
        "TARGET MISSED: over 5 %"
    };
    rows.push(
        row(&format!("Fig. 4.6 memory overhead after {batches} batches"), VOB, "memory overhead", batches * ops, timing, Unit::GigaQueriesPerSecond)
        .with_note(checked(
            ok,
            &format!(
                "{} in use against {} for a tree built afresh with the same {} keys: {overhead:.2} % \
                 ({verdict}; paper 3.26 %); {} reclaimed in all; rate: all batches",
                bytes_label(used.bytes_in_use() as usize),
                bytes_label(fresh.bytes_in_use() as usize),
                size_label(used.len),
                bytes(used.reclaimed_units + used.reclaimed_in_kernels)
            ),
        )),
    );
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_range_batches_insert_new_keys_and_size_ranges() {
        let initial: std::collections::HashSet<u32> =
            (0..1 << 14).map(|i| random_word(i, SEED_INITIAL)).collect();
        let b = insert_range_batch(1 << 14, 1 << 14, 0.3, 8, 0);
        let [codes, keys, his, values] = &b.mv;
        assert_eq!(codes.iter().filter(|&&c| c == 0).count(), b.inserts);
        assert!((b.inserts as f64 / (1 << 14) as f64 - 0.3).abs() < 0.02);
        let mut widths = 0.0;
        for i in 0..codes.len() {
            match codes[i] {
                0 => {
                    assert!(!initial.contains(&keys[i]));
                    assert_eq!((values[i], b.bt[0][i], b.bt[2][i]), (keys[i], 0, keys[i]));
                }
                5 => {
                    assert!(keys[i] <= his[i]);
                    assert_eq!((b.bt[0][i], b.bt[1][i], b.bt[2][i]), (4, keys[i], his[i]));
                    widths += (his[i] - keys[i]) as f64;
                }
                c => panic!("code {c}"),
            }
        }
        // Ranges of 8 pairs on average over the batch: width 8 / (tree size) of the words.
        let ranges = (codes.len() - b.inserts) as f64;
        let expected = 8.0 * 4_294_967_296.0 / ((1 << 14) as f64 * 1.15);
        assert!((widths / ranges / expected - 1.0).abs() < 0.05);
        // Later batches insert other new keys.
        let next = insert_range_batch(1 << 14, 1 << 14, 0.3, 8, 1 << 14);
        let first: std::collections::HashSet<u32> = keys
            .iter()
            .zip(codes)
            .filter(|(_, &c)| c == 0)
            .map(|(&k, _)| k)
            .collect();
        assert!(next.mv[1]
            .iter()
            .zip(&next.mv[0])
            .all(|(k, &c)| c != 0 || !first.contains(k)));
    }
}
