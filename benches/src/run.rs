//! Running experiments: plans from the registry, a progress bar, rows into a report.

use std::io::IsTerminal;

use gpuds_core::{Gpu, Result};
use indicatif::{ProgressBar, ProgressStyle};

use crate::bench::Bench;
use crate::cli::QUICK;
use crate::experiments::{find, registry, Case, Params, Scale};
use crate::report::table::rate_label;
use crate::report::{Header, Report};

/// What to run, and how.
#[derive(Clone, Debug, PartialEq)]
pub struct RunConfig {
    /// Experiments to run, in order (`quick` or registry names).
    pub experiments: Vec<String>,
    /// Counted repetitions per figure, after one warm-up.
    pub reps: usize,
    /// No progress bar and no per-row log.
    pub quiet: bool,
    /// Only the cases whose label contains one of these (case-insensitive); all when `None`.
    pub cases: Option<Vec<String>>,
    /// `--keys`, `--load`, `--key`, `--value` (the scale is set per experiment).
    pub params: Params,
}

/// Runs the experiments `args` names on `gpu` and returns their rows under a header.
///
/// The progress bar (on standard error) advances once per case. It is drawn only when
/// standard output is a terminal and the run is not quiet. When it is hidden and the run
/// is not quiet, each row is logged on standard error as it is measured instead, so a
/// run that is cut short still leaves its figures in the log.
pub fn run(gpu: &Gpu, args: &RunConfig) -> Result<Report> {
    let header = Header::new(gpu, &args.experiments, args.reps)?;
    let mut bench = Bench::new(gpu, args.reps)?;
    let cases = selected(plan(&args.experiments, &args.params), args.cases.as_deref());
    let bar = if args.quiet || !std::io::stdout().is_terminal() {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(cases.len() as u64)
    };
    if let Ok(style) = ProgressStyle::with_template("{bar:30} {pos}/{len} {elapsed} {msg}") {
        bar.set_style(style);
    }
    let mut rows = Vec::new();
    for case in cases {
        bar.set_message(case.label.clone());
        let measured = (case.run)(&mut bench)?;
        if bar.is_hidden() && !args.quiet {
            for row in &measured {
                eprintln!(
                    "gpuds-bench: {} / {}: {} {} (median {:.3} ms)",
                    row.experiment,
                    row.name,
                    rate_label(row.rate, row.unit),
                    row.unit.label(),
                    row.timing.median_ms
                );
            }
        }
        rows.extend(measured);
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok(Report { header, rows })
}

/// The cases of the named experiments in order: `quick` expands to every experiment's
/// quick plan, any other name to that experiment's full plan. Under `quick`, `--keys` and
/// `--load` reach only the experiments that take them, and only the experiments whose
/// forms take the `--key` and `--value` words run.
fn plan(names: &[String], params: &Params) -> Vec<Case> {
    let mut cases = Vec::new();
    for name in names {
        if name == QUICK {
            for e in registry() {
                if !e.accepts.words.takes(params.key, params.value) {
                    continue;
                }
                let mut p = params.clone();
                p.scale = Scale::Quick;
                if !e.accepts.keys {
                    p.keys = None;
                }
                if !e.accepts.load {
                    p.loads = None;
                }
                cases.extend((e.plan)(&p));
            }
        } else if let Some(e) = find(name) {
            let mut p = params.clone();
            p.scale = Scale::Full;
            cases.extend((e.plan)(&p));
        }
    }
    cases
}

/// Checks `--cases` before any GPU work: every text must be non-empty and found in the
/// label of at least one case of `experiments` (a typo would otherwise drop its cases
/// silently). The error lists the labels there are.
pub fn check_cases(
    experiments: &[String],
    params: &Params,
    words: Option<&[String]>,
) -> Result<(), String> {
    let Some(words) = words else { return Ok(()) };
    let labels: Vec<String> = plan(experiments, params)
        .into_iter()
        .map(|c| c.label)
        .collect();
    for word in words {
        if word.trim().is_empty() {
            return Err("--cases needs a non-empty text".into());
        }
        if !labels.iter().any(|l| label_matches(l, word)) {
            return Err(format!(
                "no case of {} has a label containing {word:?}; the cases: {}",
                experiments.join(", "),
                labels.join("; ")
            ));
        }
    }
    Ok(())
}

/// Whether a case label contains a `--cases` text (trimmed, case-insensitive).
fn label_matches(label: &str, word: &str) -> bool {
    label.to_lowercase().contains(&word.trim().to_lowercase())
}

/// The cases whose label contains one of `words`, in order.
fn selected(cases: Vec<Case>, words: Option<&[String]>) -> Vec<Case> {
    let Some(words) = words else { return cases };
    cases
        .into_iter()
        .filter(|c| words.iter().any(|w| label_matches(&c.label, w)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{check_cases, plan, selected};
    use crate::experiments::{Params, Scale, Word};

    fn labels(key: Word, value: Word) -> Vec<String> {
        let params = Params {
            key,
            value,
            ..Params::new(Scale::Full)
        };
        plan(&["quick".to_string()], &params)
            .into_iter()
            .map(|c| c.label)
            .collect()
    }

    #[test]
    fn quick_runs_each_wide_structure_only_at_its_declared_forms() {
        let mixed = labels(Word::U32, Word::U64);
        assert!(mixed.iter().any(|l| l.starts_with("slabhash u32/u64,")));
        assert!(mixed.iter().any(|l| l.starts_with("btree u32/u64,")));
        assert!(!mixed.iter().any(|l| l.starts_with("hive")), "{mixed:?}");
        let wide = labels(Word::U64, Word::U64);
        assert!(wide.iter().any(|l| l.starts_with("hive u64/u64,")));
        // Experiments with u32 words only do not run with 64-bit ones.
        let narrow = labels(Word::U32, Word::U32);
        assert!(narrow.len() > wide.len());
        assert!(narrow.iter().all(|l| !l.contains("u64")));
    }

    #[test]
    fn cases_keep_only_the_labels_named() {
        let params = Params::new(Scale::Full);
        let all = plan(&["mvbtree".to_string()], &params).len();
        let words = ["ERASE HALF".to_string(), "no such case".to_string()];
        let kept = selected(plan(&["mvbtree".to_string()], &params), Some(&words));
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].label, "erase half");
        assert_eq!(
            selected(plan(&["mvbtree".to_string()], &params), None).len(),
            all
        );
    }

    #[test]
    fn cases_that_match_nothing_or_are_empty_are_refused() {
        let params = Params::new(Scale::Full);
        let exp = ["mvbtree".to_string()];
        assert!(check_cases(&exp, &params, None).is_ok());
        assert!(check_cases(&exp, &params, Some(&["Erase HALF".to_string()])).is_ok());
        let typo = check_cases(&exp, &params, Some(&["erase hlaf".to_string()])).unwrap_err();
        assert!(
            typo.contains("erase hlaf") && typo.contains("erase half"),
            "{typo}"
        );
        // One text that matches does not excuse one that does not.
        let words = ["erase half".to_string(), "nothing".to_string()];
        assert!(check_cases(&exp, &params, Some(&words)).is_err());
        assert!(check_cases(&exp, &params, Some(&[" ".to_string()])).is_err());
    }
}
