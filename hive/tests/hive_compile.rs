//! NVRTC compile checks of HiveMap's kernel modules (every key and value type, bucket
//! size and hash pair), of a user kernel that includes the device ref for each key and
//! value type, and of the ref's layout against its Rust twin (static assertions compiled
//! by NVRTC). Need NVRTC, not a GPU.

use std::mem::{align_of, offset_of, size_of};

use gpuds_core::Program;
use gpuds_hive::HiveRef;

/// The key and value types (C++ spellings and kernel-name suffix).
const TYPES: [(&str, &str, &str); 3] = [
    ("unsigned int", "unsigned int", "u32_u32"),
    ("unsigned long long", "unsigned int", "u64_u32"),
    ("unsigned long long", "unsigned long long", "u64_u64"),
];

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
    assert_eq!(
        programs.len(),
        18,
        "3 types x (3 bucket sizes + 3 more hash pairs)"
    );
    for arch in gpuds_testkit::compile_targets() {
        for program in &programs {
            let text = gpuds_testkit::ptx(program, arch);
            let (_, _, suffix) = TYPES
                .iter()
                .find(|t| program.name().ends_with(t.2))
                .expect("a module per type");
            for kernel in [
                "hive_init",
                "hive_first_reserved",
                "hive_insert",
                "hive_insert_queued",
                "hive_reinsert",
                "hive_find",
                "hive_erase",
                "hive_apply",
                "hive_split",
                "hive_merge_check",
                "hive_merge",
                "hive_clear_stashed",
            ] {
                assert!(
                    text.contains(&format!(".entry {kernel}_{suffix}(")),
                    "{kernel}_{suffix} in {}",
                    program.name()
                );
            }
        }
    }
}

#[test]
fn a_user_kernel_can_use_the_ref_of_every_type() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    for (key, value, suffix) in TYPES {
        let source = format!(
            r#"#include <gpuds/hive/hive_ref.cuh>
using ref_t = gpuds::hive::hive_ref<{key}, {value}>;
using value_t = {value};
extern "C" __global__ void lookup(ref_t t, const {key}* keys, unsigned n, {value}* out) {{
  const unsigned tile = (blockIdx.x * blockDim.x + threadIdx.x) / gpuds::hive::SLOTS;
  if (tile >= n) return;
  {value} v = 0;
  const bool hit = t.find<true>(keys[tile], v);
  if (gpuds::hive::tile::rank() == 0) out[tile] = hit ? v : ~value_t(0);
}}
extern "C" __global__ void insert(ref_t t, const {key}* keys, unsigned n) {{
  const unsigned tile = (blockIdx.x * blockDim.x + threadIdx.x) / gpuds::hive::SLOTS;
  if (tile >= n) return;
  gpuds::hive::tally counts;
  {value} old = 0;
  t.insert(keys[tile], value_t(tile), old, counts);
  t.erase(keys[tile], old, counts);
  t.flush(counts);
}}
"#
        );
        let program = Program::new(format!("hive_user_{suffix}"), source)
            .headers(gpuds_hive::cuda_headers())
            .define("HIVE_SLOTS", 16)
            .define("HIVE_HASH", 3);
        let ptx = gpuds_testkit::ptx(&program, gpuds_core::Arch::new(9, 0));
        assert!(ptx.contains(".entry lookup") && ptx.contains(".entry insert"));
    }
}

/// The ref of every type has the layout of `HiveRef`, a wide stash entry is 16 bytes (key
/// word, then value word), and a bucket has the words the host's layout gives it
/// (`hive::types::Layout`): static assertions that NVRTC checks (offsets through
/// its front end's `__INTADDR__`, the constant address of a member of a null object:
/// NVRTC has neither `offsetof` nor `__builtin_offsetof`).
#[test]
fn the_ref_of_every_type_has_the_layout_of_its_twin() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    let fields = [
        ("slots", offset_of!(HiveRef, slots)),
        ("meta", offset_of!(HiveRef, meta)),
        ("stash", offset_of!(HiveRef, stash)),
        ("ctrl", offset_of!(HiveRef, ctrl)),
        ("status", offset_of!(HiveRef, status)),
        ("failed", offset_of!(HiveRef, failed)),
        ("level_mask", offset_of!(HiveRef, level_mask)),
        ("split", offset_of!(HiveRef, split)),
        ("buckets", offset_of!(HiveRef, buckets)),
        ("stash_capacity", offset_of!(HiveRef, stash_capacity)),
        ("failed_capacity", offset_of!(HiveRef, failed_capacity)),
        ("eviction_bound", offset_of!(HiveRef, eviction_bound)),
    ];
    for (key, value, suffix) in TYPES {
        let mut source = format!(
            "#include <gpuds/hive/hive_ref.cuh>\nusing ref_t = gpuds::hive::hive_ref<{key}, {value}>;\n\
             static_assert(sizeof(ref_t) == {}, \"size\");\n\
             static_assert(alignof(ref_t) == {}, \"align\");\n",
            size_of::<HiveRef>(),
            align_of::<HiveRef>()
        );
        for (field, offset) in fields {
            source.push_str(&format!(
                "static_assert(__INTADDR__(&((ref_t*)0)->{field}) == {offset}, \"{field}\");\n"
            ));
        }
        source.push_str(
            "static_assert(sizeof(gpuds::hive::wide_word) == 16, \"wide stash entry\");\n\
             static_assert(__INTADDR__(&((gpuds::hive::wide_word*)0)->value) == 8, \"value word\");\n\
             static_assert(sizeof(gpuds::hive::packed_slot::word) == 8, \"packed slot\");\n",
        );
        // The words of a bucket (HIVE_SLOTS 16 by default): 16 packed words; 16 key words
        // and then 16 values of 8 bytes (32 words) or of 4 bytes (24 words).
        let words = match suffix {
            "u32_u32" => 16,
            "u64_u32" => 24,
            _ => 32,
        };
        source.push_str(&format!(
            "static_assert(gpuds::hive::bucket_words<ref_t::S>() == {words}, \"bucket words\");\n\
             extern \"C\" __global__ void layout() {{}}\n"
        ));
        let program = Program::new(format!("hive_layout_{suffix}"), source)
            .headers(gpuds_hive::cuda_headers());
        let ptx = gpuds_testkit::ptx(&program, gpuds_core::Arch::new(9, 0));
        assert!(ptx.contains(".entry layout"), "{suffix}");
    }
}
