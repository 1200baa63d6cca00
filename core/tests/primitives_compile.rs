//! Compile checks of the primitives' kernel modules that the workspace test
//! (`benches/tests/all_kernels.rs`, every module for every target) does not make:
//! per-type kernel names and a CUBIN build. NVRTC, no GPU.

use gpuds_core::Arch;

#[test]
fn kernel_names_are_stamped_per_type() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    let expected = [
        "radix_histogram_u32",
        "radix_onesweep_u32",
        "radix_onesweep_u64",
        "radix_onesweep_u32_u32",
        "radix_onesweep_u64_u64",
        "radix_onesweep_u64_u32",
        "radix_histogram_u32_wide",
        "radix_onesweep_u32_wide",
        "radix_onesweep_u64_u32_wide",
        "radix_onesweep_u64_u64_wide",
        "exclusive_scan_u32",
        "exclusive_scan_u64",
        "compact_u32",
        "compact_u64",
        "fill_u32",
        "iota_u64",
    ];
    let ptx: String = gpuds_core::primitives::programs()
        .iter()
        .map(|p| gpuds_testkit::ptx(p, Arch::new(8, 0)))
        .collect();
    for name in expected {
        assert!(ptx.contains(&format!(".entry {name}(")), "no kernel {name}");
    }
}

#[test]
fn primitives_fit_static_shared_memory_as_cubin() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    gpuds_testkit::assert_cubins(&gpuds_core::primitives::programs());
}
