//! `gpuds-bench compare OLD NEW`: every figure present in both saved runs, with the ratio
//! NEW/OLD of its rate, flagged where it moved more than a threshold.
//!
//! Figures are matched by experiment, measurement, key and value types and size; when a
//! run holds several rows with the same key (a sweep timed twice), the k-th of OLD is
//! matched with the k-th of NEW.

use std::collections::HashMap;

use crate::report::table::rate_label;
use crate::report::{size_label, Record, Unit};

/// One figure present in both runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    /// The experiment.
    pub experiment: String,
    /// The measurement.
    pub measurement: String,
    /// Key and value types, e.g. `u32/u32`.
    pub types: String,
    /// The size.
    pub n: u64,
    /// The unit of both rates.
    pub unit: String,
    /// OLD's rate.
    pub old: f64,
    /// NEW's rate.
    pub new: f64,
    /// NEW / OLD (infinite when OLD is zero).
    pub ratio: f64,
}

/// Two runs set side by side.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    /// Figures in both, in NEW's order.
    pub lines: Vec<Line>,
    /// How many of OLD's figures NEW lacks.
    pub only_old: usize,
    /// How many of NEW's figures OLD lacks.
    pub only_new: usize,
    /// The threshold for flagging a move, as a fraction (0.05 is 5 %).
    pub threshold: f64,
}

/// Matches the figures of `old` and `new`.
pub fn compare(old: &[Record], new: &[Record], threshold: f64) -> Comparison {
    let mut olds: HashMap<_, Vec<&Record>> = HashMap::new();
    for r in old {
        olds.entry(r.key()).or_default().push(r);
    }
    let mut used: HashMap<_, usize> = HashMap::new();
    let mut lines = Vec::new();
    for r in new {
        let key = r.key();
        let k = used.entry(key.clone()).or_default();
        if let Some(o) = olds.get(&key).and_then(|v| v.get(*k)) {
            *k += 1;
            lines.push(Line {
                experiment: r.experiment.clone(),
                measurement: r.measurement.clone(),
                types: format!("{}/{}", r.key_type, r.value_type),
                n: r.n,
                unit: r.unit.clone(),
                old: o.rate,
                new: r.rate,
                ratio: if o.rate > 0.0 {
                    r.rate / o.rate
                } else {
                    f64::INFINITY
                },
            });
        }
    }
    Comparison {
        only_old: old.len() - lines.len(),
        only_new: new.len() - lines.len(),
        lines,
        threshold,
    }
}

impl Line {
    /// Whether the figure moved more than `threshold` either way.
    pub fn moved(&self, threshold: f64) -> bool {
        (self.ratio - 1.0).abs() > threshold
    }
}

impl Comparison {
    /// The figures whose ratio is below `ratio`.
    pub fn below(&self, ratio: f64) -> Vec<&Line> {
        self.lines.iter().filter(|l| l.ratio < ratio).collect()
    }

    /// A Markdown table of every matched figure, moves flagged, and a summary line.
    pub fn render(&self) -> String {
        let mut out = String::from(
            "| experiment | measurement | types | n | old | new | unit | new/old | moved |\n\
             | --- | --- | --- | ---: | ---: | ---: | --- | ---: | --- |\n",
        );
        let unit = |label: &str| match label {
            "GB/s" => Unit::GigabytesPerSecond,
            _ => Unit::GigaQueriesPerSecond,
        };
        let mut moved = 0;
        for l in &self.lines {
            let flag = if !l.moved(self.threshold) {
                ""
            } else if l.ratio > 1.0 {
                "up"
            } else {
                "DOWN"
            };
            moved += usize::from(!flag.is_empty());
            out += &format!(
                "| {} | {} | {} | {} | {} | {} | {} | {:.3} | {flag} |\n",
                l.experiment,
                l.measurement,
                l.types,
                size_label(l.n),
                rate_label(l.old, unit(&l.unit)),
                rate_label(l.new, unit(&l.unit)),
                l.unit,
                l.ratio,
            );
        }
        out += &format!(
            "\n{} figures in both, {moved} moved more than {:.1} %; {} only in OLD, {} only in NEW\n",
            self.lines.len(),
            100.0 * self.threshold,
            self.only_old,
            self.only_new
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::records::records;

    #[test]
    fn ratios_moves_and_unmatched_rows() {
        let old = records(&crate::report::tests::sample());
        let mut new = old.clone();
        new[0].rate *= 1.5;
        new[1].rate *= 0.98;
        new.push(Record {
            measurement: "new only".into(),
            ..new[0].clone()
        });
        let c = compare(&old[..1], &new, 0.05);
        assert_eq!((c.lines.len(), c.only_old, c.only_new), (1, 0, 2));
        let c = compare(&old, &new, 0.05);
        assert_eq!((c.lines.len(), c.only_old, c.only_new), (2, 0, 1));
        assert!((c.lines[0].ratio - 1.5).abs() < 1e-12);
        assert!((c.lines[1].ratio - 0.98).abs() < 1e-12);
        assert!(c.lines[0].moved(0.05) && !c.lines[1].moved(0.05));
        assert_eq!(c.below(0.99).len(), 1);
        let text = c.render();
        assert!(text.contains("| 1.500 | up |") && text.contains("| 0.980 |  |"));
        assert!(text.contains("2 figures in both, 1 moved more than 5.0 %"));
    }
}
