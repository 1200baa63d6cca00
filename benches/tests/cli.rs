//! The `gpuds-bench` binary's command line, without a GPU: every subcommand's `--help`
//! renders, completions are printed, and bad values exit with code 2 and a message that
//! names the option.

use std::process::{Command, Output};

fn bench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gpuds-bench"))
        .args(args)
        .output()
        .expect("gpuds-bench runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

const SUBCOMMANDS: [&str; 14] = [
    "quick",
    "limits",
    "primitives",
    "linear",
    "hive",
    "hive-targets",
    "alloc",
    "btree",
    "btree-range",
    "slabhash",
    "slabhash-targets",
    "compare",
    "plot",
    "completions",
];

#[test]
fn every_subcommand_has_help() {
    let top = bench(&["--help"]);
    assert_eq!(top.status.code(), Some(0));
    let top = text(&top.stdout);
    for name in SUBCOMMANDS {
        assert!(top.contains(name), "--help lists {name}");
        let out = bench(&[name, "--help"]);
        assert_eq!(out.status.code(), Some(0), "{name} --help");
        let help = text(&out.stdout);
        assert!(help.contains("Usage: gpuds-bench"), "{name}: {help}");
        if name != "completions" {
            assert!(help.contains("--reps") && help.contains("--json"), "{name}");
        }
    }
    assert!(
        top.contains("Fig. 4-7"),
        "the slab hash line names its figures"
    );
}

#[test]
fn bad_values_exit_2_naming_the_option() {
    for (args, option) in [
        (&["quick", "--reps", "0"][..], "--reps"),
        (&["quick", "--reps", "x"], "--reps"),
        (&["limits", "--device=-3"], "--device"),
        (
            &["compare", "a.json", "b.json", "--fail-below", "fast"],
            "--fail-below",
        ),
        (&["quick", "--fast"], "--fast"),
        (&["completions", "tcsh"], "tcsh"),
        (&["limitz"], "limitz"),
        (&[], "Usage"),
    ] {
        let out = bench(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = text(&out.stderr);
        assert!(err.contains(option), "{args:?}: {err}");
    }
}

#[test]
fn completions_are_printed() {
    let out = bench(&["completions", "bash"]);
    assert_eq!(out.status.code(), Some(0));
    let script = text(&out.stdout);
    assert!(script.contains("gpuds-bench") && script.contains("slabhash-targets"));
}
