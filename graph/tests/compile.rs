//! NVRTC compile checks of gpuds-graph's kernels and device headers (no GPU needed).

use gpuds_testkit::ptx;

#[test]
fn every_module_has_its_kernels_for_every_target() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    let kernels = [
        "check_ids",
        "degrees",
        "buckets_of",
        "place",
        "bulk_claim",
        "bulk_settle",
        "insert_edges",
        "erase_edges",
        "find_edges",
        "degree_of",
        "collect",
        "mark_deleted",
        "unlink_arcs",
        "sweep_deleted",
        "empty_tables",
        "flush",
        "census",
        "triangles",
        "revive",
        "degrees_wide",
    ];
    for arch in gpuds_testkit::compile_targets() {
        let all: String = gpuds_graph::programs()
            .iter()
            .map(|p| ptx(p, arch))
            .collect();
        for suffix in ["set", "map_u32", "map_u64"] {
            for name in kernels {
                assert!(
                    all.contains(&format!(".entry {name}_{suffix}(")),
                    "{name} {suffix} {arch}"
                );
            }
        }
    }
}
