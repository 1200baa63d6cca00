//! `mvbtree`: the multiversion B-Tree experiments of Awad (2022), chapter 4 (§4.5), on the
//! local GPU, with `GpuBTreeMap` measured in the same run as the baseline of every row,
//! and the published figures of the original versioned tree on the same GPU for the
//! target rows (2^24 u32 keys):
//!
//! - Fig. 4.2: building a tree by insertion of n fresh keys (a) and finding every key
//!   (b), n = 2^18 ... 2^24: GpuBTreeMap, ViB-Tree (in place) and VoB-Tree (out of place);
//!   at the largest size the target rows (insert in place, out of place, find) and the
//!   snapshot cost (ViB against GpuBTreeMap, target: within 10 %);
//! - targets: snapshot ranges of exactly 8 and 32 pairs (n/4 queries, at a snapshot taken
//!   after the build, and again after n/4 later insertions into the ranges, which the
//!   snapshot must not see), erasing half the keys;
//! - Table 4.1 / Fig. 4.3: one mixed batch of inserts of new keys (fraction α = 5, 50,
//!   90 %) and snapshot range queries of average length 8 and 32, on trees of 1 M and
//!   40 M keys; Fig. 4.4: the range length swept at α = 50 %;
//! - Table 4.2 / Fig. 4.5: one mixed batch of removals (α) and lookups on a tree of 45 M keys;
//! - Fig. 4.6: memory in use and reclaimed after each of several mixed batches, and the
//!   overhead against a tree built afresh with the same contents (target: within 5 %).
//!
//! Rows name their figure (`fig4.2a`, `fig4.2b`, `fig4.3a` / `fig4.3b` for the 1 M / 40 M
//! trees, `fig4.4`, `fig4.5`, `fig4.6`) and x (log2 n, α in %, the range length or the
//! batch number), so that `--plot DIR` draws each with GpuBTreeMap beside the versioned
//! trees. The mixed batches run in one kernel per structure; GpuBTreeMap's has no range
//! collect, so its queries are counts of the same ranges, and its results are not
//! linearizable. `--keys N` replaces the largest tree of Fig. 4.2 (2^24; 2^22 in `quick`)
//! and caps the other trees. Keys are distinct random words; inserted keys are never in
//! the initial tree.

mod mixed;
mod phased;

use gpuds_btree::{BTreeConfig, GpuBTreeMap};
use gpuds_core::cudarc::driver::CudaSlice;
use gpuds_core::Result;
use gpuds_mvbtree::VersionedBTreeMap;

use super::{core_error, Accepts, Case, CrateError, Experiment, Params, Scale};
use crate::bench::Bench;
use crate::peers;
use crate::report::{size_label, Baseline, Row, Unit};
use crate::timing::Timing;
use mixed::{erase_find, insert_range, memory, Mixed};
use phased::{build_find, erase_half, snapshot_ranges};

/// The `mvbtree` experiment.
pub const EXPERIMENT: Experiment = Experiment {
    name: "mvbtree",
    about: "VersionedBTreeMap (Awad 2022, ch. 4): Fig. 4.2-4.6, Tables 4.1-4.2, targets; GpuBTreeMap baseline",
    accepts: Accepts::KEYS,
    plan,
};

impl CrateError for gpuds_mvbtree::Error {
    fn into_core(self) -> std::result::Result<gpuds_core::Error, Self> {
        match self {
            gpuds_mvbtree::Error::Core(e) => Ok(e),
            other => Err(other),
        }
    }
}

const NAME: &str = "mvbtree";
const BTREE: &str = "GpuBTreeMap";
const VIB: &str = "ViB-Tree";
const VOB: &str = "VoB-Tree";
type Mv = VersionedBTreeMap<u32, u32>;
type Tree = GpuBTreeMap<u32, u32>;

/// Seed of the initial trees' keys, and of the keys the mixed batches insert: their
/// words never meet (see `seeds_give_disjoint_keys`).
const SEED_INITIAL: u32 = 11;
const SEED_FRESH: u32 = 12;

fn plan(params: &Params) -> Vec<Case> {
    let quick = params.scale == Scale::Quick;
    // Trees of at least 2^10 keys: the ranges of 32 need room, the batches keys to remove.
    let n = params
        .keys_or(if quick { 1 << 22 } else { 1 << 24 })
        .max(1 << 10);
    let capped = |d: usize| params.keys.map_or(d, |k| d.min(k as usize)).max(1 << 10);
    let sizes = if quick {
        vec![n]
    } else {
        params.sweep(1 << 18, &[1 << 18, 1 << 20, 1 << 22, 1 << 24])
    };
    let mut cases = Vec::new();
    for &m in &sizes {
        cases.push(Case::new(
            format!("Fig. 4.2 build and find, {}", size_label(m as u64)),
            move |b| build_find(b, m, m == n),
        ));
    }
    cases.push(Case::new("snapshot ranges of 8 and 32", move |b| {
        snapshot_ranges(b, n)
    }));
    cases.push(Case::new("erase half", move |b| erase_half(b, n)));
    if quick {
        let n0 = params.keys_or(1 << 20).max(1 << 10);
        cases.extend([
            Case::new("Table 4.1 insert + range, α = 50 %", move |b| {
                insert_range(b, Mixed::table_4_1(n0, 1 << 20, 0.5, 8, "fig4.3a"))
            }),
            Case::new("Table 4.2 erase + find, α = 50 %", move |b| {
                erase_find(b, n, 1 << 20, 0.5)
            }),
            Case::new("Fig. 4.6 memory", move |b| memory(b, n0, 1 << 19, 4)),
        ]);
        return cases;
    }
    let ops = 5_000_000;
    let (small, large) = (capped(1_000_000), capped(40_000_000));
    let trees = [(small, "fig4.3a"), (large, "fig4.3b")];
    for (n0, figure) in trees.into_iter().take(if large > small { 2 } else { 1 }) {
        for len in [8, 32] {
            for alpha in [0.05, 0.5, 0.9] {
                cases.push(Case::new(
                    format!(
                        "Table 4.1 {} keys, ranges of {len}, α = {:.0} %",
                        size_label(n0 as u64),
                        alpha * 100.0
                    ),
                    move |b| insert_range(b, Mixed::table_4_1(n0, ops, alpha, len, figure)),
                ));
            }
        }
    }
    let n0 = capped(1_000_000);
    for len in [8, 16, 32, 64, 128] {
        cases.push(Case::new(format!("Fig. 4.4 ranges of {len}"), move |b| {
            insert_range(b, Mixed::fig_4_4(n0, ops, len))
        }));
    }
    let n0 = capped(45_000_000);
    for alpha in [0.05, 0.5, 0.9] {
        cases.push(Case::new(
            format!("Table 4.2 erase + find, α = {:.0} %", alpha * 100.0),
            move |b| erase_find(b, n0, ops, alpha),
        ));
    }
    let n0 = capped(1 << 22);
    cases.push(Case::new("Fig. 4.6 memory", move |b| {
        memory(b, n0, 1 << 21, 8)
    }));
    cases
}

/// The pool sizes for a tree of about `n` keys (both structures): room to grow to four
/// nodes per key, which out-of-place builds (a copy per insertion) stay well within.
fn config(n: usize) -> BTreeConfig {
    BTreeConfig {
        initial_nodes: (n as u64 / 4).max(1 << 16),
        max_nodes: (n as u64 * 4 + (1 << 20)).min(gpuds_alloc::MAX_UNITS),
        ..Default::default()
    }
}

fn mv_map(bench: &Bench, n: usize) -> Result<Mv> {
    Mv::with_config(&bench.gpu, config(n)).map_err(core_error)
}

fn btree(bench: &Bench, n: usize) -> Result<Tree> {
    Tree::with_config(&bench.gpu, config(n)).map_err(core_error)
}

/// Empties the versioned map: a bulk build of nothing frees every node (no snapshot is
/// live in this experiment when it runs). The version collector runs first, so that
/// nothing a mixed batch handed to the reclaimer is still in limbo when the pool is reset
/// (it would be freed again later, under the new tree).
fn mv_clear(map: &mut Mv) -> Result<()> {
    map.collect_versions().map_err(core_error)?;
    map.bulk_build(&[], &[]).map_err(core_error)
}

/// A row of `structure` doing `work` units of `operation` in `timing`.
fn row(
    name: &str,
    structure: &str,
    operation: &str,
    work: usize,
    timing: Timing,
    unit: Unit,
) -> Row {
    Row::new(NAME, name, work as u64, timing, work as f64, unit)
        .with_structure(structure)
        .with_operation(operation)
}

fn checked(ok: bool, note: &str) -> String {
    if ok {
        format!("{note}; checked")
    } else {
        format!("RESULT WRONG: {note}")
    }
}

fn this_run(rate: f64) -> Option<Baseline> {
    Some(Baseline {
        label: format!("{BTREE}, this run"),
        rate,
    })
}

/// `rate` against GpuBTreeMap's, for notes: `0.93 x GpuBTreeMap`.
fn versus(rate: f64, btree_rate: f64) -> String {
    format!("{:.2} x {BTREE} this run", rate / btree_rate)
}

fn peer(bench: &Bench, op: &str) -> Option<Baseline> {
    peers::mvbtree(&bench.gpu.info().name, op)
}

fn ones(bench: &Bench, words: &CudaSlice<u32>) -> Result<u64> {
    Ok(bench
        .gpu
        .stream()
        .clone_dtoh(words)?
        .iter()
        .map(|w| w.count_ones() as u64)
        .sum())
}

/// splitmix64: the per-operation random numbers of the host-made batches.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A uniform number in [0, 1) from a random word.
fn unit(h: u64) -> f64 {
    (h >> 11) as f64 / (1u64 << 53) as f64
}

/// Whether `fill_random` with seed `a` for `na` words and seed `b` for `nb` words can
/// give a common word: it hashes `i + seed * 0x9e3779b9` (mod 2^32) bijectively, so the
/// two are disjoint when those input intervals are.
fn disjoint(a: u32, na: u64, b: u32, nb: u64) -> bool {
    let start = |s: u32| s.wrapping_mul(0x9e37_79b9);
    let ab = start(b).wrapping_sub(start(a)) as u64;
    let ba = start(a).wrapping_sub(start(b)) as u64;
    ab >= na && ba >= nb
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::random_word;

    #[test]
    fn seeds_give_disjoint_keys() {
        assert!(disjoint(SEED_INITIAL, 45_000_000, SEED_FRESH, 45_000_000));
        // The same sets on the host, small: disjoint exactly when the check says so.
        let words = |seed, n: u64| -> std::collections::HashSet<u32> {
            (0..n).map(|i| random_word(i, seed)).collect()
        };
        let (a, b) = (words(SEED_INITIAL, 1 << 12), words(SEED_FRESH, 1 << 12));
        assert!(a.is_disjoint(&b));
        assert!(!disjoint(3, 10, 3, 10));
        assert!(!words(3, 10).is_disjoint(&words(3, 10)));
    }

    #[test]
    fn plans_stay_within_the_limits() {
        let quick = plan(&Params::new(Scale::Quick));
        assert!(quick.len() <= 8, "{}", quick.len());
        let full = plan(&Params::new(Scale::Full));
        assert!(full.iter().any(|c| c.label.contains("Table 4.2")));
        assert!(
            full.iter()
                .filter(|c| c.label.starts_with("Fig. 4.2"))
                .count()
                == 4
        );
        let small = Params {
            keys: Some(1 << 20),
            ..Params::new(Scale::Full)
        };
        let labels: Vec<String> = plan(&small).into_iter().map(|c| c.label).collect();
        assert!(
            labels.iter().all(|l| !l.contains("40,000,000")),
            "{labels:?}"
        );
        assert_eq!(
            labels.iter().filter(|l| l.starts_with("Fig. 4.2")).count(),
            2
        );
        let tables = |keys: u64| {
            let params = Params {
                keys: Some(keys),
                ..Params::new(Scale::Full)
            };
            plan(&params)
                .into_iter()
                .filter(|c| c.label.starts_with("Table 4.1"))
                .count()
        };
        // 1 M and 2^20 trees; then the 1 M and 40 M trees both capped to 2^19: one set.
        assert_eq!((tables(1 << 20), tables(1 << 19)), (12, 6));
        let tiny = Params {
            keys: Some(3),
            ..Params::new(Scale::Full)
        };
        assert!(plan(&tiny).iter().all(|c| !c.label.contains(" 3 keys")));
        assert!(
            Mixed::fig_4_4(1 << 20, 5_000_000, 128).cap() as u64 * 5_000_000 <= u32::MAX as u64
        );
    }
}
