//! The command line: experiment names and a few options, parsed by hand.

use std::path::PathBuf;

use crate::experiments::registry;

/// What the command line asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// Print [`help`] and exit.
    Help,
    /// Run experiments.
    Run(Args),
}

/// Options of a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Args {
    /// Experiments to run, in order, without repeats (`quick` or registry names).
    pub experiments: Vec<String>,
    /// Counted repetitions per figure, after one warm-up.
    pub reps: usize,
    /// Also write the rows as CSV here.
    pub csv: Option<PathBuf>,
    /// Also write the rows as JSON here.
    pub json: Option<PathBuf>,
    /// CUDA device ordinal.
    pub device: usize,
}

/// The name that runs every experiment at its quick size.
pub const QUICK: &str = "quick";

/// Default counted repetitions.
pub const DEFAULT_REPS: usize = 5;

/// Parses the arguments after the program name. The error says what is wrong; the
/// caller prints it and exits with code 2.
pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Command, String> {
    let mut out = Args {
        experiments: Vec::new(),
        reps: DEFAULT_REPS,
        csv: None,
        json: None,
        device: 0,
    };
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        let mut value = |what: &str| {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or_else(|| format!("{flag} needs {what}"))
        };
        match flag.as_str() {
            "-h" | "--help" => return Ok(Command::Help),
            "--reps" => out.reps = number(&flag, &value("a number")?, 1)?,
            "--device" => out.device = number(&flag, &value("an ordinal")?, 0)?,
            "--csv" => out.csv = Some(PathBuf::from(value("a file")?)),
            "--json" => out.json = Some(PathBuf::from(value("a file")?)),
            f if f.starts_with('-') => return Err(format!("unknown option `{arg}`")),
            name if name == QUICK || registry().iter().any(|e| e.name == name) => {
                if !out.experiments.iter().any(|e| e == name) {
                    out.experiments.push(name.to_string());
                }
            }
            name => return Err(format!("unknown experiment `{name}`")),
        }
    }
    if out.experiments.is_empty() {
        return Err("name at least one experiment".to_string());
    }
    Ok(Command::Run(out))
}

fn number(flag: &str, text: &str, min: usize) -> Result<usize, String> {
    text.parse::<usize>()
        .ok()
        .filter(|&n| n >= min)
        .ok_or_else(|| format!("{flag} needs a whole number of at least {min}, got `{text}`"))
}

/// The `--help` text, listing every experiment.
pub fn help() -> String {
    let mut s = String::from(
        "gpuds-bench: reproduces the gpuds papers' experiments on the local GPU\n\n\
         Usage: gpuds-bench [OPTIONS] <EXPERIMENT>...\n\nExperiments:\n",
    );
    let mut names = vec![(
        QUICK,
        "every experiment at a small size in one table (limits first)",
    )];
    names.extend(registry().iter().map(|e| (e.name, e.about)));
    for (name, about) in names {
        s += &format!("  {name:<12} {about}\n");
    }
    s += &format!(
        "\nOptions:\n  \
         --reps N      counted repetitions per figure, after one warm-up (default {DEFAULT_REPS})\n  \
         --csv FILE    also write the rows as CSV\n  \
         --json FILE   also write the rows as JSON\n  \
         --device N    CUDA device ordinal (default 0)\n  \
         -h, --help    print this help\n\n\
         Each figure is the median of the repetitions, timed with CUDA events on fresh random\n\
         inputs, with L2 evicted before each repetition. Rates are in billions per second\n\
         (GB/s for bandwidth).\n"
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(s: &str) -> Result<Command, String> {
        parse(s.split_whitespace().map(String::from))
    }

    #[test]
    fn options_and_experiments() {
        let Ok(Command::Run(a)) =
            parse_str("limits --reps 7 --csv out.csv --json=out.json quick limits --device=1")
        else {
            panic!("should parse");
        };
        assert_eq!(a.experiments, ["limits", "quick"]);
        assert_eq!((a.reps, a.device), (7, 1));
        assert_eq!(a.csv, Some(PathBuf::from("out.csv")));
        assert_eq!(a.json, Some(PathBuf::from("out.json")));
        assert_eq!(parse_str("quick --help"), Ok(Command::Help));
    }

    #[test]
    fn clear_errors() {
        assert!(parse_str("")
            .unwrap_err()
            .contains("at least one experiment"));
        assert!(parse_str("limitz")
            .unwrap_err()
            .contains("unknown experiment `limitz`"));
        assert!(parse_str("quick --fast")
            .unwrap_err()
            .contains("unknown option `--fast`"));
        assert!(parse_str("quick --reps")
            .unwrap_err()
            .contains("--reps needs a number"));
        assert!(parse_str("quick --reps 0")
            .unwrap_err()
            .contains("at least 1"));
        assert!(parse_str("quick --reps x").unwrap_err().contains("`x`"));
    }

    #[test]
    fn help_lists_every_experiment() {
        let h = help();
        for e in registry() {
            assert!(h.contains(e.name));
        }
        assert!(h.contains("quick") && h.contains("--reps") && h.contains("--json"));
    }
}
