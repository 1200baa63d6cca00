//! Every kernel module of gpuds-mvbtree compiles with NVRTC (no GPU needed), with the
//! kernel names the host looks up, and as a CUBIN; and a user kernel over the device ref
//! compiles for every type.

use gpuds_core::{Arch, Program};

#[test]
fn kernel_modules_compile_for_every_target() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    for arch in gpuds_testkit::compile_targets() {
        for program in gpuds_mvbtree::programs() {
            assert!(gpuds_testkit::ptx(&program, arch).contains(".entry"));
        }
    }
}

#[test]
fn kernel_names_are_the_ones_the_host_loads() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    let ptx: String = gpuds_mvbtree::programs()
        .iter()
        .map(|p| gpuds_testkit::ptx(p, Arch::new(8, 0)))
        .collect();
    for types in ["u32_u32", "u64_u32", "u32_u64", "u64_u64"] {
        for name in [
            "mv_init",
            "mv_snapshot",
            "mv_insert",
            "mv_insert_plain",
            "mv_erase",
            "mv_erase_plain",
            "mv_find",
            "mv_find_newest",
            "mv_successor",
            "mv_range_count",
            "mv_range_collect",
            "mv_capped_offsets",
            "mv_apply",
            "mv_collect",
        ] {
            for tile in [8, 16, 32] {
                let name = format!("{name}_{types}_t{tile}");
                assert!(ptx.contains(&format!(".entry {name}(")), "no kernel {name}");
            }
        }
    }
}

#[test]
fn kernel_modules_build_as_cubin() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    gpuds_testkit::assert_cubins(&gpuds_mvbtree::programs());
}

/// The header's own example, for every key and value type.
#[test]
fn a_user_kernel_over_the_device_ref_compiles() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    for (k, v) in [
        ("unsigned", "unsigned"),
        ("unsigned long long", "unsigned"),
        ("unsigned", "unsigned long long"),
        ("unsigned long long", "unsigned long long"),
    ] {
        let wide = if k == "unsigned" && v == "unsigned" {
            ""
        } else {
            "#define GPUDS_BTREE_WIDE_NODE_BYTES 256\n"
        };
        let source = format!(
            r#"{wide}#include <gpuds/mvbtree/versioned_tree_ref.cuh>
using K = {k};
using V = {v};
using tree = gpuds::mvbtree::versioned_tree_ref<K, V>;
extern "C" __global__ void user(tree t, const K* keys, unsigned n, unsigned* counts, V* found) {{
  gpuds::alloc::warp_allocator allocator(t.tree.alloc);
  const unsigned w = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  if (w >= n) return;
  if (w % 3 == 0) {{ t.insert(allocator, keys[w], V(w)); return; }}
  if (w % 3 == 1) {{ V old; t.erase(allocator, keys[w], old); return; }}
  const unsigned s = t.take_snapshot<32>();
  const unsigned c = t.range_count<32>(keys[w], keys[w] + K(100), s);
  V v = V(0);
  K sk = K(0);
  t.find<16>(keys[w], s, v);
  t.successor<32>(keys[w], s, sk, v);
  t.range_collect<32>(K(0), K(9), gpuds::mvbtree::LATEST, nullptr, nullptr, 0);
  if (gpuds::warp::lane_id() == 0) {{ counts[w] = c; found[w] = v; }}
}}
"#
        );
        let program = Program::new("mv_user", source).headers(gpuds_mvbtree::cuda_headers());
        assert!(gpuds_testkit::ptx(&program, Arch::new(9, 0)).contains(".entry user"));
    }
}
