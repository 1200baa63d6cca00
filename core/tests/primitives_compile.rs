//! Compile checks of the primitives' kernel modules: NVRTC, no GPU.

use gpuds_core::{Arch, Output};

/// sm_75, sm_80 and sm_90, less those the loaded NVRTC cannot target.
fn target_archs() -> Vec<Arch> {
    let supported = gpuds_core::nvrtc_supported_archs().expect("supported archs");
    let wanted = [Arch::new(7, 5), Arch::new(8, 0), Arch::new(9, 0)];
    let archs: Vec<Arch> = wanted
        .into_iter()
        .filter(|a| supported.contains(a))
        .collect();
    assert!(!archs.is_empty(), "NVRTC supports none of {wanted:?}");
    archs
}

#[test]
fn primitives_compile_for_every_target() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    let programs = gpuds_core::primitives::programs();
    assert!(programs.len() >= 8);
    for arch in target_archs() {
        for program in &programs {
            let ptx = program
                .compile(arch, Output::Ptx)
                .unwrap_or_else(|e| panic!("{} for {arch}: {e}", program.name()));
            let text = String::from_utf8(ptx.image).expect("PTX is text");
            assert!(text.contains(".entry"), "{} has no entry", program.name());
        }
    }
}

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
        "exclusive_scan_u32",
        "exclusive_scan_u64",
        "compact_u32",
        "compact_u64",
        "fill_u32",
        "iota_u64",
    ];
    let ptx: String = gpuds_core::primitives::programs()
        .iter()
        .map(|p| {
            let image = p.compile(Arch::new(8, 0), Output::Ptx).expect("compile");
            String::from_utf8(image.image).expect("PTX is text")
        })
        .collect();
    for name in expected {
        assert!(ptx.contains(&format!(".entry {name}(")), "no kernel {name}");
    }
}

#[test]
fn sort_kernels_fit_static_shared_memory_as_cubin() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    for program in gpuds_core::primitives::programs() {
        let cubin = program
            .compile(Arch::new(9, 0), Output::Cubin)
            .unwrap_or_else(|e| panic!("{}: {e}", program.name()));
        assert_eq!(&cubin.image[..4], b"\x7fELF");
    }
}
