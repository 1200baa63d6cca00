//! Records `git describe` of the checkout at build time as `GPUDS_COMMIT`, for the
//! `commit` column of every result row; `unknown` outside a git checkout.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let text = text.trim();
    (out.status.success() && !text.is_empty()).then(|| text.to_string())
}

fn main() {
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        // A new commit moves HEAD or the branch it points to.
        println!("cargo:rerun-if-changed={dir}/HEAD");
        println!("cargo:rerun-if-changed={dir}/refs/heads");
        println!("cargo:rerun-if-changed={dir}/packed-refs");
    }
    let commit = git(&["describe", "--always", "--tags"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=GPUDS_COMMIT={commit}");
}
