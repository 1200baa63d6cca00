//! The beyond-GPU-memory run: a range table in the `Tiered` placement whose inner tables
//! total 1.1 times the GPU's whole memory, filled with a DU sequence (every key of
//! `[1, n]`, shuffled within blocks) and searched for every key, on the lent GPU.
//!
//! Sizing. Every range of RNG = 2^20 keys gets an inner table of 2^(21 + s) eight-byte
//! slots (16 MiB << s: load factor 0.5 / 2^s, exact powers of two, so no rounding); the
//! smallest `s` whose inner tables, one per range of the 32-bit key space, can reach
//! 1.1x the memory is taken (the key space holds 4,096 ranges: at load 0.5 a full table
//! is 64 GiB, less than an H200's memory, so there `s` is 2: 64 MiB per inner table,
//! load 0.125). Then `ranges = ceil(1.1 × memory / inner)` and the sequence holds
//! `n = ranges × 2^20 − 1` keys, which open exactly those ranges (on an H200, about
//! 2,450 ranges, 2.6×10^9 keys, 153 GiB of inner tables).
//!
//! Safety. The table's home is pinned host memory, so the run needs the inner tables,
//! the keys and values (8 bytes per key) and one batch of answers, plus 20 %, free on
//! the host (`MemAvailable`, and the cgroup's limit when there is one); otherwise a row
//! says that it was skipped and why. The device cache takes the free device memory less
//! a reserve for one batch of 2^28 keys (keys, values or positions, the sort's second
//! buffers and the answers: 32 bytes per key) and 4 GiB; nothing else is allocated on
//! the device. A pinned allocation that fails anyway ends the run with a skipped row.

use gpuds_core::Result;
use gpuds_oversub::workload::{values, Sequence, KEY_MAX};
use gpuds_oversub::{Placement, RangeTable, RangeTableConfig};

use super::link::{Link, Moved};
use super::{err, row, skipped, wrong_answers, SEED};
use crate::bench::Bench;
use crate::report::{bytes_label, Row};
use crate::timing::time_once;

/// `--keys` from which the plan is this run alone.
pub(super) const HUGE_KEYS: u64 = 1 << 31;
/// Keys per batch (GBS): small enough that a batch's buffers leave the cache room.
const BATCH: usize = 1 << 28;
/// Device bytes per key of a batch besides the cache.
const BATCH_BYTES_PER_KEY: u64 = 32;
/// Device bytes kept free beyond the batch.
const DEVICE_MARGIN: u64 = 4 << 30;
/// Host bytes per key of a batch of answers (`Option<u32>`, and the table's found
/// flags and values).
const ANSWER_BYTES_PER_KEY: u64 = 16;
const RANGE_BITS: u32 = 20;

const INSERT: &str = "beyond GPU memory insert, DU, tiered";
const SEARCH: &str = "beyond GPU memory search, DU, tiered";

/// The table of a run on a device of some memory.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Size {
    load_factor: f64,
    inner_bytes: u64,
    ranges: u64,
    keys: u64,
}

impl Size {
    /// Bytes of all inner tables.
    fn structure(&self) -> u64 {
        self.ranges * self.inner_bytes
    }

    /// Host bytes the run needs, with the 20 % margin.
    fn host_need(&self) -> u64 {
        let bytes = self.structure() + 8 * self.keys + ANSWER_BYTES_PER_KEY * BATCH as u64;
        bytes + bytes / 5
    }
}

/// The size for a device of `memory` bytes (see the module documentation); `None` if
/// no inner table size of the key space reaches 1.1x it.
fn size_for(memory: u64) -> Option<Size> {
    let target = memory + memory / 10;
    let max_ranges = 1u64 << (32 - RANGE_BITS);
    (0..16).find_map(|s| {
        let inner_bytes = (16u64 << 20) << s;
        let ranges = target.div_ceil(inner_bytes).max(1);
        (ranges <= max_ranges).then(|| Size {
            load_factor: 0.5 / (1u64 << s) as f64,
            inner_bytes,
            ranges,
            keys: ((ranges << RANGE_BITS) - 1).min(KEY_MAX as u64),
        })
    })
}

/// `MemAvailable` of a `/proc/meminfo` text, in bytes.
fn mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kb.checked_mul(1024)
}

/// Room left under a cgroup (v2) memory limit, from its `memory.max` and
/// `memory.current` texts; `None` when unlimited or unreadable.
fn cgroup_room(max: &str, current: &str) -> Option<u64> {
    let max: u64 = max.trim().parse().ok()?;
    let current: u64 = current.trim().parse().ok()?;
    Some(max.saturating_sub(current))
}

/// Host memory the run may take: `MemAvailable`, and no more than the cgroup's room.
fn host_room() -> Option<u64> {
    let available = mem_available(&std::fs::read_to_string("/proc/meminfo").ok()?)?;
    let read = |f: &str| std::fs::read_to_string(format!("/sys/fs/cgroup/{f}")).ok();
    let room = match (read("memory.max"), read("memory.current")) {
        (Some(max), Some(current)) => cgroup_room(&max, &current),
        _ => None,
    };
    Some(room.map_or(available, |r| r.min(available)))
}

/// The run's rows: insert and search rates, or a row saying why it was skipped.
pub(super) fn rows(bench: &mut Bench, link: Option<Link>) -> Result<Vec<Row>> {
    let gpu = bench.gpu.clone();
    let memory = gpu.info().total_memory as u64;
    let skip = |why: String| Ok(vec![skipped(INSERT.into(), why)]);
    let Some(size) = size_for(memory) else {
        return skip(format!(
            "no inner table size makes 1.1x the GPU's {} from 32-bit keys",
            bytes_label(memory as usize)
        ));
    };
    let structure = size.structure();
    match host_room() {
        None => return skip("the host's free memory is unknown".into()),
        Some(room) if room < size.host_need() => {
            return skip(format!(
                "it needs {} of host memory ({} of pinned inner tables for a GPU of {}, the keys, 20 % margin), {} is free",
                bytes_label(size.host_need() as usize),
                bytes_label(structure as usize),
                bytes_label(memory as usize),
                bytes_label(room as usize)
            ))
        }
        Some(_) => {}
    }
    let (free, _) = gpu.memory_info()?;
    let reserve = BATCH_BYTES_PER_KEY * BATCH as u64 + DEVICE_MARGIN;
    let slots = (free as u64).saturating_sub(reserve) / size.inner_bytes;
    if slots == 0 {
        return skip(format!(
            "{} of free device memory holds no inner table of {} beside a batch",
            bytes_label(free),
            bytes_label(size.inner_bytes as usize)
        ));
    }
    let config = RangeTableConfig {
        range_bits: RANGE_BITS,
        load_factor: size.load_factor,
        inner_keys: 0,
        batch: BATCH,
        placement: Placement::Tiered {
            device_budget_bytes: slots * size.inner_bytes,
        },
    };
    let n = size.keys as usize;
    let keys = Sequence::Du.keys(n, SEED);
    let vals = values(&keys, SEED);
    let mut table = RangeTable::with_config(&gpu, config).map_err(err)?;
    let shape = format!(
        "{} keys; {} of inner tables ({} of {}, load {}) = {:.2}x the GPU's {}; device cache {} ({slots} tables); home in pinned host memory, allocated and zeroed in the insert",
        n,
        bytes_label(structure as usize),
        size.ranges,
        bytes_label(size.inner_bytes as usize),
        size.load_factor,
        structure as f64 / memory as f64,
        bytes_label(memory as usize),
        bytes_label((slots * size.inner_bytes) as usize)
    );
    let before = table.stats();
    let mut inserted = Ok(());
    let insert_ms = time_once(&gpu, || {
        inserted = table.insert_many(&keys, &vals);
        Ok(())
    })?;
    match inserted {
        Ok(()) => {}
        Err(e @ gpuds_oversub::Error::HostAlloc { .. }) => {
            return skip(format!("the pinned home could not be allocated: {e}"))
        }
        Err(e) => return Err(err(e)),
    }
    let after_insert = table.stats();
    let live = table.len().map_err(err)?;
    let (mut search_ms, mut wrong) = (0.0, 0usize);
    for (k, v) in keys.chunks(BATCH).zip(vals.chunks(BATCH)) {
        let mut got = Vec::new();
        search_ms += time_once(&gpu, || {
            got = table.get_many(k).map_err(err)?;
            Ok(())
        })?;
        wrong += wrong_answers(k, v, k, &got);
    }
    let after_search = table.stats();
    let moved_insert = Moved::between(&before, &after_insert);
    let moved_search = Moved::between(&after_insert, &after_search);
    let check = |ok: bool, what: String| if ok { what } else { format!("WRONG: {what}") };
    Ok(vec![
        row(INSERT.into(), "RangeTable", n, insert_ms)
            .with_operation("insert")
            .with_note(format!(
                "{shape}; {}; {}; {}",
                check(live == n as u64, format!("{live} keys live")),
                check(
                    after_insert.containers == size.ranges && after_insert.host_bytes == structure,
                    format!(
                        "{} inner tables made, {} at home",
                        after_insert.containers,
                        bytes_label(after_insert.host_bytes as usize)
                    )
                ),
                moved_insert.note(n, insert_ms, link)
            )),
        row(SEARCH.into(), "RangeTable", n, search_ms)
            .with_operation("search")
            .with_note(format!(
                "{shape}; {}; {}",
                check(wrong == 0, format!("{wrong} answers differ")),
                moved_search.note(n, search_ms, link)
            )),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    #[test]
    fn sizes_pass_the_gpu_by_a_tenth() {
        // An H200 (about 140 GiB), an H100 (80 GiB), a small GPU.
        for memory in [150_000_000_000u64, 80 * GIB, 16 * GIB, 1 << 20] {
            let s = size_for(memory).unwrap();
            let target = memory + memory / 10;
            assert!(s.structure() >= target, "{memory}");
            assert!(s.structure() < target + s.inner_bytes, "{memory}");
            assert!(s.keys <= KEY_MAX as u64);
            // The keys 1..=n open exactly `ranges` ranges.
            assert_eq!((s.keys >> RANGE_BITS) + 1, s.ranges, "{memory}");
            // Inner tables of 2^20 keys at the load factor: 2^20 / load slots of 8 B.
            assert_eq!(
                ((1u64 << 20) as f64 / s.load_factor) as u64 * 8,
                s.inner_bytes
            );
        }
        let h200 = size_for(150_000_000_000).unwrap();
        assert_eq!((h200.inner_bytes, h200.load_factor), (64 << 20, 0.125));
        assert_eq!(h200.ranges, 2459);
        let h100 = size_for(80 * GIB).unwrap();
        assert_eq!((h100.inner_bytes, h100.ranges), (32 << 20, 2816));
        assert_eq!(size_for(16 * GIB).unwrap().load_factor, 0.5);
        // The whole key space at load 0.5 / 2^15 is 2^21 GiB: nothing reaches 1.1x of it.
        assert!(size_for(1 << 51).is_none());
    }

    #[test]
    fn the_key_space_bounds_the_keys() {
        // 4,096 ranges of 16 MiB: 64 GiB at load 0.5, the full key space.
        let s = size_for(58 * GIB).unwrap();
        assert_eq!((s.ranges, s.load_factor), (4084, 0.5));
        let s = size_for(60 * GIB).unwrap();
        assert_eq!(s.load_factor, 0.25);
        let full = Size {
            load_factor: 0.5,
            inner_bytes: 16 << 20,
            ranges: 4096,
            keys: KEY_MAX as u64,
        };
        assert_eq!((full.keys >> RANGE_BITS) + 1, 4096);
    }

    #[test]
    fn host_need_has_the_margin() {
        let s = size_for(150_000_000_000).unwrap();
        let bytes = s.structure() + 8 * s.keys + ANSWER_BYTES_PER_KEY * BATCH as u64;
        assert_eq!(s.host_need(), bytes + bytes / 5);
        assert!(s.host_need() > 180 * GIB && s.host_need() < 230 * GIB);
    }

    #[test]
    fn host_memory_texts() {
        let meminfo =
            "MemTotal:       263842504 kB\nMemFree:        1000 kB\nMemAvailable:   250000000 kB\n";
        assert_eq!(mem_available(meminfo), Some(250_000_000 * 1024));
        assert_eq!(mem_available("MemTotal: 5 kB\n"), None);
        assert_eq!(mem_available("MemAvailable: x kB\n"), None);
        assert_eq!(cgroup_room("max\n", "100\n"), None);
        assert_eq!(cgroup_room("1000\n", "300\n"), Some(700));
        assert_eq!(cgroup_room("1000", "3000"), Some(0));
    }
}
