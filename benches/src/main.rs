//! `gpuds-bench`: runs the experiment named on the command line on GPU 0 (or
//! `--device N`), prints a table and optionally writes CSV, JSON and SVG figures; or
//! compares or draws saved runs. `gpuds-bench --help` lists everything.
//!
//! Exit codes: 0 on success, 1 when the GPU work or writing an output file fails
//! (no GPU, no NVRTC, a driver error) or `compare --fail-below` trips, 2 for a bad
//! command line.

use std::path::Path;
use std::process::ExitCode;

use clap::Parser;
use gpuds_benches::cli::{self, Cli, Command, CompareArgs};
use gpuds_benches::report::{records, table};
use gpuds_benches::run::RunConfig;
use gpuds_core::Gpu;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Completions { shell } => {
            cli::completions(*shell);
            Ok(())
        }
        Command::Compare(args) => compare(args),
        Command::Plot { file } => records::read(file).and_then(|rows| {
            let dir = cli
                .options
                .plot
                .clone()
                .unwrap_or(cli::DEFAULT_PLOT_DIR.into());
            plot(&rows, &dir)
        }),
        command => match command.experiment() {
            Some(name) => {
                let params = cli.options.params();
                let checked = gpuds_benches::experiments::check(name, &params).and_then(|()| {
                    gpuds_benches::run::check_cases(
                        &[name.to_string()],
                        &params,
                        cli.options.cases.as_deref(),
                    )
                });
                if let Err(why) = checked {
                    eprintln!("gpuds-bench: error: {why}");
                    return ExitCode::from(2);
                }
                execute(&cli, name)
            }
            None => Ok(()),
        },
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(why) => {
            eprintln!("gpuds-bench: error: {why}");
            ExitCode::FAILURE
        }
    }
}

fn execute(cli: &Cli, experiment: &str) -> Result<(), String> {
    let o = &cli.options;
    let config = RunConfig {
        experiments: vec![experiment.to_string()],
        reps: o.reps,
        quiet: o.quiet,
        cases: o.cases.clone(),
        params: o.params(),
    };
    let report = Gpu::new(o.device)
        .and_then(|gpu| gpuds_benches::run::run(&gpu, &config))
        .map_err(|e| e.to_string())?;
    print!("{}", table::render(&report));
    let rows = records::records(&report);
    if let Some(path) = &o.csv {
        records::write(path, &records::to_csv(&rows)?)?;
    }
    if let Some(path) = &o.json {
        records::write(path, &records::to_json(&rows)?)?;
    }
    match &o.plot {
        Some(dir) => plot(&rows, dir),
        None => Ok(()),
    }
}

fn plot(rows: &[records::Record], dir: &Path) -> Result<(), String> {
    for path in gpuds_benches::plot::write_all(rows, dir)? {
        eprintln!("gpuds-bench: figure {}", path.display());
    }
    Ok(())
}

fn compare(args: &CompareArgs) -> Result<(), String> {
    let old = records::read(&args.old)?;
    let new = records::read(&args.new)?;
    let comparison = gpuds_benches::compare::compare(&old, &new, args.threshold);
    print!("{}", comparison.render());
    if let Some(floor) = args.fail_below {
        let below = comparison.below(floor);
        if !below.is_empty() {
            return Err(format!(
                "{} figures fell below {floor} of OLD, e.g. {} / {} at {:.3}",
                below.len(),
                below[0].experiment,
                below[0].measurement,
                below[0].ratio
            ));
        }
    }
    Ok(())
}
