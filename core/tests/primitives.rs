//! GPU tests of the device primitives against the CPU: radix sort (keys, pairs, bit
//! ranges), exclusive scan, compaction (the synchronizing functions and the reusable
//! `Scanner`), fill and iota, on seeded random inputs at awkward sizes (around warps and
//! tiles) and up to 2^26 elements. Reference checks stay O(n) or one `sort_unstable` so
//! that the 2^26 cases cost seconds, not minutes.

use gpuds_core::cudarc::driver::PushKernelArg;
use gpuds_core::primitives::{compact, exclusive_scan, fill, iota, RadixSorter, Scanner};
use gpuds_core::{launch, DeviceKey, DeviceType, DeviceValue, Error, Gpu};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

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
                rng.random()
            } else {
                rng.random_range(0..below)
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
    let field = key_field::<K>(b, e);
    let n = keys.len();
    let mut want: Vec<(K, V)> = keys.into_iter().zip(values).collect();
    want.sort_by_key(|(k, _)| field(*k)); // stable, as the GPU sort must be
    assert!(
        want.iter().map(|(k, _)| k).eq(got_k.iter()),
        "{n} pairs: keys differ"
    );
    assert!(
        want.iter().map(|(_, v)| v).eq(got_v.iter()),
        "{n} pairs: values differ (unstable?)"
    );
}

/// Bits `b..e` of a key, the field a bit-range sort orders by.
fn key_field<K: DeviceKey>(b: u32, e: u32) -> impl Fn(K) -> u64 {
    let width = e - b;
    let mask = if width == 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    };
    move |k| (k.to_u64() >> b) & mask
}

/// Sorts `keys` with their input positions as values and checks the result in O(n), with
/// no CPU sort: the values are a permutation of 0..n, each key is the input key at its
/// value, keys never decrease, and equal keys keep their input order (stability).
fn check_pairs_by_index<K: DeviceKey, V: DeviceValue + gpuds_core::primitives::Scan>(
    gpu: &Gpu,
    sorter: &mut RadixSorter,
    keys: &[K],
) {
    let n = keys.len();
    let stream = gpu.stream();
    let mut dk = stream.clone_htod(keys).expect("upload keys");
    let mut dv = stream.alloc_zeros::<V>(n).expect("alloc values");
    iota(gpu, &mut dv, V::from_u64(0)).expect("iota");
    sorter.sort_pairs(&mut dk, &mut dv).expect("sort_pairs");
    let got_k = stream.clone_dtoh(&dk).expect("download keys");
    let got_v = stream.clone_dtoh(&dv).expect("download values");
    let mut seen = vec![0u64; n.div_ceil(64)];
    for (i, (k, v)) in got_k.iter().zip(&got_v).enumerate() {
        let at = v.to_u64() as usize;
        assert!(at < n, "{n} pairs: value {at} at {i} is no input position");
        assert!(
            seen[at / 64] & (1 << (at % 64)) == 0,
            "{n} pairs: {at} twice"
        );
        seen[at / 64] |= 1 << (at % 64);
        assert!(
            keys[at] == *k,
            "{n} pairs: key at {i} is not the input key {at}"
        );
        if i > 0 {
            let (pk, pv) = (got_k[i - 1], got_v[i - 1].to_u64());
            assert!(pk <= *k, "{n} pairs: keys decrease at {i}");
            assert!(pk != *k || pv < at as u64, "{n} pairs: unstable at {i}");
        }
    }
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
        let high: Vec<u32> = (0..n).map(|_| r.random_range(0..16u32) << 28).collect();
        check_keys(&gpu, &mut sorter, high, "high bits only u32");
        let high: Vec<u64> = (0..n).map(|_| r.random_range(0..256u64) << 56).collect();
        check_keys(&gpu, &mut sorter, high, "high bits only u64");
        let low: Vec<u64> = (0..n).map(|_| r.random_range(0..4u64)).collect();
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
    let n = 1 << 26;
    check_pairs_by_index::<u32, u32>(&gpu, &mut sorter, &random::<u32>(&mut r, n, 0));
    // Few distinct keys: long runs of equal keys test stability at scale.
    check_pairs_by_index::<u32, u32>(&gpu, &mut sorter, &random::<u32>(&mut r, n, 1000));
    check_pairs_by_index::<u64, u64>(&gpu, &mut sorter, &random::<u64>(&mut r, n, 0));
    check_pairs_by_index::<u64, u32>(&gpu, &mut sorter, &random::<u64>(&mut r, n, 1 << 40));
}

#[test]
fn sort_keys_large_u64() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let mut sorter = RadixSorter::new(&gpu).expect("sorter");
    let keys = random::<u64>(&mut rng(13), 1 << 26, 0);
    check_keys(&gpu, &mut sorter, keys, "2^26 u64");
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
    let got = stream.clone_dtoh(&output).expect("download");
    assert_kept(&input, &flags, &got, count);
}

/// `got[..count]` is exactly the flagged elements of `input`, in order.
fn assert_kept<T: PartialEq>(input: &[T], flags: &[u32], got: &[T], count: usize) {
    let mut want = input.iter().zip(flags).filter(|(_, f)| **f != 0);
    let mut kept = 0;
    for (i, g) in got[..count.min(got.len())].iter().enumerate() {
        let Some((x, _)) = want.next() else {
            panic!("compaction of {}: {count} kept, want {i}", input.len());
        };
        assert!(g == x, "compaction of {} differs at {i}", input.len());
        kept += 1;
    }
    assert_eq!(count, kept + want.count(), "count of {}", input.len());
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
                    if r.random_bool(density) {
                        r.random_range(1..=u32::MAX)
                    } else {
                        0
                    }
                })
                .collect();
            check_compact(&gpu, random::<u32>(&mut r, n, 0), flags.clone());
            check_compact(&gpu, random::<u64>(&mut r, n, 0), flags);
        }
    }
    let n = 1 << 26;
    let flags = random::<u32>(&mut r, n, 3);
    check_compact(&gpu, random::<u32>(&mut r, n, 0), flags.clone());
    check_compact(&gpu, random::<u64>(&mut r, n, 0), flags);
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

/// One scanner reused across element types and sizes, growing and shrinking: results
/// and totals (counts) stay on the device until the end, and nothing in between waits.
#[test]
fn scanner_reuses_scratch_without_synchronizing() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let stream = gpu.stream();
    let mut scanner = Scanner::new(&gpu).expect("scanner");
    scanner.reserve(100_000).expect("reserve");
    let mut r = rng(10);
    for n in [100_000, 0, 3841, (1 << 22) + 5, 1, 65_543] {
        let a = random::<u32>(&mut r, n, 0);
        let b = random::<u64>(&mut r, n, 1 << 50);
        let flags = random::<u32>(&mut r, n, 2);
        let (da, db) = (
            stream.clone_htod(&a).expect("upload"),
            stream.clone_htod(&b).expect("upload"),
        );
        let dflags = stream.clone_htod(&flags).expect("upload");
        let mut out_a = stream.alloc_zeros::<u32>(n).expect("alloc");
        let mut out_b = stream.alloc_zeros::<u64>(n).expect("alloc");
        let mut kept = stream.alloc_zeros::<u64>(n).expect("alloc");
        // Stale totals and counts, so that a missing write shows.
        let mut total_a = stream.clone_htod(&[7u32]).expect("upload");
        let mut total_b = stream.clone_htod(&[7u64]).expect("upload");
        let mut count = stream.clone_htod(&[7u32, 9]).expect("upload");
        scanner
            .exclusive_scan(&da, &mut out_a, &mut total_a)
            .expect("scan u32");
        scanner
            .exclusive_scan(&db, &mut out_b, &mut total_b)
            .expect("scan u64");
        scanner
            .compact(&db, &dflags, &mut kept, &mut count)
            .expect("compact");

        let got_a = stream.clone_dtoh(&out_a).expect("download");
        let mut running = 0u32;
        for (i, x) in a.iter().enumerate() {
            assert_eq!(got_a[i], running, "u32 scan of {n} at {i}");
            running = running.wrapping_add(*x);
        }
        assert_eq!(stream.clone_dtoh(&total_a).expect("download"), [running]);
        let got_b = stream.clone_dtoh(&out_b).expect("download");
        let mut running = 0u64;
        for (i, x) in b.iter().enumerate() {
            assert_eq!(got_b[i], running, "u64 scan of {n} at {i}");
            running += x;
        }
        assert_eq!(stream.clone_dtoh(&total_b).expect("download"), [running]);
        let count = stream.clone_dtoh(&count).expect("download");
        assert_eq!(count[1], 9, "wrote past count[0]");
        let got = stream.clone_dtoh(&kept).expect("download");
        assert_kept(&b, &flags, &got, count[0] as usize);
    }
}

#[test]
fn scanner_counts_past_a_short_output_and_rejects_empty_totals() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let stream = gpu.stream();
    let mut scanner = Scanner::new(&gpu).expect("scanner");
    let input = stream.clone_htod(&[1u32, 2, 3, 4]).expect("upload");
    let flags = stream.clone_htod(&[1u32, 0, 1, 1]).expect("upload");
    let mut short = stream.alloc_zeros::<u32>(2).expect("alloc");
    let mut count = stream.alloc_zeros::<u32>(1).expect("alloc");
    scanner
        .compact(&input, &flags, &mut short, &mut count)
        .expect("compact");
    assert_eq!(stream.clone_dtoh(&count).expect("download"), [3]);
    assert_eq!(stream.clone_dtoh(&short).expect("download"), [1, 3]);
    let mut empty = stream.alloc_zeros::<u32>(0).expect("alloc");
    let mut output = stream.alloc_zeros::<u32>(4).expect("alloc");
    let err = scanner.exclusive_scan(&input, &mut output, &mut empty);
    assert!(matches!(err, Err(Error::InvalidArgument(_))));
    let err = scanner.compact(&input, &flags, &mut output, &mut empty);
    assert!(matches!(err, Err(Error::InvalidArgument(_))));
}

/// Blocks past the last tile return at once: a scan launched with surplus blocks gives
/// the same result and neither hangs nor writes out of bounds.
#[test]
fn scan_kernel_tolerates_surplus_blocks() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let program = gpuds_core::primitives::programs()
        .into_iter()
        .find(|p| p.name() == "exclusive_scan_u32")
        .expect("scan program");
    let kernel = gpu
        .load(&program)
        .expect("load")
        .kernel("exclusive_scan_u32")
        .expect("kernel");
    let stream = gpu.stream();
    let n = 3 * 3840 + 17; // four tiles
    let input = random::<u32>(&mut rng(11), n, 1000);
    let device = stream.clone_htod(&input).expect("upload");
    let mut output = stream.alloc_zeros::<u32>(n + 1).expect("alloc");
    // Zeroed scratch, ample for 64 tiles whatever the layout.
    let mut scratch = stream.alloc_zeros::<u32>(1024).expect("alloc");
    let mut total = stream.alloc_zeros::<u32>(1).expect("alloc");
    let n64 = n as u64;
    let mut args = stream.launch_builder(kernel.func());
    args.arg(&device)
        .arg(&mut output)
        .arg(&n64)
        .arg(&mut scratch)
        .arg(&mut total);
    // SAFETY: the arguments match the kernel's signature; 4 tiles need 4 blocks, the
    // other 60 take tile numbers past the last and return.
    unsafe { args.launch(launch::shape(64, 256, 0)) }.expect("launch");
    let got = stream.clone_dtoh(&output).expect("download");
    let mut running = 0u32;
    for (i, x) in input.iter().enumerate() {
        assert_eq!(got[i], running, "at {i}");
        running += x;
    }
    assert_eq!(got[n], 0, "wrote past n");
    assert_eq!(stream.clone_dtoh(&total).expect("download"), [running]);
}
