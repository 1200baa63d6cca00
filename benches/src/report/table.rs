//! The report as a Markdown table, padded so it reads well in a terminal too and can be
//! pasted into the README as it is.

use super::{bytes_label, size_label, Report, Row, Unit};

const COLUMNS: [&str; 9] = [
    "experiment",
    "measurement",
    "size",
    "median ms",
    "spread",
    "rate",
    "unit",
    "x of baseline",
    "note",
];

/// The header lines and the table.
pub fn render(report: &Report) -> String {
    let h = &report.header;
    let mut out = format!(
        "gpuds-bench {} · {} · {}\n\
         device: {} ({}), {} SMs, {} memory ({} free at start), L2 {}, {}\n\
         timing: CUDA events, median of {} after a warm-up, fresh random inputs, L2 evicted \
         before each repetition\n\n",
        h.experiments.join(" "),
        h.utc,
        super::COMMIT,
        h.device,
        h.arch,
        h.sm_count,
        bytes_label(h.memory_bytes),
        bytes_label(h.free_bytes),
        bytes_label(h.l2_bytes),
        h.driver,
        h.reps,
    );
    let cells: Vec<[String; 9]> = report.rows.iter().map(cells).collect();
    let mut widths = COLUMNS.map(str::len);
    for row in &cells {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |values: &[String; 9]| {
        let mut s = String::from("|");
        for (i, (v, w)) in values.iter().zip(widths).enumerate() {
            let pad = w - v.chars().count();
            // Numbers are right-aligned, text left-aligned.
            if (2..=5).contains(&i) {
                s += &format!(" {}{} |", " ".repeat(pad), v);
            } else {
                s += &format!(" {}{} |", v, " ".repeat(pad));
            }
        }
        s + "\n"
    };
    out += &line(&COLUMNS.map(String::from));
    out += &line(&widths.map(|w| "-".repeat(w)));
    for row in &cells {
        out += &line(row);
    }
    out
}

fn cells(row: &Row) -> [String; 9] {
    let baseline = match (&row.baseline, row.ratio()) {
        (Some(b), Some(r)) => format!("{r:.2} of {} ({})", b.label, rate_label(b.rate, row.unit)),
        _ => String::new(),
    };
    [
        row.experiment.clone(),
        row.name.clone(),
        size_label(row.size),
        format!("{:.3}", row.timing.median_ms),
        format!("{:.1}%", 100.0 * row.timing.spread()),
        rate_label(row.rate, row.unit),
        row.unit.label().to_string(),
        baseline,
        row.note.clone(),
    ]
}

/// Bandwidths as whole GB/s with separators, other rates with two decimals.
pub fn rate_label(rate: f64, unit: Unit) -> String {
    match unit {
        Unit::GigabytesPerSecond => size_label(rate.round().max(0.0) as u64),
        _ => format!("{rate:.2}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_header_and_aligned_rows() {
        let text = render(&crate::report::tests::sample());
        assert!(text.contains("NVIDIA \"Test\" GPU (sm_90), 132 SMs, 80.0 GiB memory"));
        assert!(text.contains("median of 3"));
        let rows: Vec<&str> = text.lines().filter(|l| l.starts_with('|')).collect();
        assert_eq!(rows.len(), 4);
        assert!(rows
            .iter()
            .all(|r| r.chars().count() == rows[0].chars().count()));
        assert!(rows[2].contains("2,000"));
        assert!(rows[3].contains("64.00") && rows[3].contains("0.20 of copy / 36 B, key (320.00)"));
        assert!(rows[3].contains("sized down"));
    }
}
