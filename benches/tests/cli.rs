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

const SUBCOMMANDS: [&str; 15] = [
    "quick",
    "limits",
    "primitives",
    "linear",
    "hive",
    "hive-targets",
    "alloc",
    "btree",
    "btree-range",
    "mvbtree",
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
    assert!(
        top.contains("VersionedBTreeMap"),
        "the multiversion B-Tree line names its structure"
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

fn fixture(name: &str) -> String {
    format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn compare_gives_ratios_and_exit_codes() {
    let (old, new) = (fixture("old.json"), fixture("new.json"));
    let out = bench(&["compare", &old, &new]);
    assert_eq!(out.status.code(), Some(0));
    let table = text(&out.stdout);
    assert!(table.contains("| 1.250 | up |"), "{table}");
    assert!(table.contains("| 0.850 | DOWN |"), "{table}");
    assert!(table.contains("| 1.010 |  |"), "{table}");
    assert!(
        table.contains("3 figures in both, 2 moved more than 5.0 %; 1 only in OLD, 0 only in NEW")
    );
    let out = bench(&["compare", &old, &new, "--threshold", "0.3"]);
    assert!(text(&out.stdout).contains("0 moved more than 30.0 %"));
    let out = bench(&["compare", &old, &new, "--fail-below", "0.9"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("1 figures fell below 0.9"));
    let out = bench(&["compare", &old, &new, "--fail-below", "0.8"]);
    assert_eq!(out.status.code(), Some(0));
    let out = bench(&["compare", &old, &fixture("absent.json")]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("absent.json"));
}

#[test]
fn experiment_options_are_checked_before_any_gpu_work() {
    for (args, message) in [
        (&["hive", "--keys", "2^"][..], "--keys"),
        (&["hive", "--keys", "0"], "--keys"),
        (&["btree", "--keys", "lots"], "--keys"),
        (&["linear", "--load", "0.5,1.2"], "--load"),
        (&["linear", "--load", "x"], "--load"),
        (&["hive", "--key", "u16"], "--key"),
        (&["hive", "--value", "i64"], "--value"),
        (
            &["hive-targets", "--key", "u64"],
            "u64 keys do not apply to hive-targets",
        ),
        (
            &["btree-range", "--value", "u64"],
            "u64 values do not apply to btree-range",
        ),
        (&["alloc", "--key", "u64"], "u64 keys do not apply to alloc"),
        (
            &["mvbtree", "--value", "u64"],
            "u64 values do not apply to mvbtree",
        ),
        (
            &["mvbtree", "--load", "0.5"],
            "--load does not apply to mvbtree",
        ),
        (
            &["hive", "--value", "u64"],
            "--key u32 --value u64 does not apply to hive",
        ),
        (
            &["hive", "--key", "u32", "--value", "u64"],
            "--key u32 --value u64 does not apply to hive (its key/value forms: u32/u32, \
             u64/u32, u64/u64)",
        ),
        (
            &["btree", "--load", "0.5"],
            "--load does not apply to btree",
        ),
        (
            &["limits", "--keys", "2^20"],
            "--keys does not apply to limits",
        ),
    ] {
        let out = bench(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = text(&out.stderr);
        assert!(err.contains(message), "{args:?}: {err}");
    }
}
