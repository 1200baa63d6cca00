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

/// A user kernel over every `tree_ref<K, V>` instantiation (each node layout) compiles:
/// the device API's templates are instantiated as a user's code instantiates them.
#[test]
fn user_kernels_compile_for_every_instantiation() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    const USER: &str = r#"
#include <gpuds/btree/tree_ref.cuh>
using K = KEY_T;
using V = VALUE_T;
extern "C" __global__ void user(gpuds::btree::tree_ref<K, V> t, gpuds::alloc::slab_alloc_ref a, K k, K* out_k,
                                V* out_v, unsigned* out) {
  gpuds::alloc::warp_allocator allocator(a);
  V v = 0;
  K sk = 0;
  out[0] = t.lookup<8, gpuds::btree::cached>(k, v);
  out[1] = t.successor<16>(k, sk, v);
  out[2] = t.range_count<32>(k, k + 5);
  out[3] = t.range_collect<16>(k, k + 5, out_k, out_v, 4);
  out[4] = t.remove<32>(k, v);
  out[5] = t.insert(allocator, k, v);
}
"#;
    for (key, value) in [
        ("unsigned", "unsigned"),
        ("unsigned long long", "unsigned"),
        ("unsigned", "unsigned long long"),
        ("unsigned long long", "unsigned long long"),
    ] {
        for bytes in [128, 256] {
            let program = gpuds_core::Program::new(
                format!("btree_user_{}_{}_{bytes}", key.len(), value.len()),
                USER,
            )
            .headers(gpuds_btree::cuda_headers())
            .define("KEY_T", key)
            .define("VALUE_T", value)
            .define("GPUDS_BTREE_WIDE_NODE_BYTES", bytes);
            assert!(gpuds_testkit::ptx(&program, Arch::new(8, 0)).contains(".entry user("));
        }
    }
}
