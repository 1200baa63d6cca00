//! Every kernel module of gpuds-btree compiles with NVRTC (no GPU needed), with the
//! kernel names the host looks up, and as a CUBIN for sm_90.

use gpuds_core::Arch;

#[test]
fn kernel_modules_compile_for_every_target() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    for arch in gpuds_testkit::compile_targets() {
        for program in gpuds_btree::programs() {
            assert!(gpuds_testkit::ptx(&program, arch).contains(".entry"));
        }
    }
}

#[test]
fn kernel_names_are_the_ones_the_host_loads() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    let ptx: String = gpuds_btree::programs()
        .iter()
        .map(|p| gpuds_testkit::ptx(p, Arch::new(8, 0)))
        .collect();
    let mut expected = Vec::new();
    for types in ["u32_u32", "u64_u32", "u32_u64", "u64_u64"] {
        for name in [
            "btree_init",
            "btree_insert",
            "btree_apply",
            "btree_last_of_run",
            "btree_count_repeats",
            "btree_bulk_build",
            "btree_check_increasing",
        ] {
            expected.push(format!("{name}_{types}"));
        }
        for tile in [8, 16, 32] {
            for name in [
                "btree_get",
                "btree_successor",
                "btree_range_count",
                "btree_range_collect",
                "btree_range_collect_capped",
                "btree_remove",
            ] {
                expected.push(format!("{name}_{types}_t{tile}"));
            }
        }
    }
    for name in expected {
        assert!(ptx.contains(&format!(".entry {name}(")), "no kernel {name}");
    }
}

#[test]
fn kernel_modules_build_as_cubin() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    gpuds_testkit::assert_cubins(&gpuds_btree::programs());
}
