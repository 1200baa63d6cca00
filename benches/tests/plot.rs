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
