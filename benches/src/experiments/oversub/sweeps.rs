//! Tables 6 and 7 of Patel et al. (2026): the range table's insert time as its batch
//! size (GBS) and its inner table size (RNG) vary, on the dense sequences the paper's
//! sensitivity study uses (MI and DU), host-mapped and tiered at 1.5x its device budget,
//! each as a ratio against the default configuration (GBS 10^9, RNG 2^20) measured in
//! the same case.
//!
//! The paper inserts 4×10^9 keys in batches of 5×10^7 to 1.25×10^9; here the batches
//! are the same fractions of the run's keys (n/80 to n/3.2), next to the default of 10^9
//! (one batch at these sizes). Its inner tables hold 2^12 to 2^26 keys, each sized for
//! its whole range (dense keys); so do these. A tiered row needs two inner tables or
//! more (a single one has nothing to oversubscribe): it is skipped otherwise.

use gpuds_core::Result;
use gpuds_oversub::workload::Sequence;
use gpuds_oversub::{Placement, RangeTable, RangeTableConfig};

use super::link::Link;
use super::{baseline, err, row, run_ops, skipped, tiered_at, Input, Measured, Op, LEVEL};
use crate::bench::Bench;
use crate::report::Row;

/// The paper's batch sizes (Table 6).
const PAPER_GBS: [f64; 5] = [5e7, 1e8, 5e8, 1e9, 1.25e9];
/// The keys the paper's sensitivity study inserts.
const PAPER_KEYS: f64 = 4e9;
/// Table 7's inner table sizes, as log2 keys.
const RNG_BITS: [u32; 7] = [12, 15, 18, 20, 22, 24, 26];

/// One configuration of a sweep.
#[derive(Clone, Debug, PartialEq)]
struct Point {
    label: String,
    config: RangeTableConfig,
}

/// Table 6's configurations for `n` keys, the default first.
fn gbs_points(n: usize) -> Vec<Point> {
    let default = RangeTableConfig::default();
    let mut points = vec![Point {
        label: format!("GBS {:e} (default)", default.batch as f64),
        config: default,
    }];
    for gbs in PAPER_GBS {
        let batch = ((n as f64 * gbs / PAPER_KEYS).ceil() as usize).max(1);
        points.push(Point {
            label: format!("GBS n/{} = {batch} (paper {gbs:e})", PAPER_KEYS / gbs),
            config: RangeTableConfig { batch, ..default },
        });
    }
    points
}

/// Table 7's configurations, the default first.
fn rng_points() -> Vec<Point> {
    let default = RangeTableConfig::default();
    let mut points = vec![Point {
        label: format!("RNG 2^{} (default)", default.range_bits),
        config: default,
    }];
    for bits in RNG_BITS.into_iter().filter(|&b| b != default.range_bits) {
        points.push(Point {
            label: format!("RNG 2^{bits}"),
            config: RangeTableConfig {
                range_bits: bits,
                ..default
            },
        });
    }
    points
}

/// Table 6 on sequence `s` of `n` keys.
pub(super) fn gbs_rows(
    bench: &mut Bench,
    s: Sequence,
    n: usize,
    link: Option<Link>,
) -> Result<Vec<Row>> {
    sweep(bench, "Table 6", s, n, &gbs_points(n), link)
}

/// Table 7 on sequence `s` of `n` keys.
pub(super) fn rng_rows(
    bench: &mut Bench,
    s: Sequence,
    n: usize,
    link: Option<Link>,
) -> Result<Vec<Row>> {
    sweep(bench, "Table 7", s, n, &rng_points(), link)
}

/// The insert of one configuration: host-mapped, and tiered when it oversubscribes.
struct Insert {
    host: Measured,
    containers: u64,
    tiered: Option<(Measured, u64)>,
}

/// Inserts `s` into a fresh table of each configuration of `points` (the first the
/// default), host-mapped and tiered at [`LEVEL`], and gives their rows.
fn sweep(
    bench: &mut Bench,
    table: &str,
    s: Sequence,
    n: usize,
    points: &[Point],
    link: Option<Link>,
) -> Result<Vec<Row>> {
    let gpu = bench.gpu.clone();
    let input = Input::new(s, n);
    let mut inserts = Vec::with_capacity(points.len());
    for p in points {
        let host_config = RangeTableConfig {
            placement: Placement::HostMapped,
            ..p.config
        };
        let (host, reference) = {
            let mut t = RangeTable::with_config(&gpu, host_config).map_err(err)?;
            let m = run_ops(&gpu, &mut t, &input, &[Op::Insert])?;
            (m, t.stats())
        };
        let tiered = match tiered_at(p.config, &reference, LEVEL) {
            None => None,
            Some((config, slots)) => {
                let mut t = RangeTable::with_config(&gpu, config).map_err(err)?;
                let m = run_ops(&gpu, &mut t, &input, &[Op::Insert])?;
                m.into_iter().next().map(|m| (m, slots))
            }
        };
        let Some(host) = host.into_iter().next() else {
            continue;
        };
        inserts.push(Insert {
            host,
            containers: reference.containers,
            tiered,
        });
    }
    let mut rows = Vec::new();
    let Some(default) = inserts.first() else {
        return Ok(rows);
    };
    let (base_host, base_tiered) = (default.host.ms, default.tiered.as_ref().map(|t| t.0.ms));
    let seq = s.name();
    for (i, (p, insert)) in points.iter().zip(&inserts).enumerate() {
        let name = format!("{table} insert, {seq}, {}", p.label);
        let h = &insert.host;
        let versus = |base: f64, ms: f64| {
            if i == 0 {
                "the default configuration, the baseline of this table".to_string()
            } else {
                format!("{:.2}x the default", base / ms)
            }
        };
        rows.push(
            row(format!("{name}, host-mapped"), "RangeTable", h.count, h.ms)
                .with_operation("insert")
                .with_baseline(if i == 0 {
                    None
                } else {
                    baseline("default configuration host-mapped, this run", n, base_host)
                })
                .with_note(h.flagged(format!(
                    "{}; {} inner tables",
                    versus(base_host, h.ms),
                    insert.containers
                ))),
        );
        let tiered_name = format!("{name}, tiered at {LEVEL}x");
        match &insert.tiered {
            None => rows.push(skipped(
                tiered_name,
                format!(
                    "{} inner table, nothing to oversubscribe",
                    insert.containers
                ),
            )),
            Some((t, slots)) => rows.push(
                row(tiered_name, "RangeTable", t.count, t.ms)
                    .with_operation("insert")
                    .with_baseline(match base_tiered {
                        Some(base) if i > 0 => {
                            baseline("default configuration tiered, this run", n, base)
                        }
                        _ => None,
                    })
                    .with_note(t.flagged(format!(
                        "{}; {:.2}x host-mapped; {slots} of {} inner tables on the device; {}",
                        match base_tiered {
                            Some(base) => versus(base, t.ms),
                            None => "the default has no tiered row".to_string(),
                        },
                        h.ms / t.ms,
                        insert.containers,
                        t.moved.note(t.count, t.ms, link)
                    ))),
            ),
        }
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_sizes_scale_the_papers() {
        let points = gbs_points(1 << 24);
        let labels: Vec<&str> = points.iter().map(|p| p.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "GBS 1e9 (default)",
                "GBS n/80 = 209716 (paper 5e7)",
                "GBS n/40 = 419431 (paper 1e8)",
                "GBS n/8 = 2097152 (paper 5e8)",
                "GBS n/4 = 4194304 (paper 1e9)",
                "GBS n/3.2 = 5242880 (paper 1.25e9)"
            ]
        );
        assert_eq!(points[0].config, RangeTableConfig::default());
        assert!(points.iter().all(|p| p.config.validate().is_ok()));
        assert!(gbs_points(1).iter().all(|p| p.config.batch >= 1));
    }

    #[test]
    fn inner_sizes_are_the_papers() {
        let points = rng_points();
        let mut bits: Vec<u32> = points.iter().map(|p| p.config.range_bits).collect();
        assert_eq!(bits[0], 20);
        assert_eq!(points[0].label, "RNG 2^20 (default)");
        bits.sort_unstable();
        assert_eq!(bits, RNG_BITS);
        for p in &points {
            assert!(p.config.validate().is_ok(), "{}", p.label);
            assert_eq!(p.config.keys_per_inner(), 1 << p.config.range_bits);
        }
    }
}
