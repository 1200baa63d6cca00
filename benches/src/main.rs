//! `gpuds-bench`: runs the experiments named on the command line on GPU 0 (or
//! `--device N`), prints a table and optionally writes CSV and JSON.
//!
//! Exit codes: 0 on success, 1 when the GPU work or writing an output file fails
//! (no GPU, no NVRTC, a driver error), 2 for a bad command line.

use std::path::Path;
use std::process::ExitCode;

use gpuds_benches::cli::{self, Args, Command};
use gpuds_benches::report::{csv, json, table, Report};
use gpuds_core::Gpu;

fn main() -> ExitCode {
    let args = match cli::parse(std::env::args().skip(1)) {
        Ok(Command::Help) => {
            print!("{}", cli::help());
            return ExitCode::SUCCESS;
        }
        Ok(Command::Run(args)) => args,
        Err(why) => {
            eprintln!("gpuds-bench: {why}\nRun `gpuds-bench --help` for experiments and options.");
            return ExitCode::from(2);
        }
    };
    match execute(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(why) => {
            eprintln!("gpuds-bench: error: {why}");
            ExitCode::FAILURE
        }
    }
}

fn execute(args: &Args) -> Result<(), String> {
    let report = Gpu::new(args.device)
        .and_then(|gpu| gpuds_benches::run::run(&gpu, args))
        .map_err(|e| e.to_string())?;
    print!("{}", table::render(&report));
    write(args.csv.as_deref(), &report, csv::render)?;
    write(args.json.as_deref(), &report, json::render)
}

fn write(
    path: Option<&Path>,
    report: &Report,
    render: fn(&Report) -> String,
) -> Result<(), String> {
    match path {
        Some(path) => std::fs::write(path, render(report))
            .map_err(|e| format!("cannot write {}: {e}", path.display())),
        None => Ok(()),
    }
}
