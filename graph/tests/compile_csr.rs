//! NVRTC compile checks of the CSR baseline's kernels (no GPU needed).

use gpuds_core::Arch;
use gpuds_testkit::ptx;

const KERNELS: [&str; 4] = ["csr_pack", "csr_unique", "csr_finish", "csr_triangles"];

#[test]
fn the_csr_module_has_its_kernels_for_every_target() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    let program = gpuds_graph::csr::program();
    for arch in gpuds_testkit::compile_targets() {
        let text = ptx(&program, arch);
        for name in KERNELS {
            assert!(text.contains(&format!(".entry {name}(")), "{name} {arch}");
        }
        // Kernels report through return values, never by trapping.
        assert!(!text.contains("trap;"), "{arch}");
    }
}

#[test]
fn the_csr_module_builds_as_cubin() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    gpuds_testkit::assert_cubins(&[gpuds_graph::csr::program()]);
}

/// The triangle count adds to the total with one atomic per warp (after a shuffle
/// reduction), never one per edge or per thread.
#[test]
fn the_triangle_count_adds_once_per_warp() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    let text = ptx(&gpuds_graph::csr::program(), Arch::new(9, 0));
    let start = text.find(".entry csr_triangles(").expect("csr_triangles");
    let body = &text[start..];
    let body = &body[..body.find("\n}\n").expect("end of kernel")];
    assert_eq!(body.matches("atom.global.add.u64").count(), 1, "{body}");
    assert!(body.contains("shfl.sync.down"), "{body}");
}
