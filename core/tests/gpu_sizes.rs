//! GPU tests of checked sizes in gpuds-core (issue 23, part 3): allocations whose byte
//! count overflows are `CapacityOverflow` before the driver is called, allocations past
//! the device's memory are `OutOfMemory` naming what they were for, and the primitives'
//! length limits are `CapacityOverflow` with their scratch still usable. Without a GPU
//! each test prints `skipped: no CUDA device` and passes.

use gpuds_core::primitives::{RadixSorter, Scanner};
use gpuds_core::Error;
use gpuds_testkit::strategy::capacity_edges;

#[test]
fn allocations_overflow_or_run_out_of_memory_cleanly() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let (_, total) = gpu.memory_info().unwrap();
    for len in capacity_edges() {
        let Ok(len) = usize::try_from(len) else {
            continue;
        };
        let bytes = (len as u128) * 8;
        if len > 1 << 16 && bytes <= total as u128 {
            // Would allocate up to the device's memory: not in a test.
            continue;
        }
        // SAFETY: never read.
        let uninit = unsafe { gpu.alloc_uninit::<u64>(len, "a test buffer") };
        let zeroed = gpu.alloc_zeroed::<u64>(len, "a test buffer");
        for result in [uninit.map(|b| b.len()), zeroed.map(|b| b.len())] {
            match result {
                Ok(n) => assert_eq!(n, len),
                Err(Error::InvalidArgument(_)) => assert_eq!(len, 0),
                Err(Error::CapacityOverflow(_)) => assert!(bytes > u64::MAX as u128, "{len}"),
                Err(Error::OutOfMemory { what, bytes: b }) => {
                    assert_eq!(what, "a test buffer");
                    assert_eq!(u128::from(b), bytes);
                    assert!(bytes > total as u128, "{len}");
                }
                Err(e) => panic!("{len} words: {e}"),
            }
        }
    }
    // The device still works after the failed allocations.
    let ok = gpu.alloc_zeroed::<u32>(1024, "a test buffer").unwrap();
    assert_eq!(gpu.stream().clone_dtoh(&ok).unwrap(), vec![0; 1024]);
}

#[test]
fn scan_reserve_past_one_launch_is_an_overflow_and_the_scanner_works_on() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let mut scanner = Scanner::new(&gpu).unwrap();
    scanner.reserve(1 << 12).unwrap();
    for len in [1usize << 45, usize::MAX, usize::MAX - 50, 1 << 63] {
        let e = scanner.reserve(len).unwrap_err();
        assert!(matches!(e, Error::CapacityOverflow(_)), "{len}: {e}");
    }
    let stream = gpu.stream();
    let input = stream.clone_htod(&[3u64, 0, 2, 5]).unwrap();
    let mut output = stream.alloc_zeros::<u64>(4).unwrap();
    let mut total = stream.alloc_zeros::<u64>(1).unwrap();
    scanner
        .exclusive_scan(&input, &mut output, &mut total)
        .unwrap();
    assert_eq!(stream.clone_dtoh(&output).unwrap(), vec![0, 3, 3, 5]);
    assert_eq!(stream.clone_dtoh(&total).unwrap(), vec![10]);
}

#[test]
fn sorts_past_their_length_limit_are_refused_untouched() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let (_, total) = gpu.memory_info().unwrap();
    // 2^30 keys of 4 bytes (4 GiB): one more than a sort takes. Only where that is a
    // small part of the device.
    if (total as u64) < 32 << 30 {
        println!("skipped: the device has less than 32 GiB");
        return;
    }
    let n = 1usize << 30;
    let mut keys = gpu.alloc_zeroed::<u32>(n, "test keys").unwrap();
    gpu.stream()
        .memcpy_htod(&[7u32, 1], &mut keys.slice_mut(..2))
        .unwrap();
    let mut sorter = RadixSorter::new(&gpu).unwrap();
    let e = sorter.sort_keys(&mut keys).unwrap_err();
    assert!(matches!(e, Error::CapacityOverflow(_)), "{e}");
    assert_eq!(
        gpu.stream().clone_dtoh(&keys.slice(..2)).unwrap(),
        vec![7, 1]
    );
}
