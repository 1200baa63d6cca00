//! The GPU test harness.
//!
//! A GPU test asks for the device with [`gpu`]. On a machine without a CUDA device it
//! prints `skipped: no CUDA device` and gets `None`, so the test returns early and passes;
//! with `GPUDS_REQUIRE_GPU=1` in the environment (the GPU runner sets it) the same test
//! panics instead, so a GPU run can never pass by skipping. Tests that only need NVRTC
//! (compile checks) use [`nvrtc`], governed by `GPUDS_REQUIRE_NVRTC=1` the same way.

use std::sync::OnceLock;

use gpuds_core::{Arch, Gpu, Output, Program};

fn required(var: &str) -> bool {
    std::env::var(var).is_ok_and(|v| v == "1" || v.eq_ignore_ascii_case("true"))
}

/// The shared device 0 for this test process, or `None` (after printing why) when there
/// is none. Panics instead of returning `None` when `GPUDS_REQUIRE_GPU=1`.
///
/// The handle is opened once per process, so tests share its module cache.
///
/// ```
/// let Some(gpu) = gpuds_testkit::gpu() else { return };
/// assert!(gpu.info().sm_count > 0);
/// ```
pub fn gpu() -> Option<Gpu> {
    static GPU: OnceLock<Result<Gpu, String>> = OnceLock::new();
    let opened = GPU.get_or_init(|| Gpu::new(0).map_err(|e| e.to_string()));
    match opened {
        Ok(gpu) => Some(gpu.clone()),
        Err(why) => {
            if required("GPUDS_REQUIRE_GPU") {
                panic!("GPUDS_REQUIRE_GPU=1 but no CUDA device could be opened: {why}");
            }
            println!("skipped: no CUDA device ({why})");
            None
        }
    }
}

/// `true` when `gpu` has less memory in all than `bytes`, so that a request for `bytes`
/// must fail with an out-of-memory error; otherwise prints `skipped: the device holds
/// {bytes} bytes` and returns `false` (the out-of-memory test is then skipped).
///
/// ```
/// let Some(gpu) = gpuds_testkit::gpu() else { return };
/// assert!(gpuds_testkit::memory_below(&gpu, u64::MAX));
/// ```
pub fn memory_below(gpu: &Gpu, bytes: u64) -> bool {
    if (gpu.info().total_memory as u64) < bytes {
        return true;
    }
    println!("skipped: the device holds {bytes} bytes");
    false
}

/// `true` when NVRTC can be loaded; otherwise prints `skipped: no NVRTC` and returns
/// `false`. Panics instead when `GPUDS_REQUIRE_NVRTC=1` (CI sets it).
pub fn nvrtc() -> bool {
    match gpuds_core::ensure_nvrtc() {
        Ok(()) => true,
        Err(why) => {
            if required("GPUDS_REQUIRE_NVRTC") {
                panic!("GPUDS_REQUIRE_NVRTC=1 but NVRTC could not be loaded: {why}");
            }
            println!("skipped: no NVRTC ({why})");
            false
        }
    }
}

/// The architectures every kernel module must compile for: sm_70, sm_75, sm_80 and
/// sm_90, less those the loaded NVRTC cannot target (NVRTC 13 dropped sm_70). With
/// `GPUDS_EXPECT_SM70=1` (CI's second pass, with NVRTC 12) a missing sm_70 panics, so
/// that pass cannot silently skip it. Call only after [`nvrtc`] returned `true`.
pub fn compile_targets() -> Vec<Arch> {
    let supported = gpuds_core::nvrtc_supported_archs().expect("NVRTC lists its targets");
    let wanted = [
        Arch::new(7, 0),
        Arch::new(7, 5),
        Arch::new(8, 0),
        Arch::new(9, 0),
    ];
    let archs: Vec<Arch> = wanted
        .into_iter()
        .filter(|a| supported.contains(a))
        .collect();
    if required("GPUDS_EXPECT_SM70") {
        assert!(
            archs.contains(&Arch::new(7, 0)),
            "GPUDS_EXPECT_SM70=1 but this NVRTC cannot target sm_70: {supported:?}"
        );
    }
    assert!(
        archs.contains(&Arch::new(8, 0)) && archs.contains(&Arch::new(9, 0)),
        "this NVRTC cannot target sm_80 and sm_90: {supported:?}"
    );
    archs
}

/// The PTX of `program` for `arch`; panics naming the program and the target when NVRTC
/// refuses it. Call only after [`nvrtc`] returned `true`.
///
/// ```no_run
/// if gpuds_testkit::nvrtc() {
///     let program = gpuds_core::Program::new("k", "extern \"C\" __global__ void k() {}");
///     let text = gpuds_testkit::ptx(&program, gpuds_core::Arch::new(9, 0));
///     assert!(text.contains(".entry k("));
/// }
/// ```
pub fn ptx(program: &Program, arch: Arch) -> String {
    let image = program
        .compile(arch, Output::Ptx)
        .unwrap_or_else(|e| panic!("{} for {arch}: {e}", program.name()));
    String::from_utf8(image.image).expect("PTX is text")
}

/// Compiles every program to a CUBIN for sm_90 (which also runs the assembler, with its
/// register and shared-memory limits) and checks that each is an ELF image; panics naming
/// the program that fails. Call only after [`nvrtc`] returned `true`.
///
/// ```no_run
/// if gpuds_testkit::nvrtc() {
///     gpuds_testkit::assert_cubins(&gpuds_core::programs());
/// }
/// ```
pub fn assert_cubins(programs: &[Program]) {
    for program in programs {
        let cubin = program
            .compile(Arch::new(9, 0), Output::Cubin)
            .unwrap_or_else(|e| panic!("{}: {e}", program.name()));
        assert_eq!(
            &cubin.image[..4],
            b"\x7fELF",
            "{} is no ELF image",
            program.name()
        );
    }
}
