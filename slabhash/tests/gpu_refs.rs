//! The device refs: layouts against their C++ twins, the crate documentation's user
//! kernel, and the bucket iterator and SEARCHALL through a user kernel.

use gpuds_core::assert_layout;
use gpuds_slabhash::{SlabHashConfig, TableRef};
use gpuds_testkit::gpu;

// The crate documentation's example (its imports included).
include!("doc/user_kernel.rs");

fn prelude() -> Program {
    Program::new(
        "slabhash_layout",
        "#include <gpuds/slabhash/map_ref.cuh>\n#include <gpuds/slabhash/set_ref.cuh>",
    )
    .headers(gpuds_slabhash::cuda_headers())
}

#[test]
fn refs_match_their_cpp_twins() {
    let Some(gpu) = gpu() else { return };
    for cpp in [
        "gpuds::slabhash::map_ref<unsigned, unsigned>",
        "gpuds::slabhash::set_ref<unsigned>",
    ] {
        assert_layout!(
            &gpu,
            prelude(),
            TableRef,
            cpp,
            buckets,
            counters,
            status,
            alloc,
            hash,
            num_buckets,
            unique_keys,
            step_cap
        );
    }
    assert_eq!(
        std::mem::size_of::<gpuds_slabhash::MapRef<u32, u32>>(),
        std::mem::size_of::<TableRef>()
    );
}

#[test]
fn the_documentation_example_runs() {
    let Some(gpu) = gpu() else { return };
    squares_through_a_ref(&gpu).unwrap();
}

/// A user kernel walks every bucket with the iterator and counts live keys per warp;
/// the total must be the map's length.
#[test]
fn the_bucket_iterator_sees_every_live_key() {
    let Some(gpu) = gpu() else { return };
    let config = SlabHashConfig {
        buckets: 37,
        ..Default::default()
    };
    let mut map = SlabHashMap::<u32, u32>::with_config(&gpu, config).unwrap();
    let keys: Vec<u32> = (0..5000).collect();
    map.insert_many(&keys, &keys).unwrap();
    map.remove_many(&keys[..1000]).unwrap();
    let program = Program::new(
        "walk",
        r#"#include <gpuds/slabhash/map_ref.cuh>
           using namespace gpuds::slabhash;
           extern "C" __global__ void walk(map_ref<unsigned, unsigned> map,
                                           unsigned long long* live, unsigned long long* sum) {
               const unsigned b = blockIdx.x;  // one warp per bucket
               unsigned long long count = 0, total = 0;
               for (auto it = map.bucket(b); it.valid(); it.next()) {
                   const unsigned keys = it.live_key_lanes();
                   const unsigned value = __shfl_down_sync(0xffffffffu, it.word(), 1);
                   if ((keys >> threadIdx.x) & 1u) total += value;
                   count += __popc(keys);
               }
               if (threadIdx.x == 0) atomicAdd(live, count);
               atomicAdd(sum, total);
           }"#,
    )
    .headers(gpuds_slabhash::cuda_headers());
    let kernel = gpu.load(&program).unwrap().kernel("walk").unwrap();
    let stream = gpu.stream();
    let mut live = stream.alloc_zeros::<u64>(1).unwrap();
    let mut sum = stream.alloc_zeros::<u64>(1).unwrap();
    let r = map.device_ref();
    let mut args = stream.launch_builder(kernel.func());
    args.arg(&r).arg(&mut live).arg(&mut sum);
    unsafe { args.launch(launch::shape(37, 32, 0)) }.unwrap();
    assert_eq!(stream.clone_dtoh(&live).unwrap(), vec![4000]);
    let expected: u64 = (1000..5000u64).sum();
    assert_eq!(stream.clone_dtoh(&sum).unwrap(), vec![expected]);
}
