//! NVRTC compile checks of SortedGraph's kernels (no GPU needed).

use gpuds_core::Arch;
use gpuds_testkit::ptx;

const KERNELS: [&str; 13] = [
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

#[test]
fn the_sorted_module_has_its_kernels_for_every_target() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    let program = gpuds_graph::sorted::program();
    for arch in gpuds_testkit::compile_targets() {
        let text = ptx(&program, arch);
        for name in KERNELS {
            assert!(text.contains(&format!(".entry {name}(")), "{name} {arch}");
        }
        // Kernels never trap.
        assert!(!text.contains("trap;"), "{arch}");
    }
}

#[test]
fn the_sorted_module_builds_as_cubin() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    gpuds_testkit::assert_cubins(&[gpuds_graph::sorted::program()]);
}

/// The sorted graph's triangle count is the CSR's device code on another view of the
/// lists: one atomic per warp after a shuffle reduction, as csr_triangles.
#[test]
fn the_sorted_triangle_count_shares_the_csr_code() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    let text = ptx(&gpuds_graph::sorted::program(), Arch::new(9, 0));
    let start = text
        .find(".entry sorted_triangles(")
        .expect("sorted_triangles");
    let body = &text[start..];
    let body = &body[..body.find("\n}\n").expect("end of kernel")];
    assert_eq!(body.matches("atom.global.add.u64").count(), 1, "{body}");
    assert!(body.contains("shfl.sync.down"), "{body}");
}

/// The headers exported for user kernels compile on their own.
#[test]
fn the_sorted_headers_compile_in_a_user_kernel() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    let source = r#"
#include <gpuds/graph/sorted_segments.cuh>
extern "C" __global__ void degree_sum(const gpuds::graph::sorted::segment* dict,
                                      const unsigned* pool, unsigned n, unsigned long long* out) {
  const unsigned u = blockIdx.x * blockDim.x + threadIdx.x;
  if (u < n && gpuds::graph::sorted::contains(dict, pool, u, 0u)) atomicAdd(out, 1ull);
}
"#;
    let program =
        gpuds_core::Program::new("sorted_user", source).headers(gpuds_graph::cuda_headers());
    let text = ptx(&program, Arch::new(9, 0));
    assert!(text.contains(".entry degree_sum("));
}
