//! Workloads generated on the GPU against their host references, bit for bit: every
//! Table 2 sequence at many sizes and blocks (n = 1, n not a multiple of the thread
//! block, 2^24), values, absent keys and search batches, and the k-mer table keys of
//! reads with sequencing errors, N bases and other bytes that are not nucleotides.

use gpuds_core::Error as CoreError;
use gpuds_oversub::kmer::{
    device_table_keys, genome, reads, table_keys, Orientation, Record, TableKeys,
};
use gpuds_oversub::workload::{
    absent_keys, device_absent_keys, device_search_queries, device_values, search_queries, values,
    Sequence, KEY_MAX,
};
use gpuds_oversub::Error;
use gpuds_testkit::gpu;

fn download(gpu: &gpuds_core::Gpu, keys: &cudarc::driver::CudaSlice<u32>) -> Vec<u32> {
    gpu.stream().clone_dtoh(keys).unwrap()
}

#[test]
fn every_sequence_matches_the_host_at_every_size_and_block() {
    let Some(gpu) = gpu() else { return };
    for seq in Sequence::ALL {
        for n in [1, 2, 3, 7, 127, 128, 129, 1000, 4097, 100_003] {
            for block in [1, 3, 128, 1000, (n / 8).max(1), n, n + 5] {
                for seed in [0, 9, u64::MAX] {
                    let device = seq.device_keys_with(&gpu, n, seed, block).unwrap();
                    assert_eq!(device.len(), n);
                    assert_eq!(
                        download(&gpu, &device),
                        seq.keys_with(n, seed, block),
                        "{seq} n {n} block {block} seed {seed}"
                    );
                }
            }
            let device = seq.device_keys(&gpu, n, 5).unwrap();
            assert_eq!(download(&gpu, &device), seq.keys(n, 5), "{seq} n {n}");
        }
    }
}

#[test]
fn every_sequence_matches_the_host_at_two_to_the_24() {
    let Some(gpu) = gpu() else { return };
    // Far more keys than threads in the grid: the grid-stride loops run many rounds.
    for (i, seq) in Sequence::ALL.into_iter().enumerate() {
        let n = (1 << 24) + i; // one of them a multiple of the thread block, the rest not
        let device = download(&gpu, &seq.device_keys(&gpu, n, 3).unwrap());
        let host = seq.keys(n, 3);
        if let Some(j) = (0..n).find(|&j| device[j] != host[j]) {
            panic!(
                "{seq}: position {j} is {} on the device, {} on the host",
                device[j], host[j]
            );
        }
    }
}

#[test]
fn empty_sequences_and_bad_arguments() {
    let Some(gpu) = gpu() else { return };
    for seq in Sequence::ALL {
        assert!(seq.device_keys(&gpu, 0, 1).unwrap().is_empty(), "{seq}");
        let e = seq.device_keys_with(&gpu, 10, 1, 0).unwrap_err();
        assert!(
            matches!(e, Error::Core(CoreError::InvalidArgument(_))),
            "{seq}: {e}"
        );
        let e = seq.device_keys(&gpu, KEY_MAX as usize + 1, 1).unwrap_err();
        assert!(
            matches!(e, Error::Core(CoreError::InvalidArgument(_))),
            "{seq}: {e}"
        );
    }
}

#[test]
fn values_absent_keys_and_search_batches_match_the_host() {
    let Some(gpu) = gpu() else { return };
    for seq in Sequence::ALL {
        for n in [1, 129, 20_000] {
            let host = seq.keys(n, 3);
            let device = seq.device_keys(&gpu, n, 3).unwrap();
            let v = device_values(&gpu, &device, 8).unwrap();
            assert_eq!(download(&gpu, &v), values(&host, 8), "{seq} n {n}");
            let misses = device_absent_keys(&gpu, &device, 7_000, 4).unwrap();
            assert_eq!(
                download(&gpu, &misses),
                absent_keys(&host, 7_000, 4),
                "{seq} n {n}"
            );
            for every in [0, 3, 4, 5] {
                let q = device_search_queries(&gpu, &device, every, 6).unwrap();
                assert_eq!(
                    download(&gpu, &q),
                    search_queries(&host, every, 6),
                    "{seq} n {n} every {every}"
                );
            }
        }
    }
    // Present keys that the walk meets often: the filter decides, not the range. They
    // hold reserved keys and duplicates, unsorted, as the host allows.
    let mut present = absent_keys(&[], 30_000, 4);
    present.retain(|k| k % 3 != 0);
    present.extend([0, u32::MAX, 5, 5]);
    present.reverse();
    let device = gpu.stream().clone_htod(&present).unwrap();
    let misses = device_absent_keys(&gpu, &device, 12_000, 4).unwrap();
    assert_eq!(download(&gpu, &misses), absent_keys(&present, 12_000, 4));
    let none = gpu.stream().alloc_zeros::<u32>(0).unwrap();
    let misses = device_absent_keys(&gpu, &none, 100, 1).unwrap();
    assert_eq!(download(&gpu, &misses), absent_keys(&[], 100, 1));
    assert!(device_absent_keys(&gpu, &device, 0, 1).unwrap().is_empty());
    assert!(device_values(&gpu, &none, 1).unwrap().is_empty());
    assert!(device_search_queries(&gpu, &none, 3, 1).unwrap().is_empty());
}

/// Reads of a repetitive genome with 2 % substitutions, then damaged: N bases, lower
/// case, bytes that are no nucleotide (`x`, `-`, 0), short and empty reads, and reads of
/// homopolymers, so that every branch of the encoder is met.
fn damaged_reads(count: usize, seed: u64) -> Vec<Record> {
    let g = genome(200_000, seed, 0.2);
    let mut rs = reads(&g, count, 150, 0.02, seed + 1);
    for (i, r) in rs.iter_mut().enumerate() {
        let at = |m: usize| (i * m) % 150;
        if i % 3 == 0 {
            r.seq[at(7)] = b'N';
        }
        if i % 4 == 0 {
            r.seq[at(5)] = b'n';
        }
        if i % 5 == 0 {
            for b in &mut r.seq[at(11)..] {
                *b = b.to_ascii_lowercase();
            }
        }
        if i % 7 == 0 {
            r.seq[at(13)] = [b'x', b'-', 0][i % 3];
        }
        if i % 11 == 0 {
            r.seq.truncate(i % 24);
        }
        if i % 13 == 0 {
            r.seq = [
                &b"AAAAAAAAAAAAAAAAAAAA"[..],
                b"TTTTTTTTTTTTTTTTTTTTT",
                b"aaaaaaaaaaaaaaaatttt",
            ][i % 3]
                .to_vec();
        }
    }
    rs
}

fn check_kmers(gpu: &gpuds_core::Gpu, rs: &[Record], orientation: Orientation) -> TableKeys {
    let device = device_table_keys(gpu, rs, orientation).unwrap();
    let (host, offsets) = table_keys(rs, orientation);
    let keys = download(gpu, &device.keys);
    if let Some(j) = (0..keys.len().min(host.keys.len())).find(|&j| keys[j] != host.keys[j]) {
        panic!(
            "{orientation:?}: key {j} is {} on the device, {} on the host",
            keys[j], host.keys[j]
        );
    }
    assert_eq!(keys.len(), host.keys.len(), "{orientation:?}");
    assert_eq!(device.offsets, offsets, "{orientation:?}");
    assert_eq!(
        (device.poly_a, device.poly_t),
        (host.poly_a, host.poly_t),
        "{orientation:?}"
    );
    host
}

#[test]
fn kmer_keys_of_damaged_reads_match_the_host() {
    let Some(gpu) = gpu() else { return };
    let rs = damaged_reads(3_000, 5);
    for orientation in [Orientation::AsRead, Orientation::Canonical] {
        let host = check_kmers(&gpu, &rs, orientation);
        assert!(host.keys.len() > 100_000, "{orientation:?}");
        assert!(host.poly_a > 0, "{orientation:?}");
    }
    assert!(table_keys(&rs, Orientation::AsRead).0.poly_t > 0);
    // Byte strings work as well as records; no reads give no keys.
    let strings: Vec<&[u8]> = rs.iter().map(|r| r.seq.as_slice()).collect();
    let device = device_table_keys(&gpu, &strings, Orientation::AsRead).unwrap();
    assert_eq!(
        download(&gpu, &device.keys),
        table_keys(&rs, Orientation::AsRead).0.keys
    );
    let none = device_table_keys::<&[u8]>(&gpu, &[], Orientation::AsRead).unwrap();
    assert!(none.keys.is_empty());
    assert_eq!(none.offsets, vec![0]);
    let short = device_table_keys(&gpu, &[&b"ACGT"[..], b""], Orientation::AsRead).unwrap();
    assert!(short.keys.is_empty());
    assert_eq!(short.offsets, vec![0, 0, 0]);
}

#[test]
fn kmer_keys_of_a_large_batch_match_the_host() {
    let Some(gpu) = gpu() else { return };
    // 15 M bytes: many scan tiles and grid-stride rounds.
    let rs = damaged_reads(100_000, 9);
    check_kmers(&gpu, &rs, Orientation::AsRead);
}
