//! The device refs: layouts against their C++ twins for every key and value type, the
//! crate documentation's user kernel, and the bucket iterator through a user kernel for
//! every type.

mod common;

use gpuds_core::assert_layout;
use gpuds_slabhash::{MapRef, SetRef, SlabHashConfig, SlabKey, TableRef};
use gpuds_testkit::gpu;

use common::{n, TestValue};

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
        "gpuds::slabhash::map_ref<unsigned, unsigned long long>",
        "gpuds::slabhash::map_ref<unsigned long long, unsigned>",
        "gpuds::slabhash::map_ref<unsigned long long, unsigned long long>",
        "gpuds::slabhash::set_ref<unsigned>",
        "gpuds::slabhash::set_ref<unsigned long long>",
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
    for size in [
        std::mem::size_of::<MapRef<u32, u32>>(),
        std::mem::size_of::<MapRef<u32, u64>>(),
        std::mem::size_of::<MapRef<u64, u32>>(),
        std::mem::size_of::<MapRef<u64, u64>>(),
        std::mem::size_of::<SetRef<u32>>(),
        std::mem::size_of::<SetRef<u64>>(),
    ] {
        assert_eq!(size, std::mem::size_of::<TableRef>());
    }
}

#[test]
fn the_documentation_example_runs() {
    let Some(gpu) = gpu() else { return };
    squares_through_a_ref(&gpu).unwrap();
}

for_every_map_type!(the_bucket_iterator_sees_every_live_key);

/// A user kernel walks every bucket with the iterator and counts live keys, sums their
/// keys and values (every word of them) per warp; the totals must be the map's.
fn the_bucket_iterator_sees_every_live_key<K: SlabKey, V: TestValue>() {
    let Some(gpu) = gpu() else { return };
    let config = SlabHashConfig {
        buckets: 37,
        ..Default::default()
    };
    let mut map = SlabHashMap::<K, V>::with_config(&gpu, config).unwrap();
    // Keys and values that use their high words (wrapping for 32-bit types).
    let keys: Vec<K> = (0..5000u64).map(|i| n((i << 32) | i)).collect();
    let values: Vec<V> = (0..5000u64).map(|i| n(((i + 7) << 33) | (3 * i))).collect();
    map.insert_many(&keys, &values).unwrap();
    map.remove_many(&keys[..1000]).unwrap();
    let program = Program::new(
        "walk",
        r#"#include <gpuds/slabhash/map_ref.cuh>
           using namespace gpuds::slabhash;
           extern "C" __global__ void walk(map_ref<KEY_T, VALUE_T> map, unsigned long long* live,
                                           unsigned long long* sum) {
               const unsigned b = blockIdx.x;  // one warp per bucket
               unsigned long long count = 0, total = 0;
               for (auto it = map.bucket(b); it.valid(); it.next()) {
                   for (unsigned keys = it.live_key_lanes(); keys != 0; keys &= keys - 1) {
                       const unsigned at = __ffs(keys) - 1;
                       total += static_cast<unsigned long long>(it.key(at)) + it.value(at);
                       ++count;
                   }
               }
               if (threadIdx.x == 0) {
                   atomicAdd(live, count);
                   atomicAdd(sum, total);
               }
           }"#,
    )
    .define("KEY_T", K::CUDA_TYPE)
    .define("VALUE_T", V::CUDA_TYPE)
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
    let expected = (1000..5000).fold(0u64, |s, i| {
        s.wrapping_add(keys[i].to_u64())
            .wrapping_add(values[i].to_u64())
    });
    assert_eq!(stream.clone_dtoh(&sum).unwrap(), vec![expected]);
}
