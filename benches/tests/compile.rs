//! Every benchmark kernel program compiles with NVRTC for the architectures CI checks.
//! Needs NVRTC, not a GPU.

use gpuds_core::{Arch, Output};

#[test]
fn benchmark_programs_compile_to_ptx() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    for program in gpuds_benches::programs() {
        for arch in [Arch::new(8, 0), Arch::new(9, 0)] {
            let compiled = program
                .compile(arch, Output::Ptx)
                .unwrap_or_else(|e| panic!("{} for {arch}: {e}", program.name()));
            let ptx = String::from_utf8_lossy(&compiled.image);
            assert!(ptx.contains(".entry"), "{} has no kernels", program.name());
        }
    }
}
