//! Host-side costs that users pay on every call: finding an already loaded module
//! (`gpu.load` on a cache hit, which fingerprints the program), building a program, and
//! the host twins of the device hash functions.
//!
//! `cargo bench -p gpuds-benches --bench host`. Without a GPU the module-cache benchmark
//! is skipped and only the GPU-free ones run.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use gpuds_core::hash::{murmur3_32, Universal};
use gpuds_core::Gpu;

fn module_cache_hit(c: &mut Criterion) {
    let Ok(gpu) = Gpu::new(0) else {
        println!("skipped module_cache_hit: no CUDA device");
        return;
    };
    let program = gpuds_benches::kernels::limits_program();
    if let Err(e) = gpu.load(&program) {
        println!("skipped module_cache_hit: {e}");
        return;
    }
    c.bench_function("gpu.load, cached module", |b| {
        b.iter(|| gpu.load(black_box(&program)).map(|m| m.kernel("copy16")))
    });
}

fn program_build(c: &mut Criterion) {
    c.bench_function("Program::new + 2 defines", |b| {
        b.iter(|| {
            gpuds_benches::kernels::limits_program()
                .define("KEY_TYPE", black_box("unsigned"))
                .define("BUCKET", black_box(16))
        })
    });
}

fn hash_twins(c: &mut Criterion) {
    let keys: Vec<u32> = (0..4096u32).map(|i| i.wrapping_mul(0x9e37_79b9)).collect();
    let universal = Universal::from_seed(7);
    let mut group = c.benchmark_group("hash twins");
    group.throughput(Throughput::Elements(keys.len() as u64));
    group.bench_function("murmur3_32", |b| {
        b.iter(|| {
            black_box(&keys)
                .iter()
                .fold(0u32, |a, &k| a ^ murmur3_32(k))
        })
    });
    group.bench_function("universal bucket", |b| {
        b.iter(|| {
            black_box(&keys)
                .iter()
                .fold(0u32, |a, &k| a ^ universal.bucket(k, 1 << 20))
        })
    });
    group.finish();
}

criterion_group!(host, module_cache_hit, program_build, hash_twins);
criterion_main!(host);
