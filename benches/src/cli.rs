//! The command line, on `clap`'s derive API: one subcommand per experiment (its help line
//! comes from the experiment's entry in the [registry](crate::experiments::registry)),
//! `compare` for two saved runs, `plot` for drawing a saved run, and `completions` for
//! shell completion scripts.
//!
//! The run options (`--reps`, `--device`, `--json`, `--csv`, `--plot`, `--quiet`,
//! `--cases`) and the experiment options (`--keys`, `--load`, `--key`, `--value`) are
//! global: they may come before or after the subcommand. A bad command line gets clap's
//! message, which names the option, and exit code 2.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::experiments::{find, Params, Scale, Word};

/// The name that runs every experiment at its quick size.
pub const QUICK: &str = "quick";

/// Default counted repetitions.
pub const DEFAULT_REPS: usize = 5;

/// The default `--json` file when the option is given without one.
pub const DEFAULT_JSON: &str = "gpuds-bench.json";
/// The default `--csv` file when the option is given without one.
pub const DEFAULT_CSV: &str = "gpuds-bench.csv";
/// The default `--plot` folder when the option is given without one.
pub const DEFAULT_PLOT_DIR: &str = "gpuds-plots";

/// `gpuds-bench`: the command line.
#[derive(Clone, Debug, Parser)]
#[command(
    name = "gpuds-bench",
    version = crate::report::COMMIT,
    about = "Reproduces the gpuds papers' experiments on the local GPU",
    after_help = "Each figure is the median of the repetitions, timed with CUDA events on fresh \
                  random inputs, with L2 evicted before each repetition. Rates are in billions \
                  per second (GB/s for bandwidth). Exit codes: 0 success, 1 GPU or output \
                  failure (or `compare --fail-below` tripped), 2 bad command line."
)]
pub struct Cli {
    /// Options of a run.
    #[command(flatten)]
    pub options: RunOptions,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Options of a run, accepted before or after the subcommand.
#[derive(Clone, Debug, PartialEq, Args)]
pub struct RunOptions {
    /// Counted repetitions per figure, after one warm-up.
    #[arg(long, global = true, value_name = "N", default_value_t = DEFAULT_REPS,
          value_parser = reps_parser)]
    pub reps: usize,
    /// CUDA device ordinal.
    #[arg(long, global = true, value_name = "N", default_value_t = 0)]
    pub device: usize,
    /// Also write the rows as JSON (an array of rows; default file gpuds-bench.json).
    #[arg(long, global = true, value_name = "FILE", num_args = 0..=1,
          default_missing_value = DEFAULT_JSON)]
    pub json: Option<PathBuf>,
    /// Also write the rows as CSV (one header line; default file gpuds-bench.csv).
    #[arg(long, global = true, value_name = "FILE", num_args = 0..=1,
          default_missing_value = DEFAULT_CSV)]
    pub csv: Option<PathBuf>,
    /// Draw the experiments' figures as SVG files into this folder (default gpuds-plots).
    #[arg(long, global = true, value_name = "DIR", num_args = 0..=1,
          default_missing_value = DEFAULT_PLOT_DIR)]
    pub plot: Option<PathBuf>,
    /// No progress bar and no per-row log on standard error.
    #[arg(long, short, global = true)]
    pub quiet: bool,
    /// Problem size replacing the experiment's fixed one (the largest of a size sweep;
    /// table slots for linear), as `2^24` or `16777216` (slabhash, linear, hive, btree,
    /// mvbtree, alloc, graph, oversub, kmer; quick passes it to those).
    #[arg(long, global = true, value_name = "N", value_parser = keys_parser)]
    pub keys: Option<u64>,
    /// Load factors replacing the experiment's fixed ones, comma-separated, each in (0, 1),
    /// e.g. `0.5,0.8` (slabhash: target memory utilizations; linear; hive).
    #[arg(long, global = true, value_name = "L,...", value_delimiter = ',',
          value_parser = load_parser)]
    pub load: Option<Vec<f64>>,
    /// Run only the cases whose label contains this text (case-insensitive, a substring:
    /// `2^2` matches 2^20, 2^22 and 2^24); repeat the option for several, e.g. `--cases
    /// "erase half" --cases "build and find, 2^24"`. Under `quick` it selects from every
    /// experiment. A text that no case label contains is refused (the error lists them).
    #[arg(long, global = true, value_name = "TEXT")]
    pub cases: Option<Vec<String>>,
    /// Key type (u64: linear, hive, btree, slabhash and quick).
    #[arg(long, global = true, value_enum, default_value_t = Word::U32)]
    pub key: Word,
    /// Value type (u64: linear, hive with u64 keys, btree, slabhash and quick).
    #[arg(long, global = true, value_enum, default_value_t = Word::U32)]
    pub value: Word,
}

impl RunOptions {
    /// The experiment options as plan parameters (the scale is set per experiment).
    pub fn params(&self) -> Params {
        Params {
            scale: Scale::Full,
            keys: self.keys,
            loads: self.load.clone(),
            key: self.key,
            value: self.value,
        }
    }
}

/// Parses `--keys`: a whole number of at least 1, written out (`16777216`) or as a power
/// (`2^24`, any base).
pub fn keys_parser(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let value = match t.split_once('^') {
        Some((base, exp)) => match (base.trim().parse::<u64>(), exp.trim().parse::<u32>()) {
            (Ok(base), Ok(exp)) => base.checked_pow(exp),
            _ => None,
        },
        None => t.parse::<u64>().ok(),
    };
    match value {
        Some(n) if n >= 1 => Ok(n),
        Some(_) => Err(format!("`{text}` is not at least 1")),
        None => Err(format!(
            "`{text}` is not a size: write a whole number (16777216) or a power (2^24) below 2^64"
        )),
    }
}

/// Parses one `--load` value: a number strictly between 0 and 1.
pub fn load_parser(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(x) if x > 0.0 && x < 1.0 => Ok(x),
        _ => Err(format!(
            "`{text}` is not a load factor between 0 and 1 (exclusive)"
        )),
    }
}

fn reps_parser(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!("`{text}` is not a whole number of at least 1")),
    }
}

fn about(name: &str) -> String {
    find(name).map(|e| e.about.to_string()).unwrap_or_default()
}

/// The subcommands: an experiment, or a tool on saved runs.
#[derive(Clone, Debug, PartialEq, Subcommand)]
pub enum Command {
    /// Every experiment at a small size in one table (limits first).
    Quick,
    /// The device's physical ceilings (DESIGN.md's table).
    #[command(about = about("limits"))]
    Limits,
    /// gpuds-core's scan and compaction.
    #[command(about = about("primitives"))]
    Primitives,
    /// LinearProbeMap.
    #[command(about = about("linear"))]
    Linear,
    /// HiveMap.
    #[command(about = about("hive"))]
    Hive,
    /// HiveMap's target rows.
    #[command(about = about("hive-targets"))]
    HiveTargets,
    /// SlabAlloc.
    #[command(about = about("alloc"))]
    Alloc,
    /// GpuBTreeMap.
    #[command(about = about("btree"))]
    Btree,
    /// GpuBTreeMap's range rows.
    #[command(about = about("btree-range"))]
    BtreeRange,
    /// VersionedBTreeMap.
    #[command(about = about("mvbtree"))]
    Mvbtree,
    /// DynamicGraph.
    #[command(about = about("graph"))]
    Graph,
    /// SortedGraph's rows of `graph`.
    #[command(about = about("graph-sorted"))]
    GraphSorted,
    /// FlatTable and RangeTable.
    #[command(about = about("oversub"))]
    Oversub,
    /// SkipList and RangeSkipList.
    #[command(about = about("skiplist"))]
    Skiplist,
    /// k-mer counting and classification.
    #[command(about = about("kmer"))]
    Kmer,
    /// SlabHashMap.
    #[command(about = about("slabhash"))]
    Slabhash,
    /// SlabHashMap's target rows.
    #[command(about = about("slabhash-targets"))]
    SlabhashTargets,
    /// Sets two saved runs (JSON or CSV) side by side: NEW/OLD for every figure in both.
    Compare(CompareArgs),
    /// Draws the figures of a saved run (JSON or CSV) into --plot DIR.
    Plot {
        /// The saved run.
        file: PathBuf,
    },
    /// Prints a shell completion script, e.g. `gpuds-bench completions bash`.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

/// Options of `compare`.
#[derive(Clone, Debug, PartialEq, Args)]
pub struct CompareArgs {
    /// The earlier run (JSON or CSV, by extension).
    pub old: PathBuf,
    /// The later run.
    pub new: PathBuf,
    /// Flag figures whose NEW/OLD ratio moved more than this fraction.
    #[arg(long, value_name = "FRACTION", default_value_t = 0.05,
          value_parser = fraction_parser)]
    pub threshold: f64,
    /// Exit with code 1 when any figure's NEW/OLD ratio is below this.
    #[arg(long, value_name = "RATIO", value_parser = fraction_parser)]
    pub fail_below: Option<f64>,
}

fn fraction_parser(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
        _ => Err(format!("`{text}` is not a non-negative number")),
    }
}

impl Command {
    /// The experiment this subcommand runs (`quick` or a registry name), if it runs one.
    pub fn experiment(&self) -> Option<&'static str> {
        Some(match self {
            Command::Quick => QUICK,
            Command::Limits => "limits",
            Command::Primitives => "primitives",
            Command::Linear => "linear",
            Command::Hive => "hive",
            Command::HiveTargets => "hive-targets",
            Command::Alloc => "alloc",
            Command::Btree => "btree",
            Command::BtreeRange => "btree-range",
            Command::Mvbtree => "mvbtree",
            Command::Graph => "graph",
            Command::GraphSorted => "graph-sorted",
            Command::Oversub => "oversub",
            Command::Skiplist => "skiplist",
            Command::Kmer => "kmer",
            Command::Slabhash => "slabhash",
            Command::SlabhashTargets => "slabhash-targets",
            Command::Compare(_) | Command::Plot { .. } | Command::Completions { .. } => {
                return None
            }
        })
    }
}

/// Writes the completion script for `shell` to standard output.
pub fn completions(shell: clap_complete::Shell) {
    use clap::CommandFactory;
    let mut command = Cli::command();
    clap_complete::generate(shell, &mut command, "gpuds-bench", &mut std::io::stdout());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::registry;
    use clap::CommandFactory;

    fn parse(s: &str) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("gpuds-bench").chain(s.split_whitespace()))
    }

    #[test]
    fn the_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn options_before_and_after_the_subcommand() {
        let cli = parse("--reps 7 limits --csv out.csv --json=out.json --device=1 -q").unwrap();
        assert_eq!(cli.command, Command::Limits);
        let o = &cli.options;
        assert_eq!((o.reps, o.device, o.quiet), (7, 1, true));
        assert_eq!(o.csv, Some(PathBuf::from("out.csv")));
        assert_eq!(o.json, Some(PathBuf::from("out.json")));
        assert_eq!(o.plot, None);
        let cli = parse("quick --json --csv --plot").unwrap();
        assert_eq!(cli.options.json, Some(PathBuf::from(DEFAULT_JSON)));
        assert_eq!(cli.options.csv, Some(PathBuf::from(DEFAULT_CSV)));
        assert_eq!(cli.options.plot, Some(PathBuf::from(DEFAULT_PLOT_DIR)));
        assert_eq!(cli.options.reps, DEFAULT_REPS);
    }

    #[test]
    fn every_experiment_has_a_subcommand_with_its_help_line() {
        let command = Cli::command();
        for e in registry() {
            let sub = command
                .find_subcommand(e.name)
                .unwrap_or_else(|| panic!("no subcommand for {}", e.name));
            assert_eq!(sub.get_about().map(|a| a.to_string()), Some(e.about.into()));
            let cli = parse(e.name).unwrap();
            assert_eq!(cli.command.experiment(), Some(e.name));
        }
    }

    #[test]
    fn experiment_options() {
        let o = parse("hive --keys 2^24 --load 0.5,0.8 --key u64")
            .unwrap()
            .options;
        assert_eq!(o.keys, Some(1 << 24));
        assert_eq!(o.load, Some(vec![0.5, 0.8]));
        assert_eq!((o.key, o.value), (Word::U64, Word::U32));
        let o = parse("--keys 16777216 linear --value=u64").unwrap().options;
        assert_eq!((o.keys, o.value), (Some(1 << 24), Word::U64));
        let p = parse("btree").unwrap().options.params();
        assert_eq!((p.keys, p.loads, p.key), (None, None, Word::U32));
        assert_eq!(keys_parser("10^3"), Ok(1000));
        for bad in ["0", "2^64", "x", "2^", "-1", "1.5"] {
            assert!(keys_parser(bad).is_err(), "{bad}");
        }
        for bad in ["0", "1", "1.5", "-0.2", "nan", ""] {
            assert!(load_parser(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn compare_options() {
        let cli = parse("compare a.json b.csv --threshold 0.1 --fail-below 0.9").unwrap();
        let Command::Compare(c) = cli.command else {
            panic!("not compare");
        };
        assert_eq!((c.threshold, c.fail_below), (0.1, Some(0.9)));
        assert_eq!(c.new, PathBuf::from("b.csv"));
    }
}
