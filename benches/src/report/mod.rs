//! What a run produces: rows of rates under a header that names the device, printed as
//! a table ([`table`]) and written as serde [`Record`]s to CSV or JSON ([`records`]).

pub mod records;
pub mod table;

use gpuds_core::Gpu;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use crate::timing::Timing;

pub use records::Record;

/// Now in UTC, RFC 3339 to the second, e.g. `2026-11-21T13:03:49Z`.
pub fn utc_now() -> String {
    let now = OffsetDateTime::now_utc();
    let now = now.replace_nanosecond(0).unwrap_or(now);
    now.format(&Rfc3339)
        .unwrap_or_else(|_| "unknown".to_string())
}

/// The CUDA driver's API version, e.g. `CUDA 13.0`, or `unknown`.
pub fn driver_version() -> String {
    let mut version = 0;
    // SAFETY: cuDriverGetVersion writes one int; it needs no context (the driver library
    // is loaded by then, since a Gpu exists).
    let status = unsafe { gpuds_core::cudarc::driver::sys::cuDriverGetVersion(&mut version) };
    if status == gpuds_core::cudarc::driver::sys::CUresult::CUDA_SUCCESS {
        format!("CUDA {}.{}", version / 1000, version % 1000 / 10)
    } else {
        "unknown".to_string()
    }
}

/// `git describe` of the checkout this binary was built from (`unknown` outside one).
pub const COMMIT: &str = match option_env!("GPUDS_COMMIT") {
    Some(commit) => commit,
    None => "unknown",
};

/// The unit a rate is reported in: the unit the papers' figures use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Gigabytes (10^9 bytes) per second, bytes read plus bytes written.
    GigabytesPerSecond,
    /// Billions of queries (lookups, CAS, probes) per second.
    GigaQueriesPerSecond,
    /// Billions of keys per second (sorting).
    GigaKeysPerSecond,
    /// Billions of items per second (scan, compaction).
    GigaItemsPerSecond,
}

impl Unit {
    /// The unit as printed, e.g. `GB/s`.
    pub fn label(self) -> &'static str {
        match self {
            Unit::GigabytesPerSecond => "GB/s",
            Unit::GigaQueriesPerSecond => "G queries/s",
            Unit::GigaKeysPerSecond => "G keys/s",
            Unit::GigaItemsPerSecond => "G items/s",
        }
    }
}

/// What a row's rate is compared with: a limit or a baseline structure measured in the
/// same run, or a published reference figure, in the row's own unit.
#[derive(Clone, Debug, PartialEq)]
pub struct Baseline {
    /// What the comparison point is, e.g. `copy / 36 B per key` or `published H100`.
    pub label: String,
    /// Its rate, in the row's unit.
    pub rate: f64,
}

/// One measured figure.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// The experiment that produced it, e.g. `limits`.
    pub experiment: String,
    /// What was measured, e.g. `random 32 B sector reads`.
    pub name: String,
    /// The structure measured, e.g. `HiveMap`, or `device` for physical limits. Defaults
    /// to the experiment's structure ([`default_structure`]).
    pub structure: String,
    /// The operation, e.g. `insert`. Defaults to `name` up to its first comma.
    pub operation: String,
    /// The key type, e.g. `u32`.
    pub key_type: String,
    /// The value type, e.g. `u32`.
    pub value_type: String,
    /// The load factor (or memory utilization) the figure was measured at, if it has one.
    pub load: Option<f64>,
    /// The paper figure the row belongs to, e.g. `fig4`, if any; the others are drawn in
    /// their experiment's summary figure.
    pub figure: Option<String>,
    /// The row's x coordinate in its figure, when that is neither `load` nor `n`.
    pub x: Option<f64>,
    /// The problem size: items, queries or keys (bytes per buffer for copies).
    pub size: u64,
    /// Timing of the repetitions.
    pub timing: Timing,
    /// Billions of units per second, from the median time.
    pub rate: f64,
    /// The rate's unit.
    pub unit: Unit,
    /// The comparison point, if the row has one.
    pub baseline: Option<Baseline>,
    /// Anything the reader must know, e.g. a table sized down for lack of memory.
    pub note: String,
}

impl Row {
    /// A row for `work` units (bytes, queries, keys) done in `timing`'s median time.
    pub fn new(
        experiment: &str,
        name: &str,
        size: u64,
        timing: Timing,
        work: f64,
        unit: Unit,
    ) -> Self {
        Self {
            experiment: experiment.to_string(),
            name: name.to_string(),
            structure: default_structure(experiment).to_string(),
            operation: name.split(',').next().unwrap_or(name).trim().to_string(),
            key_type: "u32".to_string(),
            value_type: "u32".to_string(),
            load: None,
            figure: None,
            x: None,
            size,
            rate: timing.giga_rate(work),
            timing,
            unit,
            baseline: None,
            note: String::new(),
        }
    }

    /// Adds a comparison point.
    pub fn with_baseline(mut self, baseline: Option<Baseline>) -> Self {
        self.baseline = baseline;
        self
    }

    /// Sets the structure measured.
    pub fn with_structure(mut self, structure: impl Into<String>) -> Self {
        self.structure = structure.into();
        self
    }

    /// Sets the operation.
    pub fn with_operation(mut self, operation: impl Into<String>) -> Self {
        self.operation = operation.into();
        self
    }

    /// Sets the key and value types, e.g. `u64`, `u32`.
    pub fn with_types(mut self, key: &str, value: &str) -> Self {
        self.key_type = key.to_string();
        self.value_type = value.to_string();
        self
    }

    /// Sets the load factor (or memory utilization).
    pub fn with_load(mut self, load: f64) -> Self {
        self.load = Some(load);
        self
    }

    /// Puts the row into paper figure `figure`, at `x` when its x axis is not simply the
    /// size, or is the load of rows whose sizes differ (the plotter would take log2 n).
    pub fn in_figure(mut self, figure: &str, x: Option<f64>) -> Self {
        self.figure = Some(figure.to_string());
        self.x = x;
        self
    }

    /// Adds a note.
    pub fn with_note(mut self, note: impl Into<String>) -> Self {
        self.note = note.into();
        self
    }

    /// `rate / baseline rate`, when there is a baseline.
    pub fn ratio(&self) -> Option<f64> {
        self.baseline
            .as_ref()
            .filter(|b| b.rate > 0.0)
            .map(|b| self.rate / b.rate)
    }
}

/// The structure an experiment's rows measure unless they say otherwise.
pub fn default_structure(experiment: &str) -> &'static str {
    match experiment {
        "limits" => "device",
        "primitives" => "gpuds-core",
        "linear" => "LinearProbeMap",
        "hive" | "hive-targets" => "HiveMap",
        "alloc" => "SlabAlloc",
        "btree" | "btree-range" => "GpuBTreeMap",
        "slabhash" | "slabhash-targets" => "SlabHashMap",
        "graph" => "DynamicGraph",
        "graph-sorted" => "SortedGraph",
        "oversub" | "kmer" => "RangeTable",
        _ => "unknown",
    }
}

/// The device and run a report belongs to.
#[derive(Clone, Debug, PartialEq)]
pub struct Header {
    /// Experiments run, as given on the command line.
    pub experiments: Vec<String>,
    /// Device name.
    pub device: String,
    /// Compute capability as `sm_XY`.
    pub arch: String,
    /// Streaming multiprocessors.
    pub sm_count: u32,
    /// Total device memory in bytes.
    pub memory_bytes: usize,
    /// Free device memory in bytes when the run started.
    pub free_bytes: usize,
    /// L2 cache size in bytes.
    pub l2_bytes: usize,
    /// Counted repetitions per figure (after one warm-up).
    pub reps: usize,
    /// The CUDA driver's API version, e.g. `CUDA 13.0`.
    pub driver: String,
    /// When the run started, in UTC (RFC 3339).
    pub utc: String,
}

impl Header {
    /// The header for a run of `experiments` on `gpu`.
    pub fn new(gpu: &Gpu, experiments: &[String], reps: usize) -> gpuds_core::Result<Self> {
        let info = gpu.info();
        let (free, _) = gpu.memory_info()?;
        Ok(Self {
            experiments: experiments.to_vec(),
            device: info.name.clone(),
            arch: gpu.arch().to_string(),
            sm_count: info.sm_count,
            memory_bytes: info.total_memory,
            free_bytes: free,
            l2_bytes: info.l2_bytes,
            reps,
            driver: driver_version(),
            utc: utc_now(),
        })
    }
}

/// A header and its rows.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// The run.
    pub header: Header,
    /// The figures, in the order measured.
    pub rows: Vec<Row>,
}

/// `2^k` for exact powers of two of at least 1024, else the number with thousands
/// separators.
pub fn size_label(n: u64) -> String {
    if n >= 1024 && n.is_power_of_two() {
        return format!("2^{}", n.trailing_zeros());
    }
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Bytes as GiB (or MiB below one GiB) with one decimal.
pub fn bytes_label(bytes: usize) -> String {
    const GIB: f64 = (1u64 << 30) as f64;
    const MIB: f64 = (1u64 << 20) as f64;
    let b = bytes as f64;
    if b >= GIB {
        format!("{:.1} GiB", b / GIB)
    } else {
        format!("{:.1} MiB", b / MIB)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn sample() -> Report {
        let timing = Timing::from_samples(&[1.0, 1.1, 0.9]).unwrap();
        Report {
            header: Header {
                experiments: vec!["limits".into()],
                device: "NVIDIA \"Test\" GPU".into(),
                arch: "sm_90".into(),
                sm_count: 132,
                memory_bytes: 80 << 30,
                free_bytes: 79 << 30,
                l2_bytes: 50 << 20,
                reps: 3,
                driver: "CUDA 13.0".into(),
                utc: "2026-11-21T13:00:00Z".into(),
            },
            rows: vec![
                Row::new(
                    "limits",
                    "device copy",
                    1 << 28,
                    timing,
                    2e9,
                    Unit::GigabytesPerSecond,
                ),
                Row::new(
                    "limits",
                    "radix sort, u32",
                    1 << 26,
                    timing,
                    6.4e7,
                    Unit::GigaKeysPerSecond,
                )
                .with_baseline(Some(Baseline {
                    label: "copy / 36 B, key".into(),
                    rate: 320.0,
                }))
                .with_note("sized down"),
            ],
        }
    }

    #[test]
    fn sizes_and_ratios() {
        assert_eq!(size_label(1 << 26), "2^26");
        assert_eq!(size_label(1000), "1,000");
        assert_eq!(size_label(12_345_678), "12,345,678");
        assert_eq!(bytes_label(4 << 30), "4.0 GiB");
        assert_eq!(bytes_label(96 << 20), "96.0 MiB");
        let r = sample();
        assert!((r.rows[0].rate - 2000.0).abs() < 1e-9);
        assert!((r.rows[1].ratio().unwrap() - 0.2).abs() < 1e-9);
        assert_eq!(r.rows[0].ratio(), None);
    }
}
