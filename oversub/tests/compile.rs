//! NVRTC compile checks of gpuds-oversub's kernels (no GPU needed).

use gpuds_testkit::ptx;

#[test]
fn every_kernel_compiles_for_every_target() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    for arch in gpuds_testkit::compile_targets() {
        let all: String = gpuds_oversub::programs()
            .iter()
            .map(|p| ptx(p, arch))
            .collect();
        for name in [
            "first_reserved",
            "flat_insert",
            "flat_erase",
            "flat_find",
            "range_insert",
            "range_erase",
            "range_find",
            "range_need",
            "range_set_inner",
            "range_histogram",
            "flat_add",
            "range_add",
            "sl_init_lists",
            "sl_need",
            "sl_insert",
            "sl_named",
            "sl_unindexed",
            "sl_raise_jobs",
            "sl_erase",
            "sl_find",
            "sl_neighbour",
            "sl_range_count",
            "sl_range_collect",
            "sl_compact",
            "sl_bounds",
            "sl_aux_changes",
            "sl_aux_commit",
            "sequence_keys",
            "sequence_values",
            "absent_candidates",
            "search_queries",
            "kmer_flags",
            "kmer_collect",
        ] {
            assert!(
                all.contains(&format!(".entry {name}_u32(")),
                "{name} {arch}"
            );
        }
    }
}
