//! `graph`: the dynamic graph experiments of Awad (2022), chapter 5 (§5.6), on the local
//! GPU, with the sorted-CSR representation (built with core's radix sort, triangles
//! counted by sorted intersection) measured in the same run as the baseline:
//!
//! - Tables 5.2 / 5.3: edge insertion and deletion rates for batches of 2^16 ... 2^22
//!   random edges into (from) a graph built in bulk; baseline: rebuilding the sorted CSR
//!   of the graph, in edges per second;
//! - Table 5.4: vertex deletion rates for batches of 2^14 ... 2^20 vertices;
//! - Table 5.5: bulk build per dataset against the sorted-CSR build of the same COO;
//! - Table 5.6: incremental build (an empty graph of known vertex capacity, batches of
//!   2^16 ... 2^22 edges);
//! - Tables 5.7 / 5.8: static triangle counting on the hash tables (set variant) against
//!   the sorted CSR's count, with and without its sort (the CSR build);
//! - Table 5.9: dynamic triangle counting: five batches of 2^22 edges, a count after
//!   each, cumulative; baseline: rebuilding the CSR and counting after each;
//! - Figs. 5.2 / 5.3: the load factor swept on the R-MAT 2^20 graph (build, insertion,
//!   triangle counting);
//! - §5.7 (beyond the dissertation): SortedGraph, the adjacency kept in sorted segments,
//!   on the rgg, delaunay and soc-LJ shapes: bulk build, edge insertion (batches 2^20 and
//!   2^22) and triangle counting, each beside DynamicGraph and the sorted CSR of the same
//!   run. `graph-sorted` runs these rows alone.
//!
//! Datasets are generated (gpuds_graph::input) in the shapes of Table 5.1, seeded;
//! `--keys N` sets their vertex count (default 2^20; `quick` 2^18). Rates are edges
//! (or vertices) per second of input, whatever the batch's duplicates.

use gpuds_core::cudarc::driver::CudaSlice;
use gpuds_core::Result;
use gpuds_graph::csr::{CsrBuilder, DeviceCsr};
use gpuds_graph::input::{Coo, Family};
use gpuds_graph::sorted::{SortedConfig, SortedGraph};
use gpuds_graph::{BulkPlacement, DynamicGraph, GraphConfig};

use super::{core_error, Accepts, Case, CrateError, Experiment, Params, Scale};
use crate::bench::Bench;
use crate::report::{size_label, Baseline, Row, Unit};
use crate::timing::{time_once, Timing};

/// The `graph` experiment.
pub const EXPERIMENT: Experiment = Experiment {
    name: "graph",
    about: "DynamicGraph (Awad 2022, ch. 5): Tables 5.2-5.9, Figs. 5.2-5.3; sorted-CSR baseline",
    accepts: Accepts::KEYS,
    plan,
};

/// The `graph-sorted` experiment: the SortedGraph rows of `graph` alone.
pub const SORTED_EXPERIMENT: Experiment = Experiment {
    name: "graph-sorted",
    about: "SortedGraph (sorted adjacency, §5.7) beside DynamicGraph and the sorted CSR (a part of `graph`)",
    accepts: Accepts::KEYS,
    plan: sorted_plan,
};

impl CrateError for gpuds_graph::Error {
    fn into_core(self) -> std::result::Result<gpuds_core::Error, Self> {
        match self {
            gpuds_graph::Error::Core(e) => Ok(e),
            other => Err(other),
        }
    }
}

const NAME: &str = "graph";
const GRAPH: &str = "DynamicGraph";
const CSR: &str = "sorted CSR";
const SORTED: &str = "SortedGraph";
const GRAPH_PLACED: &str = "DynamicGraph, placement";
const GRAPH_ORDINARY: &str = "DynamicGraph, ordinary insertion";
const SEED: u64 = 5;

/// The vertex count of the datasets.
fn vertices(params: &Params) -> u32 {
    let quick = params.scale == Scale::Quick;
    params
        .keys_or(if quick { 1 << 18 } else { 1 << 20 })
        .clamp(1 << 10, 1 << 26) as u32
}

fn sorted_plan(params: &Params) -> Vec<Case> {
    match params.scale {
        // `quick` already runs the `graph` quick plan, which has a SortedGraph case.
        Scale::Quick => Vec::new(),
        Scale::Full => sorted_cases(vertices(params), false),
    }
}

/// The SortedGraph cases (§5.7): rgg, delaunay and soc-LJ at batches 2^20 and 2^22;
/// `quick`: rgg at 2^20.
fn sorted_cases(n: u32, quick: bool) -> Vec<Case> {
    let datasets: &[&'static str] = if quick {
        &["rgg_n_2_20_s0"]
    } else {
        &["rgg_n_2_20_s0", "delaunay_n20", "soc-LiveJournal1"]
    };
    let batches: Vec<usize> = if quick {
        vec![1 << 20]
    } else {
        vec![1 << 20, 1 << 22]
    };
    datasets
        .iter()
        .map(|&name| {
            let batches = batches.clone();
            Case::new(format!("§5.7 sorted adjacency, {name}"), move |b| {
                sorted_rows(b, name, &dataset(name, n)?, &batches)
            })
        })
        .collect()
}

fn plan(params: &Params) -> Vec<Case> {
    let quick = params.scale == Scale::Quick;
    let n = vertices(params);
    let datasets: Vec<&'static str> = if quick {
        vec!["rgg_n_2_20_s0", "soc-LiveJournal1"]
    } else {
        vec![
            "rgg_n_2_20_s0",
            "delaunay_n20",
            "soc-LiveJournal1",
            "hollywood-2009",
            "road_usa",
        ]
    };
    let batches: Vec<usize> = if quick {
        vec![1 << 18, 1 << 22]
    } else {
        vec![1 << 16, 1 << 18, 1 << 20, 1 << 22]
    };
    let mut cases = Vec::new();
    for name in datasets.clone() {
        let batches = batches.clone();
        cases.push(Case::new(
            format!("Tables 5.2/5.3/5.5/5.7, {name}"),
            move |b| {
                let coo = dataset(name, n)?;
                let mut rows = build_rows(b, name, &coo)?;
                rows.extend(triangle_rows(b, name, &coo)?);
                rows.extend(edge_rows(b, name, &coo, &batches)?);
                Ok(rows)
            },
        ));
    }
    let vertex_batches: Vec<usize> = if quick {
        vec![1 << 14]
    } else {
        vec![1 << 14, 1 << 16, 1 << 18, 1 << 20]
    };
    cases.push(Case::new("Table 5.4 vertex deletion", move |b| {
        vertex_rows(b, n, quick, &vertex_batches)
    }));
    let inc: Vec<usize> = if quick {
        vec![1 << 20]
    } else {
        vec![1 << 16, 1 << 18, 1 << 20, 1 << 22]
    };
    cases.push(Case::new("Table 5.6 incremental build", move |b| {
        let coo = dataset("delaunay_n20", n)?;
        incremental_rows(b, &coo, &inc)
    }));
    cases.push(Case::new("Table 5.9 dynamic triangle counting", move |b| {
        let coo = dataset("road_usa", n)?;
        dynamic_rows(b, &coo, if quick { 2 } else { 5 })
    }));
    if !quick {
        cases.push(Case::new("Figs. 5.2/5.3 load factor", move |b| {
            let coo = dataset("soc-LiveJournal1", n)?;
            load_factor_rows(b, &coo)
        }));
    }
    cases.extend(sorted_cases(n, quick));
    cases
}

/// A Table 5.1 shape with about `n` vertices.
fn dataset(name: &str, n: u32) -> Result<Coo> {
    let (family, _) = Family::from_name(name, 0)
        .ok_or_else(|| gpuds_core::Error::InvalidArgument(format!("no graph family {name}")))?;
    Ok(family.generate(n, SEED))
}

fn err(e: gpuds_graph::Error) -> gpuds_core::Error {
    core_error(e)
}

fn row(name: &str, structure: &str, work: u64, timing: Timing, unit: Unit) -> Row {
    Row::new(NAME, name, work, timing, work as f64, unit).with_structure(structure)
}

fn baseline(label: &str, rate: f64) -> Option<Baseline> {
    Some(Baseline {
        label: format!("{label}, this run"),
        rate,
    })
}

struct Device {
    src: CudaSlice<u32>,
    dst: CudaSlice<u32>,
}

fn upload(bench: &Bench, coo: &Coo) -> Result<Device> {
    let stream = bench.gpu.stream();
    Ok(Device {
        src: stream.clone_htod(&coo.src)?,
        dst: stream.clone_htod(&coo.dst)?,
    })
}

type Graph = DynamicGraph<()>;

fn build(gpu: &gpuds_core::Gpu, coo: &Coo, d: &Device, config: GraphConfig) -> Result<Graph> {
    Graph::from_device_edges(gpu, config, coo.num_vertices, &d.src, &d.dst, None).map_err(err)
}

/// Table 5.5: bulk build (median of the timer's repetitions) beside the CSR build.
fn build_rows(bench: &mut Bench, name: &str, coo: &Coo) -> Result<Vec<Row>> {
    let d = upload(bench, coo)?;
    let m = coo.len() as u64;
    let mut builder = CsrBuilder::new(&bench.gpu).map_err(|e| err(e.into()))?;
    let gpu = bench.gpu.clone();
    let csr_t = bench.timer.measure(|rep| {
        rep.time(|| {
            builder
                .build(coo.num_vertices, &d.src, &d.dst, true)
                .map(drop)
                .map_err(|e| err(e.into()))
        })
    })?;
    let csr_rate = csr_t.giga_rate(m as f64);
    // The graph is rebuilt into one reused graph (its dictionary and slab pool; the base
    // slabs and the build's scratch arrays are allocated afresh), as the CSR builder
    // reuses its buffers; a build from scratch (the graph's memory set up and freed
    // inside the timing) is in the note.
    let mut g = build(&gpu, coo, &d, GraphConfig::default())?;
    // Untimed rebuilds first: with only the timer's one warm-up, this row (the first graph
    // built in the process) spread 15-25 % on the H200 where the same rebuilds measured
    // later in the process spread 1-3 %.
    for _ in 0..3 {
        g.rebuild_from_device_edges(coo.num_vertices, &d.src, &d.dst, None)
            .map_err(err)?;
    }
    let graph_t = bench.timer.measure(|rep| {
        rep.time(|| {
            g.rebuild_from_device_edges(coo.num_vertices, &d.src, &d.dst, None)
                .map_err(err)
        })
    })?;
    let scratch_t = bench
        .timer
        .measure(|rep| rep.time(|| build(&gpu, coo, &d, GraphConfig::default()).map(drop)))?;
    let edges = g.num_edges().map_err(err)?;
    let buckets = g.stats().map_err(err)?.base_slabs;
    drop(g);
    // Both ways of inserting the edges, forced, in this process: the choice the default
    // (BulkPlacement::Auto) makes is measured against the other one here.
    let mut forced = Vec::new();
    for placement in [BulkPlacement::Always, BulkPlacement::Never] {
        let config = GraphConfig {
            bulk_placement: placement,
            ..GraphConfig::default()
        };
        let mut g = build(&gpu, coo, &d, config)?;
        let t = bench.timer.measure(|rep| {
            rep.time(|| {
                g.rebuild_from_device_edges(coo.num_vertices, &d.src, &d.dst, None)
                    .map_err(err)
            })
        })?;
        forced.push(t);
    }
    let (placed_t, ordinary_t) = (forced[0], forced[1]);
    let rate = graph_t.giga_rate(m as f64);
    Ok(vec![
        row(
            &format!("Table 5.5 bulk build, {name}"),
            CSR,
            m,
            csr_t,
            Unit::GigaItemsPerSecond,
        )
        .with_note(format!(
            "{:.2} ms, {} edges",
            csr_t.median_ms,
            size_label(m)
        )),
        row(
            &format!("Table 5.5 bulk build, {name}"),
            GRAPH,
            m,
            graph_t,
            Unit::GigaItemsPerSecond,
        )
        .with_baseline(baseline(CSR, csr_rate))
        .with_note(format!(
            "{:.2} ms rebuilt in place ({:.2} ms from scratch, {:.2} G edges/s); {:.2} x {CSR}; {} edges stored; target >= 8 G edges/s on rgg/delaunay: {}",
            graph_t.median_ms,
            scratch_t.median_ms,
            scratch_t.giga_rate(m as f64),
            rate / csr_rate,
            size_label(edges),
            if rate >= 8.0 { "met" } else { "missed" }
        )),
        row(
            &format!("Table 5.5 bulk build, {name}"),
            GRAPH_PLACED,
            m,
            placed_t,
            Unit::GigaItemsPerSecond,
        )
        .with_baseline(baseline(GRAPH_ORDINARY, ordinary_t.giga_rate(m as f64)))
        .with_note(format!(
            "rebuilt in place, direct placement forced ({:.2} ms) against the ordinary insertion forced ({:.2} ms), this process; the default chose {}",
            placed_t.median_ms,
            ordinary_t.median_ms,
            // The default graph is undirected: two arcs an edge.
            if BulkPlacement::Auto.places(2 * m, coo.num_vertices, buckets) { "placement" } else { "the ordinary insertion" }
        )),
    ])
}

/// A SortedGraph row: its timing of `work` beside DynamicGraph's (the row's baseline) and
/// the sorted CSR's (`csr`, named `csr_label`), as time ratios in the note.
fn sorted_row(
    label: &str,
    work: u64,
    sorted: Timing,
    hash: Timing,
    (csr, csr_label): (Timing, &str),
    note: &str,
) -> Row {
    row(label, SORTED, work, sorted, Unit::GigaItemsPerSecond)
        .with_baseline(baseline(GRAPH, hash.giga_rate(work as f64)))
        .with_note(format!(
            "{:.2} ms; {:.2} x {GRAPH} ({:.2} ms), {:.2} x {csr_label} ({:.2} ms){note}",
            sorted.median_ms,
            hash.median_ms / sorted.median_ms,
            hash.median_ms,
            csr.median_ms / sorted.median_ms,
            csr.median_ms,
        ))
}

/// §5.7: SortedGraph's bulk build, triangle count and edge insertion (undirected, fresh
/// random batches into the built graph), each timed beside DynamicGraph and the sorted
/// CSR in this run (for insertion: the CSR's rebuild of the whole graph).
fn sorted_rows(bench: &mut Bench, name: &str, coo: &Coo, batches: &[usize]) -> Result<Vec<Row>> {
    let d = upload(bench, coo)?;
    let m = coo.len() as u64;
    let gpu = bench.gpu.clone();
    let nv = coo.num_vertices;
    let build_sorted = || {
        SortedGraph::from_device_edges(&gpu, SortedConfig::default(), nv, &d.src, &d.dst)
            .map_err(err)
    };
    let sorted_t = bench
        .timer
        .measure(|rep| rep.time(|| build_sorted().map(drop)))?;
    let hash_t = bench
        .timer
        .measure(|rep| rep.time(|| build(&gpu, coo, &d, GraphConfig::default()).map(drop)))?;
    let mut builder = CsrBuilder::new(&gpu).map_err(|e| err(e.into()))?;
    let csr_t = bench.timer.measure(|rep| {
        rep.time(|| {
            builder
                .build(nv, &d.src, &d.dst, true)
                .map(drop)
                .map_err(|e| err(e.into()))
        })
    })?;
    let g = build_sorted()?;
    let mut rows = vec![sorted_row(
        &format!("§5.7 sorted adjacency: bulk build, {name}"),
        m,
        sorted_t,
        hash_t,
        (csr_t, "CSR build"),
        &format!("; {} edges stored", size_label(g.num_edges())),
    )];

    let h = build(&gpu, coo, &d, GraphConfig::default())?;
    let csr =
        DeviceCsr::from_device_coo(&gpu, nv, &d.src, &d.dst, true).map_err(|e| err(e.into()))?;
    let (tri_t, sorted_count) = timed_count(bench, || g.triangle_count().map_err(err))?;
    let (hash_tri_t, hash_count) = timed_count(bench, || h.triangle_count().map_err(err))?;
    let (csr_tri_t, csr_count) = timed_count(bench, || {
        csr.triangle_count(&gpu).map_err(|e| err(e.into()))
    })?;
    let agree = if sorted_count == hash_count && sorted_count == csr_count {
        "equal to both"
    } else {
        "COUNTS DIFFER"
    };
    rows.push(sorted_row(
        &format!("§5.7 sorted adjacency: triangles, {name}"),
        m,
        tri_t,
        hash_tri_t,
        (csr_tri_t, "CSR count"),
        &format!(
            "; {sorted_count} triangles, {agree}; no sort ({:.2} x the CSR count with its sort)",
            (csr_tri_t.median_ms + csr_t.median_ms) / tri_t.median_ms
        ),
    ));
    drop((g, h, csr));

    let nv = nv.max(2);
    for &batch in batches {
        let mut g = build_sorted()?;
        let mut h = build(&gpu, coo, &d, GraphConfig::default())?;
        h.reserve(batch as u64 * 2 * 8).map_err(err)?;
        let mut insert = |sorted: bool| {
            bench.timer.measure(|rep| {
                let src = bench_words(&gpu, batch, rep.seed(), nv)?;
                let dst = bench_words(&gpu, batch, rep.seed() ^ 0x5555, nv)?;
                rep.time(|| {
                    if sorted {
                        g.insert_edges_device(&src, &dst).map(drop).map_err(err)
                    } else {
                        h.insert_edges_device(&src, &dst, None)
                            .map(drop)
                            .map_err(err)
                    }
                })
            })
        };
        let sorted_t = insert(true)?;
        let hash_t = insert(false)?;
        rows.push(sorted_row(
            &format!(
                "§5.7 sorted adjacency: edge insertion, {name}, batch {}",
                size_label(batch as u64)
            ),
            batch as u64,
            sorted_t,
            hash_t,
            (csr_t, "CSR rebuild"),
            "; random edges, both directions",
        ));
    }
    Ok(rows)
}

/// The timing of `count` and the count it returned.
fn timed_count(bench: &mut Bench, mut count: impl FnMut() -> Result<u64>) -> Result<(Timing, u64)> {
    let mut got = 0;
    let t = bench.timer.measure(|rep| {
        rep.time(|| {
            got = count()?;
            Ok(())
        })
    })?;
    Ok((t, got))
}

/// Tables 5.7 / 5.8: triangles on the tables against the sorted CSR (count alone, and
/// with its build, the sort the list-based structures need).
fn triangle_rows(bench: &mut Bench, name: &str, coo: &Coo) -> Result<Vec<Row>> {
    let d = upload(bench, coo)?;
    let m = coo.len() as u64;
    let gpu = bench.gpu.clone();
    let g = build(&gpu, coo, &d, GraphConfig::default())?;
    let csr = DeviceCsr::from_device_coo(&gpu, coo.num_vertices, &d.src, &d.dst, true)
        .map_err(|e| err(e.into()))?;
    let (csr_t, want) = timed_count(bench, || {
        csr.triangle_count(&gpu).map_err(|e| err(e.into()))
    })?;
    let mut builder = CsrBuilder::new(&gpu).map_err(|e| err(e.into()))?;
    let sort_t = bench.timer.measure(|rep| {
        rep.time(|| {
            builder
                .build(coo.num_vertices, &d.src, &d.dst, true)
                .map(drop)
                .map_err(|e| err(e.into()))
        })
    })?;
    let (graph_t, got) = timed_count(bench, || g.triangle_count().map_err(err))?;
    let csr_rate = csr_t.giga_rate(m as f64);
    let label = format!("Table 5.7 triangles, {name}");
    let ok = if got == want {
        "checked against the CSR count"
    } else {
        "COUNTS DIFFER"
    };
    Ok(vec![
        row(&label, CSR, m, csr_t, Unit::GigaItemsPerSecond).with_note(format!(
            "{:.2} ms, {want} triangles; its sort (Table 5.8) {:.2} ms",
            csr_t.median_ms, sort_t.median_ms
        )),
        row(&label, GRAPH, m, graph_t, Unit::GigaItemsPerSecond)
            .with_baseline(baseline(CSR, csr_rate))
            .with_note(format!(
                "{:.2} ms, {got} triangles, {ok}; {:.2} x {CSR}, {:.2} x {CSR} with its sort",
                graph_t.median_ms,
                csr_t.median_ms / graph_t.median_ms,
                (csr_t.median_ms + sort_t.median_ms) / graph_t.median_ms
            )),
    ])
}

/// Tables 5.2 / 5.3: random edge batches inserted into and deleted from the built graph.
fn edge_rows(bench: &mut Bench, name: &str, coo: &Coo, batches: &[usize]) -> Result<Vec<Row>> {
    let d = upload(bench, coo)?;
    let m = coo.len() as u64;
    let gpu = bench.gpu.clone();
    let mut builder = CsrBuilder::new(&gpu).map_err(|e| err(e.into()))?;
    let csr_t = bench.timer.measure(|rep| {
        rep.time(|| {
            builder
                .build(coo.num_vertices, &d.src, &d.dst, true)
                .map(drop)
                .map_err(|e| err(e.into()))
        })
    })?;
    let csr_rate = csr_t.giga_rate(m as f64);
    let mut rows = Vec::new();
    if let Some(&batch) = batches.last() {
        // The same batches into the directed graph of the same edges: one table
        // operation per edge instead of two.
        let directed = GraphConfig {
            directed: true,
            ..Default::default()
        };
        let (ins_t, del_t) = edge_batches(bench, coo, &d, directed, batch, 0)?;
        let label = size_label(batch as u64);
        rows.push(
            row(
                &format!("Table 5.2 edge insertion, {name} directed, batch {label}"),
                GRAPH,
                batch as u64,
                ins_t,
                Unit::GigaItemsPerSecond,
            )
            .with_baseline(baseline("CSR rebuild", csr_rate))
            .with_note("random edges, one table operation each"),
        );
        rows.push(
            row(
                &format!("Table 5.3 edge deletion, {name} directed, batch {label}"),
                GRAPH,
                batch as u64,
                del_t,
                Unit::GigaItemsPerSecond,
            )
            .with_baseline(baseline("CSR rebuild", csr_rate))
            .with_note("edges of the graph, one table operation each"),
        );
    }
    for &batch in batches {
        let (ins_t, del_t) = edge_batches(
            bench,
            coo,
            &d,
            GraphConfig::default(),
            batch,
            batch as u64 * 2 * 8,
        )?;
        let (ins, del) = (ins_t.giga_rate(batch as f64), del_t.giga_rate(batch as f64));
        let big = batch == 1 << 22;
        rows.push(
            row(
                &format!(
                    "Table 5.2 edge insertion, {name}, batch {}",
                    size_label(batch as u64)
                ),
                GRAPH,
                batch as u64,
                ins_t,
                Unit::GigaItemsPerSecond,
            )
            .with_baseline(baseline("CSR rebuild", csr_rate))
            .with_note(if big {
                format!(
                    "target >= 4 G edges/s: {}",
                    if ins >= 4.0 { "met" } else { "missed" }
                )
            } else {
                "random edges, both directions".into()
            }),
        );
        rows.push(
            row(
                &format!(
                    "Table 5.3 edge deletion, {name}, batch {}",
                    size_label(batch as u64)
                ),
                GRAPH,
                batch as u64,
                del_t,
                Unit::GigaItemsPerSecond,
            )
            .with_baseline(baseline("CSR rebuild", csr_rate))
            .with_note(if big {
                format!(
                    "target >= 5 G edges/s: {}",
                    if del >= 5.0 { "met" } else { "missed" }
                )
            } else {
                "edges of the graph, both directions".into()
            }),
        );
    }
    Ok(rows)
}

/// One batch of `batch` random edges inserted into, and one of `batch` edges of the
/// graph deleted from, the graph built from `coo` with `config` (`reserve`: slabs
/// reserved after the build). Every repetition starts from a freshly built graph (the
/// build and the batch's upload are not timed), so each one measures the same thing: a
/// batch into the built graph. Before, the batches of all repetitions went into one
/// graph, so later repetitions inserted into lists up to four times longer and deleted
/// edges that an earlier repetition had deleted.
fn edge_batches(
    bench: &mut Bench,
    coo: &Coo,
    d: &Device,
    config: GraphConfig,
    batch: usize,
    reserve: u64,
) -> Result<(Timing, Timing)> {
    let gpu = bench.gpu.clone();
    let nv = coo.num_vertices.max(2);
    let fresh = || -> Result<Graph> {
        let mut g = build(&gpu, coo, d, config.clone())?;
        if reserve > 0 {
            g.reserve(reserve).map_err(err)?;
        }
        Ok(g)
    };
    let ins_t = bench.timer.measure(|rep| {
        let mut g = fresh()?;
        let src = bench_words(&gpu, batch, rep.seed(), nv)?;
        let dst = bench_words(&gpu, batch, rep.seed() ^ 0x5555, nv)?;
        rep.time(|| {
            g.insert_edges_device(&src, &dst, None)
                .map(drop)
                .map_err(err)
        })
    })?;
    let del_t = bench.timer.measure(|rep| {
        let mut g = fresh()?;
        let pick = sample(coo, batch, rep.seed());
        let (src, dst) = (
            gpu.stream().clone_htod(&pick.0)?,
            gpu.stream().clone_htod(&pick.1)?,
        );
        rep.time(|| g.remove_edges_device(&src, &dst).map(drop).map_err(err))
    })?;
    Ok((ins_t, del_t))
}

/// `n` random vertex ids below `nv` on the device.
fn bench_words(gpu: &gpuds_core::Gpu, n: usize, seed: u32, nv: u32) -> Result<CudaSlice<u32>> {
    let host: Vec<u32> = (0..n as u64)
        .map(|i| (mix(i ^ (u64::from(seed) << 32)) % u64::from(nv)) as u32)
        .collect();
    Ok(gpu.stream().clone_htod(&host)?)
}

/// `n` edges of `coo`, sampled with a seed.
fn sample(coo: &Coo, n: usize, seed: u32) -> (Vec<u32>, Vec<u32>) {
    let m = coo.len().max(1) as u64;
    (0..n as u64)
        .map(|i| {
            let j = (mix(i ^ (u64::from(seed) << 40)) % m) as usize;
            (coo.src[j], coo.dst[j])
        })
        .unzip()
}

/// The datasets of Table 5.4 (the dissertation averages over these four) with their
/// vertex counts as multiples of `n`: large enough that a batch of 2^20 vertices is at
/// most a quarter of the graph (half for soc-orkut, whose 40 edges per vertex make a
/// graph of 4n vertices slow to generate), as in the dissertation, whose graphs have
/// 3 to 11.5 M vertices.
const VERTEX_DATASETS: [(&str, u32); 4] = [
    ("soc-orkut", 2),
    ("soc-LiveJournal1", 4),
    ("delaunay_n23", 4),
    ("germany_osm", 4),
];

/// Table 5.4: vertex deletion (a fresh graph each repetition), per dataset and batch,
/// and the mean over the datasets per batch (the dissertation's figure).
fn vertex_rows(bench: &mut Bench, n: u32, quick: bool, batches: &[usize]) -> Result<Vec<Row>> {
    let gpu = bench.gpu.clone();
    let datasets = if quick {
        &VERTEX_DATASETS[1..2]
    } else {
        &VERTEX_DATASETS[..]
    };
    let mut rates = vec![Vec::new(); batches.len()];
    let mut rows = Vec::new();
    for &(name, times) in datasets {
        let vertices = if quick { n } else { n.saturating_mul(times) };
        let coo = dataset(name, vertices)?;
        let d = upload(bench, &coo)?;
        let nv = coo.num_vertices.max(2);
        for (j, &batch) in batches.iter().enumerate() {
            let batch = batch.min(nv as usize / 2);
            let t = bench.timer.measure(|rep| {
                let mut g = build(&gpu, &coo, &d, GraphConfig::default())?;
                // `batch` distinct ids spread over the graph: i -> i * p + s mod nv is a
                // bijection of 0..nv for the prime p > nv.
                let s = mix(u64::from(rep.seed()));
                let ids: Vec<u32> = (0..batch as u64)
                    .map(|i| ((i * 2_654_435_761 + s % u64::from(nv)) % u64::from(nv)) as u32)
                    .collect();
                let ids = gpu.stream().clone_htod(&ids)?;
                rep.time(|| g.remove_vertices_device(&ids).map(drop).map_err(err))
            })?;
            rates[j].push(t.giga_rate(batch as f64));
            rows.push(
                row(
                    &format!(
                        "Table 5.4 vertex deletion, {name}, batch {}",
                        size_label(batch as u64)
                    ),
                    GRAPH,
                    batch as u64,
                    t,
                    Unit::GigaItemsPerSecond,
                )
                .with_note(format!(
                    "{:.1} M vertices/s; {} vertices, {} edges",
                    t.giga_rate(batch as f64) * 1e3,
                    nv,
                    coo.len()
                )),
            );
        }
    }
    for (&batch, rates) in batches.iter().zip(&rates) {
        if rates.len() < 2 {
            continue;
        }
        let mean = rates.iter().sum::<f64>() / rates.len() as f64;
        // The mean rate as a row: the time that rate gives the batch.
        let ms = batch as f64 / (mean * 1e6);
        rows.push(
            row(
                &format!(
                    "Table 5.4 vertex deletion, mean of {} datasets, batch {}",
                    rates.len(),
                    size_label(batch as u64)
                ),
                GRAPH,
                batch as u64,
                Timing::once(ms),
                Unit::GigaItemsPerSecond,
            )
            .with_note(format!(
                "{:.1} M vertices/s; target >= 150 M/s at 2^20 (dissertation, TITAN V: 26 M/s)",
                mean * 1e3
            )),
        );
    }
    Ok(rows)
}

/// Table 5.6: incremental build from an empty graph of known capacity.
fn incremental_rows(bench: &mut Bench, coo: &Coo, batches: &[usize]) -> Result<Vec<Row>> {
    let gpu = bench.gpu.clone();
    let d = upload(bench, coo)?;
    let m = coo.len();
    // Shuffled order: batches are not sorted by source.
    let order: Vec<usize> = {
        let mut o: Vec<(u64, usize)> = (0..m).map(|i| (mix(i as u64 ^ 77), i)).collect();
        o.sort_unstable();
        o.into_iter().map(|p| p.1).collect()
    };
    let src: Vec<u32> = order.iter().map(|&i| coo.src[i]).collect();
    let dst: Vec<u32> = order.iter().map(|&i| coo.dst[i]).collect();
    let (ds, dd) = (
        gpu.stream().clone_htod(&src)?,
        gpu.stream().clone_htod(&dst)?,
    );
    let mut rows = Vec::new();
    let bulk = bench
        .timer
        .measure(|rep| rep.time(|| build(&gpu, coo, &d, GraphConfig::default()).map(drop)))?;
    for &batch in batches {
        let mut g = Graph::new(&gpu, coo.num_vertices).map_err(err)?;
        g.reserve(2 * m as u64).map_err(err)?;
        let mut total_ms = 0.0;
        let mut at = 0;
        while at < m {
            let end = (at + batch).min(m);
            let (s, t) = (ds.slice(at..end), dd.slice(at..end));
            let (s, t) = (gpu.stream().clone_dtod(&s)?, gpu.stream().clone_dtod(&t)?);
            total_ms += time_once(&gpu, || {
                g.insert_edges_device(&s, &t, None).map(drop).map_err(err)
            })?;
            at = end;
        }
        let t = Timing::once(total_ms);
        rows.push(
            row(
                &format!(
                    "Table 5.6 incremental build, delaunay_n20, batch {}",
                    size_label(batch as u64)
                ),
                GRAPH,
                m as u64,
                t,
                Unit::GigaItemsPerSecond,
            )
            .with_baseline(baseline("bulk build", bulk.giga_rate(m as f64)))
            .with_note(format!(
                "{total_ms:.2} ms for {} edges",
                size_label(m as u64)
            )),
        );
    }
    Ok(rows)
}

/// Table 5.9: five batches inserted, triangles counted after each (cumulative).
fn dynamic_rows(bench: &mut Bench, coo: &Coo, rounds: usize) -> Result<Vec<Row>> {
    let gpu = bench.gpu.clone();
    let m = coo.len();
    let base = m / 2;
    let (head_src, head_dst) = (&coo.src[..base], &coo.dst[..base]);
    let mut g = Graph::from_edges(
        &gpu,
        GraphConfig::default(),
        coo.num_vertices,
        head_src,
        head_dst,
        None,
    )
    .map_err(err)?;
    let per = (m - base).div_ceil(rounds.max(1));
    let mut all_src = head_src.to_vec();
    let mut all_dst = head_dst.to_vec();
    let (mut graph_ms, mut csr_ms) = (0.0, 0.0);
    let mut inserted = 0u64;
    let mut builder = CsrBuilder::new(&gpu).map_err(|e| err(e.into()))?;
    for r in 0..rounds {
        let (a, b) = (base + r * per, (base + (r + 1) * per).min(m));
        if a >= b {
            break;
        }
        inserted += (b - a) as u64;
        let (s, t) = (
            gpu.stream().clone_htod(&coo.src[a..b])?,
            gpu.stream().clone_htod(&coo.dst[a..b])?,
        );
        let mut got = 0;
        graph_ms += time_once(&gpu, || {
            g.insert_edges_device(&s, &t, None).map_err(err)?;
            got = g.triangle_count().map_err(err)?;
            Ok(())
        })?;
        all_src.extend_from_slice(&coo.src[a..b]);
        all_dst.extend_from_slice(&coo.dst[a..b]);
        let (ds, dd) = (
            gpu.stream().clone_htod(&all_src)?,
            gpu.stream().clone_htod(&all_dst)?,
        );
        let mut want = 0;
        csr_ms += time_once(&gpu, || {
            let csr = builder
                .build(coo.num_vertices, &ds, &dd, true)
                .map_err(|e| err(e.into()))?;
            want = csr.triangle_count(&gpu).map_err(|e| err(e.into()))?;
            Ok(())
        })?;
        if got != want {
            return Err(gpuds_core::Error::InvalidArgument(format!(
                "round {r}: {got} triangles, the CSR counts {want}"
            )));
        }
    }
    let rate = |ms: f64| inserted as f64 / (ms * 1e-3) / 1e9;
    Ok(vec![
        row(
            "Table 5.9 dynamic triangles, road_usa",
            CSR,
            inserted,
            Timing::once(csr_ms),
            Unit::GigaItemsPerSecond,
        )
        .with_note(format!(
            "{csr_ms:.2} ms cumulative over {rounds} batches (rebuild + count)"
        )),
        row(
            "Table 5.9 dynamic triangles, road_usa",
            GRAPH,
            inserted,
            Timing::once(graph_ms),
            Unit::GigaItemsPerSecond,
        )
        .with_baseline(baseline(CSR, rate(csr_ms)))
        .with_note(format!(
            "{graph_ms:.2} ms cumulative (insert + count), counts checked; {:.2} x {CSR}",
            csr_ms / graph_ms
        )),
    ])
}

/// Figs. 5.2 / 5.3: the load factor swept (build, insertion of 2^20 edges, triangles).
fn load_factor_rows(bench: &mut Bench, coo: &Coo) -> Result<Vec<Row>> {
    let gpu = bench.gpu.clone();
    let d = upload(bench, coo)?;
    let m = coo.len() as u64;
    let mut rows = Vec::new();
    for lf in [0.4f32, 0.55, 0.7, 0.85, 1.0, 1.5, 2.0] {
        let config = GraphConfig {
            load_factor: lf,
            ..Default::default()
        };
        let build_t = bench
            .timer
            .measure(|rep| rep.time(|| build(&gpu, coo, &d, config.clone()).map(drop)))?;
        let mut g = build(&gpu, coo, &d, config.clone())?;
        let tri_t = bench
            .timer
            .measure(|rep| rep.time(|| g.triangle_count().map(drop).map_err(err)))?;
        let batch = 1usize << 20;
        let ins_t = bench.timer.measure(|rep| {
            let nv = coo.num_vertices.max(2);
            let src = bench_words(&gpu, batch, rep.seed(), nv)?;
            let dst = bench_words(&gpu, batch, rep.seed() ^ 0x77, nv)?;
            rep.time(|| {
                g.insert_edges_device(&src, &dst, None)
                    .map(drop)
                    .map_err(err)
            })
        })?;
        let x = Some(f64::from(lf));
        rows.push(
            row(
                "Fig. 5.2 bulk build vs load factor",
                GRAPH,
                m,
                build_t,
                Unit::GigaItemsPerSecond,
            )
            .in_figure("fig5.2", x),
        );
        rows.push(
            row(
                "Fig. 5.2 edge insertion vs load factor",
                GRAPH,
                batch as u64,
                ins_t,
                Unit::GigaItemsPerSecond,
            )
            .in_figure("fig5.2", x),
        );
        rows.push(
            row(
                "Fig. 5.3 triangles vs load factor",
                GRAPH,
                m,
                tri_t,
                Unit::GigaItemsPerSecond,
            )
            .in_figure("fig5.3", x)
            .with_note(format!("{:.2} ms", tri_t.median_ms)),
        );
    }
    Ok(rows)
}

/// splitmix64.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_stay_within_the_limits() {
        let quick = plan(&Params::new(Scale::Quick));
        assert!(quick.len() <= 6, "{}", quick.len());
        assert!(quick.iter().any(|c| c.label.contains("sorted adjacency")));
        assert!(sorted_plan(&Params::new(Scale::Quick)).is_empty());
        assert_eq!(sorted_plan(&Params::new(Scale::Full)).len(), 3);
        let full = plan(&Params::new(Scale::Full));
        assert!(full.iter().any(|c| c.label.contains("Figs. 5.2")));
        assert!(dataset("no such graph", 1 << 10).is_err());
        let coo = dataset("road_usa", 1 << 10).unwrap();
        let (s, d) = sample(&coo, 100, 3);
        assert_eq!((s.len(), d.len()), (100, 100));
    }
}
