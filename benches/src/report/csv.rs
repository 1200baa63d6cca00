//! The report as CSV: one line per row, with the device and date repeated on each line so
//! that files from several GPUs can be concatenated.

use super::{Report, Row};

const HEADER: &str = "date,device,arch,sm_count,memory_bytes,experiment,measurement,size,\
                      median_ms,min_ms,max_ms,reps,rate,unit,baseline,baseline_rate,ratio,note";

/// The CSV text, header line first.
pub fn render(report: &Report) -> String {
    let h = &report.header;
    let mut out = String::from(HEADER);
    out.push('\n');
    for row in &report.rows {
        let fields = [
            field(&h.date),
            field(&h.device),
            field(&h.arch),
            h.sm_count.to_string(),
            h.memory_bytes.to_string(),
            field(&row.experiment),
            field(&row.name),
            row.size.to_string(),
            row.timing.median_ms.to_string(),
            row.timing.min_ms.to_string(),
            row.timing.max_ms.to_string(),
            row.timing.reps.to_string(),
            row.rate.to_string(),
            field(row.unit.label()),
            baseline_fields(row).0,
            baseline_fields(row).1,
            row.ratio().map(|r| r.to_string()).unwrap_or_default(),
            field(&row.note),
        ];
        out += &fields.join(",");
        out.push('\n');
    }
    out
}

fn baseline_fields(row: &Row) -> (String, String) {
    match &row.baseline {
        Some(b) => (field(&b.label), b.rate.to_string()),
        None => (String::new(), String::new()),
    }
}

/// RFC 4180 quoting: fields with a comma, quote or line break are quoted, quotes doubled.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_and_columns() {
        let text = render(&crate::report::tests::sample());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[1].contains("\"NVIDIA \"\"Test\"\" GPU\""));
        assert!(lines[2].contains("\"copy / 36 B, key\",320,0.2"));
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("plain"), "plain");
    }
}
