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

/// A sort past 2^30 - 1 elements (the most the 32-bit look-back words count) takes the
/// module of 64-bit counts: 2^30 + 2^20 random keys (4 GiB, and 4 GiB of the sorter's
/// second buffer) come out sorted, a permutation of the input (checked by two
/// fingerprints of the multiset). Elements land at indices past 2^30, and the digits'
/// running counts pass 2^30 - 1, where a 30-bit count would wrap.
#[test]
fn sorts_past_two_pow_30_elements() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let (_, total) = gpu.memory_info().unwrap();
    // Only where 8 GiB is a small part of the device.
    if (total as u64) < 32 << 30 {
        println!("skipped: the device has less than 32 GiB");
        return;
    }
    let n = (1usize << 30) + (1 << 20);
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let keys: Vec<u32> = (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 16) as u32
        })
        .collect();
    let fingerprint = |ks: &[u32]| {
        ks.iter().fold((0u64, 0u64), |(sum, mix), &k| {
            let h = (k as u64 ^ 0x9e37_79b9).wrapping_mul(0xff51_afd7_ed55_8ccd);
            (sum.wrapping_add(k as u64), mix ^ (h ^ h >> 29))
        })
    };
    let want = fingerprint(&keys);
    let mut device = gpu.stream().clone_htod(&keys).unwrap();
    drop(keys);
    let mut sorter = RadixSorter::new(&gpu).unwrap();
    sorter.sort_keys(&mut device).unwrap();
    let got = gpu.stream().clone_dtoh(&device).unwrap();
    assert_eq!(got.len(), n);
    assert!(got.windows(2).all(|w| w[0] <= w[1]), "not sorted");
    assert_eq!(fingerprint(&got), want, "not a permutation of the input");
}
