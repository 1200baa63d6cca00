//! The phased rows: Fig. 4.2 (build and find against the tree size), the targets at 2^24
//! (snapshot ranges, erase) and the snapshot cost. One operation kind per kernel.

use gpuds_core::cudarc::driver::CudaSlice;
use gpuds_core::Result;
use gpuds_mvbtree::{RangeOffsets, Snapshot, Updates};

use super::*;
use crate::bench::Bench;
use crate::report::{size_label, Row, Unit};

/// Fig. 4.2 at one size: build by insertion (fresh keys every repetition) and find every
/// key, for GpuBTreeMap, ViB and VoB; with `targets`, also the target and snapshot-cost
/// rows.
pub(super) fn build_find(bench: &mut Bench, n: usize, targets: bool) -> Result<Vec<Row>> {
    let stream = bench.gpu.stream().clone();
    let mut keys = bench.random_words(n, 1)?;
    let values = bench.random_words(n, 2)?;
    let mut out = stream.alloc_zeros::<u32>(n)?;
    let mut found = stream.alloc_zeros::<u32>(n)?;
    let x = Some((n as f64).log2());
    let probes = &bench.probes;

    let mut t = btree(bench, n)?;
    let bt_build = bench.timer.measure(|rep| {
        t.clear().map_err(core_error)?;
        probes.fill_random(&mut keys, rep.seed())?;
        rep.time(|| t.insert_many_device(&keys, &values).map_err(core_error))
    })?;
    let bt_ok = t.check().is_ok() && t.len().map_err(core_error)? == n;
    let mut bits = stream.alloc_zeros::<u32>(n.div_ceil(32))?;
    let bt_find = bench.timer.measure(|rep| {
        rep.time(|| {
            t.get_many_device(&keys, &mut out, &mut bits)
                .map_err(core_error)
        })
    })?;
    let bt_find_ok = ones(bench, &bits)? == n as u64;
    drop(t);
    let (bt_build_rate, bt_find_rate) = (bt_build.giga_rate(n as f64), bt_find.giga_rate(n as f64));
    let mut rows = vec![
        row(
            "Fig. 4.2 build",
            BTREE,
            "build",
            n,
            bt_build,
            Unit::GigaKeysPerSecond,
        )
        .in_figure("fig4.2a", x)
        .with_note(checked(bt_ok, "insertion into an empty tree, baseline")),
        row(
            "Fig. 4.2 find",
            BTREE,
            "find",
            n,
            bt_find,
            Unit::GigaQueriesPerSecond,
        )
        .in_figure("fig4.2b", x)
        .with_note(checked(bt_find_ok, "every key, tile 8, baseline")),
    ];

    let mut measured = Vec::new();
    for (structure, mode) in [(VIB, Updates::InPlace), (VOB, Updates::OutOfPlace)] {
        let mut map = mv_map(bench, n)?;
        let build = bench.timer.measure(|rep| {
            mv_clear(&mut map)?;
            probes.fill_random(&mut keys, rep.seed())?;
            rep.time(|| {
                map.insert_many_device(&keys, &values, mode)
                    .map_err(core_error)
            })
        })?;
        map.check().map_err(core_error)?;
        // The host forms collect versions after every batch; not timed here.
        map.collect_versions().map_err(core_error)?;
        let ok = map.validate().is_ok() && map.len().map_err(core_error)? == n;
        // Results of an earlier structure must not pass for this one's.
        stream.memset_zeros(&mut out)?;
        stream.memset_zeros(&mut found)?;
        let find = bench.timer.measure(|rep| {
            rep.time(|| {
                map.get_many_at_device(None, &keys, &mut out, &mut found)
                    .map_err(core_error)
            })
        })?;
        let find_ok = map.check().is_ok()
            && stream.clone_dtoh(&found)?.iter().all(|&f| f == 1)
            && stream.clone_dtoh(&out)? == stream.clone_dtoh(&values)?;
        let (b, f) = (build.giga_rate(n as f64), find.giga_rate(n as f64));
        rows.push(
            row(
                "Fig. 4.2 build",
                structure,
                "build",
                n,
                build,
                Unit::GigaKeysPerSecond,
            )
            .in_figure("fig4.2a", x)
            .with_baseline(this_run(bt_build_rate))
            .with_note(checked(
                ok,
                "insertion into an empty tree, tree validated; version collection after \
                     the batch not timed",
            )),
        );
        rows.push(
            row(
                "Fig. 4.2 find",
                structure,
                "find",
                n,
                find,
                Unit::GigaQueriesPerSecond,
            )
            .in_figure("fig4.2b", x)
            .with_baseline(this_run(bt_find_rate))
            .with_note(checked(
                find_ok,
                "every key, newest state, tile 8, values compared",
            )),
        );
        measured.push((structure, build, b, find, f, ok && find_ok));
    }
    if !targets {
        return Ok(rows);
    }
    let size = format!(", {} keys", size_label(n as u64));
    for &(structure, build, b, find, f, ok) in &measured {
        let (op, what) = if structure == VIB {
            ("insert", "insert in place (ViB)")
        } else {
            ("insert out of place", "insert out of place (VoB)")
        };
        rows.push(
            row(
                &format!("{what}{size}"),
                structure,
                op,
                n,
                build,
                Unit::GigaKeysPerSecond,
            )
            .with_baseline(peer(bench, op))
            .with_note(checked(
                ok,
                &format!("target 1.25 x original; {}", versus(b, bt_build_rate)),
            )),
        );
        if structure == VIB {
            rows.push(
                row(
                    &format!("find (newest){size}"),
                    structure,
                    "find",
                    n,
                    find,
                    Unit::GigaQueriesPerSecond,
                )
                .with_baseline(peer(bench, "find"))
                .with_note(checked(
                    ok,
                    &format!("target 1.5 x original; {}", versus(f, bt_find_rate)),
                )),
            );
            for (what, timing, rate, base) in [
                ("build", build, b, bt_build_rate),
                ("find", find, f, bt_find_rate),
            ] {
                let ratio = rate / base;
                let verdict = if ratio >= 0.9 {
                    "within 10 %: target met"
                } else {
                    "TARGET MISSED: more than 10 % slower"
                };
                rows.push(
                    row(
                        &format!("snapshot cost: ViB {what} vs {BTREE}{size}"),
                        VIB,
                        &format!("snapshot cost, {what}"),
                        n,
                        timing,
                        if what == "build" {
                            Unit::GigaKeysPerSecond
                        } else {
                            Unit::GigaQueriesPerSecond
                        },
                    )
                    .with_baseline(this_run(base))
                    .with_note(format!(
                        "ViB at {:.1} % of {BTREE}'s rate, {verdict}",
                        ratio * 100.0
                    )),
                );
            }
        }
    }
    Ok(rows)
}

/// The keys 2, 4, ..., 2n in a pseudo-random order, so that `lo ..= lo + 2 (len - 1)`
/// holds exactly `len` keys for an even `lo` in the tree.
fn shuffled_even_keys(n: usize) -> Vec<u32> {
    let mut keys: Vec<u32> = (1..=n as u32).map(|i| 2 * i).collect();
    for i in (1..n).rev() {
        let j = (mix(i as u64) % (i as u64 + 1)) as usize;
        keys.swap(i, j);
    }
    keys
}

/// `q` ranges of exactly `len` keys of [`shuffled_even_keys`]`(n)`, at pseudo-random places.
fn even_ranges(n: usize, q: usize, len: usize) -> (Vec<u32>, Vec<u32>) {
    let places = (n - len + 1) as u64;
    (0..q)
        .map(|i| {
            let lo = 2 * (1 + (mix(i as u64 ^ 0x5eed) % places) as u32);
            (lo, lo + 2 * (len as u32 - 1))
        })
        .unzip()
}

/// Snapshot ranges of exactly 8 and 32 pairs (n/4 queries, one pass into slots of `len`
/// per query) on a ViB tree of the even keys: at a snapshot taken after the build, then
/// at the same snapshot after n/4 insertions of odd keys (inside the ranges: the queries
/// must walk the version lists to leave them out); GpuBTreeMap's one-pass capped ranges
/// on the same keys as the baseline. Ranges of 8 with 8-lane query tiles, of 32 with 16
/// (the faster tile for each before the lockstep walk, see `BTreeConfig::query_tile`),
/// and of 32 with 8-lane tiles too (rows marked `tile 8`), for both structures.
pub(super) fn snapshot_ranges(bench: &mut Bench, n: usize) -> Result<Vec<Row>> {
    let keys = shuffled_even_keys(n);
    let mut rows = Vec::new();
    for (len, tile) in [(8, 8), (32, 16), (32, 8)] {
        rows.extend(snapshot_range(bench, &keys, len, tile)?);
    }
    Ok(rows)
}

/// [`snapshot_ranges`] of `len` pairs with query tiles of `tile` lanes.
fn snapshot_range(bench: &mut Bench, keys: &[u32], len: usize, tile: u32) -> Result<Vec<Row>> {
    let n = keys.len();
    let stream = bench.gpu.stream().clone();
    let keys = stream.clone_htod(keys)?;
    let tiled = BTreeConfig {
        query_tile: tile,
        ..config(n)
    };
    let mut map = Mv::with_config(&bench.gpu, tiled.clone()).map_err(core_error)?;
    map.insert_many_device(&keys, &keys, Updates::InPlace)
        .map_err(core_error)?;
    map.check().map_err(core_error)?;
    let mut t = Tree::with_config(&bench.gpu, tiled).map_err(core_error)?;
    t.insert_many_device(&keys, &keys).map_err(core_error)?;
    t.check().map_err(core_error)?;
    let snap = map.snapshot().map_err(core_error)?;
    let q = (n / 4).max(1);
    let (lo_h, hi_h) = even_ranges(n, q, len);
    let (lo, hi) = (stream.clone_htod(&lo_h)?, stream.clone_htod(&hi_h)?);
    let mut rk = stream.alloc_zeros::<u32>(q * len)?;
    let mut rv = stream.alloc_zeros::<u32>(q * len)?;
    let mut counts = stream.alloc_zeros::<u32>(q)?;
    let bt = bench.timer.measure(|rep| {
        rep.time(|| {
            t.range_collect_capped_device(&lo, &hi, len as u32, &mut rk, &mut rv, &mut counts)
                .map_err(core_error)
        })
    })?;
    let bt_ok = exact_ranges(&stream.clone_dtoh(&rk)?, &lo_h, len)
        && stream
            .clone_dtoh(&counts)?
            .iter()
            .all(|&c| c as usize == len);
    let bt_rate = bt.giga_rate(q as f64);
    let operation = format!("range {len}");
    // The 8-lane variant of the 32-pair rows is told apart in the labels.
    let variant = if len == 32 && tile == 8 {
        ", tile 8"
    } else {
        ""
    };
    let mut rows = vec![row(
        &format!("range, {len} per query{variant} (baseline)"),
        BTREE,
        &operation,
        q,
        bt,
        Unit::GigaQueriesPerSecond,
    )
    .with_note(checked(
        bt_ok,
        &format!("one pass, capacity {len} per query, tile {tile}"),
    ))];
    let offsets = RangeOffsets::capped(&bench.gpu, q, len as u32).map_err(core_error)?;
    let later: Vec<u32> = (0..q)
        .map(|i| 2 * (mix(i as u64 ^ 0x0dd) % n as u64) as u32 + 1)
        .collect();
    let later = stream.clone_htod(&later)?;
    for after in [false, true] {
        let mut updated = true;
        if after {
            map.insert_many_device(&later, &later, Updates::InPlace)
                .map_err(core_error)?;
            map.check().map_err(core_error)?;
            updated = map.validate().is_ok();
        }
        // GpuBTreeMap's pairs (the same) must not pass for the versioned tree's.
        stream.memset_zeros(&mut rk)?;
        let timing = bench.timer.measure(|rep| {
            rep.time(|| {
                map.range_collect_at_device(Some(&snap), &lo, &hi, &offsets, &mut rk, &mut rv)
                    .map_err(core_error)
            })
        })?;
        let ok = updated
            && exact_ranges(&stream.clone_dtoh(&rk)?, &lo_h, len)
            && exact_counts(bench, &map, &snap, &lo, &hi, len)?;
        let rate = timing.giga_rate(q as f64);
        let base = row(
            &format!(
                "snapshot range, {len} per query{variant}{}",
                if after {
                    ", after n/4 later inserts"
                } else {
                    ""
                }
            ),
            VIB,
            &operation,
            q,
            timing,
            Unit::GigaQueriesPerSecond,
        );
        rows.push(if after {
            base.with_baseline(this_run(bt_rate)).with_note(checked(
                ok,
                &format!(
                    "n/4 queries at the snapshot, tile {tile}; the later odd keys inside the \
                     ranges are not seen (versions walked); baseline: {BTREE} before the inserts"
                ),
            ))
        } else {
            base.with_baseline(peer(bench, &operation))
                .with_note(checked(
                    ok,
                    &format!(
                    "n/4 queries at a snapshot, one pass, tile {tile}; target 1.5 x original; {}",
                    versus(rate, bt_rate)
                ),
                ))
        });
    }
    drop(snap);
    Ok(rows)
}

/// Every range's `len` collected keys are `lo, lo + 2, ...`.
fn exact_ranges(got: &[u32], lo: &[u32], len: usize) -> bool {
    got.chunks(len).zip(lo).all(|(c, &l)| {
        c.iter()
            .enumerate()
            .all(|(k, &key)| key == l + 2 * k as u32)
    })
}

/// Every range holds exactly `len` keys at the snapshot (the count pass).
fn exact_counts(
    bench: &Bench,
    map: &Mv,
    snap: &Snapshot,
    lo: &CudaSlice<u32>,
    hi: &CudaSlice<u32>,
    len: usize,
) -> Result<bool> {
    let stream = bench.gpu.stream();
    let mut counts = stream.alloc_zeros::<u32>(lo.len())?;
    map.range_count_many_at_device(Some(snap), lo, hi, &mut counts)
        .map_err(core_error)?;
    map.check().map_err(core_error)?;
    Ok(stream
        .clone_dtoh(&counts)?
        .iter()
        .all(|&c| c as usize == len))
}

/// Erasing half of n keys from a tree built by insertion (rebuilt every repetition): ViB
/// (no snapshot live, so in place without copies) and GpuBTreeMap.
pub(super) fn erase_half(bench: &mut Bench, n: usize) -> Result<Vec<Row>> {
    let stream = bench.gpu.stream().clone();
    let keys = bench.random_words(n, 4)?;
    let m = n / 2;
    let gone = stream.clone_dtod(&keys.slice(..m))?;
    let mut old = stream.alloc_zeros::<u32>(m)?;
    let mut bits = stream.alloc_zeros::<u32>(m.div_ceil(32))?;
    let mut t = btree(bench, n)?;
    let bt = bench.timer.measure(|rep| {
        t.clear().map_err(core_error)?;
        t.insert_many_device(&keys, &keys).map_err(core_error)?;
        rep.time(|| {
            t.remove_many_device(&gone, &mut old, &mut bits)
                .map_err(core_error)
        })
    })?;
    let bt_ok = ones(bench, &bits)? == m as u64 && t.len().map_err(core_error)? == n - m;
    drop(t);
    stream.memset_zeros(&mut bits)?;
    let mut map = mv_map(bench, n)?;
    let timing = bench.timer.measure(|rep| {
        mv_clear(&mut map)?;
        map.insert_many_device(&keys, &keys, Updates::InPlace)
            .map_err(core_error)?;
        rep.time(|| {
            map.remove_many_device(&gone, &mut old, &mut bits, Updates::InPlace)
                .map_err(core_error)
        })
    })?;
    let ok = map.check().is_ok()
        && ones(bench, &bits)? == m as u64
        && map.len().map_err(core_error)? == n - m
        && map.validate().is_ok();
    let (rate, bt_rate) = (timing.giga_rate(m as f64), bt.giga_rate(m as f64));
    let size = size_label(n as u64);
    Ok(vec![
        row(
            &format!("erase half, {size} keys"),
            VIB,
            "erase",
            m,
            timing,
            Unit::GigaQueriesPerSecond,
        )
        .with_baseline(peer(bench, "erase"))
        .with_note(checked(
            ok,
            &format!(
                "in place, no snapshot live; target 1.25 x original; {}",
                versus(rate, bt_rate)
            ),
        )),
        row(
            &format!("erase half, {size} keys (baseline)"),
            BTREE,
            "erase",
            m,
            bt,
            Unit::GigaQueriesPerSecond,
        )
        .with_note(checked(bt_ok, "of a tree built by insertion")),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn even_ranges_hold_exactly_len_keys() {
        let n = 1000;
        let keys: std::collections::BTreeSet<u32> = shuffled_even_keys(n).into_iter().collect();
        assert_eq!(keys.len(), n);
        assert_eq!((keys.first(), keys.last()), (Some(&2), Some(&2000)));
        for len in [1, 8, 32] {
            let (lo, hi) = even_ranges(n, 500, len);
            for (l, h) in lo.into_iter().zip(hi) {
                assert_eq!(keys.range(l..=h).count(), len, "{l}..={h}");
                let got: Vec<u32> = keys.range(l..=h).copied().collect();
                assert!(exact_ranges(&got, &[l], len));
            }
        }
        assert!(!exact_ranges(&[2, 6], &[2], 2));
    }
}
