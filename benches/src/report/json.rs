//! The report as JSON, written by hand: one object with the device and a list of rows.

use super::Report;

/// The JSON text (pretty enough to read, one row per line).
pub fn render(report: &Report) -> String {
    let h = &report.header;
    let experiments: Vec<String> = h.experiments.iter().map(|e| string(e)).collect();
    let mut out = format!(
        "{{\n  \"tool\": \"gpuds-bench\",\n  \"experiments\": [{}],\n  \"date\": {},\n  \
         \"device\": {{\"name\": {}, \"arch\": {}, \"sm_count\": {}, \"memory_bytes\": {}, \
         \"free_bytes\": {}, \"l2_bytes\": {}}},\n  \"reps\": {},\n  \"rows\": [",
        experiments.join(", "),
        string(&h.date),
        string(&h.device),
        string(&h.arch),
        h.sm_count,
        h.memory_bytes,
        h.free_bytes,
        h.l2_bytes,
        h.reps,
    );
    for (i, row) in report.rows.iter().enumerate() {
        let (baseline, baseline_rate) = match &row.baseline {
            Some(b) => (string(&b.label), number(b.rate)),
            None => ("null".to_string(), "null".to_string()),
        };
        out += if i == 0 { "\n    " } else { ",\n    " };
        out += &format!(
            "{{\"experiment\": {}, \"measurement\": {}, \"size\": {}, \"median_ms\": {}, \
             \"min_ms\": {}, \"max_ms\": {}, \"reps\": {}, \"rate\": {}, \"unit\": {}, \
             \"baseline\": {}, \"baseline_rate\": {}, \"ratio\": {}, \"note\": {}}}",
            string(&row.experiment),
            string(&row.name),
            row.size,
            number(row.timing.median_ms),
            number(row.timing.min_ms),
            number(row.timing.max_ms),
            row.timing.reps,
            number(row.rate),
            string(row.unit.label()),
            baseline,
            baseline_rate,
            row.ratio().map(number).unwrap_or_else(|| "null".into()),
            string(&row.note),
        );
    }
    out += "\n  ]\n}\n";
    out
}

/// A JSON string literal.
fn string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out += "\\\"",
            '\\' => out += "\\\\",
            '\n' => out += "\\n",
            '\r' => out += "\\r",
            '\t' => out += "\\t",
            c if (c as u32) < 0x20 => out += &format!("\\u{:04x}", c as u32),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A JSON number; NaN and infinities (which JSON lacks) become `null`.
fn number(x: f64) -> String {
    if x.is_finite() {
        format!("{x}")
    } else {
        "null".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_nulls() {
        assert_eq!(string("a\"b\\c\n\u{1}"), "\"a\\\"b\\\\c\\n\\u0001\"");
        assert_eq!(number(f64::NAN), "null");
        assert_eq!(number(2.5), "2.5");
        let text = render(&crate::report::tests::sample());
        assert!(text.contains("\"name\": \"NVIDIA \\\"Test\\\" GPU\""));
        assert!(text.contains("\"baseline\": null"));
        assert!(text.contains("\"ratio\": 0.2"));
        let opens = text.matches('{').count();
        assert_eq!(opens, text.matches('}').count());
    }
}
