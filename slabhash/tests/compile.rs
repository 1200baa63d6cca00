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
        "insert_dup",
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

/// The search kernels' hot paths, for every key and value type: each lane reads its own
/// request's slab with read-only 16-byte loads (`ld.global.nc`: no writer runs beside a
/// bulk lookup), the first of a slab asking L2 for the whole line (`.L2::128B`), so that
/// the lane's later reads of the slab (more keys, the value, the next address) wait on L2,
/// not memory. Packed pairs (u32/u32): half a slab at a time, four loads a half
/// (detail/alone.cuh). Wide pairs: the key lanes only, half of their chunks first
/// (detail/alone_wide.cuh, `find_quiet`): two and one loads at u32/u64, three and two at
/// u64/u32, two and two at u64/u64. Sets as packed pairs. No relaxed 16-byte load (the
/// tiles, which serve lookups with writers in flight, are not in this kernel). Then the
/// warp walk, for what the lanes leave, reads each slab with one 32-bit load per lane (a
/// 64-bit key is two lanes of the same 128-byte line).
#[test]
fn search_reads_slabs_as_designed() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    let programs = gpuds_slabhash::programs();
    for (program, (types, first_loads, rest_loads)) in programs.iter().zip([
        ("u32_u32", 0, 0),
        ("u32_u64", 2, 1),
        ("u64_u32", 3, 2),
        ("u64_u64", 2, 2),
    ]) {
        let text = ptx(program, Arch::new(9, 0));
        let body = kernel_body(&text, &format!("find_map_{types}"));
        let slab_loads = body.matches("ld.relaxed.gpu.global.u32").count();
        let read_only = body.matches("ld.global.nc.L2::128B.v2.u64").count();
        // Three slab reads of the warp walk (the first request's base slab, the next
        // request's base slab read ahead, the following slabs of a list) and the
        // status-word reads of the three reports (refused batch, reserved key, step cap)
        // are the only relaxed 32-bit loads; a reserved key is reported by the first pass
        // and by the warp walk, one read more.
        let most = 7;
        assert!(
            slab_loads <= most,
            "{slab_loads} relaxed loads in find {types}"
        );
        if types == "u32_u32" {
            assert!(
                read_only >= 4 && read_only.is_multiple_of(4),
                "{read_only} 16-byte loads in find {types}"
            );
        } else {
            first_then_rest(
                body,
                ("ld.global.nc.L2::128B.v2.u64", first_loads),
                ("ld.global.nc.v2.u64", rest_loads),
                &format!("find {types}"),
            );
        }
        assert!(
            !body.contains("ld.relaxed.gpu.global.v2.u64")
                && !body.contains("ld.relaxed.gpu.global.L2::128B.v2.u64"),
            "find {types}"
        );
        assert!(!body.contains("ld.relaxed.gpu.global.u64"), "find {types}");
    }
    // Sets (packed keys): half a slab at a time, read-only loads too.
    for (program, key) in programs[4..].iter().zip(["u32", "u64"]) {
        let text = ptx(program, Arch::new(9, 0));
        let body = kernel_body(&text, &format!("find_set_{key}"));
        let read_only = body.matches("ld.global.nc.L2::128B.v2.u64").count();
        assert!(
            read_only >= 4 && read_only.is_multiple_of(4),
            "{read_only} 16-byte loads in find set {key}"
        );
        assert!(
            !body.contains("ld.relaxed.gpu.global.v2.u64"),
            "find set {key}"
        );
    }
}

/// The wide REPLACE's hot path (`insert_map_*` of u64/u64, u64/u32, u32/u64): each lane
/// alone reads half of its slab's key chunks first with relaxed 16-byte loads that ask L2
/// for the whole line, and the other half and the slab's last 16 bytes (busy word, next
/// address) with plain relaxed loads only past that (detail/alone_wide.cuh, `look`): two
/// and one plus the tail at u32/u64, three and two plus the tail at u64/u32, two and two
/// plus the tail at u64/u64. No read-only load (writers run beside it).
#[test]
fn wide_replace_reads_half_a_slab_first() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    let programs = gpuds_slabhash::programs();
    for (program, (types, first_loads, rest_loads)) in
        programs[1..4]
            .iter()
            .zip([("u32_u64", 2, 2), ("u64_u32", 3, 3), ("u64_u64", 2, 3)])
    {
        let text = ptx(program, Arch::new(9, 0));
        let body = kernel_body(&text, &format!("insert_map_{types}"));
        first_then_rest(
            body,
            ("ld.relaxed.gpu.global.L2::128B.v2.u64", first_loads),
            ("ld.relaxed.gpu.global.v2.u64", rest_loads),
            &format!("insert {types}"),
        );
        assert!(!body.contains("ld.global.nc"), "insert {types}");
    }
}

/// A lane's reads of one slab in `body`: `first.1` loads of the form `first.0`, then
/// `rest.1` of the form `rest.0`, behind a conditional branch (the rest is read only when
/// the first loads did not settle the request). The compiler may peel the first slab of a
/// list off the loop, so each count may be a multiple, the same multiple for both.
fn first_then_rest(body: &str, first: (&str, usize), rest: (&str, usize), what: &str) {
    for (at, _) in body.match_indices(rest.0) {
        let before = &body[..at];
        let last_first = before
            .rfind(first.0)
            .unwrap_or_else(|| panic!("a load `{}` before any `{}` in {what}", rest.0, first.0));
        let between = &before[last_first..];
        assert!(
            between.lines().any(|l| {
                let l = l.trim_start();
                l.starts_with('@') && l.contains(" bra")
            }),
            "a load `{}` not behind a branch after the loads `{}` in {what}",
            rest.0,
            first.0
        );
    }
    let (a, b) = (body.matches(first.0).count(), body.matches(rest.0).count());
    assert!(
        a >= first.1 && a.is_multiple_of(first.1),
        "{a} loads `{}` in {what}",
        first.0
    );
    assert!(
        b >= rest.1 && b.is_multiple_of(rest.1),
        "{b} loads `{}` in {what}",
        rest.0
    );
    assert_eq!(a / first.1, b / rest.1, "{what}");
}

/// The PTX of kernel `name` in `text`, from its entry to its closing brace.
fn kernel_body<'a>(text: &'a str, name: &str) -> &'a str {
    let start = text
        .find(&format!(".entry {name}("))
        .unwrap_or_else(|| panic!("kernel {name}"));
    let body = &text[start..];
    &body[..body.find("\n}\n").expect("end of kernel")]
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

/// The per-request kernels stay within the registers of their launch bounds without
/// spilling where it costs: a multimap's INSERT (`insert_dup`, the warp walk) and the
/// searches of packed entries keep full occupancy (32 registers), a search spilling at
/// most the few bytes measured with NVRTC 13 (the packed lane-alone lookup: 0-8); REPLACE
/// and a set's insert (`insert`, each lane alone first) and the searches of wide pairs
/// (each lane alone, read-only loads) run at half occupancy (64 registers) and spill nothing. The assembler's own report (`--ptxas-options=-v`) for sm_90; its numbers are
/// checked with NVRTC 13 or later and only printed with an older one.
#[test]
fn per_request_kernels_spill_at_most_prologue_bytes() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    let enforce = gpuds_core::nvrtc_version().expect("NVRTC version").0 >= 13;
    for program in gpuds_slabhash::programs() {
        let log = program
            .clone()
            .option("--ptxas-options=-v")
            .compile(Arch::new(9, 0), gpuds_core::Output::Cubin)
            .unwrap_or_else(|e| panic!("{}: {e}", program.name()))
            .log;
        for (kernel, registers, spill) in ptxas_usage(&log) {
            // (prefix, registers, spill bytes), the first prefix that matches.
            let Some(&(_, most, bound)) = [
                ("find_all", 32, 0),
                ("find_map_u32_u32", 32, 8),
                ("find_set", 32, 8),
                ("find_", 64, 0),
                ("insert_dup_", 32, 32),
                ("insert_", 64, 0),
            ]
            .iter()
            .find(|(prefix, _, _)| kernel.starts_with(prefix)) else {
                continue;
            };
            println!("{kernel}: {registers} registers, {spill} spill bytes");
            if enforce {
                assert!(registers <= most, "{kernel}: {registers} registers");
                assert!(spill <= bound, "{kernel}: {spill} spill bytes");
            }
        }
    }
}

/// (kernel, registers, spill store bytes) from a ptxas `-v` report.
fn ptxas_usage(log: &str) -> Vec<(String, u32, u32)> {
    let number_before = |line: &str, what: &str| -> Option<u32> {
        let end = line.find(what)?;
        line[..end].split_whitespace().last()?.parse().ok()
    };
    let mut usage = Vec::new();
    let mut kernel: Option<String> = None;
    let mut spill = 0;
    for line in log.lines() {
        if let Some(at) = line.find("Function properties for ") {
            kernel = Some(
                line[at + "Function properties for ".len()..]
                    .trim()
                    .to_string(),
            );
        } else if let Some(bytes) = number_before(line, "bytes spill stores") {
            spill = bytes;
        } else if let (Some(name), Some(registers)) =
            (kernel.as_ref(), number_before(line, "registers"))
        {
            usage.push((name.clone(), registers, spill));
            kernel = None;
            spill = 0;
        }
    }
    usage
}

#[test]
fn ptxas_usage_reads_a_report() {
    let log = "ptxas info    : Compiling entry function 'find_map_u32_u32' for 'sm_90'\n\
               ptxas info    : Function properties for find_map_u32_u32\n\
               ptxas         .     16 bytes stack frame, 40 bytes spill stores, 48 bytes spill loads\n\
               ptxas info    : Used 32 registers, used 0 barriers, 16 bytes cumulative stack size\n\
               ptxas info    : Function properties for census_map_u32_u32\n\
               ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n\
               ptxas info    : Used 20 registers, used 0 barriers\n";
    assert_eq!(
        ptxas_usage(log),
        vec![
            ("find_map_u32_u32".to_string(), 32, 40),
            ("census_map_u32_u32".to_string(), 20, 0),
        ]
    );
}
