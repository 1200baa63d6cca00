use gpuds_core::cudarc::driver::PushKernelArg;
use gpuds_core::{launch, Gpu, Program};
use gpuds_slabhash::SlabHashMap;

/// Inserts i -> i * i for i < 2^16 from a user kernel, through the map's device ref.
fn squares_through_a_ref(gpu: &Gpu) -> Result<(), gpuds_slabhash::Error> {
    let mut map = SlabHashMap::<u32, u32>::new(gpu, 1 << 16)?;
    let program = Program::new(
        "squares",
        r#"#include <gpuds/slabhash/map_ref.cuh>
           using namespace gpuds::slabhash;
           // Every thread inserts i -> i * i; all lanes of every warp take part.
           extern "C" __global__ void squares(map_ref<unsigned, unsigned> map, unsigned n) {
               const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
               auto allocator = map.make_allocator();      // once per warp
               unsigned old;
               map.replace(allocator, i < n, i, i * i, old);
           }"#,
    )
    .headers(gpuds_slabhash::cuda_headers());
    let kernel = gpu.load(&program)?.kernel("squares")?;
    let n = 1u32 << 16;
    map.reserve(n as usize)?; // the kernel may link new slabs
    let r = map.device_ref();
    let mut args = gpu.stream().launch_builder(kernel.func());
    args.arg(&r).arg(&n);
    // SAFETY: the kernel takes a map_ref<unsigned, unsigned> and an unsigned.
    unsafe { args.launch(launch::one_thread_per_item(n as usize, 128)?) }
        .map_err(gpuds_core::Error::from)?;
    assert_eq!(map.len()?, n as usize);
    assert_eq!(map.get_many(&[3, 7])?, vec![Some(9), Some(49)]);
    map.validate()?;
    Ok(())
}
