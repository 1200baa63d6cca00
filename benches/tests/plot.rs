//! Figures from fixture rows: the SVG parses as XML and holds one series per structure
//! (and one per comparison point), each named once in the legend.

use std::collections::BTreeSet;
use std::path::Path;

use gpuds_benches::plot;
use gpuds_benches::report::records;

fn texts(svg: &str) -> Vec<String> {
    let doc = roxmltree::Document::parse(svg).expect("the SVG is well-formed XML");
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    doc.descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text().map(|t| t.trim().to_string()))
        .collect()
}

#[test]
fn one_series_per_structure() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/plot.json");
    let rows = records::read(&fixture).unwrap();
    let figures = plot::figures(&rows);
    let names: Vec<&str> = figures.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["hive-summary", "slabhash-fig4"]);

    // The summary: operations side by side, a series per structure, the published
    // figures beside them.
    let summary = &figures[0];
    assert_eq!(summary.categories, ["insert", "find (hit)", "find (miss)"]);
    let series: Vec<&str> = summary.series.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        series,
        ["HiveMap", "LinearProbeMap", "original, published H200"]
    );
    let svg = plot::draw(summary).unwrap();
    let labels = texts(&svg);
    let structures: BTreeSet<&str> = rows
        .iter()
        .filter(|r| r.experiment == "hive")
        .map(|r| r.structure.as_str())
        .collect();
    for name in structures
        .iter()
        .copied()
        .chain(["original, published H200"])
    {
        let count = labels.iter().filter(|t| t.as_str() == name).count();
        assert_eq!(count, 1, "{name} is named once in the legend");
    }
    assert!(labels.iter().any(|t| t == "G queries/s"));
    assert!(labels.iter().any(|t| t == "find (miss)"), "category labels");

    // A swept figure: the load on the x axis, a line per structure and operation.
    let fig4 = &figures[1];
    assert_eq!(fig4.x_label, "load factor (memory utilization)");
    let series: Vec<&str> = fig4.series.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(series, ["SlabHashMap build", "SlabHashMap search all"]);
    assert_eq!(fig4.series[0].points.len(), 3);
    texts(&plot::draw(fig4).unwrap());

    let dir = std::env::temp_dir().join(format!("gpuds-plot-{}", std::process::id()));
    let written = plot::write_all(&rows, &dir).unwrap();
    assert_eq!(written.len(), 2);
    assert!(written.iter().all(|p| p.exists()));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The series names of each figure of the papers' fixture rows, by file name.
fn paper_figures() -> Vec<(String, Vec<String>, plot::Figure)> {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/figures.json");
    let rows = records::read(&fixture).unwrap();
    plot::figures(&rows)
        .into_iter()
        .map(|f| {
            let names = f.series.iter().map(|s| s.name.clone()).collect();
            (f.name.clone(), names, f)
        })
        .collect()
}

/// Each paper figure's SVG parses and names each of its series once in the legend.
fn check_drawn(figure: &plot::Figure, series: &[&str]) {
    let names: Vec<&str> = figure.series.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, series, "{}", figure.name);
    let labels = texts(&plot::draw(figure).unwrap());
    for name in series {
        let count = labels.iter().filter(|t| t == name).count();
        assert_eq!(
            count, 1,
            "{}: {name} is named once in the legend",
            figure.name
        );
    }
}

#[test]
fn every_paper_figure_kind_draws_one_series_per_structure() {
    let figures = paper_figures();
    let names: Vec<&str> = figures.iter().map(|f| f.0.as_str()).collect();
    assert_eq!(
        names,
        [
            "btree-fig3.2a",
            "btree-fig3.3",
            "btree-fig3.4",
            "hive-fig6",
            "hive-fig8",
            "hive-fig9",
            "hive-resize",
            "alloc-allocation",
            "limits-ceilings",
        ]
    );
    let get = |name: &str| &figures.iter().find(|f| f.0 == name).unwrap().2;

    // Fig. 3.2: the tree against the sorted array of the same run, by tree size.
    let f = get("btree-fig3.2a");
    assert_eq!(f.x_label, "log2 tree size (keys)");
    check_drawn(f, &["GpuBTreeMap lookup", "GPU SA, this run"]);
    assert!(f.series[1].baseline && f.series[1].points.len() == 3);

    // Fig. 3.3: a line per batch size, the rebuild they cross once.
    let f = get("btree-fig3.3");
    check_drawn(
        f,
        &[
            "GpuBTreeMap insert 2^16",
            "GpuBTreeMap insert 2^18",
            "bulk rebuild, this run",
        ],
    );
    assert_eq!(f.series[2].points.len(), 2);

    let f = get("btree-fig3.4");
    assert_eq!(f.x_label, "keys deleted (% of the tree)");
    check_drawn(f, &["GpuBTreeMap erase"]);

    // Hive Fig. 6: one series per structure.
    let f = get("hive-fig6");
    check_drawn(
        f,
        &[
            "HiveMap insert",
            "LinearProbeMap insert",
            "SlabHashMap insert",
        ],
    );

    // The mixed workload: SlabHashMap on the same operations, dashed beside HiveMap.
    let f = get("hive-fig8");
    assert_eq!(f.x_label, "log2 operations");
    check_drawn(
        f,
        &[
            "HiveMap mixed 0.5:0.3:0.2",
            "SlabHashMap, same operations, this run",
        ],
    );
    assert!(!f.series[0].baseline && f.series[1].baseline);
    assert_eq!(f.series[1].points, [(20.0, 1.2), (22.0, 1.0)]);

    // The load-factor figure: batches of different sizes at the load each reached (not
    // log2 n), the linear table beside.
    let f = get("hive-fig9");
    assert_eq!(f.x_label, "load factor");
    check_drawn(
        f,
        &[
            "HiveMap insert batch",
            "LinearProbeMap, same batches, this run",
        ],
    );
    for s in &f.series {
        let xs: Vec<f64> = s.points.iter().map(|p| p.0).collect();
        assert_eq!(xs, [0.55, 0.75, 0.95], "{}", s.name);
    }
    let labels = texts(&plot::draw(f).unwrap());
    assert!(labels.iter().any(|t| t == "load factor"), "{labels:?}");
    assert!(!labels.iter().any(|t| t.contains("log2")), "{labels:?}");

    let f = get("hive-resize");
    assert_eq!(f.x_label, "buckets per resize step");
    check_drawn(
        f,
        &[
            "HiveMap expansion",
            "HiveMap contraction",
            "LinearProbeMap full rehash (grow), this run",
            "LinearProbeMap full rehash (shrink), this run",
        ],
    );
    let dashed: Vec<bool> = f.series.iter().map(|s| s.baseline).collect();
    assert_eq!(dashed, [false, false, true, true]);
    assert_eq!(f.series[2].points, [(8192.0, 2.0), (32768.0, 2.0)]);

    // The allocator: both paths, and the CAS limit once.
    let f = get("alloc-allocation");
    check_drawn(
        f,
        &[
            "SlabAlloc allocate() (warp-cooperative)",
            "SlabAlloc allocate_lane()",
            "random atomicCAS",
        ],
    );

    // The ceilings: bars per probe beside the published ones.
    let f = get("limits-ceilings");
    assert_eq!(f.categories.len(), 3);
    check_drawn(f, &["device", "published H200"]);
    let svg = plot::draw(f).unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let rects = doc.descendants().filter(|n| n.has_tag_name("rect")).count();
    assert!(
        rects >= 6,
        "a bar per probe and per published figure: {rects}"
    );
}
