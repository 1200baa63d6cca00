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
    let mut expected = vec![
        "btree_init".to_string(),
        "btree_insert".into(),
        "btree_apply".into(),
        "btree_last_of_run".into(),
        "btree_count_repeats".into(),
        "btree_bulk_build".into(),
        "btree_check_increasing".into(),
    ];
    for tile in [8, 16, 32] {
        for name in [
            "btree_get",
            "btree_successor",
            "btree_range_count",
            "btree_range_collect",
            "btree_range_collect_capped",
            "btree_remove",
        ] {
            expected.push(format!("{name}_t{tile}"));
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
