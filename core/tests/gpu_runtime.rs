//! GPU tests of the runtime: device handle, compile and launch, module caches, status
//! words, launch shapes, layout checks. Each skips without a GPU (see gpuds-testkit).

use gpuds_core::cudarc::driver::PushKernelArg;
use gpuds_core::hash::Universal;
use gpuds_core::{assert_layout, launch, Error, Gpu, Program, Status, StatusWord};

/// Tests here read the process-wide compile counter and set cache variables, so they run
/// one at a time even under a multi-threaded test runner.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[test]
fn device_info_is_sane() {
    let _serial = serial();
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let info = gpu.info();
    println!("{info:?}");
    assert!(!info.name.is_empty());
    assert!(info.compute_capability >= (7, 0));
    assert!(info.sm_count > 0 && info.l2_bytes > 0 && info.warp_size == 32);
    assert!(info.max_threads_per_sm >= 1024);
    let (free, total) = gpu.memory_info().expect("memory info");
    assert_eq!(total, info.total_memory);
    assert!(free > 0 && free <= total);
    assert_eq!(
        gpu.arch().number(),
        info.compute_capability.0 * 10 + info.compute_capability.1
    );
    let stream = gpu.new_stream().expect("new stream");
    stream.synchronize().expect("sync");
}

#[test]
fn a_missing_device_is_an_error_not_a_panic() {
    let _serial = serial();
    let Some(_gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let count = Gpu::device_count().expect("count");
    match Gpu::new(count + 7) {
        Err(Error::NoDevice { ordinal, count: c }) => {
            assert_eq!((ordinal, c), (count + 7, count));
        }
        other => panic!("expected NoDevice, got {other:?}"),
    }
}

const SCALE: &str = r#"
extern "C" __global__ void scale(unsigned* x, unsigned n) {
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    x[i] = x[i] * FACTOR + OFFSET;
  }
}
"#;

#[test]
fn compile_launch_and_module_cache() {
    let _serial = serial();
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let program = Program::new("scale", SCALE)
        .define("FACTOR", 3)
        .define("OFFSET", 1);
    let module = gpu.load(&program).expect("load");
    let loaded = gpu.loaded_module_count();
    let compiled = gpuds_core::nvrtc_compilations();
    // The same program again is an in-memory hit: no new module, no compilation.
    let again = gpu.load(&program).expect("load again");
    assert_eq!(gpu.loaded_module_count(), loaded);
    assert_eq!(gpuds_core::nvrtc_compilations(), compiled);
    drop(again);
    // Another define is another module.
    let other = program.clone().define("OFFSET", 2);
    gpu.load(&other).expect("load other");
    assert_eq!(gpu.loaded_module_count(), loaded + 1);

    let kernel = module.kernel("scale").expect("kernel");
    let n = 1_000_003usize;
    let host: Vec<u32> = (0..n as u32).collect();
    let stream = gpu.stream();
    let mut x = stream.clone_htod(&host).expect("htod");
    let cfg = gpu.grid_for(&kernel, n, 256).expect("grid");
    assert!(cfg.grid_dim.0 >= 1);
    let n32 = n as u32;
    let mut args = stream.launch_builder(kernel.func());
    args.arg(&mut x).arg(&n32);
    unsafe { args.launch(cfg) }.expect("launch");
    let out = stream.clone_dtoh(&x).expect("dtoh");
    assert!(out
        .iter()
        .zip(&host)
        .all(|(o, h)| *o == h.wrapping_mul(3).wrapping_add(1)));

    match module.kernel("no_such_kernel") {
        Err(Error::NoSuchKernel { program, kernel }) => {
            assert_eq!(
                (program.as_str(), kernel.as_str()),
                ("scale", "no_such_kernel")
            );
        }
        other => panic!("expected NoSuchKernel, got {other:?}"),
    }
}

#[test]
fn disk_cache_serves_later_loads_and_survives_corruption() {
    let _serial = serial();
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("gpuds-cache-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::env::set_var("GPUDS_CACHE_DIR", &dir);
    assert_eq!(gpuds_core::cache::dir().as_deref(), Some(dir.as_path()));
    let program = Program::new("scale_disk", SCALE)
        .define("FACTOR", 5)
        .define("OFFSET", std::process::id());
    let cubins = || -> Vec<std::path::PathBuf> {
        std::fs::read_dir(&dir)
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default()
    };
    let run = |gpu: &Gpu| {
        let kernel = gpu
            .load(&program)
            .expect("load")
            .kernel("scale")
            .expect("kernel");
        let stream = gpu.stream();
        let mut x = stream.clone_htod(&[1u32, 2]).expect("htod");
        let n = 2u32;
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&mut x).arg(&n);
        unsafe { args.launch(launch::shape(1, 32, 0)) }.expect("launch");
        assert_eq!(
            stream.clone_dtoh(&x).expect("dtoh")[0],
            5 + std::process::id()
        );
    };
    let before = gpuds_core::nvrtc_compilations();
    run(&gpu);
    assert_eq!(
        gpuds_core::nvrtc_compilations(),
        before + 1,
        "first load compiles"
    );
    assert_eq!(cubins().len(), 1, "one cached CUBIN");

    // Forgotten in memory, the module comes back from disk without NVRTC, also through
    // another handle.
    gpu.forget_modules();
    run(&Gpu::new(0).expect("second handle"));
    assert_eq!(
        gpuds_core::nvrtc_compilations(),
        before + 1,
        "served from disk"
    );

    // A corrupt entry is replaced by a fresh compilation, not reported as an error.
    std::fs::write(&cubins()[0], b"not a cubin").expect("corrupt");
    gpu.forget_modules();
    run(&gpu);
    assert_eq!(gpuds_core::nvrtc_compilations(), before + 2, "recompiled");
    assert_eq!(&std::fs::read(&cubins()[0]).expect("read")[..4], b"\x7fELF");

    assert_eq!(gpuds_core::cache::clear().expect("clear"), 1);
    std::env::set_var("GPUDS_DISK_CACHE", "0");
    assert!(gpuds_core::cache::dir().is_none());
    gpu.forget_modules();
    run(&gpu);
    assert_eq!(
        gpuds_core::nvrtc_compilations(),
        before + 3,
        "disk cache off"
    );
    assert!(cubins().is_empty());
    std::env::remove_var("GPUDS_DISK_CACHE");
    std::env::remove_var("GPUDS_CACHE_DIR");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn status_words_carry_flags_from_many_threads() {
    let _serial = serial();
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let program = Program::new(
        "status",
        r#"#include <gpuds/core/status.cuh>
extern "C" __global__ void flag(unsigned n, unsigned* status) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  if (i % 3 == 0) gpuds::status::report(status, gpuds::status::RETRY_LIMIT);
  if (i == n - 1) gpuds::status::report(status, gpuds::status::POOL_EXHAUSTED);
  if (i == 5) gpuds::status::report(status, 1u << 20);
}
"#,
    );
    let kernel = gpu
        .load(&program)
        .expect("load")
        .kernel("flag")
        .expect("kernel");
    let mut word = StatusWord::new(&gpu).expect("word");
    assert_eq!(word.take().expect("take"), Status::OK);
    let n = 1u32 << 20;
    let stream = gpu.stream();
    let mut args = stream.launch_builder(kernel.func());
    args.arg(&n).arg(word.slice_mut());
    unsafe { args.launch(launch::one_thread_per_item(n as usize, 256).expect("shape")) }
        .expect("launch");
    let status = word.take().expect("take");
    assert_eq!(
        status,
        Status::RETRY_LIMIT | Status::POOL_EXHAUSTED | Status(1 << 20)
    );
    assert_eq!(
        status.to_string(),
        "pool exhausted, retry limit reached, structure flags 0x10"
    );
    // take() cleared it.
    assert!(word.check().is_ok());
    // n = 0 sets nothing; a single flag through check() is an error.
    let one = 1u32;
    let mut args = stream.launch_builder(kernel.func());
    args.arg(&one).arg(word.slice_mut());
    unsafe { args.launch(launch::one_thread_per_item(1, 32).expect("shape")) }.expect("launch");
    match word.check() {
        Err(Error::Status(s)) => assert_eq!(s, Status::RETRY_LIMIT | Status::POOL_EXHAUSTED),
        other => panic!("expected a status error, got {other:?}"),
    }
}

#[test]
fn persistent_grids_are_resident() {
    let _serial = serial();
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    // Every block arrives at a grid-wide counter and waits (boundedly) for all others:
    // this only completes when the whole grid is resident at once.
    let program = Program::new(
        "barrier",
        r#"#include <gpuds/core/memory.cuh>
#include <gpuds/core/status.cuh>
extern "C" __global__ void all_resident(unsigned* arrived, unsigned* status) {
  __shared__ unsigned dummy[4096];
  dummy[threadIdx.x] = threadIdx.x;
  __syncthreads();
  if (threadIdx.x == 0) {
    gpuds::mem::fetch_add_relaxed(arrived, 1u);
    unsigned spins = 0;
    while (gpuds::mem::ld_acquire(arrived) < gridDim.x) {
      if (++spins > (1u << 26)) { gpuds::status::report(status, gpuds::status::RETRY_LIMIT); break; }
      __nanosleep(64);
    }
  }
  if (dummy[threadIdx.x] != threadIdx.x) gpuds::status::report(status, gpuds::status::CORRUPTED);
}
"#,
    );
    let kernel = gpu
        .load(&program)
        .expect("load")
        .kernel("all_resident")
        .expect("kernel");
    let cfg = gpu.persistent_grid(&kernel, 256, 0).expect("grid");
    assert!(
        cfg.grid_dim.0 >= gpu.info().sm_count,
        "at least one block per SM"
    );
    let stream = gpu.stream();
    let mut arrived = stream.alloc_zeros::<u32>(1).expect("alloc");
    let mut word = StatusWord::new(&gpu).expect("word");
    let mut args = stream.launch_builder(kernel.func());
    args.arg(&mut arrived).arg(word.slice_mut());
    unsafe { args.launch(cfg) }.expect("launch");
    word.check().expect("every block saw every other");
    assert_eq!(
        stream.clone_dtoh(&arrived).expect("dtoh")[0],
        cfg.grid_dim.0
    );
    assert!(
        gpu.grid_for(&kernel, 100, 100).is_err(),
        "block sizes are multiples of 32"
    );
    assert_eq!(gpu.grid_for(&kernel, 0, 256).expect("empty").grid_dim.0, 1);
}

#[test]
fn acquire_release_latch_serializes_increments() {
    let _serial = serial();
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    // One elected lane per warp takes a latch with an acquire CAS, updates two plain words,
    // and drops it with a release store. If ordering were wrong, the words would diverge.
    let program = Program::new(
        "latch",
        r#"#include <gpuds/core/memory.cuh>
#include <gpuds/core/status.cuh>
#include <gpuds/core/warp.cuh>
extern "C" __global__ void locked_adds(unsigned* latch, unsigned* a, unsigned* b,
                                       unsigned rounds, unsigned* status) {
  using namespace gpuds;
  if (warp::lane_id() != 0) return;
  for (unsigned r = 0; r < rounds; ++r) {
    unsigned spins = 0;
    while (mem::cas_acquire(latch, 0u, 1u) != 0u) {
      if (++spins > (1u << 24)) { status::report(status, status::RETRY_LIMIT); return; }
      __nanosleep(32);
    }
    unsigned va = mem::ld_relaxed(a);
    unsigned vb = mem::ld_relaxed(b);
    mem::st_relaxed(a, va + 1);
    mem::st_relaxed(b, vb + 2);
    mem::st_release(latch, 0u);
  }
}
"#,
    );
    let kernel = gpu
        .load(&program)
        .expect("load")
        .kernel("locked_adds")
        .expect("kernel");
    let stream = gpu.stream();
    let mut latch = stream.alloc_zeros::<u32>(1).expect("alloc");
    let mut a = stream.alloc_zeros::<u32>(1).expect("alloc");
    let mut b = stream.alloc_zeros::<u32>(1).expect("alloc");
    let mut word = StatusWord::new(&gpu).expect("word");
    let (blocks, threads, rounds) = (64u32, 256u32, 8u32);
    let mut args = stream.launch_builder(kernel.func());
    args.arg(&mut latch)
        .arg(&mut a)
        .arg(&mut b)
        .arg(&rounds)
        .arg(word.slice_mut());
    unsafe { args.launch(launch::shape(blocks, threads, 0)) }.expect("launch");
    word.check().expect("no retry limit");
    let expected = blocks * threads / 32 * rounds;
    assert_eq!(stream.clone_dtoh(&a).expect("a")[0], expected);
    assert_eq!(stream.clone_dtoh(&b).expect("b")[0], 2 * expected);
}

#[test]
fn work_share_serves_every_request_once() {
    let _serial = serial();
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    // Each lane with a request asks for `need[lane]` steps; the warp serves requests one
    // at a time. Every lane counts how many times it took part in each src's steps.
    let program = Program::new(
        "work_share",
        r#"#include <gpuds/core/warp.cuh>
extern "C" __global__ void serve(const unsigned* need, unsigned* served, unsigned* order) {
  using namespace gpuds;
  const unsigned lane = warp::lane_id();
  const unsigned gw = static_cast<unsigned>(warp::global_warp_id());
  const unsigned my_need = need[gw * 32 + lane];
  unsigned steps = 0;
  unsigned turn = 0;
  warp::work_share(my_need != 0, [&](int src) {
    const unsigned src_need = __shfl_sync(warp::FULL_MASK, my_need, src);
    ++steps;
    if (steps < src_need) return false;
    if (lane == static_cast<unsigned>(src)) { served[gw * 32 + lane] += 1; }
    if (lane == 0) { order[gw * 32 + turn] = src; }
    ++turn;
    steps = 0;
    return true;
  });
}
"#,
    );
    let kernel = gpu
        .load(&program)
        .expect("load")
        .kernel("serve")
        .expect("kernel");
    let warps = 512usize;
    let mut state = 0x1234_5678u32;
    let need: Vec<u32> = (0..warps * 32)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            if state.is_multiple_of(3) {
                0
            } else {
                state % 5 + 1
            }
        })
        .collect();
    let stream = gpu.stream();
    let d_need = stream.clone_htod(&need).expect("htod");
    let mut served = stream.alloc_zeros::<u32>(warps * 32).expect("alloc");
    let mut order = stream.alloc_zeros::<u32>(warps * 32).expect("alloc");
    let mut args = stream.launch_builder(kernel.func());
    args.arg(&d_need).arg(&mut served).arg(&mut order);
    unsafe { args.launch(launch::shape((warps / 4) as u32, 128, 0)) }.expect("launch");
    let served = stream.clone_dtoh(&served).expect("served");
    let order = stream.clone_dtoh(&order).expect("order");
    for w in 0..warps {
        let lanes: Vec<u32> = (0..32)
            .filter(|&l| need[w * 32 + l] != 0)
            .map(|l| l as u32)
            .collect();
        for l in 0..32 {
            assert_eq!(
                served[w * 32 + l],
                u32::from(need[w * 32 + l] != 0),
                "warp {w} lane {l}"
            );
        }
        assert_eq!(
            &order[w * 32..w * 32 + lanes.len()],
            lanes.as_slice(),
            "warp {w}: lowest lane first"
        );
    }
}

#[test]
fn tiles_partition_the_warp() {
    let _serial = serial();
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let program = Program::new(
        "tiles",
        r#"#include <gpuds/core/warp.cuh>
template <unsigned T>
__device__ void tile_case(unsigned* out, unsigned base) {
  using tile = gpuds::warp::tile<T>;
  const unsigned lane = gpuds::warp::lane_id();
  const unsigned v = lane * 7 + 1;
  out[base + lane * 4 + 0] = tile::rank() | (tile::index_in_warp() << 8);
  out[base + lane * 4 + 1] = tile::mask();
  out[base + lane * 4 + 2] = tile::ballot(lane % 3 == 0);
  out[base + lane * 4 + 3] = tile::shfl(v, T - 1);
}
extern "C" __global__ void tiles(unsigned* out) {
  tile_case<1>(out, 0); tile_case<4>(out, 128); tile_case<8>(out, 256);
  tile_case<16>(out, 384); tile_case<32>(out, 512);
}
"#,
    );
    let kernel = gpu
        .load(&program)
        .expect("load")
        .kernel("tiles")
        .expect("kernel");
    let stream = gpu.stream();
    let mut out = stream.alloc_zeros::<u32>(640).expect("alloc");
    let mut args = stream.launch_builder(kernel.func());
    args.arg(&mut out);
    unsafe { args.launch(launch::shape(1, 32, 0)) }.expect("launch");
    let out = stream.clone_dtoh(&out).expect("dtoh");
    for (case, t) in [1u32, 4, 8, 16, 32].into_iter().enumerate() {
        for lane in 0..32u32 {
            let at = case * 128 + lane as usize * 4;
            let (rank, index) = (lane % t, lane / t);
            assert_eq!(out[at], rank | (index << 8), "tile {t} lane {lane} rank");
            let mask = if t == 32 {
                u32::MAX
            } else {
                ((1u32 << t) - 1) << (index * t)
            };
            assert_eq!(out[at + 1], mask, "tile {t} lane {lane} mask");
            let ballot = (0..t)
                .filter(|r| (index * t + r) % 3 == 0)
                .fold(0, |m, r| m | 1 << r);
            assert_eq!(out[at + 2], ballot, "tile {t} lane {lane} ballot");
            assert_eq!(
                out[at + 3],
                (index * t + t - 1) * 7 + 1,
                "tile {t} lane {lane} shfl"
            );
        }
    }
}

#[test]
fn universal_hash_layout_matches_its_cpp_twin() {
    let _serial = serial();
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let prelude = Program::new("layout_universal", "#include <gpuds/core/hash.cuh>");
    assert_layout!(&gpu, prelude, Universal, "gpuds::hash::universal", a, b, p);
}

/// Bytes the device's stream-ordered pool holds (in use and kept): this process's own.
fn pool_reserved(gpu: &Gpu) -> u64 {
    use gpuds_core::cudarc::driver::{result, sys::CUmemPool_attribute as A};
    let mut value = 0u64;
    // SAFETY: the device is the handle's; the attribute's value is a cuuint64_t.
    unsafe {
        let pool = result::device::get_mem_pool(gpu.context().cu_device()).unwrap();
        result::mem_pool::get_attribute(
            pool,
            A::CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT,
            (&mut value as *mut u64).cast(),
        )
        .unwrap();
    }
    value
}

/// The stream-ordered pool keeps freed memory (Gpu::new), gives it back on request and
/// before `memory_info` reads the free memory, and keeps a limit set before a later
/// `Gpu::new`.
#[test]
fn freed_memory_is_kept_and_given_back() {
    let _serial = serial();
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let gib = 1u64 << 30;
    let free_a_gib = |gpu: &Gpu| {
        let held = gpu.stream().alloc_zeros::<u8>(gib as usize).unwrap();
        drop(held);
        gpu.synchronize().unwrap();
    };
    gpu.synchronize().unwrap();
    gpu.release_cached_memory().unwrap();
    let base = pool_reserved(&gpu);
    free_a_gib(&gpu);
    assert!(
        pool_reserved(&gpu) >= base + gib,
        "the pool keeps the freed GiB"
    );
    gpu.memory_info().unwrap();
    assert!(
        pool_reserved(&gpu) < base + gib,
        "memory_info gives the kept memory back"
    );
    free_a_gib(&gpu);
    gpu.release_cached_memory().unwrap();
    assert!(
        pool_reserved(&gpu) < base + gib,
        "release_cached_memory gives it back"
    );
    // A limit stays across a later handle; 1 byte keeps nothing.
    gpu.set_cached_memory_limit(1).unwrap();
    let again = Gpu::new(gpu.info().ordinal).unwrap();
    free_a_gib(&again);
    assert!(
        pool_reserved(&again) < base + gib,
        "with a limit of 1 byte the pool gives freed memory back at the synchronization"
    );
    gpu.set_cached_memory_limit(u64::MAX).unwrap();
}
