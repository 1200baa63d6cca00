//! GPU tests of the device primitives against the CPU: radix sort (keys, pairs, bit
//! ranges), exclusive scan, compaction, fill and iota, on seeded random inputs at
//! awkward sizes (around warps and tiles) and up to 2^26 elements.

use gpuds_core::primitives::{compact, exclusive_scan, fill, iota, RadixSorter};
use gpuds_core::{DeviceKey, DeviceType, DeviceValue, Error, Gpu};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Sizes around a warp, the scan tiles (3,840 and 2,304 elements) and the sort tiles
/// (7,680, 6,144 and 4,096 keys), and a large odd size.
const SIZES: [usize; 14] = [
    0,
    1,
    2,
    31,
    32,
    33,
    1000,
    2303,
    3841,
    4097,
    7679,
    7681,
    65_543,
    (1 << 20) + 7,
];

fn rng(seed: u64) -> StdRng {
    StdRng::seed_from_u64(seed)
}

fn random<T: DeviceType>(rng: &mut StdRng, n: usize, below: u64) -> Vec<T> {
    (0..n)
        .map(|_| {
            T::from_u64(if below == 0 {
                rng.gen()
            } else {
                rng.gen_range(0..below)
            })
        })
        .collect()
}

fn sorted_on_gpu<K: DeviceKey>(gpu: &Gpu, sorter: &mut RadixSorter, keys: &[K]) -> Vec<K> {
    let stream = gpu.stream();
    let mut device = stream.clone_htod(keys).expect("upload");
    sorter.sort_keys(&mut device).expect("sort_keys");
    stream.clone_dtoh(&device).expect("download")
}

fn check_keys<K: DeviceKey>(gpu: &Gpu, sorter: &mut RadixSorter, keys: Vec<K>, what: &str) {
    let got = sorted_on_gpu(gpu, sorter, &keys);
    let mut want = keys;
    want.sort_unstable();
    assert!(got == want, "{what}: {} keys sorted wrongly", want.len());
}

fn check_pairs<K: DeviceKey, V: DeviceValue + PartialEq>(
    gpu: &Gpu,
    sorter: &mut RadixSorter,
    keys: Vec<K>,
    values: Vec<V>,
    bits: Option<(u32, u32)>,
) {
    let stream = gpu.stream();
    let mut dk = stream.clone_htod(&keys).expect("upload keys");
    let mut dv = stream.clone_htod(&values).expect("upload values");
    match bits {
        Some((b, e)) => sorter.sort_pairs_bits(&mut dk, &mut dv, b, e),
        None => sorter.sort_pairs(&mut dk, &mut dv),
    }
    .expect("sort_pairs");
    let got_k = stream.clone_dtoh(&dk).expect("download keys");
    let got_v = stream.clone_dtoh(&dv).expect("download values");
    let (b, e) = bits.unwrap_or((0, 8 * std::mem::size_of::<K>() as u32));
    let field = |k: &K| {
        let width = e - b;
        let mask = if width == 64 {
            u64::MAX
        } else {
            (1u64 << width) - 1
        };
        (k.to_u64() >> b) & mask
    };
    let mut want: Vec<(K, V)> = keys.into_iter().zip(values).collect();
    want.sort_by_key(|(k, _)| field(k)); // stable, as the GPU sort must be
    let n = want.len();
    let (want_k, want_v): (Vec<K>, Vec<V>) = want.into_iter().unzip();
    assert!(got_k == want_k, "{n} pairs: keys differ");
    assert!(got_v == want_v, "{n} pairs: values differ (unstable?)");
}

#[test]
fn sort_keys_random_at_awkward_sizes() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let mut sorter = RadixSorter::new(&gpu).expect("sorter");
    let mut r = rng(1);
    for n in SIZES {
        check_keys(&gpu, &mut sorter, random::<u32>(&mut r, n, 0), "u32");
        check_keys(&gpu, &mut sorter, random::<u64>(&mut r, n, 0), "u64");
    }
}

#[test]
fn sort_keys_patterns() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let mut sorter = RadixSorter::new(&gpu).expect("sorter");
    let mut r = rng(2);
    let n = (1 << 20) + 7;
    for n in [33, 7681, n] {
        check_keys(&gpu, &mut sorter, vec![0xdead_beefu32; n], "all equal u32");
        check_keys(&gpu, &mut sorter, vec![u64::MAX; n], "all max u64");
        check_keys(&gpu, &mut sorter, vec![0u32; n], "all zero u32");
        let ascending: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(3)).collect();
        check_keys(&gpu, &mut sorter, ascending.clone(), "sorted u32");
        check_keys(
            &gpu,
            &mut sorter,
            ascending.into_iter().rev().collect(),
            "reversed",
        );
        let descending: Vec<u64> = (0..n as u64).rev().map(|i| i << 20).collect();
        check_keys(&gpu, &mut sorter, descending, "reversed u64");
        let high: Vec<u32> = (0..n).map(|_| r.gen_range(0..16u32) << 28).collect();
        check_keys(&gpu, &mut sorter, high, "high bits only u32");
        let high: Vec<u64> = (0..n).map(|_| r.gen_range(0..256u64) << 56).collect();
        check_keys(&gpu, &mut sorter, high, "high bits only u64");
        let low: Vec<u64> = (0..n).map(|_| r.gen_range(0..4u64)).collect();
        check_keys(&gpu, &mut sorter, low, "few distinct u64");
    }
}

#[test]
fn sort_keys_large_u32() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let mut sorter = RadixSorter::new(&gpu).expect("sorter");
    let keys = random::<u32>(&mut rng(3), 1 << 26, 0);
    check_keys(&gpu, &mut sorter, keys, "2^26 u32");
}

#[test]
fn sort_pairs_are_stable_for_every_type() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let mut sorter = RadixSorter::new(&gpu).expect("sorter");
    let mut r = rng(4);
    for n in [1, 33, 1000, 4097, 6145, 7681, 65_543, (1 << 20) + 7] {
        // Few distinct keys, so stability is tested; values are their input positions.
        let idx32: Vec<u32> = (0..n as u32).collect();
        let idx64: Vec<u64> = (0..n as u64).map(|i| i | (i << 40)).collect();
        let k32 = random::<u32>(&mut r, n, 1000);
        let k64: Vec<u64> = random::<u64>(&mut r, n, 1000)
            .into_iter()
            .map(|k| k << 30 | 5)
            .collect();
        check_pairs(&gpu, &mut sorter, k32.clone(), idx32.clone(), None);
        check_pairs(&gpu, &mut sorter, k32, idx64.clone(), None);
        check_pairs(&gpu, &mut sorter, k64.clone(), idx32, None);
        check_pairs(&gpu, &mut sorter, k64, idx64, None);
    }
}

#[test]
fn sort_pairs_large() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let mut sorter = RadixSorter::new(&gpu).expect("sorter");
    let mut r = rng(5);
    let n = 1 << 24;
    let keys = random::<u32>(&mut r, n, 0);
    let values: Vec<u32> = (0..n as u32).collect();
    check_pairs(&gpu, &mut sorter, keys, values, None);
    let keys = random::<u64>(&mut r, n, 0);
    let values = random::<u64>(&mut r, n, 0);
    check_pairs(&gpu, &mut sorter, keys, values, None);
}

#[test]
fn sort_by_bit_ranges() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let mut sorter = RadixSorter::new(&gpu).expect("sorter");
    let mut r = rng(6);
    let n = (1 << 20) + 7;
    // Small keys sorted in three passes (odd: the result comes back by a copy).
    let keys = random::<u32>(&mut r, n, 1 << 20);
    let stream = gpu.stream();
    let mut device = stream.clone_htod(&keys).expect("upload");
    sorter
        .sort_keys_bits(&mut device, 0, 20)
        .expect("sort bits");
    let mut want = keys.clone();
    want.sort_unstable();
    assert!(stream.clone_dtoh(&device).expect("download") == want);
    // A middle field only, with pairs: stability decides the order of the rest.
    let values: Vec<u32> = (0..n as u32).collect();
    check_pairs(&gpu, &mut sorter, keys, values.clone(), Some((4, 12)));
    let keys = random::<u64>(&mut r, n, 0);
    check_pairs(
        &gpu,
        &mut sorter,
        keys.clone(),
        values.clone(),
        Some((20, 61)),
    );
    check_pairs(&gpu, &mut sorter, keys, values, Some((0, 1)));
    // An empty range leaves the keys alone.
    let original = random::<u64>(&mut r, 100, 0);
    let mut device = stream.clone_htod(&original).expect("upload");
    sorter
        .sort_keys_bits(&mut device, 7, 7)
        .expect("empty range");
    assert!(stream.clone_dtoh(&device).expect("download") == original);
}

#[test]
fn sorter_reuse_across_sizes_and_types() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let mut sorter = RadixSorter::new(&gpu).expect("sorter");
    let mut r = rng(7);
    for n in [100_000, 5, 300_000, 7680, 1] {
        check_keys(&gpu, &mut sorter, random::<u32>(&mut r, n, 0), "reuse u32");
        let keys = random::<u64>(&mut r, n, 0);
        let values = random::<u32>(&mut r, n, 0);
        check_pairs(&gpu, &mut sorter, keys, values, None);
    }
}

#[test]
fn sort_rejects_bad_arguments() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let mut sorter = RadixSorter::new(&gpu).expect("sorter");
    let stream = gpu.stream();
    let mut keys = stream.clone_htod(&[3u32, 2, 1]).expect("upload");
    let mut values = stream.clone_htod(&[1u32, 2]).expect("upload");
    let err = sorter.sort_pairs(&mut keys, &mut values);
    assert!(matches!(err, Err(Error::InvalidArgument(ref m)) if m.contains("3 keys but 2 values")));
    for (b, e) in [(0, 33), (9, 8), (40, 40)] {
        let err = sorter.sort_keys_bits(&mut keys, b, e);
        assert!(
            matches!(err, Err(Error::InvalidArgument(_))),
            "bits {b}..{e}"
        );
    }
    assert_eq!(stream.clone_dtoh(&keys).expect("download"), vec![3, 2, 1]);
}

fn check_scan<T: gpuds_core::primitives::Scan + PartialEq>(gpu: &Gpu, input: Vec<T>) {
    let stream = gpu.stream();
    let device = stream.clone_htod(&input).expect("upload");
    let mut output = stream.alloc_zeros::<T>(input.len() + 3).expect("alloc");
    let total = exclusive_scan(gpu, &device, &mut output).expect("scan");
    let got = stream.clone_dtoh(&output).expect("download");
    let mut running = 0u64;
    let width_mask = if std::mem::size_of::<T>() == 4 {
        u32::MAX as u64
    } else {
        u64::MAX
    };
    for (i, x) in input.iter().enumerate() {
        assert!(
            got[i] == T::from_u64(running),
            "scan of {} at {i}",
            input.len()
        );
        running = running.wrapping_add(x.to_u64()) & width_mask;
    }
    assert!(total == T::from_u64(running), "total of {}", input.len());
    assert!(
        got[input.len()..].iter().all(|x| *x == T::from_u64(0)),
        "wrote past n"
    );
}

#[test]
fn scan_matches_the_cpu() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let mut r = rng(8);
    for n in SIZES {
        check_scan(&gpu, random::<u32>(&mut r, n, 100));
        check_scan(&gpu, random::<u32>(&mut r, n, 0)); // wraps
        check_scan(&gpu, random::<u64>(&mut r, n, 1 << 40));
    }
    check_scan(&gpu, random::<u32>(&mut r, 1 << 26, 4));
    check_scan(&gpu, vec![u64::MAX; 5000]);
}

#[test]
fn scan_rejects_a_short_output() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let input = gpu.stream().clone_htod(&[1u32, 2, 3]).expect("upload");
    let mut output = gpu.stream().alloc_zeros::<u32>(2).expect("alloc");
    let err = exclusive_scan(&gpu, &input, &mut output);
    assert!(matches!(err, Err(Error::InvalidArgument(_))));
}

fn check_compact<T: DeviceType + PartialEq>(gpu: &Gpu, input: Vec<T>, flags: Vec<u32>) {
    let stream = gpu.stream();
    let device = stream.clone_htod(&input).expect("upload");
    let device_flags = stream.clone_htod(&flags).expect("upload flags");
    let mut output = stream.alloc_zeros::<T>(input.len()).expect("alloc");
    let count = compact(gpu, &device, &device_flags, &mut output).expect("compact");
    let want: Vec<T> = input
        .iter()
        .zip(&flags)
        .filter(|(_, f)| **f != 0)
        .map(|(x, _)| *x)
        .collect();
    assert_eq!(count, want.len(), "count of {}", input.len());
    let got = stream.clone_dtoh(&output).expect("download");
    assert!(got[..count] == want[..], "compaction of {}", input.len());
}

#[test]
fn compact_matches_the_cpu() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let mut r = rng(9);
    for n in SIZES {
        for density in [0.0, 0.01, 0.5, 1.0] {
            let flags: Vec<u32> = (0..n)
                .map(|_| {
                    if r.gen_bool(density) {
                        r.gen_range(1..=u32::MAX)
                    } else {
                        0
                    }
                })
                .collect();
            check_compact(&gpu, random::<u32>(&mut r, n, 0), flags.clone());
            check_compact(&gpu, random::<u64>(&mut r, n, 0), flags);
        }
    }
    let n = 1 << 24;
    let flags = random::<u32>(&mut r, n, 3);
    check_compact(&gpu, random::<u32>(&mut r, n, 0), flags);
}

#[test]
fn compact_rejects_bad_arguments() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let stream = gpu.stream();
    let input = stream.clone_htod(&[1u32, 2, 3, 4]).expect("upload");
    let flags = stream.clone_htod(&[1u32, 1, 1]).expect("upload");
    let mut output = stream.alloc_zeros::<u32>(4).expect("alloc");
    let err = compact(&gpu, &input, &flags, &mut output);
    assert!(matches!(err, Err(Error::InvalidArgument(_))));
    let flags = stream.clone_htod(&[1u32, 0, 1, 1]).expect("upload");
    let mut short = stream.alloc_zeros::<u32>(2).expect("alloc");
    let err = compact(&gpu, &input, &flags, &mut short);
    assert!(matches!(err, Err(Error::InvalidArgument(ref m)) if m.contains("3 elements are kept")));
    assert_eq!(stream.clone_dtoh(&short).expect("download"), vec![1, 3]);
}

#[test]
fn fill_and_iota_match_the_cpu() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let stream = gpu.stream();
    for n in [0, 1, 33, 1000, (1 << 20) + 7] {
        let mut a = stream.alloc_zeros::<u32>(n).expect("alloc");
        fill(&gpu, &mut a, 0xabcd_ef01).expect("fill");
        assert!(stream
            .clone_dtoh(&a)
            .expect("download")
            .iter()
            .all(|&x| x == 0xabcd_ef01));
        let mut b = stream.alloc_zeros::<u64>(n).expect("alloc");
        fill(&gpu, &mut b, u64::MAX - 1).expect("fill");
        assert!(stream
            .clone_dtoh(&b)
            .expect("download")
            .iter()
            .all(|&x| x == u64::MAX - 1));
        iota(&gpu, &mut a, u32::MAX - 5).expect("iota");
        let want: Vec<u32> = (0..n as u32)
            .map(|i| (u32::MAX - 5).wrapping_add(i))
            .collect();
        assert!(stream.clone_dtoh(&a).expect("download") == want);
        iota(&gpu, &mut b, 1 << 40).expect("iota");
        let want: Vec<u64> = (0..n as u64).map(|i| (1 << 40) + i).collect();
        assert!(stream.clone_dtoh(&b).expect("download") == want);
    }
}
