//! NVRTC compile checks of HiveMap's kernel module (every bucket size and hash pair)
//! and of a user kernel that includes the device ref. Needs NVRTC, not a GPU.

use gpuds_core::Program;

fn hive_programs() -> Vec<Program> {
    gpuds_hive::programs()
        .into_iter()
        .filter(|p| p.name().starts_with("hive_"))
        .collect()
}

#[test]
fn every_hive_module_compiles_for_every_target() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    let programs = hive_programs();
    assert_eq!(programs.len(), 6, "3 bucket sizes + 3 more hash pairs");
    for arch in gpuds_testkit::compile_targets() {
        for program in &programs {
            let text = gpuds_testkit::ptx(program, arch);
            for kernel in [
                "hive_insert",
                "hive_find",
                "hive_apply",
                "hive_split",
                "hive_merge",
            ] {
                assert!(
                    text.contains(&format!(".entry {kernel}")),
                    "{kernel} in {}",
                    program.name()
                );
            }
        }
    }
}

#[test]
fn a_user_kernel_can_use_the_ref() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    let source = r#"#include <gpuds/hive/hive_ref.cuh>
extern "C" __global__ void lookup(gpuds::hive::hive_ref t, const unsigned* keys, unsigned n, unsigned* out) {
  const unsigned tile = (blockIdx.x * blockDim.x + threadIdx.x) / gpuds::hive::SLOTS;
  if (tile >= n) return;
  unsigned v = 0;
  const bool hit = t.find<true>(keys[tile], v);
  if (gpuds::hive::tile::rank() == 0) out[tile] = hit ? v : 0xffffffffu;
}
"#;
    let program = Program::new("hive_user", source)
        .headers(gpuds_hive::cuda_headers())
        .define("HIVE_SLOTS", 16)
        .define("HIVE_HASH", 3);
    let ptx = gpuds_testkit::ptx(&program, gpuds_core::Arch::new(9, 0));
    assert!(ptx.contains(".entry lookup"));
}
