//! NVRTC compile checks of gpuds-alloc's kernels and headers (no GPU needed).

use gpuds_core::Program;
use gpuds_testkit::ptx;

#[test]
fn every_module_compiles_for_every_target_with_its_kernels() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    let expected = [
        "slab_alloc_allocate_lanes",
        "slab_alloc_allocate_each",
        "slab_alloc_deallocate",
        "slab_alloc_count",
        "slab_alloc_churn",
        "slab_alloc_check_stamps",
        "ebr_drain",
        "ebr_cells_init",
        "ebr_churn",
        "ebr_churn_null",
    ];
    for arch in gpuds_testkit::compile_targets() {
        let all: String = gpuds_alloc::programs()
            .iter()
            .map(|p| ptx(p, arch))
            .collect();
        for name in expected {
            assert!(
                all.contains(&format!(".entry {name}(")),
                "no kernel {name} for {arch}"
            );
        }
    }
}

#[test]
fn modules_build_as_cubin() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    gpuds_testkit::assert_cubins(&gpuds_alloc::programs());
}

/// A user kernel as other crates write them: the ref embedded in their own ref, the
/// warp allocator, decode and deallocation.
#[test]
fn the_header_serves_a_user_kernel() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    let program = Program::new(
        "user",
        r#"#include <gpuds/alloc/slab_alloc.cuh>
           using namespace gpuds::alloc;
           struct my_ref { slab_alloc_ref pool; unsigned* out; };
           static_assert(sizeof(slab_alloc_ref) == 64, "mirror size");
           extern "C" __global__ void user(my_ref r) {
               warp_allocator allocator(r.pool);
               unit_addr a = allocator.allocate();
               if (a == null_unit) return;
               unsigned* words = r.pool.pointer_as<unsigned>(a);
               words[threadIdx.x % (r.pool.unit_bytes() / 4)] = 1;
               __syncwarp();
               if (threadIdx.x % 32 == 0) r.pool.deallocate(a);
           }"#,
    )
    .headers(gpuds_alloc::cuda_headers());
    for arch in gpuds_testkit::compile_targets() {
        assert!(ptx(&program, arch).contains(".entry user("));
    }
}

/// A reclaiming user kernel, generic over the reclaimer as structures write them.
#[test]
fn the_ebr_header_serves_a_generic_kernel() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    let program = Program::new(
        "user_ebr",
        r#"#include <gpuds/alloc/ebr.cuh>
           using namespace gpuds::alloc;
           template <class Block, class Ref>
           __device__ void body(const Ref& r, unit_addr* cells) {
               __shared__ Block block;
               if (!block.begin(r)) return;
               block.enter();
               if (threadIdx.x == 0) block.retire(atomicExch(cells + blockIdx.x, null_unit));
               block.leave();
               block.end();
           }
           extern "C" __global__ void with_ebr(ebr_ref r, unit_addr* cells) {
               body<ebr_block<64>>(r, cells);
           }
           extern "C" __global__ void without(unit_addr* cells) {
               body<null_block>(null_reclaimer_ref{0}, cells);
           }
           static_assert(sizeof(ebr_ref) == 136, "mirror size");"#,
    )
    .headers(gpuds_alloc::cuda_headers());
    for arch in gpuds_testkit::compile_targets() {
        let text = ptx(&program, arch);
        assert!(text.contains(".entry with_ebr(") && text.contains(".entry without("));
    }
}
