//! NVRTC compile checks of gpuds-slabhash's kernels and device headers (no GPU needed).

use gpuds_core::{Arch, Program};
use gpuds_testkit::ptx;

#[test]
fn every_module_has_its_kernels_for_every_target() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    let map = [
        "first_reserved",
        "insert",
        "find",
        "erase",
        "apply",
        "erase_all",
        "count",
        "find_all",
        "flush",
        "census",
        "export_entries",
    ];
    let set = [
        "first_reserved",
        "insert",
        "find",
        "erase",
        "apply",
        "flush",
        "census",
        "export_entries",
    ];
    for arch in gpuds_testkit::compile_targets() {
        let all: String = gpuds_slabhash::programs()
            .iter()
            .map(|p| ptx(p, arch))
            .collect();
        for types in ["u32_u32", "u32_u64", "u64_u32", "u64_u64"] {
            for name in map {
                assert!(
                    all.contains(&format!(".entry {name}_map_{types}(")),
                    "{name} map {types} {arch}"
                );
            }
        }
        for key in ["u32", "u64"] {
            for name in set {
                assert!(
                    all.contains(&format!(".entry {name}_set_{key}(")),
                    "{name} set {key} {arch}"
                );
            }
        }
    }
}

#[test]
fn modules_build_as_cubin() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    gpuds_testkit::assert_cubins(&gpuds_slabhash::programs());
}

/// The search kernel's loop reads each slab with one 32-bit load per lane and nothing
/// else from memory, for every key and value type (a 64-bit key is two lanes of the same
/// 128-byte line): the hot path the search rate depends on.
#[test]
fn search_reads_one_word_per_lane_per_slab() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    let programs = gpuds_slabhash::programs();
    for (program, types) in programs
        .iter()
        .zip(["u32_u32", "u32_u64", "u64_u32", "u64_u64"])
    {
        let text = ptx(program, Arch::new(9, 0));
        let start = text
            .find(&format!(".entry find_map_{types}("))
            .expect("find kernel");
        let body = &text[start..];
        let body = &body[..body.find("\n}\n").expect("end of kernel")];
        let slab_loads = body.matches("ld.relaxed.gpu.global.u32").count();
        // Three slab reads (the first request's base slab, the next request's base slab
        // read ahead, the following slabs of a list) and the status-word reads of the
        // three reports (refused batch, reserved key, step cap) are the only relaxed loads.
        assert!(
            slab_loads <= 6,
            "{slab_loads} relaxed loads in find {types}"
        );
        assert!(!body.contains("ld.relaxed.gpu.global.u64"), "find {types}");
    }
}

/// A user kernel that uses map_ref, set_ref and the bucket iterator compiles from the
/// exported headers alone, for every key and value type.
#[test]
fn a_user_kernel_compiles_against_the_refs() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    let combos = [
        ("unsigned", "unsigned"),
        ("unsigned", "unsigned long long"),
        ("unsigned long long", "unsigned"),
        ("unsigned long long", "unsigned long long"),
    ];
    for (k, v) in combos {
        let program = Program::new(
            "user",
            r#"#include <gpuds/slabhash/map_ref.cuh>
               #include <gpuds/slabhash/set_ref.cuh>
               using namespace gpuds::slabhash;
               using K = USER_K;
               using V = USER_V;
               extern "C" __global__ void user(map_ref<K, V> map, set_ref<K> set, V* out) {
                   auto a = map.make_allocator();
                   auto b = set.make_allocator();
                   V old = 0, v = 0;
                   const K k = static_cast<K>(threadIdx.x) << (8 * sizeof(K) - 8);
                   map.replace(a, true, k, static_cast<V>(k), old);
                   set.insert(b, true, k);
                   map.find(true, k, v);
                   V live = 0;
                   for (auto it = map.bucket(0); it.valid(); it.next()) {
                       const unsigned lanes = it.live_key_lanes();
                       if (lanes != 0) live += it.value(__ffs(lanes) - 1) + static_cast<V>(it.key(__ffs(lanes) - 1));
                   }
                   out[threadIdx.x] = v + live + set.find(true, k);
               }"#,
        )
        .define("USER_K", k)
        .define("USER_V", v)
        .headers(gpuds_slabhash::cuda_headers());
        for arch in gpuds_testkit::compile_targets() {
            assert!(
                ptx(&program, arch).contains(".entry user("),
                "{k} {v} {arch}"
            );
        }
    }
}
