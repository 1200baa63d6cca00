//! NVRTC compile checks of the sorted-list modules, the CSR baseline's and SortedGraph's
//! (no GPU needed): their kernels for every target, and the triangle count they share.

use gpuds_core::{Arch, Program};
use gpuds_testkit::ptx;

const CSR_KERNELS: &[&str] = &["csr_pack", "csr_unique", "csr_finish", "csr_triangles"];

const SORTED_KERNELS: &[&str] = &[
    "sorted_filter",
    "sorted_heads",
    "sorted_plan",
    "sorted_merge_old",
    "sorted_merge_new",
    "sorted_commit",
    "sorted_copy",
    "sorted_sizes",
    "sorted_repack",
    "sorted_move",
    "sorted_contains",
    "sorted_gather",
    "sorted_triangles",
];

/// Each module, its kernels, and its triangle-count kernel.
fn modules() -> [(Program, &'static [&'static str], &'static str); 2] {
    [
        (gpuds_graph::csr::program(), CSR_KERNELS, "csr_triangles"),
        (
            gpuds_graph::sorted::program(),
            SORTED_KERNELS,
            "sorted_triangles",
        ),
    ]
}

#[test]
fn the_sorted_list_modules_have_their_kernels_for_every_target() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    for (program, kernels, _) in modules() {
        for arch in gpuds_testkit::compile_targets() {
            let text = ptx(&program, arch);
            for name in kernels {
                assert!(text.contains(&format!(".entry {name}(")), "{name} {arch}");
            }
            // Kernels report through return values, never by trapping.
            assert!(!text.contains("trap;"), "{arch}");
        }
    }
}

#[test]
fn the_sorted_list_modules_build_as_cubin() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    gpuds_testkit::assert_cubins(&modules().map(|m| m.0));
}

/// Both triangle counts (one device code on two views of the lists) add to the total with
/// one atomic per warp (after a shuffle reduction), never one per edge or per thread.
#[test]
fn the_triangle_counts_add_once_per_warp() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    for (program, _, triangles) in modules() {
        let text = ptx(&program, Arch::new(9, 0));
        let start = text
            .find(&format!(".entry {triangles}("))
            .expect("the kernel");
        let body = &text[start..];
        let body = &body[..body.find("\n}\n").expect("end of kernel")];
        assert_eq!(body.matches("atom.global.add.u64").count(), 1, "{body}");
        assert!(body.contains("shfl.sync.down"), "{body}");
    }
}

/// The sorted graph's headers serve a user kernel (and their size assertions hold).
#[test]
fn the_sorted_headers_compile_in_a_user_kernel() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    let source = r#"
#include <gpuds/graph/sorted_segments.cuh>
extern "C" __global__ void linked_to_zero(const gpuds::graph::sorted::segment* dict,
                                          const unsigned* pool, unsigned n,
                                          unsigned long long* out) {
  const unsigned u = blockIdx.x * blockDim.x + threadIdx.x;
  if (u < n && gpuds::graph::sorted::contains(dict, pool, u, 0u)) atomicAdd(out, 1ull);
}
"#;
    let program = Program::new("sorted_user", source).headers(gpuds_graph::cuda_headers());
    assert!(ptx(&program, Arch::new(9, 0)).contains(".entry linked_to_zero("));
}
