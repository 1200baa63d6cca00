//! Compile checks that need NVRTC but no GPU.

use gpuds_core::{Arch, Error, Output, Program};

/// A program that uses every core header, so a header that stops compiling fails here.
fn all_headers() -> Program {
    Program::new(
        "core_headers",
        r#"#include <gpuds/core/memory.cuh>
#include <gpuds/core/warp.cuh>
#include <gpuds/core/status.cuh>
#include <gpuds/core/hash.cuh>
#include <gpuds/core/work_queue.cuh>
struct pair { unsigned k, v; };
extern "C" __global__ void touch(unsigned* a, unsigned long long* b, unsigned* status) {
  using namespace gpuds;
  unsigned x = mem::ld_acquire(a) + mem::ld_relaxed(a) + mem::ld_nc(a);
  unsigned long long y = mem::ld_acquire(b) + mem::ld_relaxed(b) + mem::ld_nc(b);
  mem::st_release(a, x); mem::st_relaxed(a, x); mem::st_release(b, y); mem::st_relaxed(b, y);
  x += mem::cas_acq_rel(a, 1u, 2u) + mem::cas_acquire(a, 1u, 2u) + mem::cas_relaxed(a, 1u, 2u);
  y += mem::cas_acq_rel(b, 1ull, 2ull) + mem::cas_acquire(b, 1ull, 2ull) + mem::cas_relaxed(b, 1ull, 2ull);
  x += mem::exch_release(a, 0u) + mem::fetch_or_relaxed(a, 1u) + mem::fetch_and_relaxed(a, 1u);
  x += mem::fetch_add_relaxed(a, 1u);
  y += mem::fetch_add_relaxed(b, 1ull);
  mem::fence_acq_rel(); mem::fence_sc();
  pair p{warp::lane_id(), static_cast<unsigned>(warp::global_warp_id() + warp::warp_count())};
  p = warp::broadcast(p, 3);
  warp::work_share(p.k == 1, [&](int src) { x += src; return true; });
  work_queue::queue q(x != 0);
  for (int src = q.empty() ? -1 : q.front(); src >= 0; src = q.pop()) {
    const unsigned long long r = warp::broadcast(y, src);
    unsigned* at = a + src % 2;
    for (work_queue::budget b(4u, 8u);;) {
      const unsigned word = mem::ld_relaxed(at);
      if (word == static_cast<unsigned>(r)) break;
      const work_queue::visit v = b.depth < 3 ? work_queue::MOVED : work_queue::AGAIN;
      if (v == work_queue::MOVED) at = a + b.depth % 2;
      if (!b.spend(v)) { status::report(status, status::RETRY_LIMIT); break; }
    }
  }
  x += warp::tile<8>::rank() + warp::tile<8>::index_in_warp() + warp::tile<8>::mask();
  x += warp::tile<4>::ballot(x & 1) + warp::tile<16>::shfl(x, 2) + warp::tile<32>::any(x);
  hash::universal h{3u, 5u, static_cast<unsigned>(hash::UNIVERSAL_PRIME)};
  x += hash::murmur3_32(x) + h(x, 7u) + hash::bit_mix1(x) + hash::bit_mix2(x);
  y += hash::murmur3_64(y);
  status::report(status, status::RETRY_LIMIT);
  a[1] = x + p.v; b[1] = y;
}
"#,
    )
}

#[test]
fn core_headers_compile_for_every_target() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    for arch in gpuds_testkit::compile_targets() {
        let ptx = all_headers().compile(arch, Output::Ptx).expect("compile");
        let text = String::from_utf8(ptx.image).expect("PTX is text");
        assert!(text.contains(".entry touch"), "no entry in PTX for {arch}");
        assert!(text.contains(&format!(".target sm_{}", arch.number())));
    }
}

#[test]
fn cubin_compiles_without_a_gpu() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    let cubin = all_headers()
        .compile(Arch::new(9, 0), Output::Cubin)
        .expect("cubin");
    assert_eq!(&cubin.image[..4], b"\x7fELF", "a CUBIN is an ELF image");
}

#[test]
fn compile_errors_carry_the_log_and_the_program_name() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    let broken = Program::new(
        "broken_prog",
        "extern \"C\" __global__ void k() { undeclared_thing(); }",
    );
    match broken.compile(Arch::new(9, 0), Output::Ptx) {
        Err(Error::Compile { program, arch, log }) => {
            assert_eq!(program, "broken_prog");
            assert_eq!(arch, "sm_90");
            assert!(log.contains("undeclared_thing"), "log: {log}");
        }
        other => panic!("expected a compile error, got {other:?}"),
    }
}

#[test]
fn defines_reach_the_program() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    let program = Program::new(
        "defines",
        "#if WIDTH != 7\n#error WIDTH not passed\n#endif\nextern \"C\" __global__ void k(KEY* p) { p[0] = WIDTH; }",
    )
    .define("WIDTH", 7)
    .define("KEY", "unsigned long long");
    program
        .compile(Arch::new(8, 0), Output::Ptx)
        .expect("defines");
    let missing = program
        .define("WIDTH", 8)
        .compile(Arch::new(8, 0), Output::Ptx);
    assert!(
        matches!(missing, Err(Error::Compile { ref log, .. }) if log.contains("WIDTH not passed"))
    );
}

#[test]
fn in_memory_headers_resolve_nested_includes() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    let program = Program::new(
        "nested",
        "#include <mylib/outer.cuh>\nextern \"C\" __global__ void k(unsigned* p) { p[0] = outer(); }",
    )
    .header("mylib/outer.cuh", "#pragma once\n#include <mylib/inner.cuh>\n__device__ unsigned outer() { return inner() + 1; }")
    .header("mylib/inner.cuh", "#pragma once\n__device__ unsigned inner() { return 41; }");
    program
        .compile(Arch::new(9, 0), Output::Ptx)
        .expect("nested includes");
}

#[test]
fn layout_probe_compiles() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    let prelude = Program::new("layout_probe", "#include <gpuds/core/hash.cuh>");
    let program =
        gpuds_core::layout::layout_program(prelude, "gpuds::hash::universal", &["a", "b", "p"]);
    let ptx = program
        .compile(Arch::new(9, 0), Output::Ptx)
        .expect("layout probe");
    assert!(String::from_utf8_lossy(&ptx.image).contains(".entry gpuds_layout"));
}
