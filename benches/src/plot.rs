//! `--plot DIR`: the experiments' figures as SVG files, drawn with `plotters` from the
//! result [`Record`]s (so a saved run can be drawn again with `gpuds-bench plot FILE`).
//!
//! Rows are grouped into one figure per experiment, paper figure (rows without one form
//! their experiment's summary figure) and unit. Within a figure the x axis is, in this
//! order of preference: the rows' own `x`; the size as log2 n when a series spans several
//! sizes; the load when a series spans several loads; else the operations side by side.
//! There is a series per structure and operation (per structure when the operations are
//! the x axis), and the comparison points of the rows (a baseline measured in the same
//! run, a published figure or a physical limit) are drawn beside them as dashed series
//! (one series when every line shares them). When the operations are the x axis the
//! series are bars side by side in each category, comparison points as hollow bars.

use std::path::{Path, PathBuf};

use plotters::prelude::*;

use crate::report::Record;

/// One line of a figure.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// The legend text.
    pub name: String,
    /// Whether this is a comparison point (drawn dashed).
    pub baseline: bool,
    /// The points, in drawing order.
    pub points: Vec<(f64, f64)>,
}

/// A figure ready to draw.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    /// The file name without `.svg`, e.g. `slabhash-fig4`.
    pub name: String,
    /// The title.
    pub title: String,
    /// The x axis' label.
    pub x_label: String,
    /// The y axis' label (the unit).
    pub y_label: String,
    /// The x axis' category names when the operations are the x axis.
    pub categories: Vec<String>,
    /// The lines.
    pub series: Vec<Series>,
}

#[derive(Clone, Copy, PartialEq)]
enum Axis {
    X,
    LogN,
    Load,
    Operation,
}

/// Distinct values in first-seen order.
fn distinct<T: PartialEq + Clone>(items: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    for item in items {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

fn x_label(experiment: &str, figure: &str) -> &'static str {
    match (experiment, figure) {
        ("slabhash", "fig6") => "batch size (elements)",
        ("btree", "table3.3") => "log2 batch size (keys)",
        ("btree", "fig3.4") => "keys deleted (% of the tree)",
        ("btree", _) => "log2 tree size (keys)",
        ("hive", "fig8") => "log2 operations",
        ("hive", "resize") => "buckets per resize step",
        ("hive", "fig9") => "load factor",
        ("hive", _) => "log2 keys",
        ("alloc", "allocation") => "log2 allocations (128 B slabs)",
        ("mvbtree", "fig4.2a" | "fig4.2b") => "log2 tree size (keys)",
        ("mvbtree", "fig4.3a" | "fig4.3b" | "fig4.5") => "update ratio α (%)",
        ("mvbtree", "fig4.4") => "average range length (pairs)",
        ("mvbtree", "fig4.6") => "batch",
        _ => "x",
    }
}

fn slug(text: &str) -> String {
    let s: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    s.split('-')
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("-")
}

/// The figures of a run, in the order their experiments first appear.
pub fn figures(records: &[Record]) -> Vec<Figure> {
    let groups = distinct(records.iter().map(|r| {
        (
            r.experiment.clone(),
            r.figure.clone().unwrap_or_else(|| "summary".into()),
            r.unit.clone(),
        )
    }));
    let several_units = |e: &str, f: &str| {
        groups
            .iter()
            .filter(|(ge, gf, _)| ge == e && gf == f)
            .count()
            > 1
    };
    groups
        .iter()
        .map(|(experiment, figure, unit)| {
            let rows: Vec<&Record> = records
                .iter()
                .filter(|r| {
                    &r.experiment == experiment
                        && r.figure.as_deref().unwrap_or("summary") == figure
                        && &r.unit == unit
                })
                .collect();
            let mut name = format!("{experiment}-{figure}");
            if several_units(experiment, figure) {
                name = format!("{name}-{}", slug(unit));
            }
            build(name, experiment, figure, unit, &rows)
        })
        .collect()
}

fn build(name: String, experiment: &str, figure: &str, unit: &str, rows: &[&Record]) -> Figure {
    let line = |r: &Record| format!("{} {}", r.structure, r.operation);
    let spans = |value: &dyn Fn(&Record) -> Option<u64>| {
        distinct(rows.iter().map(|r| line(r)))
            .iter()
            .any(|l| distinct(rows.iter().filter(|r| &line(r) == l).map(|r| value(r))).len() > 1)
    };
    let axis = if rows.iter().any(|r| r.x.is_some()) {
        Axis::X
    } else if spans(&|r| Some(r.n)) {
        Axis::LogN
    } else if spans(&|r| r.load.map(f64::to_bits)) {
        Axis::Load
    } else {
        Axis::Operation
    };
    let categories = if axis == Axis::Operation {
        distinct(rows.iter().map(|r| r.operation.clone()))
    } else {
        Vec::new()
    };
    let x_of = |r: &Record| match axis {
        Axis::X => r.x.unwrap_or(0.0),
        Axis::LogN => (r.n.max(1) as f64).log2(),
        Axis::Load => r.load.unwrap_or(0.0),
        Axis::Operation => categories
            .iter()
            .position(|c| c == &r.operation)
            .unwrap_or(0) as f64,
    };
    let key = |r: &Record| match axis {
        Axis::Operation => r.structure.clone(),
        _ => line(r),
    };
    let mut series: Vec<Series> = distinct(rows.iter().map(|r| key(r)))
        .into_iter()
        .map(|k| Series {
            points: rows
                .iter()
                .filter(|r| key(r) == k)
                .map(|r| (x_of(r), r.rate))
                .collect(),
            name: k,
            baseline: false,
        })
        .collect();
    let with_baseline: Vec<&&Record> = rows.iter().filter(|r| r.baseline_rate.is_some()).collect();
    for label in distinct(with_baseline.iter().filter_map(|r| r.baseline.clone())) {
        let of_label: Vec<&&&Record> = with_baseline
            .iter()
            .filter(|r| r.baseline.as_deref() == Some(label.as_str()))
            .collect();
        let mut keys = distinct(of_label.iter().map(|r| key(r)));
        let points_of = |k: &String| -> Vec<(f64, f64)> {
            of_label
                .iter()
                .filter(|r| &key(r) == k)
                .filter_map(|r| r.baseline_rate.map(|b| (x_of(r), b)))
                .collect()
        };
        // One comparison point shared by every line (a bulk rebuild, a limit) is one
        // series: its points, once each.
        let all: Vec<(f64, f64)> = distinct(keys.iter().flat_map(points_of));
        let xs = distinct(all.iter().map(|p| p.0.to_bits()));
        if keys.len() > 1 && xs.len() == all.len() {
            series.push(Series {
                name: label.clone(),
                baseline: true,
                points: all,
            });
            keys.clear();
        }
        for k in &keys {
            let name = if keys.len() > 1 && axis != Axis::Operation {
                format!("{label} ({k})")
            } else {
                label.clone()
            };
            series.push(Series {
                name,
                baseline: true,
                points: of_label
                    .iter()
                    .filter(|r| &key(r) == k)
                    .filter_map(|r| r.baseline_rate.map(|b| (x_of(r), b)))
                    .collect(),
            });
        }
    }
    let x_label = match axis {
        Axis::X => x_label(experiment, figure).to_string(),
        Axis::LogN => "log2 n".to_string(),
        Axis::Load => "load factor (memory utilization)".to_string(),
        Axis::Operation => "operation".to_string(),
    };
    let title = if figure == "summary" {
        format!(
            "{experiment}: {}",
            rows.first().map_or("", |r| r.gpu.as_str())
        )
    } else {
        format!(
            "{experiment} {figure}: {}",
            rows.first().map_or("", |r| r.gpu.as_str())
        )
    };
    Figure {
        name,
        title,
        x_label,
        y_label: unit.to_string(),
        categories,
        series,
    }
}

/// The figure as SVG text.
pub fn draw(figure: &Figure) -> Result<String, String> {
    let mut svg = String::new();
    draw_into(figure, &mut svg).map_err(|e| format!("{}: {e}", figure.name))?;
    Ok(svg)
}

fn draw_into(figure: &Figure, svg: &mut String) -> Result<(), Box<dyn std::error::Error>> {
    let points = || figure.series.iter().flat_map(|s| s.points.iter().copied());
    let (mut x0, mut x1, mut y1) = (f64::MAX, f64::MIN, 0.0f64);
    for (x, y) in points() {
        (x0, x1, y1) = (x0.min(x), x1.max(x), y1.max(y));
    }
    if x0 > x1 {
        (x0, x1) = (0.0, 1.0);
    }
    let pad = ((x1 - x0) * 0.05).max(0.5);
    let (x0, x1) = (x0 - pad, x1 + pad);
    let y1 = if y1 > 0.0 { y1 * 1.1 } else { 1.0 };
    let root = SVGBackend::with_string(svg, (800, 480)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(&figure.title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(65)
        .build_cartesian_2d(x0..x1, 0.0..y1)?;
    let categories = figure.categories.clone();
    let x_format = move |x: &f64| {
        if categories.is_empty() {
            format!("{x:.2}")
        } else if (x - x.round()).abs() < 1e-9 && *x >= 0.0 {
            categories.get(*x as usize).cloned().unwrap_or_default()
        } else {
            String::new()
        }
    };
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(figure.x_label.as_str())
        .y_desc(figure.y_label.as_str())
        .x_label_formatter(&x_format);
    if !figure.categories.is_empty() {
        mesh.x_labels(figure.categories.len() * 2 + 1);
    }
    mesh.draw()?;
    let bars = !figure.categories.is_empty();
    let width = 0.8 / figure.series.len().max(1) as f64;
    for (i, s) in figure.series.iter().enumerate() {
        let style = ShapeStyle {
            color: Palette99::pick(i).to_rgba(),
            filled: true,
            stroke_width: 2,
        };
        let xs = distinct(s.points.iter().map(|p| p.0.to_bits()));
        let joined = xs.len() == s.points.len() && s.points.len() > 1;
        let mut sorted = s.points.clone();
        sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
        let legend = move |(x, y): (i32, i32)| PathElement::new(vec![(x, y), (x + 20, y)], style);
        let drawn = if bars {
            let left = -0.4 + i as f64 * width;
            let fill = ShapeStyle {
                filled: !s.baseline,
                ..style
            };
            chart.draw_series(s.points.iter().map(|&(x, y)| {
                Rectangle::new([(x + left, 0.0), (x + left + width * 0.9, y)], fill)
            }))?;
            chart.draw_series(std::iter::empty::<PathElement<(f64, f64)>>())?
        } else if s.baseline {
            chart.draw_series(
                sorted
                    .iter()
                    .map(|&(x, y)| Cross::new((x, y), 5, style.stroke_width(2))),
            )?;
            if joined {
                chart.draw_series(DashedLineSeries::new(sorted, 6, 4, style))?;
            }
            chart.draw_series(std::iter::empty::<PathElement<(f64, f64)>>())?
        } else {
            chart.draw_series(sorted.iter().map(|&(x, y)| Circle::new((x, y), 3, style)))?;
            if joined {
                chart.draw_series(LineSeries::new(sorted, style))?;
            }
            chart.draw_series(std::iter::empty::<PathElement<(f64, f64)>>())?
        };
        drawn.label(s.name.as_str()).legend(legend);
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(SeriesLabelPosition::LowerRight)
        .draw()?;
    root.present()?;
    Ok(())
}

/// Draws every figure of `records` into `dir` (created if need be); returns the files.
pub fn write_all(records: &[Record], dir: &Path) -> Result<Vec<PathBuf>, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let mut written = Vec::new();
    for figure in figures(records) {
        let path = dir.join(format!("{}.svg", figure.name));
        std::fs::write(&path, draw(&figure)?)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}
