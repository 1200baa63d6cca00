//! A minimal SVG line chart, so that the figures of the slab hash paper can be looked at
//! without a plotting tool: axes with a few ticks, one polyline and legend entry per
//! series, an optional logarithmic y axis.

use std::fmt::Write;
use std::path::PathBuf;

/// One named line of (x, y) points.
pub struct Series {
    /// The legend text.
    pub name: String,
    /// The points, in drawing order.
    pub points: Vec<(f64, f64)>,
}

impl Series {
    /// A line with no points yet.
    pub fn new(name: impl Into<String>) -> Self {
        Series {
            name: name.into(),
            points: Vec::new(),
        }
    }
}

const W: f64 = 640.0;
const H: f64 = 400.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 170.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 50.0;
const COLORS: [&str; 6] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
];

/// The chart as SVG text.
pub fn line_chart(
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
    log_y: bool,
) -> String {
    let all = || series.iter().flat_map(|s| s.points.iter().copied());
    let fy = |y: f64| if log_y { y.max(1e-12).log10() } else { y };
    let (mut x0, mut x1) = (f64::MAX, f64::MIN);
    let (mut y0, mut y1) = (f64::MAX, f64::MIN);
    for (x, y) in all() {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y0 = y0.min(fy(y));
        y1 = y1.max(fy(y));
    }
    if x0 > x1 {
        (x0, x1, y0, y1) = (0.0, 1.0, 0.0, 1.0);
    }
    if !log_y {
        y0 = y0.min(0.0);
    }
    if x1 - x0 < 1e-12 {
        x1 = x0 + 1.0;
    }
    if y1 - y0 < 1e-12 {
        y1 = y0 + 1.0;
    }
    let px = |x: f64| LEFT + (x - x0) / (x1 - x0) * (W - LEFT - RIGHT);
    let py = |y: f64| H - BOTTOM - (fy(y) - y0) / (y1 - y0) * (H - TOP - BOTTOM);
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(s, r#"<rect width="{W}" height="{H}" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="20" font-size="14">{}</text>"#,
        LEFT,
        escape(title)
    );
    let (bx, by) = (H - BOTTOM, W - RIGHT);
    let _ = writeln!(
        s,
        r#"<path d="M{LEFT},{TOP} V{bx} H{by}" stroke="black" fill="none"/>"#
    );
    for i in 0..=4 {
        let t = i as f64 / 4.0;
        let x = x0 + t * (x1 - x0);
        let yv = y0 + t * (y1 - y0);
        let y_text = if log_y { 10f64.powf(yv) } else { yv };
        let (tx, ty) = (
            LEFT + t * (W - LEFT - RIGHT),
            H - BOTTOM - t * (H - TOP - BOTTOM),
        );
        let _ = writeln!(
            s,
            r#"<text x="{tx}" y="{}" text-anchor="middle">{}</text>"#,
            bx + 15.0,
            tick(x)
        );
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="end">{}</text>"#,
            LEFT - 5.0,
            ty + 4.0,
            tick(y_text)
        );
        let _ = writeln!(s, r##"<path d="M{LEFT},{ty} H{by}" stroke="#ddd"/>"##);
    }
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
        (LEFT + W - RIGHT) / 2.0,
        H - 10.0,
        escape(x_label)
    );
    let _ = writeln!(
        s,
        r#"<text x="15" y="{}" transform="rotate(-90 15 {})" text-anchor="middle">{}{}</text>"#,
        H / 2.0,
        H / 2.0,
        escape(y_label),
        if log_y { " (log)" } else { "" }
    );
    for (i, ser) in series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let pts: Vec<String> = ser
            .points
            .iter()
            .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
            .collect();
        let _ = writeln!(
            s,
            r#"<polyline points="{}" stroke="{color}" fill="none" stroke-width="2"/>"#,
            pts.join(" ")
        );
        for &(x, y) in &ser.points {
            let _ = writeln!(
                s,
                r#"<circle cx="{:.1}" cy="{:.1}" r="2.5" fill="{color}"/>"#,
                px(x),
                py(y)
            );
        }
        let ly = TOP + 15.0 * i as f64;
        let _ = writeln!(
            s,
            r#"<path d="M{},{ly} h20" stroke="{color}" stroke-width="2"/>"#,
            W - RIGHT + 10.0
        );
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}">{}</text>"#,
            W - RIGHT + 35.0,
            ly + 4.0,
            escape(&ser.name)
        );
    }
    s.push_str("</svg>\n");
    s
}

/// Writes `svg` as `<dir>/<name>.svg`, `<dir>` from `GPUDS_PLOT_DIR` (default
/// `gpuds-plots`); returns the path, or why it could not be written.
pub fn save(name: &str, svg: &str) -> Result<PathBuf, String> {
    let dir =
        PathBuf::from(std::env::var("GPUDS_PLOT_DIR").unwrap_or_else(|_| "gpuds-plots".into()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let path = dir.join(format!("{name}.svg"));
    std::fs::write(&path, svg).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

fn tick(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if a >= 1e3 {
        format!("{:.0}k", v / 1e3)
    } else if a >= 10.0 || a == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

fn escape(t: &str) -> String {
    t.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chart_has_its_series_and_labels() {
        let s = line_chart(
            "fig <4>",
            "utilization",
            "G ops/s",
            &[
                Series {
                    name: "build".into(),
                    points: vec![(0.2, 5.0), (0.6, 9.0)],
                },
                Series {
                    name: "search".into(),
                    points: vec![(0.2, 12.0), (0.6, 14.0)],
                },
            ],
            true,
        );
        assert!(s.starts_with("<svg") && s.ends_with("</svg>\n"));
        assert_eq!(s.matches("<polyline").count(), 2);
        assert!(s.contains("fig &lt;4&gt;") && s.contains("(log)") && s.contains(">search<"));
        // An empty chart still renders.
        assert!(line_chart("empty", "x", "y", &[], false).contains("</svg>"));
    }
}
