//! Every kernel module of the workspace compiles with NVRTC for the architectures gpuds
//! supports, to CUBIN: NVRTC's assembler then checks every instruction against the target,
//! which PTX alone does not (inline assembly passes into PTX unchecked; a load with an L2
//! prefetch size, which needs sm_75, once reached the sm_70 PTX that way). Needs NVRTC, not
//! a GPU. Each structure crate adds its `programs()` here.

use gpuds_core::{Output, Program};

/// Every kernel module of every crate, with representative instantiations.
fn all_programs() -> Vec<Program> {
    let mut programs = gpuds_core::programs();
    programs.extend(gpuds_benches::programs());
    programs.extend(gpuds_alloc::programs());
    programs.extend(gpuds_slabhash::programs());
    programs.extend(gpuds_btree::programs());
    programs.extend(gpuds_hive::programs());
    programs.extend(gpuds_mvbtree::programs());
    programs.extend(gpuds_graph::programs());
    programs.extend(gpuds_oversub::programs());
    programs.extend(gpuds_benches::experiments::linear::programs());
    programs
}

#[test]
fn every_kernel_module_compiles_for_every_target() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    let version = gpuds_core::nvrtc_version().expect("NVRTC version");
    let programs = all_programs();
    assert!(!programs.is_empty());
    for arch in gpuds_testkit::compile_targets() {
        for program in &programs {
            let compiled = program.compile(arch, Output::Cubin).unwrap_or_else(|e| {
                panic!("NVRTC {version:?}: {} for {arch}: {e}", program.name())
            });
            assert_eq!(
                &compiled.image[..4],
                b"\x7fELF",
                "{} is no ELF image for {arch}",
                program.name()
            );
        }
        println!(
            "NVRTC {version:?}: {} modules compile for {arch}",
            programs.len()
        );
    }
}
