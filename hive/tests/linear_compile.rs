//! Compile checks of LinearProbeMap's kernel modules: every representative instantiation
//! for every target, and the ref header compiled alone by a user kernel. NVRTC, no GPU.

use gpuds_core::{Arch, Program};

#[test]
fn every_linear_module_compiles() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    let programs: Vec<Program> = gpuds_hive::programs()
        .into_iter()
        .filter(|p| p.name().starts_with("linear_"))
        .collect();
    assert!(programs.len() >= 10);
    for arch in gpuds_testkit::compile_targets() {
        for program in &programs {
            let ptx = gpuds_testkit::ptx(program, arch);
            for kernel in ["insert", "find", "erase", "apply", "census", "migrate"] {
                assert!(
                    ptx.contains(&format!(".entry linear_{kernel}_")),
                    "{} has no {kernel} kernel for {arch}",
                    program.name()
                );
            }
        }
    }
}

#[test]
fn the_packed_find_is_one_8_byte_load_per_probe() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    let program = gpuds_hive::programs()
        .into_iter()
        .find(|p| p.name() == "linear_u32_u32_t1_lin_vt")
        .expect("the u32 width-1 module");
    let ptx = gpuds_testkit::ptx(&program, Arch::new(9, 0));
    let find = ptx
        .split(".entry ")
        .find(|k| k.starts_with("linear_find_"))
        .expect("find kernel");
    // Each probe reads its whole slot at once, and the slot is never read in halves
    // (the 4-byte loads are the key input); lookups claim nothing.
    assert_eq!(
        find.matches("ld.global.nc.u64").count(),
        1,
        "one slot load per probe"
    );
    assert!(
        !find.contains(".cas.") && !find.contains(".exch."),
        "lookups write no slot"
    );
}

#[test]
fn a_user_kernel_includes_the_ref() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    let source = r#"
        #include <gpuds/hive/linear_ref.cuh>
        using map_t = gpuds::hive::linear_ref<unsigned long long, unsigned, 8,
                                              gpuds::probing::double_hashing, false>;
        extern "C" __global__ void count_hits(map_t map, const unsigned long long* keys,
                                              unsigned n, unsigned* hits) {
            const unsigned op = (blockIdx.x * blockDim.x + threadIdx.x) / 8;
            if (op >= n) return;
            unsigned v;
            if (map.find<false>(keys[op], &v) && gpuds::warp::tile<8>::rank() == 0) {
                atomicAdd(hits, 1u);
            }
        }
    "#;
    let program = Program::new("user_linear", source).headers(gpuds_hive::cuda_headers());
    for arch in gpuds_testkit::compile_targets() {
        gpuds_testkit::ptx(&program, arch);
    }
}
