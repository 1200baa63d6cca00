//! The host link, the physical limit of every placement that keeps the table in host
//! memory: pinned copy bandwidth in each direction, measured in the run, and the time a
//! tiered call's copies need over it at that bandwidth (its floor).

use gpuds_core::Result;
use gpuds_oversub::TableStats;

use super::NAME;
use crate::bench::Bench;
use crate::report::{bytes_label, Row, Unit};
use crate::timing::{time_once, Timing};

/// Bytes of each test copy: a few hundred MB, far above L2 and the copy engines' start-up.
const COPY_BYTES: usize = 256 << 20;
/// Copies per direction; the fastest counts (the link's capability, not its noise).
const TRIES: usize = 3;

/// Pinned copy bandwidth over the host link, in GB/s (10^9 bytes per second, one way).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Link {
    /// Host to device.
    pub htod: f64,
    /// Device to host.
    pub dtoh: f64,
}

/// Measures [`Link`] with pinned host memory allocated as the tiered placement's home
/// (page-locked, not write-combined), and its two rows.
pub(super) fn measure(bench: &mut Bench) -> Result<(Link, Vec<Row>)> {
    let gpu = bench.gpu.clone();
    let stream = gpu.stream().clone();
    let words = COPY_BYTES / 4;
    // SAFETY: a plain pinned allocation; every word is written below before a copy
    // reads it.
    let mut host = unsafe { gpu.context().alloc_pinned_with_flags::<u32>(words, 0) }?;
    let p = host.as_mut_ptr()?;
    for i in 0..words {
        // SAFETY: i < words, the allocation's length; nothing else uses it yet.
        unsafe { p.add(i).write((i as u32).wrapping_mul(0x9e37_79b9) | 1) };
    }
    let mut device = bench.random_words(words, 0x11_4e)?;
    let (mut htod, mut dtoh) = (Vec::new(), Vec::new());
    for _ in 0..TRIES {
        htod.push(time_once(&gpu, || {
            Ok(stream.memcpy_htod(&host, &mut device)?)
        })?);
        dtoh.push(time_once(&gpu, || {
            Ok(stream.memcpy_dtoh(&device, &mut host)?)
        })?);
    }
    gpu.synchronize()?;
    let (htod_ms, dtoh_ms) = (fastest(&htod), fastest(&dtoh));
    let link = Link {
        htod: gb_per_s(COPY_BYTES as u64, htod_ms),
        dtoh: gb_per_s(COPY_BYTES as u64, dtoh_ms),
    };
    let row = |name: &str, ms: f64, all: &[f64]| {
        Row::new(
            NAME,
            name,
            COPY_BYTES as u64,
            Timing::once(ms),
            COPY_BYTES as f64,
            Unit::GigabytesPerSecond,
        )
        .with_structure("host link")
        .with_operation("copy")
        .with_note(format!(
            "fastest of {TRIES} copies of {} (bytes copied one way), pinned host memory; all: {}",
            bytes_label(COPY_BYTES),
            all.iter()
                .map(|t| format!("{t:.2} ms"))
                .collect::<Vec<_>>()
                .join(", ")
        ))
    };
    let rows = vec![
        row("host link, pinned host to device", htod_ms, &htod),
        row("host link, device to pinned host", dtoh_ms, &dtoh),
    ];
    Ok((link, rows))
}

fn fastest(ms: &[f64]) -> f64 {
    ms.iter().copied().fold(f64::INFINITY, f64::min)
}

fn gb_per_s(bytes: u64, ms: f64) -> f64 {
    bytes as f64 / (ms * 1e-3) / 1e9
}

/// What one call of a tiered table moved over the host link: the difference of its
/// `stats()` before and after.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct Moved {
    /// Inner tables copied in and written back.
    pub tables_in: u64,
    /// Inner tables written back.
    pub tables_out: u64,
    /// Bytes copied in.
    pub bytes_in: u64,
    /// Bytes written back.
    pub bytes_out: u64,
    /// Bytes over the link in all, as the table counts them.
    pub bytes: u64,
}

impl Moved {
    /// The copies between `before` and `after`, stats of one tiered table (its inner
    /// tables all of one size: its home bytes over its inner tables).
    pub fn between(before: &TableStats, after: &TableStats) -> Moved {
        let inner = after.host_bytes.checked_div(after.containers).unwrap_or(0);
        let tables_in = after.moved_in - before.moved_in;
        let tables_out = after.moved_out - before.moved_out;
        Moved {
            tables_in,
            tables_out,
            bytes_in: tables_in * inner,
            bytes_out: tables_out * inner,
            bytes: after.link_bytes - before.link_bytes,
        }
    }

    /// Milliseconds the copies need at least at `link`'s bandwidth (copies in and
    /// write-backs one after the other, as one stream orders them).
    pub fn floor_ms(&self, link: Link) -> f64 {
        (self.bytes_in as f64 / (link.htod * 1e9) + self.bytes_out as f64 / (link.dtoh * 1e9)) * 1e3
    }

    /// The note of a call of `ops` operations that took `ms`: bytes per operation over
    /// the link, and the floor they imply next to the measured bandwidth.
    pub fn note(&self, ops: usize, ms: f64, link: Option<Link>) -> String {
        let per_op = self.bytes as f64 / ops.max(1) as f64;
        let moved = format!(
            "link {per_op:.1} B/op ({} tables in, {} out)",
            self.tables_in, self.tables_out
        );
        match link {
            Some(l) => {
                let floor = self.floor_ms(l);
                format!(
                    "{moved}: floor {floor:.2} ms at {:.1} / {:.1} GB/s in / out, {:.0} % of the call",
                    l.htod,
                    l.dtoh,
                    100.0 * floor / ms
                )
            }
            None => format!("{moved}; link bandwidth not measured"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(moved_in: u64, moved_out: u64, containers: u64) -> TableStats {
        TableStats {
            host_bytes: containers << 20,
            containers,
            moved_in,
            moved_out,
            link_bytes: (moved_in + moved_out) << 20,
            ..Default::default()
        }
    }

    #[test]
    fn moved_bytes_and_floor() {
        let m = Moved::between(&stats(2, 1, 4), &stats(10, 5, 8));
        assert_eq!((m.tables_in, m.tables_out), (8, 4));
        assert_eq!(
            (m.bytes_in, m.bytes_out, m.bytes),
            (8 << 20, 4 << 20, 12 << 20)
        );
        let link = Link {
            htod: 50.0,
            dtoh: 25.0,
        };
        let want = (8.0 * 1048576.0 / 50e9 + 4.0 * 1048576.0 / 25e9) * 1e3;
        assert!((m.floor_ms(link) - want).abs() < 1e-12);
        let note = m.note(1 << 20, 2.0 * want, Some(link));
        assert!(
            note.starts_with("link 12.0 B/op (8 tables in, 4 out)"),
            "{note}"
        );
        assert!(note.ends_with("50 % of the call"), "{note}");
        assert!(m.note(1, 1.0, None).ends_with("not measured"));
        assert_eq!(
            Moved::between(&TableStats::default(), &TableStats::default()),
            Moved::default()
        );
    }

    #[test]
    fn bandwidth() {
        assert_eq!(fastest(&[3.0, 1.5, 2.0]), 1.5);
        assert!((gb_per_s(1_000_000_000, 20.0) - 50.0).abs() < 1e-9);
    }
}
