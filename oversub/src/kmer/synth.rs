//! Seeded synthetic genomes, communities of taxa and sequencing reads, for tests and
//! benchmarks (users bring real genomes through [`read_records`](super::read_records)).

use rand::rngs::ChaCha8Rng;
use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};

use super::encode::{base_code, BASES};
use super::Record;
use crate::workload::derive_seed;

/// The length of a repeat copy: about an Alu element, the commonest repeat of the human
/// genome, and far longer than a k-mer.
pub const REPEAT_LEN: usize = 300;

/// A random genome of `len` bases `ACGT`, of which about `repeat_fraction` are exact
/// copies of earlier stretches of the same genome (segments of [`REPEAT_LEN`] bases, or
/// `len / 2` for short genomes), so that repeated k-mers occur as in real genomes.
///
/// ```
/// use gpuds_oversub::kmer::genome;
/// let g = genome(10_000, 7, 0.2);
/// assert_eq!(g.len(), 10_000);
/// assert!(g.iter().all(|b| b"ACGT".contains(b)));
/// assert_eq!(g, genome(10_000, 7, 0.2));
/// ```
///
/// # Panics
/// If `repeat_fraction` is not in `[0, 1]`.
pub fn genome(len: usize, seed: u64, repeat_fraction: f64) -> Vec<u8> {
    assert!(
        (0.0..=1.0).contains(&repeat_fraction),
        "repeat_fraction {repeat_fraction} is not in [0, 1]"
    );
    let mut rng = ChaCha8Rng::seed_from_u64(derive_seed(seed, 0x6e, 0));
    let mut g: Vec<u8> = (0..len).map(|_| BASES[rng.random_range(0..4)]).collect();
    let segment = REPEAT_LEN.min(len / 2);
    if segment == 0 {
        return g;
    }
    // Segment 0 cannot copy anything earlier; the others are candidates.
    let segments = len / segment;
    let copies = ((repeat_fraction * len as f64 / segment as f64).round() as usize)
        .min(segments.saturating_sub(1));
    let mut targets: Vec<usize> = (1..segments).collect();
    targets.shuffle(&mut rng);
    targets.truncate(copies);
    // In increasing order, every source lies in text that no later copy changes.
    targets.sort_unstable();
    for t in targets {
        let start = t * segment;
        let source = rng.random_range(0..=start - segment);
        g.copy_within(source..source + segment, start);
    }
    g
}

/// `n` reads of `read_len` bases taken at uniformly random positions of `genome`
/// (forward strand), each base replaced with probability `error_rate` by one of the
/// three other bases (a substitution error; other bytes of the genome, such as `N`,
/// become a random base). The id of read `i` starting at offset `p` is `"r{i}_{p}"`.
///
/// ```
/// use gpuds_oversub::kmer::{genome, reads};
/// let g = genome(5_000, 1, 0.0);
/// let rs = reads(&g, 10, 100, 0.0, 2);
/// let start: usize = rs[3].id.split('_').nth(1).unwrap().parse().unwrap();
/// assert_eq!(rs[3].seq, &g[start..start + 100]);
/// ```
///
/// # Panics
/// If `read_len` is longer than `genome` or `error_rate` is not in `[0, 1]`.
pub fn reads(genome: &[u8], n: usize, read_len: usize, error_rate: f64, seed: u64) -> Vec<Record> {
    assert!(
        read_len <= genome.len(),
        "reads of {read_len} bases do not fit in a genome of {}",
        genome.len()
    );
    assert!(
        (0.0..=1.0).contains(&error_rate),
        "error_rate {error_rate} is not in [0, 1]"
    );
    let mut rng = ChaCha8Rng::seed_from_u64(derive_seed(seed, 0x72, 0));
    (0..n)
        .map(|i| {
            let start = rng.random_range(0..=genome.len() - read_len);
            let seq = genome[start..start + read_len]
                .iter()
                .map(|&b| {
                    if !rng.random_bool(error_rate) {
                        return b;
                    }
                    let other = match base_code(b) {
                        Some(c) => (c as usize + rng.random_range(1..4)) % 4,
                        None => rng.random_range(0..4),
                    };
                    BASES[other]
                })
                .collect();
            Record {
                id: format!("r{i}_{start}"),
                seq,
            }
        })
        .collect()
}

/// A community of `taxa` organisms for classification tests: taxon ids `1..=taxa`
/// (0 is left for "unclassified"), each with an independent random genome of
/// `genome_len` bases and 5 % internal repeats, so that k-mers shared between taxa occur
/// only by chance while each taxon has repeated k-mers of its own.
///
/// ```
/// use gpuds_oversub::kmer::community;
/// let c = community(3, 1_000, 9);
/// assert_eq!(c.iter().map(|(t, _)| *t).collect::<Vec<_>>(), vec![1, 2, 3]);
/// assert!(c.iter().all(|(_, g)| g.len() == 1_000));
/// ```
pub fn community(taxa: u32, genome_len: usize, seed: u64) -> Vec<(u32, Vec<u8>)> {
    (1..=taxa)
        .map(|t| {
            (
                t,
                genome(genome_len, derive_seed(seed, 0x74, t as u64), 0.05),
            )
        })
        .collect()
}
