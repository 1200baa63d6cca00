//! The one schema of result rows for every experiment: [`Record`], a flat serde row that
//! carries its device, driver, commit and time, so that files from several runs or GPUs
//! can be concatenated and loaded into a data frame or a spreadsheet as they are.
//!
//! JSON files hold an array of records (`serde_json`); CSV files one header line and a
//! line per record (the `csv` crate), with absent values as empty fields. [`read`] takes
//! either, by the file's extension.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{Report, COMMIT};

/// One measured figure with everything needed to read it on its own.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// The experiment, e.g. `hive`.
    pub experiment: String,
    /// The structure measured, e.g. `HiveMap` (`device` for physical limits).
    pub structure: String,
    /// The operation, e.g. `insert`.
    pub operation: String,
    /// The full description of the measurement, e.g. `insert, 16 slots, BitHash, load 0.8`.
    pub measurement: String,
    /// The key type.
    pub key_type: String,
    /// The value type.
    pub value_type: String,
    /// The problem size: items, queries or keys (bytes per buffer for copies).
    pub n: u64,
    /// The load factor (or memory utilization), if the figure has one.
    pub load: Option<f64>,
    /// The paper figure the row belongs to, if any.
    pub figure: Option<String>,
    /// The row's x coordinate in its figure, when that is not simply `n` (or is the
    /// `load` of rows whose sizes differ, e.g. hive's fig9 batches).
    pub x: Option<f64>,
    /// Billions of units per second, from the median time.
    pub rate: f64,
    /// The rate's unit, e.g. `G queries/s`.
    pub unit: String,
    /// The comparison point measured in the same run or published, if any.
    pub baseline: Option<String>,
    /// The comparison point's rate, in `unit`.
    pub baseline_rate: Option<f64>,
    /// `rate / baseline_rate`.
    pub ratio: Option<f64>,
    /// Counted repetitions.
    pub reps: u64,
    /// Fastest repetition, milliseconds.
    pub min_ms: f64,
    /// Median repetition, milliseconds.
    pub median_ms: f64,
    /// Slowest repetition, milliseconds.
    pub max_ms: f64,
    /// The device name.
    pub gpu: String,
    /// The CUDA driver's API version.
    pub driver: String,
    /// `git describe` of the build.
    pub commit: String,
    /// When the run started, UTC, RFC 3339.
    pub utc: String,
    /// Anything the reader must know about the figure.
    pub note: String,
}

impl Record {
    /// The key that identifies the same figure in two runs: experiment, measurement,
    /// key and value types and size.
    pub fn key(&self) -> (String, String, String, String, u64) {
        (
            self.experiment.clone(),
            self.measurement.clone(),
            self.key_type.clone(),
            self.value_type.clone(),
            self.n,
        )
    }
}

/// The report's rows as records.
pub fn records(report: &Report) -> Vec<Record> {
    let h = &report.header;
    report
        .rows
        .iter()
        .map(|row| Record {
            experiment: row.experiment.clone(),
            structure: row.structure.clone(),
            operation: row.operation.clone(),
            measurement: row.name.clone(),
            key_type: row.key_type.clone(),
            value_type: row.value_type.clone(),
            n: row.size,
            load: row.load,
            figure: row.figure.clone(),
            x: row.x,
            rate: row.rate,
            unit: row.unit.label().to_string(),
            baseline: row.baseline.as_ref().map(|b| b.label.clone()),
            baseline_rate: row.baseline.as_ref().map(|b| b.rate),
            ratio: row.ratio(),
            reps: row.timing.reps as u64,
            min_ms: row.timing.min_ms,
            median_ms: row.timing.median_ms,
            max_ms: row.timing.max_ms,
            gpu: h.device.clone(),
            driver: h.driver.clone(),
            commit: COMMIT.to_string(),
            utc: h.utc.clone(),
            note: row.note.clone(),
        })
        .collect()
}

/// Records as pretty JSON (an array).
pub fn to_json(records: &[Record]) -> Result<String, String> {
    serde_json::to_string_pretty(records).map_err(|e| e.to_string())
}

/// Records from JSON text.
pub fn from_json(text: &str) -> Result<Vec<Record>, String> {
    serde_json::from_str(text).map_err(|e| e.to_string())
}

/// Records as CSV text, header line first.
pub fn to_csv(records: &[Record]) -> Result<String, String> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    for record in records {
        writer.serialize(record).map_err(|e| e.to_string())?;
    }
    let bytes = writer.into_inner().map_err(|e| e.to_string())?;
    String::from_utf8(bytes).map_err(|e| e.to_string())
}

/// Records from CSV text.
pub fn from_csv(text: &str) -> Result<Vec<Record>, String> {
    csv::Reader::from_reader(text.as_bytes())
        .deserialize()
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())
}

/// Writes `text` to `path`, saying which file failed.
pub fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Reads a saved run: CSV when the file name ends in `.csv`, JSON otherwise.
pub fn read(path: &Path) -> Result<Vec<Record>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let is_csv = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("csv"));
    let parsed = if is_csv {
        from_csv(&text)
    } else {
        from_json(&text)
    };
    parsed.map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_and_csv_round_trip_into_the_same_rows() {
        let mut rows = records(&crate::report::tests::sample());
        rows[0].load = Some(0.8);
        rows[0].figure = Some("fig4".into());
        rows[1].x = Some(1.0 / 3.0);
        rows[1].note = "quoted \"text\", with a comma\nand a line".into();
        let json = to_json(&rows).unwrap();
        let csv = to_csv(&rows).unwrap();
        assert_eq!(from_json(&json).unwrap(), rows);
        assert_eq!(from_csv(&csv).unwrap(), rows);
        assert!(json.contains("\"gpu\": \"NVIDIA \\\"Test\\\" GPU\""));
        assert!(json.contains("\"baseline\": null"));
        assert!(csv.starts_with("experiment,structure,operation,measurement,"));
        assert_eq!(rows[1].ratio, Some(0.2));
        assert_eq!(rows[0].commit, COMMIT);
    }

    #[test]
    fn read_picks_the_format_by_extension() {
        let rows = records(&crate::report::tests::sample());
        let dir = std::env::temp_dir().join(format!("gpuds-records-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (json, csv) = (dir.join("run.json"), dir.join("run.CSV"));
        write(&json, &to_json(&rows).unwrap()).unwrap();
        write(&csv, &to_csv(&rows).unwrap()).unwrap();
        assert_eq!(read(&json).unwrap(), rows);
        assert_eq!(read(&csv).unwrap(), rows);
        assert!(read(&dir.join("absent.json"))
            .unwrap_err()
            .contains("absent.json"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
