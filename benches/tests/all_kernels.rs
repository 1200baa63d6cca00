//! Every kernel module of the workspace compiles with NVRTC for the architectures gpuds
//! supports. Needs NVRTC, not a GPU. Each structure crate adds its `programs()` here.

use gpuds_core::{Arch, Output, Program};

/// Every kernel module of every crate, with representative instantiations.
fn all_programs() -> Vec<Program> {
    let mut programs = gpuds_core::programs();
    programs.extend(gpuds_benches::programs());
    programs
}

/// sm_70, sm_75, sm_80 and sm_90, less those the loaded NVRTC cannot target (NVRTC 13
/// dropped sm_70; CI compiles for it in a second pass with NVRTC 12, setting
/// `GPUDS_EXPECT_SM70=1` so that pass cannot silently skip it).
fn target_archs() -> Vec<Arch> {
    let supported = gpuds_core::nvrtc_supported_archs().expect("supported architectures");
    let wanted = [
        Arch::new(7, 0),
        Arch::new(7, 5),
        Arch::new(8, 0),
        Arch::new(9, 0),
    ];
    let archs: Vec<Arch> = wanted
        .into_iter()
        .filter(|a| supported.contains(a))
        .collect();
    if std::env::var("GPUDS_EXPECT_SM70").is_ok_and(|v| v == "1") {
        assert!(
            archs.contains(&Arch::new(7, 0)),
            "this NVRTC cannot target sm_70: {supported:?}"
        );
    }
    assert!(
        archs.contains(&Arch::new(8, 0)),
        "NVRTC cannot target sm_80: {supported:?}"
    );
    archs
}

#[test]
fn every_kernel_module_compiles_for_every_target() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    let version = gpuds_core::nvrtc_version().expect("NVRTC version");
    let programs = all_programs();
    assert!(!programs.is_empty());
    for arch in target_archs() {
        for program in &programs {
            let compiled = program.compile(arch, Output::Ptx).unwrap_or_else(|e| {
                panic!("NVRTC {version:?}: {} for {arch}: {e}", program.name())
            });
            let ptx = String::from_utf8_lossy(&compiled.image);
            assert!(
                ptx.contains(".entry"),
                "{} has no kernel for {arch}",
                program.name()
            );
        }
        println!(
            "NVRTC {version:?}: {} modules compile for {arch}",
            programs.len()
        );
    }
}
